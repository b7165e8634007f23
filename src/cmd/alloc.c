// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * alloc.c - "bpfprof --alloc": memory profiles from the C library's
 * allocator and the Go runtime's sampled allocations. The engine (targets,
 * probes, sampling weights, -a's guard) is session/allocrun.h; this file
 * makes the process table and the symbolizer, runs the engine until the
 * targets end, -d or a stop request, writes the one profile as the
 * record's -o/-f say (pprof with Go's four heap sample types, the other
 * formats through a --view) and says what the counters tell.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/log.h"
#include "base/util.h"
#include "cmd/cmd.h"
#include "format/writer.h"
#include "session/allocrun.h"
#include "session/stop.h"

static void sym_warn(void *ctx, const char *msg)
{
	(void)ctx;
	p_warn("%s", msg);
}

/* Until the engine's next turn is due, stop requests and -d checked. */
static void loop(struct allocrun *ar, const struct options *o)
{
	uint64_t end = 0, start = now_ns();

	if (o->duration > 0)
		end = start + (uint64_t)(o->duration * NS_PER_SEC_F);
	for (;;) {
		uint64_t now = now_ns(), due = allocrun__tick(ar, now), after = now_ns();

		if (stop__requested()) {
			p_info("stopping on %s", strsignal(stop__requested()));
			break;
		}
		if (end && now >= end)
			break;
		if (allocrun__targets_gone(ar))
			break;
		poll(NULL, 0, due > after ? (int)((due - after + NS_PER_MS - 1) / NS_PER_MS) : 0);
	}
	allocrun__stop(ar);
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

/* What the counters say about the run. */
static void report_counters(const struct allocrun_stats *st)
{
	const uint64_t *c = st->c;

	p_info("%" PRIu64 " allocation calls, %" PRIu64 " frees; %" PRIu64
	       " allocations sampled (one every %" PRIu64 " bytes on average), %" PRIu64
	       " of them freed",
	       c[ALLOC_C_CALLS], c[ALLOC_C_FREES], c[ALLOC_C_RECORDED], st->period,
	       c[ALLOC_C_FREED]);
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
		       c[ALLOC_C_GO_SAMPLES], c[ALLOC_C_GO_FREES], c[ALLOC_C_GO_FREED]);
		if (!c[ALLOC_C_GO_SAMPLES] && !st->go_off_warned)
			p_warn("the Go runtime sampled no allocation: a Go program samples only "
			       "when it links runtime.MemProfile (imports runtime/pprof or "
			       "net/http/pprof), else its runtime.MemProfileRate is 0; or it "
			       "allocated less than its rate (%d bytes by default)",
			       ALLOCRUN_GO_DEFAULT_RATE);
	}
	if (st->all)
		report_guard(st);
}

/* The profile taken, said, written. 0 or 1 (said). */
static int report(struct allocrun *ar, const struct options *o, const struct writer *w)
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
	err = writer__write_path(w, prof, o->output, &o->out, &em);
	if (err) {
		if (errmsg_said(&em))
			p_errmsg(&em);
		else
			p_err("cannot write %s: %s", o->output ? o->output : "the profile",
			      strerror(-err));
	} else if (o->output) {
		p_info("wrote %s", o->output);
	}
	profile__free(prof);
	return err ? 1 : 0;
}

int cmd_record_alloc(const struct options *o, const struct writer *w)
{
	struct ptab_opts po = { .warn = sym_warn };
	struct symbolizer_opts so = { .warn = sym_warn };
	struct errmsg em = { 0 };
	struct ptab *pt = NULL;
	struct symbolizer *sym = NULL;
	struct allocrun *ar = NULL;
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
	if (!ar) {
		p_err("out of memory");
		goto out;
	}
	if (allocrun__start(ar))
		goto out;
	loop(ar, o);
	ret = report(ar, o, w);
	ch = allocrun__child(ar);
	if (ch && ch->exited) {
		if (!ret && WIFEXITED(ch->status))
			ret = WEXITSTATUS(ch->status);
		else if (!ret && WIFSIGNALED(ch->status))
			ret = 128 + WTERMSIG(ch->status);
	}
out:
	allocrun__free(ar); /* a command not exited is ended */
	symbolizer__free(sym);
	ptab__free(pt);
	return ret;
}
