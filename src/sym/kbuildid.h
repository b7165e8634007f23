/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * kbuildid.h - the running kernel's GNU build id as lower-case hex, for the
 * kernel mapping of pprof output (/sys/kernel/notes). Build ids of user
 * files come from the symbolizer, which reads them with the symbols.
 */
#ifndef BPFPROF_SYM_KBUILDID_H
#define BPFPROF_SYM_KBUILDID_H

#include <stddef.h>
#include <stdint.h>

#define BUILDID_HEX_MAX (2 * 64 + 1) /* build ids are at most 64 bytes */

/* Finds the GNU build id in a buffer of 4-byte aligned ELF notes (native
 * byte order; parsed by sym/elfnote.c). 0, or -ENOENT when there is none
 * or it is malformed. */
int buildid__from_notes(const uint8_t *buf, size_t len, char hex[BUILDID_HEX_MAX]);

/* The running kernel's build id (/sys/kernel/notes). 0 or -errno. */
int buildid__kernel(char hex[BUILDID_HEX_MAX]);

#endif
