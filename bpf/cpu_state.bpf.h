/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cpu_state.bpf.h - what every BPF program of bpfprof shares on a CPU: the
 * per-CPU state a sample writes (counters, the stacks being read, the
 * walkers' registers and row cache, the hot-key slots), the counters'
 * helpers, the ring buffer of process notices, and the optional timing of
 * tools/bench_breakdown.py. The sampler (profile.bpf.c) and the walkers
 * (unwind.bpf.h, kwalk.bpf.h) include it; it includes what it needs, so
 * each of them compiles on its own.
 */
#ifndef BPFPROF_CPU_STATE_BPF_H
#define BPFPROF_CPU_STATE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "profile_abi.h"
#include "unwind_state.bpf.h"

/*
 * Everything a sample writes on its CPU, in one place: the counters, the
 * stacks being read, the walker's registers and caches. At 99 Hz every
 * sample starts with cold caches and TLB, so what matters is how many lines
 * and pages it touches: one array value per CPU, indexed by CPU number
 * (perf_event programs do not nest on a CPU), instead of three per-CPU maps
 * on three pages. Not PERCPU_ARRAY values, which are only 8-byte aligned: an
 * mmapable array's values start on a page, so the row cache lines up.
 * Userspace reads the counters through an mmap of this map.
 */
struct cpu_state {
	__u64 stats[STAT_MAX]; /* enum bp_stat; first: userspace reads it at offset 0 */
	__u64 kstack, ustack;  /* this sample's stack ids (sample_kstack(), sample_ustack()) */
	/* The image do_sample() last found noticed on this CPU (notify_new_image()),
	 * and uw_proc_gen then: a new key of the same image skips the seen lookup. */
	struct {
		__u64 gen, start_time, exec_id;
		__u32 tgid;
		/* Of nvma[], the mappings this CPU sent for the image (its notice
		 * and updates), and when the notice went: 0 if not from here. */
		__u32 nr_sent;
		__u64 sent_ns;
	} seen;
	struct bp_stack kernel; /* this sample's stacks */
	struct bp_stack user;
	struct uw_state uw;    /* the walkers' registers */
	struct hs_scratch hs;  /* a JVM's walk (hotspot.bpf.h) */
	struct bp_stack check; /* kw_verify: the kernel stack from bpf_get_stack() */
	/* A notice's mappings as bpf_find_vma() finds them (notice_vmas()). */
	struct bp_vma nvma[BP_NOTICE_VMAS];
	/* The walkers' row cache on pages of its own: 32-byte entries, two
	 * per cache line, so a probe touches one line. 512 entries (four
	 * pages), not 128 (one): kernel and user frames share it, and with
	 * many processes on a host a miss - a search through cold table pages,
	 * ~0.7 us - costs more than the extra pages (bench_overhead --compare
	 * on a crowded machine: 0.97x and 0.88x per sample). */
	struct uw_cent uw_cache[UW_CACHE_SIZE] __attribute__((aligned(4096)));
	/* Hot keys (profile_abi.h), per buffer set: the value's last page. */
	struct bp_hot_slot hot[PROFILE_NR_BUFS][PROFILE_HOT_SLOTS] __attribute__((aligned(4096)));
};

_Static_assert(sizeof(((struct cpu_state *)0)->hot) == 4096, "hot slots: one page");
_Static_assert(
	__builtin_offsetof(struct cpu_state, hot) + 4096 == sizeof(struct cpu_state),
	"hot slots: the last page of a cpu_state value (collector/drain.c finds them there)");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by userspace to the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

/* Process notices for userspace (struct bp_proc_event): new images, refresh
 * requests. ~2,700 of them: userspace takes them at least every 200 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} events SEC(".maps");

static __always_inline struct cpu_state *cpu_state_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&cpu_state, &cpu);
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	struct cpu_state *cs = cpu_state_get();

	if (cs && idx < STAT_MAX)
		cs->stats[idx] += n; /* this CPU's, and runs do not nest on a CPU */
}

static __always_inline void stat_inc(__u32 idx)
{
	stat_add(idx, 1);
}

/*
 * Where a sample's time goes, for tools/bench_breakdown.py only: built with
 * -DBPFPROF_TIMING, the program adds the time of each part into this array
 * (index: enum bp_timing). Costs a few clock reads per sample; off by default.
 */
#ifdef BPFPROF_TIMING
enum bp_timing {
	TM_SAMPLES,   /* samples timed (not idle, not filtered) */
	TM_IDENTITY,  /* task identity: ids, comm */
	TM_KSTACK,    /* kernel stack (0 when the sample was in user mode) */
	TM_USTACK,    /* user stack */
	TM_HOT,	      /* aggregation, key already counted ... */
	TM_HOT_N,     /* ... how many */
	TM_NEW,	      /* aggregation, new key: notice check, stacks stored, key inserted ... */
	TM_NEW_N,     /* ... how many */
	TM_UPROC,     /* user stack: finding the process's tables (part of TM_USTACK) */
	TM_UFRAMES,   /* user stack: frames */
	TM_UW_HIT,    /* user frames: row cache probe that hit ... */
	TM_UW_HIT_N,  /* ... how many */
	TM_UW_MISS,   /* user frames: probe that missed, and the searches ... */
	TM_UW_MISS_N, /* ... how many */
	TM_UW_REST,   /* user table frames: the step after the row was found */
	TM_HS_BEGIN,  /* user stack: a JVM's entry, its walk's start (hs_begin) */
	TM_HS_STEP,   /* user frames: steps through a JVM's code cache (hs_step) ... */
	TM_HS_STEP_N, /* ... how many */
	TM_MAX,
};

/* Per CPU: no atomic adds on lines shared between CPUs inside the times. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TM_MAX);
	__type(key, __u32);
	__type(value, __u64);
} timing SEC(".maps");

static __always_inline void tm_add(__u32 idx, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(&timing, &idx);

	if (p)
		*p += v;
}
#define TM_NOW(t)      __u64 t = bpf_ktime_get_ns()
#define TM_ADD(idx, v) tm_add(idx, v)
#else
#define TM_NOW(t)                                                                                  \
	do {                                                                                       \
	} while (0)
#define TM_ADD(idx, v)                                                                             \
	do {                                                                                       \
	} while (0)
#endif

#endif /* BPFPROF_CPU_STATE_BPF_H */
