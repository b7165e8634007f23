// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* selfstat.c - descriptors and memory of this process, without a new fd; see selfstat.h. */
#include "base/selfstat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd_dir = -1, statm_fd = -1;

/* Under the lock. */
static int open_kept(void)
{
	if (fd_dir < 0)
		fd_dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (statm_fd < 0)
		statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	return fd_dir < 0 || statm_fd < 0 ? -errno : 0;
}

int selfstat__init(void)
{
	int err;

	pthread_mutex_lock(&lock);
	err = open_kept();
	pthread_mutex_unlock(&lock);
	return err;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

long selfstat__open_fds(void)
{
	char buf[4096] __attribute__((aligned(8)));
	long n = 0, r;

	pthread_mutex_lock(&lock);
	open_kept(); /* no-op once open; a late first call may fail, and says so */
	if (fd_dir < 0) {
		pthread_mutex_unlock(&lock);
		return -EBADF;
	}
	if (lseek(fd_dir, 0, SEEK_SET) < 0) {
		n = -errno;
		goto out;
	}
	while ((r = syscall(SYS_getdents64, fd_dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(buf + off);

			if (de->d_reclen == 0)
				break;
			if (de->d_name[0] != '.')
				n++;
			off += de->d_reclen;
		}
	}
	if (r < 0)
		n = -errno;
	else
		n -= (fd_dir >= 0) + (statm_fd >= 0); /* selfstat's own */
out:
	pthread_mutex_unlock(&lock);
	return n;
}

long long selfstat__rss_bytes(void)
{
	unsigned long size, resident;
	char buf[256];
	ssize_t r;

	pthread_mutex_lock(&lock);
	open_kept();
	r = statm_fd < 0 ? -1 : pread(statm_fd, buf, sizeof(buf) - 1, 0);
	if (r < 0) {
		int err = statm_fd < 0 ? EBADF : errno;

		pthread_mutex_unlock(&lock);
		return -err;
	}
	pthread_mutex_unlock(&lock);
	buf[r] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
		return -EINVAL;
	return (long long)resident * sysconf(_SC_PAGESIZE);
}

uint64_t selfstat__fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

uint64_t selfstat__raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl); /* failure leaves the old limit: reported below */
	}
	return selfstat__fd_limit();
}
