/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * count_abi.h - the ABI shared by bpf/count.bpf.c (bpfprof count: calls and
 * time per function) and src/collector/count.c. Fixed-width types only; each
 * struct's size is pinned so both sides agree on every byte.
 *
 * Every probed function has an index (its uprobe's cookie). The entry
 * program counts the call, counts it under its return address (the caller,
 * named in userspace: no stack walk per call) and pushes (time, stack
 * pointer, index) on the thread's stack; the return program pops the frame
 * whose stack pointer is the one the return leaves (entry's + 8 on x86-64),
 * so each level of a recursion is timed from its own entry, and frames left
 * by a longjmp (or a probe detached while they ran) are dropped, counted.
 */
#ifndef BPFPROF_COUNT_ABI_H
#define BPFPROF_COUNT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Latency histogram: bucket i holds calls of [2^i, 2^(i+1)) ns (bucket 0 also 0 ns),
 * the last one everything from 2^39 ns (9 minutes) up. */
#define COUNT_HIST_BUCKETS 40
/* Frames timed per thread at once; deeper calls are counted, not timed. */
#define COUNT_STACK_DEPTH 64
/* Target processes at once (-p, -- COMMAND and its --children). */
#define COUNT_TARGETS 16384
/* --cgroup directories at most. */
#define COUNT_CGROUPS 8
/* --children: exec'd targets waiting for userspace to probe their files. */
#define COUNT_EXECS 1024
/* Distinct (process, function, return address) triples counted. */
#define COUNT_CALLERS 65536

struct count_stat {
	__u64 calls;   /* entries: exact */
	__u64 returns; /* timed returns */
	__u64 total_ns, min_ns, max_ns;
	__u64 hist[COUNT_HIST_BUCKETS];
};
_Static_assert(sizeof(struct count_stat) == 8 * (5 + COUNT_HIST_BUCKETS), "count_stat");

struct count_caller_key {
	__u32 tgid;
	__u32 fn;
	__u64 ret; /* the return address: the caller is the function holding ret - 1 */
};
_Static_assert(sizeof(struct count_caller_key) == 16, "count_caller_key");

struct count_frame {
	__u64 ts;
	__u64 sp;
	__u32 fn;
	__u32 pad;
};

struct count_tstack {
	__u32 depth;
	__u32 pad;
	struct count_frame fr[COUNT_STACK_DEPTH];
};

/* The program's own counters (a per-CPU array). */
enum count_counter {
	COUNT_C_DEEP,	      /* calls not timed: deeper than COUNT_STACK_DEPTH */
	COUNT_C_UNMATCHED,    /* frames dropped without their return (longjmp, detach) */
	COUNT_C_NOFRAME,      /* returns with no frame of theirs (entered before the attach) */
	COUNT_C_CALLERS_FULL, /* calls not counted by caller: the callers map was full */
	COUNT_C_THREADS_FULL, /* calls not timed: the thread's stack could not be made (memory) */
	COUNT_C_TARGETS_FULL, /* --children: children not counted, the targets map full */
	COUNT_C_EXECS_FULL,   /* --children: execs not stopped for their files, execs map full */
	COUNT_C_NR,
};

/* targets map values */
#define COUNT_TARGET_ON	  1 /* counted */
#define COUNT_TARGET_STOP 2 /* counted, and stopped (SIGSTOP) at its exec: -- COMMAND */

/* log2 of v, floored (0 for 0 and 1): the histogram bucket, capped by the caller. */
static inline __u32 count_log2(__u64 v)
{
	__u32 r = 0, s;

	s = (v > 0xFFFFFFFFull) << 5;
	v >>= s;
	r |= s;
	s = (v > 0xFFFF) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xFF) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xF) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	r |= (__u32)(v >> 1);
	return r;
}

static inline __u32 count_bucket(__u64 ns)
{
	__u32 b = count_log2(ns);

	return b < COUNT_HIST_BUCKETS ? b : COUNT_HIST_BUCKETS - 1;
}

#endif
