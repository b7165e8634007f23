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
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/ioctl.h>

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

/*
 * The kernel appends " (deleted)" to an unlinked file's name without
 * escaping, so a file literally named "x (deleted)" looks exactly like a
 * deleted "x". We strip one suffix either way; a caller that must know
 * compares the inode of the stripped path with m.inode.
 */
static void strip_deleted(struct pm_line *l)
{
	if (l->path_len > DELETED_SUFFIX_LEN && !memcmp(l->path + l->path_len - DELETED_SUFFIX_LEN,
							DELETED_SUFFIX, DELETED_SUFFIX_LEN)) {
		l->path_len -= DELETED_SUFFIX_LEN;
		l->m.deleted = true;
	}
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
	strip_deleted(l);
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

static int assemble(struct pm_line *lines, size_t nr, bool sorted, size_t bad,
		    struct procmaps *out);

int procmaps__parse(const char *buf, size_t len, struct procmaps *out)
{
	const char *p, *end;
	struct pm_line *lines = NULL;
	size_t nr = 0, cap = 0, bad = 0;
	bool sorted = true;

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
	return assemble(lines, nr, sorted, bad, out);
}

/*
 * The result of nr lines (freed here): sorted, disjoint, one allocation; 0
 * or -ENOMEM.
 */
static int assemble(struct pm_line *lines, size_t nr, bool sorted, size_t bad, struct procmaps *out)
{
	size_t kept = 0, pool_len = 0;
	struct procmap *maps;
	char *pool;

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

/*
 * PROCMAP_QUERY (Linux 6.11, linux/fs.h): one mapping per ioctl on an open
 * maps file, filtered by the kernel, the name formatted only when asked for.
 * Debian 12's headers predate it, so the ABI (extensible by its size field)
 * is spelled out here.
 */
struct pm_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};

#define PM_QUERY	     _IOWR('f', 17, struct pm_query)
#define PMQ_VMA_READABLE     0x01
#define PMQ_VMA_WRITABLE     0x02
#define PMQ_VMA_EXECUTABLE   0x04
#define PMQ_VMA_SHARED	     0x08
#define PMQ_COVERING_OR_NEXT 0x10
#define PMQ_FILE_BACKED_VMA  0x20

/* vm.max_map_count defaults to 65530: past this something is wrong. */
#define PROCMAPS_MAX_QUERIED (1u << 17)

int procmaps__query(const char *path, unsigned what, struct procmaps *out)
{
	bool names = what == PROCMAPS_Q_EXEC;
	size_t nr = 0, cap = 0, pool_len = 0, pool_cap = 0, *offs = NULL, offs_cap = 0;
	struct pm_line *lines = NULL;
	char *pool = NULL, name[PATH_MAX + sizeof(DELETED_SUFFIX)];
	uint64_t addr = 0;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct pm_query q = {
			.size = sizeof(q),
			.query_flags = PMQ_COVERING_OR_NEXT |
				       (names ? PMQ_VMA_EXECUTABLE : PMQ_FILE_BACKED_VMA),
			.query_addr = addr,
			.vma_name_addr = names ? (uint64_t)(uintptr_t)name : 0,
			.vma_name_size = names ? (uint32_t)sizeof(name) : 0,
		};
		struct pm_line *l;

		if (ioctl(fd, PM_QUERY, &q)) {
			err = -errno;
			if (err == -ENOENT) /* no mapping at or after addr */
				err = 0;
			else if (err == -ESRCH) /* no address space: as an empty maps file */
				err = 0, nr = 0;
			else if (err == -ENOTTY || err == -EINVAL || err == -E2BIG)
				err = -EOPNOTSUPP; /* a kernel before 6.11 */
			break;
		}
		if (q.vma_end <= addr || q.vma_end <= q.vma_start || nr >= PROCMAPS_MAX_QUERIED) {
			err = -EFBIG; /* not an answer the kernel gives: stop */
			break;
		}
		if (q.vma_start < addr) {
			/* Mapped over since the last answer: what it covered is kept. */
			addr = q.vma_end;
			continue;
		}
		if (array_grow((void **)&lines, &cap, nr + 1, sizeof(*lines)) ||
		    array_grow((void **)&offs, &offs_cap, nr + 1, sizeof(*offs))) {
			err = -ENOMEM;
			break;
		}
		l = &lines[nr];
		memset(l, 0, sizeof(*l));
		l->m.start = q.vma_start;
		l->m.end = q.vma_end;
		l->m.offset = q.vma_offset;
		l->m.inode = q.inode;
		l->m.dev_major = q.dev_major;
		l->m.dev_minor = q.dev_minor;
		l->m.perms = (q.vma_flags & PMQ_VMA_READABLE ? PROCMAP_R : 0) |
			     (q.vma_flags & PMQ_VMA_WRITABLE ? PROCMAP_W : 0) |
			     (q.vma_flags & PMQ_VMA_EXECUTABLE ? PROCMAP_X : 0) |
			     (q.vma_flags & PMQ_VMA_SHARED ? 0 : PROCMAP_P);
		offs[nr] = SIZE_MAX;
		if (names && q.vma_name_size > 1 && q.vma_name_size <= sizeof(name)) {
			size_t n = q.vma_name_size - 1; /* the size counts the NUL */

			if (pool_len + n + 1 > PROCMAPS_MAX_FILE ||
			    array_grow((void **)&pool, &pool_cap, pool_len + n + 1, 1)) {
				err = pool_len + n + 1 > PROCMAPS_MAX_FILE ? -EFBIG : -ENOMEM;
				break;
			}
			memcpy(pool + pool_len, name, n);
			pool[pool_len + n] = '\0';
			offs[nr] = pool_len;
			l->path_len = n;
			pool_len += n + 1;
		}
		nr++;
		addr = q.vma_end;
	}
	close(fd);
	if (err) {
		free(lines);
		free(offs);
		free(pool);
		return err;
	}
	for (size_t i = 0; i < nr; i++)
		if (offs[i] != SIZE_MAX) {
			lines[i].path = pool + offs[i];
			strip_deleted(&lines[i]);
		}
	free(offs);
	err = assemble(lines, nr, true, 0, out);
	free(pool);
	return err;
}

typedef int (*maps_reader)(const char *path, unsigned what, struct procmaps *out);

static int read_text(const char *path, unsigned what, struct procmaps *out)
{
	(void)what;
	return procmaps__read(path, out);
}

/* The maps of pid, or of a live thread's when the main thread has exited. */
static int read_pid(const char *proc_root, uint32_t pid, maps_reader rd, unsigned what,
		    struct procmaps *out, uint32_t *tid)
{
	uint32_t tids[PROCFS_LIVE_TASKS];
	char path[PATH_MAX];
	size_t n;
	int err;

	if (tid)
		*tid = 0;
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	err = rd(path, what, out);
	if (err || out->nr)
		return err;
	/* The main thread has exited: its maps file is empty, other threads' are not. */
	if (procfs__tasks(proc_root, pid, tids, PROCFS_LIVE_TASKS, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%u/task/%u/maps", proc_root, pid, tids[i]);
		procmaps__free(out);
		err = rd(path, what, out);
		if (err == -EOPNOTSUPP)
			return err;
		if (!err && out->nr) {
			if (tid)
				*tid = tids[i];
			break;
		}
	}
	return 0;
}

int procmaps__read_pid(const char *proc_root, uint32_t pid, struct procmaps *out, uint32_t *tid)
{
	return read_pid(proc_root, pid, read_text, 0, out, tid);
}

int procmaps__query_pid(const char *proc_root, uint32_t pid, unsigned what, struct procmaps *out,
			uint32_t *tid)
{
	return read_pid(proc_root, pid, procmaps__query, what, out, tid);
}
