// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_leaf - built with gcc -O2 -fno-omit-frame-pointer, which still omits
 * the frame pointer in leaf functions: frame-pointer unwinding from
 * leaf_nofp loses its caller (the walk continues from caller's saved rbp,
 * i.e. at main). With tables the chain is complete:
 *
 *     main -> leaf_caller -> leaf_nofp
 *
 * Usage: uw_leaf SECONDS[c]; with the c, seconds of its own CPU time (as many
 * samples on a busy machine as on an idle one, only later).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void leaf_nofp(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
}

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void leaf_caller(double until)
{
	while (now() < until) {
		leaf_nofp();
		sink++;
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] && argv[1][strlen(argv[1]) - 1] == 'c')
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	leaf_caller(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
