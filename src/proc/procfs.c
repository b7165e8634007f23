// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* procfs.c - readers of /proc/PID/{stat,status}; see procfs.h. */
#include "proc/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/types.h>

#include "profile_abi.h"
#include "base/util.h"

#define STAT_MAX   (64 * 1024)
#define STATUS_MAX (64 * 1024)

uint64_t procfs__ns_to_ticks(uint64_t ns)
{
	static long hz;

	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		if (hz <= 0)
			hz = 100;
	}
	/* The kernel's nsec_to_clock_t(): truncating division. */
	return ns / (NS_PER_SEC / (uint64_t)hz);
}

int procfs__parse_stat_starttime(const char *buf, uint64_t *ticks)
{
	const char *p = strrchr(buf, ')');
	int field = 2; /* the comm field ends at the last ')' */

	if (!p)
		return -EINVAL;
	p++;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		field++;
		if (field == 22) {
			char num[32];
			size_t n = strcspn(p, " \n");

			if (n == 0 || n >= sizeof(num))
				return -EINVAL;
			memcpy(num, p, n);
			num[n] = '\0';
			return parse_u64(num, 10, ticks);
		}
		p += strcspn(p, " ");
	}
	return -EINVAL;
}

int procfs__starttime(const char *proc_root, uint32_t pid, uint64_t *ticks)
{
	char path[256], *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
	err = read_file(path, STAT_MAX, &buf, NULL);
	if (err)
		return err;
	err = procfs__parse_stat_starttime(buf, ticks);
	free(buf);
	return err;
}

/* AT_ENTRY from the bytes of an auxv file (pairs of native words). */
static int parse_auxv_entry(const void *buf, size_t len, uint64_t *entry)
{
	const unsigned char *b = buf;
	uint64_t pair[2];

	for (size_t i = 0; i + sizeof(pair) <= len; i += sizeof(pair)) {
		memcpy(pair, b + i, sizeof(pair));
		if (pair[0] == 0) /* AT_NULL */
			break;
		if (pair[0] == 9) { /* AT_ENTRY */
			*entry = pair[1];
			return 0;
		}
	}
	return -ENOENT;
}

int procfs__entry(const char *proc_root, uint32_t pid, uint64_t *entry)
{
	char path[256], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "%s/%u/auxv", proc_root, pid);
	err = read_file(path, 4096, &buf, &len);
	if (err)
		return err;
	err = parse_auxv_entry(buf, len, entry);
	free(buf);
	return err;
}

static int status_field(const char *buf, const char *name, const char **val)
{
	size_t n = strlen(name);

	for (const char *line = buf; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!strncmp(line, name, n) && line[n] == ':') {
			*val = line + n + 1;
			return 0;
		}
	}
	return -ENOENT;
}

/* The last of the whitespace-separated decimal numbers on the line at v. */
static int last_number(const char *v, uint32_t *out, int which_first)
{
	uint64_t x;
	char num[24];
	int found = 0;

	while (*v && *v != '\n') {
		size_t n;

		while (*v == ' ' || *v == '\t')
			v++;
		n = strspn(v, "0123456789");
		if (n == 0)
			break;
		if (n >= sizeof(num))
			return -EINVAL;
		memcpy(num, v, n);
		num[n] = '\0';
		if (parse_u64(num, 10, &x) || x > UINT32_MAX)
			return -EINVAL;
		if (!found || !which_first)
			*out = (uint32_t)x;
		found = 1;
		v += n;
	}
	return found ? 0 : -EINVAL;
}

int procfs__parse_status(const char *buf, struct proc_status *st)
{
	const char *v;
	int err;

	memset(st, 0, sizeof(*st));
	if ((err = status_field(buf, "Tgid", &v)) || (err = last_number(v, &st->tgid, 1)))
		return err;
	/* NSpid is absent on old kernels: the pid is then the same everywhere. */
	if (status_field(buf, "NSpid", &v) || last_number(v, &st->ns_pid, 0))
		st->ns_pid = st->tgid;
	/* Uid: real, effective, saved, fs. */
	if (!status_field(buf, "Uid", &v)) {
		uint32_t ids[4] = { 0 };
		int i = 0;

		while (*v && *v != '\n' && i < 4) {
			char *end;
			unsigned long x;

			while (*v == ' ' || *v == '\t')
				v++;
			x = strtoul(v, &end, 10);
			if (end == v)
				break;
			ids[i++] = (uint32_t)x;
			v = end;
		}
		if (i >= 2)
			st->euid = ids[1];
	}
	return 0;
}

/* Up to max whitespace-separated decimal numbers of the line at v; how many. */
static size_t numbers(const char *v, uint32_t *out, size_t max)
{
	size_t i = 0;

	while (i < max) {
		char num[24];
		uint64_t x;
		size_t n;

		while (*v == ' ' || *v == '\t')
			v++;
		n = strspn(v, "0123456789");
		if (!n || n >= sizeof(num))
			break;
		memcpy(num, v, n);
		num[n] = '\0';
		if (parse_u64(num, 10, &x) || x > UINT32_MAX)
			break;
		out[i++] = (uint32_t)x;
		v += n;
	}
	return i;
}

int procfs__parse_cred(const char *buf, struct safe_cred *c)
{
	uint32_t ids[4];
	const char *v;

	memset(c, 0, sizeof(*c));
	/* Uid and Gid: real, effective, saved, fs. */
	if (status_field(buf, "Uid", &v) || numbers(v, ids, 4) != 4)
		return -EINVAL;
	c->uid = ids[3];
	if (status_field(buf, "Gid", &v) || numbers(v, ids, 4) != 4)
		return -EINVAL;
	c->gid = ids[3];
	if (!status_field(buf, "Groups", &v))
		c->nr_groups = numbers(v, c->groups, SAFE_CRED_MAX_GROUPS);
	return 0;
}

/* /proc/PID/status of proc_root, whole, in a buffer the caller frees. */
static int read_status(const char *proc_root, uint32_t pid, char **buf)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, pid);
	return read_file(path, STATUS_MAX, buf, NULL);
}

int procfs__cred(const char *proc_root, uint32_t pid, struct safe_cred *c)
{
	char *buf;
	int err = read_status(proc_root, pid, &buf);

	if (err)
		return err;
	err = procfs__parse_cred(buf, c);
	free(buf);
	return err;
}

int procfs__status(const char *proc_root, uint32_t pid, struct proc_status *st)
{
	char *buf;
	int err = read_status(proc_root, pid, &buf);

	if (err)
		return err;
	err = procfs__parse_status(buf, st);
	free(buf);
	return err;
}

int procfs__parse_stat(const char *buf, struct proc_stat *st)
{
	const char *p = strrchr(buf, ')');
	int field = 2; /* the comm field ends at the last ')' */

	memset(st, 0, sizeof(*st));
	if (!p)
		return -EINVAL;
	p++;
	while (*p && field < 51) {
		uint64_t *dst = NULL;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		field++;
		switch (field) {
		case 14:
			dst = &st->utime;
			break;
		case 15:
			dst = &st->stime;
			break;
		case 22:
			dst = &st->start_time;
			break;
		case 26:
			dst = &st->start_code;
			break;
		case 27:
			dst = &st->end_code;
			break;
		case 47:
			dst = &st->start_brk;
			break;
		case 48:
			dst = &st->arg_start;
			break;
		case 51:
			dst = &st->env_end;
			break;
		}
		if (dst) {
			char num[32];
			size_t n = strcspn(p, " \n");

			if (n == 0 || n >= sizeof(num))
				return -EINVAL;
			memcpy(num, p, n);
			num[n] = '\0';
			if (parse_u64(num, 10, dst))
				return -EINVAL;
		}
		p += strcspn(p, " \n");
	}
	return field >= 22 ? 0 : -EINVAL;
}

int procfs__stat(const char *proc_root, const char *rel, struct proc_stat *st)
{
	char path[256], *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%s/stat", proc_root, rel);
	err = read_file(path, STAT_MAX, &buf, NULL);
	if (err)
		return err;
	err = procfs__parse_stat(buf, st);
	free(buf);
	return err;
}

uint64_t procfs__mm_sig(const struct proc_stat *st)
{
	if (!st->start_code && !st->end_code && !st->start_brk && !st->arg_start && !st->env_end)
		return 0;
	return bp_mm_sig(st->start_code, st->end_code, st->start_brk, st->arg_start, st->env_end);
}

int procfs__image(const char *proc_root, uint32_t pid, uint64_t *start_ticks, uint64_t *mm_sig)
{
	uint32_t tids[PROCFS_LIVE_TASKS];
	struct proc_stat st, tst;
	char rel[64];
	size_t n;
	int err;

	snprintf(rel, sizeof(rel), "%u", pid);
	err = procfs__stat(proc_root, rel, &st);
	if (err)
		return err;
	*start_ticks = st.start_time;
	*mm_sig = procfs__mm_sig(&st);
	if (*mm_sig)
		return 0;
	/* The main thread has exited and took its mm fields along: ask a live thread. */
	if (procfs__tasks(proc_root, pid, tids, PROCFS_LIVE_TASKS, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%u/task/%u", pid, tids[i]);
		if (!procfs__stat(proc_root, rel, &tst) && (*mm_sig = procfs__mm_sig(&tst)))
			break;
	}
	return 0;
}

/* The numeric names in directory path (ids), at most max. */
static int list_ids(const char *path, uint32_t *ids, size_t max, size_t *n)
{
	struct dirent *de;
	DIR *dir;

	*n = 0;
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && *n < max) {
		uint64_t id;

		if (parse_u64(de->d_name, 10, &id) || !id || id > UINT32_MAX)
			continue;
		ids[(*n)++] = (uint32_t)id;
	}
	closedir(dir);
	return 0;
}

int procfs__pids(const char *proc_root, uint32_t *pids, size_t max, size_t *n)
{
	return list_ids(proc_root, pids, max, n);
}

int procfs__tasks(const char *proc_root, uint32_t pid, uint32_t *tids, size_t max, size_t *n)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%u/task", proc_root, pid);
	return list_ids(path, tids, max, n);
}

int procfs__pidfd(uint32_t pid)
{
	/* pidfd_open() descriptors are close-on-exec whatever the flags. */
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);

	return fd < 0 ? -errno : fd;
}

bool procfs__pidfd_exited(int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLIN | POLLHUP | POLLERR));
}

int procfs__pidfd_started(const char *proc_root, uint32_t pid, uint64_t start_ns)
{
	uint64_t ticks;
	int fd, err;

	if (!start_ns)
		return -ESRCH;
	fd = procfs__pidfd(pid);
	if (fd < 0)
		return fd;
	err = procfs__starttime(proc_root, pid, &ticks);
	if (!err && (ticks != procfs__ns_to_ticks(start_ns) || procfs__pidfd_exited(fd)))
		err = -ESRCH;
	if (err) {
		close(fd);
		return err == -ENOENT ? -ESRCH : err;
	}
	return fd;
}

int procfs__pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) ? -errno : 0;
}
