// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_cli_unwind.c - the --unwind and --kernel-unwind options: values, defaults, errors. */
#include "testutil.h"

#include "cmd/cli.h"

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
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 3, fp), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_FP);
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 2, dw), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_DWARF);
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 5, au), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_AUTO);
	cli__free(&o);
	assert_string_equal(cli__unwind_name(UNWIND_OPT_DWARF), "dwarf");
	assert_string_equal(cli__unwind_name(UNWIND_OPT_FP), "fp");
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
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 3, empty), CLI_USAGE);
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 2, missing), CLI_USAGE);
	cli__free(&o);
	assert_int_equal(cli__parse_unwind("AUTO", &u), -EINVAL);
	assert_int_equal(cli__parse_unwind(NULL, &u), -EINVAL);
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
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 3, helper), CLI_OK);
	assert_true(o.kernel_helper);
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 2, orc), CLI_OK);
	assert_false(o.kernel_helper);
	cli__free(&o);
	assert_int_equal(parse(&o, &err, 3, bad), CLI_USAGE);
	assert_non_null(strstr(err.msg, "expected orc or kernel"));
	cli__free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_values),
		cmocka_unit_test(test_unwind_errors),
		cmocka_unit_test(test_kernel_unwind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
