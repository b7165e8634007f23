// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// goexit - a Go program whose every allocation is sampled
// (runtime.MemProfileRate 1) and which exits right after its last ones
// (review9 F2: the allocations since bpfprof's last drain must be counted):
//
//	goexit N1 GAP_MS N2
//
// Prints {"waiting": PID} and waits for SIGUSR1; then N1 allocations of 1000
// bytes at main.site1, a pause of GAP_MS, N2 more from the same loop (the
// same stack: the same bucket), and exits at once. Prints {"site1": N,
// "grows": G} on stdout before its exit: site1's allocations, N1+N2 of its
// own and G of the slice that keeps them (append's growths, from site1 too).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

var keep [][]byte
var grows int

//go:noinline
func site1() {
	c := cap(keep)
	keep = append(keep, make([]byte, 1000))
	if cap(keep) != c {
		grows++
	}
}

func main() {
	runtime.MemProfileRate = 1
	n1, _ := strconv.Atoi(os.Args[1])
	gap, _ := strconv.Atoi(os.Args[2])
	n2, _ := strconv.Atoi(os.Args[3])
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	fmt.Printf("{\"waiting\": %d}\n", os.Getpid())
	<-ch
	ns := []int{n1, n2}
	for ph := 0; ph < 2; ph++ { // one loop: both phases' allocations have the same stack
		for i := 0; i < ns[ph]; i++ {
			site1()
		}
		if ph == 0 {
			time.Sleep(time.Duration(gap) * time.Millisecond)
		}
	}
	fmt.Printf("{\"site1\": %d, \"grows\": %d}\n", n1+n2, grows)
	if n1 < 0 {
		runtime.MemProfile(nil, true) // linked: the runtime samples (never called)
	}
}
