// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_svg.c - the flame graph writer: golden SVG (the embedded script
 * compared with src/format/flamegraph.js separately), escaping, icicle mode,
 * the differential graph, and the call tree's sorting and aggregation.
 */
#include "outfixture.h"

#include "format/flametree.h"

#define SCRIPT_OPEN  "<script><![CDATA[\n"
#define SCRIPT_CLOSE "]]></script>\n</svg>\n"

/* Replaces the embedded script with a marker after checking it is flamegraph.js. */
static char *strip_script(char *svg)
{
	char *open = strstr(svg, SCRIPT_OPEN), *close, *js;
	size_t len;

	assert_non_null(open);
	open += strlen(SCRIPT_OPEN);
	close = strstr(open, SCRIPT_CLOSE);
	assert_non_null(close);
	assert_string_equal(close, SCRIPT_CLOSE); /* the end of the file */
	assert_int_equal(read_file("src/format/flamegraph.js", 1 << 20, &js, &len), 0);
	assert_int_equal((size_t)(close - open), len);
	assert_memory_equal(open, js, len);
	free(js);
	memmove(open, "(flamegraph.js)\n" SCRIPT_CLOSE,
		strlen("(flamegraph.js)\n" SCRIPT_CLOSE) + 1);
	return svg;
}

static void test_svg_golden(void **state)
{
	struct profile *p = fx_profile();
	char *svg = strip_script(fx_write(&writer_svg, p, NULL, NULL));

	assert_golden("fixture.svg", svg, strlen(svg));
	/* Only the script may run; nothing is fetched from anywhere. */
	assert_null(strstr(svg, "href"));
	assert_null(strstr(svg, "@import"));
	free(svg);
	profile__free(p);
}

static void test_svg_title_escaped_and_inverted(void **state)
{
	struct profile *p = fx_profile();
	struct out_opts o = { .title = "a<b & \"c\"\x01", .inverted = true };
	char *svg = fx_write(&writer_svg, p, &o, NULL);

	assert_non_null(strstr(
		svg, "<text id=\"title\" x=\"600\" y=\"24\">a&lt;b &amp; &quot;c&quot;?</text>"));
	assert_non_null(strstr(svg, "\"inverted\":1"));
	/* Frame names are JSON inside CDATA: '<' '>' '&' escaped, bad UTF-8 replaced. */
	assert_non_null(strstr(svg, "\"we\\u003cird\\u003e\""));
	assert_non_null(strstr(svg, "\"bad\xef\xbf\xbdutf8\""));
	assert_null(strstr(svg, "bad\xff"));
	free(svg);
	profile__free(p);
}

/* Lisp frames (issue 38): a kind of their own, with their own colours and note. */
static void test_svg_lisp_kind(void **state)
{
	struct profile *p = profile__new();
	struct pframe f = { .name = "LISPHOT::ALPHA-WORK",
			    .module = "/usr/lib/sbcl/sbcl.core",
			    .kind = FRAME_LISP };
	int64_t id = profile__frame_src(p, &f);
	uint32_t frames[1];
	struct psample s = { .pid = 1, .comm = "sbcl" };
	char *svg, want[32];

	(void)state;
	assert_true(id >= 0);
	frames[0] = (uint32_t)id;
	assert_int_equal(profile__add(p, &s, frames, 1, 5), 0);
	profile__sort(p);
	svg = strip_script(fx_write(&writer_svg, p, NULL, NULL));
	/* Labels: the root, the process, then the function. */
	snprintf(want, sizeof(want), "\"kinds\":[%d,%d,%d]", (int)FRAME_OTHER, (int)FRAME_OTHER,
		 (int)FRAME_LISP);
	assert_non_null(strstr(svg, want));
	free(svg);
	svg = fx_write(&writer_svg, p, NULL, NULL);
	assert_non_null(strstr(svg, "case 6: /* Lisp"));
	assert_non_null(strstr(svg, "' [Lisp]'"));
	free(svg);
	profile__free(p);
}

static void test_svg_diff_golden(void **state)
{
	struct profile *before = fx_profile(), *after = fx_profile();
	char *svg;

	/* After: leaf_a doubled, the read path gone. */
	FX(after, "app", 100, 101, 50, FX_LIB("__libc_start_main"), FX_USER("main"),
	   FX_USER("compute"), FX_USER("leaf_a"));
	profile__sort(after);
	svg = strip_script(fx_write_diff(&diff_writer_svg, before, after, NULL));
	assert_golden("fixture_diff.svg", svg, strlen(svg));
	assert_non_null(strstr(svg, "\"diff\":1"));
	free(svg);
	profile__free(before);
	profile__free(after);
}

static void test_svg_empty_profile(void **state)
{
	struct profile *p = profile__new();
	char *svg = fx_write(&writer_svg, p, NULL, NULL);

	assert_non_null(strstr(svg, "0 samples"));
	assert_non_null(strstr(svg, "\"nodes\":[0,0,0]"));
	free(svg);
	profile__free(p);
}

/* Checks every node: children sorted, values add up to no more than the parent. */
static void check_tree(const struct flametree *t, uint32_t i)
{
	const struct ftnode *n = flametree__node(t, i);
	const char *prev = NULL;
	uint64_t sum = 0;
	uint32_t kids = 0;

	for (uint32_t c = n->child; c != FT_NONE; c = flametree__node(t, c)->next) {
		const struct ftnode *cn = flametree__node(t, c);
		const char *name = flametree__label(t, cn->label)->name;

		assert_int_equal(cn->parent, i);
		assert_int_equal(cn->depth, n->depth + 1);
		if (prev && name[0] != '[')
			assert_true(strcmp(prev, name) <= 0);
		prev = name;
		sum += cn->value[0];
		kids++;
		check_tree(t, c);
	}
	assert_int_equal(kids, n->nr_children);
	assert_true(sum <= n->value[0]);
}

static void test_flametree_aggregates_small_frames(void **state)
{
	struct profile *p = profile__new();
	struct flametree *t = flametree__new();
	const struct ftnode *root, *comm, *main_n, *agg = NULL;
	char name[32];

	/* main -> 1 hot child (1000) and 300 children of 1 sample each. */
	FX(p, "app", 1, 0, 1000, FX_USER("main"), FX_USER("hot"));
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "cold_%03d", i);
		FX(p, "app", 1, 0, 1, FX_USER("main"), FX_USER(name), FX_USER("deeper"));
	}
	assert_int_equal(flametree__add(t, p, 0), 0);
	assert_int_equal(flametree__finish(t, 2), 0);
	check_tree(t, 0);
	root = flametree__node(t, 0);
	assert_int_equal(root->value[0], 1300);
	comm = flametree__node(t, root->child);
	main_n = flametree__node(t, comm->child);
	assert_string_equal(flametree__label(t, main_n->label)->name, "main");
	assert_int_equal(main_n->value[0], 1300);
	/* hot, then one aggregate holding the 300 cold ones, widths preserved. */
	assert_int_equal(main_n->nr_children, 2);
	for (uint32_t c = main_n->child; c != FT_NONE; c = flametree__node(t, c)->next)
		if (flametree__label(t, flametree__node(t, c)->label)->kind == FRAME_OTHER)
			agg = flametree__node(t, c);
	assert_non_null(agg);
	assert_string_equal(flametree__label(t, agg->label)->name, "[300 small frames]");
	assert_int_equal(agg->value[0], 300);
	assert_int_equal(agg->nr_children, 0);
	assert_int_equal(flametree__max_depth(t), 3);
	flametree__free(t);

	/* Without a threshold everything stays. */
	t = flametree__new();
	assert_int_equal(flametree__add(t, p, 0), 0);
	assert_int_equal(flametree__finish(t, 0), 0);
	check_tree(t, 0);
	assert_int_equal(flametree__max_depth(t), 4);
	flametree__free(t);
	profile__free(p);
}

static void test_flametree_diff_slots(void **state)
{
	struct profile *a = profile__new(), *b = profile__new();
	struct flametree *t = flametree__new();
	const struct ftnode *n;

	FX(a, "app", 1, 0, 10, FX_USER("main"), FX_USER("x"));
	FX(b, "app", 1, 0, 4, FX_USER("main"), FX_USER("x"));
	FX(b, "app", 1, 0, 6, FX_USER("main"), FX_USER("gone"));
	/* Kernel "x" is a different frame from user "x". */
	FX(b, "app", 1, 0, 1, FX_USER("main"), FX_KERN("x"));
	assert_int_equal(flametree__add(t, a, 0), 0);
	assert_int_equal(flametree__add(t, b, 1), 0);
	assert_int_equal(flametree__add(t, b, 2), -EINVAL);
	assert_int_equal(flametree__finish(t, 0), 0);
	assert_int_equal(flametree__total(t, 0), 10);
	assert_int_equal(flametree__total(t, 1), 11);
	n = flametree__node(t, flametree__node(t, flametree__node(t, 0)->child)->child);
	assert_int_equal(n->value[0], 10);
	assert_int_equal(n->value[1], 11);
	/* "gone" and kernel "x" have no width after: dropped. */
	assert_int_equal(n->nr_children, 1);
	n = flametree__node(t, n->child);
	assert_int_equal(n->value[0], 10);
	assert_int_equal(n->value[1], 4);
	flametree__free(t);
	profile__free(a);
	profile__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svg_golden),
		cmocka_unit_test(test_svg_title_escaped_and_inverted),
		cmocka_unit_test(test_svg_diff_golden),
		cmocka_unit_test(test_svg_lisp_kind),
		cmocka_unit_test(test_svg_empty_profile),
		cmocka_unit_test(test_flametree_aggregates_small_frames),
		cmocka_unit_test(test_flametree_diff_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
