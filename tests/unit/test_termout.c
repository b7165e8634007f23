// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_termout.c - top's screen rows on an xterm terminfo entry, the bytes
 * of each refresh read back from stdout: a first refresh and one after a
 * resize draw every row; then only the span that changed is written
 * (the row's address, then the column's, as tiparm() expands them, kept or
 * not), shorter rows are cleared to the end, rows not drawn are cleared,
 * unchanged ones cost nothing; rows are cut at the edge and the last cell; control characters
 * (C1 and bidirectional ones too, and bytes not UTF-8) become '?'; a non-ASCII row is written whole
 * each time; an attribute change rewrites the row; a failed write makes the next refresh start
 * over.
 */
#include "testutil.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <curses.h>
#include <term.h>

#include "tui/termout.h"

static int saved_stdout = -1, capture_fd = -1;

/* stdout into a memory file until out_take(). */
static void out_capture(void)
{
	fflush(stdout);
	saved_stdout = dup(STDOUT_FILENO);
	capture_fd = memfd_create("termout-test", 0);
	assert_true(saved_stdout >= 0 && capture_fd >= 0);
	assert_int_equal(dup2(capture_fd, STDOUT_FILENO), STDOUT_FILENO);
}

/* What was written since out_capture(), NUL-terminated, in a static buffer. */
static const char *out_take(void)
{
	static char got[8192];
	ssize_t n;

	assert_int_equal(dup2(saved_stdout, STDOUT_FILENO), STDOUT_FILENO);
	close(saved_stdout);
	n = pread(capture_fd, got, sizeof(got) - 1, 0);
	assert_true(n >= 0);
	got[n] = '\0';
	close(capture_fd);
	return got;
}

/* A refresh (a frame): rows (y, text) pairs, then end; what it wrote. */
static const char *frame(int h, int w, bool expect_clear, int n, ...)
{
	va_list ap;

	assert_int_equal(termout__begin(h, w), expect_clear);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		int y = va_arg(ap, int);
		const char *s = va_arg(ap, const char *);

		termout__row(y, s, 0);
	}
	va_end(ap);
	out_capture();
	assert_int_equal(termout__end(), 0);
	return out_take();
}

/* The expected bytes: "@y,x;" a cursor address, "~" clear to end of line, the rest as is. */
static const char *expect(const char *spec)
{
	static char want[8192];
	size_t n = 0;

	while (*spec) {
		if (*spec == '@') {
			int y, x, k;

			assert_int_equal(sscanf(spec, "@%d,%d;%n", &y, &x, &k), 2);
			/* The row's first column, then the column (xterm has hpa). */
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
					      tiparm(cursor_address, y, 0));
			if (x)
				n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
						      tiparm(column_address, x));
			spec += k;
		} else if (*spec == '~') {
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%s", clr_eol);
			spec++;
		} else {
			want[n++] = *spec++;
		}
	}
	want[n] = '\0';
	return want;
}

static SCREEN *screen;
static FILE *devnull;

/* A screen as top has one (attributes are worked out against it). */
static int setup(void **state)
{
	devnull = fopen("/dev/null", "r+");
	assert_non_null(devnull);
	screen = newterm("xterm", devnull, devnull);
	if (!screen) {
		print_error("no xterm terminfo entry (ncurses-base)\n");
		return -1;
	}
	set_term(screen);
	termout__free();
	return 0;
}

static int teardown(void **state)
{
	termout__free();
	endwin();
	delscreen(screen);
	fclose(devnull);
	return 0;
}

static void test_rows_diff(void **state)
{
	assert_true(termout__ok());
	assert_string_equal(frame(5, 20, true, 2, 0, "hello", 1, "world"),
			    expect("@0,0;hello@1,0;world"));
	/* Only what changed: a longer row, a byte at the end, one in the middle. */
	assert_string_equal(frame(5, 20, false, 2, 0, "hello", 1, "worlds"), expect("@1,5;s"));
	assert_string_equal(frame(5, 20, false, 2, 0, "hellO", 1, "worlds"), expect("@0,4;O"));
	assert_string_equal(frame(5, 20, false, 2, 0, "hxlpO", 1, "worlds"), expect("@0,1;xlp"));
	/* Shorter: cleared from its end. Not drawn: cleared whole. */
	assert_string_equal(frame(5, 20, false, 1, 0, "hx"), expect("@0,2;~@1,0;~"));
	/* Unchanged, and blank rows not drawn: nothing at all. */
	assert_string_equal(frame(5, 20, false, 1, 0, "hx"), "");
	/* Every row changed (a new filter): each rewritten. */
	assert_string_equal(frame(5, 20, false, 2, 0, "ab", 1, "cd"), expect("@0,0;ab@1,0;cd"));
	/* Long rows: the span from the first byte that differs to the last. */
	assert_string_equal(
		frame(5, 60, true, 1, 2, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"),
		expect("@2,0;0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"));
	assert_string_equal(
		frame(5, 60, false, 1, 2, "0123456789abcdefgXijklmnopqrstuvwxyzABCDEFGH"),
		expect("@2,17;X"));
	assert_string_equal(
		frame(5, 60, false, 1, 2, "012Y456789abcdefgXijklmnopqrstuvwxyzABCDEFGZ"),
		expect("@2,3;Y456789abcdefgXijklmnopqrstuvwxyzABCDEFGZ"));
	assert_string_equal(
		frame(5, 60, false, 1, 2, "Q12Y456789abcdefgXijklmnopqrstuvwxyzABCDEFGZ"),
		expect("@2,0;Q"));
	assert_string_equal(
		frame(5, 60, false, 1, 2, "Q12Y456789abcdefgXijklmnopqrstuvwxyzABCDEFGZ"), "");
	/* A resize: the caller clears, every row is drawn again. */
	assert_string_equal(frame(6, 20, true, 2, 0, "ab", 1, "cd"), expect("@0,0;ab@1,0;cd"));
	assert_string_equal(frame(6, 20, false, 2, 0, "ab", 1, "cd"), "");
	assert_string_equal(frame(6, 30, true, 1, 0, "ab"), expect("@0,0;ab"));
}

static void test_rows_cut(void **state)
{
	/* Cut at the right edge; the last row one short (its last cell may scroll);
	 * rows off the screen ignored; control characters shown as '?'. */
	assert_string_equal(frame(3, 8, true, 5, 0, "0123456789", 2, "abcdefghij", 3, "off", -1,
				  "off", 1, "a\tb\x7f"),
			    expect("@0,0;01234567@2,0;abcdefg@1,0;a?b?"));
}

static void test_rows_non_ascii(void **state)
{
	assert_string_equal(frame(3, 20, true, 1, 0, "h\xc3\xa9llo"), expect("@0,0;h\xc3\xa9llo"));
	/* Byte offsets are not columns: cleared and written whole each time. */
	assert_string_equal(frame(3, 20, false, 1, 0, "h\xc3\xa9llo"),
			    expect("@0,0;~@0,0;h\xc3\xa9llo"));
	assert_string_equal(frame(3, 20, false, 1, 0, "hello"), expect("@0,0;~@0,0;hello"));
	assert_string_equal(frame(3, 20, false, 1, 0, "hello"), "");
}

/* A name a process wrote: C1 controls (UTF-8 and raw), ESC, bidi override. */
static void test_rows_terminal_controls(void **state)
{
	/* U+009B (CSI) 2J, raw 0x9b 2J, ESC ] 0;t BEL, U+202E, then a real é. */
	assert_string_equal(frame(3, 40, true, 1, 0,
				  "a\xc2\x9b"
				  "2J\x9b"
				  "2J\x1b]0;t\x07\xe2\x80\xae"
				  "b\xc3\xa9"),
			    expect("@0,0;a?2J?2J?]0;t??b\xc3\xa9"));
}

static void test_rows_attr(void **state)
{
	const char *got;
	char want[64];

	assert_true(termout__begin(3, 20));
	termout__row(0, "abc", A_BOLD);
	out_capture();
	assert_int_equal(termout__end(), 0);
	got = out_take();
	/* The cursor address, the attribute on, the text, back to normal. */
	snprintf(want, sizeof(want), "%s", expect("@0,0;"));
	assert_memory_equal(got, want, strlen(want));
	assert_non_null(strstr(got, "abc"));
	assert_true(strlen(got) > strlen(want) + 3);
	/* The same: nothing. The same text in another attribute: rewritten whole. */
	assert_false(termout__begin(3, 20));
	termout__row(0, "abc", A_BOLD);
	out_capture();
	assert_int_equal(termout__end(), 0);
	assert_string_equal(out_take(), "");
	assert_string_equal(frame(3, 20, false, 1, 0, "abc"), expect("@0,0;abc"));
}

static void test_write_error(void **state)
{
	int ro = open("/dev/null", O_RDONLY), saved;

	assert_true(ro >= 0);
	assert_string_equal(frame(3, 20, true, 1, 0, "abc"), expect("@0,0;abc"));
	assert_false(termout__begin(3, 20));
	termout__row(0, "abd", 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_int_equal(dup2(ro, STDOUT_FILENO), STDOUT_FILENO);
	assert_true(termout__end() < 0); /* EBADF */
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	close(ro);
	/* The screen is not what the rows say: cleared and drawn whole. */
	assert_string_equal(frame(3, 20, true, 1, 0, "abd"), expect("@0,0;abd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rows_diff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_non_ascii, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_terminal_controls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_attr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
