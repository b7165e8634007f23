// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * srcline.c - DWARF line tables through libdw; see srcline.h.
 *
 * Units are walked with dwarf_get_units() (DWARF 2 to 5, split units
 * skipped) and their line tables decoded only when one of the unit's
 * address ranges overlaps the range asked for: .debug_aranges would say
 * which unit holds an address faster, but clang does not emit it.
 */
#include "sym/srcline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proc/elffile.h"

struct srcline {
	Elf *elf;
	void *copy; /* the private image of srcline__open_mem */
	Dwarf *dw;
};

/*
 * libdw (0.188) reads strings of .debug_str and .debug_line_str with strlen
 * after checking only that the offset is inside the section: a section whose
 * last byte is not NUL lets a crafted file read past it (found by
 * fuzz_annotation). Such a file is refused. Checked after dwarf_begin_elf(),
 * which has decompressed SHF_COMPRESSED sections in place.
 */
static bool strings_terminated(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7) || !strstr(name, "str") ||
		    strstr(name, "str_offsets"))
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1]))
			return false;
	}
	return true;
}

static struct srcline *open_elf(Elf *elf)
{
	struct srcline *sl;

	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	sl = calloc(1, sizeof(*sl));
	if (!sl) {
		elf_end(elf);
		errno = ENOMEM;
		return NULL;
	}
	sl->elf = elf;
	sl->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!sl->dw) {
		srcline__free(sl);
		errno = ENOENT;
		return NULL;
	}
	if (!strings_terminated(elf)) {
		srcline__free(sl);
		errno = EINVAL;
		return NULL;
	}
	return sl;
}

struct srcline *srcline__open_fd(int fd)
{
	/* elffile: ELF_C_READ, not _MMAP: a file truncated under us must not SIGBUS. */
	return open_elf(elffile__begin(fd));
}

struct srcline *srcline__open_mem(const void *data, size_t len)
{
	void *copy;
	/* A private copy: dwarf_begin_elf() decompresses sections in place. */
	struct srcline *sl = open_elf(elffile__begin_mem(data, len, &copy));

	if (sl)
		sl->copy = copy;
	else
		free(copy);
	return sl;
}

void srcline__free(struct srcline *sl)
{
	if (!sl)
		return;
	if (sl->dw)
		dwarf_end(sl->dw);
	elffile__end(sl->elf, sl->copy);
	free(sl);
}

/* Whether one of the unit's ranges overlaps [lo, hi). */
static bool unit_overlaps(Dwarf_Die *cu, uint64_t lo, uint64_t hi)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	int guard = 0;

	while ((off = dwarf_ranges(cu, off, &base, &start, &end)) > 0 && guard++ < 1000000)
		if (start < hi && end > lo)
			return true;
	return false;
}

struct rowvec {
	struct srcline_row *v;
	size_t nr, cap;
	size_t *seq; /* table order, for a stable sort */
};

static int push(struct rowvec *rv, uint64_t addr, const char *file, int line)
{
	if (rv->nr >= SRCLINE_MAX_ROWS)
		return 0;
	if (rv->nr == rv->cap) {
		size_t ncap = rv->cap ? rv->cap * 2 : 64;
		struct srcline_row *nv = realloc(rv->v, ncap * sizeof(*nv));
		size_t *ns;

		if (!nv)
			return -ENOMEM;
		rv->v = nv;
		ns = realloc(rv->seq, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		rv->seq = ns;
		rv->cap = ncap;
	}
	rv->v[rv->nr] = (struct srcline_row){
		.addr = addr, .file = file ? file : "??", .line = line > 0 ? (uint32_t)line : 0};
	rv->seq[rv->nr] = rv->nr;
	rv->nr++;
	return 0;
}

/* Rows of one unit in [lo, hi), plus the row that covers lo from below. */
static int unit_rows(Dwarf_Die *cu, uint64_t lo, uint64_t hi, struct rowvec *rv)
{
	Dwarf_Lines *lines;
	size_t n;
	bool have_prev = false;
	Dwarf_Line *prev = NULL;
	int err = 0;

	if (dwarf_getsrclines(cu, &lines, &n))
		return 0; /* no or corrupt line table: no rows */
	for (size_t i = 0; i < n && !err; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		bool eos = false;
		int line = 0;

		if (!l || dwarf_lineaddr(l, &addr))
			continue;
		dwarf_lineendsequence(l, &eos);
		if (eos) {
			have_prev = false;
			continue;
		}
		if (addr < lo) {
			prev = l;
			have_prev = true;
			continue;
		}
		if (addr >= hi)
			continue;
		if (have_prev && addr > lo) {
			Dwarf_Addr pa;
			int pl = 0;

			/* The code at lo belongs to a row that started below it. */
			if (!dwarf_lineaddr(prev, &pa)) {
				dwarf_lineno(prev, &pl);
				err = push(rv, pa, dwarf_linesrc(prev, NULL, NULL), pl);
			}
		}
		have_prev = false;
		dwarf_lineno(l, &line);
		if (!err)
			err = push(rv, addr, dwarf_linesrc(l, NULL, NULL), line);
	}
	return err;
}

static struct rowvec *sort_rv;

static int cmp_rows(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct srcline_row *rx = &sort_rv->v[x], *ry = &sort_rv->v[y];

	if (rx->addr != ry->addr)
		return rx->addr < ry->addr ? -1 : 1;
	return x < y ? -1 : x > y;
}

int srcline__rows(struct srcline *sl, uint64_t lo, uint64_t hi, struct srcline_row **rows,
		  size_t *nr)
{
	struct rowvec rv = {0};
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t unit_type;
	struct srcline_row *out;
	int err = 0;

	*rows = NULL;
	*nr = 0;
	while (!err && dwarf_get_units(sl->dw, cu, &cu, NULL, &unit_type, &cudie, &subdie) == 0) {
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type)
			continue;
		if (!unit_overlaps(&cudie, lo, hi))
			continue;
		err = unit_rows(&cudie, lo, hi, &rv);
	}
	if (err || !rv.nr) {
		free(rv.v);
		free(rv.seq);
		return err ? err : -ENOENT;
	}
	sort_rv = &rv;
	qsort(rv.seq, rv.nr, sizeof(*rv.seq), cmp_rows);
	sort_rv = NULL;
	out = malloc(rv.nr * sizeof(*out));
	if (!out) {
		free(rv.v);
		free(rv.seq);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rv.nr; i++)
		out[i] = rv.v[rv.seq[i]];
	free(rv.v);
	free(rv.seq);
	*rows = out;
	*nr = rv.nr;
	return 0;
}

const struct srcline_row *srcline__find(const struct srcline_row *rows, size_t nr, uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}
