// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * top.c - "bpfprof top": a live, full-screen list of the hottest functions,
 * refreshed every second from the counts the kernel keeps, as `perf top`
 * shows it - without a ring buffer of raw samples: each refresh is one
 * drain of the in-kernel counts, symbolized like record's.
 *
 * The window slides: the view covers the drains of the last --window
 * seconds (default 10), each kept as its own profile, so a function that
 * stops running leaves the list after that long and shares are exact over
 * the window (no decay factor to reason about). Sampling, targets and
 * symbolization are record's (session/record.h's phases), with both kernel and user
 * frames collected so the frames toggle needs no restart. One difference:
 * with --unwind auto on the whole machine, a new process's unwind tables
 * wait until it keeps running (TOP_HOT_DRAINS): building them for every
 * short-lived process cost more than all the rest of top.
 *
 * On a terminal the view is drawn with ncurses: keys sort, pause, filter
 * (process name, pid, container), toggle kernel/user frames, list
 * processes and zoom into one; q, Ctrl-C, SIGTERM and SIGHUP leave with the
 * terminal restored, a resize redraws. Messages that would land on the
 * screen (symbolizer warnings) are kept and printed after it closes.
 * Without a terminal (or with --stdio), a plain-text snapshot is printed
 * every interval.
 */
#include "cmd/cmd.h"

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/budget.h"
#include "base/htab.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/text.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "session/record.h"
#include "tui/linebuf.h"
#include "tui/termout.h"
#include "tui/toptable.h"
#include "collector/collector.h"
#include "proc/ptab.h"
#include "unwind/unwinder.h"

#define TOP_DEFAULT_WINDOW 10
#define TOP_MAX_WINDOW	   3600
#define TOP_POLL_MS	   60000	/* the longest wait between looks at the clock */
#define TOP_NOTICE_NS	   200000000ull /* notices are taken in batches this far apart */
#define TOP_FILTER_MAX	   64
/*
 * --unwind auto on the whole machine: a process gets unwind tables once it
 * has had samples in TOP_HOT_DRAINS refreshes (it kept running for 2 s) and
 * at least 1/TOP_HOT_SHARE of the samples since its first (it can make a
 * row of the screen), or when zoomed into; until then, and for good if it
 * exits sooner, its stacks are walked with frame pointers.
 */
#define TOP_HOT_DRAINS	   3
#define TOP_HOT_SHARE	   100
#define TOP_IDLE_CHECK	   30 /* refreshes without samples: is a waiting process still there? */
#define TOP_WARM_REFRESHES 10 /* -v: the steady state is what comes after these */

enum {
	OPT_WINDOW = OPT_CMD_FIRST,
	OPT_DELAY,
	OPT_STDIO,
	OPT_SORT,
	OPT_ROWS,
};

static volatile sig_atomic_t top_signal;

static void on_top_signal(int sig)
{
	top_signal = sig;
	budget__stop(); /* a hostile file being read gives up soon (budget.h) */
}

/*
 * A profile many drains go into: a stack is symbolized and interned once
 * (record's key memo skips keys it has seen), and each drain's slice lists
 * what its samples gained. A catalog is replaced every CATALOG_SPAN seconds
 * (at least the window; at the refresh nearest that), so its memory holds
 * at most that long's distinct stacks and those still shown (carried into
 * the next, see carry_over());
 * it is freed when the last slice of it leaves the window.
 */
#define CATALOG_SPAN 60

struct catalog {
	struct profile *p;
	uint64_t *prev; /* each sample's count at the last drain */
	size_t cap_prev;
	uint64_t born;
	unsigned refs; /* slices, + 1 while drains go into it */
};

struct slice {
	struct catalog *c;
	struct top_delta *d;
	size_t n;
	uint64_t t;  /* CLOCK_MONOTONIC of the drain */
	uint64_t id; /* for the table's updates: 1, 2, ... in drain order */
};

struct top {
	struct record r;
	unsigned window; /* seconds */
	double delay;	 /* seconds between refreshes */
	unsigned rows;	 /* --stdio: rows per snapshot */
	bool tui;
	/* Drains go into the current catalog; the window is one slice per drain,
	 * oldest first; drains while paused are held and join it on resume. The
	 * first nr_gone slices of win left the window: the next table update
	 * takes their counts away, then they are freed. */
	struct catalog *cur;
	struct slice *win, *held;
	size_t nr_win, cap_win, nr_held, cap_held, nr_gone;
	uint64_t slice_ids;
	struct top_slice *scratch; /* the window as toptable takes it */
	size_t cap_scratch;
	struct top_view view;
	struct toptable *tt;
	const struct top_table *table; /* tt's */
	char filter[TOP_FILTER_MAX + 1];
	bool paused, show_procs, prompting;
	char input[TOP_FILTER_MAX + 1];
	size_t input_len;
	size_t cursor;
	/* Rates, from the collector's counters between drains. */
	uint64_t last_samples, last_t;
	double rate;
	uint64_t lost;
	size_t nr_events;
	char target[128];
	/* stderr while the screen is up. */
	int saved_stderr, msg_fd;
	/* Where the agent's CPU goes (-v at exit), in thread CPU time: process
	 * notices, drains (symbolizing included), building the table, drawing,
	 * the rest (polls, keys, the unwinder's tick). */
	uint64_t cpu_notice, cpu_drain, cpu_table, cpu_draw, nr_drains, nr_notices;
	uint64_t nr_waits, nr_sleeps; /* poll()s, and of them those that slept */
	uint64_t nr_uw_wakes;	      /* waits that ended early for the unwinder's work */
	/* The same at the end of refresh TOP_WARM_REFRESHES, and the process's
	 * CPU then (ns): -v tells the steady state from the start-up's, whose
	 * first drains symbolize every stack the machine runs. */
	struct {
		uint64_t cpu, cpu_drain, cpu_table, cpu_draw, nr_waits, nr_sleeps, t;
		bool taken;
	} warm;
	/* --unwind auto on -a/--cgroup: processes noticed whose tables wait for
	 * them to keep running (pid -> struct waiting). NULL: tables at once. */
	struct htab *waiting;
	uint64_t nr_deferred, nr_promoted, cpu_promote;
	/* Catalogs replaced, and the samples carried into the next (-v). */
	uint64_t nr_catalogs, nr_carried, nr_left, cpu_carry;
	unsigned catalog_span; /* seconds: CATALOG_SPAN, or BPFPROF_TEST_CATALOG_SECS */
	uint32_t self;	       /* top's own pid */
	uint64_t drained;      /* samples drained since the start */
};

/* A process whose unwind tables wait (see TOP_HOT_DRAINS). */
struct waiting {
	struct proc_id id;
	uint64_t last_drain; /* the refresh that last had samples of it */
	unsigned drains;     /* refreshes with samples since its notice */
	uint64_t samples;    /* its samples since its notice */
	uint64_t drained_at; /* top's drained samples at its notice */
};

/* CPU time of the calling thread, ns, when -v is to say where it went (0
 * otherwise: it is a system call, half a dozen a refresh). */
static bool timing;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	if (!timing)
		return 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process, ns (all threads: the kernel-symbol reader too). */
static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* -v: the counters once the start-up's refreshes are over. */
static void mark_warm(struct top *t, uint64_t now)
{
	if (!timing || t->warm.taken || t->nr_drains < TOP_WARM_REFRESHES)
		return;
	t->warm.taken = true;
	t->warm.cpu = process_cpu_ns();
	t->warm.cpu_drain = t->cpu_drain;
	t->warm.cpu_table = t->cpu_table;
	t->warm.cpu_draw = t->cpu_draw;
	t->warm.nr_waits = t->nr_waits;
	t->warm.nr_sleeps = t->nr_sleeps;
	t->warm.t = now;
}

static void top_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfprof top [OPTIONS]\n"
		"\n"
		"A live view of the hottest functions, refreshed every second from the counts the\n"
		"kernel keeps (no raw samples are copied), over a sliding window.\n"
		"\n"
		"Targets and sampling, as for bpfprof record (default: the whole machine, -a):\n"
		"  -a, --all-cpus          every online CPU\n"
		"  -p, --pid PID[,PID...]  only these processes (all their threads); stops\n"
		"                          when they have all exited\n"
		"  -C, --cpu LIST          only these CPUs, e.g. 0-3,8\n"
		"      --cgroup PATH       only processes in this cgroup v2 (repeatable)\n"
		"  -F, --freq HZ           samples per second per CPU (default 99)\n"
		"  -d, --duration SECS     stop after this long (default: until q, Ctrl-C or\n"
		"                          -p's processes exit)\n"
		"  -U, --user-only         start showing user frames only (k toggles)\n"
		"  -K, --kernel-only       start showing kernel frames only (k toggles)\n"
		"      --include-idle      count the idle task too\n"
		"      --unwind MODE       user stacks: auto (default; on the whole machine or a\n"
		"                          cgroup, .eh_frame tables for a process once it has\n"
		"                          run in 3 refreshes with 1%% of the samples, or is zoomed\n"
		"                          into: frame pointers before, and for short-lived\n"
		"                          processes), fp (frame pointers only), dwarf (tables\n"
		"                          for every process at its first sample)\n"
		"\n"
		"View:\n"
		"      --window SECS       the sliding window the shares cover (default %u)\n"
		"      --delay SECS        seconds between refreshes (default 1)\n"
		"      --sort self|total   initial order (default self)\n"
		"      --stdio             plain text snapshots even on a terminal (the default\n"
		"                          when stdout is not one)\n"
		"      --rows N            rows per plain snapshot (default 20)\n"
		"  -q, --quiet             only errors\n"
		"  -h, --help              this help\n"
		"\n"
		"Keys:\n"
		"  s        sort by self or by total samples\n"
		"  space    pause / resume (sampling goes on)\n"
		"  /        filter: a process name (or part), a pid, or a container id (start);\n"
		"           empty: no filter\n"
		"  k        frames: all, user only, kernel only\n"
		"  p        the process list: up/down, Enter zooms into one; z or Esc: all again\n"
		"  q        quit (also Ctrl-C)\n"
		"\n"
		"Examples:\n"
		"  sudo bpfprof top\n"
		"  sudo bpfprof top -p 1234 -F 499\n"
		"  sudo bpfprof top -a -d 10 --stdio > top.txt\n"
		"\n"
		"Exit status: 0, 1 failure (not root, BPF refused), 2 usage error.\n",
		TOP_DEFAULT_WINDOW);
}

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "bpfprof top: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nHINT: see 'bpfprof top --help'\n");
	return 2;
}

/* A usage error the option parser described, with its own hint if it has one. */
static int usage_em(const struct errmsg *em)
{
	if (!em->hint[0])
		return usage("%s", em->msg);
	fprintf(stderr, "bpfprof top: %s\nHINT: %s\n", em->msg, em->hint);
	return 2;
}

static const struct option long_opts[] = {
	CLI_SAMPLING_OPTIONS,
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "rows", required_argument, NULL, OPT_ROWS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* 0 to go on, 1 for --help, 2 usage error. */
static int parse(int argc, char **argv, struct top *t, bool *stdio)
{
	struct options *o = &t->r.o;
	struct errmsg em = { 0 };
	double secs;
	int c, rc;

	cli__sampling_defaults(o);
	t->window = TOP_DEFAULT_WINDOW;
	t->catalog_span = CATALOG_SPAN;
	t->self = (uint32_t)getpid();
	/* Tests: replacements within a short run. */
	if (getenv("BPFPROF_TEST_CATALOG_SECS"))
		t->catalog_span = (unsigned)MAX(1, atoi(getenv("BPFPROF_TEST_CATALOG_SECS")));
	t->delay = 1;
	t->rows = 20;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" CLI_SAMPLING_SHORT "qvh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_WINDOW:
			if (cli__parse_duration(optarg, &secs) || secs < 1 || secs > TOP_MAX_WINDOW)
				return usage("invalid --window '%s': expected 1 to 3600 seconds",
					     optarg);
			t->window = (unsigned)(secs + 0.5);
			continue;
		case OPT_DELAY:
			if (cli__parse_duration(optarg, &secs) || secs < 0.1 || secs > 60)
				return usage("invalid --delay '%s': expected 0.1 to 60 seconds",
					     optarg);
			t->delay = secs;
			continue;
		case OPT_STDIO:
			*stdio = true;
			continue;
		case OPT_SORT:
			if (!strcmp(optarg, "self"))
				t->view.sort = TOP_SORT_SELF;
			else if (!strcmp(optarg, "total"))
				t->view.sort = TOP_SORT_TOTAL;
			else
				return usage("invalid --sort '%s': expected self or total", optarg);
			continue;
		case OPT_ROWS: {
			uint64_t v;

			if (parse_u64(optarg, 10, &v) || !v || v > 100000)
				return usage("invalid --rows '%s': expected 1 to 100000", optarg);
			t->rows = (unsigned)v;
			continue;
		}
		case 'q':
			o->verbosity = -1;
			continue;
		case 'v':
			o->verbosity = o->verbosity < 0 ? 1 : o->verbosity + 1;
			continue;
		case 'h':
			return 1;
		case ':':
			return usage("option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage("unknown option '%s'", argv[optind - 1]);
		}
		rc = cli__sampling_option(c, optarg, o, &em);
		if (rc == CLI_USAGE)
			return usage_em(&em);
		if (rc != CLI_OK)
			return usage("unknown option '%s'", argv[optind - 1]);
	}
	if (cli__stray_pids(o, argc, argv, optind, &em))
		return usage_em(&em);
	if (optind < argc)
		return usage("unexpected argument '%s'", argv[optind]);
	if (cli__validate(o, &em))
		return usage("%s", em.msg);
	/* -U/-K choose the first view; both kinds of frames are collected. */
	t->view.frames = o->user_only	  ? TOP_FRAMES_USER
			 : o->kernel_only ? TOP_FRAMES_KERNEL
					  : TOP_FRAMES_ALL;
	o->user_only = o->kernel_only = false;
	return 0;
}

/* --- process notices ---------------------------------------------------------- */

/* A process notice (new program image, or code in no known mapping). */
static void on_notice(void *ctx, const struct bp_proc_event *e)
{
	struct top *t = ctx;
	struct record_ctx *rc = &t->r.rc;
	struct unwinder *uw = rc->uw;
	struct proc_id id = { .pid = e->tgid,
			      .start_time = e->start_time,
			      .exec_id = e->exec_id,
			      .mm_sig = e->mm_sig,
			      .vfork = e->flags & BP_NOTICE_VFORK };
	uint64_t c0 = cpu_ns();
	struct htab_entry *w;
	bool created;

	t->nr_notices++;
	if (!t->waiting || !uw || e->kind == PROC_EVENT_MAPS) {
		/* (More mappings of a new image: names only.) */
		record__on_proc_notice(rc, e);
		goto out;
	}
	w = htab__find(t->waiting, &e->tgid, sizeof(e->tgid));
	if (e->kind == PROC_EVENT_REFRESH) {
		/* Only names to re-read while its tables wait. */
		if (w)
			rc->uw = NULL;
		record__on_proc_notice(rc, e);
		rc->uw = uw;
		goto out;
	}
	/* A new image: names now (its /proc is read while it lives), tables
	 * when it has kept running. */
	rc->uw = NULL;
	record__on_proc_notice(rc, e);
	rc->uw = uw;
	if (!w)
		w = htab__upsert(t->waiting, &e->tgid, sizeof(e->tgid), &created);
	if (!w) {
		unwinder__note_process(uw, &id);
		goto out;
	}
	if (!w->value && !(w->value = calloc(1, sizeof(struct waiting)))) {
		htab__remove(t->waiting, &e->tgid, sizeof(e->tgid));
		goto out;
	}
	*(struct waiting *)w->value =
		(struct waiting){ .id = id, .last_drain = t->nr_drains, .drained_at = t->drained };
	t->nr_deferred++;
out:
	t->cpu_notice += cpu_ns() - c0;
}

/* Its tables now (zoomed into, or hot). */
static void promote_pid(struct top *t, uint32_t pid)
{
	struct waiting *p = t->waiting ? htab__remove(t->waiting, &pid, sizeof(pid)) : NULL;

	if (!p)
		return;
	unwinder__note_process(t->r.rc.uw, &p->id);
	t->nr_promoted++;
	free(p);
}

/*
 * After a drain: processes waiting for tables that had samples in it move
 * on; at their TOP_HOT_DRAINS-th refresh with samples, with their share,
 * their tables are built and handed to the walker. Those long without
 * samples are looked at (exited ones forgotten).
 */
static void promote(struct top *t, const struct slice *sl)
{
	uint64_t gen = t->nr_drains, c0;
	struct htab_entry *e;
	size_t pos = 0;

	for (size_t i = 0; i < sl->n; i++)
		t->drained += sl->d[i].count;
	if (!t->waiting || !htab__count(t->waiting))
		return;
	c0 = cpu_ns();
	for (size_t i = 0; i < sl->n; i++) {
		uint32_t pid = profile__sample(sl->c->p, sl->d[i].sample)->pid;
		struct htab_entry *w = htab__find(t->waiting, &pid, sizeof(pid));
		struct waiting *p;

		if (!w)
			continue;
		p = w->value;
		p->samples += sl->d[i].count;
		if (p->last_drain != gen || !p->drains) {
			p->last_drain = gen;
			p->drains++;
		}
		/* Counts only grow: checked after each entry, a process qualifies at
		 * its last entry of the drain at the latest (then leaves the table).
		 * Not top itself: its start-up burst met the rule, and its tables
		 * cost ~9 ms for stacks nobody came for. */
		if (pid != t->self && p->drains >= TOP_HOT_DRAINS &&
		    p->samples * TOP_HOT_SHARE >= t->drained - p->drained_at)
			promote_pid(t, pid);
	}
	if (gen % TOP_IDLE_CHECK == 0) {
		while ((e = htab__next(t->waiting, &pos))) {
			struct waiting *p = e->value;

			if (gen - p->last_drain >= TOP_IDLE_CHECK &&
			    !ptab__alive(t->r.rc.pt, &p->id)) {
				htab__remove(t->waiting, e->key, e->klen);
				free(p);
			}
		}
	}
	t->cpu_promote += cpu_ns() - c0;
}

/* --- the window ------------------------------------------------------------------ */

static void catalog_put(struct catalog *c)
{
	if (c && !--c->refs) {
		profile__free(c->p);
		free(c->prev);
		free(c);
	}
}

static struct catalog *catalog_new(uint64_t now)
{
	struct catalog *c = calloc(1, sizeof(*c));

	if (!c || !(c->p = profile__new())) {
		free(c);
		return NULL;
	}
	c->born = now;
	c->refs = 1;
	return c;
}

static void slice_free(struct slice *sl)
{
	catalog_put(sl->c);
	free(sl->d);
}

static int push(struct slice **v, size_t *nr, size_t *cap, const struct slice *sl)
{
	if (array_grow((void **)v, cap, *nr + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*nr)++] = *sl;
	return 0;
}

/* How many of v[from..nr) are older than the window (the newest always stays). */
static size_t aged(const struct slice *v, size_t from, size_t nr, unsigned window, double delay,
		   uint64_t now)
{
	/*
	 * A slice holds what came since the drain before it: it is in the
	 * window while that start is, i.e. while its own end is younger than
	 * the window less a refresh. Half a refresh of slack: drains run a
	 * little early or late, and a slice that ends 0.999 or 1.001 refreshes
	 * before the window's end is the same slice. (Its end against the whole
	 * window kept one refresh too many in about half the refreshes: a 2 s
	 * window showed 2 or 3 seconds of samples.)
	 */
	uint64_t span = (uint64_t)window * NS_PER_SEC, slack = (uint64_t)(delay * NS_PER_SEC_F / 2);
	size_t drop = from;

	while (drop + 1 < nr && now - v[drop].t + MIN(slack, span / 2) >= span)
		drop++;
	return drop - from;
}

/* Frees the first drop slices of v. */
static void drop_slices(struct slice *v, size_t *nr, size_t drop)
{
	for (size_t i = 0; i < drop; i++)
		slice_free(&v[i]);
	memmove(v, v + drop, (*nr - drop) * sizeof(*v));
	*nr -= drop;
}

/* The window's slices older than it leave it (freed at the next rebuild). */
static void age_window(struct top *t, uint64_t now)
{
	t->nr_gone += aged(t->win, t->nr_gone, t->nr_win, t->window, t->delay, now);
}

/* The table of the window; then the slices that left it are freed. */
static int rebuild(struct top *t)
{
	size_t n = t->nr_win - t->nr_gone;
	int err = 0;

	t->view.filter = t->filter[0] ? t->filter : NULL;
	/* Only the rows shown are kept in order (rows 4 to LINES - 2 on the screen). */
	t->view.rows = t->tui ? (size_t)MAX(LINES - 5, 1) : t->rows;
	if (array_grow((void **)&t->scratch, &t->cap_scratch, n + 1, sizeof(*t->scratch)))
		err = -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		const struct slice *sl = &t->win[t->nr_gone + i];

		t->scratch[i] = (struct top_slice){ sl->c->p, sl->d, sl->n, sl->id };
	}
	if (!err)
		err = toptable__update(t->tt, t->scratch, n, &t->view);
	drop_slices(t->win, &t->nr_win, t->nr_gone);
	t->nr_gone = 0;
	return err;
}

/* What the drain added to the catalog's samples: the slice's (sample, count) pairs. */
static int diff_counts(struct catalog *c, struct slice *sl)
{
	size_t n = profile__nr_samples(c->p), cap = 0;
	size_t old = c->cap_prev;

	if (n > c->cap_prev) {
		if (array_grow((void **)&c->prev, &c->cap_prev, n, sizeof(*c->prev)))
			return -ENOMEM;
		memset(c->prev + old, 0, (c->cap_prev - old) * sizeof(*c->prev));
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t now = profile__sample(c->p, i)->count;

		if (now == c->prev[i])
			continue;
		if (array_grow((void **)&sl->d, &cap, sl->n + 1, sizeof(*sl->d)))
			return -ENOMEM;
		sl->d[sl->n++] = (struct top_delta){ (uint32_t)i, now - c->prev[i] };
		c->prev[i] = now;
	}
	return 0;
}

/* Seconds the window holds now. */
static double window_span(const struct top *t, uint64_t now)
{
	if (!t->nr_win)
		return 0;
	return MIN((double)t->window, (now - t->r.t_start) / NS_PER_SEC_F);
}

/* One drain into the catalog, its slice into the window (or held while paused). */
/* Marks the samples of catalog c that slices sl[0..n) name. */
static void mark_shown(const struct slice *sl, size_t n, const struct catalog *c, bool *keep)
{
	for (size_t i = 0; i < n; i++)
		if (sl[i].c == c)
			for (size_t j = 0; j < sl[i].n; j++)
				keep[sl[i].d[j].sample] = true;
}

/*
 * A new catalog starts with the samples of the old one that the window (or
 * a pause) still holds - what they are, not their counts - and record's
 * memo follows them, so the keys that keep coming back are not symbolized
 * again: re-symbolizing a minute's distinct stacks cost ~7 ms of CPU at
 * each replacement, more than the minute's refreshes together. What only
 * the old catalog used goes with it. Best effort: on failure the new
 * catalog simply starts empty.
 */
static void carry_over(struct top *t, struct catalog *from, struct catalog *to)
{
	size_t n = profile__nr_samples(from->p);
	bool *keep = calloc(n ? n : 1, sizeof(*keep));
	int64_t *map = malloc((n ? n : 1) * sizeof(*map));

	uint64_t c0 = cpu_ns();

	t->nr_catalogs++;
	if (keep && map) {
		mark_shown(t->win, t->nr_win, from, keep);
		mark_shown(t->held, t->nr_held, from, keep);
		if (!profile__copy_if(to->p, from->p, keep, map))
			record__memo_move(&t->r.rc, from->p, to->p, map, n);
		for (size_t i = 0; i < n; i++) {
			t->nr_carried += keep[i];
			t->nr_left += !keep[i];
		}
	}
	free(keep);
	free(map);
	t->cpu_carry += cpu_ns() - c0;
}

static int top_drain(struct top *t, uint64_t now)
{
	struct collector_stats st;
	struct slice sl = { 0 };
	uint64_t c0 = cpu_ns();
	int err;

	/* At the refresh nearest the span: refreshes keep to a beat, each one a
	 * little late, so "at least the span" replaced a catalog two or three
	 * refreshes after its birth by the scheduler's whim. */
	if (t->cur && now - t->cur->born + (uint64_t)(t->delay * NS_PER_SEC_F) / 2 >=
			      (uint64_t)MAX(t->catalog_span, t->window) * NS_PER_SEC) {
		struct catalog *old = t->cur;

		t->cur = catalog_new(now);
		if (t->cur)
			carry_over(t, old, t->cur);
		catalog_put(old);
	}
	if (!t->cur && !(t->cur = catalog_new(now))) {
		p_err("out of memory");
		return 1;
	}
	t->r.rc.prof = t->cur->p;
	err = record__drain(&t->r, now);
	t->r.rc.prof = NULL;
	t->cpu_drain += cpu_ns() - c0;
	t->nr_drains++;
	if (err)
		return err;
	sl.c = t->cur;
	sl.t = now;
	sl.id = ++t->slice_ids;
	t->cur->refs++;
	if (diff_counts(t->cur, &sl)) {
		slice_free(&sl);
		p_err("out of memory");
		return 1;
	}
	promote(t, &sl);
	if (t->paused ? push(&t->held, &t->nr_held, &t->cap_held, &sl)
		      : push(&t->win, &t->nr_win, &t->cap_win, &sl)) {
		slice_free(&sl);
		p_err("out of memory");
		return 1;
	}
	/* Held drains older than the window will never be shown. */
	if (t->paused)
		drop_slices(t->held, &t->nr_held,
			    aged(t->held, 0, t->nr_held, t->window, t->delay, now));
	else
		age_window(t, now);
	collector__stats(t->r.col, &st);
	if (now > t->last_t)
		t->rate =
			(st.v[STAT_SAMPLES] - t->last_samples) / ((now - t->last_t) / NS_PER_SEC_F);
	t->last_samples = st.v[STAT_SAMPLES];
	t->last_t = now;
	t->lost = record__lost(&st);
	t->nr_events = st.nr_events;
	{
		uint64_t t0 = cpu_ns();

		err = !t->paused && rebuild(t);
		t->cpu_table += cpu_ns() - t0;
	}
	if (err) {
		p_err("out of memory");
		return 1;
	}
	return 0;
}

static void resume(struct top *t, uint64_t now)
{
	for (size_t i = 0; i < t->nr_held; i++)
		if (push(&t->win, &t->nr_win, &t->cap_win, &t->held[i]))
			slice_free(&t->held[i]);
	t->nr_held = 0;
	t->paused = false;
	age_window(t, now); /* on_key rebuilds */
}

static void describe(struct top *t)
{
	const struct options *o = &t->r.o;

	if (o->nr_pids == 1)
		snprintf(t->target, sizeof(t->target), "process %u", o->pids[0]);
	else if (o->nr_pids)
		snprintf(t->target, sizeof(t->target), "%zu processes", o->nr_pids);
	else if (o->nr_cgroups)
		snprintf(t->target, sizeof(t->target), "cgroup %s%s", o->cgroups[0],
			 o->nr_cgroups > 1 ? " ..." : "");
	else
		snprintf(t->target, sizeof(t->target), "%zu CPU%s", t->nr_events,
			 t->nr_events == 1 ? "" : "s");
}

static const char *frames_name(enum top_frames f)
{
	return f == TOP_FRAMES_USER ? "user" : f == TOP_FRAMES_KERNEL ? "kernel" : "all";
}

static const char *module_label(const struct top_row *r)
{
	if (r->kind == FRAME_KERNEL)
		return "[kernel]";
	return r->module ? r->module : r->kind == FRAME_OTHER ? "" : "?";
}

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * n / of : 0;
}

/* The first header line, shared by both outputs:
 * "bpfprof top: %s at %u Hz, sliding window %u s (%.0f s so far), %.0f samples/s,
 * %lu lost, %lu samples shown". */
static void header_line(const struct top *t, uint64_t now, char *buf, size_t size)
{
	struct linebuf b;

	linebuf__init(&b, buf, size);
	linebuf__str(&b, "bpfprof top: ", 0, -1);
	linebuf__str(&b, t->target, 0, -1);
	linebuf__str(&b, " at ", 0, -1);
	linebuf__u64(&b, t->r.o.freq, 0);
	linebuf__str(&b, " Hz, sliding window ", 0, -1);
	linebuf__u64(&b, t->window, 0);
	linebuf__str(&b, " s (", 0, -1);
	linebuf__fixed(&b, window_span(t, now), 0, 0);
	linebuf__str(&b, " s so far), ", 0, -1);
	linebuf__fixed(&b, t->rate, 0, 0);
	linebuf__str(&b, " samples/s, ", 0, -1);
	linebuf__u64(&b, t->lost, 0);
	linebuf__str(&b, " lost, ", 0, -1);
	linebuf__u64(&b, t->table->samples, 0);
	linebuf__str(&b, " samples shown", 0, -1);
	linebuf__end(&b, buf);
}

/* "sort: %s | frames: %s | filter: %s | process: %s%s" */
static void view_line(const struct top *t, char *buf, size_t size)
{
	struct linebuf b;

	linebuf__init(&b, buf, size);
	linebuf__str(&b, "sort: ", 0, -1);
	linebuf__str(&b, t->view.sort == TOP_SORT_TOTAL ? "total" : "self", 0, -1);
	linebuf__str(&b, " | frames: ", 0, -1);
	linebuf__str(&b, frames_name(t->view.frames), 0, -1);
	linebuf__str(&b, " | filter: ", 0, -1);
	linebuf__str(&b, t->filter[0] ? t->filter : "none", 0, -1);
	linebuf__str(&b, " | process: ", 0, -1);
	if (t->view.zoom_pid)
		linebuf__u64(&b, t->view.zoom_pid, 0);
	else
		linebuf__str(&b, "all", 0, -1);
	linebuf__str(&b, t->paused ? " | PAUSED" : "", 0, -1);
	linebuf__end(&b, buf);
}

/* --- plain snapshots ---------------------------------------------------------------- */

static int print_snapshot(struct top *t, uint64_t now)
{
	char line[512];
	const struct top_table *tb = t->table;

	header_line(t, now, line, sizeof(line));
	text__clean(line, false);
	printf("%s\n", line);
	view_line(t, line, sizeof(line));
	text__clean(line, false); /* a zoomed-in process's command */
	printf("%s\n", line);
	printf("   Self%%  Total%%  Samples  %-18s %s\n", "Module", "Function");
	for (size_t i = 0; i < tb->nr && i < t->rows; i++) {
		const struct top_row *r = &tb->rows[i];
		char mod[64], name[1024];

		/* Names are the processes' own bytes: what a terminal obeys is '?'. */
		snprintf(mod, sizeof(mod), "%s", module_label(r));
		snprintf(name, sizeof(name), "%s", r->name ? r->name : "");
		text__clean(mod, false);
		text__clean(name, false);
		printf("  %6.2f  %6.2f  %7" PRIu64 "  %-18.18s %s\n", pct(r->self, tb->samples),
		       pct(r->total, tb->samples),
		       t->view.sort == TOP_SORT_TOTAL ? r->total : r->self, mod, name);
	}
	printf("\n");
	fflush(stdout);
	return ferror(stdout) ? -EIO : 0;
}

/* --- the screen -------------------------------------------------------------------- */

/*
 * Rows are written by termout.h, which keeps what each row shows and writes
 * only the spans that changed (the figures, mostly) in one write. ncurses
 * sets the terminal up, clears it after a resize, reads keys and restores
 * it; its refresh is not used for the rows: after an erase() and whole rows
 * it compared every cell and costed every cursor motion, most of a
 * refresh's CPU. Lines are built without printf (linebuf.h).
 */
static bool curses_on, colors;

static void screen_end(void)
{
	if (curses_on) {
		endwin();
		curses_on = false;
	}
	termout__free();
}

/* "  %6.2f  %6.2f  %7lu  %-18.18s %s" */
static void function_line(const struct top *t, const struct top_row *r, double self, char *buf,
			  size_t size)
{
	const struct top_table *tb = t->table;
	struct linebuf b;

	linebuf__init(&b, buf, size);
	linebuf__pad(&b, 2);
	linebuf__fixed(&b, self, 2, 6);
	linebuf__pad(&b, 2);
	linebuf__fixed(&b, pct(r->total, tb->samples), 2, 6);
	linebuf__pad(&b, 2);
	linebuf__u64(&b, t->view.sort == TOP_SORT_TOTAL ? r->total : r->self, 7);
	linebuf__pad(&b, 2);
	linebuf__str(&b, module_label(r), 18, 18);
	linebuf__ch(&b, ' ');
	linebuf__str(&b, r->name ? r->name : "", 0, -1);
	linebuf__end(&b, buf);
}

static void draw_functions(struct top *t, int first, int last)
{
	const struct top_table *tb = t->table;
	char line[1024];

	termout__row(first - 1, "   Self%  Total%  Samples  Module             Function",
		     A_REVERSE);
	for (int y = first; y < last; y++) {
		size_t i = (size_t)(y - first);
		const struct top_row *r;
		double self;

		if (i >= tb->nr)
			break;
		r = &tb->rows[i];
		self = pct(r->self, tb->samples);
		function_line(t, r, self, line, sizeof(line));
		/* perf top's colours: red from 5% self, green from 0.5%. */
		termout__row(y, line,
			     colors ? (self >= 5     ? COLOR_PAIR(1)
				       : self >= 0.5 ? COLOR_PAIR(2)
						     : 0)
				    : 0);
	}
}

static void draw_procs(struct top *t, int first, int last)
{
	const struct top_table *tb = t->table;
	size_t top_row = 0, rows = last > first ? (size_t)(last - first) : 0;
	char line[1024];

	termout__row(first - 1, "   Share  Samples      PID  Command          Container",
		     A_REVERSE);
	if (t->cursor >= tb->nr_procs)
		t->cursor = tb->nr_procs ? tb->nr_procs - 1 : 0;
	if (rows && t->cursor >= rows)
		top_row = t->cursor - rows + 1;
	for (int y = first; y < last; y++) {
		size_t i = top_row + (size_t)(y - first);
		const struct top_proc *p;
		struct linebuf b;

		if (i >= tb->nr_procs)
			break;
		p = &tb->procs[i];
		/* "  %6.2f  %7lu  %7u  %-16.16s %.12s" */
		linebuf__init(&b, line, sizeof(line));
		linebuf__pad(&b, 2);
		linebuf__fixed(&b, pct(p->samples, tb->samples), 2, 6);
		linebuf__pad(&b, 2);
		linebuf__u64(&b, p->samples, 7);
		linebuf__pad(&b, 2);
		linebuf__u64(&b, p->pid, 7);
		linebuf__pad(&b, 2);
		linebuf__str(&b, p->comm ? p->comm : "", 16, 16);
		linebuf__ch(&b, ' ');
		linebuf__str(&b, p->container ? p->container : "", 0, 12);
		linebuf__end(&b, line);
		termout__row(y, line, i == t->cursor ? A_REVERSE : 0);
	}
}

static void draw(struct top *t, uint64_t now)
{
	char line[1024];

	if (termout__begin(LINES, COLS)) {
		/* ncurses clears it (and then believes it blank, as it stays for it). */
		clearok(curscr, TRUE);
		erase();
		refresh();
	}
	header_line(t, now, line, sizeof(line));
	termout__row(0, line, A_BOLD);
	view_line(t, line, sizeof(line));
	termout__row(1, line, 0);
	if (t->show_procs)
		draw_procs(t, 4, LINES - 1);
	else
		draw_functions(t, 4, LINES - 1);
	if (t->prompting) {
		struct linebuf b;

		linebuf__init(&b, line, sizeof(line));
		linebuf__str(&b, "filter (process name, pid or container; ", 0, -1);
		linebuf__str(&b, "Ctrl-U clears, empty: none): ", 0, -1);
		linebuf__str(&b, t->input, 0, -1);
		linebuf__end(&b, line);
		termout__row(LINES - 1, line, A_BOLD);
	} else {
		termout__row(LINES - 1,
			     t->show_procs ? "up/down select  Enter zoom into it  z/Esc all "
					     "processes  p functions  q quit"
					   : "s sort  space pause  / filter  k kernel/user  p "
					     "processes  z unzoom  q quit",
			     A_REVERSE);
	}
	termout__end();
}

static int screen_start(struct top *t)
{
	SCREEN *s;

	/* newterm, not initscr: a terminal it cannot drive is an error, not an exit. */
	s = newterm(NULL, stdout, stdin);
	if (!s)
		return -ENOTTY;
	set_term(s);
	curses_on = true;
	if (!termout__ok()) { /* rows are drawn by cursor address */
		screen_end();
		return -ENOTTY;
	}
	cbreak(); /* Ctrl-C stays a signal */
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	colors = has_colors();
	if (colors) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
		init_pair(2, COLOR_GREEN, -1);
	}
	(void)t;
	return 0;
}

/* Messages printed while the screen is up go to a memory file, shown after it. */
static void capture_stderr(struct top *t)
{
	t->saved_stderr = -1;
	t->msg_fd = memfd_create("bpfprof-top-messages", MFD_CLOEXEC);
	if (t->msg_fd < 0)
		return;
	fflush(stderr);
	t->saved_stderr = dup(STDERR_FILENO);
	if (t->saved_stderr < 0 || dup2(t->msg_fd, STDERR_FILENO) < 0) {
		close(t->msg_fd);
		t->msg_fd = -1;
	}
}

static void release_stderr(struct top *t)
{
	char buf[4096];
	ssize_t n;
	off_t off = 0;

	if (t->msg_fd < 0 || t->saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(t->saved_stderr, STDERR_FILENO);
	close(t->saved_stderr);
	t->saved_stderr = -1;
	while ((n = pread(t->msg_fd, buf, sizeof(buf), off)) > 0) {
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
		off += n;
	}
	close(t->msg_fd);
	t->msg_fd = -1;
}

/* One key. Returns true to quit. */
static bool on_key(struct top *t, int ch, uint64_t now)
{
	bool changed = true;

	if (t->prompting) {
		if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
			snprintf(t->filter, sizeof(t->filter), "%s", t->input);
			t->prompting = false;
		} else if (ch == 27) {
			t->prompting = false;
		} else if (ch == 21) { /* Ctrl-U: clear, as in a shell */
			t->input_len = 0;
			t->input[0] = '\0';
		} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && t->input_len) {
			t->input[--t->input_len] = '\0';
		} else if (ch >= 0x20 && ch < 0x7f && t->input_len < TOP_FILTER_MAX) {
			t->input[t->input_len++] = (char)ch;
			t->input[t->input_len] = '\0';
		}
		if (!t->prompting)
			rebuild(t);
		return false;
	}
	switch (ch) {
	case 'q':
	case 'Q':
		return true;
	case 's':
	case 'S':
		t->view.sort = t->view.sort == TOP_SORT_SELF ? TOP_SORT_TOTAL : TOP_SORT_SELF;
		break;
	case ' ':
		if (t->paused)
			resume(t, now);
		else
			t->paused = true;
		break;
	case '/':
		t->prompting = true;
		snprintf(t->input, sizeof(t->input), "%s", t->filter);
		t->input_len = strlen(t->input);
		break;
	case 'k':
	case 'K':
		t->view.frames = (enum top_frames)((t->view.frames + 1) % 3);
		break;
	case 'p':
	case 'P':
		t->show_procs = !t->show_procs;
		t->cursor = 0;
		break;
	case KEY_UP:
		if (t->cursor)
			t->cursor--;
		break;
	case KEY_DOWN:
		if (t->cursor + 1 < t->table->nr_procs)
			t->cursor++;
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (t->show_procs && t->cursor < t->table->nr_procs) {
			t->view.zoom_pid = t->table->procs[t->cursor].pid;
			t->show_procs = false;
			promote_pid(t, t->view.zoom_pid); /* its stacks matter now */
		}
		break;
	case 'z':
	case 'Z':
	case 27:
		t->view.zoom_pid = 0;
		t->show_procs = false;
		break;
	case KEY_RESIZE:
		break;
	default:
		changed = false;
	}
	if (changed && ch != KEY_UP && ch != KEY_DOWN)
		rebuild(t); /* after a resize too: the rows shown are the rows kept in order */
	return false;
}

/* --- the run ----------------------------------------------------------------------- */

static void install_top_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_top_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int top_loop(struct top *t)
{
	uint64_t period = (uint64_t)(t->delay * NS_PER_SEC_F);
	uint64_t deadline =
		t->r.o.duration ? t->r.t_start + (uint64_t)(t->r.o.duration * NS_PER_SEC_F) : 0;
	uint64_t next = t->r.t_start + period, notices_at = 0;
	bool quit = false, held_off = false, for_uw = false;

	t->last_t = t->r.t_start;
	if (t->tui)
		draw(t, now_ns());
	while (!quit && !top_signal) {
		uint64_t now = now_ns(), t0;
		int timeout = TOP_POLL_MS;

		if (now >= next) {
			uint64_t seen = t->nr_notices;

			if (top_drain(t, now))
				return 1;
			if (t->nr_notices != seen)
				notices_at =
					now; /* the drain took some: the next batch after a pause */
			while (next <= now)
				next += period; /* on the beat, without drifting */
			t0 = cpu_ns();
			if (t->tui)
				draw(t, now);
			else if (print_snapshot(t, now))
				return 1; /* stdout closed (a pipe's reader left) */
			t->cpu_draw += cpu_ns() - t0;
			mark_warm(t, now);
		}
		if (deadline && now >= deadline)
			break;
		timeout = record__wait_until(timeout, next, now);
		if (deadline)
			timeout = record__wait_until(timeout, deadline, now);
		{
			int before = timeout;

			timeout = record__timeout(&t->r, timeout, now);
			for_uw = timeout < before;
		}
		/*
		 * Asleep until a key, a process notice, the next refresh or a
		 * signal: each wake-up costs a context switch and a few syscalls.
		 * Notices wake it at most every TOP_NOTICE_NS (a host starting
		 * processes all the time would otherwise wake it for each one);
		 * the ones that came meanwhile are taken together. A resize
		 * interrupts the wait (EINTR) and arrives as KEY_RESIZE.
		 */
		{
			bool notices = now - notices_at >= TOP_NOTICE_NS;
			struct pollfd pfd[2];
			int n, ch;
			bool keys = false;

			/*
			 * The notice descriptor was left out of the last wait: take
			 * what came meanwhile now, and wait without it again if
			 * anything did - a busy host then costs one wake-up per
			 * batch, not a timeout and a second wait that returns at once.
			 */
			if (notices && held_off && record__poll_notices(&t->r, 0) > 0) {
				notices_at = now;
				notices = false;
			}
			held_off = !notices;
			pfd[0] = (struct pollfd){ .fd = notices ? collector__notice_fd(t->r.col)
								: -1,
						  .events = POLLIN };
			pfd[1] = (struct pollfd){ .fd = t->tui ? STDIN_FILENO : -1,
						  .events = POLLIN };
			if (!notices) {
				int until = record__wait_until(timeout, notices_at + TOP_NOTICE_NS,
							       now);

				for_uw = for_uw && until == timeout;
				timeout = until;
			}
			t0 = now_ns();
			n = poll(pfd, 2, timeout);
			t->nr_waits++;
			t->nr_uw_wakes += !n && for_uw;
			t->nr_sleeps += now_ns() - t0 > 100000; /* a return after 0.1 ms slept */
			if (n > 0 && (pfd[0].revents & POLLIN)) {
				record__poll_notices(&t->r, 0);
				notices_at = now_ns();
			}
			if (t->tui && (n < 0 || pfd[1].revents)) {
				while (!quit && (ch = getch()) != ERR) {
					quit = on_key(t, ch, now_ns());
					keys = true;
				}
				if (keys && !quit)
					draw(t, now_ns());
			}
		}
		if (t->r.rc.uw)
			unwinder__tick(t->r.rc.uw);
		/* -p: as record, top ends when its processes have (looked at
		 * every wake-up, at least once a refresh). */
		if (record__targets_exited(&t->r)) {
			t->r.targets_gone = true;
			break;
		}
	}
	return 0;
}

/* -v: where the CPU went. */
static void top_summary(const struct top *t)
{
	double n = (double)t->nr_drains;
	struct unwinder_stats us;
	struct rusage ru;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / US_PER_SEC_F;
		double wall = (now_ns() - t->r.t_start) / NS_PER_SEC_F;

		p_debug("CPU: %.3f s over %.1f s of sampling (%.3f%% of a CPU), start-up included",
			cpu, wall, wall > 0 ? 100 * cpu / wall : 0.0);
	}
	p_debug("%" PRIu64 " refreshes, CPU per refresh: %.3f ms drain (symbolizing included), "
		"%.3f ms table, %.3f ms screen; %" PRIu64 " process notices, %.3f ms CPU each",
		t->nr_drains, t->cpu_drain / NS_PER_MS_F / n, t->cpu_table / NS_PER_MS_F / n,
		t->cpu_draw / NS_PER_MS_F / n, t->nr_notices,
		t->nr_notices ? t->cpu_notice / NS_PER_MS_F / t->nr_notices : 0.0);
	p_debug("wake-ups: %.1f waits a refresh, %.1f of them slept (each a context switch); "
		"%" PRIu64 " waits ended early for the unwinder (Python probes)",
		t->nr_waits / n, t->nr_sleeps / n, t->nr_uw_wakes);
	if (t->warm.taken && t->nr_drains > TOP_WARM_REFRESHES) {
		double m = (double)(t->nr_drains - TOP_WARM_REFRESHES);
		double secs = (now_ns() - t->warm.t) / NS_PER_SEC_F;
		double cpu = (process_cpu_ns() - t->warm.cpu) / NS_PER_MS_F;

		/* The steady state: what a long run costs a second, without the
		 * start-up (BPF load, kernel symbols, every stack new). */
		p_debug("after the first %d refreshes: %.3f ms CPU a refresh (%.3f%% of a CPU over "
			"%.1f s): %.3f ms drain, %.3f ms table, %.3f ms screen (the rest: "
			"wake-ups, notices, keys, the unwinder's tick); %.1f waits a refresh, %.1f slept",
			TOP_WARM_REFRESHES, cpu / m, secs > 0 ? cpu / 10 / secs : 0.0, secs,
			(t->cpu_drain - t->warm.cpu_drain) / NS_PER_MS_F / m,
			(t->cpu_table - t->warm.cpu_table) / NS_PER_MS_F / m,
			(t->cpu_draw - t->warm.cpu_draw) / NS_PER_MS_F / m,
			(t->nr_waits - t->warm.nr_waits) / m,
			(t->nr_sleeps - t->warm.nr_sleeps) / m);
	}
	p_debug("drained keys: %.1f a refresh, %.1f of them symbolized (%.1f frames), "
		"the rest only added their count",
		(t->r.rc.keys_symbolized + t->r.rc.memo_hits) / n, t->r.rc.keys_symbolized / n,
		t->r.rc.frames / n);
	{
		uint64_t updates, recounts;

		toptable__stats(t->tt, &updates, &recounts);
		p_debug("table: %" PRIu64 " updates, %" PRIu64 " of them counted the window "
			"from nothing (first, view changed, a catalog left it)",
			updates, recounts);
	}
	record__symbolizer_stats(&t->r.rc);
	p_debug("catalogs: %" PRIu64 " replaced, %" PRIu64 " samples carried into the next "
		"(%" PRIu64 " left behind), %.3f ms CPU",
		t->nr_catalogs, t->nr_carried, t->nr_left, t->cpu_carry / NS_PER_MS_F);
	if (!t->r.rc.uw)
		return;
	if (t->waiting)
		p_debug("unwind tables deferred for %" PRIu64 " new images, built for %" PRIu64
			" that kept running (%.3f ms CPU), %zu still waiting",
			t->nr_deferred, t->nr_promoted, t->cpu_promote / NS_PER_MS_F,
			htab__count(t->waiting));
	unwinder__stats(t->r.rc.uw, &us);
	p_debug("unwind tables: %" PRIu64 " processes installed, %" PRIu64
		" tables built in %.1f ms, "
		"%" PRIu64 " shared by build id, %" PRIu64 " failed (%" PRIu64
		" over their time budget), %" PRIu64 " evicted; "
		"%" PRIu64 " probes again of Python interpreters not started yet, %" PRIu64
		" interpreter files' symbols read",
		us.procs_loaded, us.tables_built, us.build_ns / NS_PER_MS_F, us.tables_shared,
		us.tables_failed, us.tables_over_budget, us.tables_evicted, us.python_retries,
		us.python_file_reads);
}

static void top_free(struct top *t)
{
	for (size_t i = 0; i < t->nr_win; i++)
		slice_free(&t->win[i]);
	for (size_t i = 0; i < t->nr_held; i++)
		slice_free(&t->held[i]);
	catalog_put(t->cur);
	if (t->waiting) {
		struct htab_entry *e;
		size_t pos = 0;

		while ((e = htab__next(t->waiting, &pos)))
			free(e->value);
		htab__free(t->waiting);
	}
	free(t->win);
	free(t->held);
	free(t->scratch);
	toptable__delete(t->tt);
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .r = { .ch = CHILD_INIT, .t_main = now_ns() },
			 .saved_stderr = -1,
			 .msg_fd = -1 };
	struct collector_stats st;
	bool stdio = false;
	int ret;

	ret = parse(argc, argv, &t, &stdio);
	if (ret == 1) {
		top_usage(stdout);
		options__free(&t.r.o);
		return 0;
	}
	if (ret) {
		options__free(&t.r.o);
		return ret;
	}
	log_set_level(t.r.o.verbosity < 0    ? LOG_ERROR
		      : t.r.o.verbosity == 0 ? LOG_INFO
					     : LOG_DEBUG);
	timing = t.r.o.verbosity > 0;
	t.tt = toptable__new();
	if (!t.tt) {
		p_err("out of memory");
		options__free(&t.r.o);
		return 1;
	}
	t.table = toptable__table(t.tt);
	{
		const char *term = getenv("TERM");

		t.tui = !stdio && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && term && *term &&
			strcmp(term, "dumb");
	}
	install_top_signals();
	t.r.on_notice = on_notice;
	t.r.notice_ctx = &t;
	ret = record__check(&t.r);
	if (!ret)
		ret = record__setup(&t.r);
	if (!ret)
		ret = record__open(&t.r);
	if (!ret) {
		collector__stats(t.r.col, &st);
		t.nr_events = st.nr_events;
		describe(&t);
		/* Tables for every new process cost more than the rest of top:
		 * on the whole machine they wait until a process keeps running. */
		if (t.r.rc.uw && t.r.o.unwind == UNWIND_OPT_AUTO && !t.r.o.nr_pids &&
		    !(t.waiting = htab__new())) {
			p_err("out of memory");
			ret = 1;
		}
	}
	if (!ret) {
		ret = record__start(&t.r);
		profile__free(t.r.rc.prof); /* top drains into profiles of its own */
		t.r.rc.prof = NULL;
	}
	if (!ret && t.tui) {
		capture_stderr(&t);
		if (screen_start(&t)) {
			release_stderr(&t);
			t.tui = false; /* the terminal cannot be driven: plain text */
		}
	}
	if (!ret)
		ret = top_loop(&t);
	screen_end();
	release_stderr(&t);
	if (top_signal)
		p_debug("stopping on %s", strsignal(top_signal));
	else if (t.r.targets_gone && t.r.o.nr_pids == 1)
		p_info("process %u exited: stopping", t.r.o.pids[0]);
	else if (t.r.targets_gone)
		p_info("all %zu processes exited: stopping", t.r.o.nr_pids);
	if (t.nr_drains)
		top_summary(&t);
	top_free(&t);
	record__close(&t.r);
	return ret;
}
