// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * slotset.c - the agent's side of one buffer set's count slots (slotset.h).
 *
 * Keys are kept in an array in the order their first slot was found; a
 * key's other slots (two CPUs met it new at once: rare) in a list of
 * their own. Totals only grow while the set lives, so what a key gained
 * is its total now minus the total handed out before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"
#include "collector/slotset.h"

struct slot_ent {
	struct bp_sample_key key;
	uint64_t last;	 /* total handed out */
	uint64_t cur;	 /* this read: total */
	uint64_t hot;	 /* this read: hot-slot counts */
	uint64_t cookie; /* the reader's (slotset_gain) */
	uint32_t slot;	 /* its first slot */
};

struct slot_dup {
	uint32_t slot, ent;
};

/* What a hot slot held at the last read: a claim lasts the set's life. */
struct hot_pos {
	uint64_t khash;
	uint32_t ent; /* index + 1 in ents; 0: not known */
};

struct slotset {
	uint32_t regions, per_region;
	uint32_t *known; /* per region: slots scanned */
	struct slot_ent *ents;
	size_t nents, cap_ents;
	struct slot_dup *dups;
	size_t ndups, cap_dups;
	struct htab *by_key;  /* key -> index + 1 in ents (in the value) */
	struct htab *by_hash; /* bp_key_hash() -> index + 1 in ents */
	struct slotset_gain *gains;
	size_t cap_gains;
	struct hot_pos *hot; /* per hot slot position */
	size_t nhot;
};

struct slotset *slotset__new(uint32_t regions, uint32_t per_region, size_t hot_positions)
{
	struct slotset *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->regions = regions;
	s->per_region = per_region;
	s->known = calloc(regions ? regions : 1, sizeof(*s->known));
	s->by_key = htab__new();
	s->by_hash = htab__new();
	s->nhot = hot_positions;
	s->hot = calloc(hot_positions ? hot_positions : 1, sizeof(*s->hot));
	if (!s->known || !s->by_key || !s->by_hash || !s->hot) {
		slotset__free(s);
		return NULL;
	}
	return s;
}

void slotset__free(struct slotset *s)
{
	if (!s)
		return;
	htab__free(s->by_key);
	htab__free(s->by_hash);
	free(s->known);
	free(s->ents);
	free(s->dups);
	free(s->gains);
	free(s->hot);
	free(s);
}

void slotset__reset(struct slotset *s)
{
	memset(s->known, 0, sizeof(*s->known) * (s->regions ? s->regions : 1));
	s->nents = 0;
	s->ndups = 0;
	memset(s->hot, 0, sizeof(*s->hot) * s->nhot);
	/* Fresh tables (no tombstones to carry); made again by the next scan
	 * if memory is short now. */
	htab__free(s->by_key);
	htab__free(s->by_hash);
	s->by_key = htab__new();
	s->by_hash = htab__new();
}

/* Slot idx's key joins the set: a key of its own, or another slot of a known one. */
static int learn(struct slotset *s, uint32_t idx, const struct bp_sample_key *key)
{
	struct htab_entry *e;
	bool created;

	e = htab__upsert(s->by_key, key, sizeof(*key), &created);
	if (!e)
		return -ENOMEM;
	if (!created) {
		if (array_grow((void **)&s->dups, &s->cap_dups, s->ndups + 1, sizeof(*s->dups)))
			return -ENOMEM;
		s->dups[s->ndups++] =
			(struct slot_dup){ .slot = idx,
					   .ent = (uint32_t)((uintptr_t)e->value - 1) };
		return 0;
	}
	if (array_grow((void **)&s->ents, &s->cap_ents, s->nents + 1, sizeof(*s->ents))) {
		htab__remove(s->by_key, key, sizeof(*key));
		return -ENOMEM;
	}
	s->ents[s->nents] = (struct slot_ent){ .key = *key, .slot = idx };
	e->value = (void *)(uintptr_t)(s->nents + 1);
	{
		uint64_t h = bp_key_hash(key);
		struct htab_entry *he = htab__upsert(s->by_hash, &h, sizeof(h), &created);

		if (!he) { /* the key must be findable by hash, or its hot counts are lost */
			htab__remove(s->by_key, key, sizeof(*key));
			return -ENOMEM;
		}
		/* A 64-bit hash shared by two keys: the program's hot slots
		 * cannot tell them apart either; the first keeps it. */
		if (created)
			he->value = (void *)(uintptr_t)(s->nents + 1);
	}
	s->nents++;
	return 0;
}

int slotset__scan(struct slotset *s, const struct slotset_mem *m, const uint32_t *taken)
{
	if (!s->by_key && !(s->by_key = htab__new()))
		return -ENOMEM;
	if (!s->by_hash && !(s->by_hash = htab__new()))
		return -ENOMEM;
	for (uint32_t r = 0; r < s->regions; r++) {
		uint32_t n = taken[r] < s->per_region ? taken[r] : s->per_region;
		uint32_t base = r * s->per_region;

		for (uint32_t i = s->known[r]; i < n; i++) {
			struct bp_sample_key key;
			int err;

			/* The count first: the program writes the key before it. */
			if (!__atomic_load_n(&m->counts[base + i], __ATOMIC_ACQUIRE))
				break; /* being written now: the next scan */
			memcpy(&key, (const void *)&m->keys[base + i], sizeof(key));
			err = learn(s, base + i, &key);
			if (err)
				return err;
			s->known[r] = i + 1;
		}
	}
	return 0;
}

void slotset__hot(struct slotset *s, size_t pos, uint64_t khash, uint64_t count)
{
	struct hot_pos *p = pos < s->nhot ? &s->hot[pos] : NULL;
	struct htab_entry *e;

	if (p && p->ent && p->khash == khash) { /* the same claim as last read */
		s->ents[p->ent - 1].hot += count;
		return;
	}
	e = s->by_hash ? htab__find(s->by_hash, &khash, sizeof(khash)) : NULL;
	if (p) {
		p->khash = khash;
		p->ent = e ? (uint32_t)(uintptr_t)e->value : 0;
	}
	if (e)
		s->ents[(uintptr_t)e->value - 1].hot += count;
}

int slotset__gains(struct slotset *s, const struct slotset_mem *m, const struct slotset_gain **out,
		   size_t *nr)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nents; i++) {
		struct slot_ent *e = &s->ents[i];

		e->cur = __atomic_load_n(&m->counts[e->slot], __ATOMIC_RELAXED) + e->hot;
		e->hot = 0; /* read: the next read adds the hot slots' counts anew */
	}
	/* Room for every key before any baseline moves: a failure leaves them all. */
	if (s->nents && array_grow((void **)&s->gains, &s->cap_gains, s->nents, sizeof(*s->gains)))
		return -ENOMEM;
	for (size_t i = 0; i < s->ndups; i++)
		s->ents[s->dups[i].ent].cur +=
			__atomic_load_n(&m->counts[s->dups[i].slot], __ATOMIC_RELAXED);
	for (size_t i = 0; i < s->nents; i++) {
		struct slot_ent *e = &s->ents[i];

		if (e->cur <= e->last)
			continue;
		s->gains[n++] = (struct slotset_gain){ .key = &e->key,
						       .count = e->cur - e->last,
						       .cookie = &e->cookie };
		e->last = e->cur;
	}
	*out = s->gains;
	*nr = n;
	return 0;
}

size_t slotset__keys(const struct slotset *s)
{
	return s->nents;
}

const struct bp_sample_key *slotset__key(const struct slotset *s, size_t i)
{
	return &s->ents[i].key;
}
