/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * dwzalt.h - the dwz file of an ELF file's DWARF, opened the way bpfprof
 * opens every file a tenant names, and shared by the files that name it.
 *
 * dwz moves the DWARF several files share (inlined functions' abstract
 * instances, their names, types) into one file and leaves in each a
 * .gnu_debugaltlink naming it: a path (absolute, or relative to the
 * directory of the file holding the link, as gdb reads it) and its build id.
 * Debian's -dbgsym packages are made so (/usr/lib/debug/.dwz/TRIPLET/PKG.debug).
 * libdw would open that path itself, as root, in the agent's mount
 * namespace, with a blocking open(): srcline__no_dwz() stops it; this opens
 * the file instead with safeopen (inside the root the holding file was found
 * in, readable by the query's readers, a regular file on a mount that cannot
 * block, not over DEBUGINFO_MAX_FILE bytes nor its debug sections over the
 * caller's cap), then looks for it by build id (DEBUG_DIR/.build-id/xx/yyy.debug
 * in each root, then from a fetch callback: debuginfod), and accepts a file
 * only if its NT_GNU_BUILD_ID is the one the link names.
 *
 * Shared: a file is read once per (device, inode, size, mtime, ctime, build
 * id) and held while a Dwarf uses it (refcounted; the last dwzalt__put frees
 * it), with a descriptor of it kept open: the inode cannot be freed and its
 * number given to another (a tenant's) file that would then be served this
 * one's DWARF. At most DWZALT_MAX_HELD files (descriptors) are held; past
 * that a new one is not read (-EMFILE). Its DWARF is given an empty dwz file
 * of its own (a crafted dwz file naming another is not followed).
 */
#ifndef BPFPROF_DWZALT_H
#define BPFPROF_DWZALT_H

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

#include "proc/safeopen.h"
#include "sym/srcline.h"

struct dwzalt;

/* dwz files held at once (each with an open descriptor). */
#define DWZALT_MAX_HELD 256
/*
 * Refused files remembered (by device, inode, size, mtime, ctime and the
 * build id asked for): one is not read again in the run while it is the same.
 */
#define DWZALT_MAX_REFUSED 256

struct dwzalt_query {
	const struct safe_root *roots[2]; /* looked in, in order; NULL or fd -1: skipped */
	const char
		*path; /* the file holding the link, as roots[link_root] sees it; NULL: unknown */
	int link_root; /* where path is (relative and absolute links resolve there); -1 none */
	const char *debug_dir; /* "/usr/lib/debug" unless testing */
	/* Who must be able to read the dwz file (none: anyone, for tests and tools). */
	const struct safe_cred *const *readers;
	size_t nr_readers;
	/* An fd of the file of that build id from elsewhere (debuginfod's cache), or -1. */
	int (*fetch)(void *ctx, const uint8_t *id, size_t len);
	void *fetch_ctx;
};

/*
 * The dwz file elf's .gnu_debugaltlink names, found as above: 0 and *out (a
 * reference: dwzalt__put it); 1 if elf has no link (nothing is missing);
 * else -errno, the most telling of the candidates': -ESTALE a file of another
 * build id, -EFBIG over the caps, -EINVAL the link unreadable or a candidate
 * not a regular file, -ENOEXEC not ELF or DWARF libdw reads safely, -EACCES
 * a reader could not read it, -ENOENT none found. Before a file's sections
 * are read (and when a held one is shared), room(ctx, bytes) is called with
 * what it holds.
 */
int dwzalt__get(Elf *elf, const struct dwzalt_query *q, size_t max_bytes,
		void (*room)(void *ctx, size_t bytes), void *ctx, struct dwzalt **out);
void dwzalt__put(struct dwzalt *a);

/* Its DWARF, for dwarf_setalt(); lives until the last dwzalt__put. */
Dwarf *dwzalt__dwarf(const struct dwzalt *a);
/* The bytes of debug sections it holds. */
size_t dwzalt__bytes(const struct dwzalt *a);
/* Adds where its string attributes may point to st (srcline__string()). */
void dwzalt__strs(const struct dwzalt *a, struct srcline_strs *st);
/* Its path as found ("" from fetch). */
const char *dwzalt__path(const struct dwzalt *a);
/* Files held now (for tests: 0 once every reference is put). */
size_t dwzalt__held(void);
/* Candidate files read so far (their ELF begun), held or refused (for tests). */
size_t dwzalt__reads(void);

#endif
