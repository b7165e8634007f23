// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_gobuildinfo.c - the Go release from .go.buildinfo (the record of Go
 * 1.18 and later, as go1.19.8 wrote it for tests/workloads/goalloc), bounds
 * on hostile records, and mProf_Malloc's arguments per release.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "lang/gobuildinfo.h"

/* The first 48 bytes of goalloc's .go.buildinfo (objcopy --only-section). */
static const uint8_t go1198[48] = {
	0xff, 0x20, 0x47, 0x6f, 0x20, 0x62, 0x75, 0x69, 0x6c, 0x64, 0x69, 0x6e,
	0x66, 0x3a, 0x08, 0x02, 0,    0,    0,	  0,	0,    0,    0,	  0,
	0,    0,    0,	  0,	0,    0,    0,	  0,	0x08, 0x67, 0x6f, 0x31,
	0x2e, 0x31, 0x39, 0x2e, 0x38, 0xf1, 0x02, 0x30, 0x77, 0xaf, 0x0c, 0x92,
};

static void test_version_of_a_go119_binary(void **state)
{
	struct gobuild b;

	(void)state;
	assert_int_equal(gobuildinfo__parse(go1198, sizeof(go1198), &b), 0);
	assert_string_equal(b.version, "go1.19.8");
	assert_int_equal(b.minor, 19);
}

static void test_found_at_16_byte_alignment_only(void **state)
{
	uint8_t buf[256] = { 0 };
	struct gobuild b;

	(void)state;
	memcpy(buf + 96, go1198, sizeof(go1198));
	assert_int_equal(gobuildinfo__parse(buf, sizeof(buf), &b), 0);
	assert_int_equal(b.minor, 19);
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 8, go1198, sizeof(go1198)); /* not where the linker puts it */
	assert_int_equal(gobuildinfo__parse(buf, sizeof(buf), &b), -ENOENT);
	assert_int_equal(gobuildinfo__parse(buf, 0, &b), -ENOENT);
	assert_int_equal(gobuildinfo__parse(go1198, 31, &b), -ENOENT);
}

static void test_hostile_records(void **state)
{
	uint8_t buf[128];
	struct gobuild b;

	(void)state;
	/* Cut inside the version string. */
	for (size_t len = 32; len < 41; len++)
		assert_int_equal(gobuildinfo__parse(go1198, len, &b), -EINVAL);
	assert_int_equal(gobuildinfo__parse(go1198, 41, &b), 0);
	/* Pointer form (before 1.18): refused. */
	memcpy(buf, go1198, sizeof(go1198));
	buf[15] = 0;
	assert_int_equal(gobuildinfo__parse(buf, sizeof(go1198), &b), -ENOTSUP);
	/* A length past the buffer, over the cap, a varint that never ends. */
	memcpy(buf, go1198, sizeof(go1198));
	buf[32] = 0x7f;
	assert_int_equal(gobuildinfo__parse(buf, sizeof(go1198), &b), -EINVAL);
	memset(buf + 32, 0x41, sizeof(buf) - 32);
	buf[32] = GOBUILDINFO_MAX_VERSION + 1;
	assert_int_equal(gobuildinfo__parse(buf, sizeof(buf), &b), -EINVAL);
	memset(buf + 32, 0xff, 12);
	assert_int_equal(gobuildinfo__parse(buf, sizeof(buf), &b), -EINVAL);
	/* Not a Go version, a NUL inside, no digits, too many digits. */
	static const char *const bad[] = { "gcc 12",
					   "go1.\0"
					   "19",
					   "go1.x", "go1.123456", "go2.0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = i == 1 ? 7 : strlen(bad[i]);

		memcpy(buf, go1198, 32);
		buf[32] = (uint8_t)n;
		memcpy(buf + 33, bad[i], n);
		assert_int_equal(gobuildinfo__parse(buf, 33 + n, &b), -EINVAL);
	}
	/* devel versions and release candidates. */
	memcpy(buf, go1198, 32);
	buf[32] = 23;
	memcpy(buf + 33, "devel go1.24-abcdef0123", 23);
	assert_int_equal(gobuildinfo__parse(buf, 33 + 23, &b), 0);
	assert_int_equal(b.minor, 24);
	buf[32] = 9;
	memcpy(buf + 33, "go1.21rc2", 9);
	assert_int_equal(gobuildinfo__parse(buf, 33 + 9, &b), 0);
	assert_int_equal(b.minor, 21);
}

static void test_mprof_malloc_arguments_per_release(void **state)
{
	unsigned p = 99, s = 99;

	(void)state;
	assert_int_equal(gobuildinfo__mprof_malloc_args(16, &p, &s), -ENOTSUP);
	assert_int_equal(p, 99);
	assert_int_equal(gobuildinfo__mprof_malloc_args(17, &p, &s), 0);
	assert_int_equal(p, 0);
	assert_int_equal(s, 1);
	assert_int_equal(gobuildinfo__mprof_malloc_args(22, &p, &s), 0);
	assert_int_equal(p, 0);
	assert_int_equal(gobuildinfo__mprof_malloc_args(23, &p, &s), 0); /* (mp, p, size) */
	assert_int_equal(p, 1);
	assert_int_equal(s, 2);
	assert_int_equal(gobuildinfo__mprof_malloc_args(26, &p, &s), 0);
	assert_int_equal(p, 1);
	assert_int_equal(gobuildinfo__free_special_args(16, &p, &s), -ENOTSUP);
	assert_int_equal(gobuildinfo__free_special_args(19, &p, &s), 0);
	assert_int_equal(p, 1);
	assert_int_equal(s, 2);
}

/* The special's kind is read only where the layout was verified: Go 1.19;
 * 1.24 moved the byte (offset became a uintptr) and later releases
 * renumbered the kinds, so a neighbour's guess would be wrong. */
static void test_special_kind_only_for_verified_releases(void **state)
{
	unsigned off = 99, kind = 99;

	(void)state;
	assert_int_equal(gobuildinfo__special_kind(19, &off, &kind), 0);
	assert_int_equal(off, 10);
	assert_int_equal(kind, 2);
	off = kind = 99;
	assert_int_equal(gobuildinfo__special_kind(17, &off, &kind), -ENOTSUP);
	assert_int_equal(gobuildinfo__special_kind(18, &off, &kind), -ENOTSUP);
	assert_int_equal(gobuildinfo__special_kind(20, &off, &kind), -ENOTSUP);
	assert_int_equal(gobuildinfo__special_kind(24, &off, &kind), -ENOTSUP);
	assert_int_equal(gobuildinfo__special_kind(0, &off, &kind), -ENOTSUP);
	assert_int_equal(off, 99);
	assert_int_equal(kind, 99);
}

static void test_release_must_match_the_pclntab(void **state)
{
	(void)state;
	assert_true(gobuildinfo__matches_pclntab(19, GOPCLNTAB_V118));
	assert_true(gobuildinfo__matches_pclntab(18, GOPCLNTAB_V118));
	assert_true(gobuildinfo__matches_pclntab(17, GOPCLNTAB_V116));
	assert_true(gobuildinfo__matches_pclntab(23, GOPCLNTAB_V120));
	assert_true(gobuildinfo__matches_pclntab(20, GOPCLNTAB_V120));
	/* An edited go1.19 binary claiming 1.23 (whose mProf_Malloc takes mp first). */
	assert_false(gobuildinfo__matches_pclntab(23, GOPCLNTAB_V118));
	assert_false(gobuildinfo__matches_pclntab(19, GOPCLNTAB_V120));
	assert_false(gobuildinfo__matches_pclntab(17, GOPCLNTAB_V118));
	assert_false(gobuildinfo__matches_pclntab(16, GOPCLNTAB_V12));
	assert_false(gobuildinfo__matches_pclntab(19, (enum gopclntab_version)0));
}

/* A Go 1.19 bucket as the runtime lays it out: header, stk[nstk], memRecord.active. */
static size_t bucket(uint8_t *buf, uint64_t typ, uint64_t size, uint64_t nstk,
		     const uint64_t act[4])
{
	uint64_t w[6] = { 0x1000, 0x2000, typ, 0xabcdef, size, nstk };
	size_t at = sizeof(w);

	memcpy(buf, w, sizeof(w));
	for (uint64_t i = 0; i < nstk && i < 64; i++, at += 8) {
		uint64_t pc = 0x401000 + 16 * i;

		memcpy(buf + at, &pc, 8);
	}
	memcpy(buf + at, act, 32);
	return at + 32;
}

static void test_bucket_layout_only_for_verified_releases(void **state)
{
	struct gobucket_layout l;

	(void)state;
	assert_int_equal(gobuildinfo__bucket_layout(19, &l), 0);
	assert_int_equal(l.b_arg, 1);
	assert_int_equal(l.hdr, 48);
	assert_int_equal(l.size_off, 32);
	assert_int_equal(l.nstk_off, 40);
	assert_int_equal(gobuildinfo__bucket_layout(18, &l), -ENOTSUP);
	assert_int_equal(gobuildinfo__bucket_layout(20, &l), -ENOTSUP);
	assert_int_equal(gobuildinfo__bucket_layout_at(0, &l), 0);
	assert_int_equal(gobuildinfo__bucket_layout_at(1, &l), -ENOENT);
	assert_int_equal(gobuildinfo__bucket_layout_at(255, &l), -ENOENT);
}

static void test_bucket_parsed(void **state)
{
	uint8_t buf[GOBUCKET_READ + 64];
	const uint64_t act[4] = { 10, 4, 10 * 4096, 4 * 4096 };
	struct gobucket_layout l;
	struct gobucket b;
	size_t len;

	(void)state;
	gobuildinfo__bucket_layout(19, &l);
	len = bucket(buf, 1, 4096, 5, act);
	assert_int_equal(gobucket__parse(buf, len, &l, &b), 0);
	assert_int_equal(b.size, 4096);
	assert_int_equal(b.nstk, 5);
	assert_int_equal(b.stk[0], 0x401000);
	assert_int_equal(b.stk[4], 0x401040);
	assert_int_equal(b.active_off, 48 + 40);
	/* the stack read to its end, the record not: parsed (in-use read later) */
	assert_int_equal(gobucket__parse(buf, 48 + 40, &l, &b), 0);
	assert_int_equal(gobucket__parse(buf, 48 + 39, &l, &b), -ENODATA);
	assert_int_equal(gobucket__parse(buf, 47, &l, &b), -ENODATA);
	len = bucket(buf, 1, 64, 32, act); /* maxStack frames: the most */
	assert_int_equal(gobucket__parse(buf, len, &l, &b), 0);
	assert_int_equal(b.nstk, 32);
	assert_true(len <= GOBUCKET_READ);
}

/* A tenant's forged bucket (any bytes at any address of its memory): refused
 * or bounded, never a read past the buffer, never a wrapped count. */
static void test_bucket_forged(void **state)
{
	uint8_t buf[GOBUCKET_READ + 64 * 8 + 64];
	const uint64_t act[4] = { 1, 0, 1, 0 };
	struct gobucket_layout l;
	struct gobucket b;
	size_t len;

	(void)state;
	gobuildinfo__bucket_layout(19, &l);
	len = bucket(buf, 2, 4096, 3, act); /* a block profile's bucket */
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 0, 4096, 3, act);
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, 0, 3, act); /* size 0 */
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, GOBUCKET_MAX_SIZE + 1, 3, act);
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, UINT64_MAX, 3, act);
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, 4096, 33, act); /* past maxStack */
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, 4096, 64, act);
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	len = bucket(buf, 1, 4096, 3, act);
	memset(buf + 40, 0xff, 8); /* nstk huge */
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	memset(buf + 40, 0x00, 8);
	buf[40] = 0x80; /* nstk 2^63 + ... : wraps hdr + 8 * nstk */
	buf[47] = 0x80;
	assert_int_equal(gobucket__parse(buf, len, &l, &b), -EINVAL);
	assert_int_equal(gobucket__parse(buf, 0, &l, &b), -ENODATA);
}

static void test_bucket_inuse_clamped(void **state)
{
	double o, s;
	const uint64_t fine[4] = { 10, 4, 10 * 4096, 4 * 4096 };
	const uint64_t back[4] = { 4, 10, 4 * 4096, 10 * 4096 }; /* frees past allocs */
	const uint64_t huge[4] = { UINT64_MAX, 0, UINT64_MAX, 0 };
	const uint64_t nobytes[4] = { 5, 0, 0, 0 };

	(void)state;
	gobucket__inuse(fine, 1, &o, &s); /* rate 1: every allocation, not scaled */
	assert_true(o == 6 && s == 6 * 4096);
	gobucket__inuse(fine, 0, &o, &s);
	assert_true(o == 6 && s == 6 * 4096);
	gobucket__inuse(fine, 512 * 1024, &o, &s); /* scaleHeapSample: / (1 - exp(-4096/rate)) */
	assert_true(fabs(o - 6 / -expm1(-4096.0 / (512 * 1024))) < 1e-6);
	assert_true(fabs(s - 6 * 4096 / -expm1(-4096.0 / (512 * 1024))) < 1e-3);
	gobucket__inuse(back, 512 * 1024, &o, &s);
	assert_true(o == 0 && s == 0);
	gobucket__inuse(nobytes, 512 * 1024, &o, &s);
	assert_true(o == 0 && s == 0);
	gobucket__inuse(huge, 512 * 1024, &o, &s); /* absurd: finite, not negative */
	assert_true(isfinite(o) && isfinite(s) && o >= 0 && s >= 0);
	gobucket__inuse(huge, INT64_MAX, &o, &s);
	assert_true(isfinite(o) && isfinite(s) && o >= 0 && s >= 0);
}

/* goalloc's (Go 1.19.8, x86-64) runtime.stkbucket at 0x42bf41: switch typ {
 * case memProfile: mbuckets (0x56d590); case mutexProfile: xbuckets
 * (0x56d5f0); default: bbuckets (0x56d548) } - objdump's bytes */
static const uint8_t stkbucket_switch[] = {
	0x48, 0x83, 0xf9, 0x01, 0x75, 0x09, 0x48, 0x8d, 0x0d, 0x42, 0x16, 0x14, 0x00,
	0xeb, 0x16, 0x48, 0x83, 0xf9, 0x03, 0x75, 0x09, 0x48, 0x8d, 0x0d, 0x93, 0x16,
	0x14, 0x00, 0xeb, 0x07, 0x48, 0x8d, 0x0d, 0xe2, 0x15, 0x14, 0x00,
};
/* its runtime.mProf_FlushLocked at 0x42c180, up to its load of mbuckets */
static const uint8_t flush_locked[] = {
	0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xb6, 0x00, 0x00, 0x00, 0x48, 0x83, 0xec, 0x28, 0x48,
	0x89, 0x6c, 0x24, 0x20, 0x48, 0x8d, 0x6c, 0x24, 0x20, 0x89, 0xc0, 0x66, 0x0f, 0x1f, 0x44,
	0x00, 0x00, 0x48, 0x83, 0xf8, 0x03, 0x0f, 0x83, 0x8b, 0x00, 0x00, 0x00, 0x48, 0x89, 0x44,
	0x24, 0x18, 0x90, 0x48, 0x8b, 0x0d, 0xd9, 0x13, 0x14, 0x00, 0xeb, 0x6d,
};
#define BSS_LO 0x56d480ull /* goalloc's .bss and .noptrbss */
#define BSS_HI 0x5a1b28ull

static void test_mbuckets_from_real_code(void **state)
{
	uint64_t va = 0;

	(void)state;
	assert_int_equal(gobuildinfo__x86_memprof_lea(stkbucket_switch, sizeof(stkbucket_switch),
						      0x42bf41, 1, BSS_LO, BSS_HI, &va),
			 0);
	assert_int_equal(va, 0x56d590);
	/* the type is what picks the branch: mutexProfile's is xbuckets */
	assert_int_equal(gobuildinfo__x86_memprof_lea(stkbucket_switch, sizeof(stkbucket_switch),
						      0x42bf41, 3, BSS_LO, BSS_HI, &va),
			 0);
	assert_int_equal(va, 0x56d5f0);
	assert_int_equal(gobuildinfo__x86_first_rip_load(flush_locked, sizeof(flush_locked),
							 0x42c180, BSS_LO, BSS_HI, &va),
			 0);
	assert_int_equal(va, 0x56d590);
	/* a target outside the zero-filled data is no answer */
	assert_int_equal(gobuildinfo__x86_memprof_lea(stkbucket_switch, sizeof(stkbucket_switch),
						      0x42bf41, 1, 0x56d5a0, BSS_HI, &va),
			 -ENOENT);
	assert_int_equal(gobuildinfo__x86_first_rip_load(flush_locked, sizeof(flush_locked),
							 0x42c180, BSS_LO, 0x56d590, &va),
			 -ENOENT);
}

static void test_mbuckets_truncated_or_forged(void **state)
{
	uint8_t c[64];
	uint64_t va = 0;

	(void)state;
	/* cut before the LEA's end, or the load's: nothing read past len */
	for (size_t n = 0; n < 13; n++)
		assert_int_equal(gobuildinfo__x86_memprof_lea(stkbucket_switch, n, 0x42bf41, 1,
							      BSS_LO, BSS_HI, &va),
				 -ENOENT);
	for (size_t n = 0; n < 55; n++)
		assert_int_equal(gobuildinfo__x86_first_rip_load(flush_locked, n, 0x42c180, BSS_LO,
								 BSS_HI, &va),
				 -ENOENT);
	/* two memProfile branches naming two addresses: ambiguous, none */
	memcpy(c, stkbucket_switch, 13);
	memcpy(c + 13, stkbucket_switch, 13);
	c[13 + 9] = 0x52; /* the second one's disp: another .bss address */
	assert_int_equal(gobuildinfo__x86_memprof_lea(c, 26, 0x42bf41, 1, BSS_LO, BSS_HI, &va),
			 -ENOENT);
	/* ... the same address twice (disp - 13 from 13 bytes further): one */
	memcpy(c + 13, stkbucket_switch, 13);
	c[13 + 9] = 0x42 - 13;
	va = 0;
	assert_int_equal(gobuildinfo__x86_memprof_lea(c, 26, 0x42bf41, 1, BSS_LO, BSS_HI, &va), 0);
	assert_int_equal(va, 0x56d590);
	/* REX.WB cmp, jne rel32, REX.WR lea: the same branch */
	const uint8_t alt[] = { 0x49, 0x83, 0xf8, 0x01, 0x0f, 0x85, 0x10, 0,   0,
				0,    0x4c, 0x8d, 0x05, 0x00, 0x10, 0x00, 0x00 };
	assert_int_equal(gobuildinfo__x86_memprof_lea(alt, sizeof(alt), 0x100000, 1, 0x101000,
						      0x102000, &va),
			 0);
	assert_int_equal(va, 0x100000 + sizeof(alt) + 0x1000);
	/* not a register compare (a memory operand), not jne, not rip-relative */
	memcpy(c, stkbucket_switch, 13);
	c[2] = 0x79; /* cmp [rcx + d8], ... */
	assert_int_equal(gobuildinfo__x86_memprof_lea(c, 13, 0x42bf41, 1, BSS_LO, BSS_HI, &va),
			 -ENOENT);
	memcpy(c, stkbucket_switch, 13);
	c[4] = 0x74; /* je */
	assert_int_equal(gobuildinfo__x86_memprof_lea(c, 13, 0x42bf41, 1, BSS_LO, BSS_HI, &va),
			 -ENOENT);
	memcpy(c, stkbucket_switch, 13);
	c[8] = 0x0c; /* lea rcx, [rsp + ...] (a SIB) */
	assert_int_equal(gobuildinfo__x86_memprof_lea(c, 13, 0x42bf41, 1, BSS_LO, BSS_HI, &va),
			 -ENOENT);
	/* a displacement wrapping the address space lands outside [lo, hi) */
	memcpy(c, stkbucket_switch, 13);
	assert_int_equal(
		gobuildinfo__x86_memprof_lea(c, 13, UINT64_MAX - 4, 1, BSS_LO, BSS_HI, &va),
		-ENOENT);
	/* a type no imm8 holds */
	assert_int_equal(gobuildinfo__x86_memprof_lea(stkbucket_switch, sizeof(stkbucket_switch),
						      0x42bf41, 0x101, BSS_LO, BSS_HI, &va),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_of_a_go119_binary),
		cmocka_unit_test(test_found_at_16_byte_alignment_only),
		cmocka_unit_test(test_hostile_records),
		cmocka_unit_test(test_mprof_malloc_arguments_per_release),
		cmocka_unit_test(test_release_must_match_the_pclntab),
		cmocka_unit_test(test_special_kind_only_for_verified_releases),
		cmocka_unit_test(test_bucket_layout_only_for_verified_releases),
		cmocka_unit_test(test_bucket_parsed),
		cmocka_unit_test(test_bucket_forged),
		cmocka_unit_test(test_bucket_inuse_clamped),
		cmocka_unit_test(test_mbuckets_from_real_code),
		cmocka_unit_test(test_mbuckets_truncated_or_forged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
