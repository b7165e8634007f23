// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * elfsym.c - function symbols, PT_LOAD segments, build id and debug links of
 * one ELF file; see elfsym.h.
 *
 * libelf is opened with ELF_C_READ, never ELF_C_READ_MMAP: a mapped binary can
 * be truncated or rewritten under us (package upgrades), and touching a page
 * past the new end of an mmap is a SIGBUS, while a pread() just comes up
 * short. libelf checks that section and segment data lie inside the file; on
 * top of that every table is validated here before use (entry size, string
 * table link and termination, sizes that overflow), and a bad table or symbol
 * is skipped and counted rather than trusted.
 *
 * Symbol tables are read as bytes in host order (libelf's translated data, or
 * our own inflated copy of an SHF_COMPRESSED section, translated with
 * gelf_xlatetom) and decoded here, so compressed and plain tables take the
 * same path. libelf 0.188 cannot inflate zstd sections itself, and would not
 * bound what it inflates: both are done here, with zlib and libzstd.
 *
 * Everything needed later (symbols, names, segments, build id, debug link)
 * is copied out and the libelf handle closed before returning: an elfsym
 * holds no fd and no libelf memory.
 */
#include "sym/elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <lzma.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "base/budget.h"
#include "base/bytes.h"
#include "base/htab.h"
#include "lang/gopclntab.h"
#include "sym/demangle.h"
#include "base/util.h"
#include "proc/cfienc.h"
#include "proc/elffile.h"

/* Largest symbol or string table we read: ~10M symbols. Past that, skip it. */
#define ELFSYM_MAX_TABLE (256u << 20)
/*
 * Total bytes of symbol and string tables read from one file. Sections may
 * overlap, so a hostile file of N bytes could otherwise make us read N bytes
 * once per section header: N^2/64 in all.
 */
#define ELFSYM_TABLE_BUDGET (1024u << 20)
/* Build-id notes are tens of bytes; a bigger note area is not worth reading. */
/*
 * Decompression (SHF_COMPRESSED sections, MiniDebugInfo): one section may
 * inflate to at most ELFSYM_MAX_INFLATE bytes and one file to
 * ELFSYM_INFLATE_BUDGET in all, checked against the size the header claims
 * before anything is allocated; the decoders get exactly that much room, so a
 * bomb that lies about its size fails instead of growing.
 */
#define ELFSYM_MAX_INFLATE    (64u << 20)
#define ELFSYM_INFLATE_BUDGET (256u << 20)
/* .gnu_debugdata: compressed bytes read, and the xz decoder's memory limit. */
#define ELFSYM_MAX_DEBUGDATA (16u << 20)
#define ELFSYM_XZ_MEMLIMIT   (64u << 20)
/*
 * How many preceding symbols a lookup checks when the nearest one ends
 * before the address: covers a function containing smaller FUNC symbols
 * (glibc's string functions have inner entry points), in bounded time.
 */
#define ELFSYM_WALK_BACK 16

/*
 * Go's pc-line table and the read-only data holding its inline trees: at
 * most this much of each is read (a large Go binary has tens of MiB), and
 * the data searched for the runtime's moduledata.
 */
#define ELFSYM_GO_MAX_TABLE (256u << 20)
#define ELFSYM_GO_MAX_DATA  (128u << 20)
#define ELFSYM_GO_MAX_SCAN  (64u << 20) /* searched for moduledata, per file */

/*
 * .eh_frame, for the functions no symbol names: bytes of it read, entries
 * walked, FDEs kept (16 bytes each), and the largest function believed.
 */
#define ELFSYM_MAX_EH_FRAME    (64u << 20)
#define ELFSYM_MAX_CFI_ENTRIES (8u << 20)
#define ELFSYM_MAX_FDES	       (1u << 20)
#define ELFSYM_MAX_FDE_RANGE   (256u << 20)

/* ELFCOMPRESS_ZSTD is missing from older <elf.h>. */
#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

struct elfsym_ent {
	uint64_t start, end; /* [start, end) */
	const char *name;    /* in pool (or in a merged elfsym's pool) */
};

struct elfsym_seg {
	uint64_t off, vaddr, filesz;
};

struct elfsym_fde {
	uint64_t start, end;
};

struct elfsym {
	struct elfsym_ent *syms; /* sorted by start, starts unique */
	size_t nr;
	struct elfsym_seg *segs; /* PT_LOAD, file order */
	size_t nr_segs;
	char *pool;
	size_t bad;
	int type;
	int machine; /* e_machine */
	bool has_symtab;
	bool has_debugdata;
	bool has_debuglink;
	uint32_t debuglink_crc;
	char debuglink[DEBUGLINK_NAME_MAX + 1];
	size_t build_id_len;
	uint8_t build_id[BUILD_ID_MAX];
	struct elfsym *merged; /* whose names syms may point to (chain) */
	struct gopclntab *go;  /* Go's pc-line table, or NULL */
	struct htab *pretty;   /* symbol index -> demangled name, filled lazily */
	/* .eh_frame FDEs no symbol names: sorted, disjoint [start, end). */
	struct elfsym_fde *fdes;
	size_t nr_fdes;
	size_t bytes;	  /* heap bytes held, roughly: at most ELFSYM_MAX_BYTES */
	size_t names_cut; /* names longer than ELFSYM_MAX_NAME, kept cut there */
};

/* A symbol as read, before aliases are merged; name points into libelf data. */
struct cand {
	uint64_t start, size;
	uint64_t sec_end; /* end of its section; 0 if unknown */
	const char *name;
	uint32_t len; /* of the name as kept: at most ELFSYM_MAX_NAME */
	uint32_t rank;
	bool plt; /* a PLT stub: the name gets "@plt" when copied */
};

struct sec_info {
	uint64_t end;	 /* sh_addr + sh_size, 0 if that overflows */
	size_t xndx_scn; /* for a symbol table: its SHT_SYMTAB_SHNDX section, or 0 */
	uint32_t type;
	uint64_t addr, offset, size, flags;
};

struct builder {
	Elf *elf;
	struct elfsym *es;
	uint64_t file_size;
	int cls;     /* ELFCLASS32 or ELFCLASS64 */
	int data;    /* ELFDATA2LSB or ELFDATA2MSB */
	bool nested; /* reading MiniDebugInfo: no .gnu_debugdata inside */
	struct sec_info *secs;
	size_t shnum;
	struct cand *cands;
	size_t nr_cands, cap_cands;
	uint64_t table_budget, inflate_budget;
	void **owned; /* inflated buffers the candidates' names point into */
	size_t nr_owned;
	struct elfsym *mini; /* symbols from .gnu_debugdata */
	/* Sections Go binaries have (index, 0 if absent); moduledata is in
	 * .go.module since Go 1.26, in .noptrdata before. */
	size_t go_pclntab, go_module, go_noptrdata, go_text, go_rodata;
	size_t eh_frame; /* .eh_frame's index, 0 if absent */
	/* The search for a pc-line table without a section, and for moduledata:
	 * over every segment together, at most so much (PT_LOAD entries may
	 * all name the same bytes). */
	struct gopclntab_scan go_scan;
	uint64_t go_data_left;
	/* The file's time (a nested MiniDebugInfo image shares its file's). */
	struct budget *budget;
	struct budget own_budget;
};

/* Preference among aliases at one address: GLOBAL, then WEAK, then LOCAL. */
static uint32_t bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

static size_t leading_underscores(const struct cand *c)
{
	size_t n = 0;

	while (n < c->len && c->name[n] == '_')
		n++;
	return n;
}

/*
 * Deterministic order: by address, then the preferred alias first (binding,
 * then fewer leading underscores: "malloc" over "__libc_malloc", then name,
 * then the larger size).
 */
static int cand__cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	size_t ux, uy;
	int c;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	ux = leading_underscores(x);
	uy = leading_underscores(y);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	/* Names as kept (cut at ELFSYM_MAX_NAME): a comparison costs at most that. */
	c = memcmp(x->name, y->name, MIN(x->len, y->len));
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return 0;
}

/*
 * A candidate, its name's length taken (at most ELFSYM_MAX_NAME: a longer
 * one is cut there). The candidates are the file's own item too: past
 * ELFSYM_MAX_BYTES of them the file is refused (E2BIG). 0 or -errno.
 */
static int builder__add(struct builder *b, const struct cand *c)
{
	struct cand *n;

	if ((b->nr_cands + 1) * sizeof(*b->cands) > ELFSYM_MAX_BYTES)
		return -E2BIG;
	if (array_grow((void **)&b->cands, &b->cap_cands, b->nr_cands + 1, sizeof(*b->cands)))
		return -ENOMEM;
	n = &b->cands[b->nr_cands++];
	*n = *c;
	n->len = (uint32_t)strnlen(c->name, ELFSYM_MAX_NAME);
	b->es->names_cut += n->len == ELFSYM_MAX_NAME && c->name[n->len];
	return 0;
}

static int builder__own(struct builder *b, void *buf)
{
	void **n = reallocarray(b->owned, b->nr_owned + 1, sizeof(*n));

	if (!n) {
		free(buf);
		return -ENOMEM;
	}
	b->owned = n;
	b->owned[b->nr_owned++] = buf;
	return 0;
}

/* The file's own byte order. */
static uint32_t brd32(const struct builder *b, const uint8_t *p)
{
	return rd32(p, b->data == ELFDATA2MSB);
}

static uint64_t brd64(const struct builder *b, const uint8_t *p)
{
	return rd64(p, b->data == ELFDATA2MSB);
}

static bool host_is_big_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

/*
 * Inflates an SHF_COMPRESSED section (zlib or zstd) into a new buffer of
 * exactly the size its header claims, translated to host order for `type`.
 */
static int inflate_section(struct builder *b, Elf_Scn *scn, Elf_Type type, void **out,
			   size_t *out_len)
{
	Elf_Data *raw = elf_rawdata(scn, NULL);
	const uint8_t *d;
	uint64_t ch_size;
	uint32_t ch_type;
	size_t hdr, len;
	uint8_t *buf;

	if (!raw || !raw->d_buf)
		return -EINVAL;
	d = raw->d_buf;
	len = raw->d_size;
	hdr = b->cls == ELFCLASS32 ? 12 : 24;
	if (len < hdr)
		return -EINVAL;
	ch_type = brd32(b, d);
	ch_size = b->cls == ELFCLASS32 ? brd32(b, d + 4) : brd64(b, d + 8);
	if (!ch_size || ch_size > ELFSYM_MAX_INFLATE || ch_size > b->inflate_budget)
		return -EFBIG;
	b->inflate_budget -= ch_size;
	buf = malloc(ch_size);
	if (!buf)
		return -ENOMEM;
	if (ch_type == ELFCOMPRESS_ZLIB) {
		uLongf dlen = (uLongf)ch_size;
		uLong slen = (uLong)(len - hdr);

		if (uncompress2(buf, &dlen, d + hdr, &slen) != Z_OK || dlen != ch_size)
			goto bad;
	} else if (ch_type == ELFCOMPRESS_ZSTD) {
		size_t r = ZSTD_decompress(buf, ch_size, d + hdr, len - hdr);

		if (ZSTD_isError(r) || r != ch_size)
			goto bad;
	} else {
		goto bad;
	}
	if (type != ELF_T_BYTE && (b->data == ELFDATA2MSB) != host_is_big_endian()) {
		Elf_Data src = {
			.d_buf = buf, .d_type = type, .d_size = ch_size, .d_version = EV_CURRENT
		};
		Elf_Data dst = src;

		/* Same-size types: libelf converts in place. */
		if (!gelf_xlatetom(b->elf, &dst, &src, (unsigned)b->data) || dst.d_size != ch_size)
			goto bad;
	}
	*out = buf;
	*out_len = ch_size;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}

/*
 * The contents of a whole section in host order: libelf's data, or an
 * inflated copy (owned by the builder) for a compressed section. NULL if
 * neither can be had intact.
 */
static const void *section_bytes(struct builder *b, Elf_Scn *scn, const GElf_Shdr *sh,
				 Elf_Type want, size_t *len)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS)
		return NULL;
	if (sh->sh_flags & SHF_COMPRESSED) {
		void *buf;

		if (inflate_section(b, scn, want, &buf, len) || builder__own(b, buf))
			return NULL;
		return buf;
	}
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_type != want || d->d_size != sh->sh_size)
		return NULL;
	*len = d->d_size;
	return d->d_buf;
}

/* Symbol i of a host-order table of this file's class. */
static void sym_at(const struct builder *b, const void *tab, size_t i, GElf_Sym *s)
{
	if (b->cls == ELFCLASS32) {
		Elf32_Sym e;

		memcpy(&e, (const char *)tab + i * sizeof(e), sizeof(e));
		s->st_name = e.st_name;
		s->st_value = e.st_value;
		s->st_size = e.st_size;
		s->st_info = e.st_info;
		s->st_other = e.st_other;
		s->st_shndx = e.st_shndx;
	} else {
		Elf64_Sym e;

		memcpy(&e, (const char *)tab + i * sizeof(e), sizeof(e));
		s->st_name = e.st_name;
		s->st_value = e.st_value;
		s->st_size = e.st_size;
		s->st_info = e.st_info;
		s->st_other = e.st_other;
		s->st_shndx = e.st_shndx;
	}
}

/* SHT_SYMTAB_SHNDX words for symbol table `symidx`, if any (>65279 sections). */
static const uint32_t *find_shndx(struct builder *b, size_t symidx, size_t *nwords)
{
	size_t idx = b->secs[symidx].xndx_scn, len;
	const void *d;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!idx || !(scn = elf_getscn(b->elf, idx)) || !gelf_getshdr(scn, &sh) ||
	    sh.sh_size > b->table_budget || (sh.sh_flags & SHF_COMPRESSED))
		return NULL;
	b->table_budget -= sh.sh_size;
	d = section_bytes(b, scn, &sh, ELF_T_WORD, &len);
	if (!d)
		return NULL;
	*nwords = len / 4;
	return d;
}

/* Adds the function symbols of one SHT_SYMTAB/SHT_DYNSYM; a bad table is skipped. */
static int builder__read_symtab(struct builder *b, Elf_Scn *scn, const GElf_Shdr *sh)
{
	size_t entsize = gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t str_len, nsyms, syms_len, nshndx = 0;
	const uint32_t *shndx;
	int err;
	const void *syms;
	const char *str;
	GElf_Shdr ssh;
	Elf_Scn *sscn;

	/* entsize 0 is elfutils CVE-2018-18521 (a division by zero). */
	if (!entsize || sh->sh_entsize != entsize || sh->sh_size > ELFSYM_MAX_TABLE)
		goto bad_table;
	if (!(sh->sh_flags & SHF_COMPRESSED) && sh->sh_size % entsize)
		goto bad_table;
	if (sh->sh_link == SHN_UNDEF || sh->sh_link >= b->shnum ||
	    b->secs[sh->sh_link].type != SHT_STRTAB)
		goto bad_table;
	sscn = elf_getscn(b->elf, sh->sh_link);
	if (!sscn || !gelf_getshdr(sscn, &ssh) || ssh.sh_size > ELFSYM_MAX_TABLE)
		goto bad_table;
	if (sh->sh_size + ssh.sh_size > b->table_budget)
		goto bad_table;
	b->table_budget -= sh->sh_size + ssh.sh_size;
	syms = section_bytes(b, scn, sh, ELF_T_SYM, &syms_len);
	str = section_bytes(b, sscn, &ssh, ELF_T_BYTE, &str_len);
	if (!syms || !str || !str_len || syms_len % entsize)
		goto bad_table;
	/*
	 * Names are only valid up to the last NUL: one check here instead of a
	 * bounded scan per symbol (which an unterminated table of millions of
	 * symbols would make quadratic).
	 */
	while (str_len && str[str_len - 1] != '\0')
		str_len--;
	if (!str_len)
		goto bad_table;
	shndx = find_shndx(b, elf_ndxscn(scn), &nshndx);
	nsyms = syms_len / entsize;
	if (sh->sh_type == SHT_SYMTAB)
		b->es->has_symtab = true;

	/* Entry 0 is the reserved null symbol. */
	for (size_t i = 1; i < nsyms; i++) {
		unsigned char type;
		struct cand c = { 0 };
		size_t sec;
		GElf_Sym s;

		if (budget__over(b->budget))
			return budget__err(b->budget);
		sym_at(b, syms, i, &s);
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		/*
		 * Undefined symbols are imports; SHN_ABS ones have no section to
		 * bound them and are not relocated with the object (a PIE would
		 * get them wrong), and other reserved indices (COMMON) are not code.
		 */
		if (s.st_shndx == SHN_XINDEX)
			sec = shndx && i < nshndx ? shndx[i] : SHN_UNDEF;
		else if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
			continue;
		else
			sec = s.st_shndx;
		if (!s.st_value)
			continue;
		if (sec == SHN_UNDEF || sec >= b->shnum || s.st_name >= str_len ||
		    s.st_size > UINT64_MAX - s.st_value) {
			b->es->bad++;
			continue;
		}
		if (!str[s.st_name])
			continue;
		c.start = s.st_value;
		c.size = s.st_size;
		c.sec_end = b->secs[sec].end;
		c.name = str + s.st_name;
		c.rank = bind_rank(GELF_ST_BIND(s.st_info));
		err = builder__add(b, &c);
		if (err)
			return err;
	}
	return 0;

bad_table:
	b->es->bad++;
	return 0;
}

#define ELFSYM_PLT_ENTRY 16 /* x86-64 .plt and .plt.sec entries */

/* Whether section i is a stub section of whole 16-byte entries. */
static bool plt_section(struct builder *b, size_t i, GElf_Shdr *sh)
{
	Elf_Scn *scn = i ? elf_getscn(b->elf, i) : NULL;

	return scn && gelf_getshdr(scn, sh) && (sh->sh_flags & SHF_EXECINSTR) &&
	       (sh->sh_entsize == ELFSYM_PLT_ENTRY || !sh->sh_entsize) &&
	       sh->sh_size / ELFSYM_PLT_ENTRY && sh->sh_addr <= UINT64_MAX - sh->sh_size;
}

/* A SHT_RELA section with its dynamic symbols and their names, host order. */
struct relocs {
	const void *rel, *syms;
	const char *str;
	size_t nrel, nsyms, str_len, relsize, symsize;
};

/*
 * Reads relocation section rela_i and the symbol and string tables it links
 * to, within the table budget. 1: read; 0: nothing to read (no section, or
 * not SHT_RELA, e.g. SHT_NOBITS in a separate debug file); -1: corrupt.
 */
static int read_relocs(struct builder *b, size_t rela_i, struct relocs *r)
{
	GElf_Shdr rsh, ssh, tsh;
	Elf_Scn *rscn, *sscn, *tscn;
	size_t rel_len, syms_len;

	r->relsize = gelf_fsize(b->elf, ELF_T_RELA, 1, EV_CURRENT);
	r->symsize = gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT);
	rscn = rela_i ? elf_getscn(b->elf, rela_i) : NULL;
	if (!r->relsize || !r->symsize || !rscn || !gelf_getshdr(rscn, &rsh) ||
	    rsh.sh_type != SHT_RELA)
		return 0;
	if (rsh.sh_entsize != r->relsize || rsh.sh_link == SHN_UNDEF || rsh.sh_link >= b->shnum ||
	    b->secs[rsh.sh_link].type != SHT_DYNSYM)
		return -1;
	sscn = elf_getscn(b->elf, rsh.sh_link);
	if (!sscn || !gelf_getshdr(sscn, &ssh) || ssh.sh_entsize != r->symsize ||
	    ssh.sh_link == SHN_UNDEF || ssh.sh_link >= b->shnum ||
	    b->secs[ssh.sh_link].type != SHT_STRTAB)
		return -1;
	tscn = elf_getscn(b->elf, ssh.sh_link);
	if (!tscn || !gelf_getshdr(tscn, &tsh) || rsh.sh_size > ELFSYM_MAX_TABLE ||
	    ssh.sh_size > ELFSYM_MAX_TABLE || tsh.sh_size > ELFSYM_MAX_TABLE ||
	    rsh.sh_size + ssh.sh_size + tsh.sh_size > b->table_budget)
		return -1;
	b->table_budget -= rsh.sh_size + ssh.sh_size + tsh.sh_size;
	r->rel = section_bytes(b, rscn, &rsh, ELF_T_RELA, &rel_len);
	r->syms = section_bytes(b, sscn, &ssh, ELF_T_SYM, &syms_len);
	r->str = section_bytes(b, tscn, &tsh, ELF_T_BYTE, &r->str_len);
	if (!r->rel || !r->syms || !r->str || rel_len % r->relsize || syms_len % r->symsize)
		return -1;
	/* Names are only valid up to the last NUL (as in builder__read_symtab). */
	while (r->str_len && r->str[r->str_len - 1] != '\0')
		r->str_len--;
	r->nrel = rel_len / r->relsize;
	r->nsyms = syms_len / r->symsize;
	return 1;
}

/* The symbol name of relocation i if it has this type and a named symbol. */
static const char *reloc_name(const struct builder *b, const struct relocs *r, size_t i,
			      uint32_t type, uint64_t *offset)
{
	Elf64_Rela rel;
	GElf_Sym s;

	memcpy(&rel, (const char *)r->rel + i * r->relsize, sizeof(rel));
	if (ELF64_R_TYPE(rel.r_info) != type || !ELF64_R_SYM(rel.r_info) ||
	    ELF64_R_SYM(rel.r_info) >= r->nsyms)
		return NULL;
	sym_at(b, r->syms, ELF64_R_SYM(rel.r_info), &s);
	if (s.st_name >= r->str_len || !r->str[s.st_name])
		return NULL;
	*offset = rel.r_offset;
	return r->str + s.st_name;
}

static bool x86_64(struct builder *b)
{
	GElf_Ehdr eh;

	return b->cls == ELFCLASS64 && gelf_getehdr(b->elf, &eh) && eh.e_machine == EM_X86_64;
}

/* A stub candidate: builder__finish() names it "name@plt". */
static int add_stub(struct builder *b, const char *name, uint64_t start, uint64_t size,
		    uint64_t sec_end)
{
	struct cand c = { .start = start,
			  .size = size,
			  .sec_end = sec_end,
			  .name = name,
			  .rank = bind_rank(STB_LOCAL),
			  .plt = true };

	return builder__add(b, &c);
}

/*
 * PLT stubs get "name@plt" symbols, as perf and objdump show them (else a
 * sample in a stub is unnamed, "module+0x..."). On x86-64 the i-th relocation
 * of .rela.plt belongs to entry i of .plt.sec (IBT builds) and to entry i + 1
 * of .plt (entry 0 is the lazy resolver's). The layout, not libelf, says
 * which stub is whose - libelf has no notion of it - so this is hand-written;
 * perf's dso__synthesize_plt_symbols() works the same way.
 */
static int builder__read_plt(struct builder *b, size_t rela_i, size_t plt_i, size_t pltsec_i)
{
	GElf_Shdr psh, qsh;
	bool have_plt, have_sec;
	struct relocs r;
	int ok;

	if (!x86_64(b))
		return 0;
	have_plt = plt_section(b, plt_i, &psh);
	have_sec = plt_section(b, pltsec_i, &qsh);
	if (!have_plt && !have_sec)
		return 0;
	ok = read_relocs(b, rela_i, &r);
	if (ok <= 0) {
		b->es->bad += ok < 0;
		return 0;
	}
	for (size_t i = 0; i < r.nrel; i++) {
		uint64_t slot;
		const char *name = reloc_name(b, &r, i, R_X86_64_JUMP_SLOT, &slot);
		int err = 0;

		if (budget__over(b->budget))
			return budget__err(b->budget);
		if (!name)
			continue;
		if (have_sec && i < qsh.sh_size / ELFSYM_PLT_ENTRY)
			err = add_stub(b, name, qsh.sh_addr + i * ELFSYM_PLT_ENTRY,
				       ELFSYM_PLT_ENTRY, qsh.sh_addr + qsh.sh_size);
		if (!err && have_plt && i + 1 < psh.sh_size / ELFSYM_PLT_ENTRY)
			err = add_stub(b, name, psh.sh_addr + (i + 1) * ELFSYM_PLT_ENTRY,
				       ELFSYM_PLT_ENTRY, psh.sh_addr + psh.sh_size);
		if (err)
			return err;
	}
	return 0;
}

struct got_sym {
	uint64_t got;	  /* GOT slot address */
	const char *name; /* in the string table */
};

static int got_sym__cmp(const void *a, const void *b)
{
	const struct got_sym *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The GOT slot an x86-64 .plt.got stub jumps through: jmp *disp32(%rip). */
static bool plt_got_target(const uint8_t *e, size_t len, uint64_t addr, uint64_t *got)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		if (e[i] == 0xff && e[i + 1] == 0x25) {
			int32_t disp =
				(int32_t)((uint32_t)e[i + 2] | (uint32_t)e[i + 3] << 8 |
					  (uint32_t)e[i + 4] << 16 | (uint32_t)e[i + 5] << 24);

			*got = addr + i + 6 + (uint64_t)(int64_t)disp;
			return true;
		}
	}
	return false;
}

/*
 * .plt.got stubs (a function called through the PLT whose address is also
 * taken) have no .rela.plt entry: each jumps through a GOT slot that a
 * GLOB_DAT relocation in .rela.dyn fills. Decode the jump, find the slot's
 * relocation, name the stub after its symbol (perf 6.4+ and objdump do).
 */
static int builder__read_plt_got(struct builder *b, size_t got_i, size_t rela_i)
{
	Elf_Scn *gscn = got_i ? elf_getscn(b->elf, got_i) : NULL;
	size_t code_len, nr = 0, ent;
	const uint8_t *code;
	struct got_sym *gs;
	struct relocs r;
	GElf_Shdr gsh;
	int ok, err = 0;

	if (!x86_64(b) || !gscn || !gelf_getshdr(gscn, &gsh) || gsh.sh_type != SHT_PROGBITS ||
	    !(gsh.sh_flags & SHF_EXECINSTR))
		return 0;
	ent = gsh.sh_entsize == 8 || gsh.sh_entsize == 16 ? gsh.sh_entsize : 0;
	if (!ent || gsh.sh_addr > UINT64_MAX - gsh.sh_size || gsh.sh_size > ELFSYM_MAX_TABLE ||
	    gsh.sh_size > b->table_budget)
		return 0;
	ok = read_relocs(b, rela_i, &r);
	if (ok <= 0) {
		b->es->bad += ok < 0;
		return 0;
	}
	b->table_budget -= gsh.sh_size;
	code = section_bytes(b, gscn, &gsh, ELF_T_BYTE, &code_len);
	if (!code) {
		b->es->bad++;
		return 0;
	}
	/* The GLOB_DAT slots with a named symbol, sorted for lookups. */
	gs = calloc(r.nrel ? r.nrel : 1, sizeof(*gs));
	if (!gs)
		return -ENOMEM;
	for (size_t i = 0; i < r.nrel; i++) {
		gs[nr].name = reloc_name(b, &r, i, R_X86_64_GLOB_DAT, &gs[nr].got);
		nr += gs[nr].name != NULL;
	}
	qsort(gs, nr, sizeof(*gs), got_sym__cmp);
	for (size_t k = 0; nr && k < code_len / ent && !err; k++) {
		uint64_t addr = gsh.sh_addr + k * ent;
		struct got_sym key, *hit;

		if (budget__over(b->budget))
			err = budget__err(b->budget);
		else if (plt_got_target(code + k * ent, ent, addr, &key.got) &&
			 (hit = bsearch(&key, gs, nr, sizeof(*gs), got_sym__cmp)))
			err = add_stub(b, hit->name, addr, ent, gsh.sh_addr + gsh.sh_size);
	}
	free(gs);
	return err;
}

/* PT_LOAD segments. */
static int builder__read_phdrs(struct builder *b)
{
	struct elfsym *es = b->es;
	size_t phnum, nr_load = 0;

	/* An entry is at least 32 bytes: more than fit in the file is corrupt. */
	if (elf_getphdrnum(b->elf, &phnum) || phnum > b->file_size / 32 || phnum > INT_MAX)
		return -EINVAL;
	/* First pass: libelf reads and bounds-checks the table; count PT_LOADs. */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(b->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD)
			nr_load++;
	}
	if (nr_load) {
		es->segs = calloc(nr_load, sizeof(*es->segs));
		if (!es->segs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(b->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD) {
			if (ph.p_filesz > UINT64_MAX - ph.p_offset ||
			    ph.p_filesz > UINT64_MAX - ph.p_vaddr) {
				es->bad++;
				continue;
			}
			es->segs[es->nr_segs].off = ph.p_offset;
			es->segs[es->nr_segs].vaddr = ph.p_vaddr;
			es->segs[es->nr_segs].filesz = ph.p_filesz;
			es->nr_segs++;
		}
	}
	return 0;
}

static struct elfsym *open_elf(Elf *elf, uint64_t size, struct budget *outer);

/*
 * MiniDebugInfo: .gnu_debugdata holds an xz-compressed ELF whose .symtab has
 * the local functions a stripped binary lost (Fedora, and anything built
 * with its recipe). Decoded with a memory limit and into at most
 * ELFSYM_MAX_INFLATE bytes; its own .gnu_debugdata, if any, is ignored.
 */
static void builder__read_debugdata(struct builder *b, Elf_Scn *scn, const GElf_Shdr *sh)
{
	lzma_stream xz = LZMA_STREAM_INIT;
	size_t cap = 0, len = 0, in_len;
	uint8_t *out = NULL;
	const void *in;
	lzma_ret r;
	Elf *inner;

	b->es->has_debugdata = true;
	if (sh->sh_size > ELFSYM_MAX_DEBUGDATA || (sh->sh_flags & SHF_COMPRESSED))
		goto bad;
	in = section_bytes(b, scn, sh, ELF_T_BYTE, &in_len);
	if (!in || !in_len)
		goto bad;
	if (lzma_stream_decoder(&xz, ELFSYM_XZ_MEMLIMIT, 0) != LZMA_OK)
		goto bad;
	xz.next_in = in;
	xz.avail_in = in_len;
	do {
		if (len == cap) {
			/* From 64 KiB, doubling (array_grow allocates exactly
			 * that: a power of two), refused before it is allocated. */
			size_t ncap = cap ? cap * 2 : 64 * 1024;

			if (ncap > ELFSYM_MAX_INFLATE || ncap > b->inflate_budget)
				goto bad_xz; /* a bomb, or simply too big */
			if (array_grow((void **)&out, &cap, ncap, 1))
				goto bad_xz;
		}
		xz.next_out = out + len;
		xz.avail_out = cap - len;
		r = lzma_code(&xz, LZMA_FINISH);
		len = cap - xz.avail_out;
	} while (r == LZMA_OK);
	lzma_end(&xz);
	if (r != LZMA_STREAM_END || !len)
		goto bad;
	b->inflate_budget -= cap;
	/* The decompressed image is ours: libelf may convert it in place. */
	inner = elffile__adopt_mem(out, len);
	if (!inner)
		goto bad;
	b->mini = open_elf(inner, len, b->budget);
	elffile__end(inner, NULL);
	free(out);
	if (!b->mini)
		b->es->bad++;
	return;
bad_xz:
	lzma_end(&xz);
bad:
	free(out);
	b->es->bad++;
}

static void builder__read_debuglink(struct builder *b, Elf_Scn *scn, const GElf_Shdr *sh)
{
	const void *d;
	size_t len;

	if (sh->sh_size > 4096)
		goto bad;
	d = section_bytes(b, scn, sh, ELF_T_BYTE, &len);
	if (!d || elfnote__debuglink(d, len, b->data == ELFDATA2MSB, b->es->debuglink,
				     &b->es->debuglink_crc))
		goto bad;
	b->es->has_debuglink = true;
	return;
bad:
	b->es->bad++;
}

static int builder__read_go(struct builder *b);

static int builder__read_sections(struct builder *b)
{
	Elf_Scn *scn = NULL, *debugdata = NULL;
	size_t shstrndx = 0, rela_plt = 0, plt = 0, plt_sec = 0, rela_dyn = 0, plt_got = 0;
	GElf_Shdr sh, ddsh;
	int err;

	/* An entry is at least 40 bytes: more than fit in the file is corrupt. */
	if (elf_getshdrnum(b->elf, &b->shnum) || b->shnum > b->file_size / 40)
		return -EINVAL;
	if (!b->shnum)
		return builder__read_go(b);
	/* Names only pick optional sections: a bad name table just means none. */
	if (elf_getshdrstrndx(b->elf, &shstrndx) || shstrndx >= b->shnum)
		shstrndx = 0;
	b->secs = calloc(b->shnum, sizeof(*b->secs));
	if (!b->secs)
		return -ENOMEM;
	/* Headers first: symbol tables refer to other sections by index. */
	for (size_t i = 1; i < b->shnum; i++) {
		scn = elf_getscn(b->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		b->secs[i].type = sh.sh_type;
		b->secs[i].addr = sh.sh_addr;
		b->secs[i].offset = sh.sh_offset;
		b->secs[i].size = sh.sh_size;
		b->secs[i].flags = sh.sh_flags;
		if (sh.sh_size <= UINT64_MAX - sh.sh_addr)
			b->secs[i].end = sh.sh_addr + sh.sh_size;
	}
	for (size_t i = 1; i < b->shnum; i++) {
		if (b->secs[i].type != SHT_SYMTAB_SHNDX)
			continue;
		scn = elf_getscn(b->elf, i);
		if (scn && gelf_getshdr(scn, &sh) && sh.sh_link && sh.sh_link < b->shnum)
			b->secs[sh.sh_link].xndx_scn = i;
	}
	for (size_t i = 1; i < b->shnum; i++) {
		const char *name = NULL;

		scn = elf_getscn(b->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (shstrndx && (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_RELA ||
				 sh.sh_type == SHT_X86_64_UNWIND))
			name = elf_strptr(b->elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && (sh.sh_flags & SHF_ALLOC) &&
		    !(sh.sh_flags & SHF_COMPRESSED))
			b->eh_frame = i;
		if (name && sh.sh_type == SHT_PROGBITS && !(sh.sh_flags & SHF_COMPRESSED)) {
			if (!strcmp(name, ".gopclntab"))
				b->go_pclntab = i;
			else if (!strcmp(name, ".noptrdata"))
				b->go_noptrdata = i;
			else if (!strcmp(name, ".go.module"))
				b->go_module = i;
			else if (!strcmp(name, ".text"))
				b->go_text = i;
			else if (!strcmp(name, ".rodata"))
				b->go_rodata = i;
		}
		if (name && sh.sh_type == SHT_RELA && !strcmp(name, ".rela.plt"))
			rela_plt = i;
		else if (name && !strcmp(name, ".plt"))
			plt = i;
		else if (name && !strcmp(name, ".plt.sec"))
			plt_sec = i;
		else if (name && !strcmp(name, ".plt.got"))
			plt_got = i;
		else if (name && sh.sh_type == SHT_RELA && !strcmp(name, ".rela.dyn"))
			rela_dyn = i;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			err = builder__read_symtab(b, scn, &sh);
			if (err)
				return err;
		} else if (name && !strcmp(name, ".gnu_debuglink") && !b->es->has_debuglink) {
			builder__read_debuglink(b, scn, &sh);
		} else if (name && !strcmp(name, ".gnu_debugdata") && !b->nested && !debugdata) {
			debugdata = scn;
			ddsh = sh;
		}
	}
	/* MiniDebugInfo only adds what a stripped file lacks. */
	if (debugdata && !b->es->has_symtab)
		builder__read_debugdata(b, debugdata, &ddsh);
	err = builder__read_go(b);
	if (err)
		return err;
	err = builder__read_plt(b, rela_plt, plt, plt_sec);
	if (err)
		return err;
	return builder__read_plt_got(b, plt_got, rela_dyn);
}

/* --- Go ------------------------------------------------------------------------- */

/* size bytes of the file at off (libelf's pread, owned by libelf), or NULL. */
static const uint8_t *file_bytes(struct builder *b, uint64_t off, uint64_t size)
{
	Elf_Data *d;

	if (!size || off > b->file_size || size > b->file_size - off || off > INT64_MAX)
		return NULL;
	d = elf_getdata_rawchunk(b->elf, (int64_t)off, size, ELF_T_BYTE);
	return d && d->d_size == size ? d->d_buf : NULL;
}

/* The file bytes of section i, at most max (from its start). */
static const uint8_t *section_raw(struct builder *b, size_t i, uint64_t max, uint64_t *len)
{
	const struct sec_info *si = &b->secs[i];

	*len = si->size < max ? si->size : max;
	return si->type == SHT_PROGBITS ? file_bytes(b, si->offset, *len) : NULL;
}

/* Where vaddr lies: a section (if there are any) else a PT_LOAD segment. */
static const uint8_t *bytes_from(struct builder *b, uint64_t vaddr, uint64_t max, uint64_t *len)
{
	for (size_t i = 1; i < b->shnum; i++) {
		const struct sec_info *si = &b->secs[i];

		if (si->type == SHT_PROGBITS && (si->flags & SHF_ALLOC) && vaddr >= si->addr &&
		    vaddr < si->end) {
			*len = MIN(si->end - vaddr, max);
			return file_bytes(b, si->offset + (vaddr - si->addr), *len);
		}
	}
	for (size_t i = 0; i < b->es->nr_segs; i++) {
		const struct elfsym_seg *sg = &b->es->segs[i];

		if (vaddr >= sg->vaddr && vaddr - sg->vaddr < sg->filesz) {
			*len = MIN(sg->filesz - (vaddr - sg->vaddr), max);
			return file_bytes(b, sg->off + (vaddr - sg->vaddr), *len);
		}
	}
	return NULL;
}

/*
 * A table without its section header (sstrip, or a renamed section): the
 * read-only segments are searched for its header (gopclntab__scan: linear,
 * capped over all of them). Only files without section headers pay for this.
 */
static struct gopclntab *scan_for_pclntab(struct builder *b)
{
	GElf_Phdr ph;
	size_t phnum;

	errno = ENOENT;
	if (b->shnum || elf_getphdrnum(b->elf, &phnum))
		return NULL;
	/* Nothing is read once the search can find nothing more. */
	for (size_t i = 0; i < phnum && b->go_scan.bytes_left && b->go_scan.headers_left &&
			   b->go_scan.tables_left;
	     i++) {
		struct gopclntab *g;
		const uint8_t *d;
		uint64_t len;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_W | PF_X)) || !(ph.p_flags & PF_R))
			continue;
		len = MIN(MIN(ph.p_filesz, (uint64_t)ELFSYM_GO_MAX_TABLE), b->go_scan.bytes_left);
		d = file_bytes(b, ph.p_offset, len);
		if (!d)
			continue;
		g = gopclntab__scan(d, len, ph.p_vaddr, &b->go_scan);
		if (g || errno != ENOENT)
			return g;
	}
	errno = ENOENT;
	return NULL;
}

/*
 * moduledata.gofunc of a file without section headers: moduledata is in
 * the writable data, searched segment by segment while the file's search
 * bytes (go_data_left) and time last.
 */
static uint64_t scan_for_gofunc(struct builder *b, const struct gopclntab *g)
{
	uint64_t gofunc = 0;
	GElf_Phdr ph;
	size_t phnum;

	if (elf_getphdrnum(b->elf, &phnum))
		return 0;
	for (size_t i = 0; !gofunc && i < phnum && b->go_data_left; i++) {
		const uint8_t *d;
		uint64_t len;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W))
			continue;
		if (budget__over_now(b->budget))
			return 0;
		len = MIN(ph.p_filesz, b->go_data_left);
		b->go_data_left -= len;
		d = file_bytes(b, ph.p_offset, len);
		if (d)
			gofunc = gopclntab__find_gofunc(g, d, len, ph.p_vaddr);
	}
	return gofunc;
}

/* The inline trees' data: gofunc onward (1.18+), or all of .rodata (1.16, 1.17). */
static void go_funcdata(struct builder *b, struct gopclntab *g)
{
	const uint8_t *d = NULL;
	uint64_t len = 0, vaddr = 0, gofunc = 0;

	if (gopclntab__version(g) >= GOPCLNTAB_V118) {
		size_t where[] = { b->go_module, b->go_noptrdata };

		for (size_t i = 0; i < ARRAY_SIZE(where) && !gofunc; i++) {
			d = where[i] ? section_raw(b, where[i], ELFSYM_GO_MAX_SCAN, &len) : NULL;
			if (d)
				gofunc = gopclntab__find_gofunc(g, d, len, b->secs[where[i]].addr);
		}
		/* No section headers: the writable segments, as far as the file's search goes. */
		if (!gofunc && !b->shnum)
			gofunc = scan_for_gofunc(b, g);
		if (!gofunc)
			return;
		vaddr = gofunc;
		d = bytes_from(b, gofunc, ELFSYM_GO_MAX_DATA, &len);
	} else if (gopclntab__version(g) == GOPCLNTAB_V116 && b->go_rodata) {
		vaddr = b->secs[b->go_rodata].addr;
		d = section_raw(b, b->go_rodata, ELFSYM_GO_MAX_DATA, &len);
	}
	if (d)
		gopclntab__set_funcdata(g, d, len, vaddr, gofunc);
}

/*
 * Go's pc-line table, if the file has one: kept for source lines and inlined
 * frames, and its functions are the symbols of a file without .symtab.
 */
static int builder__read_go(struct builder *b)
{
	struct elfsym *es = b->es;
	struct gopclntab *g = NULL;
	uint64_t len, text = b->go_text ? b->secs[b->go_text].addr : 0;
	const uint8_t *d;
	int err;

	if (b->nested)
		return 0;
	if (b->go_pclntab) {
		d = section_raw(b, b->go_pclntab, ELFSYM_GO_MAX_TABLE, &len);
		if (d)
			g = gopclntab__new(d, len, b->secs[b->go_pclntab].addr, text);
		if (!g && errno == ENOMEM)
			return -ENOMEM;
	} else {
		g = scan_for_pclntab(b);
		if (!g && errno != ENOENT)
			return -errno; /* ENOMEM, or the file's time is up */
	}
	if (!g)
		return 0;
	go_funcdata(b, g);
	es->go = g;
	es->bytes += gopclntab__bytes(g);
	if (es->bytes > ELFSYM_MAX_BYTES)
		return -E2BIG;
	if (es->has_symtab)
		return 0;
	for (size_t i = 0; i < gopclntab__nr_funcs(g); i++) {
		struct cand c = { .rank = 1 };
		uint64_t end;

		if (budget__over(b->budget))
			return budget__err(b->budget);
		if (gopclntab__func(g, i, &c.start, &end, &c.name) || !c.name || !c.name[0] ||
		    end <= c.start || !c.start)
			continue;
		c.size = end - c.start;
		err = builder__add(b, &c);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Merges aliases, gives size-0 symbols an end, and copies the surviving names
 * into the pool. Must run while the data the names point into is live.
 */
static int builder__finish(struct builder *b)
{
	struct elfsym *es = b->es;
	size_t n = 0, pool_len = 0;
	char *pool;

	if (!b->nr_cands)
		return 0;
	qsort(b->cands, b->nr_cands, sizeof(*b->cands), cand__cmp);
	/* Keep the first (preferred) of each address; borrow a size if it has none. */
	for (size_t i = 0; i < b->nr_cands; i++) {
		struct cand *c = &b->cands[i];

		if (n && b->cands[n - 1].start == c->start) {
			if (!b->cands[n - 1].size)
				b->cands[n - 1].size = c->size;
			continue;
		}
		b->cands[n++] = *c;
	}
	/* The file's kept bytes have their cap: checked before each allocation. */
	if (es->bytes + n * sizeof(*es->syms) > ELFSYM_MAX_BYTES)
		return -E2BIG;
	es->syms = calloc(n, sizeof(*es->syms));
	if (!es->syms)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct cand *c = &b->cands[i];
		uint64_t end;

		if (c->size) {
			end = c->start + c->size;
		} else {
			/* As perf does: up to the next symbol, but not past the section. */
			end = i + 1 < n ? b->cands[i + 1].start : UINT64_MAX;
			if (c->sec_end && c->sec_end < end)
				end = c->sec_end;
			if (end <= c->start)
				continue; /* at or past its section's end: covers nothing */
		}
		es->syms[es->nr].start = c->start;
		es->syms[es->nr].end = end;
		b->cands[es->nr] = *c; /* its name, copied below (es->nr <= i) */
		es->nr++;
		pool_len += c->len + (c->plt ? sizeof("@plt") : 1);
		if (es->bytes + n * sizeof(*es->syms) + pool_len > ELFSYM_MAX_BYTES)
			return -E2BIG;
	}
	pool = malloc(pool_len ? pool_len : 1);
	if (!pool)
		return -ENOMEM;
	es->pool = pool;
	es->bytes += pool_len + n * sizeof(*es->syms);
	for (size_t i = 0; i < es->nr; i++) {
		const struct cand *c = &b->cands[i];
		size_t len = c->len;

		memcpy(pool, c->name, len);
		if (c->plt) {
			memcpy(pool + len, "@plt", sizeof("@plt"));
			len += sizeof("@plt");
		} else {
			pool[len++] = '\0';
		}
		es->syms[i].name = pool;
		pool += len;
	}
	return 0;
}

/* --- functions without symbols: .eh_frame ------------------------------------- */

static int fde__cmp(const void *a, const void *b)
{
	const struct elfsym_fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static bool fde_named(const struct elfsym *es, uint64_t start)
{
	return elfsym__lookup(es, start, NULL) != NULL;
}

struct fde_cie {
	uint64_t off;
	uint8_t enc;
	bool ok, aug_z;
};

/*
 * The functions .eh_frame describes that no symbol covers (a stripped
 * binary's static functions): an unnamed address is then named after the
 * start of its function, not its own address. The section is the file's
 * (hostile): libdw walks its entries within its bounds, this decodes only
 * each FDE's initial location and range (proc/cfienc.h); entries read,
 * FDEs kept and the file's time are capped. What fails is left out: those
 * addresses keep their own names.
 */
static int builder__read_fdes(struct builder *b)
{
	struct elfsym *es = b->es;
	const struct sec_info *si;
	struct fde_cie *cies = NULL;
	size_t nr_cies = 0, cap_cies = 0, cap = 0, n = 0;
	const unsigned char *ident = (const unsigned char *)elf_getident(b->elf, NULL);
	Elf_Data data = { 0 };
	int err = 0;

	if (!b->eh_frame || !ident)
		return 0;
	si = &b->secs[b->eh_frame];
	data.d_size = MIN(si->size, (uint64_t)ELFSYM_MAX_EH_FRAME);
	data.d_buf = (void *)file_bytes(b, si->offset, data.d_size);
	if (!data.d_buf)
		return 0;
	for (int pass = 0; pass < 2 && !err; pass++) {
		Dwarf_Off off = 0;

		for (size_t k = 0; off != (Dwarf_Off)-1 && k < ELFSYM_MAX_CFI_ENTRIES; k++) {
			Dwarf_Off next = (Dwarf_Off)-1;
			Dwarf_CFI_Entry ent;
			int r;

			if (!(k & 4095) && budget__over_now(b->budget))
				goto out;
			r = dwarf_next_cfi(ident, &data, true, off, &next, &ent);
			if (r > 0 || next == (Dwarf_Off)-1 || next <= off)
				break;
			if (r < 0) {
				off = next;
				continue;
			}
			if (dwarf_cfi_cie_p(&ent)) {
				if (pass == 0) {
					if (array_grow((void **)&cies, &cap_cies, nr_cies + 1,
						       sizeof(*cies))) {
						err = -ENOMEM;
						break;
					}
					cies[nr_cies].off = off;
					cies[nr_cies].ok = cfienc__cie_fde_encoding(
						&ent.cie, &cies[nr_cies].enc);
					cies[nr_cies].aug_z = ent.cie.augmentation &&
							      ent.cie.augmentation[0] == 'z';
					nr_cies++;
				}
			} else if (pass == 1) {
				const struct fde_cie *ci = NULL;
				const uint8_t *p = ent.fde.start;
				uint64_t begin, range;
				size_t lo = 0, hi = nr_cies;

				while (lo < hi) { /* CIE offsets increase */
					size_t mid = lo + (hi - lo) / 2;

					if (cies[mid].off == ent.fde.CIE_pointer) {
						ci = &cies[mid];
						break;
					}
					if (cies[mid].off < ent.fde.CIE_pointer)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (ci && ci->ok &&
				    !cfienc__read(
					    ci->enc, &p, ent.fde.end, true,
					    si->addr + (uint64_t)(p - (const uint8_t *)data.d_buf),
					    &begin) &&
				    !cfienc__read(ci->enc & 0x0f, &p, ent.fde.end, false, 0,
						  &range) &&
				    range && range <= ELFSYM_MAX_FDE_RANGE &&
				    begin + range > begin && !fde_named(es, begin)) {
					if (n >= ELFSYM_MAX_FDES)
						goto out;
					if (array_grow((void **)&es->fdes, &cap, n + 1,
						       sizeof(*es->fdes))) {
						err = -ENOMEM;
						break;
					}
					es->fdes[n++] = (struct elfsym_fde){ begin, begin + range };
				}
			}
			off = next;
		}
	}
out:
	free(cies);
	if (err) {
		free(es->fdes);
		es->fdes = NULL;
		return err;
	}
	if (n)
		qsort(es->fdes, n, sizeof(*es->fdes), fde__cmp);
	/* Overlapping FDEs (a crafted file): the first of them stays. */
	for (size_t i = 0; i < n; i++)
		if (!es->nr_fdes || es->fdes[i].start >= es->fdes[es->nr_fdes - 1].end)
			es->fdes[es->nr_fdes++] = es->fdes[i];
	es->bytes += cap * sizeof(*es->fdes);
	return 0;
}

int elfsym__fde_start(const struct elfsym *es, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = es ? es->nr_fdes : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->fdes[mid].end <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!es || lo >= es->nr_fdes || es->fdes[lo].start > vaddr)
		return -ENOENT;
	*start = es->fdes[lo].start;
	return 0;
}

/*
 * Whether a header table of `num` entries at `off` fits in the file. An
 * offset with num 0 still holds entry 0 (extended numbering keeps the real
 * count there).
 */
static bool table_fits(uint64_t file_size, uint64_t off, uint64_t num, uint64_t entsize)
{
	if (!off)
		return true;
	if (!num)
		num = 1;
	return entsize && off <= file_size && (file_size - off) / entsize >= num;
}

/*
 * Reads everything from an open libelf handle (not ended here), within the
 * file's budget: its own, or the outer file's for a nested MiniDebugInfo
 * image (whose own .gnu_debugdata is ignored).
 */
static struct elfsym *open_elf(Elf *elf, uint64_t size, struct budget *outer)
{
	struct builder b = { 0 };
	struct elfsym *es;
	GElf_Ehdr eh;
	const char *ident;
	int err;

	es = calloc(1, sizeof(*es));
	if (!es)
		return NULL;
	es->bytes = sizeof(*es);
	b.es = es;
	b.elf = elf;
	b.nested = outer != NULL;
	b.file_size = size;
	b.table_budget = ELFSYM_TABLE_BUDGET;
	b.inflate_budget = ELFSYM_INFLATE_BUDGET;
	b.budget = outer;
	if (!outer) {
		budget__start(&b.own_budget, ELFSYM_CPU_BUDGET_NS);
		b.budget = &b.own_budget;
	}
	gopclntab__scan_init(&b.go_scan, b.budget);
	b.go_data_left = ELFSYM_GO_MAX_SCAN;
	if (elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	ident = elf_getident(elf, NULL);
	if (!gelf_getehdr(elf, &eh) || !ident) {
		err = -EINVAL;
		goto out;
	}
	b.cls = ident[EI_CLASS];
	b.data = ident[EI_DATA];
	if ((b.cls != ELFCLASS32 && b.cls != ELFCLASS64) ||
	    (b.data != ELFDATA2LSB && b.data != ELFDATA2MSB)) {
		err = -ENOEXEC;
		goto out;
	}
	/*
	 * Only what a process maps as code: executables and shared objects.
	 * Relocatable objects have section-relative symbol values and cores
	 * have no symbols. Any class, byte order and machine libelf reads is
	 * fine: a 32-bit process on a 64-bit kernel is still worth profiling.
	 */
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		err = -ENOEXEC;
		goto out;
	}
	es->type = eh.e_type;
	es->machine = eh.e_machine;
	es->build_id_len = elffile__build_id(elf, es->build_id);
	/*
	 * libelf quietly reports no sections when the section header table
	 * lies past EOF, which is exactly what a truncated file looks like
	 * (the table is at the end): say so instead of returning no symbols.
	 */
	if (!table_fits(b.file_size, eh.e_shoff, eh.e_shnum, eh.e_shentsize) ||
	    !table_fits(b.file_size, eh.e_phoff, eh.e_phnum, eh.e_phentsize)) {
		err = -EINVAL;
		goto out;
	}
	err = builder__read_phdrs(&b);
	if (!err)
		err = builder__read_sections(&b);
	/* The sort below cannot stop halfway: not begun when time is up. */
	if (!err && budget__over_now(b.budget))
		err = budget__err(b.budget);
	if (!err)
		err = builder__finish(&b);
	if (!err && b.mini) {
		err = elfsym__merge(es, b.mini);
		b.mini = NULL;
	}
	if (!err && !b.nested && b.secs)
		err = builder__read_fdes(&b);
out:
	elfsym__free(b.mini);
	free(b.cands);
	free(b.secs);
	for (size_t i = 0; i < b.nr_owned; i++)
		free(b.owned[i]);
	free(b.owned);
	if (err) {
		elfsym__free(es);
		errno = -err;
		return NULL;
	}
	return es;
}

struct elfsym *elfsym__open_elf(Elf *elf, uint64_t file_size)
{
	return open_elf(elf, file_size, NULL);
}

struct elfsym *elfsym__open_fd(int fd)
{
	struct elfsym *es;
	struct stat st;
	Elf *elf;
	int err;

	if (fstat(fd, &st))
		return NULL;
	elf = elffile__begin(fd);
	if (!elf)
		return NULL;
	es = open_elf(elf, (uint64_t)st.st_size, NULL);
	err = errno;
	elffile__end(elf, NULL);
	errno = err;
	return es;
}

struct elfsym *elfsym__open_mem(const void *data, size_t len)
{
	struct elfsym *es;
	void *copy;
	Elf *elf = elffile__begin_mem(data, len, &copy);
	int err;

	if (!elf)
		return NULL;
	es = open_elf(elf, len, NULL);
	err = errno;
	elffile__end(elf, copy);
	errno = err;
	return es;
}

struct elfsym *elfsym__open(const char *path)
{
	struct elfsym *es;
	int fd, err;

	/* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	es = elfsym__open_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return es;
}

const char *elfsym__strerror(int errnum)
{
	_Static_assert(ELFSYM_CPU_BUDGET_NS == 2000000000ull, "the sentence below says 2 s");
	if (errnum == ETIMEDOUT)
		return "more than 2 s of work to read its symbols (too large, or made to stall bpfprof)";
	if (errnum == ECANCELED)
		return "not read: bpfprof is stopping";
	_Static_assert(ELFSYM_MAX_BYTES == 128u << 20, "the sentence below says 128 MiB");
	if (errnum == E2BIG)
		return "its symbols would take more than 128 MiB of memory";
	return strerror(errnum);
}

static void free_pretty(struct elfsym *es)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!es->pretty)
		return;
	while ((e = htab__next(es->pretty, &pos))) {
		size_t i;

		memcpy(&i, e->key, sizeof(i));
		if (e->value && i < es->nr && e->value != es->syms[i].name)
			free(e->value);
	}
	htab__free(es->pretty);
	es->pretty = NULL;
}

void elfsym__free(struct elfsym *es)
{
	if (!es)
		return;
	free_pretty(es);
	elfsym__free(es->merged);
	gopclntab__free(es->go);
	free(es->syms);
	free(es->segs);
	free(es->pool);
	free(es->fdes);
	free(es);
}

int elfsym__merge(struct elfsym *dst, struct elfsym *src)
{
	struct elfsym_ent *all;
	size_t i = 0, j = 0, n = 0;

	if (!src)
		return 0;
	if (!src->nr) {
		elfsym__free(src);
		return 0;
	}
	/* Together they are one file's symbols, under one file's cap. */
	if (dst->bytes + src->bytes + (dst->nr + src->nr) * sizeof(*all) > ELFSYM_MAX_BYTES) {
		elfsym__free(src);
		return -E2BIG;
	}
	all = calloc(dst->nr + src->nr, sizeof(*all));
	if (!all) {
		elfsym__free(src);
		return -ENOMEM;
	}
	/* Both sorted by start: a merge; at one address the first file's name stays. */
	while (i < dst->nr || j < src->nr) {
		if (j == src->nr || (i < dst->nr && dst->syms[i].start <= src->syms[j].start)) {
			if (j < src->nr && src->syms[j].start == dst->syms[i].start)
				j++;
			all[n++] = dst->syms[i++];
		} else {
			all[n++] = src->syms[j++];
		}
	}
	free_pretty(dst);
	free(dst->syms);
	dst->syms = all;
	dst->bytes += src->bytes + src->nr * sizeof(*all);
	dst->nr = n;
	dst->bad += src->bad;
	dst->has_symtab |= src->has_symtab;
	/* src's names stay where they are: dst keeps src (and its chain) alive. */
	free(src->syms);
	src->syms = NULL;
	src->nr = 0;
	free(src->segs);
	src->segs = NULL;
	src->nr_segs = 0;
	src->merged = dst->merged;
	dst->merged = src;
	return 0;
}

/* Index of the symbol containing vaddr, or -1. */
static ssize_t lookup_index(const struct elfsym *es, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!es || !es->nr)
		return -1;
	hi = es->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The nearest start first, then a few enclosing candidates. */
	for (size_t i = lo, k = 0; i > 0 && k < ELFSYM_WALK_BACK; i--, k++) {
		const struct elfsym_ent *e = &es->syms[i - 1];

		if (vaddr < e->end)
			return (ssize_t)(i - 1);
	}
	return -1;
}

const char *elfsym__lookup(const struct elfsym *es, uint64_t vaddr, uint64_t *offset)
{
	ssize_t i = lookup_index(es, vaddr);

	if (i < 0)
		return NULL;
	if (offset)
		*offset = vaddr - es->syms[i].start;
	return es->syms[i].name;
}

int elfsym__range(const struct elfsym *es, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	ssize_t i = lookup_index(es, vaddr);

	if (i < 0)
		return -ENOENT;
	*start = es->syms[i].start;
	*end = es->syms[i].end;
	return 0;
}

const char *elfsym__lookup_demangled(struct elfsym *es, uint64_t vaddr, uint64_t *offset)
{
	ssize_t i = lookup_index(es, vaddr);
	const char *raw;
	struct htab_entry *e;
	size_t idx;
	bool created;
	char *pretty;

	if (i < 0)
		return NULL;
	if (offset)
		*offset = vaddr - es->syms[i].start;
	raw = es->syms[i].name;
	if (!demangle__is_mangled(raw))
		return raw;
	/* Once per symbol, the first time it names a frame; past the file's cap
	 * a name is left as it is stored. */
	if (es->bytes + DEMANGLE_MAX_OUT + 1 + 48 > ELFSYM_MAX_BYTES)
		return raw;
	idx = (size_t)i;
	if (!es->pretty && !(es->pretty = htab__new()))
		return raw;
	e = htab__upsert(es->pretty, &idx, sizeof(idx), &created);
	if (!e)
		return raw;
	if (!created)
		return e->value;
	pretty = demangle__name(raw);
	e->value = pretty ? pretty : (char *)raw;
	if (pretty)
		es->bytes += strlen(pretty) + 1 + 48;
	return e->value;
}

int elfsym__off_to_vaddr(const struct elfsym *es, uint64_t file_off, uint64_t *vaddr)
{
	if (!es)
		return -ENOENT;
	for (size_t i = 0; i < es->nr_segs; i++) {
		const struct elfsym_seg *s = &es->segs[i];

		if (file_off >= s->off && file_off - s->off < s->filesz) {
			*vaddr = file_off - s->off + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym__vaddr_to_off(const struct elfsym *es, uint64_t vaddr, uint64_t *file_off,
			 uint64_t *avail)
{
	if (!es)
		return -ENOENT;
	for (size_t i = 0; i < es->nr_segs; i++) {
		const struct elfsym_seg *s = &es->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*file_off = vaddr - s->vaddr + s->off;
			if (avail)
				*avail = s->filesz - (vaddr - s->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

size_t elfsym__source(const struct elfsym *es, uint64_t vaddr, struct gosrc *out, size_t max)
{
	return es && es->go ? gopclntab__frames(es->go, vaddr, out, max) : 0;
}

const struct gopclntab *elfsym__gopclntab(const struct elfsym *es)
{
	return es ? es->go : NULL;
}

size_t elfsym__count(const struct elfsym *es)
{
	return es ? es->nr : 0;
}

int elfsym__symbol(const struct elfsym *es, size_t i, const char **name, uint64_t *start,
		   uint64_t *end)
{
	if (!es || i >= es->nr)
		return -ENOENT;
	*name = es->syms[i].name;
	*start = es->syms[i].start;
	*end = es->syms[i].end;
	return 0;
}

size_t elfsym__bad(const struct elfsym *es)
{
	return es ? es->bad : 0;
}

const uint8_t *elfsym__build_id(const struct elfsym *es, size_t *len)
{
	if (!es || !es->build_id_len) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = es->build_id_len;
	return es->build_id;
}

int elfsym__type(const struct elfsym *es)
{
	return es ? es->type : ET_NONE;
}

bool elfsym__has_symtab(const struct elfsym *es)
{
	return es && es->has_symtab;
}

bool elfsym__has_debugdata(const struct elfsym *es)
{
	return es && es->has_debugdata;
}

const char *elfsym__debuglink(const struct elfsym *es, uint32_t *crc)
{
	if (!es || !es->has_debuglink)
		return NULL;
	if (crc)
		*crc = es->debuglink_crc;
	return es->debuglink;
}

size_t elfsym__bytes(const struct elfsym *es)
{
	return es ? es->bytes : 0;
}

size_t elfsym__names_cut(const struct elfsym *es)
{
	return es ? es->names_cut : 0;
}
