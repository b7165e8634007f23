// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_cli.c - option parsing rules of "bpfprof record". */
#include "testutil.h"

#include "cmd/cli.h"

static int parse(struct options *o, struct errmsg *err, const char *first, ...)
{
	char *argv[32] = { "bpfprof" };
	int argc = 1;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	return cli__parse(argc, argv, o, err);
}

static void test_defaults(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, NULL), CLI_OK);
	assert_int_equal(o.freq, 99);
	assert_null(o.output);
	assert_null(o.cmd);
	assert_int_equal(o.nr_pids, 0);
	assert_true(o.duration == 0);
	options__free(&o);
}

/* -p repeated adds up (it replaced the earlier list, silently). */
static void test_repeated_pid_adds_up(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-p", "34", "-p", "12,34", "--pid=7", "-d", "1", NULL),
			 CLI_OK);
	assert_int_equal(o.nr_pids, 3);
	assert_int_equal(o.pids[0], 7);
	assert_int_equal(o.pids[1], 12);
	assert_int_equal(o.pids[2], 34);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-p", "34", "-p", "x", NULL), CLI_USAGE);
	options__free(&o);
}

static void test_full_record_line(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-F", "49", "-p", "30,10,20,10", "-d", "2.5", "-U", "-o",
			       "x.folded", "--per-thread", "--max-stacks", "1000", NULL),
			 CLI_OK);
	assert_int_equal(o.freq, 49);
	assert_int_equal(o.nr_pids, 3); /* sorted, duplicates removed */
	assert_int_equal(o.pids[0], 10);
	assert_int_equal(o.pids[1], 20);
	assert_int_equal(o.pids[2], 30);
	assert_true(o.duration == 2.5);
	assert_true(o.user_only);
	assert_string_equal(o.output, "x.folded");
	assert_true(o.per_thread);
	assert_int_equal(o.max_stacks, 1000);
	options__free(&o);
}

static void test_command_after_dashdash(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-F", "10", "--", "./prog", "-F", "5", NULL), CLI_OK);
	assert_non_null(o.cmd);
	assert_string_equal(o.cmd[0], "./prog");
	assert_string_equal(o.cmd[1], "-F"); /* the command's own options stay its own */
	assert_int_equal(o.freq, 10);
	options__free(&o);
}

static void expect_usage(const char *needle, const char *a, const char *b, const char *c)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, a, b, c, NULL), CLI_USAGE);
	if (!strstr(err.msg, needle))
		fail_msg("'%s' not in '%s'", needle, err.msg);
	options__free(&o);
}

static void test_bad_options(void **state)
{
	expect_usage("invalid frequency", "-F", "99x", NULL);
	expect_usage("invalid frequency", "-F", "0", NULL);
	expect_usage("invalid frequency", "-F", "-1", NULL);
	expect_usage("invalid frequency", "-F", "2147483648", NULL);
	expect_usage("invalid frequency", "-F", "", NULL);
	expect_usage("invalid CPU list", "-C", "-5", NULL);
	expect_usage("invalid CPU list", "-C", "1-", NULL);
	expect_usage("invalid CPU list", "-C", "3-1", NULL);
	expect_usage("invalid CPU list", "-C", "0,", NULL);
	expect_usage("invalid duration", "-d", "0", NULL);
	expect_usage("invalid duration", "-d", "-3", NULL);
	expect_usage("invalid duration", "-d", "5x", NULL);
	expect_usage("invalid duration", "-d", "nan", NULL);
	expect_usage("invalid pid", "-p", "12,", NULL);
	expect_usage("invalid pid", "-p", "0", NULL);
	expect_usage("invalid pid", "-p", "99999999999999999999", NULL);
	expect_usage("invalid pid", "-p", "1,,2", NULL);
	expect_usage("exclude each other", "-U", "-K", NULL);
	expect_usage("exclude each other", "-a", "-p", "1");
	expect_usage("no command after --", "-p", "1", "--");
	expect_usage("unknown option", "--nope", NULL, NULL);
	expect_usage("unknown option", "-Z", NULL, NULL);
	expect_usage("needs a value", "-F", NULL, NULL);
	expect_usage("unknown format", "-f", "gif", NULL);
	expect_usage("unexpected argument", "stray", NULL, NULL);
	expect_usage("--max-stacks", "--max-stacks", "1", NULL);
}

static void test_pids_and_durations(void **state)
{
	uint32_t *pids;
	size_t n;
	double d;

	assert_int_equal(cli__parse_pids("7", &pids, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], 7);
	free(pids);
	assert_int_equal(cli__parse_pids("4194305", &pids, &n), -ERANGE);
	assert_int_equal(cli__parse_pids("1 2", &pids, &n), -EINVAL);
	assert_int_equal(cli__parse_duration("500ms", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(cli__parse_duration("2m", &d), 0);
	assert_true(d == 120);
	assert_int_equal(cli__parse_duration("1h", &d), 0);
	assert_true(d == 3600);
	assert_int_equal(cli__parse_duration("inf", &d), -EINVAL);
	assert_int_equal(cli__parse_duration(" 1", &d), -EINVAL);
}

/* perf record's habits: -g, --call-graph, a command with -a, -C or -p. */
static void test_perf_habits(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-F", "99", "-a", "-g", "--", "sleep", "10", NULL),
			 CLI_OK);
	assert_true(o.all_cpus && o.cmd && !o.cmd_is_target);
	assert_string_equal(o.cmd[0], "sleep");
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-g", "--", "./bench", NULL), CLI_OK);
	assert_true(o.cmd_is_target); /* alone, the command is what is profiled */
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-p", "1", "--", "sleep", "30", NULL), CLI_OK);
	assert_true(o.nr_pids == 1 && !o.cmd_is_target);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-C", "0", "--", "sleep", "1", NULL), CLI_OK);
	assert_false(o.cmd_is_target);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--call-graph", "fp", NULL), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_FP);
	assert_int_equal(o.call_graph_size, 0);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--call-graph", "dwarf,16384", NULL), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_DWARF);
	assert_int_equal(o.call_graph_size, 16384);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--call-graph=dwarf", NULL), CLI_OK);
	assert_int_equal(o.unwind, UNWIND_OPT_DWARF);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--call-graph", "lbr", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "use fp or dwarf"));
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--call-graph", "fp,8192", NULL), CLI_USAGE);
	assert_int_equal(parse(&o, &err, "--call-graph", "dwarf,x", NULL), CLI_USAGE);
	assert_int_equal(parse(&o, &err, "--call-graph", "dwarf,1G", NULL), CLI_USAGE);
	assert_int_equal(parse(&o, &err, "--call-graph", "stack", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "invalid --call-graph 'stack'"));
	options__free(&o);
	/* --cgroup filters a target: with -a a command is only the duration. */
	assert_int_equal(parse(&o, &err, "--cgroup", "/x", "--", "sleep", "1", NULL), CLI_USAGE);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--cgroup", "/x", "-a", "--", "sleep", "1", NULL), CLI_OK);
	options__free(&o);
}

static void test_help_and_version(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-h", NULL), CLI_EXIT);
	assert_true(o.show_help);
	assert_int_equal(parse(&o, &err, "--version", NULL), CLI_EXIT);
	assert_true(o.show_version);
}

static void test_output_options(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, NULL), CLI_OK);
	assert_int_equal(o.out.top, OUT_DEFAULT_TOP);
	assert_null(o.out.sort);
	assert_false(o.out.inverted || o.out.merge);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-o", "x.svg", "--title", "T", "--inverted", "--merge",
			       "--top", "0", "--sort", "total", "--lines", NULL),
			 CLI_OK);
	assert_string_equal(o.out.title, "T");
	assert_true(o.out.inverted && o.out.merge && o.out.lines);
	assert_int_equal(o.out.top, 0);
	assert_string_equal(o.out.sort, "total");
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--sort", "avg", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "invalid --sort 'avg'"));
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--top", "x", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "invalid --top 'x'"));
	options__free(&o);
	/* Every writer is reachable by name and by its file endings. */
	assert_ptr_equal(writer__for_path("a.pb.gz"), writer__find("pprof"));
	assert_ptr_equal(writer__for_path("a.pprof"), writer__find("pprof"));
	assert_ptr_equal(writer__for_path("a.speedscope.json"), writer__find("speedscope"));
	assert_ptr_equal(writer__for_path("a.json"), writer__find("speedscope"));
	assert_ptr_equal(writer__for_path("a.svg"), writer__find("svg"));
	assert_ptr_equal(writer__for_path("a.txt"), writer__find("report"));
	assert_ptr_equal(writer__for_path("a.folded"), writer__find("folded"));
	assert_ptr_equal(writer__diff_for_path("d.svg"), writer__find_diff("svg"));
	assert_ptr_equal(writer__diff_for_path("d.txt"), writer__find_diff("report"));
	assert_null(writer__diff_for_path("d.folded"));
	/* Endings in any case (CPU.SVG was refused); .pb is pprof uncompressed,
	 * .pb.gz still the gzipped one (the longest ending wins). */
	assert_ptr_equal(writer__for_path("CPU.SVG"), writer__find("svg"));
	assert_ptr_equal(writer__for_path("a.Pb.Gz"), writer__find("pprof"));
	assert_ptr_equal(writer__for_path("a.pb"), &writer_pb);
	assert_ptr_equal(writer__for_path("a.PB"), &writer_pb);
	assert_ptr_equal(writer__for_path("a.Speedscope.JSON"), writer__find("speedscope"));
	assert_ptr_equal(writer__diff_for_path("D.SVG"), writer__find_diff("svg"));
	assert_null(writer__for_path("a.pbx"));
}

static void test_offcpu_options(void **state)
{
	struct options o;
	struct errmsg err = { 0 };
	uint64_t ns;

	assert_int_equal(parse(&o, &err, "--off-cpu", NULL), CLI_OK);
	assert_true(o.offcpu);
	assert_int_equal(o.offcpu_min_ns, CLI_OFFCPU_MIN_DEFAULT_NS);
	assert_int_equal(o.out.view, VIEW_AUTO);
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--off-cpu", "--off-cpu-min", "0", "--off-cpu-tasks", "64",
			       "--view", "off-cpu", NULL),
			 CLI_OK);
	assert_int_equal(o.offcpu_min_ns, 0);
	assert_int_equal(o.offcpu_tasks, 64);
	assert_int_equal(o.out.view, VIEW_OFFCPU);
	options__free(&o);
	/* Times: bare milliseconds, or us / ms / s. */
	assert_int_equal(cli__parse_wait("2", &ns), 0);
	assert_int_equal(ns, 2000000);
	assert_int_equal(cli__parse_wait("0.5", &ns), 0);
	assert_int_equal(ns, 500000);
	assert_int_equal(cli__parse_wait("250us", &ns), 0);
	assert_int_equal(ns, 250000);
	assert_int_equal(cli__parse_wait("1s", &ns), 0);
	assert_int_equal(ns, 1000000000);
	assert_int_equal(cli__parse_wait("-1", &ns), -EINVAL);
	assert_int_equal(cli__parse_wait("5m", &ns), -EINVAL);
	assert_int_equal(cli__parse_wait("2h", &ns), -EINVAL);
	assert_int_equal(cli__parse_wait("", &ns), -EINVAL);
	/* They need --off-cpu; bad values are usage errors. */
	expect_usage("need --off-cpu", "--off-cpu-min", "1ms", NULL);
	expect_usage("need --off-cpu", "--off-cpu-tasks", "100", NULL);
	expect_usage("needs --off-cpu", "--view", "wall", NULL);
	expect_usage("invalid --off-cpu-min", "--off-cpu", "--off-cpu-min", "soon");
	expect_usage("invalid --off-cpu-tasks", "--off-cpu", "--off-cpu-tasks", "1");
	expect_usage("invalid --view", "--off-cpu", "--view", "both");
}

/*
 * Several pids given with spaces - "-p 12 34 56", or -p "$(pgrep app)" with
 * its new lines - are one list: the error says so and the hint joins them.
 */
static void test_pids_with_spaces(void **state)
{
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(parse(&o, &err, "-p", "12", "34", "56", "-d", "1", NULL), CLI_USAGE);
	assert_string_equal(err.msg,
			    "unexpected argument '34': -p takes one list of pids, PID[,PID...]");
	assert_string_equal(err.hint, "join the pids with commas: -p 12,34,56 "
				      "(for pgrep: -p \"$(pgrep -d, NAME)\")");
	options__free(&o);
	assert_int_equal(parse(&o, &err, "--pid=7", "8", NULL), CLI_USAGE);
	assert_non_null(strstr(err.hint, "-p 7,8 "));
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-p", "12\n34\n", NULL), CLI_USAGE);
	assert_string_equal(
		err.msg, "invalid pid list: pids are separated by commas, not spaces or new lines");
	assert_non_null(strstr(err.hint, "-p 12,34 "));
	options__free(&o);
	/* Not pids: the usual messages, no pid hint. */
	assert_int_equal(parse(&o, &err, "-p", "12", "sleep", "1", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "put it after --"));
	assert_string_equal(err.hint, "");
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-d", "1", "5", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "put it after --"));
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-p", "1 x", NULL), CLI_USAGE);
	assert_string_equal(err.msg, "invalid pid list '1 x': expected PID[,PID...]");
	options__free(&o);
}

/*
 * -o NAME without -f: the ending names the format; no ending (or a number,
 * run.1) is folded; an ending no writer has is a usage error listing them.
 */
static void test_output_endings(void **state)
{
	const struct writer *w = NULL;
	const struct diff_writer *dw = NULL;
	struct options o;
	struct errmsg err = { 0 };

	assert_int_equal(cli__pick_writer(NULL, "cpu.svgz", &w, &err), CLI_OK);
	assert_ptr_equal(w, &writer_svgz);
	assert_ptr_equal(writer__for_path("a.svgz"), &writer_svgz);
	assert_ptr_equal(writer__diff_for_path("d.svgz"), &diff_writer_svgz);
	for (const char *const *n = (const char *const[]){ "profile", "run.1", "/tmp/a.b/cpu",
							   ".hidden", "x.", "-", NULL };
	     *n; n++) {
		w = NULL;
		assert_int_equal(cli__pick_writer(NULL, *n, &w, &err), CLI_OK);
		assert_ptr_equal(w, &writer_folded);
	}
	assert_int_equal(cli__pick_writer(NULL, NULL, &w, &err), CLI_OK);
	assert_ptr_equal(w, &writer_folded);
	assert_int_equal(cli__pick_writer("pprof", "x.png", &w, &err), CLI_OK);
	assert_ptr_equal(w, &writer_pprof);
	assert_int_equal(cli__pick_writer(NULL, "/tmp/x.png", &w, &err), CLI_USAGE);
	assert_string_equal(err.msg, "cannot tell the format of /tmp/x.png from its ending '.png'");
	assert_string_equal(err.hint,
			    "end the name in .folded .collapsed .stacks .svg .svgz .pb.gz "
			    ".pprof .pb .speedscope.json .json .txt .report, or choose with "
			    "-f folded|svg|svgz|pprof|pb|speedscope|report (a name without "
			    "an ending is folded)");
	assert_int_equal(cli__pick_writer("gif", NULL, &w, &err), CLI_USAGE);
	assert_non_null(strstr(err.msg, "unknown format 'gif'"));
	/* record checks it with the other options, before anything is sampled */
	assert_int_equal(parse(&o, &err, "-o", "perf.data", "-d", "1", NULL), CLI_USAGE);
	assert_non_null(strstr(err.msg, "from its ending '.data'"));
	options__free(&o);
	assert_int_equal(parse(&o, &err, "-o", "perf.data", "-f", "folded", NULL), CLI_OK);
	options__free(&o);
	/* diff: its own writers, report by default */
	assert_int_equal(cli__pick_diff_writer(NULL, "d", &dw, &err), CLI_OK);
	assert_ptr_equal(dw, &diff_writer_report);
	assert_int_equal(cli__pick_diff_writer(NULL, "d.folded", &dw, &err), CLI_USAGE);
	assert_non_null(strstr(err.hint, "end the name in .svg .svgz .txt .report, or choose "
					 "with -f svg|svgz|report"));
	assert_int_equal(cli__pick_diff_writer("pprof", NULL, &dw, &err), CLI_USAGE);
	assert_string_equal(err.msg, "unknown diff format 'pprof': expected svg|svgz|report");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_repeated_pid_adds_up),
		cmocka_unit_test(test_full_record_line),
		cmocka_unit_test(test_command_after_dashdash),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_pids_and_durations),
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test(test_output_options),
		cmocka_unit_test(test_perf_habits),
		cmocka_unit_test(test_offcpu_options),
		cmocka_unit_test(test_pids_with_spaces),
		cmocka_unit_test(test_output_endings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
