// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* htab.c - open-addressing hash table with copied byte keys; see htab.h. */
#include "base/htab.h"

#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOMBSTONE ((struct htab_entry *)1)

/* A slot keeps its entry's hash: a probe past other keys reads no entry. */
struct hslot {
	uint64_t hash;
	struct htab_entry *e;
};

struct htab {
	struct hslot *slots;
	size_t cap;   /* power of two */
	size_t count; /* live entries */
	size_t used;  /* live + tombstones */
};

/* 64-bit FNV-1a with a final avalanche; keys are short and trusted to be keys. */
/*
 * Eight bytes a step (keys are mostly 8-byte ids and 64-byte sample keys:
 * a byte-at-a-time hash was a good part of a drain's lookups), each mixed
 * by a multiply and a shift, then the usual finalizer.
 */
static uint64_t htab_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL ^ len, w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	if (i < len) {
		w = 0;
		memcpy(&w, p + i, len - i);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

struct htab *htab__new(void)
{
	struct htab *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->cap = 16;
	h->slots = calloc(h->cap, sizeof(*h->slots));
	if (!h->slots) {
		free(h);
		return NULL;
	}
	return h;
}

void htab__free(struct htab *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i].e && h->slots[i].e != TOMBSTONE)
			free(h->slots[i].e);
	free(h->slots);
	free(h);
}

size_t htab__count(const struct htab *h)
{
	return h->count;
}

static size_t probe(const struct htab *h, uint64_t hash, const void *key, size_t klen, bool *found)
{
	size_t mask = h->cap - 1, i = hash & mask, first_free = (size_t)-1;

	for (;;) {
		const struct hslot *sl = &h->slots[i];
		struct htab_entry *e = sl->e;

		if (!e) {
			*found = false;
			return first_free != (size_t)-1 ? first_free : i;
		}
		if (e == TOMBSTONE) {
			if (first_free == (size_t)-1)
				first_free = i;
		} else if (sl->hash == hash && e->klen == klen && !memcmp(e->key, key, klen)) {
			*found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
}

static int resize(struct htab *h, size_t new_cap)
{
	struct hslot *old = h->slots;
	size_t old_cap = h->cap;
	struct hslot *slots = calloc(new_cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	h->slots = slots;
	h->cap = new_cap;
	h->used = h->count;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].e || old[i].e == TOMBSTONE)
			continue;
		for (j = old[i].hash & (new_cap - 1); slots[j].e; j = (j + 1) & (new_cap - 1))
			;
		slots[j] = old[i];
	}
	free(old);
	return 0;
}

struct htab_entry *htab__find(const struct htab *h, const void *key, size_t klen)
{
	bool found;
	size_t i = probe(h, htab_hash(key, klen), key, klen, &found);

	return found ? h->slots[i].e : NULL;
}

struct htab_entry *htab__upsert(struct htab *h, const void *key, size_t klen, bool *created)
{
	uint64_t hash = htab_hash(key, klen);
	struct htab_entry *e;
	bool found;
	size_t i;

	if (created)
		*created = false;
	i = probe(h, hash, key, klen, &found);
	if (found)
		return h->slots[i].e;
	if ((h->used + 1) * 4 > h->cap * 3) {
		/* Mostly tombstones: rebuild at the same size; else grow. */
		size_t new_cap = (h->count + 1) * 2 > h->cap ? h->cap * 2 : h->cap;

		if (resize(h, new_cap)) {
			errno = ENOMEM;
			return NULL;
		}
		i = probe(h, hash, key, klen, &found);
	}
	e = malloc(sizeof(*e) + klen + 1);
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->hash = hash;
	e->value = NULL;
	e->klen = klen;
	memcpy(e->key, key, klen);
	e->key[klen] = '\0';
	if (h->slots[i].e != TOMBSTONE)
		h->used++;
	h->slots[i] = (struct hslot){ .hash = hash, .e = e };
	h->count++;
	if (created)
		*created = true;
	return e;
}

struct htab_entry *htab__index(struct htab *h, const void *key, size_t klen, size_t *index,
			       bool *created, size_t *nr, void **arr, size_t *cap, size_t elem)
{
	struct htab_entry *e = htab__upsert(h, key, klen, created);

	if (!e)
		return NULL;
	if (!*created) {
		*index = (uintptr_t)e->value;
		return e;
	}
	if (arr) {
		if (array_grow(arr, cap, *nr + 1, elem)) {
			htab__remove(h, key, klen);
			*created = false;
			errno = ENOMEM;
			return NULL;
		}
		memset((char *)*arr + *nr * elem, 0, elem);
	}
	e->value = (void *)(uintptr_t)*nr;
	*index = (*nr)++;
	return e;
}

void *htab__remove(struct htab *h, const void *key, size_t klen)
{
	bool found;
	size_t i = probe(h, htab_hash(key, klen), key, klen, &found);
	void *v;

	if (!found)
		return NULL;
	v = h->slots[i].e->value;
	free(h->slots[i].e);
	h->slots[i].e = TOMBSTONE;
	h->count--;
	return v;
}

struct htab_entry *htab__next(const struct htab *h, size_t *pos)
{
	while (*pos < h->cap) {
		struct htab_entry *e = h->slots[(*pos)++].e;

		if (e && e != TOMBSTONE)
			return e;
	}
	return NULL;
}
