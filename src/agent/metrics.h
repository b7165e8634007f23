/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * metrics.h - the agent's own numbers, as Prometheus text for /metrics.
 *
 * The main loop publishes a snapshot after every drain (under a mutex); the
 * HTTP thread renders the last snapshot. Nothing here blocks sampling.
 */
#ifndef BPFPROF_METRICS_H
#define BPFPROF_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "base/util.h"

struct metrics_snapshot {
	uint64_t samples;
	uint64_t lost_stacks_full, lost_counts_full, lost_stack_err, lost_other;
	uint64_t lost_throttled;  /* never taken: the kernel throttled the events */
	uint64_t lost_timer_late; /* never taken: their timer ran late */
	double effective_hz;	  /* samples per busy CPU-second taken; < 0: not known yet */
	uint64_t idle, filtered, ustack_errors, notices_lost;
	uint64_t drains, drain_ns_last, drain_ns_total;
	uint64_t intervals;
	uint64_t files_written, file_errors, files_pruned, files_kept, store_bytes;
	uint64_t push_sent, push_failed, push_dropped, push_queued;
	uint64_t procs_cached, files_cached, labels_cached;
	uint64_t last_drain_unix; /* seconds */
	uint32_t freq;
	/* --off-cpu (rendered only with it): waits by what became of them. */
	bool offcpu;
	uint64_t offcpu_counted, offcpu_short, offcpu_lost, offcpu_evicted;
	uint64_t offcpu_counted_ns, offcpu_blocked_now;
};

struct metrics {
	pthread_mutex_t lock;
	struct metrics_snapshot s;
};

void metrics__init(struct metrics *m);
void metrics__publish(struct metrics *m, const struct metrics_snapshot *s);
void metrics__get(struct metrics *m, struct metrics_snapshot *out);
/* Prometheus text exposition format (version 0.0.4). 0 or -ENOMEM. */
int metrics__render(const struct metrics_snapshot *s, struct sbuf *out);

#endif
