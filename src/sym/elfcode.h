/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * elfcode.h - the bytes an ELF file holds for a virtual address: through its
 * PT_LOAD program headers, so the same code reads a function from an
 * executable, a shared object (ELF virtual addresses, as symbols give them)
 * or the running kernel's text from /proc/kcore (an ET_CORE file whose
 * segments are placed at kernel addresses).
 *
 * The file is untrusted: headers are read by libelf without mmap, every
 * segment is checked (offset + size within the file's size for regular
 * files, no overflow), reads are bounded pread()s, and a read never crosses
 * out of the segment that holds its first byte.
 */
#ifndef BPFPROF_ELFCODE_H
#define BPFPROF_ELFCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elfcode;

/* Reads the program headers of an open ELF file (fd not closed, kept for reads:
 * keep it open). NULL with errno: ENOEXEC not ELF, EINVAL corrupt, ENOMEM. */
struct elfcode *elfcode__open_fd(int fd);
void elfcode__free(struct elfcode *ec);

/*
 * Copies up to len bytes at vaddr into buf. Returns the number copied (less
 * than len when the segment, or the file, ends first), or -ENOENT when no
 * segment holds vaddr (a .bss address, a hole in /proc/kcore), -EIO.
 */
ssize_t elfcode__read(const struct elfcode *ec, uint64_t vaddr, void *buf, size_t len);

/* The first writable PT_LOAD segment with bytes in the file (Go's build
 * information opens it): its vaddr and file size. 0 or -ENOENT. */
int elfcode__first_writable(const struct elfcode *ec, uint64_t *vaddr, uint64_t *filesz);

/* The zero-filled part (.bss, .noptrbss) of the first writable PT_LOAD
 * segment that has one: [*lo, *hi). 0 or -ENOENT. */
int elfcode__first_zero_fill(const struct elfcode *ec, uint64_t *lo, uint64_t *hi);

/* e_machine and whether the file is ELFCLASS64. */
int elfcode__machine(const struct elfcode *ec, bool *is64);

#endif
