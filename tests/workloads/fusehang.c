// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fusehang - mounts a FUSE file system that never answers: it opens
 * /dev/fuse, mounts it on DIR and then never reads a request, so every
 * lookup, open, stat or read under DIR waits forever (killably). The profiler
 * must never touch such a mount. The connection is aborted when this process
 * dies. Run it in a private mount namespace (unshare -m).
 *
 * Usage: fusehang DIR   (prints "mounted PID" when ready)
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char opts[128];
	int fd;

	if (argc < 2)
		return 2;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("fusehang", argv[1], "fuse.fusehang", MS_NOSUID | MS_NODEV, opts)) {
		perror("mount");
		return 1;
	}
	printf("mounted %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
