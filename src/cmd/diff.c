// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * diff.c - "bpfprof diff BEFORE AFTER": what changed between two profiles,
 * as text or a differential flame graph.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/offline.h"
#include "format/view.h"

static void diff_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof diff [OPTIONS] BEFORE AFTER [-o OUTPUT]\n"
		"\n"
		"Compares two profiles of the same program (folded, pprof or perf script text),\n"
		"e.g. before and after a change. Shares are normalized to each profile's total,\n"
		"so profiles of different lengths compare. Functions are matched by name.\n"
		"\n"
		"  -o, --output FILE       write here instead of stdout\n"
		"  -f, --format NAME       default from FILE's ending, else report:\n"
		"      svg        .svg     differential flame graph: frame widths from AFTER,\n"
		"                          colour by change in share: red grew, blue shrank\n"
		"      svgz       .svgz    the same, gzip-compressed\n"
		"      report     .txt .report\n"
		"                          text table of the functions whose share changed most\n"
		"      --title TEXT        flame graph title\n"
		"      --inverted          icicle graph\n"
		"      --top N             report: rows (default %u, 0: all)\n",
		OUT_DEFAULT_TOP);
	offline__select_usage(f);
	fprintf(f, "  -q, --quiet             only errors\n"
		   "  -h, --help              this help\n"
		   "\n"
		   "Examples:\n"
		   "  bpfprof diff before.folded after.folded            biggest changes, as text\n"
		   "  bpfprof diff before.pb.gz after.pb.gz -o diff.svg  differential flame graph\n"
		   "  bpfprof diff --comm nginx mon.pb.gz tue.pb.gz  one program of -a profiles\n"
		   "  bpfprof diff before.perf.txt after.perf.txt        two perf script outputs\n"
		   "\n"
		   "Exit status: 0 written, 1 an input could not be read or the output written,\n"
		   "2 usage error.\n");
}

/*
 * Allocation profiles (bpfprof --alloc, Go's heap profiles) are compared by
 * one of their values (--view, default alloc-space): *p is replaced by that
 * view. 0, or the exit status (said).
 */
static int alloc_view(struct profile **p, const struct offline_opts *o, const char *which)
{
	struct profile *v;

	if (!profile__meta_c(*p)->alloc_period)
		return 0;
	v = view__build(*p, o->out.view);
	if (!v) {
		p_err("%s: %s", which,
		      errno == EINVAL ? "an allocation profile: --view alloc-space, alloc-objects, "
					"inuse-space or inuse-objects"
				      : strerror(errno));
		return errno == EINVAL ? 2 : 1;
	}
	profile__free(*p);
	*p = v;
	return 0;
}

static int diff(struct offline_opts *o)
{
	const struct diff_writer *w = NULL;
	struct profile *before, *after;
	struct errmsg em = { 0 };
	int ret;

	if (o->nr_inputs != 2)
		return offline__usage("diff", "expected two profiles, BEFORE and AFTER (got %d)",
				      o->nr_inputs);
	if (o->out.merge || o->out.sort)
		return offline__usage("diff", "--merge and --sort do not apply to diff");
	if (cli__pick_diff_writer(o->format, o->output, &w, &em) != CLI_OK)
		return offline__usage_em("diff", &em);
	ret = offline__check_output("diff", o->output);
	if (ret)
		return ret;
	ret = offline__load(o, &o->inputs[0], 1, &before);
	if (ret)
		return ret;
	ret = offline__load(o, &o->inputs[1], 1, &after);
	if (ret) {
		profile__free(before);
		return ret;
	}
	if (!profile__meta_c(before)->alloc_period != !profile__meta_c(after)->alloc_period) {
		p_err("an allocation profile and a CPU profile cannot be compared");
		ret = 1;
		goto out;
	}
	ret = alloc_view(&before, o, "BEFORE");
	if (!ret)
		ret = alloc_view(&after, o, "AFTER");
	if (ret)
		goto out;
	ret = writer__write_diff_path(w, before, after, o->output, &o->out, &em);
	if (ret) {
		p_err("writing %s failed: %s", o->output ? o->output : "to stdout",
		      errmsg_said(&em) ? em.msg : strerror(-ret));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
		ret = 1;
	} else if (o->output) {
		p_note("wrote %s (%s)", o->output, w->name); /* as convert says it, unless -q */
	}
out:
	profile__free(before);
	profile__free(after);
	return ret;
}

int cmd_diff(int argc, char **argv)
{
	return offline__main(argc, argv, "diff", true, diff_usage, diff);
}
