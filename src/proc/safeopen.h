/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * safeopen.h - opening files that a profiled process (or its container)
 * controls, without letting it steer the agent.
 *
 * Every file bpfprof reads on behalf of a process - mapped binaries, debug
 * files, perf maps - is opened through here:
 *   - inside a root directory fd (the process's /proc/PID/root, or the agent's
 *     own "/"), with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): ".." and
 *     absolute symlinks stay inside that root, /proc magic links are refused;
 *     with SAFEOPEN_NO_SYMLINKS, any symlink on the way fails (ELOOP). Kernels
 *     without openat2 get a walk with O_NOFOLLOW on every component and no
 *     symlinks at all;
 *   - first as O_PATH, which runs no filesystem open method (opening a
 *     device can have side effects, a FIFO has no writer), then checked -
 *     a regular file, on no FUSE mount - with statx(AT_STATX_DONT_SYNC), which
 *     does not ask a FUSE daemon either, and only then re-opened for reading
 *     through /proc/self/fd (O_RDONLY | O_NONBLOCK | O_NOCTTY);
 *   - never on a FUSE mount: a path below a FUSE mount point is refused
 *     before the walk, and when the mount table has any FUSE mount at all,
 *     symlinks are not followed (a link could lead the walk into it). A FUSE
 *     daemon that does not answer would otherwise block the agent forever.
 *
 * Paths are absolute as the process sees them and may not contain ".."
 * components (none we build or read from /proc/PID/maps do).
 *
 * Errors: -ELOOP a symlink where none is allowed, -EXDEV an escape attempt,
 * -EINVAL not a regular file (FIFO, device, directory) or a ".." path,
 * -EREMOTE on a FUSE mount, or the errno of the failing call.
 */
#ifndef BPFPROF_SAFEOPEN_H
#define BPFPROF_SAFEOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct mountinfo;

#define SAFEOPEN_NO_SYMLINKS 1u

/* The checked, re-opened file. */
struct safe_file {
	int fd; /* O_RDONLY, or -1 */
	struct stat st;
	uint64_t mnt_id;
};

/*
 * Opens path (absolute, as the process sees it) inside root_fd, checked as
 * above; mi is the mount table as seen from that root (NULL: none known).
 * Returns 0 and fills f, or -errno.
 */
int safeopen__in_root(int root_fd, const struct mountinfo *mi, const char *path, unsigned flags,
		      struct safe_file *f);

/*
 * Checks and re-opens an O_PATH fd obtained elsewhere (/proc/PID/map_files/..:
 * the very file a mapping maps). Does not close opath_fd.
 */
int safeopen__reopen(int opath_fd, const struct mountinfo *mi, struct safe_file *f);

/* Opens a directory (e.g. "/proc/PID/root") as an O_PATH fd, following links. */
int safeopen__dir(const char *path);

/* For tests: use the O_NOFOLLOW component walk even where openat2 exists. */
void safeopen__force_walk(bool on);

#endif
