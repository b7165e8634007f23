// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record.c - "bpfprof record": checks the machine, starts the collector (and
 * the command, if any), waits, drains, symbolizes, writes. Owns the user-facing
 * messages of a profiling run; the modules it drives only return errors.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sym/kbuildid.h"
#include "proc/caps.h"
#include "proc/child.h"
#include "cmd/cli.h"
#include "collector/collector.h"
#include "base/htab.h"
#include "agent/httpd.h"
#include "proc/labels.h"
#include "agent/live.h"
#include "base/log.h"
#include "agent/metrics.h"
#include "format/writer.h"
#include "format/pprof_proto.h"
#include "base/profile.h"
#include "agent/push.h"
#include "agent/store.h"
#include "proc/cgroup.h"
#include "proc/procfs.h"
#include "sym/symbolizer.h"
#include "unwind/unwinder.h"
#include "base/util.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	if (stop_signal) {
		/* Second Ctrl-C: the user wants out now. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

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

static int check_freq(uint32_t freq)
{
	char *buf;
	uint64_t max;

	if (read_file("/proc/sys/kernel/perf_event_max_sample_rate", 64, &buf, NULL))
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	if (!parse_u64(buf, 10, &max) && freq > max) {
		free(buf);
		p_err("-F %u is above the kernel's limit of %" PRIu64 " samples per second", freq,
		      max);
		p_hint("use a lower -F, or raise it: sysctl -w kernel.perf_event_max_sample_rate=%u",
		       freq);
		return -EINVAL;
	}
	free(buf);
	return 0;
}

static int check_pids(const struct options *o)
{
	for (size_t i = 0; i < o->nr_pids; i++) {
		struct proc_status st;
		int err = procfs__status("/proc", o->pids[i], &st);

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

/* --- symbolization ------------------------------------------------------- */

struct record_ctx {
	struct profile *prof; /* the whole run, or the current interval */
	struct symbolizer *sym;
	struct labels *labels;
	char kernel_build_id[BUILDID_HEX_MAX]; /* "" if unknown */
	struct unwinder *uw; /* NULL with --unwind fp */
	const char *unwind_name; /* the mode in effect, for the profile's metadata */
	const struct options *o;
	uint64_t notices;
	uint64_t frames; /* symbolized */
};

static void on_sym_warn(void *ctx, const char *msg)
{
	(void)ctx;
	p_warn("%s", msg);
}

static void on_proc_notice(void *ctx, const struct bp_proc_event *e)
{
	struct record_ctx *rc = ctx;
	struct proc_id id = { .pid = e->tgid, .start_time = e->start_time, .exec_id = e->exec_id,
			      .mm_sig = e->mm_sig };

	if (e->kind == PROC_EVENT_REFRESH) {
		/* A pc in no known mapping (dlopen, new JIT code): re-read it now,
		 * while the process is alive, for the walker and for names. */
		if (rc->uw)
			unwinder__refresh(rc->uw, e->tgid, e->start_time, e->exec_id);
		symbolizer__refresh_process(rc->sym, &id);
		return;
	}
	rc->notices++;
	/* Tables first: until they are in, the process's stacks use frame pointers. */
	if (rc->uw)
		unwinder__note_process(rc->uw, e->tgid, e->start_time, e->exec_id);
	/* Read what we need from /proc now, while the process is alive. */
	symbolizer__note_process(rc->sym, &id);
	labels__get(rc->labels, e->tgid, e->start_time);
}

static int64_t frame_of(struct record_ctx *rc, const struct sym *s)
{
	char buf[512];
	const char *name = sym__display(s, buf, sizeof(buf));

	/* pprof mappings carry build ids (servers such as Parca symbolize by them):
	 * the symbolizer read them from the very file the process mapped. */
	if (s->build_id && s->build_id_len && s->module && s->kind != FRAME_KERNEL &&
	    !profile__build_id(rc->prof, s->module)) {
		char hex[2 * 64 + 1];
		size_t n = MIN(s->build_id_len, (size_t)64);

		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", s->build_id[i]);
		hex[2 * n] = '\0';
		profile__set_build_id(rc->prof, s->module, hex);
	}

	return profile__frame(rc->prof, s->kind, name, s->module);
}

static int on_sample(void *ctx, const struct collector_sample *s)
{
	struct record_ctx *rc = ctx;
	const struct bp_sample_key *k = s->key;
	struct proc_id id = { .pid = k->tgid, .start_time = k->start_time, .exec_id = k->exec_id };
	uint32_t frames[2 * PROFILE_MAX_DEPTH + 1];
	char comm[PROFILE_COMM_LEN + 1];
	struct psample ps = { 0 };
	uint32_t n = 0;
	struct sym sym;
	int64_t f;

	/*
	 * Root first: outermost user frame ... user leaf, then kernel entry ...
	 * kernel leaf. The user leaf is the interrupted pc, not a return address,
	 * also under a kernel stack: a page fault or an interrupt stops at the
	 * instruction itself, which may be a function's first one.
	 */
	for (uint32_t i = s->nr_uips; i-- > 0;) {
		symbolizer__user(rc->sym, &id, s->uips[i], i == 0, &sym);
		rc->frames++;
		f = frame_of(rc, &sym);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	if ((k->flags & SAMPLE_F_USTACK_ERR) && !rc->o->kernel_only) {
		f = profile__frame(rc->prof, FRAME_USER, "[unknown]", NULL);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	for (uint32_t i = s->nr_kips; i-- > 0;) {
		symbolizer__kernel(rc->sym, s->kips[i], &sym);
		rc->frames++;
		f = frame_of(rc, &sym);
		if (f < 0)
			return (int)f;
		frames[n++] = (uint32_t)f;
	}
	memcpy(comm, k->comm, PROFILE_COMM_LEN);
	comm[PROFILE_COMM_LEN] = '\0';
	ps.pid = k->tgid;
	ps.tid = k->tid;
	ps.comm = comm;
	if (!(k->flags & SAMPLE_F_KTHREAD)) {
		const struct cgroup_info *ci = labels__get(rc->labels, k->tgid, k->start_time);

		if (ci) {
			ps.cgroup = ci->path[0] ? ci->path : NULL;
			ps.container = ci->container_id[0] ? ci->container_id : NULL;
		}
	}
	return profile__add(rc->prof, &ps, frames, n, s->count);
}

/* --- reporting ------------------------------------------------------------- */

static void print_summary(const struct collector_stats *st, const struct profile *prof,
			  double secs)
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
	struct sbuf sb = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(lost); i++)
		nlost += st->v[lost[i].stat];
	sbuf_printf(&sb, "%" PRIu64 " samples in %.1f s, %" PRIu64 " lost", samples, secs, nlost);
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
	sbuf_printf(&sb, "; %zu distinct stacks", profile__nr_stacks(prof));
	if (log_level() >= LOG_WARN)
		fprintf(stderr, "bpfprof: %s\n", sb.buf);
	sbuf_free(&sb);
	if (nlost)
		p_hint("raise --max-stacks / --max-entries to keep more distinct stacks");
	if (st->v[STAT_USTACK_ERR])
		p_info("%" PRIu64 " samples had no readable user stack (shown as [unknown])",
		       st->v[STAT_USTACK_ERR]);
	if (st->v[STAT_IDLE])
		p_info("%" PRIu64 " idle samples excluded (--include-idle keeps them)",
		       st->v[STAT_IDLE]);
	if (st->missing_stacks)
		p_warn("%" PRIu64 " counted stacks were missing from the stack map", st->missing_stacks);
	if (st->v[STAT_KWALK_OK] || st->v[STAT_KWALK_FALLBACK])
		p_debug("kernel stacks: %" PRIu64 " walked with the ORC table, %" PRIu64
			" by bpf_get_stack(), %" PRIu64 " disagreed (checked only in tests)",
			st->v[STAT_KWALK_OK], st->v[STAT_KWALK_FALLBACK], st->v[STAT_KWALK_DIFF]);
	p_debug("%" PRIu64 " drains, %" PRIu64 " of them emptied the kernel maps (buffer flips); "
		"%" PRIu64 " samples stored a new key, %" PRIu64 " were counted in per-CPU hot slots",
		st->drains, st->flips, st->v[STAT_NEW_KEYS], st->v[STAT_HOT_HITS]);
	if (samples != profile__total(prof) + nlost)
		p_warn("sample accounting mismatch: %" PRIu64 " samples, %" PRIu64
		       " in the profile, %" PRIu64 " lost",
		       samples, profile__total(prof), nlost);
}

static void describe_target(const struct options *o, const struct collector_stats *st)
{
	struct sbuf sb = { 0 };

	if (o->cmd)
		sbuf_printf(&sb, "sampling '%s' and its children", o->cmd[0]);
	else if (o->nr_pids == 1)
		sbuf_printf(&sb, "sampling process %u", o->pids[0]);
	else if (o->nr_pids)
		sbuf_printf(&sb, "sampling %zu processes", o->nr_pids);
	else
		sbuf_printf(&sb, "sampling %zu CPU%s", st->nr_events, st->nr_events == 1 ? "" : "s");
	sbuf_printf(&sb, " at %u Hz", o->freq);
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
struct status_line {
	bool on, shown;
	uint64_t next_ns;
};

static void status_init(struct status_line *sl, uint64_t t_start)
{
	const char *term = getenv("TERM");

	sl->on = isatty(STDERR_FILENO) && log_level() >= LOG_INFO && !(term && !strcmp(term, "dumb"));
	sl->shown = false;
	sl->next_ns = t_start + 1000000000ull;
}

static void status_update(struct status_line *sl, struct collector *col, const struct options *o,
			  uint64_t t_start, uint64_t now)
{
	struct collector_stats st;

	if (!sl->on || now < sl->next_ns)
		return;
	while (sl->next_ns <= now)
		sl->next_ns += 1000000000ull; /* on the second, without drifting */
	collector__stats(col, &st);
	fprintf(stderr, "\r\033[Kbpfprof: %.0f s", (now - t_start) / 1e9);
	if (o->duration)
		fprintf(stderr, " of %g s", o->duration);
	fprintf(stderr, ", %" PRIu64 " samples", st.v[STAT_SAMPLES]);
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

static uint32_t unwind_mode_of(enum unwind_opt u)
{
	return u == UNWIND_OPT_FP ? UNWIND_MODE_FP :
	       u == UNWIND_OPT_DWARF ? UNWIND_MODE_DWARF : UNWIND_MODE_AUTO;
}

/*
 * Starts the unwinder when the walker is loaded. Before sampling starts, it
 * installs the -p targets and bpfprof itself (busiest at start-up, building
 * tables) - whose files include what most processes share: libc, the
 * dynamic loader.
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
				"(%zu entries)", entries);
		else
			p_debug("kernel stacks: bpf_get_stack() (%s)",
				kerr == -ECANCELED ? "not asked for" : strerror(-kerr));
	}
	if (mode == UNWIND_MODE_FP)
		return 0;
	collector__unwind_kops(col, &k);
	rc->uw = unwinder__new(NULL, &k);
	if (!rc->uw) {
		p_err("cannot set up the stack walker's tables: %s", strerror(errno));
		return -ENOMEM;
	}
	unwinder__install(rc->uw, (uint32_t)getpid());
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
	p_debug("unwind: stops: %" PRIu64 " outermost frame, %" PRIu64 " frame-pointer end, %" PRIu64
		" truncated, %" PRIu64 " unreadable, %" PRIu64 " no mapping, %" PRIu64
		" no table, %" PRIu64 " unsupported rule, %" PRIu64 " bad CFA",
		st->v[STAT_UNWIND_END], st->v[STAT_UNWIND_FP_END], st->v[STAT_UNWIND_TRUNCATED],
		st->v[STAT_UNWIND_ERR_READ], st->v[STAT_UNWIND_ERR_NO_MAP],
		st->v[STAT_UNWIND_ERR_NO_TABLE], st->v[STAT_UNWIND_ERR_UNSUPPORTED],
		st->v[STAT_UNWIND_ERR_CFA]);
	p_debug("unwind: %" PRIu64 " frames from tables, %" PRIu64 " by frame pointers, %" PRIu64
		" refresh requests; row cache: %" PRIu64 " hits, %" PRIu64 " misses",
		st->v[STAT_UNWIND_DWARF_FRAMES], st->v[STAT_UNWIND_FP_FRAMES],
		st->v[STAT_UNWIND_REFRESH], st->v[STAT_UNWIND_CACHE_HITS],
		st->v[STAT_UNWIND_CACHE_MISSES]);
	p_debug("unwind: %" PRIu64 " tables (%" PRIu64 " rows) in %.1f MiB of kernel memory (%.1f MiB used), built in %.1f ms; %" PRIu64
		" files without a table, %" PRIu64 " processes",
		us.tables, us.rows, us.kernel_bytes / 1048576.0, us.used_bytes / 1048576.0,
		us.build_ns / 1e6, us.tables_failed, us.procs_loaded);
}

/* --- the run ------------------------------------------------------------------ */

/*
 * The kernel maps are drained every second even in one-shot mode: most
 * symbolization is done by the time sampling stops, and what only exists for
 * a while (a short-lived process, a BPF program loaded for a moment) is named
 * while it exists. A drain reads the counts in place and leaves the keys in
 * the kernel (see collector.c), so it does not make hot stacks take the BPF
 * program's slower new-key path again; the maps are emptied (by flipping to
 * the other pair) only when half full, which MAP_HEADROOM_SEC keeps rare: the
 * free half holds two seconds of samples even if every one is a new stack.
 */
#define DRAIN_PERIOD_NS	     1000000000ULL
#define DRAIN_PERIOD_LIVE_NS 1000000000ULL
#define MAP_HEADROOM_SEC     4

static uint64_t drain_period(const struct options *o, struct live *live)
{
	uint64_t p = DRAIN_PERIOD_NS;

	if (o->interval)
		p = MIN(p, (uint64_t)(o->interval * 1e9));
	if (live && live__pending(live))
		p = MIN(p, DRAIN_PERIOD_LIVE_NS);
	return p;
}

static uint64_t lost_total(const struct collector_stats *st)
{
	return st->v[STAT_LOST_STACKS_FULL] + st->v[STAT_LOST_COUNTS_FULL] + st->v[STAT_LOST_NO_MAP] +
	       st->v[STAT_LOST_STACK_ERR];
}

/* Continuous mode: where intervals go, and the bookkeeping of the current one. */
struct continuous {
	struct store *store;
	struct pusher *pusher;
	struct live *live;
	struct httpd *httpd;
	struct metrics metrics;
	uint64_t start_mono, start_real;
	uint64_t lost_at_start;
	uint64_t intervals;
	struct ratelimit write_rl;
};

static void fill_meta(struct profile *p, const struct record_ctx *rc, uint64_t start_real,
		      uint64_t duration_ns, uint64_t lost)
{
	struct profile_meta *m = profile__meta(p);

	m->freq_hz = rc->o->freq;
	m->start_ns = start_real;
	m->duration_ns = duration_ns;
	m->lost = lost;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	snprintf(m->unwind, sizeof(m->unwind), "%s", rc->unwind_name ? rc->unwind_name : "fp");
	if (rc->kernel_build_id[0])
		profile__set_build_id(p, PPROF_KERNEL_MAPPING, rc->kernel_build_id);
}

/*
 * Ends the current interval: stamps it, hands it to the sinks, starts the next.
 * A sink failing (full disk, unreachable server) is logged and counted; the
 * agent keeps sampling.
 */
static int finish_interval(struct record_ctx *rc, struct continuous *ct, struct collector *col,
			   uint64_t now_mono)
{
	struct collector_stats st;
	struct profile *next;
	char path[4096] = "";
	uint64_t lost;
	int err;

	collector__stats(col, &st);
	lost = lost_total(&st) - ct->lost_at_start;
	fill_meta(rc->prof, rc, ct->start_real, now_mono - ct->start_mono, lost);
	profile__sort(rc->prof);
	if (ct->store) {
		err = store__write(ct->store, rc->prof, ct->start_real, path, sizeof(path));
		if (err)
			p_warn_rl(&ct->write_rl, 60, "writing the interval profile to %s failed: %s",
				  rc->o->output_dir, strerror(-err));
	}
	if (ct->pusher && profile__total(rc->prof) &&
	    pusher__submit(ct->pusher, rc->prof, ct->start_real, ct->start_real + (now_mono - ct->start_mono)))
		p_warn_rl(&ct->write_rl, 60, "cannot queue the interval for --push: out of memory");
	p_debug("interval %" PRIu64 ": %" PRIu64 " samples, %" PRIu64 " lost, %zu stacks, "
		"drain %.1f ms%s%s",
		ct->intervals, profile__total(rc->prof), lost, profile__nr_stacks(rc->prof),
		st.drain_ns / 1e6, path[0] ? ", wrote " : "", path);
	next = profile__new();
	if (!next)
		return -ENOMEM;
	profile__free(rc->prof);
	rc->prof = next;
	ct->intervals++;
	ct->start_mono = now_mono;
	ct->start_real = realtime_ns();
	ct->lost_at_start = lost_total(&st);
	return 0;
}

static void publish_metrics(struct record_ctx *rc, struct continuous *ct, struct collector *col)
{
	struct metrics_snapshot m = { 0 };
	struct symbolizer_stats ss;
	struct collector_stats st;

	collector__stats(col, &st);
	m.samples = st.v[STAT_SAMPLES];
	m.lost_stacks_full = st.v[STAT_LOST_STACKS_FULL];
	m.lost_counts_full = st.v[STAT_LOST_COUNTS_FULL];
	m.lost_stack_err = st.v[STAT_LOST_STACK_ERR];
	m.lost_other = st.v[STAT_LOST_NO_MAP];
	m.idle = st.v[STAT_IDLE];
	m.filtered = st.v[STAT_FILTERED];
	m.ustack_errors = st.v[STAT_USTACK_ERR];
	m.notices_lost = st.v[STAT_NOTIFY_LOST];
	m.drains = st.drains;
	m.drain_ns_last = st.drain_ns;
	m.drain_ns_total = st.drain_ns_total;
	m.last_drain_unix = realtime_ns() / 1000000000ULL;
	m.intervals = ct->intervals;
	m.freq = rc->o->freq;
	if (ct->store) {
		struct store_stats sst;

		store__stats(ct->store, &sst);
		m.files_written = sst.written;
		m.file_errors = sst.errors;
		m.files_pruned = sst.pruned;
		m.files_kept = sst.files;
		m.store_bytes = sst.bytes;
	}
	if (ct->pusher) {
		struct pusher_stats ps;

		pusher__stats(ct->pusher, &ps);
		m.push_sent = ps.sent;
		m.push_failed = ps.failed;
		m.push_dropped = ps.dropped;
		m.push_queued = ps.queued;
	}
	symbolizer__stats(rc->sym, &ss);
	m.procs_cached = ss.procs;
	m.files_cached = ss.files;
	m.labels_cached = labels__count(rc->labels);
	metrics__publish(&ct->metrics, &m);
}

/*
 * One drain. While /debug/pprof/profile requests wait, the drain goes into a
 * separate delta first, so it can be handed to them too; otherwise straight
 * into the run's (or interval's) profile.
 */
static int drain_once(struct record_ctx *rc, struct continuous *ct, struct collector *col)
{
	struct profile *main_prof = rc->prof, *delta = NULL;
	int err;

	if (ct->live && live__pending(ct->live)) {
		delta = profile__new();
		if (!delta)
			return -ENOMEM;
		rc->prof = delta;
	}
	err = collector__drain(col, on_sample, rc);
	rc->prof = main_prof;
	if (delta) {
		if (!err)
			err = profile__merge(main_prof, delta);
		live__feed(ct->live, delta, now_ns());
		profile__free(delta);
	} else if (ct->live) {
		live__feed(ct->live, NULL, now_ns());
	}
	return err;
}

/* The push token: --token-file, else $BPFPROF_PUSH_TOKEN. Never from argv. */
static int read_token(const char *file, char **out)
{
	const char *env = getenv("BPFPROF_PUSH_TOKEN");
	char *buf = NULL;
	int err;

	*out = NULL;
	if (!file) {
		if (env && *env && !(*out = strdup(env)))
			return -ENOMEM;
		return 0;
	}
	err = read_file(file, 64 * 1024, &buf, NULL);
	if (err)
		return err;
	buf[strcspn(buf, "\r\n")] = '\0';
	*out = buf;
	return 0;
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

/*
 * Continuous mode's sinks: the local store, the Pyroscope pusher, the HTTP
 * endpoint. Returns 0, or the exit status after printing why (2: the user's
 * argument is wrong, 1: something failed).
 */
static int sinks_open(struct continuous *ct, const struct options *o)
{
	const struct writer *pw = output__find("pprof");
	const struct writer *fmt = pw ? pw : &writer_folded;
	char msg[512];
	int err;

	if (o->output_dir) {
		struct store_opts so = {
			.dir = o->output_dir,
			.writer = fmt,
			.ext = pw ? ".pb.gz" : ".folded",
			.keep = o->keep,
			.max_disk = o->max_disk,
		};

		ct->store = store__open(&so);
		if (!ct->store) {
			p_err("cannot use --output-dir %s: %s", o->output_dir, strerror(errno));
			return 2;
		}
	}
	if (o->push_url) {
		struct pusher_opts po = {
			.url = o->push_url,
			.app = o->app_name ? o->app_name : "bpfprof",
			.freq = o->freq,
			.writer = fmt,
		};
		char *token = NULL;

		err = read_token(o->token_file, &token);
		if (err) {
			p_err("cannot read --token-file %s: %s", o->token_file, strerror(-err));
			return 2;
		}
		po.token = token;
		ct->pusher = pusher__start(&po, msg, sizeof(msg));
		free(token);
		if (!ct->pusher) {
			p_err("--push: %s", msg);
			return 1;
		}
	}
	if (o->listen) {
		ct->live = live__new(fmt, o->freq);
		if (!ct->live) {
			p_err("out of memory");
			return 1;
		}
		ct->httpd = httpd__start(o->listen, ct->live, &ct->metrics,
					 pw ? "application/octet-stream" : "text/plain; charset=utf-8",
					 msg, sizeof(msg));
		if (!ct->httpd) {
			p_err("--listen: %s", msg);
			return 2;
		}
	}
	return 0;
}

static void sinks_close(struct continuous *ct)
{
	if (ct->live)
		live__shutdown(ct->live); /* wakes HTTP requests still waiting */
	httpd__stop(ct->httpd);
	live__free(ct->live);
	pusher__stop(ct->pusher, 0, NULL);
	store__close(ct->store);
}

static uint32_t default_map_entries(uint32_t freq)
{
	uint64_t n = roundup_pow2((uint64_t)freq * possible_cpus() * MAP_HEADROOM_SEC);

	return (uint32_t)MIN(MAX(n, 1024), 65536);
}

static const struct writer *pick_writer(const struct options *o)
{
	const struct writer *w = NULL;

	if (o->format)
		w = output__find(o->format);
	if (!w && o->output)
		w = output__for_path(o->output);
	return w ? w : &writer_folded;
}

int cmd_record(int argc, char **argv)
{
	struct collector_opts copts = { 0 };
	struct collector_error ce = { 0 };
	struct collector_stats st;
	struct symbolizer_opts sopts = { 0 };
	struct record_ctx rc = { 0 };
	struct child ch = CHILD_INIT;
	struct continuous ct = { 0 };
	struct status_line sl = { 0 };
	struct collector *col = NULL;
	const struct writer *w;
	struct options o;
	uint64_t t_start, t_stop, deadline = 0, last_drain;
	bool *cpus = NULL;
	int *cgroup_fds = NULL;
	int nr_cpus = 0, ret = 1, err;
	char msg[512];

	err = cli__parse(argc, argv, &o, msg, sizeof(msg));
	if (err == CLI_USAGE) {
		p_err("%s", msg);
		p_hint("see 'bpfprof --help'");
		return 2;
	}
	if (o.show_help) {
		cli__usage(stdout);
		return 0;
	}
	if (o.show_version) {
		printf("bpfprof %s\n", BPFPROF_VERSION);
		return 0;
	}
	/* Start and summary lines show by default; -q leaves errors only. */
	log_set_level(o.verbosity < 0 ? LOG_ERROR : o.verbosity == 0 ? LOG_INFO : LOG_DEBUG);
	w = pick_writer(&o);

	/* From here on Ctrl-C / SIGTERM stop the run cleanly (before sampling
	 * starts too: the loop then ends at once); a second one exits at once. */
	install_signals();

	/* Preflight: argument problems exit 2, machine problems exit 1. */
	if (check_freq(o.freq) || check_pids(&o)) {
		ret = 2;
		goto out;
	}
	if (o.cpu_list && !(cpus = parse_cpus(o.cpu_list, &nr_cpus))) {
		ret = 2;
		goto out;
	}
	err = output__check_path(o.output);
	if (err) {
		p_err("cannot write %s: %s", o.output, strerror(-err));
		ret = 2;
		goto out;
	}
	if (check_privileges())
		goto out;
	if (o.nr_cgroups && !(cgroup_fds = open_cgroups(&o))) {
		ret = 2;
		goto out;
	}

	metrics__init(&ct.metrics);
	err = sinks_open(&ct, &o);
	if (err) {
		ret = err;
		goto out;
	}

	rc.o = &o;
	sopts.warn = on_sym_warn;
	rc.prof = profile__new();
	rc.sym = symbolizer__new(&sopts);
	rc.labels = labels__new("/proc", 0);
	if (buildid__kernel(rc.kernel_build_id))
		rc.kernel_build_id[0] = '\0';
	if (!rc.prof || !rc.sym || !rc.labels) {
		p_err("out of memory");
		goto out;
	}
	if (!o.user_only) {
		err = symbolizer__load_kernel(rc.sym);
		if (err)
			p_warn("cannot read /proc/kallsyms (%s): kernel frames will be [unknown]",
			       strerror(-err));
		else if (symbolizer__kernel_restricted(rc.sym)) {
			p_warn("kernel addresses are hidden by kernel.kptr_restrict: kernel frames will be [unknown]");
			p_hint("run as root, or grant CAP_SYSLOG, or sysctl -w kernel.kptr_restrict=0");
		}
	}

	if (o.cmd) {
		err = child__spawn(&ch, o.cmd);
		if (err) {
			p_err("cannot start '%s': %s", o.cmd[0], strerror(-err));
			goto out;
		}
	}

	copts.freq = o.freq;
	copts.cpus = cpus;
	copts.nr_cpus = nr_cpus;
	copts.pids = o.pids;
	copts.nr_pids = o.nr_pids;
	copts.child = ch.pid;
	copts.drop_kernel = o.user_only;
	copts.drop_user = o.kernel_only;
	copts.include_idle = o.include_idle;
	copts.per_thread = o.per_thread;
	copts.cgroup_fds = cgroup_fds;
	copts.nr_cgroups = o.nr_cgroups;
	/* Each sample stores at most two stacks (kernel, user). */
	copts.max_counts = o.max_counts ? o.max_counts : default_map_entries(o.freq);
	copts.max_stacks = o.max_stacks ? o.max_stacks : 2 * copts.max_counts;
	copts.libbpf_debug = o.verbosity >= 2;
	copts.unwind_mode = unwind_mode_of(o.unwind);
	copts.kernel_helper = o.kernel_helper;

	col = collector__open(&copts, &ce);
	if (col && unwind_start(&rc, col, &o))
		goto out;
	if (col) {
		rc.unwind_name = cli__unwind_name(collector__unwind_mode(col, NULL) == UNWIND_MODE_FP
							  ? UNWIND_OPT_FP
							  : o.unwind);
		p_debug("user stacks walked with --unwind %s", rc.unwind_name);
	}
	if (!col || collector__attach(col, &ce)) {
		p_err("%s", ce.msg);
		if (ce.hint[0])
			p_hint("%s", ce.hint);
		goto out;
	}
	/* Everything privileged is open now: keep only what reading needs. */
	err = caps__drop_after_attach(o.output || o.output_dir);
	if (err)
		p_warn("cannot drop capabilities: %s", strerror(-err));
	p_debug("effective capabilities after attach: %#llx", caps__effective());
	/* Loading parsed the kernel's BTF (megabytes) and freed it: give the
	 * pages back, an always-on agent's RSS is what it keeps, not its peak. */
	malloc_trim(0);
	collector__stats(col, &st);
	describe_target(&o, &st);

	t_start = now_ns();
	profile__meta(rc.prof)->start_ns = realtime_ns();
	ct.start_mono = t_start;
	ct.start_real = profile__meta(rc.prof)->start_ns;
	if (o.duration)
		deadline = t_start + (uint64_t)(o.duration * 1e9);
	status_init(&sl, t_start);
	if (ch.pid) {
		err = child__start(&ch);
		if (err) {
			p_err("cannot run '%s': %s", o.cmd[0], strerror(-err));
			child__reap(&ch, true);
			goto out;
		}
	}

	last_drain = t_start;
	while (!stop_signal) {
		int timeout = 200;
		uint64_t now = now_ns();

		/* The period is re-evaluated every turn: a new HTTP request shortens it. */
		if (now - last_drain >= drain_period(&o, ct.live)) {
			/* Notices first: the drain may hold samples of processes they announce. */
			collector__poll(col, 0, on_proc_notice, &rc);
			err = drain_once(&rc, &ct, col);
			if (err) {
				p_err("draining the kernel maps failed: %s", strerror(-err));
				goto out;
			}
			last_drain = now;
			if (o.interval && now - ct.start_mono >= (uint64_t)(o.interval * 1e9) &&
			    finish_interval(&rc, &ct, col, now)) {
				p_err("out of memory");
				goto out;
			}
			/* Processes that exited before this drain are forgotten at the next:
			 * samples between the buffer flip and the exit are drained then. */
			symbolizer__sweep(rc.sym);
			labels__sweep(rc.labels);
			publish_metrics(&rc, &ct, col);
		}

		if (deadline) {
			if (now >= deadline)
				break;
			timeout = (int)MIN((uint64_t)timeout, (deadline - now) / 1000000 + 1);
		}
		err = collector__poll(col, timeout, on_proc_notice, &rc);
		if (err < 0 && err != -EINTR) {
			status_clear(&sl);
			p_err("polling the ring buffer failed: %s", strerror(-err));
			break;
		}
		if (rc.uw)
			unwinder__tick(rc.uw);
		if (ch.pid) {
			child__reap(&ch, false);
			if (ch.exited)
				break;
		}
		status_update(&sl, col, &o, t_start, now_ns());
	}
	status_clear(&sl);
	t_stop = now_ns();
	if (stop_signal)
		p_info("stopping on %s", strsignal(stop_signal));

	/* Stop sampling, take the last notices, then drain everything. */
	collector__detach(col);
	collector__poll(col, 0, on_proc_notice, &rc);
	err = drain_once(&rc, &ct, col);
	if (err) {
		p_err("draining the kernel maps failed: %s", strerror(-err));
		goto out;
	}
	if (ch.pid && !ch.exited) {
		kill(ch.pid, SIGTERM); /* as perf record does with its workload */
		child__reap(&ch, true);
	}

	if (o.interval) {
		/* The partial last interval is flushed like any other. */
		uint64_t total = 0;

		if (finish_interval(&rc, &ct, col, t_stop)) {
			p_err("out of memory");
			goto out;
		}
		collector__stats(col, &st);
		total = st.v[STAT_SAMPLES] - lost_total(&st);
		p_info("%" PRIu64 " samples in %.1f s, %" PRIu64 " lost, %" PRIu64 " intervals",
		       st.v[STAT_SAMPLES], (t_stop - t_start) / 1e9, lost_total(&st), ct.intervals);
		if (ct.pusher) {
			struct pusher_stats ps;

			pusher__stop(ct.pusher, 5000, &ps); /* give the last interval a chance */
			ct.pusher = NULL;
			p_info("pushed %" PRIu64 " profiles to %s, %" PRIu64 " attempts failed, %" PRIu64
			       " dropped",
			       ps.sent, o.push_url, ps.failed, ps.dropped);
		}
		if (ct.store) {
			struct store_stats ss;

			store__stats(ct.store, &ss);
			p_info("%" PRIu64 " profiles written to %s (%u kept, %" PRIu64
			       " bytes), %" PRIu64 " failed",
			       ss.written, o.output_dir, ss.files, ss.bytes, ss.errors);
		}
		(void)total;
		ret = 0;
		goto out;
	}

	collector__stats(col, &st);
	fill_meta(rc.prof, &rc, profile__meta(rc.prof)->start_ns, t_stop - t_start, lost_total(&st));
	print_summary(&st, rc.prof, (t_stop - t_start) / 1e9);
	print_unwind_summary(&rc, &st);
	if (profile__total(rc.prof) == 0)
		p_warn("no samples were collected: was the target idle?");
	if (ch.exited && WIFEXITED(ch.status))
		p_info("'%s' exited with status %d after %.2f s of CPU (about %.0f samples at %u Hz)",
		       o.cmd[0], WEXITSTATUS(ch.status), ch.cpu_s, ch.cpu_s * o.freq, o.freq);
	else if (ch.exited && WIFSIGNALED(ch.status))
		p_info("'%s' was killed by %s", o.cmd[0], strsignal(WTERMSIG(ch.status)));

	profile__sort(rc.prof);
	err = output__write_path(w, rc.prof, o.output, &o.out);
	if (err) {
		p_err("writing %s failed: %s", o.output ? o.output : "to stdout", strerror(-err));
		goto out;
	}
	if (o.output)
		p_info("wrote %s (%s)", o.output, w->name);
	{
		struct symbolizer_stats ss;
		double ms = (now_ns() - t_stop) / 1e6;

		symbolizer__stats(rc.sym, &ss);
		p_debug("end of sampling to written profile: %.1f ms; %" PRIu64
			" frames symbolized, %" PRIu64 " unnamed",
			ms, rc.frames, ss.unknown);
		p_debug("symbols: %zu processes, %zu files (%zu KiB), %" PRIu64
			" debug files, %zu JIT maps (%zu KiB), %" PRIu64 " JIT frames, %" PRIu64
			" files rejected, %" PRIu64 " images lost, %" PRIu64 " kallsyms reloads",
			ss.procs, ss.files, ss.file_bytes >> 10, ss.debug_files, ss.perfmaps,
			ss.perfmap_bytes >> 10, ss.jit_names, ss.rejected, ss.images_lost,
			ss.kernel_reloads);
	}
	ret = 0;
out:
	if (ch.pid && !ch.exited)
		child__abort(&ch);
	sinks_close(&ct);
	unwinder__free(rc.uw);
	collector__free(col);
	symbolizer__free(rc.sym);
	labels__free(rc.labels);
	profile__free(rc.prof);
	free(cpus);
	close_cgroups(cgroup_fds, o.nr_cgroups);
	cli__free(&o);
	return ret;
}
