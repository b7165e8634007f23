// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sbcl_alloc.c - --alloc's check of an SBCL runtime's code
 * (sbcl__alloc_code, src/lang/sbcl.c): the first 64 bytes of Debian 12's
 * 2.2.9 alloc and alloc_list (objdump of /usr/bin/sbcl) pass with
 * current_thread's GOT entry (0x5cfb8); the same code with other region
 * offsets, cut short, shifted or garbled does not, nor a release whose
 * regions are not verified. sbcl__tls_offset_ok: current_thread's offset
 * believed only inside the executable's static TLS block (Debian's 2.2.9:
 * PT_TLS of 8 bytes, so -8 alone). sbcl__alloc_large_exit: 2.2.9 alloc's
 * tail jump to gc_alloc_large found (at +476) only with its target, once.
 */
#include "testutil.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "lang/sbcl.h"

static const uint8_t alloc229[64] = {
	0x55, 0x48, 0x89, 0xe5, 0x41, 0x56, 0x41, 0x55, 0x41, 0x89, 0xf5, 0x41, 0x54,
	0x53, 0x48, 0x83, 0xec, 0x10, 0x48, 0x8b, 0x05, 0x0f, 0x16, 0x02, 0x00, 0x45,
	0x85, 0xed, 0x64, 0x48, 0x8b, 0x30, 0x48, 0x8d, 0x86, 0x18, 0x01, 0x00, 0x00,
	0x4c, 0x8d, 0x66, 0x70, 0x4c, 0x0f, 0x45, 0xe0, 0x48, 0x85, 0xff, 0x0f, 0x8e,
	0x03, 0x02, 0x00, 0x00, 0x49, 0x8b, 0x04, 0x24, 0x48, 0x89, 0xfb, 0x48,
};
static const uint8_t list229[64] = {
	0x55, 0x48, 0x89, 0xe5, 0x41, 0x56, 0x41, 0x89, 0xf6, 0x41, 0x55, 0x41, 0x54,
	0x53, 0x48, 0x83, 0xec, 0x10, 0x48, 0x8b, 0x05, 0x7f, 0x13, 0x02, 0x00, 0x45,
	0x85, 0xf6, 0x64, 0x48, 0x8b, 0x30, 0x48, 0x8d, 0x86, 0x30, 0x01, 0x00, 0x00,
	0x4c, 0x8d, 0x66, 0x58, 0x4c, 0x0f, 0x45, 0xe0, 0x48, 0x85, 0xff, 0x0f, 0x8e,
	0xf0, 0x01, 0x00, 0x00, 0x4d, 0x8b, 0x2c, 0x24, 0x48, 0x89, 0xfb, 0x4c,
};
#define ALLOC_VA 0x3b990
#define LIST_VA	 0x3bc20
#define GOT	 0x5cfb8

static void test_debian_229(void **state)
{
	const struct sbcl_layout *l = sbcl__layout("2.2.9.debian");
	uint64_t got = 0;

	(void)state;
	assert_non_null(l);
	assert_int_equal(l->tlab[0][0], 0x70);
	assert_int_equal(l->tlab[0][1], 0x118);
	assert_int_equal(l->tlab[1][0], 0x58);
	assert_int_equal(l->tlab[1][1], 0x130);
	assert_int_equal(sbcl__alloc_code(l, false, alloc229, sizeof(alloc229), ALLOC_VA, &got), 0);
	assert_int_equal(got, GOT);
	got = 0;
	assert_int_equal(sbcl__alloc_code(l, true, list229, sizeof(list229), LIST_VA, &got), 0);
	assert_int_equal(got, GOT);
	/* each function is checked against its own regions */
	assert_int_equal(sbcl__alloc_code(l, true, alloc229, sizeof(alloc229), ALLOC_VA, &got),
			 -ENOTSUP);
	assert_int_equal(sbcl__alloc_code(l, false, list229, sizeof(list229), LIST_VA, &got),
			 -ENOTSUP);
}

static void test_not_verified(void **state)
{
	uint64_t got;

	(void)state;
	/* releases known for naming, their regions not verified: never probed */
	assert_int_equal(sbcl__alloc_code(sbcl__layout("2.3.0"), false, alloc229, sizeof(alloc229),
					  ALLOC_VA, &got),
			 -ENOTSUP);
	assert_int_equal(sbcl__alloc_code(sbcl__layout("2.6.7"), false, alloc229, sizeof(alloc229),
					  ALLOC_VA, &got),
			 -ENOTSUP);
	assert_int_equal(sbcl__alloc_code(NULL, false, alloc229, sizeof(alloc229), ALLOC_VA, &got),
			 -ENOTSUP);
}

static void test_other_code(void **state)
{
	const struct sbcl_layout *l = sbcl__layout("2.2.9");
	uint8_t b[64];
	uint64_t got;

	(void)state;
	/* absurd offsets (a tenant's fake: tests/workloads/fakesbcl_alloc.c) */
	memcpy(b, alloc229, sizeof(b));
	b[35] = 0xf0, b[36] = 0x7f, b[37] = 0, b[38] = 0; /* lea 0x7ff0(%rsi),%rax */
	assert_int_equal(sbcl__alloc_code(l, false, b, sizeof(b), ALLOC_VA, &got), -ENOTSUP);
	memcpy(b, alloc229, sizeof(b));
	b[42] = 0x78; /* lea 0x78(%rsi),%r12 */
	assert_int_equal(sbcl__alloc_code(l, false, b, sizeof(b), ALLOC_VA, &got), -ENOTSUP);
	/* another segment than FS */
	memcpy(b, alloc229, sizeof(b));
	b[28] = 0x65;
	assert_int_equal(sbcl__alloc_code(l, false, b, sizeof(b), ALLOC_VA, &got), -ENOTSUP);
	/* no cmovne: the region not chosen by the second argument */
	memcpy(b, alloc229, sizeof(b));
	b[45] = 0x44;
	assert_int_equal(sbcl__alloc_code(l, false, b, sizeof(b), ALLOC_VA, &got), -ENOTSUP);
	/* cut short at every length: never read past len, never passes */
	for (size_t n = 0; n < 47; n++)
		assert_int_equal(sbcl__alloc_code(l, false, alloc229, n, ALLOC_VA, &got), -ENOTSUP);
	assert_int_equal(sbcl__alloc_code(l, false, alloc229, 47, ALLOC_VA, &got), 0);
	/* the same bytes shifted within it: found, the GOT entry relative to them */
	memset(b, 0x90, sizeof(b));
	memcpy(b + 8, alloc229 + 18, 29);
	assert_int_equal(sbcl__alloc_code(l, false, b, sizeof(b), ALLOC_VA, &got), 0);
	assert_int_equal(got, ALLOC_VA + 8 + 7 + 0x2160f);
}

/* An ELF header and one PT_TLS of memsz bytes aligned to align, in memory. */
static Elf *tls_elf(uint8_t *buf, uint64_t memsz, uint64_t align, uint32_t type)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));

	memset(buf, 0, sizeof(*eh) + sizeof(*ph));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	ph->p_type = type;
	ph->p_memsz = memsz;
	ph->p_align = align;
	elf_version(EV_CURRENT);
	return elf_memory((char *)buf, sizeof(*eh) + sizeof(*ph));
}

/* Debian's 2.2.9 alloc+456..+481: the frame popped, jmp gc_alloc_large (0x39a20). */
static const uint8_t large229[] = { 0x48, 0x83, 0xc4, 0x10, 0x48, 0x89, 0xdf, 0xbe, 0x03,
				    0x00, 0x00, 0x00, 0x5b, 0x41, 0x5c, 0x41, 0x5d, 0x41,
				    0x5e, 0x5d, 0xe9, 0xaf, 0xde, 0xff, 0xff };
#define LARGE_VA 0x39a20

static void test_large_exit(void **state)
{
	uint8_t code[640] = { 0 };
	uint64_t at = 0;

	(void)state;
	memcpy(code, alloc229, sizeof(alloc229));
	memcpy(code + 456, large229, sizeof(large229));
	assert_int_equal(sbcl__alloc_large_exit(code, sizeof(code), ALLOC_VA, LARGE_VA, &at), 0);
	assert_int_equal(at, ALLOC_VA + 476);
	/* another target, cut short, not there */
	assert_int_equal(sbcl__alloc_large_exit(code, sizeof(code), ALLOC_VA, LARGE_VA + 16, &at),
			 -ENOTSUP);
	assert_int_equal(
		sbcl__alloc_large_exit(code, 456 + sizeof(large229) - 1, ALLOC_VA, LARGE_VA, &at),
		-ENOTSUP);
	assert_int_equal(sbcl__alloc_large_exit(code, 456, ALLOC_VA, LARGE_VA, &at), -ENOTSUP);
	/* the frame not popped the same way (a pop %r14 missing) */
	code[456 + 17] = 0x90;
	assert_int_equal(sbcl__alloc_large_exit(code, sizeof(code), ALLOC_VA, LARGE_VA, &at),
			 -ENOTSUP);
	code[456 + 17] = 0x41;
	/* twice (each jump to the same target): which one is unknown, none */
	memcpy(code + 556, large229, sizeof(large229));
	code[556 + 21] = (uint8_t)(code[556 + 21] - 100); /* 100 bytes on: the same target */
	assert_int_equal(sbcl__alloc_large_exit(code, sizeof(code), ALLOC_VA, LARGE_VA, &at),
			 -ENOTSUP);
}

static void test_tls_offset(void **state)
{
	uint8_t buf[sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr)];
	Elf *elf = tls_elf(buf, 8, 8, PT_TLS); /* Debian's sbcl 2.2.9 */

	(void)state;
	assert_non_null(elf);
	assert_int_equal(sbcl__tls_offset_ok(elf, -8), 0);
	/* a rewritten GOT entry: anywhere else below or above the thread pointer */
	assert_int_equal(sbcl__tls_offset_ok(elf, -16), -EINVAL);
	assert_int_equal(sbcl__tls_offset_ok(elf, -4096), -EINVAL);
	assert_int_equal(sbcl__tls_offset_ok(elf, 0), -EINVAL);
	assert_int_equal(sbcl__tls_offset_ok(elf, 8), -EINVAL);
	assert_int_equal(sbcl__tls_offset_ok(elf, -4), -EINVAL);
	elf_end(elf);
	elf = tls_elf(buf, 20, 16, PT_TLS); /* a block of 32 */
	assert_int_equal(sbcl__tls_offset_ok(elf, -32), 0);
	assert_int_equal(sbcl__tls_offset_ok(elf, -8), 0);
	assert_int_equal(sbcl__tls_offset_ok(elf, -40), -EINVAL);
	elf_end(elf);
	elf = tls_elf(buf, 8, 8, PT_LOAD); /* no PT_TLS: its TLS is a library's */
	assert_int_equal(sbcl__tls_offset_ok(elf, -8), -EINVAL);
	elf_end(elf);
	assert_int_equal(sbcl__tls_offset_ok(NULL, -8), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debian_229), cmocka_unit_test(test_not_verified),
		cmocka_unit_test(test_other_code), cmocka_unit_test(test_tls_offset),
		cmocka_unit_test(test_large_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
