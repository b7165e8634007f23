// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* procfs.c - readers of /proc/PID/{stat,status}; see procfs.h. */
#include "sym/procfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

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
	return ns / (1000000000ULL / (uint64_t)hz);
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

static int status_field(const char *buf, const char *name, const char **val)
{
	size_t n = strlen(name);

	for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
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

int procfs__status(const char *proc_root, uint32_t pid, struct proc_status *st)
{
	char path[256], *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, pid);
	err = read_file(path, STATUS_MAX, &buf, NULL);
	if (err)
		return err;
	err = procfs__parse_status(buf, st);
	free(buf);
	return err;
}
