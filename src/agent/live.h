/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * live.h - on-demand profiles for /debug/pprof/profile?seconds=N.
 *
 * An HTTP thread asks for N seconds; the main loop feeds every drained delta
 * to the open requests and completes them when their time is up. The HTTP
 * thread waits on a condition variable; the main loop never waits for it.
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

struct live;

struct live *live__new(const struct writer *w, uint32_t freq);
void live__free(struct live *l);

/*
 * Blocks for `seconds` of sampling, then returns the serialized profile
 * (malloc'd). -EBUSY: too many requests at once; -ESHUTDOWN: agent stopping.
 */
int live__collect(struct live *l, unsigned seconds, char **body, size_t *len);
/*
 * The same, given up with -ECANCELED (its slot freed at once) when another
 * thread sets *cancel (atomically) and then calls live__wake(): for a client
 * that hung up, so it does not hold one of the few slots for its seconds.
 */
int live__collect_or_cancel(struct live *l, unsigned seconds, const bool *cancel, char **body,
			    size_t *len);
void live__wake(struct live *l);

/* Main loop, after a drain: adds delta to every open request, completes due ones. */
void live__feed(struct live *l, const struct profile *delta, uint64_t now_mono);
/* True if some request is waiting (the main loop may skip building deltas otherwise). */
int live__pending(struct live *l);
/* Wakes every waiter with -ESHUTDOWN. */
void live__shutdown(struct live *l);

#endif
