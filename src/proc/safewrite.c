// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* safewrite.c - output paths other users may control; see safewrite.h. */
#include "proc/safewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/util.h"

/* As the kernel's path walk: more symlinks than this on one path is a loop. */
#define MAX_LINKS 40

static uid_t only_uid = (uid_t)-1;

void safewrite__trust_only(uid_t uid)
{
	only_uid = uid;
}

bool safewrite__trusted(uid_t uid)
{
	const char *sudo;
	uint64_t v;

	if (only_uid != (uid_t)-1)
		return uid == only_uid;
	if (uid == 0 || uid == geteuid())
		return true;
	/* Whoever ran sudo can do anything as root already (git does the same). */
	sudo = geteuid() == 0 ? getenv("SUDO_UID") : NULL;
	return sudo && !parse_u64(sudo, 10, &v) && v == (uint64_t)uid;
}

bool safewrite__others_write(const struct stat *dir)
{
	return !safewrite__trusted(dir->st_uid) || (dir->st_mode & (S_IWGRP | S_IWOTH));
}

/* One path being resolved: the links followed so far, where to explain a refusal. */
struct walk {
	int links;
	const char *path; /* as the user wrote it */
	struct errmsg *em;
};

/* "name" or "uid N"; with_uid: "name (uid N)". */
static void user(uid_t uid, bool with_uid, char *buf, size_t size)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) || !res)
		snprintf(buf, size, "uid %u", (unsigned)uid);
	else if (with_uid)
		snprintf(buf, size, "%s (uid %u)", res->pw_name, (unsigned)uid);
	else
		snprintf(buf, size, "%s", res->pw_name);
}

static void who(uid_t uid, char *buf, size_t size)
{
	user(uid, true, buf, size);
}

static void name_of(uid_t uid, char *buf, size_t size)
{
	user(uid, false, buf, size);
}

static const char *kind(mode_t mode)
{
	return S_ISLNK(mode)	? "symbolic link"
	       : S_ISFIFO(mode) ? "FIFO"
	       : S_ISCHR(mode)	? "character device"
	       : S_ISBLK(mode)	? "block device"
	       : S_ISSOCK(mode) ? "socket"
				: "file";
}

/* "dir/name" for messages; dir "" is the current directory. */
static void joined(const char *dir, const char *name, char *buf, size_t size)
{
	size_t n = strlen(dir);

	snprintf(buf, size, "%s%s%s", dir, n && dir[n - 1] != '/' ? "/" : "", name);
}

/*
 * The rule: an entry (a symlink to follow, a FIFO or device to open) in a
 * directory others can write must belong to a trusted user.
 */
static int check_entry(struct walk *w, int dirfd, const char *dirshown, const char *name,
		       const struct stat *st)
{
	char entry[PATH_MAX + NAME_MAX + 2], owner[128], downer[128];
	struct stat dst;

	if (safewrite__trusted(st->st_uid))
		return 0;
	if (fstat(dirfd, &dst))
		return -errno;
	if (!safewrite__others_write(&dst))
		return 0;
	joined(dirshown, name, entry, sizeof(entry));
	who(st->st_uid, owner, sizeof(owner));
	name_of(dst.st_uid, downer, sizeof(downer));
	errmsg_set(
		w->em, -EACCES,
		"%s is a %s owned by %s in a directory others can write (%s: mode %04o, owner %s)",
		strcmp(entry, w->path) ? entry : "it", kind(st->st_mode), owner,
		dirshown[0] ? dirshown : ".", (unsigned)(dst.st_mode & 07777), downer);
	errmsg_hint(w->em, "bpfprof never follows or opens what another user controls there: "
			   "remove it, or write to a directory only you can write");
	return -EACCES;
}

/* Opening a FIFO nobody reads fails at once (O_NONBLOCK): say why. */
static void no_reader(struct walk *w, const char *dirshown, const char *name)
{
	char entry[PATH_MAX + NAME_MAX + 2];

	joined(dirshown, name, entry, sizeof(entry));
	errmsg_set(w->em, -ENXIO, "%s is a FIFO (or pipe) nobody has open for reading",
		   strcmp(entry, w->path) ? entry : "it");
	errmsg_hint(w->em, "bpfprof does not wait for a reader: start the reader first");
}

static bool on_procfs(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && sf.f_type == PROC_SUPER_MAGIC;
}

static int walk_parent(struct walk *w, int at, const char *path, char *name, char *shown);

/*
 * Opens comp in dir as a directory (O_PATH), following it if it is a
 * symlink the rule allows: /proc's by the kernel (magic links have no text
 * to walk), others by walking their target here.
 */
static int step_dir(struct walk *w, int dir, const char *shown, const char *comp)
{
	char target[PATH_MAX], name[NAME_MAX + 1], tshown[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd, parent, err;

	fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (S_ISDIR(st.st_mode))
		return fd;
	close(fd);
	if (!S_ISLNK(st.st_mode))
		return -ENOTDIR;
	err = check_entry(w, dir, shown, comp, &st);
	if (err)
		return err;
	if (++w->links > MAX_LINKS)
		return -ELOOP;
	if (on_procfs(dir)) {
		fd = openat(dir, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	n = readlinkat(dir, comp, target, sizeof(target));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(target))
		return -ENAMETOOLONG;
	target[n] = '\0';
	parent = walk_parent(w, dir, target, name, tshown);
	if (parent < 0)
		return parent;
	fd = step_dir(w, parent, tshown, name);
	close(parent);
	return fd;
}

/*
 * Walks all but the last component of path (from at, for a relative one),
 * following symlinks the rule allows. Returns the parent directory (O_PATH)
 * and the last component in name ("." for "/"); shown receives the parent as
 * text for messages.
 */
static int walk_parent(struct walk *w, int at, const char *path, char *name, char *shown)
{
	size_t len = strlen(path), sl = 0;
	const char *p = path, *end;
	int dir, next;

	if (!len)
		return -ENOENT;
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	while (len > 1 && path[len - 1] == '/')
		len--;
	end = path + len;
	shown[0] = '\0';
	if (*p == '/') {
		dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		shown[sl++] = '/';
		shown[sl] = '\0';
		while (p < end && *p == '/')
			p++;
	} else {
		dir = openat(at, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (dir < 0)
		return -errno;
	if (p == end) { /* "/" */
		snprintf(name, NAME_MAX + 1, ".");
		return dir;
	}
	for (;;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);

		if (n > NAME_MAX) {
			close(dir);
			return -ENAMETOOLONG;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (!slash)
			return dir;
		p = slash;
		while (p < end && *p == '/')
			p++;
		if (strcmp(name, ".")) {
			next = step_dir(w, dir, shown, name);
			close(dir);
			if (next < 0)
				return next;
			dir = next;
		}
		/* The parent as text, for messages: what the user wrote, up to here. */
		sl = (size_t)(slash - path);
		memcpy(shown, path, sl);
		shown[sl] = '\0';
	}
}

/* Re-opens a checked O_PATH descriptor for writing without blocking, then blocking. */
static int reopen_write(int opath, const struct stat *st, bool trunc)
{
	char self[64];
	struct stat now;
	int fd, fl;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
	fd = open(self, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (trunc ? O_TRUNC : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) || (fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

enum { TARGET_NAME, TARGET_DIRECT };

/* Whether a check-only resolution would be allowed to write the O_PATH fd. */
static int check_writable(int opath)
{
	if (!faccessat(opath, "", W_OK, AT_EMPTY_PATH) || errno == EINVAL || errno == ENOSYS)
		return 0;
	return -errno;
}

/*
 * The last component: TARGET_NAME to write a file at (dir, name) - missing,
 * regular, or a symlink to such, which the rename replaces - or
 * TARGET_DIRECT for a FIFO, device or magic link, opened into *fd if open.
 */
static int resolve_last(struct walk *w, int dir, const char *shown, const char *name, bool open,
			int *fd)
{
	char target[PATH_MAX], tname[NAME_MAX + 1], tshown[PATH_MAX];
	struct stat st;
	int opath, parent, ret;
	ssize_t n;

	opath = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (opath < 0)
		return errno == ENOENT ? TARGET_NAME : -errno;
	if (fstat(opath, &st)) {
		ret = -errno;
		goto out;
	}
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? TARGET_NAME : -EISDIR;
		goto out;
	}
	ret = check_entry(w, dir, shown, name, &st);
	if (ret)
		goto out;
	if (!S_ISLNK(st.st_mode)) { /* a FIFO, a device, a socket */
		ret = open ? reopen_write(opath, &st, false) : check_writable(opath);
		if (ret == -ENXIO && S_ISFIFO(st.st_mode))
			no_reader(w, shown, name);
		if (ret >= 0) {
			*fd = open ? ret : -1;
			ret = TARGET_DIRECT;
		}
		goto out;
	}
	if (++w->links > MAX_LINKS) {
		ret = -ELOOP;
		goto out;
	}
	if (on_procfs(dir)) {
		/* /dev/stdout, /proc/self/fd/N: a file this process has open. */
		close(opath);
		opath = openat(dir, name, O_PATH | O_CLOEXEC);
		if (opath < 0)
			return -errno;
		if (fstat(opath, &st))
			ret = -errno;
		else if (S_ISDIR(st.st_mode))
			ret = -EISDIR;
		else /* truncated as fopen("w") would: a file behind it is ours to write */
			ret = open ? reopen_write(opath, &st, S_ISREG(st.st_mode)) : 0;
		if (ret == -ENXIO && S_ISFIFO(st.st_mode))
			no_reader(w, shown, name);
		if (ret >= 0) {
			*fd = open ? ret : -1;
			ret = TARGET_DIRECT;
		}
		goto out;
	}
	n = readlinkat(dir, name, target, sizeof(target));
	if (n < 0 || (size_t)n >= sizeof(target)) {
		ret = n < 0 ? -errno : -ENAMETOOLONG;
		goto out;
	}
	target[n] = '\0';
	parent = walk_parent(w, dir, target, tname, tshown);
	if (parent < 0) {
		/* A link to a missing directory: replaced like a dangling one. */
		ret = parent == -ENOENT ? TARGET_NAME : parent;
		goto out;
	}
	ret = resolve_last(w, parent, tshown, tname, open, fd);
	close(parent);
out:
	close(opath);
	return ret;
}

void safewrite__target_close(struct safewrite_target *t)
{
	if (t->dirfd >= 0)
		close(t->dirfd);
	if (t->fd >= 0)
		close(t->fd);
	t->dirfd = t->fd = -1;
}

int safewrite__target(const char *path, bool open, struct safewrite_target *t, struct errmsg *em)
{
	struct walk w = { .path = path, .em = em };
	char shown[PATH_MAX];
	int dir, ret, fd = -1;

	t->dirfd = t->fd = -1;
	t->name[0] = '\0';
	if (!path)
		return -EINVAL;
	dir = walk_parent(&w, AT_FDCWD, path, t->name, shown);
	if (dir < 0)
		return dir;
	if (!strcmp(t->name, ".") || !strcmp(t->name, "..")) {
		close(dir);
		return -EISDIR;
	}
	ret = resolve_last(&w, dir, shown, t->name, open, &fd);
	if (ret == TARGET_NAME) {
		/* The rename needs the directory; and with check only, can we write it? */
		if (!open && faccessat(dir, ".", W_OK, 0)) {
			ret = -errno;
			close(dir);
			return ret;
		}
		t->dirfd = dir;
		return 0;
	}
	close(dir);
	if (ret < 0)
		return ret;
	t->fd = fd;
	return 0;
}

int safewrite__newfile(int dirfd, const char *prefix, const char *suffix, mode_t mode, char *name,
		       size_t size)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t np = strlen(prefix), ns = strlen(suffix);

	if (np + 6 + ns > NAME_MAX || np + 6 + ns + 1 > size)
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 100; tries++) {
		unsigned char rnd[6];
		int fd;

		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
			uint64_t x = now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)tries;

			for (size_t i = 0; i < sizeof(rnd); i++, x >>= 8)
				rnd[i] = (unsigned char)x;
		}
		memcpy(name, prefix, np);
		for (size_t i = 0; i < sizeof(rnd); i++)
			name[np + i] = chars[rnd[i] % (sizeof(chars) - 1)];
		memcpy(name + np + 6, suffix, ns + 1);
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd >= 0) {
			fchmod(fd, mode); /* what readers expect, whatever the umask */
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int safewrite__tmpfile(int dirfd, const char *name, char *tmp, size_t size)
{
	char prefix[NAME_MAX + 1];

	if (strlen(name) + 12 > NAME_MAX)
		return -ENAMETOOLONG;
	snprintf(prefix, sizeof(prefix), "%s.tmp.", name);
	return safewrite__newfile(dirfd, prefix, "", 0644, tmp, size);
}

int safewrite__spare_dir(const char *path, struct errmsg *em)
{
	struct walk w = { .path = path, .em = em };
	char name[NAME_MAX + 1], shown[PATH_MAX];
	struct stat st;
	int parent, dir, err;

	if (!path || !*path)
		return -ENOENT;
	parent = walk_parent(&w, AT_FDCWD, path, name, shown);
	if (parent < 0)
		return parent;
	if (strcmp(name, "."))
		dir = step_dir(&w, parent, shown, name);
	else if ((dir = dup(parent)) < 0)
		dir = -errno;
	close(parent);
	if (dir < 0)
		return dir;
	if (fstat(dir, &st)) {
		err = -errno;
		close(dir);
		return err;
	}
	/* Others may make names in it only if it is sticky: then they cannot
	 * remove or rename ours, and O_EXCL keeps theirs from being used. */
	if (!safewrite__trusted(st.st_uid) ||
	    (safewrite__others_write(&st) && !(st.st_mode & S_ISVTX))) {
		char owner[64];

		who(st.st_uid, owner, sizeof(owner));
		close(dir);
		return errmsg_set(em, -EACCES,
				  "%s is owned by %s, mode %04o: not a safe place for the profile",
				  path, owner, (unsigned)(st.st_mode & 07777));
	}
	return dir;
}

int safewrite__rename(int dirfd, const char *tmp, const char *name, bool noreplace)
{
	if (!noreplace)
		return renameat(dirfd, tmp, dirfd, name) ? -errno : 0;
	if (!renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* A file system without RENAME_NOREPLACE: link() does not replace either. */
	if (linkat(dirfd, tmp, dirfd, name, 0))
		return -errno;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

int safewrite__dir(const char *path, bool create, struct errmsg *em)
{
	char name[NAME_MAX + 1], shown[PATH_MAX], owner[128];
	struct walk w = { .path = path, .em = em };
	struct stat st;
	int parent, dir, fd;

	if (!path)
		return -EINVAL;
	parent = walk_parent(&w, AT_FDCWD, path, name, shown);
	if (parent < 0)
		return parent;
	dir = step_dir(&w, parent, shown, name);
	if (dir == -ENOENT && create) {
		if (mkdirat(parent, name, 0755) && errno != EEXIST)
			dir = -errno;
		else
			dir = step_dir(&w, parent, shown, name);
	}
	close(parent);
	if (dir < 0)
		return dir;
	/* "." of an O_PATH directory is that very directory, nothing swapped in. */
	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (safewrite__others_write(&st)) {
		who(st.st_uid, owner, sizeof(owner));
		errmsg_set(em, -EACCES,
			   "owned by %s, mode %04o: an output directory must belong to root (or "
			   "you) and be writable by no one else, or others could plant or swap "
			   "files in it",
			   owner, (unsigned)(st.st_mode & 07777));
		errmsg_hint(em, "use a directory of its own, e.g. /var/lib/bpfprof "
				"(made when missing), or chown root and chmod go-w it");
		close(fd);
		return -EACCES;
	}
	if (faccessat(fd, ".", W_OK, 0)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}
