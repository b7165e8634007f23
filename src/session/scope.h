/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * scope.h - the processes "-a" and "--cgroup PATH" look at, for the
 * commands that find files through the processes mapping them (bpfprof
 * count, --alloc): every process in /proc, or those of the cgroup v2
 * directories and below. Errors are said (p_err, with a hint); the
 * functions return 0, or 1 when they said one.
 */
#ifndef BPFPROF_SESSION_SCOPE_H
#define BPFPROF_SESSION_SCOPE_H

#include <stddef.h>
#include <stdint.h>

/* Opens the --cgroup directories paths[0..n) into fds[0..n) (-1 for those not opened). */
int scope__open_cgroups(const char **paths, size_t n, int *fds);
/*
 * The processes of the n cgroups (fds, named paths), or with n == 0 every
 * process: at most max into pids, *nr the count (0 is an error, said). what
 * names what they are looked at for, in the -v line; NULL: quiet (a
 * rescan: nothing said, 0 processes not an error; -errno returned instead of 1).
 */
int scope__pids(const char **paths, const int *fds, size_t n, uint32_t *pids, size_t max,
		size_t *nr, const char *what);

#endif
