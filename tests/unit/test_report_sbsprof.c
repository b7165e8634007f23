// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_report_sbsprof.c - report --style sb-sprof: the flat table laid out
 * as SBCL's sb-sprof prints it (columns checked against 2.2.9's own
 * report), Cumul, "elsewhere" for what --top leaves out and for samples
 * with no frames, --sort total, whole names.
 */
#include "outfixture.h"

#define LISP(n)                                                                                    \
	{                                                                                          \
		FRAME_LISP, n, "/usr/lib/sbcl/sbcl.core"                                           \
	}

static struct profile *lisp_profile(void)
{
	struct profile *p = profile__new();

	assert_non_null(p);
	FX(p, "sbcl", 10, 0, 6, FX_USER("main"), LISP("OUTER"), LISP("SB-VM::GENERIC-<"));
	FX(p, "sbcl", 10, 0, 5, FX_USER("main"), LISP("OUTER"), LISP("INNER"));
	FX(p, "sbcl", 10, 0, 3, FX_USER("main"), LISP("OUTER"), LISP("INNER"),
	   LISP("SB-VM::GENERIC-+"));
	FX(p, "sbcl", 10, 0, 1,
	   LISP("(LAMBDA (SB-KERNEL:FORM &KEY :CURRENT-INDEX "
		"&ALLOW-OTHER-KEYS) :IN SB-INT:LOAD-AS-SOURCE)"));
	FX(p, "sbcl", 10, 0, 1, );
	profile__sort(p);
	return p;
}

static void test_sbsprof_layout(void **state)
{
	struct profile *p = lisp_profile();
	struct out_opts o = { .top = 0, .style = "sb-sprof" };
	char *text = fx_write(&writer_report, p, &o, NULL);
	const char *want =
		"bpfprof report: 16 samples\n"
		"\n"
		"           Self        Total        Cumul\n"
		"  Nr  Count     %  Count     %  Count     %    Calls  Function\n"
		"------------------------------------------------------------------------\n"
		"   1      6  37.5      6  37.5      6  37.5        -  SB-VM::GENERIC-<\n"
		"   2      5  31.2      8  50.0     11  68.8        -  INNER\n"
		"   3      3  18.8      3  18.8     14  87.5        -  SB-VM::GENERIC-+\n"
		"   4      1   6.2      1   6.2     15  93.8        -  (LAMBDA (SB-KERNEL:FORM "
		"&KEY :CURRENT-INDEX &ALLOW-OTHER-KEYS) :IN SB-INT:LOAD-AS-SOURCE)\n"
		"   5      0   0.0     14  87.5     15  93.8        -  OUTER\n"
		"   6      0   0.0     14  87.5     15  93.8        -  main\n"
		"------------------------------------------------------------------------\n"
		"          1   6.2                                     elsewhere\n";

	assert_string_equal(text, want);
	free(text);
	profile__free(p);
}

static void test_sbsprof_top_and_sort(void **state)
{
	struct profile *p = lisp_profile();
	struct out_opts o = { .top = 2, .style = "sb-sprof" };
	char *text = fx_write(&writer_report, p, &o, NULL);

	/* The rows left out and the sample with no frames are elsewhere. */
	assert_non_null(strstr(text, "   2      5  31.2      8  50.0     11  68.8        -  INNER\n"
				     "-----"));
	assert_non_null(strstr(text, "\n          5  31.2                                     "
				     "elsewhere\n"));
	assert_null(strstr(text, "Samples by process"));
	free(text);

	o.sort = "total";
	text = fx_write(&writer_report, p, &o, NULL);
	assert_non_null(strstr(text, "   1      0   0.0     14  87.5      0   0.0        -  "));
	assert_non_null(strstr(text, "   2      0   0.0     14  87.5      0   0.0        -  "));
	assert_non_null(strstr(text, "\n         16 100.0"));
	free(text);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sbsprof_layout),
		cmocka_unit_test(test_sbsprof_top_and_sort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
