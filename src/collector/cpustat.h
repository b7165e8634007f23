/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cpustat.h - every CPU's idle + iowait and steal ticks (USER_HZ), from
 * /proc/stat: time in which a CPU ran nothing, and time the hypervisor ran
 * something else (what the events could not sample: collector/sampling.h).
 * No libbpf: the path is the caller's, so a fake file can test it.
 */
#ifndef BPFPROF_CPUSTAT_H
#define BPFPROF_CPUSTAT_H

#include <stdint.h>

#define CPUSTAT_PATH "/proc/stat"

/*
 * Fills off[0..n) and steal[0..n) from the "cpuN ..." lines of the file at
 * path (at most 1 MiB: -EFBIG past it); a CPU without a well-formed line
 * reads 0, lines of CPUs n and above are skipped. 0 or -errno.
 */
int cpustat__ticks(const char *path, uint64_t *off, uint64_t *steal, int n);

#endif
