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
 *   - never on a mount that may block (FUSE, network file systems: see
 *     mountinfo.h): a path below such a mount point is refused before the
 *     walk, and when the mount table has any such mount at all, symlinks are
 *     not followed (a link could lead the walk into it). The opened file's
 *     mount (statx STATX_MNT_ID, unique system-wide) is looked up in the
 *     root's table, then in the host's; a file on a mount neither table
 *     knows is refused too, since nothing says it cannot block. A FUSE daemon
 *     or a server that does not answer would otherwise block the agent
 *     forever.
 *
 * Paths are absolute as the process sees them and may not contain ".."
 * components (none we build or read from /proc/PID/maps do).
 *
 * Errors: -ELOOP a symlink where none is allowed, -EXDEV an escape attempt,
 * -EINVAL not a regular file (FIFO, device, directory) or a ".." path,
 * -EREMOTE on a mount that may block (or an unknown one), or the errno of the
 * failing call.
 */
#ifndef BPFPROF_SAFEOPEN_H
#define BPFPROF_SAFEOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "proc/mountinfo.h"

#define SAFEOPEN_NO_SYMLINKS 1u

/* A root directory to open files in, and what is mounted where below it. */
struct safe_root {
	int fd;				 /* O_PATH directory fd, or -1: none */
	const struct mountinfo *mi;	 /* the mount table seen from it, or NULL: unknown */
	const struct mountinfo *host_mi; /* the agent's own table, or NULL */
	/*
	 * The mount id of the kernel's internal tmpfs, which no table lists and
	 * which cannot block: where memfd_create() files live (what JITs and
	 * programs run from memory map). Kernels report 0 for such internal
	 * mounts. Only used when shm_known.
	 */
	uint64_t shm_mnt_id;
	bool shm_known;
};

/* The checked, re-opened file. */
struct safe_file {
	int fd; /* O_RDONLY, or -1 */
	struct stat st;
	uint64_t mnt_id;
	/* With -EREMOTE: the file system type that may block, "" if unknown. */
	char fstype[MOUNTINFO_FSTYPE_MAX];
};

/*
 * Opens path (absolute, as the process sees it) inside root, checked as
 * above. Returns 0 and fills f, or -errno.
 */
int safeopen__in_root(const struct safe_root *root, const char *path, unsigned flags,
		      struct safe_file *f);

/*
 * Checks and re-opens an O_PATH fd obtained elsewhere (/proc/PID/map_files/..:
 * the very file a mapping maps), with root's mount tables. Does not close
 * opath_fd.
 */
int safeopen__reopen(int opath_fd, const struct safe_root *root, struct safe_file *f);

/* Opens a directory (e.g. "/proc/PID/root") as an O_PATH fd, following links. */
int safeopen__dir(const char *path);

/*
 * Who a file is read for. Rule 1 of the threat model: a file that a
 * process's data names (a source path in its line table, a debug link) is
 * read only if that process - or the owner of the file that names it -
 * could read it itself. uid 0 reads anything (CAP_DAC_OVERRIDE); other
 * capabilities a reader may hold are not counted (so it may be refused what
 * it could read: never the other way round).
 */
#define SAFE_CRED_MAX_GROUPS 64
struct safe_cred {
	uint32_t uid, gid;		       /* the file system ids (fsuid, fsgid) */
	uint32_t groups[SAFE_CRED_MAX_GROUPS]; /* supplementary; more are not counted */
	size_t nr_groups;
};

/*
 * safeopen__in_root(), for readers: path (absolute, as the process sees it;
 * ".." allowed, it stays inside root) is walked one component at a time from
 * root, and the file is opened only if each of readers[0..n) could open it
 * itself. On the way:
 *   - every directory looked in must be searchable by each reader (mode bits
 *     and POSIX ACLs, as the kernel checks them) and on a mount that cannot
 *     block (checked before looking in it, not only by the path's text);
 *   - symlinks are followed inside root (at most 40; none with
 *     SAFEOPEN_NO_SYMLINKS), and a link in a sticky world-writable directory
 *     only where fs.protected_symlinks would let that reader follow it;
 *   - the file must be readable by each reader, a regular file, and not on a
 *     pseudo file system (proc, sysfs, debugfs...) whose permission checks are
 *     not in its mode bits, nor reached through such a file system's links.
 * The checks are made on the descriptors that are then opened (never the
 * path again): a rename or a swapped link cannot send the read elsewhere.
 * -EACCES when a reader could not; *denied (if not NULL) gets its index.
 * -EPERM on a pseudo file system; other errors as safeopen__in_root(). With
 * no readers (n 0) the walk is the same, with no permission checked: for a
 * directory the operator named.
 */
int safeopen__in_root_as(const struct safe_root *root, const char *path, unsigned flags,
			 const struct safe_cred *const *readers, size_t n, struct safe_file *f,
			 size_t *denied);

/* For tests: use the O_NOFOLLOW component walk even where openat2 exists. */
void safeopen__force_walk(bool on);

#endif
