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
	fprintf(f,
		"%u (app) S 1 %u %u 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 4242 1000 10 "
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		pid, pid, pid);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "0::/system.slice/docker-" ID ".scope\n");
	fclose(f);
}

/* ... whose /proc/PID/cgroup says text instead. */
static void fake_proc_in(uint32_t pid, const char *text)
{
	char path[128];
	FILE *f;

	fake_proc(pid);
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
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

/*
 * Noticed with their cgroup id: once two processes of a cgroup v2 cgroup
 * were read and agreed, the next ones are labelled without a read (here
 * their files say otherwise, or are gone) - until the cgroup's label is
 * LABELS_CGROUP_GENS sweeps old. Reads that disagree (a process moved
 * between its notice and its read), or a host with v1 hierarchies (they
 * tell processes of one v2 cgroup apart), keep every process read.
 */
static void test_a_cgroup_read_twice_labels_its_next_processes(void **state)
{
	struct ptab_opts o = { .proc_root = root };
	struct ptab *t = ptab__new(&o);
	struct labels *l = labels__new(t, 0);
	const struct cgroup_info *ci;
	const uint32_t pids[] = { 50, 51, 52, 54, 60, 61, 62, 70, 71, 72 };

	(void)state;
	assert_non_null(l);
	fake_proc(50);
	fake_proc(51);
	fake_proc_in(52, "0::/elsewhere\n");
	fake_proc_in(54, "0::/elsewhere\n");
	assert_non_null(labels__note(l, 50, 0, 77));
	assert_non_null(labels__note(l, 51, 0, 77));
	assert_int_equal(labels__cgroup_hits(l), 0);
	ci = labels__note(l, 52, 0, 77);
	assert_non_null(ci);
	assert_string_equal(ci->path, "/system.slice/docker-" ID ".scope");
	assert_string_equal(ci->container_id, ID);
	assert_string_equal(ci->runtime, "docker");
	ci = labels__note(l, 53, 0, 77); /* gone before its notice was taken */
	assert_non_null(ci);
	assert_string_equal(ci->container_id, ID);
	assert_int_equal(labels__cgroup_hits(l), 2);
	assert_null(labels__note(l, 55, 0, 0)); /* no id, no files: nothing */

	/* Disagreeing reads: each process read. */
	fake_proc_in(60, "0::/a\n");
	fake_proc_in(61, "0::/b\n");
	fake_proc_in(62, "0::/c\n");
	assert_string_equal(labels__note(l, 60, 0, 88)->path, "/a");
	assert_string_equal(labels__note(l, 61, 0, 88)->path, "/b");
	assert_string_equal(labels__note(l, 62, 0, 88)->path, "/c");
	/* A hybrid host: the v1 paths differ within one v2 cgroup. */
	fake_proc_in(70, "4:memory:/x\n0::/\n");
	fake_proc_in(71, "4:memory:/x\n0::/\n");
	fake_proc_in(72, "4:memory:/y\n0::/\n");
	assert_string_equal(labels__note(l, 70, 0, 1)->path, "/x");
	assert_string_equal(labels__note(l, 71, 0, 1)->path, "/x");
	assert_string_equal(labels__note(l, 72, 0, 1)->path, "/y");
	assert_int_equal(labels__cgroup_hits(l), 2);

	/* An old agreement is not trusted: read again. */
	for (int i = 0; i < LABELS_CGROUP_GENS; i++)
		labels__sweep(l);
	assert_string_equal(labels__note(l, 54, 0, 77)->path, "/elsewhere");
	assert_int_equal(labels__cgroup_hits(l), 2);
	for (size_t i = 0; i < ARRAY_SIZE(pids); i++)
		unfake_proc(pids[i]);
	labels__free(l);
	ptab__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_30_sweeps_while_few),
		cmocka_unit_test(test_two_sweeps_when_many),
		cmocka_unit_test(test_only_the_process_asked_for),
		cmocka_unit_test(test_a_cgroup_read_twice_labels_its_next_processes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
