/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * elfobj.h - a data object's address by its name in a file's .symtab
 * (STT_OBJECT), such as a Go binary's runtime.MemProfileRate: what a
 * runtime variable the profiler reads from the process is at.
 *
 * The file is untrusted: the table is read through libelf (bounds-checked
 * symbol reads), at most ELFOBJ_MAX_TABLE bytes of it, and only an object of
 * the size the caller expects counts.
 */
#ifndef BPFPROF_ELFOBJ_H
#define BPFPROF_ELFOBJ_H

#include <stdint.h>

#include <libelf.h>

#define ELFOBJ_MAX_TABLE (64u << 20) /* bytes of .symtab read */

/*
 * The ELF virtual address of the STT_OBJECT symbol named name, of size bytes,
 * defined in a section. 0 and *vaddr, -ENOENT no such symbol (or no .symtab,
 * or a table over the cap), -EINVAL a corrupt table.
 */
int elfobj__find(Elf *elf, const char *name, uint64_t size, uint64_t *vaddr);

#endif
