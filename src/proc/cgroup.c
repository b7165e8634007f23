// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* cgroup.c - cgroup path and container id of a process; see cgroup.h. */
#include "proc/cgroup.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/util.h"

#define CGROUP2_MAGIC 0x63677270

static bool is_hex64(const char *s, size_t n)
{
	if (n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static const struct {
	const char *prefix;
	const char *runtime;
} prefixes[] = {
	{ "docker-", "docker" }, { "cri-containerd-", "containerd" }, { "crio-", "cri-o" },
	{ "libpod-", "podman" }, { "containerd-", "containerd" },
};

/* Looks at one path component [s, s+n). */
static bool component_id(const char *s, size_t n, const char *parent, size_t pn, char *id,
			 size_t idlen, const char **runtime)
{
	const char *rt = "";
	size_t skip = 0;

	if (n > 6 && !memcmp(s + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t pl = strlen(prefixes[i].prefix);

		if (n > pl && !memcmp(s, prefixes[i].prefix, pl)) {
			skip = pl;
			rt = prefixes[i].runtime;
			break;
		}
	}
	if (!skip) {
		/* A bare 64-hex component: its parent says who made it. */
		size_t dash = 0;

		while (dash < n && s[dash] != '-')
			dash++;
		if (dash < n && is_hex64(s + dash + 1, n - dash - 1))
			skip = dash + 1; /* unknown-prefix-<id> */
		else if (pn == 6 && !memcmp(parent, "docker", 6))
			rt = "docker";
		else if (pn >= 3 && !memcmp(parent, "pod", 3))
			rt = "containerd"; /* kubelet cgroupfs layout: .../pod<uid>/<id> */
	}
	if (!is_hex64(s + skip, n - skip))
		return false;
	if (idlen < CONTAINER_ID_LEN + 1)
		return false;
	memcpy(id, s + skip, CONTAINER_ID_LEN);
	id[CONTAINER_ID_LEN] = '\0';
	*runtime = rt;
	return true;
}

/* Container id and runtime from one cgroup path; 0 or -ENOENT. */
static int cgroup__container_of(const char *path, char *id, size_t idlen, const char **runtime)
{
	const char *parent = "", *p = path;
	size_t pn = 0;
	bool found = false;

	/* The innermost matching component wins (nested cgroups inside a container). */
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (component_id(p, n, parent, pn, id, idlen, runtime))
			found = true;
		parent = p;
		pn = n;
		p += n;
	}
	return found ? 0 : -ENOENT;
}

int cgroup__parse(const char *text, struct cgroup_info *out)
{
	char v1_path[sizeof(out->path)] = "";
	bool any = false, have_v2 = false, have_v1 = false;
	const char *line = text;

	memset(out, 0, sizeof(*out));
	out->runtime = "";
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len), *c2;
		char path[sizeof(out->path)];
		size_t plen;

		if (!c1 || !(c2 = memchr(c1 + 1, ':', len - (c1 + 1 - line))))
			goto next;
		plen = len - (c2 + 1 - line);
		if (plen == 0 || plen >= sizeof(path) || c2[1] != '/')
			goto next;
		memcpy(path, c2 + 1, plen);
		path[plen] = '\0';
		any = true;
		if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
			/* "0::/path": the unified (v2) hierarchy. */
			have_v2 = true;
			snprintf(out->path, sizeof(out->path), "%s", path);
		} else {
			have_v1 = true;
			/* The last v1 path that is not the root, else the first. */
			if (!v1_path[0] || strcmp(path, "/"))
				snprintf(v1_path, sizeof(v1_path), "%s", path);
		}
		if (!out->container_id[0])
			cgroup__container_of(path, out->container_id, sizeof(out->container_id),
					     &out->runtime);
	next:
		line = nl ? nl + 1 : NULL;
	}
	if (!any)
		return -EINVAL;
	out->v2_only = have_v2 && !have_v1;
	/* Hybrid hosts put most processes in the v2 root: a v1 path says more then. */
	if (!have_v2 || (!strcmp(out->path, "/") && v1_path[0] && strcmp(v1_path, "/")))
		snprintf(out->path, sizeof(out->path), "%s", v1_path);
	return 0;
}

int cgroup__read(const char *proc_root, unsigned pid, struct cgroup_info *out)
{
	char path[256], *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root, pid);
	err = read_file(path, 64 * 1024, &buf, NULL);
	if (err)
		return err;
	err = cgroup__parse(buf, out);
	free(buf);
	return err;
}

int cgroup__parse_v2(const char *text, char *out, size_t size)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= 4 && !memcmp(line, "0::/", 4)) {
			const char *parent = "", *p = line + 3, *end = line + len;
			size_t pn = 0, cut = len - 3;
			char id[CONTAINER_ID_LEN + 1];
			const char *rt;

			/* The outermost component naming a container, or systemd's
			 * delegation to a user (user@UID.service): cut after it. */
			while (p < end) {
				size_t n;

				while (p < end && *p == '/')
					p++;
				n = strcspn(p, "/\n"); /* the line ends at '\n' or the text's end */
				if (!n)
					break;
				if (component_id(p, n, parent, pn, id, sizeof(id), &rt) ||
				    (n > 13 && !memcmp(p, "user@", 5) &&
				     !memcmp(p + n - 8, ".service", 8))) {
					cut = (size_t)(p + n - (line + 3));
					break;
				}
				parent = p;
				pn = n;
				p += n;
			}
			if (cut >= size)
				return -ENAMETOOLONG;
			memcpy(out, line + 3, cut);
			out[cut] = '\0';
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int cgroup__read_v2(const char *proc_root, unsigned pid, char *out, size_t size)
{
	char path[256], *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root, pid);
	err = read_file(path, 64 * 1024, &buf, NULL);
	if (err)
		return err;
	err = cgroup__parse_v2(buf, out, size);
	free(buf);
	return err;
}

int cgroup__v2_mount(const char *mountinfo, char *out, size_t size)
{
	const char *line = mountinfo;

	/* "36 25 0:30 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw" */
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *sep = NULL, *p = line;
		char mnt[512];
		int field = 0;

		for (size_t i = 0; i + 3 <= len; i++)
			if (!memcmp(line + i, " - ", 3)) {
				sep = line + i + 3;
				break;
			}
		if (sep && (size_t)(line + len - sep) >= 8 && !strncmp(sep, "cgroup2 ", 8)) {
			/* Field 5 (1-based) is the mount point; octal escapes stay as-is. */
			while (field < 4 && p < line + len) {
				p = memchr(p, ' ', line + len - p);
				if (!p)
					break;
				p++;
				field++;
			}
			if (p && field == 4) {
				size_t n = strcspn(p, " \n");

				if (n < sizeof(mnt) && n < size) {
					memcpy(mnt, p, n);
					mnt[n] = '\0';
					snprintf(out, size, "%s", mnt);
					return 0;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int cgroup__open_v2(const char *mountinfo_path, const char *path, char *resolved, size_t size)
{
	char mnt[512], *mi;
	struct statfs sfs;
	struct stat st;
	int fd, err;

	if (path[0] == '/' && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(resolved, size, "%s", path);
	} else {
		err = read_file(mountinfo_path ? mountinfo_path : "/proc/self/mountinfo", 4 << 20,
				&mi, NULL);
		if (err)
			return err;
		err = cgroup__v2_mount(mi, mnt, sizeof(mnt));
		free(mi);
		if (err)
			return err;
		while (*path == '/')
			path++;
		if (snprintf(resolved, size, "%s/%s", mnt, path) >= (int)size)
			return -ENAMETOOLONG;
	}
	fd = open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_MAGIC) {
		close(fd);
		return -ENOTDIR;
	}
	return fd;
}

/* dfd's cgroup.procs, then its subdirectories'; *dirs counts the directories read. */
static int walk_pids(int dfd, uint32_t *pids, size_t max, size_t *n, size_t *dirs, int depth)
{
	char buf[4096], *p, *end;
	uint64_t pid;
	struct dirent *de;
	ssize_t len, keep = 0;
	int fd, err = 0;
	DIR *dir;

	if (++*dirs > CGROUP_WALK_DIRS || depth > 64)
		return -E2BIG;
	fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* One pid a line; a line cut at the buffer's end is kept for the next read. */
	while ((len = read(fd, buf + keep, sizeof(buf) - 1 - (size_t)keep)) > 0) {
		len += keep;
		buf[len] = '\0';
		for (p = buf; (end = strchr(p, '\n')); p = end + 1) {
			*end = '\0';
			if (!parse_u64(p, 10, &pid) && pid && pid <= UINT32_MAX && *n < max)
				pids[(*n)++] = (uint32_t)pid;
		}
		keep = len - (p - buf);
		if (keep >= (ssize_t)sizeof(buf) - 1)
			keep = 0; /* no pid is this long */
		memmove(buf, p, (size_t)keep);
	}
	close(fd);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while (!err && (de = readdir(dir))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd(dir), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue; /* removed meanwhile */
		err = walk_pids(sub, pids, max, n, dirs, depth + 1);
		close(sub);
		if (err == -ENOENT)
			err = 0;
	}
	closedir(dir);
	return err;
}

int cgroup__pids(int dirfd, uint32_t *pids, size_t max, size_t *n)
{
	size_t dirs = 0;

	*n = 0;
	return walk_pids(dirfd, pids, max, n, &dirs, 0);
}
