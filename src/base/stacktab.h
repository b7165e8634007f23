/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * stacktab.h - a bounded table of stacks by value, interned by their hash.
 *
 * The --alloc engine (session/allocrun.c) gets each sampled allocation's
 * user stack by value with its 64-bit hash (BPF computes it,
 * bpf/stackhash.bpf.h) and keeps each distinct stack once here; its
 * aggregates and the live blocks name stacks by hash. An entry is
 * referenced (refs) by the aggregates that name it; at the cap, a new
 * stack takes the place of the oldest unreferenced one (evicted), and when
 * every entry is referenced it is not kept (dropped). Both are counted: a
 * tenant's many distinct stacks cost at most cap entries.
 *
 * A pin is a reference of its own, one per stack at most, renewed by
 * epochs: the engine pins the stacks its walk of the live table sees
 * (blocks still in use name them long after the aggregates that took
 * them in are gone) and ends the epoch, which lets go of the pins not
 * renewed in it. A stack held only by live blocks is never evicted.
 */
#ifndef BPFPROF_STACKTAB_H
#define BPFPROF_STACKTAB_H

#include <stddef.h>
#include <stdint.h>

struct stacktab;

/* At most cap stacks (> 0) of at most max_depth frames each. NULL with errno. */
struct stacktab *stacktab__new(size_t cap, uint32_t max_depth);
void stacktab__free(struct stacktab *t);

/*
 * hash's stack (ips[0..nr), nr <= max_depth: the rest is cut) referenced once
 * more, interned if new (the ips of a known hash are not looked at: the hash
 * names them). 0, -ENOSPC (full, every entry referenced: dropped, counted),
 * -ENOMEM. hash 0 is "no stack": -EINVAL.
 */
int stacktab__get(struct stacktab *t, uint64_t hash, const uint64_t *ips, uint32_t nr);
/* A reference to hash let go (it stays, evictable once unreferenced). */
void stacktab__put(struct stacktab *t, uint64_t hash);
/* The known stack hash's frames (*nr of them), or NULL. */
const uint64_t *stacktab__find(const struct stacktab *t, uint64_t hash, uint32_t *nr);

/* hash's stack pinned in epoch (a reference taken if it had no pin). 0,
 * -ENOENT (not known: nothing pinned). */
int stacktab__pin(struct stacktab *t, uint64_t hash, uint64_t epoch);
/* The epoch's end: the pins not renewed in epoch let go (the stacks stay,
 * evictable once unreferenced). How many. */
size_t stacktab__pin_epoch(struct stacktab *t, uint64_t epoch);

struct stacktab_stats {
	size_t count;	  /* stacks held */
	size_t pinned;	  /* of them, pinned */
	size_t cap;	  /* at most */
	uint64_t evicted; /* unreferenced stacks that made room for new ones */
	uint64_t dropped; /* new stacks not kept: the table full of referenced ones */
};
void stacktab__stats(const struct stacktab *t, struct stacktab_stats *st);

#endif
