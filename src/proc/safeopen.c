// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* safeopen.c - see safeopen.h. */
#include <linux/openat2.h>
#include <linux/stat.h>

#include "proc/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc/mountinfo.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static bool force_walk;

void safeopen__force_walk(bool on)
{
	force_walk = on;
}

int safeopen__dir(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Without openat2: one component at a time, never following a symlink. */
static int walk_nofollow(int root_fd, const char *path)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	int dir = -1, fd;

	while (*p == '/')
		p++;
	dir = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (dir < 0)
		return -errno;
	while (*p) {
		size_t n = strcspn(p, "/");
		bool last;

		if (n > NAME_MAX) {
			close(dir);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		while (*p == '/')
			p++;
		last = !*p;
		if (!strcmp(comp, ".."))
			goto escape;
		if (!strcmp(comp, "."))
			continue;
		fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
		if (fd < 0) {
			int err = -errno;

			close(dir);
			/* O_DIRECTORY on a symlink fails ENOTDIR: say what it is. */
			return err == -ENOTDIR ? -ELOOP : err;
		}
		close(dir);
		dir = fd;
	}
	return dir;
escape:
	close(dir);
	return -EXDEV;
}

static int open_path(int root_fd, const char *path, bool no_symlinks)
{
	static bool have_openat2 = true;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (no_symlinks ? O_NOFOLLOW : 0),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
			   (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
	};
	const char *rel = path;
	int fd;

	while (*rel == '/')
		rel++;
	if (!*rel)
		return -EISDIR;
	if (have_openat2 && !force_walk) {
		for (int tries = 0; tries < 3; tries++) {
			fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
			if (fd >= 0)
				return fd;
			/* EAGAIN: a rename raced the ".." checks; worth a retry. */
			if (errno != EAGAIN)
				break;
		}
		if (errno != ENOSYS && errno != E2BIG)
			return -errno;
		have_openat2 = false;
	}
	return walk_nofollow(root_fd, rel);
}

/*
 * Whether the file on mount `id` may block: the root's table first, then the
 * host's (mount ids are unique system-wide). A mount neither knows (a
 * private mount of a process whose table could not be read) is refused.
 */
static bool mount_may_block(const struct safe_root *r, uint64_t id, struct safe_file *f)
{
	const struct mountinfo_ent *e = mountinfo__find_id(r->mi, id);

	if (r->shm_known && id == r->shm_mnt_id)
		return false;
	if (!e)
		e = mountinfo__find_id(r->host_mi, id);
	if (e && !e->may_block)
		return false;
	snprintf(f->fstype, sizeof(f->fstype), "%s", e ? e->fstype : "");
	return true;
}

static int check_and_reopen(int opath_fd, const struct safe_root *r, struct safe_file *f)
{
	struct statx sx;
	char self[64];
	int fd;

	/* DONT_SYNC: cached attributes, so a FUSE daemon is not asked. */
	if (statx(opath_fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_UID | STATX_MNT_ID, &sx))
		return -errno;
	if (!S_ISREG(sx.stx_mode))
		return S_ISLNK(sx.stx_mode) ? -ELOOP : -EINVAL;
	/* Without a mount id (kernels before 5.8) only the path checks hold. */
	if ((sx.stx_mask & STATX_MNT_ID) && mount_may_block(r, sx.stx_mnt_id, f))
		return -EREMOTE;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath_fd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &f->st) || !S_ISREG(f->st.st_mode) || f->st.st_ino != sx.stx_ino) {
		close(fd);
		return -EINVAL;
	}
	f->fd = fd;
	f->mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
	return 0;
}

int safeopen__reopen(int opath_fd, const struct safe_root *root, struct safe_file *f)
{
	f->fd = -1;
	f->fstype[0] = '\0';
	return check_and_reopen(opath_fd, root, f);
}

/* Whether a ".." component appears: lexical checks would not hold past one. */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

int safeopen__in_root(const struct safe_root *root, const char *path, unsigned flags,
		      struct safe_file *f)
{
	bool no_symlinks = (flags & SAFEOPEN_NO_SYMLINKS) || (root->mi && root->mi->any_block);
	const struct mountinfo_ent *blk;
	int opath, err;

	f->fd = -1;
	f->fstype[0] = '\0';
	if (root->fd < 0)
		return -EBADF;
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (has_dotdot(path))
		return -EINVAL;
	blk = mountinfo__path_may_block(root->mi, path);
	if (blk) {
		snprintf(f->fstype, sizeof(f->fstype), "%s", blk->fstype);
		return -EREMOTE;
	}
	opath = open_path(root->fd, path, no_symlinks);
	if (opath < 0)
		return opath;
	err = check_and_reopen(opath, root, f);
	close(opath);
	return err;
}
