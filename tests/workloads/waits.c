// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * waits - threads that wait in known places, for the --off-cpu tests.
 *
 *   waits SECONDS            three threads (and main, blocked in join):
 *       sleeper_thread -> sleep_loop -> nanosleep (20 ms at a time)
 *       reader_thread  -> read_loop  -> read      (a pipe main writes every 300 ms)
 *       spinner_thread -> spin_loop              (never blocks)
 *       and prints "slept S" at the end: the seconds sleep_loop ran
 *   waits SECONDS mutex      two threads on one mutex: holder_thread ->
 *       hold_loop holds it 50 ms at a time (spinning), waiter_thread ->
 *       lock_loop -> pthread_mutex_lock waits for it (futex)
 *   waits SECONDS short      one thread: short_loop -> nanosleep of 100 us,
 *       for the minimum-time filter
 *   waits SECONDS many N     N threads, each sleep_loop of 5 ms naps (more
 *       blocked threads than a small --off-cpu-tasks table holds)
 *   waits SECONDS pingpong   two threads passing a byte through two pipes
 *       as fast as they can (context-switch heavy: tools/bench_offcpu.py);
 *       prints the round trips per second at the end
 *
 * Prints "ready TID..." (the threads' ids, in the order above) once all
 * threads run, so a test knows whom to expect. Built like the other
 * workloads: clang, frame pointers kept (leaf functions too).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double until;
static int pfd[2], pfd2[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready;
static volatile int tids[4];
static unsigned long trips;
static double slept; /* sleep_loop's time in it (one thread's; the last to leave) */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_for(double secs)
{
	double end = now() + secs;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

__attribute__((noinline)) void sleep_loop(long ns)
{
	struct timespec ts = { 0, ns };
	double t0 = now(), t1 = t0;

	while (t1 < until) {
		nanosleep(&ts, NULL);
		t1 = now();
	}
	slept = t1 - t0;
}

__attribute__((noinline)) void read_loop(void)
{
	char c;

	while (read(pfd[0], &c, 1) == 1 && c != 'q')
		;
}

__attribute__((noinline)) void spin_loop(void)
{
	while (now() < until)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void hold_loop(void)
{
	while (now() < until) {
		pthread_mutex_lock(&mu);
		spin_for(0.05);
		pthread_mutex_unlock(&mu);
		sched_yield();
	}
}

__attribute__((noinline)) void lock_loop(void)
{
	while (now() < until) {
		pthread_mutex_lock(&mu);
		sink++;
		pthread_mutex_unlock(&mu);
		spin_for(0.001);
	}
}

__attribute__((noinline)) void ping_loop(void)
{
	char c = 'p';

	while (now() < until) {
		for (int i = 0; i < 1000; i++) {
			if (write(pfd[1], &c, 1) != 1 || read(pfd2[0], &c, 1) != 1)
				return;
		}
		trips += 1000;
	}
	c = 'q';
	if (write(pfd[1], &c, 1) != 1)
		return;
}

__attribute__((noinline)) void pong_loop(void)
{
	char c;

	while (read(pfd[0], &c, 1) == 1 && c != 'q')
		if (write(pfd2[1], &c, 1) != 1)
			return;
}

#define THREAD(name, body, slot)                                                                   \
	__attribute__((noinline)) static void *name(void *arg)                                     \
	{                                                                                          \
		tids[slot] = (int)syscall(SYS_gettid);                                             \
		pthread_barrier_wait(&ready);                                                      \
		body;                                                                              \
		return NULL;                                                                       \
	}

THREAD(sleeper_thread, sleep_loop(20000000), 0)
THREAD(reader_thread, read_loop(), 1)
THREAD(spinner_thread, spin_loop(), 2)
THREAD(holder_thread, hold_loop(), 0)
THREAD(waiter_thread, lock_loop(), 1)
THREAD(short_thread, sleep_loop(100000), 0)
THREAD(ping_thread, ping_loop(), 0)
THREAD(nap_thread, sleep_loop(5000000), 3)
THREAD(pong_thread, pong_loop(), 1)

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "waits";
	void *(*fns[1024])(void *) = { sleeper_thread, reader_thread, spinner_thread };
	pthread_t th[1024];
	int n = 3;

	if (argc < 2) {
		fprintf(stderr, "usage: waits SECONDS [waits|mutex|short|pingpong]\n");
		return 2;
	}
	until = now() + atof(argv[1]);
	if (pipe(pfd) || pipe(pfd2)) {
		perror("pipe");
		return 1;
	}
	if (!strcmp(mode, "mutex")) {
		fns[0] = holder_thread;
		fns[1] = waiter_thread;
		n = 2;
	} else if (!strcmp(mode, "short")) {
		fns[0] = short_thread;
		n = 1;
	} else if (!strcmp(mode, "many")) {
		n = argc > 3 ? atoi(argv[3]) : 64;
		if (n < 1 || n > 1024)
			n = 64;
		for (int i = 0; i < n; i++)
			fns[i] = nap_thread;
	} else if (!strcmp(mode, "pingpong")) {
		fns[0] = ping_thread;
		fns[1] = pong_thread;
		n = 2;
	}
	pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, fns[i], NULL)) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&ready);
	printf("ready");
	for (int i = 0; i < n && i < 3; i++)
		printf(" %d", tids[i]);
	printf("\n");
	fflush(stdout);
	if (!strcmp(mode, "waits")) {
		char c = 'x';

		while (now() < until) {
			usleep(300000);
			if (write(pfd[1], &c, 1) != 1)
				break;
		}
		c = 'q';
		if (write(pfd[1], &c, 1) != 1)
			return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (!strcmp(mode, "pingpong"))
		printf("trips %lu %.0f/s\n", trips, trips / atof(argv[1]));
	else if (!strcmp(mode, "waits"))
		printf("slept %.6f\n", slept);
	return 0;
}
