// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_sbcl_dyn.c - SBCL code in dynamic space (src/lang/sbcl.c,
 * dyn_find_code): a heap in 2.2.9's layout written here - page_table's
 * entries (scan starts in words and, for page-aligned starts, in halves of
 * a card), code pages holding funcallable instances and code objects
 * across pages - and hostile tables (a scan start too far back, into the
 * middle of an object, pages of other types); then a kept name re-checked
 * against its code object's serial number: code of another serial number
 * made at the same place with the same header is named anew; the range of
 * a simple-fun's instructions (annotate).
 */
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>

#include "lang/sbcl.h"

#define DYN   0x1000000000ull
#define PAGE  0x8000ull
#define NPAGE 6
#define PT    0x7f0000000000ull /* page_table's entries */
#define MISC  0x20000000ull	/* names */

struct mem {
	uint64_t base[3];
	uint8_t *b[3];
	size_t len[3];
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;

	for (int i = 0; i < 3; i++) {
		if (addr < m->base[i] || addr - m->base[i] > m->len[i] ||
		    len > m->len[i] - (addr - m->base[i]))
			continue;
		memcpy(buf, m->b[i] + (addr - m->base[i]), len);
		return 0;
	}
	return -EFAULT;
}

static uint8_t *at(struct mem *m, uint64_t addr)
{
	for (int i = 0; i < 3; i++)
		if (addr >= m->base[i] && addr - m->base[i] < m->len[i])
			return m->b[i] + (addr - m->base[i]);
	fail_msg("no memory at %" PRIx64, addr);
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

/* page_table[i]: scan start offset (as stored), words used, type. */
static void page(struct mem *m, int i, uint32_t sso, uint8_t type)
{
	w32(m, PT + 8 * i, sso);
	w16(m, PT + 8 * i + 4, 0);
	*at(m, PT + 8 * i + 6) = type;
}

static uint64_t misc_free = MISC;

static uint64_t mkstring(struct mem *m, const char *s)
{
	size_t n = strlen(s);
	uint64_t a = misc_free;

	misc_free += (16 + n + 15) & ~15ull;
	w64(m, a, 0xe1);
	w64(m, a + 8, (uint64_t)n << 1);
	memcpy(at(m, a + 16), s, n);
	return a + 15;
}

/* A code object of one simple-fun at text offset 0x10 named name; boxed 8
 * words; serial in the high half of its first instruction word. */
static void mkcode(struct mem *m, uint64_t addr, uint32_t nwords, const char *name, uint32_t serial)
{
	uint64_t end = addr + 8ull * nwords;

	w64(m, addr, (uint64_t)nwords << 32 | 0x40000000 | 0x35); /* a GC bit set */
	w64(m, addr + 8, 8 * 8);
	w64(m, addr + 8 * 4, mkstring(m, name));
	w64(m, addr + 8 * 8, (uint64_t)serial << 32);
	w64(m, addr + 8 * 8 + 0x10, 0x41);
	w32(m, end - 8, 0x10);
	w16(m, end - 4, (uint16_t)(1 << 5 | 7));
	w16(m, end - 2, 8);
}

struct heap {
	struct mem m;
	struct sbcl_heap h;
};

/*
 * Page 0: mixed (a code object on it is not looked at). Page 1: a
 * funcallable instance, then ALPHA (0x9000 bytes) into page 2, whose scan
 * start is ALPHA (0x7fc0 bytes back, in words); BETA after it. Page 3:
 * GAMMA, 2 pages and 0x100 long, so pages 4 and 5 start page-aligned
 * offsets back (in halves of a card).
 */
static void heap_init(struct heap *hp)
{
	struct mem *m = &hp->m;

	memset(hp, 0, sizeof(*hp));
	misc_free = MISC;
	m->base[0] = DYN;
	m->len[0] = NPAGE * PAGE;
	m->base[1] = PT;
	m->len[1] = 8 * NPAGE;
	m->base[2] = MISC;
	m->len[2] = 0x10000;
	for (int i = 0; i < 3; i++)
		m->b[i] = calloc(1, m->len[i]);
	hp->h = (struct sbcl_heap){ .l = sbcl__layout("2.2.9"),
				    .read = mem_read,
				    .ctx = m,
				    .dyn_start = DYN,
				    .dyn_size = NPAGE * PAGE,
				    .page_table = PT };
	mkcode(m, DYN + 0x100, 0x40, "MIXED", 1);
	page(m, 0, 0, 3);
	w64(m, DYN + PAGE, 0x501117730000073dull); /* a FIN of 8 words */
	mkcode(m, DYN + PAGE + 0x40, 0x9000 / 8, "ALPHA", 2);
	page(m, 1, 0, 7);
	mkcode(m, DYN + PAGE + 0x9040, 0x400 / 8, "BETA", 3);
	page(m, 2, 0x7fc0 >> 3, 7);
	mkcode(m, DYN + 3 * PAGE, (2 * PAGE + 0x100) / 8, "GAMMA", 4);
	page(m, 3, 0, 7 | 32); /* an open region: words used not kept */
	page(m, 4, (PAGE >> 9) | 1, 7);
	page(m, 5, (2 * PAGE >> 9) | 1, 7);
}

static void heap_fini(struct heap *hp)
{
	sbcl__release(&hp->h);
	for (int i = 0; i < 3; i++)
		free(hp->m.b[i]);
}

static void want(struct heap *hp, uint64_t pc, const char *name)
{
	char buf[SBCL_NAME_MAX];
	int n = sbcl__name_pc(&hp->h, pc, buf, sizeof(buf));

	if (n < 0)
		fail_msg("pc %" PRIx64 ": %s, expected %s", pc, strerror(-n), name);
	assert_string_equal(buf, name);
}

static void want_err(struct heap *hp, uint64_t pc, int err)
{
	char buf[SBCL_NAME_MAX];

	assert_int_equal(sbcl__name_pc(&hp->h, pc, buf, sizeof(buf)), err);
}

static void test_dynamic_space(void **state)
{
	struct heap hp;

	(void)state;
	heap_init(&hp);
	want(&hp, DYN + PAGE + 0x40 + 0x60, "\"ALPHA\"");
	want(&hp, DYN + 2 * PAGE + 0x20, "\"ALPHA\""); /* page 2: from its scan start */
	want(&hp, DYN + PAGE + 0x9040 + 0x60, "\"BETA\"");
	want(&hp, DYN + 3 * PAGE + 0x60, "\"GAMMA\"");
	want(&hp, DYN + 4 * PAGE + 0x10, "\"GAMMA\"");
	want(&hp, DYN + 5 * PAGE + 0x10, "\"GAMMA\"");
	want_err(&hp, DYN + PAGE + 0x20, -ENOENT);	    /* in the funcallable instance */
	want_err(&hp, DYN + 0x100 + 0x60, -ENOENT);	    /* not a code page */
	want_err(&hp, DYN + PAGE + 0x9440 + 0x10, -EINVAL); /* past BETA: no object */
	want_err(&hp, DYN + NPAGE * PAGE, -ENOENT);	    /* past the space */
	heap_fini(&hp);
}

static void test_hostile_page_table(void **state)
{
	struct heap hp;

	(void)state;
	heap_init(&hp);
	/* Further back than SBCL_MAX_DYN_WALK, before the space, "iterate". */
	page(&hp.m, 5, ((SBCL_MAX_DYN_WALK + 2 * PAGE) >> 9) | 1, 7);
	want_err(&hp, DYN + 5 * PAGE + 0x10, -ENOENT);
	page(&hp.m, 1, (2 * PAGE) >> 9 | 1, 7);
	want_err(&hp, DYN + PAGE + 0x60, -ENOENT);
	page(&hp.m, 4, 0xffffffffu, 7);
	want_err(&hp, DYN + 4 * PAGE + 0x10, -ENOENT);
	/* Into the middle of ALPHA (its bytes are no header). */
	page(&hp.m, 2, 0x100 >> 3, 7);
	want_err(&hp, DYN + 2 * PAGE + 0x20, -EINVAL);
	/* A FIN claiming 0x7fff words: walked over, never past pc's page. */
	page(&hp.m, 1, 0, 7);
	w64(&hp.m, DYN + PAGE, 0x5011177300fffe3dull);
	want_err(&hp, DYN + PAGE + 0x60, -ENOENT);
	heap_fini(&hp);
}

/* hp made and a process sp reading it, BETA named at pc there first: the name, kept. */
static const char *beta_named(struct heap *hp, struct sbcl_proc *sp, uint64_t pc)
{
	const char *n;

	heap_init(hp);
	*sp = (struct sbcl_proc){ .h = hp->h };
	n = sbcl__name(sp, pc);
	assert_non_null(n);
	assert_string_equal(n, "\"BETA\"");
	return n;
}

/* sp's names freed (not the heap it shares with hp), then hp. */
static void proc_fini(struct heap *hp, struct sbcl_proc *sp)
{
	sp->h = (struct sbcl_heap){ 0 };
	sbcl__proc_free(sp);
	heap_fini(hp);
}

static void test_moved_code_renamed(void **state)
{
	struct heap hp;
	struct sbcl_proc sp;
	uint64_t pc = DYN + PAGE + 0x9040 + 0x60;
	const char *n;

	(void)state;
	n = beta_named(&hp, &sp, pc);
	/* The GC's bits in the header change: still BETA, kept. */
	w64(&hp.m, DYN + PAGE + 0x9040, (uint64_t)(0x400 / 8) << 32 | 0x35);
	assert_ptr_equal(sbcl__name(&sp, pc), n);
	/* BETA moved; DELTA made at its place: the same header and boxed size,
	 * another serial number. */
	mkcode(&hp.m, DYN + PAGE + 0x9040, 0x400 / 8, "DELTA", 5);
	n = sbcl__name(&sp, pc);
	assert_non_null(n);
	assert_string_equal(n, "\"DELTA\"");
	/* Then other data there: no name (not BETA's, not DELTA's). */
	w64(&hp.m, DYN + PAGE + 0x9040, 0);
	assert_null(sbcl__name(&sp, pc));
	proc_fini(&hp, &sp);
}

static int gone_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return -ESRCH;
}

static int fault_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return -EFAULT;
}

/* The process gone (the drain after a command exited: its memory reads
 * -ESRCH): a name checked before is kept, a pc never named gets none; a
 * live process's page that cannot be read (-EFAULT) keeps no name. */
static void test_gone_process_keeps_checked_names(void **state)
{
	struct heap hp;
	struct sbcl_proc sp;
	uint64_t pc = DYN + PAGE + 0x9040 + 0x60;
	const char *n;

	(void)state;
	n = beta_named(&hp, &sp, pc);
	sp.h.read = gone_read;
	assert_ptr_equal(sbcl__name(&sp, pc), n);
	assert_null(sbcl__name(&sp, DYN + PAGE + 0x40 + 0x60)); /* ALPHA: never named */
	sp.h.read = fault_read;
	assert_null(sbcl__name(&sp, pc));
	proc_fini(&hp, &sp);
}

/*
 * A GC between a sample and its drain: BETA sampled, moved away, DELTA
 * made at its place (a higher serial number) before the drain - DELTA is
 * not named in that drain (the sample was BETA's), but is at the next
 * (no GC since). Old code moved there by one GC keeps its name; by two,
 * not (two GCs can move old code into a place one freed).
 */
static void test_no_name_across_a_gc(void **state)
{
	struct heap hp;
	struct sbcl_proc sp = { 0 };
	uint64_t pc = DYN + PAGE + 0x9040 + 0x60, gcs = MISC + 0xff00;
	const char *n;

	(void)state;
	heap_init(&hp);
	sp.h = hp.h;
	sp.gc_var = gcs;
	w32(&hp.m, gcs, 5);
	sbcl__new_drain(&sp); /* the first: nothing to compare with */
	n = sbcl__name(&sp, pc);
	assert_non_null(n);
	assert_string_equal(n, "\"BETA\"");
	w32(&hp.m, gcs, 6);
	mkcode(&hp.m, DYN + PAGE + 0x9040, 0x400 / 8, "DELTA", 9);
	sbcl__new_drain(&sp);
	assert_null(sbcl__name(&sp, pc));
	assert_int_equal(sp.gc_dropped, 1);
	assert_string_equal(sbcl__name(&sp, DYN + PAGE + 0x40 + 0x60), "\"ALPHA\""); /* old code */
	sbcl__new_drain(&sp); /* no GC since */
	n = sbcl__name(&sp, pc);
	assert_non_null(n);
	assert_string_equal(n, "\"DELTA\"");
	/* One GC: older code (serial 2 <= 9 named by then) moved to pc's place. */
	w32(&hp.m, gcs, 7);
	mkcode(&hp.m, DYN + PAGE + 0x9040, 0x400 / 8, "EPSILON", 2);
	sbcl__new_drain(&sp);
	assert_string_equal(sbcl__name(&sp, pc), "\"EPSILON\"");
	/* Two GCs: not even old code. */
	w32(&hp.m, gcs, 9);
	mkcode(&hp.m, DYN + PAGE + 0x9040, 0x400 / 8, "ZETA", 3);
	sbcl__new_drain(&sp);
	assert_null(sbcl__name(&sp, pc));
	/* A kept name still checked is given, GC or not. */
	assert_string_equal(sbcl__name(&sp, DYN + PAGE + 0x40 + 0x60), "\"ALPHA\"");
	assert_int_equal(sp.gc_dropped, 2);
	proc_fini(&hp, &sp);
}

/* annotate's range: the simple-fun's instructions, past its header and self
 * words, to the code's trailer (one simple-fun); none before it. */
static void test_fun_range(void **state)
{
	struct heap hp;
	uint64_t start, end, code = DYN + PAGE + 0x9040;

	(void)state;
	heap_init(&hp);
	assert_int_equal(sbcl__fun_range(&hp.h, code + 0x40 + 0x30, &start, &end), 0);
	assert_int_equal(start, code + 0x40 + 0x10 + 0x10);
	assert_int_equal(end, code + 0x400 - 8);
	assert_int_equal(sbcl__fun_range(&hp.h, code + 0x40 + 0x8, &start, &end), -ENOENT);
	assert_int_equal(sbcl__fun_range(&hp.h, code + 0x400 - 4, &start, &end), -ENOENT);
	heap_fini(&hp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dynamic_space),
		cmocka_unit_test(test_hostile_page_table),
		cmocka_unit_test(test_moved_code_renamed),
		cmocka_unit_test(test_gone_process_keeps_checked_names),
		cmocka_unit_test(test_no_name_across_a_gc),
		cmocka_unit_test(test_fun_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
