// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * procmaps.c - /proc/PID/maps parser; see procmaps.h.
 *
 * The kernel prints "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " and then, if
 * the mapping has a name, pads to a fixed column and prints it verbatim: spaces
 * are not escaped (only '\n' is, as "\012"), so the path is simply the rest of
 * the line. Every field is parsed with explicit lengths and range checks.
 *
 * The result is one allocation: the procmap array followed by the path
 * strings, so procmaps__free() is a single free() and consecutive mappings of
 * the same file (a library has four or five) share one copy of the path.
 */
#include "proc/procmaps.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "proc/procfs.h"

/*
 * max_map_count defaults to 65530 mappings of at most ~4 KiB of path each;
 * real files are a few MiB at worst. Past this something is wrong.
 */
#define PROCMAPS_MAX_FILE (64u << 20)

#define DELETED_SUFFIX	   " (deleted)"
#define DELETED_SUFFIX_LEN (sizeof(DELETED_SUFFIX) - 1)

/* A parsed line whose path still points into the input. */
struct pm_line {
	struct procmap m;
	const char *path;
	size_t path_len;
};

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

/* Hex digits of [p, end) up to the first `stop` char (or blank if stop is 0). */
static const char *parse_hex_field(const char *p, const char *end, char stop, uint64_t *out)
{
	const char *s = p;

	while (p < end && *p != stop && !is_blank(*p))
		p++;
	if (parse_hex_n(s, (size_t)(p - s), out))
		return NULL;
	return p;
}

static const char *parse_dec_field(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = p;

	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

static bool parse_perms(const char *p, const char *end, uint32_t *perms)
{
	if (end - p < 4 || (end - p > 4 && !is_blank(p[4])))
		return false;
	*perms = 0;
	if (p[0] == 'r')
		*perms |= PROCMAP_R;
	else if (p[0] != '-')
		return false;
	if (p[1] == 'w')
		*perms |= PROCMAP_W;
	else if (p[1] != '-')
		return false;
	if (p[2] == 'x')
		*perms |= PROCMAP_X;
	else if (p[2] != '-')
		return false;
	if (p[3] == 'p')
		*perms |= PROCMAP_P;
	else if (p[3] != 's')
		return false;
	return true;
}

/* One line without its '\n'; false if malformed. */
static bool parse_line(const char *p, const char *end, struct pm_line *l)
{
	uint64_t major, minor;

	memset(l, 0, sizeof(*l));
	p = parse_hex_field(p, end, '-', &l->m.start);
	if (!p || p == end || *p != '-')
		return false;
	p = parse_hex_field(p + 1, end, 0, &l->m.end);
	if (!p || l->m.start >= l->m.end)
		return false;
	p = skip_blanks(p, end);
	if (!parse_perms(p, end, &l->m.perms))
		return false;
	p = skip_blanks(p + 4, end);
	p = parse_hex_field(p, end, 0, &l->m.offset);
	if (!p)
		return false;
	p = skip_blanks(p, end);
	p = parse_hex_field(p, end, ':', &major);
	if (!p || p == end || *p != ':' || major > UINT32_MAX)
		return false;
	p = parse_hex_field(p + 1, end, 0, &minor);
	if (!p || minor > UINT32_MAX)
		return false;
	l->m.dev_major = (uint32_t)major;
	l->m.dev_minor = (uint32_t)minor;
	p = skip_blanks(p, end);
	p = parse_dec_field(p, end, &l->m.inode);
	if (!p || (p < end && !is_blank(*p)))
		return false;

	/* The path is everything after the padding, trailing spaces included. */
	p = skip_blanks(p, end);
	if (p == end)
		return true;
	if (memchr(p, '\0', (size_t)(end - p)))
		return false;
	l->path = p;
	l->path_len = (size_t)(end - p);
	/*
	 * The kernel appends " (deleted)" to an unlinked file's name without
	 * escaping, so a file literally named "x (deleted)" looks exactly like a
	 * deleted "x". We strip one suffix either way; a caller that must know
	 * compares the inode of the stripped path with m.inode.
	 */
	if (l->path_len > DELETED_SUFFIX_LEN &&
	    !memcmp(p + l->path_len - DELETED_SUFFIX_LEN, DELETED_SUFFIX, DELETED_SUFFIX_LEN)) {
		l->path_len -= DELETED_SUFFIX_LEN;
		l->m.deleted = true;
	}
	return true;
}

static int pm_line__cmp(const void *a, const void *b)
{
	const struct pm_line *x = a, *y = b;

	if (x->m.start != y->m.start)
		return x->m.start < y->m.start ? -1 : 1;
	if (x->m.end != y->m.end)
		return x->m.end < y->m.end ? -1 : 1;
	/* Keep input order for identical ranges: pointers into one buffer. */
	return x->path < y->path ? -1 : x->path > y->path;
}

int procmaps__parse(const char *buf, size_t len, struct procmaps *out)
{
	const char *p, *end;
	struct pm_line *lines = NULL;
	size_t nr = 0, cap = 0, kept = 0, pool_len = 0, bad = 0;
	bool sorted = true;
	struct procmap *maps;
	char *pool;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return 0;
	p = buf;
	end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = skip_blanks(p, le);

		p = nl ? nl + 1 : end;
		if (q == le)
			continue; /* blank line: nothing to count */
		if (array_grow((void **)&lines, &cap, nr + 1, sizeof(*lines))) {
			free(lines);
			return -ENOMEM;
		}
		if (!parse_line(q, le, &lines[nr])) {
			bad++;
			continue;
		}
		if (nr && pm_line__cmp(&lines[nr - 1], &lines[nr]) > 0)
			sorted = false;
		nr++;
	}

	/*
	 * The kernel prints mappings in order, but a file read in several
	 * chunks while the process maps and unmaps can repeat or reorder lines.
	 * Sort, then drop anything overlapping what was kept, so that the
	 * result is ordered and disjoint and a binary search is exact.
	 */
	if (!sorted)
		qsort(lines, nr, sizeof(*lines), pm_line__cmp);
	for (size_t i = 0; i < nr; i++) {
		if (kept && lines[i].m.start < lines[kept - 1].m.end) {
			bad++;
			continue;
		}
		lines[kept++] = lines[i];
	}
	for (size_t i = 0; i < kept; i++)
		if (lines[i].path)
			pool_len += lines[i].path_len + 1;

	maps = malloc(kept * sizeof(*maps) + pool_len + 1);
	if (!maps) {
		free(lines);
		return -ENOMEM;
	}
	pool = (char *)(maps + kept);
	for (size_t i = 0; i < kept; i++) {
		struct pm_line *l = &lines[i];

		maps[i] = l->m;
		if (!l->path)
			continue;
		if (i && lines[i - 1].path && lines[i - 1].path_len == l->path_len &&
		    !memcmp(lines[i - 1].path, l->path, l->path_len)) {
			maps[i].path = maps[i - 1].path;
			continue;
		}
		memcpy(pool, l->path, l->path_len);
		pool[l->path_len] = '\0';
		maps[i].path = pool;
		pool += l->path_len + 1;
	}
	free(lines);
	out->maps = maps;
	out->nr = kept;
	out->bad_lines = bad;
	return 0;
}

int procmaps__read(const char *path, struct procmaps *out)
{
	size_t len;
	char *buf;
	int err;

	memset(out, 0, sizeof(*out));
	err = read_file(path, PROCMAPS_MAX_FILE, &buf, &len);
	if (err)
		return err;
	err = procmaps__parse(buf, len, out);
	free(buf);
	return err;
}

void procmaps__free(struct procmaps *m)
{
	if (!m)
		return;
	free(m->maps); /* the paths live in the same block */
	m->maps = NULL;
	m->nr = 0;
	m->bad_lines = 0;
}

const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m || !m->nr)
		return NULL;
	hi = m->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->maps[lo - 1].end)
		return NULL;
	return &m->maps[lo - 1];
}

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

bool procmap__is_file(const struct procmap *pm)
{
	/*
	 * Kernel-internal files that print with a leading '/' but cannot be
	 * opened by that path or hold no code: memfd and SysV shm segments,
	 * MAP_SHARED|MAP_ANONYMOUS (shown as "/dev/zero (deleted)"), hugetlb
	 * anonymous memory, AIO rings, and device nodes in general (GPU
	 * buffers, /dev/zero, /dev/mem). The device number is no help here:
	 * btrfs, overlayfs (containers) and NFS files have major 0 too.
	 */
	static const char *const pseudo[] = {
		"/memfd:", "/SYSV", "/dev/", "/anon_hugepage", "/[aio]", "/dmabuf:",
	};

	if (!pm || !pm->path || pm->path[0] != '/' || !pm->inode)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(pseudo); i++)
		if (has_prefix(pm->path, pseudo[i]))
			return false;
	return true;
}

int procmaps__keep(struct procmaps *m, uint32_t perms)
{
	size_t kept = 0, pool_len = 0;
	struct procmap *maps;
	char *pool;

	for (size_t i = 0; i < m->nr; i++) {
		const struct procmap *pm = &m->maps[i];

		if ((pm->perms & perms) != perms)
			continue;
		if (pm->path)
			pool_len += strlen(pm->path) + 1;
		kept++;
	}
	maps = malloc(kept * sizeof(*maps) + pool_len + 1);
	if (!maps)
		return -ENOMEM;
	pool = (char *)(maps + kept);
	kept = 0;
	for (size_t i = 0; i < m->nr; i++) {
		const struct procmap *pm = &m->maps[i];

		if ((pm->perms & perms) != perms)
			continue;
		maps[kept] = *pm;
		if (pm->path) {
			size_t n = strlen(pm->path) + 1;

			memcpy(pool, pm->path, n);
			maps[kept].path = pool;
			pool += n;
		}
		kept++;
	}
	free(m->maps);
	m->maps = maps;
	m->nr = kept;
	return 0;
}

int procmaps__read_pid(const char *proc_root, uint32_t pid, struct procmaps *out, uint32_t *tid)
{
	uint32_t tids[PROCFS_LIVE_TASKS];
	char path[PATH_MAX];
	size_t n;
	int err;

	if (tid)
		*tid = 0;
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	err = procmaps__read(path, out);
	if (err || out->nr)
		return err;
	/* The main thread has exited: its maps file is empty, other threads' are not. */
	if (procfs__tasks(proc_root, pid, tids, PROCFS_LIVE_TASKS, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%u/task/%u/maps", proc_root, pid, tids[i]);
		procmaps__free(out);
		if (!procmaps__read(path, out) && out->nr) {
			if (tid)
				*tid = tids[i];
			break;
		}
	}
	return 0;
}
