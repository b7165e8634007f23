/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * metrics.h - the agent's own numbers, as Prometheus text for /metrics.
 *
 * The main loop publishes a snapshot after every drain (under a mutex); the
 * HTTP thread renders the last snapshot. Nothing here blocks sampling.
 *
 * Health (/healthz, bpfprof_healthy) is judged on the HTTP thread from the
 * last snapshot, so it is told while the main loop is stuck: the agent is
 * healthy once a drain has completed and while the last one completed less
 * than 2 drain periods + METRICS_DRAIN_GRACE_S ago (a drain is due every
 * second, or every --interval if shorter: 12 s by default). A drain that
 * takes longer than that, the first one included, makes it unhealthy.
 */
#ifndef BPFPROF_METRICS_H
#define BPFPROF_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "base/util.h"

/* Sampled allocations not recorded, by reason (bpfprof_alloc_lost_total). */
enum metrics_alloc_lost {
	METRICS_ALLOC_LOST_RING_FULL, /* the ring buffer was full */
	METRICS_ALLOC_LOST_LIVE_FULL, /* not tracked in use: the live table was full */
	METRICS_ALLOC_LOST_NO_STACK,  /* without their stack */
	METRICS_ALLOC_LOST_NO_THREAD, /* the thread's state could not be made */
	METRICS_ALLOC_LOST_NO_RETURN, /* the call's return was not seen */
	METRICS_ALLOC_LOST_MEMORY,    /* userspace ran out of memory */
	METRICS_ALLOC_LOST_NR
};

/* Go's sampled allocations not counted, by reason (bpfprof_alloc_go_samples_lost_total). */
enum metrics_go_lost {
	METRICS_GO_LOST_REFUSED,     /* their bucket refused (forged, unreadable) */
	METRICS_GO_LOST_TABLES_FULL, /* their bucket not kept: the bucket tables full */
	METRICS_GO_LOST_EXITED,	     /* their bucket first seen once its process had exited */
	METRICS_GO_LOST_NR
};

/*
 * --alloc (rendered only with it): the allocator probes, what became of the
 * sampled allocations, the live table, and with -a / --cgroup the guard
 * (collector/allocguard.h), as plain numbers the engine copies in.
 */
struct metrics_alloc {
	uint64_t calls, frees, others; /* allocator calls seen: targets', their frees, others' */
	uint64_t samples_libc, samples_go; /* sampled allocations recorded, by source */
	uint64_t freed_libc, freed_go;	   /* frees matched to a sampled block */
	uint64_t lost[METRICS_ALLOC_LOST_NR];
	uint64_t live_blocks, inuse_bytes; /* the last walk of the live table */
	uint64_t probes;		   /* probes attached */
	uint64_t live_dropped_exited;	   /* live entries of exited processes dropped */
	uint64_t aggs_evicted; /* run-long (process, stack) totals folded into [other stacks] */
	bool guard;	       /* a calls-per-second budget is kept: the guard's lines */
	bool guard_engaged;
	double guard_duty;  /* share of each window on */
	double guard_scale; /* the last interval's estimates were multiplied by this */
	double guard_rate;  /* calls per second of the last window on */
	uint64_t guard_windows, guard_toggles;
	uint64_t probes_on_ns; /* time the probes were in */
	uint64_t switch_ns[2]; /* time spent taking the probes off [0], putting them back [1] */
	/* -a, --cgroup (rendered only then): the files probed and their caps */
	bool all;
	uint64_t files_probed, files_probed_max;
	uint64_t files_not_probed; /* refused: the cap, a share, descriptors */
	uint64_t files_not_looked; /* times a new file was not looked at (past its cap) */
	/* Go's buckets (rendered with go): what was lost, and their share of the stack table */
	bool go;
	uint64_t go_lost[METRICS_GO_LOST_NR]; /* Go's samples not counted, by reason */
	uint64_t go_unnamed;		      /* samples counted without their stack */
	uint64_t go_bkts_refused;	      /* buckets refused (not a bucket, unreadable) */
	uint64_t go_bkts_unnamed;	      /* buckets kept without their stack (a share spent) */
	uint64_t go_read_fails;		/* reads of buckets' records or a list's head failed */
	uint64_t go_list_over;		/* polled lists' walks stopped at the process's cap */
	uint64_t go_poll_ended;		/* polled processes ended between two polls */
	uint64_t go_other;		/* processes whose pid went to another image */
	uint64_t go_buckets, go_stacks; /* kept now; stacks they hold */
	uint64_t go_stacks_max, go_stacks_proc; /* ... at most: all Go processes', one's */
	uint64_t sbcl_unnamed_frames; /* SBCL frames a profile's write left unnamed (its budget) */
	uint64_t go_bkts_cgroup;      /* buckets kept without their stack: their cgroup's share */
	uint64_t go_stacks_cgroup; /* stacks one cgroup's Go buckets may hold (0: no such share) */
	uint64_t go_reads_skipped; /* in-use reads not tried: a batch stopped at its failures */
};

struct metrics_snapshot {
	uint64_t samples;
	uint64_t lost_stacks_full, lost_counts_full, lost_stack_err, lost_other;
	uint64_t lost_throttled;  /* never taken: the kernel throttled the events */
	uint64_t lost_timer_late; /* never taken: their timer ran late */
	double effective_hz;	  /* samples per busy CPU-second taken; < 0: not known yet */
	uint64_t idle, filtered, ustack_errors, notices_lost;
	/* Stacks in Python's interpreter loop by where their thread's state was found. */
	uint64_t py_ts_cached, py_ts_tls, py_ts_search, py_ts_miss;
	/* --unwind auto: frames whose table row could not be followed, walked on with
	 * frame pointers. */
	uint64_t unwind_fp_fallbacks;
	/* HotSpot JVMs: frames stepped through the code cache, leaf return
	 * addresses guessed, and how those walks ended (JVM_END_*). */
	uint64_t jvm_frames, jvm_leaf_guesses;
	uint64_t jvm_ends[7];
	uint64_t drains, drain_ns_last, drain_ns_total;
	uint64_t intervals;
	uint64_t files_written, file_errors, files_pruned, files_kept, store_bytes;
	uint64_t push_sent, push_failed, push_dropped, push_queued;
	uint64_t push_too_large; /* failed attempts whose answer was over a cap */
	uint64_t procs_cached, files_cached, labels_cached;
	/* Debug files from debuginfod (sym/debuginfod.h): fetched, found in the
	 * cache, on no server, failed transfers, refused files, waiting now. */
	uint64_t dbgd_fetched, dbgd_cache_hits, dbgd_not_found, dbgd_failed, dbgd_rejected;
	uint64_t dbgd_pending;
	uint64_t last_drain_unix; /* seconds */
	uint64_t last_drain_ns;	  /* CLOCK_MONOTONIC when the last drain completed, 0: none yet */
	/* Filled in by metrics__get() (not published): the agent's constants. */
	uint64_t started_ns;	  /* CLOCK_MONOTONIC at metrics__init() */
	uint64_t drain_period_ns; /* a drain is due at least this often */
	uint32_t freq;
	/* --off-cpu (rendered only with it): waits by what became of them. */
	bool offcpu;
	uint64_t offcpu_counted, offcpu_short, offcpu_lost, offcpu_evicted;
	uint64_t offcpu_counted_ns, offcpu_blocked_now;
	/* --alloc (rendered only with it). */
	bool alloc;
	struct metrics_alloc am;
};

/* Seconds a drain may run late before health says it is overdue. */
#define METRICS_DRAIN_GRACE_S 10

struct metrics {
	pthread_mutex_t lock;
	struct metrics_snapshot s;
	uint64_t started_ns, drain_period_ns;
};

/* drain_period_ns: the longest time between drains the main loop intends. */
void metrics__init(struct metrics *m, uint64_t drain_period_ns);
void metrics__publish(struct metrics *m, const struct metrics_snapshot *s);
void metrics__get(struct metrics *m, struct metrics_snapshot *out);
/*
 * Whether the agent is healthy at now (CLOCK_MONOTONIC ns), with the reason
 * as one line ending in '\n' in why: "ok", "not ready: no drain yet ...",
 * "stalled: no drain ... (overdue after N s: ...)".
 */
bool metrics__healthy(const struct metrics_snapshot *s, uint64_t now, char *why, size_t size);
/* No drain has completed for this long, and that is overdue (ns). */
uint64_t metrics__overdue_ns(const struct metrics_snapshot *s);
/* Prometheus text exposition format (version 0.0.4), health as of now
 * (CLOCK_MONOTONIC ns). 0 or -ENOMEM. */
int metrics__render(const struct metrics_snapshot *s, uint64_t now, struct sbuf *out);
/* The --alloc lines of it ("bpfprof_alloc_..."); 0 or -ENOMEM. */
int metrics__render_alloc(const struct metrics_alloc *a, struct sbuf *out);

#endif
