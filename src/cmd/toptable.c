// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* toptable.c - functions and processes of top's window; see toptable.h. */
#include "cmd/toptable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

bool toptable__matches(const struct top_view *v, const struct psample *s)
{
	const char *f = v->filter;

	if (v->zoom_pid && s->pid != v->zoom_pid)
		return false;
	if (!f || !*f)
		return true;
	if (all_digits(f))
		return strtoul(f, NULL, 10) == s->pid;
	if (s->comm && strstr(s->comm, f))
		return true;
	return s->container && !strncmp(s->container, f, strlen(f));
}

/* The frames of a sample the view keeps: [*lo, *hi) of fr. */
static void frame_span(const struct profile *p, const uint32_t *fr, uint32_t n,
		       enum top_frames mode, uint32_t *lo, uint32_t *hi)
{
	uint32_t k = n;

	/* Root first: user frames (and markers), then the kernel frames. */
	while (k > 0 && profile__frame_get(p, fr[k - 1])->kind == FRAME_KERNEL)
		k--;
	*lo = 0;
	*hi = n;
	if (mode == TOP_FRAMES_USER)
		*hi = k;
	else if (mode == TOP_FRAMES_KERNEL)
		*lo = k;
}

/* Per profile of the window: its frames' rows and its samples' processes. */
struct pcache {
	const struct profile *p;
	uint32_t *row_of;  /* frame id -> row + 1, 0: not looked up yet */
	uint32_t *proc_of; /* sample index -> process + 1 */
};

struct builder {
	struct htab *fns;   /* kind, module, NUL, name -> index */
	struct htab *procs; /* pid, comm pointer... -> index */
	struct pcache *pc;
	size_t nr_pc, cap_pc;
	struct top_table *t;
	size_t cap_rows, cap_procs, cap_seen;
	uint64_t *seen; /* per row: the sample (serial) that last counted it in total */
	struct sbuf key;
};

static long row_of(struct builder *b, const struct pframe *f)
{
	const char *mod = f->module ? path_basename(f->module) : "";
	char kind = (char)('0' + f->kind);
	struct htab_entry *e;
	bool created;

	sbuf_reset(&b->key);
	if (sbuf_add(&b->key, &kind, 1) || sbuf_puts(&b->key, mod) || sbuf_add(&b->key, "", 1) ||
	    sbuf_puts(&b->key, f->name))
		return -ENOMEM;
	e = htab__upsert(b->fns, b->key.buf, b->key.len, &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		struct top_table *t = b->t;

		if (array_grow((void **)&t->rows, &b->cap_rows, t->nr + 1, sizeof(*t->rows)) ||
		    array_grow((void **)&b->seen, &b->cap_seen, t->nr + 1, sizeof(*b->seen))) {
			htab__remove(b->fns, b->key.buf, b->key.len);
			return -ENOMEM;
		}
		b->seen[t->nr] = 0;
		t->rows[t->nr] = (struct top_row){
			.name = f->name, .module = f->module ? mod : NULL, .kind = f->kind};
		e->value = (void *)(uintptr_t)t->nr++;
	}
	return (long)(uintptr_t)e->value;
}

static struct pcache *pcache_of(struct builder *b, const struct profile *p)
{
	struct pcache *c;

	for (size_t i = 0; i < b->nr_pc; i++)
		if (b->pc[i].p == p)
			return &b->pc[i];
	if (array_grow((void **)&b->pc, &b->cap_pc, b->nr_pc + 1, sizeof(*b->pc)))
		return NULL;
	c = &b->pc[b->nr_pc];
	c->p = p;
	c->row_of = calloc(profile__nr_frames(p) + 1, sizeof(*c->row_of));
	c->proc_of = calloc(profile__nr_samples(p) + 1, sizeof(*c->proc_of));
	if (!c->row_of || !c->proc_of) {
		free(c->row_of);
		free(c->proc_of);
		return NULL;
	}
	b->nr_pc++;
	return c;
}

static int add_proc(struct builder *b, const struct psample *s, uint64_t count, uint32_t *cached)
{
	struct top_table *t = b->t;
	struct htab_entry *e;
	bool created;
	struct sbuf *k = &b->key;

	if (*cached) {
		t->procs[*cached - 1].samples += count;
		return 0;
	}
	sbuf_reset(k);
	if (sbuf_add(k, (const char *)&s->pid, sizeof(s->pid)) ||
	    sbuf_puts(k, s->comm ? s->comm : ""))
		return -ENOMEM;
	e = htab__upsert(b->procs, k->buf, k->len, &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		if (array_grow((void **)&t->procs, &b->cap_procs, t->nr_procs + 1,
			       sizeof(*t->procs))) {
			htab__remove(b->procs, k->buf, k->len);
			return -ENOMEM;
		}
		t->procs[t->nr_procs] = (struct top_proc){
			.pid = s->pid, .comm = s->comm, .container = s->container};
		e->value = (void *)(uintptr_t)t->nr_procs++;
	}
	*cached = (uint32_t)(uintptr_t)e->value + 1;
	t->procs[*cached - 1].samples += count;
	return 0;
}

static int cmp_name(const struct top_row *x, const struct top_row *y)
{
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->module ? x->module : "", y->module ? y->module : "");
}

static int cmp_self(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return cmp_name(x, y);
}

static int cmp_total(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return cmp_name(x, y);
}

static int cmp_procs(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int add_sample(struct builder *b, struct pcache *c, uint32_t idx, uint64_t count,
		      const struct top_view *v, uint64_t serial)
{
	const struct profile *p = c->p;
	const struct psample *s = profile__sample(p, idx);
	struct top_table *t = b->t;
	const uint32_t *fr;
	uint32_t n, lo, hi;
	int err;

	err = add_proc(b, s, count, &c->proc_of[idx]);
	if (err)
		return err;
	t->samples += count;
	fr = profile__stack_get(p, s->stack, &n);
	frame_span(p, fr, n, v->frames, &lo, &hi);
	if (lo >= hi) {
		t->no_frames += count;
		return 0;
	}
	for (uint32_t j = lo; j < hi; j++) {
		uint32_t r = c->row_of[fr[j]];

		if (!r) {
			long nr = row_of(b, profile__frame_get(p, fr[j]));

			if (nr < 0)
				return (int)nr;
			r = c->row_of[fr[j]] = (uint32_t)nr + 1;
		}
		r--;
		if (j == hi - 1)
			t->rows[r].self += count;
		if (b->seen[r] != serial) {
			b->seen[r] = serial;
			t->rows[r].total += count;
		}
	}
	return 0;
}

int toptable__build(struct top_table *t, const struct top_slice *slices, size_t n,
		    const struct top_view *v)
{
	struct builder b = {.t = t};
	uint64_t serial = 0;
	int err = 0;

	memset(t, 0, sizeof(*t));
	b.fns = htab__new();
	b.procs = htab__new();
	if (!b.fns || !b.procs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !err; i++) {
		const struct top_slice *sl = &slices[i];
		size_t m = sl->d ? sl->n : profile__nr_samples(sl->p);
		struct pcache *c;

		if (!sl->p || !m)
			continue;
		c = pcache_of(&b, sl->p);
		if (!c) {
			err = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < m && !err; j++) {
			uint32_t idx = sl->d ? sl->d[j].sample : (uint32_t)j;
			const struct psample *s = profile__sample(sl->p, idx);
			uint64_t count = sl->d ? sl->d[j].count : s ? s->count : 0;

			if (!s || !count || !toptable__matches(v, s))
				continue;
			err = add_sample(&b, c, idx, count, v, ++serial);
		}
	}
	if (!err && t->nr)
		qsort(t->rows, t->nr, sizeof(*t->rows),
		      v->sort == TOP_SORT_TOTAL ? cmp_total : cmp_self);
	if (!err && t->nr_procs)
		qsort(t->procs, t->nr_procs, sizeof(*t->procs), cmp_procs);
out:
	for (size_t i = 0; i < b.nr_pc; i++) {
		free(b.pc[i].row_of);
		free(b.pc[i].proc_of);
	}
	free(b.pc);
	htab__free(b.fns);
	htab__free(b.procs);
	sbuf_free(&b.key);
	free(b.seen);
	if (err)
		toptable__free(t);
	return err;
}

void toptable__free(struct top_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->procs);
	memset(t, 0, sizeof(*t));
}
