// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_count_targets.c - bpfprof count's targets beyond -p: "kernel:GLOB"
 * patterns (never matching a file's function), the process ids of /proc
 * (procfs__pids) and of a cgroup tree (cgroup__pids: every cgroup.procs
 * below the directory, its walk capped).
 */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/counttab.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"

static void test_kernel_pat(void **state)
{
	struct count_pat p;

	assert_int_equal(counttab__pat_parse("kernel:vfs_*", &p), 0);
	assert_true(p.kernel);
	assert_null(p.lib);
	assert_string_equal(p.func, "vfs_*");
	assert_true(counttab__kpat_match(&p, "vfs_read"));
	assert_false(counttab__kpat_match(&p, "ksys_read"));
	/* never a file's function, whatever the file */
	assert_false(counttab__pat_match(&p, "/usr/lib/libc.so.6", "vfs_read"));
	counttab__pat_free(&p);

	/* a file pattern is never a kernel one */
	assert_int_equal(counttab__pat_parse("libc:vfs_*", &p), 0);
	assert_false(p.kernel);
	assert_false(counttab__kpat_match(&p, "vfs_read"));
	counttab__pat_free(&p);
	assert_int_equal(counttab__pat_parse("kernel:", &p), -EINVAL);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_cgroup_pids(void **state)
{
	char dir[] = "/tmp/bpfprof-cgpids-XXXXXX", path[256];
	uint32_t pids[8];
	size_t n;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	write_file(path, "10\n11\n");
	snprintf(path, sizeof(path), "%s/a", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/a/cgroup.procs", dir);
	write_file(path, "20\nbogus\n0\n99999999999\n");
	snprintf(path, sizeof(path), "%s/a/b", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/a/b/cgroup.procs", dir);
	write_file(path, "30\n");

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(cgroup__pids(fd, pids, 8, &n), 0);
	assert_int_equal(n, 4);
	uint32_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += pids[i];
	assert_int_equal(sum, 10 + 11 + 20 + 30);
	/* at most max */
	assert_int_equal(cgroup__pids(fd, pids, 2, &n), 0);
	assert_int_equal(n, 2);
	close(fd);

	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_procfs_pids(void **state)
{
	uint32_t pids[65536];
	size_t n;
	bool self = false;

	assert_int_equal(procfs__pids("/proc", pids, 65536, &n), 0);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++)
		self |= pids[i] == (uint32_t)getpid();
	assert_true(self);
	assert_int_equal(procfs__pids("/nonexistent-proc", pids, 8, &n), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_pat),
		cmocka_unit_test(test_cgroup_pids),
		cmocka_unit_test(test_procfs_pids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
