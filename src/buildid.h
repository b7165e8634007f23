/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * buildid.h - GNU build ids (NT_GNU_BUILD_ID notes) as lower-case hex, for
 * the mappings of pprof output: of an ELF file (from its PT_NOTE segments
 * only - no symbols, no sections - so it is cheap to ask at exit), and of the
 * running kernel (/sys/kernel/notes).
 *
 * Inputs are untrusted: notes are parsed with every size checked against
 * what is left, files are read with bounded pread()s.
 */
#ifndef BPFPROF_BUILDID_H
#define BPFPROF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define BUILDID_HEX_MAX (2 * 64 + 1) /* build ids are at most 64 bytes */

/* Finds the GNU build id in a buffer of ELF notes (native byte order).
 * 0, or -ENOENT when there is none, -EINVAL for a malformed note. */
int buildid__from_notes(const uint8_t *buf, size_t len, char hex[BUILDID_HEX_MAX]);

/* The build id of an ELF file (native byte order, 32 or 64 bit). 0 or -errno
 * (-ENOENT: the file has none, -ENOEXEC: not ELF). */
int buildid__read_fd(int fd, char hex[BUILDID_HEX_MAX]);
int buildid__read_path(const char *path, char hex[BUILDID_HEX_MAX]);

/* The running kernel's build id (/sys/kernel/notes). 0 or -errno. */
int buildid__kernel(char hex[BUILDID_HEX_MAX]);

#endif
