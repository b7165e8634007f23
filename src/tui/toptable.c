// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* toptable.c - functions and processes of top's window; see toptable.h. */
#include "tui/toptable.h"

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

/* Whether sample s is in the view (filter and zoom). */
static bool toptable__matches(const struct top_view *v, const struct psample *s)
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

/* Per profile of the window: its frames' functions and its samples' processes. */
struct pcache {
	const struct profile *p;
	uint32_t *fn_of; /* frame id -> function + 1, 0: not looked up yet */
	size_t cap_fn_of;
	uint32_t *proc_of; /* sample index -> process + 1 */
	size_t cap_proc_of;
};

/* A slice the counts hold. */
struct counted {
	uint64_t id;
	const struct profile *p;
	const struct top_delta *d;
	size_t n;
};

/* Functions or processes in the order last shown; listed[i]: i is in ids. */
struct order {
	uint32_t *ids;
	size_t nr, cap;
	bool *listed;
	size_t cap_listed;
};

struct toptable {
	struct top_table t; /* the output; its arrays are reused */
	size_t cap_procs;
	/*
	 * Every function and process met since counting started, with its counts
	 * in the window (0 once its samples left it). A function's row is kept in
	 * t.rows itself: the first `limit` rows in order, every later one after
	 * them in no order (rows with no samples sort last); at[] finds a row by
	 * its function's id.
	 */
	struct htab *fns;   /* kind, module, NUL, name -> id */
	struct htab *procs; /* pid, comm -> index */
	uint32_t *at;	    /* per function id: its row's index in t.rows */
	uint64_t *seen;	    /* per function id: the sample (serial) that last counted it in total */
	size_t nr_fn, cap_rows, cap_at, cap_seen;
	struct top_proc *proc;
	size_t nr_proc, cap_proc;
	struct pcache *pc;
	size_t nr_pc, cap_pc;
	struct counted *in; /* ids ascending */
	size_t nr_in, cap_in;
	struct order proc_order;
	uint64_t samples, no_frames, serial;
	/* The view counted under (filter NULL for none), and sorted by. */
	char *filter;
	uint32_t zoom_pid;
	enum top_frames frames;
	enum top_sort sort;
	size_t limit;  /* the rows in order: view's rows */
	bool followed; /* the counts are those of in[]: an update can add and take away */
	uint64_t updates, recounts;
	struct sbuf key;
};

/* *arr grown to need elements, the new ones zeroed. */
static int grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t old = *cap;

	if (need <= old)
		return 0;
	if (array_grow(arr, cap, need, elem))
		return -ENOMEM;
	memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
	return 0;
}

static long fn_of(struct toptable *tt, const struct pframe *f)
{
	const char *mod = f->module ? path_basename(f->module) : "";
	char kind = (char)('0' + f->kind);
	struct htab_entry *e;
	bool created;

	sbuf_reset(&tt->key);
	if (sbuf_add(&tt->key, &kind, 1) || sbuf_puts(&tt->key, mod) || sbuf_add(&tt->key, "", 1) ||
	    sbuf_puts(&tt->key, f->name))
		return -ENOMEM;
	e = htab__upsert(tt->fns, tt->key.buf, tt->key.len, &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		if (array_grow((void **)&tt->t.rows, &tt->cap_rows, tt->nr_fn + 1,
			       sizeof(*tt->t.rows)) ||
		    array_grow((void **)&tt->at, &tt->cap_at, tt->nr_fn + 1, sizeof(*tt->at)) ||
		    array_grow((void **)&tt->seen, &tt->cap_seen, tt->nr_fn + 1,
			       sizeof(*tt->seen))) {
			htab__remove(tt->fns, tt->key.buf, tt->key.len);
			return -ENOMEM;
		}
		/* New rows start at the end; the id is the row's index at first. */
		tt->seen[tt->nr_fn] = 0;
		tt->at[tt->nr_fn] = (uint32_t)tt->nr_fn;
		tt->t.rows[tt->nr_fn] = (struct top_row){ .name = f->name,
							  .module = f->module ? mod : NULL,
							  .kind = f->kind,
							  .id = (uint32_t)tt->nr_fn };
		e->value = (void *)(uintptr_t)tt->nr_fn++;
	}
	return (long)(uintptr_t)e->value;
}

/* p's cache, sized for what p holds now (profiles grow between updates). */
static struct pcache *pcache_of(struct toptable *tt, const struct profile *p)
{
	struct pcache *c = NULL;

	for (size_t i = 0; i < tt->nr_pc && !c; i++)
		if (tt->pc[i].p == p)
			c = &tt->pc[i];
	if (!c) {
		if (array_grow((void **)&tt->pc, &tt->cap_pc, tt->nr_pc + 1, sizeof(*tt->pc)))
			return NULL;
		c = &tt->pc[tt->nr_pc++];
		*c = (struct pcache){ .p = p };
	}
	if (grow_zeroed((void **)&c->fn_of, &c->cap_fn_of, profile__nr_frames(p) + 1,
			sizeof(*c->fn_of)) ||
	    grow_zeroed((void **)&c->proc_of, &c->cap_proc_of, profile__nr_samples(p) + 1,
			sizeof(*c->proc_of)))
		return NULL;
	return c;
}

static int count_proc(struct toptable *tt, const struct psample *s, uint64_t count, bool sub,
		      uint32_t *cached)
{
	struct sbuf *k = &tt->key;

	if (!*cached) {
		struct htab_entry *e;
		bool created;

		sbuf_reset(k);
		if (sbuf_add(k, (const char *)&s->pid, sizeof(s->pid)) ||
		    sbuf_puts(k, s->comm ? s->comm : ""))
			return -ENOMEM;
		e = htab__upsert(tt->procs, k->buf, k->len, &created);
		if (!e)
			return -ENOMEM;
		if (created) {
			if (array_grow((void **)&tt->proc, &tt->cap_proc, tt->nr_proc + 1,
				       sizeof(*tt->proc))) {
				htab__remove(tt->procs, k->buf, k->len);
				return -ENOMEM;
			}
			tt->proc[tt->nr_proc] = (struct top_proc){ .pid = s->pid,
								   .comm = s->comm,
								   .container = s->container };
			e->value = (void *)(uintptr_t)tt->nr_proc++;
		}
		*cached = (uint32_t)(uintptr_t)e->value + 1;
	}
	if (sub)
		tt->proc[*cached - 1].samples -= count;
	else
		tt->proc[*cached - 1].samples += count;
	return 0;
}

/* Sample idx of c's profile gained count (sub: lost it). */
static int count_sample(struct toptable *tt, struct pcache *c, uint32_t idx, uint64_t count,
			bool sub)
{
	const struct profile *p = c->p;
	const struct psample *s = profile__sample(p, idx);
	const uint32_t *fr;
	uint32_t n, lo, hi;
	uint64_t serial;
	int err;

	err = count_proc(tt, s, count, sub, &c->proc_of[idx]);
	if (err)
		return err;
	if (sub)
		count = -count; /* the sums below wrap back: unsigned arithmetic */
	tt->samples += count;
	fr = profile__stack_get(p, s->stack, &n);
	frame_span(p, fr, n, tt->frames, &lo, &hi);
	if (lo >= hi) {
		tt->no_frames += count;
		return 0;
	}
	serial = ++tt->serial;
	for (uint32_t j = lo; j < hi; j++) {
		uint32_t r = fr[j] < c->cap_fn_of ? c->fn_of[fr[j]] : 0;

		if (!r) {
			long nr;

			if (fr[j] >= c->cap_fn_of)
				return -EINVAL; /* a frame the profile does not hold */
			nr = fn_of(tt, profile__frame_get(p, fr[j]));
			if (nr < 0)
				return (int)nr;
			r = c->fn_of[fr[j]] = (uint32_t)nr + 1;
		}
		r--;
		if (j == hi - 1)
			tt->t.rows[tt->at[r]].self += count;
		if (tt->seen[r] != serial) {
			tt->seen[r] = serial;
			tt->t.rows[tt->at[r]].total += count;
		}
	}
	return 0;
}

static int count_slice(struct toptable *tt, const struct profile *p, const struct top_delta *d,
		       size_t n, const struct top_view *v, bool sub)
{
	size_t m = p ? (d ? n : profile__nr_samples(p)) : 0;
	struct pcache *c;
	int err = 0;

	if (!m)
		return 0;
	c = pcache_of(tt, p);
	if (!c)
		return -ENOMEM;
	for (size_t j = 0; j < m && !err; j++) {
		uint32_t idx = d ? d[j].sample : (uint32_t)j;
		const struct psample *s = profile__sample(p, idx);
		uint64_t count = d ? d[j].count : s ? s->count : 0;

		if (!s || !count || !toptable__matches(v, s))
			continue;
		err = count_sample(tt, c, idx, count, sub);
	}
	return err;
}

static int cmp_name(const struct top_row *x, const struct top_row *y)
{
	int c = strcmp(x->name, y->name);

	if (!c)
		c = strcmp(x->module ? x->module : "", y->module ? y->module : "");
	return c ? c : (x->kind > y->kind) - (x->kind < y->kind);
}

static int cmp_self(const struct top_row *x, const struct top_row *y)
{
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return cmp_name(x, y);
}

static int cmp_total(const struct top_row *x, const struct top_row *y)
{
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return cmp_name(x, y);
}

static int cmp_self_rows(const void *a, const void *b)
{
	return cmp_self(a, b);
}

static int cmp_total_rows(const void *a, const void *b)
{
	return cmp_total(a, b);
}

/* Rows i and j swap places. */
static void swap_rows(struct toptable *tt, size_t i, size_t j)
{
	struct top_row r = tt->t.rows[i];

	tt->t.rows[i] = tt->t.rows[j];
	tt->t.rows[j] = r;
	tt->at[tt->t.rows[i].id] = (uint32_t)i;
	tt->at[r.id] = (uint32_t)j;
}

/*
 * The first k rows in order, every later row after them (in no order):
 * only they are shown. From the last order an insertion sort of the first
 * k is about one comparison a row when counts moved a little (a refresh),
 * then each later row is compared with the k-th and swapped in if it goes
 * before it. Past a budget of moves, or with all set, a full sort. Rows with
 * no samples go last.
 */
static void sort_rows(struct toptable *tt, bool all)
{
	int (*cmp)(const struct top_row *, const struct top_row *) =
		tt->sort == TOP_SORT_TOTAL ? cmp_total : cmp_self;
	struct top_row *rows = tt->t.rows;
	size_t n = tt->nr_fn, k = tt->limit && tt->limit < n ? tt->limit : n;
	size_t budget = 4 * n + 64;

	for (size_t i = 1; i < n && !all; i++) {
		size_t j = i;
		struct top_row r;

		if (i >= k) { /* after the first k: in them if it goes before the k-th */
			if (cmp(&rows[k - 1], &rows[i]) <= 0)
				continue;
			swap_rows(tt, k - 1, i);
			j = k - 1;
		}
		if (!j || cmp(&rows[j - 1], &rows[j]) <= 0)
			continue;
		r = rows[j];
		while (j > 0 && cmp(&rows[j - 1], &r) > 0) {
			rows[j] = rows[j - 1];
			tt->at[rows[j].id] = (uint32_t)j;
			j--;
			if (!budget--) {
				all = true;
				break;
			}
		}
		rows[j] = r;
		tt->at[r.id] = (uint32_t)j;
	}
	if (all && n > 1) {
		qsort(rows, n, sizeof(*rows),
		      tt->sort == TOP_SORT_TOTAL ? cmp_total_rows : cmp_self_rows);
		for (size_t i = 0; i < n; i++)
			tt->at[rows[i].id] = (uint32_t)i;
	}
	while (k > 0 && !rows[k - 1].total)
		k--;
	tt->t.nr = k;
}

/* The order of processes (ids into tt's array); total orders, so an update
 * sorts to what a build from nothing sorts to. */

static int cmp_proc_ids(const void *a, const void *b, void *ctx)
{
	const struct toptable *tt = ctx;
	const struct top_proc *x = &tt->proc[*(const uint32_t *)a];
	const struct top_proc *y = &tt->proc[*(const uint32_t *)b];

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->comm ? x->comm : "", y->comm ? y->comm : "");
}

static bool proc_live(const struct toptable *tt, uint32_t id)
{
	return tt->proc[id].samples > 0;
}

/*
 * o brought to the live items of [0, nr), sorted. From the last order an
 * insertion sort is about one comparison an item (counts move a little
 * between refreshes); past a budget of moves, or with all set, a full sort.
 */
static int order_refresh(struct toptable *tt, struct order *o, size_t nr,
			 bool (*live)(const struct toptable *, uint32_t),
			 int (*cmp)(const void *, const void *, void *), bool all)
{
	size_t k = 0, budget = 4 * nr + 64;

	if (grow_zeroed((void **)&o->listed, &o->cap_listed, nr, sizeof(*o->listed)) ||
	    array_grow((void **)&o->ids, &o->cap, nr, sizeof(*o->ids)))
		return -ENOMEM;
	for (size_t i = 0; i < o->nr; i++) {
		uint32_t id = o->ids[i];

		if (live(tt, id))
			o->ids[k++] = id;
		else
			o->listed[id] = false;
	}
	o->nr = k;
	for (uint32_t id = 0; id < nr; id++)
		if (!o->listed[id] && live(tt, id)) {
			o->ids[o->nr++] = id;
			o->listed[id] = true;
		}
	for (size_t i = 1; i < o->nr && !all; i++) {
		uint32_t id = o->ids[i];
		size_t j = i;

		while (j > 0 && cmp(&o->ids[j - 1], &id, tt) > 0) {
			o->ids[j] = o->ids[j - 1];
			j--;
			if (!budget--) {
				all = true;
				break;
			}
		}
		o->ids[j] = id;
	}
	if (all && o->nr > 1)
		qsort_r(o->ids, o->nr, sizeof(*o->ids), cmp, tt);
	return 0;
}

/* The output table from the counts. */
static int publish(struct toptable *tt, bool all)
{
	struct top_table *t = &tt->t;

	sort_rows(tt, all);
	if (order_refresh(tt, &tt->proc_order, tt->nr_proc, proc_live, cmp_proc_ids, all) ||
	    array_grow((void **)&t->procs, &tt->cap_procs, tt->proc_order.nr + 1,
		       sizeof(*t->procs)))
		return -ENOMEM;
	for (size_t i = 0; i < tt->proc_order.nr; i++)
		t->procs[i] = tt->proc[tt->proc_order.ids[i]];
	t->nr_procs = tt->proc_order.nr;
	t->samples = tt->samples;
	t->no_frames = tt->no_frames;
	return 0;
}

/* Back to counting nothing (the output empty); arrays kept for reuse. */
static void reset(struct toptable *tt)
{
	htab__free(tt->fns);
	htab__free(tt->procs);
	tt->fns = tt->procs = NULL;
	for (size_t i = 0; i < tt->nr_pc; i++) {
		free(tt->pc[i].fn_of);
		free(tt->pc[i].proc_of);
	}
	tt->nr_pc = tt->nr_fn = tt->nr_proc = tt->nr_in = 0;
	tt->proc_order.nr = 0;
	if (tt->proc_order.listed)
		memset(tt->proc_order.listed, 0, tt->proc_order.cap_listed);
	tt->samples = tt->no_frames = 0;
	tt->followed = false;
	tt->t.nr = tt->t.nr_procs = 0;
	tt->t.samples = tt->t.no_frames = 0;
}

static bool followable(const struct top_slice *sl)
{
	return sl->id && sl->p && sl->d;
}

static bool same_view(const struct toptable *tt, const struct top_view *v)
{
	const char *f = v->filter && *v->filter ? v->filter : NULL;

	return tt->zoom_pid == v->zoom_pid && tt->frames == v->frames &&
	       (f && tt->filter ? !strcmp(f, tt->filter) : f == tt->filter);
}

/*
 * Whether the counts can go from in[] to slices by adding and taking away:
 * every slice followed, ids ascending, a slice kept the same, and every
 * profile counted still in the window.
 */
static bool can_follow(const struct toptable *tt, const struct top_slice *slices, size_t n)
{
	size_t i = 0;

	if (!tt->followed)
		return false;
	for (size_t j = 0; j < n; j++) {
		const struct top_slice *sl = &slices[j];

		if (!followable(sl) || (j && sl->id <= slices[j - 1].id))
			return false;
		while (i < tt->nr_in && tt->in[i].id < sl->id)
			i++;
		if (i < tt->nr_in && tt->in[i].id == sl->id &&
		    (tt->in[i].p != sl->p || tt->in[i].d != sl->d || tt->in[i].n != sl->n))
			return false;
	}
	for (size_t k = 0; k < tt->nr_pc; k++) {
		bool found = false;

		for (size_t j = 0; j < n && !found; j++)
			found = slices[j].p == tt->pc[k].p;
		if (!found)
			return false;
	}
	return true;
}

static int count_all(struct toptable *tt, const struct top_slice *slices, size_t n,
		     const struct top_view *v)
{
	bool followed = true;
	int err = 0;

	reset(tt);
	free(tt->filter);
	tt->filter = NULL;
	if (v->filter && *v->filter && !(tt->filter = strdup(v->filter)))
		return -ENOMEM;
	tt->zoom_pid = v->zoom_pid;
	tt->frames = v->frames;
	tt->fns = htab__new();
	tt->procs = htab__new();
	if (!tt->fns || !tt->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		followed &= followable(&slices[i]) && (!i || slices[i].id > slices[i - 1].id);
		err = count_slice(tt, slices[i].p, slices[i].d, slices[i].n, v, false);
	}
	if (!err && followed && array_grow((void **)&tt->in, &tt->cap_in, n + 1, sizeof(*tt->in)))
		err = -ENOMEM;
	if (err || !followed)
		return err;
	for (size_t i = 0; i < n; i++)
		tt->in[i] = (struct counted){ slices[i].id, slices[i].p, slices[i].d, slices[i].n };
	tt->nr_in = n;
	tt->followed = true;
	return 0;
}

/* From in[] to slices (can_follow said it can). */
static int follow(struct toptable *tt, const struct top_slice *slices, size_t n,
		  const struct top_view *v)
{
	size_t i = 0, j = 0;
	int err = 0;

	/* Taken away first, added after: both lists are by id. */
	while (i < tt->nr_in && !err) {
		if (j < n && slices[j].id < tt->in[i].id) {
			j++;
		} else if (j < n && slices[j].id == tt->in[i].id) {
			i++;
			j++;
		} else {
			err = count_slice(tt, tt->in[i].p, tt->in[i].d, tt->in[i].n, v, true);
			i++;
		}
	}
	for (i = 0, j = 0; j < n && !err; j++) {
		while (i < tt->nr_in && tt->in[i].id < slices[j].id)
			i++;
		if (i < tt->nr_in && tt->in[i].id == slices[j].id)
			continue;
		err = count_slice(tt, slices[j].p, slices[j].d, slices[j].n, v, false);
	}
	if (!err && array_grow((void **)&tt->in, &tt->cap_in, n + 1, sizeof(*tt->in)))
		err = -ENOMEM;
	if (err)
		return err;
	for (i = 0; i < n; i++)
		tt->in[i] = (struct counted){ slices[i].id, slices[i].p, slices[i].d, slices[i].n };
	tt->nr_in = n;
	return 0;
}

struct toptable *toptable__new(void)
{
	return calloc(1, sizeof(struct toptable));
}

void toptable__delete(struct toptable *tt)
{
	if (!tt)
		return;
	reset(tt);
	toptable__free(&tt->t);
	free(tt->at);
	free(tt->seen);
	free(tt->proc);
	free(tt->pc);
	free(tt->in);
	free(tt->proc_order.ids);
	free(tt->proc_order.listed);
	free(tt->filter);
	sbuf_free(&tt->key);
	free(tt);
}

int toptable__update(struct toptable *tt, const struct top_slice *slices, size_t n,
		     const struct top_view *v)
{
	bool all = !same_view(tt, v) || !can_follow(tt, slices, n);
	int err;

	tt->updates++;
	tt->recounts += all;
	err = all ? count_all(tt, slices, n, v) : follow(tt, slices, n, v);
	if (!err) {
		all |= tt->sort != v->sort || tt->limit != v->rows;
		tt->sort = v->sort;
		tt->limit = v->rows;
		err = publish(tt, all);
	}
	if (err)
		reset(tt);
	return err;
}

const struct top_table *toptable__table(const struct toptable *tt)
{
	return &tt->t;
}

void toptable__stats(const struct toptable *tt, uint64_t *updates, uint64_t *recounts)
{
	*updates = tt->updates;
	*recounts = tt->recounts;
}

int toptable__build(struct top_table *t, const struct top_slice *slices, size_t n,
		    const struct top_view *v)
{
	struct toptable *tt = toptable__new();
	int err = tt ? toptable__update(tt, slices, n, v) : -ENOMEM;

	memset(t, 0, sizeof(*t));
	if (!err) {
		*t = tt->t;
		tt->t.rows = NULL;
		tt->t.procs = NULL;
	}
	toptable__delete(tt);
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
