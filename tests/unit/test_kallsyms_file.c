// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_kallsyms_file.c - kallsyms__parse() and kallsyms__parse_head() over
 * fake /proc/kallsyms files: malformed lines, a huge file, an empty one. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>

#include "sym/kallsyms.h"

struct seen {
	size_t lines;
	uint64_t last;
	uint64_t stop_at; /* stop (-1) at the line with this address; 0: never */
};

static int take(void *ctx, const struct kallsyms_line *l)
{
	struct seen *s = ctx;

	s->lines++;
	s->last = l->addr;
	return s->stop_at && l->addr == s->stop_at ? -1 : 0;
}

static const char text[] = "ffffffff81000000 T _stext\n"
			   "ffffffff81000010 t do_one\n"
			   "garbage\n"
			   "ffffffff8100002z T bad_addr\n"
			   "ffffffff81000020 T\n"
			   "ffffffffc0000000 t mod_fn\t[mod]\n"
			   "ffffffffc0000100 t last";

static void test_parse(void **state)
{
	char *path = write_temp_str(text);
	struct seen s = { 0 };

	assert_int_equal(kallsyms__parse(path, 1 << 20, take, &s), 3); /* malformed lines */
	assert_int_equal(s.lines, 4);
	assert_true(s.last == 0xffffffffc0000100ull); /* no final new line: still a line */
	unlink(path);
	free(path);
}

/* A callback's negative value stops the walk and is returned. */
static void test_stop(void **state)
{
	char *path = write_temp_str(text);
	struct seen s = { .stop_at = 0xffffffff81000010ull };

	assert_int_equal(kallsyms__parse(path, 1 << 20, take, &s), -1);
	assert_int_equal(s.lines, 2);
	s = (struct seen){ .stop_at = 0xffffffff81000010ull };
	assert_int_equal(kallsyms__parse_head(path, 4096, take, &s), -1);
	assert_int_equal(s.lines, 2);
	unlink(path);
	free(path);
}

static void test_empty(void **state)
{
	char *path = write_temp_str("");
	struct seen s = { 0 };

	assert_int_equal(kallsyms__parse(path, 1 << 20, take, &s), 0);
	assert_int_equal(kallsyms__parse_head(path, 4096, take, &s), 0);
	assert_int_equal(s.lines, 0);
	unlink(path);
	free(path);
}

static void test_missing(void **state)
{
	struct seen s = { 0 };

	assert_int_equal(kallsyms__parse("/nonexistent/kallsyms", 1 << 20, take, &s), -ENOENT);
	assert_int_equal(kallsyms__parse_head("/nonexistent/kallsyms", 4096, take, &s), -ENOENT);
	assert_int_equal(s.lines, 0);
}

/* A huge file: past max it is refused whole (nothing half read); its head
 * is read alone, to its last whole line. */
static void test_huge(void **state)
{
	const size_t nlines = 200000, w = 24; /* "%016llx T f%03u\n" */
	char *big = malloc(nlines * w + 1), *path;
	struct seen s = { 0 };

	assert_non_null(big);
	for (size_t i = 0; i < nlines; i++)
		snprintf(big + i * w, w + 1, "%016llx T f%03u\n", 0xffffffff81000000ull + i * 16,
			 (unsigned)(i % 1000));
	path = write_temp(big, nlines * w);
	assert_int_equal(kallsyms__parse(path, nlines * w - 1, take, &s), -EFBIG);
	assert_int_equal(s.lines, 0);
	assert_int_equal(kallsyms__parse(path, nlines * w, take, &s), 0);
	assert_int_equal(s.lines, nlines);
	s = (struct seen){ 0 };
	/* 10 whole lines and part of the 11th. */
	assert_int_equal(kallsyms__parse_head(path, 10 * w + 5, take, &s), 0);
	assert_int_equal(s.lines, 10);
	assert_true(s.last == 0xffffffff81000000ull + 9 * 16);
	unlink(path);
	free(path);
	free(big);
}

/* A head with no whole line in it has no lines. */
static void test_head_no_newline(void **state)
{
	char *path = write_temp_str("ffffffff81000000 T a_very_long_name_that_does_not_fit\n");
	struct seen s = { 0 };

	assert_int_equal(kallsyms__parse_head(path, 20, take, &s), 0);
	assert_int_equal(s.lines, 0);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse), cmocka_unit_test(test_stop),
		cmocka_unit_test(test_empty), cmocka_unit_test(test_missing),
		cmocka_unit_test(test_huge),  cmocka_unit_test(test_head_no_newline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
