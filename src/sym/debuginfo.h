/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * debuginfo.h - finding the separate debug file of a stripped binary, the
 * way gdb and perf do, and as Debian's -dbgsym packages (and Fedora's
 * -debuginfo ones) install them:
 *
 *   1. by build id: DEBUG_DIR/.build-id/ab/cdef....debug, accepted only if
 *      its own build id is the binary's;
 *   2. by .gnu_debuglink: DIR/NAME, DIR/.debug/NAME, DEBUG_DIR/DIR/NAME,
 *      where DIR is the binary's directory, accepted only if the file's CRC32
 *      is the one in the link (and its build id, if both have one, matches).
 *
 * DEBUG_DIR is /usr/lib/debug. For a process in a container, each step looks
 * in the container's root first (its packages match its binaries), then in
 * the host's DEBUG_DIR (a debug file matched by build id or CRC is right
 * wherever it lies). MiniDebugInfo (.gnu_debugdata) is read by elfsym itself.
 *
 * Debug files are opened with safeopen (symlinks may be followed, but only
 * inside the root they are looked up in: Fedora's .build-id entries are
 * relative links), must be regular files, and at most DEBUGINFO_MAX_FILE
 * bytes to be CRC-checked. The build id and the link are the binary's own
 * bytes, so what they name is read only if the query's readers (the
 * binary's owner; for annotate, its process too) could read it themselves
 * (safeopen__in_root_as): a tenant's binary cannot have a root-only file
 * read as its debug file. Only their symbol tables are read here; a caller
 * that wants their DWARF (annotate's source lines) asks for the open fd.
 */
#ifndef BPFPROF_DEBUGINFO_H
#define BPFPROF_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "proc/elfnote.h"
#include "proc/safeopen.h"

struct elfsym;

#define DEBUGINFO_MAX_FILE (1ull << 30)

struct debuginfo_query {
	const struct elfsym *bin;  /* the stripped binary */
	const char *path;	   /* its path as the process sees it */
	uint64_t dev, ino;	   /* the binary itself: never its own debug file */
	struct safe_root roots[2]; /* container root, then host root; fd -1 to skip */
	const char *debug_dir;	   /* "/usr/lib/debug" unless testing */
	/* Who must be able to read the debug file (none: anyone, for tests and tools). */
	const struct safe_cred *const *readers;
	size_t nr_readers;
	int *fd_out; /* if set: the debug file's fd, kept open for the
		      * caller to read its DWARF and close; -1 if none */
	/* If set: the index in roots of the one it was found in, and its path
	 * there (PATH_MAX bytes): where its dwz file's link is resolved. */
	int *root_out;
	char *path_out;
};

/*
 * Symbols of the matching debug file, or NULL (errno ENOENT: none found).
 * found (if not NULL) receives "root N: path" of the file used.
 */
struct elfsym *debuginfo__find(const struct debuginfo_query *q, char *found, size_t found_size);

/*
 * Symbols of the debug file open at fd (not closed) if it is one of bin's
 * build id, else NULL: for a file fetched by build id (debuginfod.h), which
 * must be that build as a local one must.
 */
struct elfsym *debuginfo__from_fd(const struct elfsym *bin, int fd);

/*
 * Whether a mapped file wants a debug file from a server: the build id
 * (written to id, its length returned) of a file without a .symtab, or 0.
 * Cheap (section headers and the note): asked when a file is first seen.
 */
size_t debuginfo__fetchable(Elf *elf, uint8_t id[BUILD_ID_MAX]);
/* Whether debug_dir/.build-id/ has a file for id (no file opened or read). */
bool debuginfo__local(const char *debug_dir, const uint8_t *id, size_t len);

/* CRC32 (the .gnu_debuglink one, zlib's) of a whole open file of at most max bytes. */
int debuginfo__crc32(int fd, uint64_t max, uint32_t *crc);

#endif
