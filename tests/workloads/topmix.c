// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * topmix - a known CPU split for the top tests: hot_spin does 3/4 of the
 * work and cold_spin 1/4, with the same loop (a chain of dependent
 * multiply-adds: its speed is the multiplier's latency, the same in both
 * functions on any CPU), aligned alike. A preempted process pauses both
 * alike, so the split of its samples is 3:1 under any load. Each function
 * is the leaf of its own samples (no calls out of the loop).
 *
 *     main -> hot_spin   (3/4 of the samples)
 *          -> cold_spin  (1/4)
 *
 * Usage: topmix SECONDS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

#define SPIN_BODY                                                                                  \
	uint64_t x = n;                                                                            \
	for (uint64_t i = 0; i < n; i++)                                                           \
		x = x * 6364136223846793005ull + i;                                                \
	sink = x;

__attribute__((noinline, aligned(64))) void hot_spin(uint64_t n)
{
	SPIN_BODY
}

__attribute__((noinline, aligned(64))) void cold_spin(uint64_t n)
{
	SPIN_BODY
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? atof(argv[1]) : 10);

	while (now() < until) {
		hot_spin(3 * 100000);
		cold_spin(100000);
	}
	return 0;
}
