// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * convert.c - "bpfprof convert": profiles in any format read, added up and
 * written in another.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/offline.h"

static void convert_usage(FILE *f)
{
	const struct writer *const *w;

	fprintf(f,
		"Usage: bpfprof convert [OPTIONS] INPUT... [-o OUTPUT]\n"
		"\n"
		"Reads profiles (folded text, pprof, or perf script's text; gzipped or not:\n"
		"detected from the content; '-' is stdin), adds them up, and writes them in\n"
		"another format. No root needed.\n"
		"\n"
		"  -o, --output FILE       write here (atomically) instead of stdout\n"
		"  -f, --format NAME       output format; default from FILE's ending (see\n"
		"                          'bpfprof --help', in any case), else folded (an ending\n"
		"                          bpfprof does not know is an error; pprof, pb and svgz\n"
		"                          are not written to a terminal)\n");
	for (w = writer__all(); *w; w++)
		fprintf(f, "      %-10s %s\n", (*w)->name, (*w)->description);
	cli__out_usage(f);
	offline__select_usage(f);
	fprintf(f,
		"  -v, --verbose           say what was read and written\n"
		"  -q, --quiet             only errors (not the line saying what was written)\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  bpfprof convert cpu.folded -o cpu.svg          flame graph of a folded profile\n"
		"  bpfprof convert cpu.pb.gz -o cpu.folded        pprof back to folded stacks\n"
		"  bpfprof convert host1.pb.gz host2.pb.gz -o fleet.svg   several profiles, added\n"
		"  bpfprof convert cpu.folded -o cpu.speedscope.json --merge\n"
		"  bpfprof convert all.pb.gz --pid 1234 -o app.svg   one process of a -a profile\n"
		"  perf script -i perf.data | bpfprof convert - -o perf.svg   a perf recording\n"
		"\n"
		"Exit status: 0 written, 1 an input could not be read or the output written,\n"
		"2 usage error.\n");
}

static int convert(struct offline_opts *o)
{
	const struct writer *w = NULL;
	struct errmsg em = { 0 };
	struct profile *p;
	int ret;

	if (!o->nr_inputs)
		return offline__usage("convert", "no input files");
	if (cli__pick_writer(o->format, o->output, &w, &em) != CLI_OK)
		return offline__usage_em("convert", &em);
	if (cli__check_terminal(w, o->output, &em) != CLI_OK)
		return offline__usage_em("convert", &em);
	cli__warn_mismatch(w, o->format, o->output);
	ret = offline__check_output("convert", o->output);
	if (ret)
		return ret;
	ret = offline__load(o, o->inputs, o->nr_inputs, &p);
	if (ret)
		return ret;
	ret = offline__write_or_fail(w, p, o);
	profile__free(p);
	return ret;
}

int cmd_convert(int argc, char **argv)
{
	return offline__main(argc, argv, "convert", true, convert_usage, convert);
}
