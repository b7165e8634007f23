// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_gopclntab.c - Go's pc-line table: the same small program written in
 * each layout (Go 1.2, 1.16, 1.18, 1.20 - the tables other Go releases
 * write, byte for byte as their linkers lay them out), then a real binary
 * built by this machine's Go (1.19), with and without symbols: names,
 * files, lines, inlined frames, stack-pointer deltas, the unwind rows made
 * from them, the runtime's moduledata, and corrupt tables; finding a table
 * without its section (sstrip) in linear time among lookalike headers.
 */
#include "testutil.h"

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>

#include "base/budget.h"
#include "lang/gopclntab.h"
#include "sym/elfsym.h"
#include "unwind/table.h"

/* --- a table writer ------------------------------------------------------------- */

struct buf {
	uint8_t b[4096];
	size_t n;
};

static size_t put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->n;

	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
	return at;
}

static size_t put32(struct buf *b, uint32_t v)
{
	return put(b, &v, 4);
}

static size_t put64(struct buf *b, uint64_t v)
{
	return put(b, &v, 8);
}

static void align(struct buf *b, uint64_t base, size_t a)
{
	while ((base + b->n) % a)
		b->b[b->n++] = 0;
}

static void varint(struct buf *b, uint32_t v)
{
	while (v >= 0x80) {
		b->b[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->b[b->n++] = (uint8_t)v;
}

struct run {
	int32_t val;
	uint32_t len;
};

/* A pc-value table as Go's linker encodes it: zig-zag value deltas from -1, pc deltas. */
static uint32_t pcvalue(struct buf *pctab, const struct run *r, size_t n)
{
	uint32_t at = (uint32_t)pctab->n;
	int32_t prev = -1;

	for (size_t i = 0; i < n; i++) {
		int32_t d = r[i].val - prev;

		varint(pctab, d < 0 ? ((uint32_t)~d << 1) | 1 : (uint32_t)d << 1);
		varint(pctab, r[i].len);
		prev = r[i].val;
	}
	pctab->b[pctab->n++] = 0;
	return at;
}

/*
 * The program: main.outer [0x401000, 0x401040) in a.go, with main.inner
 * (from b.go, line 31) inlined at [0x401010, 0x401020) and called from a.go
 * line 12; main.leaf [0x401040, 0x401050) at a.go line 20, frameless.
 */
#define TEXT   0x401000ull
#define TAB    0x4b0000ull
#define GOFUNC 0x480010ull
#define RODATA 0x480000ull

struct prog {
	struct buf names, files, pctab;
	uint32_t n_outer, n_leaf, n_inner, f_a, f_b;
	uint32_t sp0, file0, line0, inl0, sp1, file1, line1;
};

static void prog_tables(struct prog *p, bool v12)
{
	const struct run sp0[] = { { 0, 4 }, { 0x28, 0x38 }, { 0, 4 } };
	const struct run file0_12[] = { { 1, 0x10 }, { 2, 0x10 }, { 1, 0x20 } };
	const struct run file0[] = { { 0, 0x10 }, { 1, 0x10 }, { 0, 0x20 } };
	const struct run line0[] = { { 10, 0x10 }, { 31, 0x10 }, { 12, 0x20 } };
	const struct run inl0[] = { { -1, 0x10 }, { 0, 0x10 }, { -1, 0x20 } };
	const struct run sp1[] = { { 0, 0x10 } };
	const struct run file1[] = { { v12 ? 1 : 0, 0x10 } };
	const struct run line1[] = { { 20, 0x10 } };

	memset(p, 0, sizeof(*p));
	p->n_outer = (uint32_t)put(&p->names, "main.outer", 11);
	p->n_leaf = (uint32_t)put(&p->names, "main.leaf", 10);
	p->n_inner = (uint32_t)put(&p->names, "main.inner", 11);
	p->f_a = (uint32_t)put(&p->files, "a.go", 5);
	p->f_b = (uint32_t)put(&p->files, "b.go", 5);
	p->pctab.n = 1; /* offset 0 is "no table" */
	p->sp0 = pcvalue(&p->pctab, sp0, 3);
	p->file0 = pcvalue(&p->pctab, v12 ? file0_12 : file0, 3);
	p->line0 = pcvalue(&p->pctab, line0, 3);
	p->inl0 = pcvalue(&p->pctab, inl0, 3);
	p->sp1 = pcvalue(&p->pctab, sp1, 1);
	p->file1 = pcvalue(&p->pctab, file1, 1);
	p->line1 = pcvalue(&p->pctab, line1, 1);
}

/* The read-only data (at RODATA) with main.outer's inline tree at GOFUNC. */
static void inline_tree(struct buf *rodata, enum gopclntab_version v, const struct prog *p)
{
	rodata->n = 0x10;
	memset(rodata->b, 0xee, rodata->n);
	if (v >= GOPCLNTAB_V120) {
		/* funcID, pad[3], nameOff, parentPc, startLine */
		put32(rodata, 0);
		put32(rodata, p->n_inner);
		put32(rodata, 0x24);
		put32(rodata, 30);
	} else {
		/* parent int16, funcID, pad, file, line, func_, parentPc */
		put32(rodata, 0xffff);
		put32(rodata, 1);
		put32(rodata, 31);
		put32(rodata, p->n_inner);
		put32(rodata, 0x24);
	}
}

static void header(struct buf *t, uint32_t magic)
{
	put32(t, magic);
	t->b[t->n++] = 0;
	t->b[t->n++] = 0;
	t->b[t->n++] = 1; /* pc quantum */
	t->b[t->n++] = 8; /* pointer size */
}

/* Writes the program's table in layout v into t (at TAB), its rodata into r. */
static void write_table(enum gopclntab_version v, struct buf *t, struct buf *r)
{
	struct prog p;
	size_t offs, funcs[2], ftab;

	memset(t, 0, sizeof(*t));
	memset(r, 0, sizeof(*r));
	prog_tables(&p, v == GOPCLNTAB_V12);
	inline_tree(r, v, &p);
	if (v == GOPCLNTAB_V12) {
		size_t names, pct, filetab, fileoff;

		header(t, 0xfffffffb);
		put64(t, 2);
		ftab = t->n;
		for (int i = 0; i < 5; i++)
			put64(t, 0);
		fileoff = put32(t, 0);
		align(t, TAB, 8);
		for (int i = 0; i < 2; i++) {
			funcs[i] = put64(t, i ? TEXT + 0x40 : TEXT);
			/* nameoff args frame pcsp pcfile pcln npcdata nfuncdata (filled below) */
			for (int k = 0; k < 8; k++)
				put32(t, 0);
		}
		names = put(t, p.names.b, p.names.n);
		pct = put(t, p.pctab.b, p.pctab.n);
		/* nfiles, then a name offset per file number from 1 (patched below) */
		filetab = put32(t, 3);
		for (int i = 0; i < 2; i++)
			put32(t, 0);
		{
			uint32_t a = (uint32_t)put(t, "a.go", 5), b = (uint32_t)put(t, "b.go", 5);

			memcpy(t->b + filetab + 4, &a, 4);
			memcpy(t->b + filetab + 8, &b, 4);
		}
		memcpy(t->b + fileoff, &(uint32_t){ (uint32_t)filetab }, 4);
		{
			uint64_t ft[5] = { TEXT, funcs[0], TEXT + 0x40, funcs[1], TEXT + 0x50 };

			memcpy(t->b + ftab, ft, sizeof(ft));
		}
		{
			uint32_t f0[8] = { (uint32_t)names + p.n_outer,
					   0,
					   0,
					   (uint32_t)pct + p.sp0,
					   (uint32_t)pct + p.file0,
					   (uint32_t)pct + p.line0,
					   0,
					   0 };
			uint32_t f1[8] = { (uint32_t)names + p.n_leaf,
					   0,
					   0,
					   (uint32_t)pct + p.sp1,
					   (uint32_t)pct + p.file1,
					   (uint32_t)pct + p.line1,
					   0,
					   0 };

			memcpy(t->b + funcs[0] + 8, f0, sizeof(f0));
			memcpy(t->b + funcs[1] + 8, f1, sizeof(f1));
		}
		return;
	}
	header(t, v == GOPCLNTAB_V116 ? 0xfffffffa : v == GOPCLNTAB_V118 ? 0xfffffff0 : 0xfffffff1);
	put64(t, 2); /* nfunc */
	put64(t, 2); /* nfiles */
	if (v >= GOPCLNTAB_V118)
		put64(t, TEXT);
	offs = t->n;
	for (int i = 0; i < 5; i++)
		put64(t, 0);
	{
		uint64_t o[5];

		o[0] = put(t, p.names.b, p.names.n);
		o[1] = put32(t, p.f_a);
		put32(t, p.f_b);
		o[2] = put(t, p.files.b, p.files.n);
		o[3] = put(t, p.pctab.b, p.pctab.n);
		align(t, TAB, 8);
		o[4] = t->n;
		memcpy(t->b + offs, o, sizeof(o));
	}
	{
		size_t pcln = t->n;
		bool narrow = v >= GOPCLNTAB_V118;

		ftab = t->n;
		for (int i = 0; i < 5; i++)
			narrow ? put32(t, 0) : put64(t, 0);
		for (int i = 0; i < 2; i++) {
			uint64_t entry = i ? TEXT + 0x40 : TEXT;

			align(t, TAB, 8);
			funcs[i] = t->n;
			narrow ? put32(t, (uint32_t)(entry - TEXT)) : put64(t, entry);
			put32(t, i ? p.n_leaf : p.n_outer);
			put32(t, 0);			 /* args */
			put32(t, 0);			 /* deferreturn */
			put32(t, i ? p.sp1 : p.sp0);	 /* pcsp */
			put32(t, i ? p.file1 : p.file0); /* pcfile */
			put32(t, i ? p.line1 : p.line0); /* pcln */
			put32(t, i ? 0 : 3);		 /* npcdata */
			put32(t, 0);			 /* cuOffset */
			if (v >= GOPCLNTAB_V120)
				put32(t, i ? 20 : 9);	       /* startLine */
			put32(t, (uint32_t)(i ? 0 : 4) << 24); /* funcID flag pad nfuncdata */
			if (i)
				continue;
			put32(t, 0);
			put32(t, 0);
			put32(t, p.inl0);
			if (narrow) {
				for (int k = 0; k < 3; k++)
					put32(t, UINT32_MAX);
				put32(t, (uint32_t)(GOFUNC - GOFUNC)); /* the tree is at gofunc */
			} else {
				align(t, TAB, 8);
				for (int k = 0; k < 3; k++)
					put64(t, 0);
				put64(t, GOFUNC);
			}
		}
		for (int i = 0; i < 2; i++) {
			uint64_t entry = i ? TEXT + 0x40 : TEXT;

			if (narrow) {
				memcpy(t->b + ftab + 8 * i, &(uint32_t){ (uint32_t)(entry - TEXT) },
				       4);
				memcpy(t->b + ftab + 8 * i + 4,
				       &(uint32_t){ (uint32_t)(funcs[i] - pcln) }, 4);
			} else {
				memcpy(t->b + ftab + 16 * i, &entry, 8);
				memcpy(t->b + ftab + 16 * i + 8, &(uint64_t){ funcs[i] - pcln }, 8);
			}
		}
		if (narrow)
			memcpy(t->b + ftab + 16, &(uint32_t){ 0x50 }, 4);
		else
			memcpy(t->b + ftab + 32, &(uint64_t){ TEXT + 0x50 }, 8);
	}
}

static struct gopclntab *open_table(enum gopclntab_version v)
{
	static struct buf t, r;
	struct gopclntab *g;

	write_table(v, &t, &r);
	g = gopclntab__new(t.b, t.n, TAB, 0);
	assert_non_null(g);
	assert_int_equal(gopclntab__version(g), v);
	assert_int_equal(gopclntab__set_funcdata(g, r.b, r.n, RODATA, GOFUNC), 0);
	return g;
}

static void expect_src(const struct gosrc *s, const char *name, const char *file, uint32_t line)
{
	assert_string_equal(s->name, name);
	if (file)
		assert_string_equal(s->file, file);
	else
		assert_null(s->file);
	assert_int_equal(s->line, line);
}

struct sprun {
	uint64_t start[8], end[8];
	int32_t delta[8];
	size_t n;
};

static int collect(uint64_t start, uint64_t end, int32_t delta, void *ctx)
{
	struct sprun *r = ctx;

	assert_true(r->n < 8);
	r->start[r->n] = start;
	r->end[r->n] = end;
	r->delta[r->n++] = delta;
	return 0;
}

static void test_layouts(void **state)
{
	static const enum gopclntab_version vs[] = { GOPCLNTAB_V12, GOPCLNTAB_V116, GOPCLNTAB_V118,
						     GOPCLNTAB_V120 };

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(vs); k++) {
		struct gopclntab *g = open_table(vs[k]);
		struct gosrc s[4];
		struct sprun r = { 0 };
		uint64_t start, end;
		const char *name;

		assert_int_equal(gopclntab__nr_funcs(g), 2);
		assert_int_equal(gopclntab__func(g, 1, &start, &end, &name), 0);
		assert_int_equal(start, TEXT + 0x40);
		assert_int_equal(end, TEXT + 0x50);
		assert_string_equal(name, "main.leaf");
		assert_int_equal(gopclntab__find(g, TEXT - 1), -1);
		assert_int_equal(gopclntab__find(g, TEXT), 0);
		assert_int_equal(gopclntab__find(g, TEXT + 0x4f), 1);
		assert_int_equal(gopclntab__find(g, TEXT + 0x50), -1);

		assert_int_equal(gopclntab__frames(g, TEXT + 8, s, 4), 1);
		expect_src(&s[0], "main.outer", "a.go", 10);
		if (vs[k] == GOPCLNTAB_V12) {
			/* No inline trees before 1.16: the inlined code's own position. */
			assert_int_equal(gopclntab__frames(g, TEXT + 0x18, s, 4), 1);
			expect_src(&s[0], "main.outer", "b.go", 31);
		} else {
			assert_int_equal(gopclntab__frames(g, TEXT + 0x18, s, 4), 2);
			expect_src(&s[0], "main.inner", "b.go", 31);
			expect_src(&s[1], "main.outer", "a.go", 12);
			/* No room for the inlined frame: the function alone. */
			assert_int_equal(gopclntab__frames(g, TEXT + 0x18, s, 1), 1);
			assert_string_equal(s[0].name, "main.outer");
		}
		assert_int_equal(gopclntab__frames(g, TEXT + 0x44, s, 4), 1);
		expect_src(&s[0], "main.leaf", "a.go", 20);
		assert_int_equal(gopclntab__frames(g, TEXT + 0x50, s, 4), 0);

		assert_int_equal(gopclntab__pcsp(g, 0, collect, &r), 0);
		assert_int_equal(r.n, 3);
		assert_int_equal(r.start[1], TEXT + 4);
		assert_int_equal(r.end[1], TEXT + 0x3c);
		assert_int_equal(r.delta[1], 0x28);
		assert_int_equal(r.end[2], TEXT + 0x40);
		gopclntab__free(g);
	}
}

static void test_moduledata(void **state)
{
	static const enum gopclntab_version vs[] = { GOPCLNTAB_V118, GOPCLNTAB_V120 };

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(vs); k++) {
		struct buf t, r;
		uint64_t md[64] = { 0 }, data[80] = { 0 };
		unsigned w = vs[k] == GOPCLNTAB_V120 ? 40 : 38;
		uint64_t funcnames;
		struct gopclntab *g;

		write_table(vs[k], &t, &r);
		g = gopclntab__new(t.b, t.n, TAB, 0);
		assert_non_null(g);
		memcpy(&funcnames, t.b + 8 + 3 * 8, 8);
		md[0] = TAB;
		md[1] = TAB + funcnames;
		md[22] = TEXT;
		/* The other layout's words hold values that fail its checks. */
		md[37] = 0x4a0000; /* 1.20: types; 1.18: rodata */
		md[38] = vs[k] == GOPCLNTAB_V120 ? 0x4b0000 : GOFUNC; /* etypes / gofunc */
		md[39] = RODATA;
		md[40] = GOFUNC;
		md[w - 1] = RODATA;
		md[w] = GOFUNC;
		/* A decoy first: points at the table but is no moduledata. */
		data[3] = TAB;
		memcpy(&data[11], md, sizeof(md));
		assert_int_equal(gopclntab__find_gofunc(g, data, sizeof(data), 0x500000), GOFUNC);
		assert_int_equal(gopclntab__find_gofunc(g, data, 11 * 8 + 20 * 8, 0x500000), 0);
		gopclntab__free(g);
	}
}

/* Every prefix and every single-byte change of every layout parses or fails cleanly. */
static void test_corrupt(void **state)
{
	static const enum gopclntab_version vs[] = { GOPCLNTAB_V12, GOPCLNTAB_V116, GOPCLNTAB_V118,
						     GOPCLNTAB_V120 };

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(vs); k++) {
		struct buf t, r;

		write_table(vs[k], &t, &r);
		for (size_t cut = 0; cut <= t.n; cut++) {
			for (int flip = -1; flip<(int)cut; flip += cut> 64 ? 7 : 1) {
				uint8_t copy[sizeof(t.b)];
				struct gopclntab *g;
				struct gosrc s[GOPCLNTAB_MAX_INLINE + 1];
				struct sprun sp;

				memcpy(copy, t.b, cut);
				if (flip >= 0)
					copy[flip] ^= 0xa5;
				g = gopclntab__new(copy, cut, TAB, 0);
				if (!g)
					continue;
				gopclntab__set_funcdata(g, r.b, r.n, RODATA, GOFUNC);
				for (uint64_t pc = TEXT - 1; pc <= TEXT + 0x51; pc += 3)
					gopclntab__frames(g, pc, s, ARRAY_SIZE(s));
				for (size_t i = 0; i < gopclntab__nr_funcs(g) && i < 4; i++) {
					sp.n = 0;
					gopclntab__pcsp(g, i, collect, &sp);
				}
				gopclntab__free(g);
			}
		}
	}
	assert_null(gopclntab__new("\xfb\xff\xff\xff\0\0\1\x08", 8, 0, 0));
	assert_false(gopclntab__is_header("\xfb\xff\xff\xff\0\0\3\x08xxxxxxxx", 16));
}

/* --- a real Go binary ---------------------------------------------------------------- */

/* The line of main.go holding text. */
static uint32_t source_line(const char *text)
{
	FILE *f = fopen("tests/workloads/gohot/main.go", "r");
	char line[512];
	uint32_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, text)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("no line with %s", text);
	return 0;
}

static uint64_t func_start(const struct gopclntab *g, const char *want, uint64_t *end)
{
	for (size_t i = 0; i < gopclntab__nr_funcs(g); i++) {
		uint64_t start;
		const char *name;

		if (!gopclntab__func(g, i, &start, end, &name) && name && !strcmp(name, want))
			return start;
	}
	fail_msg("no function %s", want);
	return 0;
}

static void test_real_binary(void **state)
{
	char full[4096], stripped[4096];
	struct elfsym *es, *ef;
	const struct gopclntab *g;
	uint64_t start, end, pc;
	uint32_t inl_line = source_line("return gammaLeaf(n) + 1");
	uint32_t call_line = source_line("sink += viaInlined(20000)");
	bool found = false;
	struct gosrc s[8];

	(void)state;
	/* Built by the Makefile beside the fixtures (the Go workload of the integration tests). */
	snprintf(full, sizeof(full), "%s", fixture_path("../workloads/gohot"));
	snprintf(stripped, sizeof(stripped), "%s", fixture_path("../workloads/gohot-stripped"));
	es = elfsym__open(stripped);
	ef = elfsym__open(full);
	assert_non_null(es);
	assert_non_null(ef);
	assert_false(elfsym__has_symtab(es));
	assert_true(elfsym__has_symtab(ef));
	g = elfsym__gopclntab(es);
	assert_non_null(g);
	assert_int_equal(gopclntab__version(g), GOPCLNTAB_V118); /* Go 1.19 */
	assert_true(gopclntab__nr_funcs(g) > 1000);

	/* Without .symtab, every function is named from the table. */
	start = func_start(g, "main.alphaLeaf", &end);
	assert_string_equal(elfsym__lookup(es, start + 4, NULL), "main.alphaLeaf");
	assert_string_equal(elfsym__lookup(ef, start + 4, NULL), "main.alphaLeaf");
	assert_int_equal(elfsym__source(es, start, s, 8), 1);
	expect_src(&s[0], "main.alphaLeaf", s[0].file, source_line("func alphaLeaf"));
	assert_non_null(strstr(s[0].file, "tests/workloads/gohot/main.go"));

	/* main.viaInlined is inlined into main.main: somewhere in main.main it shows. */
	start = func_start(g, "main.main", &end);
	for (pc = start; pc < end; pc++) {
		if (elfsym__source(es, pc, s, 8) != 2 || strcmp(s[0].name, "main.viaInlined"))
			continue;
		expect_src(&s[0], "main.viaInlined", s[0].file, inl_line);
		expect_src(&s[1], "main.main", s[1].file, call_line);
		/* The binary with symbols says the same. */
		assert_int_equal(elfsym__source(ef, pc, s, 8), 2);
		assert_string_equal(s[0].name, "main.viaInlined");
		found = true;
	}
	assert_true(found);
	/* Every function name is the one .symtab has. */
	for (size_t i = 0; i < gopclntab__nr_funcs(g); i += 7) {
		const char *name, *sym;

		if (gopclntab__func(g, i, &start, &end, &name) || !name || end <= start)
			continue;
		/* .symtab adds ABI suffixes and spells out array shapes the table elides. */
		sym = elfsym__lookup(ef, start, NULL);
		if (sym && strncmp(sym, name, strlen(name)) && !strchr(name, '['))
			fail_msg("at %#" PRIx64 ": table %s, .symtab %s", start, name, sym);
	}
	elfsym__free(es);
	elfsym__free(ef);
}

static void test_unwind_rows(void **state)
{
	char path[4096];
	struct elfsym *es;
	struct utable *t;
	const struct gopclntab *g;
	const struct bp_urow *r;
	uint64_t start, end;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s", fixture_path("../workloads/gohot-stripped"));
	es = elfsym__open(path);
	assert_non_null(es);
	g = elfsym__gopclntab(es);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	t = utable__build_fd(fd);
	close(fd);
	assert_non_null(t);
	assert_true(t->st.fdes_go > 1000);

	/* A frameless leaf: the return address is at rsp all along. */
	start = func_start(g, "main.alphaLeaf", &end);
	for (uint64_t pc = start; pc < end; pc++) {
		r = utable__lookup(t, pc);
		assert_non_null(r);
		assert_int_equal(UROW_CFA_OF(r->op), UROW_CFA_RSP);
		assert_int_equal(r->cfa, 8);
		assert_int_equal(UROW_RBP_OF(r->op), UROW_RBP_SAME);
	}
	/* main.main has a frame: after the prologue, rbp saved below the return address. */
	start = func_start(g, "main.main", &end);
	r = utable__lookup(t, start);
	assert_int_equal(r->cfa, 8);
	r = utable__lookup(t, start + (end - start) / 2);
	assert_int_equal(UROW_CFA_OF(r->op), UROW_CFA_RSP);
	assert_true(r->cfa > 8 && r->cfa % 8 == 0);
	assert_int_equal(UROW_RBP_OF(r->op), UROW_RBP_CFA);
	assert_int_equal(r->rbp, -2);
	/* Goroutines start at goexit: the walk ends there. */
	start = func_start(g, "runtime.goexit", &end);
	assert_int_equal(UROW_CFA_OF(utable__lookup(t, start + 1)->op), UROW_CFA_END);
	utable__free(t);
	elfsym__free(es);
}

/* --- finding a table without a section (gopclntab__scan) --------------------------- */

/* A Go 1.20 header, quantum 1, pointer size 8, at every 8 bytes: a header
 * that looks right everywhere and never holds (its "nfunc" is itself). */
static const uint8_t LOOKALIKE[8] = { 0xf1, 0xff, 0xff, 0xff, 0x00, 0x00, 0x01, 0x08 };

static uint8_t *lookalikes(size_t len)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = LOOKALIKE[i % 8];
	return b;
}

/* The 1.20 table with its two functions out of order: a header that holds. */
static void unsorted_table(struct buf *t)
{
	struct buf r;
	uint64_t ftab;

	write_table(GOPCLNTAB_V120, t, &r);
	memcpy(&ftab, t->b + 8 + 7 * 8, 8); /* funcdata: the functab's offset */
	memcpy(t->b + ftab, &(uint32_t){ 0x48 }, 4);
}

static void test_scan_lookalikes(void **state)
{
	size_t len = 8u << 20;
	uint8_t *b = lookalikes(len);
	struct gopclntab_scan sc;

	(void)state;
	/* Was: a copy of the rest of the buffer per place (~1 TB for 8 MiB). */
	gopclntab__scan_init(&sc, NULL);
	assert_null(gopclntab__scan(b, len, 0x10000000, &sc));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(sc.headers_left, 0);
	assert_int_equal(sc.tables_left, GOPCLNTAB_SCAN_TABLES);
	/* The caps are the file's: a second segment is not searched again. */
	assert_null(gopclntab__scan(b, len, 0x20000000, &sc));
	assert_int_equal(sc.headers_left, 0);
	free(b);
}

/* Headers that hold over function tables that do not: GOPCLNTAB_SCAN_TABLES are checked. */
static void test_scan_tables_capped(void **state)
{
	struct buf bad, good, r;
	size_t step = (sizeof(bad.b) + 7) & ~(size_t)7;
	uint8_t *b = calloc(12, step);
	struct gopclntab_scan sc;
	struct gopclntab *g;

	(void)state;
	assert_non_null(b);
	unsorted_table(&bad);
	write_table(GOPCLNTAB_V120, &good, &r);
	assert_null(gopclntab__new(bad.b, bad.n, TAB, 0));
	/* Three bad ones before the good one: found. */
	for (size_t i = 0; i < 3; i++)
		memcpy(b + i * step, bad.b, bad.n);
	memcpy(b + 3 * step, good.b, good.n);
	gopclntab__scan_init(&sc, NULL);
	g = gopclntab__scan(b, 4 * step, TAB, &sc);
	assert_non_null(g);
	assert_int_equal(sc.tables_left, GOPCLNTAB_SCAN_TABLES - 4);
	assert_int_equal(gopclntab__nr_funcs(g), 2);
	assert_int_equal(gopclntab__find(g, TEXT + 0x44), 1);
	gopclntab__free(g);
	/* Eleven: the search gives up after eight, its cap. */
	for (size_t i = 0; i < 11; i++)
		memcpy(b + i * step, bad.b, bad.n);
	memcpy(b + 11 * step, good.b, good.n);
	gopclntab__scan_init(&sc, NULL);
	assert_null(gopclntab__scan(b, 12 * step, TAB, &sc));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(sc.tables_left, 0);
	free(b);
}

/* A real table late in the data, at an address the data's start is not aligned to. */
static void test_scan_finds_late_unaligned(void **state)
{
	size_t late = (4u << 20) + 5, len = late + 4096;
	uint64_t vaddr = TAB - late; /* the data starts at ...3 (mod 8): the table at TAB */
	uint8_t *b = calloc(1, len), *some = lookalikes(4096);
	struct gopclntab_scan sc;
	struct gopclntab *g;
	struct buf t, r;
	struct gosrc s[4];

	(void)state;
	assert_non_null(b);
	assert_int_equal(vaddr % 8, 3);
	/* Some lookalikes on the way (fewer than the cap), then the table. */
	memcpy(b + 5 + 4096, some, 4096);
	free(some);
	write_table(GOPCLNTAB_V120, &t, &r);
	memcpy(b + late, t.b, t.n);
	gopclntab__scan_init(&sc, NULL);
	g = gopclntab__scan(b, len, vaddr, &sc);
	assert_non_null(g);
	assert_int_equal(gopclntab__version(g), GOPCLNTAB_V120);
	assert_int_equal(sc.headers_left, GOPCLNTAB_SCAN_HEADERS - 4096 / 8 - 1);
	assert_int_equal(gopclntab__set_funcdata(g, r.b, r.n, RODATA, GOFUNC), 0);
	assert_int_equal(gopclntab__frames(g, TEXT + 0x18, s, 4), 2);
	expect_src(&s[0], "main.inner", "b.go", 31);
	expect_src(&s[1], "main.outer", "a.go", 12);
	gopclntab__free(g);
	free(b);
}

/* The search stops when the file's time is up, and says so. */
static void test_scan_budget(void **state)
{
	size_t len = 16u << 20;
	uint8_t *b = calloc(1, len);
	struct gopclntab_scan sc;
	struct budget bu;

	(void)state;
	assert_non_null(b);
	budget__start(&bu, 0);
	gopclntab__scan_init(&sc, &bu);
	assert_null(gopclntab__scan(b, len, 0, &sc));
	assert_int_equal(errno, ETIMEDOUT);
	free(b);
}

/* --- files without section headers ------------------------------------------------ */

/*
 * A static x86-64 executable without section headers: a code segment, and
 * a read-only data segment at DATA of `len` bytes.
 */
#define DATA 0x10000000ull

static uint8_t *noshdr_elf(const uint8_t *data, size_t len, size_t *size)
{
	size_t off = 0x1000;
	uint8_t *im = calloc(1, off + len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)im;
	Elf64_Phdr *ph = (Elf64_Phdr *)(im + sizeof(*eh));

	assert_non_null(im);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = TEXT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_X,
			      .p_offset = 0,
			      .p_vaddr = TEXT & ~0xfffull,
			      .p_filesz = 0x200,
			      .p_memsz = 0x200,
			      .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R,
			      .p_offset = off,
			      .p_vaddr = DATA,
			      .p_filesz = len,
			      .p_memsz = len,
			      .p_align = 0x1000 };
	memcpy(im + off, data, len);
	*size = off + len;
	return im;
}

static void test_noshdr_lookalikes(void **state)
{
	size_t len = 8u << 20, size;
	uint8_t *data = lookalikes(len), *im = noshdr_elf(data, len, &size);
	struct elfsym *es;
	struct buf t, r;

	(void)state;
	/* Was: 2.6 s for 1 MiB, 39 s for 4 MiB, 8 MiB never finished. */
	es = elfsym__open_mem(im, size);
	assert_non_null(es);
	assert_null(elfsym__gopclntab(es));
	assert_int_equal(elfsym__count(es), 0);
	elfsym__free(es);
	free(im);
	/* A table after lookalikes (fewer than the cap) is still found. */
	write_table(GOPCLNTAB_V120, &t, &r);
	memcpy(data + 65536, t.b, t.n);
	memset(data + 65536 + t.n, 0, len - 65536 - t.n);
	im = noshdr_elf(data, len, &size);
	es = elfsym__open_mem(im, size);
	assert_non_null(es);
	assert_non_null(elfsym__gopclntab(es));
	assert_string_equal(elfsym__lookup(es, TEXT + 0x44, NULL), "main.leaf");
	elfsym__free(es);
	free(im);
	free(data);
}

/* gohot-stripped with its section headers gone (sstrip): the same names and inlined frames. */
static void test_noshdr_real_binary(void **state)
{
	char path[4096];
	struct elfsym *ref, *es;
	const struct gopclntab *g;
	uint64_t start, end;
	char *buf;
	size_t len;
	Elf64_Ehdr *eh;
	size_t inlined = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s", fixture_path("../workloads/gohot-stripped"));
	ref = elfsym__open(path);
	assert_non_null(ref);
	assert_int_equal(read_file(path, 256u << 20, &buf, &len), 0);
	eh = (Elf64_Ehdr *)buf;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	es = elfsym__open_mem(buf, len);
	assert_non_null(es);
	g = elfsym__gopclntab(es);
	assert_non_null(g);
	assert_int_equal(gopclntab__nr_funcs(g), gopclntab__nr_funcs(elfsym__gopclntab(ref)));
	start = func_start(g, "main.main", &end);
	for (uint64_t pc = start; pc < end; pc++) {
		struct gosrc a[8], b[8];
		size_t n = elfsym__source(ref, pc, a, 8);

		assert_int_equal(elfsym__source(es, pc, b, 8), n);
		for (size_t i = 0; i < n; i++)
			assert_string_equal(a[i].name, b[i].name);
		inlined += n > 1;
		assert_string_equal(elfsym__lookup(es, pc, NULL), "main.main");
	}
	assert_true(inlined > 0); /* moduledata found in the writable segment */
	elfsym__free(es);
	elfsym__free(ref);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_moduledata),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_real_binary),
		cmocka_unit_test(test_unwind_rows),
		cmocka_unit_test(test_scan_lookalikes),
		cmocka_unit_test(test_scan_tables_capped),
		cmocka_unit_test(test_scan_finds_late_unaligned),
		cmocka_unit_test(test_scan_budget),
		cmocka_unit_test(test_noshdr_lookalikes),
		cmocka_unit_test(test_noshdr_real_binary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
