// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * shortlived - processes that are gone before a profiler can read them, as a
 * busy container host runs them: the parent spins in parent_spin, then
 * starts a child every PERIOD ms (fork and exec of itself, so each child is
 * a new program image), and each child spins in short_spin for about SPIN
 * ms of CPU time (rounds of a loop, as many as the parent's spin did in that
 * long) and exits. At the end the parent prints the children's
 * CPU time in all ("children_cpu SECONDS", from their rusage), the part of it
 * spent in short_spin as each child measured it ("spin_cpu SECONDS": exec
 * and start-up cost more on a loaded machine, the spin does not), and how
 * many ran.
 *
 * Usage: shortlived SECONDS [SPIN_MS [PERIOD_MS]]   (default 4 and 20)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins n rounds: no system call inside, so its samples are all in user mode. */
__attribute__((noinline)) void short_spin(unsigned long n)
{
	for (unsigned long r = 0; r < n; r++)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

/* Spins for secs of wall-clock time; returns the rounds of short_spin's loop done. */
__attribute__((noinline)) unsigned long parent_spin(double secs)
{
	double t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), until = clock_s(CLOCK_MONOTONIC) + secs;
	unsigned long rounds = 0;

	while (clock_s(CLOCK_MONOTONIC) < until) {
		for (int i = 0; i < 1000; i++)
			sink += i;
		rounds++;
	}
	/* Rounds per CPU second, for the children's spin. */
	return (unsigned long)(rounds / (clock_s(CLOCK_PROCESS_CPUTIME_ID) - t0 + 1e-9));
}

int main(int argc, char **argv)
{
	double secs, spin = 0.004, period = 0.020, end, spin_cpu = 0, cpu;
	unsigned long children = 0;
	struct rusage ru;
	char arg[32], fdarg[16], self[4096];
	int pfd[2];
	ssize_t len;

	if (argc >= 4 && !strcmp(argv[1], "child")) {
		double t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), used;

		short_spin(strtoul(argv[2], NULL, 10));
		used = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
		/* To the parent: one write under PIPE_BUF, whole. */
		if (write(atoi(argv[3]), &used, sizeof(used)) != sizeof(used))
			return 1;
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: shortlived SECONDS [SPIN_MS [PERIOD_MS]]\n");
		return 2;
	}
	secs = atof(argv[1]);
	/* Exec'd by its path, so that the children's command name is ours. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = '\0';
	if (argc > 2)
		spin = atof(argv[2]) / 1000;
	if (argc > 3)
		period = atof(argv[3]) / 1000;
	/* Sampled first, so its files are known before the children come; and
	 * how many rounds a child spins for SPIN of CPU time. */
	snprintf(arg, sizeof(arg), "%lu", (unsigned long)(parent_spin(0.5) * spin) + 1);
	/* The children's spin times come back through a pipe (read after each exit). */
	if (pipe(pfd) || fcntl(pfd[0], F_SETFL, O_NONBLOCK))
		return 1;
	snprintf(fdarg, sizeof(fdarg), "%d", pfd[1]);
	end = clock_s(CLOCK_MONOTONIC) + secs;
	while (clock_s(CLOCK_MONOTONIC) < end) {
		pid_t pid = fork();

		if (pid == 0) {
			close(pfd[0]);
			execl(self, argv[0], "child", arg, fdarg, (char *)NULL);
			_exit(127);
		}
		if (pid > 0) {
			waitpid(pid, NULL, 0);
			children++;
			while (read(pfd[0], &cpu, sizeof(cpu)) == sizeof(cpu))
				spin_cpu += cpu;
		}
		usleep((useconds_t)(period * 1e6));
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("children %lu\nchildren_cpu %.6f\nspin_cpu %.6f\n", children,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
	       spin_cpu);
	return 0;
}
