// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_sbcl_dyn - SBCL's dynamic-space walk (src/lang/sbcl.c,
 * dyn_find_code) on a hostile heap: the input is seen as page_table's
 * entries (0x7f0000000000) and as dynamic space itself (0x1000000000, where
 * names point too). 64 pcs across the space are named and their
 * simple-fun's range taken (annotate's): names NUL-terminated within the
 * buffer, ranges inside the code that holds the pc, reads within the caps.
 */
#include "lang/sbcl.h"

#include "fuzz_procmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PT  0x7f0000000000ull
#define DYN 0x1000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem m = { data, size, 0, { PT, DYN } };
	struct sbcl_heap h = { .l = sbcl__layout("2.2.9"), .read = procmem_read, .ctx = &m };
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
		procmem_check_name(out, sizeof(out), n);
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
