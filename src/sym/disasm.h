/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * disasm.h - machine code to text, one instruction at a time, with capstone
 * (Debian's libcapstone), for "bpfprof annotate".
 *
 * x86 is printed in AT&T syntax, as objdump and perf annotate print it.
 * A direct jump or call whose target lies in [func_start, func_end) gets the
 * target's offset in the function appended ("jne 0x1146 <+0x16>"), so loops
 * read as loops. The bytes are untrusted (a process's file): capstone decodes
 * any byte string; bytes that do not decode come back as one ".byte 0xNN".
 */
#ifndef BPFPROF_DISASM_H
#define BPFPROF_DISASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct disasm;

/*
 * A disassembler for an ELF machine (EM_X86_64, EM_386, EM_AARCH64); is64 is
 * the ELF class for machines with both. NULL with errno ENOTSUP for another
 * machine, ENOMEM.
 */
struct disasm *disasm__new(int elf_machine, bool is64);
void disasm__free(struct disasm *d);

/*
 * Decodes the instruction at code[0..len), located at address addr, into buf
 * ("mnemonic operands"). Returns its length in bytes (> 0); a byte that does
 * not start an instruction is returned as ".byte 0xNN" of length 1. 0 only
 * when len is 0. func_start/func_end bound the function for branch targets
 * (0, 0: no annotation).
 */
size_t disasm__one(struct disasm *d, const uint8_t *code, size_t len, uint64_t addr,
		   uint64_t func_start, uint64_t func_end, char *buf, size_t size);

/*
 * capstone is loaded on first use (base/dynlib.h); disasm__new() fails with
 * ELIBACC if it cannot be. Why, for the user; NULL if it is loaded.
 */
const char *disasm__unavailable(void);

#endif
