/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * alloc_abi.h - the ABI shared by bpf/alloc.bpf.c (bpfprof --alloc: memory
 * profiles from the C library's allocator) and src/collector/alloc.c.
 * Fixed-width types only; each struct's size is pinned.
 *
 * Sampling by bytes (as Go, tcmalloc and jemalloc do): each thread counts
 * down the bytes it allocates from a gap drawn from an exponential
 * distribution of mean `period` (a Poisson process over the bytes); the
 * allocation that takes the count below zero is sampled and a new gap is
 * drawn. An allocation of s bytes is thus sampled with probability
 * 1 - exp(-s / period), and userspace weighs it by the inverse. The
 * exponential draws come from a table userspace fills (gaps[], one per
 * 16-bit random number): no floating point in BPF.
 *
 * A sampled allocation's pointer is known at its return: there the program
 * takes the user stack (the caller's frame is complete: the return has
 * restored its frame pointer) into the event it sends, by value with its
 * hash (hash_abi.h's bp_stack_hash), and enters the block in the live table
 * with the hash; a free of an address in the table removes it, so what is
 * left is in use. Userspace keeps each distinct stack once, by hash
 * (base/stacktab.h): nothing in BPF fills up with stacks over a long run.
 *
 * Go (ALLOC_FN_GO_*): the runtime samples its own allocations by bytes
 * (runtime.MemProfileRate) and records each sampled one through
 * runtime.mProf_Malloc(p, size): a probe there (on x86-64 on the jbe of the
 * function's stack check, a fire with the jump taken skipped; elsewhere past
 * the prologue: its morestack path re-runs the entry) records every call
 * as is, no sampling in BPF, its weight from the target's rate. Frees come
 * from the sweeper: freeSpecial(s, p, size) is called for each special
 * record of a dead object; the probe reads the record's kind byte (its
 * offset in struct special and the value of _KindSpecialProfile move between
 * releases: the cookie carries both, from a table of the releases verified,
 * lang/gobuildinfo.c) and, for a profiled object, deletes p's live entry
 * itself: two traps per profiled object (mProf_Malloc, freeSpecial), the
 * runtime's mProf_Free, called next, is not probed. Go passes arguments in
 * registers (ABIInternal, Go 1.17+: RAX, RBX, RCX, RDI... on x86-64, R0...
 * on arm64); which argument holds p and size moved (1.23 added mp first), so
 * the probe's cookie says: ALLOC_COOKIE().
 */
#ifndef BPFPROF_ALLOC_ABI_H
#define BPFPROF_ALLOC_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "hash_abi.h"

/* The functions probed (the cookie's low half). */
enum alloc_fn {
	ALLOC_FN_MALLOC,
	ALLOC_FN_CALLOC,
	ALLOC_FN_REALLOC,
	ALLOC_FN_FREE,
	ALLOC_FN_POSIX_MEMALIGN,
	ALLOC_FN_ALIGNED_ALLOC,
	ALLOC_FN_MEMALIGN,
	ALLOC_FN_GO_MALLOC,	  /* runtime.mProf_Malloc: a sampled allocation */
	ALLOC_FN_GO_FREE_SPECIAL, /* runtime.freeSpecial: a dead object's special record */
	ALLOC_FN_GO_MPROF_FREE,	  /* runtime.mProf_Free: not probed (see above) */
	ALLOC_FN_SBCL_ALLOC,	  /* SBCL's alloc(nbytes, sys): a large object */
	ALLOC_FN_SBCL_CLOSE,	  /* SBCL's gc_close_region(region, type): a region's bytes */
	ALLOC_FN_GO_BUCKET, /* runtime.setprofilebucket(p, b): a sampled allocation's bucket */
	ALLOC_FN_GO_FLUSH,  /* runtime.mProf_Flush: a GC's end (the buckets polled) */
	ALLOC_FN_NR,
};

/*
 * A probe's cookie: the function (low byte) and, for Go's, the argument
 * numbers (ABIInternal's integer argument order, 0-based) of the object's
 * address and of its size.
 */
#define ALLOC_COOKIE(fn, p_arg, size_arg)                                                          \
	((__u32)(fn) | ((__u32)(p_arg) << 8) | ((__u32)(size_arg) << 12))
#define ALLOC_COOKIE_FN(c)	 ((__u32)(c)&0xff)
#define ALLOC_COOKIE_P_ARG(c)	 (((__u32)(c) >> 8) & 0xf)
#define ALLOC_COOKIE_SIZE_ARG(c) (((__u32)(c) >> 12) & 0xf)
/* freeSpecial's (s, p, size; s the first argument): also the offset of the
 * kind byte in struct special and _KindSpecialProfile's value. */
#define ALLOC_COOKIE_SPECIAL(p_arg, size_arg, kind_off, kind)                                      \
	(ALLOC_COOKIE(ALLOC_FN_GO_FREE_SPECIAL, p_arg, size_arg) |                                 \
	 ((__u32)(kind_off)&0xff) << 16 | ((__u32)(kind)&0x7f) << 24)
#define ALLOC_COOKIE_KIND_OFF(c) (((__u32)(c) >> 16) & 0xff)
#define ALLOC_COOKIE_KIND(c)	 (((__u32)(c) >> 24) & 0x7f)
/* A Go probe on its function's stack-check jump (x86-64,
 * collector/freeprobe.h): a fire with the jump taken (CF or ZF set: the stack
 * grows, the function starts again) is not one. */
#define ALLOC_COOKIE_GO_AT_CHECK (1u << 31)
/* runtime.mProf_Malloc's cookie: a release whose special records are not
 * verified (freeSpecial not probed): its samples get no live entry. */
#define ALLOC_COOKIE_GO_UNFOLLOWED (1u << 16)

/* Whether fn's return is probed: the C library's allocation functions. */
static inline int alloc_fn_has_return(__u32 cookie)
{
	__u32 fn = ALLOC_COOKIE_FN(cookie);

	return fn != ALLOC_FN_FREE && fn < ALLOC_FN_GO_MALLOC;
}

/* Where a sampled allocation came from (alloc_event.source, alloc_live_key.source). */
enum alloc_source {
	ALLOC_SRC_LIBC, /* sampled in BPF by bytes: --alloc's period */
	ALLOC_SRC_GO,	/* sampled by the Go runtime: its MemProfileRate */
	ALLOC_SRC_SBCL, /* SBCL's regions closed, large objects: sampled in BPF by bytes */
};

/*
 * SBCL (ALLOC_FN_SBCL_*): Lisp code allocates inline in its thread's
 * allocation regions (each {free_pointer, end_addr, start_addr}, in the
 * thread structure, the TLS variable current_thread, at offsets per
 * release: the user's and the system's mixed and cons regions); a region
 * full is closed by the runtime's gc_close_region(region, page_type) and a
 * new one opened (from alloc, alloc_list, make_list...). A close of one of
 * the calling thread's regions stands for the bytes it holds (free -
 * start: sb-sprof's :alloc point, the allocations since its opening); the
 * GC's own regions are other addresses (not counted). Objects of at least
 * `large` bytes are not in regions: alloc(nbytes, sys)'s entry stands for
 * them (nbytes). Those bytes are then sampled as the C library's are
 * (alloc_thread.left). The GC moves objects: no live entry (in-use is not
 * measured). The probe's cookie holds the slot of its runtime's struct
 * alloc_sbcl in the sbcl map: ALLOC_SBCL_COOKIE().
 */
#define ALLOC_SBCL_SLOTS	    64
#define ALLOC_SBCL_COOKIE(fn, slot) ((__u32)(fn) | ((__u32)(slot) << 8))
#define ALLOC_COOKIE_SLOT(c)	    (((__u32)(c) >> 8) & 0xff)
#define ALLOC_SBCL_MAX_REGION	    (1ull << 30) /* a region's bytes believed */
#define ALLOC_SBCL_REGIONS	    4

struct alloc_sbcl {
	__s64 tpoff; /* current_thread's offset from the thread pointer (FS base) */
	__u64 large; /* LARGE_OBJECT_SIZE: alloc's objects out of regions (0: none) */
	__u32 region[ALLOC_SBCL_REGIONS]; /* the thread's regions: offsets in its structure */
};
_Static_assert(sizeof(struct alloc_sbcl) == 32, "alloc_sbcl");

#define ALLOC_GAPS	  65536	     /* exponential draws, indexed by 16 random bits */
#define ALLOC_LIVE_MAX	  65536	     /* live sampled blocks tracked at once */
#define ALLOC_STACK_DEPTH 127	     /* frames per stack (PERF_MAX_STACK_DEPTH) */
#define ALLOC_RING_BYTES  (4u << 20) /* ~3,900 events: ~2 s at 2,000 samples/s */
#define ALLOC_CGROUPS	  8	     /* --cgroup directories */

/* A sampled allocation, in the ring buffer, its user stack by value. */
struct alloc_event {
	__u32 tgid;
	__u32 nr; /* frames in ips[] (0: no stack: it could not be read) */
	__u64 size;
	__u64 addr;
	char comm[16];
	__u32 source; /* enum alloc_source */
	__u32 pad;
	__u64 stack;		      /* bp_stack_hash(ips, nr, BP_SEED_USTACK); 0: no stack */
	__u64 ips[ALLOC_STACK_DEPTH]; /* the leaf first; zeros past nr */
};
_Static_assert(sizeof(struct alloc_event) == 56 + 8 * ALLOC_STACK_DEPTH, "alloc_event");
_Static_assert(ALLOC_STACK_DEPTH <= BP_STACK_HASH_MAX, "a stack hash covers the event's ips");

struct alloc_live_key {
	__u32 tgid;
	__u32 source; /* enum alloc_source */
	__u64 addr;
};
_Static_assert(sizeof(struct alloc_live_key) == 16, "alloc_live_key");

struct alloc_live {
	__u64 size;
	__u64 stack; /* alloc_event.stack: the stack's hash; 0: no stack; ALLOC_STACK_LOST */
};

/* alloc_live.stack of a block whose event (and stack) the full ring lost: a
 * value events never carry (a stack hashing to it is sent as 2). */
#define ALLOC_STACK_LOST 1ULL
_Static_assert(sizeof(struct alloc_live) == 16, "alloc_live");

/* Each thread's state (task storage). */
struct alloc_thread {
	__s64 left;   /* bytes until the next sample */
	__u64 size;   /* the sampled call in flight: its size */
	__u64 memptr; /* posix_memalign's result pointer */
	__u64 sp;     /* its stack pointer at entry (the return's is sp + 8) */
	__u32 fn;
	__u32 pending; /* a sampled call waits for its return */
	/* SBCL: current_thread as read at sbcl_at (thread pointer + its TLS
	 * offset), once a thread (a runtime's thread structure lives with it) */
	__u64 sbcl_at;
	__u64 sbcl_thread;
};

/* The program's own counters (a per-CPU array). */
enum alloc_counter {
	ALLOC_C_CALLS,	    /* allocation calls of the targets */
	ALLOC_C_FREES,	    /* free calls of the targets (non-NULL) */
	ALLOC_C_SAMPLED,    /* sampled calls (entries) */
	ALLOC_C_RECORDED,   /* sampled allocations sent (returns) */
	ALLOC_C_FAILED,	    /* sampled calls that returned no block */
	ALLOC_C_FREED,	    /* frees of sampled blocks (matched in the live table) */
	ALLOC_C_LIVE_FULL,  /* sampled blocks not tracked: the live table was full */
	ALLOC_C_RING_FULL,  /* sampled allocations lost: the ring buffer was full */
	ALLOC_C_NO_STACK,   /* sampled allocations without a stack (it could not be read) */
	ALLOC_C_NO_THREAD,  /* calls not counted: the thread's state could not be made */
	ALLOC_C_NO_RETURN,  /* sampled calls whose return was not seen (longjmp, nesting) */
	ALLOC_C_GO_SAMPLES, /* Go: allocations the runtime sampled (mProf_Malloc) */
	ALLOC_C_GO_FREES,   /* Go: frees of sampled objects (freeSpecial of a profile record) */
	ALLOC_C_GO_FREED,   /* ... matched in the live table */
	ALLOC_C_OTHERS,	    /* -a, --cgroup: calls of processes not profiled (bpfprof itself,
			     * other cgroups), trapped all the same */
	ALLOC_C_GO_BUCKETS_FULL, /* Go: sampled allocations not counted: the bucket table full */
	ALLOC_C_GO_FLUSHES,	 /* Go: mProf_Flush's calls (GC cycles of the polled programs) */
	ALLOC_C_NR,
};

/*
 * Go, the releases whose profile bucket is verified (lang/gobuildinfo.h):
 * runtime.setprofilebucket(p, b) is called once per sampled allocation,
 * after the runtime has recorded it in its bucket b (the allocation's stack,
 * size and counts, which the runtime keeps for runtime.MemProfile). Its
 * probe (ALLOC_COOKIE(ALLOC_FN_GO_BUCKET, p_arg, b_arg), on the stack
 * check's jbe as mProf_Malloc's) copies no stack and reads no memory: it
 * counts the call in the gobuckets hash map by (tgid, b), the value made at
 * the first call with the thread's command name. Userspace reads each new
 * bucket's size and stack from the process once and its in-use counts
 * (the bucket's memRecord) at each take: no free is probed. With a symbol
 * table userspace polls the runtime's bucket list instead (no trap per
 * sample): runtime.mProf_Flush is probed (ALLOC_FN_GO_FLUSH: a GC's end,
 * only counted) so that the process is probed as any other.
 */
#define ALLOC_GO_BUCKETS      65536 /* (process, bucket) counted at once */
#define ALLOC_GO_BUCKETS_PROC 8192  /* ... of one process (a tenant's forged ones: its own) */
#define ALLOC_GO_PROCS	      4096  /* processes with buckets counted at once */
/* setprofilebucket's cookie: ALLOC_COOKIE(ALLOC_FN_GO_BUCKET, p_arg, b_arg) |
 * ALLOC_COOKIE_GO_LAYOUT_SET(layout): the bucket layout's index
 * (gobuildinfo__bucket_layout), carried in the key's pad. */
#define ALLOC_COOKIE_GO_LAYOUT_SET(i) (((__u32)(i)&0xff) << 16)
#define ALLOC_COOKIE_GO_LAYOUT(c)     (((__u32)(c) >> 16) & 0xff)

struct alloc_go_bkey {
	__u32 tgid;
	__u32 pad;
	__u64 b; /* the bucket's address in the process */
};
_Static_assert(sizeof(struct alloc_go_bkey) == 16, "alloc_go_bkey");

struct alloc_go_bval {
	__u64 count; /* calls since the entry was made (never reset: userspace takes deltas) */
	char comm[16];
};
_Static_assert(sizeof(struct alloc_go_bval) == 24, "alloc_go_bval");

/* targets map values */
#define ALLOC_TARGET_ON	  1 /* profiled */
#define ALLOC_TARGET_STOP 2 /* profiled, and stopped (SIGSTOP) at its exec: -- COMMAND */

#endif
