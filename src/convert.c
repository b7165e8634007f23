// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * convert.c - "bpfprof convert", "report" and "diff": read profiles written
 * earlier (any reader in src/in/, sniffed), merge several into one, write
 * any format (src/out/). Owns these commands' options, help and messages.
 *
 * Merging: samples add up (profile__merge); of the descriptive data, the
 * frequency and host name are kept when every input agrees, the time span
 * covers all inputs, lost samples add up.
 */
#include "convert.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "in/input.h"
#include "log.h"
#include "out/output.h"
#include "profile.h"
#include "util.h"

struct offline_opts {
	const char *output; /* NULL: stdout */
	const char *format; /* -f, NULL: from the output's extension */
	struct out_opts out;
	char **inputs;
	int nr_inputs;
	int verbosity;
	bool help;
};

static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, 'f'},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	CLI_OUT_OPTIONS,
	{NULL, 0, NULL, 0},
};

static int usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p_err("%s", msg);
	p_hint("see 'bpfprof %s --help'", cmd);
	return 2;
}

/* Options and inputs; 0 to go on, else the exit status (help: 0 via *done). */
static int parse(int argc, char **argv, const char *cmd, struct offline_opts *o, bool takes_format)
{
	char err[256];
	int c;

	memset(o, 0, sizeof(*o));
	cli__out_defaults(&o->out);
	optind = 1;
	opterr = 0;
	/* Permuting: "convert a.folded -o x.svg" and "convert -o x.svg a.folded" both work. */
	while ((c = getopt_long(argc, argv, ":o:f:vqh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage(cmd, "empty output file name");
			o->output = optarg;
			break;
		case 'f':
			if (!takes_format)
				return usage(cmd, "'bpfprof %s' takes no -f", cmd);
			o->format = optarg;
			break;
		case 'v':
			o->verbosity = o->verbosity < 0 ? 1 : o->verbosity + 1;
			break;
		case 'q':
			o->verbosity = -1;
			break;
		case 'h':
			o->help = true;
			return 0;
		case ':':
			return usage(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			if (optopt)
				return usage(cmd, "unknown option '-%c'", optopt);
			return usage(cmd, "unknown option '%s'", argv[optind - 1]);
		default:
			if (cli__out_option(c, optarg, &o->out, err, sizeof(err)) != CLI_OK)
				return usage(cmd, "%s", err);
		}
	}
	o->inputs = argv + optind;
	o->nr_inputs = argc - optind;
	log_set_level(o->verbosity < 0 ? LOG_ERROR : o->verbosity == 0 ? LOG_WARN : LOG_DEBUG);
	return 0;
}

static int check_output(const char *cmd, const char *path)
{
	int err = output__check_path(path);

	if (err) {
		p_err("cannot write %s: %s", path, strerror(-err));
		return 2;
	}
	return 0;
}

static void merge_meta(struct profile_meta *dst, const struct profile_meta *src)
{
	uint64_t end = MAX(dst->start_ns + dst->duration_ns, src->start_ns + src->duration_ns);

	if (dst->freq_hz != src->freq_hz)
		dst->freq_hz = 0;
	if (strcmp(dst->hostname, src->hostname))
		dst->hostname[0] = '\0';
	if (dst->start_ns && src->start_ns) {
		dst->start_ns = MIN(dst->start_ns, src->start_ns);
		dst->duration_ns = end - dst->start_ns;
	} else {
		dst->start_ns = 0;
		dst->duration_ns += src->duration_ns;
	}
	dst->lost += src->lost;
	if (strcmp(dst->unwind, src->unwind))
		dst->unwind[0] = '\0';
}

/* Reads and merges inputs; NULL after printing why. */
static struct profile *load(char **paths, int n)
{
	struct profile *all = NULL;

	for (int i = 0; i < n; i++) {
		char why[256];
		struct profile *p = input__read_path(paths[i], why, sizeof(why));

		if (!p) {
			p_err("cannot read %s: %s", strcmp(paths[i], "-") ? paths[i] : "stdin",
			      why);
			profile__free(all);
			return NULL;
		}
		p_debug("%s: %zu stacks, %llu samples", paths[i], profile__nr_stacks(p),
			(unsigned long long)profile__total(p));
		if (!all) {
			all = p;
			continue;
		}
		if (profile__merge(all, p)) {
			p_err("out of memory merging %s", paths[i]);
			profile__free(p);
			profile__free(all);
			return NULL;
		}
		merge_meta(profile__meta(all), profile__meta_c(p));
		profile__free(p);
	}
	profile__sort(all);
	return all;
}

static int write_or_fail(const struct writer *w, const struct profile *p,
			 const struct offline_opts *o)
{
	int err = output__write_path(w, p, o->output, &o->out);

	if (err) {
		p_err("writing %s failed: %s", o->output ? o->output : "to stdout", strerror(-err));
		return 1;
	}
	if (o->output)
		p_info("wrote %s (%s)", o->output, w->name);
	return 0;
}

/* --- convert --------------------------------------------------------------- */

static void convert_usage(FILE *f)
{
	const struct writer *const *w;

	fprintf(f,
		"Usage: bpfprof convert [OPTIONS] INPUT... [-o OUTPUT]\n"
		"\n"
		"Reads profiles (folded text, or pprof gzipped or not: detected from the content;\n"
		"'-' is stdin), adds them up, and writes them in another format. No root needed.\n"
		"\n"
		"  -o, --output FILE       write here (atomically) instead of stdout\n"
		"  -f, --format NAME       output format; default from FILE's extension, else "
		"folded\n");
	for (w = output__all(); *w; w++)
		fprintf(f, "      %-10s %s\n", (*w)->name, (*w)->description);
	cli__out_usage(f);
	fprintf(f,
		"  -v, --verbose           say what was read and written\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  bpfprof convert cpu.folded -o cpu.svg          flame graph of a folded profile\n"
		"  bpfprof convert cpu.pb.gz -o cpu.folded        pprof back to folded stacks\n"
		"  bpfprof convert host1.pb.gz host2.pb.gz -o fleet.svg   several profiles, added\n"
		"  bpfprof convert cpu.folded -o cpu.speedscope.json --merge\n"
		"  perf script | stackcollapse-perf.pl | bpfprof convert - -o perf.svg\n"
		"\n"
		"Exit status: 0 written, 1 an input could not be read or the output written,\n"
		"2 usage error.\n");
}

int cmd_convert(int argc, char **argv)
{
	const struct writer *w = NULL;
	struct offline_opts o;
	struct profile *p;
	int ret;

	ret = parse(argc, argv, "convert", &o, true);
	if (ret)
		return ret;
	if (o.help) {
		convert_usage(stdout);
		return 0;
	}
	if (!o.nr_inputs)
		return usage("convert", "no input files");
	if (o.format && !(w = output__find(o.format)))
		return usage("convert", "unknown format '%s' (see --help for the list)", o.format);
	if (!w && o.output)
		w = output__for_path(o.output);
	if (!w)
		w = &writer_folded;
	ret = check_output("convert", o.output);
	if (ret)
		return ret;
	p = load(o.inputs, o.nr_inputs);
	if (!p)
		return 1;
	ret = write_or_fail(w, p, &o);
	profile__free(p);
	return ret;
}

/* --- report ---------------------------------------------------------------- */

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

	ret = parse(argc, argv, "report", &o, false);
	if (ret)
		return ret;
	if (o.help) {
		report_usage(stdout);
		return 0;
	}
	if (o.out.merge || o.out.inverted || o.out.title)
		return usage("report", "--merge, --inverted and --title do not apply to a report");
	if (!o.nr_inputs)
		return usage("report", "no input files");
	ret = check_output("report", o.output);
	if (ret)
		return ret;
	p = load(o.inputs, o.nr_inputs);
	if (!p)
		return 1;
	ret = write_or_fail(&writer_report, p, &o);
	profile__free(p);
	return ret;
}

/* --- diff ---------------------------------------------------------------- */

static void diff_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof diff [OPTIONS] BEFORE AFTER [-o OUTPUT]\n"
		"\n"
		"Compares two profiles of the same program (folded or pprof), e.g. before and\n"
		"after a change. Shares are normalized to each profile's total, so profiles of\n"
		"different lengths compare. Functions are matched by name.\n"
		"\n"
		"  -o, --output FILE       write here instead of stdout\n"
		"  -f, --format NAME       default from FILE's extension, else report:\n"
		"      svg        .svg     differential flame graph: frame widths from AFTER,\n"
		"                          colour by change in share: red grew, blue shrank\n"
		"      report     .txt     text table of the functions whose share changed most\n"
		"      --title TEXT        flame graph title\n"
		"      --inverted          icicle graph\n"
		"      --top N             report: rows (default %u, 0: all)\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  bpfprof diff before.folded after.folded            biggest changes, as text\n"
		"  bpfprof diff before.pb.gz after.pb.gz -o diff.svg  differential flame graph\n"
		"\n"
		"Exit status: 0 written, 1 an input could not be read or the output written,\n"
		"2 usage error.\n",
		OUT_DEFAULT_TOP);
}

int cmd_diff(int argc, char **argv)
{
	const struct diff_writer *w = NULL;
	struct profile *before, *after;
	struct offline_opts o;
	int ret;

	ret = parse(argc, argv, "diff", &o, true);
	if (ret)
		return ret;
	if (o.help) {
		diff_usage(stdout);
		return 0;
	}
	if (o.nr_inputs != 2)
		return usage("diff", "expected two profiles, BEFORE and AFTER (got %d)",
			     o.nr_inputs);
	if (o.out.merge || o.out.sort)
		return usage("diff", "--merge and --sort do not apply to diff");
	if (o.format && !(w = output__find_diff(o.format)))
		return usage("diff", "unknown diff format '%s': expected svg or report", o.format);
	if (!w && o.output && !(w = output__diff_for_path(o.output)))
		return usage("diff", "cannot tell the format of %s: use -f svg or -f report",
			     o.output);
	if (!w)
		w = &diff_writer_report;
	ret = check_output("diff", o.output);
	if (ret)
		return ret;
	before = load(&o.inputs[0], 1);
	if (!before)
		return 1;
	after = load(&o.inputs[1], 1);
	if (!after) {
		profile__free(before);
		return 1;
	}
	ret = output__write_diff_path(w, before, after, o.output, &o.out);
	if (ret) {
		p_err("writing %s failed: %s", o.output ? o.output : "to stdout", strerror(-ret));
		ret = 1;
	} else if (o.output) {
		p_info("wrote %s (%s)", o.output, w->name);
	}
	profile__free(before);
	profile__free(after);
	return ret;
}
