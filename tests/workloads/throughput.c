// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * throughput - fixed work per unit, counts units done in SECONDS on THREADS
 * threads and prints the total: the benchmark's measure of what a profiler
 * takes away from the workload. Usage: throughput SECONDS THREADS
 */
#include <pthread.h>
#include <stdio.h>
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

__attribute__((noinline)) static unsigned long unit(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static void *worker(void *arg)
{
	unsigned long n = 0, x = (unsigned long)arg;
	double until = now() + seconds;

	while (now() < until)
		for (int i = 0; i < 1000; i++, n++)
			x = unit(x);
	sink += x;
	return (void *)n;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[256];
	unsigned long total = 0;

	seconds = argc > 1 ? atof(argv[1]) : 10;
	if (threads < 1 || threads > 256)
		return 2;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < threads; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (unsigned long)r;
	}
	printf("%lu\n", total);
	return 0;
}
