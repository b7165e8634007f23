// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * syscalls - syscall-heavy workload: main -> do_reads -> read(/dev/zero, 1
 * byte) in a loop, so most samples land in the kernel under vfs_read.
 * Usage: syscalls SECONDS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void do_reads(int fd, double until)
{
	char c;

	while (now() < until)
		for (int i = 0; i < 1000; i++)
			if (read(fd, &c, 1) != 1)
				exit(1);
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	do_reads(fd, now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
