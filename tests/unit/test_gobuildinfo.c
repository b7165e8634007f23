// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_gobuildinfo.c - the Go release from .go.buildinfo (the record of Go
 * 1.18 and later, as go1.19.8 wrote it for tests/workloads/goalloc), bounds
 * on hostile records, and mProf_Malloc's arguments per release.
 */
#include "testutil.h"

#include <errno.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_of_a_go119_binary),
		cmocka_unit_test(test_found_at_16_byte_alignment_only),
		cmocka_unit_test(test_hostile_records),
		cmocka_unit_test(test_mprof_malloc_arguments_per_release),
		cmocka_unit_test(test_release_must_match_the_pclntab),
		cmocka_unit_test(test_special_kind_only_for_verified_releases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
