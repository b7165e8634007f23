// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !nomemprof

// The runtime's own heap profile, per site: links runtime.MemProfile, which
// turns the runtime's allocation sampling on (see main.go).
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// scale is runtime/pprof's scaleHeapSample (protomem.go).
func scale(count, size int64, rate int) (float64, float64) {
	if count == 0 || size == 0 {
		return 0, 0
	}
	if rate <= 1 {
		return float64(count), float64(size)
	}
	avg := float64(size) / float64(count)
	s := 1 / (1 - math.Exp(-avg/float64(rate)))
	return float64(count) * s, float64(size) * s
}

// site: the first frame outside package runtime, inlined frames expanded.
func site(stk []uintptr) string {
	fr := runtime.CallersFrames(stk)
	for {
		f, more := fr.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			return f.Function
		}
		if !more {
			return "[runtime]"
		}
	}
}

func printMemProfile() {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		n, ok = runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
	}
	rate := runtime.MemProfileRate
	sites := map[string][]float64{}
	for i := range recs {
		r := &recs[i]
		k := site(r.Stack())
		v := sites[k]
		if v == nil {
			v = make([]float64, 5)
			sites[k] = v
		}
		ao, ab := scale(r.AllocObjects, r.AllocBytes, rate)
		io, ib := scale(r.InUseObjects(), r.InUseBytes(), rate)
		v[0] += float64(r.AllocObjects) // the samples themselves
		v[1] += ao
		v[2] += ab
		v[3] += io
		v[4] += ib
	}
	b, _ := json.Marshal(map[string]interface{}{"memprof": map[string]interface{}{
		"rate": rate, "sites": sites}})
	fmt.Fprintln(os.Stdout, string(b))
	// A profiler that reads the runtime's buckets from outside (bpfprof
	// --alloc, every 100 ms; later on a loaded host) sees the state printed
	// before the exit.
	time.Sleep(time.Second)
}
