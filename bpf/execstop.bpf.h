/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * execstop.bpf.h - -- COMMAND's stops, shared by alloc.bpf.c and
 * count.bpf.c (their links: collector/execstop.c). The command bpfprof
 * starts is a target marked "stop at its exec" in the program's targets
 * map: it stops (SIGSTOP) at its exec, before its first instruction, and
 * is then an ordinary target; it stops again at a uprobe on its entry
 * point, its libraries mapped: the probes go in then. session/launch.c
 * lets it go on each time.
 */
#ifndef BPFPROF_EXECSTOP_BPF_H
#define BPFPROF_EXECSTOP_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#ifndef SIGSTOP
#define SIGSTOP 19
#endif

/* At an exec: stops the current process if targets marks it stop (then on); whether it did. */
static __always_inline bool execstop__at_exec(void *targets, __u8 stop, __u8 on)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 *v = bpf_map_lookup_elem(targets, &tgid);

	if (!v || *v != stop)
		return false;
	bpf_map_update_elem(targets, &tgid, &on, BPF_EXIST);
	bpf_send_signal(SIGSTOP);
	return true;
}

/* At the entry point's uprobe: stops the current process if it is a target. */
static __always_inline void execstop__at_entry(void *targets)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (bpf_map_lookup_elem(targets, &tgid))
		bpf_send_signal(SIGSTOP);
}

#endif
