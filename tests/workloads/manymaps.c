// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * manymaps - a process with thousands of executable mappings (issue 14,
 * item 4): maps its own executable PROT_READ | PROT_EXEC N times, prints
 * "ready", then spins for SECONDS in
 *
 *     main -> run -> spin_hot
 *
 * With "copy", spin_hot runs from the first copy mapped (the highest in
 * the address space), so its frames are in one of the N mappings.
 * Usage: manymaps SECONDS N [copy]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char __executable_start[]; /* the ELF header: load base of this PIE */

/* Self-contained (no calls, no globals): it must run from a copy as well. */
__attribute__((noinline)) void spin_hot(void)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < 2000000; i++)
		x += i;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(void (*hot)(void), double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		hot();
}

int main(int argc, char **argv)
{
	void (*hot)(void) = spin_hot;
	char *first = NULL;
	struct stat sb;
	long n;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: manymaps SECONDS N [copy]\n");
		return 2;
	}
	n = atol(argv[2]);
	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0 || fstat(fd, &sb)) {
		perror("manymaps: /proc/self/exe");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		char *p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED) {
			fprintf(stderr, "manymaps: mmap %ld: %s\n", i, strerror(errno));
			return 1;
		}
		if (!first)
			first = p;
	}
	/* The text segment's file offset is its vaddr (PIE): same offset in a copy. */
	if (argc > 3 && !strcmp(argv[3], "copy") && first)
		hot = (void (*)(void))(first + ((char *)spin_hot - __executable_start));
	printf("ready %ld\n", n);
	fflush(stdout);
	run(hot, atof(argv[1]));
	return 0;
}
