/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * collector.h - the BPF side, seen from userspace. The only module that
 * touches libbpf and the skeleton.
 *
 * Life cycle, each step checked, every exit path undoing what was done:
 *
 *     collector__open()    open the skeleton, set filters and map sizes, load
 *     collector__attach()  open the perf events and attach the program
 *     collector__poll()    deliver process notices (new program images)
 *     collector__drain()   hand what every stack gained to a callback
 *     collector__detach()  stop sampling (close events), keep the maps
 *     collector__free()
 *
 * Sampling: per-CPU events on every online CPU (or the -C list), whatever the
 * target. -p and a launched command are kept by the program's filter on
 * their tgids (the command's with every process it forks), not by per-task
 * events: those start their period afresh in each new thread or process,
 * so a task that runs less than a period (5 ms at 99 Hz) is never sampled,
 * and a target could hide its work in short threads.
 */
#ifndef BPFPROF_COLLECTOR_H
#define BPFPROF_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/errmsg.h"
#include "base/profile.h"
#include <linux/types.h>

#include "profile_abi.h"
#include "collector/sampling.h"

struct collector;

#define OFFCPU_DEFAULT_TASKS 16384 /* task table slots when --off-cpu-tasks is not given */
/* -- COMMAND: processes of the command alive at once that are followed; more
 * are counted (STAT_TARGETS_LOST) and reported, not sampled. */
#define TARGETS_FOLLOWED_MAX 8192

/*
 * What tests ask of the collector: mostly what an older kernel would do.
 * src/session/ fills it from the environment (BPFPROF_TEST_*, named beside each
 * field), once; all zero outside tests.
 */
struct collector_test_opts {
	bool execve_by_mm;    /* _EXECVE_BY_MM: what a kernel without task_struct.in_execve runs */
	uint32_t targets_max; /* _TARGETS_MAX: -- COMMAND's processes followed at once
			       * (0: TARGETS_FOLLOWED_MAX) */
	bool no_notice_vmas;  /* _NO_NOTICE_VMAS: notices without mappings, as before them */
	bool kwalk_verify;    /* _KWALK_VERIFY: every ORC-walked kernel stack checked */
	bool no_walker;	      /* _NO_WALKER: the program a kernel without bpf_loop() gets */
	bool no_prefill;      /* _NO_PREFILL: the map-in-map fill after the load */
	bool always_flip;     /* _ALWAYS_FLIP: every drain flips */
	bool no_kprogs;	      /* _NO_KPROGS: no BPF program list, as before 5.9 */
	bool no_hot_slots;    /* _NO_HOT_SLOTS: every count in the maps */
};

struct collector_opts {
	uint32_t freq;	  /* Hz */
	const bool *cpus; /* NULL: all online CPUs; else cpus[nr_cpus] */
	int nr_cpus;
	const uint32_t *pids; /* -p: tgids to profile (all their threads) */
	size_t nr_pids;
	pid_t child;	  /* launched command (stopped), 0 if none */
	bool drop_kernel; /* -U */
	bool drop_user;	  /* -K */
	bool include_idle;
	bool per_thread;
	const int *cgroup_fds; /* --cgroup: open cgroup v2 directories (not closed) */
	size_t nr_cgroups;
	uint32_t max_counts;	   /* distinct (process, stack) pairs per interval */
	uint32_t max_stacks;	   /* distinct stacks per interval */
	uint32_t unwind_mode;	   /* enum bp_unwind_mode: user stack walking */
	uint32_t unwind_max_procs; /* processes with unwind tables in the kernel */
	bool kernel_helper;	   /* kernel stacks by bpf_get_stack() only (no ORC walk) */
	bool offcpu;		   /* --off-cpu: also count blocked time (bpf/offcpu.bpf.h) */
	uint64_t offcpu_min_ns;	   /* waits shorter than this are only counted in the stats */
	uint32_t offcpu_tasks;	   /* slots of the blocked-task table (0: the default; rounded
				    * up to a power of two) */
	bool libbpf_debug;	   /* libbpf's own messages on stderr */
	struct collector_test_opts test;
};

struct collector_sample {
	const struct bp_sample_key *key;
	const __u64 *kips; /* leaf first */
	uint32_t nr_kips;
	const __u64 *uips; /* leaf first */
	uint32_t nr_uips;
	uint64_t count;
	/*
	 * The consumer's word for this key, kept with it in the buffer set: 0
	 * the first time, again after the set is emptied. What it made of the
	 * key, found again without a lookup of the key. NULL: none kept.
	 */
	uint64_t *cookie;
};

struct collector_stats {
	uint64_t v[STAT_MAX]; /* enum bp_stat, summed over CPUs, since open */
	uint64_t drains;
	uint64_t drain_ns; /* time spent in the last drain */
	uint64_t drain_ns_total;
	uint64_t open_ns;	 /* collector__open: program load, maps, ORC table */
	uint64_t korc_ns;	 /* ... of which the kernel ORC table */
	bool slots_prefilled;	 /* the map-in-map slots were filled during the load */
	int korc_load_err;	 /* 0: the ORC table came from the cache (unwind/korc_cache.h),
				  * else why not (-ENOENT: none yet or caching off) */
	int korc_save_err;	 /* built: 0 saved there for the next start, else why not */
	uint64_t missing_stacks; /* samples whose stack was not in the map (bug guard) */
	uint64_t stacks_read;	 /* stacks copied from the kernel (each once per set) */
	uint64_t flips;		 /* drains that switched buffers (the others read in place) */
	size_t nr_events;	 /* perf events attached */
	uint32_t targets_room; /* -- COMMAND: its processes followed at once (STAT_TARGETS_LOST) */
	/*
	 * What the events took against what they should have (collector/
	 * sampling.h), since attach: measured once sampling has run a second,
	 * then at most every 15 s while it runs (acct.at_ns: when; 0 not yet),
	 * and exactly at collector__detach(); acct_prev is the measurement
	 * before (a window: sampling__window(&acct_prev, &acct, ...)). The
	 * profile's samples not taken, since attach, window by window, by
	 * cause: the kernel throttled the events, or their timer ran late.
	 */
	struct sampling_figures acct, acct_prev;
	uint64_t not_taken_throttled, not_taken_late;
	/* --off-cpu: threads blocked now (the task table's slots in use), and
	 * waits pushed out of their slot by another thread's (STAT_OFFCPU_EVICTED). */
	uint64_t offcpu_pending, offcpu_evicted;
	uint64_t offcpu_carried; /* user stacks of blocked tasks copied across flips */
};

typedef int (*collector_sample_fn)(void *ctx, const struct collector_sample *s);
typedef void (*collector_proc_fn)(void *ctx, const struct bp_proc_event *e);

/* Both fill em (base/errmsg.h) with what failed and what to do about it. */
struct collector *collector__open(const struct collector_opts *opts, struct errmsg *em);
int collector__attach(struct collector *c, struct errmsg *em);

/* Waits up to timeout_ms for process notices and passes each to fn.
 * Returns the number handled or -errno (-EINTR on a signal). */
int collector__poll(struct collector *c, int timeout_ms, collector_proc_fn fn, void *ctx);
/* A descriptor that polls readable when a process notice waits: to wait for
 * notices and something else at once (then collector__poll(c, 0, ...)). */
int collector__notice_fd(const struct collector *c);

/* A key the consumer has seen before: its stacks are not read (NULL, 0). */
typedef bool (*collector_known_fn)(void *ctx, const struct collector_sample *s);

/* Hands out everything counted since the previous drain, each key with what
 * its count gained. Reads the active buffer in place, or flips buffers when it
 * is half full and after collector__detach() (so the last drain gets every
 * sample). With pre, every sample is first announced to pre, then pre(ctx,
 * NULL) is called once, and only then are they handed to fn (the same
 * samples, in the same order). With known, a key it knows is neither
 * announced nor given its stacks: fn gets it without them (one map lookup a
 * stack saved, for the keys that come back every drain). Returns 0 or
 * -errno (of a callback or of a map call). */
int collector__drain(struct collector *c, collector_known_fn known, collector_sample_fn pre,
		     collector_sample_fn fn, void *ctx);

void collector__stats(struct collector *c, struct collector_stats *st);
/*
 * The loaded BPF programs' JIT images, each program then its functions, in
 * increasing id order (kprogs.bpf.c); *out is malloc'd. Works after the
 * capabilities are dropped. -EOPNOTSUPP (or why it could not be set up) on
 * kernels without the bpf_prog iterator.
 */
int collector__bpf_progs(struct collector *c, struct bp_kprog **out, size_t *nr);
/* Cumulative BPF run time and count of the program (needs bpf_stats_enabled). */
int collector__prog_runtime(struct collector *c, uint64_t *run_ns, uint64_t *run_cnt);

/*
 * Unwind tables (--unwind auto|dwarf). The mode in effect: auto falls back
 * to frame pointers when the table walker cannot be loaded (the reason in
 * *fallback_err, else 0). The kernel operations the unwinder needs
 * (src/unwind/unwinder.h) are filled into k; valid until collector__free.
 */
struct unwind_kops;
uint32_t collector__unwind_mode(const struct collector *c, int *fallback_err);
/* True if user frame pointers are walked by bpf_get_stack(), not the program's
 * walker (kernels without bpf_loop()). */
bool collector__kernel_fp_walk(const struct collector *c);
/* Kernel stacks walked by the program with the kernel's ORC table (else by
 * bpf_get_stack(); *err says why: -ECANCELED not asked for, -ENOENT
 * no ORC table or addresses hidden, -ENOTSUP another orc_entry layout or
 * no program walker, else why the kernel refused to load it). */
bool collector__kernel_walk(const struct collector *c, int *err, size_t *entries);
void collector__unwind_kops(struct collector *c, struct unwind_kops *k);

void collector__detach(struct collector *c);
/*
 * -d: the events stop at at_ns (CLOCK_MONOTONIC, now_ns()) from a thread of
 * their own, even while the caller is busy (a long drain); the sampling
 * figures are taken at that moment. After collector__attach(). 0 or -errno.
 */
int collector__stop_sampling_at(struct collector *c, uint64_t at_ns);
/* Whether sampling stopped at that deadline (and when: at_ns). */
bool collector__stopped_at_deadline(const struct collector *c, uint64_t *at_ns);
void collector__free(struct collector *c);

#endif
