// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_push.c - the parts of the Pyroscope client a server controls: its
 * Retry-After header (honoured, but only up to PUSH_MAX_RETRY_AFTER), what
 * the messages show of the URL (never a password), and answers that never
 * end (cut at the caps, counted and said; a server on loopback here).
 */
#include "testutil.h"

#include <arpa/inet.h>
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
	int conns;
	bool stop;
};

/*
 * Reads a request (header, then Content-Length bytes) and keeps its request
 * line in line; false if it did not come.
 */
static bool read_request(int fd, char *line, size_t size)
{
	static char buf[1 << 16];
	size_t n = 0, need = SIZE_MAX;

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
		if (n >= need)
			return true;
		if (n == sizeof(buf) - 1)
			n = 0, need -= sizeof(buf) - 1; /* keep reading, forget what came */
	}
}

static void *serve(void *arg)
{
	struct server *s = arg;
	static char chunk[65536];

	for (;;) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		const char *status;
		size_t sent = 0, limit = (size_t)64 << 20;
		char line[512] = "";
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
		if (fd < 0 || !read_request(fd, line, sizeof(line))) {
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
		}
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
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_shown_url),
		cmocka_unit_test(test_answers_over_the_caps),
		cmocka_unit_test(test_small_answer_is_fine),
		cmocka_unit_test(test_series_name_per_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
