// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// gowalk - a tenant's Go program whose profile bucket list (runtime.mbuckets,
// the list bpfprof --alloc polls each drain) can or cannot be walked to its
// end (review9 F1):
//
//	gowalk N TAIL SECONDS [ADD EVERY_MS TIMES]
//
// runtime.mbuckets pointed at N valid-looking buckets (distinct one-frame
// stacks, no samples); the last one's allnext is, with TAIL=cycle, bucket 3
// (a cycle: the walk ends there) and, with TAIL=hole, an unmapped address
// (0xdead0000: a bucket that cannot be read, whose allnext cannot be read
// either). The GC is off (it would walk the list), the runtime's own
// sampling too. Prints {"pid": PID}; then, with ADD, prepends ADD new
// buckets to the list every EVERY_MS ms, TIMES times (as the runtime does
// for new stacks: the walks resumed meanwhile must still read them all),
// prints {"total": N+ADD*TIMES}, and sleeps SECONDS.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"gobucket"
)

func main() {
	runtime.MemProfileRate = 0
	debug.SetGCPercent(-1)
	n, _ := strconv.Atoi(os.Args[1])
	tail := os.Args[2]
	secs, _ := strconv.ParseFloat(os.Args[3], 64)
	add, every, times := 0, 0, 0
	if len(os.Args) > 6 {
		add, _ = strconv.Atoi(os.Args[4])
		every, _ = strconv.Atoi(os.Args[5])
		times, _ = strconv.Atoi(os.Args[6])
	}
	total := n + add*times
	l := gobucket.New(total)
	pc := func(i int) uint64 { return 0x401000 + uint64(i) }
	end := uintptr(0xdead0000)
	if tail == "cycle" {
		end = l.Addr(3)
	}
	l.Chain(n, end, pc)
	for i := 0; i < n; i++ {
		l.Bucket(i)[gobucket.Active] = 1
	}
	gobucket.SetHead(l.Addr(0))
	fmt.Printf("{\"pid\": %d}\n", os.Getpid())
	if add > 0 { // bpfprof attached: SIGUSR1
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR1)
		<-ch
	}
	for t, i := 0, n; t < times; t++ {
		time.Sleep(time.Duration(every) * time.Millisecond)
		for j := 0; j < add; j, i = j+1, i+1 {
			l.Set(i, pc(i), gobucket.Head())[gobucket.Active] = 1
			gobucket.SetHead(l.Addr(i))
		}
	}
	if add > 0 {
		fmt.Printf("{\"total\": %d}\n", total)
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	runtime.KeepAlive(l)
}
