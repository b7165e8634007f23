// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * allocsites - known allocations from known call sites, for bpfprof --alloc
 * (tests/integration/test_alloc.py):
 *
 *   site_freed  ROUNDS x 3 x N blocks of SIZE bytes, each freed at once
 *   site_kept   ROUNDS x N blocks of SIZE bytes, kept until exit
 *   site_small  ROUNDS x N x SIZE / 64 blocks of 64 bytes (as many bytes as
 *               site_kept's), freed at once, through calloc
 *
 * so site_freed allocates 3x the bytes of site_kept and site_small as many
 * as site_kept in 48x the objects. It prints its totals, one "site bytes
 * objects kept_bytes" line per site, then exits without freeing the kept
 * blocks. Usage: allocsites [ROUNDS] [N] [SIZE] [WAIT]: WAIT seconds of
 * sleep first (for bpfprof -p to attach).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void *site_freed(size_t size)
{
	char *p = malloc(size);

	if (p)
		p[0] = 1;
	sink += (unsigned long)p;
	free(p);
	return NULL;
}

__attribute__((noinline)) static void *site_kept(size_t size)
{
	char *p = malloc(size);

	if (p)
		p[0] = 1;
	sink += (unsigned long)p;
	return p;
}

__attribute__((noinline)) static void site_small(void)
{
	char *p = calloc(1, 64);

	sink += (unsigned long)p;
	free(p);
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 16;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1024;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 4096;
	unsigned long long freed = 0, kept = 0, small = 0;
	void **keep = calloc(rounds * n + 1, sizeof(*keep));
	size_t nk = 0;

	if (!keep)
		return 1;
	if (argc > 4)
		sleep((unsigned)strtoul(argv[4], NULL, 0));
	for (unsigned long r = 0; r < rounds; r++) {
		for (unsigned long i = 0; i < 3 * n; i++) {
			site_freed(size);
			freed += size;
		}
		for (unsigned long i = 0; i < n; i++) {
			keep[nk++] = site_kept(size);
			kept += size;
		}
		for (unsigned long i = 0; i < n * size / 64; i++) {
			site_small();
			small += 64;
		}
	}
	printf("site_freed %llu %llu 0\n", freed, freed / size);
	printf("site_kept %llu %llu %llu\n", kept, kept / size, kept);
	printf("site_small %llu %llu 0\n", small, small / 64);
	fflush(stdout);
	return keep[0] == NULL;
}
