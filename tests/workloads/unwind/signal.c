// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_signal - spends its time in a signal handler, so stacks cross libc's
 * signal trampoline (__restore_rt, a signal frame in .eh_frame):
 *
 *     main -> sig_wait_loop -> [signal frame] -> sig_handler -> sig_leaf
 *
 * A SIGALRM every 10 ms; the handler spins ~8 ms. Built without frame
 * pointers. Usage: uw_signal SECONDS
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;
static volatile sig_atomic_t ticks;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void sig_leaf(void)
{
	for (unsigned long i = 0; i < 50000; i++)
		sink += i;
}

__attribute__((noinline)) void sig_handler(int sig)
{
	double until = now() + 0.008;

	while (now() < until)
		sig_leaf();
	ticks++;
}

__attribute__((noinline)) void sig_wait_loop(double until)
{
	while (now() < until)
		sink++;
}

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	struct sigaction sa = { .sa_handler = sig_handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	sig_wait_loop(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
