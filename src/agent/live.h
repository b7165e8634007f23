/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * live.h - on-demand profiles for /debug/pprof/profile?seconds=N, and for
 * /debug/pprof/heap and /allocs (--alloc).
 *
 * An HTTP thread asks for N seconds; the main loop feeds every drained delta
 * to the open requests and completes them when their time is up. The HTTP
 * thread waits on a condition variable; the main loop never waits for it.
 *
 * A heap live (live__new_heap) is fed the allocations of each tick of the
 * allocation engine; on completion its finisher, on the main thread, adds
 * what only the engine knows (the blocks in use now; for seconds = 0 the
 * allocations since the start). seconds = 0 completes at the next feed.
 * The finisher runs outside the live's lock: an HTTP thread (or the HTTP
 * loop waking one) never waits for it. The encoding runs on the waiting
 * thread, not the main loop's.
 *
 * An HTTP client must not set how much work the main loop does: the
 * seconds = 0 requests due at one feed share one build (one finisher call),
 * a heap live builds at most once per LIVE_HEAP_GAP_NS (a due request waits
 * for a later feed), and a seconds = 0 request within LIVE_HEAP_GAP_NS of
 * the last seconds = 0 build gets that build. A window's lost and
 * alloc_on_ns are the sums of its deltas'.
 */
#ifndef BPFPROF_LIVE_H
#define BPFPROF_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/writer.h"
#include "base/profile.h"

#define LIVE_MAX_REQUESTS 4
#define LIVE_MAX_SECONDS  3600
#define LIVE_HEAP_GAP_NS  500000000ULL /* between two builds of a heap live: 500 ms */

struct live;

/*
 * A heap request's last step, on the main thread (in live__feed), given the
 * request's profile: for seconds > 0 it holds the allocations fed over the
 * window (its meta: the window's span, lost and alloc_on_ns), for seconds = 0
 * nothing yet (one call for every such request due). 0 or -errno (the
 * request fails).
 */
typedef int (*live_finish_fn)(void *ctx, struct profile *acc, unsigned seconds);

struct live *live__new(const struct writer *w, uint32_t freq);
/*
 * A live of heap profiles: each completed profile has meta.alloc_period set
 * (the writer writes a heap profile, even empty); finish may be NULL.
 */
struct live *live__new_heap(const struct writer *w, uint64_t alloc_period, live_finish_fn finish,
			    void *ctx);
void live__free(struct live *l);
/* Whether l serves heap profiles (live__new_heap). */
bool live__is_heap(const struct live *l);

/*
 * Blocks for `seconds` of sampling, then returns the serialized profile
 * (malloc'd). -EBUSY: too many requests at once; -ESHUTDOWN: agent stopping;
 * other -errno: the profile could not be made.
 */
int live__collect(struct live *l, unsigned seconds, char **body, size_t *len);
/*
 * The same, given up with -ECANCELED (its slot freed at once) when another
 * thread sets *cancel (atomically) and then calls live__wake(): for a client
 * that hung up, so it does not hold one of the few slots for its seconds.
 * view: what the writer is asked for (out_opts.view); for a heap profile in
 * pprof, the default sample type (VIEW_ALLOC_SPACE for /allocs; VIEW_AUTO none).
 */
int live__collect_or_cancel(struct live *l, unsigned seconds, enum view view, const bool *cancel,
			    char **body, size_t *len);
void live__wake(struct live *l);

/*
 * Main loop, after a drain: adds delta to every open request, completes due
 * ones (a heap live's through its finisher). live__feed and live__shutdown
 * are called from one thread, the main loop's.
 */
void live__feed(struct live *l, const struct profile *delta, uint64_t now_mono);
/* How many requests wait (the main loop may skip building deltas when none). */
int live__pending(struct live *l);
/* Wakes every waiter with -ESHUTDOWN. */
void live__shutdown(struct live *l);

#endif
