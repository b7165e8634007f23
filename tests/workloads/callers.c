// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * callers - one hot function with two callers in a known ratio, one of them
 * through recursion, for report's call graph (--callers, --callees):
 *
 *     main -> caller_a -> hot                            3 calls a round (3/4)
 *     main -> caller_b -> rec -> rec -> rec -> rec -> hot  1 call a round (1/4)
 *
 * Each call of hot does the same work, so hot's callers are caller_a with
 * 3/4 of its samples and rec with 1/4; rec's only caller is caller_b (its
 * calls of itself are not callers). Usage: callers SECONDS[c]; with the c,
 * SECONDS of its own CPU time.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static clockid_t clock_id = CLOCK_MONOTONIC;

__attribute__((noinline)) void hot(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
}

__attribute__((noinline)) void caller_a(void)
{
	for (int i = 0; i < 3; i++)
		hot();
}

__attribute__((noinline)) void rec(int depth)
{
	if (depth)
		rec(depth - 1);
	else
		hot();
	sink++; /* work after the call: no tail call */
}

__attribute__((noinline)) void caller_b(void)
{
	rec(3);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until;

	if (argc > 1 && argv[1][0] && argv[1][strlen(argv[1]) - 1] == 'c')
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	until = now() + (argc > 1 ? atof(argv[1]) : 5);
	while (now() < until) {
		caller_a();
		caller_b();
	}
	return 0;
}
