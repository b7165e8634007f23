// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_lineprog.c - DWARF line programs decoded as they are read
 * (sym/lineprog.h) and srcline's rows built on them: hand-made units (DWARF
 * 4 and 5 headers, 64-bit DWARF, define_file, a row below the range, a
 * million rows at one address, a program cut short, headers that must be
 * refused), the opcode budget; and, on real binaries (this test's own
 * executable, gcc -O2 -g with inlining, and the fixtures: DWARF 4, DWARF 5
 * from clang, compressed sections, a C++ file, a separate debug file), the
 * line and file of every address of every function, against libdw's
 * dwarf_getsrc_die().
 */
#include "testutil.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>

#include "sym/elfsym.h"
#include "sym/lineprog.h"
#include "sym/srcline.h"

/* --- a line program, by hand ---------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void u8(struct buf *b, unsigned v)
{
	uint8_t x = (uint8_t)v;

	put(b, &x, 1);
}

static void le(struct buf *b, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static void uleb(struct buf *b, uint64_t v)
{
	do {
		unsigned x = v & 0x7f;

		v >>= 7;
		u8(b, x | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct buf *b, int64_t v)
{
	for (;;) {
		unsigned x = (unsigned)v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40))) {
			u8(b, x);
			return;
		}
		u8(b, x | 0x80);
	}
}

static void str(struct buf *b, const char *s)
{
	put(b, s, strlen(s) + 1);
}

/* line_base -5, line_range 14, opcode_base 13: the special opcode for (addr, line) steps. */
static unsigned special(unsigned addr_adv, int line_adv)
{
	return (unsigned)(line_adv + 5) + 14 * addr_adv + 13;
}

static void set_address(struct buf *b, uint64_t a)
{
	u8(b, 0);
	uleb(b, 9);
	u8(b, DW_LNE_set_address);
	le(b, a, 8);
}

static void end_sequence(struct buf *b)
{
	u8(b, 0);
	uleb(b, 1);
	u8(b, DW_LNE_end_sequence);
}

static void header_common(struct buf *h, unsigned version)
{
	static const uint8_t lens[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };

	u8(h, 1); /* min_inst_length */
	if (version >= 4)
		u8(h, 1); /* max_ops */
	u8(h, 1);	  /* default_is_stmt */
	u8(h, 0xfb);	  /* line_base -5 */
	u8(h, 14);	  /* line_range */
	u8(h, 13);	  /* opcode_base */
	put(h, lens, sizeof(lens));
}

/* A DWARF 4 unit: dirs {"inc", "/abs"}, files {"a.c" in comp dir, "b.h" in "inc", "c.h" in "/abs"}.
 */
static void unit_v4(struct buf *out, const struct buf *prog, bool dwarf64)
{
	struct buf h = { 0 }, u = { 0 };

	header_common(&h, 4);
	str(&h, "inc");
	str(&h, "/abs");
	u8(&h, 0);
	str(&h, "a.c"), uleb(&h, 0), uleb(&h, 0), uleb(&h, 0);
	str(&h, "b.h"), uleb(&h, 1), uleb(&h, 0), uleb(&h, 0);
	str(&h, "c.h"), uleb(&h, 2), uleb(&h, 0), uleb(&h, 0);
	u8(&h, 0);
	le(&u, 4, 2);
	le(&u, h.n, dwarf64 ? 8 : 4);
	put(&u, h.p, h.n);
	put(&u, prog->p, prog->n);
	if (dwarf64) {
		le(out, 0xffffffff, 4);
		le(out, u.n, 8);
	} else {
		le(out, u.n, 4);
	}
	put(out, u.p, u.n);
	free(h.p);
	free(u.p);
}

struct got {
	struct lineprog_row v[64];
	size_t n;
};

static int collect(void *ctx, const struct lineprog_row *r)
{
	struct got *g = ctx;

	if (g->n < 64)
		g->v[g->n] = *r;
	g->n++;
	return 0;
}

static struct lineprog *open_line(const struct buf *sec, uint64_t off, const char *comp_dir)
{
	struct lineprog_sections s = { .line = sec->p, .line_size = sec->n };
	struct lineprog *lp = NULL;

	assert_int_equal(lineprog__open(&s, off, comp_dir, &lp), 0);
	return lp;
}

static void test_rows_of_a_range(void **state)
{
	struct buf prog = { 0 }, sec = { 0 };
	struct lineprog *lp;
	struct got g = { 0 };
	uint64_t budget = 1000;
	char path[256];

	(void)state;
	/* 0x1000 line 10, 0x1010 line 11 (file 2), 0x1020 lines 12, 19, 14 (file 3), end 0x1040. */
	set_address(&prog, 0x1000);
	u8(&prog, DW_LNS_advance_line), sleb(&prog, 9);
	u8(&prog, DW_LNS_copy);
	u8(&prog, DW_LNS_set_file), uleb(&prog, 2);
	u8(&prog, special(0x10, 1));
	u8(&prog, DW_LNS_set_file), uleb(&prog, 3);
	u8(&prog, special(0x10, 1));
	u8(&prog, special(0, 7));
	u8(&prog, special(0, -5));
	u8(&prog, DW_LNS_advance_pc), uleb(&prog, 0x20);
	end_sequence(&prog);
	unit_v4(&sec, &prog, false);
	lp = open_line(&sec, 0, "/src");

	/* [0x1008, 0x1030): the row below (0x1000) covers 0x1008; the last of the 0x1020 rows. */
	assert_int_equal(lineprog__run(lp, 0x1008, 0x1030, &budget, collect, &g), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.v[0].addr, 0x1000);
	assert_int_equal(g.v[0].line, 10);
	assert_int_equal(g.v[1].addr, 0x1010);
	assert_int_equal(g.v[1].line, 11);
	assert_int_equal(g.v[2].addr, 0x1020);
	assert_int_equal(g.v[2].line, 14);
	assert_string_equal(lineprog__file(lp, g.v[0].file, path, sizeof(path)), "/src/a.c");
	assert_string_equal(lineprog__file(lp, g.v[1].file, path, sizeof(path)), "/src/inc/b.h");
	assert_string_equal(lineprog__file(lp, g.v[2].file, path, sizeof(path)), "/abs/c.h");
	/* Index 0 names no file before DWARF 5; nor does one past the table. */
	assert_null(lineprog__file(lp, 0, path, sizeof(path)));
	assert_null(lineprog__file(lp, 4, path, sizeof(path)));
	/* A path that does not fit. */
	assert_null(lineprog__file(lp, 2, path, 8));

	/* A range inside one row: that row only. [0x1012, 0x1018) */
	g.n = 0;
	assert_int_equal(lineprog__run(lp, 0x1012, 0x1018, &budget, collect, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].addr, 0x1010);
	/* A range starting on a row: no row below. */
	g.n = 0;
	assert_int_equal(lineprog__run(lp, 0x1010, 0x1018, &budget, collect, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].addr, 0x1010);
	/* Past the end of the sequence: nothing. */
	g.n = 0;
	assert_int_equal(lineprog__run(lp, 0x1040, 0x1050, &budget, collect, &g), 0);
	assert_int_equal(g.n, 0);
	/* The budget: opcodes are counted, and running out stops. */
	budget = 3;
	g.n = 0;
	assert_int_equal(lineprog__run(lp, 0x1000, 0x1040, &budget, collect, &g), -ETIME);
	assert_int_equal(budget, 0);
	assert_true(g.n <= 1);
	lineprog__free(lp);

	/* The same unit in 64-bit DWARF, behind the first one. */
	{
		size_t off = sec.n;

		unit_v4(&sec, &prog, true);
		lp = open_line(&sec, off, NULL);
		budget = 1000;
		g.n = 0;
		assert_int_equal(lineprog__run(lp, 0x1000, 0x1040, &budget, collect, &g), 0);
		assert_int_equal(g.n, 3);
		/* Without a comp dir: the name as the table has it. */
		assert_string_equal(lineprog__file(lp, 1, path, sizeof(path)), "a.c");
		assert_string_equal(lineprog__file(lp, 2, path, sizeof(path)), "inc/b.h");
		lineprog__free(lp);
	}
	free(prog.p);
	free(sec.p);
}

/* Lines that go back by more than a special opcode can: multi-byte negative SLEB128s. */
static void test_line_advances_back(void **state)
{
	struct buf prog = { 0 }, sec = { 0 };
	struct lineprog *lp;
	struct got g = { 0 };
	uint64_t budget = 1000;

	(void)state;
	/* 0x2000 line 301, 0x2010 line 101, 0x2020 line 37, end 0x2030. */
	set_address(&prog, 0x2000);
	u8(&prog, DW_LNS_advance_line), sleb(&prog, 300);
	u8(&prog, DW_LNS_copy);
	u8(&prog, DW_LNS_advance_pc), uleb(&prog, 0x10);
	u8(&prog, DW_LNS_advance_line), sleb(&prog, -200);
	u8(&prog, DW_LNS_copy);
	u8(&prog, DW_LNS_advance_pc), uleb(&prog, 0x10);
	u8(&prog, DW_LNS_advance_line), sleb(&prog, -64);
	u8(&prog, DW_LNS_copy);
	u8(&prog, DW_LNS_advance_pc), uleb(&prog, 0x10);
	end_sequence(&prog);
	unit_v4(&sec, &prog, false);
	lp = open_line(&sec, 0, NULL);
	assert_int_equal(lineprog__run(lp, 0x2000, 0x2030, &budget, collect, &g), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.v[0].line, 301);
	assert_int_equal(g.v[1].addr, 0x2010);
	assert_int_equal(g.v[1].line, 101);
	assert_int_equal(g.v[2].addr, 0x2020);
	assert_int_equal(g.v[2].line, 37);
	lineprog__free(lp);
	free(prog.p);
	free(sec.p);
}

/* A million rows at one address, as a crafted file has them: one is handed out, nothing kept. */
static void test_many_rows_at_one_address(void **state)
{
	struct buf prog = { 0 }, sec = { 0 };
	struct lineprog *lp;
	struct got g = { 0 };
	uint64_t budget = SRCLINE_MAX_OPS;
	const size_t n = 1u << 20;

	(void)state;
	set_address(&prog, 0x4000);
	u8(&prog, DW_LNS_copy);
	for (size_t i = 0; i < n; i++)
		u8(&prog, special(0, 1));
	u8(&prog, DW_LNS_advance_pc), uleb(&prog, 0x40);
	end_sequence(&prog);
	unit_v4(&sec, &prog, false);
	lp = open_line(&sec, 0, "/src");
	assert_int_equal(lineprog__run(lp, 0x4000, 0x4040, &budget, collect, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].line, 1 + n);
	assert_int_equal(SRCLINE_MAX_OPS - budget, n + 4);
	/* A budget smaller than the program stops it, with what was decoded so far. */
	budget = n / 2;
	g.n = 0;
	assert_int_equal(lineprog__run(lp, 0x4000, 0x4040, &budget, collect, &g), -ETIME);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].line, n / 2 - 1);
	lineprog__free(lp);
	free(prog.p);
	free(sec.p);
}

/* DWARF 5: directory and file tables described by entry formats, names in .debug_line_str. */
static void test_dwarf5_tables(void **state)
{
	struct buf h = { 0 }, u = { 0 }, sec = { 0 }, ls = { 0 }, prog = { 0 };
	struct lineprog_sections s;
	struct lineprog *lp;
	struct got g = { 0 };
	uint64_t budget = 100;
	char path[256];

	(void)state;
	str(&ls, "/build"); /* 0 */
	str(&ls, "sub");    /* 7 */
	str(&ls, "main.c"); /* 11 */
	header_common(&h, 5);
	/* Directories: (path, line_strp). */
	u8(&h, 1), uleb(&h, DW_LNCT_path), uleb(&h, DW_FORM_line_strp);
	uleb(&h, 2), le(&h, 0, 4), le(&h, 7, 4);
	/* Files: (path, string), (directory_index, udata), (MD5, data16). */
	u8(&h, 3);
	uleb(&h, DW_LNCT_path), uleb(&h, DW_FORM_string);
	uleb(&h, DW_LNCT_directory_index), uleb(&h, DW_FORM_udata);
	uleb(&h, DW_LNCT_MD5), uleb(&h, DW_FORM_data16);
	uleb(&h, 3);
	str(&h, "main.c"), uleb(&h, 0), put(&h, "0123456789abcdef", 16);
	str(&h, "x.h"), uleb(&h, 1), put(&h, "0123456789abcdef", 16);
	str(&h, "/usr/include/y.h"), uleb(&h, 1), put(&h, "0123456789abcdef", 16);
	set_address(&prog, 0x2000);
	u8(&prog, DW_LNS_set_file), uleb(&prog, 1);
	u8(&prog, DW_LNS_copy);
	u8(&prog, DW_LNS_fixed_advance_pc), le(&prog, 8, 2);
	u8(&prog, DW_LNS_set_file), uleb(&prog, 0);
	u8(&prog, DW_LNS_copy);
	/* No end_sequence: a program cut short still hands out its last row. */
	le(&u, 5, 2);
	u8(&u, 8), u8(&u, 0); /* address_size, seg_sel_size */
	le(&u, h.n, 4);
	put(&u, h.p, h.n);
	put(&u, prog.p, prog.n);
	le(&sec, u.n, 4);
	put(&sec, u.p, u.n);
	s = (struct lineprog_sections){
		.line = sec.p, .line_size = sec.n, .line_str = ls.p, .line_str_size = ls.n
	};
	assert_int_equal(lineprog__open(&s, 0, "/ignored", &lp), 0);
	assert_int_equal(lineprog__nr_files(lp), 3);
	assert_string_equal(lineprog__file(lp, 0, path, sizeof(path)), "/build/main.c");
	/* A relative directory is the comp dir's. */
	assert_string_equal(lineprog__file(lp, 1, path, sizeof(path)), "/ignored/sub/x.h");
	assert_string_equal(lineprog__file(lp, 2, path, sizeof(path)), "/usr/include/y.h");
	assert_int_equal(lineprog__run(lp, 0, UINT64_MAX, &budget, collect, &g), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.v[0].addr, 0x2000);
	assert_int_equal(g.v[0].file, 1);
	assert_int_equal(g.v[1].addr, 0x2008);
	assert_int_equal(g.v[1].file, 0);
	lineprog__free(lp);

	/* A line_strp past its section (or to no NUL in it), no .debug_line_str at all:
	 * no directory name, no crash. */
	s.line_str_size = 5;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), 0);
	assert_string_equal(lineprog__file(lp, 1, path, sizeof(path)), "x.h");
	lineprog__free(lp);
	s.line_str = NULL;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), 0);
	assert_string_equal(lineprog__file(lp, 0, path, sizeof(path)), "main.c");
	lineprog__free(lp);
	free(h.p);
	free(u.p);
	free(sec.p);
	free(ls.p);
	free(prog.p);
}

/* Headers that must be refused, and a unit longer than its section. */
static void test_bad_headers(void **state)
{
	struct buf prog = { 0 }, sec = { 0 };
	struct lineprog_sections s;
	struct lineprog *lp;

	(void)state;
	u8(&prog, DW_LNS_copy);
	unit_v4(&sec, &prog, false);
	s = (struct lineprog_sections){ .line = sec.p, .line_size = sec.n };
	/* line_range 0 would divide by zero. */
	sec.p[4 + 2 + 4 + 4] = 0;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), -EINVAL);
	assert_null(lp);
	sec.p[4 + 2 + 4 + 4] = 14;
	/* Version 6, and 1. */
	sec.p[4] = 6;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), -EINVAL);
	sec.p[4] = 1;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), -EINVAL);
	sec.p[4] = 4;
	/* Cut short: the unit says it is longer than the section. */
	s.line_size = sec.n - 1;
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), -EINVAL);
	s.line_size = sec.n;
	/* An offset past the section. */
	assert_int_equal(lineprog__open(&s, sec.n, NULL, &lp), -EINVAL);
	assert_int_equal(lineprog__open(&s, 0, NULL, &lp), 0);
	lineprog__free(lp);
	free(prog.p);
	free(sec.p);
}

/* --- against libdw, on real binaries ---------------------------------------------- */

struct fn {
	uint64_t start, end;
};

/* Functions of file with a size, from nm -S. */
static size_t functions(const char *file, struct fn *v, size_t max)
{
	char cmd[4200], line[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p) && n < max) {
		unsigned long long a, sz;
		char type;

		if (sscanf(line, "%llx %llx %c", &a, &sz, &type) == 3 && strchr("tTW", type) &&
		    sz && sz < 0x10000)
			v[n++] = (struct fn){ a, a + sz };
	}
	pclose(p);
	return n;
}

/* The unit that holds a: by .debug_aranges, else (clang emits none) by each unit's ranges. */
static bool cu_of(Dwarf *dw, uint64_t a, Dwarf_Die *cu)
{
	Dwarf_CU *c = NULL;
	Dwarf_Die sub;
	uint8_t type;

	if (dwarf_addrdie(dw, a, cu))
		return true;
	while (dwarf_get_units(dw, c, &c, NULL, &type, cu, &sub) == 0)
		if (dwarf_haspc(cu, a) > 0)
			return true;
	return false;
}

/* Every address of every function: srcline's row is the one libdw finds. */
static void compare_with_libdw(const char *file, size_t step)
{
	static struct fn fns[20000];
	int fd = open(file, O_RDONLY);
	size_t nfn, checked = 0;
	struct srcline *sl;
	Dwarf *dw;

	assert_true(fd >= 0);
	sl = srcline__open_fd(fd);
	assert_non_null(sl);
	dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	nfn = functions(file, fns, sizeof(fns) / sizeof(fns[0]));
	assert_true(nfn > 0);
	for (size_t i = 0; i < nfn; i += step) {
		struct srcline_row *rows = NULL;
		size_t nr = 0;
		int err = srcline__rows(sl, fns[i].start, fns[i].end, &rows, &nr);

		assert_true(err == 0 || err == -ENOENT);
		for (uint64_t a = fns[i].start; a < fns[i].end; a++) {
			const struct srcline_row *mine = srcline__find(rows, nr, a);
			Dwarf_Die cu;
			Dwarf_Line *l;
			const char *lf;
			int line = 0;

			if (!cu_of(dw, a, &cu) || !(l = dwarf_getsrc_die(&cu, a)))
				continue;
			dwarf_lineno(l, &line);
			lf = dwarf_linesrc(l, NULL, NULL);
			if (!mine)
				fail_msg("%s: %#lx: libdw has line %d, srcline no row", file,
					 (unsigned long)a, line);
			if (mine->line != (uint32_t)(line > 0 ? line : 0))
				fail_msg("%s: %#lx: libdw line %d, srcline %u", file,
					 (unsigned long)a, line, mine->line);
			if (lf && strcmp(path_basename(lf), path_basename(mine->file)))
				fail_msg("%s: %#lx: libdw file %s, srcline %s", file,
					 (unsigned long)a, lf, mine->file);
			/* An absolute path is the same path. */
			if (lf && lf[0] == '/')
				assert_string_equal(lf, mine->file);
			checked++;
		}
		free(rows);
	}
	if (!checked)
		fail_msg("%s: no address checked (%zu functions)", file, nfn);
	dwarf_end(dw);
	srcline__free(sl);
	close(fd);
}

static void test_same_rows_as_libdw(void **state)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	compare_with_libdw(self, 1);
	compare_with_libdw(fixture_path("cxx"), 1);
	compare_with_libdw(fixture_path("dbgprog.debug"), 1);
	compare_with_libdw("tests/fuzz/corpus/annotation/tiny_dwarf", 1);
	compare_with_libdw("tests/fuzz/corpus/annotation/tiny_dwarf5", 1);
	compare_with_libdw("tests/fuzz/corpus/annotation/tiny_dwarf_z", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_of_a_range),
		cmocka_unit_test(test_line_advances_back),
		cmocka_unit_test(test_many_rows_at_one_address),
		cmocka_unit_test(test_dwarf5_tables),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_same_rows_as_libdw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
