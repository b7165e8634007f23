// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * alloc_sinks.c - continuous mode: the allocation engine's side of the
 * sinks (sinks.c), the same whether --alloc runs alone (cmd/alloc.c's loop)
 * or beside the CPU collector (--alloc --on-cpu, record.c's loop): each
 * interval's heap profile (the allocations since the last edge, the blocks
 * in use at it) to sinks__emit() as SINK_HEAP, and the HTTP endpoint's heap
 * requests fed every tick and finished with the blocks in use. Everything
 * here runs on the loop's thread. See record.h.
 */
#include "session/record.h"

#include <errno.h>
#include <inttypes.h>

#include "base/profile.h"
#include "session/allocrun.h"

/*
 * A heap request completes (agent/live.h): seconds = N, acc holds the
 * allocations fed over them (its meta: the window's span, and the sums of
 * its ticks' lost and alloc_on_ns), the blocks in use now are added, and
 * the note is the window's; seconds = 0, acc is empty: the allocations
 * since the run started and the blocks in use.
 */
int sinks__heap_finish(void *ctx, struct profile *acc, unsigned seconds)
{
	struct allocrun *ar = ctx;
	struct profile_meta keep = *profile__meta(acc);
	struct profile_meta *m;
	int err;

	if (!seconds)
		return allocrun__take(ar, acc, ALLOCRUN_TOTAL | ALLOCRUN_ALLOC | ALLOCRUN_INUSE);
	err = allocrun__take(ar, acc, ALLOCRUN_INUSE);
	if (err)
		return err;
	m = profile__meta(acc); /* the window's span, not the run's */
	m->start_ns = keep.start_ns;
	m->duration_ns = keep.duration_ns;
	m->lost = keep.lost;
	m->alloc_on_ns = keep.alloc_on_ns;
	m->note[0] = '\0';
	allocrun__window_note(ar, m);
	return 0;
}

int sinks__heap_interval(struct continuous *ct, struct allocrun *ar)
{
	struct profile *p = profile__new();
	const struct profile_meta *m;
	char path[4096] = "";
	int err;

	if (!p)
		return -ENOMEM;
	err = allocrun__take(ar, p, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	if (err) {
		profile__free(p);
		return err;
	}
	m = profile__meta_c(p);
	sinks__emit(ct, SINK_HEAP, p, m->start_ns, m->start_ns + m->duration_ns, path,
		    sizeof(path));
	p_debug("interval %" PRIu64 " (heap): %zu samples, %" PRIu64 " lost%s%s", ct->intervals,
		profile__nr_samples(p), m->lost, path[0] ? ", wrote " : "", path);
	profile__free(p);
	return 0;
}

void sinks__heap_tick(struct continuous *ct, struct allocrun *ar)
{
	struct profile *delta = NULL;

	if (!ct->live_heap)
		return;
	if (!sinks__heap_pending(ct)) {
		allocrun__want_ticks(ar, false);
		return;
	}
	allocrun__want_ticks(ar, true);
	delta = profile__new();
	if (delta && allocrun__take(ar, delta, ALLOCRUN_TICK)) {
		profile__free(delta);
		delta = NULL; /* no memory: the clock's tick only */
	}
	sinks__heap_feed(ct, delta);
	profile__free(delta);
}
