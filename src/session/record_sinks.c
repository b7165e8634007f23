// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record_sinks.c - continuous mode of "bpfprof record": the CPU collector's
 * side of the sinks (sinks.c). Its drains (also handed to waiting HTTP
 * requests), its interval bookkeeping (stamped, then sinks__emit() as
 * SINK_CPU), and its counters for the metrics the endpoint serves. See
 * record.h.
 */
#include "session/record.h"

#include <errno.h>
#include <inttypes.h>

#include "base/profile.h"
#include "base/util.h"
#include "session/allocrun.h"

/*
 * One drain. While /debug/pprof/profile requests wait, the drain goes into a
 * separate delta first, so it can be handed to them too; otherwise straight
 * into the run's (or interval's) profile.
 */
int sinks__drain(struct continuous *ct, struct record_ctx *rc, struct collector *col)
{
	struct profile *main_prof = rc->prof, *delta;
	int err;

	err = sinks__live_begin(ct, &delta);
	if (err)
		return err;
	if (delta) {
		profile__meta(delta)->offcpu = rc->o->offcpu; /* both values, even if none came */
		rc->prof = delta;
	}
	err = collector__drain(col, record__known_sample, record__want_sample, record__on_sample,
			       rc);
	rc->prof = main_prof;
	if (delta && !err)
		err = profile__merge(main_prof, delta);
	sinks__live_feed(ct, delta);
	profile__free(delta);
	return err;
}

/*
 * A sink failing (full disk, unreachable server) is logged and counted; the
 * agent keeps sampling.
 */
int sinks__finish_interval(struct continuous *ct, struct record_ctx *rc, struct collector *col,
			   uint64_t now_mono)
{
	struct collector_stats st;
	struct profile *next;
	char path[4096] = "";
	uint64_t lost;

	collector__stats(col, &st);
	lost = record__lost(&st) - ct->lost_at_start;
	record__fill_meta(rc->prof, rc, ct->start_real, now_mono - ct->start_mono, lost);
	profile__meta(rc->prof)->offcpu_lost = record__offcpu_lost(&st) - ct->offcpu_lost_at_start;
	profile__sort(rc->prof);
	sinks__emit(ct, SINK_CPU, rc->prof, ct->start_real,
		    ct->start_real + (now_mono - ct->start_mono), path, sizeof(path));
	p_debug("interval %" PRIu64 ": %" PRIu64 " samples, %" PRIu64 " lost, %zu stacks, "
		"drain %.1f ms%s%s",
		ct->intervals, profile__total(rc->prof), lost, profile__nr_stacks(rc->prof),
		st.drain_ns / NS_PER_MS_F, path[0] ? ", wrote " : "", path);
	next = profile__new();
	if (!next)
		return -ENOMEM;
	profile__free(rc->prof);
	rc->prof = next;
	ct->intervals++;
	ct->start_mono = now_mono;
	/* The next one starts at this one's end: the edge's wall-clock time, not
	 * the time now (after the write, the push's queueing and, with --alloc
	 * --on-cpu, the heap interval's take: the files would leave a gap). */
	ct->start_real = realtime_ns() - (now_ns() - now_mono);
	ct->lost_at_start = record__lost(&st);
	ct->offcpu_lost_at_start = record__offcpu_lost(&st);
	return 0;
}

static void metrics_from_collector(struct metrics_snapshot *m, const struct collector_stats *st)
{
	/* The counters the endpoint serves as the collector keeps them. */
	const struct {
		uint64_t *to;
		int stat; /* STAT_* */
	} copy[] = {
		{ &m->samples, STAT_SAMPLES },
		{ &m->lost_stacks_full, STAT_LOST_STACKS_FULL },
		{ &m->lost_counts_full, STAT_LOST_COUNTS_FULL },
		{ &m->lost_stack_err, STAT_LOST_STACK_ERR },
		{ &m->lost_other, STAT_LOST_NO_MAP },
		{ &m->idle, STAT_IDLE },
		{ &m->filtered, STAT_FILTERED },
		{ &m->ustack_errors, STAT_USTACK_ERR },
		{ &m->notices_lost, STAT_NOTIFY_LOST },
		{ &m->py_ts_cached, STAT_PY_TS_CACHED },
		{ &m->py_ts_tls, STAT_PY_TS_TLS },
		{ &m->py_ts_search, STAT_PY_TS_SEARCH },
		{ &m->py_ts_miss, STAT_PY_TS_MISS },
		{ &m->unwind_fp_fallbacks, STAT_UNWIND_FP_FALLBACK },
		{ &m->jvm_frames, STAT_UNWIND_JVM_FRAMES },
		{ &m->jvm_leaf_guesses, STAT_UNWIND_JVM_LEAF_GUESS },
		{ &m->jvm_ends[0], STAT_UNWIND_JVM_STUB },
		{ &m->jvm_ends[1], STAT_UNWIND_ERR_JVM_BLOB },
		{ &m->jvm_ends[2], STAT_UNWIND_ERR_JVM_FRAME },
		{ &m->jvm_ends[3], STAT_UNWIND_ERR_JVM_RA },
		{ &m->jvm_ends[4], STAT_UNWIND_ERR_JVM_INTERP },
		{ &m->jvm_ends[5], STAT_UNWIND_ERR_JVM_READ },
		{ &m->jvm_ends[6], STAT_UNWIND_ERR_JVM_BUDGET },
		{ &m->offcpu_counted, STAT_OFFCPU_KEPT },
		{ &m->offcpu_counted_ns, STAT_OFFCPU_KEPT_NS },
		{ &m->offcpu_short, STAT_OFFCPU_SHORT },
	};

	for (size_t i = 0; i < ARRAY_SIZE(copy); i++)
		*copy[i].to = st->v[copy[i].stat];
	m->lost_throttled = st->not_taken_throttled;
	m->lost_timer_late = st->not_taken_late;
	/* The rate reached between the last two measurements (the first: since
	 * the start); none before the first, nor without busy time. */
	m->effective_hz = -1;
	if (st->acct.at_ns) {
		struct sampling_window w;

		sampling__window(st->acct_prev.at_ns ? &st->acct_prev : NULL, &st->acct, &w);
		m->effective_hz = w.rate_hz;
	}
	m->drains = st->drains;
	m->drain_ns_last = st->drain_ns;
	m->drain_ns_total = st->drain_ns_total;
	m->offcpu_lost = record__offcpu_lost(st);
	m->offcpu_evicted = st->offcpu_evicted;
	m->offcpu_blocked_now = st->offcpu_pending;
}

/* The endpoint's figures: the collector's here, the rest from the sinks (sinks.c). */
void sinks__publish_metrics(struct continuous *ct, struct record_ctx *rc, struct collector *col,
			    struct allocrun *ar)
{
	struct metrics_snapshot m = { 0 };
	struct collector_stats st;

	collector__stats(col, &st);
	/* Samples not taken are said at most once a minute, with the figures
	 * since the last warning; looked at once per measurement. */
	if (st.acct.at_ns != ct->not_taken_seen) {
		unsigned long suppressed;
		struct ratelimit probe = ct->throttle_rl;

		ct->not_taken_seen = st.acct.at_ns;
		if (ratelimit__pass(&probe, 60, &suppressed) &&
		    record__warn_not_taken(&ct->throttle_at, &st, rc->o->freq)) {
			ct->throttle_rl = probe;
			ct->throttle_at = st;
		}
	}
	metrics_from_collector(&m, &st);
	m.last_drain_unix = realtime_ns() / NS_PER_SEC;
	m.last_drain_ns = now_ns();
	m.freq = rc->o->freq;
	m.offcpu = rc->o->offcpu;
	if (ar) { /* --alloc --on-cpu: the allocator's lines beside the CPU's */
		m.alloc = true;
		allocrun__metrics(ar, &m.am);
	}
	sinks__publish(ct, &m, rc->sym, rc->dbgd, rc->labels);
}
