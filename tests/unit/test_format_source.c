// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_source.c - frames with source files and lines (Python, Go),
 * and inlined frames, in every format: folded labels with and without
 * --lines and their round trip, pprof Function.filename / Line.line and
 * inlined lines in one Location (written, then read back), speedscope's
 * file and line, the SVG labels and the report's file column.
 */
#include "outfixture.h"

#include "format/flametree.h"
#include "format/reader.h"

static uint32_t frame(struct profile *p, enum frame_kind kind, const char *name, const char *module,
		      const char *file, uint32_t line)
{
	struct pframe f = {
		.name = name, .module = module, .kind = kind, .file = file, .line = line
	};
	int64_t id = profile__frame_src(p, &f);

	assert_true(id >= 0);
	return (uint32_t)id;
}

/*
 * python3: native root, two Python frames at two lines of alpha_leaf, a C
 * function called from Python. gohot: main.main with main.leaf inlined into it.
 */
static struct profile *source_profile(void)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 10, .comm = "python3" };
	uint32_t f[6];

	assert_non_null(p);
	profile__meta(p)->freq_hz = 99;
	f[0] = frame(p, FRAME_USER, "Py_RunMain", "/usr/bin/python3.11", NULL, 0);
	f[1] = frame(p, FRAME_PYTHON, "<module>", NULL, "/srv/app.py", 30);
	f[2] = frame(p, FRAME_PYTHON, "alpha_leaf", NULL, "/srv/app.py", 12);
	assert_int_equal(profile__add(p, &s, f, 3, 7), 0);
	f[2] = frame(p, FRAME_PYTHON, "alpha_leaf", NULL, "/srv/app.py", 13);
	assert_int_equal(profile__add(p, &s, f, 3, 5), 0);
	f[2] = frame(p, FRAME_PYTHON, "Enc.run", NULL, "/usr/lib/python3.11/json/__init__.py", 231);
	f[3] = frame(p, FRAME_USER, "encoder_call", "/usr/lib/python3.11/_json.so", NULL, 0);
	assert_int_equal(profile__add(p, &s, f, 4, 2), 0);

	s = (struct psample){ .pid = 20, .comm = "gohot" };
	f[0] = frame(p, FRAME_USER, "runtime.main", "/bin/gohot", "/go/src/runtime/proc.go", 250);
	f[1] = frame(p, FRAME_USER, "main.main", "/bin/gohot", "/src/main.go", 40);
	f[2] = frame(p, FRAME_INLINE, "main.mid", "/bin/gohot", "/src/main.go", 30);
	f[3] = frame(p, FRAME_INLINE, "main.leaf", "/bin/gohot", "/src/main.go", 20);
	assert_int_equal(profile__add(p, &s, f, 4, 3), 0);
	profile__sort(p);
	return p;
}

static void test_frame_identity(void **state)
{
	struct profile *p = profile__new();
	uint32_t a, b, c;

	(void)state;
	a = frame(p, FRAME_PYTHON, "f", NULL, "/a.py", 1);
	b = frame(p, FRAME_PYTHON, "f", NULL, "/a.py", 2);
	c = frame(p, FRAME_PYTHON, "f", NULL, "/b.py", 1);
	assert_true(a != b && a != c && b != c);
	assert_int_equal(frame(p, FRAME_PYTHON, "f", NULL, "/a.py", 1), a);
	assert_string_equal(profile__frame_get(p, b)->file, "/a.py");
	assert_int_equal(profile__frame_get(p, b)->line, 2);
	/* The old constructor makes frames without a source. */
	assert_null(
		profile__frame_get(p, (uint32_t)profile__frame(p, FRAME_USER, "x", "/m"))->file);
	profile__free(p);
}

static void test_labels(void **state)
{
	struct pframe py = {
		.name = "alpha", .kind = FRAME_PYTHON, .file = "/srv/app.py", .line = 12
	};
	struct pframe pkg = { .name = "dumps",
			      .kind = FRAME_PYTHON,
			      .file = "/usr/lib/python3.11/json/__init__.py" };
	struct pframe go = { .name = "main.leaf",
			     .module = "/bin/x",
			     .kind = FRAME_INLINE,
			     .file = "/src/main.go",
			     .line = 20 };
	char buf[256];

	(void)state;
	writer__frame_label(&py, buf, sizeof(buf));
	assert_string_equal(buf, "alpha (app.py)_[py]");
	writer__frame_label_lines(&py, true, buf, sizeof(buf));
	assert_string_equal(buf, "alpha (app.py:12)_[py]");
	writer__frame_label_lines(&pkg, true, buf, sizeof(buf));
	assert_string_equal(buf, "dumps (json/__init__.py)_[py]");
	writer__frame_label(&go, buf, sizeof(buf));
	assert_string_equal(buf, "main.leaf_[i]");
	writer__frame_label_lines(&go, true, buf, sizeof(buf));
	assert_string_equal(buf, "main.leaf (main.go:20)_[i]");
	assert_string_equal(writer__short_file("app.py"), "app.py");
	assert_string_equal(writer__short_file("/__init__.py"), "/__init__.py");
}

static void test_folded(void **state)
{
	struct profile *p = source_profile(), *q;
	struct out_opts lines = { .lines = true };
	struct errmsg err = { 0 };
	char *out, *out2;

	(void)state;
	out = fx_write(&writer_folded, p, NULL, NULL);
	/* Lines merged: alpha_leaf's two lines are one line of output. */
	assert_string_equal(
		out, "gohot;runtime.main;main.main;main.mid_[i];main.leaf_[i] 3\n"
		     "python3;Py_RunMain;<module> (app.py)_[py];Enc.run "
		     "(json/__init__.py)_[py];encoder_call 2\n"
		     "python3;Py_RunMain;<module> (app.py)_[py];alpha_leaf (app.py)_[py] 12\n");
	free(out);
	out = fx_write(&writer_folded, p, &lines, NULL);
	assert_string_equal(
		out,
		"gohot;runtime.main (proc.go:250);main.main (main.go:40);main.mid "
		"(main.go:30)_[i];main.leaf (main.go:20)_[i] 3\n"
		"python3;Py_RunMain;<module> (app.py:30)_[py];Enc.run "
		"(json/__init__.py:231)_[py];encoder_call 2\n"
		"python3;Py_RunMain;<module> (app.py:30)_[py];alpha_leaf (app.py:12)_[py] 7\n"
		"python3;Py_RunMain;<module> (app.py:30)_[py];alpha_leaf (app.py:13)_[py] 5\n");
	/* Read back: kinds, files and lines survive, so the text is the same. */
	q = profile__new();
	assert_int_equal(reader_folded.read((const uint8_t *)out, strlen(out), q, &err), 0);
	profile__sort(q);
	out2 = fx_write(&writer_folded, q, &lines, NULL);
	assert_string_equal(out2, out);
	for (size_t i = 0; i < profile__nr_frames(q); i++) {
		const struct pframe *f = profile__frame_get(q, (uint32_t)i);

		if (!strcmp(f->name, "alpha_leaf")) {
			assert_int_equal(f->kind, FRAME_PYTHON);
			assert_string_equal(f->file, "app.py");
			assert_true(f->line == 12 || f->line == 13);
		}
		if (!strcmp(f->name, "main.leaf")) {
			assert_int_equal(f->kind, FRAME_INLINE);
			assert_int_equal(f->line, 20);
		}
		/* A name with parentheses that are no source stays whole. */
		assert_null(strstr(f->name, " ("));
	}
	free(out2);
	free(out);
	profile__free(q);

	/* Things that look like sources but are not. */
	{
		const char *text = "c;f (x);g (y:z);h (a:0);k ()_[py];m (n:5 1\n";
		const char *names[] = { "f (x)", "g (y:z)", "h (a:0)", "k ()", "m (n:5" };

		q = profile__new();
		assert_int_equal(reader_folded.read((const uint8_t *)text, strlen(text), q, &err),
				 0);
		assert_int_equal(profile__nr_frames(q), 5);
		for (size_t i = 0; i < 5; i++) {
			assert_string_equal(profile__frame_get(q, (uint32_t)i)->name, names[i]);
			assert_null(profile__frame_get(q, (uint32_t)i)->file);
		}
		profile__free(q);
	}
	profile__free(p);
}

static const struct pframe *find(const struct profile *p, const char *name, uint32_t line)
{
	for (size_t i = 0; i < profile__nr_frames(p); i++) {
		const struct pframe *f = profile__frame_get(p, (uint32_t)i);

		if (!strcmp(f->name, name) && (!line || f->line == line))
			return f;
	}
	return NULL;
}

static void test_pprof_round_trip(void **state)
{
	struct profile *p = source_profile(), *q;
	struct errmsg err = { 0 };
	char *out, *out2;
	const struct pframe *f;
	size_t len;

	(void)state;
	out = fx_write(&writer_pprof, p, NULL, &len);
	q = profile__new();
	assert_int_equal(reader_pprof.read((const uint8_t *)out, len, q, &err), 0);
	assert_int_equal(profile__total(q), 17);
	f = find(q, "alpha_leaf", 13);
	assert_non_null(f);
	assert_int_equal(f->kind, FRAME_PYTHON);
	assert_string_equal(f->file, "/srv/app.py");
	assert_null(f->module);
	f = find(q, "main.leaf", 0);
	assert_non_null(f);
	assert_int_equal(f->kind, FRAME_INLINE);
	assert_string_equal(f->file, "/src/main.go");
	assert_int_equal(f->line, 20);
	assert_string_equal(f->module, "/bin/gohot");
	f = find(q, "main.main", 0);
	assert_int_equal(f->kind, FRAME_USER);
	assert_int_equal(f->line, 40);
	/* Same stacks and text both ways. */
	profile__sort(q);
	{
		struct out_opts lines = { .lines = true };

		out2 = fx_write(&writer_folded, q, &lines, NULL);
		free(out);
		out = fx_write(&writer_folded, p, &lines, NULL);
		/* pprof keeps full paths: the labels show base names either way. */
		assert_string_equal(out2, out);
	}
	free(out);
	free(out2);
	profile__free(q);
	profile__free(p);
}

static void test_speedscope(void **state)
{
	struct profile *p = source_profile();
	char *out;

	(void)state;
	out = fx_write(&writer_speedscope, p, NULL, NULL);
	assert_non_null(strstr(out,
			       "{\"name\":\"alpha_leaf (app.py)_[py]\",\"file\":\"/srv/app.py\","
			       "\"line\":13}"));
	assert_non_null(strstr(out, "{\"name\":\"main.leaf_[i]\",\"file\":\"/src/main.go\","
				    "\"line\":20}"));
	assert_non_null(strstr(out, "{\"name\":\"Py_RunMain\",\"file\":\"/usr/bin/python3.11\"}"));
	free(out);
	profile__free(p);
}

static void test_svg_and_report(void **state)
{
	struct profile *p = source_profile();
	struct flametree *t;
	struct out_opts o = { .top = 20 };
	size_t alpha = 0;
	char *out;

	(void)state;
	for (int lines = 0; lines < 2; lines++) {
		t = flametree__new();
		flametree__set_lines(t, lines);
		assert_int_equal(flametree__add(t, p, 0), 0);
		alpha = 0;
		for (size_t i = 0; i < flametree__nr_labels(t); i++) {
			const struct ftlabel *l = flametree__label(t, (uint32_t)i);

			if (!strncmp(l->name, "alpha_leaf (app.py", 18)) {
				assert_int_equal(l->kind, FRAME_PYTHON);
				alpha++;
			}
		}
		assert_int_equal(alpha, lines ? 2 : 1);
		flametree__free(t);
	}
	out = fx_write(&writer_report, p, &o, NULL);
	/* One row for both lines, with the file as its module. */
	assert_non_null(strstr(out, "12  70.59  app.py        alpha_leaf\n"));
	free(out);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_identity), cmocka_unit_test(test_labels),
		cmocka_unit_test(test_folded),	       cmocka_unit_test(test_pprof_round_trip),
		cmocka_unit_test(test_speedscope),     cmocka_unit_test(test_svg_and_report),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
