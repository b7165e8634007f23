// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_lineprog.c - libFuzzer target for the DWARF line-program decoder
 * (sym/lineprog.h) on its own, without an ELF around it: the input is
 *
 *   lo (8 bytes, little-endian) | n (2 bytes) | n bytes of .debug_line | .debug_line_str
 *
 * and the unit at offset 0 is decoded over the whole address space and over
 * [lo, lo + 0x100), with a small opcode budget. Rows handed out must be in
 * the range (but for the one below lo that covers it), and every file index
 * a row names must give a path or NULL, never a read out of bounds.
 *
 * Seeds in corpus/lineprog/: the .debug_line and .debug_line_str of two
 * annotation seeds (DWARF 5 from gcc and from clang), in this layout, and a
 * hand-made 64-bit DWARF 4 unit of three sequences with define_file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/lineprog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct check {
	struct lineprog *lp;
	uint64_t lo, hi;
	size_t below;
};

static int check_row(void *ctx, const struct lineprog_row *r)
{
	struct check *c = ctx;
	char buf[256];
	const char *p;

	if (r->addr >= c->hi || (r->addr < c->lo && c->below++ > 1u << 20))
		abort();
	p = lineprog__file(c->lp, r->file, buf, sizeof(buf));
	if (p && strlen(p) >= sizeof(buf))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lineprog_sections s = { 0 };
	struct lineprog *lp;
	uint64_t lo = 0, budget;
	size_t n;

	if (size < 10)
		return 0;
	for (int i = 0; i < 8; i++)
		lo |= (uint64_t)data[i] << (8 * i);
	n = data[8] | (size_t)data[9] << 8;
	data += 10;
	size -= 10;
	if (n > size)
		n = size;
	/* Copies of their own size, so ASan sees a read past either section. */
	s.line = n ? malloc(n) : NULL;
	s.line_size = n;
	s.line_str = size - n ? malloc(size - n) : NULL;
	s.line_str_size = size - n;
	if ((n && !s.line) || (size - n && !s.line_str))
		goto out;
	memcpy((void *)s.line, data, n);
	memcpy((void *)s.line_str, data + n, size - n);
	if (lineprog__open(&s, 0, (size & 1) ? "/comp/dir" : NULL, &lp))
		goto out;
	{
		struct check c = { lp, 0, UINT64_MAX, 0 };

		budget = 1u << 16;
		(void)lineprog__run(lp, 0, UINT64_MAX, &budget, check_row, &c);
		c = (struct check){ lp, lo, lo + 0x100 < lo ? UINT64_MAX : lo + 0x100, 0 };
		budget = 1u << 16;
		(void)lineprog__run(lp, c.lo, c.hi, &budget, check_row, &c);
		for (uint32_t f = 0; f < 4; f++) {
			char buf[64];

			(void)lineprog__file(lp, f, buf, sizeof(buf));
		}
	}
	lineprog__free(lp);
out:
	free((void *)s.line);
	free((void *)s.line_str);
	return 0;
}
