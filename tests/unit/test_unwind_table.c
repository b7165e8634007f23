// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_unwind_table.c - unwind tables built from fixture binaries: every
 * row kind from hand-written CFI (cfi.S), with and without .eh_frame_hdr,
 * .debug_frame only, a PLT, a signal trampoline; the page index against a
 * linear search; load biases; corrupt and truncated inputs; a crafted
 * .eh_frame whose rows cost the square of its FDEs' length, built within
 * the build's time budget.
 */
#include "testutil.h"

#include <sys/resource.h>

#include <fcntl.h>
#include <time.h>
#include <gelf.h>
#include <sys/stat.h>

#include "base/budget.h"
#include "unwind/table.h"

/* Value of a symbol (or with want_section, the address of a section). */
static uint64_t elf_addr(const char *path, const char *name, bool want_section)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	uint64_t addr = 0;
	size_t shstrndx;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!addr && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (want_section) {
			if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name))
				addr = sh.sh_addr;
			continue;
		}
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			gelf_getsym(d, (int)i, &s);
			if (!strcmp(elf_strptr(elf, sh.sh_link, s.st_name), name))
				addr = s.st_value;
		}
	}
	elf_end(elf);
	close(fd);
	if (!addr)
		fail_msg("%s not found in %s", name, path);
	return addr;
}

static struct utable *build_path(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct utable *t;

	assert_true(fd >= 0);
	t = utable__build_fd(fd);
	close(fd);
	return t;
}

static struct utable *build_fixture(const char *name)
{
	struct utable *t = build_path(fixture_path(name));

	if (!t)
		fail_msg("building %s: %s", name, strerror(errno));
	return t;
}

static const struct bp_urow *row_at(const struct utable *t, const char *lib, const char *sym,
				    int64_t delta)
{
	uint64_t a = elf_addr(fixture_path(lib), sym, false) + (uint64_t)delta;
	const struct bp_urow *r = utable__lookup(t, a);

	if (!r)
		fail_msg("no row at %s%+lld", sym, (long long)delta);
	return r;
}

static void assert_row(const struct bp_urow *r, int cfa_kind, int rbp_kind, int rbp, unsigned cfa)
{
	assert_non_null(r);
	assert_int_equal(UROW_CFA_OF(r->op), cfa_kind);
	assert_int_equal(UROW_RBP_OF(r->op), rbp_kind);
	assert_int_equal(r->rbp, rbp);
	assert_int_equal(r->cfa, cfa);
}

static void test_push_rbp_sequence(void **state)
{
	struct utable *t = build_fixture("libcfi.so");

	assert_row(row_at(t, "libcfi.so", "cfi_push", 0), UROW_CFA_RSP, UROW_RBP_SAME, 0, 8);
	assert_row(row_at(t, "libcfi.so", "cfi_push_1", 0), UROW_CFA_RSP, UROW_RBP_CFA, -2, 16);
	assert_row(row_at(t, "libcfi.so", "cfi_push_1", 2), UROW_CFA_RSP, UROW_RBP_CFA, -2, 16);
	assert_row(row_at(t, "libcfi.so", "cfi_push_2", 0), UROW_CFA_RBP, UROW_RBP_CFA, -2, 16);
	assert_row(row_at(t, "libcfi.so", "cfi_push_3", 0), UROW_CFA_RSP, UROW_RBP_SAME, 0, 8);
	assert_int_equal(t->st.fdes, 6);
	utable__free(t);
}

static void test_big_frame_scaled(void **state)
{
	struct utable *t = build_fixture("libcfi.so");

	assert_row(row_at(t, "libcfi.so", "cfi_big_1", 0), UROW_CFA_RSP_X8, UROW_RBP_SAME, 0,
		   0x20008 / 8);
	assert_int_equal(t->st.max_cfa, 0x20008);
	utable__free(t);
}

static void test_realigned_stack(void **state)
{
	struct utable *t = build_fixture("libcfi.so");

	/* CFA in r10: the walker cannot follow (prologue only). */
	assert_row(row_at(t, "libcfi.so", "cfi_realign_1", 0), UROW_CFA_UNSUPPORTED, UROW_RBP_SAME,
		   0, 0);
	/* CFA = *(rbp - 8), rbp saved at rbp + 0. */
	assert_row(row_at(t, "libcfi.so", "cfi_realign_3", 0), UROW_CFA_DEREF_RBP, UROW_RBP_DEREF,
		   0, (uint16_t)-8);
	utable__free(t);
}

static void test_outermost_gap_signal_unsupported(void **state)
{
	struct utable *t = build_fixture("libcfi.so");

	assert_row(row_at(t, "libcfi.so", "cfi_outermost", 0), UROW_CFA_END, UROW_RBP_SAME, 0, 0);
	assert_int_equal(t->st.rows_end, 1);
	/* 64 bytes without CFI: no rule, the walker uses frame pointers. */
	assert_row(row_at(t, "libcfi.so", "cfi_none", 10), UROW_CFA_NONE, UROW_RBP_SAME, 0, 0);
	/* The trampoline and the nop before it (return address - 1). */
	assert_row(row_at(t, "libcfi.so", "cfi_restore_rt", 0), UROW_CFA_SIGNAL, UROW_RBP_SAME, 0,
		   160);
	assert_row(row_at(t, "libcfi.so", "cfi_restore_rt", -1), UROW_CFA_SIGNAL, UROW_RBP_SAME, 0,
		   160);
	assert_int_equal(t->st.rows_signal, 1);
	assert_row(row_at(t, "libcfi.so", "cfi_unsupported", 0), UROW_CFA_UNSUPPORTED,
		   UROW_RBP_SAME, 0, 0);
	/* Past the last FDE: nothing. */
	assert_null(utable__lookup(t, t->base + (t->nr_pages << UNWIND_PAGE_SHIFT)));
	assert_null(utable__lookup(t, t->base - 1));
	utable__free(t);
}

static void test_without_eh_frame_hdr(void **state)
{
	struct utable *a = build_fixture("libcfi.so"), *b = build_fixture("libcfi-nohdr.so");

	assert_int_equal(a->nr_rows, b->nr_rows);
	assert_int_equal(a->base, b->base);
	assert_memory_equal(a->rows, b->rows, a->nr_rows * sizeof(*a->rows));
	utable__free(a);
	utable__free(b);
}

static void test_plt(void **state)
{
	struct utable *t = build_fixture("pie");
	uint64_t plt = elf_addr(fixture_path("pie"), ".plt", true);
	const struct bp_urow *r;

	assert_true(plt != 0);
	/* PLT0 pushes once: CFA rsp + 16. */
	r = utable__lookup(t, plt);
	assert_non_null(r);
	assert_row(r, UROW_CFA_RSP, UROW_RBP_SAME, 0, 16);
	/* A PLT entry: rsp + 8, plus 8 once its push (at entry offset 11) ran. */
	r = utable__lookup(t, plt + 16 + 11);
	assert_non_null(r);
	assert_row(r, UROW_CFA_PLT, UROW_RBP_SAME, 11, 8);
	assert_int_equal(t->st.rows_plt, 1);
	utable__free(t);
}

static void test_debug_frame_only(void **state)
{
	struct utable *t = build_fixture("libfix-dbgframe.so");
	const struct bp_urow *r;

	assert_int_equal(t->st.fdes, 0);
	assert_true(t->st.fdes_debug >= 2);
	r = row_at(t, "libfix-dbgframe.so", "fixture_lib_alpha", 0);
	assert_row(r, UROW_CFA_RSP, UROW_RBP_SAME, 0, 8);
	/* -O0: push %rbp; mov %rsp,%rbp - the body unwinds through rbp. */
	r = row_at(t, "libfix-dbgframe.so", "fixture_lib_alpha", 4);
	assert_int_equal(UROW_CFA_OF(r->op), UROW_CFA_RBP);
	utable__free(t);
}

static void test_no_cfi_not_elf(void **state)
{
	char *p;

	errno = 0;
	assert_null(build_path(fixture_path("libnocfi.so")));
	assert_int_equal(errno, ENODATA);
	p = write_temp_str("#!/bin/sh\necho not an ELF file\n");
	assert_null(build_path(p));
	assert_int_equal(errno, ENOEXEC);
	unlink(p);
	free(p);
	assert_null(utable__build_mem("", 0));
}

/* The page index answers exactly what a linear search over the rows does. */
static void check_lookup_exhaustive(const struct utable *t, uint64_t step)
{
	size_t r = 0;

	for (uint64_t a = t->base; a < t->end + 64; a += step) {
		const struct bp_urow *got = utable__lookup(t, a), *want;

		while (r + 1 < t->nr_rows && t->base + t->rows[r + 1].pc <= a)
			r++;
		want = t->nr_rows && t->base + t->rows[0].pc <= a &&
				       a - t->base < (t->nr_pages << UNWIND_PAGE_SHIFT)
			       ? &t->rows[r]
			       : NULL;
		if (got != want)
			fail_msg("lookup 0x%llx: row %td, want %td", (unsigned long long)a,
				 got ? got - t->rows : -1, want ? want - t->rows : -1);
	}
}

static void check_invariants(const struct utable *t)
{
	for (size_t i = 1; i < t->nr_rows; i++)
		assert_true(t->rows[i - 1].pc < t->rows[i].pc);
	for (size_t p = 0; p < t->nr_pages; p++) {
		const struct utable_page *pg = &t->pages[p];

		assert_true(pg->count <= UNWIND_PAGE_MAX_ROWS);
		if (!pg->count)
			continue;
		assert_true(pg->first + pg->count <= t->nr_rows);
		/* The first row covers the page start, unless the table starts later. */
		assert_true(t->rows[pg->first].pc <= (p << UNWIND_PAGE_SHIFT) || pg->first == 0);
	}
}

static void test_page_index_matches_linear_search(void **state)
{
	static const char *const fixtures[] = { "libcfi.so", "pie", "nopie", "libfix.so",
						"libfix-dbgframe.so" };

	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		struct utable *t = build_fixture(fixtures[i]);

		check_invariants(t);
		check_lookup_exhaustive(t, 1);
		utable__free(t);
	}
}

static void test_system_libc(void **state)
{
	struct utable *t = build_path("/lib/x86_64-linux-gnu/libc.so.6");

	assert_non_null(t);
	assert_true(t->nr_rows > 1000);
	assert_int_equal(t->st.rows_signal, 1); /* __restore_rt */
	assert_true(t->st.rows_plt >= 1);
	assert_true(t->build_id_len == 20);
	check_invariants(t);
	check_lookup_exhaustive(t, 7);
	utable__free(t);
}

static void test_build_mem_equals_fd(void **state)
{
	struct utable *a = build_fixture("pie"), *b;
	char *buf;
	size_t len;

	assert_int_equal(read_file(fixture_path("pie"), 64 << 20, &buf, &len), 0);
	b = utable__build_mem(buf, len);
	assert_non_null(b);
	assert_int_equal(a->nr_rows, b->nr_rows);
	assert_memory_equal(a->rows, b->rows, a->nr_rows * sizeof(*a->rows));
	assert_int_equal(a->build_id_len, b->build_id_len);
	free(buf);
	utable__free(a);
	utable__free(b);
}

static void test_bias(void **state)
{
	struct utable *pie = build_fixture("pie"), *nopie = build_fixture("nopie");
	uint64_t bias = 0, text = elf_addr(fixture_path("nopie"), "fixture_alpha", false);

	/* A PIE's text segment mapped at 0x555555555000 from file offset 0x1000. */
	assert_int_equal(utable__bias(pie, 0x555555555000ull, 0x1000, &bias), 0);
	assert_int_equal(bias, 0x555555554000ull);
	/* A non-PIE executable runs at its link addresses. */
	assert_int_equal(
		utable__bias(nopie, text & ~0xfffull, (text & ~0xfffull) - 0x400000, &bias), 0);
	assert_int_equal(bias, 0);
	assert_int_equal(utable__bias(pie, 0x1000, 1ull << 40, &bias), -ENOENT);
	utable__free(pie);
	utable__free(nopie);
}

/* Every byte of .eh_frame flipped in turn, and truncations: no crash, and any
 * table that comes out still keeps the walker's invariants. */
/* A register number of 200 million would make libdw zero gigabytes: the FDE is
 * skipped before libdw runs it, the good function keeps its rows. */
static void test_huge_register_number_is_skipped(void **state)
{
	struct rusage before, after;
	struct utable *t;

	getrusage(RUSAGE_SELF, &before);
	t = build_fixture("libcfi-hugereg.so");
	getrusage(RUSAGE_SELF, &after);
	assert_non_null(t);
	assert_int_equal(t->st.fdes, 1);
	assert_true(t->st.fdes_skipped >= 1);
	assert_true(after.ru_maxrss - before.ru_maxrss < 64 * 1024); /* KiB */
	utable__free(t);
}

/* A section's file offset and size (0 if absent). */
static uint64_t section_off(const char *path, const char *name, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	uint64_t off = 0;
	size_t shstrndx;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!off && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			off = sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	return off;
}

static void assert_same_rows(const struct utable *a, const struct utable *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->base, b->base);
	assert_int_equal(a->nr_rows, b->nr_rows);
	assert_memory_equal(a->rows, b->rows, a->nr_rows * sizeof(*a->rows));
}

static void put32(char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * The rows come from .eh_frame alone, whatever .eh_frame_hdr says. libdw
 * given the file would follow PT_GNU_EH_FRAME: to an .eh_frame 8 bytes off,
 * or through a search table whose FDE pointers land inside entries - CFI
 * nobody screened (how the fuzzer made libdw allocate 1.9 GB).
 */
static void test_eh_frame_hdr_is_not_followed(void **state)
{
	const char *path = fixture_path("libcfi.so");
	uint64_t hdr_size, hdr = section_off(path, ".eh_frame_hdr", &hdr_size);
	struct utable *want = build_fixture("libcfi.so");
	char *buf;
	size_t len;

	assert_int_equal(read_file(path, 1 << 20, &buf, &len), 0);
	assert_true(hdr && hdr + hdr_size <= len);
	/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
	assert_memory_equal(buf + hdr, "\x01\x1b\x03\x3b", 4);
	for (int how = 0; how < 2; how++) {
		char *copy = malloc(len);
		uint32_t n;
		struct utable *t;

		assert_non_null(copy);
		memcpy(copy, buf, len);
		n = get32(copy + hdr + 8);
		assert_true(n > 2 && 12 + 8ull * n <= hdr_size);
		if (how == 0) /* .eh_frame 8 bytes further on */
			put32(copy + hdr + 4, get32(copy + hdr + 4) + 8);
		else /* every FDE pointer one byte into its entry */
			for (uint32_t i = 0; i < n; i++)
				put32(copy + hdr + 12 + 8 * i + 4,
				      get32(copy + hdr + 12 + 8 * i + 4) + 1);
		t = utable__build_mem(copy, len);
		assert_same_rows(want, t);
		utable__free(t);
		free(copy);
	}
	utable__free(want);
	free(buf);
}

/*
 * Two FDEs over the same code, the first naming DWARF register 1,000,000
 * (not screened: rejected) and the second well-formed. libdw's linear
 * search takes the first FDE covering a pc, so unless the rejected one is
 * dropped from libdw's copy, the second's rows come out of the first's CFI
 * (and with a larger register number, gigabytes of register rules). The
 * .eh_frame of libcfi-hugereg.so is rewritten by hand, its .eh_frame_hdr
 * hidden so libdw would search linearly.
 */
static void test_rejected_fde_is_dropped_for_libdw(void **state)
{
	const char *path = fixture_path("libcfi-hugereg.so");
	uint64_t eh_size, eh = section_off(path, ".eh_frame", &eh_size);
	uint64_t eh_addr = elf_addr(path, ".eh_frame", true);
	uint64_t good = elf_addr(path, "good_fn", false), huge = elf_addr(path, "huge_fn", false);
	uint64_t hdr_size, hdr = section_off(path, ".eh_frame_hdr", &hdr_size);
	static const unsigned char cie[24] = {
		20,   0,   0,	0,    0, 0,    0,  0, /* length, CIE id */
		1,    'z', 'R', 0,    1, 0x78, 16, 1,
		0x1b,				  /* v1 "zR" caf 1 daf -8 ra 16, pcrel|sdata4 */
		0x0c, 7,   8,	0x90, 1, 0,    0, /* def_cfa rsp+8; ra at cfa-8; nops */
	};
	unsigned char fde1[24] = {
		20,   0,    0,	  0,
		28,   0,    0,	  0, /* length, CIE pointer */
		0,    0,    0,	  0,
		0,    0,    0,	  0, /* begin, range (filled in) */
		0,    0x0e, 40,	  0x05,
		0xc0, 0x84, 0x3d, 2, /* aug 0; def_cfa_offset 40; offset_extended r1000000 */
	};
	unsigned char fde2[20] = {
		16, 0, 0, 0, 52, 0, 0, 0,    0,	   0,
		0,  0, 0, 0, 0,	 0, 0, 0x41, 0x0e, 16, /* aug 0; advance 1; def_cfa_offset 16 */
	};
	Elf64_Ehdr eh_hdr;
	struct utable *t;
	char *buf;
	size_t len;

	assert_int_equal(read_file(path, 1 << 20, &buf, &len), 0);
	assert_true(eh && eh_size >= 72 && eh + eh_size <= len && hdr);
	/* FDE1 covers both functions, FDE2 huge_fn (3 bytes: push, pop, ret). */
	put32((char *)fde1 + 8, (uint32_t)(good - (eh_addr + 24 + 8)));
	put32((char *)fde1 + 12, (uint32_t)(huge + 3 - good));
	put32((char *)fde2 + 8, (uint32_t)(huge - (eh_addr + 48 + 8)));
	put32((char *)fde2 + 12, 3);
	memset(buf + eh, 0, eh_size); /* ends in a zero terminator */
	memcpy(buf + eh, cie, sizeof(cie));
	memcpy(buf + eh + 24, fde1, sizeof(fde1));
	memcpy(buf + eh + 48, fde2, sizeof(fde2));
	/* No PT_GNU_EH_FRAME, no section named .eh_frame_hdr. */
	memcpy(&eh_hdr, buf, sizeof(eh_hdr));
	for (unsigned i = 0; i < eh_hdr.e_phnum; i++) {
		char *ph = buf + eh_hdr.e_phoff + (size_t)i * eh_hdr.e_phentsize;

		if (get32(ph) == PT_GNU_EH_FRAME)
			put32(ph, PT_NULL);
	}
	memset(buf + hdr, 0, hdr_size);

	t = utable__build_mem(buf, len);
	assert_non_null(t);
	assert_int_equal(t->st.fdes, 1);
	assert_true(t->st.fdes_skipped >= 1);
	assert_row(utable__lookup(t, huge + 1), UROW_CFA_RSP, UROW_RBP_SAME, 0, 16);
	assert_row(utable__lookup(t, huge), UROW_CFA_RSP, UROW_RBP_SAME, 0, 8);
	utable__free(t);
	free(buf);
}

static void test_corrupt_and_truncated(void **state)
{
	char *buf, *copy;
	size_t len, built = 0;
	uint64_t eh = elf_addr(fixture_path("libcfi.so"), ".eh_frame", true);
	uint64_t hdr = elf_addr(fixture_path("libcfi.so"), ".eh_frame_hdr", true);

	assert_int_equal(read_file(fixture_path("libcfi.so"), 1 << 20, &buf, &len), 0);
	copy = malloc(len);
	assert_non_null(copy);
	/* In this fixture file offsets equal addresses for the read-only segment. */
	for (uint64_t off = MIN(eh, hdr); off < eh + 0x180 && off < len; off++) {
		for (int bit = 0; bit < 8; bit += 3) {
			struct utable *t;

			memcpy(copy, buf, len);
			copy[off] ^= (char)(1 << bit);
			t = utable__build_mem(copy, len);
			if (t) {
				check_invariants(t);
				built++;
			}
			utable__free(t);
		}
	}
	assert_true(built > 0);
	for (size_t cut = 0; cut < len; cut += 97)
		utable__free(utable__build_mem(buf, cut));
	free(copy);
	free(buf);
}

/* --- a table that costs the square of its FDEs' length --------------------------- */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t put_uleb(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

#define SLOW_BASE 0x10000ull
#define SLOW_SPAN 4096u /* bytes of code per FDE: 4095 rows */

/*
 * An x86-64 shared object with no code in the file (one PT_LOAD whose memory
 * size covers the FDEs) and an .eh_frame of nfdes FDEs, each with `nops`
 * DW_CFA_nop before 4095 alternating rules one byte apart: libdw runs an
 * FDE's instructions from its start for each row, so every row costs the
 * nops. *len gets the image's size.
 */
static char *slow_cfi_image(unsigned nfdes, unsigned nops, size_t *len)
{
	static const char shstr[] = "\0.eh_frame\0.shstrtab";
	size_t insn_len = nops + (SLOW_SPAN - 1) * 3, fde_len, eh_len, off;
	unsigned char *eh, *p;
	Elf64_Ehdr *e;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	char *img;

	/* length, CIE pointer, begin, range (absolute, 8 bytes each), insns, padding */
	fde_len = (4 + 4 + 16 + insn_len + 7) & ~(size_t)7;
	eh_len = 20 + nfdes * fde_len + 4;
	off = sizeof(*e) + sizeof(*ph);
	*len = off + eh_len + sizeof(shstr) + 7 + 3 * sizeof(*sh);
	*len &= ~(size_t)7;
	img = calloc(1, *len);
	assert_non_null(img);
	e = (Elf64_Ehdr *)img;
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_DYN;
	e->e_machine = EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_phoff = sizeof(*e);
	e->e_ehsize = sizeof(*e);
	e->e_phentsize = sizeof(*ph);
	e->e_phnum = 1;
	e->e_shentsize = sizeof(*sh);
	e->e_shnum = 3;
	e->e_shstrndx = 2;
	e->e_shoff = *len - 3 * sizeof(*sh);
	ph = (Elf64_Phdr *)(img + sizeof(*e));
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_vaddr = SLOW_BASE;
	ph->p_filesz = off;
	ph->p_memsz = (uint64_t)nfdes * SLOW_SPAN + 4096;
	ph->p_align = 4096;
	/* CIE: v1, no augmentation (absolute pointers), caf 1, daf -8, ra 16;
	 * def_cfa rsp+8, ra at cfa-8, two nops. */
	eh = p = (unsigned char *)img + off;
	memcpy(p,
	       "\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01\x78\x10\x0c\x07\x08\x90\x01\x00\x00",
	       20);
	p += 20;
	for (unsigned f = 0; f < nfdes; f++) {
		unsigned char *q = p + 8;
		uint64_t begin = SLOW_BASE + (uint64_t)f * SLOW_SPAN, range = SLOW_SPAN;

		put32((char *)p, (uint32_t)(fde_len - 4));
		put32((char *)p + 4, (uint32_t)(p + 4 - eh));
		memcpy(q, &begin, 8);
		memcpy(q + 8, &range, 8);
		q += 16 + nops; /* DW_CFA_nop is 0 */
		for (unsigned r = 0; r + 1 < SLOW_SPAN; r++) {
			*q++ = 0x41; /* advance_loc 1 */
			*q++ = 0x0e; /* def_cfa_offset */
			q += put_uleb(q, r % 2 ? 16 : 24);
		}
		p += fde_len;
	}
	p += 4; /* zero terminator */
	sh = (Elf64_Shdr *)(img + e->e_shoff);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_addr = SLOW_BASE + off;
	sh[1].sh_offset = off;
	sh[1].sh_size = eh_len;
	sh[1].sh_addralign = 8;
	sh[2].sh_name = 11;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = (uint64_t)((char *)p - img);
	sh[2].sh_size = sizeof(shstr);
	memcpy(p, shstr, sizeof(shstr));
	return img;
}

/* A few such FDEs build, row for row as written. */
static void test_slow_cfi_image_is_what_it_says(void **state)
{
	size_t len;
	char *img = slow_cfi_image(2, 16, &len);
	struct utable *t = utable__build_mem(img, len);

	(void)state;
	if (!t)
		fail_msg("building: %s", strerror(errno));
	assert_int_equal(t->st.fdes, 2);
	assert_row(utable__lookup(t, SLOW_BASE), UROW_CFA_RSP, UROW_RBP_SAME, 0, 8);
	assert_row(utable__lookup(t, SLOW_BASE + 1), UROW_CFA_RSP, UROW_RBP_SAME, 0, 24);
	assert_row(utable__lookup(t, SLOW_BASE + 2), UROW_CFA_RSP, UROW_RBP_SAME, 0, 16);
	assert_row(utable__lookup(t, SLOW_BASE + SLOW_SPAN + 3), UROW_CFA_RSP, UROW_RBP_SAME, 0,
		   24);
	utable__free(t);
	free(img);
}

/*
 * A tenant's .eh_frame of 40 FDEs of 28 KiB (16 KiB of nops before their
 * 4095 rows) costs libdw ~250 ms an FDE, 10 s in all on this VM: the build
 * gives up at its budget (ETIMEDOUT) instead, having spent about that.
 */
static void test_slow_cfi_gives_up_at_its_budget(void **state)
{
	size_t len;
	char *img = slow_cfi_image(40, 16384, &len);
	uint64_t t0 = thread_cpu_ns(), spent;
	struct utable *t;

	(void)state;
	errno = 0;
	t = utable__build_mem(img, len);
	spent = thread_cpu_ns() - t0;
	if (t)
		fail_msg("built in %.1f s: %zu rows", spent / 1e9, t->nr_rows);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(spent >= UTABLE_CPU_BUDGET_NS);
	assert_true(spent < UTABLE_CPU_BUDGET_NS + 500ull * 1000 * 1000);
	free(img);
}

/* A stop request ends any build a grace period later (ECANCELED: not the file's fault). */
static void test_stop_ends_a_build(void **state)
{
	size_t len;
	char *img = slow_cfi_image(40, 16384, &len);
	struct timespec t0, t1;
	struct utable *t;
	double wall;

	(void)state;
	budget__stop();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	t = utable__build_mem(img, len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	budget__unstop();
	wall = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_null(t);
	/* Within its CPU budget and the grace, whichever ends first. */
	assert_true(errno == ECANCELED || errno == ETIMEDOUT);
	assert_true(wall < BUDGET_STOP_GRACE_NS / 1e9 + 1.0);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_rbp_sequence),
		cmocka_unit_test(test_big_frame_scaled),
		cmocka_unit_test(test_realigned_stack),
		cmocka_unit_test(test_outermost_gap_signal_unsupported),
		cmocka_unit_test(test_without_eh_frame_hdr),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_debug_frame_only),
		cmocka_unit_test(test_no_cfi_not_elf),
		cmocka_unit_test(test_page_index_matches_linear_search),
		cmocka_unit_test(test_system_libc),
		cmocka_unit_test(test_build_mem_equals_fd),
		cmocka_unit_test(test_bias),
		cmocka_unit_test(test_corrupt_and_truncated),
		cmocka_unit_test(test_huge_register_number_is_skipped),
		cmocka_unit_test(test_eh_frame_hdr_is_not_followed),
		cmocka_unit_test(test_rejected_fde_is_dropped_for_libdw),
		cmocka_unit_test(test_slow_cfi_image_is_what_it_says),
		cmocka_unit_test(test_slow_cfi_gives_up_at_its_budget),
		cmocka_unit_test(test_stop_ends_a_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
