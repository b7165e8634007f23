// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * elfsym.c - function symbols, PT_LOAD segments and build id of one ELF file;
 * see elfsym.h.
 *
 * libelf is opened with ELF_C_READ, never ELF_C_READ_MMAP: a mapped binary can
 * be truncated or rewritten under us (package upgrades), and touching a page
 * past the new end of an mmap is a SIGBUS, while a pread() just comes up
 * short. libelf checks that section and segment data lie inside the file; on
 * top of that every table is validated here before use (entry size, string
 * table link and termination, sizes that overflow), and a bad table or symbol
 * is skipped and counted rather than trusted.
 *
 * Everything needed later (symbols, names, segments, build id) is copied out
 * and the libelf handle closed before returning: an elfsym holds no fd and
 * no libelf memory.
 */
#include "sym/elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Largest symbol or string table we read: ~10M symbols. Past that, skip it. */
#define ELFSYM_MAX_TABLE (256u << 20)
/*
 * Total bytes of symbol and string tables read from one file. Sections may
 * overlap, so a hostile file of N bytes could otherwise make us read N bytes
 * once per section header: N^2/64 in all.
 */
#define ELFSYM_TABLE_BUDGET (1024u << 20)
/* Build-id notes are tens of bytes; a bigger note area is not worth reading. */
#define ELFSYM_MAX_NOTES    (1u << 20)
#define ELFSYM_NOTES_BUDGET (4u << 20)
#define BUILD_ID_MAX	    64
/*
 * How many preceding symbols a lookup checks when the nearest one ends
 * before the address: covers a function containing smaller FUNC symbols
 * (glibc's string functions have inner entry points), in bounded time.
 */
#define ELFSYM_WALK_BACK 16

struct elfsym_ent {
	uint64_t start, end; /* [start, end) */
	const char *name;    /* in pool */
};

struct elfsym_seg {
	uint64_t off, vaddr, filesz;
};

struct elfsym {
	struct elfsym_ent *syms; /* sorted by start, starts unique */
	size_t nr;
	struct elfsym_seg *segs; /* PT_LOAD, file order */
	size_t nr_segs;
	char *pool;
	size_t bad;
	int type;
	size_t build_id_len;
	uint8_t build_id[BUILD_ID_MAX];
};

/* A symbol as read, before aliases are merged; name points into libelf data. */
struct cand {
	uint64_t start, size;
	uint64_t sec_end; /* end of its section; 0 if unknown */
	const char *name;
	uint32_t rank;
};

struct sec_info {
	uint64_t end;	 /* sh_addr + sh_size, 0 if that overflows */
	size_t xndx_scn; /* for a symbol table: its SHT_SYMTAB_SHNDX section, or 0 */
	uint32_t type;
};

struct builder {
	Elf *elf;
	struct elfsym *es;
	uint64_t file_size;
	struct sec_info *secs;
	size_t shnum;
	struct cand *cands;
	size_t nr_cands, cap_cands;
	uint64_t table_budget, notes_budget;
};

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

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

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
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
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return 0;
}

static int builder__add(struct builder *b, const struct cand *c)
{
	if (b->nr_cands == b->cap_cands) {
		size_t ncap = b->cap_cands ? b->cap_cands * 2 : 256;
		struct cand *n = reallocarray(b->cands, ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->cands = n;
		b->cap_cands = ncap;
	}
	b->cands[b->nr_cands++] = *c;
	return 0;
}

/* The data of a whole section, or NULL if libelf cannot produce it intact. */
static Elf_Data *section_data(Elf_Scn *scn, const GElf_Shdr *sh, Elf_Type want)
{
	Elf_Data *d;

	if (sh->sh_flags & SHF_COMPRESSED)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_type != want || d->d_size != sh->sh_size)
		return NULL;
	return d;
}

/* Picks the NT_GNU_BUILD_ID out of a block of notes already in host byte order. */
static bool parse_build_id(struct elfsym *es, const uint8_t *d, size_t len, size_t align)
{
	size_t off = 0;

	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t name_off, desc_off, next;

		memcpy(&namesz, d + off, 4);
		memcpy(&descsz, d + off + 4, 4);
		memcpy(&type, d + off + 8, 4);
		/* In 64-bit arithmetic: 32-bit sizes cannot overflow it. */
		name_off = off + 12;
		desc_off = (name_off + namesz + align - 1) & ~(uint64_t)(align - 1);
		next = (desc_off + descsz + align - 1) & ~(uint64_t)(align - 1);
		if (name_off + namesz > len || desc_off + descsz > len)
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(d + name_off, "GNU", 4) &&
		    descsz >= 1 && descsz <= BUILD_ID_MAX) {
			memcpy(es->build_id, d + desc_off, descsz);
			es->build_id_len = descsz;
			return true;
		}
		if (next >= len)
			return false;
		off = (size_t)next;
	}
	return false;
}

/* SHT_SYMTAB_SHNDX data for symbol table `symidx`, if any (>65279 sections). */
static Elf_Data *find_shndx(struct builder *b, size_t symidx)
{
	size_t idx = b->secs[symidx].xndx_scn;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!idx || !(scn = elf_getscn(b->elf, idx)) || !gelf_getshdr(scn, &sh) ||
	    sh.sh_size > b->table_budget)
		return NULL;
	b->table_budget -= sh.sh_size;
	return section_data(scn, &sh, ELF_T_WORD);
}

/*
 * The notes of a section or segment, in host byte order (libelf converts the
 * headers), with the alignment libelf chose for them.
 */
static void read_build_id_notes(struct builder *b, Elf_Data *d)
{
	if (!d || !d->d_buf || (d->d_type != ELF_T_NHDR && d->d_type != ELF_T_NHDR8))
		return;
	parse_build_id(b->es, d->d_buf, d->d_size, d->d_type == ELF_T_NHDR8 ? 8 : 4);
}

/* Whether to read `size` bytes of notes: bounded per block and in total. */
static bool notes_affordable(struct builder *b, uint64_t size)
{
	if (b->es->build_id_len || !size || size > ELFSYM_MAX_NOTES || size > b->notes_budget)
		return false;
	b->notes_budget -= size;
	return true;
}

/* Adds the function symbols of one SHT_SYMTAB/SHT_DYNSYM; a bad table is skipped. */
static int builder__read_symtab(struct builder *b, Elf_Scn *scn, const GElf_Shdr *sh)
{
	size_t entsize = gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *syms, *strs, *shndx;
	const char *str;
	size_t str_len, nsyms;
	GElf_Shdr ssh;
	Elf_Scn *sscn;

	/* entsize 0 is elfutils CVE-2018-18521 (a division by zero). */
	if (!entsize || sh->sh_entsize != entsize || sh->sh_size % entsize ||
	    sh->sh_size > ELFSYM_MAX_TABLE)
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
	syms = section_data(scn, sh, ELF_T_SYM);
	strs = section_data(sscn, &ssh, ELF_T_BYTE);
	if (!syms || !strs || !strs->d_size)
		goto bad_table;
	/*
	 * Names are only valid up to the last NUL: one check here instead of a
	 * bounded scan per symbol (which an unterminated table of millions of
	 * symbols would make quadratic).
	 */
	str = strs->d_buf;
	str_len = strs->d_size;
	while (str_len && str[str_len - 1] != '\0')
		str_len--;
	if (!str_len)
		goto bad_table;
	shndx = find_shndx(b, elf_ndxscn(scn));
	nsyms = syms->d_size / entsize;

	/* Entry 0 is the reserved null symbol. */
	for (size_t i = 1; i < nsyms; i++) {
		GElf_Word xndx = 0;
		unsigned char type;
		struct cand c;
		size_t sec;
		GElf_Sym s;

		if (!gelf_getsymshndx(syms, shndx, (int)i, &s, &xndx)) {
			b->es->bad++;
			continue;
		}
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		/*
		 * Undefined symbols are imports; SHN_ABS ones have no section to
		 * bound them and are not relocated with the object (a PIE would
		 * get them wrong), and other reserved indices (COMMON) are not code.
		 */
		if (s.st_shndx == SHN_XINDEX)
			sec = xndx;
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
		if (builder__add(b, &c))
			return -ENOMEM;
	}
	return 0;

bad_table:
	b->es->bad++;
	return 0;
}

static Elf_Type note_type(uint64_t align)
{
	return align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
}

/* PT_LOAD segments, and the build id from PT_NOTE (present even without sections). */
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
		} else if (ph.p_type == PT_NOTE && ph.p_offset <= INT64_MAX &&
			   notes_affordable(b, ph.p_filesz)) {
			read_build_id_notes(b, elf_getdata_rawchunk(b->elf, (int64_t)ph.p_offset,
								    ph.p_filesz,
								    note_type(ph.p_align)));
		}
	}
	return 0;
}

static int builder__read_sections(struct builder *b)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int err;

	/* An entry is at least 40 bytes: more than fit in the file is corrupt. */
	if (elf_getshdrnum(b->elf, &b->shnum) || b->shnum > b->file_size / 40)
		return -EINVAL;
	if (!b->shnum)
		return 0;
	b->secs = calloc(b->shnum, sizeof(*b->secs));
	if (!b->secs)
		return -ENOMEM;
	/* Headers first: symbol tables refer to other sections by index. */
	for (size_t i = 1; i < b->shnum; i++) {
		scn = elf_getscn(b->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		b->secs[i].type = sh.sh_type;
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
		scn = elf_getscn(b->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			err = builder__read_symtab(b, scn, &sh);
			if (err)
				return err;
		} else if (sh.sh_type == SHT_NOTE && !(sh.sh_flags & SHF_COMPRESSED) &&
			   notes_affordable(b, sh.sh_size)) {
			read_build_id_notes(b, elf_getdata(scn, NULL));
		}
	}
	return 0;
}

/*
 * Merges aliases, gives size-0 symbols an end, and copies the surviving names
 * into the pool. Must run while the libelf data the names point into is live.
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
		/* The name pointer is replaced by its pool copy below. */
		es->syms[es->nr].name = c->name;
		es->nr++;
		pool_len += strlen(c->name) + 1;
	}
	pool = malloc(pool_len ? pool_len : 1);
	if (!pool)
		return -ENOMEM;
	es->pool = pool;
	for (size_t i = 0; i < es->nr; i++) {
		size_t len = strlen(es->syms[i].name) + 1;

		memcpy(pool, es->syms[i].name, len);
		es->syms[i].name = pool;
		pool += len;
	}
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

struct elfsym *elfsym__open_fd(int fd)
{
	struct builder b = {0};
	struct elfsym *es;
	GElf_Ehdr eh;
	struct stat st;
	int err;

	pthread_once(&elf_once, elf_init);
	if (!elf_ok) {
		errno = ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st))
		return NULL;
	/* A FIFO or device at a mapped path would block or never end. */
	if (!S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	es = calloc(1, sizeof(*es));
	if (!es)
		return NULL;
	b.es = es;
	b.file_size = (uint64_t)st.st_size;
	b.table_budget = ELFSYM_TABLE_BUDGET;
	b.notes_budget = ELFSYM_NOTES_BUDGET;
	b.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!b.elf) {
		err = -EINVAL;
		goto out;
	}
	if (elf_kind(b.elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	if (!gelf_getehdr(b.elf, &eh)) {
		err = -EINVAL;
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
	if (!err)
		err = builder__finish(&b);
out:
	free(b.cands);
	free(b.secs);
	if (b.elf)
		elf_end(b.elf);
	if (err) {
		elfsym__free(es);
		errno = -err;
		return NULL;
	}
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

void elfsym__free(struct elfsym *es)
{
	if (!es)
		return;
	free(es->syms);
	free(es->segs);
	free(es->pool);
	free(es);
}

const char *elfsym__lookup(const struct elfsym *es, uint64_t vaddr, uint64_t *offset)
{
	size_t lo = 0, hi;

	if (!es || !es->nr)
		return NULL;
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

		if (vaddr < e->end) {
			if (offset)
				*offset = vaddr - e->start;
			return e->name;
		}
	}
	return NULL;
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

size_t elfsym__count(const struct elfsym *es)
{
	return es ? es->nr : 0;
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
