// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_korc_cache.c - libFuzzer target for the kernel ORC table cache
 * (unwind/korc_cache.h): a file that is accepted must be a table every
 * lookup can walk, with entries inside it and raw values from it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/korc_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BID   "7bdad2f33eb864144f7545c504378f3db829fd87"
#define STEXT 0xffffffff81000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct korc_meta m;
	struct korc k;

	if (korc_cache__parse(data, size, BID, STEXT, &k, &m))
		return 0;
	if (k.base > STEXT || k.end <= k.base || !k.nents || !k.nuniq || !k.nblocks)
		abort();
	for (uint64_t pc = k.base; pc < k.end; pc += 1 + (k.end - k.base) / 4096) {
		uint64_t raw;
		int found = 0;

		if (korc__lookup(&k, pc, &raw))
			continue;
		for (uint32_t i = 0; i < k.nuniq && !found; i++)
			found = k.uniq[i] == raw;
		if (!found)
			abort();
	}
	korc__free(&k);
	return 0;
}
