// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * alloc.c - "bpfprof --alloc": memory profiles from the C library's
 * allocator and the Go runtime's sampled allocations. The engine (targets,
 * probes, sampling weights, -a's guard) is session/allocrun.h; this file
 * makes the process table and the symbolizer, runs the engine until the
 * targets end, -d or a stop request, writes the one profile as the
 * record's -o/-f say (pprof with Go's four heap sample types, the other
 * formats through a --view) and says what the counters tell. In continuous
 * mode it hands each interval's heap profile to the sinks (session/record.h:
 * --output-dir's .heap.pb.gz files), answers --listen's /debug/pprof/heap
 * and /allocs and publishes the engine's counters to /metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "cmd/cmd.h"
#include "format/writer.h"
#include "session/allocrun.h"
#include "session/record.h"
#include "session/stop.h"
#include "sym/symbolizer.h"

static void sym_warn(void *ctx, const char *msg)
{
	(void)ctx;
	p_warn("%s", msg);
}

/*
 * Continuous mode (--interval, --output-dir, --listen): the sinks of
 * session/record.h, fed by the engine's takes. One heap profile per interval
 * (the allocations of the interval, the blocks in use at its end), /metrics
 * every second, and the HTTP endpoint's heap requests every tick while one
 * waits (session/alloc_sinks.c). Everything runs on this thread: the heap
 * live's finisher too.
 */
struct drive {
	struct allocrun *ar;
	const struct options *o;
	struct symbolizer *sym;
	struct continuous ct;
	bool open;	       /* sinks__open done: sinks__close at the end */
	uint64_t next_edge;    /* the next interval's end (now_ns), 0: no intervals */
	uint64_t next_publish; /* /metrics */
	uint64_t publishes;
	uint64_t start;	    /* the loop's */
	bool status, shown; /* the status line: on a terminal (stderr); on the screen */
};

static int drive_open(struct drive *d, uint64_t start)
{
	int ret;

	metrics__init(&d->ct.metrics, NS_PER_SEC);
	d->ct.heap_finish = sinks__heap_finish;
	d->ct.heap_ctx = d->ar;
	d->ct.start_mono = start;
	d->ct.start_real = realtime_ns();
	ret = sinks__open(&d->ct, d->o);
	d->open = true;
	return ret;
}

/* The interval's heap profile to the sinks; 0 or -ENOMEM. */
static int drive_emit(struct drive *d)
{
	int err = sinks__heap_interval(&d->ct, d->ar);

	if (!err)
		d->ct.intervals++;
	return err;
}

/* On a terminal, every second: "bpfprof: 3 s of 10 s, 512 allocations sampled, 3 profiles written".
 */
static void status_update(struct drive *d, const struct metrics_alloc *am, uint64_t now)
{
	char sinks[160];

	if (!d->status)
		return;
	sinks__status(&d->ct, sinks, sizeof(sinks));
	fprintf(stderr, "\r\033[Kbpfprof: %.0f s", (double)(now - d->start) / NS_PER_SEC_F);
	if (d->o->duration)
		fprintf(stderr, " of %g s", d->o->duration);
	fprintf(stderr, ", %" PRIu64 " allocation%s sampled%s", am->samples_libc + am->samples_go,
		plural_s(am->samples_libc + am->samples_go), sinks);
	fflush(stderr);
	d->shown = true;
}

static void status_clear(struct drive *d)
{
	if (d && d->shown)
		fputs("\r\033[K", stderr);
	if (d)
		d->shown = false;
}

static void drive_publish(struct drive *d, uint64_t now)
{
	struct metrics_snapshot m = { 0 };

	m.alloc = true;
	allocrun__metrics(d->ar, &m.am);
	status_update(d, &m.am, now);
	m.drains = ++d->publishes;
	m.last_drain_unix = realtime_ns() / NS_PER_SEC;
	m.last_drain_ns = now;
	sinks__publish(&d->ct, &m, d->sym, NULL, NULL);
	d->next_publish = now + NS_PER_SEC;
}

/* One turn's sinks; when the next one is due. An interval that could not
 * be taken (no memory) is skipped, said: the next one spans both. */
static void drive_turn(struct drive *d, uint64_t now, uint64_t *due)
{
	static struct ratelimit rl;

	if (d->next_edge && now >= d->next_edge) {
		int err = drive_emit(d);

		if (err) {
			status_clear(d);
			p_warn_rl(&rl, 60,
				  "the interval's profile could not be taken (%s): its "
				  "allocations go into the next one",
				  strerror(-err));
		}
		while (d->next_edge <= now) /* on the interval, without drifting */
			d->next_edge += (uint64_t)(d->o->interval * NS_PER_SEC_F);
	}
	sinks__heap_tick(&d->ct, d->ar);
	if (now >= d->next_publish)
		drive_publish(d, now);
	if (d->next_edge && d->next_edge < *due)
		*due = d->next_edge;
	if (d->next_publish < *due)
		*due = d->next_publish;
}

/* Until a stop request, -d, or the targets' end; the engine stopped. 0. */
static int loop(struct allocrun *ar, const struct options *o, struct drive *d)
{
	uint64_t end = 0, start = now_ns();

	if (o->duration > 0)
		end = start + (uint64_t)(o->duration * NS_PER_SEC_F);
	if (d) {
		const char *term = getenv("TERM");

		d->start = start;
		d->next_edge = o->interval ? start + (uint64_t)(o->interval * NS_PER_SEC_F) : 0;
		d->next_publish = start;
		d->status = isatty(STDERR_FILENO) && log_level() >= LOG_INFO &&
			    !(term && !strcmp(term, "dumb"));
	}
	for (;;) {
		uint64_t now = now_ns(), due = allocrun__tick(ar, now), after;
		int sig = stop__requested();

		if (sig || (end && now >= end) || allocrun__targets_gone(ar)) {
			status_clear(d);
			if (sig)
				p_info("stopping on %s", strsignal(sig));
			break;
		}
		/* After the checks: an edge due at the end is the last interval's, not one
		 * more interval and an empty last one. */
		if (d)
			drive_turn(d, now, &due);
		after = now_ns();
		if (end && end < due)
			due = end;
		poll(NULL, 0, due > after ? (int)((due - after + NS_PER_MS - 1) / NS_PER_MS) : 0);
	}
	allocrun__stop(ar);
	return 0;
}

/* -a, --cgroup: what the guard did. */
static void report_guard(const struct allocrun_stats *st)
{
	const struct allocguard *g = &st->g;
	const uint64_t *c = st->c;
	uint64_t on = allocguard__on_ns(g, st->t1), total = st->t1 - st->t0;
	double frac = total ? (double)on / (double)total : 1;

	p_debug("allocator guard: budget %" PRIu64 " calls/s, %" PRIu64 " calls seen (%" PRIu64
		" of processes not profiled), busiest %.0f calls/s",
		g->budget, c[ALLOC_C_CALLS] + c[ALLOC_C_FREES] + c[ALLOC_C_OTHERS] - st->calls0,
		c[ALLOC_C_OTHERS], g->max_rate);
	p_debug("allocator guard: %.1f ms taking the probes off, %.1f ms putting them back "
		"(wall time; %.1f ms of bpfprof's CPU), %zu files probed",
		(double)st->toggle_ns[0] / 1e6, (double)st->toggle_ns[1] / 1e6,
		(double)st->toggle_cpu_ns / 1e6, st->nr_held);
	if (!g->engaged) {
		p_info("allocator guard: not engaged (probes on all the time)");
		return;
	}
	p_info("allocator guard: engaged after %.1f s; probes on %.1f%% of the time (%.3f of "
	       "%.3f s), %" PRIu64 " windows, %" PRIu64 " switches off and on (%.1f ms each on "
	       "average, %.1f ms at most, wall time); alloc values scaled x%.2f; in-use not "
	       "measured",
	       (double)(g->engaged_ns - st->t0) / NS_PER_SEC_F, frac * 100,
	       (double)on / NS_PER_SEC_F, (double)total / NS_PER_SEC_F, g->windows, g->toggles,
	       g->toggles ? (double)(st->toggle_ns[0] + st->toggle_ns[1]) / (double)g->toggles / 1e6
			  : 0.0,
	       (double)st->toggle_max_ns / 1e6, st->scale);
	p_warn("in-use values not measured (0 in the profile): the guard took the allocator's "
	       "probes off, and the frees of the windows off were not seen");
	if (g->still_over)
		p_warn("still over the budget at the lowest duty (%.0f%%): %.0f calls/s during the "
		       "windows on",
		       ALLOCGUARD_MIN_DUTY * 100, g->rate);
	p_info("the processes in the profile are a lower bound: one that lived only while the "
	       "probes were off is not there");
}

/* -a, --cgroup: the files probed, and what their caps left out. */
static void report_files(const struct allocrun_stats *st)
{
	if (!st->held_over && !st->looked_over) {
		p_info("%zu files probed (at most %zu)", st->nr_held, st->max_held);
		return;
	}
	p_warn("%zu files probed (at most %zu); %" PRIu64
	       " files that define the allocator not probed (their processes' allocations are "
	       "missing), %" PRIu64 " times a new file not looked at (at most %d are)",
	       st->nr_held, st->max_held, st->held_over, st->looked_over, ALLOCRUN_MAX_LOOKED);
}

/* What the counters say about the run. */
static void report_counters(const struct allocrun_stats *st)
{
	const uint64_t *c = st->c;

	p_info("%" PRIu64 " allocation call%s, %" PRIu64 " free%s; %" PRIu64
	       " allocation%s sampled (one every %" PRIu64 " bytes on average), %" PRIu64
	       " of them freed",
	       c[ALLOC_C_CALLS], plural_s(c[ALLOC_C_CALLS]), c[ALLOC_C_FREES],
	       plural_s(c[ALLOC_C_FREES]), c[ALLOC_C_RECORDED], plural_s(c[ALLOC_C_RECORDED]),
	       st->period, c[ALLOC_C_FREED]);
	if (c[ALLOC_C_LIVE_FULL])
		p_warn("%" PRIu64 " sampled blocks not followed to their free: the table of %u "
		       "blocks in use was full (their in-use values are missing)",
		       c[ALLOC_C_LIVE_FULL], ALLOC_LIVE_MAX);
	if (c[ALLOC_C_RING_FULL])
		p_warn("%" PRIu64 " sampled allocations lost: the ring buffer was full",
		       c[ALLOC_C_RING_FULL]);
	if (c[ALLOC_C_NO_STACK])
		p_warn("%" PRIu64 " sampled allocations without their stack (it could not be read)",
		       c[ALLOC_C_NO_STACK]);
	if (st->stacks.dropped || st->stack_unknown)
		p_warn("%" PRIu64 " sampled allocations and %" PRIu64
		       " blocks in use without their "
		       "stack ([stack lost]): the table of %zu distinct stacks was full, or their "
		       "allocation was not seen",
		       st->stacks.dropped, st->stack_unknown, st->stacks.cap);
	p_debug("%zu distinct stacks kept, %" PRIu64 " unused ones evicted", st->stacks.count,
		st->stacks.evicted);
	if (c[ALLOC_C_NO_THREAD] || c[ALLOC_C_NO_RETURN] || st->oom)
		p_warn("%" PRIu64 " calls not counted (no thread state), %" PRIu64
		       " sampled calls without their return, %" PRIu64 " samples lost to memory",
		       c[ALLOC_C_NO_THREAD], c[ALLOC_C_NO_RETURN], st->oom);
	p_debug("%" PRIu64 " sampled calls, %" PRIu64 " returned no block", c[ALLOC_C_SAMPLED],
		c[ALLOC_C_FAILED]);
	if (st->nr_go) {
		p_info("Go: %" PRIu64 " allocations the runtime sampled, %" PRIu64
		       " frees of sampled objects seen, %" PRIu64 " of them matched",
		       c[ALLOC_C_GO_SAMPLES] + st->go_polled, c[ALLOC_C_GO_FREES],
		       c[ALLOC_C_GO_FREED]);
		if (st->go_buckets || st->go_bkt_bad || st->go_bkt_over || st->go_bkt_gone ||
		    c[ALLOC_C_GO_BUCKETS_FULL] || st->go_poll_refused)
			p_info("Go: %zu profile buckets read from the processes (%" PRIu64
			       " reads, %.1f ms), %" PRIu64 " samples of buckets refused (not a "
			       "bucket, unreadable), %" PRIu64
			       " not counted (the tables full), %" PRIu64
			       " of buckets first seen once their process had exited; %" PRIu64
			       " samples from polled buckets, %" PRIu64
			       " polled buckets refused, %" PRIu64 " GC cycles seen (mProf_Flush)",
			       st->go_buckets, st->go_bkt_reads, (double)st->go_bkt_read_ns / 1e6,
			       st->go_bkt_bad, st->go_bkt_over + c[ALLOC_C_GO_BUCKETS_FULL],
			       st->go_bkt_gone, st->go_polled, st->go_poll_refused,
			       c[ALLOC_C_GO_FLUSHES]);
		if (st->go_stk_over || st->go_read_fails || st->go_list_over)
			p_info("Go: %" PRIu64 " buckets kept without their stack (past their "
			       "process's share of the stack table, %zu, or all Go processes', %zu): "
			       "%" PRIu64 " samples counted as [no stack]; %" PRIu64
			       " reads of buckets failed; %" PRIu64 " walks of a polled list "
			       "stopped at its process's cap of %d buckets",
			       st->go_stk_over, st->go_stacks_proc, st->go_stacks_max,
			       st->go_unnamed, st->go_read_fails, st->go_list_over, 8192);
		if (st->go_reads_skipped)
			p_info("Go: %" PRIu64 " reads of buckets' in-use counts not tried (a "
			       "process's batch stopped after %d failed pieces; the next one "
			       "starts where it stopped): their last values kept",
			       st->go_reads_skipped, 64);
		if (st->go_cg_over)
			p_info("Go: %" PRIu64 " of those buckets past their cgroup's share of the "
			       "stack table (%zu stacks the Go processes of one cgroup together)",
			       st->go_cg_over, st->go_stacks_cgroup);
		if (st->go_poll_ended || st->go_other)
			p_info("Go: %" PRIu64 " polled processes ended between polls: their "
			       "allocations of up to one drain (100 ms; 1 s with more than %d "
			       "buckets) before their end not counted; %" PRIu64
			       " processes' pids went to another image (exec, reuse): their Go "
			       "state let go, not read in the new one",
			       st->go_poll_ended, 4096, st->go_other);
		if (!c[ALLOC_C_GO_SAMPLES] && !st->go_polled && !st->go_off_warned)
			p_warn("the Go runtime sampled no allocation: a Go program samples only "
			       "when it links runtime.MemProfile (imports runtime/pprof or "
			       "net/http/pprof), else its runtime.MemProfileRate is 0; or it "
			       "allocated less than its rate (%d bytes by default)",
			       ALLOCRUN_GO_DEFAULT_RATE);
	}
	if (st->sbcl_unnamed)
		p_warn("SBCL: %" PRIu64 " sampled allocations' Lisp frames not named as they came "
		       "(a drain names at most %d new stacks, in %d ms): named when the profile "
		       "is written (for up to %d ms a profile), unnamed if their process is gone "
		       "by then",
		       st->sbcl_unnamed, ALLOCRUN_SBCL_NAME_STACKS, ALLOCRUN_SBCL_NAME_MS,
		       ALLOCRUN_SBCL_WRITE_MS);
	if (st->sbcl_write_unnamed)
		p_warn("SBCL: %" PRIu64 " Lisp frames written as \"%s\": the profiles written in "
		       "one turn name SBCL's frames for at most %d ms between them, each of N "
		       "SBCL processes for at most 1/(N+1) of that",
		       st->sbcl_write_unnamed, SYM_LISP_UNNAMED, ALLOCRUN_SBCL_WRITE_MS);
	if (st->all) {
		report_files(st);
		report_guard(st);
	}
}

/*
 * A one-shot profile with no allocation in it: why, as record says of 0
 * samples (it was written without a word, and looked like a failure). Go
 * and SBCL runtimes sample on their own and say so above.
 */
static void say_why_empty(const struct allocrun_stats *st)
{
	const uint64_t *c = st->c;

	if (st->nr_go || st->nr_sbcl)
		return;
	if (!c[ALLOC_C_CALLS])
		p_warn("no allocation was sampled: the allocator functions probed were never "
		       "called while the probes were in (the program ended first, allocates "
		       "another way - its own allocator, mmap - or was idle)");
	else if (!c[ALLOC_C_SAMPLED])
		p_warn("no allocation was sampled: %" PRIu64 " allocation call%s, fewer bytes in "
		       "all than one sample takes (one every %" PRIu64 " bytes on average); "
		       "sample more often with a smaller --alloc=BYTES (--alloc=4K)",
		       c[ALLOC_C_CALLS], c[ALLOC_C_CALLS] == 1 ? "" : "s", st->period);
	else
		p_warn("no allocation was sampled: the %" PRIu64 " sampled call%s returned no "
		       "block, or %s return was not seen",
		       c[ALLOC_C_SAMPLED], c[ALLOC_C_SAMPLED] == 1 ? "" : "s",
		       c[ALLOC_C_SAMPLED] == 1 ? "its" : "their");
}

void cmd_alloc_summary(struct allocrun *ar)
{
	struct allocrun_stats st;

	allocrun__stats(ar, &st);
	report_counters(&st);
}

/* The profile taken, said, written to path (NULL: stdout). 0 or 1 (said). */
int cmd_alloc_report(struct allocrun *ar, const struct options *o, const struct writer *w,
		     const char *path)
{
	struct profile *prof = profile__new();
	struct allocrun_stats st;
	struct errmsg em = { 0 };
	int err;

	if (!prof || allocrun__take(ar, prof, ALLOCRUN_ALL)) {
		p_err("out of memory");
		profile__free(prof);
		return 1;
	}
	allocrun__stats(ar, &st);
	report_counters(&st);
	if (!profile__nr_samples(prof))
		say_why_empty(&st);
	err = writer__write_path(w, prof, path, &o->out, &em);
	if (err) {
		if (errmsg_said(&em))
			p_errmsg(&em);
		else
			p_err("cannot write %s: %s", path ? path : "the profile", strerror(-err));
	} else if (path) {
		p_info("wrote %s", path);
	}
	profile__free(prof);
	return err ? 1 : 0;
}

/* Continuous mode's end: the partial last interval like any other, the summary. 0 or 1. */
static int finish_continuous(struct drive *d)
{
	struct allocrun_stats st;
	int err;

	stop__writing(true);
	err = drive_emit(d);
	stop__writing(false);
	if (err) {
		p_err("out of memory");
		return 1;
	}
	allocrun__stats(d->ar, &st);
	report_counters(&st);
	p_info("%" PRIu64 " interval%s in %.1f s", d->ct.intervals, plural_s(d->ct.intervals),
	       (double)(st.t1 - st.t0) / NS_PER_SEC_F);
	sinks__summary(&d->ct, d->o);
	return 0;
}

int cmd_record_alloc(const struct options *o, const struct writer *w)
{
	struct ptab_opts po = { .warn = sym_warn };
	struct symbolizer_opts so = { .warn = sym_warn };
	struct errmsg em = { 0 };
	struct ptab *pt = NULL;
	struct symbolizer *sym = NULL;
	struct allocrun *ar = NULL;
	/* --interval (set by --output-dir and --listen), or --listen with -o */
	struct drive *d = NULL;
	const struct child *ch;
	int ret = 1;

	if (o->output && writer__check_path(o->output, &em)) {
		p_errmsg(&em);
		return 1;
	}
	pt = ptab__new(&po);
	so.ptab = pt;
	sym = pt ? symbolizer__new(&so) : NULL;
	ar = sym ? allocrun__new(o, pt, sym) : NULL;
	if (ar && (o->interval || o->listen))
		d = calloc(1, sizeof(*d));
	if (!ar || ((o->interval || o->listen) && !d)) {
		p_err("out of memory");
		goto out;
	}
	if (d) {
		d->ar = ar;
		d->o = o;
		d->sym = sym;
		ret = drive_open(d, now_ns());
		if (ret)
			goto out;
		ret = 1;
	}
	if (allocrun__start(ar))
		goto out;
	ret = loop(ar, o, d);
	if (!ret)
		ret = o->interval ? finish_continuous(d) : cmd_alloc_report(ar, o, w, o->output);
	ch = allocrun__child(ar);
	if (ch && ch->exited) {
		if (!ret && WIFEXITED(ch->status))
			ret = WEXITSTATUS(ch->status);
		else if (!ret && WIFSIGNALED(ch->status))
			ret = 128 + WTERMSIG(ch->status);
	}
out:
	if (d && d->open)
		sinks__close(&d->ct); /* before the engine: no request is finished after it */
	free(d);
	allocrun__free(ar); /* a command not exited is ended */
	symbolizer__free(sym);
	ptab__free(pt);
	return ret;
}
