/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * selfstat.h - the agent's own resources: open file descriptors, the
 * descriptor limit, resident memory.
 *
 * An agent that has run out of descriptors must still be able to say so:
 * counting /proc/self/fd with opendir() needs one more descriptor, and
 * reported 0 exactly when the number mattered. selfstat__init() opens
 * /proc/self/fd and /proc/self/statm once, at start, and keeps them; every
 * later question is answered with those two descriptors (getdents64 after a
 * rewind, pread), never a new one. Thread-safe.
 */
#ifndef BPFPROF_SELFSTAT_H
#define BPFPROF_SELFSTAT_H

#include <stdint.h>

/* Opens the two kept descriptors (once; later calls do nothing). 0 or -errno. */
int selfstat__init(void);

/* Descriptors open in this process (not counting selfstat's own two), or -errno. */
long selfstat__open_fds(void);

/* Resident set size in bytes, or -errno. */
long long selfstat__rss_bytes(void);

/* RLIMIT_NOFILE: the soft limit (what open() is held to). */
uint64_t selfstat__fd_limit(void);

/*
 * Raises the soft RLIMIT_NOFILE to the hard limit (as the Go runtime does:
 * select() is never used here, so a large limit costs nothing). Returns the
 * soft limit in effect afterwards.
 */
uint64_t selfstat__raise_fd_limit(void);

#endif
