/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * store.h - the local profile store of continuous mode (--output-dir): one
 * file per interval, named by its UTC start time, written atomically, with
 * retention by count (--keep) and by total size (--max-disk).
 *
 * Files are "bpfprof-YYYYMMDDTHHMMSSZ<ext>" (a "-N" suffix if two intervals
 * start in the same second), so names sort by time. A failed write (full
 * disk, I/O error) leaves no partial file, is counted, and does not stop the
 * agent; older files are untouched.
 *
 * Other users. The directory must belong to root (or the user we run as) and
 * be writable by no one else (proc/safewrite.h), so nobody else can put a
 * name in it; it is opened once and every file operation is relative to that
 * descriptor. Files are made O_CREAT | O_EXCL | O_NOFOLLOW under a temporary
 * name and renamed with RENAME_NOREPLACE: nothing is ever opened or replaced
 * that the store did not just create.
 *
 * Retention only counts and removes files this store wrote: at start, one
 * listing finds those of earlier runs - regular files with one link, owned by
 * the user we run as, named exactly as store__name() names them with this
 * extension - and removes our temporary files a crash left; from then on the
 * files written are kept in memory (oldest first), so a write costs the
 * same whatever the directory holds.
 */
#ifndef BPFPROF_STORE_H
#define BPFPROF_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h"
#include "base/profile.h"
#include "format/writer.h"

struct store_opts {
	const char *dir;
	const struct writer *writer;
	const char *ext;   /* e.g. ".pb.gz" */
	unsigned keep;	   /* keep at most this many files; 0 = no limit */
	uint64_t max_disk; /* keep their total size under this; 0 = no limit */
};

struct store_stats {
	uint64_t written, errors, pruned;
	uint64_t bytes; /* total size of the files kept now */
	unsigned files; /* files kept now */
	int last_err;	/* -errno of the last failed write, 0 if none */
};

/*
 * Opens (creating the directory if its parent exists). NULL with errno; a
 * directory refused for its owner or mode is EACCES with em saying which.
 */
struct store *store__open(const struct store_opts *opts, struct errmsg *em);
void store__close(struct store *s);

/*
 * Writes p as the interval that started at start_ns (CLOCK_REALTIME), then
 * applies retention. path (if given) receives the file name. 0 or -errno.
 */
int store__write(struct store *s, const struct profile *p, uint64_t start_ns, char *path,
		 size_t size);
void store__stats(const struct store *s, struct store_stats *st);

/* The file name for an interval start (for tests): "bpfprof-...Z<ext>". */
int store__name(uint64_t start_ns, const char *ext, unsigned seq, char *buf, size_t size);

#endif
