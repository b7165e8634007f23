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
#include "format/view.h"
#include "format/writer.h"
#include "base/profile.h"
#include "base/util.h"

enum {
	OPT_SEL_PID = OPT_CMD_FIRST,
	OPT_SEL_COMM,
	OPT_SEL_EVENT,
	OPT_CALLERS,
	OPT_CALLEES,
	OPT_STYLE,
	OPT_STDIO
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, OPT_SEL_PID },
	{ "comm", required_argument, NULL, OPT_SEL_COMM },
	{ "comms", required_argument, NULL, OPT_SEL_COMM }, /* perf report's spelling */
	{ "event", required_argument, NULL, OPT_SEL_EVENT },
	{ "callers", required_argument, NULL, OPT_CALLERS }, /* report only */
	{ "callees", required_argument, NULL, OPT_CALLEES },
	{ "call-graph", no_argument, NULL, 'g' },
	{ "style", required_argument, NULL, OPT_STYLE }, /* report only */
	{ "input", required_argument, NULL, 'i' },	 /* perf report -i perf.data */
	{ "stdio", no_argument, NULL, OPT_STDIO },	 /* perf report's: always so */
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	CLI_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
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

/* --comm a,b (repeatable): each name its own string; -EINVAL for an empty one. */
static int add_comms(struct offline_opts *o, const char *arg)
{
	const char *p = arg;

	do {
		size_t n = strcspn(p, ",");
		char *c;

		if (!n)
			return -EINVAL;
		if (array_grow((void **)&o->comms, &o->cap_comms, o->nr_comms + 1,
			       sizeof(*o->comms)) ||
		    !(c = strndup(p, n)))
			return -ENOMEM;
		o->comms[o->nr_comms++] = c;
		p += n;
	} while (*p++ == ',');
	return 0;
}

/* Frees what parse() allocated. */
static void options_free(struct offline_opts *o)
{
	for (size_t i = 0; i < o->nr_comms; i++)
		free(o->comms[i]);
	free(o->comms);
	free(o->pids);
	free(o->named);
	free(o->inputs_buf);
	o->named = o->inputs_buf = NULL;
	o->nr_named = o->cap_named = 0;
	o->comms = NULL;
	o->pids = NULL;
	o->nr_comms = o->cap_comms = o->nr_pids = o->cap_pids = 0;
}

void offline__select_usage(FILE *f)
{
	fprintf(f,
		"  -i, --input FILE        an input, as perf report -i names it (repeatable; the\n"
		"                          same as naming FILE after the options)\n"
		"      --pid PID[,PID...]  only the samples of these processes (as perf report)\n"
		"      --comm NAME[,NAME...]\n"
		"                          only the samples of processes with these names\n"
		"      --event NAME        perf script text: read this event's samples (default:\n"
		"                          the event with the most; events are never mixed)\n");
}

/* Options and inputs of `cmd`: 0 to go on (o->help: --help), else the exit status. */
static int parse(int argc, char **argv, const char *cmd, struct offline_opts *o, bool takes_format)
{
	struct errmsg em = { 0 };
	int c;

	memset(o, 0, sizeof(*o));
	cli__out_defaults(&o->out);
	optind = 1;
	opterr = 0;
	/* Permuting: "convert a.folded -o x.svg" and "convert -o x.svg a.folded" both work. */
	while ((c = getopt_long(argc, argv, ":o:f:i:vqhg", long_opts, NULL)) != -1) {
		if ((c == OPT_CALLERS || c == OPT_CALLEES || c == 'g' || c == OPT_STYLE ||
		     c == OPT_STDIO) &&
		    strcmp(cmd, "report"))
			return offline__usage(cmd, "%s is an option of 'bpfprof report'",
					      c == OPT_CALLERS	 ? "--callers"
					      : c == OPT_CALLEES ? "--callees"
					      : c == OPT_STYLE	 ? "--style"
					      : c == OPT_STDIO	 ? "--stdio"
								 : "-g/--call-graph");
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
		case 'i':
			if (!*optarg)
				return offline__usage(cmd, "empty input file name");
			if (array_grow((void **)&o->named, &o->cap_named, o->nr_named + 1,
				       sizeof(*o->named))) {
				p_err("out of memory");
				return 1;
			}
			o->named[o->nr_named++] = optarg;
			break;
		case OPT_STDIO:
			break; /* perf report --stdio: text is all report prints */
		case 'v':
			o->verbosity = o->verbosity < 0 ? 1 : o->verbosity + 1;
			break;
		case 'q':
			o->verbosity = -1;
			break;
		case 'h':
			o->help = true;
			return 0;
		case OPT_SEL_PID: {
			uint32_t *pids = NULL;
			size_t nr = 0;
			int rc = cli__parse_pids(optarg, &pids, &nr);

			if (rc)
				return offline__usage(
					cmd, "invalid --pid '%s': expected PID[,PID...]", optarg);
			if (array_grow((void **)&o->pids, &o->cap_pids, o->nr_pids + nr,
				       sizeof(*o->pids))) {
				free(pids);
				return offline__usage(cmd, "out of memory");
			}
			memcpy(o->pids + o->nr_pids, pids, nr * sizeof(*pids));
			o->nr_pids += nr;
			free(pids);
			break;
		}
		case OPT_SEL_COMM:
			if (add_comms(o, optarg))
				return offline__usage(
					cmd, "invalid --comm '%s': expected NAME[,NAME...]",
					optarg);
			break;
		case OPT_CALLERS:
		case OPT_CALLEES:
			if (!*optarg)
				return offline__usage(cmd, "empty %s",
						      c == OPT_CALLERS ? "--callers" : "--callees");
			*(c == OPT_CALLERS ? &o->out.callers : &o->out.callees) = optarg;
			break;
		case 'g':
			o->out.call_graph = true;
			break;
		case OPT_STYLE:
			if (strcmp(optarg, "tables") && strcmp(optarg, "sb-sprof"))
				return offline__usage(
					cmd, "invalid --style '%s': expected tables or sb-sprof",
					optarg);
			o->out.style = strcmp(optarg, "sb-sprof") ? NULL : "sb-sprof";
			break;
		case OPT_SEL_EVENT:
			if (!*optarg)
				return offline__usage(cmd, "empty --event");
			o->in.event = optarg;
			break;
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
	if (o->nr_named) {
		size_t n = o->nr_named + (size_t)o->nr_inputs;

		o->inputs_buf = calloc(n, sizeof(*o->inputs_buf));
		if (!o->inputs_buf) {
			p_err("out of memory");
			return 1;
		}
		memcpy(o->inputs_buf, o->named, o->nr_named * sizeof(*o->named));
		memcpy(o->inputs_buf + o->nr_named, o->inputs,
		       (size_t)o->nr_inputs * sizeof(char *));
		o->inputs = o->inputs_buf;
		o->nr_inputs = (int)n;
	}
	log_set_level(o->verbosity < 0 ? LOG_ERROR : o->verbosity == 0 ? LOG_WARN : LOG_DEBUG);
	return 0;
}

int offline__main(int argc, char **argv, const char *cmd, bool takes_format, void (*usage)(FILE *f),
		  int (*run)(struct offline_opts *o))
{
	struct offline_opts o;
	int ret = parse(argc, argv, cmd, &o, takes_format);

	if (!ret && o.help)
		usage(stdout);
	else if (!ret)
		ret = run(&o);
	options_free(&o);
	return ret;
}

int offline__check_output(const char *cmd, const char *path)
{
	struct errmsg em = { 0 };
	int err = writer__check_path(path, &em);

	if (err) {
		p_err("cannot write %s: %s", path, errmsg_said(&em) ? em.msg : strerror(-err));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
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

/* Whether --pid and --comm (ctx: the offline_opts) keep sample s. */
static bool selected(const struct psample *s, void *ctx)
{
	const struct offline_opts *o = ctx;
	bool pid = !o->nr_pids, comm = !o->nr_comms;

	for (size_t i = 0; i < o->nr_pids && !pid; i++)
		pid = s->pid == o->pids[i];
	for (size_t i = 0; i < o->nr_comms && !comm; i++)
		comm = !strcmp(s->comm, o->comms[i]);
	return pid && comm;
}

/* Whether any sample of p has a process id (folded text has none). */
static bool has_pids(const struct profile *p)
{
	for (size_t i = 0; i < profile__nr_samples(p); i++)
		if (profile__sample(p, i)->pid)
			return true;
	return false;
}

/* --pid on an input without process ids: what it is, and what to do; 2. */
static int no_pids(const char *path, const char *format)
{
	const char *name = strcmp(path, "-") ? path : "stdin";

	if (format && !strcmp(format, "folded")) {
		p_err("--pid cannot select in %s: folded text has no process ids, only names",
		      name);
		p_hint("--comm NAME selects by name; a pprof profile (-o x.pb.gz) keeps the pids");
	} else if (format && !strcmp(format, "perf script")) {
		p_err("--pid cannot select in %s: perf script printed thread ids only (its default "
		      "fields)",
		      name);
		p_hint("print the pids too: perf script -F +pid -i perf.data > perf.txt");
	} else {
		p_err("--pid cannot select in %s: its samples have no process ids", name);
		p_hint("--comm NAME selects by name");
	}
	return 2;
}

/* Nothing selected: say what there is (the busiest processes); 1. */
static int none_selected(const struct offline_opts *o, struct profile *all)
{
	struct busy {
		const char *comm;
		uint32_t pid;
		uint64_t n;
	} top[5] = { 0 }, run = { 0 };
	char list[400] = "";
	size_t l = 0, nr = profile__nr_samples(all);

	/* Sorted by process: each process's samples are one run. */
	profile__sort(all);
	for (size_t i = 0; i <= nr; i++) {
		const struct psample *s = i < nr ? profile__sample(all, i) : NULL;

		if (s && run.comm && s->pid == run.pid && !strcmp(s->comm, run.comm)) {
			run.n += s->count;
			continue;
		}
		if (run.comm && run.n > top[ARRAY_SIZE(top) - 1].n) {
			size_t k = ARRAY_SIZE(top) - 1;

			for (; k > 0 && run.n > top[k - 1].n; k--)
				top[k] = top[k - 1];
			top[k] = run;
		}
		if (s)
			run = (struct busy){ s->comm, s->pid, s->count };
	}
	for (size_t j = 0; j < ARRAY_SIZE(top) && top[j].comm && l < sizeof(list); j++) {
		if (top[j].pid)
			l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%.32s (pid %u)",
					      l ? ", " : "", top[j].comm, top[j].pid);
		else
			l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%.32s", l ? ", " : "",
					      top[j].comm);
	}
	p_err("no samples of the processes --pid and --comm select");
	if (list[0])
		p_hint("the busiest processes in %s: %s", o->nr_inputs > 1 ? "the inputs" : "it",
		       list);
	return 1;
}

/*
 * 0 if --view fits p: an allocation profile's views for an allocation
 * profile, the others for the rest (off-CPU time or not: a CPU profile has
 * its samples whatever the view). Else 2, said.
 */
static int view_fits(const struct offline_opts *o, const struct profile *p, const char *name)
{
	enum view v = o->out.view;

	if (v == VIEW_AUTO || view__is_alloc(v) == !!profile__meta_c(p)->alloc_period)
		return 0;
	if (profile__meta_c(p)->alloc_period)
		p_err("%s: an allocation profile: --view alloc-space, alloc-objects, inuse-space or "
		      "inuse-objects",
		      name);
	else
		p_err("%s: not an allocation profile (bpfprof --alloc, a Go heap profile): no "
		      "--view %s",
		      name, view__name(v));
	return 2;
}

int offline__load(const struct offline_opts *o, char **paths, int n, struct profile **out)
{
	struct profile *all = NULL, *unfiltered = NULL;
	bool filter = o->nr_pids || o->nr_comms, any_perf = false;
	int ret = 0;

	*out = NULL;
	for (int i = 0; i < n && !ret; i++) {
		const char *name = strcmp(paths[i], "-") ? paths[i] : "stdin";
		struct errmsg em = { 0 };
		const char *format = NULL;
		struct profile *p = reader__read_path_opts(paths[i], &o->in, &format, &em);

		if (!p) {
			p_err("cannot read %s: %s", name, em.msg);
			if (em.hint[0])
				p_hint("%s", em.hint);
			ret = 1;
			break;
		}
		if (errmsg_said(&em)) { /* a note: what the reader left out */
			p_warn("%s: %s", name, em.msg);
			if (em.hint[0])
				p_hint("%s", em.hint);
		}
		ret = view_fits(o, p, name);
		if (ret) {
			profile__free(p);
			break;
		}
		any_perf |= format && !strcmp(format, "perf script");
		p_debug("%s: %s, %zu stacks, %llu samples", paths[i], format ? format : "?",
			profile__nr_stacks(p), (unsigned long long)profile__total(p));
		if (o->nr_pids && !has_pids(p)) {
			profile__free(p);
			ret = no_pids(paths[i], format);
			break;
		}
		if (filter) {
			/* Keep the whole input for the hint, should nothing be selected. */
			struct profile *q = profile__new();

			if (!q || (unfiltered ? profile__merge(unfiltered, p) : 0) ||
			    profile__merge_if(q, p, selected, (void *)o)) {
				p_err("out of memory reading %s", name);
				profile__free(q);
				profile__free(p);
				ret = 1;
				break;
			}
			*profile__meta(q) = *profile__meta_c(p);
			if (!unfiltered) {
				unfiltered = p;
			} else {
				merge_meta(profile__meta(unfiltered), profile__meta_c(p));
				profile__free(p);
			}
			p = q;
		}
		if (!all) {
			all = p;
			continue;
		}
		if (profile__merge(all, p)) {
			p_err("out of memory merging %s", name);
			profile__free(p);
			ret = 1;
			break;
		}
		merge_meta(profile__meta(all), profile__meta_c(p));
		profile__free(p);
	}
	if (!ret && o->in.event && !any_perf) {
		p_err("--event chooses among the events of perf script text: no input is");
		ret = 2;
	}
	if (!ret && filter && all && !profile__total(all) && !profile__total_offcpu(all))
		ret = none_selected(o, unfiltered);
	profile__free(unfiltered);
	if (ret) {
		profile__free(all);
		return ret;
	}
	profile__sort(all);
	*out = all;
	return 0;
}

int offline__write_or_fail(const struct writer *w, const struct profile *p,
			   const struct offline_opts *o)
{
	struct errmsg em = { 0 };
	int err = writer__write_path(w, p, o->output, &o->out, &em);

	if (err) {
		p_err("writing %s failed: %s", o->output ? o->output : "to stdout",
		      errmsg_said(&em) ? em.msg : strerror(-err));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
		return 1;
	}
	/* As record says it (unless -q): a silent convert left users checking ls. */
	if (o->output && strcmp(o->output, "-")) {
		uint64_t n = profile__total(p);
		const char *what = "sample";

		if (!n) { /* an allocation or off-CPU profile: no CPU samples */
			n = profile__nr_samples(p);
			what = "stack";
		}
		p_note("wrote %llu %s%s to %s (%s)", (unsigned long long)n, what, n == 1 ? "" : "s",
		       o->output, w->name);
	}
	return 0;
}
