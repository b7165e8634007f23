/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * korc_cache.h - the reshaped kernel ORC table (korc.h), kept on disk per
 * kernel build so that a start after the first skips reading the kernel's
 * tables and reshaping them (copying ~5 MiB out of the kernel, building
 * ~11 MiB of temporary arrays: the slowest and largest step of start-up).
 *
 * A cache file is trusted for nothing: it is read only if it is a regular
 * file owned by root (or by us) that nobody else may write, in a directory
 * nobody else may write; its header must name the running kernel's build
 * id, its sizes must add up to the file's, a checksum must match, and the
 * table must be well formed (sorted entries, indexes in range) before the
 * collector spot-checks entries against the kernel's own table and hands
 * it to the program. Anything else is a miss: the table is rebuilt.
 *
 * Addresses are stored relative to _stext: KASLR moves the kernel text as a
 * whole, so one file serves every boot of the same build.
 */
#ifndef BPFPROF_KORC_CACHE_H
#define BPFPROF_KORC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/korc.h"

#define KORC_CACHE_DIR	   "/var/cache/bpfprof" /* $BPFPROF_CACHE_DIR overrides, "" disables */
#define KORC_CACHE_VERSION 1
#define KORC_CACHE_MAX	   (256u << 20) /* file size bound */

/* What the table was built from, in the running kernel's addresses. */
struct korc_meta {
	uint64_t stext;			  /* _stext */
	uint64_t orc_ip_start, orc_start; /* the kernel's own tables, for spot checks */
	uint32_t nr_orc;		  /* their entries */
	uint64_t tramp[3];		  /* korc_syms.trampolines, 0: none */
};

/*
 * The cache file for a build id ("" on error: no build id, or caching off),
 * in $BPFPROF_CACHE_DIR or KORC_CACHE_DIR. The directory is created (0700)
 * if missing; it is refused if another user could write to it.
 */
int korc_cache__path(const char *build_id, char *path, size_t size);

/* Writes k and m atomically (a temporary file, renamed), mode 0600. 0 or -errno. */
int korc_cache__save(const char *path, const char *build_id, const struct korc *k,
		     const struct korc_meta *m);

/*
 * Parses a cache image (the file's bytes) for build_id, rebased to the
 * running kernel's stext, into k (allocated; korc__free) and m. 0, or
 * -ESTALE (another build or version), -EINVAL (malformed), -ENOMEM.
 */
int korc_cache__parse(const uint8_t *buf, size_t len, const char *build_id, uint64_t stext,
		      struct korc *k, struct korc_meta *m);

/* Reads path under the ownership rules above, then korc_cache__parse(). -ENOENT: no file. */
int korc_cache__load(const char *path, const char *build_id, uint64_t stext, struct korc *k,
		     struct korc_meta *m);

#endif
