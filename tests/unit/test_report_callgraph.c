// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_report_callgraph.c - report --callers, --callees and --call-graph:
 * exact weights and shares of callers and callees, recursion (a stack counts
 * once for a function's total and once for each call in it; a function is
 * not its own caller), one stack reaching a function from two callers,
 * inlined frames as functions, how FUNCTION matches, --top and --sort, the
 * off-CPU and allocation views, and folded and pprof inputs read back.
 */
#include "outfixture.h"

#include "format/reader.h"

static char *report(const struct profile *p, const char *callers, const char *callees, bool graph,
		    unsigned top)
{
	struct out_opts o = {
		.top = top, .callers = callers, .callees = callees, .call_graph = graph
	};

	return fx_write(&writer_report, p, &o, NULL);
}

/* Every line of text fits 80 columns. */
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

static void assert_has(const char *text, const char *want)
{
	if (!strstr(text, want)) {
		print_error("missing:\n%s\nin:\n%s\n", want, text);
		fail();
	}
}

static void assert_lacks(const char *text, const char *bad)
{
	if (strstr(text, bad)) {
		print_error("unexpected:\n%s\nin:\n%s\n", bad, text);
		fail();
	}
}

/*
 * main -> caller_a -> hot            75
 * main -> caller_b -> rec^3 -> hot   25   (rec calls itself: one edge rec -> hot)
 * main -> caller_b -> rec^2          10
 * main -> other                       5
 */
static struct profile *chain_profile(void)
{
	struct profile *p = profile__new();

	assert_non_null(p);
	FX(p, "app", 100, 0, 75, FX_USER("main"), FX_USER("caller_a"), FX_USER("hot"));
	FX(p, "app", 100, 0, 25, FX_USER("main"), FX_USER("caller_b"), FX_USER("rec"),
	   FX_USER("rec"), FX_USER("rec"), FX_USER("hot"));
	FX(p, "app", 100, 0, 10, FX_USER("main"), FX_USER("caller_b"), FX_USER("rec"),
	   FX_USER("rec"));
	FX(p, "app", 100, 0, 5, FX_USER("main"), FX_USER("other"));
	profile__sort(p);
	return p;
}

static void test_callers_exact(void **state)
{
	struct profile *p = chain_profile();
	char *text = report(p, "hot", NULL, false, 20);

	assert_string_equal(
		text,
		"bpfprof report: 115 samples\n"
		"\n"
		"Callers of 'hot' (1 function):\n"
		"Callers above each function's line (self and total, % of all), with what went\n"
		"through that call (% of the function's total).\n"
		"     Self      %     Total      %  Module        Function\n"
		"-------------------------------------------------------------------------------\n"
		"                        75  75.00  app               caller_a\n"
		"                        25  25.00  app               rec\n"
		"      100  86.96       100  86.96  app           hot\n");
	assert_fits_80(text);
	free(text);
	profile__free(p);
}

/* rec: its total counts each stack once (35, not 25*3 + 10*2), its callers
 * do not include itself, its callee hot gets 25 of its 35. */
static void test_recursion(void **state)
{
	struct profile *p = chain_profile();
	char *text = report(p, "rec", "rec", false, 20);

	assert_has(text, "Callers and callees of 'rec' (1 function):\n");
	assert_has(text, "-----\n"
			 "                        35 100.00  app               caller_b\n"
			 "       10   8.70        35  30.43  app           rec\n"
			 "                        25  71.43  app               hot\n");
	assert_lacks(text, "app               rec\n"); /* not its own caller or callee */
	free(text);
	profile__free(p);
}

/* a -> b -> a -> b: each call counted once for the stack; one stack reaches b
 * from a twice, and f from two callers at once. */
static void test_indirect_recursion_and_two_callers(void **state)
{
	struct profile *p = profile__new();
	char *text;

	FX(p, "app", 1, 0, 7, FX_USER("main"), FX_USER("a"), FX_USER("b"), FX_USER("a"),
	   FX_USER("b"));
	FX(p, "app", 1, 0, 3, FX_USER("main"), FX_USER("a"), FX_USER("f"), FX_USER("b"),
	   FX_USER("f"));
	profile__sort(p);
	text = report(p, "b", "b", false, 20);
	/* b's total: 10 (each stack once); a -> b: 7 (twice in one stack, once);
	 * f -> b: 3; b -> a: 7. */
	assert_has(text, "-----\n"
			 "                         7  70.00  app               a\n"
			 "                         3  30.00  app               f\n"
			 "        7  70.00        10 100.00  app           b\n"
			 "                         7  70.00  app               a\n"
			 "                         3  30.00  app               f\n");
	free(text);
	text = report(p, "f", NULL, false, 20);
	/* f is reached from a and from b in one stack: both callers get its 3. */
	assert_has(text, "-----\n"
			 "                         3 100.00  app               a\n"
			 "                         3 100.00  app               b\n"
			 "        3  30.00         3  30.00  app           f\n");
	free(text);
	profile__free(p);
}

/* An inlined frame is a function of its own, between its caller and callee. */
static void test_inline_frames(void **state)
{
	struct profile *p = profile__new();
	char *text;

	FX(p, "app", 1, 0, 40, FX_USER("main"), FX_USER("outer"),
	   { FRAME_INLINE, "inl", "/usr/bin/app" }, FX_USER("leaf"));
	FX(p, "app", 1, 0, 60, FX_USER("main"), FX_USER("outer"), FX_USER("leaf"));
	profile__sort(p);
	text = report(p, "leaf", NULL, false, 20);
	assert_has(text, "-----\n"
			 "                        60  60.00  app               outer\n"
			 "                        40  40.00  app               inl\n"
			 "      100 100.00       100 100.00  app           leaf\n");
	free(text);
	text = report(p, NULL, "outer", false, 20);
	assert_has(text, "-----\n"
			 "        0   0.00       100 100.00  app           outer\n"
			 "                        60  60.00  app               leaf\n"
			 "                        40  40.00  app               inl\n");
	free(text);
	profile__free(p);
}

static void test_matching(void **state)
{
	struct profile *p = profile__new();
	char *text;

	FX(p, "app", 1, 0, 10, FX_USER("main"), FX_USER("parse(char const*)"), FX_USER("leaf_a"));
	FX(p, "app", 1, 0, 20, FX_USER("main"), FX_USER("parse_all"), FX_USER("leaf_b"));
	FX(p, "app", 1, 0, 30, FX_USER("main"), FX_USER("xleaf_c"));
	profile__sort(p);

	assert_int_equal(writer__name_match("parse", "parse"), 0);
	assert_int_equal(writer__name_match("parse(char const*)", "parse"), 1);
	assert_int_equal(writer__name_match("leaf_a", "leaf_?"), 2);
	assert_int_equal(writer__name_match("xleaf_c", "leaf_?"), -1);
	assert_int_equal(writer__name_match("parse_all", "parse"), 3);
	assert_int_equal(writer__name_match("operator[]", "operator[]"), 0);
	assert_int_equal(writer__name_match("x::operator[](int)", "operator[]"), 3);
	assert_int_equal(writer__name_match("anything", ""), -1);

	/* The name without its parameters beats a part of a name. */
	text = report(p, "parse", NULL, false, 20);
	assert_has(text, "Callers of 'parse' (1 function):");
	assert_has(text, "  parse(char const*)\n");
	assert_lacks(text, "parse_all");
	free(text);
	/* A glob matches whole names: leaf_a and leaf_b, not xleaf_c; most first. */
	text = report(p, "leaf_?", NULL, false, 20);
	assert_has(text, "Callers of 'leaf_?' (2 functions):");
	assert_true(strstr(text, "  leaf_b\n") < strstr(text, "  leaf_a\n"));
	assert_lacks(text, "xleaf_c");
	free(text);
	/* --top cuts the blocks and says so. */
	text = report(p, "leaf", NULL, false, 1);
	assert_has(text, "Callers of 'leaf' (1 of 3 functions; --top 0: all):");
	assert_has(text, "  xleaf_c\n");
	free(text);
	text = report(p, "nothing", NULL, false, 20);
	assert_has(text, "\nNo function matches 'nothing'.\n");
	free(text);
	profile__free(p);
}

static void test_call_graph_top_and_sort(void **state)
{
	struct profile *p = chain_profile();
	struct out_opts o = { .top = 2, .call_graph = true };
	char *text = fx_write(&writer_report, p, &o, NULL);

	/* By total: main (115), then hot (100). */
	assert_has(text, "Call graph of the top 2 functions by total samples:\n");
	assert_has(text, "-----\n"
			 "        0   0.00       115 100.00  app           main\n"
			 "                        75  65.22  app               caller_a\n"
			 "                        35  30.43  app               caller_b\n"
			 "                         5   4.35  app               other\n"
			 "-----");
	assert_has(text, "-----\n"
			 "                        75  75.00  app               caller_a\n"
			 "                        25  25.00  app               rec\n"
			 "      100  86.96       100  86.96  app           hot\n");
	assert_lacks(text, "app           rec\n");
	assert_lacks(text, "Top "); /* no flat tables */
	assert_fits_80(text);
	free(text);
	/* By self: hot (100), rec (10). */
	o.sort = "self";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "Call graph of the top 2 functions by self samples:\n");
	assert_has(text, "       10   8.70        35  30.43  app           rec\n");
	assert_lacks(text, "app           main\n");
	free(text);
	profile__free(p);
}

/* The fixture's corners (kernel and JIT frames, no frames, odd names) all fit. */
static void test_fixture_fits(void **state)
{
	struct profile *p = fx_profile();
	char *text = report(p, NULL, NULL, true, 0);

	assert_fits_80(text);
	assert_has(text, "-----\n"
			 "                        10 100.00  app               main\n"
			 "        0   0.00        10   9.09  libc.so.6     read\n"
			 "                        10 100.00  [kernel]          entry_SYSCALL_64\n");
	free(text);
	profile__free(p);
}

/* Off-CPU time: the call graph of each view, in its unit. */
static void test_offcpu_views(void **state)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 1, .comm = "app" };
	uint32_t ids[3];
	char *text;

	profile__meta(p)->offcpu = true;
	ids[0] = (uint32_t)profile__frame(p, FRAME_USER, "main", "/usr/bin/app");
	ids[1] = (uint32_t)profile__frame(p, FRAME_USER, "reader", "/usr/bin/app");
	ids[2] = (uint32_t)profile__frame(p, FRAME_KERNEL, "schedule", NULL);
	assert_int_equal(profile__add(p, &s, ids, 2, 4), 0);
	assert_int_equal(profile__add_offcpu(p, &s, ids, 3, 3000000), 0);
	ids[1] = (uint32_t)profile__frame(p, FRAME_USER, "writer", "/usr/bin/app");
	assert_int_equal(profile__add_offcpu(p, &s, ids, 3, 1000000), 0);
	profile__sort(p);
	text = report(p, "schedule", NULL, false, 20);
	/* On-CPU: schedule never ran. Off-CPU: 3 ms from reader, 1 ms from writer. */
	assert_has(text, "bpfprof report, on-CPU:");
	assert_has(text, "\n'schedule': no samples there or in a callee\n"
			 "(it is in the profile, not in this view).\n");
	assert_has(text, "bpfprof report, off-CPU:");
	assert_has(text, "Callers of 'schedule' (1 function), \u00b5s:\n");
	assert_has(text, "-----\n"
			 "                     3,000  75.00  app               reader\n"
			 "                     1,000  25.00  app               writer\n"
			 "    4,000 100.00     4,000 100.00  [kernel]      schedule\n");
	assert_fits_80(text);
	free(text);
	profile__free(p);
}

/*
 * An allocation profile: the call graph of its --view, in its unit; a site
 * that freed all it allocated is in the profile, not in the in-use view;
 * the process table names the value and its unit.
 *   main -> sites -> site_freed   300 allocations, 3,000,000 bytes, none in use
 *   main -> sites -> site_kept    100 allocations, 1,000,000 bytes, all in use
 */
static void test_alloc_views(void **state)
{
	static const struct {
		const char *leaf;
		struct palloc v;
	} sites[] = {
		{ "site_freed", { 300, 3000000, 0, 0 } },
		{ "site_kept", { 100, 1000000, 100, 1000000 } },
	};
	struct profile *p = profile__new();
	struct psample s = { .pid = 7, .comm = "app" };
	struct out_opts o = { .top = 20, .callees = "sites", .view = VIEW_ALLOC_SPACE };
	uint32_t ids[3];
	char *text;

	profile__meta(p)->alloc_period = 524288;
	ids[0] = (uint32_t)profile__frame(p, FRAME_USER, "main", "/usr/bin/app");
	ids[1] = (uint32_t)profile__frame(p, FRAME_USER, "sites", "/usr/bin/app");
	for (size_t i = 0; i < ARRAY_SIZE(sites); i++) {
		ids[2] = (uint32_t)profile__frame(p, FRAME_USER, sites[i].leaf, "/usr/bin/app");
		assert_int_equal(profile__add_alloc(p, &s, ids, 3, &sites[i].v), 0);
	}
	profile__sort(p);
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "bpfprof report: 4,000,000 bytes of memory allocated\n");
	assert_has(text, "Callees of 'sites' (1 function), bytes:\n");
	assert_has(text, "-----\n"
			 "        0   0.00 4,000,000 100.00  app           sites\n"
			 "                 3,000,000  75.00  app               site_freed\n"
			 "                 1,000,000  25.00  app               site_kept\n");
	assert_fits_80(text);
	free(text);
	o.view = VIEW_ALLOC_OBJECTS;
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "Callees of 'sites' (1 function), allocs:\n");
	assert_has(text, "-----\n"
			 "        0   0.00       400 100.00  app           sites\n"
			 "                       300  75.00  app               site_freed\n"
			 "                       100  25.00  app               site_kept\n");
	free(text);
	o.view = VIEW_INUSE_SPACE;
	o.callees = NULL;
	o.callers = "site_*";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "Callers of 'site_*' (1 function), bytes:\n");
	assert_has(text, "-----\n"
			 "                 1,000,000 100.00  app               sites\n"
			 "1,000,000 100.00 1,000,000 100.00  app           site_kept\n");
	assert_lacks(text, "site_freed");
	free(text);
	o.callers = "site_freed";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "\n'site_freed': no memory in use there or in a callee\n"
			 "(it is in the profile, not in this view).\n");
	free(text);
	o.callers = "nothing";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "\nNo function matches 'nothing'.\n");
	free(text);
	/* The tables: the process table in the view's value and unit. */
	o = (struct out_opts){ .top = 20, .view = VIEW_INUSE_OBJECTS };
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "\nMemory in use by process (allocs, 1 of 1):\n"
			 "   Allocs      %      PID  Command\n"
			 "      100 100.00        7  app\n");
	free(text);
	o.view = VIEW_ALLOC_SPACE;
	text = fx_write(&writer_report, p, &o, NULL);
	assert_has(text, "\nMemory allocated by process (bytes, 1 of 1):\n"
			 "    Bytes      %      PID  Command\n"
			 "4,000,000 100.00        7  app\n");
	free(text);
	profile__free(p);
}

/* Folded text and pprof read back give the same call graph. */
static void test_read_back(void **state)
{
	static const char folded[] = "app;main;caller_a;hot 75\n"
				     "app;main;caller_b;rec;rec;rec;hot 25\n"
				     "app;main;caller_b;rec;rec 10\n"
				     "app;main;other 5\n";
	struct profile *f = profile__new(), *mem = chain_profile(), *pp = profile__new();
	struct errmsg em = { 0 };
	char *want, *got, *pb;
	size_t len;

	assert_int_equal(reader_folded.read((const uint8_t *)folded, strlen(folded), f, &em), 0);
	profile__sort(f);
	got = report(f, "rec", "rec", false, 20);
	/* Folded frames have no module: the same numbers, an empty module column. */
	assert_has(got, "-----\n"
			"                        35 100.00                    caller_b\n"
			"       10   8.70        35  30.43                rec\n"
			"                        25  71.43                    hot\n");
	free(got);

	pb = fx_write(&writer_pprof, mem, NULL, &len);
	assert_int_equal(reader_pprof.read((const uint8_t *)pb, len, pp, &em), 0);
	profile__sort(pp);
	want = report(mem, "hot", "caller_b", true, 0);
	got = report(pp, "hot", "caller_b", true, 0);
	assert_string_equal(strchr(got, '\n'), strchr(want, '\n')); /* past the header */
	free(want);
	free(got);
	free(pb);
	profile__free(f);
	profile__free(mem);
	profile__free(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callers_exact),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_indirect_recursion_and_two_callers),
		cmocka_unit_test(test_inline_frames),
		cmocka_unit_test(test_matching),
		cmocka_unit_test(test_call_graph_top_and_sort),
		cmocka_unit_test(test_fixture_fits),
		cmocka_unit_test(test_offcpu_views),
		cmocka_unit_test(test_alloc_views),
		cmocka_unit_test(test_read_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
