// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* push.c - Pyroscope ingest client with a bounded queue; see push.h. */
#include "agent/push.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/curllib.h"
#include "base/errmsg.h"
#include "base/log.h"
#include "base/util.h"

struct push_item {
	char *query; /* everything after "?" */
	char *body;
	size_t len;
	char content_type[80]; /* of body */
	unsigned attempts;
	struct push_item *next;
};

struct pusher {
	struct pusher_opts o;
	char url[1024];
	char shown_url[1024]; /* url without user:password@, for messages */
	char *auth_header;    /* "Authorization: Bearer ..." */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct push_item *head, *tail;
	size_t queued;
	bool stopping;
	uint64_t flush_deadline; /* CLOCK_MONOTONIC ns, while stopping */
	struct pusher_stats st;
	uint64_t not_before; /* CLOCK_MONOTONIC ns: no request before (backoff, Retry-After) */
	struct ratelimit warn_rl;
	char hostname[256];
};

/* What one POST came back with. */
struct post_result {
	long status; /* HTTP status, 0 for a transport error */
	char error[CURL_ERROR_SIZE];
	char body[160]; /* the server's first words, printable ASCII only */
	size_t body_len;
	long retry_after;		 /* seconds, -1 if none */
	size_t header_bytes, body_bytes; /* of the answer, read so far */
	const char *too_large; /* the cap the answer went over ("headers"...), NULL if none */
	size_t too_large_cap;  /* that cap, bytes */
};

static size_t over_cap(struct post_result *r, const char *what, size_t cap)
{
	r->too_large = what;
	r->too_large_cap = cap;
	return 0; /* short: libcurl ends the transfer (CURLE_WRITE_ERROR) */
}

int pusher__series_name_of(const char *app, const char *type, const char *hostname,
			   const char *container, char *out, size_t size)
{
	const char *dot = type ? "." : "";
	int n;

	type = type ? type : "";
	if (container)
		n = snprintf(out, size, "%s%s%s{hostname=%s,container_id=%s}", app, dot, type,
			     hostname, container);
	else
		n = snprintf(out, size, "%s%s%s{hostname=%s}", app, dot, type, hostname);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int pusher__series_name(const char *app, const char *hostname, const char *container, char *out,
			size_t size)
{
	return pusher__series_name_of(app, "cpu", hostname, container, out, size);
}

static void item_free(struct push_item *it)
{
	if (!it)
		return;
	free(it->query);
	free(it->body);
	free(it);
}

long pusher__retry_after(const char *v, time_t now)
{
	uint64_t secs;
	struct tm tm = { 0 };
	const char *end;
	char buf[64];
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strcspn(v, "\r\n");
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (buf[0] >= '0' && buf[0] <= '9') {
		if (n > 12 || parse_u64(buf, 10, &secs))
			return -1;
		return (long)MIN(secs, (uint64_t)PUSH_MAX_RETRY_AFTER);
	}
	/* IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" (the form servers must send). */
	end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return -1;
	{
		time_t at = timegm(&tm);

		if (at <= now)
			return 0;
		return (long)MIN((uint64_t)(at - now), (uint64_t)PUSH_MAX_RETRY_AFTER);
	}
}

void pusher__shown_url(const char *url, char *out, size_t size)
{
	const char *host = strstr(url, "://"), *at, *end;

	host = host ? host + 3 : url;
	end = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at)
		snprintf(out, size, "%.*s%s", (int)(host - url), url, at + 1);
	else
		snprintf(out, size, "%s", url);
}

static size_t keep_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct post_result *r = ud;

	r->body_bytes += size * nmemb;
	if (r->body_bytes > PUSH_MAX_RESPONSE_BODY)
		return over_cap(r, "of body", PUSH_MAX_RESPONSE_BODY);
	for (size_t i = 0; i < size * nmemb && r->body_len + 1 < sizeof(r->body); i++) {
		char ch = ptr[i];

		if (ch == '\n' || ch == '\r' || ch == '\t')
			ch = ' ';
		if (ch >= ' ' && ch < 0x7f)
			r->body[r->body_len++] = ch;
	}
	r->body[r->body_len] = '\0';
	return size * nmemb;
}

static size_t read_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct post_result *r = ud;
	size_t n = size * nitems;
	char line[128];

	/* Lines come whole: one over CURL_MAX_HTTP_HEADER is libcurl's to refuse. */
	r->header_bytes += n;
	if (r->header_bytes > PUSH_MAX_RESPONSE_HEADERS)
		return over_cap(r, "of headers", PUSH_MAX_RESPONSE_HEADERS);
	if (n > 12 && n < sizeof(line) && !strncasecmp(buf, "Retry-After:", 12)) {
		memcpy(line, buf + 12, n - 12);
		line[n - 12] = '\0';
		r->retry_after = pusher__retry_after(line, time(NULL));
	}
	return n;
}

/* The request went out whole: what came back since is the server's answer. */
static bool sent_request(CURL *curl)
{
	long n = 0;

	return !libcurl.easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &n) && n > 0;
}

/* One POST; r->status is the HTTP status, or 0 for a transport error. */
static void post(struct pusher *ps, CURL *curl, const struct push_item *it, struct post_result *r)
{
	struct curl_slist *hdrs = NULL;
	char url[4096], ctype[sizeof(it->content_type) + 16];
	CURLcode cc;

	memset(r, 0, sizeof(*r));
	r->retry_after = -1;

	snprintf(url, sizeof(url), "%s/ingest?%s", ps->url, it->query);
	libcurl.easy_reset(curl);
	libcurl.easy_setopt(curl, CURLOPT_URL, url);
	libcurl.easy_setopt(curl, CURLOPT_POST, 1L);
	libcurl.easy_setopt(curl, CURLOPT_POSTFIELDS, it->body);
	libcurl.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	libcurl.easy_setopt(curl, CURLOPT_TIMEOUT, (long)ps->o.timeout_s);
	libcurl.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
	libcurl.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	libcurl.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	libcurl.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	libcurl.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	libcurl.easy_setopt(curl, CURLOPT_USERAGENT, "bpfprof/" BPFPROF_VERSION);
	libcurl.easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_body);
	libcurl.easy_setopt(curl, CURLOPT_WRITEDATA, r);
	libcurl.easy_setopt(curl, CURLOPT_HEADERFUNCTION, read_header);
	libcurl.easy_setopt(curl, CURLOPT_HEADERDATA, r);
	libcurl.easy_setopt(curl, CURLOPT_ERRORBUFFER, r->error);
	/* A Content-Length over the cap ends it before the body is read. */
	libcurl.easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)PUSH_MAX_RESPONSE_BODY);
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", it->content_type);
	hdrs = libcurl.slist_append(hdrs, ctype);
	if (ps->auth_header)
		hdrs = libcurl.slist_append(hdrs, ps->auth_header);
	libcurl.easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	cc = libcurl.easy_perform(curl);
	if (cc == CURLE_FILESIZE_EXCEEDED) {
		over_cap(r, "of body", PUSH_MAX_RESPONSE_BODY);
	} else if (cc == CURLE_OUT_OF_MEMORY && !r->error[0] && sent_request(curl)) {
		/* What libcurl says when one header line is over CURL_MAX_HTTP_HEADER
		 * (and says nothing else): the answer, not the agent, was too big. */
		over_cap(r, "in one header line", CURL_MAX_HTTP_HEADER);
	}
	if (cc == CURLE_OK || r->too_large)
		libcurl.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (cc != CURLE_OK && !r->error[0])
		snprintf(r->error, sizeof(r->error), "%s", libcurl.easy_strerror(cc));
	libcurl.slist_free_all(hdrs);
}

/* Under ps->lock: the sentence for a failed attempt, if one is due (once a minute). */
static bool failure_message(struct pusher *ps, struct post_result *r, bool dropped, uint64_t wait_s,
			    char *msg, size_t size)
{
	unsigned long suppressed;
	char what[256];

	if (!ps->o.warn || !ratelimit__pass(&ps->warn_rl, 60, &suppressed))
		return false;
	while (r->body_len && r->body[r->body_len - 1] == ' ')
		r->body[--r->body_len] = '\0';
	if (r->too_large) {
		char status[32] = "";

		if (r->status)
			snprintf(status, sizeof(status), "HTTP %ld, ", r->status);
		snprintf(what, sizeof(what),
			 "%sresponse too large (over %zu bytes %s), not read further", status,
			 r->too_large_cap, r->too_large);
	} else if (r->status)
		snprintf(what, sizeof(what), "HTTP %ld%s%s%s", r->status, r->body_len ? " \"" : "",
			 r->body, r->body_len ? "\"" : "");
	else
		snprintf(what, sizeof(what), "%s", r->error[0] ? r->error : "no response");
	snprintf(msg, size,
		 "push to %.1023s failed: %s; %s (%" PRIu64 " attempts failed, %" PRIu64
		 " profiles dropped so far)",
		 ps->shown_url, what, dropped ? "the profile is dropped" : "retrying",
		 ps->st.failed, ps->st.dropped);
	if (!dropped && wait_s) {
		size_t n = strlen(msg);

		snprintf(msg + n, size - n, "; next attempt in %" PRIu64 " s%s", wait_s,
			 r->retry_after >= 0 ? " (Retry-After)" : "");
	}
	(void)suppressed; /* the running totals above say how many */
	return true;
}

static void *worker(void *arg)
{
	struct pusher *ps = arg;
	CURL *curl = libcurl.easy_init();

	pthread_mutex_lock(&ps->lock);
	for (;;) {
		struct post_result r;
		struct push_item *it;
		uint64_t now, wait_s = 0;
		bool drop, warn;
		char msg[1600];

		while (!ps->head && !ps->stopping)
			pthread_cond_wait(&ps->cond, &ps->lock);
		now = now_ns();
		if (!ps->head || (ps->stopping && now >= ps->flush_deadline))
			break;
		if (now < ps->not_before) {
			/* Backing off, or the server asked for a pause: nothing goes out. */
			struct timespec ts;
			uint64_t until = ps->not_before;

			if (ps->stopping && ps->flush_deadline < until)
				break; /* it would not be due before we must be gone */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)((until - now) / NS_PER_SEC);
			ts.tv_nsec += (long)((until - now) % NS_PER_SEC);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ps->cond, &ps->lock, &ts);
			continue;
		}
		it = ps->head;
		ps->head = it->next;
		if (!ps->head)
			ps->tail = NULL;
		ps->queued--;
		pthread_mutex_unlock(&ps->lock);

		if (curl) {
			post(ps, curl, it, &r);
		} else {
			memset(&r, 0, sizeof(r));
			r.retry_after = -1;
			snprintf(r.error, sizeof(r.error), "cannot initialise libcurl");
		}
		it->attempts++;

		pthread_mutex_lock(&ps->lock);
		ps->st.last_status = r.status;
		if (r.status >= 200 && r.status < 300 && !r.too_large) {
			ps->st.sent++;
			item_free(it);
			continue;
		}
		ps->st.failed++;
		if (r.too_large)
			ps->st.too_large++;
		/* Client errors other than 408/429 will not get better by retrying. */
		drop = (r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 429) ||
		       it->attempts >= ps->o.max_attempts || ps->queued >= ps->o.max_queue;
		/* The server's Retry-After (bounded), else 1, 2, 4, ... s, at most 60. */
		if (r.retry_after >= 0)
			wait_s = (uint64_t)r.retry_after;
		else if (!drop)
			wait_s = MIN(1u << MIN(it->attempts - 1, 6u), 60u);
		ps->not_before = now_ns() + wait_s * NS_PER_SEC;
		if (drop) {
			ps->st.dropped++;
			item_free(it);
		} else {
			/* Retried ahead of newer ones. */
			ps->st.retries++;
			it->next = ps->head;
			ps->head = it;
			if (!ps->tail)
				ps->tail = it;
			ps->queued++;
		}
		warn = failure_message(ps, &r, drop, wait_s, msg, sizeof(msg));
		if (warn) {
			pthread_mutex_unlock(&ps->lock);
			ps->o.warn(ps->o.warn_ctx, msg);
			pthread_mutex_lock(&ps->lock);
		}
	}
	pthread_mutex_unlock(&ps->lock);
	if (curl)
		libcurl.easy_cleanup(curl);
	return NULL;
}

struct pusher *pusher__start(const struct pusher_opts *o, struct errmsg *em)
{
	struct pusher *ps = calloc(1, sizeof(*ps));
	size_t n;
	int err;

	if (!ps) {
		errmsg_set(em, -ENOMEM, "out of memory");
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
	pusher__shown_url(ps->url, ps->shown_url, sizeof(ps->shown_url));
	if (o->token && *o->token) {
		size_t l = strlen(o->token) + 32;

		ps->auth_header = malloc(l);
		if (!ps->auth_header) {
			free(ps);
			errmsg_set(em, -ENOMEM, "out of memory");
			errno = ENOMEM;
			return NULL;
		}
		snprintf(ps->auth_header, l, "Authorization: Bearer %s", o->token);
	}
	gethostname(ps->hostname, sizeof(ps->hostname) - 1);
	err = curllib__load();
	if (err) {
		if (err == -ELIBACC)
			errmsg_set(em, err,
				   "cannot load libcurl (%s): pushing needs Debian's libcurl4",
				   curllib__why());
		else
			errmsg_set(em, err, "cannot initialise libcurl");
		free(ps->auth_header);
		free(ps);
		errno = -err;
		return NULL;
	}
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->cond, NULL);
	err = pthread_create(&ps->thread, NULL, worker, ps);
	if (err) {
		errno = -errmsg_set(em, -err, "cannot start the push thread: %s", strerror(err));
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

/*
 * The profile types a series can be: on-CPU samples, off-CPU time
 * (--off-cpu), allocations (--alloc: always pprof, in a multipart body).
 */
struct series_type {
	const char *suffix; /* app.SUFFIX{...} */
	enum view view;
	const char *units; /* with pprof; folded text carries a view's microseconds */
	bool heap;
};

static const struct series_type type_cpu = { "cpu", VIEW_CPU, "samples", false };
static const struct series_type type_offcpu = { "off_cpu", VIEW_OFFCPU, "nanoseconds", false };
static const struct series_type type_heap = { "memory", VIEW_AUTO, NULL, true };

/* The two parts' headers; Go's multipart writer's CreateFormFile writes the same. */
#define PART_HEAD(name, file)                                                                      \
	"Content-Disposition: form-data; name=\"" name "\"; filename=\"" file "\"\r\n"             \
	"Content-Type: application/octet-stream\r\n\r\n"
#define CONFIG_HEAD PART_HEAD("sample_type_config", "sample_type_config.json")

/*
 * pb (a gzipped profile.proto) as the multipart/form-data body Pyroscope
 * takes a heap profile in (push.h), into it->body and it->content_type. The
 * boundary is drawn at random until pb does not hold it. 0 or -ENOMEM.
 */
static int heap_body(struct push_item *it, const char *pb, size_t len)
{
	struct sbuf b = { 0 };
	char bnd[48];
	int err;

	for (unsigned tries = 0;; tries++) {
		unsigned char rnd[16];

		/* Early at boot without entropy: any bytes will do, as the
		 * check below is what keeps the boundary out of the body. */
		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
			uint64_t x = now_ns() ^ ((uint64_t)getpid() << 32) ^ tries;

			for (size_t i = 0; i < sizeof(rnd); i++, x = x * 6364136223846793005ull + 1)
				rnd[i] = (unsigned char)(x >> 56);
		}
		memcpy(bnd, "bpfprof-", 8);
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(bnd + 8 + 2 * i, 3, "%02x", rnd[i]);
		if (!memmem(pb, len, bnd, strlen(bnd)))
			break;
	}
	err = sbuf_printf(&b, "--%s\r\n" PART_HEAD("profile", "profile.pprof"), bnd);
	if (!err)
		err = sbuf_add(&b, pb, len);
	if (!err)
		err = sbuf_printf(&b, "\r\n--%s\r\n" CONFIG_HEAD "%s\r\n--%s--\r\n", bnd,
				  PUSH_HEAP_SAMPLE_TYPE_CONFIG, bnd);
	if (err) {
		sbuf_free(&b);
		return err;
	}
	it->body = b.buf;
	it->len = b.len;
	snprintf(it->content_type, sizeof(it->content_type), "multipart/form-data; boundary=%s",
		 bnd);
	return 0;
}

static int enqueue(struct pusher *ps, const struct profile *p, const char *container,
		   const struct series_type *type, uint64_t from_ns, uint64_t until_ns)
{
	struct out_opts oo = { .view = type->view };
	const struct writer *w = type->heap ? &writer_pprof : ps->o.writer;
	bool pprof = !strcmp(w->name, "pprof");
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
	err = writer__write_file(w, p, f, &oo);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err && type->heap) {
		char *pb = it->body;

		err = heap_body(it, pb, it->len);
		free(pb);
		if (err)
			it->body = NULL;
	} else {
		snprintf(it->content_type, sizeof(it->content_type), "application/octet-stream");
	}
	/*
	 * The series name. Pyroscope reads a folded body's type from the name's
	 * last ".SUFFIX" and takes the rest as service_name; a pprof body's
	 * type comes from its sample types and service_name is the name as
	 * sent, dots and all: "app.cpu" there would be a service "app.cpu".
	 */
	if (!err)
		err = pusher__series_name_of(ps->o.app, pprof ? NULL : type->suffix, ps->hostname,
					     container, name, sizeof(name));
	curl = err ? NULL : libcurl.easy_init();
	esc = curl ? libcurl.easy_escape(curl, name, 0) : NULL;
	if (!esc) {
		if (curl)
			libcurl.easy_cleanup(curl);
		item_free(it);
		return err ? err : -ENOMEM;
	}
	/* Whole seconds, floored on both ends: intervals tile without overlap. */
	err = sbuf_printf(&q, "name=%s&from=%" PRIu64 "&until=%" PRIu64, esc,
			  (uint64_t)(from_ns / NS_PER_SEC),
			  (uint64_t)MAX(until_ns / NS_PER_SEC, from_ns / NS_PER_SEC + 1));
	/* A heap upload's units and aggregation are its parts' (push.h); no
	 * "format", or the server would take the whole body as the profile. */
	if (!err && type->heap)
		err = sbuf_puts(&q, "&spyName=bpfprof");
	else if (!err)
		err = sbuf_printf(&q,
				  "&sampleRate=%u&spyName=bpfprof&units=%s&aggregationType=sum%s",
				  ps->o.freq,
				  type->view == VIEW_CPU ? "samples"
				  : pprof		 ? type->units
							 : "microseconds",
				  pprof ? "&format=pprof" : "");
	libcurl.free(esc);
	libcurl.easy_cleanup(curl);
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

int pusher__submit_kind(struct pusher *ps, enum push_kind kind, const struct profile *p,
			uint64_t from_ns, uint64_t until_ns)
{
	const char *seen[64];
	size_t nseen = 0;
	int err = 0;

	/* A heap profile under a CPU series (or the reverse) would be misread. */
	if ((kind == PUSH_HEAP) != !!profile__meta_c(p)->alloc_period)
		return -EINVAL;
	/* One series: what a container's code allocates is told by its labels. */
	if (kind == PUSH_HEAP)
		return enqueue(ps, p, NULL, &type_heap, from_ns, until_ns);
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
			err = enqueue(ps, sub, c, &type_cpu, from_ns, until_ns);
		/* --off-cpu: the waiting time as a second profile type of the series. */
		if (!err && profile__meta_c(p)->offcpu)
			err = enqueue(ps, sub, c, &type_offcpu, from_ns, until_ns);
		profile__free(sub);
	}
	return err;
}

int pusher__submit(struct pusher *ps, const struct profile *p, uint64_t from_ns, uint64_t until_ns)
{
	return pusher__submit_kind(ps, PUSH_CPU, p, from_ns, until_ns);
}

void pusher__stop(struct pusher *ps, unsigned flush_ms, struct pusher_stats *final)
{
	if (!ps)
		return;
	pthread_mutex_lock(&ps->lock);
	ps->stopping = true;
	ps->flush_deadline = now_ns() + (uint64_t)flush_ms * NS_PER_MS;
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
	libcurl.global_cleanup();
	free(ps);
}

void pusher__stats(struct pusher *ps, struct pusher_stats *st)
{
	pthread_mutex_lock(&ps->lock);
	*st = ps->st;
	st->queued = ps->queued;
	pthread_mutex_unlock(&ps->lock);
}
