// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_live.c - the heap live (agent/live.h) behind /debug/pprof/heap and
 * /allocs: seconds=0 completes at the next feed with only what the finisher
 * adds, seconds=N accumulates the fed deltas, the finisher runs on the
 * feeding thread outside the live's lock, its error fails the request, the
 * profile is a heap profile (meta.alloc_period, Go's four types) whose
 * default sample type is alloc_space for /allocs and none for /heap; the
 * sinks open it (and no CPU live) for an --alloc run with --listen. What a
 * client cannot make the main loop do: the seconds=0 requests due at one
 * feed share one finisher call, a heap live builds at most once per
 * LIVE_HEAP_GAP_NS (a seconds=0 request within it gets the last build), the
 * encoding runs on the waiting thread. A window's lost and alloc_on_ns are
 * the sums of its deltas'.
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "agent/live.h"
#include "base/profile.h"
#include "format/writer.h"
#include "session/record.h"
#include "pprofdec.h"

#define PERIOD 524288

/* The profile as the allocation engine hands it: one site, alloc values. */
static struct profile *alloc_profile(const char *fn, uint64_t objects, uint64_t bytes,
				     uint64_t inuse)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 7, .comm = "app" };
	struct palloc v = { objects, bytes, inuse ? 1 : 0, inuse };
	uint32_t f = (uint32_t)profile__frame(p, FRAME_USER, fn, "/bin/app");

	profile__meta(p)->alloc_period = PERIOD;
	assert_int_equal(profile__add_alloc(p, &s, &f, 1, &v), 0);
	return p;
}

/* ---- a fake allocation engine: the finisher ---- */

struct engine {
	struct live *l;
	int calls;
	unsigned seconds;	      /* of the last call */
	size_t acc_samples;	      /* what acc held when it was called */
	uint64_t acc_bytes;	      /* alloc_bytes summed over acc's samples */
	int pending_in_finish;	      /* live__pending() from inside: the lock is not held */
	int fail;		      /* -errno to return */
	uint64_t acc_lost, acc_on_ns; /* acc's meta when it was called */
	uint64_t acc_start, acc_duration;
};

static int finish(void *ctx, struct profile *acc, unsigned seconds)
{
	struct engine *e = ctx;
	struct profile *now;
	int err;

	e->calls++;
	e->seconds = seconds;
	e->acc_samples = profile__nr_samples(acc);
	e->acc_lost = profile__meta(acc)->lost;
	e->acc_on_ns = profile__meta(acc)->alloc_on_ns;
	e->acc_start = profile__meta(acc)->start_ns;
	e->acc_duration = profile__meta(acc)->duration_ns;
	e->acc_bytes = 0;
	for (size_t i = 0; i < e->acc_samples; i++)
		e->acc_bytes += profile__sample(acc, i)->alloc.alloc_bytes;
	/* Would deadlock if the finisher ran under the live's lock. */
	e->pending_in_finish = live__pending(e->l);
	if (e->fail)
		return e->fail;
	/* The blocks in use now (and, seconds = 0, the totals since the start). */
	now = alloc_profile("keeper", seconds ? 0 : 10, seconds ? 0 : 10 * PERIOD, 3 * PERIOD);
	err = profile__merge(acc, now);
	profile__free(now);
	return err;
}

struct request {
	struct live *l;
	unsigned seconds;
	enum view view;
	int err;
	char *body;
	size_t len;
};

static void *request_thread(void *arg)
{
	struct request *r = arg;

	r->err = live__collect_or_cancel(r->l, r->seconds, r->view, NULL, &r->body, &r->len);
	return NULL;
}

static void start(struct request *r, pthread_t *t, int before)
{
	assert_int_equal(pthread_create(t, NULL, request_thread, r), 0);
	while (live__pending(r->l) == before)
		usleep(1000);
}

static int setup(void **state)
{
	struct engine *e = calloc(1, sizeof(*e));

	e->l = live__new_heap(&writer_pprof, PERIOD, finish, e);
	assert_non_null(e->l);
	assert_true(live__is_heap(e->l));
	alarm(20); /* a lock held across the finisher hangs: fail instead */
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct engine *e = *state;

	alarm(0);
	live__shutdown(e->l);
	live__free(e->l);
	free(e);
	return 0;
}

static void test_heap_without_seconds_completes_at_the_next_feed(void **state)
{
	struct engine *e = *state;
	struct request r = { .l = e->l, .seconds = 0, .view = VIEW_AUTO };
	struct profile *d = alloc_profile("churn", 4, 4 * PERIOD, 0);
	struct pprofdec dec;
	pthread_t t;

	start(&r, &t, 0);
	/* The next feed, whenever it comes: its delta is not the profile's
	 * (the finisher gives the totals since the start instead). */
	live__feed(e->l, d, now_ns());
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(e->calls, 1);
	assert_int_equal(e->seconds, 0);
	assert_int_equal(e->acc_samples, 0);
	assert_int_equal(e->pending_in_finish, 1);
	pprofdec(r.body, r.len, &dec);
	assert_int_equal(dec.ntypes, 4);
	assert_string_equal(pprofdec_str(&dec, dec.types[0]), "alloc_objects");
	assert_string_equal(pprofdec_str(&dec, dec.types[1]), "alloc_space");
	assert_string_equal(pprofdec_str(&dec, dec.types[2]), "inuse_objects");
	assert_string_equal(pprofdec_str(&dec, dec.types[3]), "inuse_space");
	assert_int_equal(dec.period, PERIOD);
	assert_int_equal(dec.nsamples, 1); /* keeper only: churn was not merged */
	/* /heap as Go's: no default type (pprof shows the last, inuse_space). */
	assert_int_equal(dec.dflt, -1);
	free(r.body);
	assert_int_equal(live__pending(e->l), 0);
	profile__free(d);
}

static void test_allocs_over_seconds_accumulates_and_defaults_to_alloc_space(void **state)
{
	struct engine *e = *state;
	struct request r = { .l = e->l, .seconds = 2, .view = VIEW_ALLOC_SPACE };
	struct profile *d = alloc_profile("churn", 4, 4 * PERIOD, 0);
	struct pprofdec dec;
	pthread_t t;

	start(&r, &t, 0);
	live__feed(e->l, d, now_ns());
	live__feed(e->l, NULL, now_ns()); /* a tick with no allocations */
	live__feed(e->l, d, now_ns());
	assert_int_equal(e->calls, 0); /* not due yet */
	live__feed(e->l, d, now_ns() + 3 * NS_PER_SEC);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(e->calls, 1);
	assert_int_equal(e->seconds, 2);
	assert_int_equal(e->acc_samples, 1);
	assert_int_equal(e->acc_bytes, 3 * 4 * PERIOD);
	pprofdec(r.body, r.len, &dec);
	assert_int_equal(dec.ntypes, 4);
	assert_int_equal(dec.nsamples, 2); /* churn (alloc) and keeper (inuse) */
	assert_true(dec.dflt >= 0);
	assert_string_equal(pprofdec_str(&dec, (uint64_t)dec.dflt), "alloc_space");
	free(r.body);
	profile__free(d);
}

static void test_an_empty_heap_is_still_a_heap_profile(void **state)
{
	struct live *l = live__new_heap(&writer_pprof, PERIOD, NULL, NULL);
	struct request r = { .l = l, .seconds = 0, .view = VIEW_ALLOC_SPACE };
	struct pprofdec dec;
	pthread_t t;

	(void)state;
	alarm(20);
	start(&r, &t, 0);
	live__feed(l, NULL, now_ns());
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	pprofdec(r.body, r.len, &dec);
	assert_int_equal(dec.ntypes, 4);
	assert_int_equal(dec.nsamples, 0);
	assert_int_equal(dec.period, PERIOD);
	assert_string_equal(pprofdec_str(&dec, (uint64_t)dec.dflt), "alloc_space");
	free(r.body);
	live__shutdown(l);
	live__free(l);
	alarm(0);
}

static void test_finisher_error_fails_the_request_and_frees_its_slot(void **state)
{
	struct engine *e = *state;
	struct request r = { .l = e->l, .seconds = 0 };
	pthread_t t;

	e->fail = -EIO;
	start(&r, &t, 0);
	live__feed(e->l, NULL, now_ns());
	pthread_join(t, NULL);
	assert_int_equal(r.err, -EIO);
	assert_null(r.body);
	assert_int_equal(live__pending(e->l), 0);
	/* The slot serves the next request (a failed build is a build: the
	 * next one comes LIVE_HEAP_GAP_NS later). */
	e->fail = 0;
	r.err = 1;
	start(&r, &t, 0);
	live__feed(e->l, NULL, now_ns());
	assert_int_equal(live__pending(e->l), 1);
	live__feed(e->l, NULL, now_ns() + LIVE_HEAP_GAP_NS);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	free(r.body);
}

static void test_requests_are_bounded_and_shutdown_wakes_them(void **state)
{
	struct engine *e = *state;
	struct request r[LIVE_MAX_REQUESTS];
	pthread_t t[LIVE_MAX_REQUESTS];
	char *body;
	size_t len;

	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		r[i] = (struct request){ .l = e->l, .seconds = LIVE_MAX_SECONDS };
		start(&r[i], &t[i], i);
	}
	assert_int_equal(live__collect(e->l, 0, &body, &len), -EBUSY);
	live__shutdown(e->l);
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].err, -ESHUTDOWN);
	}
	assert_int_equal(e->calls, 0);
}

static void test_cpu_live_is_not_a_heap(void **state)
{
	struct live *l = live__new(&writer_pprof, 99);
	struct request r = { .l = l, .seconds = 1, .view = VIEW_AUTO };
	struct pprofdec dec;
	pthread_t t;

	(void)state;
	alarm(20);
	assert_false(live__is_heap(l));
	start(&r, &t, 0);
	live__feed(l, NULL, now_ns() + 2 * NS_PER_SEC);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	pprofdec(r.body, r.len, &dec);
	assert_string_equal(pprofdec_str(&dec, dec.types[0]), "samples");
	free(r.body);
	live__shutdown(l);
	live__free(l);
	alarm(0);
}

/* Any writer of a heap profile (record -o, convert): --view names pprof's default type. */
static void test_pprof_view_names_the_default_type(void **state)
{
	static const struct {
		enum view view;
		const char *dflt;
	} cases[] = {
		{ VIEW_AUTO, NULL },
		{ VIEW_ALLOC_SPACE, "alloc_space" },
		{ VIEW_ALLOC_OBJECTS, "alloc_objects" },
		{ VIEW_INUSE_SPACE, "inuse_space" },
		{ VIEW_INUSE_OBJECTS, "inuse_objects" },
	};
	struct profile *p = alloc_profile("site", 3, 3 * PERIOD, PERIOD);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct out_opts oo = { .view = cases[i].view };
		struct pprofdec d;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(writer__write_file(&writer_pprof, p, f, &oo), 0);
		fclose(f);
		pprofdec(buf, len, &d);
		assert_int_equal(d.ntypes, 4); /* all four, whatever the view */
		if (cases[i].dflt)
			assert_string_equal(pprofdec_str(&d, (uint64_t)d.dflt), cases[i].dflt);
		else
			assert_int_equal(d.dflt, -1);
		free(buf);
	}
	profile__free(p);
}

/* Every request for the profile now, due at one feed: one finisher call, each its own view. */
static void test_due_requests_without_seconds_share_one_build(void **state)
{
	struct engine *e = *state;
	struct request r[LIVE_MAX_REQUESTS];
	pthread_t t[LIVE_MAX_REQUESTS];
	struct pprofdec dec;

	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		r[i] = (struct request){ .l = e->l, .view = i ? VIEW_AUTO : VIEW_ALLOC_SPACE };
		start(&r[i], &t[i], i);
	}
	live__feed(e->l, NULL, now_ns());
	for (int i = 0; i < LIVE_MAX_REQUESTS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].err, 0);
		pprofdec(r[i].body, r[i].len, &dec);
		assert_int_equal(dec.nsamples, 1); /* keeper, in each */
		if (i)
			assert_int_equal(dec.dflt, -1);
		else
			assert_string_equal(pprofdec_str(&dec, (uint64_t)dec.dflt), "alloc_space");
		free(r[i].body);
	}
	assert_int_equal(e->calls, 1);
	assert_int_equal(live__pending(e->l), 0);
}

/* The clock the feeds say: one build per LIVE_HEAP_GAP_NS, whatever the clients ask. */
static void test_builds_are_a_gap_apart(void **state)
{
	struct engine *e = *state;
	struct request a = { .l = e->l }, b = { .l = e->l }, c = { .l = e->l };
	struct request n = { .l = e->l, .seconds = 1 };
	uint64_t t0, t1;
	pthread_t t;

	start(&a, &t, 0);
	t0 = now_ns(); /* after the request's start: it is due */
	live__feed(e->l, NULL, t0);
	pthread_join(t, NULL);
	assert_int_equal(e->calls, 1);
	/* 100 ms later: the last build, the same bytes. */
	start(&b, &t, 0);
	live__feed(e->l, NULL, t0 + 100 * NS_PER_MS);
	pthread_join(t, NULL);
	assert_int_equal(b.err, 0);
	assert_int_equal(e->calls, 1);
	assert_int_equal(b.len, a.len);
	assert_memory_equal(b.body, a.body, a.len);
	/* The gap passed: a new build. */
	start(&c, &t, 0);
	live__feed(e->l, NULL, t0 + LIVE_HEAP_GAP_NS);
	pthread_join(t, NULL);
	assert_int_equal(c.err, 0);
	assert_int_equal(e->calls, 2);
	/* A window's build counts too: the profile now waits for the gap. */
	start(&n, &t, 0);
	t1 = now_ns() + 2 * NS_PER_SEC; /* after the request: its 1 s is over by then */
	live__feed(e->l, NULL, t1);
	pthread_join(t, NULL);
	assert_int_equal(n.err, 0);
	assert_int_equal(e->calls, 3);
	free(a.body);
	free(b.body);
	free(c.body);
	a = (struct request){ .l = e->l };
	start(&a, &t, 0);
	live__feed(e->l, NULL, t1 + 100 * NS_PER_MS);
	assert_int_equal(live__pending(e->l), 1);
	assert_int_equal(e->calls, 3);
	live__feed(e->l, NULL, t1 + LIVE_HEAP_GAP_NS);
	pthread_join(t, NULL);
	assert_int_equal(a.err, 0);
	assert_int_equal(e->calls, 4);
	free(a.body);
	free(n.body);
}

/* ---- a writer that says which thread ran it ---- */

static pthread_t writer_thread;
static int writer_calls;

static int write_where(const struct profile *p, FILE *f, const struct out_opts *o)
{
	(void)p;
	(void)o;
	writer_thread = pthread_self();
	writer_calls++;
	return fputs("where\n", f) < 0 ? -EIO : 0;
}

static const struct writer writer_where = { .name = "where", .write = write_where };

/* The encoding is the waiter's work, not the main loop's (heap and CPU lives alike). */
static void test_the_waiter_encodes(void **state)
{
	struct engine *e = *state;
	struct live *cpu = live__new(&writer_where, 99);
	struct request r = { .seconds = 0 };
	pthread_t t;

	live__free(e->l);
	e->l = live__new_heap(&writer_where, PERIOD, finish, e);
	for (int k = 0; k < 2; k++) {
		r = (struct request){ .l = k ? cpu : e->l, .seconds = (unsigned)k };
		writer_calls = 0;
		start(&r, &t, 0);
		live__feed(r.l, NULL, now_ns() + 2 * NS_PER_SEC);
		pthread_join(t, NULL);
		assert_int_equal(r.err, 0);
		assert_int_equal(writer_calls, 1);
		assert_false(pthread_equal(writer_thread, pthread_self())); /* not the feeder */
		assert_true(pthread_equal(writer_thread, t));		    /* the waiter */
		assert_int_equal(r.len, 6);
		assert_memory_equal(r.body, "where\n", 6);
		free(r.body);
	}
	live__shutdown(cpu);
	live__free(cpu);
}

/* A window's lost and time with the probes in: its deltas' sums (merge leaves the meta). */
static void test_a_window_sums_its_deltas_lost_and_time_on(void **state)
{
	struct engine *e = *state;
	struct request r = { .l = e->l, .seconds = 2, .view = VIEW_ALLOC_SPACE };
	struct profile *d = alloc_profile("churn", 4, 4 * PERIOD, 0);
	pthread_t t;

	profile__meta(d)->lost = 3;
	profile__meta(d)->alloc_on_ns = 70 * NS_PER_MS;
	start(&r, &t, 0);
	live__feed(e->l, d, now_ns());
	live__feed(e->l, d, now_ns());
	live__feed(e->l, d, now_ns() + 3 * NS_PER_SEC);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(e->calls, 1);
	assert_int_equal(e->acc_lost, 9);
	assert_int_equal(e->acc_on_ns, 210 * NS_PER_MS);
	free(r.body);
	profile__free(d);
}

/*
 * A window's span is what its deltas counted: a main loop that feeds the
 * first delta late (it stalled 1 s after the request came) does not stretch
 * the window over time no delta covered; its deadline counts from there.
 */
static void test_a_window_begins_with_its_first_delta(void **state)
{
	struct engine *e = *state;
	struct request r = { .l = e->l, .seconds = 2, .view = VIEW_ALLOC_SPACE };
	struct profile *d = alloc_profile("churn", 4, 4 * PERIOD, 0);
	uint64_t t0;
	pthread_t t;

	start(&r, &t, 0);
	t0 = now_ns() + NS_PER_SEC; /* the loop's first feed, 1 s after the request */
	profile__meta(d)->start_ns = 5 * NS_PER_SEC;
	profile__meta(d)->duration_ns = 100 * NS_PER_MS;
	live__feed(e->l, d, t0);
	profile__meta(d)->start_ns = 5 * NS_PER_SEC + 100 * NS_PER_MS;
	/* 2 s after the request, but not after the first delta's start: not due */
	live__feed(e->l, d, t0 + NS_PER_SEC);
	assert_int_equal(e->calls, 0);
	live__feed(e->l, d, t0 + 1900 * NS_PER_MS);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(e->calls, 1);
	assert_int_equal(e->acc_start, 5 * NS_PER_SEC);
	assert_int_equal(e->acc_duration, 2 * NS_PER_SEC);
	free(r.body);
	profile__free(d);
}

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

/*
 * --alloc --listen: the sinks open the heap live with the engine's finisher
 * and no CPU live; sinks__heap_feed completes requests through it; closing
 * wakes what waits. A run of both kinds has both.
 */
static void test_sinks_open_the_heap_live(void **state)
{
	struct engine *e = *state;
	char listen[32];
	struct options o = { .listen = listen, .alloc_period = PERIOD };
	struct continuous ct = { .heap_finish = finish, .heap_ctx = e };
	struct request r = { .seconds = 0, .view = VIEW_AUTO };
	struct live *own = e->l; /* the fixture's, freed by teardown */
	pthread_t t;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	metrics__init(&ct.metrics, NS_PER_SEC);
	assert_int_equal(sinks__kinds(&o), SINK_BIT(SINK_HEAP));
	assert_int_equal(sinks__open(&ct, &o), 0);
	assert_null(ct.live);
	assert_non_null(ct.live_heap);
	assert_true(live__is_heap(ct.live_heap));
	assert_int_equal(sinks__heap_pending(&ct), 0);
	assert_false(sinks__want_drain(&ct));
	e->l = r.l = ct.live_heap;
	start(&r, &t, 0);
	assert_int_equal(sinks__heap_pending(&ct), 1);
	sinks__heap_feed(&ct, NULL);
	pthread_join(t, NULL);
	assert_int_equal(r.err, 0);
	assert_int_equal(e->calls, 1);
	free(r.body);
	/* A request still waiting when the run ends gets -ESHUTDOWN (sinks__close
	 * shuts the live down, then joins the HTTP threads: this one is the
	 * test's, joined here before the live is freed). */
	r = (struct request){ .l = ct.live_heap, .seconds = 5 };
	start(&r, &t, 0);
	live__shutdown(ct.live_heap);
	pthread_join(t, NULL);
	assert_int_equal(r.err, -ESHUTDOWN);
	sinks__close(&ct);
	assert_null(ct.live_heap);
	sinks__heap_feed(&ct, NULL); /* closed: nothing to feed */
	assert_int_equal(sinks__heap_pending(&ct), 0);
	e->l = own;

	/* Both kinds (the combined run to come): both lives. */
	memset(&ct, 0, sizeof(ct));
	metrics__init(&ct.metrics, NS_PER_SEC);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	assert_int_equal(sinks__open_kinds(&ct, &o, SINK_BIT(SINK_CPU) | SINK_BIT(SINK_HEAP)), 0);
	assert_non_null(ct.live);
	assert_false(live__is_heap(ct.live));
	assert_true(live__is_heap(ct.live_heap));
	sinks__close(&ct);
	/* A CPU run: no heap live. */
	memset(&ct, 0, sizeof(ct));
	metrics__init(&ct.metrics, NS_PER_SEC);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	o.alloc_period = 0;
	assert_int_equal(sinks__open(&ct, &o), 0);
	assert_non_null(ct.live);
	assert_null(ct.live_heap);
	sinks__close(&ct);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_heap_without_seconds_completes_at_the_next_feed, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_allocs_over_seconds_accumulates_and_defaults_to_alloc_space, setup,
			teardown),
		cmocka_unit_test(test_an_empty_heap_is_still_a_heap_profile),
		cmocka_unit_test_setup_teardown(
			test_finisher_error_fails_the_request_and_frees_its_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requests_are_bounded_and_shutdown_wakes_them,
						setup, teardown),
		cmocka_unit_test(test_cpu_live_is_not_a_heap),
		cmocka_unit_test(test_pprof_view_names_the_default_type),
		cmocka_unit_test_setup_teardown(test_sinks_open_the_heap_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_due_requests_without_seconds_share_one_build,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_builds_are_a_gap_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_waiter_encodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_window_sums_its_deltas_lost_and_time_on,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_window_begins_with_its_first_delta, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
