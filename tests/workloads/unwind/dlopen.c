// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_dlopen - spins in its own code for DELAY seconds, then dlopen()s
 * libuw_plugin.so (next to it) and spends the rest of the time there:
 *
 *     main -> run_plugin -> plugin_work -> plugin_leaf
 *
 * The plugin's mapping appears after the profiler read the process's maps,
 * so complete stacks need the walker's refresh request. Built without frame
 * pointers. Usage: uw_dlopen SECONDS[c] DELAY|signal; with the c, both are
 * seconds of the process's own CPU time (as many samples on a busy machine as
 * on an idle one, only later); "signal": dlopen() when SIGUSR1 arrives, and
 * spend SECONDS there from then on.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t go;
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* until < 0: until SIGUSR1. */
__attribute__((noinline)) void before_dlopen(double until)
{
	while (until < 0 ? !go : now() < until)
		for (unsigned i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void run_plugin(void (*work)(unsigned), double until)
{
	while (now() < until)
		work(200);
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, delay = argc > 2 ? atof(argv[2]) : 1;
	bool on_signal = argc > 2 && !strcmp(argv[2], "signal");
	double t0;
	char path[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	void *h;
	void (*work)(unsigned);

	if (n <= 0)
		return 1;
	if (argc > 1 && argv[1][0] && argv[1][strlen(argv[1]) - 1] == 'c')
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	if (on_signal)
		signal(SIGUSR1, on_usr1);
	t0 = now();
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash + 1, "libuw_plugin.so");
	before_dlopen(on_signal ? -1 : t0 + delay);
	if (on_signal)
		t0 = now();
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "uw_dlopen: %s\n", dlerror());
		return 1;
	}
	work = (void (*)(unsigned))dlsym(h, "plugin_work");
	if (!work)
		return 1;
	run_plugin(work, t0 + secs);
	return 0;
}
