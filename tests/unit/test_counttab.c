// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_counttab.c - bpfprof count's patterns (glob, LIB:GLOB), the library
 * names they match, the log2 histogram buckets the BPF program and the
 * writers share, the order of the table, and the table and JSON writers
 * (hostile names cleaned or escaped).
 */
#include "testutil.h"

#include "format/counttab.h"

static void test_pat_parse(void **state)
{
	struct count_pat p;

	assert_int_equal(counttab__pat_parse("bp_*", &p), 0);
	assert_null(p.lib);
	assert_string_equal(p.func, "bp_*");
	counttab__pat_free(&p);

	assert_int_equal(counttab__pat_parse("libc:malloc", &p), 0);
	assert_string_equal(p.lib, "libc");
	assert_string_equal(p.func, "malloc");
	counttab__pat_free(&p);

	/* "::" is a C++ name, not a library */
	assert_int_equal(counttab__pat_parse("_ZN2ns::f*", &p), 0);
	assert_null(p.lib);
	assert_string_equal(p.func, "_ZN2ns::f*");
	counttab__pat_free(&p);
	assert_int_equal(counttab__pat_parse("libfoo:ns::f", &p), 0);
	assert_string_equal(p.lib, "libfoo");
	assert_string_equal(p.func, "ns::f");
	counttab__pat_free(&p);

	assert_int_equal(counttab__pat_parse("", &p), -EINVAL);
	assert_int_equal(counttab__pat_parse(":malloc", &p), -EINVAL);
	assert_int_equal(counttab__pat_parse("libc:", &p), -EINVAL);
}

static void test_lib_match(void **state)
{
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

	assert_true(counttab__lib_match("libc", libc));
	assert_true(counttab__lib_match("libc.so.6", libc));
	assert_true(counttab__lib_match("libc*", libc));
	assert_true(counttab__lib_match("libc", "/lib/libc-2.31.so"));
	assert_false(counttab__lib_match("libc", "/usr/lib/libcap.so.2"));
	assert_false(counttab__lib_match("libc", "/usr/lib/libcrypt.so.1"));
	assert_false(counttab__lib_match("c", libc));
	assert_true(counttab__lib_match("/usr/lib/*/libc.so.6", libc));
	assert_false(counttab__lib_match("/lib/*/libc.so.6", libc));
	assert_true(counttab__lib_match("countwork", "/work/build/workloads/countwork"));
}

static void test_pat_match(void **state)
{
	struct count_pat p;

	assert_int_equal(counttab__pat_parse("libc:mall*", &p), 0);
	assert_true(counttab__pat_match(&p, "/lib/libc.so.6", "malloc"));
	assert_false(counttab__pat_match(&p, "/bin/app", "malloc"));
	assert_false(counttab__pat_match(&p, "/lib/libc.so.6", "free"));
	counttab__pat_free(&p);
	assert_int_equal(counttab__pat_parse("bp_?", &p), 0);
	assert_true(counttab__pat_match(&p, "/any", "bp_a"));
	assert_false(counttab__pat_match(&p, "/any", "bp_ab"));
	counttab__pat_free(&p);
}

static void test_buckets(void **state)
{
	assert_int_equal(count_bucket(0), 0);
	assert_int_equal(count_bucket(1), 0);
	assert_int_equal(count_bucket(2), 1);
	assert_int_equal(count_bucket(3), 1);
	assert_int_equal(count_bucket(4), 2);
	assert_int_equal(count_bucket(1023), 9);
	assert_int_equal(count_bucket(1024), 10);
	assert_int_equal(count_bucket(2000000), 20); /* 2 ms: [2^20, 2^21) */
	assert_int_equal(count_bucket((1ull << 39) - 1), 38);
	assert_int_equal(count_bucket(1ull << 39), COUNT_HIST_BUCKETS - 1);
	assert_int_equal(count_bucket(UINT64_MAX), COUNT_HIST_BUCKETS - 1);
	for (int b = 0; b < 39; b++) {
		assert_int_equal(count_bucket(1ull << b), b);
		assert_int_equal(count_bucket((2ull << b) - 1), b);
	}
}

static void fn_init(struct count_fn *f, const char *name, uint64_t calls, uint64_t total)
{
	memset(f, 0, sizeof(*f));
	f->function = strdup(name);
	f->module = strdup("/bin/app");
	f->st.calls = calls;
	f->st.returns = calls;
	f->st.total_ns = total;
	f->st.min_ns = calls ? total / calls / 2 : 0;
	f->st.max_ns = calls ? total / calls * 2 : 0;
	if (calls)
		f->st.hist[count_bucket(total / calls)] = calls;
}

static char *write_str(int (*fn)(FILE *, const struct count_fn *, size_t, const void *),
		       struct count_fn *fns, size_t n, const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, fns, n, arg), 0);
	fclose(f);
	return buf;
}

static int table_fn(FILE *f, const struct count_fn *fns, size_t n, const void *arg)
{
	return counttab__write_table(f, fns, n, arg);
}

static int json_fn(FILE *f, const struct count_fn *fns, size_t n, const void *arg)
{
	return counttab__write_json(f, fns, n, 1.5);
}

static void test_sort_and_table(void **state)
{
	struct count_fn fns[3];
	struct counttab_opts o = { .max_callers = 1 };
	char *out;

	fn_init(&fns[0], "small", 10, 1000);
	fn_init(&fns[1], "big", 50, 100000000);
	fn_init(&fns[2], "never", 0, 0);
	assert_int_equal(counttab__add_caller(&fns[1], "main", 20), 0);
	assert_int_equal(counttab__add_caller(&fns[1], "other", 30), 0);
	assert_int_equal(counttab__add_caller(&fns[1], "main", 5), 0); /* merged by name */
	assert_int_equal(fns[1].nr_callers, 2);
	counttab__sort(fns, 3);
	assert_string_equal(fns[0].function, "big");
	assert_string_equal(fns[1].function, "small");
	assert_string_equal(fns[2].function, "never");
	assert_string_equal(fns[0].callers[0].function, "other");
	assert_int_equal(fns[0].callers[1].calls, 25);

	out = write_str(table_fn, fns, 3, &o);
	/* calls, seconds, seconds/call, share, min, max, name (module) */
	assert_non_null(strstr(
		out,
		"          50      0.100000    0.002000000   100.0%    1.00 ms    4.00 ms  big (app)\n"));
	assert_non_null(strstr(out, "  <- other\n"));
	assert_null(strstr(out, "<- main")); /* one caller line */
	assert_non_null(strstr(out, "1 more callers"));
	assert_null(strstr(out, "never")); /* not called: not listed */
	free(out);
	o.all = true;
	o.hist = true;
	out = write_str(table_fn, fns, 3, &o);
	assert_non_null(strstr(out, "never (app)"));
	assert_non_null(strstr(out, "     1048576 -> 2097151     : 50"));
	free(out);
	for (int i = 0; i < 3; i++)
		counttab__fn_free(&fns[i]);
}

static void test_hostile_names(void **state)
{
	struct count_fn f;
	struct counttab_opts o = { .max_callers = 5 };
	char *out;

	fn_init(&f, "evil\x1b]0;title\x07\"name\\", 1, 1000);
	assert_int_equal(counttab__add_caller(&f, "\x1b[2Jcaller", 1), 0);
	out = write_str(table_fn, &f, 1, &o);
	assert_null(strchr(out, '\x1b'));
	assert_null(strchr(out, '\x07'));
	free(out);
	out = write_str(json_fn, &f, 1, NULL);
	assert_null(strchr(out, '\x1b'));
	assert_non_null(strstr(out, "\\\"name\\\\"));
	assert_non_null(strstr(out, "\"calls\": 1, \"timed_calls\": 1, \"total_ns\": 1000"));
	assert_non_null(strstr(out, "\"hist\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 1]"));
	assert_non_null(strstr(out, "\"seconds\": 1.500000"));
	free(out);
	counttab__fn_free(&f);
}

static void test_dur(void **state)
{
	char b[32];

	assert_string_equal(counttab__dur(999, b, sizeof(b)), "999 ns");
	assert_string_equal(counttab__dur(12345, b, sizeof(b)), "12.35 us");
	assert_string_equal(counttab__dur(2000000, b, sizeof(b)), "2.00 ms");
	assert_string_equal(counttab__dur(20000000000ull, b, sizeof(b)), "20.00 s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pat_parse),
		cmocka_unit_test(test_lib_match),
		cmocka_unit_test(test_pat_match),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_sort_and_table),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_dur),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
