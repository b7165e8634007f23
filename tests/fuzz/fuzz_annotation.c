// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_annotation.c - libFuzzer target for what annotate reads from a file a
 * process mapped (or its debug file): program headers and code bytes
 * (elfcode), DWARF line tables (srcline: units through libdw, their line
 * programs through lineprog, which fuzz_lineprog also takes alone), and the listing
 * built from them (annotation: disassembly, counts, rows). The input is
 * written to a memfd, as a mapped file is read through an fd; every
 * function's range is annotated with counts that must add up.
 *
 * Seeds in corpus/annotation/: tiny ELFs (-nostdlib, a few KB) of two
 * functions built with -g: DWARF 4 (gcc), DWARF 5 (clang), zlib-compressed
 * debug sections (-gz), the objcopy --only-keep-debug file of the first,
 * a 32-bit executable without DWARF, a non-ELF text file, and a file whose
 * .debug_line_str does not end in NUL (libdw would read past it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/annotation.h"
#include "sym/elfcode.h"
#include "sym/elfsym.h"
#include "sym/srcline.h"

#include "fuzz_memfd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void annotate(const struct elfcode *ec, struct srcline *sl, uint64_t start, uint64_t end)
{
	struct ann_count c[3] = { { start, 3 }, { start + 1, 2 }, { end, 5 } };
	struct annotation a;
	uint64_t sum = 0;

	if (annotation__build(&a, ec, sl, start, end, c, 3))
		return;
	for (size_t i = 0; i < a.nr; i++) {
		if (!a.insns[i].size || a.insns[i].addr < start || a.insns[i].addr >= end)
			abort();
		if (a.insns[i].src && !a.insns[i].src->file)
			abort();
		sum += a.insns[i].count;
	}
	if (sum != a.total || a.total + a.outside != 10)
		abort();
	annotation__free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfcode *ec;
	struct elfsym *es;
	struct srcline *sl;
	int memfd;

	memfd = fuzz_memfd("fuzz_annotation", data, size);
	ec = elfcode__open_fd(memfd);
	sl = srcline__open_fd(memfd);
	es = elfsym__open_fd(memfd);
	if (!ec) {
		srcline__free(sl);
		elfsym__free(es);
		return 0;
	}
	/* Every symbol's function, found by scanning addresses of the first segments. */
	for (uint64_t a = 0; es && a < 0x2000; a += 0x10) {
		uint64_t start, end;

		if (!elfsym__range(es, a + 0x400000, &start, &end) && end - start < 0x10000)
			annotate(ec, sl, start, end);
		if (!elfsym__range(es, a, &start, &end) && end - start < 0x10000)
			annotate(ec, sl, start, end);
	}
	annotate(ec, sl, 0x400000, 0x400100);
	annotate(ec, sl, 0x1000, 0x1100);
	if (sl) {
		struct srcline_row *rows;
		size_t nr;

		if (!srcline__rows(sl, 0, UINT64_MAX, &rows, &nr)) {
			for (size_t i = 1; i < nr; i++)
				if (rows[i].addr < rows[i - 1].addr)
					abort();
			free(rows);
		}
	}
	srcline__free(sl);
	elfsym__free(es);
	elfcode__free(ec);
	return 0;
}
