// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_annotation.c - what "bpfprof annotate" is built from: code bytes by
 * virtual address (elfcode, also from a hand-made ET_CORE file like
 * /proc/kcore), instructions as text (disasm), DWARF line rows (srcline,
 * checked against binutils' addr2line on a separate debug file) and the
 * per-instruction counts (annotation), which must add up.
 */
#include "testutil.h"

#include <elf.h>
#include <fcntl.h>

#include "sym/annotation.h"
#include "sym/disasm.h"
#include "sym/elfcode.h"
#include "sym/elfsym.h"
#include "sym/srcline.h"

/* [start, end) of a function, from nm -S. */
static void nm_range(const char *file, const char *name, uint64_t *start, uint64_t *end)
{
	char cmd[4200], line[512];
	FILE *p;

	*start = *end = 0;
	snprintf(cmd, sizeof(cmd), "nm -S '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, sz;
		char sym[256], type;

		if (sscanf(line, "%llx %llx %c %255s", &a, &sz, &type, sym) == 4 &&
		    !strcmp(sym, name)) {
			*start = a;
			*end = a + sz;
		}
	}
	pclose(p);
	if (!*end)
		fail_msg("nm -S found no %s in %s", name, file);
}

static void test_elfcode_executable(void **state)
{
	const char *path = fixture_path("pie");
	uint64_t start, end, off;
	uint8_t a[64], b[64];
	struct elfcode *ec;
	struct elfsym *es;
	bool is64;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	nm_range(path, "fixture_beta", &start, &end);
	ec = elfcode__open_fd(fd);
	es = elfsym__open_fd(fd);
	assert_non_null(ec);
	assert_non_null(es);
	assert_int_equal(elfcode__machine(ec, &is64), EM_X86_64);
	assert_true(is64);
	assert_int_equal(elfcode__read(ec, start, a, sizeof(a)), sizeof(a));
	assert_int_equal(elfsym__vaddr_to_off(es, start, &off, NULL), 0);
	assert_int_equal(pread(fd, b, sizeof(b), (off_t)off), sizeof(b));
	assert_memory_equal(a, b, sizeof(a));
	/* elfsym's range is nm's. */
	{
		uint64_t s, e;

		assert_int_equal(elfsym__range(es, start + 3, &s, &e), 0);
		assert_int_equal(s, start);
		assert_int_equal(e, end);
	}
	assert_int_equal(elfcode__read(ec, 0x7fff00000000ull, a, 4), -ENOENT);
	elfsym__free(es);
	elfcode__free(ec);
	close(fd);
}

/* An ET_CORE file shaped like /proc/kcore: one text segment at a kernel address,
 * one segment claiming bytes past the end of the file. */
static void test_elfcode_core(void **state)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph[2];
		uint8_t text[16];
	} f;
	struct elfcode *ec;
	uint8_t buf[32];
	char *path;
	int fd;

	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = ELFCLASS64;
	f.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	f.eh.e_ident[EI_VERSION] = EV_CURRENT;
	f.eh.e_type = ET_CORE;
	f.eh.e_machine = EM_X86_64;
	f.eh.e_version = EV_CURRENT;
	f.eh.e_phoff = sizeof(f.eh);
	f.eh.e_ehsize = sizeof(f.eh);
	f.eh.e_phentsize = sizeof(Elf64_Phdr);
	f.eh.e_phnum = 2;
	f.ph[0].p_type = PT_LOAD;
	f.ph[0].p_offset = offsetof(typeof(f), text);
	f.ph[0].p_vaddr = 0xffffffff81000000ull;
	f.ph[0].p_filesz = f.ph[0].p_memsz = sizeof(f.text);
	f.ph[1].p_type = PT_LOAD;
	f.ph[1].p_offset = 1 << 20; /* past EOF: ignored */
	f.ph[1].p_vaddr = 0xffffffffa0000000ull;
	f.ph[1].p_filesz = f.ph[1].p_memsz = 4096;
	for (int i = 0; i < 16; i++)
		f.text[i] = (uint8_t)(0xa0 + i);
	path = write_temp(&f, sizeof(f));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ec = elfcode__open_fd(fd);
	assert_non_null(ec);
	assert_int_equal(elfcode__read(ec, 0xffffffff81000004ull, buf, 4), 4);
	assert_int_equal(buf[0], 0xa4);
	/* A read stops at the end of its segment. */
	assert_int_equal(elfcode__read(ec, 0xffffffff8100000cull, buf, sizeof(buf)), 4);
	assert_int_equal(buf[3], 0xaf);
	assert_int_equal(elfcode__read(ec, 0xffffffffa0000000ull, buf, 4), -ENOENT);
	elfcode__free(ec);
	close(fd);
	unlink(path);
	free(path);

	/* Not ELF. */
	path = write_temp_str("not an ELF file at all");
	fd = open(path, O_RDONLY);
	assert_null(elfcode__open_fd(fd));
	assert_int_equal(errno, ENOEXEC);
	close(fd);
	unlink(path);
	free(path);
}

static void test_disasm_x86(void **state)
{
	/* push %rbp; mov %rsp,%rbp; jmp back to the mov; an invalid byte; ret */
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xeb, 0xfb, 0x06, 0xc3 };
	struct disasm *d = disasm__new(EM_X86_64, true);
	char buf[160];
	size_t n;

	assert_non_null(d);
	n = disasm__one(d, code, sizeof(code), 0x1000, 0x1000, 0x1008, buf, sizeof(buf));
	assert_int_equal(n, 1);
	assert_string_equal(buf, "pushq %rbp");
	n = disasm__one(d, code + 1, sizeof(code) - 1, 0x1001, 0x1000, 0x1008, buf, sizeof(buf));
	assert_int_equal(n, 3);
	assert_string_equal(buf, "movq %rsp, %rbp");
	n = disasm__one(d, code + 4, sizeof(code) - 4, 0x1004, 0x1000, 0x1008, buf, sizeof(buf));
	assert_int_equal(n, 2);
	assert_string_equal(buf, "jmp 0x1001 <+0x1>");
	n = disasm__one(d, code + 6, sizeof(code) - 6, 0x1006, 0x1000, 0x1008, buf, sizeof(buf));
	assert_int_equal(n, 1);
	assert_string_equal(buf, ".byte 0x06");
	/* A truncated instruction is a byte too, never a read past the end. */
	n = disasm__one(d, code + 1, 2, 0x1001, 0, 0, buf, sizeof(buf));
	assert_int_equal(n, 1);
	assert_int_equal(disasm__one(d, code, 0, 0x1000, 0, 0, buf, sizeof(buf)), 0);
	disasm__free(d);
	assert_null(disasm__new(EM_MIPS, false));
	assert_int_equal(errno, ENOTSUP);
}

/* addr2line's line for addr in file (0 if "?"). */
static unsigned addr2line(const char *file, uint64_t addr)
{
	char cmd[4200], line[4096];
	unsigned n = 0;
	FILE *p;
	char *colon;

	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%llx", file, (unsigned long long)addr);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(line, sizeof(line), p) && (colon = strrchr(line, ':')))
		n = (unsigned)strtoul(colon + 1, NULL, 10);
	pclose(p);
	return n;
}

/* The stripped binary's code, the separate debug file's lines: as addr2line has them. */
static void test_annotation_with_debug_file(void **state)
{
	char bin[4096], dbg[4096];
	uint64_t start, end;
	struct ann_count counts[8];
	struct annotation a;
	struct elfcode *ec;
	struct srcline *sl;
	uint64_t sum = 0;
	int fd, dfd;
	size_t i, lines = 0;

	snprintf(bin, sizeof(bin), "%s", fixture_path("dbgprog"));
	snprintf(dbg, sizeof(dbg), "%s", fixture_path("dbgprog.debug"));
	nm_range(dbg, "fixture_beta", &start, &end);
	fd = open(bin, O_RDONLY);
	dfd = open(dbg, O_RDONLY);
	assert_true(fd >= 0 && dfd >= 0);
	/* The stripped binary has no DWARF of its own. */
	assert_null(srcline__open_fd(fd));
	assert_int_equal(errno, ENOENT);
	ec = elfcode__open_fd(fd);
	sl = srcline__open_fd(dfd);
	assert_non_null(ec);
	assert_non_null(sl);

	/* First pass without counts: the instruction addresses. */
	assert_int_equal(annotation__build(&a, ec, sl, start, end, NULL, 0), 0);
	assert_true(a.nr > 4);
	assert_int_equal(a.insns[0].addr, start);
	assert_int_equal(a.insns[a.nr - 1].addr + a.insns[a.nr - 1].size, end);
	assert_true(a.nr_rows > 0);
	for (i = 0; i < a.nr; i++) {
		unsigned want = addr2line(dbg, a.insns[i].addr);

		if (!a.insns[i].src)
			continue;
		assert_non_null(strstr(a.insns[i].src->file, "prog.c"));
		if (want) {
			assert_int_equal(a.insns[i].src->line, want);
			lines++;
		}
	}
	assert_true(lines > 0);
	/* Counts: on instructions, mid-instruction, and outside the function. */
	counts[0] = (struct ann_count){ a.insns[0].addr, 5 };
	counts[1] = (struct ann_count){ a.insns[2].addr, 7 };
	counts[2] = (struct ann_count){ a.insns[2].addr, 1 };
	counts[3] = (struct ann_count){ a.insns[3].addr + (a.insns[3].size > 1), 2 };
	counts[4] = (struct ann_count){ start - 1, 100 };
	counts[5] = (struct ann_count){ end, 50 };
	counts[6] = (struct ann_count){ a.insns[a.nr - 1].addr, 3 };
	annotation__free(&a);
	assert_int_equal(annotation__build(&a, ec, sl, start, end, counts, 7), 0);
	for (i = 0; i < a.nr; i++)
		sum += a.insns[i].count;
	assert_int_equal(a.total, 18);
	assert_int_equal(sum, 18);
	assert_int_equal(a.outside, 150);
	assert_int_equal(a.insns[0].count, 5);
	assert_int_equal(a.insns[2].count, 8);
	assert_int_equal(a.insns[3].count, 2);
	assert_int_equal(a.insns[a.nr - 1].count, 3);
	annotation__free(&a);
	/* Without line info, and with a bad range. */
	assert_int_equal(annotation__build(&a, ec, NULL, start, end, counts, 7), 0);
	assert_null(a.rows);
	assert_null(a.insns[0].src);
	annotation__free(&a);
	assert_int_equal(annotation__build(&a, ec, NULL, end, start, NULL, 0), -EINVAL);
	assert_int_equal(
		annotation__build(&a, ec, NULL, start, start + ANNOTATION_MAX_BYTES + 1, NULL, 0),
		-EFBIG);
	srcline__free(sl);
	elfcode__free(ec);
	close(fd);
	close(dfd);
}

/* From bytes (a Lisp function's, read from the process): the same checks as from a file. */
static void test_annotation_bytes(void **state)
{
	/* push %rbp; mov %rsp,%rbp; jmp back to the mov; an invalid byte; ret */
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xeb, 0xfb, 0x06, 0xc3 };
	struct ann_count counts[] = { { 0x1002, 4 }, { 0x1000, 1 }, { 0xfff, 9 }, { 0x1006, 2 } };
	struct annotation a;

	/* More bytes than the function has: only its own are read. */
	assert_int_equal(annotation__build_bytes(&a, code, sizeof(code), EM_X86_64, true, NULL,
						 0x1000, 0x1007, counts, 4),
			 0);
	assert_int_equal(a.nr, 4);
	assert_int_equal(a.insns[3].addr, 0x1006);
	assert_int_equal(a.insns[0].count, 1);
	assert_int_equal(a.insns[1].count, 4);
	assert_int_equal(a.insns[3].count, 2);
	assert_int_equal(a.total, 7);
	assert_int_equal(a.outside, 9);
	annotation__free(&a);
	assert_int_equal(annotation__build_bytes(&a, code, sizeof(code), EM_X86_64, true, NULL,
						 0x1008, 0x1000, NULL, 0),
			 -EINVAL);
	assert_int_equal(a.start, 0x1008);
	assert_int_equal(a.nr, 0);
	assert_int_equal(annotation__build_bytes(&a, code, sizeof(code), EM_X86_64, true, NULL,
						 0x1000, 0x1000, NULL, 0),
			 -EINVAL);
	assert_int_equal(annotation__build_bytes(&a, code, sizeof(code), EM_X86_64, true, NULL,
						 0x1000, 0x1000 + ANNOTATION_MAX_BYTES + 1, NULL,
						 0),
			 -EFBIG);
	assert_int_equal(a.end, 0x1000 + ANNOTATION_MAX_BYTES + 1);
}

/* A C++ template method: lines from the binary's own DWARF. */
static void test_srcline_cxx(void **state)
{
	const char *path = fixture_path("cxx");
	struct srcline_row *rows;
	struct elfsym *es;
	uint64_t start = 0, end = 0, off;
	size_t nr;
	int fd = open(path, O_RDONLY);
	struct srcline *sl;

	assert_true(fd >= 0);
	es = elfsym__open_fd(fd);
	assert_non_null(es);
	/* _ZNK7fixture3BoxIiE3getEi: fixture::Box<int>::get(int) const */
	nm_range(path, "_ZNK7fixture3BoxIiE3getEi", &start, &end);
	sl = srcline__open_fd(fd);
	assert_non_null(sl);
	assert_int_equal(srcline__rows(sl, start, end, &rows, &nr), 0);
	assert_true(nr > 0);
	for (size_t i = 0; i < nr; i++) {
		assert_non_null(strstr(rows[i].file, "cxx.cc"));
		if (i)
			assert_true(rows[i].addr >= rows[i - 1].addr);
	}
	assert_int_equal(srcline__find(rows, nr, start)->line, addr2line(path, start));
	assert_null(srcline__find(rows, nr, rows[0].addr - 1));
	free(rows);
	/* A range no unit covers. */
	assert_int_equal(srcline__rows(sl, 0x10, 0x20, &rows, &nr), -ENOENT);
	(void)off;
	srcline__free(sl);
	elfsym__free(es);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfcode_executable),
		cmocka_unit_test(test_elfcode_core),
		cmocka_unit_test(test_disasm_x86),
		cmocka_unit_test(test_annotation_with_debug_file),
		cmocka_unit_test(test_annotation_bytes),
		cmocka_unit_test(test_srcline_cxx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
