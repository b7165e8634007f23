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
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "proc/elffile.h"
#include "sym/lineprog.h"

struct srcline {
	Elf *elf;
	Dwarf *dw;
	struct lineprog_sections
		sec;		  /* .debug_line and its string sections, as libdw loaded them */
	struct srcline_strs strs; /* where its string attributes may point */
	char **names;		  /* the file paths rows point to */
	size_t nr_names, cap_names, name_bytes;
};

/*
 * libdw (0.188) reads strings of .debug_str and .debug_line_str with strlen
 * after checking only that the offset is inside the section: a section whose
 * last byte is not NUL lets a crafted file read past it (found by
 * fuzz_annotation). Such a file is refused. Checked after dwarf_begin_elf(),
 * which has decompressed SHF_COMPRESSED sections in place.
 */
bool srcline__strings_terminated(Elf *elf)
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

/*
 * The sections the line programs are read from, found after
 * dwarf_begin_elf() has decompressed them in place (SHF_COMPRESSED, or the
 * old .zdebug_ ones): their data is then the plain bytes.
 */
void srcline__sections(Elf *elf, struct lineprog_sections *sec)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	memset(sec, 0, sizeof(*sec));
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const uint8_t **buf = NULL;
		size_t *size = NULL;
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		name += !strncmp(name, ".zdebug_", 8) ? 8 : !strncmp(name, ".debug_", 7) ? 7 : 0;
		if (!strcmp(name, "line"))
			buf = &sec->line, size = &sec->line_size;
		else if (!strcmp(name, "line_str"))
			buf = &sec->line_str, size = &sec->line_str_size;
		else if (!strcmp(name, "str"))
			buf = &sec->str, size = &sec->str_size;
		if (!buf || *buf || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		*buf = d->d_buf;
		*size = d->d_size;
	}
}

void srcline__strs_add(Elf *elf, struct srcline_strs *st)
{
	static const char *const names[] = { "info", "types", "str", "line_str" };
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) && st->nr < SRCLINE_STR_RANGES) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		name += !strncmp(name, ".zdebug_", 8) ? 8 : !strncmp(name, ".debug_", 7) ? 7 : 0;
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			/* elf_getdata() again: the data libdw decompressed in place. */
			if (strcmp(name, names[i]) || !(d = elf_getdata(scn, NULL)) || !d->d_buf ||
			    !d->d_size)
				continue;
			st->r[st->nr].p = d->d_buf;
			st->r[st->nr].n = d->d_size;
			st->nr++;
			break;
		}
	}
}

void srcline__strs_init(Elf *elf, struct srcline_strs *st)
{
	memset(st, 0, sizeof(*st));
	srcline__strs_add(elf, st);
}

static const char *str_in(const struct srcline_strs *st, const char *s)
{
	for (unsigned i = 0; i < st->nr; i++) {
		uintptr_t lo = (uintptr_t)st->r[i].p, at = (uintptr_t)s;

		if (at >= lo && at - lo < st->r[i].n)
			return memchr(s, 0, st->r[i].n - (at - lo)) ? s : NULL;
	}
	return NULL;
}

const char *srcline__string(struct srcline_strs *st, Dwarf_Attribute *attr)
{
	const char *s = attr ? dwarf_formstring(attr) : NULL;

	return s ? str_in(st, s) : NULL;
}

/*
 * The dwz file libdw looks for on its own (.gnu_debugaltlink, at the first
 * DW_FORM_GNU_strp_alt or _ref_alt) is a path the tenant's file names,
 * opened as root in bpfprof's own mount namespace with a blocking open(): a
 * FIFO there stopped the main loop for good. Every Dwarf gets this empty one
 * as its dwz file instead: its strings and references are not found (the
 * frames keep their symbol names). One image for the run, never freed
 * (dwarf_end() frees only a dwz file libdw opened itself).
 */
#define NOALT_SHSTRTAB "\0.shstrtab\0.debug_line\0.debug_str"
enum { NOALT_NAME_SHSTRTAB = 1, NOALT_NAME_LINE = 11, NOALT_NAME_STR = 23 };

/* Shared by every Dwarf of the run. libdw fills caches of a Dwarf it reads
 * (its unit tree, abbreviations) and is not thread-safe as built by default:
 * fine while all DWARF is read on one thread (the main loop's symbolizer,
 * annotate); a second thread reading DWARF needs an empty one of its own. */
static Dwarf *noalt_dw;
static pthread_once_t noalt_once = PTHREAD_ONCE_INIT;

static void noalt_init(void)
{
	static union {
		struct {
			Elf64_Ehdr eh;
			Elf64_Shdr sh[4];
			char strs[sizeof(NOALT_SHSTRTAB)];
			char data[2]; /* .debug_line: one byte; .debug_str: "" */
		} img;
		uint64_t align;
	} u;
	const size_t strs = offsetof(__typeof__(u.img), strs),
		     data = offsetof(__typeof__(u.img), data);
	static const unsigned char ident[EI_NIDENT] = {
		ELFMAG0,    ELFMAG1,
		ELFMAG2,    ELFMAG3,
		ELFCLASS64, __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB,
		EV_CURRENT,
	};
	Elf *elf;

	memcpy(u.img.eh.e_ident, ident, EI_NIDENT);
	u.img.eh.e_type = ET_REL;
	u.img.eh.e_machine = EM_X86_64;
	u.img.eh.e_version = EV_CURRENT;
	u.img.eh.e_shoff = offsetof(__typeof__(u.img), sh);
	u.img.eh.e_ehsize = sizeof(Elf64_Ehdr);
	u.img.eh.e_shentsize = sizeof(Elf64_Shdr);
	u.img.eh.e_shnum = 4;
	u.img.eh.e_shstrndx = 1;
	u.img.sh[1] = (Elf64_Shdr){ .sh_name = NOALT_NAME_SHSTRTAB,
				    .sh_type = SHT_STRTAB,
				    .sh_offset = strs,
				    .sh_size = sizeof(NOALT_SHSTRTAB),
				    .sh_addralign = 1 };
	u.img.sh[2] = (Elf64_Shdr){ .sh_name = NOALT_NAME_LINE,
				    .sh_type = SHT_PROGBITS,
				    .sh_offset = data,
				    .sh_size = 1,
				    .sh_addralign = 1 };
	u.img.sh[3] = (Elf64_Shdr){ .sh_name = NOALT_NAME_STR,
				    .sh_type = SHT_PROGBITS,
				    .sh_offset = data + 1,
				    .sh_size = 1,
				    .sh_addralign = 1 };
	memcpy(u.img.strs, NOALT_SHSTRTAB, sizeof(NOALT_SHSTRTAB));
	elf = elffile__adopt_mem(&u.img, sizeof(u.img));
	if (elf && !(noalt_dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)))
		elffile__end(elf, NULL);
}

bool srcline__no_dwz(Dwarf *dw)
{
	pthread_once(&noalt_once, noalt_init);
	if (!noalt_dw)
		return false;
	dwarf_setalt(dw, noalt_dw);
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
	if (!srcline__strings_terminated(elf) || !srcline__no_dwz(sl->dw)) {
		srcline__free(sl);
		errno = EINVAL;
		return NULL;
	}
	srcline__sections(sl->elf, &sl->sec);
	srcline__strs_init(sl->elf, &sl->strs);
	return sl;
}

struct srcline *srcline__open_fd(int fd)
{
	/* elffile: ELF_C_READ, not _MMAP: a file truncated under us must not SIGBUS. */
	return open_elf(elffile__begin(fd));
}

void srcline__free(struct srcline *sl)
{
	if (!sl)
		return;
	for (size_t i = 0; i < sl->nr_names; i++)
		free(sl->names[i]);
	free(sl->names);
	if (sl->dw)
		dwarf_end(sl->dw);
	elffile__end(sl->elf, NULL);
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
	size_t cap_seq;
};

/* 1: the row cap is reached (decoding stops), 0, -ENOMEM. */
static int push(struct rowvec *rv, uint64_t addr, const char *file, uint32_t line)
{
	if (rv->nr >= SRCLINE_MAX_ROWS)
		return 1;
	if (array_grow((void **)&rv->v, &rv->cap, rv->nr + 1, sizeof(*rv->v)) ||
	    array_grow((void **)&rv->seq, &rv->cap_seq, rv->nr + 1, sizeof(*rv->seq)))
		return -ENOMEM;
	rv->v[rv->nr] = (struct srcline_row){ .addr = addr, .file = file, .line = line };
	rv->seq[rv->nr] = rv->nr;
	rv->nr++;
	return 0;
}

/* One unit being decoded: its rows go to rv, its file names are made once each. */
struct unit_ctx {
	struct srcline *sl;
	struct lineprog *lp;
	const char **names; /* by file index, made on first use; NULL: not yet */
	size_t nr_names;
	struct rowvec *rv;
};

static const char unknown_file[] = "??";

/* The file's path, kept as long as sl (at most SRCLINE_MAX_NAME_BYTES of them). */
static const char *file_name(struct unit_ctx *u, uint32_t file)
{
	char buf[PATH_MAX];
	const char *path;
	char *copy;
	size_t len;

	if (!u->names) {
		u->nr_names = lineprog__nr_files(u->lp) + 1; /* DWARF 2-4 count from 1 */
		u->names = calloc(u->nr_names, sizeof(*u->names));
		if (!u->names)
			return unknown_file;
	}
	if (file >= u->nr_names)
		return unknown_file;
	if (u->names[file])
		return u->names[file];
	u->names[file] = unknown_file;
	path = lineprog__file(u->lp, file, buf, sizeof(buf));
	if (!path || (len = strlen(path) + 1) > SRCLINE_MAX_NAME_BYTES - u->sl->name_bytes)
		return unknown_file;
	if (u->sl->nr_names == u->sl->cap_names &&
	    array_grow((void **)&u->sl->names, &u->sl->cap_names, u->sl->nr_names + 1,
		       sizeof(*u->sl->names)))
		return unknown_file;
	copy = malloc(len);
	if (!copy)
		return unknown_file;
	memcpy(copy, path, len);
	u->sl->names[u->sl->nr_names++] = copy;
	u->sl->name_bytes += len;
	return u->names[file] = copy;
}

static int emit_row(void *ctx, const struct lineprog_row *r)
{
	struct unit_ctx *u = ctx;

	return push(u->rv, r->addr, file_name(u, r->file), r->line);
}

/* Rows of one unit in [lo, hi), plus the row that covers lo from below. */
static int unit_rows(struct srcline *sl, Dwarf_Die *cu, uint64_t lo, uint64_t hi, uint64_t *budget,
		     struct rowvec *rv)
{
	struct unit_ctx u = { .sl = sl, .rv = rv };
	Dwarf_Attribute attr;
	Dwarf_Word off;
	int err;

	if (!dwarf_attr(cu, DW_AT_stmt_list, &attr) || dwarf_formudata(&attr, &off))
		return 0; /* no line table: no rows */
	err = lineprog__open(&sl->sec, off,
			     srcline__string(&sl->strs, dwarf_attr(cu, DW_AT_comp_dir, &attr)),
			     &u.lp);
	if (err)
		return err == -ENOMEM ? err : 0; /* a corrupt header: no rows */
	err = lineprog__run(u.lp, lo, hi, budget, emit_row, &u);
	free(u.names);
	lineprog__free(u.lp);
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
	struct rowvec rv = { 0 };
	uint64_t budget = SRCLINE_MAX_OPS;
	Dwarf_CU *cu = NULL;
	Dwarf_Die
		cudie; /* no subdie: libdw would open the skeleton's .dwo (a path the file names) */
	uint8_t unit_type;
	struct srcline_row *out;
	int err = 0;

	*rows = NULL;
	*nr = 0;
	while (!err && dwarf_get_units(sl->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type ||
		    unit_type == DW_UT_split_compile)
			continue;
		if (!unit_overlaps(&cudie, lo, hi))
			continue;
		err = unit_rows(sl, &cudie, lo, hi, &budget, &rv);
	}
	/* The row cap or the budget reached: the rows so far are good ones. */
	if (err == 1 || err == -ETIME)
		err = 0;
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
