// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// goflood - a tenant's Go program that hands bpfprof --alloc's probed path
// (runtime.setprofilebucket, probed under -a and --cgroup) N valid-looking
// forged memory-profile buckets, each with a stack of its own: every one is
// kept (up to the process's share) and would hold an entry of bpfprof's
// stack table while the process lives. Each p is a fresh object kept
// reachable for ever. The runtime's own sampling is off (MemProfileRate 0).
//
//	goflood [wait] N SECONDS   (wait: prints {"waiting": PID}, starts at SIGUSR1)
//
// Prints {"flood": N} once the N calls are made, then lives SECONDS more.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

//go:linkname setprofilebucket runtime.setprofilebucket
func setprofilebucket(p unsafe.Pointer, b uintptr)

var keep [][]byte
var fakes [][]uint64

// A forged bucket: Go 1.19's header {next, allnext, typ, hash, size, nstk},
// stk, then memRecord {active, future[3]} (4 words each).
func fake(stk uint64) uintptr {
	w := []uint64{0, 0, 1, 0x5eed, 64, 1, stk}
	w = append(w, make([]uint64, 16)...)
	fakes = append(fakes, w)
	return uintptr(unsafe.Pointer(&w[0]))
}

func main() {
	args := os.Args[1:]
	runtime.MemProfileRate = 0
	if len(args) > 0 && args[0] == "wait" {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR1)
		fmt.Printf("{\"waiting\": %d}\n", os.Getpid())
		<-ch
		args = args[1:]
	}
	n, secs := 10000, 2.0
	if len(args) > 0 {
		n, _ = strconv.Atoi(args[0])
	}
	if len(args) > 1 {
		secs, _ = strconv.ParseFloat(args[1], 64)
	}
	bs := make([]uintptr, n)
	for i := range bs { // distinct a process: the same words in two would share one entry
		bs[i] = fake(0xf100d0000 + uint64(i) + uint64(os.Getpid())<<36)
	}
	for _, b := range bs {
		p := make([]byte, 64)
		keep = append(keep, p)
		setprofilebucket(unsafe.Pointer(&p[0]), b)
	}
	out, _ := json.Marshal(map[string]int{"flood": n})
	fmt.Println(string(out))
	time.Sleep(time.Duration(secs * float64(time.Second)))
}
