// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sbcl.c - SBCL's heap walker (src/lang/sbcl.c): names read from a
 * recorded heap of Debian 12's SBCL 2.2.9 (tests/unit/data/sbcl229_heap.txt:
 * every read the walker made naming Lisp functions of a running
 * tests/workloads/lisphot.lisp), then a heap written here in the same
 * layout: the core's text found through the page index, compiled code
 * through the TLSF pages' scan starts, names as SBCL prints them, and
 * hostile objects (bad sizes, trailers, cyclic lists, huge strings).
 */
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>

#include "lang/sbcl.h"

/* --- memory: segments of bytes at addresses ------------------------------------ */

struct seg {
	uint64_t base;
	uint8_t *b;
	uint8_t *known; /* per byte: readable */
	size_t len;
};

struct mem {
	struct seg s[32];
	int n;
	unsigned reads;
};

static struct seg *seg_new(struct mem *m, uint64_t base, size_t len, bool known)
{
	struct seg *s = &m->s[m->n++];

	assert_true(m->n <= 32);
	s->base = base;
	s->len = len;
	s->b = calloc(1, len);
	s->known = malloc(len);
	memset(s->known, known, len);
	return s;
}

static void mem_free(struct mem *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->s[i].b);
		free(m->s[i].known);
	}
}

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;

	m->reads++;
	for (int i = 0; i < m->n; i++) {
		struct seg *s = &m->s[i];

		if (addr < s->base || addr - s->base > s->len || len > s->len - (addr - s->base))
			continue;
		for (size_t k = 0; k < len; k++)
			if (!s->known[addr - s->base + k])
				return -EFAULT;
		memcpy(buf, s->b + (addr - s->base), len);
		return 0;
	}
	return -EFAULT;
}

static uint8_t *at(struct mem *m, uint64_t addr)
{
	for (int i = 0; i < m->n; i++)
		if (addr >= m->s[i].base && addr - m->s[i].base < m->s[i].len)
			return m->s[i].b + (addr - m->s[i].base);
	fail_msg("no segment at %" PRIx64, addr);
	return NULL;
}

static void w64(struct mem *m, uint64_t addr, uint64_t v)
{
	memcpy(at(m, addr), &v, 8);
}

static void w32(struct mem *m, uint64_t addr, uint32_t v)
{
	memcpy(at(m, addr), &v, 4);
}

static void w16(struct mem *m, uint64_t addr, uint16_t v)
{
	memcpy(at(m, addr), &v, 2);
}

/* --- the recorded heap ------------------------------------------------------------ */

static void test_recorded_229(void **state)
{
	FILE *f = fopen("tests/unit/data/sbcl229_heap.txt", "r");
	struct mem m = { 0 };
	struct sbcl_heap h = { .read = mem_read, .ctx = &m };
	char line[70000], name[SBCL_NAME_MAX];
	struct {
		uint64_t pc;
		char want[128];
	} pcs[16];
	int npcs = 0;
	struct seg *s;

	(void)state;
	assert_non_null(f);
	h.l = sbcl__layout("2.2.9.debian");
	assert_non_null(h.l);
	/* One segment per read, its bytes known. */
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char hex[65536 * 2 + 1];

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line,
			   "# text_start %" SCNx64 " text_end %" SCNx64 " tlsf_start %" SCNx64
			   " sso %" SCNx64 " package_vector %" SCNx64,
			   &h.text_start, &h.text_end, &h.tlsf_start, &h.sso,
			   &h.package_vector) == 5)
			continue;
		if (sscanf(line, "# pc %" SCNx64 " %127s", &pcs[npcs].pc, pcs[npcs].want) == 2) {
			npcs++;
			continue;
		}
		if (line[0] == '#' || sscanf(line, "%" SCNx64 " %131072s", &addr, hex) != 2)
			continue;
		s = NULL;
		for (int i = 0; i < m.n; i++)
			if (addr >= m.s[i].base &&
			    addr + strlen(hex) / 2 <= m.s[i].base + m.s[i].len)
				s = &m.s[i];
		if (!s) {
			/* A segment of 64 KiB around the read (reads cluster: one object). */
			uint64_t base = addr & ~0xffffull;

			s = seg_new(&m, base, 0x20000, false);
		}
		for (size_t k = 0; k < strlen(hex) / 2; k++) {
			unsigned v;

			sscanf(hex + 2 * k, "%2x", &v);
			s->b[addr - s->base + k] = (uint8_t)v;
			s->known[addr - s->base + k] = 1;
		}
	}
	fclose(f);
	assert_true(npcs >= 5);
	for (int i = 0; i < npcs; i++) {
		int n = sbcl__name_pc(&h, pcs[i].pc, name, sizeof(name));

		if (!strcmp(pcs[i].want, "-")) {
			assert_int_equal(n, -ENOENT);
		} else {
			assert_int_equal(n, (int)strlen(pcs[i].want));
			assert_string_equal(name, pcs[i].want);
		}
	}
	sbcl__release(&h);
	mem_free(&m);
}

/* --- a heap written here ------------------------------------------------------------- */

#define TEXT   0x52a00000ull
#define CORE   (TEXT + 0x2000) /* the core's text: two pages */
#define TLSF   CORE
#define TEXT_E (TEXT + 0x4000)
#define DYN    0x1000000000ull
#define SSO    0x7f0000000000ull
#define NIL    0x50000117ull

struct heap {
	struct mem m;
	struct sbcl_heap h;
	uint64_t free; /* next free byte of DYN */
	uint64_t pkg_cl, pkg_user, pkg_kw, pkg_impl, pkg_lisphot;
};

static uint64_t dyn_alloc(struct heap *hp, size_t bytes)
{
	uint64_t a = hp->free;

	hp->free += (bytes + 15) & ~15ull;
	assert_true(hp->free <= DYN + 0x10000);
	return a;
}

static uint64_t mkstring(struct heap *hp, const char *s, bool wide)
{
	size_t n = strlen(s);
	uint64_t a = dyn_alloc(hp, 16 + n * (wide ? 4 : 1));

	w64(&hp->m, a, wide ? 0xe5 : 0xe1);
	w64(&hp->m, a + 8, (uint64_t)n << 1);
	for (size_t i = 0; i < n; i++) {
		if (wide)
			w32(&hp->m, a + 16 + 4 * i, (uint8_t)s[i]);
		else
			*at(&hp->m, a + 16 + i) = (uint8_t)s[i];
	}
	return a + 15;
}

static uint64_t mksym(struct heap *hp, const char *name, uint64_t pkg_id)
{
	uint64_t str = mkstring(hp, name, false), a = dyn_alloc(hp, 48);

	w64(&hp->m, a, 0x52d);
	w64(&hp->m, a + 40, pkg_id << 48 | str);
	return a + 15;
}

static uint64_t cons(struct heap *hp, uint64_t car, uint64_t cdr)
{
	uint64_t a = dyn_alloc(hp, 16);

	w64(&hp->m, a, car);
	w64(&hp->m, a + 8, cdr);
	return a + 7;
}

static uint64_t list(struct heap *hp, int n, const uint64_t *v)
{
	uint64_t l = NIL;

	while (n-- > 0)
		l = cons(hp, v[n], l);
	return l;
}

/* A code object at addr: nwords in all, boxed words (names from word 4), the
 * simple-funs at text offsets offs[] (16-byte aligned objects). */
static void mkcode(struct heap *hp, uint64_t addr, uint32_t nwords, uint32_t boxed_words, int nfun,
		   const uint32_t *offs, const uint64_t *names)
{
	uint64_t end = addr + 8ull * nwords;

	w64(&hp->m, addr, (uint64_t)nwords << 32 | 0x35);
	w64(&hp->m, addr + 8, 0x100000000ull | (8ull * boxed_words));
	for (int i = 0; i < nfun; i++) {
		w64(&hp->m, addr + 8 * (4 + 4 * i), names[i]);
		w64(&hp->m, addr + 8ull * boxed_words + offs[i], 0x41);
		w32(&hp->m, end - 8 - 4 * i, offs[i]);
	}
	w16(&hp->m, end - 4, (uint16_t)(nfun << 5 | 7));
	w16(&hp->m, end - 2, (uint16_t)(4 + 4 * nfun));
}

static void mkfiller(struct heap *hp, uint64_t addr, uint32_t nwords)
{
	w64(&hp->m, addr, (uint64_t)nwords << 32 | 0x6d);
}

static uint64_t mkpkg(struct heap *hp, const char *name)
{
	uint64_t a = dyn_alloc(hp, 8 * 16); /* its slots to SOURCE-LOCATION, 0 */

	w64(&hp->m, a, 0x5010123300003c39ull);
	w64(&hp->m, a + 8, mkstring(hp, name, false));
	return a + 3;
}

static struct heap *heap_new(void)
{
	struct heap *hp = calloc(1, sizeof(*hp));
	uint64_t vec;
	const char *pkgs[] = { "COMMON-LISP", "COMMON-LISP-USER", "KEYWORD", "SB-IMPL", "LISPHOT" };

	seg_new(&hp->m, TEXT, TEXT_E - TEXT, true);
	seg_new(&hp->m, DYN, 0x10000, true);
	seg_new(&hp->m, SSO, 64, true);
	hp->free = DYN;
	hp->h = (struct sbcl_heap){ .l = sbcl__layout("2.2.9"),
				    .read = mem_read,
				    .ctx = &hp->m,
				    .text_start = TEXT,
				    .text_end = TEXT_E,
				    .tlsf_start = TLSF,
				    .sso = SSO };
	vec = dyn_alloc(hp, 16 + 8 * 6);
	w64(&hp->m, vec, 0x89);
	w64(&hp->m, vec + 8, 6 << 1);
	w64(&hp->m, vec + 16, NIL);
	for (int i = 0; i < 5; i++)
		w64(&hp->m, vec + 24 + 8 * i, mkpkg(hp, pkgs[i]));
	hp->h.package_vector = vec + 15;
	hp->pkg_cl = 1;
	hp->pkg_user = 2;
	hp->pkg_kw = 3;
	hp->pkg_impl = 4;
	hp->pkg_lisphot = 5;
	/* TLSF pages: no object start on either yet. */
	for (int i = 0; i < 32; i++)
		w16(&hp->m, SSO + 2 * i, 0xffff);
	return hp;
}

static void heap_free(struct heap *hp)
{
	sbcl__release(&hp->h);
	mem_free(&hp->m);
	free(hp);
}

static void want_name(struct heap *hp, uint64_t pc, const char *want)
{
	char buf[SBCL_NAME_MAX];
	int n = sbcl__name_pc(&hp->h, pc, buf, sizeof(buf));

	if (n < 0)
		fail_msg("pc %" PRIx64 ": %s, expected %s", pc, strerror(-n), want);
	assert_string_equal(buf, want);
	assert_int_equal(n, (int)strlen(want));
}

/*
 * The core's text: a code object of three simple-funs across the first
 * page boundary, a filler, one of a single fun; the TLSF pages: one object
 * found from its page's scan start, one from an earlier page's.
 */
static struct heap *standard_heap(void)
{
	struct heap *hp = heap_new();
	uint64_t kw_in = mksym(hp, "IN", hp->pkg_kw);
	uint64_t pscript = mksym(hp, "PROCESS-SCRIPT", hp->pkg_impl);
	uint64_t flet_names[] = { mksym(hp, "FLET", hp->pkg_cl), mkstring(hp, "H1", false), kw_in,
				  pscript };
	uint64_t setf_names[] = { mksym(hp, "SETF", hp->pkg_cl), mksym(hp, "CAR", hp->pkg_cl) };
	uint64_t lambda_names[] = { mksym(hp, "LAMBDA", hp->pkg_cl), NIL, kw_in,
				    mksym(hp, "DRIVE", hp->pkg_lisphot) };
	uint64_t names3[] = { pscript, list(hp, 4, flet_names), list(hp, 2, setf_names) };
	uint32_t offs3[] = { 0x10, 0x400, 0x1100 };
	uint64_t names1[] = { list(hp, 4, lambda_names) };
	uint32_t offs1[] = { 0x8 };
	uint64_t names_a[] = { mksym(hp, "ALPHA-WORK", hp->pkg_lisphot) };
	uint64_t names_b[] = { mksym(hp, "main loop", hp->pkg_user) };
	uint32_t offs_a[] = { 0x10 };

	/* Core text: [TEXT, +0x1400) code of 3 funs, boxed 16 words; a filler to
	 * +0x1800; code of 1 fun (boxed 11 words: 0x58 + 8 aligned) to CORE. */
	mkcode(hp, TEXT, 0x1400 / 8, 16, 3, offs3, names3);
	mkfiller(hp, TEXT + 0x1400, 0x400 / 8);
	mkcode(hp, TEXT + 0x1800, 0x800 / 8, 11, 1, offs1, names1);
	/* TLSF: ALPHA-WORK at CORE + 0x100 (page 0's scan start), 0x1200
	 * bytes long, over into page 1, which has no start of its own; then a
	 * free block, then "main loop" at CORE + 0x1400 (page 1's start). */
	mkcode(hp, CORE + 0x100, 0x1200 / 8, 8, 1, offs_a, names_a);
	w64(&hp->m, CORE + 0x1300, (uint64_t)(0x100 / 8) << 32 | 0x135); /* free */
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs_a, names_b);
	mkfiller(hp, CORE + 0x1600, (TEXT_E - CORE - 0x1600) / 8);
	w16(&hp->m, SSO, 0x100);
	w16(&hp->m, SSO + 2, 0x400);
	return hp;
}

static void test_names(void **state)
{
	struct heap *hp = standard_heap();

	(void)state;
	want_name(hp, TEXT + 0x80 + 0x10, "SB-IMPL::PROCESS-SCRIPT");
	want_name(hp, TEXT + 0x80 + 0x3ff, "SB-IMPL::PROCESS-SCRIPT");
	want_name(hp, TEXT + 0x80 + 0x400, "(FLET \"H1\" :IN SB-IMPL::PROCESS-SCRIPT)");
	/* Page 1 of the core starts inside the first object: its index entry. */
	want_name(hp, TEXT + 0x80 + 0x1100 + 4, "(SETF CAR)");
	want_name(hp, TEXT + 0x1800 + 0x58 + 0x8 + 0x40, "(LAMBDA () :IN LISPHOT::DRIVE)");
	want_name(hp, CORE + 0x100 + 0x40 + 0x20, "LISPHOT::ALPHA-WORK");
	/* Page 1 of the TLSF pages: its scan start is after the pc. */
	want_name(hp, CORE + 0x1000 + 0x20, "LISPHOT::ALPHA-WORK");
	want_name(hp, CORE + 0x1400 + 0x60, "|main loop|");
	heap_free(hp);
}

static void test_no_name(void **state)
{
	struct heap *hp = standard_heap();
	char buf[SBCL_NAME_MAX];
	uint64_t code;

	(void)state;
	/* Outside text space, in a filler, a free block, a header, a trailer. */
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT - 1, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT_E, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x1500, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&hp->h, CORE + 0x1380, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x8, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x13fc, buf, sizeof(buf)), -ENOENT);
	/* Before the first simple-fun of its code. */
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x80 + 0x8, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(sbcl__find_code(&hp->h, TEXT + 0x1900, &code), 0);
	assert_int_equal(code, TEXT + 0x1800);
	/* A version it does not know has no layout. */
	assert_null(sbcl__layout("2.2.90"));
	assert_null(sbcl__layout("2.6.8"));
	assert_null(sbcl__layout(NULL));
	assert_non_null(sbcl__layout("2.2.9"));
	heap_free(hp);
}

/* The assembly routines' code object: no simple-funs; its debug-info (a
 * cons of) a hash table whose pairs map a routine to (start end . index). */
static void test_assembly_routines(void **state)
{
	struct heap *hp = standard_heap();
	uint64_t code = CORE + 0x1400, table = dyn_alloc(hp, 48), pairs = dyn_alloc(hp, 16 + 8 * 6);
	uint64_t r1[] = { 0 << 1, 15 << 1 }, r2[] = { 16 << 1, 47 << 1 };
	char buf[SBCL_NAME_MAX];

	(void)state;
	w64(&hp->m, code, (uint64_t)(0x200 / 8) << 32 | 0x35);
	w64(&hp->m, code + 8, 0x30);
	w64(&hp->m, code + 16, cons(hp, table + 3, 0));
	w64(&hp->m, table, 0x5010b15300004839ull);
	w64(&hp->m, table + 40, pairs + 15);
	w64(&hp->m, pairs, 0x89);
	w64(&hp->m, pairs + 8, 6 << 1);
	w64(&hp->m, pairs + 32, mksym(hp, "GENERIC-+", hp->pkg_impl));
	w64(&hp->m, pairs + 40, cons(hp, r1[0], cons(hp, r1[1], 1 << 1)));
	w64(&hp->m, pairs + 48, mksym(hp, "GENERIC-<", hp->pkg_impl));
	w64(&hp->m, pairs + 56, cons(hp, r2[0], cons(hp, r2[1], 2 << 1)));
	want_name(hp, code + 0x30 + 20, "SB-IMPL::GENERIC-<");
	want_name(hp, code + 0x30 + 15, "SB-IMPL::GENERIC-+");
	assert_int_equal(sbcl__name_pc(&hp->h, code + 0x30 + 100, buf, sizeof(buf)), -ENOENT);
	/* In the header: no name. */
	assert_true(sbcl__name_pc(&hp->h, code + 0x10, buf, sizeof(buf)) < 0);
	/* A table that is no instance: the code is not that object. */
	w64(&hp->m, code + 16, 0x1234);
	assert_int_equal(sbcl__name_pc(&hp->h, code + 0x30 + 20, buf, sizeof(buf)), -EINVAL);
	heap_free(hp);
}

/* A symbol in its package's EXTERNAL-SYMBOLS cells prints with one colon
 * (SB-KERNEL:TWO-ARG-XOR); one not there, or a table that cannot be read
 * (no instance, cells claiming 2^40 elements past the heap), with two. */
static void test_external_symbols(void **state)
{
	struct heap *hp = standard_heap();
	uint64_t code = CORE + 0x1400, table = dyn_alloc(hp, 48), pairs = dyn_alloc(hp, 16 + 8 * 6);
	uint64_t pkg, pht = dyn_alloc(hp, 48), cells = dyn_alloc(hp, 16 + 8 * 4), plus;

	(void)state;
	/* The assembly routines' object of test_assembly_routines. */
	w64(&hp->m, code, (uint64_t)(0x200 / 8) << 32 | 0x35);
	w64(&hp->m, code + 8, 0x30);
	w64(&hp->m, code + 16, cons(hp, table + 3, 0));
	w64(&hp->m, table, 0x5010b15300004839ull);
	w64(&hp->m, table + 40, pairs + 15);
	w64(&hp->m, pairs, 0x89);
	w64(&hp->m, pairs + 8, 6 << 1);
	plus = mksym(hp, "GENERIC-+", hp->pkg_impl);
	w64(&hp->m, pairs + 32, plus);
	w64(&hp->m, pairs + 40, cons(hp, 0 << 1, cons(hp, 15 << 1, 1 << 1)));
	w64(&hp->m, pairs + 48, mksym(hp, "GENERIC-<", hp->pkg_impl));
	w64(&hp->m, pairs + 56, cons(hp, 16 << 1, cons(hp, 47 << 1, 2 << 1)));
	/* SB-IMPL's external symbols: GENERIC-+ only. */
	pkg = *(uint64_t *)at(&hp->m, hp->h.package_vector - 15 + 16 + 8 * hp->pkg_impl);
	w64(&hp->m, pkg - 3 + 8 * 9, pht + 3);
	w64(&hp->m, pht, 0x5010b15300000839ull);
	w64(&hp->m, pht + 8, cells + 15);
	w64(&hp->m, cells, 0x89);
	w64(&hp->m, cells + 8, 4 << 1);
	w64(&hp->m, cells + 16, 0);
	w64(&hp->m, cells + 24, NIL);
	w64(&hp->m, cells + 32, plus);
	w64(&hp->m, cells + 40, 0);
	want_name(hp, code + 0x30 + 15, "SB-IMPL:GENERIC-+");
	want_name(hp, code + 0x30 + 20, "SB-IMPL::GENERIC-<");
	/* Cells claiming 2^40 elements: read up to the heap's end, then "::". */
	w64(&hp->m, cells + 32, 0);
	w64(&hp->m, cells + 8, 1ull << 41);
	want_name(hp, code + 0x30 + 15, "SB-IMPL::GENERIC-+");
	/* A table that is no instance. */
	w64(&hp->m, cells + 8, 4 << 1);
	w64(&hp->m, cells + 32, plus);
	want_name(hp, code + 0x30 + 15, "SB-IMPL:GENERIC-+");
	w64(&hp->m, pkg - 3 + 8 * 9, pht + 15);
	want_name(hp, code + 0x30 + 15, "SB-IMPL::GENERIC-+");
	heap_free(hp);
}

/* --- hostile heaps ------------------------------------------------------------------- */

static void test_bad_objects(void **state)
{
	struct heap *hp = standard_heap();
	char buf[SBCL_NAME_MAX];

	(void)state;
	/* A trailer claiming 2047 funs, one whose table runs past the code. */
	w16(&hp->m, TEXT + 0x1800 + 0x800 - 4, (uint16_t)(2047 << 5));
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x1800 + 0x100, buf, sizeof(buf)), -EINVAL);
	/* An offset past the text. */
	w16(&hp->m, TEXT + 0x1800 + 0x800 - 4, (uint16_t)(1 << 5));
	w32(&hp->m, TEXT + 0x1800 + 0x800 - 8, 0x7ff0);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x1800 + 0x100, buf, sizeof(buf)), -EINVAL);
	/* A simple-fun header that is not one. */
	w32(&hp->m, TEXT + 0x1800 + 0x800 - 8, 0x8);
	w64(&hp->m, TEXT + 0x1800 + 0x58 + 0x8, 0x2d);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x1800 + 0x100, buf, sizeof(buf)), -EINVAL);
	/* An object of size 0 in the TLSF pages stops the walk (no loop). */
	w64(&hp->m, CORE + 0x1300, 0x135);
	assert_int_equal(sbcl__name_pc(&hp->h, CORE + 0x1380, buf, sizeof(buf)), -EINVAL);
	/* A scan start that is no object start (misaligned) is not used: the
	 * walk starts from the page before. */
	w64(&hp->m, CORE + 0x1300, (uint64_t)(0x100 / 8) << 32 | 0x135);
	w16(&hp->m, SSO + 2, 0x404);
	want_name(hp, CORE + 0x1400 + 0x60, "|main loop|");
	heap_free(hp);

	/* The core's text does not end where the space says: no index, no names. */
	hp = standard_heap();
	mkfiller(hp, TEXT + 0x1400, 0x10000 / 8);
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x1900, buf, sizeof(buf)), -EINVAL);
	heap_free(hp);

	/* A text space over the cap is not indexed. */
	hp = standard_heap();
	hp->h.text_end = hp->h.tlsf_start = TEXT + SBCL_MAX_TEXT + 0x1000;
	assert_int_equal(sbcl__name_pc(&hp->h, TEXT + 0x100, buf, sizeof(buf)), -E2BIG);
	heap_free(hp);
}

static void test_hostile_names(void **state)
{
	struct heap *hp = standard_heap();
	uint64_t names[1], cyc, deep, s, big;
	uint32_t offs[] = { 0x10 };
	char buf[SBCL_NAME_MAX];
	int n;

	(void)state;
	/* A cyclic list: SBCL_LIST_MAX elements, then "...". */
	cyc = cons(hp, mksym(hp, "A", hp->pkg_cl), NIL);
	w64(&hp->m, cyc - 7 + 8, cyc);
	names[0] = cyc;
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs, names);
	n = sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "(A A A A"));
	assert_non_null(strstr(buf, " ...)"));
	/* A list of itself as its car: depth-bounded. */
	deep = cons(hp, NIL, NIL);
	w64(&hp->m, deep - 7, deep);
	names[0] = deep;
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs, names);
	n = sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_string_equal(buf, "(((((...)))))");
	/* A string that claims 2^40 characters: the first SBCL_STRING_MAX. */
	s = mkstring(hp, "LONG", true);
	w64(&hp->m, s - 15 + 8, 1ull << 41);
	big = mksym(hp, "X", hp->pkg_cl);
	w64(&hp->m, big - 15 + 40, hp->pkg_user << 48 | s);
	names[0] = big;
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs, names);
	n = sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_true(n > 0 && n < (int)sizeof(buf));
	assert_true(!strncmp(buf, "LONG", 4));
	/* A package id past the vector, a name that is no string, an object of
	 * an unknown kind: a mark, no read outside what was given. */
	w64(&hp->m, big - 15 + 40, 99ull << 48 | mkstring(hp, "Y", false));
	n = sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_string_equal(buf, "?::Y");
	w64(&hp->m, big - 15 + 40, hp->pkg_cl << 48 | (DYN + 0x20000 + 15));
	sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	names[0] = 0x1234567b; /* a function pointer */
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs, names);
	sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	/* A small buffer: cut, with "...", NUL-terminated. */
	names[0] = mkstring(hp, "A-RATHER-LONG-ASSEMBLY-ROUTINE-NAME", false);
	mkcode(hp, CORE + 0x1400, 0x200 / 8, 8, 1, offs, names);
	n = sbcl__name_pc(&hp->h, CORE + 0x1400 + 0x60, buf, 12);
	assert_int_equal(n, 11);
	assert_string_equal(buf, "\"A-RATHE...");
	heap_free(hp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_229),	 cmocka_unit_test(test_names),
		cmocka_unit_test(test_no_name),		 cmocka_unit_test(test_assembly_routines),
		cmocka_unit_test(test_bad_objects),	 cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_external_symbols),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
