// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * offline.c - what "bpfprof convert", "report" and "diff" share: read
 * profiles written earlier (any reader in src/format/, sniffed), merge
 * several into one, write any format. Their options and messages.
 *
 * Merging: samples add up (profile__merge); of the descriptive data, the
 * frequency and host name are kept when every input agrees, the time span
 * covers all inputs, lost samples add up.
 */
#include "cmd/offline.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "format/reader.h"
#include "base/log.h"
#include "format/writer.h"
#include "base/profile.h"
#include "base/util.h"


static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, 'f'},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	CLI_OUT_OPTIONS,
	{NULL, 0, NULL, 0},
};

int offline__usage(const char *cmd, const char *fmt, ...)
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

int offline__usage_em(const char *cmd, const struct errmsg *em)
{
	p_err("%s", em->msg);
	if (em->hint[0])
		p_hint("%s", em->hint);
	else
		p_hint("see 'bpfprof %s --help'", cmd);
	return 2;
}

/* Options and inputs; 0 to go on, else the exit status (help: 0 via *done). */
int offline__parse(int argc, char **argv, const char *cmd, struct offline_opts *o, bool takes_format)
{
	struct errmsg em = { 0 };
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
				return offline__usage(cmd, "empty output file name");
			o->output = optarg;
			break;
		case 'f':
			if (!takes_format)
				return offline__usage(cmd, "'bpfprof %s' takes no -f", cmd);
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
			return offline__usage(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			if (optopt)
				return offline__usage(cmd, "unknown option '-%c'", optopt);
			return offline__usage(cmd, "unknown option '%s'", argv[optind - 1]);
		default:
			if (cli__out_option(c, optarg, &o->out, &em) != CLI_OK)
				return offline__usage(cmd, "%s", em.msg);
		}
	}
	o->inputs = argv + optind;
	o->nr_inputs = argc - optind;
	log_set_level(o->verbosity < 0 ? LOG_ERROR : o->verbosity == 0 ? LOG_WARN : LOG_DEBUG);
	return 0;
}

int offline__check_output(const char *cmd, const char *path)
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
	if (dst->offcpu_min_ns != src->offcpu_min_ns)
		dst->offcpu_min_ns = 0;
	dst->offcpu |= src->offcpu;
	dst->offcpu_lost += src->offcpu_lost;
	if (strcmp(dst->unwind, src->unwind))
		dst->unwind[0] = '\0';
}

/* Reads and merges inputs; NULL after printing why. */
struct profile *offline__load(char **paths, int n)
{
	struct profile *all = NULL;

	for (int i = 0; i < n; i++) {
		struct errmsg em = { 0 };
		struct profile *p = input__read_path(paths[i], &em);

		if (!p) {
			p_err("cannot read %s: %s", strcmp(paths[i], "-") ? paths[i] : "stdin",
			      em.msg);
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

int offline__write_or_fail(const struct writer *w, const struct profile *p,
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
