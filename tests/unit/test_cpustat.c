// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_cpustat.c - /proc/stat's idle and steal ticks, from fake files. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>

#include "collector/cpustat.h"

#define NCPU 4

static int ticks_of(const char *text, uint64_t *off, uint64_t *steal)
{
	char *path = write_temp_str(text);
	int err = cpustat__ticks(path, off, steal, NCPU);

	unlink(path);
	free(path);
	return err;
}

static void test_basic(void **state)
{
	uint64_t off[NCPU], steal[NCPU];

	/* user nice system idle iowait irq softirq steal guest guest_nice */
	assert_int_equal(ticks_of("cpu  10 0 10 900 9 0 0 4 0 0\n"
				  "cpu0 5 0 5 400 4 0 0 1 0 0\n"
				  "cpu1 5 0 5 500 5 0 0 3 0 0\n"
				  "intr 12345 0 0\n"
				  "ctxt 999\n",
				  off, steal),
			 0);
	assert_int_equal(off[0], 404);
	assert_int_equal(steal[0], 1);
	assert_int_equal(off[1], 505);
	assert_int_equal(steal[1], 3);
	assert_int_equal(off[2], 0); /* no line: 0 */
	assert_int_equal(off[3], 0);
}

/* Old kernels' short lines (no steal field) and malformed ones are skipped;
 * CPUs past n too, and the file need not end in a new line. */
static void test_malformed(void **state)
{
	uint64_t off[NCPU] = { 7, 7, 7, 7 }, steal[NCPU] = { 7, 7, 7, 7 };

	assert_int_equal(ticks_of("cpu0 1 2 3 4\n"
				  "cpu1 1 2 x 4 5 6 7 8\n"
				  "cpux 1 2 3 4 5 6 7 8\n"
				  "cpu9 1 1 1 100 1 1 1 1\n"
				  "cpu99999999999999999999999 1 1 1 100 1 1 1 1\n"
				  "\n\n"
				  "cpu2 1 1 1 100 1 1 1 2",
				  off, steal),
			 0);
	assert_int_equal(off[0], 0);
	assert_int_equal(off[1], 0);
	assert_int_equal(off[2], 101);
	assert_int_equal(steal[2], 2);
	assert_int_equal(off[3], 0);
	assert_int_equal(steal[3], 0);
}

static void test_empty(void **state)
{
	uint64_t off[NCPU] = { 7, 7, 7, 7 }, steal[NCPU] = { 7, 7, 7, 7 };

	assert_int_equal(ticks_of("", off, steal), 0);
	for (int i = 0; i < NCPU; i++)
		assert_true(off[i] == 0 && steal[i] == 0);
}

/* Past 1 MiB the file is refused, not half read. */
static void test_huge(void **state)
{
	uint64_t off[NCPU], steal[NCPU];
	size_t len = (1u << 20) + 4096;
	char *text = malloc(len + 1);

	assert_non_null(text);
	for (size_t i = 0; i < len; i++)
		text[i] = i % 64 == 63 ? '\n' : 'a';
	memcpy(text, "cpu0 1 1 1 100 1 1 1 1\n", 23);
	text[len] = 0;
	assert_int_equal(ticks_of(text, off, steal), -EFBIG);
	free(text);
}

static void test_missing(void **state)
{
	uint64_t off[NCPU], steal[NCPU];

	assert_int_equal(cpustat__ticks("/nonexistent/stat", off, steal, NCPU), -ENOENT);
}

/* The running kernel's own file: one line per CPU, at least cpu0. */
static void test_real(void **state)
{
	uint64_t off[1], steal[1];

	assert_int_equal(cpustat__ticks(CPUSTAT_PATH, off, steal, 1), 0);
	assert_true(off[0] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),	cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_empty),	cmocka_unit_test(test_huge),
		cmocka_unit_test(test_missing), cmocka_unit_test(test_real),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
