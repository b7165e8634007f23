// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * stacktab.c - stacks by value, interned by hash, bounded (stacktab.h).
 * The unreferenced entries are on a list, oldest first: an eviction takes
 * its head in O(1), a reference taken again takes the entry off it.
 */
#include "base/stacktab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"

struct stk {
	uint64_t hash;
	uint64_t refs;	    /* the pin counts one */
	uint64_t pin_epoch; /* pinned: the epoch it was last renewed in */
	bool pinned;
	struct stk *prev, *next; /* on the unreferenced list while refs == 0 */
	uint32_t nr;
	uint64_t ips[];
};

struct stacktab {
	struct htab *h; /* hash -> struct stk */
	size_t cap;
	uint32_t max_depth;
	struct stk *idle_head, *idle_tail; /* unreferenced, oldest first */
	uint64_t evicted, dropped;
	size_t pinned;
};

struct stacktab *stacktab__new(size_t cap, uint32_t max_depth)
{
	struct stacktab *t;

	if (!cap) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->h = htab__new();
	if (!t->h) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->cap = cap;
	t->max_depth = max_depth;
	return t;
}

void stacktab__free(struct stacktab *t)
{
	size_t pos = 0;

	if (!t)
		return;
	for (struct htab_entry *e; (e = htab__next(t->h, &pos));)
		free(e->value);
	htab__free(t->h);
	free(t);
}

static void idle_unlink(struct stacktab *t, struct stk *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		t->idle_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		t->idle_tail = s->prev;
	s->prev = s->next = NULL;
}

static void idle_append(struct stacktab *t, struct stk *s)
{
	s->next = NULL;
	s->prev = t->idle_tail;
	if (t->idle_tail)
		t->idle_tail->next = s;
	else
		t->idle_head = s;
	t->idle_tail = s;
}

int stacktab__get(struct stacktab *t, uint64_t hash, const uint64_t *ips, uint32_t nr)
{
	struct htab_entry *e;
	struct stk *s;
	bool created;

	if (!hash)
		return -EINVAL;
	e = htab__find(t->h, &hash, sizeof(hash));
	if (e) {
		s = e->value;
		if (!s->refs++)
			idle_unlink(t, s);
		return 0;
	}
	if (htab__count(t->h) >= t->cap) {
		struct stk *old = t->idle_head;

		if (!old) {
			t->dropped++;
			return -ENOSPC;
		}
		idle_unlink(t, old);
		htab__remove(t->h, &old->hash, sizeof(old->hash));
		free(old);
		t->evicted++;
	}
	if (nr > t->max_depth)
		nr = t->max_depth;
	s = malloc(sizeof(*s) + (size_t)nr * sizeof(*ips));
	if (!s)
		return -ENOMEM;
	*s = (struct stk){ .hash = hash, .refs = 1, .nr = nr };
	if (nr)
		memcpy(s->ips, ips, (size_t)nr * sizeof(*ips));
	e = htab__upsert(t->h, &hash, sizeof(hash), &created);
	if (!e) {
		free(s);
		return -ENOMEM;
	}
	e->value = s;
	return 0;
}

void stacktab__put(struct stacktab *t, uint64_t hash)
{
	struct htab_entry *e = hash ? htab__find(t->h, &hash, sizeof(hash)) : NULL;
	struct stk *s = e ? e->value : NULL;

	if (!s || !s->refs)
		return;
	if (!--s->refs)
		idle_append(t, s);
}

int stacktab__pin(struct stacktab *t, uint64_t hash, uint64_t epoch)
{
	struct htab_entry *e = hash ? htab__find(t->h, &hash, sizeof(hash)) : NULL;
	struct stk *s = e ? e->value : NULL;

	if (!s)
		return -ENOENT;
	s->pin_epoch = epoch;
	if (s->pinned)
		return 0;
	s->pinned = true;
	t->pinned++;
	if (!s->refs++)
		idle_unlink(t, s);
	return 0;
}

size_t stacktab__pin_epoch(struct stacktab *t, uint64_t epoch)
{
	size_t pos = 0, n = 0;

	if (!t->pinned)
		return 0;
	for (struct htab_entry *e; (e = htab__next(t->h, &pos));) {
		struct stk *s = e->value;

		if (!s->pinned || s->pin_epoch == epoch)
			continue;
		s->pinned = false;
		t->pinned--;
		n++;
		if (!--s->refs)
			idle_append(t, s);
	}
	return n;
}

const uint64_t *stacktab__find(const struct stacktab *t, uint64_t hash, uint32_t *nr)
{
	struct htab_entry *e = hash ? htab__find(t->h, &hash, sizeof(hash)) : NULL;
	const struct stk *s = e ? e->value : NULL;

	if (!s)
		return NULL;
	*nr = s->nr;
	return s->ips;
}

void stacktab__stats(const struct stacktab *t, struct stacktab_stats *st)
{
	st->count = htab__count(t->h);
	st->cap = t->cap;
	st->pinned = t->pinned;
	st->evicted = t->evicted;
	st->dropped = t->dropped;
}
