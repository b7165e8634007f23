// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_elffile.c - the load bias of a mapping (proc/elffile.h's
 * elffile__load_bias, which lang/cpython and lang/sbcl use): for this test's
 * own executable mapping, address - bias is the function's vaddr inside an
 * executable PT_LOAD; an offset no segment's file bytes hold is -ENOENT.
 * And elffile__find_syms (lang/hotspot, lang/sbcl, lang/cpython's variable
 * finder) on a hand-built ELF with a .dynsym and a .symtab: .dynsym first,
 * .symtab only when asked, undefined and zero symbols skipped, the
 * STT_OBJECT filter, the symbol-count bound, the time budget.
 */
#include "testutil.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include "base/budget.h"
#include "proc/elffile.h"
#include "proc/procmaps.h"

static void test_load_bias(void **state)
{
	uint64_t here = (uint64_t)(uintptr_t)&test_load_bias, bias = 0, vaddr;
	const struct procmap *m;
	struct procmaps pm = { 0 };
	bool inside = false;
	size_t n;
	Elf *elf;
	int fd;

	(void)state;
	assert_int_equal(procmaps__read("/proc/self/maps", &pm), 0);
	m = procmaps__find(&pm, here);
	assert_non_null(m);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elffile__begin(fd);
	assert_non_null(elf);
	assert_int_equal(elffile__load_bias(elf, m->start, m->offset, &bias), 0);
	vaddr = here - bias;
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			inside = true;
	}
	assert_true(inside);
	/* Past the file: no segment holds it. */
	assert_int_equal(elffile__load_bias(elf, m->start, UINT64_C(1) << 40, &bias), -ENOENT);
	elffile__end(elf, NULL);
	close(fd);
	procmaps__free(&pm);
}

/* --- elffile__find_syms on a hand-built image ------------------------------------ */

struct tsym {
	const char *name;
	unsigned char type;
	uint16_t shndx;
	uint64_t value, size;
};

/* .dynsym and .symtab (each with its string table and a null symbol first). */
static const struct tsym dyn_syms[] = {
	{ "alpha", STT_OBJECT, 1, 0x1000, 8 },
	{ "beta", STT_FUNC, 1, 0x2000, 32 },
	{ "gamma", STT_OBJECT, SHN_UNDEF, 0, 0 }, /* an import */
	{ "delta", STT_OBJECT, 1, 0, 4 },	  /* no value */
};
static const struct tsym tab_syms[] = {
	{ "gamma", STT_OBJECT, 1, 0x3000, 16 },
	{ "alpha", STT_OBJECT, 1, 0x9999, 8 }, /* .dynsym's wins */
	{ "beta", STT_OBJECT, 1, 0x4000, 4 },
};

struct img {
	uint8_t buf[4096];
	size_t len;
};

static size_t put(struct img *im, const void *p, size_t len)
{
	size_t at = (im->len + 7) & ~(size_t)7;

	assert_true(at + len <= sizeof(im->buf));
	memcpy(im->buf + at, p, len);
	im->len = at + len;
	return at;
}

/* A symbol table's entries and strings; *sym_off, *str_off, *str_len where they went. */
static void put_table(struct img *im, const struct tsym *t, size_t n, size_t *sym_off,
		      size_t *sym_len, size_t *str_off, size_t *str_len)
{
	Elf64_Sym syms[8] = { 0 };
	char str[256] = "";
	size_t sl = 1;

	assert_true(n < 8);
	for (size_t i = 0; i < n; i++) {
		syms[i + 1].st_name = (Elf64_Word)sl;
		syms[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, t[i].type);
		syms[i + 1].st_shndx = t[i].shndx;
		syms[i + 1].st_value = t[i].value;
		syms[i + 1].st_size = t[i].size;
		memcpy(str + sl, t[i].name, strlen(t[i].name) + 1);
		sl += strlen(t[i].name) + 1;
	}
	*sym_off = put(im, syms, (n + 1) * sizeof(Elf64_Sym));
	*sym_len = (n + 1) * sizeof(Elf64_Sym);
	*str_off = put(im, str, sl);
	*str_len = sl;
}

static void build(struct img *im)
{
	static const char shstr[] = "\0.data\0.dynsym\0.dynstr\0.symtab\0.strtab\0.shstrtab";
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[7] = { 0 };
	size_t ds, dsl, dstr, dstrl, ss, ssl, sstr, sstrl, shs;

	memset(im, 0, sizeof(*im));
	im->len = sizeof(eh);
	put_table(im, dyn_syms, ARRAY_SIZE(dyn_syms), &ds, &dsl, &dstr, &dstrl);
	put_table(im, tab_syms, ARRAY_SIZE(tab_syms), &ss, &ssl, &sstr, &sstrl);
	shs = put(im, shstr, sizeof(shstr));
	sh[1] = (Elf64_Shdr){
		.sh_name = 1, .sh_type = SHT_NOBITS, .sh_addr = 0x1000, .sh_size = 0x4000
	};
	sh[2] = (Elf64_Shdr){ .sh_name = 7,
			      .sh_type = SHT_DYNSYM,
			      .sh_offset = ds,
			      .sh_size = dsl,
			      .sh_link = 3,
			      .sh_entsize = sizeof(Elf64_Sym),
			      .sh_addralign = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = 15,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = dstr,
			      .sh_size = dstrl,
			      .sh_addralign = 1 };
	sh[4] = (Elf64_Shdr){ .sh_name = 23,
			      .sh_type = SHT_SYMTAB,
			      .sh_offset = ss,
			      .sh_size = ssl,
			      .sh_link = 5,
			      .sh_entsize = sizeof(Elf64_Sym),
			      .sh_addralign = 8 };
	sh[5] = (Elf64_Shdr){ .sh_name = 31,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = sstr,
			      .sh_size = sstrl,
			      .sh_addralign = 1 };
	sh[6] = (Elf64_Shdr){ .sh_name = 39,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = shs,
			      .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 7;
	eh.e_shstrndx = 6;
	eh.e_shoff = put(im, sh, sizeof(sh));
	memcpy(im->buf, &eh, sizeof(eh));
}

enum { ALPHA, BETA, GAMMA, DELTA, OMEGA, NAMES };
static const char *const names[NAMES] = { "alpha", "beta", "gamma", "delta", "omega" };

static int find(struct img *im, unsigned flags, size_t max_syms, struct budget *b, bool *found,
		uint64_t *value, uint64_t *size)
{
	void *copy;
	Elf *elf = elffile__begin_mem(im->buf, im->len, &copy);
	int n;

	assert_non_null(elf);
	n = elffile__find_syms(elf, names, NAMES, flags, max_syms, b, found, value, size);
	elffile__end(elf, copy);
	return n;
}

static void test_find_syms(void **state)
{
	uint64_t value[NAMES], size[NAMES];
	bool found[NAMES];
	struct budget b;
	struct img im;

	(void)state;
	build(&im);
	/* .dynsym alone: the import and the zero value are not definitions. */
	memset(found, 1, sizeof(found));
	assert_int_equal(find(&im, 0, 1000, NULL, found, value, size), 2);
	assert_true(found[ALPHA] && found[BETA]);
	assert_false(found[GAMMA] || found[DELTA] || found[OMEGA]);
	assert_int_equal(value[ALPHA], 0x1000);
	assert_int_equal(size[ALPHA], 8);
	assert_int_equal(value[BETA], 0x2000);
	/* .symtab for what .dynsym lacks; .dynsym's alpha still wins. */
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 1000, NULL, found, value, NULL), 3);
	assert_true(found[GAMMA]);
	assert_int_equal(value[GAMMA], 0x3000);
	assert_int_equal(value[ALPHA], 0x1000);
	/* Variables only: .dynsym's beta is a function, .symtab's an object. */
	assert_int_equal(find(&im, ELFFILE_OBJECTS, 1000, NULL, found, value, NULL), 1);
	assert_false(found[BETA]);
	assert_int_equal(
		find(&im, ELFFILE_OBJECTS | ELFFILE_SYMTAB, 1000, NULL, found, value, size), 3);
	assert_int_equal(value[BETA], 0x4000);
	assert_int_equal(size[BETA], 4);
	/* The bound: .dynsym (5 entries) is over 4 and skipped whole, .symtab (4) fits. */
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 4, NULL, found, value, NULL), 3);
	assert_int_equal(value[ALPHA], 0x9999);
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 3, NULL, found, value, NULL), 0);
	/* 5 + 4 > 8: .symtab is over what .dynsym left. */
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 8, NULL, found, value, NULL), 2);
	/* A spent budget. */
	budget__start(&b, 0);
	assert_true(budget__over_now(&b));
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 1000, &b, found, value, NULL), -ETIMEDOUT);
	/* Not an error: a file without symbol tables. */
	im.buf[offsetof(Elf64_Ehdr, e_shnum)] = 2;
	assert_int_equal(find(&im, ELFFILE_SYMTAB, 1000, NULL, found, value, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_bias),
		cmocka_unit_test(test_find_syms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
