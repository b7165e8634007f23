// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_dlopen - spins in its own code for DELAY seconds, then dlopen()s
 * libuw_plugin.so (next to it) and spends the rest of the time there:
 *
 *     main -> run_plugin -> plugin_work -> plugin_leaf
 *
 * The plugin's mapping appears after the profiler read the process's maps,
 * so complete stacks need the walker's refresh request. Built without frame
 * pointers. Usage: uw_dlopen SECONDS DELAY
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void before_dlopen(double until)
{
	while (now() < until)
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
	double t0 = now();
	char path[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	void *h;
	void (*work)(unsigned);

	if (n <= 0)
		return 1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash + 1, "libuw_plugin.so");
	before_dlopen(t0 + delay);
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
