// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_labels.c - cgroup labels per process: read once and kept while
 * asked for, kept 30 sweeps unasked while there are at most 1024 entries
 * (two sweeps above that), then read again from the files.
 */
#include "testutil.h"

#include <sys/stat.h>
#include <unistd.h>

#include "proc/labels.h"
#include "proc/ptab.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char root[64];

/* A fake /proc/PID with stat and a docker cgroup. */
static void fake_proc(uint32_t pid)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%u (app) S 1 %u %u 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 4242 1000 10 "
		   "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n", pid, pid, pid);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "0::/system.slice/docker-" ID ".scope\n");
	fclose(f);
}

static void unfake_proc(uint32_t pid)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u", root, pid);
	rmdir(path);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/test_labels.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(root);
}

static void test_kept_30_sweeps_while_few(void **state)
{
	struct ptab_opts o = { .proc_root = root };
	struct ptab *t = ptab__new(&o);
	struct labels *l = labels__new(t, 0);
	const struct cgroup_info *ci;

	assert_non_null(l);
	fake_proc(42);
	ci = labels__get(l, 42, 0);
	assert_non_null(ci);
	assert_string_equal(ci->container_id, ID);
	/* The files are gone, but the entry answers: nothing is read again. */
	unfake_proc(42);
	for (int i = 0; i < 29; i++)
		labels__sweep(l);
	assert_int_equal(labels__count(l), 1);
	ci = labels__get(l, 42, 0);
	assert_non_null(ci);
	assert_string_equal(ci->container_id, ID);
	/* Asked for at sweep 29: kept 30 more, then dropped and read again. */
	for (int i = 0; i < 29; i++)
		labels__sweep(l);
	assert_int_equal(labels__count(l), 1);
	labels__sweep(l);
	assert_int_equal(labels__count(l), 0);
	assert_null(labels__get(l, 42, 0)); /* read again: the process is gone */
	labels__free(l);
	ptab__free(t);
}

static void test_two_sweeps_when_many(void **state)
{
	struct ptab_opts o = { .proc_root = root };
	struct ptab *t = ptab__new(&o);
	struct labels *l = labels__new(t, 0);

	assert_non_null(l);
	/* 1025 processes that do not exist (entries all the same: unlabeled). */
	for (uint32_t pid = 1; pid <= 1025; pid++)
		assert_null(labels__get(l, 100000 + pid, 0));
	assert_int_equal(labels__count(l), 1025);
	labels__sweep(l);
	assert_int_equal(labels__count(l), 1025);
	labels__sweep(l);
	assert_int_equal(labels__count(l), 0);
	labels__free(l);
	ptab__free(t);
}

/* Labels are those of the process a sample came from, not of one that took its pid. */
static void test_only_the_process_asked_for(void **state)
{
	struct ptab_opts o = { .proc_root = root };
	struct ptab *t = ptab__new(&o);
	struct labels *l = labels__new(t, 0);
	uint64_t start = 4242 * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	const struct cgroup_info *ci;

	(void)state;
	assert_non_null(l);
	fake_proc(43); /* started at 4242 ticks */
	assert_null(labels__get(l, 43, start + 1000000000ull));
	ci = labels__get(l, 43, start);
	assert_non_null(ci);
	assert_string_equal(ci->container_id, ID);
	unfake_proc(43);
	labels__free(l);
	ptab__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_30_sweeps_while_few),
		cmocka_unit_test(test_two_sweeps_when_many),
		cmocka_unit_test(test_only_the_process_asked_for),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
