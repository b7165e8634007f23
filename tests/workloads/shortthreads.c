// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * shortthreads - a process that does its work only in short threads (or
 * short child processes), each shorter than a sampling period at 99 Hz: how
 * a tenant would hide its CPU time from a profiler whose per-task events
 * restart their period in every new task. The main thread starts a worker,
 * waits for it, starts the next, until SECONDS of wall-clock time have
 * passed; each worker spins in short_work until its own CPU clock says MS
 * milliseconds, and exits. The main thread itself uses next to no CPU.
 * At the end it prints the workers' CPU time in all ("workers_cpu SECONDS",
 * from their own clocks) and how many ran.
 *
 *     worker_main -> short_work
 *
 * Usage: shortthreads SECONDS MS [thread|fork]   (default: thread)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double work_ms;

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins until the calling thread has used ms of CPU; returns what it used. */
__attribute__((noinline)) double short_work(double ms)
{
	double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t = t0;

	while (t - t0 < ms / 1000) {
		for (int i = 0; i < 1000; i++)
			sink += i;
		t = clock_s(CLOCK_THREAD_CPUTIME_ID);
	}
	return t - t0;
}

__attribute__((noinline)) static void *worker_main(void *arg)
{
	*(double *)arg = short_work(work_ms);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs, end, used = 0;
	unsigned long workers = 0;
	int fork_mode;

	if (argc < 3) {
		fprintf(stderr, "usage: shortthreads SECONDS MS [thread|fork]\n");
		return 2;
	}
	secs = atof(argv[1]);
	work_ms = atof(argv[2]);
	fork_mode = argc > 3 && !strcmp(argv[3], "fork");
	end = clock_s(CLOCK_MONOTONIC) + secs;
	while (clock_s(CLOCK_MONOTONIC) < end) {
		double one = 0;

		if (fork_mode) {
			int pfd[2], status;
			pid_t pid;

			if (pipe(pfd))
				return 1;
			pid = fork();
			if (pid < 0)
				return 1;
			if (!pid) {
				worker_main(&one);
				_exit(write(pfd[1], &one, sizeof(one)) != sizeof(one));
			}
			close(pfd[1]);
			if (read(pfd[0], &one, sizeof(one)) != sizeof(one))
				one = 0;
			close(pfd[0]);
			waitpid(pid, &status, 0);
		} else {
			pthread_t t;

			if (pthread_create(&t, NULL, worker_main, &one))
				return 1;
			pthread_join(t, NULL);
		}
		used += one;
		workers++;
	}
	printf("workers_cpu %.6f\nworkers %lu\n", used, workers);
	return 0;
}
