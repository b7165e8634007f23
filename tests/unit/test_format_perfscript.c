// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_perfscript.c - the perf script reader on perf's own output
 * (tests/unit/data/perf-script/: real `perf record` + `perf script` runs of
 * perf 6.1, trimmed): default fields, -a's CPU field, command names with
 * spaces, -F +pid, no call graph, -F +srcline, -F ip,sym, --header, two
 * events, --call-graph dwarf's inlined frames and CPython's perf map
 * entries; hand-written lines for what those runs lack; malformed input;
 * and what "bpfprof report" says of files it recognises but does not read
 * (perf.data, SVG, speedscope).
 */
#include "outfixture.h"

#include <zlib.h>

#include "format/reader.h"

#define DATA "tests/unit/data/perf-script/"

static struct profile *read_file_opts(const char *path, const char *event, struct errmsg *em)
{
	struct input_opts io = { .event = event };
	const char *format = NULL;
	struct profile *p = reader__read_path_opts(path, &io, &format, em);

	if (p) {
		assert_string_equal(format, "perf script");
		profile__sort(p);
	}
	return p;
}

static struct profile *read_text(const char *text, const char *event, struct errmsg *em)
{
	struct input_opts io = { .event = event };
	struct profile *p = profile__new();

	assert_non_null(p);
	assert_true(perfscript__sniff((const uint8_t *)text, strlen(text)));
	if (reader_perf_script.read_opts((const uint8_t *)text, strlen(text), p, &io, em)) {
		assert_true(em->msg[0] != '\0');
		profile__free(p);
		return NULL;
	}
	profile__sort(p);
	return p;
}

static char *folded_of(const struct profile *p, bool lines)
{
	struct out_opts o = { .lines = lines };

	return fx_write(&writer_folded, p, &o, NULL);
}

static void assert_folded(const struct profile *p, const char *want)
{
	char *out = folded_of(p, false);

	if (strcmp(out, want))
		fail_msg("folded:\n%s\nwanted:\n%s", out, want);
	free(out);
}

static const struct pframe *frame_named(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < profile__nr_frames(p); i++)
		if (!strcmp(profile__frame_get(p, (uint32_t)i)->name, name))
			return profile__frame_get(p, (uint32_t)i);
	fail_msg("no frame %s", name);
	return NULL;
}

/* perf record -e cpu-clock -e task-clock -g: events are never mixed. */
static void test_two_events(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "two-events.txt", NULL, &em);

	assert_non_null(p);
	/* The first event's three samples; the note says what was left out. */
	assert_int_equal(profile__total(p), 3);
	assert_string_equal(em.msg, "read the 3 samples of cpu-clock, the event with the most; "
				    "left out task-clock 2");
	assert_string_equal(em.hint, "events are not mixed: --event NAME reads another one");
	assert_folded(p, "busy;__libc_start_call_main;main;run;outer_loop;leaf_a 1\n"
			 "busy;__libc_start_call_main;main;run;outer_loop;leaf_b 2\n");
	/* Default fields: thread ids only, so no pid. */
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		assert_int_equal(profile__sample(p, i)->pid, 0);
		assert_int_equal(profile__sample(p, i)->tid, 4736);
	}
	assert_string_equal(frame_named(p, "leaf_b")->module,
			    "/work/wt/firsthour/build/workloads/busy");
	assert_int_equal(profile__meta_c(p)->duration_ns, 30002000); /* last - first sample */
	profile__free(p);

	p = read_file_opts(DATA "two-events.txt", "task-clock", &em);
	assert_non_null(p);
	assert_int_equal(profile__total(p), 2);
	assert_string_equal(em.msg, ""); /* asked for: no note */
	profile__free(p);

	assert_null(read_file_opts(DATA "two-events.txt", "cycles", &em));
	assert_string_equal(em.msg,
			    "no samples of event 'cycles' (it has cpu-clock 3, task-clock 2)");
}

/* perf record -a -g: the CPU field, kernel frames, [unknown] frames. */
static void test_all_cpus_kernel_unknown(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "all-cpus.txt", "cpu-clock", &em);
	const struct pframe *k;

	assert_non_null(p);
	assert_folded(
		p, "bpfprof;[unknown];__tfind 1\n"
		   "bpfprof;[unknown];syscall;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];"
		   "__x64_sys_bpf_[k];__sys_bpf_[k];bpf_prog_load_[k];bpf_check_[k];"
		   "do_misc_fixups_[k];tracing_prog_func_proto_[k];bpf_tracing_func_proto_[k];"
		   "bpf_base_func_proto_[k];security_locked_down_[k] 1\n"
		   "clang;llvm::StringMapImpl::LookupBucketFor 1\n"
		   "python3.11;[unknown];[unknown];PyObject_Free 1\n");
	k = frame_named(p, "do_syscall_64");
	assert_int_equal(k->kind, FRAME_KERNEL);
	assert_null(k->module); /* [kernel.kallsyms]: the kernel itself */
	assert_null(frame_named(p, "[unknown]")->module);
	assert_string_equal(frame_named(p, "__tfind")->module,
			    "/usr/lib/x86_64-linux-gnu/libc.so.6");
	profile__free(p);
}

/* A command name with spaces, and -F +pid's PID/TID. */
static void test_comm_with_spaces_and_pids(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "comm-spaces-pid.txt", NULL, &em);

	assert_non_null(p);
	assert_int_equal(profile__nr_samples(p), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct psample *s = profile__sample(p, i);

		assert_string_equal(s->comm, "my worker 1");
		assert_int_equal(s->pid, 4769);
		assert_true(s->tid == 4769 || s->tid == 4813);
	}
	profile__free(p);
}

/* perf record without -g: one line a sample, the comm right-aligned. */
static void test_no_callgraph(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "no-callgraph.txt", NULL, &em);

	assert_non_null(p);
	assert_folded(p, "busy;leaf_a 3\n");
	profile__free(p);
}

/* -F +srcline: a frame's source line; -F ip,sym: no sample line; --header. */
static void test_srcline_ipsym_header(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "srcline.txt", NULL, &em);
	char *out;

	assert_non_null(p);
	out = folded_of(p, true);
	assert_string_equal(
		out, "cxxwork;__libc_start_call_main (libc-start.c:74);"
		     "main (cxxwork.cc:41);wl::Accumulator<double>::spin (cxxwork.cc:19) 2\n");
	free(out);
	profile__free(p);

	p = read_file_opts(DATA "ip-sym.txt", NULL, &em);
	assert_non_null(p);
	assert_folded(p, "[unknown];__libc_start_call_main;main;wl::Accumulator<double>::spin 2\n");
	profile__free(p);

	p = read_file_opts(DATA "header.txt", NULL, &em);
	assert_non_null(p);
	assert_folded(p, "cxxwork;__libc_start_call_main;main;wl::Accumulator<double>::spin 1\n");
	profile__free(p);
}

/* --call-graph dwarf: "(inlined)" frames; CPython 3.12's -X perf map entries. */
static void test_inlined_and_python(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p = read_file_opts(DATA "python-inlined.txt", NULL, &em);
	const struct pframe *f;

	assert_non_null(p);
	assert_folded(p,
		      "python3.12;json_work (spin.py)_[py];_PyEval_EvalFrameDefault;_PyObject_Free;"
		      "_PyObject_Free;pymalloc_free_[i];address_in_range_[i];"
		      "arena_map_is_used_[i];arena_map_get_[i] 1\n");
	f = frame_named(p, "json_work");
	assert_int_equal(f->kind, FRAME_PYTHON);
	assert_string_equal(f->file, "/tmp/fhperf/spin.py");
	f = frame_named(p, "arena_map_get");
	assert_int_equal(f->kind, FRAME_INLINE);
	assert_string_equal(f->module, "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0");
	profile__free(p);
}

/* What the recordings above lack, written by hand in perf's layout. */
static void test_hand_written_forms(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p;

	/* A kernel module, the vDSO, a JIT map, an unnamed address in a known
	 * file, a name ending in digits, a command that is "a 1 2". */
	p = read_text("a 1 2  77/78 [003] 10.000001:  1 cycles:u: \n"
		      "\tffffffffc0a01234 nf_hook_slow+0x44 ([nf_conntrack])\n"
		      "\t    7ffd1234 __vdso_gettimeofday+0x10 ([vdso])\n"
		      "\t    7f0012345678 LFoo;::bar (/tmp/perf-77.map)\n"
		      "\t            80c5 [unknown] (/usr/lib/libfoo.so.1)\n"
		      "\t            1000 main (/opt/my app (v2)/bin/app)\n"
		      "\n",
		      NULL, &em);
	assert_non_null(p);
	assert_folded(p, "a 1 2;main;libfoo.so.1+0x80c5;LFoo:::bar_[j];__vdso_gettimeofday;"
			 "nf_hook_slow_[k] 1\n");
	assert_int_equal(profile__sample(p, 0)->pid, 77);
	assert_int_equal(profile__sample(p, 0)->tid, 78);
	assert_string_equal(profile__sample(p, 0)->comm, "a 1 2");
	assert_string_equal(frame_named(p, "nf_hook_slow")->module, "nf_conntrack");
	assert_int_equal(frame_named(p, "__vdso_gettimeofday")->kind, FRAME_USER);
	assert_string_equal(frame_named(p, "__vdso_gettimeofday")->module, "[vdso]");
	assert_string_equal(frame_named(p, "main")->module, "/opt/my app (v2)/bin/app");
	profile__free(p);

	/* A tracepoint's fields after the event are not a frame; CRLF; no final newline. */
	p = read_text(
		"sh 5 [000] 1.5: sched:sched_switch: prev_comm=sh prev_pid=5 ==> next_pid=0\r\n"
		"\tffffffff81000000 __schedule+0x1 ([kernel.kallsyms])\r\n"
		"\r\n"
		"sh 5 [000] 1.6: sched:sched_switch: prev_comm=sh prev_pid=5 ==> next_pid=0\r\n"
		"\tffffffff81000000 __schedule+0x1 ([kernel.kallsyms])",
		"sched:sched_switch", &em);
	assert_non_null(p);
	assert_folded(p, "sh;__schedule_[k] 2\n");
	profile__free(p);

	/* -F comm,tid (no time, no event): still samples, with their frames. */
	p = read_text("app  12 \n\t  10 f (/bin/app)\n\napp  12 \n\t  10 f (/bin/app)\n", NULL,
		      &em);
	assert_non_null(p);
	assert_folded(p, "app;f 2\n");
	profile__free(p);
}

static void expect_error_n(const char *text, size_t len, const char *needle)
{
	struct errmsg em = { 0 };
	struct profile *p = profile__new();
	int rc = reader_perf_script.read((const uint8_t *)text, len, p, &em);

	if (!rc || !strstr(em.msg, needle))
		fail_msg("'%s' not in '%s' (rc %d)", needle, em.msg, rc);
	profile__free(p);
}

static void expect_error(const char *text, const char *needle)
{
	expect_error_n(text, strlen(text), needle);
}

static void test_malformed(void **state)
{
	char *deep;
	size_t n = 0;

	expect_error("app 1 1.0: cpu-clock:\n\tnot a frame\n", "line 2: expected a frame");
	expect_error("no pid here at all:\n\t10 f (x)\n", "line 1: expected a sample");
	expect_error("app 99999999999 1.0: cpu-clock:\n\t10 f (x)\n", "line 1: bad process");
	expect_error_n("app 1 1.0: cpu-clock:\n\t10 f (x)\n\0", 33, "NUL bytes");
	expect_error("# only a header\n#\n", "no samples");
	expect_error("app 1 1.0: cpu-clock:\n\t10000000000000000 f (x)\n", "expected a frame");
	/* More frames than a stack may have. */
	deep = malloc(40 * (INPUT_MAX_DEPTH + 2));
	assert_non_null(deep);
	n += (size_t)sprintf(deep, "app 1 1.0: cpu-clock:\n");
	for (int i = 0; i <= INPUT_MAX_DEPTH; i++)
		n += (size_t)sprintf(deep + n, "\t%x f (x)\n", i);
	expect_error(deep, "more than 65536 frames");
	free(deep);
}

/*
 * A line not understood costs its sample, counted in the note, not the file:
 * perf prints names as they are, and a process names itself.
 */
static void test_odd_lines_cost_their_sample(void **state)
{
	struct errmsg em = { 0 };
	struct profile *p;

	p = read_text("app 1 1.0: cpu-clock:\n\t10 f (x)\n\n"
		      "no pid here at all:\n\t10 g (x)\n\n"
		      "app 1 1.1: cpu-clock:\n\t10 f (x)\n\tnot a frame\n\t10 main (x)\n\n"
		      "app 1 1.2: cpu-clock:\n\t10 f (x)\n",
		      NULL, &em);
	assert_non_null(p);
	assert_folded(p, "app;f 2\n");
	assert_string_equal(em.msg, "left out 2 unreadable samples (first: line 4: expected a "
				    "sample, \"COMMAND PID/TID TIME: EVENT:\")");
	profile__free(p);

	/*
	 * A name that reads like perf's fields ("x 1 1.0: y" - perf prints
	 * names as they are) is the name: the pid is the number perf's
	 * fields follow, and the event read is the one with the most samples,
	 * not the first line's.
	 */
	p = read_text("x 1 1.0: 9 e:  66 [000] 5.0:  10 cpu-clock:\n\t10 evil (x)\n\n"
		      "app 7 [001] 5.1:  10 cpu-clock:\n\t10 f (x)\n\n"
		      "app 7 [001] 5.2:  10 cpu-clock:\n\t10 f (x)\n\n"
		      "y 1 1.0: e:\n\t10 evil2 (x)\n\n",
		      NULL, &em);
	assert_non_null(p);
	assert_folded(p, "app;f 2\nx 1 1.0: 9 e:;evil 1\n");
	assert_int_equal(profile__sample(p, 1)->tid, 66);
	assert_string_equal(em.msg, "read the 3 samples of cpu-clock, the event with the most; "
				    "left out e 1");
	profile__free(p);
}

/* Many distinct event names: a bounded table, the rest counted as others. */
static void test_many_events(void **state)
{
	struct errmsg em = { 0 };
	char text[8192];
	size_t n = 0;
	struct profile *p;

	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "app 1 1.0: ev%d:\n\t10 f (x)\n\n", i);
	p = read_text(text, NULL, &em);
	assert_non_null(p);
	assert_int_equal(profile__total(p), 1);
	assert_non_null(strstr(em.msg, "ev15 1, others 24"));
	profile__free(p);
}

/* Sniffing: perf script's text, not folded stacks (whose lines end in a count). */
static void test_sniff(void **state)
{
	static const char *const perf[] = {
		"app 1 1.0: cpu-clock:\n\t10 f (x)\n",
		"\n\t    10 f\n",
		"# ========\n# header\n#\napp 1 [000] 1.0: cpu-clock:\n",
		"   busy  4846  1154.710642:    5025125 cpu-clock:ppp:      55b6 leaf_a (x)\n",
		/* A name with a new line in it, first in the file: "e" alone on a line. */
		"e\nx 1 1.0: 9 e: 17/17 [000] 12.5: 5 cpu-clock:\n\t 10 f (x)\n",
	};
	static const char *const folded[] = { "app;main;f 10\n", "a 1 2;b 3\n",
					      "my app 2 1.0:;x 1\n" };

	for (size_t i = 0; i < ARRAY_SIZE(perf); i++)
		assert_ptr_equal(reader__sniff((const uint8_t *)perf[i], strlen(perf[i])),
				 &reader_perf_script);
	for (size_t i = 0; i < ARRAY_SIZE(folded); i++)
		assert_ptr_equal(reader__sniff((const uint8_t *)folded[i], strlen(folded[i])),
				 &reader_folded);
}

static char *gz(const char *s, size_t *len)
{
	uLongf cap = compressBound(strlen(s)) + 32;
	char *out = malloc(cap);
	z_stream zs = { 0 };

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)s;
	zs.avail_in = (uInt)strlen(s);
	zs.next_out = (Bytef *)out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

/* Files people pass that are not profiles bpfprof reads: what they are, what to do. */
static void test_foreign_files(void **state)
{
	static const struct {
		const char *content, *msg, *hint;
	} cases[] = {
		{ "PERFILE2h\0\0\0\0\0\0\0",
		  "this is a perf.data file (perf record's binary format)",
		  "perf script -i PATH > PATH.txt" },
		{ "<?xml version=\"1.0\"?>\n<svg version=\"1.1\"><script id=\"fg-data\">",
		  "this is an SVG image (a bpfprof flame graph), which cannot be read back",
		  "record with -o x.pb.gz" },
		{ "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"}",
		  "this is a speedscope file, which bpfprof writes but does not read",
		  "the profile it was made from" },
		{ "<!DOCTYPE html><html>", "this is a web page (HTML), not a profile", "" },
	};
	struct errmsg em = { 0 };
	char *path, want[512];
	size_t len;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t clen = i == 0 ? 16 : strlen(cases[i].content);

		path = write_temp(cases[i].content, clen);
		assert_null(reader__read_path(path, &em));
		if (!strstr(em.msg, cases[i].msg))
			fail_msg("'%s' not in '%s'", cases[i].msg, em.msg);
		snprintf(want, sizeof(want), "%s", cases[i].hint);
		for (char *at; (at = strstr(want, "PATH"));) {
			char rest[512];

			snprintf(rest, sizeof(rest), "%s", at + 4);
			snprintf(at, sizeof(want) - (size_t)(at - want), "%s%s", path, rest);
		}
		if (!strstr(em.hint, want))
			fail_msg("'%s' not in '%s'", want, em.hint);
		unlink(path);
		free(path);
	}
	/* Compressed, it is still recognised (an .svgz). */
	{
		char *z = gz("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>", &len);

		path = write_temp(z, len);
		assert_null(reader__read_path(path, &em));
		assert_non_null(strstr(em.msg, "a gzip-compressed SVG image"));
		unlink(path);
		free(path);
		free(z);
		/* And gzipped text is read as what it is inside. */
		z = gz("app 1 1.0: cpu-clock:\n\t10 f (x)\n", &len);
		path = write_temp(z, len);
		{
			struct profile *p = reader__read_path(path, &em);

			assert_non_null(p);
			assert_int_equal(profile__total(p), 1);
			profile__free(p);
		}
		unlink(path);
		free(path);
		free(z);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_events),
		cmocka_unit_test(test_all_cpus_kernel_unknown),
		cmocka_unit_test(test_comm_with_spaces_and_pids),
		cmocka_unit_test(test_no_callgraph),
		cmocka_unit_test(test_srcline_ipsym_header),
		cmocka_unit_test(test_inlined_and_python),
		cmocka_unit_test(test_hand_written_forms),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_odd_lines_cost_their_sample),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_sniff),
		cmocka_unit_test(test_foreign_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
