// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * execpair.c - built twice, as execa (WHO=a) and execb (WHO=b): the same
 * code at the same addresses under different names. execa burns CPU in
 * a_work for a while, then execs execb in the same process, which burns CPU
 * in b_work. A profiler that symbolized execa's samples with execb's
 * mappings (or the reverse) would show b_* names under execa.
 *
 * Usage: execa SECONDS_A SECONDS_B ROUNDS  (execb runs SECONDS_B, then execs
 * execa again while ROUNDS > 1; ROUNDS 0: no exec at all, just the work)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define STR2(a)	   #a
#define STR(a)	   STR2(a)

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void CAT(WHO, _leaf)(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
}

__attribute__((noinline)) void CAT(WHO, _work)(double until)
{
	while (now() < until)
		CAT(WHO, _leaf)();
}

int main(int argc, char **argv)
{
	double a = argc > 1 ? atof(argv[1]) : 1, b = argc > 2 ? atof(argv[2]) : 1;
	int rounds = argc > 3 ? atoi(argv[3]) : 1;
	char self[4096], next[4200], ra[32], rb[32], rr[16];
	int is_a = !strcmp(STR(WHO), "a");
	ssize_t n;

	CAT(WHO, _work)(now() + (is_a ? a : b));
	if (rounds <= 0 || (!is_a && rounds <= 1))
		return 0;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	/* The other program lives beside this one. */
	snprintf(next, sizeof(next), "%.*sexec%s", (int)(strrchr(self, '/') + 1 - self), self,
		 is_a ? "b" : "a");
	snprintf(ra, sizeof(ra), "%g", a);
	snprintf(rb, sizeof(rb), "%g", b);
	snprintf(rr, sizeof(rr), "%d", is_a ? rounds : rounds - 1);
	execl(next, next, ra, rb, rr, (char *)NULL);
	return 1;
}
