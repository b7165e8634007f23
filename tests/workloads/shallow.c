// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * shallow - a CPU-bound loop two frames deep (main -> spin), on THREADS
 * threads, built with frame pointers: the second shape of
 * tools/bench_overhead.py, where a sample's user stack is short and every
 * frame has a frame pointer. Usage: shallow SECONDS [THREADS]
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double until)
{
	unsigned long x = 1;

	while (now() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static void *thread_main(void *arg)
{
	spin(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t th[64];
	double until;

	seconds = argc > 1 ? atof(argv[1]) : 5;
	until = now() + seconds;
	if (threads > 64)
		threads = 64;
	for (int i = 1; i < threads; i++)
		pthread_create(&th[i], NULL, thread_main, &until);
	spin(until);
	for (int i = 1; i < threads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
