// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * busy - CPU-bound workload with a known call chain for the profiler tests:
 *
 *     main -> run -> outer_loop -> leaf_a   (2/3 of the work)
 *                               -> leaf_b   (1/3 of the work)
 *
 * With THREADS > 0, that many threads each run thread_main -> outer_loop and
 * main waits. Usage: busy SECONDS[c] [THREADS]; with the c, SECONDS of each
 * thread's own CPU time instead of wall-clock time: as many samples on a busy
 * machine as on an idle one, only later.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static double seconds;
static clockid_t clock_id = CLOCK_MONOTONIC;

__attribute__((noinline)) void leaf_a(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i;
}

__attribute__((noinline)) void leaf_b(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void outer_loop(double until)
{
	while (now() < until) {
		leaf_a();
		leaf_b();
	}
}

__attribute__((noinline)) void run(void)
{
	outer_loop(now() + seconds);
}

__attribute__((noinline)) static void *thread_main(void *arg)
{
	/* CPU time is per thread: each thread's own deadline. */
	outer_loop(clock_id == CLOCK_MONOTONIC ? *(double *)arg : now() + seconds);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 0;

	seconds = argc > 1 ? atof(argv[1]) : 5;
	if (argc > 1 && argv[1][0] && argv[1][strlen(argv[1]) - 1] == 'c')
		clock_id = CLOCK_THREAD_CPUTIME_ID;
	if (threads > 0) {
		pthread_t *t = calloc(threads, sizeof(*t));
		double until = now() + seconds;

		for (int i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, thread_main, &until);
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		free(t);
	} else {
		run();
	}
	printf("%lu\n", sink);
	return 0;
}
