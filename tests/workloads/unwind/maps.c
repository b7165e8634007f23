// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_maps - a process with thousands of mappings: NMAPS single pages with
 * alternating protections (so the kernel cannot merge them), NEXEC of them
 * executable, then the known chain without frame pointers:
 *
 *     main -> maps_outer -> maps_leaf
 *
 * Usage: uw_maps SECONDS[c] NMAPS NEXEC; with the c, seconds of its own CPU
 * time (as many samples on a busy machine as on an idle one, only later).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void maps_leaf(void)
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

__attribute__((noinline)) void maps_outer(double until)
{
	while (now() < until) {
		maps_leaf();
		sink++;
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	long nmaps = argc > 2 ? atol(argv[2]) : 5000, nexec = argc > 3 ? atol(argv[3]) : 300;
	long page = sysconf(_SC_PAGESIZE);
	char *area = mmap(NULL, (size_t)(2 * nmaps) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (area == MAP_FAILED)
		return 1;
	/* Every other page gets its own protection: no two neighbours merge. */
	for (long i = 0; i < nmaps; i++) {
		int prot = i < nexec ? PROT_READ | PROT_EXEC : (i & 1) ? PROT_READ : PROT_READ | PROT_WRITE;

		if (mprotect(area + 2 * i * page, page, prot))
			return 1;
	}
	if (argc > 1 && argv[1][0] && argv[1][strlen(argv[1]) - 1] == 'c')
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	maps_outer(now() + secs);
	return 0;
}
