/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * lineprog.h - one unit's DWARF line-number program (.debug_line, DWARF 2
 * to 5), decoded as it is read: the state machine runs over the opcodes
 * and only the rows of the address range asked for are handed out, so the
 * memory it takes is its file table, not its rows (libdw's
 * dwarf_getsrclines() keeps every row of the unit: ~100 bytes per byte of a
 * crafted program).
 *
 * The bytes are untrusted (a tenant's binary): every read is bounds-checked
 * against the unit, every string against its section (and at most
 * LINEPROG_MAX_NAME bytes), the file and directory tables are capped, and
 * the opcodes run are counted against a budget the caller gives. A header
 * it cannot read gives -EINVAL; a program cut short ends where its bytes do.
 */
#ifndef BPFPROF_LINEPROG_H
#define BPFPROF_LINEPROG_H

#include <stddef.h>
#include <stdint.h>

/* Entries of a unit's file table, and of its directory table, that are kept. */
#define LINEPROG_MAX_FILES (1u << 16)
/* Longest file or directory name read (a longer one is no name). */
#define LINEPROG_MAX_NAME 4096

/* The sections a line program reads; any but .debug_line may be absent (NULL, 0). */
struct lineprog_sections {
	const uint8_t *line;
	size_t line_size;
	const uint8_t *line_str; /* .debug_line_str (DWARF 5 DW_FORM_line_strp) */
	size_t line_str_size;
	const uint8_t *str; /* .debug_str (DW_FORM_strp) */
	size_t str_size;
};

/* A row handed out: the file is an index into the unit's table (lineprog__file). */
struct lineprog_row {
	uint64_t addr;
	uint32_t file;
	uint32_t line; /* 0: no line */
};

struct lineprog;

/*
 * Reads the header of the unit at offset off of .debug_line. comp_dir (the
 * unit's DW_AT_comp_dir, may be NULL) is copied. 0 and *out, -EINVAL (not a
 * unit this can read), -ENOMEM.
 */
int lineprog__open(const struct lineprog_sections *s, uint64_t off, const char *comp_dir,
		   struct lineprog **out);
void lineprog__free(struct lineprog *lp);

/*
 * Runs the program and calls emit for its rows with an address in [lo, hi),
 * and for the row below lo that covers lo; of rows at one address in one
 * sequence only the last is handed out (the earlier ones cover no bytes).
 * End-of-sequence rows are not handed out. *budget is the opcodes that may
 * still run; it is decreased, and decoding stops when it runs out. 0, the
 * first nonzero value emit returns, or -ETIME when the budget ran out.
 */
int lineprog__run(struct lineprog *lp, uint64_t lo, uint64_t hi, uint64_t *budget,
		  int (*emit)(void *ctx, const struct lineprog_row *row), void *ctx);

/*
 * The path of file index `file` of the table: the name if absolute, else
 * joined to its directory (and a relative directory to comp_dir), into buf.
 * NULL if the index names no file, or the path does not fit.
 */
const char *lineprog__file(const struct lineprog *lp, uint32_t file, char *buf, size_t size);

/* How many files the table has (entries beyond LINEPROG_MAX_FILES not counted). */
size_t lineprog__nr_files(const struct lineprog *lp);

#endif
