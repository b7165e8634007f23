// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_procmaps.c - /proc/PID/maps parsing, lookup and file classification. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>

#include "proc/procmaps.h"

static void parse_ok(const char *s, struct procmaps *m)
{
	assert_int_equal(procmaps__parse(s, strlen(s), m), 0);
}

static const char sample[] =
	"55d4c3a00000-55d4c3a02000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
	"55d4c3a02000-55d4c3a07000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
	"55d4c4c4c000-55d4c4c6d000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000001000 rw-s 00000000 00:01 1055                       /memfd:jit "
	"(deleted)\n"
	"7f0000001000-7f0000002000 r-xp 00001000 fe:01 42                         /opt/my app/lib "
	"x.so\n"
	"7f0000002000-7f0000003000 r-xp 00000000 fe:01 43                         /tmp/gone.so "
	"(deleted)\n"
	"7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
	"7f0000004000-7f0000005000 rw-p 00000000 00:00 0                          [anon:foo bar]\n"
	"7f0000005000-7f0000006000 rw-s 00000000 00:01 7                          /dev/zero "
	"(deleted)\n"
	"7f0000006000-7f0000007000 r--s 00000000 00:05 5                          "
	"/dev/dri/renderD128\n"
	"7f0000007000-7f0000008000 rw-s 00000000 00:01 32769                      /SYSV00000000 "
	"(deleted)\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static const struct procmap *at(const struct procmaps *m, uint64_t a)
{
	return procmaps__find(m, a);
}

static void test_sample(void **state)
{
	struct procmaps m = {0};
	const struct procmap *pm;

	(void)state;
	parse_ok(sample, &m);
	assert_int_equal(m.nr, 13);
	assert_int_equal(m.bad_lines, 0);

	pm = &m.maps[1];
	assert_true(pm->start == 0x55d4c3a02000ULL && pm->end == 0x55d4c3a07000ULL);
	assert_true(pm->offset == 0x2000);
	assert_int_equal(pm->perms, PROCMAP_R | PROCMAP_X | PROCMAP_P);
	assert_int_equal(pm->dev_major, 0xfe);
	assert_int_equal(pm->dev_minor, 0);
	assert_true(pm->inode == 247134);
	assert_string_equal(pm->path, "/usr/bin/cat");
	assert_false(pm->deleted);
	assert_true(procmap__is_file(pm));
	/* Consecutive mappings of one file share the path string. */
	assert_ptr_equal(m.maps[0].path, m.maps[1].path);

	assert_string_equal(m.maps[2].path, "[heap]");
	assert_false(procmap__is_file(&m.maps[2]));

	pm = &m.maps[3];
	assert_string_equal(pm->path, "/memfd:jit");
	assert_true(pm->deleted);
	assert_int_equal(pm->perms, PROCMAP_R | PROCMAP_W);
	assert_false(procmap__is_file(pm));

	pm = &m.maps[4];
	assert_string_equal(pm->path, "/opt/my app/lib x.so");
	assert_false(pm->deleted);
	assert_true(procmap__is_file(pm));

	pm = &m.maps[5];
	assert_string_equal(pm->path, "/tmp/gone.so");
	assert_true(pm->deleted);
	assert_true(procmap__is_file(pm)); /* file-backed; `deleted` says the path is stale */

	assert_null(m.maps[6].path); /* anonymous, with the kernel's trailing space */
	assert_false(procmap__is_file(&m.maps[6]));
	assert_string_equal(m.maps[7].path, "[anon:foo bar]");
	assert_false(procmap__is_file(&m.maps[7]));
	assert_string_equal(m.maps[8].path, "/dev/zero");
	assert_true(m.maps[8].deleted);
	assert_false(procmap__is_file(&m.maps[8]));
	assert_false(procmap__is_file(&m.maps[9]));
	assert_false(procmap__is_file(&m.maps[10]));
	assert_string_equal(m.maps[11].path, "[vdso]");
	assert_false(procmap__is_file(&m.maps[11]));
	pm = &m.maps[12];
	assert_string_equal(pm->path, "[vsyscall]");
	assert_int_equal(pm->perms, PROCMAP_X | PROCMAP_P);
	assert_true(pm->end == 0xffffffffff601000ULL);
	procmaps__free(&m);
	assert_null(m.maps);
	assert_int_equal(m.nr, 0);
}

static void test_find_boundaries(void **state)
{
	struct procmaps m = {0};

	(void)state;
	parse_ok(sample, &m);
	assert_null(at(&m, 0));
	assert_null(at(&m, 0x55d4c39fffffULL));
	assert_ptr_equal(at(&m, 0x55d4c3a00000ULL), &m.maps[0]); /* start */
	assert_ptr_equal(at(&m, 0x55d4c3a01fffULL), &m.maps[0]); /* end - 1 */
	assert_ptr_equal(at(&m, 0x55d4c3a02000ULL), &m.maps[1]); /* end == next start */
	assert_ptr_equal(at(&m, 0x55d4c3a06fffULL), &m.maps[1]);
	assert_null(at(&m, 0x55d4c3a07000ULL)); /* end, gap follows */
	assert_null(at(&m, 0x55d4c4c4bfffULL));
	assert_ptr_equal(at(&m, 0x55d4c4c4c000ULL), &m.maps[2]);
	assert_ptr_equal(at(&m, 0xffffffffff600000ULL), &m.maps[12]);
	assert_ptr_equal(at(&m, 0xffffffffff600fffULL), &m.maps[12]);
	assert_null(at(&m, 0xffffffffff601000ULL));
	assert_null(at(&m, UINT64_MAX));
	procmaps__free(&m);
	assert_null(procmaps__find(&m, 0x1000));
	assert_null(procmaps__find(NULL, 0x1000));
	assert_false(procmap__is_file(NULL));
	procmaps__free(NULL);
}

/*
 * A file literally named "x (deleted)" is indistinguishable from a deleted
 * "x": the kernel does not escape the suffix. We strip one suffix either way
 * and set `deleted` (see procmaps.h); a deleted "x (deleted)" keeps one.
 */
static void test_deleted_ambiguity(void **state)
{
	struct procmaps m = {0};

	(void)state;
	parse_ok("1000-2000 r-xp 00000000 08:01 12 /home/u/x (deleted)\n"
		 "2000-3000 r-xp 00000000 08:01 13 /home/u/y (deleted) (deleted)\n"
		 "3000-4000 r-xp 00000000 08:01 14 /home/u/(deleted)\n"
		 "4000-5000 r-xp 00000000 08:01 15 /home/u/z (deleted) \n",
		 &m);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/home/u/x");
	assert_true(m.maps[0].deleted);
	assert_string_equal(m.maps[1].path, "/home/u/y (deleted)");
	assert_true(m.maps[1].deleted);
	assert_string_equal(m.maps[2].path, "/home/u/(deleted)");
	assert_false(m.maps[2].deleted);
	/* Trailing spaces are part of a file name. */
	assert_string_equal(m.maps[3].path, "/home/u/z (deleted) ");
	assert_false(m.maps[3].deleted);
	procmaps__free(&m);
}

static void test_malformed(void **state)
{
	struct procmaps m = {0};
	static const char text[] =
		"1000-2000 r-xp 00000000 08:01 12 /ok/one\n"
		"3000-2000 r-xp 00000000 08:01 12 /start-after-end\n"
		"3000-3000 r-xp 00000000 08:01 12 /empty-range\n"
		"3000 r-xp 00000000 08:01 12 /no-dash\n"
		"-4000 r-xp 00000000 08:01 12 /no-start\n"
		"3000- r-xp 00000000 08:01 12 /no-end\n"
		"30g0-4000 r-xp 00000000 08:01 12 /bad-hex-start\n"
		"3000-4000 r-xp 0000z000 08:01 12 /bad-hex-offset\n"
		"3000-4000 r-xq 00000000 08:01 12 /bad-perms\n"
		"3000-4000 rwx 00000000 08:01 12 /short-perms\n"
		"3000-4000 r-xpp 00000000 08:01 12 /long-perms\n"
		"3000-4000 x-rp 00000000 08:01 12 /perm-order\n"
		"3000-4000 r-xp 00000000 0801 12 /no-colon\n"
		"3000-4000 r-xp 00000000 08:0g 12 /bad-minor\n"
		"3000-4000 r-xp 00000000 100000000:01 12 /major-too-big\n"
		"3000-4000 r-xp 00000000 08:01 1x2 /bad-inode\n"
		"3000-4000 r-xp 00000000 08:01 99999999999999999999 /inode-overflow\n"
		"3000-4000 r-xp 00000000 08:01\n"
		"3000-4000 r-xp\n"
		"3000-4000\n"
		"10000000000000000-10000000000001000 r-xp 00000000 08:01 1 /17-digits\n"
		"garbage\n"
		"\n"
		"5000-6000 r-xp ffffffffffff0000 08:01 12 /huge-offset\n"
		"6000-7000 r-xp 0x10 08:01 12 /0x-offset\n"
		"7000-8000 r-xp 00000000 fff:fffff 18446744073709551615 /big-dev-inode";
	const struct procmap *pm;

	(void)state;
	parse_ok(text, &m);
	assert_int_equal(m.bad_lines, 21);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/ok/one");
	pm = at(&m, 0x5000);
	assert_non_null(pm);
	assert_true(pm->offset == 0xffffffffffff0000ULL);
	assert_string_equal(pm->path, "/huge-offset");
	assert_true(at(&m, 0x6000)->offset == 0x10);
	pm = at(&m, 0x7fff);
	assert_non_null(pm);
	assert_string_equal(pm->path, "/big-dev-inode"); /* no final newline */
	assert_int_equal(pm->dev_major, 0xfff);
	assert_int_equal(pm->dev_minor, 0xfffff);
	assert_true(pm->inode == UINT64_MAX);
	procmaps__free(&m);

	/* A NUL in the path is not something the kernel prints. */
	{
		static const char nul[] = "1000-2000 r-xp 00000000 08:01 12 /a\0b\n"
					  "2000-3000 r-xp 00000000 08:01 12 /c\n";
		assert_int_equal(procmaps__parse(nul, sizeof(nul) - 1, &m), 0);
		assert_int_equal(m.nr, 1);
		assert_int_equal(m.bad_lines, 1);
		assert_string_equal(m.maps[0].path, "/c");
		procmaps__free(&m);
	}
}

static void test_empty(void **state)
{
	struct procmaps m = {0};

	(void)state;
	parse_ok("", &m);
	assert_int_equal(m.nr, 0);
	assert_int_equal(m.bad_lines, 0);
	assert_null(procmaps__find(&m, 0x1000));
	procmaps__free(&m);
	assert_int_equal(procmaps__parse(NULL, 0, &m), 0);
	assert_int_equal(m.nr, 0);
	procmaps__free(&m);
	parse_ok("\n\n\n", &m);
	assert_int_equal(m.nr, 0);
	assert_int_equal(m.bad_lines, 0);
	procmaps__free(&m);
}

/* Lines out of order are sorted; overlapping ones are dropped and counted. */
static void test_unsorted_overlap(void **state)
{
	struct procmaps m = {0};

	(void)state;
	parse_ok("5000-6000 r-xp 00000000 08:01 1 /e\n"
		 "1000-2000 r-xp 00000000 08:01 1 /a\n"
		 "1800-2800 r-xp 00000000 08:01 1 /overlaps-a\n"
		 "3000-4000 r-xp 00000000 08:01 1 /c\n"
		 "1000-2000 r-xp 00000000 08:01 1 /a-again\n",
		 &m);
	assert_int_equal(m.nr, 3);
	assert_int_equal(m.bad_lines, 2);
	assert_string_equal(at(&m, 0x1fff)->path, "/a");
	assert_null(at(&m, 0x2000));
	assert_string_equal(at(&m, 0x3000)->path, "/c");
	assert_string_equal(at(&m, 0x5fff)->path, "/e");
	procmaps__free(&m);
}

static void test_read_file(void **state)
{
	struct procmaps m = {0};
	char *path = write_temp_str("1000-2000 r-xp 00000000 08:01 12 /from/file\n");

	(void)state;
	assert_int_equal(procmaps__read(path, &m), 0);
	assert_int_equal(m.nr, 1);
	assert_string_equal(m.maps[0].path, "/from/file");
	procmaps__free(&m);
	unlink(path);
	free(path);
	assert_int_equal(procmaps__read("/nonexistent/maps", &m), -ENOENT);
	assert_null(m.maps);
}

__attribute__((noinline)) static int function_in_test_binary(int x)
{
	return x + 1;
}

/* The test's own maps: a function of this binary is in an r-x mapping of it. */
static void test_self(void **state)
{
	struct procmaps m = {0};
	const struct procmap *pm;
	char exe[PATH_MAX];
	ssize_t n;
	int x = 0;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(procmaps__read("/proc/self/maps", &m), 0);
	assert_true(m.nr > 5);
	assert_int_equal(m.bad_lines, 0);
	pm = procmaps__find(&m, (uint64_t)(uintptr_t)&function_in_test_binary);
	assert_non_null(pm);
	assert_non_null(pm->path);
	assert_string_equal(pm->path, exe);
	assert_true(pm->perms & PROCMAP_X);
	assert_true(pm->perms & PROCMAP_R);
	assert_true(procmap__is_file(pm));
	assert_false(pm->deleted);
	/* A stack address is in [stack], which is not a file. */
	pm = procmaps__find(&m, (uint64_t)(uintptr_t)&x);
	assert_non_null(pm);
	assert_string_equal(pm->path, "[stack]");
	assert_false(procmap__is_file(pm));
	x = function_in_test_binary(x);
	procmaps__free(&m);
}

static void test_keep_executable(void **state)
{
	static const char text[] =
		"555555554000-555555555000 r--p 00000000 fe:00 10   /usr/bin/prog\n"
		"555555555000-555555556000 r-xp 00001000 fe:00 10   /usr/bin/prog\n"
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		"7f0000001000-7f0000002000 rw-p 00000000 00:00 0    [heap]\n"
		"7f0000002000-7f0000003000 r-xp 00000000 00:01 77   /memfd:jit (deleted)\n"
		"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0    [vdso]\n";
	struct procmaps m;

	(void)state;
	assert_int_equal(procmaps__parse(text, sizeof(text) - 1, &m), 0);
	assert_int_equal(m.nr, 6);
	assert_int_equal(procmaps__keep(&m, PROCMAP_X), 0);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.maps[0].path, "/usr/bin/prog");
	assert_true(m.maps[0].offset == 0x1000);
	assert_null(m.maps[1].path);
	assert_string_equal(m.maps[2].path, "/memfd:jit");
	assert_true(m.maps[2].deleted);
	assert_string_equal(m.maps[3].path, "[vdso]");
	assert_non_null(procmaps__find(&m, 0x7f0000002010ULL));
	assert_null(procmaps__find(&m, 0x7f0000001010ULL));
	assert_int_equal(procmaps__keep(&m, PROCMAP_W), 0);
	assert_int_equal(m.nr, 0);
	procmaps__free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_find_boundaries),
		cmocka_unit_test(test_deleted_ambiguity),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_unsorted_overlap),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_keep_executable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
