// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * allocwork - a malloc-heavy program for issue 39's benchmark and accuracy
 * check (tools/bench_alloc.py): what a memory profiler costs per
 * malloc/free pair, and how close its bytes per call site come to the truth.
 * Prints what it did as one JSON line.
 *
 *   allocwork [wait] bench small N   N pairs: malloc of 16-256 B, free at once
 *   allocwork [wait] bench mixed N   N pairs on a ring of 64 live blocks of
 *                                    16 B-64 KiB (log-uniform): each step
 *                                    frees the slot's block, mallocs another
 *   allocwork [wait] bench mt N      "small" in 2 threads, N pairs each
 *       prints {"shape", "pairs", "threads", "ns_per_pair"} (per thread:
 *       each thread's time over its pairs, the threads' mean); each timed
 *       loop follows 0.3 s of the same pairs untimed (a warm-up)
 *   allocwork [wait] sites MIB       about MIB MiB at each of the call sites
 *                                    below, then prints each one's truth:
 *       site_free    malloc 1-64 KiB, freed at once
 *       site_keep    malloc 4 KiB blocks, kept (in use at exit)
 *       site_small   malloc 16-128 B, freed at once (many small ones)
 *       site_calloc  calloc(1-16, 256), freed at once
 *       site_align   posix_memalign(64, 64 B-8 KiB), freed at once
 *       {"sites": {NAME: {"bytes", "count", "inuse_bytes"}}, "pid"}
 *   allocwork [wait] steady RATE SECS [HOLD]  site_steady: RATE
 *                                    malloc(4096)/free pairs a second, paced
 *                                    by the clock (each 1 ms catches up), for
 *                                    SECS: any interval holds RATE x its
 *                                    length (SIGTERM ends it early); and
 *                                    site_held: HOLD malloc(4096) a second
 *                                    (default 0), kept until exit; prints
 *       {"pid", "site": "site_steady", "size", "rate", "bytes", "pairs",
 *        "seconds", "behind_max_ms", "held_bytes", "end_real"} (behind: the pace it fell
 *        behind by)
 *   allocwork [wait] storm SECS      malloc/free pairs as fast as it can for
 *                                    SECS (the tenant's storm under -a)
 *
 * wait: print {"waiting": PID} and wait for SIGUSR1 before starting (a
 * profiler attaches with -p first). Each block is written once and its
 * address escapes (the compiler may not drop a malloc/free pair).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile escape;
static volatile sig_atomic_t go, stop;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static unsigned long xorshift(unsigned long *s)
{
	unsigned long x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void *touch(void *p)
{
	if (!p) {
		fprintf(stderr, "allocwork: out of memory\n");
		exit(1);
	}
	*(volatile char *)p = 1;
	escape = p;
	return p;
}

/* ---- bench ---- */

__attribute__((noinline)) static double bench_small(unsigned long n, unsigned long seed)
{
	unsigned long long t0 = now_ns();

	for (unsigned long i = 0; i < n; i++) {
		void *p = touch(malloc(16 + xorshift(&seed) % 241));

		free(p);
	}
	return (double)(now_ns() - t0) / (double)(n ? n : 1);
}

__attribute__((noinline)) static double bench_mixed(unsigned long n, unsigned long seed)
{
	void *ring[64] = { 0 };
	unsigned long long t0 = now_ns();

	for (unsigned long i = 0; i < n; i++) {
		unsigned long r = xorshift(&seed);
		size_t size = ((size_t)16 << (r % 12)) + (r >> 8) % ((size_t)16 << (r % 12));

		free(ring[i % 64]);
		ring[i % 64] = touch(malloc(size));
	}
	for (int i = 0; i < 64; i++)
		free(ring[i]);
	return (double)(now_ns() - t0) / (double)(n ? n : 1);
}

/* Untimed pairs for WARMUP_NS first: the allocator's arenas made, a
 * preloaded profiler's start-up (heaptrack's) done before the timed loop. */
#define WARMUP_NS 300000000ull

static void warm_up(double (*fn)(unsigned long, unsigned long))
{
	unsigned long long end = now_ns() + WARMUP_NS;

	while (now_ns() < end)
		fn(1000, 5);
}

struct mt_arg {
	unsigned long n, seed;
	double ns;
};

static void *mt_thread(void *arg)
{
	struct mt_arg *a = arg;

	warm_up(bench_small);
	a->ns = bench_small(a->n, a->seed);
	return NULL;
}

static int bench(const char *shape, unsigned long n)
{
	double ns;
	int threads = 1;

	if (!strcmp(shape, "small")) {
		warm_up(bench_small);
		ns = bench_small(n, 88172645463325252ul);
	} else if (!strcmp(shape, "mixed")) {
		warm_up(bench_mixed);
		ns = bench_mixed(n, 88172645463325252ul);
	} else if (!strcmp(shape, "mt")) {
		struct mt_arg a[2] = { { n, 88172645463325252ul, 0 }, { n, 362436069ul, 0 } };
		pthread_t t[2];

		threads = 2;
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, mt_thread, &a[i])) {
				fprintf(stderr, "allocwork: pthread_create failed\n");
				return 1;
			}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		ns = (a[0].ns + a[1].ns) / 2;
	} else {
		return 2;
	}
	printf("{\"shape\": \"%s\", \"pairs\": %lu, \"threads\": %d, \"ns_per_pair\": %.1f}\n",
	       shape, n, threads, ns);
	return 0;
}

/* ---- sites: known bytes at known call sites ---- */

struct truth {
	unsigned long long bytes, count, inuse;
};

__attribute__((noinline)) void site_free(unsigned long long target, struct truth *t)
{
	unsigned long seed = 1;

	while (t->bytes < target) {
		size_t size = 1024 + xorshift(&seed) % (65536 - 1024 + 1);

		free(touch(malloc(size)));
		t->bytes += size;
		t->count++;
	}
}

__attribute__((noinline)) void site_keep(unsigned long long target, struct truth *t)
{
	while (t->bytes < target) {
		touch(malloc(4096)); /* kept: escape holds the last one, the rest leak */
		t->bytes += 4096;
		t->count++;
	}
	t->inuse = t->bytes;
}

__attribute__((noinline)) void site_small(unsigned long long target, struct truth *t)
{
	unsigned long seed = 2;

	while (t->bytes < target) {
		size_t size = 16 + xorshift(&seed) % (128 - 16 + 1);

		free(touch(malloc(size)));
		t->bytes += size;
		t->count++;
	}
}

__attribute__((noinline)) void site_calloc(unsigned long long target, struct truth *t)
{
	unsigned long seed = 3;

	while (t->bytes < target) {
		size_t n = 1 + xorshift(&seed) % 16;

		free(touch(calloc(n, 256)));
		t->bytes += n * 256;
		t->count++;
	}
}

__attribute__((noinline)) void site_align(unsigned long long target, struct truth *t)
{
	unsigned long seed = 4;

	while (t->bytes < target) {
		size_t size = 64 + xorshift(&seed) % (8192 - 64 + 1);
		void *p = NULL;

		if (posix_memalign(&p, 64, size))
			p = NULL;
		free(touch(p));
		t->bytes += size;
		t->count++;
	}
}

/* ---- steady: a known rate of pairs at one site, paced by the clock ---- */

__attribute__((noinline)) void site_steady(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		free(touch(malloc(4096)));
}

__attribute__((noinline)) void site_held(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		touch(malloc(4096)); /* kept: escape holds the last one, the rest leak */
}

static void on_term(int sig)
{
	stop = 1;
}

static int steady(double rate, double secs, double hold)
{
	unsigned long long t0 = now_ns(), end = t0 + (unsigned long long)(secs * 1e9), t;
	unsigned long long done = 0, behind = 0, held = 0;
	struct timespec ms = { 0, 1000000 };

	signal(SIGTERM, on_term);
	while ((t = now_ns()) < end && !stop) {
		unsigned long long owed = (unsigned long long)((double)(t - t0) * rate / 1e9);

		if (owed > done) {
			double lag = (double)(owed - done) / rate * 1e9;

			if (lag > 2e6 && (unsigned long long)lag > behind)
				behind = (unsigned long long)lag;
			site_steady((unsigned long)(owed - done));
			done = owed;
		}
		owed = (unsigned long long)((double)(t - t0) * hold / 1e9);
		if (owed > held) {
			site_held((unsigned long)(owed - held));
			held = owed;
		}
		nanosleep(&ms, NULL);
	}
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall); /* its last allocation: tests compare files' ends */
	printf("{\"pid\": %d, \"site\": \"site_steady\", \"size\": 4096, \"rate\": %.1f, "
	       "\"bytes\": %llu, \"pairs\": %llu, \"seconds\": %.3f, \"behind_max_ms\": %.1f, "
	       "\"held_bytes\": %llu, \"end_real\": %.3f}\n",
	       getpid(), rate, done * 4096, done, (double)(now_ns() - t0) / 1e9,
	       (double)behind / 1e6, held * 4096, (double)wall.tv_sec + wall.tv_nsec / 1e9);
	return 0;
}

static int storm(double secs)
{
	unsigned long long end = now_ns() + (unsigned long long)(secs * 1e9);
	unsigned long seed = (unsigned long)getpid() | 1, n = 0;

	while (now_ns() < end) {
		bench_small(1000, seed);
		n += 1000;
	}
	printf("{\"pid\": %d, \"pairs\": %lu}\n", getpid(), n);
	return 0;
}

static int sites(double mib)
{
	static const struct {
		const char *name;
		void (*fn)(unsigned long long, struct truth *);
	} s[] = {
		{ "site_free", site_free },   { "site_keep", site_keep },
		{ "site_small", site_small }, { "site_calloc", site_calloc },
		{ "site_align", site_align },
	};
	unsigned long long target = (unsigned long long)(mib * 1048576.0);
	struct truth t[sizeof(s) / sizeof(s[0])] = { { 0 } };
	const size_t n = sizeof(s) / sizeof(s[0]);

	for (size_t i = 0; i < n; i++)
		s[i].fn(target, &t[i]);
	printf("{\"pid\": %d, \"sites\": {", getpid());
	for (size_t i = 0; i < n; i++)
		printf("%s\"%s\": {\"bytes\": %llu, \"count\": %llu, \"inuse_bytes\": %llu}",
		       i ? ", " : "", s[i].name, t[i].bytes, t[i].count, t[i].inuse);
	printf("}}\n");
	return 0;
}

static void on_usr1(int sig)
{
	go = 1;
}

int main(int argc, char **argv)
{
	int a = 1, rc = 2;

	if (a < argc && !strcmp(argv[a], "wait")) {
		sigset_t none;

		signal(SIGUSR1, on_usr1);
		sigemptyset(&none);
		printf("{\"waiting\": %d}\n", getpid());
		fflush(stdout);
		while (!go)
			sigsuspend(&none);
		a++;
	}
	if (a + 2 < argc && !strcmp(argv[a], "bench"))
		rc = bench(argv[a + 1], strtoul(argv[a + 2], NULL, 10));
	else if (a + 1 < argc && !strcmp(argv[a], "sites"))
		rc = sites(atof(argv[a + 1]));
	else if (a + 2 < argc && !strcmp(argv[a], "steady") && atof(argv[a + 1]) > 0)
		rc = steady(atof(argv[a + 1]), atof(argv[a + 2]),
			    a + 3 < argc ? atof(argv[a + 3]) : 0);
	else if (a + 1 < argc && !strcmp(argv[a], "storm"))
		rc = storm(atof(argv[a + 1]));
	if (rc == 2)
		fprintf(stderr,
			"usage: allocwork [wait] bench small|mixed|mt N | sites MIB | steady "
			"RATE SECS [HOLD] | storm SECS\n");
	return rc;
}
