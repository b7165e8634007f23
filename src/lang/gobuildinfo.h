/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * gobuildinfo.h - the Go release a binary was built by, from its build
 * information (.go.buildinfo, kept by -ldflags='-s -w'), and what that
 * release's memory-profiling functions take (bpfprof --alloc's Go probes).
 *
 * The record, as Go's debug/buildinfo reads it: 32 bytes of header at a
 * 16-byte aligned place, the magic "\xff Go buildinf:", the pointer size, a
 * flags byte; with flag 2 (Go 1.18 and later) the version string and the
 * module information follow inline, each behind an unsigned varint length.
 * Older binaries hold pointers to runtime.buildVersion instead: refused here
 * (ENOTSUP), the caller falls back on the pc-line table's version.
 *
 * The bytes are untrusted (the profiled process's file): the search is
 * bounded by the buffer given (the caller reads at most GOBUILDINFO_SCAN
 * bytes), varints by 10 bytes and the version by GOBUILDINFO_MAX_VERSION.
 */
#ifndef BPFPROF_GOBUILDINFO_H
#define BPFPROF_GOBUILDINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/gopclntab.h"

#define GOBUILDINFO_SCAN	(64u << 10) /* bytes of the data segment searched */
#define GOBUILDINFO_MAX_VERSION 64	    /* bytes of a version string */

struct gobuild {
	char version[GOBUILDINFO_MAX_VERSION + 1]; /* "go1.19.8", as stored */
	unsigned minor;				   /* 19: Go 1.minor */
};

/*
 * The build information in buf (a data segment's first bytes, or the
 * .go.buildinfo section): 0 and *out, -ENOENT no header at a 16-byte
 * aligned place of buf, -ENOTSUP the pre-1.18 pointer form, -EINVAL a
 * header whose version is cut, too long or not "go1.N...".
 */
int gobuildinfo__parse(const void *buf, size_t len, struct gobuild *out);

/*
 * Whether Go 1.minor writes pc-line tables of version v (1.16-1.17: V116,
 * 1.18-1.19: V118, 1.20 and later: V120): a binary whose build information
 * names another release than its table lies (or was edited), and its
 * probes would read the wrong registers.
 */
bool gobuildinfo__matches_pclntab(unsigned minor, enum gopclntab_version v);

/*
 * runtime.mProf_Malloc's arguments in Go 1.minor (ABIInternal integer
 * argument numbers, 0-based): the object's address and its size. 0, or
 * -ENOTSUP before 1.17 (arguments on the stack).
 */
int gobuildinfo__mprof_malloc_args(unsigned minor, unsigned *p_arg, unsigned *size_arg);
/* runtime.freeSpecial(s, p, size)'s, the same since 1.17 (probed for Go 1.19
 * only where runtime.setprofilebucket is not found). */
int gobuildinfo__free_special_args(unsigned minor, unsigned *p_arg, unsigned *size_arg);

/*
 * Where freeSpecial's probe reads whether a special record is a profiled
 * object's: the offset of struct special's kind byte and the value of
 * _KindSpecialProfile in Go 1.minor. Both moved (1.24 widened offset to a
 * uintptr, later releases renumbered the kinds), and a wrong pair would
 * leave every Go object "in use" or delete the wrong entries: only the
 * releases in the table, each checked against the runtime's DWARF of a
 * binary built by that release (tests/integration/test_gocost.py), are
 * known. 0, or -ENOTSUP (a release not verified: its Go allocations are
 * profiled through mProf_Malloc alone, their frees not).
 */
int gobuildinfo__special_kind(unsigned minor, unsigned *kind_off, unsigned *profile_kind);

/*
 * The runtime's memory-profile bucket (runtime/mprof.go), where a release's
 * is verified: struct bucket { next, allnext *bucket; typ bucketType; hash,
 * size, nstk uintptr } (hdr bytes), then stk [nstk]uintptr (return pcs,
 * the leaf first, as runtime.callers gives them: an inlined call's frames
 * each a pc of their own), then a memRecord whose first 32 bytes are active
 * {allocs, frees, alloc_bytes, free_bytes}: the counts as of the last GC
 * that runtime.MemProfile reports. runtime.setprofilebucket(p, b) is called
 * once per sampled allocation, b's arguments (ABIInternal) as given here.
 * Verified: Go 1.19.8 (Debian 12's golang-1.19), the DWARF of goalloc
 * (runtime.bucket) and its mprof.go (tests/integration/test_gocost.py).
 */
#define GOBUCKET_MAX_STACK 32				      /* the runtime's maxStack */
#define GOBUCKET_MAX_SIZE  (1ull << 40)			      /* an object's bytes believed */
#define GOBUCKET_READ	   (48 + 8 * GOBUCKET_MAX_STACK + 32) /* the most bytes one read wants */

struct gobucket_layout {
	unsigned p_arg, b_arg; /* setprofilebucket's arguments */
	unsigned hdr;	       /* sizeof(bucket): where stk starts */
	unsigned typ_off, size_off, nstk_off;
	uint64_t mem_type; /* memProfile's bucketType */
};

/* Go 1.minor's: its index in the table (>= 0, the probe's cookie carries it); or
 * -ENOTSUP: not verified. */
int gobuildinfo__bucket_layout(unsigned minor, struct gobucket_layout *l);
/* The layout of index i. 0, or -ENOENT. */
int gobuildinfo__bucket_layout_at(unsigned i, struct gobucket_layout *l);

struct gobucket {
	uint64_t size;			  /* each allocation's bytes */
	uint32_t nstk;			  /* pcs in stk */
	uint64_t stk[GOBUCKET_MAX_STACK]; /* the leaf first */
	uint32_t active_off;		  /* the memRecord's offset from the bucket */
};

/*
 * A bucket's first len bytes (read from the process: untrusted) parsed into
 * *out: 0, -EINVAL not a memory-profile bucket of the layout (type, size 0
 * or above GOBUCKET_MAX_SIZE, nstk above GOBUCKET_MAX_STACK), -ENODATA len
 * too short for its stack.
 */
int gobucket__parse(const void *buf, size_t len, const struct gobucket_layout *l,
		    struct gobucket *out);

/*
 * In use as of the last GC from a bucket's active record {allocs, frees,
 * alloc_bytes, free_bytes} (untrusted: a count that went backwards gives 0),
 * scaled as runtime/pprof's scaleHeapSample (by the average size; a rate of
 * 0 or 1: not scaled): *objects, *bytes (finite, >= 0).
 */
void gobucket__inuse(const uint64_t active[4], int64_t rate, double *objects, double *bytes);

/*
 * runtime.mbuckets in a Go binary without a symbol table (x86-64), from the
 * runtime's own code (the file's bytes: untrusted; a forgery can only point
 * its own process's poll at its own memory, and the list read is checked
 * as any other). Both take code[0, len) at vaddr and return 0 and *out, a
 * target in [lo, hi) (the zero-filled data: .bss, .noptrbss), or -ENOENT.
 *
 * gobuildinfo__x86_memprof_lea: runtime.stkbucket's memProfile branch of
 * `switch typ` ("b.allnext = mbuckets; mbuckets = b"): `cmp r64, $typ`,
 * `jne`, then `lea r64, [rip + disp32]` whose target is the list's head;
 * every match in [lo, hi) names one address (else -ENOENT: ambiguous).
 *
 * gobuildinfo__x86_first_rip_load: the first `mov r64, [rip + disp32]`
 * whose target is in [lo, hi) (runtime.mProf_FlushLocked's first load is
 * `mbuckets.Load()`): the cross-check.
 */
int gobuildinfo__x86_memprof_lea(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t typ,
				 uint64_t lo, uint64_t hi, uint64_t *out);
int gobuildinfo__x86_first_rip_load(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t lo,
				    uint64_t hi, uint64_t *out);

#endif
