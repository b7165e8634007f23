// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record.c - the run engine: checks the machine, starts the collector (and
 * the command, if any), waits, drains, symbolizes, writes. "bpfprof record"
 * (src/cmd/record.c), top and annotate drive it. It owns the user-facing
 * messages of a profiling run (progress, the summary, what went wrong); the
 * modules it drives only return errors.
 *
 * A run goes through these phases, each a function that prints what went
 * wrong and returns 0 or the exit status, as perf's record__open() and
 * __cmd_record() do:
 *
 *   record__check()    options against this machine: -F limit, pids, CPUs, root
 *   record__setup()    symbolizer, labels, kernel symbols, sinks, the command
 *   record__open()     collector options, load, unwind tables, attach, drop caps
 *   record__loop()     drain every second (or interval), poll notices, until
 *                      a signal, the deadline or the command's exit
 *   record__stop()     detach, the last notices and drain
 *   record__run()      those in turn (and record__start()): record, annotate
 *   record__finish_continuous() / record__write()   the end of either mode
 *
 * Samples become frames in record_samples.c, intervals go to the sinks in
 * record_sinks.c.
 */
#include "session/record.h"
#include "session/stop.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/httpd.h"
#include "base/htab.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/selfstat.h"
#include "base/util.h"
#include "format/writer.h"
#include "proc/caps.h"
#include "proc/cgroup.h"
#include "proc/labels.h"
#include "proc/procfs.h"
#include "proc/ptab.h"
#include "session/allocrun.h"
#include "sym/debuginfod.h"
#include "sym/symbolizer.h"
#include "unwind/unwinder.h"

/* --- preflight ------------------------------------------------------------ */

static int check_privileges(void)
{
	struct caps_report cr;

	caps__check(&cr);
	if (cr.missing[0]) {
		p_err("bpfprof needs root (missing %s)", cr.missing);
		p_hint("run it with sudo, or grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_SYSLOG");
		return -EPERM;
	}
	if (!cr.can_ptrace)
		p_warn("no CAP_SYS_PTRACE: other users' processes will show module+offset or [unknown] frames");
	if (!cr.can_map_files)
		p_debug("no CAP_CHECKPOINT_RESTORE: files are opened by path, checked by device and inode");
	return 0;
}

/*
 * File descriptors, checked before libbpf runs out of them halfway (its
 * messages would hide the cause). The soft limit is raised to the hard one
 * first. A run needs about FDS_BPF for the BPF objects (measured: the peak
 * while loading, 2 CPUs), two per perf event (the event and its link), and in
 * continuous mode HTTPD_FD_RESERVE kept free for interval files and symbol
 * files, plus a few HTTP clients with --listen.
 */
#define FDS_BPF	     24
#define FDS_HTTP_MIN 8

static int check_fd_limit(const struct options *o, const bool *cpus, int nr_cpus)
{
	uint64_t limit = selfstat__raise_fd_limit(), need, events = 0;
	long open_now;

	selfstat__init(); /* its two descriptors are counted as open below */
	open_now = selfstat__open_fds();
	if (open_now < 0)
		return 0;
	if (cpus) /* one event per CPU, whatever the target */
		for (int i = 0; i < nr_cpus; i++)
			events += cpus[i];
	else
		events = (uint64_t)possible_cpus();
	need = (uint64_t)open_now + 2 + FDS_BPF + 2 * events;
	if (o->interval)
		need += HTTPD_FD_RESERVE;
	if (o->listen)
		need += FDS_HTTP_MIN;
	/* --alloc --on-cpu: the allocator's programs, maps and ring, and the
	 * probes of as many files as it may probe at one descriptor a file
	 * (session uprobes); its start checks them again in its mode
	 * (perf-event uprobes: 26 a C library) and says what is short. */
	if (o->alloc_period)
		need += allocrun__fds_need(o, 1);
	if (limit >= need)
		return 0;
	p_err("too few file descriptors: the limit is %" PRIu64 ", this run needs about %" PRIu64,
	      limit, need);
	p_hint("raise it with 'ulimit -n 4096' (LimitNOFILE= in a systemd unit)");
	return -EMFILE;
}

/* symbolizer_opts.keep: an exited process the heap profile still names. */
static bool keep_gone(void *ctx, uint32_t pid)
{
	struct record *r = ctx;

	return allocrun__references(r->ar, pid);
}

static int check_freq(uint32_t freq)
{
	uint64_t max = record__max_sample_rate();

	if (freq > max) {
		p_err("-F %u is above the kernel's limit of %" PRIu64 " samples per second", freq,
		      max);
		p_hint("use a lower -F, or raise it: sysctl -w kernel.perf_event_max_sample_rate=%u",
		       freq);
		return -EINVAL;
	}
	return 0;
}

/*
 * The -p targets exist and are processes. Each one's pidfd is taken first,
 * so it is the process checked that the run waits for, not a later holder
 * of its number.
 */
static int check_pids(const struct options *o, int **fds_out)
{
	int *fds = o->nr_pids ? malloc(o->nr_pids * sizeof(*fds)) : NULL;

	if (o->nr_pids && !fds) {
		p_err("out of memory");
		return -ENOMEM;
	}
	*fds_out = fds;
	for (size_t i = 0; i < o->nr_pids; i++)
		fds[i] = -1;
	for (size_t i = 0; i < o->nr_pids; i++) {
		struct proc_status st;
		int err;

		fds[i] = procfs__pidfd(o->pids[i]);
		err = fds[i] == -ESRCH ? -ESRCH : procfs__status("/proc", o->pids[i], &st);
		if (!err && fds[i] >= 0 && procfs__pidfd_exited(fds[i]))
			err = -ESRCH; /* exited between the two */
		if (err == -ENOENT || err == -ESRCH) {
			p_err("process %u does not exist", o->pids[i]);
			return -ESRCH;
		}
		if (err) {
			p_err("cannot read /proc/%u/status: %s", o->pids[i], strerror(-err));
			return err;
		}
		if (st.tgid != o->pids[i]) {
			p_err("%u is a thread of process %u, not a process", o->pids[i], st.tgid);
			p_hint("use -p %u (all threads are profiled)", st.tgid);
			return -EINVAL;
		}
	}
	return 0;
}

static bool *parse_cpus(const char *list, int *nr_out)
{
	int nr = possible_cpus();
	bool *mask;
	int err;

	mask = calloc(nr, sizeof(*mask));
	if (!mask)
		return NULL;
	err = parse_cpulist(list, mask, nr);
	if (err) {
		p_err("invalid CPU list '%s': this machine has CPUs 0-%d", list, nr - 1);
		free(mask);
		return NULL;
	}
	*nr_out = nr;
	return mask;
}

/* Opens the --cgroup directories; NULL after printing why (usage error). */
static int *open_cgroups(const struct options *o)
{
	int *fds = calloc(o->nr_cgroups, sizeof(*fds));

	if (!fds) {
		p_err("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < o->nr_cgroups; i++) {
		char resolved[1024];

		fds[i] = cgroup__open_v2(NULL, o->cgroups[i], resolved, sizeof(resolved));
		if (fds[i] < 0) {
			p_err("--cgroup %s: %s", o->cgroups[i],
			      fds[i] == -ENOTDIR ? "not a cgroup v2 directory" : strerror(-fds[i]));
			p_hint("give a path under the cgroup2 mount, e.g. /system.slice/docker-ID.scope");
			while (i-- > 0)
				close(fds[i]);
			free(fds);
			return NULL;
		}
		p_debug("--cgroup %s: %s", o->cgroups[i], resolved);
	}
	return fds;
}

static void close_cgroups(int *fds, size_t nr)
{
	for (size_t i = 0; fds && i < nr; i++)
		close(fds[i]);
	free(fds);
}

/* --- symbolization ------------------------------------------------------- */

static void on_sym_warn(void *ctx, const char *msg)
{
	(void)ctx;
	p_warn("%s", msg);
}

/* --- reporting ------------------------------------------------------------- */

static void print_summary(const struct collector_stats *st, const struct profile *prof, double secs,
			  const struct options *o)
{
	static const struct {
		int stat;
		const char *what;
	} lost[] = {
		{ STAT_LOST_STACKS_FULL, "stack map full" },
		{ STAT_LOST_COUNTS_FULL, "count map full" },
		{ STAT_LOST_NO_MAP, "internal map error" },
		{ STAT_LOST_STACK_ERR, "stack store failed" },
	};
	uint64_t nlost = 0, samples = st->v[STAT_SAMPLES];
	struct sampling_window w;
	struct sbuf sb = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(lost); i++)
		nlost += st->v[lost[i].stat];
	sbuf_printf(&sb, "%" PRIu64 " sample%s in %.1f s, %" PRIu64 " lost", samples,
		    plural_s(samples), secs, nlost);
	if (nlost) {
		const char *sep = " (";

		for (size_t i = 0; i < ARRAY_SIZE(lost); i++) {
			if (!st->v[lost[i].stat])
				continue;
			sbuf_printf(&sb, "%s%s: %" PRIu64, sep, lost[i].what, st->v[lost[i].stat]);
			sep = ", ";
		}
		sbuf_puts(&sb, ")");
	}
	/* Samples the kernel did not take, beyond what the measurement may be
	 * off by: samples + not taken is what the profile should have had. */
	sampling__window(NULL, &st->acct, &w);
	if (w.kept_not_taken)
		sbuf_printf(&sb, ", %" PRIu64 " not taken (%s)", w.kept_not_taken,
			    record__not_taken_cause(&w));
	sbuf_printf(&sb, "; %zu distinct stacks", profile__nr_stacks(prof));
	if (log_level() >= LOG_WARN)
		fprintf(stderr, "bpfprof: %s\n", sb.buf);
	sbuf_free(&sb);
	if (nlost)
		p_hint("raise --max-stacks / --max-entries to keep more distinct stacks");
	record__warn_not_taken(NULL, st, o->freq);
	p_debug("sampling: the CPUs' busy time called for %" PRIu64 " samples, %" PRIu64
		" were taken (the measurement may be off by %" PRIu64 "); the kernel %s",
		st->acct.expected, st->acct.taken, st->acct.margin,
		!st->acct.throttles_known ? "could not say whether it throttled the events"
		: st->acct.throttles	  ? "throttled the events"
					  : "did not throttle the events");
	if (st->v[STAT_USTACK_ERR])
		p_info("%" PRIu64 " samples had no readable user stack (shown as [unknown])",
		       st->v[STAT_USTACK_ERR]);
	/* Only where --include-idle would keep them: the idle task is no -p
	 * process, command or cgroup's, so saying so there sends users after
	 * samples their target never had. */
	if (st->v[STAT_IDLE] && !o->include_idle && !o->nr_pids && !o->cmd_is_target &&
	    !o->nr_cgroups)
		p_info("%" PRIu64 " idle samples excluded (--include-idle keeps them)",
		       st->v[STAT_IDLE]);
	/* Rule: what a target does is counted, or said not to be. */
	if (st->v[STAT_TARGETS_LOST]) {
		p_warn("%" PRIu64 " processes '%s' started were not followed (more than %u of its "
		       "processes at once): their CPU time, and that of what they started, is not "
		       "in the profile",
		       st->v[STAT_TARGETS_LOST], o->cmd ? o->cmd[0] : "the command",
		       st->targets_room);
	}
	if (st->missing_stacks)
		p_warn("%" PRIu64 " counted stacks were missing from the stack map",
		       st->missing_stacks);
	if (st->v[STAT_KWALK_OK] || st->v[STAT_KWALK_FALLBACK])
		p_debug("kernel stacks: %" PRIu64 " walked with the ORC table, %" PRIu64
			" by bpf_get_stack(), %" PRIu64 " disagreed (checked only in tests)",
			st->v[STAT_KWALK_OK], st->v[STAT_KWALK_FALLBACK], st->v[STAT_KWALK_DIFF]);
	p_debug("%" PRIu64 " drains, %" PRIu64 " of them emptied the kernel maps (buffer flips); "
		"%" PRIu64 " samples stored a new key, %" PRIu64
		" were counted in per-CPU hot slots; "
		"%" PRIu64 " stacks read from the kernel",
		st->drains, st->flips, st->v[STAT_NEW_KEYS], st->v[STAT_HOT_HITS], st->stacks_read);
	if (samples != profile__total(prof) + nlost)
		p_warn("sample accounting mismatch: %" PRIu64 " samples, %" PRIu64
		       " in the profile, %" PRIu64 " lost",
		       samples, profile__total(prof), nlost);
}

/* "1 ms", "200 us", "every" (0): a wait length, as the summary lines say it. */
static const char *fmt_wait(uint64_t ns)
{
	static char buf[32];

	if (!ns)
		snprintf(buf, sizeof(buf), "0 ns (all)");
	else if (ns % 1000000 == 0)
		snprintf(buf, sizeof(buf), "%" PRIu64 " ms", ns / 1000000);
	else if (ns % 1000 == 0)
		snprintf(buf, sizeof(buf), "%" PRIu64 " us", ns / 1000);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 " ns", ns);
	return buf;
}

static void describe_target(const struct options *o, const struct collector_stats *st)
{
	struct sbuf sb = { 0 };

	if (o->cmd_is_target)
		sbuf_printf(&sb, "sampling '%s' and its children", o->cmd[0]);
	else if (o->nr_pids == 1)
		sbuf_printf(&sb, "sampling process %u", o->pids[0]);
	else if (o->nr_pids)
		sbuf_printf(&sb, "sampling %zu processes", o->nr_pids);
	else
		sbuf_printf(&sb, "sampling %zu CPU%s", st->nr_events,
			    st->nr_events == 1 ? "" : "s");
	sbuf_printf(&sb, " at %u Hz", o->freq);
	if (o->offcpu)
		sbuf_printf(&sb, " and waits of at least %s", fmt_wait(o->offcpu_min_ns));
	if (o->cmd && !o->cmd_is_target)
		sbuf_printf(&sb, " while '%s' runs", o->cmd[0]);
	if (o->duration)
		sbuf_printf(&sb, " for %g s", o->duration);
	sbuf_puts(&sb, o->cmd ? "; stops when it exits" : "; Ctrl-C to stop");
	p_info("%s", sb.buf);
	sbuf_free(&sb);
}

/* --- live status ------------------------------------------------------------ */

/*
 * On a terminal, one line rewritten in place about once a second: elapsed
 * time and samples so far. Cleared before anything else is printed, so the
 * summary line starts on a clean line; never shown when stderr is not a
 * terminal (logs, pipes, tests) or with -q.
 */
static void status_init(struct status_line *sl, uint64_t t_start)
{
	const char *term = getenv("TERM");

	sl->on = isatty(STDERR_FILENO) && log_level() >= LOG_INFO &&
		 !(term && !strcmp(term, "dumb"));
	sl->shown = false;
	sl->next_ns = t_start + NS_PER_SEC;
}

static void status_update(struct status_line *sl, struct collector *col, const struct options *o,
			  struct continuous *ct, uint64_t t_start, uint64_t now)
{
	struct collector_stats st;
	char sinks[160] = "";

	if (!sl->on || now < sl->next_ns)
		return;
	while (sl->next_ns <= now)
		sl->next_ns += NS_PER_SEC; /* on the second, without drifting */
	collector__stats(col, &st);
	fprintf(stderr, "\r\033[Kbpfprof: %.0f s", (now - t_start) / NS_PER_SEC_F);
	if (o->duration)
		fprintf(stderr, " of %g s", o->duration);
	if (o->interval) /* continuous mode: what became of the intervals */
		sinks__status(ct, sinks, sizeof(sinks));
	fprintf(stderr, ", %" PRIu64 " sample%s%s", st.v[STAT_SAMPLES],
		plural_s(st.v[STAT_SAMPLES]), sinks);
	fflush(stderr);
	sl->shown = true;
}

static void status_clear(struct status_line *sl)
{
	if (sl->shown)
		fputs("\r\033[K", stderr);
	sl->shown = false;
}

/* --- unwind tables ------------------------------------------------------------ */

/*
 * Starts the unwinder when the walker is loaded. Before sampling starts, it
 * installs the -p targets: their stacks are complete from the first sample.
 * Every other process, bpfprof included, gets its tables from its first
 * notice - building bpfprof's own here cost start-up ~100 ms and delayed the
 * first notices of a command's children.
 */
static int unwind_start(struct record_ctx *rc, struct collector *col, const struct options *o)
{
	struct unwind_kops k;
	int fallback;
	uint32_t mode = collector__unwind_mode(col, &fallback);

	if (fallback)
		p_warn("the .eh_frame stack walker could not be loaded (%s): user stacks use frame pointers",
		       strerror(-fallback));
	if (collector__kernel_fp_walk(col))
		p_debug("user stacks: frame pointers, walked by the kernel (bpf_get_stack)");
	{
		size_t entries;
		int kerr;

		if (collector__kernel_walk(col, &kerr, &entries))
			p_debug("kernel stacks: walked by the program with the kernel's ORC table "
				"(%zu entries)",
				entries);
		else
			p_debug("kernel stacks: bpf_get_stack() (%s)",
				kerr == -ECANCELED ? "not asked for" : strerror(-kerr));
	}
	if (mode == UNWIND_MODE_FP)
		return 0;
	collector__unwind_kops(col, &k);
	{
		struct unwinder_opts uo = { .ptab = rc->pt,
					    .python = !rc->o->no_python,
					    .jvm = true,
					    .warn = on_sym_warn };

		rc->uw = unwinder__new(&uo, &k);
	}
	if (!rc->uw) {
		p_err("cannot set up the stack walker's tables: %s", strerror(errno));
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->nr_pids; i++)
		unwinder__install(rc->uw, o->pids[i]);
	return 0;
}

static void print_unwind_summary(const struct record_ctx *rc, const struct collector_stats *st)
{
	struct unwinder_stats us;

	if (!rc->uw)
		return;
	unwinder__stats(rc->uw, &us);
	p_debug("unwind: %" PRIu64 " stacks walked with tables, %" PRIu64
		" with frame pointers before the tables were in",
		st->v[STAT_UNWIND_WALKS], st->v[STAT_UNWIND_NOT_READY]);
	p_debug("unwind: stops: %" PRIu64 " outermost frame, %" PRIu64
		" frame-pointer end, %" PRIu64 " truncated, %" PRIu64 " unreadable, %" PRIu64
		" no mapping, %" PRIu64 " no table, %" PRIu64 " unsupported rule, %" PRIu64
		" bad CFA, %" PRIu64 " mapping limit",
		st->v[STAT_UNWIND_END], st->v[STAT_UNWIND_FP_END], st->v[STAT_UNWIND_TRUNCATED],
		st->v[STAT_UNWIND_ERR_READ], st->v[STAT_UNWIND_ERR_NO_MAP],
		st->v[STAT_UNWIND_ERR_NO_TABLE], st->v[STAT_UNWIND_ERR_UNSUPPORTED],
		st->v[STAT_UNWIND_ERR_CFA], st->v[STAT_UNWIND_ERR_MAPS_LIMIT]);
	if (us.maps_dropped)
		p_debug("unwind: %" PRIu64
			" executable mappings left out of lists over the limit of %u"
			" (%" PRIu64 " with tables)",
			us.maps_dropped, UNWIND_MAX_MAPS, us.maps_lost);
	p_debug("unwind: %" PRIu64 " frames from tables, %" PRIu64 " by frame pointers (%" PRIu64
		" where a table rule could not be followed), %" PRIu64
		" refresh requests; row cache: %" PRIu64 " hits, %" PRIu64 " misses",
		st->v[STAT_UNWIND_DWARF_FRAMES], st->v[STAT_UNWIND_FP_FRAMES],
		st->v[STAT_UNWIND_FP_FALLBACK], st->v[STAT_UNWIND_REFRESH],
		st->v[STAT_UNWIND_CACHE_HITS], st->v[STAT_UNWIND_CACHE_MISSES]);
	p_debug("unwind: %" PRIu64 " tables (%" PRIu64
		" rows) in %.1f MiB of kernel memory (%.1f MiB used), built in %.1f ms; %" PRIu64
		" files without a table (%" PRIu64 " over their time budget), %" PRIu64
		" processes (%" PRIu64 " Python walked, %" PRIu64
		" of a Python bpfprof does not know, %" PRIu64
		" vfork children not probed; %" PRIu64
		" probes again of interpreters not started yet, %" PRIu64
		" interpreter files' symbols read)",
		us.tables, us.rows, us.kernel_bytes / 1048576.0, us.used_bytes / 1048576.0,
		us.build_ns / NS_PER_MS_F, us.tables_failed, us.tables_over_budget, us.procs_loaded,
		us.python_procs, us.python_unknown, us.python_vfork, us.python_retries,
		us.python_file_reads);
	if (us.jvm_procs || us.jvm_unknown || st->v[STAT_UNWIND_JVM_FRAMES])
		p_debug("unwind: JVMs: %" PRIu64 " walked, %" PRIu64 " not (layout), %" PRIu64
			" probes again of JVMs starting; %" PRIu64
			" frames through the code cache (%" PRIu64 " leaf guesses), %" PRIu64
			" handed back at the call stub; stops: %" PRIu64 " no blob, %" PRIu64
			" bad frame, %" PRIu64 " return address, %" PRIu64
			" interpreter frame, %" PRIu64 " unreadable, %" PRIu64
			" read budget; %" PRIu64 " deoptimised frames at their original pc;"
			" VM structures read in %.1f ms of CPU",
			us.jvm_procs, us.jvm_unknown, us.jvm_retries, st->v[STAT_UNWIND_JVM_FRAMES],
			st->v[STAT_UNWIND_JVM_LEAF_GUESS], st->v[STAT_UNWIND_JVM_STUB],
			st->v[STAT_UNWIND_ERR_JVM_BLOB], st->v[STAT_UNWIND_ERR_JVM_FRAME],
			st->v[STAT_UNWIND_ERR_JVM_RA], st->v[STAT_UNWIND_ERR_JVM_INTERP],
			st->v[STAT_UNWIND_ERR_JVM_READ], st->v[STAT_UNWIND_ERR_JVM_BUDGET],
			st->v[STAT_UNWIND_JVM_DEOPT], us.jvm_probe_ns / NS_PER_MS_F);
}

/*
 * Samples of Python threads whose thread state the walker could not find
 * keep their native frames only: counted, and said (rule 8: nothing hides
 * its work without a word).
 */
static void print_python_threads(const struct record_ctx *rc, const struct collector_stats *st)
{
	struct unwinder_stats us;

	if (!rc->uw)
		return;
	unwinder__stats(rc->uw, &us);
	if (st->v[STAT_PY_TS_MISS])
		p_info("%" PRIu64 " samples in Python's interpreter loop show no Python frames: the"
		       " thread's state was neither in its thread-specific data nor among the"
		       " interpreter's %u newest threads",
		       st->v[STAT_PY_TS_MISS], BP_PY_MAX_THREADS);
	p_debug("python threads: %" PRIu64 " of %" PRIu64 " walked processes keep each thread's"
		" state in its thread-specific data; stacks found theirs: %" PRIu64
		" as this CPU's last, %" PRIu64 " in the thread's data, %" PRIu64
		" in the thread list, %" PRIu64 " not (their Python frames not shown)",
		us.python_tls, us.python_procs, st->v[STAT_PY_TS_CACHED], st->v[STAT_PY_TS_TLS],
		st->v[STAT_PY_TS_SEARCH], st->v[STAT_PY_TS_MISS]);
}

/* --- the run ------------------------------------------------------------------ */

/*
 * The kernel maps are drained every second even in one-shot mode: most
 * symbolization is done by the time sampling stops, and what only exists for
 * a while (a short-lived process, a BPF program loaded for a moment) is named
 * while it exists. A drain reads the counts in place and leaves the keys in
 * the kernel (see collector/drain.c), so it does not make hot stacks take the BPF
 * program's slower new-key path again; the maps are emptied (by flipping to
 * the other pair) only when half full, which MAP_HEADROOM_SEC keeps rare: the
 * free half holds two seconds of samples even if every one is a new stack.
 */
#define DRAIN_PERIOD_NS	     NS_PER_SEC
#define DRAIN_PERIOD_LIVE_NS NS_PER_SEC
#define MAP_HEADROOM_SEC     4
/*
 * A Python's frames are named from its memory (code objects), so only while
 * it runs: for a while after a Python process is found, drains come five
 * times as often, and a script that runs for a second (a Python started by
 * another, a test, a build step) is named rather than [unknown].
 */
#define DRAIN_PERIOD_NEW_PY_NS 200000000ULL
#define NEW_PY_WINDOW_NS       3000000000ULL
/* The first drain after a Python is found: once a few of its samples are in. */
#define DRAIN_AFTER_NEW_PY_NS 50000000ULL

/* The period without the shortenings below: the longest the loop waits between drains. */
static uint64_t base_drain_period(const struct options *o)
{
	uint64_t p = DRAIN_PERIOD_NS;

	if (o->interval)
		p = MIN(p, (uint64_t)(o->interval * NS_PER_SEC_F));
	return p;
}

static uint64_t drain_period(const struct record *r, uint64_t now)
{
	uint64_t p = base_drain_period(&r->o), found;

	if (sinks__want_drain(&r->ct))
		p = MIN(p, DRAIN_PERIOD_LIVE_NS);
	found = r->rc.uw ? unwinder__python_found_ns(r->rc.uw) : 0;
	if (found && now < found + NEW_PY_WINDOW_NS)
		p = MIN(p, DRAIN_PERIOD_NEW_PY_NS);
	return p;
}

/* When the drain after the one at last is due (re-evaluated every turn of the loop). */
static uint64_t next_drain(const struct record *r, uint64_t last, uint64_t now)
{
	uint64_t next = last + drain_period(r, now);
	uint64_t found = r->rc.uw ? unwinder__python_found_ns(r->rc.uw) : 0;

	if (found > last)
		next = MIN(next, found + DRAIN_AFTER_NEW_PY_NS);
	return next;
}

static uint32_t default_map_entries(uint32_t freq)
{
	uint64_t n = roundup_pow2((uint64_t)freq * possible_cpus() * MAP_HEADROOM_SEC);

	return (uint32_t)MIN(MAX(n, 1024), 65536);
}

/* --- the phases of a run ------------------------------------------------------ */

/* Argument problems exit 2, machine problems exit 1. */
int record__check(struct record *r)
{
	const struct options *o = &r->o;
	struct errmsg em = { 0 };
	int err;

	if (check_freq(o->freq) || check_pids(o, &r->target_fds))
		return 2;
	if (o->cpu_list && !(r->cpus = parse_cpus(o->cpu_list, &r->nr_cpus)))
		return 2;
	err = writer__check_path(o->output, &em);
	if (err) {
		p_err("cannot write %s: %s", o->output, errmsg_said(&em) ? em.msg : strerror(-err));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
		return 2;
	}
	if (check_privileges() || check_fd_limit(o, r->cpus, r->nr_cpus))
		return 1;
	if (o->nr_cgroups && !(r->cgroup_fds = open_cgroups(o)))
		return 2;
	return 0;
}

/*
 * Names for kernel addresses: /proc/kallsyms read and indexed on a thread of
 * its own from the end of the program load (whose BTF is freed by then: the
 * two peaks of memory do not add up) while sampling starts and runs; they are
 * needed at the first drain, not before. The thread changes nothing in the
 * symbolizer (symbolizer__read_kernel), so process notices use it meanwhile
 * and a started command's tables do not wait for kallsyms; ksyms_join()
 * installs what it read.
 */
static void *ksyms_load(void *arg)
{
	struct record *r = arg;
	uint64_t t0 = now_ns();

	symbolizer__read_kernel(r->rc.sym, &r->ksyms);
	r->ksyms_ns = now_ns() - t0;
	return NULL;
}

static int bpf_progs_of(void *col, struct bp_kprog **progs, size_t *nr)
{
	return collector__bpf_progs(col, progs, nr);
}

/*
 * The symbolizer asks the collector where BPF programs' images are, so a
 * program loaded mid-run is not named after its neighbour (the kernel-symbol
 * thread does not use this).
 */
static void kprogs_attach(struct record *r)
{
	if (r->col && r->rc.sym)
		symbolizer__set_bpf_progs(r->rc.sym, bpf_progs_of, r->col);
}

static void ksyms_start(struct record *r)
{
	r->ksyms_threaded = !pthread_create(&r->ksyms_thread, NULL, ksyms_load, r);
	if (!r->ksyms_threaded)
		ksyms_load(r); /* no thread: in line */
	r->ksyms_pending = true;
}

/* wait: block until the kernel symbols are read (before names are asked
 * for), else install them only if they are read already. */
static void ksyms_join(struct record *r, bool wait)
{
	int err;

	if (!r->ksyms_pending)
		return;
	if (r->ksyms_threaded) {
		if (wait)
			pthread_join(r->ksyms_thread, NULL);
		else if (pthread_tryjoin_np(r->ksyms_thread, NULL))
			return;
	}
	r->ksyms_pending = false;
	err = symbolizer__install_kernel(r->rc.sym, &r->ksyms);
	malloc_trim(0); /* the file and the parser's scratch: megabytes, freed */
	p_debug("kernel symbols: %.0f ms, read while sampling started", r->ksyms_ns / NS_PER_MS_F);
	if (err) {
		p_warn("cannot read /proc/kallsyms (%s): kernel frames will be [unknown]",
		       strerror(-err));
	} else if (symbolizer__kernel_restricted(r->rc.sym)) {
		p_warn("kernel addresses are hidden by kernel.kptr_restrict: kernel frames will be [unknown]");
		p_hint("run as root, or grant CAP_SYSLOG, or sysctl -w kernel.kptr_restrict=0");
	}
}

/*
 * Tests: BPFPROF_TEST_DRAIN_STALL=N:MS holds drain number N (from 1) for MS
 * ms in the main loop, as a drain stuck on a file would be, so that tests
 * can see what /healthz and /metrics say meanwhile. A stop request ends it.
 */
static void test_drain_stall_init(struct record *r)
{
	const char *v = getenv("BPFPROF_TEST_DRAIN_STALL");
	unsigned long n, ms;

	if (v && sscanf(v, "%lu:%lu", &n, &ms) == 2) {
		r->stall_drain = n;
		r->stall_ms = ms;
	}
}

static void test_drain_stall(struct record *r)
{
	uint64_t until;

	if (!r->stall_drain || ++r->drains_begun != r->stall_drain)
		return;
	until = now_ns() + r->stall_ms * NS_PER_MS;
	while (!stop__requested() && now_ns() < until)
		usleep(20000);
}

/*
 * Tests: what the collector is asked to do differently (collector.h,
 * struct collector_test_opts), read from the environment here only.
 */
static void test_collector_opts(struct collector_test_opts *t)
{
	const char *max = getenv("BPFPROF_TEST_TARGETS_MAX");

	t->execve_by_mm = getenv("BPFPROF_TEST_EXECVE_BY_MM") != NULL;
	t->targets_max = max ? (uint32_t)atoi(max) : 0;
	t->no_notice_vmas = getenv("BPFPROF_TEST_NO_NOTICE_VMAS") != NULL;
	t->kwalk_verify = getenv("BPFPROF_TEST_KWALK_VERIFY") != NULL;
	t->no_walker = getenv("BPFPROF_TEST_NO_WALKER") != NULL;
	t->no_prefill = getenv("BPFPROF_TEST_NO_PREFILL") != NULL;
	t->always_flip = getenv("BPFPROF_TEST_ALWAYS_FLIP") != NULL;
	t->no_kprogs = getenv("BPFPROF_TEST_NO_KPROGS") != NULL;
	t->no_hot_slots = getenv("BPFPROF_TEST_NO_HOT_SLOTS") != NULL;
}

/*
 * Tests: BPFPROF_TEST_LOAD_DELAY_MS=N makes the load last N ms longer (at
 * its end, before the attach), so that a test's Ctrl-C lands during it
 * however fast the machine loads. A stop request ends the wait.
 */
static void test_load_delay(void)
{
	const char *v = getenv("BPFPROF_TEST_LOAD_DELAY_MS");
	uint64_t until;

	if (!v)
		return;
	until = now_ns() + strtoull(v, NULL, 10) * NS_PER_MS;
	while (!stop__requested() && now_ns() < until)
		usleep(5000);
}

/* A one-shot run waits at most this long at its end for debug files being fetched. */
#define DEBUGINFOD_END_WAIT_MS 10000

/* --debuginfod URLS, else $DEBUGINFOD_URLS (perf's): a fetcher, or NULL (said why). */
static struct debuginfod *open_debuginfod(const struct options *o)
{
	const char *urls = o->debuginfod ? o->debuginfod : getenv("DEBUGINFOD_URLS");
	struct debuginfod_opts dopts = { .urls = urls };
	struct errmsg em = { 0 };
	struct debuginfod *d;

	if (o->no_debuginfod || !urls || !*urls)
		return NULL;
	d = debuginfod__new(&dopts, &em);
	if (!d)
		p_warn("%s: debug files are not fetched", em.msg);
	return d;
}

/* One-shot: the last drain names what the fetches still going bring, if in time. */
static void wait_debuginfod(struct record *r)
{
	struct debuginfod_stats ds;
	size_t left;

	if (!r->rc.dbgd)
		return;
	debuginfod__stats(r->rc.dbgd, &ds);
	if (ds.pending)
		p_info("waiting up to %d s for %zu debug file%s from debuginfod",
		       DEBUGINFOD_END_WAIT_MS / 1000, ds.pending, ds.pending == 1 ? "" : "s");
	left = symbolizer__debuginfod_wait(r->rc.sym, ds.pending ? DEBUGINFOD_END_WAIT_MS : 0);
	if (left)
		p_warn("%zu debug file%s still coming from debuginfod: their frames stay unnamed",
		       left, left == 1 ? " is" : "s are");
}

/* Everything but the collector: sinks, symbolizer, labels, the (stopped) command. */
int record__setup(struct record *r)
{
	struct symbolizer_opts sopts = { 0 };
	/* Everything a profiled process controls is read through this table. */
	struct ptab_opts po = { .warn = on_sym_warn };
	struct record_ctx *rc = &r->rc;
	int err;

	/* /healthz counts a drain overdue from this period (metrics.h). */
	metrics__init(&r->ct.metrics, base_drain_period(&r->o));
	test_drain_stall_init(r);
	rc->o = &r->o;
	rc->prof = profile__new();
	rc->pt = ptab__new(&po);
	sopts.ptab = rc->pt;
	sopts.warn = on_sym_warn;
	/* --alloc --on-cpu: the heap profile names its stacks at the end, past
	 * the drains' sweeps: a process that exited meanwhile keeps its names,
	 * if its allocations are still to be named (the others go: a tenant's
	 * fork churn would keep every exited process up to max_procs). */
	sopts.keep_gone = r->o.alloc_period != 0;
	sopts.keep = keep_gone;
	sopts.keep_ctx = r;
	rc->dbgd = open_debuginfod(&r->o);
	sopts.debuginfod = rc->dbgd;
	rc->sym = rc->pt ? symbolizer__new(&sopts) : NULL;
	rc->labels = rc->pt ? labels__new(rc->pt, 0) : NULL;
	if (buildid__kernel(rc->kernel_build_id))
		rc->kernel_build_id[0] = '\0';
	/* --alloc --on-cpu: one process table and symbolizer for both profiles. */
	if (rc->sym && r->o.alloc_period)
		r->ar = allocrun__new(&r->o, rc->pt, rc->sym);
	if (!rc->prof || !rc->sym || !rc->labels || (r->o.alloc_period && !r->ar)) {
		p_err("out of memory");
		return 1;
	}
	/* --alloc --on-cpu in continuous mode: the heap profiles' sinks beside
	 * the CPU's, its requests finished by the engine (on the loop's thread). */
	if (r->ar) {
		r->ct.heap_finish = sinks__heap_finish;
		r->ct.heap_ctx = r->ar;
	}
	err = sinks__open(&r->ct, &r->o);
	if (err)
		return err;
	/* --alloc --on-cpu -- COMMAND: started by record__open (allocrun__launch) */
	if (r->o.cmd && !(r->ar && r->o.cmd_is_target)) {
		err = child__spawn(&r->ch, r->o.cmd);
		if (err) {
			p_err("cannot start '%s': %s", r->o.cmd[0], strerror(-err));
			return 1;
		}
	}
	return 0;
}

static void collector_options(const struct record *r, struct collector_opts *copts)
{
	const struct options *o = &r->o;

	memset(copts, 0, sizeof(*copts));
	copts->freq = o->freq;
	copts->cpus = r->cpus;
	copts->nr_cpus = r->nr_cpus;
	copts->pids = o->pids;
	copts->nr_pids = o->nr_pids;
	copts->child = r->o.cmd_is_target ? r->ch.pid : 0; /* else -a, -C or -p */
	copts->drop_kernel = o->user_only;
	copts->drop_user = o->kernel_only;
	copts->include_idle = o->include_idle;
	copts->per_thread = o->per_thread;
	copts->cgroup_fds = r->cgroup_fds;
	copts->nr_cgroups = o->nr_cgroups;
	/* Each sample stores at most two stacks (kernel, user). */
	copts->max_counts = o->max_counts ? o->max_counts : default_map_entries(o->freq);
	copts->max_stacks = o->max_stacks ? o->max_stacks : 2 * copts->max_counts;
	copts->libbpf_debug = o->verbosity >= 2;
	copts->unwind_mode = options__unwind_mode(o->unwind);
	copts->kernel_helper = o->kernel_helper;
	copts->offcpu = o->offcpu;
	copts->offcpu_min_ns = o->offcpu_min_ns;
	copts->offcpu_tasks = o->offcpu_tasks;
	test_collector_opts(&copts->test);
}

/* Loads the program, starts the unwinder, attaches; then gives up privileges. */
int record__open(struct record *r)
{
	struct collector_opts copts;
	struct errmsg em = { 0 };
	struct collector_stats st;
	int err;

	/* --alloc --on-cpu -- COMMAND: started now, stopped at its entry with
	 * its libraries mapped, so that its pid is the CPU program's child;
	 * probed after the attach (allocrun__start), let go by record__start. */
	if (r->ar && r->o.cmd_is_target && allocrun__launch(r->ar, &r->ch))
		return 1;
	collector_options(r, &copts);
	r->col = collector__open(&copts, &em);
	/* Kernel symbols on a thread from here: after the program load, whose
	 * BTF (megabytes) is freed by now, so the two peaks do not add up. */
	if (r->col && !r->o.user_only)
		ksyms_start(r);
	kprogs_attach(r);
	if (r->col) {
		uint64_t t0 = now_ns();

		if (unwind_start(&r->rc, r->col, &r->o))
			return 1;
		r->unwind_ns = now_ns() - t0;
		r->rc.unwind_name = options__unwind_name(
			collector__unwind_mode(r->col, NULL) == UNWIND_MODE_FP ? UNWIND_OPT_FP
									       : r->o.unwind);
		p_debug("user stacks walked with --unwind %s", r->rc.unwind_name);
	}
	test_load_delay();
	if (r->col && !r->ar && r->early_skips_attach && stop__requested()) {
		/* Stopped during the load: no event is enabled at all (not even
		 * for the attach's few milliseconds, a busy machine's samples). */
		r->stopped_early = r->not_attached = true;
	} else if (!r->col || collector__attach(r->col, &em)) {
		p_errmsg(&em);
		return 1;
	}
	/* Ctrl-C during the load (a second or more with -a on a busy machine):
	 * the run ends now, with the profile written as perf record writes its
	 * file, not after a first turn of sampling (nor after the kernel
	 * symbols' read: record__stop detaches first). The events stop at once:
	 * no sample after the request. Not with --alloc beside (its command is
	 * launched already). */
	if (!r->ar && !r->stopped_early && stop__requested()) {
		r->stopped_early = true;
		collector__detach(r->col);
	}
	/* --alloc --on-cpu: the allocator's targets found, its files probed,
	 * its clock started, while every privilege is there; after the CPU's
	 * load and tables (seconds with -a), so both spans start together. */
	if (r->ar && allocrun__start(r->ar))
		return 1;
	/* -a's guard at its pace, whatever a turn of this loop takes */
	if (r->ar) {
		err = allocrun__guard_thread(r->ar);
		if (err)
			p_warn("no thread for the allocator's guard (%s): it ticks between drains",
			       strerror(-err));
	}
	/* Everything privileged is open now: keep only what reading needs.
	 * Not with --alloc -a or --cgroup beside: its rescans probe the files
	 * of processes started later, its guard takes the probes off and puts
	 * them back (perf events, CAP_PERFMON or CAP_SYS_ADMIN), as --alloc
	 * alone does. */
	if (r->ar && (r->o.all_cpus || r->o.nr_cgroups)) {
		p_debug("capabilities kept: --alloc -a attaches probes while it runs");
	} else {
		err = caps__drop_after_attach(r->o.output || r->o.output_dir);
		if (err)
			p_warn("cannot drop capabilities: %s", strerror(-err));
	}
	p_debug("effective capabilities after attach: %#llx", caps__effective());
	/* Loading parsed the kernel's BTF (megabytes) and freed it: give the
	 * pages back, an always-on agent's RSS is what it keeps, not its peak. */
	malloc_trim(0);
	collector__stats(r->col, &st);
	if (r->stopped_early)
		p_info("stopping on %s: it came while the BPF program was loading, before "
		       "sampling started",
		       strsignal(stop__requested()));
	else
		describe_target(&r->o, &st);
	p_debug("start-up: %.0f ms to sampling: program load %.0f ms (map slots filled %s), "
		"kernel ORC table %.0f ms, unwind tables %.0f ms",
		(now_ns() - r->t_main) / NS_PER_MS_F, (st.open_ns - st.korc_ns) / NS_PER_MS_F,
		st.slots_prefilled ? "during it" : "after it", st.korc_ns / NS_PER_MS_F,
		r->unwind_ns / NS_PER_MS_F);
	if (st.korc_ns && !st.korc_load_err)
		p_debug("kernel ORC table: from the cache");
	else if (st.korc_ns)
		p_debug("kernel ORC table: built (cache: %s; %s%s)",
			st.korc_load_err == -ENOENT ? "none" : strerror(-st.korc_load_err),
			st.korc_save_err ? "not saved: " : "saved",
			st.korc_save_err ? strerror(-st.korc_save_err) : "");
	return 0;
}

/* Sampling runs: stamps the start, lets the command go. */
int record__start(struct record *r)
{
	int err;

	r->t_start = now_ns();
	profile__meta(r->rc.prof)->start_ns = realtime_ns();
	r->ct.start_mono = r->t_start;
	r->ct.start_real = profile__meta(r->rc.prof)->start_ns;
	status_init(&r->sl, r->t_start);
	/* -d: the events stop on time even in the middle of a long drain. */
	if (r->o.duration && r->col) {
		err = collector__stop_sampling_at(
			r->col, r->t_start + (uint64_t)(r->o.duration * NS_PER_SEC_F));
		if (err)
			p_debug("no timer thread for -d (%s): the deadline is kept between drains",
				strerror(-err));
	}
	if (r->ch.pid && r->stopped_early && !(r->ar && r->o.cmd_is_target)) {
		child__abort(&r->ch); /* never run: it exits without exec */
		r->cmd_stopped = true;
	} else if (r->ch.pid && r->ar && r->o.cmd_is_target) {
		kill(r->ch.pid, SIGCONT); /* allocrun__launch's, stopped at its entry */
	} else if (r->ch.pid) {
		err = child__start(&r->ch);
		if (err) {
			p_err("cannot run '%s': %s", r->o.cmd[0], strerror(-err));
			child__reap(&r->ch, true);
			return 1;
		}
	}
	return 0;
}

int record__poll_notices(struct record *r, int timeout_ms)
{
	if (r->not_attached)
		return 0; /* no ring to poll: nothing was ever sampled */
	if (r->on_notice)
		return collector__poll(r->col, timeout_ms, r->on_notice, r->notice_ctx);
	return collector__poll(r->col, timeout_ms, record__on_proc_notice, &r->rc);
}

/*
 * --alloc --on-cpu in continuous mode: the interval's heap profile beside
 * the CPU's. One that could not be taken (no memory) is said: its
 * allocations go into the next one.
 */
static void heap_interval(struct record *r)
{
	static struct ratelimit rl;
	int err = sinks__heap_interval(&r->ct, r->ar);

	if (err) {
		status_clear(&r->sl);
		p_warn_rl(&rl, 60,
			  "the interval's heap profile could not be taken (%s): its allocations "
			  "go into the next one",
			  strerror(-err));
	}
}

/* The periodic drain: notices, counts, the interval's end, forgetting exited processes. */
int record__drain(struct record *r, uint64_t now)
{
	int err;

	test_drain_stall(r);
	ksyms_join(r, true); /* names are asked for from here */
	/* Notices first: the drain may hold samples of processes they announce. */
	record__poll_notices(r, 0);
	symbolizer__drain_begin(r->rc.sym);
	err = sinks__drain(&r->ct, &r->rc, r->col);
	if (err) {
		p_err("draining the kernel maps failed: %s", strerror(-err));
		return 1;
	}
	if (r->o.interval && now - r->ct.start_mono >= (uint64_t)(r->o.interval * NS_PER_SEC_F)) {
		if (r->ar) /* first: its number is the CPU interval's, counted by the next */
			heap_interval(r);
		if (sinks__finish_interval(&r->ct, &r->rc, r->col, now)) {
			p_err("out of memory");
			return 1;
		}
	}
	/* Processes that exited before this drain are forgotten at the next:
	 * samples between the buffer flip and the exit are drained then. */
	symbolizer__sweep(r->rc.sym);
	ptab__sweep(r->rc.pt);
	labels__sweep(r->rc.labels);
	sinks__publish_metrics(&r->ct, &r->rc, r->col, r->ar);
	return 0;
}

int record__wait_until(int timeout, uint64_t at, uint64_t now)
{
	return at <= now ? 0 : (int)MIN((uint64_t)timeout, (at - now) / 1000000 + 1);
}

int record__timeout(const struct record *r, int timeout, uint64_t now)
{
	uint64_t due = r->rc.uw ? unwinder__next_due_ns(r->rc.uw) : 0;

	return due ? record__wait_until(timeout, due, now) : timeout;
}

/* None has a pidfd (a kernel without pidfd_open): never. */
bool record__targets_exited(const struct record *r)
{
	bool any = false;

	for (size_t i = 0; r->target_fds && i < r->o.nr_pids; i++) {
		/* No pidfd (a kernel without pidfd_open): it may still run. */
		if (r->target_fds[i] < 0 || !procfs__pidfd_exited(r->target_fds[i]))
			return false;
		any = true;
	}
	return any;
}

/* Until a signal, the deadline, the command's exit or the -p targets'. */
static int record__loop(struct record *r)
{
	uint64_t deadline =
		r->o.duration ? r->t_start + (uint64_t)(r->o.duration * NS_PER_SEC_F) : 0;
	uint64_t last_drain = r->t_start, drain_took = 0;
	int err;

	while (!stop__requested()) {
		int timeout = 200;
		uint64_t now = now_ns();
		/* --alloc --on-cpu: the allocation engine's turn (its ring, the
		 * guard's 100 ms pace, -a's rescans) bounds the wait too. */
		uint64_t alloc_due = r->ar ? allocrun__tick(r->ar, now) : 0;
		bool skip;

		/* heap requests of --listen waiting: the tick's allocations */
		if (r->ar && now >= r->heap_feed_due) {
			sinks__heap_tick(&r->ct, r->ar);
			r->heap_feed_due = alloc_due;
		}

		/*
		 * -d: sampling stops when it says. The deadline is looked at
		 * before a drain due at the same time, and a drain that would
		 * end past it (as long as the last one took) is left to the
		 * last drain after detaching: samples taken during a drain
		 * would count past -d (a drain of a large profile at -F 100000
		 * took seconds).
		 */
		if (deadline && now >= deadline)
			break;
		skip = deadline && now + drain_took >= deadline;
		/* The period is re-evaluated every turn: a new HTTP request shortens it. */
		if (!skip && now >= next_drain(r, last_drain, now)) {
			if (record__drain(r, now))
				return 1;
			last_drain = now;
			drain_took = now_ns() - now;
			continue; /* the deadline again, with the time after the drain */
		}
		/* The wait ends when the next drain is due, not up to a turn later. */
		if (!skip)
			timeout = record__wait_until(timeout, next_drain(r, last_drain, now), now);
		if (deadline)
			timeout = record__wait_until(timeout, deadline, now);
		if (alloc_due)
			timeout = record__wait_until(timeout, alloc_due, now_ns());
		err = record__poll_notices(r, record__timeout(r, timeout, now));
		if (err < 0 && err != -EINTR) {
			status_clear(&r->sl);
			p_err("polling the ring buffer failed: %s", strerror(-err));
			break;
		}
		if (r->rc.uw)
			unwinder__tick(r->rc.uw);
		ksyms_join(r, false); /* the reading's scratch given back early */
		if (r->ch.pid) {
			child__reap(&r->ch, false);
			if (r->ch.exited)
				break;
		}
		if (record__targets_exited(r)) {
			r->targets_gone = true;
			break;
		}
		status_update(&r->sl, r->col, &r->o, &r->ct, r->t_start, now_ns());
	}
	return 0;
}

/*
 * The command still runs when sampling stops. A stop request sent to the
 * whole process group (Ctrl-C on a terminal, kill -TERM -PGID, timeout(1))
 * reaches the command too: it is given a moment to end of it on its own, so
 * that bpfprof exits as it did (130 after Ctrl-C, as time(1) and a shell
 * would), whichever of the two saw the signal first. Otherwise bpfprof ends
 * it (SIGTERM, as perf record does with its workload), and its status, ours,
 * is not the command's.
 */
#define CMD_GRACE_NS 200000000ULL

static void stop_command(struct record *r)
{
	uint64_t until = now_ns() + CMD_GRACE_NS;

	while (stop__requested() && !r->ch.exited && now_ns() < until) {
		usleep(5000);
		child__reap(&r->ch, false);
	}
	if (r->ch.exited)
		return;
	r->cmd_stopped = true;
	kill(r->ch.pid, SIGTERM);
	child__reap(&r->ch, true);
}

/* Stops sampling, takes the last notices, then drains everything. */
static int record__stop(struct record *r)
{
	uint64_t at;
	int err;

	status_clear(&r->sl);
	r->t_stop = now_ns();
	/* --alloc --on-cpu: the allocations end with the CPU's sampling (its
	 * probes stay in until allocrun__free, nothing more is drained). */
	if (r->ar)
		allocrun__stop(r->ar);
	if (stop__requested() && !r->stopped_early)
		p_info("stopping on %s", strsignal(stop__requested()));
	else if (r->targets_gone && r->o.nr_pids == 1)
		p_info("process %u exited: stopping", r->o.pids[0]);
	else if (r->targets_gone)
		p_info("all %zu processes exited: stopping", r->o.nr_pids);
	collector__detach(r->col);
	/* After the detach: sampling does not go on while kallsyms is read
	 * (up to a second on a busy machine, after a Ctrl-C in the load). */
	ksyms_join(r, true); /* the last drain asks for names */
	/* Stopped by -d's timer while a drain ran late: sampling ended there. */
	if (collector__stopped_at_deadline(r->col, &at) && at < r->t_stop)
		r->t_stop = at;
	record__poll_notices(r, 0);
	if (!r->o.interval)
		wait_debuginfod(r);
	r->rc.last_drain = true;
	symbolizer__drain_begin(r->rc.sym);
	err = sinks__drain(&r->ct, &r->rc, r->col);
	if (err) {
		p_err("draining the kernel maps failed: %s", strerror(-err));
		return 1;
	}
	if (r->ch.pid && !r->ch.exited)
		stop_command(r);
	return 0;
}

int record__run(struct record *r)
{
	int ret = record__check(r);

	if (!ret)
		ret = record__setup(r);
	r->early_skips_attach = true;
	if (!ret)
		ret = record__open(r);
	if (!ret)
		ret = record__start(r);
	if (!ret)
		ret = record__loop(r);
	if (!ret)
		ret = record__stop(r);
	return ret;
}

/* Continuous mode: the partial last interval is flushed like any other. */
int record__finish_continuous(struct record *r)
{
	struct collector_stats st;
	int heap_err, err;

	stop__writing(true);
	/* --alloc --on-cpu: the heap profile's last interval too (the engine
	 * stopped with the CPU's sampling); each attempted whatever the other
	 * did (a heap take without memory does not lose the CPU's interval) */
	heap_err = r->ar ? sinks__heap_interval(&r->ct, r->ar) : 0;
	err = sinks__finish_interval(&r->ct, &r->rc, r->col, r->t_stop);
	stop__writing(false);
	if (heap_err)
		p_err("the last interval's heap profile could not be taken: %s",
		      strerror(-heap_err));
	if (err)
		p_err("out of memory");
	collector__stats(r->col, &st);
	p_info("%" PRIu64 " sample%s in %.1f s, %" PRIu64 " lost, %" PRIu64 " interval%s",
	       st.v[STAT_SAMPLES], plural_s(st.v[STAT_SAMPLES]),
	       (r->t_stop - r->t_start) / NS_PER_SEC_F, record__lost(&st), r->ct.intervals,
	       plural_s(r->ct.intervals));
	if (r->o.offcpu)
		record__offcpu_summary(&st, NULL, r->o.offcpu_min_ns);
	print_unwind_summary(&r->rc, &st); /* -v: the whole run's, as in one-shot mode */
	print_python_threads(&r->rc, &st);
	sinks__summary(&r->ct, &r->o);
	record__symbolizer_stats(&r->rc); /* -v: the whole run's, as one profile's */
	return heap_err || err ? 1 : 0;
}

static void print_child_exit(const struct child *ch, bool stopped, const struct options *o)
{
	if (ch->exited && stopped)
		p_info("'%s' was still running: bpfprof ended it (SIGTERM)", o->cmd[0]);
	else if (ch->exited && WIFEXITED(ch->status) && o->cmd_is_target)
		p_info("'%s' exited with status %d after %.2f s of CPU (about %.0f samples at %u Hz)",
		       o->cmd[0], WEXITSTATUS(ch->status), ch->cpu_s, ch->cpu_s * o->freq, o->freq);
	else if (ch->exited && WIFEXITED(ch->status))
		p_info("'%s' exited with status %d", o->cmd[0], WEXITSTATUS(ch->status));
	else if (ch->exited && WIFSIGNALED(ch->status))
		p_info("'%s' was killed by %s", o->cmd[0], strsignal(WTERMSIG(ch->status)));
}

static void print_symbol_stats(const struct record_ctx *rc, uint64_t t_stop)
{
	struct symbolizer_stats ss;
	double ms = (now_ns() - t_stop) / NS_PER_MS_F;

	symbolizer__stats(rc->sym, &ss);
	p_debug("end of sampling to written profile: %.1f ms; %" PRIu64
		" frames symbolized, %" PRIu64 " unnamed; %" PRIu64
		" drained keys were symbolized before and only added their count",
		ms, rc->frames, ss.unknown, rc->memo_hits);
	record__symbolizer_stats(rc);
}

void record__symbolizer_stats(const struct record_ctx *rc)
{
	struct symbolizer_stats ss;

	symbolizer__stats(rc->sym, &ss);
	p_debug("symbols: %zu processes, %zu files (%zu KiB), %" PRIu64
		" debug files, %zu JIT maps (%zu KiB; %" PRIu64
		" MiB of large ones scanned, %" PRIu64 " whole again), %" PRIu64
		" JIT frames, %" PRIu64 " files rejected, %" PRIu64 " images lost (%" PRIu64
		" of them named from their notice's mappings), %" PRIu64
		" kallsyms reloads, %" PRIu64 " BPF frames named by the program list, %" PRIu64
		" in no loaded program%s; %" PRIu64 " Python frames named, %" PRIu64
		" not (code object freed or unreadable), %" PRIu64 " inlined frames, %" PRIu64
		" files given up on (over their time budget)",
		ss.procs, ss.files, ss.file_bytes >> 10, ss.debug_files, ss.perfmaps,
		ss.perfmap_bytes >> 10, ss.perfmap_scanned >> 20, ss.perfmap_rescans, ss.jit_names,
		ss.rejected, ss.images_lost, ss.images_mapped, ss.kernel_reloads, ss.kbpf_named,
		ss.kbpf_unnamed,
		ss.kprogs_err ? " (no BPF program list: kallsyms alone names them)" : "",
		ss.py_frames, ss.py_unknown, ss.inline_frames, ss.files_over_budget);
	p_debug("native inlines and lines: %" PRIu64 " files' DWARF read, %" PRIu64
		" refused (too large, unreadable), %" PRIu64
		" lookups named without inlines (over the DWARF budget); files naming a dwz file:"
		" %" PRIu64 " read it, %" PRIu64 " not (found nowhere, refused), %" PRIu64
		" inlined frames left out (no name: in a dwz file not read); %" PRIu64
		" Lisp frames named (SBCL), %" PRIu64
		" not (a GC between sample and drain), %" PRIu64
		" not (dynamic-space walks over their budget; %" PRIu64 " KiB walked)",
		ss.dwarf_files, ss.dwarf_refused, ss.dwarf_over_budget, ss.dwz_files,
		ss.dwz_missing, ss.inline_unnamed, ss.lisp_names, ss.lisp_gc_held,
		ss.lisp_over_budget, ss.lisp_walked >> 10);
	p_debug("java names: %" PRIu64 " frames named from HotSpot code caches in %.1f ms of CPU,"
		" VM structures read in %.1f ms",
		ss.java_names, ss.java_name_ns / NS_PER_MS_F, ss.java_probe_ns / NS_PER_MS_F);
	p_debug("python names: %zu KiB of code objects cached, %" PRIu64 " caches started over"
		" (at their cap), %" PRIu64 " line tables read again for a line past their"
		" kept start, %" PRIu64 " lines not (over the drain's budget)",
		ss.py_bytes >> 10, ss.py_resets, ss.py_lt_reads, ss.py_lt_over);
	p_debug("symbol tables: %" PRIu64 " files read at their first lookup, %" PRIu64
		" never needed, %" PRIu64 " read early (over the cap on held files), %zu held now",
		ss.files_read_late, ss.files_never_read, ss.files_read_early, ss.files_held);
	p_debug("caches at their caps: %" PRIu64 " files' symbols freed for room (%" PRIu64
		" read again), %" PRIu64 " files over their own cap (not read), %" PRIu64
		" perf maps freed for room",
		ss.files_dropped, ss.files_reread, ss.files_too_large, ss.perfmaps_dropped);
	if (rc->dbgd) {
		struct debuginfod_stats ds;

		debuginfod__stats(rc->dbgd, &ds);
		p_debug("debuginfod: %" PRIu64 " debug files used, %" PRIu64 " fetched, %" PRIu64
			" from the cache, %" PRIu64 " on no server, %" PRIu64
			" transfers failed, %" PRIu64
			" files refused (not the build asked for), %" PRIu64
			" not asked (queue full), %zu pending",
			ss.debuginfod_files, ds.fetched, ds.cache_hits, ds.not_found, ds.failed,
			ds.rejected, ds.dropped, ds.pending);
	}
	if (rc->labels)
		p_debug("labels: %" PRIu64 " processes labelled from their cgroup id without a "
			"read of /proc/PID/cgroup, %zu processes' labels held",
			labels__cgroup_hits(rc->labels), labels__count(rc->labels));
}

/*
 * The -o file could not be written after sampling (its directory removed
 * meanwhile, a full disk, a path that holds no file): the profile is not
 * lost with it, but saved to a new file in $TMPDIR or /tmp (0600, made
 * O_EXCL there), and the run still fails.
 */
static void save_elsewhere(const struct record *r, const struct out_opts *out)
{
	char path[PATH_MAX];
	struct errmsg em = { 0 };
	int err;

	if (!r->o.output || !strcmp(r->o.output, "-"))
		return;
	stop__writing(true);
	err = writer__write_fallback(r->w, r->rc.prof, r->o.output, out, path, sizeof(path), &em);
	stop__writing(false);
	if (err)
		p_err("the profile could not be saved elsewhere either: %s",
		      errmsg_said(&em) ? em.msg : strerror(-err));
	else
		p_err("the profile was saved to %s instead", path);
}

/* One-shot mode: the whole run's profile, with its summary. */
int record__write(struct record *r)
{
	struct record_ctx *rc = &r->rc;
	struct collector_stats st;
	struct errmsg em = { 0 };
	/* --alloc --on-cpu: --view is the heap profile's, the CPU's has one value */
	struct out_opts out = r->o.out;
	int err;

	if (r->ar)
		out.view = VIEW_AUTO;
	collector__stats(r->col, &st);
	record__fill_meta(rc->prof, rc, profile__meta(rc->prof)->start_ns, r->t_stop - r->t_start,
			  record__lost(&st));
	profile__meta(rc->prof)->offcpu_lost = record__offcpu_lost(&st);
	print_summary(&st, rc->prof, (r->t_stop - r->t_start) / NS_PER_SEC_F, &r->o);
	if (r->o.offcpu)
		record__offcpu_summary(&st, rc->prof, r->o.offcpu_min_ns);
	print_unwind_summary(rc, &st);
	print_python_threads(rc, &st);
	if (r->stopped_early)
		p_info("stopped before sampling started: the profile is written all the same, as "
		       "perf record writes its file%s",
		       r->ch.pid ? "; the command was not started" : "");
	else if (profile__total(rc->prof) == 0 && profile__total_offcpu(rc->prof) == 0)
		p_warn("no samples were collected: was the target idle?");
	if (!r->stopped_early)
		print_child_exit(&r->ch, r->cmd_stopped, &r->o);

	profile__sort(rc->prof);
	stop__writing(true);
	err = writer__write_path(r->w, rc->prof, r->o.output, &out, &em);
	stop__writing(false);
	if (err) {
		p_err("writing %s failed: %s", r->o.output ? r->o.output : "to stdout",
		      errmsg_said(&em) ? em.msg : strerror(-err));
		if (errmsg_said(&em) && em.hint[0])
			p_hint("%s", em.hint);
		save_elsewhere(r, &out);
		return 1;
	}
	if (r->o.output)
		p_info("wrote %s (%s)", r->o.output, r->w->name);
	if (r->tty_report && !r->ar) /* --alloc --on-cpu: after both (src/cmd/record.c) */
		p_info("that is the top of the profile: save all of it with -o FILE (profile.svg: a "
		       "flame graph; .folded, .pb.gz), or pipe it (folded text)");
	print_symbol_stats(rc, r->t_stop);
	return 0;
}

void record__close(struct record *r)
{
	ksyms_join(r, true);
	if (r->ch.pid && !r->ch.exited)
		child__abort(&r->ch);
	sinks__close(&r->ct);
	/* Before the symbolizer and the table: it holds files through them. */
	allocrun__free(r->ar);
	r->ar = NULL;
	unwinder__free(r->rc.uw);
	collector__free(r->col);
	symbolizer__free(r->rc.sym);
	debuginfod__free(r->rc.dbgd);
	labels__free(r->rc.labels);
	ptab__free(r->rc.pt);
	htab__free(r->rc.memo);
	profile__free(r->rc.prof);
	for (size_t i = 0; r->target_fds && i < r->o.nr_pids; i++)
		if (r->target_fds[i] >= 0)
			close(r->target_fds[i]);
	free(r->target_fds);
	free(r->cpus);
	close_cgroups(r->cgroup_fds, r->o.nr_cgroups);
	options__free(&r->o);
}
