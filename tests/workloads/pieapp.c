// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pieapp - a PIE executable that spends its time in its own shared library:
 *     main -> app_work -> wl_compute (libwl.so) -> wl_leaf (libwl.so)
 * Usage: pieapp SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double wl_compute(unsigned n);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double app_work(double until)
{
	double acc = 0;

	while (now() < until)
		acc += wl_compute(100000);
	return acc;
}

int main(int argc, char **argv)
{
	printf("%f\n", app_work(now() + (argc > 1 ? atof(argv[1]) : 5)));
	return 0;
}
