/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cfienc.h - the pointer encodings (DW_EH_PE_*) an .eh_frame FDE's initial
 * location and range use, per its CIE's 'R' augmentation: what libdw's
 * dwarf_next_cfi() leaves encoded. Shared by the unwind tables (unwind/
 * table.c: rows per FDE) and the symbols (sym/elfsym.c: the function an
 * unnamed address lies in), which walk a file's FDEs with libdw.
 */
#ifndef BPFPROF_PROC_CFIENC_H
#define BPFPROF_PROC_CFIENC_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>

/*
 * Reads a value with format (enc & 0x0f) at *pp, at most up to end, and
 * advances *pp; applies pc-relative addressing if asked (field_addr = vaddr
 * of the field). Only the encodings an FDE's initial location uses in
 * practice are accepted (absolute or pc-relative, not indirect): 0 or -EINVAL.
 */
int cfienc__read(uint8_t enc, const uint8_t **pp, const uint8_t *end, bool apply,
		 uint64_t field_addr, uint64_t *out);

/* The FDE pointer encoding of a CIE, from its augmentation ("zR", "zPLR", ...); false: unknown. */
bool cfienc__cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc);

#endif
