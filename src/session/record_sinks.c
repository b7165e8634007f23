// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * record_sinks.c - continuous mode of "bpfprof record": where each interval
 * goes (the local store, the Pyroscope pusher, the HTTP endpoint), the
 * interval bookkeeping, and the metrics the endpoint serves. A sink failing
 * (full disk, unreachable server) is logged and counted; the agent keeps
 * sampling. See record.h.
 */
#include "session/record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/httpd.h"
#include "agent/live.h"
#include "agent/push.h"
#include "agent/store.h"
#include "base/errmsg.h"
#include "base/profile.h"
#include "base/util.h"
#include "format/writer.h"
#include "proc/labels.h"
#include "sym/debuginfod.h"
#include "sym/symbolizer.h"

/* Warnings of the agent's threads (HTTP, push), already rate-limited there. */
static void on_agent_warn(void *ctx, const char *msg)
{
	p_warn("%s", msg);
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

/*
 * The local store, the Pyroscope pusher, the HTTP endpoint. 2: the user's
 * argument is wrong, 1: something failed.
 */
int sinks__open(struct continuous *ct, const struct options *o)
{
	const struct writer *pw = writer__find("pprof");
	const struct writer *fmt = pw ? pw : &writer_folded;
	struct errmsg em = { 0 };
	int err;

	if (o->output_dir) {
		struct store_opts so = {
			.dir = o->output_dir,
			.writer = fmt,
			.ext = pw ? ".pb.gz" : ".folded",
			.keep = o->keep,
			.max_disk = o->max_disk,
		};

		ct->store = store__open(&so, &em);
		if (!ct->store) {
			p_err("cannot use --output-dir %s: %s", o->output_dir,
			      errmsg_said(&em) ? em.msg : strerror(errno));
			if (errmsg_said(&em) && em.hint[0])
				p_hint("%s", em.hint);
			return 2;
		}
	}
	if (o->push_url) {
		struct pusher_opts po = {
			.url = o->push_url,
			.app = o->app_name ? o->app_name : "bpfprof",
			.freq = o->freq,
			.writer = fmt,
			.warn = on_agent_warn,
		};
		char *token = NULL;

		err = read_token(o->token_file, &token);
		if (err) {
			p_err("cannot read --token-file %s: %s", o->token_file, strerror(-err));
			return 2;
		}
		po.token = token;
		ct->pusher = pusher__start(&po, &em);
		free(token);
		if (!ct->pusher) {
			p_err("--push: %s", em.msg);
			return 1;
		}
	}
	if (o->listen) {
		ct->live = live__new(fmt, o->freq);
		if (!ct->live) {
			p_err("out of memory");
			return 1;
		}
		struct httpd_opts ho = {
			.listen = o->listen,
			.live = ct->live,
			.metrics = &ct->metrics,
			.content_type =
				pw ? "application/octet-stream" : "text/plain; charset=utf-8",
			.warn = on_agent_warn,
		};

		ct->httpd = httpd__start(&ho, &em);
		if (!ct->httpd) {
			p_err("--listen: %s", em.msg);
			return 2;
		}
	}
	return 0;
}

void sinks__close(struct continuous *ct)
{
	if (ct->live)
		live__shutdown(ct->live); /* wakes HTTP requests still waiting */
	httpd__stop(ct->httpd);
	live__free(ct->live);
	pusher__stop(ct->pusher, 0, NULL);
	store__close(ct->store);
}

bool sinks__want_drain(const struct continuous *ct)
{
	return ct->live && live__pending(ct->live);
}

/*
 * One drain. While /debug/pprof/profile requests wait, the drain goes into a
 * separate delta first, so it can be handed to them too; otherwise straight
 * into the run's (or interval's) profile.
 */
int sinks__drain(struct continuous *ct, struct record_ctx *rc, struct collector *col)
{
	struct profile *main_prof = rc->prof, *delta = NULL;
	int err;

	if (ct->live && live__pending(ct->live)) {
		delta = profile__new();
		if (!delta)
			return -ENOMEM;
		profile__meta(delta)->offcpu = rc->o->offcpu; /* both values, even if none came */
		rc->prof = delta;
	}
	err = collector__drain(col, record__known_sample, record__want_sample, record__on_sample,
			       rc);
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
	int err;

	collector__stats(col, &st);
	lost = record__lost(&st) - ct->lost_at_start;
	record__fill_meta(rc->prof, rc, ct->start_real, now_mono - ct->start_mono, lost);
	profile__meta(rc->prof)->offcpu_lost = record__offcpu_lost(&st) - ct->offcpu_lost_at_start;
	profile__sort(rc->prof);
	if (ct->store) {
		err = store__write(ct->store, rc->prof, ct->start_real, path, sizeof(path));
		if (err)
			p_warn_rl(&ct->write_rl, 60,
				  "writing the interval profile to %s failed: %s",
				  rc->o->output_dir, strerror(-err));
	}
	if (ct->pusher && (profile__total(rc->prof) || profile__total_offcpu(rc->prof)) &&
	    pusher__submit(ct->pusher, rc->prof, ct->start_real,
			   ct->start_real + (now_mono - ct->start_mono)))
		p_warn_rl(&ct->write_rl, 60, "cannot queue the interval for --push: out of memory");
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
	ct->start_real = realtime_ns();
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

static void metrics_from_store(struct metrics_snapshot *m, struct store *store)
{
	struct store_stats sst;

	store__stats(store, &sst);
	m->files_written = sst.written;
	m->file_errors = sst.errors;
	m->files_pruned = sst.pruned;
	m->files_kept = sst.files;
	m->store_bytes = sst.bytes;
}

static void metrics_from_pusher(struct metrics_snapshot *m, struct pusher *pusher)
{
	struct pusher_stats ps;

	pusher__stats(pusher, &ps);
	m->push_sent = ps.sent;
	m->push_failed = ps.failed;
	m->push_too_large = ps.too_large;
	m->push_dropped = ps.dropped;
	m->push_queued = ps.queued;
}

static void metrics_from_debuginfod(struct metrics_snapshot *m, struct debuginfod *dbgd)
{
	struct debuginfod_stats ds;

	debuginfod__stats(dbgd, &ds);
	m->dbgd_fetched = ds.fetched;
	m->dbgd_cache_hits = ds.cache_hits;
	m->dbgd_not_found = ds.not_found;
	m->dbgd_failed = ds.failed;
	m->dbgd_rejected = ds.rejected;
	m->dbgd_pending = ds.pending;
}

/* The endpoint's figures, one function per source: collector, store, push, debuginfod. */
void sinks__publish_metrics(struct continuous *ct, struct record_ctx *rc, struct collector *col)
{
	struct metrics_snapshot m = { 0 };
	struct collector_stats st;
	size_t procs, files;

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
	m.intervals = ct->intervals;
	m.freq = rc->o->freq;
	m.offcpu = rc->o->offcpu;
	if (ct->store)
		metrics_from_store(&m, ct->store);
	if (ct->pusher)
		metrics_from_pusher(&m, ct->pusher);
	if (rc->dbgd)
		metrics_from_debuginfod(&m, rc->dbgd);
	symbolizer__cached(rc->sym, &procs, &files);
	m.procs_cached = procs;
	m.files_cached = files;
	m.labels_cached = labels__count(rc->labels);
	metrics__publish(&ct->metrics, &m);
}

void sinks__status(struct continuous *ct, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (ct->store) {
		struct store_stats ss;

		store__stats(ct->store, &ss);
		n += snprintf(buf + n, size - n, ", %" PRIu64 " profile%s written", ss.written,
			      ss.written == 1 ? "" : "s");
		if (ss.errors && n < size)
			n += snprintf(buf + n, size - n, " (%" PRIu64 " failed)", ss.errors);
	}
	if (ct->pusher && n < size) {
		struct pusher_stats ps;

		pusher__stats(ct->pusher, &ps);
		n += snprintf(buf + n, size - n, ", %" PRIu64 " pushed", ps.sent);
		if ((ps.failed || ps.dropped) && n < size)
			n += snprintf(buf + n, size - n,
				      " (%" PRIu64 " failed, %" PRIu64 " dropped)", ps.failed,
				      ps.dropped);
	}
	if (!ct->store && !ct->pusher && n < size)
		snprintf(buf + n, size - n, ", %" PRIu64 " interval%s", ct->intervals,
			 ct->intervals == 1 ? "" : "s");
}

void sinks__summary(struct continuous *ct, const struct options *o)
{
	if (ct->pusher) {
		struct pusher_stats ps;
		char url[1024], large[64] = "";

		pusher__stop(ct->pusher, 5000, &ps); /* give the last interval a chance */
		ct->pusher = NULL;
		pusher__shown_url(o->push_url, url, sizeof(url));
		if (ps.too_large)
			snprintf(large, sizeof(large), " (%" PRIu64 " with a response too large)",
				 ps.too_large);
		p_info("pushed %" PRIu64 " profiles to %s, %" PRIu64 " attempts failed%s, %" PRIu64
		       " dropped",
		       ps.sent, url, ps.failed, large, ps.dropped);
	}
	if (ct->store) {
		struct store_stats ss;

		store__stats(ct->store, &ss);
		p_info("%" PRIu64 " profiles written to %s (%u kept, %" PRIu64 " bytes), %" PRIu64
		       " failed",
		       ss.written, o->output_dir, ss.files, ss.bytes, ss.errors);
	}
}
