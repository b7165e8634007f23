// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// goalloc - an allocation-heavy Go program for issue 39's benchmark
// (tools/bench_alloc.py go): each goroutine builds small structs, byte
// slices of 16 B-32 KiB (size classes log-uniform) and short strings, keeps
// each in a ring of 4096 live objects (so the collector has work), and counts
// what it made. It prints its own throughput as one JSON line (per second
// and per CPU second).
//
//	goalloc [wait] [memprof] SECONDS [GOROUTINES]   (default 1 goroutine per CPU)
//
// The runtime samples allocations (runtime.MemProfileRate, 512 KiB) only
// when the program links runtime.MemProfile (the linker sets
// runtime.disableMemoryProfiling otherwise): memprof.go links it, so
// goalloc samples as a program importing runtime/pprof does; built with
// -tags nomemprof (goalloc-nomemprof) it samples nothing.
//
// memprof: after the run, runtime.GC() twice (the sweep is finished and
// the profile published), then one more JSON line, the runtime's own heap
// profile per site (the first frame not in package runtime, inlined frames
// expanded), scaled as runtime/pprof scales it: {"memprof": {"rate": R,
// "sites": {NAME: [samples, alloc_objects, alloc_space, inuse_objects,
// inuse_space]}}}.
//
// wait: print {"waiting": PID} and wait for SIGUSR1 before starting (a
// profiler attaches with -p first). The first tenth of SECONDS is a
// warm-up, not counted.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type node struct {
	key   uint64
	name  string
	next  *node
	small [4]uint64
}

var sink [64]interface{}

// The workers' rings stay reachable after the run: memprof's in-use bytes
// are theirs (the runtime's profile and bpfprof's agree on what is kept).
var rings [64]*[4096]interface{}

//go:noinline
func makeNode(i uint64, prev *node) *node {
	return &node{key: i, name: strconv.FormatUint(i, 36), next: prev}
}

//go:noinline
func makeBytes(r uint64) []byte {
	n := (16 << (r % 11)) + int(r>>8)%(16<<(r%11))
	b := make([]byte, n)
	b[0] = byte(r)
	return b
}

func worker(k int, seed uint64, stop *int32, counting *int32, ops *uint64) {
	ring := new([4096]interface{})
	rings[k%64] = ring
	var prev *node
	x := seed
	var n uint64
	for i := uint64(0); atomic.LoadInt32(stop) == 0; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if x%3 == 0 {
			ring[i%4096] = makeBytes(x)
		} else {
			prev = makeNode(i, prev)
			if i%64 == 0 {
				prev = nil
			}
			ring[i%4096] = prev
		}
		if atomic.LoadInt32(counting) != 0 {
			n++
		}
	}
	sink[seed%64] = ring[0]
	atomic.AddUint64(ops, n)
}

// cpuSeconds: the process's CPU time (user and system: a probe's traps count
// as system time, the second value), what ops_per_cpu_sec divides by - steadier than wall-clock
// throughput on a host whose other work takes the CPUs.
func cpuSeconds() (float64, float64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9
}

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "wait" {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR1)
		fmt.Printf("{\"waiting\": %d}\n", os.Getpid())
		<-ch
		args = args[1:]
	}
	memprof := false
	if len(args) > 0 && args[0] == "memprof" {
		memprof = true
		args = args[1:]
	}
	secs := 5.0
	if len(args) > 0 {
		secs, _ = strconv.ParseFloat(args[0], 64)
	}
	g := runtime.NumCPU()
	if len(args) > 1 {
		g, _ = strconv.Atoi(args[1])
	}
	var stop, counting int32
	var ops uint64
	var wg sync.WaitGroup
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			worker(k, uint64(k)*0x9E3779B97F4A7C15+88172645463325252, &stop, &counting, &ops)
		}(k)
	}
	time.Sleep(time.Duration(secs * 0.1 * float64(time.Second)))
	atomic.StoreInt32(&counting, 1)
	t0 := time.Now()
	c0, s0 := cpuSeconds()
	time.Sleep(time.Duration(secs * 0.9 * float64(time.Second)))
	atomic.StoreInt32(&counting, 0)
	el := time.Since(t0).Seconds()
	c1, s1 := cpuSeconds()
	cpu, sys := c1-c0, s1-s0
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("{\"goroutines\": %d, \"seconds\": %.3f, \"ops\": %d, \"ops_per_sec\": %.0f, \"cpu_seconds\": %.3f, \"ops_per_cpu_sec\": %.0f, \"sys_seconds\": %.3f, \"gc\": %d, \"total_alloc\": %d}\n",
		g, el, ops, float64(ops)/el, cpu, float64(ops)/cpu, sys, ms.NumGC, ms.TotalAlloc)
	if memprof {
		printMemProfile()
	}
}
