/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * flametree.h - the stacks of a profile merged into one call tree: the shape
 * a flame graph draws. Node 0 is the root ("all"); its children are process
 * names (comm, as in folded output), then frames root first.
 *
 * A tree holds up to two slots of values so a differential flame graph can
 * merge two profiles: slot 0 is the profile drawn (or "after"), slot 1 the
 * profile it is compared with ("before"). Frames are matched by kind and
 * name, so profiles read from different files line up.
 *
 * flametree__finish() sorts siblings by name (stable, diff-friendly output)
 * and folds children too small to ever be seen - less than min_value in slot
 * 0 - into one "[N small frames]" child per parent (dropped when that too is
 * under min_value), which is what keeps a profile of 50,000 distinct stacks
 * small and fast to draw. Nodes with no slot-0 value (only in "before") are
 * dropped there too.
 *
 * Ownership: the tree copies every label; it does not keep the profiles.
 */
#ifndef BPFPROF_FLAMETREE_H
#define BPFPROF_FLAMETREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/profile.h"

#define FT_NONE UINT32_MAX

struct ftnode {
	uint32_t label;	      /* index of its label */
	uint32_t parent;      /* FT_NONE for the root */
	uint32_t child, next; /* first child, next sibling; FT_NONE when none */
	uint32_t depth;	      /* root 0, comm 1, outermost frame 2, ... */
	uint32_t nr_children;
	uint64_t value[2]; /* inclusive samples per slot */
};

struct ftlabel {
	const char *name; /* clean UTF-8, no control characters, no kind suffix */
	enum frame_kind kind;
};

struct flametree;

struct flametree *flametree__new(void);
void flametree__free(struct flametree *t);

/* Labels with source lines ("name (file:line)"); before any flametree__add(). */
void flametree__set_lines(struct flametree *t, bool lines);
/* Adds every sample of p into slot (0 or 1). 0 or -ENOMEM/-EINVAL. */
int flametree__add(struct flametree *t, const struct profile *p, int slot);
/* Sorts, prunes and aggregates as described above; call once, after adding. */
int flametree__finish(struct flametree *t, uint64_t min_value);

size_t flametree__nr_nodes(const struct flametree *t);
const struct ftnode *flametree__node(const struct flametree *t, uint32_t i);
size_t flametree__nr_labels(const struct flametree *t);
const struct ftlabel *flametree__label(const struct flametree *t, uint32_t i);
uint64_t flametree__total(const struct flametree *t, int slot);
/* Deepest depth of a node with a slot-0 value (after finish). */
uint32_t flametree__max_depth(const struct flametree *t);

#endif
