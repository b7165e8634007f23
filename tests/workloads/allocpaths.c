// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * allocpaths - many distinct allocation stacks, for bpfprof --alloc
 * (tests/integration/test_allocstacks.py): path i of 32^LEVELS goes
 * through LEVELS calls of one of 32 functions each (digit l of i in base
 * 32 says which at level l), the last one allocating SIZE bytes and freeing
 * them: each path is a stack of its own, LEVELS + 2 frames deep. Every PACE
 * allocations it sleeps 1 ms (the ring buffer drained meanwhile). It prints
 * "paths N". Usage: allocpaths [LEVELS] [SIZE] [PACE].
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FANOUT 32

static volatile unsigned long sink;
static unsigned levels = 3;
static size_t size = 64;

typedef void step_fn(unsigned l, unsigned long path);
static step_fn *const steps[FANOUT];

static void leaf(void)
{
	char *p = malloc(size);

	if (p)
		p[0] = 1;
	sink += (unsigned long)p;
	free(p);
}

/* One level: the next function of the path, or the allocation; then work,
 * so that the call is not a tail call and each function's return address
 * stays on the stack. */
#define STEP(n)                                                                                    \
	__attribute__((noinline)) static void step##n(unsigned l, unsigned long path)              \
	{                                                                                          \
		if (l + 1 == levels)                                                               \
			leaf();                                                                    \
		else                                                                               \
			steps[(path >> (5 * (l + 1))) % FANOUT](l + 1, path);                      \
		sink += n;                                                                         \
	}
#define STEP8(n)                                                                                   \
	STEP(n##0) STEP(n##1) STEP(n##2) STEP(n##3) STEP(n##4) STEP(n##5) STEP(n##6) STEP(n##7)
STEP8(1)
STEP8(2)
STEP8(3)
STEP8(4)

static step_fn *const steps[FANOUT] = {
	step10, step11, step12, step13, step14, step15, step16, step17, step20, step21, step22,
	step23, step24, step25, step26, step27, step30, step31, step32, step33, step34, step35,
	step36, step37, step40, step41, step42, step43, step44, step45, step46, step47,
};

int main(int argc, char **argv)
{
	unsigned long pace = 16, n;
	struct timespec ms = { 0, 1000000 };

	if (argc > 1)
		levels = (unsigned)strtoul(argv[1], NULL, 0);
	if (argc > 2)
		size = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		pace = strtoul(argv[3], NULL, 0);
	if (!levels || levels > 4 || !pace)
		return 2;
	n = 1ul << (5 * levels);
	for (unsigned long i = 0; i < n; i++) {
		steps[i % FANOUT](0, i);
		if (i % pace == pace - 1)
			nanosleep(&ms, NULL);
	}
	printf("paths %lu\n", n);
	return 0;
}
