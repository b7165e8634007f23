/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * labels.h - per-process labels for samples: cgroup path and container id.
 *
 * Keyed by (pid, start time) like the symbolizer, filled when a process is
 * first seen (while it is alive) or lazily at drain time, and swept: entries
 * unused for two sweeps are dropped (thirty while there are at most 1024),
 * and the cache has a hard cap.
 *
 * A process noticed with its cgroup id (the BPF notice's) is labelled without
 * a read when two processes of that cgroup read before agreed on it, on a
 * cgroup v2 host (their /proc/PID/cgroup had the unified line alone: the id
 * says it all). Under process churn that is most new processes: a service's
 * or a container's children share its cgroup. Such a cgroup's label is read
 * again LABELS_CGROUP_GENS sweeps after it was agreed on (a renamed cgroup),
 * and at most LABELS_CGROUPS cgroups are kept.
 */
#ifndef BPFPROF_LABELS_H
#define BPFPROF_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "proc/cgroup.h"

struct labels;
struct ptab;

/* Reads through pt (proc/ptab.h), which outlives the labels. */
struct labels *labels__new(struct ptab *pt, size_t max_entries);
void labels__free(struct labels *l);

#define LABELS_CGROUPS	   4096
#define LABELS_CGROUP_GENS 30

/* Labels of the process, read now if not cached; NULL if it is gone. */
const struct cgroup_info *labels__get(struct labels *l, uint32_t pid, uint64_t start_ns);
/* The same for a process noticed in cgroup v2 cgroup_id (0: unknown). */
const struct cgroup_info *labels__note(struct labels *l, uint32_t pid, uint64_t start_ns,
				       uint64_t cgroup_id);
/* Processes labelled from their cgroup id alone, without a read. */
uint64_t labels__cgroup_hits(const struct labels *l);
void labels__sweep(struct labels *l);
size_t labels__count(const struct labels *l);

#endif
