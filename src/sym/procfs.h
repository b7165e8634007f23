/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * procfs.h - small readers of /proc/PID files, rooted at a configurable proc
 * directory so tests can use a fake tree.
 */
#ifndef BPFPROF_PROCFS_H
#define BPFPROF_PROCFS_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Start time of pid in clock ticks since boot (/proc/PID/stat field 22).
 * 0 or -errno (-ENOENT: no such process, -EINVAL: unparsable).
 */
int procfs__starttime(const char *proc_root, uint32_t pid, uint64_t *ticks);

/* Parses field 22 out of a /proc/PID/stat text (comm may hold spaces and ')'). */
int procfs__parse_stat_starttime(const char *buf, uint64_t *ticks);

/*
 * Fields of /proc/PID/status: Tgid, the innermost NSpid, effective uid.
 * Any pointer may be NULL. 0 or -errno.
 */
struct proc_status {
	uint32_t tgid;
	uint32_t ns_pid; /* last NSpid column: the pid inside its namespace */
	uint32_t euid;
};
int procfs__status(const char *proc_root, uint32_t pid, struct proc_status *st);
int procfs__parse_status(const char *buf, struct proc_status *st);

/* Converts a BPF task start_boottime (ns) to /proc's clock ticks. */
uint64_t procfs__ns_to_ticks(uint64_t ns);

#endif
