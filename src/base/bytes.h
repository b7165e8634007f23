// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * bytes.h - integers read from bytes in a stated byte order: the one reader of
 * fixed-size fields for ELF, .eh_frame, Go's tables and CPython's structures.
 * p needs no alignment; the caller has checked that n bytes are there.
 */
#ifndef BPFPROF_BASE_BYTES_H
#define BPFPROF_BASE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n (at most 8) bytes at p, least significant first. */
static inline uint64_t rd_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

/* n (at most 8) bytes at p, most significant first. */
static inline uint64_t rd_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t rd32(const uint8_t *p, bool big)
{
	return (uint32_t)(big ? rd_be(p, 4) : rd_le(p, 4));
}

static inline uint64_t rd64(const uint8_t *p, bool big)
{
	return big ? rd_be(p, 8) : rd_le(p, 8);
}

#endif
