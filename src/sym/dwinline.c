// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * dwinline.c - inlined frames and source lines from DWARF; see dwinline.h.
 *
 * libdw's dwarf_getscopes() would walk a unit's DIEs for every address,
 * recursively (a crafted unit nested a million deep would overflow the
 * stack) and without a way to give up: 1 ms an address on libpython's
 * units. Here a unit is walked once, with libdw's dwarf_child() and
 * dwarf_siblingof() and an explicit stack, into scopes, namespaces and
 * types (where Rust and some C++ put their functions), and what it holds is
 * kept sorted (struct unit): 20 us an address, cold. Units are found through
 * an index of their ranges built here once: .debug_aranges would say it,
 * but clang and rustc do not emit it.
 */
#include "sym/dwinline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/htab.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "sym/demangle.h"
#include "sym/dwzalt.h"
#include "sym/lineprog.h"
#include "sym/srcline.h"

/* What libdw keeps per unit it has met (its CU, abbreviations), an estimate. */
#define UNIT_OVERHEAD 256
/* Line-program opcodes one lookup may run. */
#define LOOKUP_MAX_OPS (1ull << 26)

struct urange {
	uint64_t lo, hi;
	uint64_t maxhi;	 /* the largest hi of this range and all before it */
	uint64_t cu_off; /* the unit DIE's offset in .debug_info */
};

/* One cached answer: its frames, then their strings. */
struct answer {
	size_t n, bytes;
	struct dwinline_frame f[];
};

struct dwinline {
	Elf *elf;
	Dwarf *dw;
	struct lineprog_sections sec;
	struct srcline_strs strs; /* where its string attributes may point */
	size_t sec_bytes;
	/* The unit index: built at the first lookups (resumed where the budget stopped it). */
	struct urange *ranges;
	size_t nr_ranges, cap_ranges, nr_units;
	Dwarf_CU *next_cu;
	bool indexed;
	struct htab *cache; /* addr -> struct answer */
	size_t cache_bytes;
	struct htab *units; /* unit DIE offset -> struct unit (its index) */
	size_t unit_bytes;
	struct dwzalt *alt; /* its dwz file, shared; NULL: an empty one */
	int alt_status;	    /* dwzalt__get()'s answer: 1 no link, 0 read, -errno */
};

size_t dwinline__debug_bytes(Elf *elf, bool *has_info)
{
	size_t shstrndx, total = 0;
	Elf_Scn *scn = NULL;

	*has_info = false;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return SIZE_MAX;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		uint64_t size;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			*has_info = true;
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch))
				return SIZE_MAX;
			size += ch.ch_size; /* compressed bytes, then decompressed */
		} else if (name[1] == 'z') {
			Elf_Data *d = elf_rawdata(scn, NULL);

			if (!d || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4))
				return SIZE_MAX;
			size += rd_be((const uint8_t *)d->d_buf + 4, 8);
		}
		if (size > SIZE_MAX - total)
			return SIZE_MAX;
		total += size;
	}
	return total;
}

struct dwinline *dwinline__open_fd(int fd, size_t max_bytes, void (*room)(void *ctx, size_t bytes),
				   void *ctx)
{
	return dwinline__open_fd_alt(fd, max_bytes, room, ctx, NULL);
}

struct dwinline *dwinline__open_fd_alt(int fd, size_t max_bytes,
				       void (*room)(void *ctx, size_t bytes), void *ctx,
				       const struct dwzalt_query *alt)
{
	struct dwinline *d;
	bool has_info;
	size_t bytes;
	Elf *elf;

	elf = elffile__begin(fd);
	if (!elf)
		return NULL;
	if (elf_kind(elf) != ELF_K_ELF) {
		elffile__end(elf, NULL);
		errno = ENOEXEC;
		return NULL;
	}
	bytes = dwinline__debug_bytes(elf, &has_info);
	if (!has_info || bytes == SIZE_MAX || bytes > max_bytes) {
		elffile__end(elf, NULL);
		errno = !has_info ? ENOENT : bytes == SIZE_MAX ? EINVAL : E2BIG;
		return NULL;
	}
	if (room)
		room(ctx, bytes);
	d = calloc(1, sizeof(*d));
	if (!d || !(d->cache = htab__new()) || !(d->units = htab__new())) {
		if (d)
			htab__free(d->cache);
		free(d);
		elffile__end(elf, NULL);
		errno = ENOMEM;
		return NULL;
	}
	d->elf = elf;
	d->sec_bytes = bytes;
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		dwinline__free(d);
		errno = ENOENT;
		return NULL;
	}
	if (!srcline__strings_terminated(elf) || !srcline__no_dwz(d->dw)) {
		dwinline__free(d);
		errno = EINVAL;
		return NULL;
	}
	/* Its dwz file, read safely (the empty one stays if it cannot be). */
	d->alt_status = 1;
	if (alt) {
		/* What is left of the cap (a held one is refused past it too). */
		d->alt_status = dwzalt__get(elf, alt, max_bytes - bytes, room, ctx, &d->alt);
		if (d->alt) {
			dwarf_setalt(d->dw, dwzalt__dwarf(d->alt));
			d->sec_bytes += dwzalt__bytes(d->alt);
		}
	}
	srcline__sections(elf, &d->sec);
	srcline__strs_init(elf, &d->strs);
	dwzalt__strs(d->alt, &d->strs);
	/* libdw has read every section it uses: the descriptor is the caller's again. */
	elf_cntl(elf, ELF_C_FDDONE);
	return d;
}

static void cache_clear(struct dwinline *d)
{
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(d->cache, &pos)))
		free(e->value);
	htab__free(d->cache);
	d->cache = htab__new();
	d->cache_bytes = 0;
}

struct unit;
static void unit_free(struct unit *u);

/* Forgets every unit's index (they are made again on demand). */
static void units_clear(struct dwinline *d)
{
	struct htab_entry *e;
	size_t pos = 0;

	while (d->units && (e = htab__next(d->units, &pos))) {
		unit_free(e->value);
		e->value = NULL;
	}
	htab__free(d->units);
	d->units = htab__new();
	d->unit_bytes = 0;
}

void dwinline__free(struct dwinline *d)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!d)
		return;
	while (d->cache && (e = htab__next(d->cache, &pos)))
		free(e->value);
	htab__free(d->cache);
	units_clear(d);
	htab__free(d->units);
	d->units = NULL;
	free(d->ranges);
	if (d->dw)
		dwarf_end(d->dw);
	dwzalt__put(d->alt); /* after dwarf_end: dw points into it */
	elffile__end(d->elf, NULL);
	free(d);
}

int dwinline__alt(const struct dwinline *d, const char **path)
{
	if (path)
		*path = dwzalt__path(d ? d->alt : NULL);
	return d ? d->alt_status : 1;
}

size_t dwinline__bytes(const struct dwinline *d)
{
	if (!d)
		return 0;
	return sizeof(*d) + d->sec_bytes + d->cap_ranges * sizeof(*d->ranges) +
	       d->nr_units * UNIT_OVERHEAD + d->cache_bytes + d->unit_bytes;
}

/* --- the unit index ------------------------------------------------------------ */

static int urange_cmp(const void *a, const void *b)
{
	const struct urange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Indexes units until done (0) or b runs out (its error); -ENOMEM. */
static int index_units(struct dwinline *d, struct budget *b)
{
	Dwarf_Die
		cudie; /* no subdie: libdw would open the skeleton's .dwo (a path the file names) */
	uint8_t unit_type;
	Dwarf_CU *cu = d->next_cu;

	while (!d->indexed) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		if (budget__over(b))
			return budget__err(b);
		if (dwarf_get_units(d->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) != 0) {
			d->indexed = true;
			break;
		}
		d->next_cu = cu;
		d->nr_units++;
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type ||
		    unit_type == DW_UT_split_compile || unit_type == DW_UT_skeleton)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0) {
			if (d->nr_ranges >= DWINLINE_MAX_RANGES) {
				d->indexed = true; /* the rest of the file is not indexed */
				break;
			}
			if (start >= end)
				continue;
			if (d->nr_ranges == d->cap_ranges &&
			    array_grow((void **)&d->ranges, &d->cap_ranges, d->nr_ranges + 1,
				       sizeof(*d->ranges)))
				return -ENOMEM;
			d->ranges[d->nr_ranges++] = (struct urange){
				.lo = start, .hi = end, .cu_off = dwarf_dieoffset(&cudie)
			};
			if (budget__over(b))
				return budget__err(b);
		}
	}
	if (d->nr_ranges)
		qsort(d->ranges, d->nr_ranges, sizeof(*d->ranges), urange_cmp);
	for (size_t i = 0, maxhi = 0; i < d->nr_ranges; i++)
		d->ranges[i].maxhi = maxhi = MAX(maxhi, d->ranges[i].hi);
	return 0;
}

/* The unit holding addr: 0, -ENOENT. */
/* The nth unit (from 0) with a range holding addr: 0, -ENOENT. */
static int unit_of(struct dwinline *d, uint64_t addr, unsigned nth, Dwarf_Die *cudie)
{
	size_t lo = 0, hi = d->nr_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Back from the last range starting at or below addr, while one may reach it. */
	while (lo-- > 0 && d->ranges[lo].maxhi > addr)
		if (d->ranges[lo].hi > addr && !nth--)
			return dwarf_offdie(d->dw, d->ranges[lo].cu_off, cudie) ? 0 : -ENOENT;
	return -ENOENT;
}

/* --- the scopes at an address ------------------------------------------------------ */

/*
 * A unit's index, made at its first lookup by one walk of its DIEs and one
 * run of its line program: its functions and inlined calls (nodes, with
 * their enclosing one) and their address ranges, sorted; its line rows,
 * sorted. A lookup is then two binary searches and a walk up the nodes.
 */
struct unode {
	uint64_t off;	/* the DIE's offset */
	int32_t parent; /* the enclosing node, -1 none */
};

struct urng {
	uint64_t lo, hi;
	uint64_t maxhi; /* the largest hi of this range and all before it */
	uint32_t node, depth;
};

struct urow {
	uint64_t addr;
	uint32_t file, line;
};

struct unit {
	uint64_t off;
	struct unode *nodes;
	size_t nr_nodes, cap_nodes;
	struct urng *rngs;
	size_t nr_rngs, cap_rngs;
	struct urow *rows;
	size_t nr_rows, cap_rows;
	struct lineprog *lp; /* for its file table */
	size_t bytes;
	int err;	/* the walk's, kept: 0, -ENOENT, -E2BIG */
	unsigned tries; /* walks given up on for the budget */
};

/* Units with a range holding one address that are looked in, at most. */
#define UNIT_MAX_OVERLAP 8
/* Walks of one unit given up on for the budget before it is given up on for good. */
#define UNIT_MAX_TRIES 3

static void unit_free(struct unit *u)
{
	if (!u)
		return;
	free(u->nodes);
	free(u->rngs);
	free(u->rows);
	lineprog__free(u->lp);
	free(u);
}

/* Whether u's index is over its share of the file's (then the unit is not indexed). */
static bool unit_over(const struct unit *u)
{
	return u->nr_nodes * sizeof(*u->nodes) + u->nr_rngs * sizeof(*u->rngs) +
		       u->nr_rows * sizeof(*u->rows) >
	       DWINLINE_MAX_UNIT_BYTES / 2;
}

static int add_node(struct unit *u, Dwarf_Die *die, int32_t parent, uint32_t depth)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	int32_t me;

	if (unit_over(u))
		return -E2BIG;
	if (u->nr_nodes == u->cap_nodes &&
	    array_grow((void **)&u->nodes, &u->cap_nodes, u->nr_nodes + 1, sizeof(*u->nodes)))
		return -ENOMEM;
	me = (int32_t)u->nr_nodes;
	u->nodes[u->nr_nodes++] = (struct unode){ .off = dwarf_dieoffset(die), .parent = parent };
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (start >= end)
			continue;
		if (unit_over(u))
			return -E2BIG;
		if (u->nr_rngs == u->cap_rngs &&
		    array_grow((void **)&u->rngs, &u->cap_rngs, u->nr_rngs + 1, sizeof(*u->rngs)))
			return -ENOMEM;
		u->rngs[u->nr_rngs++] = (struct urng){
			.lo = start, .hi = end, .node = (uint32_t)me, .depth = depth
		};
	}
	return me;
}

/*
 * Records the unit's functions and inlined calls with code, each under the
 * one it is in: one walk of its DIEs, iterative, descending into scopes and
 * into namespaces and types (where Rust and some C++ put functions). 0, or
 * b's error, -E2BIG, -ENOMEM.
 */
static int walk_unit(struct unit *u, Dwarf_Die *cu, struct budget *b)
{
	Dwarf_Die st[DWINLINE_MAX_DEPTH];
	int32_t node[DWINLINE_MAX_DEPTH]; /* the node each level is in */
	int depth = 0;

	if (dwarf_child(cu, &st[0]) != 0)
		return 0;
	node[0] = -1;
	for (;;) {
		Dwarf_Die *cur = &st[depth];
		int tag = dwarf_tag(cur), r;
		int32_t in = node[depth];

		if (budget__over(b))
			return budget__err(b);
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) &&
		    (dwarf_hasattr(cur, DW_AT_low_pc) || dwarf_hasattr(cur, DW_AT_ranges))) {
			in = add_node(u, cur, in, (uint32_t)depth);
			if (in < 0)
				return in;
		}
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		     tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
		     tag == DW_TAG_catch_block || tag == DW_TAG_namespace || tag == DW_TAG_module ||
		     tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		     tag == DW_TAG_union_type || tag == DW_TAG_interface_type) &&
		    depth + 1 < DWINLINE_MAX_DEPTH && !dwarf_child(cur, &st[depth + 1])) {
			node[++depth] = in;
			continue;
		}
		/* The next sibling, up as many levels as have none. */
		while ((r = dwarf_siblingof(&st[depth], &st[depth])) != 0) {
			if (r < 0 || --depth < 0)
				return 0;
		}
	}
}

static int urng_cmp(const void *a, const void *b)
{
	const struct urng *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth; /* the inner one last */
}

static int urow_cmp(const void *a, const void *b)
{
	const struct urow *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int keep_row(void *ctx, const struct lineprog_row *r)
{
	struct unit *u = ctx;

	if (unit_over(u))
		return 1; /* the rows so far */
	if (u->nr_rows == u->cap_rows &&
	    array_grow((void **)&u->rows, &u->cap_rows, u->nr_rows + 1, sizeof(*u->rows)))
		return -ENOMEM;
	u->rows[u->nr_rows++] = (struct urow){ .addr = r->addr, .file = r->file, .line = r->line };
	return 0;
}

/* The unit's index (made now if it was not). */
static int unit_index(struct dwinline *d, Dwarf_Die *cudie, struct budget *b, struct unit **out)
{
	uint64_t off = dwarf_dieoffset(cudie), ops = LOOKUP_MAX_OPS, maxhi = 0;
	struct htab_entry *e = d->units ? htab__find(d->units, &off, sizeof(off)) : NULL;
	Dwarf_Attribute attr;
	Dwarf_Word stmt;
	struct unit *u;
	bool created;
	int err;

	if (!e && d->unit_bytes > DWINLINE_MAX_UNIT_BYTES / 2) {
		units_clear(d); /* room for this one: the others are made again on demand */
		if (!d->units)
			return -ENOMEM;
	}
	if (e && ((struct unit *)e->value)->nodes != NULL) {
		*out = e->value;
		return 0;
	}
	if (!d->units && !(d->units = htab__new()))
		return -ENOMEM;
	if (e) {
		u = e->value;
		if (u->err || u->tries >= UNIT_MAX_TRIES)
			return u->err ? u->err : -ENOENT;
	} else {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		e = htab__upsert(d->units, &off, sizeof(off), &created);
		if (!e) {
			free(u);
			return -ENOMEM;
		}
		e->value = u;
		u->off = off;
	}
	err = walk_unit(u, cudie, b);
	if (!err && dwarf_attr(cudie, DW_AT_stmt_list, &attr) && !dwarf_formudata(&attr, &stmt) &&
	    !lineprog__open(&d->sec, stmt,
			    srcline__string(&d->strs, dwarf_attr(cudie, DW_AT_comp_dir, &attr)),
			    &u->lp)) {
		err = lineprog__run(u->lp, 0, UINT64_MAX, &ops, keep_row, u);
		if (err == 1 || err == -ETIME)
			err = 0; /* the rows so far */
	}
	if (!err && !u->nr_nodes)
		err = -ENOENT;
	if (err) {
		free(u->nodes);
		free(u->rngs);
		free(u->rows);
		lineprog__free(u->lp);
		u->nodes = NULL, u->rngs = NULL, u->rows = NULL, u->lp = NULL;
		u->nr_nodes = u->cap_nodes = u->nr_rngs = u->cap_rngs = u->nr_rows = u->cap_rows =
			0;
		if (err == -ETIMEDOUT || err == -ECANCELED)
			u->tries += err == -ETIMEDOUT;
		else if (err != -ENOMEM)
			u->err = err;
		return err;
	}
	if (u->nr_rngs)
		qsort(u->rngs, u->nr_rngs, sizeof(*u->rngs), urng_cmp);
	for (size_t i = 0; i < u->nr_rngs; i++)
		u->rngs[i].maxhi = maxhi = MAX(maxhi, u->rngs[i].hi);
	if (u->nr_rows)
		qsort(u->rows, u->nr_rows, sizeof(*u->rows), urow_cmp);
	u->bytes = sizeof(*u) + u->cap_nodes * sizeof(*u->nodes) + u->cap_rngs * sizeof(*u->rngs) +
		   u->cap_rows * sizeof(*u->rows) + (u->lp ? lineprog__nr_files(u->lp) * 64 : 0);
	d->unit_bytes += u->bytes;
	*out = u;
	return 0;
}

/* The innermost node whose range holds addr, -1 none. */
static int32_t unit_node_at(const struct unit *u, uint64_t addr)
{
	size_t lo = 0, hi = u->nr_rngs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->rngs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Back from the last range starting at or below addr, while one may reach it. */
	while (lo-- > 0 && u->rngs[lo].maxhi > addr)
		if (u->rngs[lo].hi > addr)
			return (int32_t)u->rngs[lo].node;
	return -1;
}

static const struct urow *unit_row_at(const struct unit *u, uint64_t addr)
{
	size_t lo = 0, hi = u->nr_rows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &u->rows[lo - 1] : NULL;
}

/* --- names, files, lines --------------------------------------------------------- */

/* The function's name (demangled when mangled) into buf; NULL if it has none. */
static const char *die_name(struct dwinline *d, Dwarf_Die *die, char *buf, size_t size)
{
	Dwarf_Attribute attr;
	const char *raw = NULL;
	char *dm;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		raw = srcline__string(&d->strs, &attr);
	if (raw && (dm = demangle__name(raw))) {
		snprintf(buf, size, "%s", dm);
		free(dm);
		return buf;
	}
	if (dwarf_attr_integrate(die, DW_AT_name, &attr) &&
	    (raw = srcline__string(&d->strs, &attr))) {
		snprintf(buf, size, "%s", raw);
		return buf;
	}
	return raw ? (snprintf(buf, size, "%s", raw), buf) : NULL;
}

static uint32_t die_udata(Dwarf_Die *die, int name, bool integrate)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (!(integrate ? dwarf_attr_integrate(die, name, &attr) : dwarf_attr(die, name, &attr)) ||
	    dwarf_formudata(&attr, &v) || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

/* --- answers -------------------------------------------------------------------- */

struct draft {
	const char *name, *file;
	uint32_t line, decl_line;
};

static struct answer *answer_make(const struct draft *dr, size_t n)
{
	size_t bytes = sizeof(struct answer) + n * sizeof(struct dwinline_frame);
	struct answer *a;
	char *p;

	for (size_t i = 0; i < n; i++)
		bytes += (dr[i].name ? strlen(dr[i].name) + 1 : 0) +
			 (dr[i].file ? strlen(dr[i].file) + 1 : 0);
	a = malloc(bytes);
	if (!a)
		return NULL;
	a->n = n;
	a->bytes = bytes;
	p = (char *)&a->f[n];
	for (size_t i = 0; i < n; i++) {
		a->f[i] =
			(struct dwinline_frame){ .line = dr[i].line, .decl_line = dr[i].decl_line };
		if (dr[i].name) {
			a->f[i].name = strcpy(p, dr[i].name);
			p += strlen(p) + 1;
		}
		if (dr[i].file) {
			a->f[i].file = strcpy(p, dr[i].file);
			p += strlen(p) + 1;
		}
	}
	return a;
}

/* Strings of one answer being made (names and paths, copied by answer_make). */
struct strings {
	char name[DWINLINE_MAX_FRAMES][DEMANGLE_MAX_OUT + 1];
	char file[DWINLINE_MAX_FRAMES][PATH_MAX];
};

static int resolve(struct dwinline *d, uint64_t addr, struct budget *b, struct answer **out)
{
	Dwarf_Die cudie, chain[DWINLINE_MAX_FRAMES];
	struct draft dr[DWINLINE_MAX_FRAMES];
	const struct urow *row;
	struct strings *str;
	struct unit *u;
	size_t n = 0;
	int32_t node;
	int err;

	/* Units whose ranges overlap (seldom): the first that has a function there. */
	for (unsigned nth = 0;; nth++) {
		if (nth == UNIT_MAX_OVERLAP)
			return -ENOENT;
		err = unit_of(d, addr, nth, &cudie);
		if (err)
			return err;
		err = unit_index(d, &cudie, b, &u);
		if (err == -ETIMEDOUT || err == -ECANCELED || err == -ENOMEM)
			return err;
		if (!err && (node = unit_node_at(u, addr)) >= 0)
			break;
	}
	/* Innermost first, up to the function (a cycle of parents cannot be: each is older). */
	for (; node >= 0 && n < DWINLINE_MAX_FRAMES; node = u->nodes[node].parent) {
		if (!dwarf_offdie(d->dw, u->nodes[node].off, &chain[n]))
			return -ENOENT;
		n++;
		if (dwarf_tag(&chain[n - 1]) == DW_TAG_subprogram)
			break;
	}
	if (!n)
		return -ENOENT;
	str = malloc(sizeof(*str));
	if (!str)
		return -ENOMEM;
	row = unit_row_at(u, addr);
	/* chain[0] is at addr's own line, each outer one at its inner one's call. */
	for (size_t i = 0; i < n; i++) {
		Dwarf_Die *die = &chain[i];
		Dwarf_Attribute attr;

		dr[i].name = die_name(d, die, str->name[i], sizeof(str->name[i]));
		dr[i].decl_line = die_udata(die, DW_AT_decl_line, true);
		dr[i].file = NULL;
		dr[i].line = 0;
		if (i == 0) {
			if (row && u->lp) {
				dr[i].file = lineprog__file(u->lp, row->file, str->file[i],
							    sizeof(str->file[i]));
				dr[i].line = row->line;
			}
		} else {
			Dwarf_Die *inner = &chain[i - 1];

			dr[i].line = die_udata(inner, DW_AT_call_line, false);
			if (u->lp && dwarf_attr(inner, DW_AT_call_file, &attr))
				dr[i].file = lineprog__file(
					u->lp, die_udata(inner, DW_AT_call_file, false),
					str->file[i], sizeof(str->file[i]));
		}
	}
	*out = answer_make(dr, n);
	free(str);
	return *out ? 0 : -ENOMEM;
}

int dwinline__frames(struct dwinline *d, uint64_t addr, struct budget *b,
		     const struct dwinline_frame **out, size_t *n)
{
	struct htab_entry *e;
	struct answer *a;
	bool created;
	int err;

	if (!d->cache && !(d->cache = htab__new()))
		return -ENOMEM;
	e = htab__find(d->cache, &addr, sizeof(addr));
	if (!e) {
		if (!d->indexed && (err = index_units(d, b)))
			return err;
		err = resolve(d, addr, b, &a);
		if (err == -ENOENT)
			a = NULL; /* remembered: nothing there */
		else if (err)
			return err;
		if (d->cache_bytes + sizeof(addr) * 4 + (a ? a->bytes : 0) >
		    DWINLINE_MAX_CACHE_BYTES)
			cache_clear(d);
		if (!d->cache || !(e = htab__upsert(d->cache, &addr, sizeof(addr), &created))) {
			free(a);
			return -ENOMEM;
		}
		e->value = a;
		d->cache_bytes += sizeof(addr) * 4 + (a ? a->bytes : 0);
	}
	a = e->value;
	if (!a)
		return -ENOENT;
	*out = a->f;
	*n = a->n;
	return 0;
}
