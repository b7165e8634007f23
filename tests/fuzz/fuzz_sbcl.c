// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_sbcl - SBCL's heap walker (src/lang/sbcl.c) on a hostile heap: the
 * input is the process's memory, seen at three places at once - text space
 * (0x52a00000, its first half the core's text, the rest TLSF pages), the
 * pages' scan starts, and the heap the names point into (0x1000000000,
 * where the package vector is the input's first word). 64 pcs across the
 * text space are named: what comes out must be a NUL-terminated string of
 * at most the buffer, whatever objects, trailers, lists and strings the
 * bytes make, and the walk must stay within its caps. The input's ninth
 * byte picks the release whose layout reads it (one of each layout's
 * kinds: 2.2.9's, 2.3's, 2.4.0's, 2.4.7's, 2.6.2's, 2.6.4's, 2.6.7's).
 */
#include "lang/sbcl.h"

#include "fuzz_procmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TEXT 0x52a00000ull
#define SSO  0x7f0000000000ull
#define DYN  0x1000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem m = { data, size, 0, { TEXT, SSO, DYN } };
	static const char *const releases[] = { "2.2.9", "2.3.2", "2.4.0", "2.4.7",
						"2.6.2", "2.6.4", "2.6.7" };
	struct sbcl_heap h = { .read = procmem_read, .ctx = &m };
	char out[64];
	uint64_t pv = 0;

	if (size < 16)
		return 0;
	h.l = sbcl__layout(releases[data[8] % (sizeof(releases) / sizeof(releases[0]))]);
	if (!h.l)
		abort();
	memcpy(&pv, data, 8);
	h.text_start = TEXT;
	h.text_end = TEXT + size;
	h.tlsf_start = TEXT + ((size / 2) & ~4095ull);
	h.sso = SSO;
	h.package_vector = pv;
	/* 64 pcs across the space (every word of a small one). */
	for (uint64_t pc = TEXT, step = size / 64 > 8 ? size / 64 : 8; pc < TEXT + size;
	     pc += step) {
		int n;

		memset(out, 'x', sizeof(out));
		n = sbcl__name_pc(&h, pc, out, sizeof(out));
		procmem_check_name(out, sizeof(out), n);
	}
	/* Reads stay bounded: each lookup's walk and name are capped. */
	if (m.bytes > (uint64_t)65 * (SBCL_MAX_STEPS * 8 + 64 * 1024) + SBCL_MAX_TEXT)
		abort();
	sbcl__release(&h);
	return 0;
}
