// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_kallsyms.c - /proc/kallsyms parsing and lookup. */
#include "testutil.h"

#include <errno.h>

#include "sym/kallsyms.h"
#include "base/util.h"

static struct ksyms *parse_str(const char *s)
{
	struct ksyms *ks = ksyms__parse(s, strlen(s));

	assert_non_null(ks);
	return ks;
}

static void assert_lookup(const struct ksyms *ks, uint64_t addr, const char *name)
{
	const struct ksym *s = ksyms__lookup(ks, addr);

	if (!name) {
		if (s)
			fail_msg("0x%llx: expected NULL, got %s", (unsigned long long)addr,
				 s->name);
		return;
	}
	if (!s)
		fail_msg("0x%llx: expected %s, got NULL", (unsigned long long)addr, name);
	assert_string_equal(s->name, name);
}

static const char basic[] = "ffffffff81000000 T _stext\n"
			    "ffffffff81000000 T startup_64\n"
			    "ffffffff81000100 t __pfx_do_one\n"
			    "ffffffff81000110 t do_one\n"
			    "ffffffff81000200 D some_data\n"
			    "ffffffff81000300 W weak_fn\n"
			    "ffffffff81000400 r ro_thing\n"
			    "ffffffff81000500 T last_core\n"
			    "ffffffff81000600 T _etext\n"
			    "ffffffff82000000 T _sinittext\n"
			    "ffffffff82000000 t init_fn\n"
			    "ffffffff82000100 T _einittext\n"
			    "ffffffffc0001000 t mod_fn_a\t[mymod]\n"
			    "ffffffffc0001080 t mod_fn_b\t[mymod]\n"
			    "ffffffffc0001100 d mod_data\t[mymod]\n"
			    "ffffffffc0200000 t bpf_prog_abc_handler\t[bpf]\n";

static void test_basic(void **state)
{
	struct ksyms *ks = parse_str(basic);
	const struct ksym *s;

	(void)state;
	/* Text only, no __pfx_: 16 lines - D, r, d, __pfx_ = 12. */
	assert_int_equal(ksyms__count(ks), 12);
	assert_int_equal(ksyms__bad_lines(ks), 0);
	assert_false(ksyms__restricted(ks));
	assert_null(ksyms__find(ks, "some_data"));
	assert_null(ksyms__find(ks, "ro_thing"));
	assert_null(ksyms__find(ks, "__pfx_do_one"));
	assert_null(ksyms__find(ks, "mod_data"));

	s = ksyms__find(ks, "mod_fn_b");
	assert_non_null(s);
	assert_string_equal(s->module, "mymod");
	assert_true(s->addr == 0xffffffffc0001080ULL);
	s = ksyms__find(ks, "bpf_prog_abc_handler");
	assert_non_null(s);
	assert_string_equal(s->module, "bpf");
	s = ksyms__find(ks, "do_one");
	assert_non_null(s);
	assert_null(s->module);
	/* Module names are shared within a run. */
	assert_ptr_equal(ksyms__find(ks, "mod_fn_a")->module, ksyms__find(ks, "mod_fn_b")->module);
	ksyms__free(ks);
}

static void test_lookup_boundaries(void **state)
{
	struct ksyms *ks = parse_str(basic);
	const struct ksym *s;

	(void)state;
	assert_lookup(ks, 0, NULL);
	assert_lookup(ks, 0xffffffff80ffffffULL, NULL); /* below the first symbol */
	/* Aliases: the global without leading underscores wins over _stext. */
	assert_lookup(ks, 0xffffffff81000000ULL, "startup_64");
	assert_lookup(ks, 0xffffffff810000ffULL, "startup_64");
	/* The __pfx_ padding belongs to the previous symbol, not a name of its own. */
	assert_lookup(ks, 0xffffffff81000100ULL, "startup_64");
	assert_lookup(ks, 0xffffffff8100010fULL, "startup_64");
	assert_lookup(ks, 0xffffffff81000110ULL, "do_one"); /* exact start */
	assert_lookup(ks, 0xffffffff810002ffULL, "do_one"); /* start of next - 1 */
	assert_lookup(ks, 0xffffffff81000300ULL, "weak_fn");
	assert_lookup(ks, 0xffffffff81000550ULL, "last_core");
	assert_lookup(ks, 0xffffffff810005ffULL, "last_core");
	/* At or past _etext, nothing until _sinittext. */
	assert_lookup(ks, 0xffffffff81000600ULL, NULL);
	assert_lookup(ks, 0xffffffff81234567ULL, NULL);
	assert_lookup(ks, 0xffffffff81ffffffULL, NULL);
	assert_lookup(ks, 0xffffffff82000000ULL, "init_fn");
	assert_lookup(ks, 0xffffffff820000ffULL, "init_fn");
	assert_lookup(ks, 0xffffffff82000100ULL, NULL); /* _einittext */
	assert_lookup(ks, 0xffffffffc0000fffULL, NULL);
	assert_lookup(ks, 0xffffffffc0001000ULL, "mod_fn_a");
	assert_lookup(ks, 0xffffffffc000107fULL, "mod_fn_a");
	assert_lookup(ks, 0xffffffffc0001080ULL, "mod_fn_b");
	/* mod_data is not text: mod_fn_b extends over it, within the 1 MiB cap. */
	assert_lookup(ks, 0xffffffffc0001100ULL, "mod_fn_b");
	assert_lookup(ks, 0xffffffffc0001080ULL + (1 << 20) - 1, "mod_fn_b");
	assert_lookup(ks, 0xffffffffc0001080ULL + (1 << 20), NULL);
	assert_lookup(ks, 0xffffffffc01fffffULL, NULL);
	s = ksyms__lookup(ks, 0xffffffffc0200010ULL);
	assert_non_null(s);
	assert_string_equal(s->name, "bpf_prog_abc_handler");
	assert_string_equal(s->module, "bpf");
	/* Far past the last symbol of the table. */
	assert_lookup(ks, 0xffffffffc0200000ULL + (1 << 20), NULL);
	assert_lookup(ks, UINT64_MAX, NULL);
	/* The markers can still be found by name. */
	assert_non_null(ksyms__find(ks, "_etext"));
	ksyms__free(ks);
}

/* Without _etext the core kernel's last symbol is bounded by the 1 MiB cap. */
static void test_no_etext(void **state)
{
	struct ksyms *ks = parse_str("ffffffff81000000 T a\n"
				     "ffffffff81000100 T b\n"
				     "ffffffffc0001000 t m\t[mod]\n");

	(void)state;
	assert_lookup(ks, 0xffffffff81000100ULL + 0xfffff, "b");
	assert_lookup(ks, 0xffffffff81000100ULL + 0x100000, NULL);
	assert_lookup(ks, 0xffffffffc0000fffULL, NULL);
	assert_lookup(ks, 0xffffffffc0001000ULL, "m");
	ksyms__free(ks);
}

static void test_restricted(void **state)
{
	struct ksyms *ks = parse_str("0000000000000000 T _stext\n"
				     "0000000000000000 T startup_64\n"
				     "0000000000000000 t do_one\n"
				     "0000000000000000 D data\n"
				     "0000000000000000 t mod_fn\t[mymod]\n");

	(void)state;
	assert_true(ksyms__restricted(ks));
	assert_int_equal(ksyms__count(ks), 4);
	assert_lookup(ks, 0, NULL);
	assert_lookup(ks, 1, NULL);
	assert_lookup(ks, 0xffffffff81000000ULL, NULL);
	assert_lookup(ks, UINT64_MAX, NULL);
	ksyms__free(ks);

	/* A single non-zero address means not restricted; zero ones never match. */
	ks = parse_str("0000000000000000 A fixed_percpu_data\n"
		       "ffffffff81000000 T _stext\n");
	assert_false(ksyms__restricted(ks));
	assert_lookup(ks, 0, NULL);
	assert_lookup(ks, 0xffffffff81000000ULL, "_stext");
	ksyms__free(ks);

	/* An empty file is not "restricted": there was nothing to hide. */
	ks = parse_str("");
	assert_false(ksyms__restricted(ks));
	assert_int_equal(ksyms__count(ks), 0);
	assert_lookup(ks, 0x1000, NULL);
	ksyms__free(ks);
}

static void test_long_names(void **state)
{
	struct sbuf sb = { 0 };
	char name300[301], name600[601];
	struct ksyms *ks;
	const struct ksym *s;

	(void)state;
	memset(name300, 'r', 300);
	name300[300] = '\0';
	memcpy(name300, "_RNv", 4);
	memset(name600, 'x', 600);
	name600[600] = '\0';
	assert_int_equal(sbuf_printf(&sb, "ffffffff81000000 T %s\n", name300), 0);
	assert_int_equal(sbuf_printf(&sb, "ffffffff81001000 t %s\t[rust_mod]\n", name600), 0);
	assert_int_equal(sbuf_printf(&sb, "ffffffff81002000 T after\n"), 0);
	ks = ksyms__parse(sb.buf, sb.len);
	assert_non_null(ks);
	assert_int_equal(ksyms__count(ks), 3);
	assert_int_equal(ksyms__bad_lines(ks), 0);
	s = ksyms__lookup(ks, 0xffffffff81000010ULL);
	assert_non_null(s);
	assert_int_equal(strlen(s->name), 300);
	assert_string_equal(s->name, name300);
	s = ksyms__lookup(ks, 0xffffffff81001010ULL);
	assert_non_null(s);
	assert_string_equal(s->name, name600);
	assert_string_equal(s->module, "rust_mod");
	assert_lookup(ks, 0xffffffff81002000ULL, "after");
	ksyms__free(ks);
	sbuf_free(&sb);
}

static void test_duplicates(void **state)
{
	struct ksyms *ks = parse_str("ffffffff81000000 t __local_underscored\n"
				     "ffffffff81000000 W weak_alias\n"
				     "ffffffff81000000 t local_alias\n"
				     "ffffffff81000000 T __global_underscored\n"
				     "ffffffff81000000 T global_alias\n"
				     "ffffffff81000000 T global_alias2\n"
				     "ffffffff81000100 t same\n"
				     "ffffffff81000200 t same\n"
				     "ffffffff81000300 T z\n");

	(void)state;
	assert_int_equal(ksyms__count(ks), 9);
	/* Global, fewest underscores, first in file. */
	assert_lookup(ks, 0xffffffff81000000ULL, "global_alias");
	assert_lookup(ks, 0xffffffff81000050ULL, "global_alias");
	/* find() of a duplicated name gives the lowest address. */
	assert_true(ksyms__find(ks, "same")->addr == 0xffffffff81000100ULL);
	assert_lookup(ks, 0xffffffff81000250ULL, "same");
	assert_true(ksyms__lookup(ks, 0xffffffff81000250ULL)->addr == 0xffffffff81000200ULL);
	ksyms__free(ks);
}

/* Order of lines does not matter; 64-bit distances must not be truncated. */
static void test_unsorted(void **state)
{
	struct ksyms *ks = parse_str("ffffffffc0001000 t m\t[mod]\n"
				     "0000000100000000 T low_4g\n"
				     "ffffffff81000000 T high\n"
				     "0000000000001000 T low\n"
				     "0000000100000010 T low_4g_b\n");

	(void)state;
	assert_lookup(ks, 0x1000, "low");
	assert_lookup(ks, 0x100000000ULL, "low_4g");
	assert_lookup(ks, 0x100000010ULL, "low_4g_b");
	assert_lookup(ks, 0xffffffff81000010ULL, "high");
	assert_lookup(ks, 0xffffffffc0001010ULL, "m");
	ksyms__free(ks);
}

static void test_malformed(void **state)
{
	static const char text[] = "ffffffff81000000 T good_one\n"
				   "ffffffff81000100\n"			   /* no type */
				   "ffffffff81000200 T\n"		   /* no name */
				   "xyz T bad_hex\n"			   /* bad address */
				   "1ffffffff81000300 T too_long\n"	   /* 17 digits */
				   "ffffffff81000400 TT two_char_type\n"   /* type not one char */
				   "ffffffff81000500 T name [mod] extra\n" /* trailing junk */
				   "ffffffff81000600 T name2 notamodule\n" /* not [..] */
				   "ffffffff81000700 T name3 []\n"	   /* empty module */
				   "\n"					   /* blank: ignored */
				   "   \t \n"				   /* blank: ignored */
				   "ffffffff81000800 b bss_thing\n"	   /* valid, not text */
				   "ffffffff81000900 U undefined\n"	   /* valid, not text */
				   "  ffffffff81000a00  T  spaced_out  \n" /* extra blanks: ok */
				   "ffffffff81000b00 T good_two";	   /* no final newline */
	struct ksyms *ks = parse_str(text);

	(void)state;
	assert_int_equal(ksyms__bad_lines(ks), 8);
	assert_int_equal(ksyms__count(ks), 3);
	assert_non_null(ksyms__find(ks, "good_one"));
	assert_non_null(ksyms__find(ks, "spaced_out"));
	assert_non_null(ksyms__find(ks, "good_two"));
	assert_lookup(ks, 0xffffffff81000b00ULL, "good_two");
	ksyms__free(ks);

	/* A NUL inside a line makes it malformed; the rest still parses. */
	{
		static const char withnul[] = "ffffffff81000000 T a\0b\nffffffff81000100 T c\n";
		ks = ksyms__parse(withnul, sizeof(withnul) - 1);
		assert_non_null(ks);
		assert_int_equal(ksyms__bad_lines(ks), 1);
		assert_int_equal(ksyms__count(ks), 1);
		ksyms__free(ks);
	}
	/* Not NUL-terminated: the parser must stop at len. */
	{
		char buf[] = "ffffffff81000000 T abcdef";
		ks = ksyms__parse(buf, 22); /* "... T abc" */
		assert_non_null(ks);
		assert_string_equal(ksyms__lookup(ks, 0xffffffff81000000ULL)->name, "abc");
		ksyms__free(ks);
	}
	ks = ksyms__parse(NULL, 0);
	assert_non_null(ks);
	assert_int_equal(ksyms__count(ks), 0);
	ksyms__free(ks);
}

static void test_crlf_tabs(void **state)
{
	struct ksyms *ks = parse_str("ffffffff81000000\tT\tfirst\r\n"
				     "ffffffff81000100 t second\t[mod]\r\n"
				     "ffffffff81000200 T third\r");
	const struct ksym *s;

	(void)state;
	assert_int_equal(ksyms__bad_lines(ks), 0);
	assert_int_equal(ksyms__count(ks), 3);
	s = ksyms__find(ks, "second");
	assert_non_null(s);
	assert_string_equal(s->module, "mod");
	assert_non_null(ksyms__find(ks, "first"));
	assert_non_null(ksyms__find(ks, "third"));
	ksyms__free(ks);
}

static void test_load_file(void **state)
{
	char *path = write_temp_str("ffffffff81000000 T from_file\n");
	struct ksyms *ks;

	(void)state;
	ks = ksyms__load(path);
	assert_non_null(ks);
	assert_lookup(ks, 0xffffffff81000004ULL, "from_file");
	ksyms__free(ks);
	unlink(path);
	free(path);

	errno = 0;
	assert_null(ksyms__load("/nonexistent/kallsyms"));
	assert_int_equal(errno, ENOENT);
	ksyms__free(NULL);
	assert_null(ksyms__lookup(NULL, 1));
	assert_null(ksyms__find(NULL, "x"));
	assert_int_equal(ksyms__count(NULL), 0);
}

/* The running kernel's table: vfs_read must be found by name and by address. */
static void test_real_kallsyms(void **state)
{
	struct ksyms *ks;
	const struct ksym *s, *l;
	uint64_t t0, t1;

	(void)state;
	if (access("/proc/kallsyms", R_OK)) {
		skip();
		return;
	}
	t0 = now_ns();
	ks = ksyms__load("/proc/kallsyms");
	t1 = now_ns();
	assert_non_null(ks);
	print_message("# /proc/kallsyms: %zu text symbols, %zu bad lines, loaded in %.1f ms\n",
		      ksyms__count(ks), ksyms__bad_lines(ks), (t1 - t0) / 1e6);
	assert_true(ksyms__count(ks) > 1000);
	assert_int_equal(ksyms__bad_lines(ks), 0);
	s = ksyms__find(ks, "vfs_read");
	assert_non_null(s);
	if (ksyms__restricted(ks)) {
		assert_null(ksyms__lookup(ks, s->addr));
	} else {
		l = ksyms__lookup(ks, s->addr);
		assert_non_null(l);
		assert_true(l->addr == s->addr);
		l = ksyms__lookup(ks, s->addr + 1);
		assert_non_null(l);
		assert_true(l->addr == s->addr);
		assert_null(s->module);
	}
	ksyms__free(ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),	      cmocka_unit_test(test_lookup_boundaries),
		cmocka_unit_test(test_no_etext),      cmocka_unit_test(test_restricted),
		cmocka_unit_test(test_long_names),    cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_unsorted),      cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_crlf_tabs),     cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_real_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
