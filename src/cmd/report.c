// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * report.c - "bpfprof report": the hottest functions and processes of
 * profiles written earlier, as text.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/offline.h"

static void report_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof report [OPTIONS] INPUT...\n"
		"\n"
		"Prints the hottest functions of profiles (folded or pprof; several are added):\n"
		"by self samples (the function was running) and by total samples (it was on the\n"
		"stack, counted once per stack under recursion), then samples per process.\n"
		"\n"
		"      --top N             rows per table (default %u, 0: all)\n"
		"      --sort self|total   only the table sorted by self or by total samples\n"
		"  -o, --output FILE       write here instead of stdout\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  bpfprof report cpu.folded\n"
		"  bpfprof report --top 50 --sort total cpu.pb.gz\n"
		"  sudo bpfprof -p 1234 -d 10 | bpfprof report -\n"
		"  sudo bpfprof -p 1234 -d 10 -f report           the same, in one step\n"
		"\n"
		"Exit status: 0 printed, 1 an input could not be read, 2 usage error.\n",
		OUT_DEFAULT_TOP);
}

int cmd_report(int argc, char **argv)
{
	struct offline_opts o;
	struct profile *p;
	int ret;

	ret = offline__parse(argc, argv, "report", &o, false);
	if (ret)
		return ret;
	if (o.help) {
		report_usage(stdout);
		return 0;
	}
	if (o.out.merge || o.out.inverted || o.out.title)
		return offline__usage("report", "--merge, --inverted and --title do not apply to a report");
	if (!o.nr_inputs)
		return offline__usage("report", "no input files");
	ret = offline__check_output("report", o.output);
	if (ret)
		return ret;
	p = offline__load(o.inputs, o.nr_inputs);
	if (!p)
		return 1;
	ret = offline__write_or_fail(&writer_report, p, &o);
	profile__free(p);
	return ret;
}
