// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * gopclntab.c - Go's pc-line table; see gopclntab.h for the layouts.
 *
 * Everything is read from our own copy of the bytes with bounds-checked
 * accessors: a "span" is a subtable (offset and length inside the copy), and
 * every read names the span it must stay in. The layouts follow the Go
 * runtime's own readers (runtime/symtab.go, debug/gosym) of each release.
 */
#include "lang/gopclntab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/budget.h"
#include "base/bytes.h"
#include "base/util.h"

#define MAGIC_V12  0xfffffffbu
#define MAGIC_V116 0xfffffffau
#define MAGIC_V118 0xfffffff0u
#define MAGIC_V120 0xfffffff1u

/* runtime/symtab.go, Go 1.16 and later. */
#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE    3
/* A function's pcdata and funcdata counts are bytes: more is corruption. */
#define MAX_NPCDATA 256

/*
 * Runs decoded per pc-value table (a table has at most one per pc of its
 * function; a 64 Ki-run line table is a function of a few hundred KiB), and
 * for everything one gopclntab__frames() call decodes (a real lookup
 * decodes a few hundred): a hostile table cannot make a lookup cost more
 * than about a millisecond, however deep its inline chains.
 */
#define MAX_RUNS      (1u << 16)
#define FRAMES_BUDGET (1u << 17)

/* Varints of a pc-value table are at most 5 bytes (32-bit values). */
#define VARINT_MAX 5

struct span {
	size_t off, len; /* inside g->tab */
};

struct gopclntab {
	uint8_t *tab;
	size_t len;
	uint64_t vaddr;	     /* of tab[0] */
	uint64_t text_start; /* 1.18+: base of function entries */
	enum gopclntab_version ver;
	bool big_endian;
	uint32_t quantum, ptrsize;
	uint64_t nfunc, nfiles;
	struct span funcnames, cutab, filetab, pctab, funcdata, functab;
	/* Inline trees: read-only data of the binary. */
	uint8_t *fdata;
	size_t fdata_len;
	uint64_t fdata_vaddr, gofunc;
};

/* --- bounded reads ------------------------------------------------------------ */

static bool in_span(const struct span *s, uint64_t off, uint64_t n)
{
	return off <= s->len && n <= s->len - off;
}

/* The table's own byte order. */
static uint32_t grd32(const struct gopclntab *g, const uint8_t *p)
{
	return rd32(p, g->big_endian);
}

static uint64_t grd64(const struct gopclntab *g, const uint8_t *p)
{
	return rd64(p, g->big_endian);
}

static uint64_t rdptr(const struct gopclntab *g, const uint8_t *p)
{
	return g->ptrsize == 8 ? grd64(g, p) : grd32(g, p);
}

/* A u32 at off in span s; false if it does not fit. */
static bool span32(const struct gopclntab *g, const struct span *s, uint64_t off, uint32_t *v)
{
	if (!in_span(s, off, 4))
		return false;
	*v = grd32(g, g->tab + s->off + off);
	return true;
}

/* A NUL-terminated string at off in span s, or NULL. */
static const char *span_str(const struct gopclntab *g, const struct span *s, uint64_t off)
{
	const uint8_t *p;

	if (off >= s->len)
		return NULL;
	p = g->tab + s->off + off;
	return memchr(p, '\0', s->len - off) ? (const char *)p : NULL;
}

/* --- header ------------------------------------------------------------------- */

bool gopclntab__is_header(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint32_t le, be;

	if (len < 16 || b[4] || b[5] || (b[6] != 1 && b[6] != 2 && b[6] != 4) ||
	    (b[7] != 4 && b[7] != 8))
		return false;
	le = (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
	be = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	for (int i = 0; i < 2; i++) {
		uint32_t m = i ? be : le;

		if (m == MAGIC_V12 || m == MAGIC_V116 || m == MAGIC_V118 || m == MAGIC_V120)
			return true;
	}
	return false;
}

/* Header word i (after the 8 fixed bytes). */
static bool header_word(const struct gopclntab *g, unsigned i, uint64_t *v)
{
	uint64_t off = 8 + (uint64_t)i * g->ptrsize;

	if (off + g->ptrsize > g->len)
		return false;
	*v = rdptr(g, g->tab + off);
	return true;
}

/*
 * Subtables of the 1.16+ header: word indexes of their offsets, in table
 * order, so each one ends where the next begins (the last at the end).
 */
static int layout_v116(struct gopclntab *g, unsigned first)
{
	struct span *spans[] = { &g->funcnames, &g->cutab, &g->filetab, &g->pctab, &g->funcdata };
	uint64_t off[6];

	for (unsigned i = 0; i < 5; i++)
		if (!header_word(g, first + i, &off[i]) || off[i] > g->len)
			return -EINVAL;
	off[5] = g->len;
	for (unsigned i = 0; i < 5; i++) {
		if (off[i + 1] < off[i])
			return -EINVAL;
		spans[i]->off = off[i];
		spans[i]->len = off[i + 1] - off[i];
	}
	return 0;
}

static size_t functab_field(const struct gopclntab *g)
{
	return g->ver >= GOPCLNTAB_V118 ? 4 : g->ptrsize;
}

static int parse_header(struct gopclntab *g, uint64_t text_vaddr)
{
	uint64_t fsz, n;
	uint32_t magic;
	int err;

	if (!gopclntab__is_header(g->tab, g->len))
		return -EINVAL;
	magic = grd32(g, g->tab);
	if (magic != MAGIC_V12 && magic != MAGIC_V116 && magic != MAGIC_V118 &&
	    magic != MAGIC_V120) {
		g->big_endian = true;
		magic = grd32(g, g->tab);
	}
	g->quantum = g->tab[6];
	g->ptrsize = g->tab[7];
	if (!header_word(g, 0, &g->nfunc))
		return -EINVAL;
	switch (magic) {
	case MAGIC_V12: {
		uint32_t fileoff;

		g->ver = GOPCLNTAB_V12;
		/* Everything is an offset from the table start. */
		g->funcnames = g->pctab = g->funcdata = (struct span){ 0, g->len };
		g->functab.off = 8 + g->ptrsize;
		if (g->nfunc > g->len / (2 * g->ptrsize))
			return -EINVAL;
		fsz = (2 * g->nfunc + 1) * g->ptrsize;
		if (g->functab.off + fsz + 4 > g->len)
			return -EINVAL;
		g->functab.len = fsz;
		fileoff = grd32(g, g->tab + g->functab.off + fsz);
		if (fileoff > g->len - 4)
			return -EINVAL;
		/* The file table: a count, then one string offset per file (0 unused). */
		g->filetab = (struct span){ fileoff, g->len - fileoff };
		g->nfiles = grd32(g, g->tab + fileoff);
		if (g->nfiles > g->filetab.len / 4)
			return -EINVAL;
		g->filetab.len = g->nfiles * 4;
		return 0;
	}
	case MAGIC_V116:
		g->ver = GOPCLNTAB_V116;
		if (!header_word(g, 1, &g->nfiles))
			return -EINVAL;
		err = layout_v116(g, 2);
		break;
	default:
		g->ver = magic == MAGIC_V118 ? GOPCLNTAB_V118 : GOPCLNTAB_V120;
		if (!header_word(g, 1, &g->nfiles) || !header_word(g, 2, &g->text_start))
			return -EINVAL;
		/* The header's copy is unrelocated in a PIE: the caller knows better. */
		if (text_vaddr)
			g->text_start = text_vaddr;
		err = layout_v116(g, 3);
		break;
	}
	if (err)
		return err;
	/* functab: nfunc (entry, _func offset) pairs, then the end pc. */
	n = g->nfunc;
	if (n > g->funcdata.len / (2 * functab_field(g)))
		return -EINVAL;
	fsz = (2 * n + 1) * functab_field(g);
	if (fsz > g->funcdata.len)
		return -EINVAL;
	g->functab = (struct span){ g->funcdata.off, fsz };
	return 0;
}

/* Entry pc of functab slot i (i == nfunc: the end of the last function). */
static uint64_t ftab_pc(const struct gopclntab *g, uint64_t i)
{
	const uint8_t *p = g->tab + g->functab.off + 2 * i * functab_field(g);

	if (g->ver >= GOPCLNTAB_V118)
		return g->text_start + grd32(g, p);
	return rdptr(g, p);
}

static uint64_t ftab_funcoff(const struct gopclntab *g, uint64_t i)
{
	const uint8_t *p = g->tab + g->functab.off + (2 * i + 1) * functab_field(g);

	return g->ver >= GOPCLNTAB_V118 ? grd32(g, p) : rdptr(g, p);
}

/*
 * Reads the header of the table at tab (the caller's bytes, in place) into
 * *g: its version, fields and subtables' bounds. O(1).
 */
static int check_header(struct gopclntab *g, const void *tab, size_t len, uint64_t tab_vaddr,
			uint64_t text_vaddr)
{
	memset(g, 0, sizeof(*g));
	g->tab = (uint8_t *)tab; /* only read until it is copied */
	g->len = len;
	g->vaddr = tab_vaddr;
	return parse_header(g, text_vaddr);
}

/* Functions must be sorted for the binary search (the end pc included). O(nfunc). */
static int check_order(const struct gopclntab *g)
{
	for (uint64_t i = 0; i < g->nfunc; i++)
		if (ftab_pc(g, i) > ftab_pc(g, i + 1))
			return -EINVAL;
	return 0;
}

/* A table checked in place, copied. */
static struct gopclntab *copy_table(const struct gopclntab *checked)
{
	struct gopclntab *g = malloc(sizeof(*g));

	if (!g)
		return NULL;
	*g = *checked;
	g->tab = malloc(g->len ? g->len : 1);
	if (!g->tab) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(g->tab, checked->tab, g->len);
	return g;
}

struct gopclntab *gopclntab__new(const void *tab, size_t len, uint64_t tab_vaddr,
				 uint64_t text_vaddr)
{
	struct gopclntab v;
	int err = check_header(&v, tab, len, tab_vaddr, text_vaddr);

	if (!err)
		err = check_order(&v);
	if (err) {
		errno = -err;
		return NULL;
	}
	return copy_table(&v);
}

void gopclntab__scan_init(struct gopclntab_scan *sc, struct budget *b)
{
	sc->bytes_left = GOPCLNTAB_SCAN_BYTES;
	sc->headers_left = GOPCLNTAB_SCAN_HEADERS;
	sc->tables_left = GOPCLNTAB_SCAN_TABLES;
	sc->budget = b;
}

struct gopclntab *gopclntab__scan(const void *buf, size_t len, uint64_t vaddr,
				  struct gopclntab_scan *sc)
{
	const uint8_t *d = buf;
	size_t end = (size_t)MIN((uint64_t)len, sc->bytes_left);

	/*
	 * Every pointer-aligned place is a candidate (the table is a Go
	 * symbol with pointer fields), and costs little: 16 bytes compared,
	 * then for those that look like one a header read in place; only a
	 * header that holds costs its function table's length to check, and
	 * at most tables_left do. Nothing is copied before a candidate passes.
	 * A candidate is the rest of the buffer (its last subtable ends there).
	 */
	sc->bytes_left -= end;
	for (size_t off = (size_t)((8 - vaddr % 8) % 8), n = 0; off + 64 <= end; off += 8, n++) {
		struct gopclntab v;

		if (sc->budget && !(n % 64) && budget__over(sc->budget))
			goto over;
		if (!gopclntab__is_header(d + off, len - off))
			continue;
		if (!sc->headers_left)
			break;
		sc->headers_left--;
		if (check_header(&v, d + off, len - off, vaddr + off, 0) || !v.nfunc)
			continue;
		if (!sc->tables_left)
			break;
		sc->tables_left--;
		if (sc->budget && budget__over_now(sc->budget))
			goto over;
		if (!check_order(&v))
			return copy_table(&v);
	}
	errno = ENOENT;
	return NULL;
over:
	errno = -budget__err(sc->budget);
	return NULL;
}

void gopclntab__free(struct gopclntab *g)
{
	if (!g)
		return;
	free(g->tab);
	free(g->fdata);
	free(g);
}

enum gopclntab_version gopclntab__version(const struct gopclntab *g)
{
	return g->ver;
}

size_t gopclntab__bytes(const struct gopclntab *g)
{
	return sizeof(*g) + g->len + g->fdata_len;
}

int gopclntab__set_funcdata(struct gopclntab *g, const void *data, size_t len, uint64_t vaddr,
			    uint64_t gofunc)
{
	uint8_t *copy;

	if (vaddr + len < vaddr)
		return -EINVAL;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	free(g->fdata);
	g->fdata = copy;
	g->fdata_len = len;
	g->fdata_vaddr = vaddr;
	g->gofunc = gofunc;
	return 0;
}

/* --- functions ------------------------------------------------------------------ */

/* One function's _func record, decoded. */
struct func {
	uint64_t entry, end;
	uint32_t nameoff, pcsp, pcfile, pcln, npcdata, cuoff, nfuncdata;
	uint64_t pcdata_off; /* in funcdata span: npcdata u32s, then funcdata */
};

static bool read_func(const struct gopclntab *g, uint64_t i, struct func *f)
{
	const struct span *s = &g->funcdata;
	uint64_t off = ftab_funcoff(g, i), pos;
	size_t sz0 = g->ver >= GOPCLNTAB_V118 ? 4 : g->ptrsize;
	uint32_t unused;

	memset(f, 0, sizeof(*f));
	f->entry = ftab_pc(g, i);
	f->end = ftab_pc(g, i + 1);
	/* entry, nameoff, args, deferreturn, pcsp, pcfile, pcln, npcdata */
	pos = off + sz0;
	if (!span32(g, s, pos, &f->nameoff) || !span32(g, s, pos + 12, &f->pcsp) ||
	    !span32(g, s, pos + 16, &f->pcfile) || !span32(g, s, pos + 20, &f->pcln) ||
	    !span32(g, s, pos + 24, &f->npcdata) || f->npcdata > MAX_NPCDATA)
		return false;
	pos += 28;
	if (g->ver == GOPCLNTAB_V12) {
		/* The rest (funcID, nfuncdata) moved between 1.2 and 1.15: unused. */
		f->pcdata_off = pos + 4;
		f->cuoff = UINT32_MAX;
		return in_span(s, f->pcdata_off, (uint64_t)f->npcdata * 4);
	}
	if (!span32(g, s, pos, &f->cuoff))
		return false;
	pos += 4;
	if (g->ver >= GOPCLNTAB_V120 && !span32(g, s, pos, &unused)) /* startLine */
		return false;
	if (g->ver >= GOPCLNTAB_V120)
		pos += 4;
	/* funcID, flag, pad, nfuncdata */
	if (!in_span(s, pos, 4))
		return false;
	f->nfuncdata = g->tab[s->off + pos + 3];
	f->pcdata_off = pos + 4;
	return in_span(s, f->pcdata_off, (uint64_t)f->npcdata * 4);
}

size_t gopclntab__nr_funcs(const struct gopclntab *g)
{
	return g->nfunc;
}

int gopclntab__func(const struct gopclntab *g, size_t i, uint64_t *start, uint64_t *end,
		    const char **name)
{
	struct func f;

	if (i >= g->nfunc || !read_func(g, i, &f))
		return -EINVAL;
	*start = f.entry;
	*end = ftab_pc(g, i + 1);
	*name = span_str(g, &g->funcnames, f.nameoff);
	return 0;
}

ssize_t gopclntab__find(const struct gopclntab *g, uint64_t pc)
{
	uint64_t lo = 0, hi = g->nfunc;

	if (!g->nfunc || pc < ftab_pc(g, 0) || pc >= ftab_pc(g, g->nfunc))
		return -1;
	/* The last entry <= pc. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ftab_pc(g, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (ssize_t)lo;
}

/* --- pc-value tables -------------------------------------------------------------- */

struct pcvalue {
	const struct gopclntab *g;
	uint64_t pos, end; /* in tab */
	uint64_t pc;	   /* start of the current run */
	uint64_t next_pc;  /* its end */
	uint32_t val;	   /* int32 arithmetic without overflow traps */
	uint64_t steps;	   /* left: a table has no more runs than its function has pcs */
	uint64_t *budget;  /* left for the whole lookup */
	bool first, done;
};

static bool varint(struct pcvalue *v, uint32_t *out)
{
	uint32_t x = 0;

	for (unsigned i = 0; i < VARINT_MAX; i++) {
		uint8_t b;

		if (v->pos >= v->end)
			return false;
		b = v->g->tab[v->pos++];
		x |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = x;
			return true;
		}
	}
	return false;
}

static bool pcvalue_init(struct pcvalue *v, const struct gopclntab *g, uint32_t off,
			 const struct func *f, uint64_t *budget)
{
	memset(v, 0, sizeof(*v));
	v->g = g;
	if (!off || off >= g->pctab.len)
		return false;
	v->pos = g->pctab.off + off;
	v->end = g->pctab.off + g->pctab.len;
	v->next_pc = f->entry;
	v->steps = MIN((f->end - f->entry) / g->quantum + 16, (uint64_t)MAX_RUNS);
	v->val = (uint32_t)-1;
	v->first = true;
	v->budget = budget;
	return true;
}

/* Advances to the next run [pc, next_pc) with value val; false at the end or on corruption. */
static bool pcvalue_step(struct pcvalue *v)
{
	uint32_t uv, pcd;

	if (v->done || !v->steps-- || !(*v->budget)-- || !varint(v, &uv) ||
	    (uv == 0 && !v->first)) {
		v->done = true;
		return false;
	}
	v->first = false;
	uv = (uv & 1) ? ~(uv >> 1) : uv >> 1;
	if (!varint(v, &pcd)) {
		v->done = true;
		return false;
	}
	v->pc = v->next_pc;
	v->next_pc += (uint64_t)pcd * v->g->quantum;
	v->val += uv;
	if (v->next_pc < v->pc) { /* wrapped around: corrupt */
		v->done = true;
		return false;
	}
	return true;
}

/* The value at pc, or -1 (as the runtime's pcvalue). */
static int32_t pcvalue_at(const struct gopclntab *g, uint32_t off, const struct func *f,
			  uint64_t pc, uint64_t *budget)
{
	struct pcvalue v;

	if (!pcvalue_init(&v, g, off, f, budget))
		return -1;
	while (pcvalue_step(&v))
		if (pc < v.next_pc)
			return pc >= v.pc ? (int32_t)v.val : -1;
	return -1;
}

static const char *file_name(const struct gopclntab *g, const struct func *f, int32_t fno)
{
	uint32_t off;

	if (fno < 0)
		return NULL;
	if (g->ver == GOPCLNTAB_V12) {
		if (!fno || !span32(g, &g->filetab, (uint64_t)fno * 4, &off))
			return NULL;
		return span_str(g, &g->funcnames, off);
	}
	if (f->cuoff == UINT32_MAX ||
	    !span32(g, &g->cutab, ((uint64_t)f->cuoff + (uint32_t)fno) * 4, &off) ||
	    off == UINT32_MAX)
		return NULL;
	return span_str(g, &g->filetab, off);
}

static void source_at(const struct gopclntab *g, const struct func *f, uint64_t pc, struct gosrc *s,
		      uint64_t *budget)
{
	int32_t line = pcvalue_at(g, f->pcln, f, pc, budget);

	s->file = file_name(g, f, pcvalue_at(g, f->pcfile, f, pc, budget));
	s->line = line > 0 ? (uint32_t)line : 0;
}

/* pcdata table k of f (0: none). */
static uint32_t pcdata(const struct gopclntab *g, const struct func *f, uint32_t k)
{
	uint32_t v = 0;

	if (k >= f->npcdata || !span32(g, &g->funcdata, f->pcdata_off + (uint64_t)k * 4, &v))
		return 0;
	return v;
}

/* Bytes of the inline tree of f (at tree[0], *avail bytes readable), or NULL. */
static const uint8_t *inline_tree(const struct gopclntab *g, const struct func *f, size_t *avail)
{
	uint64_t fd_off = f->pcdata_off + (uint64_t)f->npcdata * 4, addr;

	if (g->ver < GOPCLNTAB_V116 || f->nfuncdata <= FUNCDATA_INLTREE || !g->fdata)
		return NULL;
	if (g->ver >= GOPCLNTAB_V118) {
		uint32_t off;

		if (!span32(g, &g->funcdata, fd_off + FUNCDATA_INLTREE * 4, &off) ||
		    off == UINT32_MAX)
			return NULL;
		addr = g->gofunc + off;
	} else {
		/* Pointer-aligned (in memory) absolute addresses. */
		uint64_t abs = g->vaddr + g->funcdata.off + fd_off;

		if (abs % g->ptrsize)
			fd_off += g->ptrsize - abs % g->ptrsize;
		fd_off += (uint64_t)FUNCDATA_INLTREE * g->ptrsize;
		if (!in_span(&g->funcdata, fd_off, g->ptrsize))
			return NULL;
		addr = rdptr(g, g->tab + g->funcdata.off + fd_off);
	}
	if (!addr || addr < g->fdata_vaddr || addr - g->fdata_vaddr >= g->fdata_len)
		return NULL;
	*avail = g->fdata_len - (addr - g->fdata_vaddr);
	return g->fdata + (addr - g->fdata_vaddr);
}

size_t gopclntab__frames(const struct gopclntab *g, uint64_t pc, struct gosrc *out, size_t max)
{
	size_t rec = g->ver >= GOPCLNTAB_V120 ? 16 : 20, n = 0, avail = 0;
	uint64_t budget = FRAMES_BUDGET;
	const uint8_t *tree;
	ssize_t i = gopclntab__find(g, pc);
	uint32_t inl;
	struct func f;

	if (i < 0 || !max || !read_func(g, (uint64_t)i, &f))
		return 0;
	tree = inline_tree(g, &f, &avail);
	inl = pcdata(g, &f, PCDATA_INLTREEINDEX);
	/* Each inlined level: its name, and the source at pc; then on to its caller. */
	for (unsigned level = 0; tree && inl && n + 1 < max && level < GOPCLNTAB_MAX_INLINE;
	     level++) {
		int32_t ix = pcvalue_at(g, inl, &f, pc, &budget);
		const uint8_t *r;
		uint32_t nameoff, parent_pc;

		if (ix < 0 || (uint64_t)ix >= avail / rec)
			break;
		r = tree + (size_t)ix * rec;
		/* 1.20+: funcID, pad[3], nameOff, parentPc, startLine;
		 * 1.16-1.19: parent, funcID, pad, file, line, func_, parentPc. */
		nameoff = grd32(g, r + (rec == 16 ? 4 : 12));
		parent_pc = grd32(g, r + (rec == 16 ? 8 : 16));
		out[n].name = span_str(g, &g->funcnames, nameoff);
		source_at(g, &f, pc, &out[n], &budget);
		if (out[n].name)
			n++;
		pc = f.entry + parent_pc;
	}
	out[n].name = span_str(g, &g->funcnames, f.nameoff);
	source_at(g, &f, pc, &out[n], &budget);
	return out[n].name ? n + 1 : n;
}

int gopclntab__pcsp(const struct gopclntab *g, size_t i,
		    int (*cb)(uint64_t start, uint64_t end, int32_t delta, void *ctx), void *ctx)
{
	uint64_t end, budget = MAX_RUNS;
	struct pcvalue v;
	struct func f;
	int rc;

	if (i >= g->nfunc || !read_func(g, i, &f))
		return -EINVAL;
	end = ftab_pc(g, i + 1);
	if (!pcvalue_init(&v, g, f.pcsp, &f, &budget))
		return -EINVAL;
	/* Runs past the function's end (or a table cut short) end the walk. */
	while (pcvalue_step(&v) && v.pc < end) {
		if (v.next_pc == v.pc)
			continue; /* an empty run: the next value applies at once */
		rc = cb(v.pc, v.next_pc < end ? v.next_pc : end, (int32_t)v.val, ctx);
		if (rc)
			return rc;
	}
	return v.first ? -EINVAL : 0;
}

/* --- moduledata -------------------------------------------------------------------- */

uint64_t gopclntab__find_gofunc(const struct gopclntab *g, const void *data, size_t len,
				uint64_t vaddr)
{
	/*
	 * runtime.moduledata: pcHeader, six slices (funcnametab first), then
	 * findfunctab, minpc, maxpc, text (word 22), ... rodata, gofunc: words
	 * 37/38 in Go 1.18-1.19, 39/40 since 1.20 added covctrs/ecovctrs.
	 */
	static const unsigned gofunc_word[] = { 38, 40 };
	const uint8_t *d = data;
	unsigned ps = g->ptrsize;

	if (g->ver < GOPCLNTAB_V118 || !ps)
		return 0;
	/* moduledata is pointer-aligned in memory. */
	for (size_t off = (ps - vaddr % ps) % ps; off + 48 * (size_t)ps <= len; off += ps) {
		uint64_t fn_ptr;

		if (rdptr(g, d + off) != g->vaddr)
			continue;
		fn_ptr = rdptr(g, d + off + ps);
		if (fn_ptr != g->vaddr + g->funcnames.off ||
		    rdptr(g, d + off + 22 * ps) != g->text_start)
			continue;
		for (size_t k = 0; k < sizeof(gofunc_word) / sizeof(gofunc_word[0]); k++) {
			unsigned w = gofunc_word[g->ver >= GOPCLNTAB_V120 ? 1 - k : k];
			uint64_t rodata = rdptr(g, d + off + (w - 1) * ps);
			uint64_t gofunc = rdptr(g, d + off + w * ps);

			/* gofunc is inside rodata, which comes after the text. */
			if (rodata && rodata <= gofunc && rodata > g->text_start &&
			    gofunc - rodata < (1ull << 32))
				return gofunc;
		}
	}
	return 0;
}
