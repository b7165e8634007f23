// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* labels.c - cgroup / container labels per process; see labels.h. */
#include "proc/labels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "proc/ptab.h"

struct label_entry {
	struct cgroup_info ci;
	bool ok;
	uint64_t used_gen;
};

struct labels {
	struct ptab *pt; /* the reads, and whether a process is still the one asked for */
	size_t max;
	struct htab *h; /* {pid, start} -> label_entry */
	uint64_t gen;
};

struct lkey {
	uint32_t pid, pad;
	uint64_t start_ns;
};

/* Entries unused for two sweeps are dropped; while there are at most
 * LABELS_KEEP_FEW, only after LABELS_KEEP_GENS. */
#define LABELS_KEEP_FEW	 1024
#define LABELS_KEEP_GENS 30

struct labels *labels__new(struct ptab *pt, size_t max_entries)
{
	struct labels *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->pt = pt;
	l->max = max_entries ? max_entries : 16384;
	l->h = htab__new();
	if (!l->h) {
		free(l);
		return NULL;
	}
	return l;
}

void labels__free(struct labels *l)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!l)
		return;
	while ((e = htab__next(l->h, &pos)))
		free(e->value);
	htab__free(l->h);
	free(l);
}

const struct cgroup_info *labels__get(struct labels *l, uint32_t pid, uint64_t start_ns)
{
	struct lkey k = { .pid = pid, .start_ns = start_ns };
	struct proc_id id = { .pid = pid, .start_time = start_ns };
	struct label_entry *le;
	struct htab_entry *e;
	bool created;

	e = htab__find(l->h, &k, sizeof(k));
	if (e) {
		le = e->value;
		le->used_gen = l->gen;
		return le->ok ? &le->ci : NULL;
	}
	if (htab__count(l->h) >= l->max)
		return NULL; /* full until the next sweep: unlabeled, never wrong */
	e = htab__upsert(l->h, &k, sizeof(k), &created);
	if (!e)
		return NULL;
	le = calloc(1, sizeof(*le));
	if (!le) {
		htab__remove(l->h, &k, sizeof(k));
		return NULL;
	}
	e->value = le;
	le->used_gen = l->gen;
	/* Only label the process the sample came from, not a recycled pid. */
	le->ok = ptab__cgroup(l->pt, &id, &le->ci) == 0;
	return le->ok ? &le->ci : NULL;
}

void labels__sweep(struct labels *l)
{
	struct htab_entry *e;
	size_t pos = 0;
	uint64_t keep;

	l->gen++;
	/* Few entries: kept longer. A process whose samples all repeat keys the
	 * drain knows asks for no labels, and would have its /proc/PID/stat and
	 * cgroup read again at its next new key (a few a second under top). */
	keep = htab__count(l->h) <= LABELS_KEEP_FEW ? LABELS_KEEP_GENS : 2;
	while ((e = htab__next(l->h, &pos))) {
		struct label_entry *le = e->value;

		if (le->used_gen + keep > l->gen)
			continue;
		htab__remove(l->h, e->key, e->klen);
		free(le);
	}
}

size_t labels__count(const struct labels *l)
{
	return htab__count(l->h);
}
