/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * procfs.h - small readers of /proc/PID files, rooted at a configurable proc
 * directory so tests can use a fake tree.
 */
#ifndef BPFPROF_PROCFS_H
#define BPFPROF_PROCFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/safeopen.h"

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

/*
 * The credentials file access uses, from /proc/PID/status: the fs uid and
 * gid (the fourth columns of Uid and Gid) and the supplementary groups (at
 * most SAFE_CRED_MAX_GROUPS; more are not counted). 0 or -errno (-EINVAL:
 * no Uid or Gid line).
 */
int procfs__parse_cred(const char *buf, struct safe_cred *c);
int procfs__cred(const char *proc_root, uint32_t pid, struct safe_cred *c);

/*
 * The fields of /proc/PID/stat that identify a process image: its start time
 * (field 22, clock ticks since boot) and the address-space layout fields the
 * BPF side also reads for bp_mm_sig() (26 startcode, 27 endcode, 47 start_brk,
 * 48 arg_start, 51 env_end). An exec replaces the address space, and with it
 * these; they read 0 when the task has no mm (a zombie main thread). And the
 * CPU time it used (14 utime, 15 stime, clock ticks; of /proc/PID/stat, every
 * thread's, the exited ones' too).
 */
struct proc_stat {
	uint64_t utime, stime;
	uint64_t start_time;
	uint64_t start_code, end_code, start_brk, arg_start, env_end;
};
int procfs__parse_stat(const char *buf, struct proc_stat *st);
/* Reads <proc_root>/<rel>/stat, e.g. rel "123" or "123/task/456". */
int procfs__stat(const char *proc_root, const char *rel, struct proc_stat *st);
/* bp_mm_sig() of those fields, 0 when they are all 0. */
uint64_t procfs__mm_sig(const struct proc_stat *st);
/*
 * Start time (ticks) and address-space signature of process pid; when the
 * main thread has exited (no mm), from one of its live threads. 0 or -errno.
 */
int procfs__image(const char *proc_root, uint32_t pid, uint64_t *start_ticks, uint64_t *mm_sig);

/*
 * The thread ids of process pid (<proc_root>/PID/task), at most max, into
 * tids; *n receives the count. 0, or -errno (-ENOENT: no such process).
 */
int procfs__tasks(const char *proc_root, uint32_t pid, uint32_t *tids, size_t max, size_t *n);
/* The process ids in proc_root, at most max, into pids; *n the count. 0 or -errno. */
int procfs__pids(const char *proc_root, uint32_t *pids, size_t max, size_t *n);
/* Threads tried when looking for a live one (the main thread exited). */
#define PROCFS_LIVE_TASKS 64

/*
 * A pidfd of process pid (pidfd_open(2), close-on-exec): it pins the process,
 * not the number, and polls readable once the process has exited. The
 * descriptor or -errno (-ESRCH: no such process).
 */
int procfs__pidfd(uint32_t pid);
/* Whether the process of pidfd has exited (the pidfd polls readable). */
bool procfs__pidfd_exited(int pidfd);
/*
 * A pidfd of process pid if it is still the process that started at
 * start_ns (a BPF task start_boottime): a number BPF saw may name another
 * process by the time userspace looks (the first exited and the number was
 * reused). The pidfd is taken, then the start time read, then the pidfd
 * checked alive: the number named the pidfd's process when its time was
 * read. The descriptor, or -errno (-ESRCH: gone, or another process now).
 */
int procfs__pidfd_started(const char *proc_root, uint32_t pid, uint64_t start_ns);
/* Sends sig to the process of pidfd (pidfd_send_signal(2)). 0 or -errno. */
int procfs__pidfd_signal(int pidfd, int sig);

/*
 * The entry point (AT_ENTRY) of process pid's program, from its auxiliary
 * vector (<proc_root>/PID/auxv, kernel text, at most 4 KiB read): where the
 * program starts once the dynamic loader has mapped its libraries. 0, or
 * -errno (-ENOENT: no such process or no AT_ENTRY).
 */
int procfs__entry(const char *proc_root, uint32_t pid, uint64_t *entry);

/* Converts a BPF task start_boottime (ns) to /proc's clock ticks. */
uint64_t procfs__ns_to_ticks(uint64_t ns);

#endif
