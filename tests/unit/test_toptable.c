// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_toptable.c - what bpfprof top shows: self and total per function
 * across the window's profiles, recursion counted once, the frames toggle
 * (bcc -U/-K semantics: the leaf moves), filters by name, pid and
 * container, zoom, both sort orders, the process list; top's updates (adding
 * the slices that joined the window, taking away those that left) give what
 * a build from nothing gives, and count from nothing when they must.
 */
#include "testutil.h"

#include "base/profile.h"
#include "tui/toptable.h"

/* frames: "name" user (module /bin/app), "name_[k]" kernel. */
static void add_v(struct profile *p, uint32_t pid, const char *comm, const char *container,
		  uint64_t count, int n, const char *const *names)
{
	struct psample s = { .pid = pid, .comm = comm, .container = container };
	uint32_t ids[16];

	assert_true(n <= 16);
	for (int i = 0; i < n; i++) {
		const char *name = names[i];
		size_t l = strlen(name);
		int64_t id;

		if (l > 4 && !strcmp(name + l - 4, "_[k]")) {
			char buf[64];

			snprintf(buf, sizeof(buf), "%.*s", (int)(l - 4), name);
			id = profile__frame(p, FRAME_KERNEL, buf, NULL);
		} else {
			id = profile__frame(p, FRAME_USER, name, "/bin/app");
		}
		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	assert_int_equal(profile__add(p, &s, ids, (uint32_t)n, count), 0);
}

static void add(struct profile *p, uint32_t pid, const char *comm, const char *container,
		uint64_t count, int n, ...)
{
	const char *names[16];
	va_list ap;

	assert_true(n <= 16);
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		names[i] = va_arg(ap, const char *);
	va_end(ap);
	add_v(p, pid, comm, container, count, n, names);
}

static const struct top_row *row(const struct top_table *t, const char *name)
{
	for (size_t i = 0; i < t->nr; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	return NULL;
}

static struct profile *profs[2];
static struct top_slice slices[2];
static void setup_window(void);
static void teardown_window(void);

static void setup_window(void)
{
	profs[0] = profile__new();
	profs[1] = profile__new();
	/* Second 1: app (pid 10) runs work and recurses; db (pid 20, container) reads. */
	add(profs[0], 10, "app", NULL, 6, 3, "main", "work", "leaf");
	add(profs[0], 10, "app", NULL, 2, 4, "main", "rec", "rec", "rec");
	add(profs[0], 20, "db", "abcdef123456", 3, 4, "main", "read", "sys_read_[k]", "copy_[k]");
	/* Second 2: more of the same, and a kernel thread (no user frames). */
	add(profs[1], 10, "app", NULL, 4, 3, "main", "work", "leaf");
	add(profs[1], 0, "kworker/0:1", NULL, 5, 1, "worker_thread_[k]");
	slices[0] = (struct top_slice){ profs[0], NULL, 0, 0 };
	slices[1] = (struct top_slice){ profs[1], NULL, 0, 0 };
}

/* A slice of what some samples gained: the catalog form top uses. */
static void test_deltas(void **state)
{
	struct top_view v = { 0 };
	struct top_delta d[2];
	struct top_slice sl[2];
	struct top_table t;

	setup_window();
	/* Second 1: sample 0 (app main;work;leaf) gained 2; second 2: sample 2 (db) 1, sample 0 3.
	 */
	d[0] = (struct top_delta){ 0, 2 };
	sl[0] = (struct top_slice){ profs[0], &d[0], 1, 0 };
	sl[1] = (struct top_slice){ profs[0], (struct top_delta[]){ { 2, 1 }, { 0, 3 } }, 2, 0 };
	assert_int_equal(toptable__build(&t, sl, 2, &v), 0);
	assert_int_equal(t.samples, 6);
	assert_int_equal(row(&t, "leaf")->self, 5);
	assert_int_equal(row(&t, "copy")->self, 1);
	assert_int_equal(row(&t, "main")->total, 6);
	assert_int_equal(t.nr_procs, 2);
	toptable__free(&t);
	/* A zero delta, and an index past the profile, count nothing. */
	d[0] = (struct top_delta){ 1, 0 };
	d[1] = (struct top_delta){ 99, 5 };
	sl[0] = (struct top_slice){ profs[0], d, 2, 0 };
	assert_int_equal(toptable__build(&t, sl, 1, &v), 0);
	assert_int_equal(t.samples, 0);
	toptable__free(&t);
	teardown_window();
}

static void teardown_window(void)
{
	profile__free(profs[0]);
	profile__free(profs[1]);
}

static void test_self_total_and_sort(void **state)
{
	struct top_view v = { 0 };
	struct top_table t;

	setup_window();
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 6 + 2 + 3 + 4 + 5);
	assert_int_equal(row(&t, "leaf")->self, 10);
	assert_int_equal(row(&t, "leaf")->total, 10);
	assert_int_equal(row(&t, "rec")->self, 2);
	assert_int_equal(row(&t, "rec")->total, 2); /* recursion: once per stack */
	/* Both processes' main is one function (same module and name). */
	assert_int_equal(row(&t, "main")->total, 15);
	assert_int_equal(row(&t, "main")->self, 0);
	assert_int_equal(row(&t, "copy")->self, 3);
	assert_int_equal(row(&t, "copy")->kind, FRAME_KERNEL);
	assert_null(row(&t, "copy")->module);
	assert_string_equal(row(&t, "leaf")->module, "app");
	/* Self order: leaf 10, worker_thread 5, copy 3, rec 2 ... */
	assert_string_equal(t.rows[0].name, "leaf");
	assert_string_equal(t.rows[1].name, "worker_thread");
	for (size_t i = 1; i < t.nr; i++)
		assert_true(t.rows[i - 1].self >= t.rows[i].self);
	/* Processes by samples. */
	assert_int_equal(t.nr_procs, 3);
	assert_int_equal(t.procs[0].pid, 10);
	assert_int_equal(t.procs[0].samples, 12);
	toptable__free(&t);

	v.sort = TOP_SORT_TOTAL;
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_string_equal(t.rows[0].name, "main");
	for (size_t i = 1; i < t.nr; i++)
		assert_true(t.rows[i - 1].total >= t.rows[i].total);
	{
		/* The first rows only (those shown): the same as the first of all. */
		struct top_table all = t;

		v.rows = 3;
		assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
		assert_int_equal(t.nr, 3);
		for (size_t i = 0; i < 3; i++)
			assert_string_equal(t.rows[i].name, all.rows[i].name);
		toptable__free(&t);
		v.rows = 100;
		assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
		assert_int_equal(t.nr, all.nr);
		toptable__free(&all);
	}
	toptable__free(&t);
	teardown_window();
}

static void test_frames_toggle(void **state)
{
	struct top_view v = { .frames = TOP_FRAMES_USER };
	struct top_table t;

	setup_window();
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	/* -U: db's samples now end in read; the kernel thread has no frames left. */
	assert_int_equal(row(&t, "read")->self, 3);
	assert_null(row(&t, "copy"));
	assert_null(row(&t, "worker_thread"));
	assert_int_equal(t.no_frames, 5);
	assert_int_equal(t.samples, 20);
	toptable__free(&t);

	v.frames = TOP_FRAMES_KERNEL;
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	for (size_t i = 0; i < t.nr; i++)
		assert_int_equal(t.rows[i].kind, FRAME_KERNEL);
	assert_int_equal(row(&t, "copy")->self, 3);
	assert_int_equal(row(&t, "sys_read")->total, 3);
	assert_int_equal(t.no_frames, 12); /* app's samples have no kernel frames */
	toptable__free(&t);
	teardown_window();
}

static void test_filter_and_zoom(void **state)
{
	struct top_view v = { .filter = "ap" };
	struct top_table t;

	setup_window();
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 12); /* a part of "app" */
	assert_null(row(&t, "copy"));
	toptable__free(&t);

	v.filter = "20"; /* a pid */
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 3);
	assert_int_equal(t.nr_procs, 1);
	toptable__free(&t);

	v.filter = "abcdef"; /* the start of a container id */
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 3);
	toptable__free(&t);

	v.filter = "123456"; /* not the start of one */
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 0);
	assert_int_equal(t.nr, 0);
	toptable__free(&t);

	v.filter = "";
	v.zoom_pid = 10;
	assert_int_equal(toptable__build(&t, slices, 2, &v), 0);
	assert_int_equal(t.samples, 12);
	assert_int_equal(row(&t, "main")->total, 12);
	toptable__free(&t);

	/* Nothing in the window. */
	assert_int_equal(toptable__build(&t, NULL, 0, &v), 0);
	assert_int_equal(t.nr, 0);
	toptable__free(&t);
	teardown_window();
}

/* --- updates ------------------------------------------------------------------------ */

static int strcmp_null(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) : a != b;
}

/* Same rows and processes in the same order (names as strings: an update may
 * point at another profile's copy of a name). */
static void assert_tables_equal(const struct top_table *a, const struct top_table *b)
{
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->no_frames, b->no_frames);
	assert_int_equal(a->nr, b->nr);
	for (size_t i = 0; i < a->nr; i++) {
		const struct top_row *x = &a->rows[i], *y = &b->rows[i];

		assert_string_equal(x->name, y->name);
		assert_int_equal(strcmp_null(x->module, y->module), 0);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->self, y->self);
		assert_int_equal(x->total, y->total);
	}
	assert_int_equal(a->nr_procs, b->nr_procs);
	for (size_t i = 0; i < a->nr_procs; i++) {
		const struct top_proc *x = &a->procs[i], *y = &b->procs[i];

		assert_int_equal(x->pid, y->pid);
		assert_int_equal(strcmp_null(x->comm, y->comm), 0);
		assert_int_equal(strcmp_null(x->container, y->container), 0);
		assert_int_equal(x->samples, y->samples);
	}
}

/* tt's table is what a build of the same window gives. */
static void assert_as_built(const struct toptable *tt, const struct top_slice *sl, size_t n,
			    const struct top_view *v)
{
	struct top_table t;

	assert_int_equal(toptable__build(&t, sl, n, v), 0);
	assert_tables_equal(toptable__table(tt), &t);
	toptable__free(&t);
}

static uint64_t recounts(const struct toptable *tt)
{
	uint64_t u, r;

	toptable__stats(tt, &u, &r);
	return r;
}

/* When an update adds and takes away, and when it must count from nothing. */
static void test_update_follows(void **state)
{
	struct toptable *tt = toptable__new();
	struct top_view v = { 0 };
	struct top_delta d1[] = { { 0, 2 }, { 2, 1 } }, d2[] = { { 1, 2 } }, d3[] = { { 0, 3 } };
	struct top_delta d4[] = { { 1, 4 }, { 0, 1 } };
	struct top_slice w[4];

	assert_non_null(tt);
	setup_window();
	w[0] = (struct top_slice){ profs[0], d1, 2, 1 };
	w[1] = (struct top_slice){ profs[0], d2, 1, 2 };
	w[2] = (struct top_slice){ profs[0], d3, 1, 3 };
	w[3] = (struct top_slice){ profs[1], d4, 2, 4 };
	assert_int_equal(toptable__update(tt, w, 2, &v), 0);
	assert_int_equal(recounts(tt), 1); /* the first */
	assert_as_built(tt, w, 2, &v);
	/* Slice 1 leaves, 3 joins: followed. leaf went from 2 to 3. */
	assert_int_equal(toptable__update(tt, w + 1, 2, &v), 0);
	assert_int_equal(recounts(tt), 1);
	assert_as_built(tt, w + 1, 2, &v);
	assert_int_equal(row(toptable__table(tt), "leaf")->self, 3);
	assert_null(row(toptable__table(tt), "copy")); /* db's sample left with slice 1 */
	assert_int_equal(toptable__table(tt)->nr_procs, 1);
	/* Another profile joins: followed. */
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 1);
	assert_as_built(tt, w + 1, 3, &v);
	/* The sort alone: sorted again, not counted again. */
	v.sort = TOP_SORT_TOTAL;
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 1);
	assert_as_built(tt, w + 1, 3, &v);
	assert_string_equal(toptable__table(tt)->rows[0].name, "main");
	/* A filter: counted again. */
	v.filter = "kworker";
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 2);
	assert_as_built(tt, w + 1, 3, &v);
	assert_int_equal(toptable__table(tt)->samples, 4);
	/* The same filter in another buffer: the same view. */
	v.filter = (char[]){ "kworker" };
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 2);
	v.filter = NULL;
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 3);
	/* The frames, and the zoom: counted again. */
	v.frames = TOP_FRAMES_KERNEL;
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 4);
	assert_as_built(tt, w + 1, 3, &v);
	v.zoom_pid = 10;
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 5);
	assert_as_built(tt, w + 1, 3, &v);
	v = (struct top_view){ 0 };
	assert_int_equal(toptable__update(tt, w + 1, 3, &v), 0);
	assert_int_equal(recounts(tt), 6);
	/* profs[0] leaves the window: its strings may go, so counted again. */
	assert_int_equal(toptable__update(tt, w + 3, 1, &v), 0);
	assert_int_equal(recounts(tt), 7);
	assert_as_built(tt, w + 3, 1, &v);
	/* A slice that cannot be followed (id 0; no deltas). */
	w[3].id = 0;
	assert_int_equal(toptable__update(tt, w + 3, 1, &v), 0);
	assert_int_equal(recounts(tt), 8);
	w[3] = (struct top_slice){ profs[1], NULL, 0, 5 };
	assert_int_equal(toptable__update(tt, w + 3, 1, &v), 0);
	assert_int_equal(recounts(tt), 9);
	assert_as_built(tt, w + 3, 1, &v);
	/* An id reused with other deltas: counted again, not followed wrongly. */
	w[3] = (struct top_slice){ profs[1], d4, 2, 6 };
	assert_int_equal(toptable__update(tt, w + 3, 1, &v), 0);
	assert_int_equal(recounts(tt), 10);
	w[3] = (struct top_slice){ profs[1], d4, 1, 6 };
	assert_int_equal(toptable__update(tt, w + 3, 1, &v), 0);
	assert_int_equal(recounts(tt), 11);
	assert_as_built(tt, w + 3, 1, &v);
	/* An empty window: followed, nothing left. */
	assert_int_equal(toptable__update(tt, NULL, 0, &v), 0);
	assert_int_equal(toptable__table(tt)->nr, 0);
	assert_int_equal(toptable__table(tt)->samples, 0);
	toptable__delete(tt);
	toptable__delete(NULL);
	teardown_window();
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/* A profile drains go into, as top keeps one (a catalog). */
struct cat {
	struct profile *p;
	uint64_t prev[512]; /* each sample's count at the last drain */
	int refs;	    /* slices of it, + 1 while drains go into it */
};

struct wslice {
	struct top_slice s;
	struct cat *c;
};

static void cat_put(struct cat *c)
{
	if (c && !--c->refs) {
		profile__free(c->p);
		free(c);
	}
}

/*
 * top's window at random: drains of random stacks (processes that exec,
 * recursion, kernel and user frames) into catalogs renewed every few drains,
 * a window of 1 to 6 slices, view changes now and then; after each update
 * the table is what a build of the same window gives. Most updates follow.
 */
static void test_update_random(void **state)
{
	static const char *const names[] = { "main", "work",	     "leaf",	 "rec",	   "io",
					     "hash", "sys_read_[k]", "copy_[k]", "irq_[k]" };
	static const struct {
		uint32_t pid;
		const char *comm, *container;
	} procs[] = { { 10, "app", NULL },
		      { 10, "app2", NULL },
		      { 20, "db", "abcdef123456" },
		      { 30, "app", NULL },
		      { 0, "kworker/0:1", NULL } };
	static const char *const filters[] = { NULL, "app", "20", "abc", "zzz", "10" };
	struct toptable *tt = toptable__new();
	struct wslice win[16];
	size_t nr = 0;
	struct cat *cur = NULL;
	struct top_view v = { 0 };
	uint64_t ids = 0, updates, nr_recounts;

	assert_non_null(tt);
	for (int step = 0; step < 600; step++) {
		struct top_delta *d;
		size_t nd = 0, n, keep;

		if (!cur || step % 7 == 0) {
			cat_put(cur);
			cur = calloc(1, sizeof(*cur));
			assert_non_null(cur);
			cur->p = profile__new();
			assert_non_null(cur->p);
			cur->refs = 1;
		}
		for (uint32_t k = 1 + rnd(6); k > 0; k--) {
			const char *stack[8];
			int depth = 1 + (int)rnd(8), pi = (int)rnd(5);

			for (int i = 0; i < depth; i++)
				stack[i] = names[procs[pi].pid ? rnd(9) : 6 + rnd(3)];
			add_v(cur->p, procs[pi].pid, procs[pi].comm, procs[pi].container,
			      1 + rnd(5), depth, stack);
		}
		n = profile__nr_samples(cur->p);
		assert_true(n <= 512);
		d = calloc(n + 1, sizeof(*d));
		assert_non_null(d);
		for (size_t i = 0; i < n; i++) {
			uint64_t c = profile__sample(cur->p, i)->count;

			if (c != cur->prev[i])
				d[nd++] = (struct top_delta){ (uint32_t)i, c - cur->prev[i] };
			cur->prev[i] = c;
		}
		assert_true(nr < 16); /* the window keeps at most 6 */
		cur->refs++;
		win[nr++] = (struct wslice){ { cur->p, d, nd, rnd(40) ? ++ids : 0 }, cur };
		if (rnd(10) == 0) {
			v.filter = filters[rnd(6)];
			v.zoom_pid = rnd(4) ? 0 : procs[rnd(5)].pid;
			v.frames = (enum top_frames)rnd(3);
		}
		if (rnd(10) == 0)
			v.sort = (enum top_sort)rnd(2);
		if (rnd(10) == 0) /* the rows shown: a resize */
			v.rows = (size_t[]){ 0, 1, 2, 3, 5, 100 }[rnd(6)];
		/* The window keeps 1 to 6; those that left are freed after the update. */
		keep = 1 + rnd(6);
		keep = keep < nr ? keep : nr;
		{
			struct top_slice sl[16];

			for (size_t i = 0; i < keep; i++)
				sl[i] = win[nr - keep + i].s;
			assert_int_equal(toptable__update(tt, sl, keep, &v), 0);
			assert_as_built(tt, sl, keep, &v);
		}
		for (size_t i = 0; i < nr - keep; i++) {
			free((void *)win[i].s.d);
			cat_put(win[i].c);
		}
		memmove(win, win + (nr - keep), keep * sizeof(*win));
		nr = keep;
	}
	toptable__stats(tt, &updates, &nr_recounts);
	assert_int_equal(updates, 600);
	/* View changes (~1 in 10), catalogs leaving (1 in 7), untracked slices: the
	 * rest, most of them, followed. */
	assert_true(nr_recounts > 60 && nr_recounts < 400);
	for (size_t i = 0; i < nr; i++) {
		free((void *)win[i].s.d);
		cat_put(win[i].c);
	}
	cat_put(cur);
	toptable__delete(tt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_and_sort), cmocka_unit_test(test_frames_toggle),
		cmocka_unit_test(test_filter_and_zoom),	    cmocka_unit_test(test_deltas),
		cmocka_unit_test(test_update_follows),	    cmocka_unit_test(test_update_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
