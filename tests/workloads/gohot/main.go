// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// gohot - a Go program with a known profile for the Go tests: main.main
// calls main.alphaLeaf (7 parts of the work), main.betaLeaf (3 parts), both
// frameless leaves (Go omits their frame pointer setup, which is what
// loses main.main in a frame-pointer walk), and main.viaInlined (2 parts),
// inlined into main.main, which calls main.gammaLeaf. Built twice by the Makefile:
// with symbols and with -ldflags="-s -w" (no .symtab, as releases ship).
//
//	gohot [SECONDS] [THREADS]   (default 5 s, 1 goroutine per thread)
package main

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

var sink uint64

//go:noinline
func alphaLeaf(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i)*7 ^ s>>3
	}
	return s
}

//go:noinline
func betaLeaf(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i)*13 ^ s>>5
	}
	return s
}

//go:noinline
func gammaLeaf(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i)*11 ^ s>>4
	}
	return s
}

// Small enough for the compiler to inline into its caller.
func viaInlined(n int) uint64 {
	return gammaLeaf(n) + 1
}

func work(end time.Time) uint64 {
	var s uint64
	for time.Now().Before(end) {
		s += alphaLeaf(70000)
		s += betaLeaf(30000)
		s += viaInlined(20000)
	}
	return s
}

func main() {
	secs, threads := 5.0, 1
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	if len(os.Args) > 2 {
		threads, _ = strconv.Atoi(os.Args[2])
	}
	runtime.GOMAXPROCS(threads)
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	if threads == 1 {
		// On the main goroutine: runtime.main;main.main;main.alphaLeaf.
		for time.Now().Before(end) {
			sink += alphaLeaf(70000)
			sink += betaLeaf(30000)
			sink += viaInlined(20000)
		}
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := work(end)
			sink += v
		}()
	}
	wg.Wait()
}
