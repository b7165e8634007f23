/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * srcline.h - source file and line of machine code addresses, from the DWARF
 * line tables (.debug_line) of an ELF file, read with libdw: the binary
 * itself when built with -g, or its separate debug file (objcopy
 * --only-keep-debug, Debian's -dbgsym packages), whose addresses are the
 * binary's.
 *
 * Only the line tables of the compile units whose address ranges overlap the
 * range asked for are decoded, by lineprog (not libdw's dwarf_getsrclines(),
 * which keeps every row of a unit: ~100 bytes of memory per byte of a line
 * program), which hands out only the rows of the range. Rows of inlined
 * code carry the inlined function's file and line, as addr2line -i's
 * innermost line does.
 *
 * The file is untrusted: libdw bounds every read of the units' headers,
 * lineprog every read of the line programs; a file with no or corrupt line
 * tables gives no rows, never a crash. Per range: at most SRCLINE_MAX_ROWS
 * rows, SRCLINE_MAX_OPS line-program opcodes run (~1 s of CPU at ~7 ns
 * an opcode; what was decoded by then is returned: no real unit has a line
 * program of 64 MB), and SRCLINE_MAX_NAME_BYTES of file
 * paths kept per srcline (rows past it name "??").
 */
#ifndef BPFPROF_SRCLINE_H
#define BPFPROF_SRCLINE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

#include "sym/lineprog.h"

#define SRCLINE_MAX_ROWS       (1u << 20)
#define SRCLINE_MAX_OPS	       (1ull << 27)
#define SRCLINE_MAX_NAME_BYTES (16u << 20)

struct srcline;

struct srcline_row {
	uint64_t addr;	  /* first address of the row */
	const char *file; /* as the line table names it (often absolute); lives as long as sl */
	uint32_t line;	  /* 0: no line (compiler-generated code) */
};

/*
 * Reads the DWARF of an open ELF file (fd not closed; it must stay open
 * while sl is used). NULL with errno: ENOENT no DWARF, ENOEXEC not ELF,
 * EINVAL string sections libdw cannot read safely, ENOMEM.
 */
struct srcline *srcline__open_fd(int fd);
void srcline__free(struct srcline *sl);

/*
 * The line table rows with an address in [lo, hi), and the row below lo
 * that covers it, sorted by address (ties: the table's order;
 * end-of-sequence rows left out, and of rows at one address in one sequence
 * only the last, which is the one that covers it). *rows is malloc'd (free
 * it). 0, -ENOENT (no line table covers the range) or -ENOMEM.
 */
int srcline__rows(struct srcline *sl, uint64_t lo, uint64_t hi, struct srcline_row **rows,
		  size_t *nr);

/* The row that covers addr (the last row at or below it), or NULL. */
const struct srcline_row *srcline__find(const struct srcline_row *rows, size_t nr, uint64_t addr);

/*
 * For readers of DWARF through libdw (srcline, dwinline), after
 * dwarf_begin_elf(elf): whether every string section ends in NUL (libdw
 * reads their strings with strlen: a crafted file could make it read past
 * one), and where the line programs' sections are.
 */
bool srcline__strings_terminated(Elf *elf);
void srcline__sections(Elf *elf, struct lineprog_sections *sec);

/*
 * Where a string attribute may point: .debug_info, .debug_types, .debug_str,
 * .debug_line_str of the file. libdw
 * hands out a DW_FORM_string without looking for its NUL (dwarf_attr()
 * measures only the attributes before the one asked for), so a unit cut
 * after the string's first bytes would let a reader run past the section
 * (found by fuzz_annotation).
 */
#define SRCLINE_STR_RANGES 10
struct srcline_strs {
	struct {
		const char *p;
		size_t n;
	} r[SRCLINE_STR_RANGES];
	unsigned nr;
};
void srcline__strs_init(Elf *elf, struct srcline_strs *st);
/* Adds another file's sections (its dwz file's: dwzalt.h) to st, while ranges are left. */
void srcline__strs_add(Elf *elf, struct srcline_strs *st);
/* The attribute's string if it ends inside one of those sections, else NULL. */
const char *srcline__string(struct srcline_strs *st, Dwarf_Attribute *attr);
/*
 * Gives dw an empty dwz file, so that libdw never opens the one the file
 * names (a path a tenant chose, opened as root with a blocking open()).
 * false if the empty one could not be made (the caller refuses the file).
 */
bool srcline__no_dwz(Dwarf *dw);

#endif
