// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * sinks.c - the sinks of continuous mode on their own, whatever engine made
 * the profile: the local stores (one per profile kind, all in --output-dir),
 * the Pyroscope pusher, the HTTP endpoint's live profile, and the sinks' own
 * figures for /metrics. Nothing here knows the CPU collector: an engine hands
 * a finished profile and its kind to sinks__emit() (record_sinks.c does it
 * for the CPU collector's intervals). A sink failing (full disk, unreachable
 * server) is logged and counted; the agent keeps sampling. See record.h.
 */
#include "session/record.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
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

/*
 * Each kind's files in --output-dir. The store's names are PREFIX, the stamp,
 * an optional -N, then the extension exactly (store.c, parse_name), so
 * "bpfprof-T.pb.gz" and "bpfprof-T.heap.pb.gz" are disjoint: each store
 * lists, counts and removes only its own.
 */
static const struct {
	const char *ext;	/* with the pprof writer */
	const char *one, *many; /* what a file holds, in messages */
} kinds[SINK_KINDS] = {
	[SINK_CPU] = { ".pb.gz", "profile", "profiles" },
	[SINK_HEAP] = { ".heap.pb.gz", "heap profile", "heap profiles" },
};

unsigned sinks__kinds(const struct options *o)
{
	/* --alloc is an allocation profile instead of the CPU's, --on-cpu both. */
	if (o->alloc_period && o->on_cpu)
		return SINK_BIT(SINK_CPU) | SINK_BIT(SINK_HEAP);
	return o->alloc_period ? SINK_BIT(SINK_HEAP) : SINK_BIT(SINK_CPU);
}

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
 * One store per kind in --output-dir. --keep applies to each; --max-disk is
 * shared half and half when two kinds are written. Heap profiles are pprof
 * only (folded has no room for their four values).
 */
static int open_stores(struct continuous *ct, const struct options *o, unsigned want,
		       const struct writer *pw)
{
	unsigned n = (unsigned)__builtin_popcount(want);

	for (int k = 0; k < SINK_KINDS; k++) {
		struct store_opts so = {
			.dir = o->output_dir,
			.writer = pw ? pw : &writer_folded,
			.ext = pw ? kinds[k].ext : ".folded",
			.keep = o->keep,
			.max_disk = n > 1 ? o->max_disk / n : o->max_disk,
		};
		struct errmsg em = { 0 };

		if (!(want & SINK_BIT(k)))
			continue;
		if (k != SINK_CPU && !pw) {
			p_err("cannot use --output-dir %s: %s need the pprof writer", o->output_dir,
			      kinds[k].many);
			return 1;
		}
		ct->store[k] = store__open(&so, &em);
		if (!ct->store[k]) {
			p_err("cannot use --output-dir %s: %s", o->output_dir,
			      errmsg_said(&em) ? em.msg : strerror(errno));
			if (errmsg_said(&em) && em.hint[0])
				p_hint("%s", em.hint);
			return 2;
		}
	}
	return 0;
}

/*
 * --listen: where the endpoints are, as URLs to paste (the start line says
 * only "Ctrl-C to stop"). From the address --listen names, ADDR defaulted
 * (parsed with the options).
 */
static void say_listening(const struct options *o, bool cpu, bool heap)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	bool v6;

	if (getnameinfo((const struct sockaddr *)&o->listen_addr, o->listen_len, host, sizeof(host),
			port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
		return;
	v6 = o->listen_addr.ss_family == AF_INET6;
	p_info("serving on http://%s%s%s:%s: %s%s/metrics, /healthz", v6 ? "[" : "", host,
	       v6 ? "]" : "", port, cpu ? "/debug/pprof/profile?seconds=N, " : "",
	       heap ? "/debug/pprof/heap, /debug/pprof/allocs, " : "");
}

int sinks__open(struct continuous *ct, const struct options *o)
{
	return sinks__open_kinds(ct, o, sinks__kinds(o));
}

/*
 * The local stores, the Pyroscope pusher, the HTTP endpoint. 2: the user's
 * argument is wrong, 1: something failed.
 */
int sinks__open_kinds(struct continuous *ct, const struct options *o, unsigned want)
{
	const struct writer *pw = writer__find("pprof");
	const struct writer *fmt = pw ? pw : &writer_folded;
	struct errmsg em = { 0 };
	int err;

	ct->kinds = want;
	ct->output_dir = o->output_dir;
	if (o->output_dir) {
		err = open_stores(ct, o, want, pw);
		if (err)
			return err;
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
		if (want & SINK_BIT(SINK_HEAP) && !pw) {
			p_err("cannot use --listen: heap profiles need the pprof writer");
			return 1;
		}
		if (want & SINK_BIT(SINK_CPU))
			ct->live = live__new(fmt, o->freq);
		if (want & SINK_BIT(SINK_HEAP))
			ct->live_heap =
				live__new_heap(pw, o->alloc_period, ct->heap_finish, ct->heap_ctx);
		if ((want & SINK_BIT(SINK_CPU) && !ct->live) ||
		    (want & SINK_BIT(SINK_HEAP) && !ct->live_heap)) {
			p_err("out of memory");
			return 1;
		}
		struct httpd_opts ho = {
			.listen = o->listen,
			.live = ct->live,
			.live_heap = ct->live_heap,
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
		say_listening(o, want & SINK_BIT(SINK_CPU), want & SINK_BIT(SINK_HEAP));
	}
	return 0;
}

void sinks__close(struct continuous *ct)
{
	/* Wakes HTTP requests still waiting, before their threads are joined. */
	if (ct->live)
		live__shutdown(ct->live);
	if (ct->live_heap)
		live__shutdown(ct->live_heap);
	httpd__stop(ct->httpd);
	live__free(ct->live);
	live__free(ct->live_heap);
	ct->live = ct->live_heap = NULL;
	ct->httpd = NULL;
	pusher__stop(ct->pusher, 0, NULL);
	ct->pusher = NULL;
	for (int k = 0; k < SINK_KINDS; k++) {
		store__close(ct->store[k]);
		ct->store[k] = NULL;
	}
}

bool sinks__want_drain(const struct continuous *ct)
{
	return ct->live && live__pending(ct->live);
}

int sinks__live_begin(struct continuous *ct, struct profile **delta)
{
	*delta = NULL;
	if (!sinks__want_drain(ct))
		return 0;
	*delta = profile__new();
	return *delta ? 0 : -ENOMEM;
}

void sinks__live_feed(struct continuous *ct, const struct profile *delta)
{
	if (ct->live)
		live__feed(ct->live, delta, now_ns());
}

int sinks__heap_pending(const struct continuous *ct)
{
	return ct->live_heap ? live__pending(ct->live_heap) : 0;
}

void sinks__heap_feed(struct continuous *ct, const struct profile *delta)
{
	if (ct->live_heap)
		live__feed(ct->live_heap, delta, now_ns());
}

/* A finished profile to the store of its kind and the pusher. */
int sinks__emit(struct continuous *ct, enum sink_kind kind, const struct profile *p,
		uint64_t from_real, uint64_t until_real, char *path, size_t size)
{
	const struct profile_meta *m = profile__meta_c(p);
	int err;

	if (path && size)
		path[0] = '\0';
	/* A heap profile in the CPU's files (or the reverse) would be misread. */
	if ((unsigned)kind >= SINK_KINDS || !(ct->kinds & SINK_BIT(kind)) ||
	    (kind == SINK_HEAP) != !!m->alloc_period)
		return -EINVAL;
	ct->emitted[kind]++;
	if (ct->store[kind]) {
		err = store__write(ct->store[kind], p, from_real, path, size);
		if (err)
			p_warn_rl(&ct->write_rl, 60, "writing the interval %s to %s failed: %s",
				  kinds[kind].one, ct->output_dir, strerror(-err));
	}
	if (ct->pusher &&
	    (kind == SINK_HEAP ? profile__nr_samples(p) != 0
			       : profile__total(p) || profile__total_offcpu(p)) &&
	    (err = pusher__submit_kind(ct->pusher, kind == SINK_HEAP ? PUSH_HEAP : PUSH_CPU, p,
				       from_real, until_real)))
		p_warn_rl(&ct->write_rl, 60, "cannot queue the interval for --push: %s",
			  strerror(-err));
	return 0;
}

/* The stores' figures, summed over the kinds. */
static void stores_stats(const struct continuous *ct, struct store_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int k = 0; k < SINK_KINDS; k++) {
		struct store_stats s;

		if (!ct->store[k])
			continue;
		store__stats(ct->store[k], &s);
		sum->written += s.written;
		sum->errors += s.errors;
		sum->pruned += s.pruned;
		sum->bytes += s.bytes;
		sum->files += s.files;
		if (s.last_err)
			sum->last_err = s.last_err;
	}
}

static bool any_store(const struct continuous *ct)
{
	for (int k = 0; k < SINK_KINDS; k++)
		if (ct->store[k])
			return true;
	return false;
}

static void metrics_from_stores(struct metrics_snapshot *m, const struct continuous *ct)
{
	struct store_stats sst;

	stores_stats(ct, &sst);
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

void sinks__publish(struct continuous *ct, struct metrics_snapshot *m, struct symbolizer *sym,
		    struct debuginfod *dbgd, struct labels *labels)
{
	m->intervals = ct->intervals;
	if (any_store(ct))
		metrics_from_stores(m, ct);
	if (ct->pusher)
		metrics_from_pusher(m, ct->pusher);
	if (dbgd)
		metrics_from_debuginfod(m, dbgd);
	if (sym) {
		size_t procs, files;

		symbolizer__cached(sym, &procs, &files);
		m->procs_cached = procs;
		m->files_cached = files;
	}
	if (labels)
		m->labels_cached = labels__count(labels);
	metrics__publish(&ct->metrics, m);
}

void sinks__status(struct continuous *ct, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (any_store(ct)) {
		struct store_stats ss;

		stores_stats(ct, &ss);
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
	if (!any_store(ct) && !ct->pusher && n < size)
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
		p_info("pushed %" PRIu64 " profile%s to %s, %" PRIu64
		       " attempt%s failed%s, %" PRIu64 " dropped",
		       ps.sent, plural_s(ps.sent), url, ps.failed, plural_s(ps.failed), large,
		       ps.dropped);
	}
	for (int k = 0; k < SINK_KINDS; k++) {
		struct store_stats ss;

		if (!ct->store[k])
			continue;
		store__stats(ct->store[k], &ss);
		p_info("%" PRIu64 " %s written to %s (%u kept, %" PRIu64 " bytes), %" PRIu64
		       " failed",
		       ss.written, ss.written == 1 ? kinds[k].one : kinds[k].many, o->output_dir,
		       ss.files, ss.bytes, ss.errors);
	}
}
