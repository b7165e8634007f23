// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package gobucket forges the runtime's list of profile buckets
// (runtime.mbuckets, the list bpfprof --alloc polls) for the tenants'
// programs of the tests (gowalk, goforge list): buckets of Go 1.19's layout
// (runtime/mprof.go), a header {next, allnext, typ, hash, size, nstk}, the
// stack (one frame here), then a memRecord {active, future[3]} of 4 words
// each, all in one slice the caller keeps alive (runtime.KeepAlive).
package gobucket

import (
	"sync/atomic"
	"unsafe"
)

//go:linkname mbuckets runtime.mbuckets
var mbuckets uintptr

// Words is a one-frame bucket's length in words; the fields' indices follow.
const Words = 6 + 1 + 16

const (
	AllNext = 1 // the next bucket of the list
	Type    = 2 // 1: a memory profile's
	Size    = 4 // the allocations' size
	Nstk    = 5 // frames in the stack
	Stack   = 6 // the one frame
	Active  = 7 // memRecord.active {allocs, frees, alloc_bytes, free_bytes}
	Future  = 11
)

// List is room for one-frame buckets, one after the other.
type List []uint64

// New returns room for n buckets, all zero.
func New(n int) List { return make(List, n*Words) }

// Bucket is bucket i's words.
func (l List) Bucket(i int) []uint64 { return l[i*Words : (i+1)*Words] }

// Addr is bucket i's address.
func (l List) Addr(i int) uintptr { return uintptr(unsafe.Pointer(&l[i*Words])) }

// Set makes bucket i a memory-profile bucket of 4096-byte allocations whose
// one frame is pc, allnext the next one of the list; its words.
func (l List) Set(i int, pc uint64, allnext uintptr) []uint64 {
	w := l.Bucket(i)
	w[AllNext], w[Type], w[Size], w[Nstk], w[Stack] = uint64(allnext), 1, 4096, 1, pc
	return w
}

// Chain sets buckets 0 to n-1 (Set, bucket i's frame pc(i)), each one's
// allnext the next one, the last one's tail.
func (l List) Chain(n int, tail uintptr, pc func(i int) uint64) {
	for i := 0; i < n; i++ {
		next := tail
		if i+1 < n {
			next = l.Addr(i + 1)
		}
		l.Set(i, pc(i), next)
	}
}

// Head is the runtime's list head.
func Head() uintptr { return atomic.LoadUintptr(&mbuckets) }

// SetHead points the runtime's list at a: the runtime's own buckets (none
// while its sampling is off) are no longer in it.
func SetHead(a uintptr) { atomic.StoreUintptr(&mbuckets, a) }
