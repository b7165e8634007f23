/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * elffile.h - the one way bpfprof hands an ELF file to libelf, and the one
 * reader of its GNU build id. Both the symbolizer (symbols) and the unwinder
 * (CFI tables) read files through here, usually the same mfile's handle.
 *
 * Files are untrusted and may be truncated under us: libelf reads them with
 * pread (ELF_C_READ), never mmap (a truncated mapping would SIGBUS the
 * agent), and only regular files are accepted (a FIFO or a device would
 * block or never end). Memory images get a private copy, since libelf may
 * convert data in place.
 */
#ifndef BPFPROF_PROC_ELFFILE_H
#define BPFPROF_PROC_ELFFILE_H

#include <stddef.h>
#include <stdint.h>

#include <libelf.h>
#include <stdbool.h>

#include "proc/elfnote.h"

/* Note bytes read when looking for the build id, in all. */
#define ELFFILE_MAX_NOTES (1u << 20)

/*
 * A libelf handle on an open regular file (fd is not closed, and must stay
 * open until elffile__end). NULL with errno: ENOSYS libelf unusable, ENOEXEC
 * not a regular file or not ELF, EINVAL libelf refused it.
 */
Elf *elffile__begin(int fd);
/* A handle on a private copy of image[0..size); *copy is freed by elffile__end. */
Elf *elffile__begin_mem(const void *image, size_t size, void **copy);
/*
 * A handle on image[0..size) the caller owns, may be changed, and keeps
 * until elffile__end (e.g. a section it decompressed itself).
 */
Elf *elffile__adopt_mem(void *image, size_t size);
/* Ends the handle and frees the copy (either may be NULL). */
void elffile__end(Elf *elf, void *copy);

/*
 * The NT_GNU_BUILD_ID of elf: from SHT_NOTE sections, else from PT_NOTE
 * segments (present even in files without sections), at most
 * ELFFILE_MAX_NOTES bytes of notes read. Returns its length (1..64), 0 if
 * there is none.
 */
size_t elffile__build_id(Elf *elf, uint8_t id[BUILD_ID_MAX]);

/*
 * The load bias of a mapping of elf whose first byte is file offset
 * `offset` mapped at address `start`: *bias is such that address = vaddr +
 * bias, from the PT_LOAD segment whose file bytes hold that offset (the
 * first 4096 program headers looked at). 0, -EINVAL (no program headers) or
 * -ENOENT (no segment holds the offset).
 */
int elffile__load_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias);

struct budget;

/* elffile__find_syms's flags. */
enum {
	ELFFILE_SYMTAB = 1u << 0,  /* .symtab too, for names .dynsym does not have */
	ELFFILE_OBJECTS = 1u << 1, /* only STT_OBJECT symbols (variables) */
};

/*
 * The defined symbols (a section, a non-zero value) named names[0..n) in
 * elf's .dynsym, then, with ELFFILE_SYMTAB, .symtab for the names still
 * missing: found[k], value[k] (file vaddr) and size[k] (size may be NULL);
 * the first definition met wins. The file is untrusted: at most max_syms
 * symbols are looked at in all (a table that would pass that is skipped
 * whole), compressed tables are skipped, libelf bounds the strings; b (or
 * NULL) is asked between symbols. Returns how many names were found, or
 * -ETIMEDOUT/-ECANCELED when b ran out (found[] then holds what was).
 */
int elffile__find_syms(Elf *elf, const char *const *names, int n, unsigned flags, size_t max_syms,
		       struct budget *b, bool *found, uint64_t *value, uint64_t *size);

#endif
