// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * faulter - spends its time in page faults taken on the very first
 * instruction of a function, so the interrupted user pc is that function's
 * start address:
 *
 *     main -> fault_loop -> touch_first (first instruction writes a new page)
 *
 * A symbolizer that treats that pc as a return address (looks up pc - 1)
 * names the function before touch_first instead. Usage: faulter SECONDS
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define REGION (16u << 20)

/* Right before touch_first in the text: the wrong answer has a name. */
__attribute__((noinline)) void before_touch(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((naked, noinline)) void touch_first(volatile char *p)
{
	__asm__ volatile("movb $1, (%rdi)\n\tret\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void fault_loop(char *region, double until)
{
	while (now() < until) {
		for (size_t off = 0; off < REGION; off += 4096)
			touch_first(region + off);
		madvise(region, REGION, MADV_DONTNEED); /* the next pass faults again */
		before_touch();
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (region == MAP_FAILED)
		return 1;
	fault_loop(region, now() + seconds);
	return 0;
}
