/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * elfnote.h - parsers for the small ELF blobs that identify debug info: the
 * NT_GNU_BUILD_ID note and the .gnu_debuglink section. Pure functions over
 * bytes, so they are fuzzed on their own (tests/fuzz/fuzz_elfnote.c).
 *
 * Both blobs come from files the profiled process (or its container image)
 * controls: every length is checked before use, and a debuglink name that
 * could step outside the directory it is looked up in ("/" or "..", control
 * characters, longer than NAME_MAX) is rejected rather than trusted.
 */
#ifndef BPFPROF_ELFNOTE_H
#define BPFPROF_ELFNOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUILD_ID_MAX	   64
#define DEBUGLINK_NAME_MAX 255 /* NAME_MAX: it is one file name */

/*
 * Finds NT_GNU_BUILD_ID ("GNU", type 3) in a block of notes whose headers are
 * already in host byte order, aligned to `align` (4 or 8). Copies 1..64 bytes
 * into id and returns their count, or 0 if there is none (or only a malformed
 * one: a size of 0 or over 64, a note running past the block).
 */
size_t elfnote__build_id(const void *notes, size_t len, size_t align, uint8_t id[BUILD_ID_MAX]);

/*
 * Parses .gnu_debuglink contents: a NUL-terminated file name, zero padding to
 * a multiple of 4, then the CRC32 of the debug file in the ELF file's byte
 * order. 0 and fills name (NUL-terminated) and crc, or -EINVAL.
 */
int elfnote__debuglink(const void *data, size_t len, bool big_endian,
		       char name[DEBUGLINK_NAME_MAX + 1], uint32_t *crc);

/*
 * Parses .gnu_debugaltlink contents (dwz's link to the file holding the DWARF
 * several files share): a NUL-terminated path (absolute, or relative to the
 * directory of the file holding the link), then the build id of that file,
 * to the end of the section. 0 and fills name (NUL-terminated), id and
 * *id_len (1..BUILD_ID_MAX), or -EINVAL: no NUL, an empty name, one of
 * ALTLINK_NAME_MAX bytes or more, control characters, no build id or one
 * over BUILD_ID_MAX bytes.
 */
#define ALTLINK_NAME_MAX 4096 /* PATH_MAX */
int elfnote__altlink(const void *data, size_t len, char name[ALTLINK_NAME_MAX],
		     uint8_t id[BUILD_ID_MAX], size_t *id_len);

/* "ab/cdef..." (lower-case hex, no suffix) for a build id; "" if len is 0. */
void elfnote__build_id_hex(const uint8_t *id, size_t len, char *buf, size_t size);

#endif
