// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_push.c - the parts of the Pyroscope client a server controls: its
 * Retry-After header (honoured, but only up to PUSH_MAX_RETRY_AFTER), what
 * the messages show of the URL (never a password), and answers that never
 * end (cut at the caps, counted and said; a server on loopback here).
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "agent/push.h"
#include "base/errmsg.h"
#include "base/profile.h"
#include "format/writer.h"

static void test_retry_after(void **state)
{
	time_t now = 1700000000; /* Tue, 14 Nov 2023 22:13:20 GMT */

	assert_int_equal(pusher__retry_after("5", now), 5);
	assert_int_equal(pusher__retry_after(" 7 \r\n", now), 7);
	assert_int_equal(pusher__retry_after("0", now), 0);
	assert_int_equal(pusher__retry_after("99999", now), PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("999999999999", now), PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now), 30);
	assert_int_equal(pusher__retry_after("Wed, 15 Nov 2023 22:13:20 GMT", now),
			 PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("Mon, 13 Nov 2023 22:13:20 GMT", now), 0);
	/* Not a number of seconds, not an IMF date: ignored (the backoff applies). */
	assert_int_equal(pusher__retry_after("", now), -1);
	assert_int_equal(pusher__retry_after("-1", now), -1);
	assert_int_equal(pusher__retry_after("1.5", now), -1);
	assert_int_equal(pusher__retry_after("5s", now), -1);
	assert_int_equal(pusher__retry_after("9999999999999", now), -1);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50", now), -1);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50 GMT junk", now), -1);
	assert_int_equal(pusher__retry_after("soon", now), -1);
}

static void test_shown_url(void **state)
{
	char out[256];

	pusher__shown_url("https://u:secret@host:4040/p", out, sizeof(out));
	assert_string_equal(out, "https://host:4040/p");
	pusher__shown_url("http://host/a@b", out, sizeof(out));
	assert_string_equal(out, "http://host/a@b");
	pusher__shown_url("u:secret@host", out, sizeof(out));
	assert_string_equal(out, "host");
	pusher__shown_url("http://host", out, sizeof(out));
	assert_string_equal(out, "http://host");
}

/* --- a push server whose answer does not end --- */

enum answer { ENDLESS_HEADER_LINES, ONE_ENDLESS_LINE, ENDLESS_BODY, HUGE_LENGTH, SMALL_OK };

struct server {
	int lfd, port;
	enum answer mode;
	pthread_t th;
	pthread_mutex_t lock;
	size_t sent[16];    /* per connection: bytes sent after the status line */
	char line[16][512]; /* per connection: the request line */
	char *req[16];	    /* per connection: the whole request (malloc), if under 64 KiB */
	size_t req_len[16];
	int conns;
	bool stop;
};

/*
 * Reads a request (header, then Content-Length bytes) and keeps its request
 * line in line, and a copy of the whole of it in *whole if it fits the
 * buffer (else NULL); false if it did not come.
 */
static bool read_request(int fd, char *line, size_t size, char **whole, size_t *whole_len)
{
	static char buf[1 << 16];
	size_t n = 0, need = SIZE_MAX;
	bool wrapped = false;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char *end;
		ssize_t r;

		if (poll(&p, 1, 5000) != 1)
			return false;
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			return false;
		n += (size_t)r;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end && need == SIZE_MAX) {
			const char *cl = strcasestr(buf, "Content-Length:");

			snprintf(line, size, "%.*s", (int)strcspn(buf, "\r\n"), buf);
			need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		}
		if (n >= need) {
			*whole = wrapped ? NULL : malloc(n);
			if (*whole)
				memcpy(*whole, buf, n);
			*whole_len = *whole ? n : 0;
			return true;
		}
		if (n == sizeof(buf) - 1)
			n = 0, need -= sizeof(buf) - 1, wrapped = true; /* keep reading, forget */
	}
}

static void *serve(void *arg)
{
	struct server *s = arg;
	static char chunk[65536];

	for (;;) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		const char *status;
		size_t sent = 0, limit = (size_t)64 << 20, req_len = 0;
		char line[512] = "", *req = NULL;
		int fd, k;

		pthread_mutex_lock(&s->lock);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		pthread_mutex_unlock(&s->lock);
		if (poll(&p, 1, 100) != 1)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0 || !read_request(fd, line, sizeof(line), &req, &req_len)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		switch (s->mode) {
		case ENDLESS_HEADER_LINES:
			status = "HTTP/1.1 200 OK\r\n";
			for (size_t i = 0; i + 1024 <= sizeof(chunk); i += 1024) {
				memset(chunk + i, 'a', 1022);
				memcpy(chunk + i, "X-A: ", 5);
				memcpy(chunk + i + 1022, "\r\n", 2);
			}
			break;
		case ONE_ENDLESS_LINE:
			status = "HTTP/1.1 200 OK\r\nX-Big: ";
			memset(chunk, 'a', sizeof(chunk));
			break;
		case HUGE_LENGTH:
			status = "HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n";
			memset(chunk, 'a', sizeof(chunk));
			break;
		case ENDLESS_BODY:
			status = "HTTP/1.1 200 OK\r\n\r\n"; /* no length: to the close */
			memset(chunk, 'a', sizeof(chunk));
			break;
		default:
			status = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
			limit = 0;
			break;
		}
		if (send(fd, status, strlen(status), MSG_NOSIGNAL) < 0)
			limit = 0;
		while (sent < limit) {
			ssize_t w = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);

			if (w <= 0)
				break;
			sent += (size_t)w;
		}
		close(fd);
		pthread_mutex_lock(&s->lock);
		k = s->conns++;
		if (k < (int)ARRAY_SIZE(s->sent)) {
			s->sent[k] = sent;
			memcpy(s->line[k], line, sizeof(line));
			s->req[k] = req, s->req_len[k] = req_len;
			req = NULL;
		}
		free(req);
		pthread_mutex_unlock(&s->lock);
	}
}

static void server_start(struct server *s, enum answer mode)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	pthread_mutex_init(&s->lock, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 8), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->lock);
}

static void server_free(struct server *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->req); i++)
		free(s->req[i]);
}

static char warned[2048];

static void on_warn(void *ctx, const char *msg)
{
	snprintf(warned, sizeof(warned), "%s", msg);
}

static long sysctl_max(const char *path)
{
	long a, b, c;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld %ld", &a, &b, &c), 3);
	fclose(f);
	return c;
}

/*
 * One profile (with --off-cpu's values if offcpu: two uploads) pushed with
 * writer w to a server answering `mode`: the stats once every attempt is over.
 */
static void push_with(const struct writer *w, bool offcpu, enum answer mode,
		      struct pusher_stats *st, struct server *s)
{
	struct profile *p = profile__new();
	struct psample smp = { .pid = 1, .comm = "app" };
	struct pusher_opts o = { .app = "t",
				 .freq = 99,
				 .writer = w,
				 .max_attempts = 1,
				 .timeout_s = 10,
				 .warn = on_warn };
	struct errmsg em = { 0 };
	struct pusher *ps;
	char url[64];
	uint32_t f;

	server_start(s, mode);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	o.url = url;
	warned[0] = '\0';
	ps = pusher__start(&o, &em);
	assert_non_null(ps);
	f = (uint32_t)profile__frame(p, FRAME_USER, "main", "/bin/app");
	assert_int_equal(profile__add(p, &smp, &f, 1, 5), 0);
	if (offcpu) {
		profile__meta(p)->offcpu = true;
		assert_int_equal(profile__add_offcpu(p, &smp, &f, 1, 3000000), 0);
	}
	assert_int_equal(pusher__submit(ps, p, 0, 1000000000ULL), 0);
	for (int i = 0; i < 1500; i++) {
		pusher__stats(ps, st);
		if (st->sent + st->failed >= 1u + offcpu)
			break;
		usleep(10000);
	}
	pusher__stop(ps, 0, st);
	server_stop(s);
	profile__free(p);
}

static void push_once(enum answer mode, struct pusher_stats *st, struct server *s)
{
	push_with(&writer_folded, false, mode, st, s);
}

static void test_answers_over_the_caps(void **state)
{
	static const struct {
		enum answer mode;
		const char *said;
		size_t cap;
	} cases[] = {
		{ ENDLESS_HEADER_LINES, "response too large (over 65536 bytes of headers)",
		  PUSH_MAX_RESPONSE_HEADERS },
		{ ONE_ENDLESS_LINE, "response too large (over 102400 bytes in one header line)",
		  100 * 1024 /* libcurl's CURL_MAX_HTTP_HEADER */ },
		{ ENDLESS_BODY, "HTTP 200, response too large (over 1048576 bytes of body)",
		  PUSH_MAX_RESPONSE_BODY },
		{ HUGE_LENGTH, "response too large (over 1048576 bytes of body)", 0 },
	};
	/* What the agent may have taken in before closing: the cap, both sockets'
	 * buffers and libcurl's own. */
	size_t slack = (size_t)(sysctl_max("/proc/sys/net/ipv4/tcp_rmem") +
				sysctl_max("/proc/sys/net/ipv4/tcp_wmem")) +
		       65536;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pusher_stats st;
		struct server s;
		uint64_t t0 = now_ns();

		push_once(cases[i].mode, &st, &s);
		assert_int_equal(st.sent, 0);
		assert_int_equal(st.failed, 1);
		assert_int_equal(st.too_large, 1);
		if (!strstr(warned, cases[i].said))
			fail_msg("case %zu: '%s' not in '%s'", i, cases[i].said, warned);
		assert_int_equal(s.conns, 1);
		if (s.sent[0] > cases[i].cap + slack)
			fail_msg("case %zu: the server sent %zu bytes", i, s.sent[0]);
		/* Cut at the cap, not at the 10 s timeout. */
		assert_true(now_ns() - t0 < 5000000000ULL);
		server_free(&s);
	}
}

static void test_small_answer_is_fine(void **state)
{
	struct pusher_stats st;
	struct server s;

	push_once(SMALL_OK, &st, &s);
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.too_large, 0);
	server_free(&s);
}

/*
 * The series name Pyroscope gets. A pprof body's profile type is read from
 * its sample types and the name is taken whole as service_name
 * (grafana/pyroscope pkg/og/convert/pprof/profile.go createLabels; its
 * ingest_handler_test.go: name=pprof.test{...} -> service_name "pprof.test"),
 * so the name is the app's alone: name=t{...}, on-CPU and off-CPU alike. A
 * folded body's type is the name's last ".SUFFIX" (ingest_adapter.go
 * convertMetadata): name=t.cpu{...}, t.off_cpu{...}.
 */
static void test_series_name_per_format(void **state)
{
	static const struct {
		const struct writer *w;
		const char *name[2]; /* on-CPU, off-CPU */
	} cases[] = {
		{ &writer_pprof, { "?name=t%7Bhostname%3D", "?name=t%7Bhostname%3D" } },
		{ &writer_folded,
		  { "?name=t.cpu%7Bhostname%3D", "?name=t.off_cpu%7Bhostname%3D" } },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pusher_stats st;
		struct server s;

		push_with(cases[i].w, true, SMALL_OK, &st, &s);
		assert_int_equal(st.sent, 2);
		assert_int_equal(s.conns, 2);
		for (int k = 0; k < 2; k++) {
			const char *fmt = strstr(s.line[k], "&format=pprof");

			if (!strstr(s.line[k], cases[i].name[k]))
				fail_msg("case %zu: '%s' not in '%s'", i, cases[i].name[k],
					 s.line[k]);
			assert_true(cases[i].w == &writer_pprof ? fmt != NULL : fmt == NULL);
		}
		assert_non_null(strstr(s.line[0], "&units=samples&"));
		assert_non_null(strstr(s.line[1], cases[i].w == &writer_pprof
							  ? "&units=nanoseconds&"
							  : "&units=microseconds&"));
		for (int k = 0; k < 2; k++)
			assert_non_null(s.req[k] &&
					strstr(s.req[k], "\r\nContent-Type: "
							 "application/octet-stream\r\n"));
		server_free(&s);
	}
}

/* --- heap profiles: multipart, as Pyroscope takes them with their types' config --- */

/* Header name's value in the request's head (up to "\r\n\r\n") into out; false if absent. */
static bool header_value(const char *req, size_t len, const char *name, char *out, size_t size)
{
	const char *end = memmem(req, len, "\r\n\r\n", 4), *h = req;
	size_t n = strlen(name);

	assert_non_null(end);
	while ((h = memmem(h, (size_t)(end - h), "\r\n", 2)) && h < end) {
		h += 2;
		if (!strncasecmp(h, name, n) && h[n] == ':') {
			h += n + 1;
			while (*h == ' ')
				h++;
			snprintf(out, size, "%.*s", (int)strcspn(h, "\r"), h);
			return true;
		}
	}
	return false;
}

/* What curl_easy_escape() makes of s: RFC 3986's unreserved characters kept. */
static void escape(const char *s, char *out, size_t size)
{
	size_t n = 0;

	for (; *s && n + 4 < size; s++) {
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			out[n++] = *s;
		else
			n += (size_t)snprintf(out + n, size - n, "%%%02X", (unsigned char)*s);
	}
	out[n] = '\0';
}

/* An allocation profile: one site, two processes, one of them in a container. */
static struct profile *heap_profile(void)
{
	struct profile *p = profile__new();
	struct psample a = { .pid = 1, .comm = "app" };
	struct psample b = { .pid = 2, .comm = "app2", .container = "c0ffee" };
	struct palloc va = { 3, 3 * 4096, 1, 4096 }, vb = { 5, 500, 0, 0 };
	uint32_t f;

	assert_non_null(p);
	profile__meta(p)->alloc_period = 512 * 1024;
	profile__meta(p)->start_ns = 1700000000000000000ULL;
	profile__meta(p)->duration_ns = 10000000000ULL;
	f = (uint32_t)profile__frame(p, FRAME_USER, "alloc_site", "/bin/app");
	assert_int_equal(profile__add_alloc(p, &a, &f, 1, &va), 0);
	assert_int_equal(profile__add_alloc(p, &b, &f, 1, &vb), 0);
	return p;
}

/*
 * A heap profile goes as grafana/pyroscope's /ingest reads one with its
 * sample types' config (ingest_handler.go: no "format", or the body is taken
 * whole as the profile; a Content-Type holding "multipart/form-data";
 * pkg/og/convert/pprof/profile.go loadPprofFromForm: the parts "profile" and
 * "sample_type_config" read as form files; pkg/og/storage/tree's
 * SampleTypeConfig JSON keys). Checked byte for byte: the request line, the
 * boundary in the header, the whole body; one series for all containers; a
 * new boundary per request; always pprof, whatever the CPU series' writer.
 */
static void test_heap_push_is_multipart(void **state)
{
	static const char config[] =
		"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"
		"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
		"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}";
	const struct writer *writers[] = { &writer_pprof, &writer_folded };
	struct profile *heap = heap_profile(), *cpu = profile__new();
	struct psample smp = { .pid = 1, .comm = "app" };
	char host[256] = "", esc[800], line[1024], *pb = NULL;
	const uint64_t from = 1700000000000000000ULL, until = from + 10000000000ULL;
	struct out_opts oo = { 0 };
	size_t pblen = 0;
	uint32_t f;
	FILE *mf;

	/* The profile part: the heap profile as the pprof writer writes it. */
	mf = open_memstream(&pb, &pblen);
	assert_non_null(mf);
	assert_int_equal(writer__write_file(&writer_pprof, heap, mf, &oo), 0);
	fclose(mf);
	gethostname(host, sizeof(host) - 1);
	escape(host, esc, sizeof(esc));
	snprintf(line, sizeof(line),
		 "POST /ingest?name=t%%7Bhostname%%3D%s%%7D&from=1700000000&until=1700000010"
		 "&spyName=bpfprof HTTP/1.1",
		 esc);
	f = (uint32_t)profile__frame(cpu, FRAME_USER, "main", "/bin/app");
	assert_int_equal(profile__add(cpu, &smp, &f, 1, 5), 0);

	for (size_t i = 0; i < ARRAY_SIZE(writers); i++) {
		struct pusher_opts o = { .app = "t", .freq = 99, .writer = writers[i] };
		struct errmsg em = { 0 };
		char url[64], bnd[2][256];
		struct pusher_stats st;
		struct pusher *ps;
		struct server s;

		server_start(&s, SMALL_OK);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
		o.url = url;
		ps = pusher__start(&o, &em);
		assert_non_null(ps);
		/* Each profile only as its own kind. */
		assert_int_equal(pusher__submit_kind(ps, PUSH_CPU, heap, from, until), -EINVAL);
		assert_int_equal(pusher__submit_kind(ps, PUSH_HEAP, cpu, from, until), -EINVAL);
		assert_int_equal(pusher__submit_kind(ps, PUSH_HEAP, heap, from, until), 0);
		assert_int_equal(pusher__submit_kind(ps, PUSH_HEAP, heap, from, until), 0);
		assert_int_equal(pusher__submit_kind(ps, PUSH_CPU, cpu, from, until), 0);
		for (int k = 0; k < 1500; k++) {
			pusher__stats(ps, &st);
			if (st.sent + st.failed >= 3)
				break;
			usleep(10000);
		}
		pusher__stop(ps, 0, &st);
		server_stop(&s);
		assert_int_equal(st.sent, 3);
		/* Two heap uploads (one series, though two containers), then the CPU one. */
		assert_int_equal(s.conns, 3);
		for (int k = 0; k < 2; k++) {
			const char *body;
			char ct[256], cl[32];
			struct sbuf want = { 0 };

			assert_non_null(s.req[k]);
			assert_string_equal(s.line[k], line);
			assert_null(strstr(s.line[k], "format="));
			assert_true(header_value(s.req[k], s.req_len[k], "Content-Type", ct,
						 sizeof(ct)));
			if (strncmp(ct, "multipart/form-data; boundary=", 30))
				fail_msg("writer %zu: Content-Type: %s", i, ct);
			/* RFC 2046 bchars, 1 to 70 of them, no quotes needed. */
			snprintf(bnd[k], sizeof(bnd[k]), "%s", ct + 30);
			assert_true(strlen(bnd[k]) >= 16 && strlen(bnd[k]) <= 70);
			assert_int_equal(strspn(bnd[k], "0123456789abcdefghijklmnopqrstuvwxyz"
							"ABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?"),
					 strlen(bnd[k]));
			assert_int_equal(
				sbuf_printf(&want,
					    "--%s\r\nContent-Disposition: form-data; "
					    "name=\"profile\"; filename=\"profile.pprof\"\r\n"
					    "Content-Type: application/octet-stream\r\n\r\n",
					    bnd[k]),
				0);
			assert_int_equal(sbuf_add(&want, pb, pblen), 0);
			assert_int_equal(
				sbuf_printf(&want,
					    "\r\n--%s\r\nContent-Disposition: form-data; "
					    "name=\"sample_type_config\"; "
					    "filename=\"sample_type_config.json\"\r\n"
					    "Content-Type: application/octet-stream\r\n\r\n"
					    "%s\r\n--%s--\r\n",
					    bnd[k], config, bnd[k]),
				0);
			assert_true(header_value(s.req[k], s.req_len[k], "Content-Length", cl,
						 sizeof(cl)));
			assert_int_equal(strtoul(cl, NULL, 10), want.len);
			body = (const char *)memmem(s.req[k], s.req_len[k], "\r\n\r\n", 4) + 4;
			assert_int_equal((size_t)(s.req[k] + s.req_len[k] - body), want.len);
			if (memcmp(body, want.buf, want.len))
				fail_msg("writer %zu, request %d: the body is not the expected one",
					 i, k);
			sbuf_free(&want);
		}
		assert_string_not_equal(bnd[0], bnd[1]);
		/* The CPU series as before. */
		assert_non_null(strstr(s.req[2], "\r\nContent-Type: application/octet-stream\r\n"));
		assert_true((strstr(s.line[2], "&format=pprof") != NULL) ==
			    (writers[i] == &writer_pprof));
		server_free(&s);
	}
	free(pb);
	profile__free(heap);
	profile__free(cpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_shown_url),
		cmocka_unit_test(test_answers_over_the_caps),
		cmocka_unit_test(test_small_answer_is_fine),
		cmocka_unit_test(test_series_name_per_format),
		cmocka_unit_test(test_heap_push_is_multipart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
