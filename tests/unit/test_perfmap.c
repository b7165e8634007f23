// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_perfmap.c - the perf map parser on what JITs write (Node, JDK 25 "0x"
 * prefixes, CRLF, names with spaces) and on what they must not get away with
 * (bad hex, zero or overflowing ranges, NUL bytes, over-long lines), plus
 * partial last lines, growth, unsorted and overlapping entries; wanted mode
 * (only what asked-for addresses need, rescans, appends, caps).
 */
#include "testutil.h"

#include "sym/perfmap.h"

static struct perfmap *parse(const char *text)
{
	struct perfmap *pm = perfmap__parse(text, strlen(text));

	assert_non_null(pm);
	return pm;
}

static void assert_name(const struct perfmap *pm, uint64_t addr, const char *want)
{
	const char *got = perfmap__lookup(pm, addr, NULL);

	if (!want) {
		if (got)
			fail_msg("0x%llx: expected nothing, got %s", (unsigned long long)addr, got);
		return;
	}
	if (!got)
		fail_msg("0x%llx: expected %s, got nothing", (unsigned long long)addr, want);
	assert_string_equal(got, want);
}

static void test_basic_and_boundaries(void **state)
{
	struct perfmap *pm = parse("7f0000001000 100 LazyCompile:*hot /app/x.js:3:10\n"
				   "7f0000002000 20 Builtin:ArgumentsAdaptorTrampoline\n");
	uint64_t off = 0;

	(void)state;
	assert_int_equal(perfmap__count(pm), 2);
	assert_int_equal(perfmap__bad_lines(pm), 0);
	assert_name(pm, 0x7f0000001000, "LazyCompile:*hot /app/x.js:3:10");
	assert_name(pm, 0x7f00000010ff, "LazyCompile:*hot /app/x.js:3:10");
	assert_name(pm, 0x7f0000001100, NULL); /* size is respected */
	assert_name(pm, 0x7f0000000fff, NULL);
	assert_name(pm, 0x7f0000002010, "Builtin:ArgumentsAdaptorTrampoline");
	assert_non_null(perfmap__lookup(pm, 0x7f0000001010, &off));
	assert_int_equal(off, 0x10);
	assert_name(pm, 0, NULL);
	assert_name(pm, UINT64_MAX, NULL);
	perfmap__free(pm);
}

static void test_formats_writers_use(void **state)
{
	/* 0x prefixes (JDK 25), upper case, CRLF, leading blanks, tabs, ';' in names. */
	struct perfmap *pm = parse("0x7F0000001000 0x40 Interpreter\r\n"
				   "   7f0000002000\t0X10\tjava.lang.String::hashCode;x\n"
				   "7f0000003000 8    name with   inner spaces   \n"
				   "\n"
				   "   \r\n");

	(void)state;
	assert_int_equal(perfmap__count(pm), 3);
	assert_int_equal(perfmap__bad_lines(pm), 0);
	assert_name(pm, 0x7f0000001020, "Interpreter");
	assert_name(pm, 0x7f0000002008, "java.lang.String::hashCode;x");
	assert_name(pm, 0x7f0000003000, "name with   inner spaces");
	perfmap__free(pm);
}

static void test_bad_lines_are_skipped(void **state)
{
	static const char text[] = "7f0000001000 10\n"		      /* no name */
				   "7f0000001000\n"		      /* one field */
				   "zz 10 bad_start\n"		      /* bad hex */
				   "7f0000001000 1g bad_size\n"	      /* bad hex */
				   "0 10 start_zero\n"		      /* address 0 */
				   "7f0000001000 0 size_zero\n"	      /* empty range */
				   "ffffffffffffff00 200 overflow\n"  /* start + size wraps */
				   "17f00000010000000 10 seventeen\n" /* 17 digits */
				   "7f0000004000 10 good\n"
				   "7f0000005000 10 nul\0byte\n" /* NUL inside */
				   "-7f0000006000 10 negative\n";
	struct perfmap *pm = perfmap__parse(text, sizeof(text) - 1);

	(void)state;
	assert_non_null(pm);
	assert_int_equal(perfmap__count(pm), 1);
	assert_int_equal(perfmap__bad_lines(pm), 10);
	assert_name(pm, 0x7f0000004008, "good");
	assert_name(pm, 0x7f0000005000, NULL);
	assert_name(pm, 0xffffffffffffff80ULL, NULL);
	perfmap__free(pm);
}

static void test_long_line_is_skipped(void **state)
{
	size_t n = PERFMAP_MAX_LINE + 100;
	char *text = malloc(n + 64);
	struct perfmap *pm;

	(void)state;
	assert_non_null(text);
	strcpy(text, "7f0000001000 10 ");
	memset(text + 16, 'x', n - 16);
	strcpy(text + n, "\n7f0000002000 10 ok\n");
	pm = parse(text);
	assert_int_equal(perfmap__count(pm), 1);
	assert_int_equal(perfmap__bad_lines(pm), 1);
	assert_name(pm, 0x7f0000001000, NULL);
	assert_name(pm, 0x7f0000002000, "ok");
	perfmap__free(pm);
	free(text);
}

static void test_partial_last_line_and_growth(void **state)
{
	const char *part1 = "7f0000001000 10 first\n7f0000002000 10 sec";
	const char *part2 = "ond\n7f0000003000 10 third\n";
	struct perfmap *pm = perfmap__new();
	char whole[256];

	(void)state;
	assert_non_null(pm);
	/* The writer is in the middle of line 2: only line 1 is used. */
	assert_int_equal(perfmap__add(pm, part1, strlen(part1)), 0);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_int_equal(perfmap__count(pm), 1);
	assert_int_equal(perfmap__consumed(pm), strlen("7f0000001000 10 first\n"));
	assert_name(pm, 0x7f0000002000, NULL);
	/* The file grew: read on from where complete lines ended. */
	snprintf(whole, sizeof(whole), "%s%s", part1, part2);
	assert_int_equal(perfmap__add(pm, whole + perfmap__consumed(pm),
				      strlen(whole) - perfmap__consumed(pm)),
			 0);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_int_equal(perfmap__count(pm), 3);
	assert_int_equal(perfmap__consumed(pm), strlen(whole));
	assert_name(pm, 0x7f0000002000, "second");
	assert_name(pm, 0x7f0000003000, "third");
	assert_name(pm, 0x7f0000001000, "first");
	perfmap__free(pm);

	/* A file that is only a partial line names nothing, and is not an error. */
	pm = parse("7f0000001000 10 no_newline");
	assert_int_equal(perfmap__count(pm), 0);
	assert_int_equal(perfmap__bad_lines(pm), 0);
	assert_name(pm, 0x7f0000001000, NULL);
	perfmap__free(pm);
	pm = parse("");
	assert_name(pm, 0x7f0000001000, NULL);
	perfmap__free(pm);
}

static void test_unsorted_and_overlapping_newest_wins(void **state)
{
	/*
	 * old_big covers 0x1000-0x1fff; new_mid (later in the file) covers
	 * 0x1400-0x17ff and wins there; newest_tiny wins 0x1500-0x150f; an
	 * exact re-registration of 0x3000 replaces its name; unsorted order.
	 */
	struct perfmap *pm = parse("7f0000003000 100 first_at_3000\n"
				   "7f0000001000 1000 old_big\n"
				   "7f0000001400 400 new_mid\n"
				   "7f0000000100 10 low\n"
				   "7f0000001500 10 newest_tiny\n"
				   "7f0000003000 100 second_at_3000\n"
				   "7f0000001f00 200 straddles_end\n");

	(void)state;
	assert_name(pm, 0x7f0000000100, "low");
	assert_name(pm, 0x7f0000001000, "old_big");
	assert_name(pm, 0x7f00000013ff, "old_big");
	assert_name(pm, 0x7f0000001400, "new_mid");
	assert_name(pm, 0x7f00000014ff, "new_mid");
	assert_name(pm, 0x7f0000001500, "newest_tiny");
	assert_name(pm, 0x7f000000150f, "newest_tiny");
	assert_name(pm, 0x7f0000001510, "new_mid");
	assert_name(pm, 0x7f0000001800, "old_big");
	assert_name(pm, 0x7f0000001eff, "old_big");
	assert_name(pm, 0x7f0000001f00, "straddles_end");
	assert_name(pm, 0x7f00000020ff, "straddles_end");
	assert_name(pm, 0x7f0000002100, NULL);
	assert_name(pm, 0x7f0000003050, "second_at_3000");
	perfmap__free(pm);
}

static void test_many_lines(void **state)
{
	size_t n = PERFMAP_MAX_ENTRIES, len = 0;
	char *text = malloc(n * 40);
	struct perfmap *pm;

	(void)state;
	assert_non_null(text);
	/* Descending addresses, every entry a distinct name. */
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%llx 20 fn_%zu\n",
				       0x7f0000000000ULL + (n - i) * 0x40, n - i);
	pm = perfmap__parse(text, len);
	assert_non_null(pm);
	assert_int_equal(perfmap__count(pm), n);
	assert_name(pm, 0x7f0000000000ULL + 1234 * 0x40 + 0x1f, "fn_1234");
	assert_name(pm, 0x7f0000000000ULL + 1234 * 0x40 + 0x20, NULL);
	perfmap__free(pm);
	free(text);
}

/*
 * One map is one item with a cap of its own (perfmap.h): 8 MiB of the
 * shortest lines a map can have were 839K entries and 45 MiB of heap, and
 * long names fill the pool. Either way the map stops at its cap, as
 * allocated, and says so (E2BIG: read it in wanted mode).
 */
static void test_one_map_has_its_cap(void **state)
{
	size_t n = 8u << 20, len = 0, i = 0;
	char *text = malloc(2 * n + 8192), name[4000];
	struct perfmap *pm;
	int err = 0;

	(void)state;
	assert_non_null(text);
	while (len < n)
		len += (size_t)sprintf(text + len, "%zx 1 f\n", 0x10000 + i++);
	pm = perfmap__new();
	assert_non_null(pm);
	/* In the 4 MiB chunks the symbolizer reads. */
	for (size_t off = 0; off < len && !err; off = perfmap__consumed(pm)) {
		err = perfmap__add(pm, text + off, MIN(len - off, (size_t)4 << 20));
		assert_true(perfmap__bytes(pm) <= PERFMAP_MAX_BYTES);
	}
	assert_int_equal(err, -E2BIG);
	assert_int_equal(perfmap__count(pm), PERFMAP_MAX_ENTRIES);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_true(perfmap__bytes(pm) <= PERFMAP_MAX_BYTES);
	assert_name(pm, 0x10000, "f");
	perfmap__free(pm);
	errno = 0;
	assert_null(perfmap__parse(text, len));
	assert_int_equal(errno, E2BIG);

	/* Names of 4,000 bytes: half the cap is theirs. */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (len = 0, i = 0; len + sizeof(name) + 64 < 2 * n; i++)
		len += (size_t)sprintf(text + len, "%zx 1 %s\n", 0x10000 + i, name);
	pm = perfmap__new();
	assert_int_equal(perfmap__add(pm, text, len), -E2BIG);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_true(perfmap__bytes(pm) <= PERFMAP_MAX_BYTES);
	assert_true(perfmap__count(pm) * sizeof(name) <= PERFMAP_MAX_BYTES / 2);
	assert_true(perfmap__count(pm) * sizeof(name) > PERFMAP_MAX_BYTES / 2 - 8192);
	perfmap__free(pm);
	free(text);
}

/* Wanted mode within the same cap: every line wanted, long names. */
static void test_wanted_map_has_its_cap(void **state)
{
	size_t n = 2 * PERFMAP_MAX_KEPT + 1000, len = 0;
	char *text = malloc(n * 1100), name[1000];
	uint64_t *want = calloc(n, sizeof(*want));
	struct perfmap *pm;

	(void)state;
	assert_non_null(text);
	assert_non_null(want);
	memset(name, 'w', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (size_t i = 0; i < n; i++) {
		want[i] = 0x100000 + i * 0x10;
		len += (size_t)sprintf(text + len, "%zx 10 %s\n", (size_t)want[i], name);
	}
	pm = perfmap__new_wanted();
	assert_non_null(pm);
	for (size_t off = 0; off < len; off = perfmap__consumed(pm)) {
		assert_int_equal(perfmap__scan_tail(pm, text + off, MIN(len - off, (size_t)1 << 20),
						    want, n),
				 0);
		assert_true(perfmap__bytes(pm) <= PERFMAP_MAX_BYTES);
	}
	assert_int_equal(perfmap__finish(pm), 0);
	assert_true(perfmap__bytes(pm) <= PERFMAP_MAX_BYTES);
	assert_true(perfmap__dropped(pm) > 0);
	perfmap__free(pm);
	free(want);
	free(text);
}

/* Wanted mode: one tail scan of text for want[0..n). */
static struct perfmap *scan_for(const char *text, const uint64_t *want, size_t n)
{
	struct perfmap *pm = perfmap__new_wanted();

	assert_non_null(pm);
	assert_int_equal(perfmap__scan_tail(pm, text, strlen(text), want, n), 0);
	assert_int_equal(perfmap__finish(pm), 0);
	return pm;
}

static const char overlap_text[] = "1000 100 old\n"	  /* line 0 */
				   "5000 10 unrelated\n"  /* line 1 */
				   "2000 100 other\n"	  /* line 2 */
				   "this is not a line\n" /* line 3 */
				   "1080 100 new\n";	  /* line 4: over old's end */

static void test_wanted_keeps_what_addresses_need(void **state)
{
	uint64_t want[] = { 0x1010 };
	struct perfmap *pm = scan_for(overlap_text, want, 1);

	(void)state;
	/* old names the address; new overlaps old and is newer: kept with it. */
	assert_int_equal(perfmap__count(pm), 2);
	assert_name(pm, 0x1010, "old");
	assert_name(pm, 0x1090, "new");
	assert_name(pm, 0x1170, "new");
	assert_name(pm, 0x2010, NULL); /* never asked for: not kept */
	assert_name(pm, 0x5000, NULL);
	assert_int_equal(perfmap__lines(pm), 5);
	assert_int_equal(perfmap__consumed(pm), strlen(overlap_text));
	perfmap__free(pm);
}

static void test_wanted_rescan_and_append(void **state)
{
	uint64_t want[] = { 0x2010 }, later[] = { 0x1010 }, lines;
	struct perfmap *pm = scan_for(overlap_text, want, 1);
	const char *more = "1000 10 newest\n";
	size_t before;

	(void)state;
	assert_int_equal(perfmap__count(pm), 1);
	assert_name(pm, 0x1010, NULL);
	/* Asked for later: the whole file again, with the same line numbers. */
	perfmap__scan(pm, overlap_text, strlen(overlap_text), 0, later, 1, true, &lines);
	assert_int_equal(lines, 5);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_name(pm, 0x1010, "old");
	assert_name(pm, 0x10f0, "new"); /* the newer line after it came along */
	assert_name(pm, 0x2010, "other");
	before = perfmap__count(pm);
	/* Scanning again keeps nothing twice. */
	perfmap__scan(pm, overlap_text, strlen(overlap_text), 0, later, 1, true, &lines);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_int_equal(perfmap__count(pm), before);
	/* Appended over kept code: kept without being asked for, and newest. */
	assert_int_equal(perfmap__scan_tail(pm, more, strlen(more), NULL, 0), 0);
	assert_int_equal(perfmap__finish(pm), 0);
	assert_name(pm, 0x1008, "newest");
	assert_name(pm, 0x1010, "old");
	assert_int_equal(perfmap__lines(pm), 6);
	perfmap__free(pm);
}

static void test_wanted_caps_never_misname(void **state)
{
	size_t n = 2 * PERFMAP_MAX_KEPT + 10, len = 0;
	char *text = malloc(n * 40 + 64);
	uint64_t want[] = { 0x100000 };
	struct perfmap *pm;

	(void)state;
	assert_non_null(text);
	/* The wanted entry, then a chain of newer entries each over the last. */
	len += (size_t)sprintf(text + len, "100000 100 wanted\n");
	for (size_t i = 1; i < n; i++)
		len += (size_t)sprintf(text + len, "%zx 100 chain_%zu\n", 0x100000 + i * 0x80, i);
	pm = scan_for(text, want, 1);
	/* Kept only as far as the caps allow; past them nothing may be said,
	 * rather than an older name for code a newer line claims. */
	assert_true(perfmap__count(pm) <= 2 * PERFMAP_MAX_KEPT);
	assert_true(perfmap__dropped(pm) > 0);
	assert_name(pm, 0x100000, NULL);
	assert_name(pm, 0x100000 + (n - 1) * 0x80, NULL);
	perfmap__free(pm);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_and_boundaries),
		cmocka_unit_test(test_formats_writers_use),
		cmocka_unit_test(test_bad_lines_are_skipped),
		cmocka_unit_test(test_long_line_is_skipped),
		cmocka_unit_test(test_partial_last_line_and_growth),
		cmocka_unit_test(test_unsorted_and_overlapping_newest_wins),
		cmocka_unit_test(test_many_lines),
		cmocka_unit_test(test_one_map_has_its_cap),
		cmocka_unit_test(test_wanted_map_has_its_cap),
		cmocka_unit_test(test_wanted_keeps_what_addresses_need),
		cmocka_unit_test(test_wanted_rescan_and_append),
		cmocka_unit_test(test_wanted_caps_never_misname),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
