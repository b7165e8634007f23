// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_sbcl_dyn - SBCL's dynamic-space walk (src/lang/sbcl.c,
 * dyn_find_code) on a hostile heap: the input is seen as page_table's
 * entries (0x7f0000000000) and as dynamic space itself (0x1000000000, where
 * names point too). 64 pcs across the space are named and their
 * simple-fun's range taken (annotate's): names NUL-terminated within the
 * buffer, ranges inside the code that holds the pc, reads within the caps.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/sbcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PT  0x7f0000000000ull
#define DYN 0x1000000000ull

struct img {
	const uint8_t *p;
	size_t n;
	uint64_t bytes;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *m = ctx;
	const uint64_t bases[] = { PT, DYN };

	m->bytes += len;
	for (int i = 0; i < 2; i++) {
		if (addr < bases[i] || addr - bases[i] > m->n || len > m->n - (addr - bases[i]))
			continue;
		memcpy(buf, m->p + (addr - bases[i]), len);
		return 0;
	}
	return -EFAULT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct img m = { data, size, 0 };
	struct sbcl_heap h = { .l = sbcl__layout("2.2.9"), .read = rd, .ctx = &m };
	char out[64];
	int lookups = 0;

	if (size < 16)
		return 0;
	h.dyn_start = DYN;
	h.dyn_size = (size + 0x7fff) & ~0x7fffull;
	h.page_table = PT;
	for (uint64_t pc = DYN, step = size / 64 > 8 ? size / 64 : 8; pc < DYN + size; pc += step) {
		uint64_t start, end;
		int n;

		memset(out, 'x', sizeof(out));
		n = sbcl__name_pc(&h, pc, out, sizeof(out));
		if (n >= (int)sizeof(out) || (n >= 0 && (strlen(out) != (size_t)n)))
			abort();
		if (!sbcl__fun_range(&h, pc, &start, &end) &&
		    (start >= end || pc < start || pc >= end || end - start > SBCL_MAX_CODE))
			abort();
		lookups += 2;
	}
	/* Each lookup's walk (SBCL_MAX_DYN_WALK and a page) and name are capped. */
	if (m.bytes >
	    (uint64_t)(lookups + 1) * (SBCL_MAX_DYN_WALK + 0x8000 + 64 * 1024 + SBCL_MAX_STEPS * 8))
		abort();
	sbcl__release(&h);
	return 0;
}
