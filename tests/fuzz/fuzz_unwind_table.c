// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_unwind_table - the unwind table builder on hostile ELF images:
 * malformed .eh_frame / .eh_frame_hdr / .debug_frame, CIE augmentations,
 * pointer encodings, FDE ranges, truncated files. Any table that comes out
 * must keep the walker's invariants (sorted rows, page index within the
 * rows, bounded rows per page), and lookups and bias computations must stay
 * in bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "unwind/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct utable *t = utable__build_mem(data, size);
	uint64_t bias;

	if (!t)
		return 0;
	for (size_t i = 1; i < t->nr_rows; i++)
		if (t->rows[i - 1].pc >= t->rows[i].pc)
			abort();
	for (size_t p = 0; p < t->nr_pages; p++) {
		const struct utable_page *pg = &t->pages[p];

		if (pg->count > UNWIND_PAGE_MAX_ROWS ||
		    (pg->count && pg->first + (uint64_t)pg->count > t->nr_rows))
			abort();
	}
	for (uint64_t a = t->base; a < t->end && a - t->base < (1u << 16); a += 3)
		(void)utable__lookup(t, a);
	(void)utable__lookup(t, t->base - 1);
	(void)utable__lookup(t, t->end + 4096);
	(void)utable__bias(t, 0x7f0000000000ull, 0x1000, &bias);
	utable__free(t);
	return 0;
}
