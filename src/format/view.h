/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * view.h - one value per stack, from a profile that also holds off-CPU time
 * (bpfprof --off-cpu), for the writers that show one value (folded, svg,
 * speedscope): the on-CPU samples, the off-CPU time, or the wall-clock
 * time, where both add up - on-CPU samples count their sampling period,
 * 10^9 / F ns each - and every waiting stack ends in an "[off-cpu]" frame,
 * so running and waiting show side by side under the same callers.
 *
 * Times are in microseconds (unit "us" in the view's meta, which the
 * writers print), rounded per stack; a stack with less than half a
 * microsecond is left out.
 */
#ifndef BPFPROF_FORMAT_VIEW_H
#define BPFPROF_FORMAT_VIEW_H

#include <stdbool.h>

#include "base/profile.h"

enum view {
	VIEW_AUTO = 0, /* wall for a profile with off-CPU time, else cpu */
	VIEW_CPU,      /* on-CPU samples (the profile itself) */
	VIEW_OFFCPU,   /* off-CPU time, us */
	VIEW_WALL,     /* on-CPU and off-CPU time, us, waiting marked "[off-cpu]" */
	/* An allocation profile's values (meta.alloc_period; auto: alloc-space). */
	VIEW_ALLOC_SPACE,   /* bytes allocated */
	VIEW_ALLOC_OBJECTS, /* allocations */
	VIEW_INUSE_SPACE,   /* bytes allocated and not freed */
	VIEW_INUSE_OBJECTS, /* allocations not freed */
};

/* Whether v is one of an allocation profile's views. */
static inline bool view__is_alloc(enum view v)
{
	return v >= VIEW_ALLOC_SPACE && v <= VIEW_INUSE_OBJECTS;
}

/* The leaf frame that marks waiting stacks in the wall-clock view. */
#define VIEW_OFFCPU_FRAME "[off-cpu]"

/* "cpu", "off-cpu", "wall", "alloc-space", "alloc-objects", "inuse-space",
 * "inuse-objects" -> *v; -EINVAL for anything else. */
int view__parse(const char *name, enum view *v);
const char *view__name(enum view v);
/* What VIEW_AUTO means for p. */
enum view view__resolve(const struct profile *p, enum view v);

/*
 * A new profile with p's view v in its counts (offcpu_ns and alloc values
 * all 0) and meta (unit and value_name set for the time and allocation
 * views). NULL with errno: ENOMEM, or EINVAL for the wall view of a profile
 * whose frequency is unknown, or a view of values p does not have (an
 * allocation view of a CPU profile, or the reverse).
 */
struct profile *view__build(const struct profile *p, enum view v);

#endif
