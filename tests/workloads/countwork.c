// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * countwork - known calls for bpfprof count (tests/integration/test_count.py)
 * and its benchmark (tools/bench_count.py). Prints what it did as one JSON
 * line, so a test compares bpfprof's counts with the program's own.
 *
 *   countwork [wait] calls   bp_a 600 times from bp_caller_one and 400 from
 *                            bp_caller_two, bp_b 250 times from main, bp_slow
 *                            (usleep 2 ms) 50 times, bp_recurse to depth 8
 *                            5 times (the leaf sleeps 1 ms)
 *   countwork [wait] hot SECS  bp_hot in a tight loop for SECS seconds, then
 *                            bp_slow 10 times and bp_b 100 times
 *   countwork [wait] bench N   bp_tiny N times; prints ns per call
 *   countwork [wait] bench5 N  tiny_nop5 N times: bp_tiny with a 5-byte nop
 *                            first, as -pg -mfentry -mnop-mcount builds have
 *                            (Linux 6.18+ turns a uprobe there into a call)
 *   countwork [wait] sleep SECS  nothing for SECS seconds (a target that stays)
 * wait: wait for SIGUSR1 before starting (bpfprof count -p attaches first).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t go;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__attribute__((noinline)) void bp_a(int i)
{
	sink += (unsigned long)i;
}

__attribute__((noinline)) void bp_b(int i)
{
	sink ^= (unsigned long)i;
}

__attribute__((noinline)) void bp_caller_one(int n)
{
	for (int i = 0; i < n; i++)
		bp_a(i);
	sink++;
}

__attribute__((noinline)) void bp_caller_two(int n)
{
	for (int i = 0; i < n; i++)
		bp_a(i);
	sink++;
}

static unsigned long long slow_ns;

__attribute__((noinline)) void bp_slow(void)
{
	unsigned long long t0 = now_ns();

	usleep(2000);
	slow_ns += now_ns() - t0;
	sink++;
}

__attribute__((noinline)) int bp_recurse(int depth)
{
	int r;

	if (depth <= 1) {
		usleep(1000);
		return 1;
	}
	r = bp_recurse(depth - 1) + 1;
	sink += (unsigned long)r;
	return r;
}

__attribute__((noinline)) void bp_hot(void)
{
	sink++;
}

__attribute__((noinline)) void bp_tiny(unsigned long i)
{
	sink += i;
}

/* The nop is the function's first instruction, where an entry probe goes
 * (in asm: a C function would push its frame pointer first). */
void tiny_nop5(unsigned long i);
__asm__(".text\n"
	".globl tiny_nop5\n"
	".type tiny_nop5, @function\n"
	"tiny_nop5:\n"
	"\t.cfi_startproc\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopl 0x0(%rax,%rax,1) */
	"\tret\n"
	"\t.cfi_endproc\n"
	".size tiny_nop5, .-tiny_nop5\n");

static void on_usr1(int sig)
{
	go = 1;
}

int main(int argc, char **argv)
{
	int a = 1;

	if (a < argc && !strcmp(argv[a], "wait")) {
		sigset_t none;

		signal(SIGUSR1, on_usr1);
		sigemptyset(&none);
		printf("{\"waiting\": %d}\n", getpid());
		fflush(stdout);
		while (!go)
			sigsuspend(&none);
		a++;
	}
	if (a >= argc || !strcmp(argv[a], "calls")) {
		bp_caller_one(600);
		bp_caller_two(400);
		for (int i = 0; i < 250; i++)
			bp_b(i);
		for (int i = 0; i < 50; i++)
			bp_slow();
		for (int i = 0; i < 5; i++)
			bp_recurse(8);
		printf("{\"bp_a\": 1000, \"bp_a_one\": 600, \"bp_a_two\": 400, \"bp_b\": 250, "
		       "\"bp_slow\": 50, \"bp_slow_mean_ns\": %llu, \"bp_recurse\": 40}\n",
		       slow_ns / 50);
	} else if (!strcmp(argv[a], "hot") && a + 1 < argc) {
		unsigned long long end = now_ns() + (unsigned long long)(atof(argv[a + 1]) * 1e9);
		unsigned long n = 0;

		while (now_ns() < end) {
			for (int i = 0; i < 1000; i++)
				bp_hot();
			n += 1000;
		}
		/* Then the file's other functions: still probed once bp_hot is not. */
		for (int i = 0; i < 10; i++)
			bp_slow();
		for (int i = 0; i < 100; i++)
			bp_b(i);
		printf("{\"bp_hot\": %lu, \"bp_slow\": 10, \"bp_b\": 100}\n", n);
	} else if (!strncmp(argv[a], "bench", 5) && a + 1 < argc) {
		unsigned long n = strtoul(argv[a + 1], NULL, 10);
		bool nop5 = !strcmp(argv[a], "bench5");
		unsigned long long t0 = now_ns();

		for (unsigned long i = 0; i < n; i++) {
			if (nop5)
				tiny_nop5(i);
			else
				bp_tiny(i);
		}
		printf("{\"%s\": %lu, \"ns_per_call\": %.1f}\n", nop5 ? "tiny_nop5" : "bp_tiny", n,
		       (double)(now_ns() - t0) / (double)(n ? n : 1));
	} else if (!strcmp(argv[a], "sleep") && a + 1 < argc) {
		usleep((useconds_t)(atof(argv[a + 1]) * 1e6));
		printf("{}\n");
	} else {
		fprintf(stderr, "usage: countwork [wait] calls|hot SECS|bench N|bench5 N|sleep SECS\n");
		return 2;
	}
	return 0;
}
