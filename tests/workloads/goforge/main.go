// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// goforge - a tenant's Go program that forges what bpfprof --alloc reads
// from Go's profile buckets: it calls runtime.setprofilebucket(p, b) itself
// (go:linkname) with b pointing at bytes it made (a bucket with a garbage
// stack and absurd counts, one whose nstk is huge, one of another type), at
// unmapped and kernel addresses, and at thousands of distinct forged buckets
// (a flood past its share of bpfprof's table). Each p is a fresh object kept
// reachable for ever (the runtime would update b's counts at its free).
// The runtime's own sampling is off (MemProfileRate 0): no real bucket.
//
//	goforge [wait] SECONDS   (wait: prints {"waiting": PID}, starts at SIGUSR1)
//	goforge inline SECONDS   (no forging: allocations through an inlined call)
//	goforge list [wait] SECONDS   (the runtime's bucket list itself forged)
//	goforge listwrap [wait] SECONDS   (list's, its counts 0, then 2^63 allocations
//	                                   each after 2 s: sums of them wrap)
//
// list: the GC off (it would walk the list), runtime.mbuckets (the list
// bpfprof polls when the binary has a symbol table) pointed at 20,000
// forged buckets: valid-looking ones with garbage stacks and absurd counts
// (growing each 50 ms), one of another type, one with a huge nstk, the
// last one's allnext back into the list (a cycle). Prints {"list": N}.
//
// inline: the runtime samples (MemProfileRate 4096) allocations made by
// main.small, inlined into main.outer (//go:noinline); the bucket's stack
// then has a pc for small's code in outer and one for outer itself. Prints
// {"inline": ["main.small", "main.outer", ...]}: the runtime's own frames of
// its biggest record (runtime.CallersFrames), innermost first.
//
// Prints {"forged": {"garbage": N, "absurd": N, "huge_nstk": N, "unmapped": N,
// "kernel": N, "flood": N}}: the calls made with each kind of b.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"gobucket"
)

//go:linkname setprofilebucket runtime.setprofilebucket
func setprofilebucket(p unsafe.Pointer, b uintptr)

func list(secs float64, wrap bool) {
	debug.SetGCPercent(-1)
	const n = 20000
	l := gobucket.New(n)
	pc := func(i int) uint64 { return 0xdead0000 + uint64(i) + uint64(os.Getpid())<<32 } // distinct a process
	l.Chain(n, l.Addr(3), pc)                                                            // a cycle
	for i := 0; i < n; i++ {
		w := l.Bucket(i)
		if i == 7 {
			w[gobucket.Type] = 2 // another type
		}
		if i == 9 {
			w[gobucket.Nstk] = 1 << 40 // nstk huge
		}
		if !wrap {
			w[7], w[8], w[9], w[10] = 1<<62, 1<<63, ^uint64(0), 1 // active: frees past allocs
			w[11] = ^uint64(0) - 5                                // future[0].allocs: sums wrap
		}
	}
	gobucket.SetHead(l.Addr(0))
	start := time.Now()
	end := start.Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		for i := 0; i < n; i++ {
			w := l.Bucket(i)
			if wrap {
				if time.Since(start) > 2*time.Second {
					w[7] = 1 << 63 // active.allocs: 2^63 more, each bucket
				}
				continue
			}
			w[12] += 1000 // future[0].frees, and future[1].allocs: counts that move
			w[15]++
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("{\"list\": %d}\n", n)
	runtime.KeepAlive(l)
}

var keep [][]byte
var fakes [][]uint64

// A forged bucket: Go 1.19's header {next, allnext, typ, hash, size, nstk},
// stk, then memRecord {active, future[3]} (4 words each).
func fake(typ, size, nstk uint64, stk []uint64, active [4]uint64) uintptr {
	w := []uint64{0, 0, typ, 0x5eed, size, nstk}
	w = append(w, stk...)
	w = append(w, active[:]...)
	w = append(w, make([]uint64, 12)...)
	fakes = append(fakes, w)
	return uintptr(unsafe.Pointer(&w[0]))
}

func call(b uintptr) {
	p := make([]byte, 64)
	keep = append(keep, p)
	setprofilebucket(unsafe.Pointer(&p[0]), b)
}

var sink [][]byte

func small(n int) []byte { return make([]byte, n) } // inlined into outer

//go:noinline
func outer(n int) []byte { return small(n) }

func inline(secs float64) {
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			if b := outer(1000); len(sink) < 100 {
				sink = append(sink, b)
			}
		}
	}
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(recs, true)
	var best *runtime.MemProfileRecord
	for i := range recs[:n] {
		if best == nil || recs[i].AllocBytes > best.AllocBytes {
			best = &recs[i]
		}
	}
	var names []string
	frames := runtime.CallersFrames(best.Stack())
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			break
		}
	}
	out, _ := json.Marshal(map[string]interface{}{"inline": names})
	fmt.Println(string(out))
	time.Sleep(300 * time.Millisecond)
}

func waitSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	fmt.Printf("{\"waiting\": %d}\n", os.Getpid())
	<-ch
}

func main() {
	args := os.Args[1:]
	if len(args) > 0 && (args[0] == "list" || args[0] == "listwrap") {
		runtime.MemProfileRate = 0
		if len(args) > 1 && args[1] == "wait" {
			waitSignal()
		}
		secs, _ := strconv.ParseFloat(args[len(args)-1], 64)
		list(secs, args[0] == "listwrap")
		return
	}
	if len(args) > 0 && args[0] == "inline" {
		runtime.MemProfileRate = 4096
		secs, _ := strconv.ParseFloat(args[len(args)-1], 64)
		inline(secs)
		return
	}
	runtime.MemProfileRate = 0
	if len(args) > 0 && args[0] == "wait" {
		waitSignal()
		args = args[1:]
	}
	secs := 2.0
	if len(args) > 0 {
		secs, _ = strconv.ParseFloat(args[0], 64)
	}
	garbage := fake(1, 4096, 3, []uint64{0xdeadbeef, 1, ^uint64(0)},
		[4]uint64{5, 1 << 63, 1 << 63, 0}) // frees past allocs: nothing in use
	absurd := fake(1, 1<<39, 32, make([]uint64, 32),
		[4]uint64{^uint64(0), 0, ^uint64(0), 0}) // in use: absurd, its own profile's
	huge := fake(1, 4096, 1<<40, nil, [4]uint64{})
	other := fake(2, 4096, 1, []uint64{0x401000}, [4]uint64{})
	n := map[string]int{}
	const flood = 20000
	floodb := make([]uintptr, flood)
	for i := range floodb {
		floodb[i] = fake(7, 64, 1, []uint64{uint64(i)}, [4]uint64{})
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for i := 0; time.Now().Before(end) && i < 200; i++ {
		call(garbage)
		n["garbage"]++
		call(absurd)
		n["absurd"]++
		call(huge)
		n["huge_nstk"]++
		call(other)
		n["other_type"]++
		call(0x10)
		n["unmapped"]++
		call(0xffff800000000000)
		n["kernel"]++
		time.Sleep(time.Millisecond)
	}
	for _, b := range floodb {
		call(b)
		n["flood"]++
	}
	for time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	out, _ := json.Marshal(map[string]interface{}{"forged": n})
	fmt.Println(string(out))
}
