// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_hotspot - a HotSpot JVM's tables and code cache (src/lang/hotspot.c)
 * from hostile memory: the input is the process's memory at BASE, its
 * first 88 bytes the exported variables (the tables' addresses, their
 * entries' layout). The tables are read from it; then 32 pcs across it are
 * named with the layout read (or, when the tables are refused, OpenJDK
 * 17's, from tests/workloads/fakejvm.h, with CodeCache::_heaps at input
 * byte 88). What comes out must be a NUL-terminated name within the buffer,
 * and the reads within the caps; the frame walker's entry (hotspot__bpf())
 * taken only within its bounds; Method*s (interpreted frames) named
 * printably or not at all.
 */
#include "lang/hotspot.h"
#include "../workloads/fakejvm.h"

#include "fuzz_procmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x7f1200000000ull

static struct hotspot_vm jdk17;

static void init_jdk17(void)
{
	static int done;
	uint64_t var[HSV_NR];
	struct procmem m;
	uint8_t *b;

	if (done++)
		return;
	b = malloc(FJ_SIZE);
	if (!b)
		abort();
	fj_build(b, BASE, var, NULL);
	m = (struct procmem){ b, FJ_SIZE, 0, { BASE } };
	if (hotspot__read_tables(procmem_read, &m, var, &jdk17))
		abort();
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem m = { data, size, 0, { BASE } };
	struct hotspot h = { .read = procmem_read, .ctx = &m, .max_bytes = HS_MAX_LOOKUP };
	uint64_t var[HSV_NR];
	char out[HS_NAME_MAX];

	if (size < 8 * HSV_NR + 8)
		return 0;
	init_jdk17();
	memcpy(var, data, sizeof(var));
	if (hotspot__read_tables(procmem_read, &m, var, &h.vm)) {
		h.vm = jdk17;
		h.vm.off[HS_CC_HEAPS] = (int64_t)(BASE + 8 * HSV_NR);
	}
	if (m.bytes > HS_MAX_TABLE)
		abort();
	{
		struct bp_hsproc bp;
		int err;

		m.bytes = 0;
		err = hotspot__bpf(&h, &bp);
		if (m.bytes > 4096)
			abort();
		if (!err &&
		    (bp.cb_frame_size > BP_HS_HDR - 8 || bp.cb_frame_complete > BP_HS_HDR - 8 ||
		     bp.cb_begin > BP_HS_HDR - 8 || bp.cb_end > BP_HS_HDR - 8 ||
		     bp.cb_size > BP_HS_HDR - 8 || bp.hb_used >= bp.hb_size || !bp.nr_heaps ||
		     bp.nr_heaps > BP_HS_HEAPS || bp.cc_lo >= bp.cc_hi || bp.interp_lo < bp.cc_lo ||
		     bp.interp_hi > bp.cc_hi || bp.interp_lo >= bp.interp_hi ||
		     bp.call_stub_ra < bp.cc_lo || bp.call_stub_ra >= bp.cc_hi))
			abort();
		for (int i = 0; !err && i < bp.nr_heaps; i++)
			if (bp.heap[i].lo < bp.cc_lo || bp.heap[i].hi > bp.cc_hi ||
			    bp.heap[i].lo >= bp.heap[i].hi)
				abort();
		h.nr_heaps = 0;
	}
	for (uint64_t pc = BASE, step = size / 32 > 1 ? size / 32 : 1; pc < BASE + size;
	     pc += step) {
		int n;

		m.bytes = 0;
		h.bytes_read = 0;
		memset(out, 'x', sizeof(out));
		n = hotspot__name_pc(&h, pc, out, sizeof(out));
		procmem_check_name(out, sizeof(out), n);
		for (int i = 0; n > 0 && i < n; i++)
			if (out[i] < 0x20 || out[i] > 0x7e)
				abort();
		if (m.bytes > HS_MAX_LOOKUP)
			abort();
	}
	/* Interpreted frames' Method*s (hotspot__method), 8-aligned across the
	 * input: a printable name or none, the reads within the cap, a name
	 * asked for again the same. */
	{
		struct hotspot_proc hp = { .h = h };
		uint64_t step = (size / 32) & ~7ull ? (size / 32) & ~7ull : 8;
		/* fakejvm's two methods (the seed's layout), then 32 across. */
		uint64_t at[34] = { BASE + FJ_METHOD_AT, BASE + FJ_METHOD2_AT };

		for (int k = 2; k < 34; k++)
			at[k] = BASE + (uint64_t)(k - 2) * step;
		for (int k = 0; k < 34; k++) {
			uint64_t mth = at[k];
			const char *s;
			size_t l;

			if (mth >= BASE + size)
				continue;
			m.bytes = 0;
			s = hotspot__method(&hp, mth);
			if (m.bytes > HS_MAX_LOOKUP)
				abort();
			if (!s)
				continue;
			l = strnlen(s, HS_NAME_MAX);
			if (!l || l == HS_NAME_MAX)
				abort();
			for (size_t i = 0; i < l; i++)
				if (s[i] < 0x20 || s[i] > 0x7e)
					abort();
			if (hotspot__method(&hp, mth) != s)
				abort();
		}
		hotspot__proc_free(&hp);
	}
	return 0;
}
