// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_gopclntab - Go's pc-line table parser on hostile bytes: the input is
 * a 4-byte little-endian length, that many bytes of table (at 0x4b0000),
 * then the read-only data holding inline trees (at 0x480000, gofunc
 * 0x480010). Every lookup the symbolizer and the unwind table builder make
 * runs on whatever parses: names, files, lines, inlined frames, pcsp runs
 * (which must stay inside their function and in order), moduledata search.
 * The whole input is also searched for a table as a file without section
 * headers is (gopclntab__scan): what it finds must have functions, and what
 * it spends stays within its caps.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct runs {
	uint64_t start, end, last;
};

static int check_run(uint64_t start, uint64_t end, int32_t delta, void *ctx)
{
	struct runs *r = ctx;

	(void)delta;
	if (start < r->start || end > r->end || start >= end || start < r->last)
		abort();
	r->last = end;
	return 0;
}

/* The search of a segment at vaddr (its alignment from the input). */
static void scan(const uint8_t *data, size_t size, uint64_t vaddr)
{
	struct gopclntab_scan sc;
	struct gopclntab *g;

	gopclntab__scan_init(&sc, NULL);
	g = gopclntab__scan(data, size, vaddr, &sc);
	if (sc.headers_left > GOPCLNTAB_SCAN_HEADERS || sc.tables_left > GOPCLNTAB_SCAN_TABLES ||
	    sc.bytes_left > GOPCLNTAB_SCAN_BYTES)
		abort();
	if (!g) {
		if (errno != ENOENT && errno != ENOMEM)
			abort();
		return;
	}
	if (!gopclntab__nr_funcs(g))
		abort();
	gopclntab__free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gosrc src[GOPCLNTAB_MAX_INLINE + 1];
	struct gopclntab *g;
	uint32_t split;

	if (size < 4)
		return 0;
	memcpy(&split, data, 4);
	data += 4;
	size -= 4;
	scan(data, size, 0x4b0000 - (split & 7));
	if (split > size)
		split = (uint32_t)size;
	g = gopclntab__new(data, split, 0x4b0000, 0);
	if (!g)
		return 0;
	gopclntab__set_funcdata(g, data + split, size - split, 0x480000, 0x480010);
	(void)gopclntab__find_gofunc(g, data + split, size - split, 0x500000);
	for (size_t i = 0; i < gopclntab__nr_funcs(g) && i < 16; i++) {
		uint64_t start, end;
		const char *name;
		struct runs r;

		if (gopclntab__func(g, i, &start, &end, &name))
			continue;
		if (name && strlen(name) > size)
			abort();
		r = (struct runs){ start, end, start };
		(void)gopclntab__pcsp(g, i, check_run, &r);
		/* A lookup may decode ~1e5 runs of a hostile table: a few per function. */
		for (int k = 0; k < 3 && end > start; k++) {
			uint64_t pc = k == 0 ? start : k == 1 ? start + (end - start) / 2 : end - 1;
			size_t n = gopclntab__frames(g, pc, src, GOPCLNTAB_MAX_INLINE + 1);

			if (n > GOPCLNTAB_MAX_INLINE + 1)
				abort();
			for (size_t j = 0; j < n; j++)
				if (!src[j].name || (src[j].file && strlen(src[j].file) > size))
					abort();
		}
		if (gopclntab__find(g, start) < 0 && end > start)
			abort();
	}
	gopclntab__free(g);
	return 0;
}
