/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * annotation.h - one function's instructions with the samples that landed
 * on each, and the source line each belongs to: what "bpfprof annotate"
 * prints. Built from the function's code (elfcode), a disassembler, an
 * optional DWARF line table (srcline) and the sampled leaf addresses.
 *
 * Every sample at an address in [start, end) lands on the instruction that
 * contains the address (a sample mid-instruction, from code the disassembler
 * decoded differently than the CPU ran it, is not lost), so the
 * instructions' counts add up to the samples inside the function; samples
 * outside it are counted in `outside`.
 */
#ifndef BPFPROF_ANNOTATION_H
#define BPFPROF_ANNOTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/srcline.h"

struct elfcode;
struct disasm;

/* Functions larger than this are not disassembled (per-address counts only). */
#define ANNOTATION_MAX_BYTES (1u << 20)

struct ann_count {
	uint64_t addr, count;
};

struct ann_insn {
	uint64_t addr;
	uint32_t size;
	uint64_t count;
	const struct srcline_row *src; /* NULL without line info */
	char text[160];
};

struct annotation {
	uint64_t start, end; /* [start, end) */
	struct ann_insn *insns;
	size_t nr;
	uint64_t total;		  /* samples inside [start, end) */
	uint64_t outside;	  /* samples at addresses outside it */
	struct srcline_row *rows; /* the line table rows of [start, end), or NULL */
	size_t nr_rows;
};

/*
 * Builds a for the function [start, end) from counts[0..n) (any order,
 * repeated addresses summed). sl may be NULL (no source lines). 0, -ENOENT
 * (the code is not in the file), -EFBIG (over ANNOTATION_MAX_BYTES),
 * -ENOTSUP (no disassembler for the file's machine), -ENOMEM.
 */
int annotation__build(struct annotation *a, const struct elfcode *code, struct srcline *sl,
		      uint64_t start, uint64_t end, const struct ann_count *counts, size_t n);
/*
 * The same from the function's bytes (len of them, from start; code read
 * from a process: a Lisp function's), for an ELF machine (EM_X86_64...).
 */
int annotation__build_bytes(struct annotation *a, const uint8_t *bytes, size_t len, int machine,
			    bool is64, struct srcline *sl, uint64_t start, uint64_t end,
			    const struct ann_count *counts, size_t n);
void annotation__free(struct annotation *a);

#endif
