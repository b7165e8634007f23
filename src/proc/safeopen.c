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
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
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

/* Nothing opened yet in f; 0 if path can be looked up in root, else why not. */
static int open_begin(const struct safe_root *root, const char *path, struct safe_file *f)
{
	f->fd = -1;
	f->fstype[0] = '\0';
	if (root->fd < 0)
		return -EBADF;
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int safeopen__in_root(const struct safe_root *root, const char *path, unsigned flags,
		      struct safe_file *f)
{
	bool no_symlinks = (flags & SAFEOPEN_NO_SYMLINKS) || (root->mi && root->mi->any_block);
	const struct mountinfo_ent *blk;
	int opath, err;

	err = open_begin(root, path, f);
	if (err)
		return err;
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

/* --- opening as a reader ---------------------------------------------------------- */

#define WALK_MAX_LINKS	40  /* the kernel's MAXSYMLINKS */
#define WALK_MAX_DEPTH	128 /* directories held open on the way down (for "..") */
#define ACL_MAX_ENTRIES 128

/*
 * Pseudo file systems: their files' mode bits are not the whole check
 * (procfs asks ptrace rights, sysfs and debugfs have their own rules), and
 * their links are magic. Nothing a line table names lives there.
 */
static bool pseudo_fs(int fd)
{
	static const unsigned long magic[] = {
		0x9fa0,	    /* proc */
		0x62656572, /* sysfs */
		0x64626720, /* debugfs */
		0x74726163, /* tracefs */
		0x73636673, /* securityfs */
		0x27e0eb,   /* cgroup */
		0x63677270, /* cgroup2 */
		0xcafe4a11, /* bpf */
		0x62656570, /* configfs */
		0xde5e81e4, /* efivarfs */
		0x6165676c, /* pstore */
		0x1cd1,	    /* devpts */
		0xf97cff8c, /* selinuxfs */
		0x43415d53, /* smackfs */
		0x42494e4d, /* binfmt_misc */
		0x6e736673, /* nsfs */
		0x65735543, /* fusectl */
	};
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return true;
	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if ((unsigned long)sf.f_type == magic[i])
			return true;
	return false;
}

static bool in_group(const struct safe_cred *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (size_t i = 0; i < c->nr_groups && i < SAFE_CRED_MAX_GROUPS; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* linux/posix_acl_xattr.h: a version word, then (tag, perm, id) entries. */
enum {
	ACL_USER_OBJ = 1,
	ACL_USER = 2,
	ACL_GROUP_OBJ = 4,
	ACL_GROUP = 8,
	ACL_MASK = 16,
	ACL_OTHER = 32
};

static uint32_t le32_at(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The kernel's posix_acl_permission() for a reader who is not the owner:
 * 0, -EACCES, or 1 when the inode has no ACL (the mode bits decide). An ACL
 * that cannot be read or understood refuses.
 */
static int acl_permits(int fd, const struct safe_cred *c, uint32_t file_gid, unsigned want)
{
	unsigned char buf[4 + 8 * ACL_MAX_ENTRIES];
	char self[64];
	const unsigned char *e, *end;
	ssize_t len;
	bool found = false;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	len = getxattr(self, "system.posix_acl_access", buf, sizeof(buf));
	if (len < 0)
		return errno == ENODATA || errno == EOPNOTSUPP ? 1 : -EACCES;
	if (len < 4 || (len - 4) % 8 || le32_at(buf) != 2)
		return -EACCES;
	end = buf + len;
	for (e = buf + 4; e < end; e += 8) {
		unsigned tag = e[0] | e[1] << 8, perm = e[2] | e[3] << 8;
		uint32_t id = le32_at(e + 4);

		switch (tag) {
		case ACL_USER_OBJ:
			break; /* the owner was checked by the caller */
		case ACL_USER:
			if (id == c->uid)
				goto mask;
			break;
		case ACL_GROUP_OBJ:
		case ACL_GROUP:
			if (in_group(c, tag == ACL_GROUP ? id : file_gid)) {
				found = true;
				if ((perm & want) == want)
					goto mask;
			}
			break;
		case ACL_MASK:
			break;
		case ACL_OTHER:
			return !found && (perm & want) == want ? 0 : -EACCES;
		default:
			return -EACCES;
		}
	}
	return -EACCES;
mask:
	for (const unsigned char *m = e + 8; m < end; m += 8)
		if ((m[0] | m[1] << 8) == ACL_MASK)
			return ((e[2] | e[3] << 8) & (m[2] | m[3] << 8) & want) == want ? 0
											: -EACCES;
	return ((e[2] | e[3] << 8) & want) == want ? 0 : -EACCES;
}

/* Whether c may read (want 4) or search (want 1) the inode fd is: the kernel's
 * acl_permission_check(), with uid 0 as CAP_DAC_OVERRIDE. 0 or -EACCES. */
static int permits(int fd, const struct statx *sx, const struct safe_cred *c, unsigned want)
{
	unsigned mode = sx->stx_mode;

	if (c->uid == 0)
		return 0;
	if (c->uid == sx->stx_uid)
		return ((mode >> 6) & want) == want ? 0 : -EACCES;
	if (mode & S_IRWXG) {
		int r = acl_permits(fd, c, sx->stx_gid, want);

		if (r <= 0)
			return r;
	}
	if (in_group(c, sx->stx_gid))
		mode >>= 3;
	return (mode & want) == want ? 0 : -EACCES;
}

static int statx_fd(int fd, struct statx *sx)
{
	/* DONT_SYNC: cached attributes, so a FUSE daemon is not asked. */
	return statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		     STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_MNT_ID, sx)
		       ? -errno
		       : 0;
}

/* Each reader may search dir, which is on a mount that cannot block. */
static int check_dir(const struct safe_root *r, int dir, struct statx *sx,
		     const struct safe_cred *const *readers, size_t n, size_t *denied,
		     struct safe_file *f)
{
	int err = statx_fd(dir, sx);

	if (err)
		return err;
	if ((sx->stx_mask & STATX_MNT_ID) && mount_may_block(r, sx->stx_mnt_id, f))
		return -EREMOTE;
	for (size_t i = 0; i < n; i++)
		if (permits(dir, sx, readers[i], 1)) {
			if (denied)
				*denied = i;
			return -EACCES;
		}
	return 0;
}

/* fs.protected_symlinks: in a sticky world-writable directory a link is
 * followed only by its owner, or when the directory's owner owns it. */
static int may_follow(const struct statx *dir, const struct statx *link,
		      const struct safe_cred *const *readers, size_t n, size_t *denied)
{
	if (!(dir->stx_mode & S_ISVTX) || !(dir->stx_mode & S_IWOTH) ||
	    dir->stx_uid == link->stx_uid)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (readers[i]->uid != link->stx_uid) {
			if (denied)
				*denied = i;
			return -EACCES;
		}
	return 0;
}

int safeopen__in_root_as(const struct safe_root *root, const char *path, unsigned flags,
			 const struct safe_cred *const *readers, size_t n, struct safe_file *f,
			 size_t *denied)
{
	char buf[PATH_MAX], target[PATH_MAX], comp[NAME_MAX + 1];
	int stack[WALK_MAX_DEPTH];
	size_t depth = 0, pos = 0;
	const struct mountinfo_ent *blk;
	struct statx dsx, sx;
	int links = 0, fd = -1, err = 0;
	bool no_symlinks = flags & SAFEOPEN_NO_SYMLINKS;

	err = open_begin(root, path, f);
	if (err)
		return err;
	/* What the path's text says, for kernels without mount ids (see check_dir()). */
	if (!has_dotdot(path) && (blk = mountinfo__path_may_block(root->mi, path))) {
		snprintf(f->fstype, sizeof(f->fstype), "%s", blk->fstype);
		return -EREMOTE;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	stack[0] = fcntl(root->fd, F_DUPFD_CLOEXEC, 0);
	if (stack[0] < 0)
		return -errno;
	for (;;) {
		size_t len;
		bool last;

		while (buf[pos] == '/')
			pos++;
		if (!buf[pos]) {
			err = -EINVAL; /* names a directory */
			break;
		}
		len = strcspn(buf + pos, "/");
		if (len > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, buf + pos, len);
		comp[len] = '\0';
		pos += len;
		last = !buf[pos + strspn(buf + pos, "/")];
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			/* ".." pops to the directory the walk came from: never above root. */
			if (comp[1] && depth)
				close(stack[depth--]);
			if (last) {
				err = -EINVAL;
				break;
			}
			continue;
		}
		err = check_dir(root, stack[depth], &dsx, readers, n, denied, f);
		if (err)
			break;
		fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || (err = statx_fd(fd, &sx))) {
			err = fd < 0 ? -errno : err;
			break;
		}
		if (S_ISLNK(sx.stx_mode)) {
			ssize_t tl;

			/* Without mount ids a link could lead into a mount that blocks. */
			if (no_symlinks || ++links > WALK_MAX_LINKS || pseudo_fs(fd) ||
			    (!(sx.stx_mask & STATX_MNT_ID) && (!root->mi || root->mi->any_block))) {
				err = -ELOOP;
				break;
			}
			err = may_follow(&dsx, &sx, readers, n, denied);
			if (err)
				break;
			tl = readlinkat(fd, "", target, sizeof(target));
			if (tl <= 0 || (size_t)tl >= sizeof(target)) {
				err = tl < 0 ? -errno : tl ? -ENAMETOOLONG : -ENOENT;
				break;
			}
			target[tl] = '\0';
			if (strlen(buf + pos) + (size_t)tl + 2 > sizeof(buf)) {
				err = -ENAMETOOLONG;
				break;
			}
			/* The rest of the path, after the link's text. */
			memmove(buf + tl + 1, buf + pos, strlen(buf + pos) + 1);
			memcpy(buf, target, (size_t)tl);
			buf[tl] = '/';
			pos = 0;
			if (target[0] == '/')
				while (depth)
					close(stack[depth--]);
			close(fd);
			fd = -1;
			continue;
		}
		if (S_ISDIR(sx.stx_mode) && !last) {
			if (depth + 1 >= WALK_MAX_DEPTH) {
				err = -ENAMETOOLONG;
				break;
			}
			stack[++depth] = fd;
			fd = -1;
			continue;
		}
		if (!last)
			err = -ENOTDIR;
		break;
	}
	if (!err && pseudo_fs(fd))
		err = -EPERM;
	for (size_t i = 0; i < n && !err; i++)
		if (permits(fd, &sx, readers[i], 4)) {
			if (denied)
				*denied = i;
			err = -EACCES;
		}
	if (!err)
		err = check_and_reopen(fd, root, f);
	if (fd >= 0)
		close(fd);
	while (depth)
		close(stack[depth--]);
	close(stack[0]);
	return err;
}
