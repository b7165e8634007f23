/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * elfsym.h - function symbols of one ELF file, read with libelf.
 *
 * Reads .symtab and .dynsym (merged, deduplicated), keeps STT_FUNC and
 * STT_GNU_IFUNC symbols with a defined section, and answers "which function
 * contains this virtual address", respecting st_size: an address past a
 * symbol's end is not that symbol. Symbols of size 0 extend to the next symbol
 * (capped at the end of their section), as perf does.
 *
 * Also maps a file offset to the ELF virtual address through the PT_LOAD
 * program headers, which is what makes PIE executables, non-PIE executables
 * and shared libraries work the same way:
 *   vaddr = file_offset - p_offset + p_vaddr   (for the segment holding it)
 * where file_offset = ip - mapping.start + mapping.offset.
 *
 * The file is untrusted: reads are bounded pread()s (no mmap, so a file
 * truncated under us cannot SIGBUS the agent), every offset and size is
 * checked, and a corrupt file yields an error, not a crash.
 *
 * What is fatal and what degrades:
 *   - not a regular file, not ELF, or not ET_EXEC/ET_DYN (ET_REL, ET_CORE):
 *     ENOEXEC. Any class, byte order and machine libelf reads is accepted.
 *   - unreadable ELF header, program header table or section header table
 *     (truncated file, e_shoff/e_phoff past EOF, counts that cannot fit in
 *     the file): EINVAL.
 *   - a bad symbol table (sh_entsize 0 or wrong, size not a multiple of it,
 *     data past EOF, sh_link not a SHT_STRTAB, compressed, too large) is
 *     skipped; so is a bad symbol (st_name past the last NUL of the string
 *     table, section index out of range, value + size overflowing). Both are
 *     counted in elfsym__bad(); the other table may still provide symbols.
 *   - a file without symbols (stripped, no exported functions) is valid:
 *     elfsym__count() is 0, segments and build id still work.
 * Symbols: STT_FUNC and STT_GNU_IFUNC, not SHN_UNDEF (imports) nor SHN_ABS
 * nor other reserved indices (no section to bound them; not relocated with a
 * PIE), value not 0, non-empty name. Aliases at one address are merged,
 * preferring GLOBAL (and GNU_UNIQUE) > WEAK > LOCAL, then fewer leading
 * underscores, then the smaller name by strcmp; a size-0 preferred alias
 * borrows the size of another. When the symbol nearest below an address ends
 * before it, up to 16 earlier symbols are checked for one that encloses it
 * (functions with inner FUNC entry points).
 *
 * Compressed sections (SHF_COMPRESSED, zlib or zstd) are inflated here, at
 * most 64 MiB per section and 256 MiB per file, refused before allocating
 * when the header claims more (decompression bombs). A stripped file (no
 * .symtab) with MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF holding
 * the local function symbols, as Fedora ships) gets those symbols merged in.
 * The .gnu_debuglink name and CRC and the build id are kept for the caller
 * to find a separate debug file (see debuginfo.h), whose symbols it merges
 * with elfsym__merge().
 *
 * Go binaries: the pc-line table (.gopclntab) is kept (bounded, counted in
 * elfsym__bytes()) for source lines and inlined frames, and when the file
 * has no .symtab (built with -ldflags=-s) its functions are the symbols. A
 * file without section headers has its read-only segments searched for the
 * table's header (gopclntab__scan(): one pass, capped per file).
 *
 * Functions no symbol names: .eh_frame's FDEs (their start and range)
 * that no symbol covers are kept (at most 1M, from at most 64 MiB of the
 * section, within the file's time budget), so that elfsym__fde_start() can
 * name an unnamed address after the start of its function.
 *
 * Names are returned as stored; elfsym__lookup_demangled() demangles C++ and
 * Rust names the first time a symbol is asked for and caches the result.
 */
#ifndef BPFPROF_ELFSYM_H
#define BPFPROF_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "lang/gopclntab.h"

struct elfsym;

/*
 * One file's symbols are one item of the symbolizer's cache, with a cap of
 * their own: what is kept (symbols, names, the Go table, demangled names,
 * a debug file's symbols merged in) and the candidates read on the way, at
 * most ELFSYM_MAX_BYTES each; past it the file is refused (E2BIG), a debug
 * file is not merged, and names are not demangled any more. A name is kept
 * to ELFSYM_MAX_NAME bytes (cut there): names may overlap in the string
 * table, so without that 20,000 symbols naming the suffixes of one 64 KiB
 * string made a 4.7 MB file hold 1.1 GB of names. The largest here: a Go
 * binary (kubectl, 83,781 functions) 29 MiB, libLLVM-15's 35,568 symbols
 * 3.2 MiB.
 */
#define ELFSYM_MAX_BYTES (128u << 20)
#define ELFSYM_MAX_NAME	 4096

/*
 * The CPU time reading one file may take, its MiniDebugInfo and Go table
 * included (base/budget.h): a file of a million symbols takes about 0.9 s
 * on a slow VM. Past it the file is given up on (ETIMEDOUT), and so it is
 * when the process is stopping (ECANCELED, budget__stop()).
 */
#define ELFSYM_CPU_BUDGET_NS (2000ull * 1000 * 1000)

/*
 * Reads symbols from a libelf handle on a file of file_size bytes (the
 * handle is not ended: the process-and-file layer's mfile__elf() shares it
 * with the unwinder), or from an open fd (not closed, not kept). NULL with
 * errno: ENOEXEC not an ELF file or unsupported class/machine, EINVAL
 * corrupt, ENOMEM, E2BIG over ELFSYM_MAX_BYTES, ETIMEDOUT or ECANCELED over
 * its time budget.
 */
struct elfsym *elfsym__open_elf(Elf *elf, uint64_t file_size);
struct elfsym *elfsym__open_fd(int fd);
struct elfsym *elfsym__open(const char *path);
/* What errno from the above means, in words (strerror() but for the budget's two). */
const char *elfsym__strerror(int errnum);
/* The same from an ELF image in memory (copied; the caller keeps data). */
struct elfsym *elfsym__open_mem(const void *data, size_t len);
void elfsym__free(struct elfsym *es);

/*
 * The function containing vaddr, or NULL. *offset (if given) receives
 * vaddr - symbol start. The returned name lives as long as es.
 */
const char *elfsym__lookup(const struct elfsym *es, uint64_t vaddr, uint64_t *offset);

/* The same, demangled (C++, Rust) and cached; the name lives as long as es. */
const char *elfsym__lookup_demangled(struct elfsym *es, uint64_t vaddr, uint64_t *offset);

/*
 * Adds src's symbols to dst (src is consumed, even on error): at an address
 * both have, dst's symbol stays. For a separate debug file's .symtab merged
 * into the stripped binary's .dynsym. 0, -ENOMEM, or -E2BIG: together over
 * ELFSYM_MAX_BYTES (dst keeps its own).
 */
int elfsym__merge(struct elfsym *dst, struct elfsym *src);

/*
 * The function containing vaddr: [*start, *end), as elfsym__lookup() finds
 * it (a size-0 symbol ends at the next one). 0 or -ENOENT.
 */
int elfsym__range(const struct elfsym *es, uint64_t vaddr, uint64_t *start, uint64_t *end);

/*
 * The start of the function vaddr lies in, for an address no symbol names:
 * from the file's .eh_frame FDEs that no symbol covers (a stripped binary's
 * static functions), so every address of one unnamed function gets one name.
 * 0, or -ENOENT (no such FDE: no .eh_frame, or outside every FDE).
 */
int elfsym__fde_start(const struct elfsym *es, uint64_t vaddr, uint64_t *start);

/*
 * Virtual address -> file offset via PT_LOAD (the bytes the file holds for it,
 * not .bss); *avail (if given) receives how many bytes of the segment follow.
 * 0 or -ENOENT.
 */
int elfsym__vaddr_to_off(const struct elfsym *es, uint64_t vaddr, uint64_t *file_off,
			 uint64_t *avail);

/*
 * Source of vaddr in a Go binary (from its pc-line table, .gopclntab, or the
 * table found by its header when sections are gone): the functions inlined
 * there, innermost first, then the function itself, each with file and line.
 * Returns how many were written (0: not Go, or no function there).
 */
size_t elfsym__source(const struct elfsym *es, uint64_t vaddr, struct gosrc *out, size_t max);
/* The Go pc-line table, or NULL (lives as long as es). */
const struct gopclntab *elfsym__gopclntab(const struct elfsym *es);

/* File offset -> virtual address via PT_LOAD; 0 or -ENOENT if no segment holds it. */
int elfsym__off_to_vaddr(const struct elfsym *es, uint64_t file_off, uint64_t *vaddr);

size_t elfsym__count(const struct elfsym *es);
/*
 * Symbol i (0 <= i < elfsym__count(), in address order, aliases merged):
 * its name (as stored, living as long as es) and [*start, *end). 0 or -ENOENT.
 */
int elfsym__symbol(const struct elfsym *es, size_t i, const char **name, uint64_t *start,
		   uint64_t *end);
/* Symbol tables and symbols skipped as corrupt. */
size_t elfsym__bad(const struct elfsym *es);
/* GNU build id (raw bytes), or NULL when the file has none. */
const uint8_t *elfsym__build_id(const struct elfsym *es, size_t *len);
/* ELF type: ET_EXEC, ET_DYN, ... */
int elfsym__type(const struct elfsym *es);
/* Had a usable .symtab (own, or merged in): no separate debug file needed. */
bool elfsym__has_symtab(const struct elfsym *es);
/* Had a .gnu_debugdata section (MiniDebugInfo), usable or not. */
bool elfsym__has_debugdata(const struct elfsym *es);
/* The .gnu_debuglink file name (a plain name, checked) and its CRC32, or NULL. */
const char *elfsym__debuglink(const struct elfsym *es, uint32_t *crc);
/* Heap bytes held (symbols, names, demangled names), for cache budgets:
 * at most ELFSYM_MAX_BYTES; grows (demangled names) as lookups are made. */
size_t elfsym__bytes(const struct elfsym *es);
/* Names longer than ELFSYM_MAX_NAME, kept cut there. */
size_t elfsym__names_cut(const struct elfsym *es);

#endif
