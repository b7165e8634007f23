// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * report.c - "bpfprof report": the hottest functions and processes of
 * profiles written earlier, as text; or the callers and callees of some
 * functions (--callers, --callees, --call-graph).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/offline.h"

static void report_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof report [OPTIONS] INPUT...\n"
		"       ... | bpfprof report [OPTIONS]\n"
		"\n"
		"Prints the hottest functions of profiles (folded, pprof or perf script text;\n"
		"several are added): by self samples (the function was running) and by total\n"
		"samples (it was on the stack, counted once per stack under recursion), then\n"
		"samples per process. '-' is stdin; with no INPUT, stdin is read if it is a\n"
		"pipe or a file (perf script | bpfprof report), never a terminal.\n"
		"\n"
		"      --top N             rows per table (default %u, 0: all)\n"
		"      --sort self|total   only the table sorted by self or by total samples\n"
		"      --callers FUNCTION  instead of the tables: FUNCTION's callers, each with\n"
		"                          the samples of that call and its %% of FUNCTION's total\n"
		"      --callees FUNCTION  the same for the functions it calls (with --callers:\n"
		"                          callers above, callees below). FUNCTION: a name,\n"
		"                          one without its parameters, a glob ('*alloc*'), or a\n"
		"                          part of one\n"
		"  -g, --call-graph        instead of the tables: each top function (--top and\n"
		"                          --sort choose them) with its callers and callees\n"
		"      --style tables|sb-sprof\n"
		"                          sb-sprof: one flat table laid out as SBCL's sb-sprof\n"
		"                          prints it (Self, Total, Cumul: counts and %%, by self\n"
		"                          or --sort total; an 'elsewhere' row for the rest)\n"
		"      --view cpu|off-cpu|wall\n"
		"                          profiles with off-CPU time: only that view's tables\n"
		"                          or call graph (default: on-CPU, then off-CPU)\n"
		"      --view alloc-space|alloc-objects|inuse-space|inuse-objects\n"
		"                          allocation profiles (bpfprof --alloc, Go heap\n"
		"                          profiles): bytes or allocations made, or in use\n"
		"                          (default alloc-space), tables or call graph\n",
		OUT_DEFAULT_TOP);
	offline__select_usage(f);
	fprintf(f,
		"      --stdio             accepted for perf's sake: the report is always text\n"
		"  -o, --output FILE       write here instead of stdout\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  bpfprof report cpu.folded\n"
		"  bpfprof report --top 50 --sort total cpu.pb.gz\n"
		"  bpfprof report --callers malloc cpu.pb.gz      who calls malloc, and how much\n"
		"  bpfprof report --view inuse-space -g h.pb.gz   call graph of memory in use\n"
		"  bpfprof report -g --top 10 cpu.folded          call graph of the top 10\n"
		"  bpfprof report --pid 1234 all.pb.gz            one process of a -a profile\n"
		"  bpfprof report --style sb-sprof lisp.folded    as sb-sprof's flat report\n"
		"  bpfprof report --comm nginx,php-fpm all.pb.gz  the processes with these names\n"
		"  sudo bpfprof -p 1234 -d 10 | bpfprof report -\n"
		"  sudo bpfprof -p 1234 -d 10 -f report           the same, in one step\n"
		"  perf script -i perf.data | bpfprof report      a perf record -g recording\n"
		"\n"
		"Exit status: 0 printed, 1 an input could not be read (or nothing selected, or\n"
		"no function matches --callers/--callees), 2 usage error (or a --view the\n"
		"input does not have).\n");
}

/* Whether pattern names an allocator's entry point (C's, C++'s, Go's). */
static bool names_allocator(const char *pattern)
{
	static const char *const allocators[] = {
		"malloc",	   "calloc",	       "realloc",	    "free",
		"posix_memalign",  "aligned_alloc",    "memalign",	    "operator new",
		"operator delete", "runtime.mallocgc", "runtime.newobject", "runtime.mProf_Malloc",
	};

	for (size_t i = 0; i < ARRAY_SIZE(allocators); i++)
		if (writer__name_match(allocators[i], pattern) >= 0)
			return true;
	return false;
}

/* 0 if some function of p matches pattern (NULL: none asked), else 1 after saying so. */
static int check_match(const struct profile *p, const char *opt, const char *pattern)
{
	if (!pattern)
		return 0;
	for (uint32_t id = 0; id < profile__nr_frames(p); id++)
		if (writer__name_match(profile__frame_get(p, id)->name, pattern) >= 0)
			return 0;
	p_err("%s '%s': no function of the profile has that name or matches it", opt, pattern);
	/* bpfprof --alloc and Go's runtime leave the allocator's own frames out. */
	if (profile__meta_c(p)->alloc_period && names_allocator(pattern))
		p_hint("an allocation profile's stacks end at the allocator's caller (the leaf): "
		       "'bpfprof report' lists them by self");
	else
		p_hint("'bpfprof report' lists the hottest functions; a part of a name matches too");
	return 1;
}

/*
 * Whether stdin brings a profile nobody named: a pipe (perf script | bpfprof
 * report), or a file that is not empty (bpfprof report < cpu.folded). Not a
 * terminal, nor /dev/null or another device: CI runs with stdin on
 * /dev/null, and there "no input files" must be said, not an empty report.
 * Nor a socket: ssh's or a supervisor's stdin stays open and would be
 * waited on forever.
 */
static bool stdin_brings_input(void)
{
	struct stat st;

	if (fstat(STDIN_FILENO, &st))
		return false;
	if (S_ISFIFO(st.st_mode))
		return true;
	return S_ISREG(st.st_mode) && st.st_size > 0;
}

static int report(struct offline_opts *o)
{
	static char *stdin_input[] = { "-" };

	struct profile *p;
	int ret;

	if (o->out.merge || o->out.inverted || o->out.title)
		return offline__usage("report",
				      "--merge, --inverted and --title do not apply to a report");
	if (o->out.style && (o->out.callers || o->out.callees || o->out.call_graph))
		return offline__usage("report", "--style sb-sprof is a flat table: it does not go "
						"with --callers, --callees or -g");
	if (!o->nr_inputs && stdin_brings_input()) {
		/* perf script | bpfprof report: as if '-' had been given, and said (a
		 * pipe nobody writes would otherwise look like a hang). */
		p_note("no input file named: reading standard input (as 'bpfprof report -')");
		o->inputs = stdin_input;
		o->nr_inputs = 1;
	}
	if (!o->nr_inputs) {
		/* perf report reads ./perf.data by default: bpfprof keeps no such file. */
		p_err("no input files: bpfprof report reads the profiles you name (there is no "
		      "default file, as perf.data is for perf report)");
		p_hint("record one first: sudo bpfprof -p PID -d 10 -o app.pb.gz, then bpfprof "
		       "report app.pb.gz; perf's: perf script | bpfprof report -");
		return 2;
	}
	ret = offline__check_output("report", o->output);
	if (ret)
		return ret;
	ret = offline__load(o, o->inputs, o->nr_inputs, &p);
	if (ret)
		return ret;
	ret = check_match(p, "--callers", o->out.callers);
	if (!ret)
		ret = check_match(p, "--callees", o->out.callees);
	if (!ret)
		ret = offline__write_or_fail(&writer_report, p, o);
	profile__free(p);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	return offline__main(argc, argv, "report", false, report_usage, report);
}
