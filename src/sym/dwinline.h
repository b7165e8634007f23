/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * dwinline.h - the functions inlined at a machine code address, and its
 * source file and line, from the DWARF of an ELF file (the binary built with
 * -g, or its separate debug file): .debug_info's DW_TAG_inlined_subroutine
 * scopes (DW_AT_call_file/DW_AT_call_line give the caller's line, abstract
 * origins the names), .debug_ranges/.debug_rnglists, DWARF 2 to 5,
 * compressed sections; read with libdw, lines with lineprog (srcline.h).
 *
 * Lazy: opening reads the debug sections (libdw holds them; their size is
 * known before and checked against a cap, and a callback makes room for them
 * first); the unit index (address ranges of every compile unit) is built at
 * the first lookup; a unit holding an address asked for is indexed then, by
 * one walk of its DIEs and one run of its line program (its functions and
 * inlined calls with their ranges, its line rows: at most
 * DWINLINE_MAX_UNIT_BYTES of such indexes per file, which start over past
 * it); a lookup is then binary searches. Answers are cached per address (the
 * cache starts over past DWINLINE_MAX_CACHE_BYTES). Units nobody asks about
 * are never walked.
 *
 * The file is untrusted: libdw bounds reads of the DIEs, lineprog the line
 * program; the DIE walk is iterative with a depth cap (DWINLINE_MAX_DEPTH)
 * and asks a budget between DIEs; a unit whose walk runs out of budget
 * UNIT_MAX_TRIES times, or whose index is over its cap, is not indexed (its
 * addresses get no frames). A corrupt unit gives no frames, never a crash.
 */
#ifndef BPFPROF_DWINLINE_H
#define BPFPROF_DWINLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "base/budget.h"

struct dwzalt_query;

/* Debug sections (decompressed) one file may make us hold. */
#define DWINLINE_MAX_BYTES (256u << 20)
/* Answers cached per file; past it the cache starts over. */
#define DWINLINE_MAX_CACHE_BYTES (8u << 20)
/* Unit address ranges indexed per file. */
#define DWINLINE_MAX_RANGES (1u << 20)
/* Indexes of units (their functions, inlined calls and line rows) held per
 * file; one unit may take half of it, past that it is not indexed. */
#define DWINLINE_MAX_UNIT_BYTES (64u << 20)
/* What one lookup may add to dwinline__bytes() at most: the unit index
 * (24 bytes a range), a unit's index (half the cap, the others cleared past
 * that half), an answer. */
#define DWINLINE_MAX_LOOKUP_BYTES                                                                  \
	((size_t)DWINLINE_MAX_RANGES * 24 + DWINLINE_MAX_UNIT_BYTES / 2 + (1u << 20))
/* Nesting of scopes walked (namespaces, functions, inlined calls, blocks). */
#define DWINLINE_MAX_DEPTH 64
/* Frames of one answer: inlined levels and the function. */
#define DWINLINE_MAX_FRAMES 32

struct dwinline;

struct dwinline_frame {
	const char *name;   /* demangled when mangled; NULL if the DIE has none */
	const char *file;   /* source file of the line, NULL if unknown */
	uint32_t line;	    /* 0 if unknown */
	uint32_t decl_line; /* the function's first line (DW_AT_decl_line), 0 if unknown */
};

/*
 * Reads the DWARF of an open ELF file (fd is not kept: it may be closed after
 * this returns). Before the sections are read, room(ctx, bytes) is called
 * with what they will take (room may be NULL). NULL with errno: ENOENT no
 * .debug_info, ENOEXEC not ELF, E2BIG debug sections over max_bytes, EINVAL
 * sections libdw cannot read safely, ENOMEM.
 */
struct dwinline *dwinline__open_fd(int fd, size_t max_bytes, void (*room)(void *ctx, size_t bytes),
				   void *ctx);
/*
 * The same, and the file's dwz file (.gnu_debugaltlink) found and read as
 * alt says (dwzalt.h; its sections count in max_bytes and room too, and in
 * dwinline__bytes(), for every file sharing it); alt NULL, or the dwz file
 * not found: an empty one, the inlined functions named only there have no
 * name. dwinline__open_fd() is this with alt NULL.
 */
struct dwinline *dwinline__open_fd_alt(int fd, size_t max_bytes,
				       void (*room)(void *ctx, size_t bytes), void *ctx,
				       const struct dwzalt_query *alt);
/*
 * What became of d's dwz file: 1 it names none (or alt was NULL), 0 read
 * (*path, if path is not NULL: where it was found, "" if fetched), else
 * dwzalt__get()'s -errno.
 */
int dwinline__alt(const struct dwinline *d, const char **path);
void dwinline__free(struct dwinline *d);
/* The bytes the debug sections take once read (decompressed); SIZE_MAX if unreadable. */
size_t dwinline__debug_bytes(Elf *elf, bool *has_info);
/* Memory held: the sections, the unit index, the cache. */
size_t dwinline__bytes(const struct dwinline *d);

/*
 * The frames at addr (a file address): (*out)[0] the innermost inlined
 * function, ..., (*out)[*n - 1] the function they were inlined into (*n is 1
 * when nothing was inlined there), each with the line it is at. *out lives
 * until the next call (the cache may start over). 0, -ENOENT (no unit or
 * function holds addr), -ETIMEDOUT or -ECANCELED (b ran out: try again
 * later; nothing was cached), -ENOMEM.
 */
int dwinline__frames(struct dwinline *d, uint64_t addr, struct budget *b,
		     const struct dwinline_frame **out, size_t *n);

#endif
