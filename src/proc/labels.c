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

/* A cgroup v2 cgroup's label, as the reads of its processes gave it. */
struct cgroup_entry {
	struct cgroup_info ci;
	bool agreed;	   /* two reads gave this: processes of the cgroup need none */
	uint64_t born_gen; /* of the entry, or of the agreement */
};

struct labels {
	struct ptab *pt; /* the reads, and whether a process is still the one asked for */
	size_t max;
	struct htab *h;	 /* {pid, start} -> label_entry */
	struct htab *cg; /* cgroup id -> cgroup_entry */
	uint64_t gen;
	uint64_t cgroup_hits;
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
	l->cg = htab__new();
	if (!l->h || !l->cg) {
		htab__free(l->h);
		htab__free(l->cg);
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
	pos = 0;
	while ((e = htab__next(l->cg, &pos)))
		free(e->value);
	htab__free(l->cg);
	free(l);
}

/* The labels the reads of cgroup_id's processes gave: agreed on, or a first. */
static void cgroup_learn(struct labels *l, uint64_t cgroup_id, const struct cgroup_info *ci)
{
	struct cgroup_entry *ce;
	struct htab_entry *e;
	bool created;

	if (!ci->v2_only)
		return; /* a v1 hierarchy may tell processes of one v2 cgroup apart */
	e = htab__find(l->cg, &cgroup_id, sizeof(cgroup_id));
	if (!e) {
		if (htab__count(l->cg) >= LABELS_CGROUPS)
			return;
		e = htab__upsert(l->cg, &cgroup_id, sizeof(cgroup_id), &created);
		if (!e)
			return;
		e->value = calloc(1, sizeof(struct cgroup_entry));
		if (!e->value) {
			htab__remove(l->cg, &cgroup_id, sizeof(cgroup_id));
			return;
		}
	}
	ce = e->value;
	/* A second read that agrees (a process moved between its notice and
	 * its read would not): later processes are labelled without one. */
	ce->agreed = ce->ci.path[0] && !strcmp(ce->ci.path, ci->path) &&
		     !strcmp(ce->ci.container_id, ci->container_id);
	ce->ci = *ci;
	ce->born_gen = l->gen;
}

const struct cgroup_info *labels__note(struct labels *l, uint32_t pid, uint64_t start_ns,
				       uint64_t cgroup_id)
{
	struct lkey k = { .pid = pid, .start_ns = start_ns };
	struct proc_id id = { .pid = pid, .start_time = start_ns };
	const struct cgroup_entry *ce = NULL;
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
	if (cgroup_id) {
		e = htab__find(l->cg, &cgroup_id, sizeof(cgroup_id));
		ce = e ? e->value : NULL;
	}
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
	if (ce && ce->agreed) {
		/* The notice's id is this process's cgroup when it was sampled. */
		le->ci = ce->ci;
		le->ok = true;
		l->cgroup_hits++;
		return &le->ci;
	}
	/* Only label the process the sample came from, not a recycled pid. */
	le->ok = ptab__cgroup(l->pt, &id, &le->ci) == 0;
	if (le->ok && cgroup_id)
		cgroup_learn(l, cgroup_id, &le->ci);
	return le->ok ? &le->ci : NULL;
}

const struct cgroup_info *labels__get(struct labels *l, uint32_t pid, uint64_t start_ns)
{
	return labels__note(l, pid, start_ns, 0);
}

uint64_t labels__cgroup_hits(const struct labels *l)
{
	return l->cgroup_hits;
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
	/* Cgroups: read again a while after they were learnt (renamed meanwhile). */
	pos = 0;
	while ((e = htab__next(l->cg, &pos))) {
		struct cgroup_entry *ce = e->value;

		if (ce->born_gen + LABELS_CGROUP_GENS > l->gen)
			continue;
		htab__remove(l->cg, e->key, e->klen);
		free(ce);
	}
}

size_t labels__count(const struct labels *l)
{
	return htab__count(l->h);
}
