// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sbcl_versions.c - SBCL's versions as data (src/lang/sbcl.c's layout
 * table): for a release of every layout, a heap image written here in that
 * release's layout (from SBCL's published sources; only 2.2.9 is also
 * verified on the real runtime, by test_sbcl.c's recorded heap) - the
 * core's text (a code object with its simple-fun table, then a filler),
 * code in the TLSF pages found through their scan starts (16 or 32 bits a
 * page, pages of 4096 or 2048 bytes), symbols with their package (its id in
 * the name word or in the header; the package's external symbols, its
 * table's cells a vector or a cons), a name string, the assembly routines'
 * table (the code's debug-info word 2 or 3), NIL by its shape - and each
 * name must come out as SBCL prints it. A version without a layout (later
 * than the last, between releases, a development build) gives no name at
 * all, never one read with another release's layout.
 */
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>

#include "lang/sbcl.h"

struct seg {
	uint64_t base;
	uint8_t *b;
	size_t len;
};

/*
 * What the heap of a release looks like, written here from SBCL's sources
 * (not from sbcl.c's table, which the test checks): the filler's widetag
 * (early-objdef.lisp), the code's debug-info word (objdef.lisp), where a
 * symbol's package id is (symbol-tls.inc, genesis.lisp), the package's
 * EXTERNAL-SYMBOLS slot and its table's cells (package.lisp), TLSF pages
 * and scan starts (parms.lisp, immobile-space.c), NIL's address.
 */
struct rel {
	const char *version;
	uint8_t filler;
	uint32_t debug_info_word;
	bool pkg_in_header;
	uint32_t ext_slot;
	bool cells_cons;
	uint32_t card, sso_bytes;
	uint64_t nil;
};

#define NIL229 0x50000117ull /* 2.2.x's (the others': anywhere, known by shape) */
#define NILX   0x50000197ull

/* A release of every layout, the first and last of a range among them. */
static const struct rel releases[] = {
	{ "2.2.9.debian", 0x6d, 2, false, 9, false, 4096, 2, NIL229 },
	{ "2.2.10", 0x6d, 2, false, 9, false, 4096, 2, NIL229 },
	{ "2.2.11", 0x6d, 2, false, 9, false, 4096, 2, NIL229 },
	{ "2.3.0", 0x6d, 2, false, 9, true, 4096, 2, NILX },
	{ "2.3.1", 0x6d, 2, false, 9, true, 4096, 2, NILX },
	{ "2.3.2", 0x6d, 2, false, 8, true, 4096, 2, NILX },
	{ "2.3.11", 0x6d, 2, false, 8, true, 4096, 2, NILX },
	{ "2.4.0", 0x6d, 3, false, 8, true, 4096, 2, NILX },
	{ "2.4.5", 0x6d, 3, false, 8, true, 4096, 2, NILX },
	{ "2.4.6", 0x6d, 3, false, 8, true, 4096, 2, NILX },
	{ "2.4.7", 0x6d, 3, true, 8, true, 4096, 2, NILX },
	{ "2.5.3", 0x6d, 3, true, 8, true, 4096, 2, NILX },
	{ "2.6.1", 0x6d, 3, true, 8, true, 4096, 2, NILX },
	{ "2.6.2-1", 0x6d, 3, true, 8, true, 4096, 4, NILX },
	{ "2.6.3", 0x6d, 3, true, 8, true, 4096, 4, NILX },
	{ "2.6.4", 0x6d, 3, true, 8, true, 2048, 4, NILX },
	{ "2.6.6", 0x6d, 3, true, 8, true, 2048, 4, NILX },
	{ "2.6.7", 0x71, 3, true, 8, true, 2048, 4, NILX },
};

struct vheap {
	struct seg s[4];
	int n;
	const struct rel *r;
	const struct sbcl_layout *l;
	struct sbcl_heap h;
	uint64_t free;
	uint64_t pkg[6]; /* the package vector's packages (tagged), by id */
};

static int vread(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct vheap *v = ctx;

	for (int i = 0; i < v->n; i++) {
		struct seg *s = &v->s[i];

		if (addr >= s->base && addr - s->base <= s->len &&
		    len <= s->len - (addr - s->base)) {
			memcpy(buf, s->b + (addr - s->base), len);
			return 0;
		}
	}
	return -EFAULT;
}

static uint8_t *at(struct vheap *v, uint64_t addr)
{
	for (int i = 0; i < v->n; i++)
		if (addr >= v->s[i].base && addr - v->s[i].base < v->s[i].len)
			return v->s[i].b + (addr - v->s[i].base);
	fail_msg("no segment at %" PRIx64, addr);
	return NULL;
}

static void w64(struct vheap *v, uint64_t addr, uint64_t x)
{
	memcpy(at(v, addr), &x, 8);
}

static void w32(struct vheap *v, uint64_t addr, uint32_t x)
{
	memcpy(at(v, addr), &x, 4);
}

static void w16(struct vheap *v, uint64_t addr, uint16_t x)
{
	memcpy(at(v, addr), &x, 2);
}

#define TEXT   0xb800000000ull /* 2.6's TEXT_SPACE_START */
#define TLSF   (TEXT + 0x2000) /* the core's text: two index pages */
#define TEXT_E (TEXT + 0x6000)
#define DYN    0x1200000000ull
#define SSO    0x7f0000000000ull
#define STATIC 0x50000100ull /* NIL229 and NILX in it */

static uint64_t alloc(struct vheap *v, size_t bytes)
{
	uint64_t a = v->free;

	v->free += (bytes + 15) & ~15ull;
	assert_true(v->free <= DYN + 0x10000);
	return a;
}

static uint64_t string(struct vheap *v, const char *s)
{
	size_t n = strlen(s);
	uint64_t a = alloc(v, 16 + n);

	w64(v, a, 0xe1);
	w64(v, a + 8, (uint64_t)n << 1);
	memcpy(at(v, a + 16), s, n);
	return a + 15;
}

/* A symbol of package id: the id in its header (bytes 1-2) or its name word's top 16 bits. */
static uint64_t symbol(struct vheap *v, const char *name, uint64_t id)
{
	uint64_t str = string(v, name), a = alloc(v, 8 * 6);

	w64(v, a, v->r->pkg_in_header ? id << 8 | 0x2d : 0x52d);
	w64(v, a + 8 * 5, v->r->pkg_in_header ? str : id << 48 | str);
	return a + 15;
}

static uint64_t cons(struct vheap *v, uint64_t car, uint64_t cdr)
{
	uint64_t a = alloc(v, 16);

	w64(v, a, car);
	w64(v, a + 8, cdr);
	return a + 7;
}

static uint64_t vector(struct vheap *v, int n, const uint64_t *x)
{
	uint64_t a = alloc(v, 16 + 8 * (size_t)n);

	w64(v, a, 0x89);
	w64(v, a + 8, (uint64_t)n << 1);
	for (int i = 0; i < n; i++)
		w64(v, a + 16 + 8 * i, x[i]);
	return a + 15;
}

static uint64_t instance(struct vheap *v, int nslots)
{
	uint64_t a = alloc(v, 8 * (1 + (size_t)nslots));

	w64(v, a, 0x5010123300000000ull | (uint64_t)nslots << 8 | 0x39);
	return a + 3;
}

/* A package named name whose EXTERNAL-SYMBOLS table's cells hold ext[0..n). */
static uint64_t package(struct vheap *v, const char *name, int n, const uint64_t *ext)
{
	uint64_t pkg = instance(v, 16), table = instance(v, 6), cells = vector(v, n, ext);

	w64(v, pkg - 3 + 8, string(v, name));
	w64(v, pkg - 3 + 8 * v->r->ext_slot, table);
	/* 2.3.0 on: (hash-fun . cells); the function is never read. */
	w64(v, table - 3 + 8, v->r->cells_cons ? cons(v, 0x1234567b, cells) : cells);
	return pkg;
}

/* A code object at addr, nwords long, its simple-funs' names in its boxed words. */
static void code(struct vheap *v, uint64_t addr, uint32_t nwords, uint32_t boxed_words, int nfun,
		 const uint32_t *offs, const uint64_t *names)
{
	uint64_t end = addr + 8ull * nwords;

	w64(v, addr, (uint64_t)nwords << 32 | 0x35);
	w64(v, addr + 8, 8ull * boxed_words);
	for (int i = 0; i < nfun; i++) {
		w64(v, addr + 8 * (4 + 4 * (uint64_t)i), names[i]);
		w64(v, addr + 8ull * boxed_words + offs[i], 0x41);
		w32(v, end - 8 - 4 * (uint64_t)i, offs[i]);
	}
	w16(v, end - 4, (uint16_t)(nfun << 5 | 7));
	w16(v, end - 2, (uint16_t)(4 + 4 * nfun));
}

static void filler(struct vheap *v, uint64_t addr, uint64_t bytes)
{
	w64(v, addr, bytes / 8 << 32 | v->r->filler);
}

static void set_sso(struct vheap *v, uint64_t page, uint32_t sso)
{
	if (v->r->sso_bytes == 4)
		w32(v, SSO + 4 * page, sso);
	else
		w16(v, SSO + 2 * page, (uint16_t)sso);
}

/* Where the test's functions are. */
#define PC_ALPHA  (TEXT + 0x180 + 0x10 + 4)    /* core text, fun 0 */
#define PC_BETA	  (TEXT + 0x180 + 0x200 + 8)   /* core text, fun 1 */
#define PC_MAIN	  (TLSF + 0x100 + 0x40 + 0x30) /* TLSF page 0 */
#define PC_ASM(b) ((b)->asm_at + 0x40 + 20)    /* TLSF page 1 */

struct built {
	struct vheap v;
	uint64_t asm_at;
};

static void seg(struct vheap *v, uint64_t base, size_t len)
{
	v->s[v->n].base = base;
	v->s[v->n].len = len;
	v->s[v->n].b = calloc(1, len);
	v->n++;
}

/* The heap of one release, in the layout sbcl__layout() gives for it. */
static struct built *build(const struct rel *r)
{
	struct built *b = calloc(1, sizeof(*b));
	struct vheap *v = &b->v;
	uint64_t cl_ext[2], lisphot_ext[2], vm_ext[1], pkgvec[6], beta, setf[2], names[2],
		main_n[1];
	uint64_t table, pairs_x[6], asm_at, card;
	uint32_t offs[2] = { 0x10, 0x200 }, offs1[1] = { 0x30 };

	v->r = r;
	v->l = sbcl__layout(r->version);
	if (!v->l)
		fail_msg("%s: no layout", r->version);
	seg(v, TEXT, TEXT_E - TEXT);
	seg(v, DYN, 0x10000);
	seg(v, SSO, 4 * 64);
	seg(v, STATIC, 0x100);
	v->free = DYN;
	/* NIL: a symbol whose first two slots (its car and cdr) are NIL. */
	w64(v, r->nil - 15, 0x52d);
	w64(v, r->nil - 7, r->nil);
	w64(v, r->nil + 1, r->nil);
	/* Packages by id: 1 COMMON-LISP, 2 COMMON-LISP-USER, 3 KEYWORD, 4 SB-VM, 5 LISPHOT. */
	beta = symbol(v, "BETA", 5);
	cl_ext[0] = symbol(v, "SETF", 1);
	cl_ext[1] = 0;
	lisphot_ext[0] = 0;
	lisphot_ext[1] = beta;
	vm_ext[0] = 0;
	pkgvec[0] = r->nil;
	pkgvec[1] = package(v, "COMMON-LISP", 2, cl_ext);
	pkgvec[2] = package(v, "COMMON-LISP-USER", 0, NULL);
	pkgvec[3] = package(v, "KEYWORD", 0, NULL);
	pkgvec[4] = package(v, "SB-VM", 1, vm_ext);
	pkgvec[5] = package(v, "LISPHOT", 2, lisphot_ext);
	/* The core's text: ALPHA-WORK and (SETF BETA), then a filler to the TLSF pages. */
	setf[0] = cl_ext[0];
	setf[1] = cons(v, beta, r->nil);
	names[0] = symbol(v, "ALPHA-WORK", 5);
	names[1] = cons(v, setf[0], setf[1]);
	code(v, TEXT + 0x100, 0x800 / 8, 16, 2, offs, names);
	filler(v, TEXT, 0x100);
	filler(v, TEXT + 0x900, 0x2000 - 0x900);
	/* TLSF page 0: "main loop" (COMMON-LISP-USER) at +0x100, its scan start. */
	card = v->r->card;
	for (int i = 0; i < 64; i++)
		set_sso(v, (uint64_t)i, v->r->sso_bytes == 4 ? 0xffffffffu : 0xffffu);
	main_n[0] = symbol(v, "main loop", 2);
	filler(v, TLSF, 0x100);
	code(v, TLSF + 0x100, 0x200 / 8, 8, 1, offs1, main_n);
	/* Then nothing a walk can pass (zeros) up to page 1's object: only
	 * page 1's scan start, read in its layout, reaches it. */
	set_sso(v, 0, 0);
	/* TLSF page 1: the assembly routines' code at +0x40, its debug-info (in
	 * its layout's word) a hash table of routine -> (start end . index). */
	asm_at = TLSF + card + 0x40;
	b->asm_at = asm_at;
	set_sso(v, 1, 0x40);
	w64(v, asm_at, (uint64_t)(0x200 / 8) << 32 | 0x35);
	w64(v, asm_at + 8, 0x40);
	table = instance(v, 8);
	pairs_x[0] = 0;
	pairs_x[1] = 0;
	pairs_x[2] = symbol(v, "GENERIC-+", 4);
	pairs_x[3] = cons(v, 0 << 1, cons(v, 15 << 1, 1 << 1));
	pairs_x[4] = symbol(v, "GENERIC-<", 4);
	pairs_x[5] = cons(v, 16 << 1, cons(v, 47 << 1, 2 << 1));
	w64(v, table - 3 + 8 * 5, vector(v, 6, pairs_x));
	w64(v, asm_at + 8 * v->r->debug_info_word, table);
	w64(v, asm_at + 8 * (5 - v->r->debug_info_word), 0); /* the fixups */
	filler(v, asm_at + 0x200, TEXT_E - asm_at - 0x200);
	v->h = (struct sbcl_heap){ .l = v->l,
				   .read = vread,
				   .ctx = v,
				   .text_start = TEXT,
				   .text_end = TEXT_E,
				   .tlsf_start = TLSF,
				   .sso = SSO,
				   .package_vector = vector(v, 6, pkgvec) };
	return b;
}

static void built_free(struct built *b)
{
	sbcl__release(&b->v.h);
	for (int i = 0; i < b->v.n; i++)
		free(b->v.s[i].b);
	free(b);
}

static void want(struct vheap *v, uint64_t pc, const char *name, const char *version)
{
	char buf[SBCL_NAME_MAX];
	int n = sbcl__name_pc(&v->h, pc, buf, sizeof(buf));

	if (n < 0 || strcmp(buf, name))
		fail_msg("%s: pc %" PRIx64 ": %s (%d), expected %s", version, pc, n < 0 ? "" : buf,
			 n, name);
}

static void test_each_release(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(releases); i++) {
		struct built *b = build(&releases[i]);
		struct vheap *v = &b->v;
		const char *r = releases[i].version;

		want(v, PC_ALPHA, "LISPHOT::ALPHA-WORK", r);
		want(v, PC_BETA, "(SETF LISPHOT:BETA)", r);
		want(v, PC_MAIN, "|main loop|", r);
		want(v, PC_ASM(b), "SB-VM::GENERIC-<", r);
		want(v, PC_ASM(b) - 10, "SB-VM::GENERIC-+", r);
		built_free(b);
	}
}

/* What changes between releases: each range's facts, from the sources. */
static void test_what_changes(void **state)
{
	const struct sbcl_layout *l229 = sbcl__layout("2.2.9"), *l240 = sbcl__layout("2.4.0");
	const struct sbcl_layout *l247 = sbcl__layout("2.4.7"), *l267 = sbcl__layout("2.6.7");

	(void)state;
	assert_true(l229->verified);
	assert_int_equal(l229->nil, NIL229);
	for (size_t i = 1; i < ARRAY_SIZE(releases); i++)
		assert_false(sbcl__layout(releases[i].version)->verified);
	assert_int_equal(l229->debug_info_word, 2);
	assert_int_equal(l240->debug_info_word, 3);
	assert_false(sbcl__layout("2.4.6")->pkg_id_in_header);
	assert_true(l247->pkg_id_in_header);
	assert_int_equal(sbcl__layout("2.6.6")->filler_widetag, 0x6d);
	assert_int_equal(l267->filler_widetag, 0x71);
	assert_int_equal(sbcl__layout("2.3.1")->pkg_ext_slot, 9);
	assert_int_equal(sbcl__layout("2.3.2")->pkg_ext_slot, 8);
	assert_false(sbcl__layout("2.2.11")->cells_in_cdr);
	assert_true(sbcl__layout("2.3.0")->cells_in_cdr);
	assert_int_equal(sbcl__layout("2.6.1")->sso_bytes, 2);
	assert_int_equal(sbcl__layout("2.6.2")->sso_bytes, 4);
	assert_int_equal(sbcl__layout("2.6.3")->card_bytes, 4096);
	assert_int_equal(sbcl__layout("2.6.4")->card_bytes, 2048);
	/* Past 2.2.x NIL moves between releases: known by its shape. */
	assert_int_equal(sbcl__layout("2.3.0")->nil, 0);
}

static void test_unknown_versions(void **state)
{
	static const char *const unknown[] = {
		"2.2.8",  "2.6.8", "2.7.0", "3.0.0", "1.5.9",	 "2.2.90", "2.4.7.45-gabcdef",
		"2.2.9.", "2.2",   "",	    "2.x.9", "22222.2.9"
	};
	struct built *b = build(&releases[ARRAY_SIZE(releases) - 1]);
	char buf[SBCL_NAME_MAX];
	uint64_t code;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++)
		if (sbcl__layout(unknown[i]))
			fail_msg("%s has a layout", unknown[i]);
	assert_null(sbcl__layout(NULL));
	assert_string_equal(sbcl__known_versions(), "2.2.9 to 2.6.7");
	/* A runtime without a layout: no code found, no name, nothing read. */
	b->v.h.l = NULL;
	assert_int_equal(sbcl__find_code(&b->v.h, PC_ALPHA, &code), -ENOENT);
	assert_int_equal(sbcl__name_pc(&b->v.h, PC_ALPHA, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&b->v.h, PC_MAIN, buf, sizeof(buf)), -ENOENT);
	built_free(b);
}

/* NIL by its shape: a cons that is its own car and cdr but in no symbol
 * is no end of list (the name is cut at the list's bound, not ended early). */
static void test_nil_by_shape(void **state)
{
	struct built *b = build(&releases[11]);
	struct vheap *v = &b->v;
	uint64_t self = alloc(v, 32) + 16, names[1];
	uint32_t offs[1] = { 0x30 };
	char buf[SBCL_NAME_MAX];

	(void)state;
	w64(v, self - 8, 0x1234567b); /* no symbol header */
	w64(v, self, self + 7);
	w64(v, self + 8, self + 7);
	names[0] = cons(v, symbol(v, "X", 5), self + 7);
	code(v, TLSF + 0x100, 0x200 / 8, 8, 1, offs, names);
	assert_true(sbcl__name_pc(&v->h, PC_MAIN, buf, sizeof(buf)) > 0);
	assert_true(!strncmp(buf, "(LISPHOT::X ", 12));
	if (!strstr(buf, "...)"))
		fail_msg("%s", buf);
	built_free(b);
}

/* The runtime's version from the strings of its .rodata. */
static void test_rodata_version(void **state)
{
	static const struct {
		const char *rodata; /* strings, NUL-separated (and ended) */
		size_t len;
		const char *layout; /* the release whose layout it gets, or NULL */
		const char *version;
	} cases[] = {
#define C(s, l, v) { s, sizeof(s), l, v }
		C("GCC: (Debian 12.2.0-14) 12.2.0\0%s\n\0002.2.9.debian\0", "2.2.9",
		  "2.2.9.debian"),
		C("2.6.7", "2.6.7", "2.6.7"),
		C("2.6.8", NULL, "2.6.8"),
		C("2.4.7.45-gabcdef", NULL, "2.4.7.45-gabcdef"),
		/* zstd's version is no SBCL's: not in doubt. */
		C("1.5.6\0002.3.4", "2.3.2", "2.3.4"),
		C("2.2.9\0002.2.9.debian", "2.2.9", "2.2.9"),
		/* Two releases, or one without a layout: which is SBCL's is in doubt. */
		C("2.4.7\0002.6.8", NULL, "2.6.8"),
		C("2.6.8\0002.4.7", NULL, "2.6.8"),
		C("2.2.9\0002.4.0", NULL, "2.2.9"),
		C("no version here", NULL, ""),
#undef C
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char v[32] = "x";
		const struct sbcl_layout *l =
			sbcl__rodata_layout(cases[i].rodata, cases[i].len, v, sizeof(v));

		if (l != (cases[i].layout ? sbcl__layout(cases[i].layout) : NULL))
			fail_msg("case %zu: layout %s", i, l ? l->version : "none");
		assert_string_equal(v, cases[i].version);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_release),	 cmocka_unit_test(test_what_changes),
		cmocka_unit_test(test_unknown_versions), cmocka_unit_test(test_nil_by_shape),
		cmocka_unit_test(test_rodata_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
