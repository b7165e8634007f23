/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * debuginfod.h - fetching the debug file of a stripped binary from
 * debuginfod servers (DEBUGINFOD_URLS, perf's and elfutils' convention), in a
 * background thread, into a cache of the agent's own.
 *
 * A request is GET URL/buildid/HEX/debuginfo, HEX the build id in lower-case
 * hex (2 to 64 bytes): the binary's bytes can only choose hex digits, never
 * a path or a query. Servers are tried in the order given; a 404 goes to
 * the next. libcurl is loaded on first use (base/dynlib.h), restricted to
 * http and https (redirects too, at most 4), with a connect timeout, a
 * silence timeout (no byte for that long) and a total one, and a cap on the
 * body: a server that never answers, or sends an endless or oversized body,
 * costs at most those and fails that file. The main loop never waits on a
 * transfer: debuginfod__want() queues (bounded), the thread fetches, the
 * symbolizer picks finished files up at its next sweep (debuginfod__done()).
 *
 * The cache is $BPFPROF_CACHE_DIR/debuginfod (default
 * /var/cache/bpfprof/debuginfod): its parent resolved under safewrite.h's
 * rules (owned by a trusted user, writable by no one else; made 0700 if
 * missing), the directory itself made 0700 and owned by us, so no one else
 * can put a name in it; everything after is relative to its descriptor.
 * Files are HEX.debug, written as a temporary file (O_EXCL), checked - an
 * ELF file whose build id is the one asked for, at most the size cap - and
 * only then renamed into place. A cache file is read only if it is a regular
 * file owned by us (or root), with one link, writable by no one else, under
 * the size cap (and its caller checks its build id again). The cache is
 * kept under its byte cap at every insertion: the least recently used files
 * (by mtime, refreshed on use) go first.
 *
 * Failures are counted; the first failure of each server is kept as one
 * warning sentence for the caller to say (debuginfod__warning()).
 */
#ifndef BPFPROF_DEBUGINFOD_H
#define BPFPROF_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/errmsg.h"

#define DEBUGINFOD_MAX_SERVERS	   8
#define DEBUGINFOD_MAX_URL	   512
#define DEBUGINFOD_QUEUE_MAX	   256		/* build ids waiting for the thread */
#define DEBUGINFOD_IDS_MAX	   16384	/* build ids asked about in a run */
#define DEBUGINFOD_CACHE_MAX	   (4ull << 30) /* bytes of the cache directory */
#define DEBUGINFOD_RETRY_NS	   (600ull * 1000 * 1000 * 1000) /* after a failure */
#define DEBUGINFOD_CONNECT_TIMEOUT 5				 /* seconds */
#define DEBUGINFOD_SILENCE_TIMEOUT 10  /* seconds without a byte ($DEBUGINFOD_TIMEOUT) */
#define DEBUGINFOD_TOTAL_TIMEOUT   300 /* seconds for one file ($DEBUGINFOD_MAXTIME) */

struct debuginfod_opts {
	const char *urls; /* space-separated http:// or https:// base URLs */
	const char
		*cache_dir; /* default $BPFPROF_CACHE_DIR/debuginfod (or /var/cache/bpfprof/...) */
	uint64_t max_cache; /* default DEBUGINFOD_CACHE_MAX */
	uint64_t max_file;  /* one file; default DEBUGINFO_MAX_FILE ($DEBUGINFOD_MAXSIZE lower) */
	unsigned connect_timeout_s, silence_timeout_s, total_timeout_s; /* 0: defaults, env */
};

struct debuginfod_stats {
	uint64_t fetched;    /* files fetched and cached */
	uint64_t cache_hits; /* build ids whose file was in the cache already */
	uint64_t not_found;  /* build ids no server has (404 everywhere) */
	uint64_t failed;     /* transfers that failed: connect, timeout, HTTP errors, size cap */
	uint64_t rejected;   /* files received but refused: not ELF, another build id */
	uint64_t dropped;    /* requests not queued: queue or id table full */
	size_t pending;	     /* queued or being fetched now */
};

struct debuginfod;

/*
 * Parses the URLs, opens (makes) the cache directory and loads libcurl; the
 * thread starts at the first debuginfod__want(). NULL with em said (and
 * errno): no usable URL, a cache directory refused, libcurl missing.
 */
struct debuginfod *debuginfod__new(const struct debuginfod_opts *o, struct errmsg *em);
/* Stops the thread (a transfer in progress is aborted) and frees; NULL is fine. */
void debuginfod__free(struct debuginfod *d);

/*
 * Asks for the debug file of build id (2..64 bytes), never blocking: 0 queued,
 * -EALREADY asked before (queued, fetched, in the cache, or failed less than
 * DEBUGINFOD_RETRY_NS ago), -ENOSPC the queue or the id table is full,
 * -EINVAL a bad length.
 */
int debuginfod__want(struct debuginfod *d, const uint8_t *id, size_t len);

/*
 * The cached file for build id, checked as above and opened O_RDONLY: the
 * descriptor, or -ENOENT (not cached) or another -errno (refused).
 */
int debuginfod__open(struct debuginfod *d, const uint8_t *id, size_t len);

/* Files fetched so far: when it grows, files waiting may be in the cache now. */
uint64_t debuginfod__done(struct debuginfod *d);

/*
 * Waits at most timeout_ms for the queue to empty (a one-shot run's end).
 * Returns the number still pending.
 */
size_t debuginfod__wait(struct debuginfod *d, unsigned timeout_ms);

/* The next warning not yet taken (one per server), into buf; false if none. */
bool debuginfod__warning(struct debuginfod *d, char *buf, size_t size);

void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *st);

/* --- the parts the unit tests call ------------------------------------------------ */

/* "BASE/buildid/HEX/debuginfo" (one trailing '/' of base dropped); 0 or -ENAMETOOLONG/-EINVAL. */
int debuginfod__url(const char *base, const uint8_t *id, size_t len, char *out, size_t size);
/* Splits urls at spaces: keeps http(s) ones (at most max); returns how many. */
size_t debuginfod__parse_urls(const char *urls, char out[][DEBUGINFOD_MAX_URL], size_t max);
/* "HEX.debug" for a build id; 0 or -EINVAL. */
int debuginfod__cache_name(const uint8_t *id, size_t len, char *out, size_t size);
/*
 * Makes room for `incoming` bytes in the cache directory dirfd under max
 * bytes: HEX.debug files go, oldest mtime first, and temporary files a day
 * old (left by a crash). Returns the bytes the cache holds after, or -errno.
 */
int64_t debuginfod__cache_trim(int dirfd, uint64_t max, uint64_t incoming);
/* Opens (making it 0700) the cache directory at path; the fd or -errno (em said). */
int debuginfod__cache_dir(const char *path, struct errmsg *em);

#endif
