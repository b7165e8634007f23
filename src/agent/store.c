// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* store.c - interval files with atomic writes and retention; see store.h. */
#include "agent/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define PREFIX "bpfprof-"

struct store {
	char dir[PATH_MAX];
	const struct writer *w;
	char ext[32];
	unsigned keep;
	uint64_t max_disk;
	struct store_stats st;
};

int store__name(uint64_t start_ns, const char *ext, unsigned seq, char *buf, size_t size)
{
	time_t t = (time_t)(start_ns / 1000000000ULL);
	struct tm tm;
	char stamp[32];
	int n;

	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (seq)
		n = snprintf(buf, size, PREFIX "%s-%u%s", stamp, seq, ext);
	else
		n = snprintf(buf, size, PREFIX "%s%s", stamp, ext);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* One of ours: PREFIX, 16 stamp characters, optional -N, then ext exactly. */
static bool is_ours(const struct store *s, const char *name)
{
	size_t n = strlen(name), e = strlen(s->ext), p = strlen(PREFIX);

	if (n < p + 16 + e || strncmp(name, PREFIX, p) || strcmp(name + n - e, s->ext))
		return false;
	return name[p + 8] == 'T' && name[p + 15] == 'Z';
}

struct entry {
	char name[NAME_MAX + 1];
	uint64_t size;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Lists our files (sorted oldest first) and removes leftover temp files. */
static int list(struct store *s, struct entry **out, size_t *nr)
{
	struct entry *arr = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(s->dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;

		if (strncmp(de->d_name, PREFIX, strlen(PREFIX)))
			continue;
		if (strstr(de->d_name, ".tmp.")) {
			/* From a crash mid-write: never a valid profile. */
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (!is_ours(s, de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (array_grow((void **)&arr, &cap, n + 1, sizeof(*arr))) {
			free(arr);
			closedir(d);
			return -ENOMEM;
		}
		snprintf(arr[n].name, sizeof(arr[n].name), "%s", de->d_name);
		arr[n].size = (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	if (n)
		qsort(arr, n, sizeof(*arr), cmp_entry);
	*out = arr;
	*nr = n;
	return 0;
}

static void prune(struct store *s)
{
	struct entry *e = NULL;
	uint64_t total = 0;
	size_t n = 0, first = 0;
	int dfd;

	if (list(s, &e, &n))
		return;
	for (size_t i = 0; i < n; i++)
		total += e[i].size;
	dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Oldest first; the newest file always stays, even if alone it is too big. */
	while (dfd >= 0 && n - first > 1 &&
	       ((s->keep && n - first > s->keep) || (s->max_disk && total > s->max_disk))) {
		if (unlinkat(dfd, e[first].name, 0) == 0 || errno == ENOENT) {
			total -= e[first].size;
			s->st.pruned++;
		}
		first++;
	}
	if (dfd >= 0)
		close(dfd);
	s->st.files = (unsigned)(n - first);
	s->st.bytes = total;
	free(e);
}

struct store *store__open(const struct store_opts *opts)
{
	struct store *s;
	struct stat st;

	if (!opts->dir || !opts->writer) {
		errno = EINVAL;
		return NULL;
	}
	if (mkdir(opts->dir, 0755) && errno != EEXIST)
		return NULL;
	if (stat(opts->dir, &st))
		return NULL;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return NULL;
	}
	if (access(opts->dir, W_OK))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->dir, sizeof(s->dir), "%s", opts->dir);
	snprintf(s->ext, sizeof(s->ext), "%s", opts->ext ? opts->ext : "");
	s->w = opts->writer;
	s->keep = opts->keep;
	s->max_disk = opts->max_disk;
	prune(s); /* also clears temp files left by a crash */
	return s;
}

void store__close(struct store *s)
{
	free(s);
}

int store__write(struct store *s, const struct profile *p, uint64_t start_ns, char *out,
		 size_t size)
{
	char name[NAME_MAX + 1], path[PATH_MAX];
	struct stat st;
	int err, dfd;

	for (unsigned seq = 0;; seq++) {
		err = store__name(start_ns, s->ext, seq, name, sizeof(name));
		if (err)
			goto fail;
		if (snprintf(path, sizeof(path), "%s/%s", s->dir, name) >= (int)sizeof(path)) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		if (lstat(path, &st) && errno == ENOENT)
			break;
		if (seq > 1000) {
			err = -EEXIST;
			goto fail;
		}
	}
	err = output__write_path(s->w, p, path, NULL, NULL);
	if (err)
		goto fail;
	/* The rename is durable only once the directory is. */
	dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	s->st.written++;
	s->st.last_err = 0;
	if (out)
		snprintf(out, size, "%s", path);
	prune(s);
	return 0;
fail:
	s->st.errors++;
	s->st.last_err = err;
	prune(s);
	return err;
}

void store__stats(const struct store *s, struct store_stats *st)
{
	*st = s->st;
}
