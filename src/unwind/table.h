/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * table.h - compact unwind tables from an ELF file's CFI (.eh_frame, and
 * .debug_frame where present), built with libdw's CFI interpreter.
 *
 * A table is a sorted array of rows (struct bp_urow, 8 bytes): from each
 * row's pc to the next one's, how to find the CFA (rsp or rbp plus an
 * offset, a PLT stub, a signal frame, gcc's realigned-stack expression, or
 * "outermost frame") and where the caller's rbp is saved. Pcs are offsets
 * from `base` (the page-aligned start of the lowest executable segment),
 * so a table serves every process that maps the file, wherever it is loaded.
 * A page index gives, per 4 KiB of text, the rows covering it.
 *
 * How rows are made: FDEs are enumerated with dwarf_next_cfi() (decoding
 * only the FDE's initial location and range, per its CIE's pointer
 * encoding), then each FDE's range is walked with dwarf_cfi_addrframe() +
 * dwarf_frame_info(), jumping from one rule change to the next; the CFA
 * and the rules for rbp (DWARF register 6) and the return address (16) are
 * classified into the row kinds of unwind_abi.h. Go functions (Go emits
 * no CFI) get rows from their pcsp tables in .gopclntab instead: CFA = rsp
 * + delta + 8, the caller's rbp at CFA - 16 once the function has a frame,
 * and an outermost row for the functions that start or switch stacks
 * (goexit, mstart, systemstack, ...); .eh_frame (cgo's C code) wins where
 * both cover a pc. Ranges that no FDE covers get a UROW_CFA_NONE row (the
 * walker uses frame pointers there). Equal neighbours are merged.
 *
 * The file is untrusted: libelf reads it with pread (ELF_C_READ), FDEs
 * outside executable PT_LOAD segments are dropped (linkers leave FDEs of
 * discarded sections at address 0), sizes are capped (UTABLE_MAX_ROWS,
 * rows per FDE, text span), the build's CPU time is budgeted, and anything
 * libdw rejects is counted and skipped. x86-64 ELF64 only: other machines get -ENOTSUP (frame
 * pointers).
 *
 * The table owns its memory; nothing refers to the file or libelf after
 * utable__build_*() returns.
 */
#ifndef BPFPROF_UNWIND_TABLE_H
#define BPFPROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "proc/elffile.h"
#include "unwind_abi.h"

#define UTABLE_MAX_ROWS	    (16u << 20) /* rows per table */
#define UTABLE_MAX_FDE_ROWS 4096	/* rows per FDE; the rest is UNSUPPORTED */
/* Bytes of text a table may span: its page index must fit one pool chunk (512 MiB). */
#define UTABLE_MAX_SPAN	    ((uint64_t)UNWIND_CHUNK_SLOTS << UNWIND_PAGE_SHIFT)
#define UTABLE_BUILD_ID_MAX BUILD_ID_MAX

struct utable_seg {
	uint64_t vaddr, memsz, offset, filesz;
	bool exec;
};

struct utable_page {
	uint32_t first; /* index of the row covering the page start */
	uint32_t count; /* rows covering some byte of the page */
};

struct utable_stats {
	uint32_t fdes;	       /* FDEs used from .eh_frame */
	uint32_t fdes_debug;   /* FDEs used from .debug_frame */
	uint32_t fdes_go;      /* Go functions, rows from their pcsp tables (.gopclntab) */
	uint32_t fdes_skipped; /* outside executable segments, overlapping, bad encoding */
	uint32_t fdes_bad;     /* entries libdw rejected */
	uint32_t rows_unsupported;
	uint32_t rows_plt, rows_signal, rows_end, rows_gap;
	uint32_t max_cfa; /* largest rsp/rbp CFA offset seen */
	uint64_t build_ns;
};

struct utable {
	uint64_t base;	      /* vaddr of pc offset 0; page aligned */
	uint64_t end;	      /* vaddr just past the last covered byte */
	struct bp_urow *rows; /* strictly increasing pc */
	size_t nr_rows;
	struct utable_page *pages; /* (end - base) / page size, rounded up */
	size_t nr_pages;
	struct utable_seg *segs; /* PT_LOAD segments, for load biases */
	size_t nr_segs;
	uint8_t build_id[UTABLE_BUILD_ID_MAX];
	size_t build_id_len;
	struct utable_stats st;
};

/*
 * The CPU time one table's build may take (base/budget.h), as for a file's
 * symbols: the largest tables here (a 500,000-row Go binary, a C++ library
 * of 40,000 FDEs) take 0.1-0.2 s. libdw runs an FDE's instructions from its
 * start for every row, so a crafted .eh_frame (long FDEs of many rows) costs
 * the square of its FDEs' length: 300 FDEs of 28 KiB took 76 s.
 */
#define UTABLE_CPU_BUDGET_NS (2000ull * 1000 * 1000)

/*
 * Builds the table of an ELF file: from a libelf handle (elffile.h; the
 * process-and-file layer's mfile__elf()), an open file (fd not closed, not
 * kept), or an ELF image in memory. NULL with errno: ENOEXEC not ELF or not
 * ET_EXEC/ET_DYN, ENOTSUP not x86-64 ELF64, ENODATA no usable CFI, EINVAL
 * corrupt beyond use, E2BIG over a size cap, ENOMEM, ETIMEDOUT over its time
 * budget (UTABLE_CPU_BUDGET_NS), ECANCELED the process is stopping
 * (budget__stop(): not the file's fault).
 */
struct utable *utable__build_elf(Elf *elf);
struct utable *utable__build_fd(int fd);
struct utable *utable__build_mem(const void *image, size_t size);
void utable__free(struct utable *t);

/*
 * The row for vaddr, found as the BPF walker finds it: page index, then a
 * binary search among that page's rows. NULL if vaddr is outside the table
 * or on a page without rows.
 */
const struct bp_urow *utable__lookup(const struct utable *t, uint64_t vaddr);

/*
 * Load bias for a mapping of this file: the file offset `offset` mapped at
 * `start`. On success *bias is such that vaddr = address - bias for every
 * address of the mapping (the walker's bp_umap.bias is that plus base).
 * -ENOENT if no PT_LOAD holds that offset.
 */
int utable__bias(const struct utable *t, uint64_t start, uint64_t offset, uint64_t *bias);

#endif
