// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * mtexit - the main thread exits (pthread_exit) while another thread keeps
 * running: /proc/PID/maps of the process then reads empty and only
 * /proc/PID/task/TID/maps has the mappings.
 *
 *     worker_main -> mt_outer -> mt_leaf
 *
 * Usage: mtexit SECONDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void mt_leaf(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
}

__attribute__((noinline)) void mt_outer(double until)
{
	while (now() < until)
		mt_leaf();
}

__attribute__((noinline)) static void *worker_main(void *arg)
{
	mt_outer(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	static double until;
	pthread_t t;

	until = now() + (argc > 1 ? atof(argv[1]) : 5);
	if (pthread_create(&t, NULL, worker_main, &until))
		return 1;
	printf("%d\n", (int)getpid());
	fflush(stdout);
	pthread_exit(NULL);
}
