// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_cli_unwind.c - the --unwind and --kernel-unwind options: values, defaults, errors. */
#include "testutil.h"

#include "cmd/cli.h"
#include "unwind_abi.h"

static int parse(struct options *o, struct errmsg *err, int argc, const char **argv)
{
	return cli__parse(argc, (char **)argv, o, err);
}

static void test_unwind_values(void **state)
{
	struct options o;
	struct errmsg err = { 0 };
	const char *def[] = { "bpfprof", "-d", "1" };
	const char *fp[] = { "bpfprof", "--unwind", "fp" };
	const char *dw[] = { "bpfprof", "--unwind=dwarf" };
	const char *au[] = { "bpfprof", "--unwind", "auto", "-p", "1" };

	assert_int_equal(parse(&o, &err, 3, def), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_AUTO); /* the default */
	options__free(&o);
	assert_int_equal(parse(&o, &err, 3, fp), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_FP);
	options__free(&o);
	assert_int_equal(parse(&o, &err, 2, dw), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_DWARF);
	options__free(&o);
	assert_int_equal(parse(&o, &err, 5, au), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_AUTO);
	options__free(&o);
	assert_string_equal(options__unwind_name(UNWIND_OPT_DWARF), "dwarf");
	assert_string_equal(options__unwind_name(UNWIND_OPT_FP), "fp");
}

static void test_unwind_errors(void **state)
{
	struct options o;
	struct errmsg err = { 0 };
	const char *bad[] = { "bpfprof", "--unwind", "frame-pointers" };
	const char *empty[] = { "bpfprof", "--unwind", "" };
	const char *missing[] = { "bpfprof", "--unwind" };
	enum unwind_opt u;

	assert_int_equal(parse(&o, &err, 3, bad), CLI_USAGE);
	assert_non_null(strstr(err.msg, "expected auto, fp or dwarf"));
	options__free(&o);
	assert_int_equal(parse(&o, &err, 3, empty), CLI_USAGE);
	options__free(&o);
	assert_int_equal(parse(&o, &err, 2, missing), CLI_USAGE);
	options__free(&o);
	assert_int_equal(cli__parse_unwind("AUTO", &u), -EINVAL);
	assert_int_equal(cli__parse_unwind(NULL, &u), -EINVAL);
}

/* The option's enum and the program's (bpf/unwind_abi.h) list the modes in
 * different orders: each option maps to its own mode, and its name parses back. */
static void test_unwind_modes(void **state)
{
	enum unwind_opt u;

	(void)state;
	assert_int_equal(options__unwind_mode(UNWIND_OPT_AUTO), UNWIND_MODE_AUTO);
	assert_int_equal(options__unwind_mode(UNWIND_OPT_FP), UNWIND_MODE_FP);
	assert_int_equal(options__unwind_mode(UNWIND_OPT_DWARF), UNWIND_MODE_DWARF);
	assert_int_equal(options__unwind_mode(UNWIND_OPT_NR), UNWIND_MODE_AUTO);
	assert_string_equal(options__unwind_name(UNWIND_OPT_AUTO), "auto");
	assert_string_equal(options__unwind_name(UNWIND_OPT_NR), "?");
	for (int i = 0; i < UNWIND_OPT_NR; i++) {
		assert_int_equal(cli__parse_unwind(options__unwind_name((enum unwind_opt)i), &u),
				 0);
		assert_int_equal(u, i);
	}
}

static void test_kernel_unwind(void **state)
{
	struct options o;
	struct errmsg err = { 0 };
	const char *def[] = { "bpfprof", "-d", "1" };
	const char *helper[] = { "bpfprof", "--kernel-unwind", "kernel" };
	const char *orc[] = { "bpfprof", "--kernel-unwind=orc" };
	const char *bad[] = { "bpfprof", "--kernel-unwind", "fp" };

	(void)state;
	assert_int_equal(parse(&o, &err, 3, def), CLI_OK);
	assert_false(o.kernel_helper); /* the ORC walk by default */
	options__free(&o);
	assert_int_equal(parse(&o, &err, 3, helper), CLI_OK);
	assert_true(o.kernel_helper);
	options__free(&o);
	assert_int_equal(parse(&o, &err, 2, orc), CLI_OK);
	assert_false(o.kernel_helper);
	options__free(&o);
	assert_int_equal(parse(&o, &err, 3, bad), CLI_USAGE);
	assert_non_null(strstr(err.msg, "expected orc or kernel"));
	options__free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_values),
		cmocka_unit_test(test_unwind_errors),
		cmocka_unit_test(test_unwind_modes),
		cmocka_unit_test(test_kernel_unwind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
