/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * slotset.h - the agent's side of one buffer set's count slots
 * (bpf/profile_abi.h): which key each slot counts, and what each key gained
 * since the last read.
 *
 * The program publishes slots region by region; slotset__scan() learns the
 * new ones, slotset__hot() adds what the CPUs counted in their hot slots
 * this read, and slotset__gains() sums each key's slots and hands out only
 * the keys whose total grew. A read costs one pass over the known keys in
 * memory the kernel shares (no syscall, no copy of the counts map), plus
 * one hash lookup per key new to the set. Pure memory: no libbpf, so the
 * unit tests drive it with arrays of their own.
 */
#ifndef BPFPROF_SLOTSET_H
#define BPFPROF_SLOTSET_H

#include <stddef.h>
#include <stdint.h>

#include "profile_abi.h"

struct slotset;

struct slotset_gain {
	const struct bp_sample_key *key; /* valid until the next scan or reset */
	uint64_t count;			 /* gained since the last slotset__gains() */
	uint64_t *cookie;		 /* the key's word for its reader, 0 at first; kept
					  * with the key until a reset (same validity) */
};

/* One set's slot memory, as the program sees it (index: region * per_region + i). */
struct slotset_mem {
	const volatile uint64_t *counts;
	const volatile struct bp_sample_key *keys;
};

/* hot_positions: hot slots the program has (CPUs x PROFILE_HOT_SLOTS). */
struct slotset *slotset__new(uint32_t regions, uint32_t per_region, size_t hot_positions);
void slotset__free(struct slotset *s);
/* Forgets every slot and key: the set was emptied. */
void slotset__reset(struct slotset *s);

/*
 * Learns the slots published since the last scan: taken[r] is region r's
 * next (clamped to per_region); a region's scan stops at its first slot
 * still unpublished (count 0), which the next scan starts from. -ENOMEM
 * leaves the rest for the next scan.
 */
int slotset__scan(struct slotset *s, const struct slotset_mem *m, const uint32_t *taken);

/*
 * Hot slot pos's count for this read, by key hash; ignored for a key not
 * scanned yet. The key a position held at the last read is remembered, so
 * a read costs a hash lookup only for a slot claimed since.
 */
void slotset__hot(struct slotset *s, size_t pos, uint64_t khash, uint64_t count);

/*
 * What each key gained since the last call (its slots' counts plus this
 * read's hot counts, against the total handed out before). *out: the keys
 * that gained, valid until the next call, scan or reset.
 */
int slotset__gains(struct slotset *s, const struct slotset_mem *m, const struct slotset_gain **out,
		   size_t *nr);

/* Distinct keys known, and the i-th (i < slotset__keys()). */
size_t slotset__keys(const struct slotset *s);
const struct bp_sample_key *slotset__key(const struct slotset *s, size_t i);

#endif
