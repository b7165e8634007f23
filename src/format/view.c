// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* view.c - one value per stack from a profile with off-CPU time; see view.h. */
#include "format/view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const char *const names[] = {
	[VIEW_AUTO] = "auto",
	[VIEW_CPU] = "cpu",
	[VIEW_OFFCPU] = "off-cpu",
	[VIEW_WALL] = "wall",
	[VIEW_ALLOC_SPACE] = "alloc-space",
	[VIEW_ALLOC_OBJECTS] = "alloc-objects",
	[VIEW_INUSE_SPACE] = "inuse-space",
	[VIEW_INUSE_OBJECTS] = "inuse-objects",
};

int view__parse(const char *name, enum view *v)
{
	for (size_t i = VIEW_CPU; i < ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i])) {
			*v = (enum view)i;
			return 0;
		}
	return -EINVAL;
}

const char *view__name(enum view v)
{
	return (size_t)v < ARRAY_SIZE(names) ? names[v] : "?";
}

enum view view__resolve(const struct profile *p, enum view v)
{
	if (v != VIEW_AUTO)
		return v;
	if (profile__meta_c(p)->alloc_period)
		return VIEW_ALLOC_SPACE;
	return profile__meta_c(p)->offcpu ? VIEW_WALL : VIEW_CPU;
}

static bool keep_none(const struct psample *s, void *ctx)
{
	return false;
}

struct profile *view__build(const struct profile *p, enum view v)
{
	const struct profile_meta *m = profile__meta_c(p);
	struct profile *dst;
	struct profile_meta *dm;
	uint32_t *ids = NULL;
	size_t cap = 0;
	int64_t marker = -1;
	int err = 0;

	v = view__resolve(p, v);
	if ((v == VIEW_WALL && !m->freq_hz) || view__is_alloc(v) != !!m->alloc_period) {
		errno = EINVAL; /* on-CPU samples cannot be turned into time */
		return NULL;
	}
	dst = profile__new();
	if (!dst)
		return NULL;
	dm = profile__meta(dst);
	*dm = *m;
	dm->offcpu = false;
	dm->alloc_period = 0;
	dm->unit[0] = dm->value_name[0] = '\0';
	if (view__is_alloc(v)) {
		bool space = v == VIEW_ALLOC_SPACE || v == VIEW_INUSE_SPACE;
		bool inuse = v == VIEW_INUSE_SPACE || v == VIEW_INUSE_OBJECTS;

		snprintf(dm->unit, sizeof(dm->unit), "%s", space ? "bytes" : "allocs");
		snprintf(dm->value_name, sizeof(dm->value_name), "%s",
			 inuse ? "memory in use" : "memory allocated");
	} else if (v != VIEW_CPU) {
		snprintf(dm->unit, sizeof(dm->unit), "us");
		snprintf(dm->value_name, sizeof(dm->value_name), "%s",
			 v == VIEW_OFFCPU ? "off-CPU time" : "wall-clock time");
		dm->lost = v == VIEW_OFFCPU ? m->offcpu_lost : m->lost + m->offcpu_lost;
	}
	if (v == VIEW_WALL) {
		marker = profile__frame(dst, FRAME_OTHER, VIEW_OFFCPU_FRAME, NULL);
		if (marker < 0)
			err = (int)marker;
	}
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		uint64_t running = 0, waiting = 0;
		const uint32_t *fr;
		uint32_t n;

		switch (v) {
		case VIEW_CPU:
			running = s->count;
			break;
		case VIEW_OFFCPU:
			waiting = (s->offcpu_ns + 500) / 1000;
			break;
		case VIEW_ALLOC_SPACE:
			running = s->alloc.alloc_bytes;
			break;
		case VIEW_ALLOC_OBJECTS:
			running = s->alloc.alloc_objects;
			break;
		case VIEW_INUSE_SPACE:
			running = s->alloc.inuse_bytes;
			break;
		case VIEW_INUSE_OBJECTS:
			running = s->alloc.inuse_objects;
			break;
		default: /* wall */
			running = (s->count * (NS_PER_SEC / m->freq_hz) + 500) / 1000;
			waiting = (s->offcpu_ns + 500) / 1000;
			break;
		}
		if (!running && !waiting)
			continue;
		fr = profile__stack_get(p, s->stack, &n);
		if (array_grow((void **)&ids, &cap, (size_t)n + 1, sizeof(*ids))) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t j = 0; j < n && !err; j++) {
			const struct pframe *f = profile__frame_get(p, fr[j]);
			int64_t id = profile__frame_src(dst, f);

			if (id < 0)
				err = (int)id;
			else
				ids[j] = (uint32_t)id;
		}
		if (!err && running)
			err = profile__add(dst, s, ids, n, running);
		/* Waiting ends in the marker (wall), even where the same frames
		 * were also sampled running. */
		if (!err && waiting && marker >= 0)
			ids[n++] = (uint32_t)marker;
		if (!err && waiting)
			err = profile__add(dst, s, ids, n, waiting);
	}
	free(ids);
	if (!err)
		err = profile__merge_if(dst, p, keep_none, NULL); /* the build ids */
	if (err) {
		profile__free(dst);
		errno = -err;
		return NULL;
	}
	return dst;
}
