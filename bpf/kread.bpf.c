// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * kread.bpf.c - copies kernel memory for userspace, which has no other way
 * to it without /proc/kcore: the kernel's ORC unwind tables, read once at
 * start-up so that profile.bpf.c can walk kernel stacks with them (see
 * src/korc.c). Run with BPF_PROG_TEST_RUN; needs CAP_PERFMON, like the rest.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "profile_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

char buf[KREAD_MAX];

SEC("syscall")
int kread(struct bp_kread_args *a)
{
	__u32 len = a->len;

	if (len > KREAD_MAX)
		return -7; /* -E2BIG */
	return bpf_probe_read_kernel(buf, len, (void *)a->addr);
}
