// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * flametree.c - stacks merged into a call tree; see flametree.h.
 *
 * Labels are interned by (kind, clean name) and nodes by (parent, label), both
 * in htabs, so adding a sample costs one lookup per frame; a per-profile cache
 * from frame id to label avoids re-cleaning and re-hashing names.
 */
#include "format/flametree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "format/writer.h"
#include "base/util.h"

struct flametree {
	struct ftnode *nodes;
	size_t nr_nodes, cap_nodes;
	struct ftlabel *labels;
	size_t nr_labels, cap_labels;
	struct htab *label_idx; /* kind byte + name -> label index */
	struct htab *child_idx; /* (parent, label) -> node index */
	uint32_t max_depth;
	bool lines; /* labels with source lines */
};

struct child_key {
	uint32_t parent, label;
};

static int64_t new_node(struct flametree *t, uint32_t parent, uint32_t label)
{
	struct ftnode *n;

	if (t->nr_nodes >= FT_NONE - 1 ||
	    array_grow((void **)&t->nodes, &t->cap_nodes, t->nr_nodes + 1, sizeof(*t->nodes)))
		return -ENOMEM;
	n = &t->nodes[t->nr_nodes];
	memset(n, 0, sizeof(*n));
	n->label = label;
	n->parent = parent;
	n->child = n->next = FT_NONE;
	if (parent != FT_NONE) {
		struct ftnode *p = &t->nodes[parent];

		n->depth = p->depth + 1;
		n->next = p->child;
		p->child = (uint32_t)t->nr_nodes;
		p->nr_children++;
	}
	return (int64_t)t->nr_nodes++;
}

/* Label index for (kind, name); name is cleaned on first sight. */
static int64_t label_of(struct flametree *t, enum frame_kind kind, const char *name)
{
	size_t len = strlen(name), csize = 3 * len + 1;
	struct htab_entry *e;
	char *key, *clean;
	bool created;

	key = malloc(len + 1);
	if (!key)
		return -ENOMEM;
	key[0] = (char)kind;
	memcpy(key + 1, name, len);
	e = htab__upsert(t->label_idx, key, len + 1, &created);
	free(key);
	if (!e)
		return -ENOMEM;
	if (!created)
		return (int64_t)(uintptr_t)e->value;
	clean = malloc(csize);
	if (!clean ||
	    array_grow((void **)&t->labels, &t->cap_labels, t->nr_labels + 1, sizeof(*t->labels))) {
		free(clean);
		htab__remove(t->label_idx, e->key, e->klen);
		return -ENOMEM;
	}
	writer__clean_utf8(name, clean, csize);
	t->labels[t->nr_labels] = (struct ftlabel){ .name = clean, .kind = kind };
	e->value = (void *)(uintptr_t)t->nr_labels;
	return (int64_t)t->nr_labels++;
}

static int64_t child_of(struct flametree *t, uint32_t parent, uint32_t label)
{
	struct child_key k = { parent, label };
	struct htab_entry *e;
	bool created;
	int64_t n;

	e = htab__upsert(t->child_idx, &k, sizeof(k), &created);
	if (!e)
		return -ENOMEM;
	if (!created)
		return (int64_t)(uintptr_t)e->value;
	n = new_node(t, parent, label);
	if (n < 0) {
		htab__remove(t->child_idx, &k, sizeof(k));
		return n;
	}
	e->value = (void *)(uintptr_t)n;
	return n;
}

struct flametree *flametree__new(void)
{
	struct flametree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->label_idx = htab__new();
	t->child_idx = htab__new();
	if (!t->label_idx || !t->child_idx || label_of(t, FRAME_OTHER, "all") != 0 ||
	    new_node(t, FT_NONE, 0) != 0) {
		flametree__free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void flametree__free(struct flametree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_labels; i++)
		free((char *)t->labels[i].name);
	free(t->labels);
	free(t->nodes);
	htab__free(t->label_idx);
	htab__free(t->child_idx);
	free(t);
}

void flametree__set_lines(struct flametree *t, bool lines)
{
	t->lines = lines;
}

int flametree__add(struct flametree *t, const struct profile *p, int slot)
{
	size_t nr_frames = profile__nr_frames(p);
	uint32_t *cache; /* frame id -> label + 1 */
	int err = 0;

	if (slot < 0 || slot > 1 || !t->child_idx)
		return -EINVAL;
	cache = calloc(nr_frames + 1, sizeof(*cache));
	if (!cache)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);
		const uint32_t *fr;
		uint32_t n, node = 0;
		int64_t l, c;

		if (!s->count)
			continue;
		t->nodes[0].value[slot] += s->count;
		l = label_of(t, FRAME_OTHER, s->comm[0] ? s->comm : "[unknown]");
		if (l < 0 || (c = child_of(t, 0, (uint32_t)l)) < 0) {
			err = -ENOMEM;
			break;
		}
		node = (uint32_t)c;
		t->nodes[node].value[slot] += s->count;
		fr = profile__stack_get(p, s->stack, &n);
		for (uint32_t j = 0; j < n; j++) {
			if (!cache[fr[j]]) {
				const struct pframe *f = profile__frame_get(p, fr[j]);
				char name[4096];

				writer__frame_display(f, t->lines, name, sizeof(name));
				l = label_of(t, f->kind, name);
				if (l < 0) {
					err = (int)l;
					break;
				}
				cache[fr[j]] = (uint32_t)l + 1;
			}
			c = child_of(t, node, cache[fr[j]] - 1);
			if (c < 0) {
				err = (int)c;
				break;
			}
			node = (uint32_t)c;
			t->nodes[node].value[slot] += s->count;
		}
	}
	free(cache);
	return err;
}

static int cmp_labels(const struct flametree *t, uint32_t a, uint32_t b)
{
	const struct ftlabel *x = &t->labels[t->nodes[a].label], *y = &t->labels[t->nodes[b].label];
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

static int cmp_nodes(const void *a, const void *b, void *ctx)
{
	return cmp_labels(ctx, *(const uint32_t *)a, *(const uint32_t *)b);
}

int flametree__finish(struct flametree *t, uint64_t min_value)
{
	uint32_t *kids = NULL, *stack = NULL;
	size_t cap = 0, sp = 0, nr = t->nr_nodes;
	int err = 0;

	/* The child index is only needed while adding; free it now. */
	htab__free(t->child_idx);
	t->child_idx = NULL;
	stack = malloc((nr + 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[sp++] = 0;
	while (sp && !err) {
		uint32_t i = stack[--sp], k = 0, kept = 0, small = 0;
		uint64_t small_v[2] = { 0, 0 };
		struct ftnode *n = &t->nodes[i];

		if (n->depth > t->max_depth)
			t->max_depth = n->depth;
		if (array_grow((void **)&kids, &cap, n->nr_children + 1, sizeof(*kids))) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t c = n->child; c != FT_NONE; c = t->nodes[c].next) {
			if (!t->nodes[c].value[0])
				continue; /* only in "before": no width */
			if (t->nodes[c].value[0] < min_value) {
				small++;
				small_v[0] += t->nodes[c].value[0];
				small_v[1] += t->nodes[c].value[1];
				continue;
			}
			kids[k++] = c;
		}
		qsort_r(kids, k, sizeof(*kids), cmp_nodes, t);
		kept = k;
		/* An aggregate too small itself is dropped, as flamegraph.pl drops
		 * narrow frames: its parent shows the gap as if it were self time. */
		if (small && small_v[0] >= min_value) {
			char name[64];
			int64_t l, c;

			snprintf(name, sizeof(name), "[%u small frame%s]", small,
				 small == 1 ? "" : "s");
			l = label_of(t, FRAME_OTHER, name);
			c = l < 0 ? l : new_node(t, i, (uint32_t)l);
			if (c < 0) {
				err = -ENOMEM;
				break;
			}
			n = &t->nodes[i]; /* new_node may move the array */
			t->nodes[c].value[0] = small_v[0];
			t->nodes[c].value[1] = small_v[1];
			kids[k++] = (uint32_t)c;
		}
		n->child = k ? kids[0] : FT_NONE;
		n->nr_children = k;
		for (uint32_t j = 0; j < k; j++)
			t->nodes[kids[j]].next = j + 1 < k ? kids[j + 1] : FT_NONE;
		/* Push in reverse so the walk (and any later one) visits in order. */
		for (uint32_t j = kept; j-- > 0;)
			stack[sp++] = kids[j];
		if (k > kept && t->nodes[kids[k - 1]].depth > t->max_depth)
			t->max_depth = t->nodes[kids[k - 1]].depth;
	}
	free(kids);
	free(stack);
	return err;
}

size_t flametree__nr_nodes(const struct flametree *t)
{
	return t->nr_nodes;
}

const struct ftnode *flametree__node(const struct flametree *t, uint32_t i)
{
	return i < t->nr_nodes ? &t->nodes[i] : NULL;
}

size_t flametree__nr_labels(const struct flametree *t)
{
	return t->nr_labels;
}

const struct ftlabel *flametree__label(const struct flametree *t, uint32_t i)
{
	return i < t->nr_labels ? &t->labels[i] : NULL;
}

uint64_t flametree__total(const struct flametree *t, int slot)
{
	return slot >= 0 && slot <= 1 ? t->nodes[0].value[slot] : 0;
}

uint32_t flametree__max_depth(const struct flametree *t)
{
	return t->max_depth;
}
