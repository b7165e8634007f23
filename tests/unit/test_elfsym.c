// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_elfsym.c - ELF symbols, segments and build ids of the fixtures built by
 * the Makefile, and of corrupted copies of them.
 *
 * Expected values come from binutils (nm, readelf) run on the same files, so
 * the parser is checked against an independent implementation rather than
 * against itself.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "base/budget.h"
#include "sym/elfsym.h"
#include "proc/procmaps.h"
#include "base/util.h"

/* --- expectations from binutils ---------------------------------------- */

struct nm_sym {
	uint64_t addr, size;
};

static void run_nm(const char *path, const char *name, struct nm_sym *out)
{
	char cmd[4200], line[512], sym[256], type[4];
	unsigned long long a, s;
	bool found = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %llx %3s %255s", &a, &s, type, sym) == 4 &&
		    !strcmp(sym, name)) {
			out->addr = a;
			out->size = s;
			found = true;
		}
	}
	pclose(f);
	if (!found)
		fail_msg("nm found no %s in %s", name, path);
}

/* File offset and address of a section, from readelf -SW. */
static void run_readelf_section(const char *path, const char *sec, uint64_t *addr, uint64_t *off)
{
	char cmd[4200], line[512], pat[64];
	unsigned long long a, o, s;
	bool found = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	snprintf(pat, sizeof(pat), " %s ", sec);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, pat);

		if (p && sscanf(p + strlen(pat), "%*s %llx %llx %llx", &a, &o, &s) == 3) {
			*addr = a;
			*off = o;
			found = true;
		}
	}
	pclose(f);
	assert_true(found);
}

/* Build id as lower-case hex from readelf -n; "" if none. */
static void run_readelf_build_id(const char *path, char *hex, size_t size)
{
	char cmd[4200], line[512];
	FILE *f;

	hex[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "Build ID: ");

		if (p && sscanf(p + 10, "%129s", hex) == 1)
			break;
	}
	pclose(f);
	assert_true(strlen(hex) < size);
}

static char *fixture(const char *name)
{
	char *p = strdup(fixture_path(name));

	assert_non_null(p);
	if (access(p, R_OK))
		fail_msg("fixture %s missing: run make unit-tests", p);
	return p;
}

/* --- fixtures ------------------------------------------------------------ */

static void assert_resolves(const struct elfsym *es, uint64_t addr, const char *name, uint64_t off)
{
	uint64_t got_off = ~0ULL;
	const char *got = elfsym__lookup(es, addr, &got_off);

	if (!got)
		fail_msg("0x%llx: expected %s+%llu, got NULL", (unsigned long long)addr, name,
			 (unsigned long long)off);
	assert_string_equal(got, name);
	assert_true(got_off == off);
}

/* PLT stubs objdump names "name@plt" in .plt, .plt.sec and .plt.got. */
struct plt_stub {
	uint64_t addr;
	char name[256];
};

static size_t run_objdump_plt(const char *path, struct plt_stub *out, size_t max)
{
	char cmd[4200], line[512], name[256];
	unsigned long long a;
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null",
		 path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		size_t len;

		/* Not "<printf@plt-0x10>:", objdump's name for the resolver stub. */
		if (sscanf(line, "%llx <%255[^>]>:", &a, name) != 2 || (len = strlen(name)) < 5 ||
		    strcmp(name + len - 4, "@plt"))
			continue;
		if (n < max) {
			out[n].addr = a;
			snprintf(out[n].name, sizeof(out[n].name), "%s", name);
			n++;
		}
	}
	pclose(f);
	return n;
}

static void assert_not_sym(const struct elfsym *es, uint64_t addr, const char *name)
{
	const char *got = elfsym__lookup(es, addr, NULL);

	if (got && !strcmp(got, name))
		fail_msg("0x%llx: must not resolve to %s", (unsigned long long)addr, name);
}

/*
 * Checks one function: start, last byte, one past the end (st_size respected),
 * and file offset -> vaddr through PT_LOAD, with the offset computed from the
 * section headers (readelf), not from the program headers under test.
 */
static void check_function(const char *path, const struct elfsym *es, const char *name,
			   uint64_t text_addr, uint64_t text_off)
{
	struct nm_sym s;
	uint64_t vaddr = 0;

	run_nm(path, name, &s);
	assert_true(s.size > 1);
	assert_resolves(es, s.addr, name, 0);
	assert_resolves(es, s.addr + 1, name, 1);
	assert_resolves(es, s.addr + s.size - 1, name, s.size - 1);
	assert_not_sym(es, s.addr + s.size, name);
	assert_not_sym(es, s.addr - 1, name);
	assert_int_equal(elfsym__off_to_vaddr(es, s.addr - text_addr + text_off, &vaddr), 0);
	assert_true(vaddr == s.addr);
	assert_int_equal(elfsym__off_to_vaddr(es, s.addr - text_addr + text_off + 7, &vaddr), 0);
	assert_true(vaddr == s.addr + 7);
}

static void check_build_id(const char *path, const struct elfsym *es)
{
	char want[130], got[130] = "";
	const uint8_t *id;
	size_t len = 99;

	run_readelf_build_id(path, want, sizeof(want));
	id = elfsym__build_id(es, &len);
	if (!want[0]) {
		assert_null(id);
		assert_int_equal(len, 0);
		return;
	}
	assert_non_null(id);
	assert_true(len >= 1 && len <= 64);
	for (size_t i = 0; i < len; i++)
		snprintf(got + 2 * i, 3, "%02x", id[i]);
	assert_string_equal(got, want);
}

static void test_pie(void **state)
{
	char *path = fixture("pie");
	struct elfsym *es = elfsym__open(path);
	uint64_t text_addr, text_off, v;
	struct nm_sym s;

	(void)state;
	assert_non_null(es);
	assert_int_equal(elfsym__type(es), ET_DYN);
	assert_true(elfsym__count(es) >= 4);
	assert_int_equal(elfsym__bad(es), 0);
	run_readelf_section(path, ".text", &text_addr, &text_off);
	check_function(path, es, "fixture_alpha", text_addr, text_off);
	check_function(path, es, "fixture_beta", text_addr, text_off);
	check_function(path, es, "fixture_static_gamma", text_addr, text_off);
	check_function(path, es, "main", text_addr, text_off);
	/* A PIE is linked at 0: small virtual addresses. */
	run_nm(path, "fixture_alpha", &s);
	assert_true(s.addr < 0x100000);
	/* Data is not code. */
	assert_null(elfsym__lookup(es, 0, NULL));
	assert_null(elfsym__lookup(es, UINT64_MAX, NULL));
	assert_int_equal(elfsym__off_to_vaddr(es, 1ULL << 40, &v), -ENOENT);
	check_build_id(path, es);
	elfsym__free(es);
	free(path);
}

static void test_nopie(void **state)
{
	char *path = fixture("nopie");
	struct elfsym *es = elfsym__open(path);
	uint64_t text_addr, text_off;
	struct nm_sym s;

	(void)state;
	assert_non_null(es);
	assert_int_equal(elfsym__type(es), ET_EXEC);
	run_readelf_section(path, ".text", &text_addr, &text_off);
	check_function(path, es, "fixture_alpha", text_addr, text_off);
	check_function(path, es, "fixture_beta", text_addr, text_off);
	check_function(path, es, "fixture_static_gamma", text_addr, text_off);
	run_nm(path, "fixture_alpha", &s);
	assert_true(s.addr >= 0x400000);
	check_build_id(path, es);
	elfsym__free(es);
	free(path);
}

static void test_shared_lib(void **state)
{
	char *path = fixture("libfix.so");
	struct elfsym *es = elfsym__open(path);
	uint64_t text_addr, text_off;

	(void)state;
	assert_non_null(es);
	assert_int_equal(elfsym__type(es), ET_DYN);
	run_readelf_section(path, ".text", &text_addr, &text_off);
	check_function(path, es, "fixture_lib_alpha", text_addr, text_off);
	check_function(path, es, "fixture_lib_beta", text_addr, text_off);
	check_function(path, es, "fixture_lib_static_gamma", text_addr, text_off);
	check_build_id(path, es);
	elfsym__free(es);
	free(path);
}

/*
 * A stripped PIE's static and global functions have no symbol, but .eh_frame
 * still has their FDEs: every address of one gets the function's start (the
 * unstripped file's symbol address). Without .eh_frame, nothing does.
 */
static void test_stripped_fde_start(void **state)
{
	char *pie = fixture("pie"), *stripped = fixture("stripped");
	char tmpl[] = "/tmp/bpfprof-test-XXXXXX", cmd[8400];
	const char *fns[] = { "fixture_static_gamma", "fixture_alpha", "main" };
	struct elfsym *es;
	struct nm_sym s;
	uint64_t start;
	int fd;

	(void)state;
	es = elfsym__open(stripped);
	assert_non_null(es);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		run_nm(pie, fns[i], &s);
		assert_null(elfsym__lookup(es, s.addr, NULL));
		for (uint64_t off = 0; off < s.size; off++) {
			start = 0;
			assert_int_equal(elfsym__fde_start(es, s.addr + off, &start), 0);
			assert_true(start == s.addr);
		}
		/* Past its end: another function (or none), never this one. */
		assert_true(elfsym__fde_start(es, s.addr + s.size, &start) || start != s.addr);
	}
	elfsym__free(es);

	/* A named address is not in the list: only functions no symbol covers. */
	es = elfsym__open(pie);
	assert_non_null(es);
	run_nm(pie, "fixture_alpha", &s);
	assert_int_equal(elfsym__fde_start(es, s.addr, &start), -ENOENT);
	elfsym__free(es);

	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr '%s' '%s'",
		 stripped, tmpl);
	assert_int_equal(system(cmd), 0);
	es = elfsym__open(tmpl);
	assert_non_null(es);
	run_nm(pie, "fixture_static_gamma", &s);
	assert_int_equal(elfsym__fde_start(es, s.addr + 1, &start), -ENOENT);
	elfsym__free(es);
	unlink(tmpl);
	free(pie);
	free(stripped);
}

/*
 * strip -s drops .symtab and keeps .dynsym. A PIE exports no functions of its
 * own (its .dynsym holds only imports), so nothing resolves, but the segments
 * and build id are still there; a stripped library keeps its exports.
 */
static void test_stripped(void **state)
{
	char *pie = fixture("pie"), *stripped = fixture("stripped");
	char *lib = fixture("libfix.so");
	char tmpl[] = "/tmp/bpfprof-test-XXXXXX", cmd[8400];
	struct elfsym *es;
	struct nm_sym s, g;
	uint64_t text_addr, text_off, v;
	int fd;

	struct plt_stub plt[8];

	(void)state;
	es = elfsym__open(stripped);
	assert_non_null(es);
	/* Only the PLT stubs are left to name. */
	assert_int_equal(elfsym__count(es), run_objdump_plt(stripped, plt, 8));
	assert_int_equal(elfsym__bad(es), 0);
	run_nm(pie, "fixture_alpha", &s);
	assert_null(elfsym__lookup(es, s.addr, NULL));
	run_readelf_section(stripped, ".text", &text_addr, &text_off);
	assert_int_equal(elfsym__off_to_vaddr(es, s.addr - text_addr + text_off, &v), 0);
	assert_true(v == s.addr);
	check_build_id(stripped, es);
	check_build_id(pie, es); /* the same id as the unstripped file */
	elfsym__free(es);

	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "strip -s '%s' -o '%s'", lib, tmpl);
	assert_int_equal(system(cmd), 0);
	es = elfsym__open(tmpl);
	assert_non_null(es);
	run_nm(lib, "fixture_lib_alpha", &s);
	assert_resolves(es, s.addr, "fixture_lib_alpha", 0);
	assert_resolves(es, s.addr + s.size - 1, "fixture_lib_alpha", s.size - 1);
	run_nm(lib, "fixture_lib_beta", &s);
	assert_resolves(es, s.addr + 3, "fixture_lib_beta", 3);
	run_nm(lib, "fixture_lib_static_gamma", &g);
	assert_not_sym(es, g.addr, "fixture_lib_static_gamma");
	elfsym__free(es);
	unlink(tmpl);
	free(pie);
	free(stripped);
	free(lib);
}

/*
 * Every stub objdump names in .plt / .plt.sec resolves to the same
 * "name@plt" over its 16 bytes: a plain PIE and non-PIE (lazy .plt), an IBT
 * build (.plt.sec, and .plt holding the lazy-binding halves), and a
 * stripped file, whose PLT stubs are then its only names.
 */
static void test_plt_stubs(void **state)
{
	const char *names[] = { "pie", "nopie", "pie-ibt", "stripped" };
	struct plt_stub plt[16];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		/* .plt.got entries: 8 bytes, 16 in IBT builds (endbr64 first). */
		uint64_t plt_got_size = strcmp(names[i], "pie-ibt") ? 8 : 16;
		char *path = fixture(names[i]);
		struct elfsym *es = elfsym__open(path);
		size_t n = run_objdump_plt(path, plt, 16);
		bool printf_seen = false, got_seen = false;

		assert_non_null(es);
		assert_true(n > 0);
		for (size_t j = 0; j < n; j++) {
			uint64_t size =
				strcmp(plt[j].name, "__cxa_finalize@plt") ? 16 : plt_got_size;

			assert_resolves(es, plt[j].addr, plt[j].name, 0);
			assert_resolves(es, plt[j].addr + size - 1, plt[j].name, size - 1);
			printf_seen |= !strcmp(plt[j].name, "printf@plt");
			got_seen |= size == plt_got_size;
		}
		assert_true(printf_seen);
		/* PIEs call __cxa_finalize through .plt.got (crtstuff takes its address). */
		if (strcmp(names[i], "nopie"))
			assert_true(got_seen);
		assert_int_equal(elfsym__bad(es), 0);
		elfsym__free(es);
		free(path);
	}
}

/* The whole path a profiler takes: ip -> maps -> file offset -> vaddr -> symbol. */
static void test_dlopen_pipeline(void **state)
{
	char *lib = fixture("libfix.so");
	struct procmaps m = { 0 };
	const struct procmap *pm;
	struct elfsym *es;
	uint64_t ip, vaddr, off;
	void *h, *fn;

	(void)state;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = dlsym(h, "fixture_lib_beta");
	assert_non_null(fn);
	ip = (uint64_t)(uintptr_t)fn + 4;
	assert_int_equal(procmaps__read("/proc/self/maps", &m), 0);
	pm = procmaps__find(&m, ip);
	assert_non_null(pm);
	assert_true(procmap__is_file(pm));
	assert_true(pm->perms & PROCMAP_X);
	es = elfsym__open(pm->path);
	assert_non_null(es);
	assert_int_equal(elfsym__off_to_vaddr(es, ip - pm->start + pm->offset, &vaddr), 0);
	assert_string_equal(elfsym__lookup(es, vaddr, &off), "fixture_lib_beta");
	assert_true(off == 4);
	elfsym__free(es);
	procmaps__free(&m);
	dlclose(h);
	free(lib);
}

static void test_libc(void **state)
{
	struct procmaps m = { 0 };
	const struct procmap *pm;
	struct elfsym *es;
	uint64_t ip, vaddr, t0, t1, off;
	const char *name;

	(void)state;
	/* getpid is in libc's .dynsym on every glibc. */
	ip = (uint64_t)(uintptr_t)&getpid;
	assert_int_equal(procmaps__read("/proc/self/maps", &m), 0);
	pm = procmaps__find(&m, ip);
	assert_non_null(pm);
	t0 = now_ns();
	es = elfsym__open(pm->path);
	t1 = now_ns();
	assert_non_null(es);
	print_message("# %s: %zu function symbols in %.2f ms\n", pm->path, elfsym__count(es),
		      (t1 - t0) / 1e6);
	assert_int_equal(elfsym__off_to_vaddr(es, ip - pm->start + pm->offset, &vaddr), 0);
	name = elfsym__lookup(es, vaddr, &off);
	assert_non_null(name);
	assert_true(off == 0);
	/*
	 * glibc defines GLOBAL __getpid and WEAK getpid at one address; the
	 * GLOBAL > WEAK rule picks __getpid. Accept either in case a libc
	 * binds them differently.
	 */
	if (strcmp(name, "__getpid") && strcmp(name, "getpid"))
		fail_msg("getpid resolved to %s", name);
	elfsym__free(es);
	procmaps__free(&m);
}

/* --- corrupted copies ------------------------------------------------------ */

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img load_img(const char *name)
{
	char *path = fixture(name);
	struct img im = { 0 };
	char *buf;
	size_t len;

	assert_int_equal(read_file(path, 64 << 20, &buf, &len), 0);
	im.buf = (uint8_t *)buf;
	im.len = len;
	free(path);
	assert_true(len > sizeof(Elf64_Ehdr));
	assert_int_equal(im.buf[EI_CLASS], ELFCLASS64);
	return im;
}

static Elf64_Ehdr *ehdr(struct img *im)
{
	return (Elf64_Ehdr *)im->buf;
}

static Elf64_Shdr *shdr(struct img *im, size_t i)
{
	return (Elf64_Shdr *)(im->buf + ehdr(im)->e_shoff) + i;
}

static size_t find_sec_type(struct img *im, uint32_t type)
{
	for (size_t i = 1; i < ehdr(im)->e_shnum; i++)
		if (shdr(im, i)->sh_type == type)
			return i;
	fail_msg("no section of type %u", type);
	return 0;
}

static Elf64_Sym *find_sym(struct img *im, const char *name)
{
	Elf64_Shdr *st = shdr(im, find_sec_type(im, SHT_SYMTAB));
	Elf64_Shdr *str = shdr(im, st->sh_link);
	Elf64_Sym *syms = (Elf64_Sym *)(im->buf + st->sh_offset);

	for (size_t i = 0; i < st->sh_size / sizeof(*syms); i++)
		if (!strcmp((char *)im->buf + str->sh_offset + syms[i].st_name, name))
			return &syms[i];
	fail_msg("no symbol %s", name);
	return NULL;
}

/* Opens the first len bytes of im as a file; returns the elfsym or NULL/errno. */
static struct elfsym *open_img(const struct img *im, size_t len, int *err)
{
	char *path = write_temp(im->buf, len);
	struct elfsym *es;

	errno = 0;
	es = elfsym__open(path);
	*err = es ? 0 : errno;
	unlink(path);
	free(path);
	return es;
}

static void expect_errno(const struct img *im, size_t len, int want)
{
	int err;
	struct elfsym *es = open_img(im, len, &err);

	if (es)
		fail_msg("expected errno %d, got a result", want);
	assert_int_equal(err, want);
}

/* A degraded but usable result: the table(s) were skipped, alpha is unknown. */
static struct elfsym *expect_degraded(const struct img *im)
{
	int err;
	struct elfsym *es = open_img(im, im->len, &err);

	if (!es)
		fail_msg("expected a degraded result, got errno %d", err);
	return es;
}

static void test_truncated(void **state)
{
	struct img im = load_img("nopie");
	size_t cuts[] = { 0, 1, 4, 16, 52, 63, 64, 100, 200, 0x400, 0x1000, 0x2000, 0x3000 };
	int err;

	(void)state;
	expect_errno(&im, 0, ENOEXEC);
	expect_errno(&im, 4, ENOEXEC);
	expect_errno(&im, 16, ENOEXEC);
	/* The section header table is at the end: any real truncation loses it. */
	expect_errno(&im, im.len - 1, EINVAL);
	expect_errno(&im, im.len / 2, EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
		struct elfsym *es;

		if (cuts[i] >= im.len)
			continue;
		es = open_img(&im, cuts[i], &err);
		assert_null(es);
		assert_true(err == ENOEXEC || err == EINVAL);
	}
	/* Every length from 0 to 2 KiB and then in 97-byte steps: never a crash. */
	for (size_t len = 0; len < im.len; len += len < 2048 ? 1 : 97) {
		struct elfsym *es = open_img(&im, len, &err);

		if (es) {
			(void)elfsym__lookup(es, 0x401000, NULL);
			elfsym__free(es);
		} else {
			assert_true(err == ENOEXEC || err == EINVAL);
		}
	}
	free(im.buf);
}

static void test_bad_headers(void **state)
{
	struct img im = load_img("nopie");
	Elf64_Ehdr save = *ehdr(&im);
	struct elfsym *es;
	int err;

	(void)state;
	ehdr(&im)->e_shoff = im.len + 4096;
	expect_errno(&im, im.len, EINVAL);
	*ehdr(&im) = save;
	ehdr(&im)->e_shoff = UINT64_MAX - 10;
	expect_errno(&im, im.len, EINVAL);
	*ehdr(&im) = save;
	ehdr(&im)->e_phoff = im.len + 4096;
	expect_errno(&im, im.len, EINVAL);
	*ehdr(&im) = save;
	ehdr(&im)->e_shnum = 0xffff;
	expect_errno(&im, im.len, EINVAL);
	*ehdr(&im) = save;

	ehdr(&im)->e_type = ET_REL;
	expect_errno(&im, im.len, ENOEXEC);
	ehdr(&im)->e_type = ET_CORE;
	expect_errno(&im, im.len, ENOEXEC);
	ehdr(&im)->e_type = ET_NONE;
	expect_errno(&im, im.len, ENOEXEC);
	*ehdr(&im) = save;

	/* Section names are not used: a bad e_shstrndx changes nothing. */
	ehdr(&im)->e_shstrndx = 0xfff0;
	es = open_img(&im, im.len, &err);
	assert_non_null(es);
	assert_true(elfsym__count(es) > 0);
	elfsym__free(es);
	*ehdr(&im) = save;

	/* No section headers at all (e_shnum 0): no symbols, segments still work. */
	ehdr(&im)->e_shnum = 0;
	es = open_img(&im, im.len, &err);
	assert_non_null(es);
	assert_int_equal(elfsym__count(es), 0);
	{
		uint64_t v;
		assert_int_equal(elfsym__off_to_vaddr(es, 0x1000, &v), 0);
		assert_true(v == 0x401000);
	}
	assert_non_null(elfsym__build_id(es, NULL)); /* from PT_NOTE */
	elfsym__free(es);
	*ehdr(&im) = save;

	/* Big-endian claims turn every field into garbage: any answer, no crash. */
	im.buf[EI_DATA] = ELFDATA2MSB;
	es = open_img(&im, im.len, &err);
	if (es)
		(void)elfsym__lookup(es, 0x401126, NULL);
	else
		assert_true(err == ENOEXEC || err == EINVAL);
	elfsym__free(es);
	free(im.buf);
}

static void test_bad_symtab(void **state)
{
	struct img im = load_img("nopie");
	size_t symidx = find_sec_type(&im, SHT_SYMTAB);
	Elf64_Shdr save = *shdr(&im, symidx);
	Elf64_Sym *alpha = find_sym(&im, "fixture_alpha"), alpha_save = *alpha;
	struct elfsym *es;
	struct nm_sym a, b;
	char *path = fixture("nopie");

	(void)state;
	run_nm(path, "fixture_alpha", &a);
	run_nm(path, "fixture_beta", &b);
	free(path);

	static const char *const cases[] = {
		"entsize 0",
		"entsize wrong",
		"size not a multiple",
		"offset past EOF",
		"offset+size overflow",
		"size past EOF",
		"link to itself",
		"link to section 0",
		"link out of range",
		"SHT_NOBITS (stripped debug file)",
		"compressed",
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		Elf64_Shdr *sh = shdr(&im, symidx);

		switch (i) {
		case 0:
			sh->sh_entsize = 0;
			break;
		case 1:
			sh->sh_entsize = 16;
			break;
		case 2:
			sh->sh_size -= 1;
			break;
		case 3:
			sh->sh_offset = im.len + 100;
			break;
		case 4:
			sh->sh_offset = UINT64_MAX - 8;
			break;
		case 5:
			sh->sh_size = (im.len * 2) / 24 * 24;
			break;
		case 6:
			sh->sh_link = (uint32_t)symidx;
			break;
		case 7:
			sh->sh_link = 0;
			break;
		case 8:
			sh->sh_link = 0xfffe;
			break;
		case 9:
			sh->sh_type = SHT_NOBITS;
			break;
		case 10:
			sh->sh_flags |= SHF_COMPRESSED;
			break;
		}
		es = expect_degraded(&im);
		/* nopie exports nothing: with .symtab gone, fixture_* are unknown. */
		assert_null(elfsym__lookup(es, a.addr, NULL));
		assert_null(elfsym__lookup(es, b.addr, NULL));
		if (sh->sh_type == SHT_SYMTAB && elfsym__bad(es) < 1)
			fail_msg("%s: not counted as bad", cases[i]);
		elfsym__free(es);
		*shdr(&im, symidx) = save;
	}

	/* sh_link to a section that is not a string table (.text). */
	shdr(&im, symidx)->sh_link = (uint32_t)find_sec_type(&im, SHT_PROGBITS);
	es = expect_degraded(&im);
	assert_null(elfsym__lookup(es, a.addr, NULL));
	assert_true(elfsym__bad(es) >= 1);
	elfsym__free(es);
	*shdr(&im, symidx) = save;

	/* One bad symbol: skipped and counted, its neighbours still resolve. */
	alpha->st_name = 0x7fffffff;
	es = expect_degraded(&im);
	assert_not_sym(es, a.addr, "fixture_alpha");
	assert_resolves(es, b.addr + 2, "fixture_beta", 2);
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	*alpha = alpha_save;

	alpha->st_name = (uint32_t)shdr(&im, save.sh_link)->sh_size; /* one past the end */
	es = expect_degraded(&im);
	assert_not_sym(es, a.addr, "fixture_alpha");
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	*alpha = alpha_save;

	/*
	 * With alpha gone its bytes may resolve to the size-0 symbol before it
	 * (crt's frame_dummy), extended up to the next symbol; never to alpha.
	 */
	alpha->st_size = UINT64_MAX - alpha->st_value + 1; /* value + size overflows */
	es = expect_degraded(&im);
	assert_not_sym(es, a.addr, "fixture_alpha");
	assert_resolves(es, b.addr, "fixture_beta", 0);
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	*alpha = alpha_save;

	alpha->st_shndx = 0xfeff; /* section index past e_shnum */
	es = expect_degraded(&im);
	assert_not_sym(es, a.addr, "fixture_alpha");
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	*alpha = alpha_save;

	alpha->st_shndx = SHN_ABS; /* not relocatable, not bounded: ignored */
	es = expect_degraded(&im);
	assert_not_sym(es, a.addr, "fixture_alpha");
	assert_int_equal(elfsym__bad(es), 0);
	elfsym__free(es);
	*alpha = alpha_save;

	/* A size-0 symbol extends to the next symbol. */
	alpha->st_size = 0;
	es = expect_degraded(&im);
	assert_resolves(es, a.addr + a.size - 1, "fixture_alpha", a.size - 1);
	elfsym__free(es);
	*alpha = alpha_save;
	free(im.buf);
}

static void test_bad_strtab(void **state)
{
	struct img im = load_img("nopie");
	size_t symidx = find_sec_type(&im, SHT_SYMTAB);
	Elf64_Shdr *str = shdr(&im, shdr(&im, symidx)->sh_link);
	uint8_t *s = im.buf + str->sh_offset;
	struct elfsym *es, *ref;
	int err;

	(void)state;
	ref = open_img(&im, im.len, &err);
	assert_non_null(ref);

	/* Unterminated: the last name is lost, the rest survive. */
	s[str->sh_size - 1] = 'A';
	es = expect_degraded(&im);
	assert_true(elfsym__count(es) + 1 >= elfsym__count(ref));
	assert_true(elfsym__count(es) <= elfsym__count(ref));
	elfsym__free(es);

	/* Not a single NUL: the table is unusable (the PLT stubs, named from
	 * .dynsym, remain). */
	memset(s, 'A', str->sh_size);
	es = expect_degraded(&im);
	{
		struct plt_stub plt[8];

		assert_int_equal(elfsym__count(es), run_objdump_plt(fixture_path("nopie"), plt, 8));
	}
	assert_true(elfsym__bad(es) >= 1);
	elfsym__free(es);
	elfsym__free(ref);
	free(im.buf);
}

/* Finds the NT_GNU_BUILD_ID note header in the image (name "GNU"). */
static uint32_t *find_build_id_note(struct img *im)
{
	for (size_t off = 0; off + 16 <= im->len; off += 4) {
		uint32_t *n = (uint32_t *)(im->buf + off);

		if (n[0] == 4 && n[1] == 20 && n[2] == NT_GNU_BUILD_ID && !memcmp(&n[3], "GNU", 4))
			return n;
	}
	fail_msg("no build id note");
	return NULL;
}

static void test_bad_notes(void **state)
{
	struct img im = load_img("nopie");
	uint32_t *note = find_build_id_note(&im), save[3];
	static const uint32_t descsz[] = { 0, 65, 0xffffffffu, 0xfffffff0u, 4096 };
	struct elfsym *es;
	size_t len;

	(void)state;
	memcpy(save, note, sizeof(save));
	for (size_t i = 0; i < ARRAY_SIZE(descsz); i++) {
		note[1] = descsz[i];
		es = expect_degraded(&im);
		assert_null(elfsym__build_id(es, &len));
		assert_int_equal(len, 0);
		assert_true(elfsym__count(es) > 0);
		elfsym__free(es);
	}
	memcpy(note, save, sizeof(save));
	note[0] = 0xfffffffdu; /* namesz overflowing the alignment arithmetic */
	es = expect_degraded(&im);
	assert_null(elfsym__build_id(es, NULL));
	elfsym__free(es);
	memcpy(note, save, sizeof(save));
	memcpy(&note[3], "GNX", 4);
	es = expect_degraded(&im);
	assert_null(elfsym__build_id(es, NULL));
	elfsym__free(es);
	free(im.buf);
}

static void test_not_elf(void **state)
{
	static const char text[] = "this is not an ELF file, just text\n";
	static const uint8_t ttf[] = { 0x00, 0x01, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x80,
				       0x00, 0x03, 0x00, 0x40, 'G',  'D',  'E',	 'F' };
	struct img im = { (uint8_t *)text, sizeof(text) - 1 };
	struct elfsym *es;
	int fd;

	(void)state;
	expect_errno(&im, im.len, ENOEXEC);
	im.buf = (uint8_t *)ttf;
	im.len = sizeof(ttf);
	expect_errno(&im, im.len, ENOEXEC);
	/* Magic alone is not enough. */
	im.buf = (uint8_t *)"\x7f"
			    "ELF";
	im.len = 4;
	expect_errno(&im, im.len, ENOEXEC);

	errno = 0;
	assert_null(elfsym__open("/dev/null"));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elfsym__open("/tmp"));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elfsym__open("/nonexistent/file"));
	assert_int_equal(errno, ENOENT);
	if (!access("/usr/lib/locale/locale-archive", R_OK)) {
		errno = 0;
		assert_null(elfsym__open("/usr/lib/locale/locale-archive"));
		assert_int_equal(errno, ENOEXEC);
	}
	errno = 0;
	assert_null(elfsym__open_fd(-1));
	assert_int_equal(errno, EBADF);

	/* The fd is neither closed nor moved by open_fd. */
	fd = open(fixture_path("pie"), O_RDONLY);
	assert_true(fd >= 0);
	es = elfsym__open_fd(fd);
	assert_non_null(es);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_int_equal(fcntl(fd, F_GETFD), 0);
	close(fd);
	elfsym__free(es);

	elfsym__free(NULL);
	assert_null(elfsym__lookup(NULL, 0x1000, NULL));
	assert_int_equal(elfsym__count(NULL), 0);
	assert_null(elfsym__build_id(NULL, NULL));
	{
		uint64_t v;
		assert_int_equal(elfsym__off_to_vaddr(NULL, 0, &v), -ENOENT);
	}
}

/*
 * A stop request (SIGINT, SIGTERM) ends the reading of any file a grace
 * period later: reads in that period go on, later ones give up, ECANCELED.
 */
static void test_stop_gives_up(void **state)
{
	struct timespec ts = { BUDGET_STOP_GRACE_NS / 1000000000ull,
			       (long)(BUDGET_STOP_GRACE_NS % 1000000000ull) + 50 * 1000 * 1000 };
	struct elfsym *es;

	(void)state;
	budget__stop();
	es = elfsym__open(fixture_path("pie"));
	assert_non_null(es);
	elfsym__free(es);
	nanosleep(&ts, NULL);
	errno = 0;
	assert_null(elfsym__open(fixture_path("pie")));
	assert_int_equal(errno, ECANCELED);
	budget__unstop();
	es = elfsym__open(fixture_path("pie"));
	assert_non_null(es);
	elfsym__free(es);
}

/*
 * nopie with its .symtab replaced by n function symbols one byte apart, the
 * i-th named by the string table from offset 1 + (i * 61 % span) on: names
 * overlapping in one run of `run` 'A's (a tenant needs no more bytes to
 * name its symbols with long strings).
 */
static struct img overlapping_names(size_t n, size_t run, size_t span, uint64_t *first)
{
	struct img im = load_img("nopie");
	size_t symidx = find_sec_type(&im, SHT_SYMTAB), text = 0;
	size_t str_off, sym_off, len;
	Elf64_Sym *syms;
	uint8_t *buf;

	for (size_t i = 1; i < ehdr(&im)->e_shnum && !text; i++)
		if (shdr(&im, i)->sh_type == SHT_PROGBITS &&
		    (shdr(&im, i)->sh_flags & SHF_EXECINSTR))
			text = i;
	assert_true(text > 0);
	str_off = (im.len + 7) & ~(size_t)7;
	sym_off = (str_off + run + 2 + 7) & ~(size_t)7;
	len = sym_off + (n + 1) * sizeof(Elf64_Sym);
	buf = calloc(1, len);
	assert_non_null(buf);
	memcpy(buf, im.buf, im.len);
	free(im.buf);
	im.buf = buf;
	im.len = len;
	memset(buf + str_off + 1, 'A', run);
	syms = (Elf64_Sym *)(buf + sym_off);
	for (size_t i = 1; i <= n; i++) {
		syms[i].st_name = (uint32_t)(1 + (i * 61) % span);
		syms[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i].st_shndx = (uint16_t)text;
		syms[i].st_value = shdr(&im, text)->sh_addr + i;
		syms[i].st_size = 1;
	}
	shdr(&im, shdr(&im, symidx)->sh_link)->sh_offset = str_off;
	shdr(&im, shdr(&im, symidx)->sh_link)->sh_size = run + 2;
	shdr(&im, symidx)->sh_offset = sym_off;
	shdr(&im, symidx)->sh_size = (n + 1) * sizeof(Elf64_Sym);
	*first = syms[1].st_value;
	return im;
}

/*
 * One file's symbols have caps of their own (elfsym.h): a name is kept to
 * ELFSYM_MAX_NAME bytes (2,048 symbols naming suffixes of a 64 KiB string
 * held 64 MiB of names, not 8), and past ELFSYM_MAX_BYTES the file is
 * refused (40,000 such symbols made a 2.6 MB file hold 1.3 GB).
 */
static void test_one_file_has_its_caps(void **state)
{
	uint64_t first, off;
	struct img im = overlapping_names(2048, 65536, 60000, &first);
	struct elfsym *es;
	const char *name;
	int err;

	(void)state;
	es = open_img(&im, im.len, &err);
	assert_non_null(es);
	assert_true(elfsym__count(es) >= 2048);
	assert_true(elfsym__names_cut(es) >= 2000);
	assert_true(elfsym__bytes(es) < 2048 * (ELFSYM_MAX_NAME + 64) + (1u << 20));
	/* 65,475 'A's in the file: the first 4,096 kept. */
	name = elfsym__lookup(es, first, &off);
	assert_non_null(name);
	assert_int_equal(strlen(name), ELFSYM_MAX_NAME);
	assert_int_equal(strspn(name, "A"), ELFSYM_MAX_NAME);
	elfsym__free(es);
	free(im.buf);

	im = overlapping_names(40000, 65536, 60000, &first);
	es = open_img(&im, im.len, &err);
	if (es)
		fail_msg("read: %zu bytes of symbols", elfsym__bytes(es));
	assert_int_equal(err, E2BIG);
	free(im.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_stripped_fde_start),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_shared_lib),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_plt_stubs),
		cmocka_unit_test(test_dlopen_pipeline),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bad_symtab),
		cmocka_unit_test(test_bad_strtab),
		cmocka_unit_test(test_bad_notes),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_stop_gives_up),
		cmocka_unit_test(test_one_file_has_its_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
