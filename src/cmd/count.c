// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * count.c - "bpfprof count": deterministic profiling. Every call of the
 * functions the patterns name is counted and timed from entry to return by
 * uprobes (collector/count.h), in the target's executable and libraries:
 * calls, seconds, seconds per call, min, max, a log2 latency histogram and
 * the calls by caller, as gprof's flat profile or SBCL's deterministic
 * profiler report them.
 *
 * The target's files are a tenant's: they are opened and read through the
 * process table (proc/ptab.h) under its rules, their symbols by
 * sym/elfsym.h within its caps and time budget, and probes are attached by
 * the descriptor that was checked (mfile__kernel_path), never by a name the
 * tenant could swap. What a tenant's symbol table can make us do is capped:
 * more matching functions than --max-functions is refused before any probe
 * is attached, and a function called more often than --budget calls per
 * second is detached, and said so.
 *
 * -a and --cgroup: the files are found through the processes running at
 * the start (every one, or those of the cgroups' cgroup.procs), each file
 * once, and probed for every process (uprobes are per file); --cgroup's
 * filter is in BPF.
 *
 * -- COMMAND: the command is stopped at its exec (a tracepoint sends it
 * SIGSTOP), then again at its entry point (a uprobe there), when the dynamic
 * loader has mapped its libraries; the probes go in then and it runs on.
 * --children: its forks are targets from BPF, and a target that execs is
 * stopped there (BPF again) until its new executable's functions are probed.
 * With -a or --cgroup (perf stat -a -- COMMAND): the processes are looked at
 * while it is stopped there (it among them), every one is counted, and the
 * run ends with the command.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/budget.h"
#include "base/log.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "session/launch.h"
#include "session/scope.h"
#include "session/stop.h"
#include "collector/count.h"
#include "format/counttab.h"
#include "format/pprof_proto.h"
#include "format/writer.h"
#include "proc/caps.h"
#include "proc/cgroup.h"
#include "proc/child.h"
#include "proc/procfs.h"
#include "proc/ptab.h"
#include "sym/elfsym.h"
#include "sym/symbolizer.h"

#define COUNT_DEFAULT_MAX_FUNCS 1000
#define COUNT_MAX_MAX_FUNCS	20000 /* two descriptors a probe: keep within fd limits */
#define COUNT_DEFAULT_BUDGET	200000
#define COUNT_GUARD_MS		250    /* how often call rates are checked */
#define COUNT_MAX_PROCS		131072 /* processes -a and --cgroup look at */
#define COUNT_EXEC_SLICE_MS	50     /* --children: execs followed per turn of the loop */

enum {
	OPT_MAX_FUNCS = 0x100,
	OPT_BUDGET,
	OPT_CALLERS,
	OPT_HIST,
	OPT_ALL_FUNCS,
	OPT_COUNT_CGROUP,
	OPT_COUNT_INTERVAL,
	OPT_CHILDREN,
};

#define KERNEL_SERIAL UINT64_MAX /* cfunc.serial of kernel functions */

struct cfunc {
	uint64_t serial; /* the file's (mfile__serial) */
	uint64_t start;	 /* ELF vaddr */
	uint64_t off;	 /* file offset of start */
	char *name, *module;
	bool kernel;
	bool detached;
	double rate;
	uint64_t last_calls;
};

struct count {
	/* options */
	uint32_t *pids;
	size_t nr_pids;
	double duration;
	double interval; /* --interval: a running table this often (s), 0 none */
	const char *output, *format;
	size_t max_funcs;
	double budget;
	unsigned callers;
	bool hist, all_funcs;
	bool all;	 /* -a or --cgroup: every process mapping the files (pid -1 probes) */
	bool kernel_opt; /* -k: patterns without LIB: are kernel functions' */
	bool children;	 /* --children: -- COMMAND's forks too (pid -1 probes, the targets map) */
	size_t nr_upats, nr_kpats; /* patterns of files' functions, of the kernel's */
	const char **cgroups;
	size_t nr_cgroups, cap_cgroups;
	int *cgroup_fds;
	char **cmd;
	struct count_pat *pats;
	size_t nr_pats;
	size_t *pat_hits;
	/* the run */
	struct child ch;
	struct ptab *ptab;
	struct symbolizer *sym;
	struct counter *ctr;
	struct cfunc *fns;
	size_t nr_fns, cap_fns;
	struct proc_id *ids; /* the targets, as the symbolizer knows them */
	size_t nr_ids;
	int *pidfds;
	uint64_t skipped_off; /* matching symbols outside every loaded segment */
	/* Files with probes, held open: the probes' paths name their descriptors. */
	struct mfile **held;
	size_t nr_held, cap_held;
	/* -a, --cgroup: the files looked at in this pass, whichever process maps them */
	uint64_t *fseen;
	size_t nr_fseen, cap_fseen;
	/* Found in the targets' files, not yet probed (within --max-functions) */
	struct file_match *matches;
	size_t nr_matches, cap_matches;
	struct file_use *uses; /* -a, --cgroup: which processes map them */
	size_t nr_uses, cap_uses;
	double seconds;
	bool maps_probed; /* each_file saw a file already probed (--children's execs) */
};

static void count_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof count [OPTIONS] PATTERN... (-p PID | -a | --cgroup PATH |\n"
		"                                           -- COMMAND [ARGS...])\n"
		"       bpfprof count [OPTIONS] PATTERN... (-a | --cgroup PATH) -- COMMAND [ARGS...]\n"
		"\n"
		"Counts every call of the functions PATTERN names and times each from entry to\n"
		"return (uprobes): calls, seconds, seconds per call, min, max, a log2 latency\n"
		"histogram, and the calls by caller (the function each call returns to). Times\n"
		"are inclusive; each level of a recursion is timed from its own entry. Needs root.\n"
		"\n"
		"Patterns (globs, as the shell's; quote them):\n"
		"  'bp_*'                  functions of the executable and every library it maps\n"
		"  'libc:malloc'           LIB:PATTERN: only in that library (libc names libc.so.6,\n"
		"                          not libcap.so.2; a name with '/' is a path glob)\n"
		"  'kernel:vfs_*'          kernel functions (tracefs's available_filter_functions),\n"
		"                          called by the targets (session kprobes: Linux 6.13+)\n"
		"  -k, --kernel            every pattern without LIB: names kernel functions\n"
		"\n"
		"Targets:\n"
		"  -p, --pid PID[,PID...]  these running processes\n"
		"  -a, --all               every process: the functions of the files the running\n"
		"                          processes map, counted in every process that maps them,\n"
		"                          now or later (uprobes are per file); no filter\n"
		"      --cgroup PATH       the functions of the files the processes of this cgroup\n"
		"                          v2 (and below) map, counted only in processes of the\n"
		"                          cgroup (filtered in BPF); repeatable (at most %u); PATH\n"
		"                          absolute or relative to the cgroup2 mount\n"
		"  -- COMMAND [ARGS...]    run COMMAND, stopped until its probes are in (after its\n"
		"                          libraries are mapped; libraries it dlopen()s later are\n"
		"                          not probed); bpfprof exits with its status. With -a or\n"
		"                          --cgroup: every process (of the cgroups) is counted\n"
		"                          until the command exits, as perf stat -a -- COMMAND\n"
		"                          (the command's files are looked at too)\n"
		"      --children          and the processes it forks, before they run, and what\n"
		"                          they exec: each exec stops until its new executable's\n"
		"                          functions are probed (not the libraries only it maps);\n"
		"                          a pattern may match only there (probes for every\n"
		"                          process, filtered in BPF: others mapping those files\n"
		"                          pay a trap per call)\n"
		"  -d, --duration SECS     stop after this long (default: until Ctrl-C, or until the\n"
		"                          targets exit)\n"
		"      --interval SECS     a running table this often (cumulative: every call since\n"
		"                          the start; -o FILE is rewritten each time), and the\n"
		"                          final one at the end\n"
		"\n"
		"Output:\n"
		"  -o, --output FILE       write here (atomically) instead of stdout\n"
		"  -f, --format NAME       table (default), json (also from a FILE ending .json, in\n"
		"                          any case, as every ending here):\n"
		"                          {\"functions\": [{\"function\", \"module\", \"calls\",\n"
		"                          \"total_ns\", \"min_ns\", \"max_ns\", \"hist\", \"callers\"}]},\n"
		"                          or pprof (also from .pb.gz or .pprof; for go tool pprof):\n"
		"                          sample types calls/count and time/nanoseconds, one sample\n"
		"                          per (function, caller) edge, the function's time split\n"
		"                          among its callers by their calls; or pb (also from .pb):\n"
		"                          the same profile.proto, not gzipped\n"
		"      --callers N         caller lines per function in the table (default 5, 0 none)\n"
		"      --hist              each function's latency histogram in the table\n"
		"      --all-functions     list functions never called too\n"
		"\n"
		"Guards (what the target's symbols and calls can cost):\n"
		"      --max-functions N   refuse patterns matching more functions than N (default\n"
		"                          %u, at most %u)\n"
		"      --budget CALLS      a function called more than CALLS times per second (all\n"
		"                          CPUs together; default %u) is detached, with a warning,\n"
		"                          and its counts stop there; 0: no budget\n"
		"  -v, --verbose           say what is probed and how\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Examples:\n"
		"  sudo bpfprof count 'bp_*' -- ./workload          every bp_ function of a command\n"
		"  sudo bpfprof count -p 1234 -d 10 'libc:malloc' 'libc:free'\n"
		"  sudo bpfprof count -p 1234 -d 5 'parse_*' -f json -o calls.json\n"
		"\n"
		"Exit status: 0, 1 failure (not root, no such process), 2 usage error (a\n"
		"pattern that matches no function too); under -- COMMAND, the command's status.\n",
		COUNT_CGROUPS, COUNT_DEFAULT_MAX_FUNCS, COUNT_MAX_MAX_FUNCS, COUNT_DEFAULT_BUDGET);
}

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "bpfprof count: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nHINT: see 'bpfprof count --help'\n");
	return 2;
}

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, 'a' },
	{ "children", no_argument, NULL, OPT_CHILDREN },
	{ "kernel", no_argument, NULL, 'k' },
	{ "cgroup", required_argument, NULL, OPT_COUNT_CGROUP },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, OPT_COUNT_INTERVAL },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "max-functions", required_argument, NULL, OPT_MAX_FUNCS },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "callers", required_argument, NULL, OPT_CALLERS },
	{ "hist", no_argument, NULL, OPT_HIST },
	{ "all-functions", no_argument, NULL, OPT_ALL_FUNCS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static bool parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

/*
 * The format -o FILE's ending names, as record's (writer__for_path: in any
 * case, the longest ending wins): .json (and .speedscope.json) json,
 * .pb.gz/.pprof pprof, .pb pb; else the table.
 */
static const char *format_for_path(const char *path)
{
	const struct writer *w = path ? writer__for_path(path) : NULL;

	if (w == &writer_speedscope)
		return "json";
	if (w == &writer_pprof)
		return "pprof";
	if (w == &writer_pb)
		return "pb";
	return "table";
}

/* 0 go on, 1 --help, 2 usage error. */
static int parse(int argc, char **argv, struct count *c)
{
	int o, verbose = 0, dd = argc;
	double v;

	c->max_funcs = COUNT_DEFAULT_MAX_FUNCS;
	c->budget = COUNT_DEFAULT_BUDGET;
	c->callers = 5;
	/* Options and patterns in any order before "--", the command after it. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	}
	if (dd + 1 < argc)
		c->cmd = argv + dd + 1;
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(dd, argv, ":p:akd:o:f:vqh", long_opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			free(c->pids);
			c->pids = NULL;
			if (cli__parse_pids(optarg, &c->pids, &c->nr_pids) || !c->nr_pids)
				return usage("invalid --pid '%s': expected PID[,PID...]", optarg);
			break;
		case 'a':
			c->all = true;
			break;
		case 'k':
			c->kernel_opt = true;
			break;
		case OPT_CHILDREN:
			c->children = true;
			break;
		case OPT_COUNT_CGROUP:
			if (c->nr_cgroups >= COUNT_CGROUPS)
				return usage("too many --cgroup options (at most %s)", "8");
			if (array_grow((void **)&c->cgroups, &c->cap_cgroups, c->nr_cgroups + 1,
				       sizeof(*c->cgroups)))
				return usage("%s", "out of memory");
			c->cgroups[c->nr_cgroups++] = optarg;
			break;
		case OPT_COUNT_INTERVAL:
			if (cli__parse_duration(optarg, &c->interval) || c->interval < 0.01)
				return usage("invalid --interval '%s': seconds, at least 0.01",
					     optarg);
			break;
		case 'd':
			if (cli__parse_duration(optarg, &c->duration) || c->duration <= 0)
				return usage("invalid --duration '%s'", optarg);
			break;
		case 'o':
			c->output = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "table") && strcmp(optarg, "json") &&
			    strcmp(optarg, "pprof") && strcmp(optarg, "pb"))
				return usage("unknown --format '%s': table, json, pprof or pb",
					     optarg);
			c->format = optarg;
			break;
		case OPT_MAX_FUNCS:
			if (!parse_num(optarg, 1, COUNT_MAX_MAX_FUNCS, &v) || v != floor(v))
				return usage("invalid --max-functions '%s': 1 to 20000", optarg);
			c->max_funcs = (size_t)v;
			break;
		case OPT_BUDGET:
			if (!parse_num(optarg, 0, 1e12, &v))
				return usage("invalid --budget '%s': calls per second", optarg);
			c->budget = v;
			break;
		case OPT_CALLERS:
			if (!parse_num(optarg, 0, 1e6, &v) || v != floor(v))
				return usage("invalid --callers '%s'", optarg);
			c->callers = (unsigned)v;
			break;
		case OPT_HIST:
			c->hist = true;
			break;
		case OPT_ALL_FUNCS:
			c->all_funcs = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'q':
			log_set_level(LOG_ERROR);
			break;
		case 'h':
			return 1;
		case ':':
			return usage("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (verbose)
		log_set_level(verbose > 1 ? LOG_DEBUG : LOG_INFO);
	for (; optind < dd; optind++) {
		struct count_pat *np;

		np = realloc(c->pats, (c->nr_pats + 1) * sizeof(*np));
		if (!np)
			return usage("%s", "out of memory");
		c->pats = np;
		if (counttab__pat_parse(argv[optind], &c->pats[c->nr_pats]))
			return usage("invalid pattern '%s': expected GLOB or LIB:GLOB",
				     argv[optind]);
		if (c->kernel_opt && !c->pats[c->nr_pats].lib)
			c->pats[c->nr_pats].kernel = true;
		if (c->pats[c->nr_pats].kernel)
			c->nr_kpats++;
		else
			c->nr_upats++;
		c->nr_pats++;
	}
	if (!c->nr_pats)
		return usage(
			"%s",
			"no pattern: name the functions to count, e.g. 'bp_*' or 'libc:malloc'");
	if (!c->cmd && !c->nr_pids && !c->all && !c->nr_cgroups)
		return usage("%s", "no target: -p PID, -a, --cgroup PATH or -- COMMAND");
	/* -a or --cgroup with -- COMMAND: every process (or the cgroups') while the
	 * command runs, as perf stat -a -- COMMAND. */
	if ((c->nr_pids > 0) + c->all + (c->nr_cgroups > 0) > 1 || (c->cmd && c->nr_pids))
		return usage("%s", "-p, -a and --cgroup: choose one (-- COMMAND goes with -a or "
				   "--cgroup, not -p)");
	c->all |= c->nr_cgroups > 0;
	if (c->children && !c->cmd)
		return usage("%s", "--children follows -- COMMAND's children: give a command");
	if (c->children && c->all)
		return usage("%s", "--children with -a or --cgroup: every process (of the cgroups) "
				   "is counted already");
	c->pat_hits = calloc(c->nr_pats, sizeof(*c->pat_hits));
	if (!c->pat_hits)
		return usage("%s", "out of memory");
	if (!c->format)
		c->format = format_for_path(c->output);
	return 0;
}

static void sym_warn(void *ctx, const char *msg)
{
	p_warn("%s", msg);
}

/* The function at (file, start), made if new: its index, or -1 (out of memory). */
static long func_get(struct count *c, uint64_t serial, uint64_t start, uint64_t off,
		     const char *name, const char *module)
{
	struct cfunc *f;

	for (size_t i = 0; i < c->nr_fns; i++)
		if (c->fns[i].serial == serial && c->fns[i].start == start)
			return (long)i;
	if (array_grow((void **)&c->fns, &c->cap_fns, c->nr_fns + 1, sizeof(*c->fns)))
		return -1;
	f = &c->fns[c->nr_fns];
	memset(f, 0, sizeof(*f));
	f->serial = serial;
	f->start = start;
	f->off = off;
	f->name = strdup(name);
	f->module = strdup(module);
	if (!f->name || !f->module) {
		free(f->name);
		free(f->module);
		return -1;
	}
	return (long)c->nr_fns++;
}

/*
 * One file's matching functions in one target (-a, --cgroup: in every
 * process): found (and added to c->fns) by the pass that reads the file's
 * symbols, probed once the count of all matches is known to be within
 * --max-functions. Its symbols are read once: a hostile file costs its time
 * budget once, not once per pass.
 */
struct file_match {
	struct mfile *f; /* held until probed */
	char *path;	 /* as mapped */
	uint32_t pid;
	bool probed;
	uint32_t *fns;
	uint64_t *offs;
	size_t nr, cap_fns, cap_offs;
};

/* -a, --cgroup: process pid maps c->matches[match] (noted if that is probed). */
struct file_use {
	uint32_t pid;
	uint32_t match;
};

static void file_match__free(struct count *c, struct file_match *fm)
{
	if (fm->f)
		mfile__put(c->ptab, fm->f);
	free(fm->path);
	free(fm->fns);
	free(fm->offs);
}

/*
 * The matches of es's symbols: each counted in *matched; while that is within
 * --max-functions (past it, the run ends before any probe), kept in fm. 0 or
 * -ENOMEM.
 */
static int match_file(struct count *c, struct file_match *fm, struct elfsym *es, size_t *matched)
{
	size_t n = elfsym__count(es);

	for (size_t i = 0; i < n; i++) {
		const char *name, *pretty;
		uint64_t start, end, off;
		bool hit = false;
		long fn;

		if (elfsym__symbol(es, i, &name, &start, &end))
			break;
		for (size_t p = 0; p < c->nr_pats; p++) {
			if (counttab__pat_match(&c->pats[p], fm->path, name)) {
				c->pat_hits[p]++;
				hit = true;
			}
		}
		if (!hit)
			continue;
		if (elfsym__vaddr_to_off(es, start, &off, NULL)) {
			c->skipped_off++;
			continue;
		}
		if (++*matched > c->max_funcs)
			continue;
		pretty = elfsym__lookup_demangled(es, start, NULL);
		fn = func_get(c, mfile__serial(fm->f), start, off, pretty ? pretty : name,
			      fm->path);
		if (fn < 0 ||
		    array_grow((void **)&fm->fns, &fm->cap_fns, fm->nr + 1, sizeof(*fm->fns)) ||
		    array_grow((void **)&fm->offs, &fm->cap_offs, fm->nr + 1, sizeof(*fm->offs)))
			return -ENOMEM;
		fm->fns[fm->nr] = (uint32_t)fn;
		fm->offs[fm->nr++] = off;
	}
	return 0;
}

/* Probes fm's functions: 1 if any probe went in (keep the file), 0, or -errno. */
static int probe_file(struct count *c, const struct file_match *fm)
{
	struct errmsg em = { 0 };
	char kpath[64];
	int n;

	for (size_t i = 0; i < fm->nr; i++)
		p_debug("probing %s at %s+0x%" PRIx64 " in %u", c->fns[fm->fns[i]].name, fm->path,
			fm->offs[i], fm->pid);
	n = mfile__kernel_path(fm->f, kpath, sizeof(kpath));
	if (n)
		return n;
	n = counter__attach_file(c->ctr, mfile__serial(fm->f), kpath,
				 c->all || c->children ? -1 : (int)fm->pid, fm->fns, fm->offs,
				 fm->nr, &em);
	if (n < 0) {
		p_warn("%s: its %zu functions not probed: %s", fm->path, fm->nr, em.msg);
		return 0;
	}
	if ((size_t)n < fm->nr)
		p_warn("%s: %zu of its %zu functions not probed: %s", fm->path, fm->nr - (size_t)n,
		       fm->nr, em.msg);
	return 1;
}

/* -a, --cgroup: pid maps the file of a kept match; remembered, to be noted if it is probed. */
static int note_use(struct count *c, uint32_t pid, uint64_t serial)
{
	for (size_t k = 0; k < c->nr_matches; k++) {
		if (mfile__serial(c->matches[k].f) != serial)
			continue;
		if (array_grow((void **)&c->uses, &c->cap_uses, c->nr_uses + 1, sizeof(*c->uses)))
			return -ENOMEM;
		c->uses[c->nr_uses++] = (struct file_use){ .pid = pid, .match = (uint32_t)k };
		return 0;
	}
	return 0;
}

/*
 * The files process pid maps (executable mappings), their symbols read
 * once: the matches counted in *matched, and kept in c->matches to be
 * probed. -a, --cgroup: each file once, whichever process maps it.
 */
static int each_file(struct count *c, uint32_t pid, size_t *matched)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };
	struct pproc *p;
	struct pmaps *pm;
	uint64_t *seen = NULL;
	size_t nr_seen = 0, cap_seen = 0;
	bool once = c->all || c->children;
	int err;

	err = ptab__get(c->ptab, &id, &p);
	if (err)
		return err;
	pm = ptab__maps(c->ptab, p);
	for (size_t i = 0; i < pm->m.nr && !err; i++) {
		const struct procmap *m = &pm->m.maps[i];
		struct file_match fm = { .pid = pid };
		struct elfsym *es;
		bool dup = false, fdup = false;
		uint64_t serial;
		Elf *elf;

		if (!m->path || m->path[0] != '/')
			continue;
		if (ptab__file(c->ptab, p, m, &fm.f))
			continue;
		serial = mfile__serial(fm.f);
		for (size_t s = 0; s < nr_seen; s++)
			dup |= seen[s] == serial;
		/* -a, --cgroup, --children: a file once, whichever process maps it (its probes
		 * are in every one) */
		for (size_t s = 0; once && !dup && s < c->nr_fseen; s++)
			fdup |= c->fseen[s] == serial;
		if (dup || array_grow((void **)&seen, &cap_seen, nr_seen + 1, sizeof(*seen)) ||
		    (once && !fdup &&
		     array_grow((void **)&c->fseen, &c->cap_fseen, c->nr_fseen + 1,
				sizeof(*c->fseen)))) {
			mfile__put(c->ptab, fm.f);
			continue;
		}
		seen[nr_seen++] = serial;
		if (fdup) {
			mfile__put(c->ptab, fm.f);
			if (c->all)
				err = note_use(c, pid, serial);
			for (size_t h = 0; h < c->nr_held; h++)
				c->maps_probed |= mfile__serial(c->held[h]) == serial;
			continue;
		}
		if (once)
			c->fseen[c->nr_fseen++] = serial;
		elf = mfile__elf(fm.f);
		es = elf ? elfsym__open_elf(elf, (uint64_t)mfile__stat(fm.f)->st_size) : NULL;
		if (!es && elf)
			p_warn("%s: no symbols read: %s", m->path, elfsym__strerror(errno));
		fm.path = strdup(m->path);
		if (!fm.path)
			err = -ENOMEM;
		else if (es)
			err = match_file(c, &fm, es, matched);
		elfsym__free(es);
		if (!err && fm.nr &&
		    array_grow((void **)&c->matches, &c->cap_matches, c->nr_matches + 1,
			       sizeof(*c->matches)))
			err = -ENOMEM;
		if (err || !fm.nr) {
			file_match__free(c, &fm);
			continue;
		}
		c->matches[c->nr_matches++] = fm;
		if (c->all)
			err = note_use(c, pid, serial);
	}
	free(seen);
	pmaps__put(pm);
	ptab__put(c->ptab, p);
	return err;
}

/* The kernel functions the patterns match: counted, or (attach) kept in names/fns. */
struct kmatch {
	struct count *c;
	bool attach;
	size_t matched;
	const char **names;
	uint32_t *fns;
	size_t nr, cap_names, cap_fns;
	int err;
};

static void kfunc_cb(void *ctx, const char *name)
{
	struct kmatch *km = ctx;
	struct count *c = km->c;
	bool hit = false;
	long fn;

	if (km->err)
		return;
	for (size_t p = 0; p < c->nr_pats; p++) {
		if (counttab__kpat_match(&c->pats[p], name)) {
			if (!km->attach)
				c->pat_hits[p]++;
			hit = true;
		}
	}
	if (!hit)
		return;
	km->matched++;
	if (!km->attach)
		return;
	fn = func_get(c, KERNEL_SERIAL, km->matched, 0, name, "[kernel]");
	if (fn < 0 ||
	    array_grow((void **)&km->names, &km->cap_names, km->nr + 1, sizeof(*km->names)) ||
	    array_grow((void **)&km->fns, &km->cap_fns, km->nr + 1, sizeof(*km->fns))) {
		km->err = -ENOMEM;
		return;
	}
	if ((size_t)fn >= c->max_funcs) {
		km->err = -E2BIG;
		return;
	}
	c->fns[fn].kernel = true;
	km->names[km->nr] = c->fns[fn].name;
	km->fns[km->nr++] = (uint32_t)fn;
	p_debug("probing kernel function %s", name);
}

/* -k, kernel:GLOB: counts the matches, or probes them (attach). 0, or 1 (said). */
static int probe_kernel(struct count *c, bool attach, size_t *matched)
{
	struct kmatch km = { .c = c, .attach = attach };
	struct errmsg em = { 0 };
	int err = counter__each_kfunc(kfunc_cb, &km);

	if (!err)
		err = km.err;
	*matched += km.matched;
	if (!err && attach && km.nr) {
		err = counter__attach_kernel(c->ctr, km.names, km.fns, km.nr, &em);
		if (err > 0 && (size_t)err < km.nr)
			p_warn("%zu of %zu kernel functions not probed: %s", km.nr - (size_t)err,
			       km.nr, em.msg);
		if (err < 0) {
			p_err("the %zu kernel functions could not be probed: %s", km.nr, em.msg);
			if (err == -EOPNOTSUPP)
				p_hint("this kernel has no kprobe_multi (CONFIG_KPROBES and "
				       "CONFIG_FPROBE): kernel functions cannot be counted here");
			free(km.names);
			free(km.fns);
			return 1;
		}
		err = 0;
	}
	free(km.names);
	free(km.fns);
	if (err == -E2BIG) {
		p_err("more kernel functions match than --max-functions %zu", c->max_funcs);
		return 1;
	}
	if (err) {
		p_err("kernel functions: %s", strerror(-err));
		p_hint("they are read from /sys/kernel/tracing/available_filter_functions (tracefs)");
		return 1;
	}
	return 0;
}

/*
 * Probes c->matches[from..], each file held (the guard re-attaches through
 * it). A file whose path cannot be named: 1 (said; fatal: an error, else a
 * warning and the next file), else 0.
 */
static int probe_matches(struct count *c, size_t from, bool fatal)
{
	for (size_t i = from; i < c->nr_matches; i++) {
		struct file_match *fm = &c->matches[i];
		int err = probe_file(c, fm);

		if (err < 0 && fatal) {
			p_err("process %u: %s", fm->pid, strerror(-err));
			return 1;
		}
		if (err < 0) {
			p_warn("process %u: %s not probed: %s", fm->pid, fm->path, strerror(-err));
			continue;
		}
		fm->probed = err > 0;
		if (err && !array_grow((void **)&c->held, &c->cap_held, c->nr_held + 1,
				       sizeof(*c->held))) {
			c->held[c->nr_held++] = fm->f;
			fm->f = NULL;
		} /* else out of room to hold it: the guard cannot re-attach it */
	}
	return 0;
}

/*
 * --children: target pid exec'd and is stopped there (BPF sent it SIGSTOP):
 * the functions the patterns match in files no target mapped before (its
 * new executable; its libraries are not mapped yet, only the dynamic
 * loader) are probed, within --max-functions, and it goes on. Only if pid is
 * still the process that started at start_ns (BPF's start_boottime): a
 * tenant may have killed the stopped one and made the number its own
 * process's; that one is neither read nor signalled.
 */
static void follow_exec(struct count *c, uint32_t pid, uint64_t start_ns)
{
	size_t first = c->nr_matches, matched = c->nr_fns, fns = c->nr_fns;
	int err, fd = procfs__pidfd_started("/proc", pid, start_ns);

	if (fd < 0) {
		p_debug("process %u exec'd and is gone: %s", pid, strerror(-fd));
		return;
	}
	c->maps_probed = false;
	err = c->nr_upats ? each_file(c, pid, &matched) : 0;

	if (err && err != -ESRCH && err != -ENOENT)
		p_warn("process %u exec'd: its files not looked at: %s", pid, strerror(-err));
	if (matched > c->max_funcs)
		p_warn("process %u exec'd: %zu more functions match, past --max-functions %zu: "
		       "not counted",
		       pid, matched - c->max_funcs, c->max_funcs);
	probe_matches(c, first, false);
	if (c->nr_fns > fns)
		p_info("process %u exec'd: %zu more functions probed", pid, c->nr_fns - fns);
	if (c->nr_fns > fns || c->maps_probed) {
		struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };

		symbolizer__note_process(c->sym, &id); /* its callers named after it exits */
	}
	procfs__pidfd_signal(fd, SIGCONT);
	close(fd);
}

/*
 * --children: the execs listed since the last turn of the loop, for at most
 * COUNT_EXEC_SLICE_MS of it (one file's read has its own budget of time):
 * the rest wait, stopped, for the next turn, so that a tenant's crowd of
 * execs of costly files does not hold up the guard, the interval reports or
 * a stop request.
 */
static void follow_execs(struct count *c)
{
	uint64_t end = now_ns() + COUNT_EXEC_SLICE_MS * NS_PER_MS, start_ns;
	uint32_t pid;

	while (!stop__requested() && now_ns() < end && !counter__next_exec(c->ctr, &pid, &start_ns))
		follow_exec(c, pid, start_ns);
}

/* --children, at the end: the targets stopped at an exec since the last look go on. */
static void release_execs(struct count *c)
{
	uint64_t start_ns;
	uint32_t pid;

	while (!counter__next_exec(c->ctr, &pid, &start_ns)) {
		int fd = procfs__pidfd_started("/proc", pid, start_ns);

		if (fd >= 0) {
			procfs__pidfd_signal(fd, SIGCONT);
			close(fd);
		}
	}
}

/* Counts what the patterns match in every target, then probes it. 0, or 1 (said), or 2
 * (said) when a pattern matches no function. */
static int probe_all(struct count *c)
{
	size_t matched = 0;
	int err;

	if (c->nr_kpats && probe_kernel(c, false, &matched))
		return 1;

	c->nr_fseen = 0;
	for (size_t i = 0; c->nr_upats && i < c->nr_pids; i++) {
		err = each_file(c, c->pids[i], &matched);
		if (err && err != -ENOMEM && c->all)
			continue; /* gone, a kernel thread, or not readable: its files are others'
				     too */
		if (err == -ESRCH || err == -ENOENT) {
			p_err("process %u not found", c->pids[i]);
			return 1;
		}
		if (err) {
			p_err("process %u: %s", c->pids[i], strerror(-err));
			return 1;
		}
	}
	for (size_t p = 0; p < c->nr_pats; p++) {
		if (!c->pat_hits[p] && c->children && !c->pats[p].kernel) {
			p_warn("no function matches '%s%s%s' in the command's files yet: looked for "
			       "in what its children exec",
			       c->pats[p].lib ? c->pats[p].lib : "", c->pats[p].lib ? ":" : "",
			       c->pats[p].func);
			continue;
		}
		if (!c->pat_hits[p]) {
			const struct count_pat *pat = &c->pats[p];

			if (pat->kernel)
				p_err("no kernel function matches '%s'", pat->func);
			else
				p_err("no function matches '%s%s%s' in the %s %s",
				      pat->lib ? pat->lib : "", pat->lib ? ":" : "", pat->func,
				      c->all ? "processes'" : "target's",
				      pat->lib ? "libraries" : "executables and libraries");
			if (pat->kernel)
				p_hint("names are the kernel's (tracefs's available_filter_functions, or "
				       "kallsyms)");
			else
				p_hint("names are as in the symbol table (nm -D FILE); libraries a "
				       "program dlopen()s later are not searched");
			/* The user's argument is what is wrong: a usage error, as
			 * the design's exit statuses say (2), not a failure (1). */
			return 2;
		}
	}
	if (matched > c->max_funcs) {
		p_err("the patterns match %zu functions in the targets, more than --max-functions %zu",
		      matched, c->max_funcs);
		p_hint("name fewer (a longer pattern, LIB:PATTERN) or raise --max-functions (at most %u)",
		       COUNT_MAX_MAX_FUNCS);
		return 1;
	}
	matched = 0;
	if (c->nr_kpats && probe_kernel(c, true, &matched))
		return 1;
	if (probe_matches(c, 0, true))
		return 1;
	/* -a, --cgroup: a process with probes is known from now, so that its calls'
	 * callers are named even once it has exited. */
	for (size_t i = 0, noted = 0; i < c->nr_uses; i++) {
		struct proc_id id = { .pid = c->uses[i].pid, .exec_id = PROC_EXEC_ANY };

		if (!c->matches[c->uses[i].match].probed || (noted && id.pid == noted - 1))
			continue; /* uses come by process: noted once */
		symbolizer__note_process(c->sym, &id);
		noted = (size_t)id.pid + 1;
	}
	if (!counter__probes(c->ctr) && !(c->children && !c->nr_fns)) {
		p_err("no probe could be attached");
		return 1;
	}
	p_info("%zu function%s, %zu probe%s: %s", c->nr_fns, plural_s(c->nr_fns),
	       counter__probes(c->ctr), plural_s(counter__probes(c->ctr)), counter__mode(c->ctr));
	if (c->skipped_off)
		p_info("%" PRIu64 " matching symbols lie outside every loaded segment: not probed",
		       c->skipped_off);
	return 0;
}

/* -- COMMAND's stops (session/launch.h): the command a target, --children its forks. */
static int count_at_exec(void *ctx, uint32_t pid, struct errmsg *em)
{
	struct count *c = ctx;
	int err = counter__target(c->ctr, pid, true);

	if (!err)
		err = counter__attach_exec_stop(c->ctr, em);
	if (!err && c->children)
		err = counter__attach_children(c->ctr, em);
	return err;
}

static int count_at_entry(void *ctx, const char *path, uint64_t off, int pid, struct errmsg *em)
{
	return counter__attach_stop(((struct count *)ctx)->ctr, path, off, pid, em);
}

static void count_detach_stops(void *ctx)
{
	counter__detach_stops(((struct count *)ctx)->ctr);
}

/*
 * -- COMMAND: start it, stopped at its exec and then at its entry point,
 * where the loader has mapped its libraries. 0, or 1 (said; the command is
 * ended).
 */
static int start_command(struct count *c)
{
	const struct launch_stops stops = {
		.ctx = c,
		.at_exec = count_at_exec,
		.at_entry = count_at_entry,
		.detach = count_detach_stops,
	};

	if (launch__start(&c->ch, c->cmd, c->ptab, &stops))
		return 1;
	c->pids = calloc(1, sizeof(*c->pids));
	if (!c->pids) {
		p_err("out of memory");
		child__abort(&c->ch);
		return 1;
	}
	c->pids[0] = (uint32_t)c->ch.pid;
	c->nr_pids = 1;
	return 0;
}

static void end_command(struct count *c)
{
	if (!c->ch.pid)
		return;
	child__abort(&c->ch);
}

/* Whether every target has exited (never, for -a and --cgroup). */
static bool targets_gone(struct count *c)
{
	if (c->ch.pid) {
		child__reap(&c->ch, false);
		return c->ch.exited;
	}
	if (c->all)
		return false;
	for (size_t i = 0; i < c->nr_pids; i++)
		if (c->pidfds[i] < 0 || !procfs__pidfd_exited(c->pidfds[i]))
			return false;
	return true;
}

/* The guard: functions called more often than the budget are detached. */
static void guard(struct count *c, double dt)
{
	struct count_stat st;

	if (c->budget <= 0 || dt <= 0)
		return;
	for (size_t i = 0; i < c->nr_fns; i++) {
		struct cfunc *f = &c->fns[i];
		double rate;

		if (f->detached || counter__read(c->ctr, (uint32_t)i, &st))
			continue;
		rate = (double)(st.calls - f->last_calls) / dt;
		f->last_calls = st.calls;
		if (rate <= c->budget)
			continue;
		counter__detach(c->ctr, (uint32_t)i);
		f->detached = true;
		f->rate = rate;
		p_warn("%s (%s): %.0f calls/s, over the budget of %.0f: detached after %llu calls; "
		       "its counts stop there (--budget to change)",
		       f->name, f->module, rate, c->budget, st.calls);
	}
}

static int report(struct count *c, bool final);

static void run(struct count *c)
{
	uint64_t t0 = now_ns(), last = t0, end = 0, next = 0;
	uint64_t step = (uint64_t)(c->interval * NS_PER_SEC_F);

	if (c->duration > 0)
		end = t0 + (uint64_t)(c->duration * NS_PER_SEC_F);
	if (step)
		next = t0 + step;
	for (;;) {
		uint64_t now = now_ns(), wait_ms = COUNT_GUARD_MS;

		if (stop__requested()) {
			p_info("stopping on %s", strsignal(stop__requested()));
			break;
		}
		if (end && now >= end)
			break;
		if (targets_gone(c)) {
			p_info(c->ch.pid ? "the command exited" : "the targets exited");
			break;
		}
		if (c->children)
			follow_execs(c);
		if (now - last >= COUNT_GUARD_MS * NS_PER_MS) {
			guard(c, (double)(now - last) / NS_PER_SEC_F);
			last = now;
		}
		if (next && now >= next && (!end || now < end)) {
			c->seconds = (double)(now - t0) / NS_PER_SEC_F;
			report(c, false);
			while (next <= now)
				next += step;
		}
		if (end && (end - now) / NS_PER_MS < wait_ms)
			wait_ms = (end - now) / NS_PER_MS + 1;
		poll(NULL, 0, (int)MIN(wait_ms, 20u));
	}
	c->seconds = (double)(now_ns() - t0) / NS_PER_SEC_F;
	if (c->children)
		release_execs(c);
}

struct collect {
	struct count *c;
	struct count_fn *out;
};

static void caller_cb(void *ctx, const struct count_caller_key *k, uint64_t n)
{
	struct collect *cl = ctx;
	struct count *c = cl->c;
	struct proc_id id = { .pid = k->tgid, .exec_id = PROC_EXEC_ANY };
	const char *name = "[unknown]";
	char buf[512];
	struct sym s;

	if (k->fn >= c->nr_fns)
		return;
	if (k->ret && c->fns[k->fn].kernel) {
		symbolizer__kernel(c->sym, k->ret - 1, &s);
		name = sym__display(&s, buf, sizeof(buf));
	} else if (k->ret) {
		symbolizer__user(c->sym, &id, k->ret, false, &s);
		name = sym__display(&s, buf, sizeof(buf));
	}
	if (counttab__add_caller(&cl->out[k->fn], name, n))
		p_warn("out of memory: a caller of %s left out", c->fns[k->fn].name);
}

/* The results, into a buffer; then written to -o or stdout. 0 or 1. */
static char *out_buf;
static size_t out_len;

static int write_buf(const struct profile *p, FILE *f, const struct out_opts *o)
{
	return fwrite(out_buf, 1, out_len, f) == out_len ? 0 : -EIO;
}

static const struct writer writer_buf = {
	.name = "count",
	.write = write_buf,
	.all_values = true,
};

/* The table (or JSON), written; final: the end's, with what went uncounted said. */
static int report(struct count *c, bool final)
{
	struct count_fn *fns = calloc(c->nr_fns ? c->nr_fns : 1, sizeof(*fns));
	struct collect cl = { c, fns };
	struct counttab_opts o = { .max_callers = c->callers,
				   .hist = c->hist,
				   .all = c->all_funcs };
	uint64_t cnt[COUNT_C_NR];
	struct errmsg em = { 0 };
	FILE *f;
	int ret = 0, err;

	if (!fns) {
		p_err("out of memory");
		return 1;
	}
	for (size_t i = 0; i < c->nr_fns; i++) {
		fns[i].function = strdup(c->fns[i].name);
		fns[i].module = strdup(c->fns[i].module);
		fns[i].detached = c->fns[i].detached;
		fns[i].rate = c->fns[i].rate;
		if (!fns[i].function || !fns[i].module) {
			p_err("out of memory");
			ret = 1;
			goto out;
		}
		if (counter__read(c->ctr, (uint32_t)i, &fns[i].st))
			p_warn("%s: its counts could not be read", c->fns[i].name);
	}
	if (c->nr_kpats && symbolizer__load_kernel(c->sym))
		p_warn("kernel symbols could not be read: the kernel callers are unnamed");
	err = counter__callers(c->ctr, caller_cb, &cl);
	if (err)
		p_warn("the callers could not be read: %s", strerror(-err));
	counter__counters(c->ctr, cnt);
	if (!final)
		goto write;
	if (cnt[COUNT_C_TARGETS_FULL])
		p_warn("%llu children not counted: over %u target processes at once",
		       (unsigned long long)cnt[COUNT_C_TARGETS_FULL], COUNT_TARGETS);
	if (cnt[COUNT_C_EXECS_FULL])
		p_warn("%llu execs of children not looked at: over %u waiting at once (their new "
		       "executables not probed)",
		       (unsigned long long)cnt[COUNT_C_EXECS_FULL], COUNT_EXECS);
	if (cnt[COUNT_C_CALLERS_FULL])
		p_warn("%llu calls not counted by caller: over %u distinct callers",
		       (unsigned long long)cnt[COUNT_C_CALLERS_FULL], COUNT_CALLERS);
	if (cnt[COUNT_C_DEEP] || cnt[COUNT_C_THREADS_FULL])
		p_warn("%llu calls counted but not timed: %llu deeper than %u nested calls, %llu "
		       "whose thread's stack could not be made (kernel memory)",
		       (unsigned long long)(cnt[COUNT_C_DEEP] + cnt[COUNT_C_THREADS_FULL]),
		       (unsigned long long)cnt[COUNT_C_DEEP], COUNT_STACK_DEPTH,
		       (unsigned long long)cnt[COUNT_C_THREADS_FULL]);
	p_info("calls without their return (longjmp, a detached probe): %llu; returns without "
	       "their call (entered before the probes): %llu",
	       (unsigned long long)cnt[COUNT_C_UNMATCHED],
	       (unsigned long long)cnt[COUNT_C_NOFRAME]);
write:
	counttab__sort(fns, c->nr_fns);

	f = open_memstream(&out_buf, &out_len);
	if (!f) {
		p_err("out of memory");
		ret = 1;
		goto out;
	}
	if (c->interval > 0 && !strcmp(c->format, "table"))
		fprintf(f, "--- %s%.1f s (every call since the start) ---\n",
			final ? "the end, after " : "", c->seconds);
	if (!strcmp(c->format, "json")) {
		err = counttab__write_json(f, fns, c->nr_fns, c->seconds);
	} else if (!strcmp(c->format, "pprof") || !strcmp(c->format, "pb")) {
		uint8_t *pb;
		size_t pblen;

		err = pprof__encode_count(fns, c->nr_fns, (uint64_t)(c->seconds * NS_PER_SEC_F),
					  &pb, &pblen);
		if (!err) {
			/* pb: profile.proto as is (go tool pprof reads it too). */
			if (!strcmp(c->format, "pb"))
				err = fwrite(pb, 1, pblen, f) == pblen ? 0 : -EIO;
			else
				err = writer__gzip(f, pb, pblen);
			free(pb);
		}
	} else
		err = counttab__write_table(f, fns, c->nr_fns, &o);
	if (fclose(f) || err) {
		p_err("out of memory");
		ret = 1;
		goto out;
	}
	stop__writing(true);
	err = writer__write_path(&writer_buf, NULL, c->output, NULL, &em);
	stop__writing(false);
	if (err) {
		p_err("writing %s failed: %s", c->output ? c->output : "to stdout",
		      errmsg_said(&em) ? em.msg : strerror(-err));
		ret = 1;
	} else if (c->output && final) {
		p_info("wrote %s (%s)", c->output, c->format);
	}
out:
	free(out_buf);
	out_buf = NULL;
	for (size_t i = 0; i < c->nr_fns; i++)
		counttab__fn_free(&fns[i]);
	free(fns);
	return ret;
}

/*
 * -a and --cgroup: the processes whose files are looked at (every process,
 * or those of the cgroups and below). 0, or 1 (said).
 */
static int find_processes(struct count *c)
{
	c->pids = calloc(COUNT_MAX_PROCS, sizeof(*c->pids));
	if (!c->pids) {
		p_err("out of memory");
		return 1;
	}
	return scope__pids(c->cgroups, c->cgroup_fds, c->nr_cgroups, c->pids, COUNT_MAX_PROCS,
			   &c->nr_pids, "the patterns");
}

/* Opens the --cgroup directories. 0, or 1 (said). */
static int open_cgroups(struct count *c)
{
	c->cgroup_fds = calloc(c->nr_cgroups ? c->nr_cgroups : 1, sizeof(*c->cgroup_fds));
	if (!c->cgroup_fds) {
		p_err("out of memory");
		return 1;
	}
	return scope__open_cgroups(c->cgroups, c->nr_cgroups, c->cgroup_fds);
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int count_main(struct count *c)
{
	struct ptab_opts po = { .warn = sym_warn };
	struct symbolizer_opts so = { .warn = sym_warn };
	struct errmsg em = { 0 };
	struct caps_report cr;
	int ret;

	/* Before libbpf, whose own lines about RLIMIT_MEMLOCK and "Couldn't
	 * load trivial BPF program" would bury the cause. */
	caps__check(&cr);
	if (cr.missing[0]) {
		p_err("bpfprof count needs root (missing %s)", cr.missing);
		p_hint("run it with sudo, or grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_SYSLOG");
		return 1;
	}
	if (c->cmd && cli__check_command(c->cmd[0], &em) != CLI_OK) {
		p_errmsg(&em);
		return 1;
	}
	if (c->output && writer__check_path(c->output, &em)) {
		p_errmsg(&em);
		return 1;
	}
	stop__install();
	raise_fd_limit();
	c->ptab = ptab__new(&po);
	so.ptab = c->ptab;
	c->sym = c->ptab ? symbolizer__new(&so) : NULL;
	if (!c->sym) {
		p_err("out of memory");
		return 1;
	}
	if (c->nr_cgroups && open_cgroups(c))
		return 1;
	/* Loaded for the most functions allowed: -- COMMAND's are found after the load. */
	c->ctr = counter__open((uint32_t)c->max_funcs, c->all, c->cgroup_fds,
			       (uint32_t)c->nr_cgroups, c->nr_kpats > 0, log_level() >= LOG_DEBUG,
			       &em);
	if (!c->ctr) {
		p_errmsg(&em);
		return 1;
	}
	if (c->cmd) {
		if (start_command(c))
			return 1;
	}
	if (c->all) {
		/* With -- COMMAND: it is stopped at its entry point by now, its
		 * files mapped: -a looks at them too (--cgroup if it is in one). */
		free(c->pids);
		c->pids = NULL;
		c->nr_pids = 0;
		if (find_processes(c)) {
			end_command(c);
			return 1;
		}
	} else if (!c->cmd) {
		for (size_t i = 0; i < c->nr_pids; i++) {
			if (counter__target(c->ctr, c->pids[i], false)) {
				p_err("cannot add process %u to the targets", c->pids[i]);
				return 1;
			}
		}
	}
	ret = probe_all(c);
	if (ret) {
		end_command(c);
		return ret;
	}
	c->pidfds = calloc(c->nr_pids, sizeof(*c->pidfds));
	c->ids = calloc(c->nr_pids, sizeof(*c->ids));
	if (!c->pidfds || !c->ids) {
		p_err("out of memory");
		end_command(c);
		return 1;
	}
	for (size_t i = 0; i < c->nr_pids; i++) {
		c->ids[i] = (struct proc_id){ .pid = c->pids[i], .exec_id = PROC_EXEC_ANY };
		c->pidfds[i] = -1;
		if (c->all)
			continue; /* not watched: -d or Ctrl-C ends the run */
		c->pidfds[i] = c->cmd ? -1 : procfs__pidfd(c->pids[i]);
		/* Known now, while alive: callers are named even after it exits. */
		symbolizer__note_process(c->sym, &c->ids[i]);
	}
	if (c->children)
		counter__follow_execs(c->ctr);
	if (c->cmd)
		kill(c->ch.pid, SIGCONT);
	run(c);
	ret = report(c, true);
	if (c->cmd) {
		if (!c->ch.exited) /* -d or a stop request: bpfprof ends it */
			end_command(c);
		else if (!ret && WIFEXITED(c->ch.status))
			ret = WEXITSTATUS(c->ch.status);
		else if (!ret && WIFSIGNALED(c->ch.status))
			ret = 128 + WTERMSIG(c->ch.status);
	}
	return ret;
}

int cmd_count(int argc, char **argv)
{
	struct count c = { .ch = CHILD_INIT };
	int ret;

	ret = parse(argc, argv, &c);
	if (ret == 1) {
		count_usage(stdout);
		ret = 0;
	} else if (!ret) {
		ret = count_main(&c);
	}
	counter__free(c.ctr);
	for (size_t i = 0; i < c.nr_held; i++)
		mfile__put(c.ptab, c.held[i]);
	free(c.held);
	for (size_t i = 0; i < c.nr_matches; i++)
		file_match__free(&c, &c.matches[i]);
	free(c.matches);
	free(c.uses);
	symbolizer__free(c.sym);
	ptab__free(c.ptab);
	for (size_t i = 0; i < c.nr_fns; i++) {
		free(c.fns[i].name);
		free(c.fns[i].module);
	}
	free(c.fns);
	for (size_t i = 0; i < c.nr_pats; i++)
		counttab__pat_free(&c.pats[i]);
	free(c.pats);
	free(c.pat_hits);
	for (size_t i = 0; c.pidfds && i < c.nr_pids; i++)
		if (c.pidfds[i] >= 0)
			close(c.pidfds[i]);
	free(c.pidfds);
	free(c.ids);
	for (size_t i = 0; c.cgroup_fds && i < c.nr_cgroups; i++)
		if (c.cgroup_fds[i] >= 0)
			close(c.cgroup_fds[i]);
	free(c.cgroup_fds);
	free(c.cgroups);
	free(c.fseen);
	free(c.pids);
	return ret;
}
