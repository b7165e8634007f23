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

struct live_req {
	bool used, done;
	bool finishing; /* the main thread completes it outside the lock */
	int err;
	unsigned seconds;
	enum view view;
	uint64_t start_mono, deadline, start_real;
	struct profile *prof;
	char *body;
	size_t len;
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

void live__free(struct live *l)
{
	if (!l)
		return;
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		profile__free(l->req[i].prof);
		free(l->req[i].body);
	}
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/*
 * Stamps, finishes and encodes r on the main thread, without the lock: its
 * waiter leaves r alone while r->finishing. Sets r->err, r->body.
 */
static void complete(struct live *l, struct live_req *r, uint64_t now_mono)
{
	struct profile_meta *m = profile__meta(r->prof);
	struct out_opts oo = { .view = r->view };
	FILE *f;

	m->freq_hz = l->freq;
	m->start_ns = r->start_real;
	m->duration_ns = now_mono - r->start_mono;
	m->alloc_period = l->alloc_period;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	/* The finisher may restamp (seconds = 0: since the engine started). */
	r->err = l->finish ? l->finish(l->finish_ctx, r->prof, r->seconds) : 0;
	if (r->err)
		goto out;
	m->alloc_period = l->alloc_period; /* whatever the finisher merged in */
	profile__sort(r->prof);
	f = open_memstream(&r->body, &r->len);
	if (!f) {
		r->err = -ENOMEM;
	} else {
		r->err = l->w->write(r->prof, f, r->view == VIEW_AUTO ? NULL : &oo);
		if (fclose(f) && !r->err)
			r->err = -ENOMEM;
	}
out:
	profile__free(r->prof);
	r->prof = NULL;
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
	if (!err) {
		*body = r->body;
		*len = r->len;
		r->body = NULL;
	}
	free(r->body);
	r->body = NULL;
	profile__free(r->prof);
	r->prof = NULL;
	r->used = false;
	pthread_mutex_unlock(&l->lock);
	return err;
}

void live__feed(struct live *l, const struct profile *delta, uint64_t now_mono)
{
	struct live_req *due[LIVE_MAX_REQUESTS];
	int ndue = 0;
	bool woke = false;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		struct live_req *r = &l->req[i];

		if (!r->used || r->done || r->finishing)
			continue;
		/* A heap request without seconds gets the engine's totals instead. */
		if (delta && (r->seconds || !l->alloc_period) && profile__merge(r->prof, delta))
			r->err = -ENOMEM;
		if (delta && profile__meta_c(delta)->offcpu) /* --off-cpu: both values */
			profile__meta(r->prof)->offcpu = true;
		if (r->err) {
			r->done = true;
			woke = true;
		} else if (now_mono >= r->deadline) {
			r->finishing = true;
			due[ndue++] = r;
		}
	}
	if (woke)
		pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (!ndue)
		return;
	for (int i = 0; i < ndue; i++)
		complete(l, due[i], now_mono);
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < ndue; i++) {
		due[i]->finishing = false;
		due[i]->done = true;
	}
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
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
