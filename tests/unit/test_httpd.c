// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_httpd.c - the HTTP endpoint against hostile clients, on loopback (no
 * root, no BPF): malformed and oversized requests, every method but GET and
 * HEAD, more idle connections than the cap, more clients that got their
 * answer and never hang up than the cap, a client that stops reading, one
 * that half-closes; /healthz before the first drain and when one is overdue;
 * /debug/pprof/heap and /allocs (--alloc): their bounds, 404 in a CPU run
 * (and /profile's in an allocation run), the default sample type, a client
 * gone while one waits, a finisher that fails.
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>

#include "agent/httpd.h"
#include "base/errmsg.h"
#include "agent/live.h"
#include "agent/metrics.h"
#include "base/profile.h"
#include "format/writer.h"
#include "pprofdec.h"

struct fixture {
	struct metrics metrics;
	struct live *live;
	struct httpd *h;
	int port;
	/* setup_heap: an allocation run's endpoint, a fake engine ticking. */
	struct live *heap;
	pthread_t ticker;
	bool stop;
	int finished, fail;
	unsigned seconds; /* of the last finisher call */
};

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* Publishes a snapshot whose last drain completed `ago` ns ago (-1: none yet). */
static void drained(struct fixture *f, int64_t ago)
{
	struct metrics_snapshot s = { .drains = ago < 0 ? 0 : 1 };

	s.last_drain_ns = ago < 0 ? 0 : now_ns() - (uint64_t)ago;
	metrics__publish(&f->metrics, &s);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct httpd_opts o = { .content_type = "text/plain" };
	struct errmsg err = { 0 };
	char listen[16];

	metrics__init(&f->metrics, 1000000000ULL);
	drained(f, 0);
	f->live = live__new(&writer_folded, 99);
	f->port = free_port();
	snprintf(listen, sizeof(listen), "%d", f->port);
	o.listen = listen;
	o.live = f->live;
	o.metrics = &f->metrics;
	o.max_conns = 64;
	f->h = httpd__start(&o, &err);
	assert_non_null(f->h);
	*state = f;
	return 0;
}

/* The fake allocation engine's finisher: one site with blocks in use. */
static int heap_finish(void *ctx, struct profile *acc, unsigned seconds)
{
	struct fixture *f = ctx;
	struct psample s = { .pid = 1, .comm = "app" };
	struct palloc v = { 2, 8192, 1, 4096 };
	uint32_t fr = (uint32_t)profile__frame(acc, FRAME_USER, "keeper", "/bin/app");

	__atomic_add_fetch(&f->finished, 1, __ATOMIC_RELAXED);
	f->seconds = seconds;
	if (f->fail)
		return f->fail;
	return profile__add_alloc(acc, &s, &fr, 1, &v);
}

/* The engine's tick, every 10 ms, with no allocations. */
static void *ticker(void *arg)
{
	struct fixture *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		live__feed(f->heap, NULL, now_ns());
		usleep(10000);
	}
	return NULL;
}

/* An --alloc run's endpoint: a heap live, no CPU one. */
static int setup_heap(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct httpd_opts o = { .content_type = "text/plain" };
	struct errmsg err = { 0 };
	char listen[16];

	metrics__init(&f->metrics, 1000000000ULL);
	drained(f, 0);
	f->heap = live__new_heap(&writer_pprof, 4096, heap_finish, f);
	assert_non_null(f->heap);
	f->port = free_port();
	snprintf(listen, sizeof(listen), "%d", f->port);
	o.listen = listen;
	o.live_heap = f->heap;
	o.metrics = &f->metrics;
	o.max_conns = 64;
	f->h = httpd__start(&o, &err);
	assert_non_null(f->h);
	assert_int_equal(pthread_create(&f->ticker, NULL, ticker, f), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->heap) {
		__atomic_store_n(&f->stop, true, __ATOMIC_RELEASE);
		pthread_join(f->ticker, NULL);
		live__shutdown(f->heap);
	}
	if (f->live)
		live__shutdown(f->live);
	httpd__stop(f->h);
	live__free(f->live);
	live__free(f->heap);
	free(f);
	return 0;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Sends req (len bytes) and reads the answer until the server closes (5 s at most). */
static char *exchange(int port, const char *req, size_t len)
{
	static char buf[65536];
	size_t n = 0;
	int fd = connect_to(port);

	if (len)
		assert_int_equal(write(fd, req, len), (ssize_t)len);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		assert_int_equal(poll(&p, 1, 5000), 1);
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	return buf;
}

static char *get(int port, const char *req)
{
	return exchange(port, req, strlen(req));
}

static void test_get_and_head(void **state)
{
	struct fixture *f = *state;
	char *r;

	r = get(f->port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r, "Connection: close\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nok\n"));
	/* Bare LF lines, HTTP/1.0, an absolute target: all fine. */
	r = get(f->port, "GET http://h:1/healthz HTTP/1.0\n\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	r = get(f->port, "HEAD /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_null(strstr(r, "bpfprof_samples_total"));
	assert_null(strstr(r, "Content-Length: 0\r\n"));
	r = get(f->port, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "bpfprof_samples_total 0\n"));
	assert_non_null(strstr(r, "bpfprof_http_connections "));
	r = get(f->port, "GET /nope HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 "));
	r = get(f->port, "GET /debug/pprof/profile?seconds=0 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 400 "));
	r = get(f->port, "GET /debug/pprof/profile?x=1&seconds=99999 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 400 "));
}

static void test_other_methods_get_405_with_allow(void **state)
{
	static const char *methods[] = { "POST",  "PUT",     "DELETE",	 "PATCH", "OPTIONS",
					 "TRACE", "CONNECT", "PROPFIND", "get" };
	struct fixture *f = *state;
	char req[256];

	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		char *r;

		snprintf(req, sizeof(req), "%s /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nx=1",
			 methods[i]);
		r = get(f->port, req);
		assert_non_null(strstr(r, "HTTP/1.1 405 Method Not Allowed\r\n"));
		assert_non_null(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
	}
}

static void test_malformed_and_oversized(void **state)
{
	struct fixture *f = *state;
	static char big[HTTPD_HEADER_MAX + 512];
	static const char *bad[] = {
		"GARBAGE\r\n\r\n",	   "GET\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",  "GET /  HTTP/1.1\r\n\r\n",
		" GET / HTTP/1.1\r\n\r\n", "G\x01T / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1x\r\n\r\n", "\r\n\r\n",
	};
	char *r;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = get(f->port, bad[i]);
		assert_non_null(strstr(r, "HTTP/1.1 400 "));
	}
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', sizeof(big) - 19);
	r = exchange(f->port, big, sizeof(big));
	assert_non_null(strstr(r, "HTTP/1.1 431 "));
	/* A NUL in the header is just a byte. */
	r = exchange(f->port, "GET /healthz HTTP/1.1\r\nX: a\0b\r\n\r\n", 33);
	assert_non_null(strstr(r, "HTTP/1.1 200 "));
}

static void test_more_idle_clients_than_the_cap(void **state)
{
	struct fixture *f = *state;
	int fds[200];
	char *r;

	/* 200 silent connections against a cap of 64: the oldest give way. */
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		fds[i] = connect_to(f->port);
	usleep(200000);
	for (int k = 0; k < 5; k++) {
		r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
		assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	}
	r = get(f->port, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "bpfprof_http_connections_closed_total{reason=\"evicted\"} "));
	assert_null(strstr(r, "bpfprof_http_connections_closed_total{reason=\"evicted\"} 0\n"));
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		close(fds[i]);
}

static void test_healthz_tells_the_truth(void **state)
{
	struct fixture *f = *state;
	char *r;

	/* Before the first drain: 503 and why, with the same body for HEAD's length. */
	drained(f, -1);
	r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nnot ready: no drain yet (started "));
	r = get(f->port, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "\nbpfprof_healthy 0\n"));
	/* Drained: ok. */
	drained(f, 0);
	r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nok\n"));
	/* The last drain 13 s ago, with a 1 s period: overdue after 12 s. */
	drained(f, 13000000000LL);
	r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nstalled: no drain completed for 13 s "
				  "(overdue after 12 s: 2 drain periods of 1 s + 10 s)\n"));
	r = get(f->port, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "\nbpfprof_last_drain_age_seconds 13."));
	assert_non_null(strstr(r, "\nbpfprof_healthy 0\n"));
	r = get(f->port, "HEAD /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 503 "));
	assert_null(strstr(r, "stalled"));
}

/* Connects and sends a whole request at once; the answer is never read. */
static int send_and_hold(int port, const char *req)
{
	int fd = connect_to(port);

	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

static void test_clients_that_never_hang_up_make_room(void **state)
{
	struct fixture *f = *state;
	size_t answered = 0;
	int fds[300];
	char *r;

	/* 300 clients that got their answer (each lingers for 2 s) against a cap
	 * of 64: the oldest answered ones give way, never the new client. */
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		fds[i] = send_and_hold(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	for (int k = 0; k < 5; k++) {
		r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
		assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	}
	r = get(f->port, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "bpfprof_http_connections_closed_total{reason=\"no_room\"} 0\n"));
	assert_non_null(strstr(r, "bpfprof_http_connections_evicted_total{state=\"answered\"} "));
	assert_null(strstr(r, "bpfprof_http_connections_evicted_total{state=\"answered\"} 0\n"));
	/* Each evicted one got its whole answer before the close, not a reset
	 * (one accepted before its request arrived may have been evicted unanswered). */
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		char buf[512];
		ssize_t n = read(fds[i], buf, sizeof(buf) - 1);

		assert_true(n >= 0);
		buf[n] = '\0';
		answered += n > 0;
		if (n > 0)
			assert_non_null(strstr(buf, "\r\n\r\nok\n"));
		close(fds[i]);
	}
	assert_true(answered >= ARRAY_SIZE(fds) * 9 / 10);
}

/* Completes every open profile request of f's live with one sample. */
static void complete_profiles(struct fixture *f)
{
	struct profile *d = profile__new();
	struct psample s = { .pid = 1, .comm = "app" };
	uint32_t fr;

	assert_non_null(d);
	fr = (uint32_t)profile__frame(d, FRAME_USER, "main", "/bin/app");
	assert_int_equal(profile__add(d, &s, &fr, 1, 7), 0);
	live__feed(f->live, d, now_ns() + 10000000000ULL);
	profile__free(d);
}

static void test_half_close_gets_the_profile(void **state)
{
	static const char *reqs[] = {
		"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n\r\n",
		"GET /debug/pprof/profile?seconds=1 HTTP/1.0\r\n\r\n",
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(reqs); i++) {
		static char buf[65536];
		int fd = send_and_hold(f->port, reqs[i]);
		size_t n = 0;

		/* `nc -N`: the request, then the write side shut; it still reads. */
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
		for (int k = 0; k < 500 && !live__pending(f->live); k++)
			usleep(10000);
		usleep(100000); /* the end of input reaches the server */
		assert_int_equal(live__pending(f->live), 1);
		complete_profiles(f);
		for (;;) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			ssize_t r;

			assert_int_equal(poll(&p, 1, 5000), 1);
			r = read(fd, buf + n, sizeof(buf) - 1 - n);
			if (r <= 0)
				break;
			n += (size_t)r;
		}
		buf[n] = '\0';
		close(fd);
		if (i == 0) /* HTTP/1.1: asked whether it is still there, then answered */
			assert_non_null(strstr(buf, "HTTP/1.1 100 Continue\r\n\r\n"
						    "HTTP/1.1 200 OK\r\n"));
		else
			assert_true(!strncmp(buf, "HTTP/1.1 200 OK\r\n", 17));
		assert_non_null(strstr(buf, "app;main 7\n"));
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void test_half_closed_client_that_does_not_read_costs_nothing(void **state)
{
	struct fixture *f = *state;
	const char *req = "GET /debug/pprof/profile?seconds=1 HTTP/1.0\r\n\r\n";
	struct profile *d = profile__new();
	struct psample smp = { .pid = 1, .comm = "app" };
	int small = 4096, fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)f->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	double c0;
	char *r;

	/* A profile of ~10 MB (more than the sockets buffer), to a client with a
	 * small window that half-closes and never reads: the answer waits in
	 * WRITE, and the end of input must not wake the loop at every turn until
	 * the write timeout. */
	assert_non_null(d);
	for (int i = 0; i < 120000; i++) {
		char name[96];
		uint32_t fr;

		snprintf(name, sizeof(name),
			 "function_with_a_rather_long_name_number_%d_of_very_many_in_this_profile",
			 i);
		fr = (uint32_t)profile__frame(d, FRAME_USER, name, "/bin/app");
		assert_int_equal(profile__add(d, &smp, &fr, 1, 1), 0);
	}
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	for (int k = 0; k < 500 && !live__pending(f->live); k++)
		usleep(10000);
	live__feed(f->live, d, now_ns() + 10000000000ULL);
	profile__free(d);
	/* Answered: as much as the sockets take is sent once the ~10 MB answer
	 * is encoded, which a loaded machine stretches well past 200 ms; wait
	 * until a tenth of a second passes with the CPU quiet (the flaw keeps it
	 * busy: after 30 s the measure below sees it). */
	for (int k = 0; k < 300; k++) {
		c0 = cpu_seconds();
		usleep(100000);
		if (cpu_seconds() - c0 < 0.005)
			break;
	}
	c0 = cpu_seconds();
	usleep(1000000);
	if (getenv("TEST_HTTPD_SHOW_CPU"))
		print_message("%.3f s of CPU in 1 s\n", cpu_seconds() - c0);
	if (cpu_seconds() - c0 > 0.1)
		fail_msg("%.2f s of CPU in 1 s with one half-closed client not reading",
			 cpu_seconds() - c0);
	/* And the endpoint answers meanwhile (drained now: the wait above may
	 * pass the fixture's first drain's 12 s on a loaded machine). */
	drained(f, 0);
	r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	close(fd);
}

static void test_client_gone_while_profiling(void **state)
{
	struct fixture *f = *state;
	char *r;

	/* Four profile requests hang up: their slots come back at once, not after their seconds. */
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		int fd = connect_to(f->port);
		const char *req = "GET /debug/pprof/profile?seconds=3600 HTTP/1.1\r\n\r\n";

		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		close(fd);
	}
	r = get(f->port, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	/* Nothing feeds this live: only the hang-ups can free the slots. */
	for (int i = 0; i < 200 && live__pending(f->live); i++)
		usleep(10000);
	assert_int_equal(live__pending(f->live), 0);
}

/* The body of an answer get() returned (its Content-Length bytes). */
static const char *body_of(const char *r, size_t *len)
{
	const char *cl = strstr(r, "Content-Length: "), *b = strstr(r, "\r\n\r\n");

	assert_non_null(cl);
	assert_non_null(b);
	*len = strtoul(cl + 16, NULL, 10);
	return b + 4;
}

/* GETs a heap profile and reads its sample types back. */
static void get_heap(struct fixture *f, const char *req, struct pprofdec *d)
{
	static char copy[65536];
	const char *r = get(f->port, req), *b;
	size_t len;

	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r, "Content-Type: application/octet-stream\r\n"));
	b = body_of(r, &len);
	assert_true(len > 0 && len < sizeof(copy));
	memcpy(copy, b, len);
	pprofdec(copy, len, d);
	assert_int_equal(d->ntypes, 4);
	assert_string_equal(pprofdec_str(d, d->types[1]), "alloc_space");
	assert_string_equal(pprofdec_str(d, d->types[3]), "inuse_space");
	assert_int_equal(d->period, 4096);
	assert_int_equal(d->nsamples, 1);
}

static void test_heap_is_404_in_a_cpu_run(void **state)
{
	struct fixture *f = *state;
	char *r;

	r = get(f->port, "GET /debug/pprof/heap HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nnot an allocation profiling run (--alloc)\n"));
	r = get(f->port, "GET /debug/pprof/allocs?seconds=1 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	assert_non_null(strstr(r, "not an allocation profiling run (--alloc)\n"));
	r = get(f->port, "GET / HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "/debug/pprof/profile?seconds=N, /metrics, /healthz\n"));
	assert_null(strstr(r, "heap"));
}

static void test_heap_routes_and_bounds(void **state)
{
	static const char *bad[] = {
		"/debug/pprof/heap?seconds=0",	      "/debug/pprof/heap?seconds=3601",
		"/debug/pprof/allocs?seconds=x",      "/debug/pprof/allocs?seconds=-1",
		"/debug/pprof/heap?gc=1&seconds=1e3", "/debug/pprof/allocs?seconds=",
	};
	struct fixture *f = *state;
	struct pprofdec d;
	char req[128], *r;
	uint64_t t0;
	int finished;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n\r\n", bad[i]);
		r = get(f->port, req);
		assert_non_null(strstr(r, "HTTP/1.1 400 Bad Request\r\n"));
		assert_non_null(strstr(r, "seconds must be 1 to 3600\n"));
	}
	/* The text format is not served: protobuf only. */
	r = get(f->port, "GET /debug/pprof/heap?debug=1 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 400 Bad Request\r\n"));
	assert_non_null(strstr(r, "protobuf only\n"));
	r = get(f->port, "GET /debug/pprof/allocs?seconds=1&debug=2 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 400 Bad Request\r\n"));
	/* No CPU profile in an allocation run. */
	r = get(f->port, "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	assert_non_null(strstr(r, "not a CPU profiling run"));
	assert_int_equal(f->finished, 0);

	/* /heap: the profile now, Go's heap profile (no default type). */
	get_heap(f, "GET /debug/pprof/heap HTTP/1.1\r\n\r\n", &d);
	assert_int_equal(d.dflt, -1);
	assert_int_equal(f->finished, 1);
	assert_int_equal(f->seconds, 0);
	/* /allocs: alloc_space the default; gc= and debug=0 change nothing. Within
	 * LIVE_HEAP_GAP_NS of the last build it is that build, encoded anew. */
	get_heap(f, "GET /debug/pprof/allocs?gc=1&debug=0 HTTP/1.1\r\n\r\n", &d);
	assert_true(d.dflt >= 0);
	assert_string_equal(pprofdec_str(&d, (uint64_t)d.dflt), "alloc_space");
	assert_int_equal(f->seconds, 0);
	finished = f->finished;
	assert_true(finished == 1 || finished == 2);
	/* A window: answered when it ends. */
	t0 = now_ns();
	get_heap(f, "GET /debug/pprof/allocs?seconds=1 HTTP/1.1\r\n\r\n", &d);
	assert_true(now_ns() - t0 >= NS_PER_SEC);
	assert_int_equal(f->seconds, 1);
	assert_string_equal(pprofdec_str(&d, (uint64_t)d.dflt), "alloc_space");
	assert_int_equal(f->finished, finished + 1);
	/* HEAD: the headers only. */
	r = get(f->port, "HEAD /debug/pprof/heap HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r, "Content-Type: application/octet-stream\r\n"));
	assert_true(strlen(r) == (size_t)(strstr(r, "\r\n\r\n") + 4 - r));
	/* The index lists what this run serves. */
	r = get(f->port, "GET / HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "/debug/pprof/heap, /debug/pprof/allocs"));
	assert_null(strstr(r, "/debug/pprof/profile"));
}

static void test_heap_finisher_failing_is_a_500(void **state)
{
	struct fixture *f = *state;
	char *r;

	f->fail = -EIO;
	r = get(f->port, "GET /debug/pprof/heap HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"));
	assert_non_null(strstr(r, "cannot make the profile: "));
	f->fail = 0;
	r = get(f->port, "GET /debug/pprof/heap HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
}

static void test_heap_client_gone_frees_its_slot(void **state)
{
	struct fixture *f = *state;
	int fds[LIVE_MAX_REQUESTS];
	char *r;

	/* The heap live's slots, all taken, come back at once when their clients
	 * hang up (the waiter is woken on the live it waits on, not the CPU's). */
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		const char *req = "GET /debug/pprof/allocs?seconds=3600 HTTP/1.1\r\n\r\n";

		fds[i] = connect_to(f->port);
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
		for (int k = 0; k < 500 && live__pending(f->heap) <= i; k++)
			usleep(10000);
		assert_int_equal(live__pending(f->heap), i + 1); /* it took a slot */
	}
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++)
		close(fds[i]);
	for (int i = 0; i < 200 && live__pending(f->heap); i++)
		usleep(10000);
	assert_int_equal(live__pending(f->heap), 0);
	r = get(f->port, "GET /debug/pprof/heap HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
}

int main(void)
{
	struct rlimit rl;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_and_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_methods_get_405_with_allow, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_malformed_and_oversized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_more_idle_clients_than_the_cap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_client_gone_while_profiling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_healthz_tells_the_truth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clients_that_never_hang_up_make_room, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_half_close_gets_the_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_half_closed_client_that_does_not_read_costs_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_is_404_in_a_cpu_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_routes_and_bounds, setup_heap, teardown),
		cmocka_unit_test_setup_teardown(test_heap_finisher_failing_is_a_500, setup_heap,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_client_gone_frees_its_slot, setup_heap,
						teardown),
	};

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 1024) {
		rl.rlim_cur = MIN(rl.rlim_max, 1024);
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
