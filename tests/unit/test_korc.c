// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_korc.c - the kernel ORC table for the BPF kernel stack walker: the
 * kallsyms scan, the reshaping, and lookups against a linear reference. */
#include "testutil.h"

#include "sym/kallsyms.h"
#include "unwind/korc.h"

/* What the collector feeds the walker: core kernel lines of the one kallsyms parser. */
static int take(void *ctx, const struct kallsyms_line *l)
{
	if (!l->module)
		korc__syms_take(ctx, l->name, l->name_len, l->addr);
	return 0;
}

#define STEXT 0xffffffff81000000ull
#define ETEXT 0xffffffff81003800ull
#define IPTAB 0xffffffff83000000ull /* where orc_unwind_ip[] "lives" */

static void test_syms_parse(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff82209988 T _etext\n"
				   "ffffffff8329dbdc R __start_orc_unwind_ip\r\n"
				   "ffffffff83476118 R __stop_orc_unwind_ip\n"
				   "ffffffff83476118 R __start_orc_unwind\n"
				   "ffffffff81e01230 T return_to_handler\n"
				   "ffffffff81e05550 t arch_rethook_trampoline\n"
				   "ffffffffc0001000 t _stext_x\t[mod]\n" /* other name, module */
				   "ffffffffc0002000 T _etext\t[evil]\n"  /* a module's: ignored */
				   "garbage line\n"
				   "ffffffff81000010 T __start_orc_unwind_ipX\n"
				   "ffffffff81000020 T"; /* cut short */
	struct korc_syms s;

	(void)state;
	memset(&s, 0, sizeof(s));
	kallsyms__for_each(text, sizeof(text) - 1, take, &s);
	assert_int_equal(s.stext, 0xffffffff81000000ull);
	assert_int_equal(s.etext, 0xffffffff82209988ull);
	assert_int_equal(s.orc_ip_start, 0xffffffff8329dbdcull);
	assert_int_equal(s.orc_ip_stop, 0xffffffff83476118ull);
	assert_int_equal(s.orc_start, 0xffffffff83476118ull);
	assert_int_equal(s.trampolines[0], 0xffffffff81e01230ull);
	assert_int_equal(s.trampolines[1], 0xffffffff81e05550ull);
	assert_int_equal(s.trampolines[2], 0);

	memset(&s, 0, sizeof(s));
	kallsyms__for_each("", 0, take, &s); /* nothing found */
	assert_int_equal(s.stext, 0);
}

/* A table of n entries at the given absolute ips; entry i's raw value is i + 1
 * in sp_offset (so lookups can tell entries apart), type CALL. */
static void make_table(const uint64_t *ips, uint32_t n, int32_t *rel, uint8_t *orc)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t raw = (uint64_t)(i + 1) | ((uint64_t)KORC_TYPE_CALL << 40) |
			       ((uint64_t)KORC_REG_SP << 32);

		rel[i] = (int32_t)(ips[i] - (IPTAB + 4ull * i));
		for (int b = 0; b < 6; b++)
			orc[6 * i + b] = (uint8_t)(raw >> (8 * b));
	}
}

/* The last entry with ip <= pc among those in [stext, etext) plus the one
 * before stext, the later of equal ips; 0 if none. */
static uint64_t reference(const uint64_t *ips, uint32_t n, uint64_t pc)
{
	uint64_t best = 0;

	if (pc < (STEXT & ~4095ull) || pc >= ETEXT)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (ips[i] >= ETEXT)
			break;
		if (ips[i] >= STEXT && ips[i] <= pc)
			best = i + 1;
	}
	return best;
}

static void test_build_and_lookup(void **state)
{
	/* Before stext (dropped), dense runs, a 4 KiB gap with no entry, equal
	 * ips (the later wins), an entry right at a block boundary, one past etext. */
	static const uint64_t ips[] = {
		STEXT - 0x40,	STEXT,		STEXT + 0x10,	STEXT + 0x11,	STEXT + 0x200,
		STEXT + 0xfff,	STEXT + 0x1000, STEXT + 0x1000, STEXT + 0x1008, STEXT + 0x2ff0,
		STEXT + 0x3000, STEXT + 0x37ff, ETEXT,		ETEXT + 0x100,
	};
	enum { N = sizeof(ips) / sizeof(ips[0]) };
	int32_t rel[N];
	uint8_t orc[6 * N];
	struct korc k;

	(void)state;
	make_table(ips, N, rel, orc);
	assert_int_equal(korc__build(rel, orc, N, IPTAB, STEXT, ETEXT, &k), 0);
	assert_int_equal(k.base, STEXT);
	assert_int_equal(k.end, ETEXT);
	assert_int_equal(k.nents, 10); /* 12 in range, one duplicate ip merged */
	assert_int_equal(k.nblocks, 4);
	assert_int_equal(k.nuniq, 11); /* distinct raw values seen (the merged one too) */
	for (uint64_t pc = STEXT - 0x100; pc < ETEXT + 0x200; pc++) {
		uint64_t raw = 0, want = reference(ips, N, pc);
		int err = korc__lookup(&k, pc, &raw);

		if (!want) {
			assert_int_equal(err, -ENOENT);
			continue;
		}
		assert_int_equal(err, 0);
		assert_int_equal(KORC_SP_OFF(raw), (int16_t)want);
		assert_int_equal(KORC_TYPE(raw), KORC_TYPE_CALL);
		assert_int_equal(KORC_SP_REG(raw), KORC_REG_SP);
	}
	korc__free(&k);
}

static void test_bad_tables(void **state)
{
	static const uint64_t unsorted[] = { STEXT, STEXT + 0x20, STEXT + 0x10 };
	static const uint64_t outside[] = { ETEXT + 1, ETEXT + 2 };
	int32_t rel[3];
	uint8_t orc[18];
	struct korc k;

	(void)state;
	make_table(unsorted, 3, rel, orc);
	assert_int_equal(korc__build(rel, orc, 3, IPTAB, STEXT, ETEXT, &k), -EINVAL);
	make_table(outside, 2, rel, orc);
	assert_int_equal(korc__build(rel, orc, 2, IPTAB, STEXT, ETEXT, &k), -EINVAL);
	assert_int_equal(korc__build(rel, orc, 0, IPTAB, STEXT, ETEXT, &k), -EINVAL);
	assert_int_equal(korc__build(rel, orc, 2, IPTAB, ETEXT, STEXT, &k), -EINVAL);
}

static void test_decode_real_layout(void **state)
{
	/* entry_SYSCALL_64_after_hwframe's pt_regs entry as read from a 6.18
	 * kernel: sp_reg SP, offset 0, type REGS, signal set. */
	uint64_t raw = 0xb0500000000ull;

	(void)state;
	assert_int_equal(KORC_SP_REG(raw), KORC_REG_SP);
	assert_int_equal(KORC_SP_OFF(raw), 0);
	assert_int_equal(KORC_BP_REG(raw), KORC_REG_UNDEFINED);
	assert_int_equal(KORC_TYPE(raw), KORC_TYPE_REGS);
	assert_int_equal(KORC_SIGNAL(raw), 1);
	raw = (uint64_t)(uint16_t)-16 | ((uint64_t)(uint16_t)-24 << 16) |
	      ((uint64_t)(KORC_REG_BP | KORC_REG_PREV_SP << 4) << 32) |
	      ((uint64_t)KORC_TYPE_CALL << 40);
	assert_int_equal(KORC_SP_OFF(raw), -16);
	assert_int_equal(KORC_BP_OFF(raw), -24);
	assert_int_equal(KORC_SP_REG(raw), KORC_REG_BP);
	assert_int_equal(KORC_BP_REG(raw), KORC_REG_PREV_SP);
	assert_int_equal(KORC_SIGNAL(raw), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syms_parse),
		cmocka_unit_test(test_build_and_lookup),
		cmocka_unit_test(test_bad_tables),
		cmocka_unit_test(test_decode_real_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
