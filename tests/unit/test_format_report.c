// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_report.c - the text report and the differential report: golden
 * output, recursion counted once in "total", --top and --sort, 80 columns.
 */
#include "outfixture.h"

static void assert_fits_80(const char *text)
{
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t cols = 0;

		assert_non_null(nl);
		for (const char *c = line; c < nl; c++)
			cols += ((unsigned char)*c & 0xc0) != 0x80;
		if (cols > 80) {
			print_error("line longer than 80 columns: %.*s\n", (int)(nl - line), line);
			fail();
		}
		line = nl + 1;
	}
}

static void test_report_golden(void **state)
{
	struct profile *p = fx_profile();
	struct out_opts o = { .top = 20 };
	char *text = fx_write(&writer_report, p, &o, NULL);

	assert_golden("fixture.report.txt", text, strlen(text));
	assert_fits_80(text);
	free(text);
	profile__free(p);
}

static void test_report_top_sort_and_long_names(void **state)
{
	struct profile *p = fx_profile();
	struct out_opts o = { .top = 2, .sort = "total" };
	char *text;

	FX(p, "app", 100, 0, 1,
	   FX_USER("std::_Hashtable<std::__cxx11::basic_string<char>, std::pair<int, int>>::"
		   "_M_find_before_node_tr(unsigned long, int const&, unsigned long) const"));
	text = fx_write(&writer_report, p, &o, NULL);
	assert_null(strstr(text, "by self"));
	assert_non_null(strstr(text, "Top 2 functions by total"));
	assert_fits_80(text);
	free(text);

	o.sort = "self";
	o.top = 0; /* all rows */
	text = fx_write(&writer_report, p, &o, NULL);
	assert_null(strstr(text, "by total"));
	/* Templates and parameters go first, then the end is cut. */
	assert_non_null(strstr(text, "  std::_Hashtable::_M_find_befor\u2026\n"));
	assert_fits_80(text);
	free(text);
	profile__free(p);
}

static void test_report_empty(void **state)
{
	struct profile *p = profile__new();
	char *text = fx_write(&writer_report, p, NULL, NULL);

	assert_string_equal(text, "bpfprof report: 0 samples\n\nNo samples.\n");
	free(text);
	profile__free(p);
}

static void test_diff_report_golden(void **state)
{
	struct profile *before = fx_profile(), *after = fx_profile();
	char *text;

	/* After: leaf_a doubled; a new function; kernel reads gone. */
	FX(after, "app", 100, 101, 50, FX_LIB("__libc_start_main"), FX_USER("main"),
	   FX_USER("compute"), FX_USER("leaf_a"));
	FX(after, "app", 100, 101, 20, FX_LIB("__libc_start_main"), FX_USER("main"),
	   FX_USER("new_fn"));
	profile__sort(after);
	text = fx_write_diff(&diff_writer_report, before, after, NULL);
	assert_golden("fixture_diff.report.txt", text, strlen(text));
	assert_fits_80(text);
	free(text);

	/* A profile against itself: nothing changed. */
	text = fx_write_diff(&diff_writer_report, before, before, NULL);
	assert_non_null(strstr(text, "No function's share changed."));
	free(text);
	profile__free(before);
	profile__free(after);
}

/*
 * Only C++ signatures lose their brackets: a long Python qualified name keeps
 * its "<locals>", a Go method its "(*T)", a process name its parentheses;
 * they are cut at the end instead (issue 37: "make_docs.. ()").
 */
static void test_report_shortens_only_cxx(void **state)
{
	struct profile *p = profile__new();
	struct out_opts o = { .top = 0, .sort = "self" };
	char *text;

	FX(p, "app", 1, 0, 40,
	   { FRAME_PYTHON, "make_docs.<locals>.render_section.<locals>.<listcomp>", NULL });
	FX(p, "app", 1, 0, 30,
	   FX_USER("github.com/acme/server/internal/handlers.(*Handler).ServeHTTPWithContext"));
	FX(p, "app", 1, 0, 20,
	   FX_USER("ns::Widget<std::vector<int, std::allocator<int> > >::"
		   "draw(Canvas&, Rect const&) const"));
	FX(p, "app", 1, 0, 10, FX_USER("draw_everything_now(Canvas&, Rect const&, Style const&)"));
	FX(p, "worker (pool 1) of a process name as long as folded text allows", 2, 0, 5,
	   FX_USER("main"));
	/* A Lisp function's name is no C++ signature ("()" before its kind). */
	FX(p, "sbcl", 3, 0, 4,
	   { FRAME_LISP, "(FLET SB-UNIX::BODY :IN SB-IMPL::START-LISP)",
	     "/usr/lib/sbcl/sbcl.core" });
	profile__sort(p);
	text = fx_write(&writer_report, p, &o, NULL);
	assert_non_null(strstr(text, "  make_docs.<locals>.render_sect\u2026\n"));
	assert_non_null(strstr(text, "  github.com/acme/server/interna\u2026\n"));
	assert_non_null(strstr(text, "  ns::Widget::draw() const\n"));
	assert_non_null(strstr(text, "  draw_everything_now()\n"));
	assert_non_null(
		strstr(text, "  worker (pool 1) of a process name as long as folded\u2026\n"));
	assert_non_null(strstr(text, "  (FLET SB-UNIX::BODY :IN SB-IMP"));
	assert_fits_80(text);
	free(text);
	profile__free(p);
}

/* The column of "Function" in the header line above needle: where every row's name starts. */
static size_t function_column(const char *text, const char *needle)
{
	const char *head = NULL, *h, *row = strstr(text, needle);

	for (h = strstr(text, "Module"); h && h < row; h = strstr(h + 1, "Module"))
		head = h;
	assert_non_null(head);
	while (head > text && head[-1] != '\n')
		head--;
	return (size_t)(strstr(head, "Function") - head);
}

/* The columns before needle on its line; needle must be in text. */
static size_t column_of(const char *text, const char *needle)
{
	const char *at = strstr(text, needle), *line;
	size_t cols = 0;

	assert_non_null(at);
	for (line = at; line > text && line[-1] != '\n'; line--)
		;
	for (; line < at; line++)
		cols += ((unsigned char)*line & 0xc0) != 0x80;
	return cols;
}

/*
 * The Module column is as wide as its names (it cut them at 12 columns:
 * libstdc++.so.6.0.30 read "libstdc++.so"), up to 40, past which a name is
 * cut in its middle: its start and its version both stay. Rows stay aligned
 * under the header, in the tables and in the call graph.
 */
static void test_report_module_column_fits_names(void **state)
{
	static const char longmod[] =
		"/opt/app/lib/libvery_long_vendor_library_name_for_tests.so.1.2.3";
	struct profile *p = profile__new();
	struct out_opts o = { .top = 0 };
	char *text;

	FX(p, "app", 1, 0, 60, FX_USER("main"),
	   { FRAME_USER, "std::locale::locale()",
	     "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30" });
	FX(p, "app", 1, 0, 30, FX_USER("main"), { FRAME_USER, "vendor_work", longmod });
	FX(p, "app", 1, 0, 10, FX_USER("main"), FX_LIB("read"));
	profile__sort(p);
	text = fx_write(&writer_report, p, &o, NULL);
	/* Whole, then the Function column 40 wide with the long one cut. */
	assert_non_null(strstr(text, "  libstdc++.so.6.0.30"));
	assert_non_null(
		strstr(text, "  libvery_long_vendor_\u2026_for_tests.so.1.2.3  vendor_work\n"));
	assert_null(strstr(text, "libstdc++.so  "));
	assert_int_equal(function_column(text, "vendor_work"), column_of(text, "vendor_work"));
	assert_int_equal(column_of(text, "std::locale::locale()"), column_of(text, "vendor_work"));
	assert_int_equal(column_of(text, "read\n"), column_of(text, "vendor_work"));
	free(text);

	/* Only short modules shown: the column keeps its 12 columns. */
	o.top = 1;
	text = fx_write(&writer_report, p, &o, NULL);
	assert_non_null(strstr(text, "%  Module        Function\n"));
	free(text);

	/* The call graph: callees of main with their modules, aligned. */
	o.top = 0;
	o.callees = "main";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_non_null(strstr(text, "  libstdc++.so.6.0.30"));
	assert_int_equal(function_column(text, "main\n"), column_of(text, "main\n"));
	assert_int_equal(column_of(text, "vendor_work"), column_of(text, "main\n") + 4);
	assert_int_equal(column_of(text, "std::locale"), column_of(text, "main\n") + 4);
	free(text);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_golden),
		cmocka_unit_test(test_report_top_sort_and_long_names),
		cmocka_unit_test(test_report_empty),
		cmocka_unit_test(test_diff_report_golden),
		cmocka_unit_test(test_report_shortens_only_cxx),
		cmocka_unit_test(test_report_module_column_fits_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
