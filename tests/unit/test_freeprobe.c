// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_freeprobe.c - where --alloc probes free: past glibc's NULL test
 * (test %rdi,%rdi; je) when a push the kernel emulates follows it, at the
 * entry for any other prologue and for bytes cut short.
 */
#include "testutil.h"

#include "collector/freeprobe.h"

/* Debian 12's glibc 2.36 free: test %rdi,%rdi; je rel32; push %rbp; lea -0x10(%rdi),%rsi. */
static const uint8_t glibc236[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00,
				    0x00, 0x55, 0x48, 0x8d, 0x77, 0xf0, 0x53, 0x48 };

static void test_glibc_prologue_is_probed_past_its_null_test(void **state)
{
	(void)state;
	assert_int_equal(alloc_free_probe_offset(glibc236, sizeof(glibc236)), 9);
	assert_int_equal(alloc_free_probe_offset(glibc236, 10), 9); /* exactly up to the push */
}

static void test_rel8_and_rex_pushes(void **state)
{
	/* test %rdi,%rdi; je rel8; push %rbx */
	static const uint8_t rel8[] = { 0x48, 0x85, 0xff, 0x74, 0x20, 0x53, 0x48, 0x89 };
	/* test %rdi,%rdi; je rel8; push %r12 (41 54) */
	static const uint8_t r12[] = { 0x48, 0x85, 0xff, 0x74, 0x20, 0x41, 0x54 };
	/* test %rdi,%rdi; je rel32; push %r15 (41 57) */
	static const uint8_t r15[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 1, 0, 0, 0, 0x41, 0x57 };

	(void)state;
	assert_int_equal(alloc_free_probe_offset(rel8, sizeof(rel8)), 5);
	assert_int_equal(alloc_free_probe_offset(r12, sizeof(r12)), 5);
	assert_int_equal(alloc_free_probe_offset(r15, sizeof(r15)), 9);
}

static void test_other_prologues_are_probed_at_the_entry(void **state)
{
	const uint8_t *const other[] = {
		/* malloc-like: push %r12 first (emulated already) */
		(const uint8_t[]){ 0x41, 0x54, 0x55, 0x53, 0x48, 0x83, 0xec, 0x10, 0, 0 },
		/* endbr64 before the test: not the exact prologue */
		(const uint8_t[]){ 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x85, 0xff, 0x74, 0x10, 0x55 },
		/* test %rsi,%rsi (48 85 f6): another register */
		(const uint8_t[]){ 0x48, 0x85, 0xf6, 0x74, 0x10, 0x55, 0, 0, 0, 0 },
		/* test %rdi,%rdi; jne rel8: the probe site would see only NULL */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x75, 0x10, 0x55, 0, 0, 0, 0 },
		/* test %rdi,%rdi; jne rel32 */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x0f, 0x85, 1, 0, 0, 0, 0x55 },
		/* test %rdi,%rdi; je; mov %rdi,%rbx: not an emulated push */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x74, 0x10, 0x48, 0x89, 0xfb, 0, 0 },
		/* test %rdi,%rdi; je; push with REX.W (48 55): not emulated */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x74, 0x10, 0x48, 0x55, 0, 0, 0 },
		/* test %rdi,%rdi; je; push with REX.B|X (43 55): only 41 is emulated */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x74, 0x10, 0x43, 0x55, 0, 0, 0 },
		/* test %rdi,%rdi; je; 41 58 is pop %r8 */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x74, 0x10, 0x41, 0x58, 0, 0, 0 },
		/* test %rdi,%rdi; je; push $imm8 (6a) */
		(const uint8_t[]){ 0x48, 0x85, 0xff, 0x74, 0x10, 0x6a, 0x01, 0, 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(alloc_free_probe_offset(other[i], 10), 0);
}

static void test_truncated_bytes_are_probed_at_the_entry(void **state)
{
	static const uint8_t rel8r12[] = { 0x48, 0x85, 0xff, 0x74, 0x20, 0x41, 0x54 };

	(void)state;
	assert_int_equal(alloc_free_probe_offset(NULL, 16), 0);
	for (size_t len = 0; len < 10; len++) /* the push at 9 not read */
		assert_int_equal(alloc_free_probe_offset(glibc236, len), 0);
	for (size_t len = 0; len < 7; len++) /* 41 without its 54 */
		assert_int_equal(alloc_free_probe_offset(rel8r12, len), 0);
	assert_int_equal(alloc_free_probe_offset(rel8r12, 7), 5);
}

/* Go 1.19.8's runtime.freeSpecial and runtime.mProf_Malloc (goalloc, go tool objdump). */
static void test_go_stack_check_jump(void **state)
{
	static const uint8_t free_special[] = { 0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x0a,
						0x01, 0x00, 0x00, 0x48, 0x83, 0xec, 0x30 };
	static const uint8_t mprof_malloc[] = { 0x4c, 0x8d, 0xa4, 0x24, 0x10, 0xff, 0xff, 0xff,
						0x4d, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xaa, 0x01,
						0x00, 0x00, 0x48, 0x81, 0xec, 0x70, 0x01 };
	static const uint8_t rel8[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x30, 0x48, 0x83 };
	static const uint8_t lea8[] = { 0x4c, 0x8d, 0x64, 0x24, 0xb0, 0x4d,
					0x3b, 0x66, 0x10, 0x76, 0x40 };

	(void)state;
	assert_int_equal(alloc_go_probe_offset(free_special, sizeof(free_special)), 4);
	assert_int_equal(alloc_go_probe_offset(mprof_malloc, sizeof(mprof_malloc)), 12);
	assert_int_equal(alloc_go_probe_offset(rel8, sizeof(rel8)), 4);
	assert_int_equal(alloc_go_probe_offset(lea8, sizeof(lea8)), 9);
	/* cut short: the jump not read whole */
	assert_int_equal(alloc_go_probe_offset(free_special, 9), 0);
	assert_int_equal(alloc_go_probe_offset(free_special, 10), 4);
	assert_int_equal(alloc_go_probe_offset(rel8, 5), 0);
	assert_int_equal(alloc_go_probe_offset(NULL, 16), 0);
}

/* No stack check (a NOSPLIT function), the %r12 compare without its lea, a
 * compare of another register, a jump other than jbe: none. */
static void test_go_other_prologues(void **state)
{
	static const uint8_t other[][12] = {
		{ 0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24, 0x10 },
		{ 0x4d, 0x3b, 0x66, 0x10, 0x76, 0x30 },
		{ 0x48, 0x3b, 0x66, 0x10, 0x76, 0x30 },
		{ 0x49, 0x3b, 0x66, 0x18, 0x76, 0x30 },
		{ 0x49, 0x3b, 0x66, 0x10, 0x74, 0x30 },
		{ 0x49, 0x3b, 0x66, 0x10, 0x0f, 0x84, 0, 0, 0, 0 },
		{ 0x4c, 0x8d, 0x64, 0x24, 0xb0, 0x49, 0x3b, 0x66, 0x10, 0x76, 0x40 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(alloc_go_probe_offset(other[i], sizeof(other[i])), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc_prologue_is_probed_past_its_null_test),
		cmocka_unit_test(test_rel8_and_rex_pushes),
		cmocka_unit_test(test_other_prologues_are_probed_at_the_entry),
		cmocka_unit_test(test_truncated_bytes_are_probed_at_the_entry),
		cmocka_unit_test(test_go_stack_check_jump),
		cmocka_unit_test(test_go_other_prologues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
