/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 *
 * alloc.h - bpfprof --alloc's BPF side (bpf/alloc.bpf.c, alloc_abi.h):
 * the C library's allocation and free functions probed in the target
 * processes, allocations sampled by bytes, each sampled one sent with its
 * user stack by value and its hash, the sampled blocks still in use kept in
 * a bounded table (with their stack's hash).
 * The command finds the functions (their file and offsets, through src/proc
 * and src/sym); this room loads the program, attaches the probes and reads
 * what they recorded.
 *
 * Attachment, the first the kernel takes: session uprobes (6.13+: one
 * program at entry and return, the return only for sampled calls), else
 * uprobe_multi links (6.6+: an entry link, and a return link that runs
 * for every allocation call), else perf-event uprobes and uretprobes per
 * function (collector/uprobe.h makes the first two).
 */
#ifndef BPFPROF_COLLECTOR_ALLOC_H
#define BPFPROF_COLLECTOR_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_abi.h"
#include "base/errmsg.h"

struct allocprof;

/* period: the mean bytes between samples (1..2^40). NULL with em filled. */
struct allocprof *allocprof__open(uint64_t period, bool libbpf_debug, struct errmsg *em);

/* -a (all) and --cgroup (all, and the cgroup v2 directories cgroup_fds, at
 * most ALLOC_CGROUPS, not kept): every process but bpfprof itself. */
struct allocprof_scope {
	bool all;
	const int *cgroup_fds;
	uint32_t nr_cgroups;
};
/* allocprof__open for -a, --cgroup (scope NULL: the targets map). */
struct allocprof *allocprof__open_scope(uint64_t period, const struct allocprof_scope *scope,
					bool libbpf_debug, struct errmsg *em);
void allocprof__free(struct allocprof *a);
/* How the probes are attached, for -v. */
const char *allocprof__mode(const struct allocprof *a);
/* The load's cost, for -v: its wall time, the instructions the verifier
 * processed (the programs loaded, summed). */
void allocprof__load_cost(const struct allocprof *a, uint64_t *ns, uint64_t *insns);

/* Profiles process tgid; stop_at_exec: it is sent SIGSTOP at its next exec. 0 or -errno. */
int allocprof__target(struct allocprof *a, uint32_t tgid, bool stop_at_exec);
/* The exec stop (tracepoint) of -- COMMAND. 0 or -errno with em. */
int allocprof__attach_exec_stop(struct allocprof *a, struct errmsg *em);
/* A probe that stops pid (SIGSTOP) at path's file offset off. */
int allocprof__attach_stop(struct allocprof *a, const char *path, uint64_t off, int pid,
			   struct errmsg *em);
void allocprof__detach_stops(struct allocprof *a);

/*
 * The probes of n functions (fns[i]: ALLOC_COOKIE() of alloc_abi.h, its low
 * byte the enum alloc_fn; at file offset offs[i])
 * of the file at path (a kernel_path: ptab.h) in process pid. 0 or -errno
 * with em.
 */
int allocprof__attach_file(struct allocprof *a, const char *path, int pid, const uint32_t *fns,
			   const uint64_t *offs, size_t n, struct errmsg *em);
/* SBCL: the layout of the runtime whose probes' cookies name slot
 * (ALLOC_SBCL_COOKIE), set before they are attached. 0 or -errno. */
int allocprof__sbcl_layout(struct allocprof *a, uint32_t slot, const struct alloc_sbcl *l);

/*
 * -a, --cgroup (the guard, collector/allocguard.h): every probe taken off
 * (after the program is switched off: the counters stop first), or put
 * back (the program switched on once they are in). With all, files
 * attached while off go in at the next allocprof__probes_on; their pid is
 * ignored (every process). 0 or -errno (the first file that failed; em).
 */
int allocprof__probes_off(struct allocprof *a);
int allocprof__probes_on(struct allocprof *a, struct errmsg *em);
/*
 * The run's end: the program switched off (any mode; the probes stay in but
 * count, sample and match nothing more), so that the counters, the ring and
 * the live table hold what the run saw while its output is written.
 */
void allocprof__pause(struct allocprof *a);
/* Whether sampled blocks enter the live table (off once the guard engages). */
void allocprof__track_live(struct allocprof *a, bool on);
/* Probes attached now (an entry and a return count one each). */
size_t allocprof__probes(const struct allocprof *a);
/* The descriptors the probes of one file hold at most in this mode:
 * perf-event uprobes two a probe (the event, its link), an entry and a
 * return a function; uprobe_multi two links, session uprobes one. */
size_t allocprof__fds_per_file(const struct allocprof *a);
/* The descriptors the probes hold now, and would hold on (-a, --cgroup:
 * every file kept put back; else now's). */
void allocprof__fds(const struct allocprof *a, size_t *now, size_t *on);

/* The sampled allocations recorded since the last call: cb for each, at most
 * max (0: all). How many, or -errno. */
int allocprof__drain(struct allocprof *a, void (*cb)(void *ctx, const struct alloc_event *e),
		     void *ctx, size_t max);
/* The sampled blocks not freed: cb for each; those it answers true for are
 * deleted from the table after the walk (*deleted: how many). 0 or -errno. */
int allocprof__live(struct allocprof *a,
		    bool (*cb)(void *ctx, const struct alloc_live_key *k,
			       const struct alloc_live *v),
		    void *ctx, size_t *deleted);
/*
 * Go: the (process, bucket) counts of setprofilebucket's calls
 * (alloc_abi.h): cb for each, at most ALLOC_GO_BUCKETS. 0 or -errno.
 */
int allocprof__go_buckets(struct allocprof *a,
			  void (*cb)(void *ctx, const struct alloc_go_bkey *k,
				     const struct alloc_go_bval *v),
			  void *ctx);
/* Go: the entries of keys deleted (exited processes', all of each process's:
 * its count of entries goes too). How many were. */
size_t allocprof__go_forget(struct allocprof *a, const struct alloc_go_bkey *keys, size_t n);
/* The program's own counters (alloc_abi.h, enum alloc_counter), summed. */
void allocprof__counters(struct allocprof *a, uint64_t out[ALLOC_C_NR]);

#endif
