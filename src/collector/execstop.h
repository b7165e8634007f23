/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * execstop.h - the links that stop a started command (-- COMMAND) for its
 * probes, shared by the collectors that start one (alloc.c, count.c): the
 * exec tracepoint program (bpf/execstop.bpf.h: the command stopped at its
 * exec, before its first instruction) and the uprobes at its entry point
 * (stopped again there, its libraries mapped). session/launch.c drives the
 * stops and resumes the command; this holds and frees the links.
 */
#ifndef BPFPROF_COLLECTOR_EXECSTOP_H
#define BPFPROF_COLLECTOR_EXECSTOP_H

#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h"

struct bpf_link;
struct bpf_program;

struct execstop {
	struct bpf_link *exec;	   /* the exec tracepoint's, or NULL */
	struct bpf_link **entries; /* the entry point uprobes' */
	size_t nr_entries, cap_entries;
};

/* prog (a tracepoint/sched/sched_process_exec program) attached. 0 or -errno, em filled. */
int execstop__attach_exec(struct execstop *s, struct bpf_program *prog, struct errmsg *em);
/* prog attached as a uprobe at offset off of path in process pid. 0 or -errno, em filled. */
int execstop__attach_entry(struct execstop *s, struct bpf_program *prog, const char *path,
			   uint64_t off, int pid, struct errmsg *em);
/* The entry point uprobes detached (the command has passed them). */
void execstop__detach_entries(struct execstop *s);
/* Every link detached and freed; s is empty again. */
void execstop__free(struct execstop *s);

#endif
