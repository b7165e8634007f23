/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * labels.h - per-process labels for samples: cgroup path and container id.
 *
 * Keyed by (pid, start time) like the symbolizer, filled when a process is
 * first seen (while it is alive) or lazily at drain time, and swept: entries
 * unused for two sweeps are dropped (thirty while there are at most 1024),
 * and the cache has a hard cap.
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

/* Labels of the process, read now if not cached; NULL if it is gone. */
const struct cgroup_info *labels__get(struct labels *l, uint32_t pid, uint64_t start_ns);
void labels__sweep(struct labels *l);
size_t labels__count(const struct labels *l);

#endif
