// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * httpd.c - /debug/pprof/profile, /heap, /allocs, /metrics, /healthz on one epoll thread;
 * see httpd.h for what it guarantees against hostile clients.
 *
 * A connection goes READ (collecting its header, deadline 10 s after accept)
 * -> WAIT (a profile thread is collecting) -> WRITE (deadline 60 s) -> LINGER
 * (write side shut, the rest of the client's bytes read and dropped for up to
 * 2 s so that closing does not turn into a reset that loses our answer) ->
 * closed. Each state keeps its connections in the order they entered it, so
 * the oldest of a state is the first of its list, and a state's deadlines
 * (a fixed time after entering it) come in list order too.
 *
 * When room is needed (the connection cap, the descriptor budget), one
 * connection gives way, in this order: the oldest LINGER one (its answer is
 * sent; what it sent since is read first, so the close is a FIN behind the
 * answer, not a reset), else the oldest READ one (a client that sent its
 * request with the connection is answered in the turn it is accepted, so
 * the oldest silent one is the likeliest idle hog), else the oldest WRITE
 * one (a client that does not read its answer). WAIT ones (at most
 * LIVE_MAX_REQUESTS) are never evicted. So clients that send a request and
 * never hang up, at any rate, only push each other out: a new client always
 * gets in.
 *
 * A client that shuts its write side after its request (`nc -N`) still
 * reads: end of input is not a hang-up. While a profile is collected, the
 * agent answers end of input with an interim "100 Continue" (HTTP/1.1, whose
 * clients skip 1xx answers): a client that is gone answers that with a
 * reset, and its profile slot is freed at once; one that half-closed gets
 * its profile. An HTTP/1.0 client cannot be asked: its slot is kept for the
 * seconds it asked for.
 *
 * Closed connections are parked until the end of the loop turn, as an epoll
 * batch may still name them.
 */
#include "agent/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "base/selfstat.h"
#include "base/util.h"

#define LINGER_MS    2000
#define ACCEPT_REST  1000 /* ms the listening socket rests after accept() ran out */
#define SWEEP_MS     250
#define FDCOUNT_MS   1000
#define ACCEPT_BATCH 64

enum conn_state { C_READ, C_WAIT, C_WRITE, C_LINGER, C_DEAD };

struct conn {
	struct conn *prev, *next; /* its state's list, in the order they entered it */
	int fd;
	enum conn_state st;
	bool http11;		     /* the request was HTTP/1.1 (it may be sent a 1xx) */
	uint64_t accepted, deadline; /* ms, CLOCK_MONOTONIC */
	char *in;
	size_t in_len, in_cap;
	char hdr[512];
	size_t hdr_len;
	char *body; /* owned unless body_static */
	size_t body_len, off;
	bool body_static;
	int worker; /* profile slot, -1 if none */
};

struct worker {
	struct httpd *h;
	pthread_t th;
	bool busy, done;
	struct conn *conn; /* NULL once the client is gone */
	struct live *live; /* the CPU's, or the heap's (/debug/pprof/heap, /allocs) */
	const char *type;  /* the profile's Content-Type */
	unsigned seconds;
	enum view view; /* /allocs: alloc_space by default */
	bool head;
	bool cancel; /* set atomically when the client hangs up */
	int err;
	char *body;
	size_t len;
};

struct httpd_counters {
	uint64_t accepted, requests, timeouts, evicted, refused, accept_errors;
	uint64_t evicted_state[C_DEAD]; /* evicted, by the state they were in */
};

struct conn_list {
	struct conn *first, *last;
};

struct httpd {
	struct httpd_opts o;
	int lfd, epfd, evfd;
	pthread_t loop;
	bool loop_started;
	struct conn_list q[C_DEAD]; /* live connections, one list per state */
	struct conn *dead;
	size_t nconns;
	bool listening; /* listening socket armed in epoll */
	uint64_t rest_until;
	uint64_t fd_limit;
	long other_fds; /* descriptors not ours, counted once a second */
	uint64_t next_fdcount, next_sweep;
	struct ratelimit rl_accept, rl_budget;
	struct httpd_counters c;
	pthread_mutex_t lock; /* workers[], stop */
	bool stop;
	struct worker workers[LIVE_MAX_REQUESTS];
};

/* Markers for epoll data: the listening socket and the wake-up eventfd. */
static char tag_listen, tag_wake;

int httpd__parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128] = "127.0.0.1";
	const char *port_s = s, *colon;
	uint64_t port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, end - s - 1);
		host[end - s - 1] = '\0';
		port_s = end + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if ((size_t)(colon - s) >= sizeof(host) || colon == s)
			return -EINVAL;
		memcpy(host, s, colon - s);
		host[colon - s] = '\0';
		port_s = colon + 1;
	}
	if (parse_u64(port_s, 10, &port) || port == 0 || port > 65535)
		return -EINVAL;
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof(host), "127.0.0.1");
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	}
	return 0;
}

static uint64_t now_ms(void)
{
	return now_ns() / NS_PER_MS;
}

static void warn_rl(struct httpd *h, struct ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn_rl(struct httpd *h, struct ratelimit *rl, const char *fmt, ...)
{
	unsigned long suppressed;
	char msg[512];
	size_t n;
	va_list ap;

	if (!h->o.warn || !ratelimit__pass(rl, 60, &suppressed))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = strlen(msg);
	if (suppressed)
		snprintf(msg + n, sizeof(msg) - n, " (%lu times since the last warning)",
			 suppressed + 1);
	h->o.warn(h->o.warn_ctx, msg);
}

/* ---- connections ---- */

static void set_events(struct httpd *h, struct conn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

static void list_del(struct conn_list *l, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->first = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->last = c->prev;
	c->prev = c->next = NULL;
}

static void list_add_tail(struct conn_list *l, struct conn *c)
{
	c->next = NULL;
	c->prev = l->last;
	if (l->last)
		l->last->next = c;
	else
		l->first = c;
	l->last = c;
}

/* Moves a live connection to state st, at the end of that state's list. */
static void conn_enter(struct httpd *h, struct conn *c, enum conn_state st)
{
	list_del(&h->q[c->st], c);
	c->st = st;
	list_add_tail(&h->q[st], c);
}

static void conn_close(struct httpd *h, struct conn *c)
{
	if (c->st == C_DEAD)
		return;
	if (c->worker >= 0) {
		struct worker *w = &h->workers[c->worker];

		pthread_mutex_lock(&h->lock);
		w->conn = NULL; /* its result, if any, is dropped */
		pthread_mutex_unlock(&h->lock);
		/* Nobody waits for it any more: free the live slot now. */
		__atomic_store_n(&w->cancel, true, __ATOMIC_RELEASE);
		live__wake(w->live);
		c->worker = -1;
	}
	close(c->fd); /* also removes it from the epoll set */
	c->fd = -1;
	list_del(&h->q[c->st], c);
	c->st = C_DEAD;
	h->nconns--;
	c->next = h->dead;
	c->prev = NULL;
	h->dead = c;
}

static void conn_free(struct conn *c)
{
	free(c->in);
	if (!c->body_static)
		free(c->body);
	free(c);
}

static void bury_dead(struct httpd *h)
{
	while (h->dead) {
		struct conn *c = h->dead;

		h->dead = c->next;
		conn_free(c);
	}
}

/* Writes what the socket takes; on completion shuts the write side and lingers. */
static void conn_flush(struct httpd *h, struct conn *c)
{
	while (c->off < c->hdr_len + c->body_len) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		int n = 0;
		ssize_t w;

		if (c->off < c->hdr_len) {
			iov[n].iov_base = c->hdr + c->off;
			iov[n++].iov_len = c->hdr_len - c->off;
			if (c->body_len) {
				iov[n].iov_base = c->body;
				iov[n++].iov_len = c->body_len;
			}
		} else {
			iov[n].iov_base = c->body + (c->off - c->hdr_len);
			iov[n++].iov_len = c->body_len - (c->off - c->hdr_len);
		}
		mh.msg_iovlen = (size_t)n;
		/* No SIGPIPE for a client that is gone, whoever handles signals. */
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* Not EPOLLRDHUP: a client that shut its write side is
				 * still reading, and the event would fire at every turn. */
				set_events(h, c, EPOLLOUT);
				return;
			}
			conn_close(h, c);
			return;
		}
		c->off += (size_t)w;
	}
	if (!c->body_static)
		free(c->body);
	c->body = NULL;
	c->body_len = 0;
	shutdown(c->fd, SHUT_WR);
	conn_enter(h, c, C_LINGER);
	c->deadline = now_ms() + LINGER_MS;
	set_events(h, c, EPOLLIN | EPOLLRDHUP);
}

static const char *reason(unsigned status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

/*
 * Queues a response and starts sending it. body is taken over (freed when
 * sent) unless is_static. HEAD gets the headers only.
 */
static void respond(struct httpd *h, struct conn *c, unsigned status, const char *type, char *body,
		    size_t len, bool is_static, bool head)
{
	int n = snprintf(c->hdr, sizeof(c->hdr),
			 "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
			 status, reason(status), type, len,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "");

	c->hdr_len = n > 0 && (size_t)n < sizeof(c->hdr) ? (size_t)n : 0;
	if (head) {
		if (!is_static)
			free(body);
		body = NULL;
		len = 0;
		is_static = true;
	}
	c->body = body;
	c->body_len = len;
	c->body_static = is_static;
	c->off = 0;
	conn_enter(h, c, C_WRITE);
	c->deadline = now_ms() + HTTPD_WRITE_TIMEOUT;
	conn_flush(h, c);
}

static void text(struct httpd *h, struct conn *c, unsigned status, const char *msg, bool head)
{
	respond(h, c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), true, head);
}

/* The same with a message of the moment (copied). */
static void text_copy(struct httpd *h, struct conn *c, unsigned status, const char *msg, bool head)
{
	char *body = strdup(msg);

	if (!body) {
		text(h, c, 500, "out of memory\n", head);
		return;
	}
	respond(h, c, status, "text/plain; charset=utf-8", body, strlen(body), false, head);
}

/* A connection we cannot keep: a best-effort status line, then close. */
static void refuse_fd(int fd, unsigned status, const char *msg)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 status, reason(status), strlen(msg), msg);

	if (n > 0 && (size_t)n < sizeof(buf) && write(fd, buf, (size_t)n) < 0) {
		/* nothing more to do: the client is told by the close */
	}
	close(fd);
}

/* ---- /debug/pprof/profile, /heap, /allocs threads ---- */

static void *profile_thread(void *arg)
{
	struct worker *w = arg;
	char *body = NULL;
	size_t len = 0;
	uint64_t one = 1;
	int err;

	err = live__collect_or_cancel(w->live, w->seconds, w->view, &w->cancel, &body, &len);
	pthread_mutex_lock(&w->h->lock);
	w->err = err;
	w->body = body;
	w->len = len;
	w->done = true;
	pthread_mutex_unlock(&w->h->lock);
	if (write(w->h->evfd, &one, sizeof(one)) < 0) {
		/* the eventfd counter cannot overflow here; the loop also polls */
	}
	return NULL;
}

/* Answers the connections whose profile is ready; joins finished threads. */
static void reap_workers(struct httpd *h)
{
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		struct worker *w = &h->workers[i];
		struct conn *c;
		char *body;
		size_t len;
		int err;

		pthread_mutex_lock(&h->lock);
		if (!w->busy || !w->done) {
			pthread_mutex_unlock(&h->lock);
			continue;
		}
		c = w->conn;
		body = w->body;
		len = w->len;
		err = w->err;
		w->body = NULL;
		w->conn = NULL;
		pthread_mutex_unlock(&h->lock);
		pthread_join(w->th, NULL);
		pthread_mutex_lock(&h->lock);
		w->busy = w->done = false;
		pthread_mutex_unlock(&h->lock);
		if (!c) {
			free(body);
			continue;
		}
		c->worker = -1;
		if (err == -EBUSY) {
			text(h, c, 429, "too many profile requests at once\n", w->head);
		} else if (err == -ESHUTDOWN) {
			text(h, c, 503, "profiler is stopping\n", w->head);
		} else if (err) {
			char msg[128];

			snprintf(msg, sizeof(msg), "cannot make the profile: %s\n", strerror(-err));
			text_copy(h, c, 500, msg, w->head);
		} else {
			respond(h, c, 200, w->type, body, len, false, w->head);
		}
		if (err)
			free(body);
	}
}

static void start_profile(struct httpd *h, struct conn *c, struct live *live, unsigned seconds,
			  enum view view, bool head)
{
	struct worker *w = NULL;
	pthread_attr_t attr;

	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < LIVE_MAX_REQUESTS && !w; i++) {
		if (!h->workers[i].busy) {
			w = &h->workers[i];
			c->worker = i;
		}
	}
	if (w) {
		w->busy = true;
		w->done = false;
		w->cancel = false;
		w->conn = c;
		w->live = live;
		/* Heap profiles are pprof only (sinks.c opens their live with it). */
		w->type = live__is_heap(live) ? "application/octet-stream" : h->o.content_type;
		w->seconds = seconds;
		w->view = view;
		w->head = head;
		w->h = h;
	}
	pthread_mutex_unlock(&h->lock);
	if (!w) {
		text(h, c, 429, "too many profile requests at once\n", head);
		return;
	}
	conn_enter(h, c, C_WAIT);
	c->deadline = UINT64_MAX;
	set_events(h, c, EPOLLIN | EPOLLRDHUP);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&w->th, &attr, profile_thread, w)) {
		pthread_mutex_lock(&h->lock);
		w->busy = false;
		w->conn = NULL;
		pthread_mutex_unlock(&h->lock);
		c->worker = -1;
		text(h, c, 503, "cannot start a profile thread\n", head);
	}
	pthread_attr_destroy(&attr);
}

/* ---- requests ---- */

static void render_http_metrics(struct httpd *h, struct sbuf *out)
{
	sbuf_printf(
		out,
		"# HELP bpfprof_http_connections HTTP connections open.\n"
		"# TYPE bpfprof_http_connections gauge\n"
		"bpfprof_http_connections %zu\n"
		"# HELP bpfprof_http_requests_total HTTP requests answered.\n"
		"# TYPE bpfprof_http_requests_total counter\n"
		"bpfprof_http_requests_total %" PRIu64 "\n"
		"# HELP bpfprof_http_connections_closed_total HTTP connections the agent closed early: header timeout, evicted to make room, refused (no room).\n"
		"# TYPE bpfprof_http_connections_closed_total counter\n"
		"bpfprof_http_connections_closed_total{reason=\"header_timeout\"} %" PRIu64 "\n"
		"bpfprof_http_connections_closed_total{reason=\"evicted\"} %" PRIu64 "\n"
		"bpfprof_http_connections_closed_total{reason=\"no_room\"} %" PRIu64 "\n"
		"# HELP bpfprof_http_connections_evicted_total HTTP connections evicted to make room, by what they were doing.\n"
		"# TYPE bpfprof_http_connections_evicted_total counter\n"
		"bpfprof_http_connections_evicted_total{state=\"answered\"} %" PRIu64 "\n"
		"bpfprof_http_connections_evicted_total{state=\"sending_request\"} %" PRIu64 "\n"
		"bpfprof_http_connections_evicted_total{state=\"not_reading_answer\"} %" PRIu64 "\n"
		"# HELP bpfprof_http_accept_errors_total Failed accept() calls (e.g. out of descriptors).\n"
		"# TYPE bpfprof_http_accept_errors_total counter\n"
		"bpfprof_http_accept_errors_total %" PRIu64 "\n",
		h->nconns, h->c.requests, h->c.timeouts, h->c.evicted, h->c.refused,
		h->c.evicted_state[C_LINGER], h->c.evicted_state[C_READ],
		h->c.evicted_state[C_WRITE], h->c.accept_errors);
}

bool http_query__value(const char *q, size_t qlen, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *p = q, *end = q + qlen;

	if (!size)
		return false;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;

		if ((size_t)(e - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
			size_t vlen = (size_t)(e - p) - klen - 1;

			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return true;
		}
		p = e + 1;
	}
	return false;
}

static bool is_tchar(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

int http_request__parse(const char *buf, size_t len, struct http_request *r)
{
	const char *p = buf, *end = memchr(buf, '\n', len), *target, *version;
	size_t mlen, tlen;

	memset(r, 0, sizeof(*r));
	if (!end)
		end = buf + len;
	if (end > p && end[-1] == '\r')
		end--;
	/* METHOD SP request-target SP HTTP/1.x */
	while (p < end && is_tchar(*p))
		p++;
	mlen = (size_t)(p - buf);
	if (!mlen || mlen > 16 || p >= end || *p != ' ')
		return 400;
	target = ++p;
	while (p < end && *p != ' ')
		p++;
	tlen = (size_t)(p - target);
	version = p + 1;
	if (!tlen || p >= end || end - version != 8 || memcmp(version, "HTTP/1.", 7) ||
	    version[7] < '0' || version[7] > '9')
		return 400;
	r->minor = (unsigned char)(version[7] - '0');
	r->head = mlen == 4 && !memcmp(buf, "HEAD", 4);
	if (!r->head && !(mlen == 3 && !memcmp(buf, "GET", 3)))
		return 405;
	/* Absolute form ("http://host/path"), as proxies send it. */
	r->path = target;
	if (tlen >= 7 && !memcmp(target, "http://", 7))
		r->path = target + 7;
	else if (tlen >= 8 && !memcmp(target, "https://", 8))
		r->path = target + 8;
	if (r->path != target) {
		const char *slash = memchr(r->path, '/', (size_t)(target + tlen - r->path));

		r->path = slash ? slash : target + tlen;
	}
	r->path_len = (size_t)(target + tlen - r->path);
	r->query = memchr(r->path, '?', r->path_len);
	if (r->query) {
		r->query_len = r->path_len - (size_t)(r->query - r->path) - 1;
		r->path_len = (size_t)(r->query - r->path);
		r->query++;
	}
	return 0;
}

/*
 * A profile's seconds=N: *seconds unchanged if absent; false unless N is 1 to
 * LIVE_MAX_SECONDS (seconds=0 too, as Go's handlers refuse it).
 */
static bool query_seconds(const char *q, size_t qlen, unsigned *seconds)
{
	char sec[24];
	uint64_t n;

	if (!q || !http_query__value(q, qlen, "seconds", sec, sizeof(sec)))
		return true;
	if (parse_u64(sec, 10, &n) || n == 0 || n > LIVE_MAX_SECONDS)
		return false;
	*seconds = (unsigned)n;
	return true;
}

/* A complete header is in c->in: parse the request line and answer. */
static void handle_request(struct httpd *h, struct conn *c)
{
	struct http_request rq;
	const char *path, *q;
	size_t plen, qlen;
	bool head;
	int status;

	h->c.requests++;
	status = http_request__parse(c->in, c->in_len, &rq);
	c->http11 = !status && rq.minor >= 1;
	if (status == 400) {
		text(h, c, 400, "bad request line\n", false);
		return;
	}
	if (status == 405) {
		text(h, c, 405, "only GET and HEAD\n", false);
		return;
	}
	head = rq.head;
	path = rq.path;
	plen = rq.path_len;
	q = rq.query;
	qlen = rq.query_len;
#define PATH_IS(s) (plen == sizeof(s) - 1 && !memcmp(path, s, plen))
	if (PATH_IS("/healthz")) {
		struct metrics_snapshot s;
		char why[160];

		/* Judged here, from the last drain's snapshot: so it is told while
		 * the main loop is stuck. */
		metrics__get(h->o.metrics, &s);
		if (metrics__healthy(&s, now_ns(), why, sizeof(why)))
			text(h, c, 200, "ok\n", head);
		else
			text_copy(h, c, 503, why, head);
	} else if (PATH_IS("/metrics")) {
		struct metrics_snapshot s;
		struct sbuf sb = { 0 };

		metrics__get(h->o.metrics, &s);
		if (metrics__render(&s, now_ns(), &sb)) {
			sbuf_free(&sb);
			text(h, c, 500, "out of memory\n", head);
			return;
		}
		render_http_metrics(h, &sb);
		respond(h, c, 200, "text/plain; version=0.0.4; charset=utf-8", sb.buf, sb.len,
			false, head);
	} else if (PATH_IS("/debug/pprof/profile")) {
		unsigned seconds = 30;

		if (!h->o.live) {
			text(h, c, 404,
			     "not a CPU profiling run (--alloc: /debug/pprof/heap, /debug/pprof/allocs)\n",
			     head);
			return;
		}
		if (!query_seconds(q, qlen, &seconds)) {
			text(h, c, 400, "seconds must be 1 to 3600\n", head);
			return;
		}
		start_profile(h, c, h->o.live, seconds, VIEW_AUTO, head);
	} else if (PATH_IS("/debug/pprof/heap") || PATH_IS("/debug/pprof/allocs")) {
		unsigned seconds = 0; /* the profile as it is now */
		char dbg[8];

		if (!h->o.live_heap) {
			text(h, c, 404, "not an allocation profiling run (--alloc)\n", head);
			return;
		}
		if (q && http_query__value(q, qlen, "debug", dbg, sizeof(dbg)) &&
		    strcmp(dbg, "0")) {
			text(h, c, 400, "debug=N (the text format) is not served: protobuf only\n",
			     head);
			return;
		}
		if (!query_seconds(q, qlen, &seconds)) {
			text(h, c, 400, "seconds must be 1 to 3600\n", head);
			return;
		}
		/* As Go's: /allocs is /heap with alloc_space the default sample type. */
		start_profile(h, c, h->o.live_heap, seconds,
			      PATH_IS("/debug/pprof/allocs") ? VIEW_ALLOC_SPACE : VIEW_AUTO, head);
	} else if (PATH_IS("/")) {
		char idx[256];

		snprintf(idx, sizeof(idx), "bpfprof: %s%s/metrics, /healthz\n",
			 h->o.live ? "/debug/pprof/profile?seconds=N, " : "",
			 h->o.live_heap ? "/debug/pprof/heap, /debug/pprof/allocs (?seconds=N: "
					  "the allocations of the next N seconds), "
					: "");
		text_copy(h, c, 200, idx, head);
	} else {
		text(h, c, 404, "not found\n", head);
	}
#undef PATH_IS
}

/* End of the header: "\n\r\n" or "\n\n" (bare LF lines are accepted, as most servers do). */
static bool header_complete(const struct conn *c)
{
	for (size_t i = 1; i < c->in_len; i++) {
		if (c->in[i] != '\n')
			continue;
		if (c->in[i - 1] == '\n')
			return true;
		if (i >= 2 && c->in[i - 1] == '\r' && c->in[i - 2] == '\n')
			return true;
	}
	return false;
}

/* Reads into the header buffer; answers once the header is complete. */
static void conn_read(struct httpd *h, struct conn *c)
{
	for (;;) {
		ssize_t r;

		/* Never more than HTTPD_HEADER_MAX bytes read, whatever was allocated. */
		size_t room = MIN(c->in_cap, (size_t)HTTPD_HEADER_MAX);

		if (c->in_len == room) {
			if (room >= HTTPD_HEADER_MAX) {
				text(h, c, 431, "request header too large\n", false);
				return;
			}
			if (array_grow((void **)&c->in, &c->in_cap,
				       MAX(c->in_len + 1, (size_t)1024), 1)) {
				conn_close(h, c);
				return;
			}
			room = MIN(c->in_cap, (size_t)HTTPD_HEADER_MAX);
		}
		r = read(c->fd, c->in + c->in_len, room - c->in_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			conn_close(h, c);
			return;
		}
		c->in_len += (size_t)r;
		if (header_complete(c)) {
			handle_request(h, c);
			/* The header buffer is not needed any more. */
			free(c->in);
			c->in = NULL;
			c->in_len = c->in_cap = 0;
			return;
		}
	}
}

/*
 * Reads and drops what the client still sends (at most 64 KiB a call): 0
 * when there is nothing more for now, 1 at the client's end of input, -1 on
 * an error (a reset).
 */
static int conn_drain(struct conn *c)
{
	char buf[4096];

	for (int i = 0; i < 16; i++) {
		ssize_t r = read(c->fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return r ? -1 : 1;
	}
	return 0;
}

/*
 * WAIT: the client's end of input. It may have only shut its write side
 * (`nc -N`): keep collecting. An HTTP/1.1 client is sent an interim 100
 * Continue, which it skips; one that is gone answers with a reset (EPOLLERR,
 * and the profile slot is freed). Input is not watched any more: the event
 * would fire at every turn.
 */
static void wait_half_closed(struct httpd *h, struct conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	set_events(h, c, 0); /* EPOLLHUP and EPOLLERR are always reported */
	if (c->http11 && send(c->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    errno != EAGAIN)
		conn_close(h, c);
}

static void conn_event(struct httpd *h, struct conn *c, uint32_t ev)
{
	switch (c->st) {
	case C_READ:
		conn_read(h, c);
		break;
	case C_WAIT:
		/* A reset: the client is gone. Stop collecting for it. */
		if (ev & (EPOLLHUP | EPOLLERR)) {
			conn_close(h, c);
			break;
		}
		/* More than one request: dropped. End of input: see above. */
		switch (conn_drain(c)) {
		case 1:
			wait_half_closed(h, c);
			break;
		case -1:
			conn_close(h, c);
			break;
		}
		break;
	case C_WRITE:
		if (ev & (EPOLLHUP | EPOLLERR))
			conn_close(h, c);
		else
			conn_flush(h, c);
		break;
	case C_LINGER:
		if (conn_drain(c))
			conn_close(h, c);
		break;
	case C_DEAD:
		break;
	}
}

/* ---- accepting, under a connection cap and a descriptor budget ---- */

/*
 * Makes room: closes the oldest connection that lingers after its answer,
 * else the oldest still sending its header, else the oldest not reading its
 * answer (see the top of this file). False if every connection waits for a
 * profile.
 */
static bool evict_one(struct httpd *h)
{
	static const enum conn_state order[] = { C_LINGER, C_READ, C_WRITE };

	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		struct conn *c = h->q[order[i]].first;

		if (!c)
			continue;
		/* What the client sent since its request is read first: closing
		 * with unread input would reset the connection, and a reset may
		 * discard the answer before the client has read it. */
		if (c->st == C_LINGER)
			conn_drain(c);
		h->c.evicted++;
		h->c.evicted_state[c->st]++;
		conn_close(h, c);
		return true;
	}
	return false;
}

static void count_fds(struct httpd *h, uint64_t now)
{
	long n = selfstat__open_fds();

	h->fd_limit = selfstat__fd_limit(); /* prlimit(1) may change it under us */
	if (n >= 0)
		h->other_fds = MAX(0L, n - (long)h->nconns);
	h->next_fdcount = now + FDCOUNT_MS;
}

/* May a connection be kept in descriptor fd? */
static bool have_room(struct httpd *h, int fd)
{
	uint64_t used = (uint64_t)h->other_fds + h->nconns + 1;

	if (h->nconns >= h->o.max_conns)
		return false;
	/* Linux hands out the lowest free descriptor: all below fd are taken. */
	if ((uint64_t)fd + HTTPD_FD_RESERVE >= h->fd_limit)
		return false;
	return used + HTTPD_FD_RESERVE <= h->fd_limit;
}

static void listen_arm(struct httpd *h, bool on)
{
	struct epoll_event e = { .events = on ? EPOLLIN : 0, .data.ptr = &tag_listen };

	if (h->listening != on && !epoll_ctl(h->epfd, EPOLL_CTL_MOD, h->lfd, &e))
		h->listening = on;
}

static void conn_new(struct httpd *h, int fd, uint64_t now)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP };

	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->worker = -1;
	c->accepted = now;
	c->deadline = now + HTTPD_HEADER_TIMEOUT;
	e.data.ptr = c;
	if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &e)) {
		close(fd);
		free(c);
		return;
	}
	c->st = C_READ;
	list_add_tail(&h->q[C_READ], c);
	h->nconns++;
	h->c.accepted++;
	/* A client that sent its request with the connection is answered now. */
	conn_read(h, c);
}

static void accept_some(struct httpd *h, uint64_t now)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;

			if (err == EAGAIN || err == EWOULDBLOCK)
				return;
			if (err == EINTR || err == ECONNABORTED || err == EPROTO)
				continue;
			h->c.accept_errors++;
			/* Out of descriptors (or memory): make room from an idle client,
			 * else rest the listening socket instead of spinning on it. */
			if ((err == EMFILE || err == ENFILE) && evict_one(h))
				continue;
			listen_arm(h, false);
			h->rest_until = now + ACCEPT_REST;
			warn_rl(h, &h->rl_accept,
				"HTTP endpoint: cannot accept connections: %s (%ld descriptors open, "
				"limit %" PRIu64
				"); new clients wait - raise the limit with ulimit -n",
				strerror(err), selfstat__open_fds(), selfstat__fd_limit());
			return;
		}
		if (now >= h->next_fdcount)
			count_fds(h, now);
		if (!have_room(h, fd) && !evict_one(h)) {
			h->c.refused++;
			refuse_fd(fd, 503, "too many connections\n");
			warn_rl(h, &h->rl_budget,
				"HTTP endpoint: %zu connections open, no room for more (at most %u; "
				"%" PRIu64 " descriptors, %u kept for profiles and files)",
				h->nconns, h->o.max_conns, h->fd_limit, HTTPD_FD_RESERVE);
			continue;
		}
		conn_new(h, fd, now);
	}
}

/*
 * Deadlines: header, write and linger timeouts. A state's deadlines come in
 * the order of its list, so each list is walked only up to the first that
 * is not due.
 */
static void sweep(struct httpd *h, uint64_t now)
{
	struct conn *c;

	while ((c = h->q[C_READ].first) && now >= c->deadline) {
		h->c.timeouts++;
		/* Best effort: the client learns why before the close. */
		text(h, c, 408, "request header timeout\n", false);
		if (c->st == C_WRITE)
			conn_close(h, c); /* it did not take even that */
	}
	while ((c = h->q[C_WRITE].first) && now >= c->deadline)
		conn_close(h, c);
	while ((c = h->q[C_LINGER].first) && now >= c->deadline)
		conn_close(h, c);
	h->next_sweep = now + SWEEP_MS;
}

static void *loop(void *arg)
{
	struct httpd *h = arg;
	struct epoll_event ev[64];

	for (;;) {
		uint64_t now = now_ms();
		int timeout = -1, n;

		pthread_mutex_lock(&h->lock);
		if (h->stop) {
			pthread_mutex_unlock(&h->lock);
			break;
		}
		pthread_mutex_unlock(&h->lock);
		if (h->nconns)
			timeout = h->next_sweep > now
					  ? (int)MIN(h->next_sweep - now, (uint64_t)SWEEP_MS)
					  : 0;
		if (!h->listening) {
			int rest = h->rest_until > now ? (int)(h->rest_until - now) : 0;

			timeout = timeout < 0 ? rest : MIN(timeout, rest);
		}
		n = epoll_wait(h->epfd, ev, (int)ARRAY_SIZE(ev), timeout);
		now = now_ms();
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &tag_listen) {
				accept_some(h, now);
			} else if (p == &tag_wake) {
				uint64_t v;

				if (read(h->evfd, &v, sizeof(v)) < 0) {
					/* EAGAIN: another turn already took it */
				}
				reap_workers(h);
			} else {
				conn_event(h, p, ev[i].events);
			}
		}
		if (!h->listening && now >= h->rest_until)
			listen_arm(h, true);
		if (now >= h->next_sweep)
			sweep(h, now);
		bury_dead(h);
	}
	return NULL;
}

/* ---- start and stop ---- */

static int listen_socket(const struct sockaddr_storage *ss, socklen_t len)
{
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 511)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

struct httpd *httpd__start(const struct httpd_opts *o, struct errmsg *em)
{
	struct epoll_event e = { .events = EPOLLIN };
	struct sockaddr_storage ss;
	struct httpd *h;
	socklen_t len;
	int r;

	if (httpd__parse_listen(o->listen, &ss, &len)) {
		errno = -errmsg_set(em, -EINVAL, "invalid --listen '%s': expected [ADDR:]PORT",
				    o->listen);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	h->o = *o;
	if (!h->o.max_conns)
		h->o.max_conns = HTTPD_MAX_CONNS;
	h->lfd = h->epfd = h->evfd = -1;
	pthread_mutex_init(&h->lock, NULL);
	selfstat__init();
	h->fd_limit = selfstat__fd_limit();
	r = listen_socket(&ss, len);
	if (r < 0) {
		errmsg_set(em, r, "cannot listen on %s: %s", o->listen, strerror(-r));
		goto err_free;
	}
	h->lfd = r;
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->epfd < 0 || h->evfd < 0) {
		errmsg_set(em, -errno, "cannot set up the HTTP event loop: %s", strerror(errno));
		goto err_free;
	}
	e.data.ptr = &tag_listen;
	r = epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->lfd, &e);
	e.data.ptr = &tag_wake;
	if (r || epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->evfd, &e)) {
		errmsg_set(em, -errno, "cannot set up the HTTP event loop: %s", strerror(errno));
		goto err_free;
	}
	h->listening = true;
	count_fds(h, now_ms());
	r = pthread_create(&h->loop, NULL, loop, h);
	if (r) {
		errmsg_set(em, -r, "cannot start the HTTP thread: %s", strerror(r));
		goto err_free;
	}
	h->loop_started = true;
	return h;

err_free:
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->epfd >= 0)
		close(h->epfd);
	if (h->evfd >= 0)
		close(h->evfd);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return NULL;
}

void httpd__stop(struct httpd *h)
{
	uint64_t one = 1;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_mutex_unlock(&h->lock);
	if (write(h->evfd, &one, sizeof(one)) < 0) {
		/* the loop also wakes on its own timeout */
	}
	if (h->loop_started)
		pthread_join(h->loop, NULL);
	for (int st = 0; st < C_DEAD; st++)
		while (h->q[st].first)
			conn_close(h, h->q[st].first);
	bury_dead(h);
	/* live__shutdown() has woken them: they end at once. */
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		if (h->workers[i].busy) {
			pthread_join(h->workers[i].th, NULL);
			free(h->workers[i].body);
		}
	}
	close(h->lfd);
	close(h->epfd);
	close(h->evfd);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
