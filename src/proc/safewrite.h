/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * safewrite.h - where root writes: output paths that other users may
 * control (-o FILE, --output-dir DIR), without letting them steer the write.
 *
 * A tenant who can write a directory on an output path can plant a symlink,
 * a FIFO or a device node there, or swap a name between a check and a use.
 * The kernel's fs.protected_symlinks and fs.protected_fifos would stop some
 * of that, but only in sticky world-writable directories, and only when the
 * sysctls are on. So bpfprof applies these rules itself, whatever they say:
 *
 *   - Trusted users: root, the user bpfprof runs as, and under sudo the user
 *     who ran sudo (SUDO_UID; already able to do anything as root), as git's
 *     safe.directory check does.
 *   - A directory "others can write" is owned by someone else or writable by
 *     its group or by everyone (sticky or not).
 *   - No symlink owned by someone else in a directory others can write is
 *     followed, anywhere on the path (its directories too); no FIFO or device
 *     owned by someone else in such a directory is opened. Symlinks are
 *     resolved here, one component at a time with O_NOFOLLOW, so every link
 *     on the way is checked; /proc's magic links (/dev/stdout ->
 *     /proc/self/fd/1) are followed by the kernel: they lead to files the
 *     process has open already.
 *   - Nothing blocks in open(): a FIFO or device is opened O_NONBLOCK from an
 *     O_PATH descriptor of the very entry that was checked (re-opened through
 *     /proc/self/fd, so nothing can be swapped in between), then O_NONBLOCK is
 *     cleared. A FIFO nobody reads fails -ENXIO at once.
 *   - New files are made with openat(dirfd, name, O_CREAT | O_EXCL |
 *     O_NOFOLLOW) in a directory descriptor held from the check on, so a
 *     name swapped later changes nothing.
 *   - An output directory (--output-dir) must be owned by a trusted user and
 *     writable by no one else (sshd's StrictModes): nobody else can then put
 *     a name in it, and every later operation is relative to its descriptor.
 *
 * Refusals are -EACCES (as the kernel's protected_* checks), with the
 * offending entry, its owner and the directory's mode in the errmsg.
 */
#ifndef BPFPROF_SAFEWRITE_H
#define BPFPROF_SAFEWRITE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/errmsg.h"

/* Whether uid is trusted (above). */
bool safewrite__trusted(uid_t uid);
/* Whether others than trusted users can write the directory st describes. */
bool safewrite__others_write(const struct stat *dir);

/* Where "-o PATH" goes: a name in a directory, or a file to write directly. */
struct safewrite_target {
	int dirfd;		 /* O_PATH: the directory name is created in, or -1 */
	char name[NAME_MAX + 1]; /* the file name in it (atomic write: temp + rename) */
	int fd;			 /* a FIFO, device or file of ours (/dev/stdout) to write
				  * directly, opened O_WRONLY and blocking; or -1 */
};

/*
 * Resolves path for writing under the rules above. A missing or regular file
 * (or a symlink to one, which the rename replaces) gives dirfd and name;
 * a FIFO, device or /proc magic link gives fd, opened only if open is true
 * (else just checked: nothing is opened). A directory is -EISDIR. Returns 0,
 * or -errno (with em said for a refusal).
 */
int safewrite__target(const char *path, bool open, struct safewrite_target *t, struct errmsg *em);
void safewrite__target_close(struct safewrite_target *t);

/*
 * Creates a new, empty temporary file for name in dirfd, "NAME.tmp.XXXXXX",
 * with O_CREAT | O_EXCL | O_NOFOLLOW, mode 0644 whatever the umask; tmp
 * receives its name. The descriptor (O_WRONLY) or -errno.
 */
int safewrite__tmpfile(int dirfd, const char *name, char *tmp, size_t size);

/*
 * Creates a new file prefix + 6 random characters + suffix in dirfd with
 * O_CREAT | O_EXCL | O_NOFOLLOW (another name on a collision), with mode
 * whatever the umask; name receives it. The descriptor (O_WRONLY) or -errno.
 */
int safewrite__newfile(int dirfd, const char *prefix, const char *suffix, mode_t mode, char *name,
		       size_t size);

/*
 * Opens a directory to leave a file in when the place asked for failed
 * ($TMPDIR, /tmp), resolved under the rules above: owned by a trusted user,
 * and sticky if others can write it (as /tmp is), so that nobody else can
 * remove or replace what is made there with safewrite__newfile(). The
 * descriptor (O_PATH) or -errno (-EACCES with em said).
 */
int safewrite__spare_dir(const char *path, struct errmsg *em);

/*
 * Renames tmp to name in dirfd. With noreplace an existing name is -EEXIST
 * (renameat2 RENAME_NOREPLACE; on a file system without it, a link() and an
 * unlink()), else it is replaced atomically.
 */
int safewrite__rename(int dirfd, const char *tmp, const char *name, bool noreplace);

/*
 * Opens the output directory path (O_RDONLY | O_DIRECTORY), making it (0755)
 * if it is missing and create is set and its parent exists. Symlinks on the
 * way obey the rules above; the directory itself must be owned by a trusted
 * user and not be writable by its group or others. The descriptor or -errno
 * (-EACCES with em said: the owner and mode that were refused).
 */
int safewrite__dir(const char *path, bool create, struct errmsg *em);

/* For tests: trust only uid (and not root, us or SUDO_UID); (uid_t)-1 restores. */
void safewrite__trust_only(uid_t uid);

#endif
