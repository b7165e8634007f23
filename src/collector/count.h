/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * count.h - bpfprof count's BPF side (bpf/count.bpf.c): exact calls and
 * entry-to-return time of chosen functions, through uprobes. The command
 * finds the functions (their files and offsets, through src/proc and
 * src/sym); this room loads the program, attaches and detaches the probes
 * and reads the counts.
 *
 *     counter__open(nfuncs)        load, the stats map sized for nfuncs
 *     counter__target(pid, stop)   count this process (stop: at its exec)
 *     counter__attach(fn, ...)     a uprobe and a uretprobe on one function
 *     counter__read(fn)            its counts, summed over the CPUs
 *     counter__detach(fn)          the guard: a function over its budget
 *     counter__free()
 *
 * Attachment: uprobe_multi links (kernel 6.6+; made with a raw
 * BPF_LINK_CREATE, as libbpf 1.1 has no API for them), one for the entries
 * and one for the returns of a file's functions in one process; else one
 * perf-event uprobe and one uretprobe per function and process. The
 * function's index is in the cookie. Paths are the kernel_path of the file
 * (ptab.h), so the probe lands in the file that was checked and read.
 */
#ifndef BPFPROF_COLLECTOR_COUNT_H
#define BPFPROF_COLLECTOR_COUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h"
#include "count_abi.h"

struct counter;

/*
 * all_procs: every process calls counted (-a), or with nr_cgroups those in
 * one of the cgroup v2 directories cgroup_fds (or below: --cgroup; at most
 * COUNT_CGROUPS, the fds not kept). libbpf_debug: libbpf's debug lines on
 * stderr (-vv). kernel: kernel functions will be probed (session kprobes:
 * refused, said, where the kernel has no session probes). NULL with em filled.
 */
struct counter *counter__open(uint32_t nfuncs, bool all_procs, const int *cgroup_fds,
			      uint32_t nr_cgroups, bool kernel, bool libbpf_debug,
			      struct errmsg *em);
void counter__free(struct counter *c);
/* How the probes are attached, for -v. */
const char *counter__mode(const struct counter *c);

/* Counts process tgid; stop_at_exec: it is sent SIGSTOP at its next exec. 0 or -errno. */
int counter__target(struct counter *c, uint32_t tgid, bool stop_at_exec);
/* The exec stop (tracepoint) of -- COMMAND. 0 or -errno with em. */
int counter__attach_exec_stop(struct counter *c, struct errmsg *em);
/* --children: the processes a target forks are targets (before they run). 0 or -errno. */
int counter__attach_children(struct counter *c, struct errmsg *em);
/*
 * --children, once the command runs: a target that execs is stopped there
 * (SIGSTOP) and listed, for its new executable's functions to be probed;
 * counter__next_exec() takes one from the list (0, *pid and *start_ns, its
 * start_boottime as BPF saw it; or -ENOENT). The pid may name another
 * process by now: the caller signals it through procfs__pidfd_started().
 */
void counter__follow_execs(struct counter *c);
int counter__next_exec(struct counter *c, uint32_t *pid, uint64_t *start_ns);
/* A probe that stops pid (SIGSTOP) at path's file offset off; one at a time. */
int counter__attach_stop(struct counter *c, const char *path, uint64_t off, int pid,
			 struct errmsg *em);
void counter__detach_stops(struct counter *c);

/*
 * Entry and return probes of n functions (fns[i] < nfuncs, at file offset
 * offs[i]) of the file at path, in process pid (-1: every process, with
 * -a). file: the caller's key for the file, the same in every process. The
 * path must stay valid while c lives (the file held open: the guard
 * re-attaches through it). Returns how many were attached, or -errno with em.
 */
int counter__attach_file(struct counter *c, uint64_t file, const char *path, int pid,
			 const uint32_t *fns, const uint64_t *offs, size_t n, struct errmsg *em);
/*
 * Session kprobes on the kernel functions names[0..n) (fns[i] their
 * indexes; -k). How many were attached, or -errno with em.
 */
int counter__attach_kernel(struct counter *c, const char *const *names, const uint32_t *fns,
			   size_t n, struct errmsg *em);
/* cb for each kernel function that can be probed (tracefs's
 * available_filter_functions), each name once, sorted. 0 or -errno. */
int counter__each_kfunc(void (*cb)(void *ctx, const char *name), void *ctx);
/* Removes every probe of fn (its counts stay; a kernel function's kprobe
 * stays, switched off in BPF). */
void counter__detach(struct counter *c, uint32_t fn);
/* Probes attached now (entry and return each count one). */
size_t counter__probes(const struct counter *c);

/* fn's counts over every CPU. 0 or -errno. */
int counter__read(struct counter *c, uint32_t fn, struct count_stat *out);
/* Calls by (process, function, return address): cb for each. 0 or -errno. */
int counter__callers(struct counter *c,
		     void (*cb)(void *ctx, const struct count_caller_key *k, uint64_t n),
		     void *ctx);
/* The program's own counters (count_abi.h, enum count_counter), summed. */
void counter__counters(struct counter *c, uint64_t out[COUNT_C_NR]);

#endif
