// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * annloop - a loop with one instruction that holds most samples, for the
 * annotate tests: a chain of dependent 64-bit divisions (tens of cycles
 * each), so timer interrupts land mostly at the same instruction, and the
 * hottest instruction is the same for bpfprof and perf over any window.
 *
 *     main -> div_loop (C)
 *
 * Built with -g, its DWARF moved into annloop.debug (objcopy
 * --only-keep-debug) beside it and linked by .gnu_debuglink, so source lines
 * come from a separate debug file. Usage: annloop SECONDS
 */
#include <stdlib.h>
#include <time.h>

/* Not a constant (a real div), and wider than 32 bits, so the compiler's
 * 32-bit fast path for small operands is never taken. */
static volatile unsigned long divisor = 0x100000007ul;
static volatile unsigned long sink;

__attribute__((noinline)) unsigned long div_loop(unsigned long n)
{
	unsigned long x = 0x7edcba9876543210ul, d = divisor;

#pragma clang loop unroll(disable)
	for (unsigned long i = 0; i < n; i++)
		x = x / d + i * 977;
	return x;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? atof(argv[1]) : 5);

	while (now() < until)
		sink = div_loop(200000);
	return 0;
}
