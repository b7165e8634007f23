// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_toptable.c - what bpfprof top shows: self and total per function
 * across the window's profiles, recursion counted once, the frames toggle
 * (bcc -U/-K semantics: the leaf moves), filters by name, pid and
 * container, zoom, both sort orders, the process list.
 */
#include "testutil.h"

#include "base/profile.h"
#include "cmd/toptable.h"

/* frames: "name" user (module /bin/app), "name_[k]" kernel. */
static void add(struct profile *p, uint32_t pid, const char *comm, const char *container,
		uint64_t count, int n, ...)
{
	struct psample s = {.pid = pid, .comm = comm, .container = container};
	uint32_t ids[16];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *name = va_arg(ap, const char *);
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
	va_end(ap);
	assert_int_equal(profile__add(p, &s, ids, (uint32_t)n, count), 0);
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
	slices[0] = (struct top_slice){profs[0], NULL, 0};
	slices[1] = (struct top_slice){profs[1], NULL, 0};
}

/* A slice of what some samples gained: the catalog form top uses. */
static void test_deltas(void **state)
{
	struct top_view v = {0};
	struct top_delta d[2];
	struct top_slice sl[2];
	struct top_table t;

	setup_window();
	/* Second 1: sample 0 (app main;work;leaf) gained 2; second 2: sample 2 (db) 1, sample 0 3.
	 */
	d[0] = (struct top_delta){0, 2};
	sl[0] = (struct top_slice){profs[0], &d[0], 1};
	sl[1] = (struct top_slice){profs[0], (struct top_delta[]){{2, 1}, {0, 3}}, 2};
	assert_int_equal(toptable__build(&t, sl, 2, &v), 0);
	assert_int_equal(t.samples, 6);
	assert_int_equal(row(&t, "leaf")->self, 5);
	assert_int_equal(row(&t, "copy")->self, 1);
	assert_int_equal(row(&t, "main")->total, 6);
	assert_int_equal(t.nr_procs, 2);
	toptable__free(&t);
	/* A zero delta, and an index past the profile, count nothing. */
	d[0] = (struct top_delta){1, 0};
	d[1] = (struct top_delta){99, 5};
	sl[0] = (struct top_slice){profs[0], d, 2};
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
	struct top_view v = {0};
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
	toptable__free(&t);
	teardown_window();
}

static void test_frames_toggle(void **state)
{
	struct top_view v = {.frames = TOP_FRAMES_USER};
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
	struct top_view v = {.filter = "ap"};
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_and_sort),
		cmocka_unit_test(test_frames_toggle),
		cmocka_unit_test(test_filter_and_zoom),
		cmocka_unit_test(test_deltas),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
