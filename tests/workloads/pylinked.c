// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pylinked - a native program linked against libpython3.11 that never starts
 * the interpreter, as perf, gdb and vim are: the interpreter's file is
 * mapped, _PyRuntime has no interpreter, and a profiler that waits for one
 * to appear probes it for as long as it waits. native_spin() for SECONDS of
 * wall time. Usage: pylinked SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int Py_IsInitialized(void);

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void native_spin(double secs)
{
	double end = now() + secs;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;

	printf("interpreter initialized: %d\n", Py_IsInitialized());
	fflush(stdout);
	native_spin(secs);
	return 0;
}
