// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pool.c - first-fit allocator of slot runs over lazily created chunks; see
 * pool.h. Each chunk keeps its free extents sorted by start and coalesced;
 * there are few (tables and processes, not rows), so arrays and linear
 * scans are fine.
 */
#include "unwind/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct extent {
	uint32_t start, len; /* chunk-local */
};

struct chunk {
	bool live;
	struct extent *free;
	size_t nr_free, cap_free;
	uint64_t used;
};

struct parked {
	uint32_t slot, n;
};

struct upool {
	uint32_t chunk_slots, max_chunks, shift;
	upool_chunk_fn grow, shrink;
	void *ctx;
	struct chunk *chunks; /* max_chunks entries */
	struct parked *park[2];
	size_t nr_park[2], cap_park[2];
	uint64_t peak_chunks, failed;
	uint64_t generation; /* bumped whenever slots become free for reuse */
};

struct upool *upool__new(uint32_t chunk_slots, uint32_t max_chunks, upool_chunk_fn grow,
			 upool_chunk_fn shrink, void *ctx)
{
	struct upool *p;
	uint32_t shift = 0;

	if (!chunk_slots || (chunk_slots & (chunk_slots - 1)) || !max_chunks) {
		errno = EINVAL;
		return NULL;
	}
	while ((1u << shift) < chunk_slots)
		shift++;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->chunks = calloc(max_chunks, sizeof(*p->chunks));
	if (!p->chunks) {
		free(p);
		return NULL;
	}
	p->chunk_slots = chunk_slots;
	p->max_chunks = max_chunks;
	p->shift = shift;
	p->grow = grow;
	p->shrink = shrink;
	p->ctx = ctx;
	return p;
}

void upool__free(struct upool *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->max_chunks; i++)
		free(p->chunks[i].free);
	free(p->chunks);
	free(p->park[0]);
	free(p->park[1]);
	free(p);
}

static int extent_insert(struct chunk *c, size_t at, uint32_t start, uint32_t len)
{
	if (array_grow((void **)&c->free, &c->cap_free, c->nr_free + 1, sizeof(*c->free)))
		return -ENOMEM;
	memmove(&c->free[at + 1], &c->free[at], (c->nr_free - at) * sizeof(*c->free));
	c->free[at] = (struct extent){ .start = start, .len = len };
	c->nr_free++;
	return 0;
}

static void extent_remove(struct chunk *c, size_t at)
{
	memmove(&c->free[at], &c->free[at + 1], (c->nr_free - at - 1) * sizeof(*c->free));
	c->nr_free--;
}

static bool take(struct upool *p, uint32_t ci, uint32_t n, uint32_t *slot)
{
	struct chunk *c = &p->chunks[ci];

	for (size_t i = 0; i < c->nr_free; i++) {
		struct extent *e = &c->free[i];

		if (e->len < n)
			continue;
		*slot = (ci << p->shift) | e->start;
		e->start += n;
		e->len -= n;
		if (!e->len)
			extent_remove(c, i);
		c->used += n;
		return true;
	}
	return false;
}

int upool__alloc(struct upool *p, uint32_t n, uint32_t *slot)
{
	uint32_t ci, spare = p->max_chunks;
	int err;

	if (!n || n > p->chunk_slots)
		return -EINVAL;
	for (ci = 0; ci < p->max_chunks; ci++) {
		if (!p->chunks[ci].live) {
			if (spare == p->max_chunks)
				spare = ci;
			continue;
		}
		if (take(p, ci, n, slot))
			return 0;
	}
	if (spare == p->max_chunks) {
		p->failed++;
		return -ENOSPC;
	}
	/* A fresh chunk: one free extent covering all of it. */
	err = extent_insert(&p->chunks[spare], 0, 0, p->chunk_slots);
	if (err)
		return err;
	if (p->grow) {
		err = p->grow(p->ctx, spare);
		if (err) {
			p->chunks[spare].nr_free = 0;
			return err;
		}
	}
	p->chunks[spare].live = true;
	{
		uint64_t live = 0;

		for (ci = 0; ci < p->max_chunks; ci++)
			live += p->chunks[ci].live;
		if (live > p->peak_chunks)
			p->peak_chunks = live;
	}
	take(p, spare, n, slot);
	return 0;
}

/* Returns a run to its chunk's free list, coalescing with neighbours. */
static void give_back(struct upool *p, uint32_t slot, uint32_t n)
{
	uint32_t ci = slot >> p->shift, start = slot & (p->chunk_slots - 1);
	struct chunk *c;
	size_t i = 0;

	if (ci >= p->max_chunks || !n || start + (uint64_t)n > p->chunk_slots)
		return;
	c = &p->chunks[ci];
	if (!c->live)
		return;
	while (i < c->nr_free && c->free[i].start < start)
		i++;
	/* Merge with the previous and/or next extent when adjacent. */
	if (i > 0 && c->free[i - 1].start + c->free[i - 1].len == start) {
		c->free[i - 1].len += n;
		if (i < c->nr_free && start + n == c->free[i].start) {
			c->free[i - 1].len += c->free[i].len;
			extent_remove(c, i);
		}
	} else if (i < c->nr_free && start + n == c->free[i].start) {
		c->free[i].start = start;
		c->free[i].len += n;
	} else if (extent_insert(c, i, start, n)) {
		return; /* out of memory: the run leaks (stays used), nothing breaks */
	}
	c->used -= n;
	p->generation++;
	if (!c->used && c->nr_free == 1 && c->free[0].len == p->chunk_slots) {
		/* Entirely free: give the memory back. */
		if (!p->shrink || !p->shrink(p->ctx, ci)) {
			c->live = false;
			c->nr_free = 0;
		}
	}
}

void upool__release(struct upool *p, uint32_t slot, uint32_t n)
{
	struct parked *np;

	if (!p || !n)
		return;
	if (array_grow((void **)&p->park[1], &p->cap_park[1], p->nr_park[1] + 1, sizeof(*np))) {
		give_back(p, slot, n); /* cannot park: free now rather than leak */
		return;
	}
	p->park[1][p->nr_park[1]++] = (struct parked){ .slot = slot, .n = n };
}

void upool__reclaim(struct upool *p)
{
	struct parked *tmp;
	size_t cap;

	if (!p)
		return;
	for (size_t i = 0; i < p->nr_park[0]; i++)
		give_back(p, p->park[0][i].slot, p->park[0][i].n);
	/* What was parked since the last reclaim waits one more round. */
	tmp = p->park[0];
	cap = p->cap_park[0];
	p->park[0] = p->park[1];
	p->cap_park[0] = p->cap_park[1];
	p->nr_park[0] = p->nr_park[1];
	p->park[1] = tmp;
	p->cap_park[1] = cap;
	p->nr_park[1] = 0;
}

uint64_t upool__generation(const struct upool *p)
{
	return p ? p->generation : 0;
}

uint32_t upool__largest_free(const struct upool *p)
{
	uint32_t best = 0;

	for (uint32_t ci = 0; ci < p->max_chunks; ci++) {
		const struct chunk *c = &p->chunks[ci];

		for (size_t i = 0; c->live && i < c->nr_free; i++)
			if (c->free[i].len > best)
				best = c->free[i].len;
	}
	return best;
}

void upool__stats(const struct upool *p, struct upool_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t ci = 0; ci < p->max_chunks; ci++) {
		st->chunks += p->chunks[ci].live;
		st->used_slots += p->chunks[ci].used;
	}
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < p->nr_park[k]; i++)
			st->parked_slots += p->park[k][i].n;
	st->used_slots -= st->parked_slots;
	st->peak_chunks = p->peak_chunks;
	st->failed_allocs = p->failed;
}
