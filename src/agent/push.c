// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* push.c - Pyroscope ingest client with a bounded queue; see push.h. */
#include "agent/push.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

struct push_item {
	char *query; /* everything after "?" */
	char *body;
	size_t len;
	unsigned attempts;
	struct push_item *next;
};

struct pusher {
	struct pusher_opts o;
	char url[1024];
	char *auth_header; /* "Authorization: Bearer ..." */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct push_item *head, *tail;
	size_t queued;
	bool stopping;
	uint64_t flush_deadline; /* CLOCK_MONOTONIC ns, while stopping */
	struct pusher_stats st;
	char hostname[256];
};

int pusher__series_name(const char *app, const char *hostname, const char *container, char *out,
			size_t size)
{
	int n;

	if (container)
		n = snprintf(out, size, "%s.cpu{hostname=%s,container_id=%s}", app, hostname,
			     container);
	else
		n = snprintf(out, size, "%s.cpu{hostname=%s}", app, hostname);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void item_free(struct push_item *it)
{
	if (!it)
		return;
	free(it->query);
	free(it->body);
	free(it);
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
	return size * nmemb;
}

/* One POST; returns the HTTP status, or 0 for a transport error. */
static long post(struct pusher *ps, CURL *curl, const struct push_item *it)
{
	struct curl_slist *hdrs = NULL;
	char url[4096];
	long status = 0;

	snprintf(url, sizeof(url), "%s/ingest?%s", ps->url, it->query);
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_POST, 1L);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, it->body);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)ps->o.timeout_s);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "bpfprof/" BPFPROF_VERSION);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	if (ps->auth_header)
		hdrs = curl_slist_append(hdrs, ps->auth_header);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	if (curl_easy_perform(curl) == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);
	return status;
}

static void *worker(void *arg)
{
	struct pusher *ps = arg;
	CURL *curl = curl_easy_init();

	pthread_mutex_lock(&ps->lock);
	for (;;) {
		struct push_item *it;
		long status;

		while (!ps->head && !ps->stopping)
			pthread_cond_wait(&ps->cond, &ps->lock);
		if (!ps->head || (ps->stopping && now_ns() >= ps->flush_deadline))
			break;
		it = ps->head;
		ps->head = it->next;
		if (!ps->head)
			ps->tail = NULL;
		ps->queued--;
		pthread_mutex_unlock(&ps->lock);

		status = curl ? post(ps, curl, it) : 0;
		it->attempts++;

		pthread_mutex_lock(&ps->lock);
		ps->st.last_status = status;
		if (status >= 200 && status < 300) {
			ps->st.sent++;
			item_free(it);
			continue;
		}
		ps->st.failed++;
		/* Client errors other than 408/429 will not get better by retrying. */
		if ((status >= 400 && status < 500 && status != 408 && status != 429) ||
		    it->attempts >= ps->o.max_attempts || ps->queued >= ps->o.max_queue) {
			ps->st.dropped++;
			item_free(it);
			continue;
		}
		/* Back off (1, 2, 4, ... s, at most 60), then retry ahead of newer ones. */
		ps->st.retries++;
		{
			unsigned delay = 1u << MIN(it->attempts - 1, 6u);
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += MIN(delay, 60u);
			while (!ps->stopping &&
			       pthread_cond_timedwait(&ps->cond, &ps->lock, &ts) != ETIMEDOUT)
				;
		}
		it->next = ps->head;
		ps->head = it;
		if (!ps->tail)
			ps->tail = it;
		ps->queued++;
	}
	pthread_mutex_unlock(&ps->lock);
	if (curl)
		curl_easy_cleanup(curl);
	return NULL;
}

struct pusher *pusher__start(const struct pusher_opts *o, char *err, size_t errlen)
{
	struct pusher *ps = calloc(1, sizeof(*ps));
	size_t n;

	if (!ps) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ps->o = *o;
	if (!ps->o.max_queue)
		ps->o.max_queue = 64;
	if (!ps->o.max_attempts)
		ps->o.max_attempts = 5;
	if (!ps->o.timeout_s)
		ps->o.timeout_s = 10;
	snprintf(ps->url, sizeof(ps->url), "%s", o->url);
	n = strlen(ps->url);
	while (n && ps->url[n - 1] == '/')
		ps->url[--n] = '\0';
	if (n >= 7 && !strcmp(ps->url + n - 7, "/ingest"))
		ps->url[n - 7] = '\0';
	if (o->token && *o->token) {
		size_t l = strlen(o->token) + 32;

		ps->auth_header = malloc(l);
		if (!ps->auth_header) {
			free(ps);
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		snprintf(ps->auth_header, l, "Authorization: Bearer %s", o->token);
	}
	gethostname(ps->hostname, sizeof(ps->hostname) - 1);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "cannot initialise libcurl");
		free(ps->auth_header);
		free(ps);
		return NULL;
	}
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->cond, NULL);
	if (pthread_create(&ps->thread, NULL, worker, ps)) {
		snprintf(err, errlen, "cannot start the push thread");
		free(ps->auth_header);
		free(ps);
		return NULL;
	}
	return ps;
}

struct by_container {
	const char *container;
};

static bool same_container(const struct psample *s, void *ctx)
{
	return s->container == ((struct by_container *)ctx)->container;
}

static int enqueue(struct pusher *ps, const struct profile *p, const char *container,
		   uint64_t from_ns, uint64_t until_ns)
{
	char name[512], *esc;
	struct push_item *it = calloc(1, sizeof(*it));
	struct sbuf q = { 0 };
	CURL *curl;
	FILE *f;
	int err;

	if (!it)
		return -ENOMEM;
	f = open_memstream(&it->body, &it->len);
	if (!f) {
		free(it);
		return -ENOMEM;
	}
	err = ps->o.writer->write(p, f, NULL);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err)
		err = pusher__series_name(ps->o.app, ps->hostname, container, name, sizeof(name));
	curl = err ? NULL : curl_easy_init();
	esc = curl ? curl_easy_escape(curl, name, 0) : NULL;
	if (!esc) {
		if (curl)
			curl_easy_cleanup(curl);
		item_free(it);
		return err ? err : -ENOMEM;
	}
	err = sbuf_printf(&q,
			  "name=%s&from=%" PRIu64 "&until=%" PRIu64
			  "&sampleRate=%u&spyName=bpfprof&units=samples&aggregationType=sum%s",
			  esc, (uint64_t)(from_ns / 1000000000ULL),
			  /* Whole seconds, floored on both ends: intervals tile without overlap. */
			  (uint64_t)MAX(until_ns / 1000000000ULL, from_ns / 1000000000ULL + 1),
			  ps->o.freq, strcmp(ps->o.writer->name, "pprof") ? "" : "&format=pprof");
	curl_free(esc);
	curl_easy_cleanup(curl);
	if (err) {
		sbuf_free(&q);
		item_free(it);
		return err;
	}
	it->query = q.buf;

	pthread_mutex_lock(&ps->lock);
	if (ps->queued >= ps->o.max_queue) {
		/* A server that cannot keep up loses the oldest interval, not the agent. */
		struct push_item *old = ps->head;

		ps->head = old->next;
		if (!ps->head)
			ps->tail = NULL;
		ps->queued--;
		ps->st.dropped++;
		item_free(old);
	}
	if (ps->tail)
		ps->tail->next = it;
	else
		ps->head = it;
	ps->tail = it;
	ps->queued++;
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
	return 0;
}

int pusher__submit(struct pusher *ps, const struct profile *p, uint64_t from_ns,
		   uint64_t until_ns)
{
	const char *seen[64];
	size_t nseen = 0;
	int err = 0;

	/* One series per distinct container (NULL: the host's processes). */
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const char *c = profile__sample(p, i)->container;
		struct by_container bc = { .container = c };
		struct profile *sub;
		bool dup = false;

		for (size_t j = 0; j < nseen; j++)
			dup |= seen[j] == c;
		if (dup || nseen == ARRAY_SIZE(seen))
			continue;
		seen[nseen++] = c;
		sub = profile__new();
		if (!sub)
			return -ENOMEM;
		*profile__meta(sub) = *profile__meta_c(p);
		err = profile__merge_if(sub, p, same_container, &bc);
		if (!err)
			err = enqueue(ps, sub, c, from_ns, until_ns);
		profile__free(sub);
	}
	return err;
}

void pusher__stop(struct pusher *ps, unsigned flush_ms, struct pusher_stats *final)
{
	if (!ps)
		return;
	pthread_mutex_lock(&ps->lock);
	ps->stopping = true;
	ps->flush_deadline = now_ns() + (uint64_t)flush_ms * 1000000ULL;
	pthread_cond_broadcast(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
	pthread_join(ps->thread, NULL);
	while (ps->head) {
		struct push_item *it = ps->head;

		ps->head = it->next;
		item_free(it);
		ps->st.dropped++;
	}
	if (final) {
		*final = ps->st;
		final->queued = 0;
	}
	pthread_mutex_destroy(&ps->lock);
	pthread_cond_destroy(&ps->cond);
	if (ps->auth_header) {
		/* The token does not outlive its use in memory dumps more than needed. */
		memset(ps->auth_header, 0, strlen(ps->auth_header));
		free(ps->auth_header);
	}
	curl_global_cleanup();
	free(ps);
}

void pusher__stats(struct pusher *ps, struct pusher_stats *st)
{
	pthread_mutex_lock(&ps->lock);
	*st = ps->st;
	st->queued = ps->queued;
	pthread_mutex_unlock(&ps->lock);
}
