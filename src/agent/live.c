// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* live.c - N-second profiles on demand; see live.h. */
#include "agent/live.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

/*
 * A heap live's profile for seconds = 0, built once and encoded by each of
 * its waiters (read only once built); freed by whoever drops the last
 * reference (under the live's lock; the free itself outside it).
 */
struct live_build {
	struct profile *prof;
	uint64_t mono; /* when it was built (the feed's clock) */
	int refs;      /* the live's while it is l->last, and each waiter's */
};

struct live_req {
	bool used, done;
	bool finishing; /* the main thread completes it outside the lock */
	bool fed;	/* a delta merged: the span begins at the first one's start */
	int err;
	unsigned seconds;
	enum view view;
	uint64_t start_mono, deadline, start_real;
	struct profile *prof;	   /* its own: the fed deltas, completed */
	struct live_build *shared; /* or, seconds = 0 of a heap live, a build it shares */
};

struct live {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const struct writer *w;
	uint32_t freq;
	uint64_t alloc_period; /* a heap live; 0: CPU */
	live_finish_fn finish;
	void *finish_ctx;
	bool shutdown;
	/* A heap live's builds: the last one's time (a finisher call, even one
	 * that failed), and the last seconds = 0 build, served to the requests
	 * that come within LIVE_HEAP_GAP_NS of it. */
	bool built;
	uint64_t built_mono;
	struct live_build *last;
	struct live_req req[LIVE_MAX_REQUESTS];
};

struct live *live__new(const struct writer *w, uint32_t freq)
{
	struct live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->w = w;
	l->freq = freq;
	return l;
}

struct live *live__new_heap(const struct writer *w, uint64_t alloc_period, live_finish_fn finish,
			    void *ctx)
{
	struct live *l = live__new(w, 0);

	if (!l)
		return NULL;
	l->alloc_period = alloc_period ? alloc_period : 1;
	l->finish = finish;
	l->finish_ctx = ctx;
	return l;
}

bool live__is_heap(const struct live *l)
{
	return l && l->alloc_period;
}

/* Drops a reference, under the lock: b when that was the last (free it outside the lock). */
static struct live_build *build_drop(struct live_build *b)
{
	return b && !--b->refs ? b : NULL;
}

static void build_free(struct live_build *b)
{
	if (!b)
		return;
	profile__free(b->prof);
	free(b);
}

void live__free(struct live *l)
{
	if (!l)
		return;
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		profile__free(l->req[i].prof);
		build_free(build_drop(l->req[i].shared));
	}
	build_free(build_drop(l->last));
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* What every completed profile says: the request's span, the host, the kind. */
static void stamp(const struct live *l, struct profile_meta *m, const struct live_req *r,
		  uint64_t now_mono)
{
	m->freq_hz = l->freq;
	m->start_ns = r->start_real;
	m->duration_ns = now_mono - r->start_mono;
	m->alloc_period = l->alloc_period;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
}

/*
 * Stamps and finishes r on the main thread, without the lock: its waiter
 * leaves r alone while r->finishing. Sets r->err; the waiter encodes.
 */
static void complete(struct live *l, struct live_req *r, uint64_t now_mono)
{
	stamp(l, profile__meta(r->prof), r, now_mono);
	/* The finisher may restamp (seconds = 0: since the engine started). */
	r->err = l->finish ? l->finish(l->finish_ctx, r->prof, r->seconds) : 0;
	if (r->err)
		return;
	/* Whatever the finisher merged in, the live's period. */
	profile__meta(r->prof)->alloc_period = l->alloc_period;
	profile__sort(r->prof);
}

/* The seconds = 0 profile of a heap live, for every request due now (first: one of them). */
static struct live_build *build(struct live *l, const struct live_req *first, uint64_t now_mono,
				int *err)
{
	struct live_build *b = calloc(1, sizeof(*b));

	*err = -ENOMEM;
	if (!b || !(b->prof = profile__new())) {
		free(b);
		return NULL;
	}
	stamp(l, profile__meta(b->prof), first, now_mono);
	*err = l->finish ? l->finish(l->finish_ctx, b->prof, 0) : 0;
	if (*err) {
		build_free(b);
		return NULL;
	}
	profile__meta(b->prof)->alloc_period = l->alloc_period;
	profile__sort(b->prof);
	b->mono = now_mono;
	return b;
}

/* The writer's bytes of p, on the waiter's thread. 0 or -errno. */
static int encode(const struct live *l, const struct profile *p, enum view view, char **body,
		  size_t *len)
{
	struct out_opts oo = { .view = view };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int err;

	if (!f)
		return -ENOMEM;
	err = l->w->write(p, f, view == VIEW_AUTO ? NULL : &oo);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	*body = buf;
	*len = n;
	return 0;
}

int live__collect(struct live *l, unsigned seconds, char **body, size_t *len)
{
	return live__collect_or_cancel(l, seconds, VIEW_AUTO, NULL, body, len);
}

static bool cancelled(const bool *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE);
}

void live__wake(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

int live__collect_or_cancel(struct live *l, unsigned seconds, enum view view, const bool *cancel,
			    char **body, size_t *len)
{
	struct live_req *r = NULL;
	struct live_build *gone;
	struct profile *prof;
	int err;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < LIVE_MAX_REQUESTS && !r; i++)
		if (!l->req[i].used)
			r = &l->req[i];
	if (l->shutdown || !r) {
		pthread_mutex_unlock(&l->lock);
		return l->shutdown ? -ESHUTDOWN : -EBUSY;
	}
	memset(r, 0, sizeof(*r));
	r->prof = profile__new();
	if (!r->prof) {
		pthread_mutex_unlock(&l->lock);
		return -ENOMEM;
	}
	r->used = true;
	r->seconds = seconds;
	r->view = view;
	r->start_mono = now_ns();
	r->start_real = realtime_ns();
	r->deadline = r->start_mono + (uint64_t)seconds * NS_PER_SEC;
	while (!r->done && !l->shutdown && !cancelled(cancel))
		pthread_cond_wait(&l->cond, &l->lock);
	while (r->finishing) /* the main thread holds r's profile: wait for it */
		pthread_cond_wait(&l->cond, &l->lock);
	err = r->done ? r->err : l->shutdown ? -ESHUTDOWN : -ECANCELED;
	if (!err && cancelled(cancel)) /* its client is gone: nobody reads the bytes */
		err = -ECANCELED;
	if (!err) {
		/* Done: the main thread no longer looks at r (still used: the
		 * slot stays taken, at most LIVE_MAX_REQUESTS encodes at once). */
		const struct profile *p = r->shared ? r->shared->prof : r->prof;

		pthread_mutex_unlock(&l->lock);
		err = encode(l, p, view, body, len);
		pthread_mutex_lock(&l->lock);
	}
	prof = r->prof;
	r->prof = NULL;
	gone = build_drop(r->shared);
	r->shared = NULL;
	r->used = false;
	pthread_mutex_unlock(&l->lock);
	profile__free(prof);
	build_free(gone);
	return err;
}

/*
 * Under the lock: which of the due requests of a heap live are completed
 * now, into due (returned: how many; finishing set), and which get the last
 * build at once (done set, *woke). One build per feed, none within
 * LIVE_HEAP_GAP_NS of the last: a client asking again and again costs the
 * main loop at most two builds a second; the others wait for the next feed.
 */
static int heap_pick(struct live *l, struct live_req **due, int ndue, uint64_t now_mono, bool *woke,
		     struct live_build **stale)
{
	bool fresh = l->last && now_mono - l->last->mono < LIVE_HEAP_GAP_NS;
	bool may_build = !l->built || now_mono - l->built_mono >= LIVE_HEAP_GAP_NS;
	struct live_req *first = NULL;
	int n = 0;

	if (l->last && !fresh) { /* no longer served: not kept for the run */
		*stale = build_drop(l->last);
		l->last = NULL;
	}
	for (int i = 0; i < ndue; i++) {
		struct live_req *r = due[i];

		if (!r->seconds && fresh) {
			r->shared = l->last;
			l->last->refs++;
			r->done = true;
			*woke = true;
		} else if (may_build && (!first || r->deadline < first->deadline)) {
			first = r;
		}
	}
	if (!first)
		return 0;
	for (int i = 0; i < ndue; i++) /* seconds = 0: all of them share the build */
		if (due[i] == first || (!first->seconds && !due[i]->seconds && !due[i]->done))
			due[n++] = due[i];
	for (int i = 0; i < n; i++)
		due[i]->finishing = true;
	l->built = true;
	l->built_mono = now_mono;
	return n;
}

void live__feed(struct live *l, const struct profile *delta, uint64_t now_mono)
{
	struct live_req *due[LIVE_MAX_REQUESTS];
	struct live_build *b = NULL, *old = NULL, *stale = NULL;
	int ndue = 0, err = 0;
	bool woke = false, shared;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		struct live_req *r = &l->req[i];

		if (!r->used || r->done || r->finishing)
			continue;
		/* A heap request without seconds gets the engine's totals instead. */
		if (delta && (r->seconds || !l->alloc_period)) {
			const struct profile_meta *dm = profile__meta_c(delta);
			struct profile_meta *m = profile__meta(r->prof);

			/* The window is what was counted: it begins where its first
			 * delta does (a main loop slow to feed would otherwise
			 * stretch its duration over time no delta covered). */
			if (!r->fed && dm->start_ns && dm->duration_ns &&
			    dm->duration_ns <= now_mono) {
				r->start_real = dm->start_ns;
				r->start_mono = now_mono - dm->duration_ns;
				r->deadline = r->start_mono + (uint64_t)r->seconds * NS_PER_SEC;
			}
			r->fed = true;
			if (profile__merge(r->prof, delta))
				r->err = -ENOMEM;
			/* profile__merge leaves the meta: the window's are the sums. */
			m->lost += dm->lost;
			m->alloc_on_ns += dm->alloc_on_ns;
		}
		if (delta && profile__meta_c(delta)->offcpu) /* --off-cpu: both values */
			profile__meta(r->prof)->offcpu = true;
		if (r->err) {
			r->done = true;
			woke = true;
		} else if (now_mono >= r->deadline) {
			due[ndue++] = r;
		}
	}
	if (l->alloc_period) {
		ndue = heap_pick(l, due, ndue, now_mono, &woke, &stale);
	} else {
		for (int i = 0; i < ndue; i++)
			due[i]->finishing = true;
	}
	if (woke)
		pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	build_free(stale);
	if (!ndue)
		return;
	shared = l->alloc_period && !due[0]->seconds;
	if (shared)
		b = build(l, due[0], now_mono, &err);
	else
		for (int i = 0; i < ndue; i++)
			complete(l, due[i], now_mono);
	pthread_mutex_lock(&l->lock);
	if (b) {
		old = build_drop(l->last);
		l->last = b;
		b->refs = 1;
	}
	for (int i = 0; i < ndue; i++) {
		if (shared && b) {
			due[i]->shared = b;
			b->refs++;
		} else if (shared) {
			due[i]->err = err;
		}
		due[i]->finishing = false;
		due[i]->done = true;
	}
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	build_free(old);
}

int live__pending(struct live *l)
{
	int n = 0;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++)
		n += l->req[i].used && !l->req[i].done;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void live__shutdown(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	l->shutdown = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}
