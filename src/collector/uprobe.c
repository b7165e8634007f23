// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* uprobe.c - uprobe_multi and session links by raw BPF_LINK_CREATE; see uprobe.h. */
#include "collector/uprobe.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#define F_UPROBE_MULTI_RETURN 1u

/* bpf_attr's link_create for uprobe_multi, as the kernel lays it out. */
struct link_create_uprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, um_flags, pid;
	uint8_t pad[128 - 60];
};

int uprobe__link(int prog_fd, uint32_t attach_type, bool ret, const char *path,
		 const uint64_t *offs, const uint64_t *cookies, size_t n, int pid)
{
	struct link_create_uprobe_multi a;
	int fd;

	if (!n || n > UINT32_MAX)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = attach_type;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = (uint32_t)n;
	a.um_flags = ret ? F_UPROBE_MULTI_RETURN : 0;
	a.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}
