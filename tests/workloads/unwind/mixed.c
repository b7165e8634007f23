// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_mixed - frame-pointer code without unwind tables calling an FP-less
 * library (libuw_nofp.so, tables only) that calls back into FP code:
 *
 *     main -> mixed_run -> nofp_outer -> nofp_inner -> mixed_cb -> mixed_leaf
 *     [FP, no table]       [table, no FP]              [FP, no table]
 *
 * A complete stack needs frame-pointer and table steps in one walk.
 * Usage: uw_mixed SECONDS
 */
#include <stdlib.h>
#include <time.h>

typedef void (*nofp_cb)(unsigned);
void nofp_outer(nofp_cb cb, unsigned n);

static volatile unsigned long sink;

__attribute__((noinline)) void mixed_leaf(unsigned x)
{
	for (unsigned i = 0; i < 3000; i++)
		sink += i ^ x;
}

__attribute__((noinline)) void mixed_cb(unsigned x)
{
	mixed_leaf(x);
	sink++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void mixed_run(double until)
{
	while (now() < until)
		nofp_outer(mixed_cb, 100000);
}

int main(int argc, char **argv)
{
	mixed_run(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
