// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * inlwork - C++ workload for the inlined-frames test: at -O2 -g, the hot
 * work is in two always-inlined functions called from one function,
 *
 *     main -> bp_inl_outer(double) -> bp_inl_heavy(double)   ~3/4 of the time
 *                                  -> bp_inl_light(double)   ~1/4 of the time
 *
 * whose machine code is all bp_inl_outer's: only DWARF's inlined-subroutine
 * scopes tell the two apart. Usage: inlwork SECONDS
 */
#include <cstdlib>
#include <ctime>

static volatile double sink;

/* Same loop body, three times the trips: 3/4 of the time. */
__attribute__((always_inline)) static inline double bp_inl_heavy(double x)
{
	for (int i = 0; i < 3000; i++) // bp_inl_heavy loop
		x = x * 1.0000001 + 0.5;
	return x;
}

__attribute__((always_inline)) static inline double bp_inl_light(double x)
{
	for (int i = 0; i < 1000; i++) // bp_inl_light loop
		x = x * 0.9999999 + 0.25;
	return x;
}

__attribute__((noinline)) double bp_inl_outer(double x)
{
	x = bp_inl_heavy(x); // bp_inl_outer calls heavy
	x = bp_inl_light(x); // bp_inl_outer calls light
	return x;
}

static double now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? std::atof(argv[1]) : 5);
	double x = 1;

	while (now() < until)
		for (int i = 0; i < 1000; i++)
			x = bp_inl_outer(x);
	sink = x;
	return 0;
}
