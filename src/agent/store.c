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
#include "proc/safewrite.h"

#define PREFIX	  "bpfprof-"
#define STAMP_LEN 16 /* "YYYYMMDDTHHMMSSZ" */

/* A file this store wrote (or an earlier run of it), by the name it made. */
struct kept {
	uint64_t sec; /* the interval's UTC start */
	unsigned seq; /* the "-N" suffix, 0 for none */
	uint64_t size;
};

struct store {
	char dir[PATH_MAX]; /* as the user named it, for messages */
	int dfd;	    /* the checked directory: every operation is relative to it */
	uid_t uid;	    /* who our files belong to */
	const struct writer *w;
	char ext[32];
	unsigned keep;
	uint64_t max_disk;
	struct store_stats st;
	/* With retention: the files kept, oldest first, files[head..n). */
	struct kept *files;
	size_t head, n, cap;
};

int store__name(uint64_t start_ns, const char *ext, unsigned seq, char *buf, size_t size)
{
	time_t t = (time_t)(start_ns / NS_PER_SEC);
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

static unsigned digits(const char *s, size_t n)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

/*
 * A name this store makes: PREFIX, the stamp, an optional -N, then ext
 * exactly - and store__name() of what it says gives it back, byte for byte
 * (no "2026-13-45", no "-007").
 */
static bool parse_name(const struct store *s, const char *name, size_t n, struct kept *k)
{
	size_t p = strlen(PREFIX), e = strlen(s->ext);
	const char *st = name + p, *mid = st + STAMP_LEN;
	char back[NAME_MAX + 1];
	struct tm tm = { 0 };
	uint64_t seq = 0;
	time_t t;

	if (n < p + STAMP_LEN + e || n > NAME_MAX || strncmp(name, PREFIX, p) ||
	    memcmp(name + n - e, s->ext, e))
		return false;
	for (size_t i = 0; i < STAMP_LEN; i++)
		if (i == 8 ? st[i] != 'T' : i == 15 ? st[i] != 'Z' : (st[i] < '0' || st[i] > '9'))
			return false;
	if (name + n - e > mid) {
		char num[16];
		size_t len = (size_t)(name + n - e - mid) - 1;

		if (*mid != '-' || !len || len >= sizeof(num))
			return false;
		memcpy(num, mid + 1, len);
		num[len] = '\0';
		if (parse_u64(num, 10, &seq) || !seq || seq > UINT_MAX)
			return false;
	}
	tm.tm_year = (int)digits(st, 4) - 1900;
	tm.tm_mon = (int)digits(st + 4, 2) - 1;
	tm.tm_mday = (int)digits(st + 6, 2);
	tm.tm_hour = (int)digits(st + 9, 2);
	tm.tm_min = (int)digits(st + 11, 2);
	tm.tm_sec = (int)digits(st + 13, 2);
	t = timegm(&tm);
	if (t < 0)
		return false;
	k->sec = (uint64_t)t;
	k->seq = (unsigned)seq;
	return !store__name(k->sec * NS_PER_SEC, s->ext, k->seq, back, sizeof(back)) &&
	       strlen(back) == n && !memcmp(back, name, n);
}

/* A temporary file of ours left by a crash mid-write: OURNAME.tmp.XXXXXX. */
static bool is_our_tmp(const struct store *s, const char *name)
{
	size_t n = strlen(name);
	struct kept k;

	if (n < 11 || memcmp(name + n - 11, ".tmp.", 5))
		return false;
	for (size_t i = n - 6; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			return false;
	return parse_name(s, name, n - 11, &k);
}

static int cmp_kept(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;

	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Whether an entry is a file this store (in this run or an earlier one)
 * wrote: a regular file with one link, owned by the user we run as, in a
 * directory nobody else can write (store__open checked it), with a name we
 * make. Nothing else is ever counted or removed.
 */
static bool ours(const struct store *s, const char *name, struct stat *st)
{
	return !fstatat(s->dfd, name, st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st->st_mode) &&
	       st->st_uid == s->uid && st->st_nlink == 1;
}

/*
 * The one listing of the directory, at start: our files from earlier runs
 * (retention spans restarts) and our temporary files left by a crash, which
 * are removed. After this, what the store writes is kept in memory: no
 * listing per interval, whatever else the directory holds.
 */
static int scan(struct store *s)
{
	int fd = fcntl(s->dfd, F_DUPFD_CLOEXEC, 0);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct stat st;
		struct kept k;

		if (strncmp(de->d_name, PREFIX, strlen(PREFIX)))
			continue;
		if (is_our_tmp(s, de->d_name)) {
			if (ours(s, de->d_name, &st))
				unlinkat(s->dfd, de->d_name, 0);
			continue;
		}
		if (!parse_name(s, de->d_name, n, &k) || !ours(s, de->d_name, &st))
			continue;
		k.size = (uint64_t)st.st_size;
		s->st.files++;
		s->st.bytes += k.size;
		if (!s->keep && !s->max_disk)
			continue;
		if (array_grow((void **)&s->files, &s->cap, s->n + 1, sizeof(*s->files))) {
			closedir(d);
			return -ENOMEM;
		}
		s->files[s->n++] = k;
	}
	closedir(d);
	if (s->n)
		qsort(s->files, s->n, sizeof(*s->files), cmp_kept);
	return 0;
}

/* Oldest first; the newest file always stays, even if alone it is too big. */
static void prune(struct store *s)
{
	char name[NAME_MAX + 1];

	while (s->n - s->head > 1 && ((s->keep && s->n - s->head > s->keep) ||
				      (s->max_disk && s->st.bytes > s->max_disk))) {
		const struct kept *k = &s->files[s->head++];

		/* A file we cannot remove is forgotten, not retried every interval. */
		if (!store__name(k->sec * NS_PER_SEC, s->ext, k->seq, name, sizeof(name)) &&
		    !unlinkat(s->dfd, name, 0))
			s->st.pruned++;
		s->st.files--;
		s->st.bytes -= k->size;
	}
	/* Amortised O(1): the live part moves down once the dead part is as big. */
	if (s->head && s->head >= s->n - s->head) {
		memmove(s->files, s->files + s->head, (s->n - s->head) * sizeof(*s->files));
		s->n -= s->head;
		s->head = 0;
	}
}

struct store *store__open(const struct store_opts *opts, struct errmsg *em)
{
	struct store *s;
	int err;

	if (!opts->dir || !opts->writer) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dfd = safewrite__dir(opts->dir, true, em);
	if (s->dfd < 0) {
		err = s->dfd;
		free(s);
		errno = -err;
		return NULL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", opts->dir);
	snprintf(s->ext, sizeof(s->ext), "%s", opts->ext ? opts->ext : "");
	s->uid = geteuid();
	s->w = opts->writer;
	s->keep = opts->keep;
	s->max_disk = opts->max_disk;
	err = scan(s);
	if (err) {
		store__close(s);
		errno = -err;
		return NULL;
	}
	prune(s);
	return s;
}

void store__close(struct store *s)
{
	if (!s)
		return;
	close(s->dfd);
	free(s->files);
	free(s);
}

int store__write(struct store *s, const struct profile *p, uint64_t start_ns, char *out,
		 size_t size)
{
	char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
	bool retain = s->keep || s->max_disk;
	uint64_t bytes = 0;
	unsigned seq = 0;
	int err;

	/* Room to remember the file before it exists: a file retention forgot would stay. */
	if (retain && array_grow((void **)&s->files, &s->cap, s->n + 1, sizeof(*s->files))) {
		err = -ENOMEM;
		goto fail;
	}
	err = store__name(start_ns, s->ext, 0, name, sizeof(name));
	if (!err)
		err = writer__write_tmp(s->w, p, NULL, s->dfd, name, tmp, sizeof(tmp), &bytes);
	if (err)
		goto fail;
	/* Two intervals in one second (a restart): "-1", "-2"..., never over a file. */
	for (;;) {
		err = safewrite__rename(s->dfd, tmp, name, true);
		if (err != -EEXIST || seq >= 1000)
			break;
		err = store__name(start_ns, s->ext, ++seq, name, sizeof(name));
		if (err)
			break;
	}
	if (err) {
		unlinkat(s->dfd, tmp, 0);
		goto fail;
	}
	/* The rename is durable only once the directory is. */
	fsync(s->dfd);
	s->st.written++;
	s->st.last_err = 0;
	s->st.files++;
	s->st.bytes += bytes;
	if (retain)
		s->files[s->n++] = (struct kept){ start_ns / NS_PER_SEC, seq, bytes };
	if (out)
		snprintf(out, size, "%s/%s", s->dir, name);
	prune(s);
	return 0;
fail:
	s->st.errors++;
	s->st.last_err = err;
	return err;
}

void store__stats(const struct store *s, struct store_stats *st)
{
	*st = s->st;
}
