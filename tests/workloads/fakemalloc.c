// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakemalloc - a tenant's program whose own executable exports malloc,
 * free, calloc and realloc (a bump allocator that never frees), for
 * test_alloc.py's attack on bpfprof --alloc: after WAIT seconds it calls its
 * malloc with absurd sizes (2^62 bytes: every call is sampled, each weighs
 * 2^62 bytes) as fast as it can for SECONDS, each call returning a new fake
 * address never freed, so the live table, the ring buffer and the sums are
 * flooded. Usage: fakemalloc WAIT SECONDS
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HUGE_SIZE (1ull << 62)

static char arena[16 << 20] __attribute__((aligned(16)));
static size_t used;
static uintptr_t fake = 1ull << 44;

void *malloc(size_t n)
{
	size_t *h;

	if (n >= HUGE_SIZE)
		return (void *)(fake += 16); /* never touched */
	n = (n + 15) & ~(size_t)15;
	if (used + n + 16 > sizeof(arena))
		return NULL;
	h = (size_t *)(arena + used);
	*h = n;
	used += n + 16;
	return h + 2;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t a, size_t b)
{
	void *p;

	if (b && a > SIZE_MAX / b)
		return NULL;
	p = malloc(a * b);
	if (p && a * b < HUGE_SIZE)
		memset(p, 0, a * b);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);

	if (p && q && n < HUGE_SIZE) {
		size_t old = ((size_t *)p)[-2];

		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

static volatile uintptr_t sink;

__attribute__((noinline)) static void storm(void)
{
	sink += (uintptr_t)malloc(HUGE_SIZE);
}

int main(int argc, char **argv)
{
	unsigned wait = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
	double secs = argc > 2 ? atof(argv[2]) : 3;
	struct timespec t0, t;

	sleep(wait);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			storm();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
