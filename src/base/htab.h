/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * htab.h - a hash table from byte-string keys to pointers.
 *
 * Keys are copied into the table; values are the caller's. Used for interning
 * (frames, stacks, strings) and for caches keyed by small structs. Open
 * addressing with linear probing; deletion uses tombstones and the table is
 * rebuilt when they pile up, so a long-running agent does not degrade.
 */
#ifndef BPFPROF_HTAB_H
#define BPFPROF_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct htab;

struct htab_entry {
	uint64_t hash;
	void *value;
	size_t klen;
	unsigned char key[]; /* klen bytes, followed by a NUL for string keys */
};

struct htab *htab__new(void);
void htab__free(struct htab *h); /* values are not freed */
size_t htab__count(const struct htab *h);

/* The entry for key, or NULL. */
struct htab_entry *htab__find(const struct htab *h, const void *key, size_t klen);
/*
 * The entry for key, created with value NULL if absent (*created set). NULL
 * with errno ENOMEM if it could not be created.
 */
struct htab_entry *htab__upsert(struct htab *h, const void *key, size_t klen, bool *created);
/*
 * Grouping by key into an array, the keys numbered 0, 1, 2... in the order
 * first seen: key's entry, its number in *index (and in its value: leave it).
 * A new key (*created set) gets *nr, which is then incremented; tables that
 * share one *nr share one numbering. With arr (NULL: the numbers only), the
 * caller's array of elem-byte elements is grown (array_grow, *cap) to hold the
 * new number's element, zeroed for the caller to fill. NULL with errno ENOMEM,
 * and nothing added, if the table or the array could not grow.
 */
struct htab_entry *htab__index(struct htab *h, const void *key, size_t klen, size_t *index,
			       bool *created, size_t *nr, void **arr, size_t *cap, size_t elem);
/* Removes key; returns its value (NULL if absent). */
void *htab__remove(struct htab *h, const void *key, size_t klen);

/* Iteration: *pos starts at 0; returns NULL at the end. No insertions meanwhile. */
struct htab_entry *htab__next(const struct htab *h, size_t *pos);

#endif
