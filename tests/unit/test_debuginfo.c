// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_debuginfo.c - names for stripped binaries and readable names:
 * build-id notes and .gnu_debuglink parsing, the debug file search (build id,
 * debug link with CRC, container root before host root) on fixtures built by
 * the Makefile with objcopy --only-keep-debug, MiniDebugInfo, compressed
 * symbol tables (zlib, zstd) and decompression bombs, and demangling.
 */
#include "testutil.h"

#include <elf.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include "proc/mountinfo.h"
#include "sym/debuginfo.h"
#include "sym/demangle.h"
#include "proc/elfnote.h"
#include "sym/elfsym.h"
#include "proc/safeopen.h"

static char tmp[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/bpfprof-debuginfo-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("command failed: %s", cmd);
}

/* --- parsers --------------------------------------------------------------- */

static void test_build_id_note(void **state)
{
	uint8_t notes[64] = { 0 }, id[BUILD_ID_MAX];
	uint32_t hdr[3];
	char hex[32];

	(void)state;
	/* An ABI tag note first, then the build id. */
	hdr[0] = 4, hdr[1] = 16, hdr[2] = 1;
	memcpy(notes, hdr, 12);
	memcpy(notes + 12, "GNU", 4);
	hdr[0] = 4, hdr[1] = 4, hdr[2] = 3;
	memcpy(notes + 32, hdr, 12);
	memcpy(notes + 44, "GNU", 4);
	memcpy(notes + 48, "\xab\xcd\xef\x01", 4);
	assert_int_equal(elfnote__build_id(notes, 52, 4, id), 4);
	assert_memory_equal(id, "\xab\xcd\xef\x01", 4);
	elfnote__build_id_hex(id, 4, hex, sizeof(hex));
	assert_string_equal(hex, "ab/cdef01");
	/* Cut anywhere: nothing, no overread (ASan watches). */
	for (size_t n = 0; n < 52; n++)
		assert_int_equal(elfnote__build_id(notes, n, 4, id), 0);
	/* Sizes that overflow, or a descsz over 64. */
	hdr[0] = 4, hdr[1] = 0xffffffff, hdr[2] = 3;
	memcpy(notes + 32, hdr, 12);
	assert_int_equal(elfnote__build_id(notes, 52, 4, id), 0);
	hdr[0] = 0xfffffff0, hdr[1] = 4, hdr[2] = 3;
	memcpy(notes + 32, hdr, 12);
	assert_int_equal(elfnote__build_id(notes, 52, 4, id), 0);
	hdr[0] = 4, hdr[1] = 0, hdr[2] = 3;
	memcpy(notes + 32, hdr, 12);
	assert_int_equal(elfnote__build_id(notes, 52, 4, id), 0);
	assert_int_equal(elfnote__build_id(notes, 52, 3, id), 0); /* bad alignment */
}

static void test_debuglink_parse(void **state)
{
	char name[DEBUGLINK_NAME_MAX + 1], big[300];
	uint32_t crc;

	(void)state;
	/* "prog.debug\0" + pad to 12, then the CRC (little endian here). */
	assert_int_equal(
		elfnote__debuglink("prog.debug\0\0\x78\x56\x34\x12", 16, false, name, &crc), 0);
	assert_string_equal(name, "prog.debug");
	assert_int_equal(crc, 0x12345678);
	assert_int_equal(elfnote__debuglink("prog.debug\0\0\x12\x34\x56\x78", 16, true, name, &crc),
			 0);
	assert_int_equal(crc, 0x12345678);
	/* No CRC, no NUL, empty name, path tricks, control characters. */
	assert_int_equal(elfnote__debuglink("prog.debug\0\0\x78\x56", 14, false, name, &crc),
			 -EINVAL);
	assert_int_equal(elfnote__debuglink("prog.debug", 10, false, name, &crc), -EINVAL);
	assert_int_equal(elfnote__debuglink("\0\0\0\0\1\2\3\4", 8, false, name, &crc), -EINVAL);
	assert_int_equal(elfnote__debuglink("../x\0\0\0\0\1\2\3\4", 12, false, name, &crc),
			 -EINVAL);
	assert_int_equal(elfnote__debuglink("..\0\0\1\2\3\4", 8, false, name, &crc), -EINVAL);
	assert_int_equal(elfnote__debuglink("a/b\0\1\2\3\4", 8, false, name, &crc), -EINVAL);
	assert_int_equal(elfnote__debuglink("a\nb\0\1\2\3\4", 8, false, name, &crc), -EINVAL);
	memset(big, 'a', sizeof(big));
	big[260] = '\0';
	assert_int_equal(elfnote__debuglink(big, sizeof(big), false, name, &crc), -EINVAL);
}

static void test_demangle(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "_ZNK7fixture3BoxIiE3getEi", "fixture::Box<int>::get(int) const" },
		{ "_ZN2wl11AccumulatorIdE4spinEm", "wl::Accumulator<double>::spin(unsigned long)" },
		{ "_ZN3foo3bar17h0123456789abcdefE", "foo::bar" },	       /* Rust legacy */
		{ "_RNvNtCs1cm6UkZBZ3Y_4core3fmt5write", "core::fmt::write" }, /* Rust v0 */
		{ "_ZN5tokio7runtime4task3raw7RawTask4poll17h5a1b2c3d4e5f6a7bE",
		  "tokio::runtime::task::raw::RawTask::poll" },
		{ "_Z3fooPKc.cold", "foo(char const*) [clone .cold]" },
	};
	char *out, *long_name;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		out = demangle__name(cases[i].in);
		assert_non_null(out);
		assert_string_equal(out, cases[i].out);
		free(out);
	}
	/* Not mangled, or not valid: NULL, the caller keeps the name. */
	assert_null(demangle__name("main"));
	assert_null(demangle__name("_Z"));
	assert_null(demangle__name("_Zgarbage!!"));
	assert_null(demangle__name(NULL));
	assert_false(demangle__is_mangled("__Z1fv"));
	/* Too long to bother. */
	long_name = malloc(DEMANGLE_MAX_IN + 10);
	assert_non_null(long_name);
	memcpy(long_name, "_ZN", 3);
	memset(long_name + 3, '1', DEMANGLE_MAX_IN + 5);
	long_name[DEMANGLE_MAX_IN + 8] = '\0';
	assert_null(demangle__name(long_name));
	free(long_name);
}

static void test_lookup_demangled_fixture(void **state)
{
	char *path = strdup(fixture_path("cxx"));
	struct elfsym *es = elfsym__open(path);
	uint64_t get = nm_addr(path, "_ZNK7fixture3BoxIiE3getEi");
	uint64_t twice_i = nm_addr(path, "_ZN7fixture5twiceEi");
	uint64_t twice_d = nm_addr(path, "_ZN7fixture5twiceEd");

	(void)state;
	assert_non_null(es);
	assert_string_equal(elfsym__lookup(es, get, NULL), "_ZNK7fixture3BoxIiE3getEi");
	assert_string_equal(elfsym__lookup_demangled(es, get, NULL),
			    "fixture::Box<int>::get(int) const");
	/* Cached: the same pointer the second time. */
	assert_ptr_equal(elfsym__lookup_demangled(es, get + 1, NULL),
			 elfsym__lookup_demangled(es, get, NULL));
	/* Overloads stay apart. */
	assert_string_equal(elfsym__lookup_demangled(es, twice_i, NULL), "fixture::twice(int)");
	assert_string_equal(elfsym__lookup_demangled(es, twice_d, NULL), "fixture::twice(double)");
	assert_string_equal(elfsym__lookup_demangled(es, nm_addr(path, "main"), NULL), "main");
	elfsym__free(es);
	free(path);
}

/* --- MiniDebugInfo, compressed sections -------------------------------------- */

static void test_minidebuginfo(void **state)
{
	char *full = strdup(fixture_path("dbgprog.full"));
	struct elfsym *mini = elfsym__open(fixture_path("minidebug"));
	struct elfsym *plain;
	uint64_t gamma = nm_addr(full, "fixture_static_gamma");

	(void)state;
	assert_non_null(mini);
	assert_true(elfsym__has_debugdata(mini));
	assert_int_equal(elfsym__bad(mini), 0);
	/* A local function: only the xz-compressed symbol table has it. */
	assert_string_equal(elfsym__lookup(mini, gamma, NULL), "fixture_static_gamma");
	assert_string_equal(elfsym__lookup(mini, nm_addr(full, "fixture_alpha"), NULL),
			    "fixture_alpha");
	/* The same binary stripped without it does not. */
	sh("strip -s -R .gnu_debugdata '%s' -o %s/nodata", fixture_path("minidebug"), tmp);
	{
		char p[128];

		snprintf(p, sizeof(p), "%s/nodata", tmp);
		plain = elfsym__open(p);
	}
	assert_non_null(plain);
	assert_null(elfsym__lookup(plain, gamma, NULL));
	elfsym__free(plain);
	elfsym__free(mini);
	free(full);
}

/* Reads a whole file. */
static uint8_t *slurp(const char *path, size_t *len)
{
	char *buf;

	assert_int_equal(read_file(path, 64u << 20, &buf, len), 0);
	return (uint8_t *)buf;
}

static void spit(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static Elf64_Shdr *find_section(uint8_t *elf, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(elf + eh->e_shoff);
	const char *names = (const char *)elf + sh[eh->e_shstrndx].sh_offset;

	for (int i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, name))
			return &sh[i];
	fail_msg("no section %s", name);
	return NULL;
}

/*
 * Rewrites sections of an ELF64 file as SHF_COMPRESSED (type 1 zlib, 2 zstd),
 * appending Chdr + data at the end. claim != 0 overrides ch_size (a bomb).
 */
static void compress_sections(const char *in, const char *out, const char *const *names, int type,
			      uint64_t claim)
{
	size_t len, cap;
	uint8_t *elf = slurp(in, &len), *nelf;

	cap = len * 3 + 4096;
	nelf = calloc(1, cap);
	assert_non_null(nelf);
	memcpy(nelf, elf, len);
	for (const char *const *n = names; *n; n++) {
		Elf64_Shdr *sh = find_section(nelf, *n);
		Elf64_Chdr ch = { .ch_type = type,
				  .ch_size = claim ? claim : sh->sh_size,
				  .ch_addralign = sh->sh_addralign };
		size_t clen = ZSTD_compressBound(sh->sh_size) + compressBound(sh->sh_size);
		uint8_t *c = malloc(clen);

		assert_non_null(c);
		if (type == ELFCOMPRESS_ZLIB) {
			uLongf z = clen;

			assert_int_equal(compress2(c, &z, nelf + sh->sh_offset, sh->sh_size, 9),
					 Z_OK);
			clen = z;
		} else {
			clen = ZSTD_compress(c, clen, nelf + sh->sh_offset, sh->sh_size, 3);
			assert_false(ZSTD_isError(clen));
		}
		len = (len + 7) & ~7ul;
		assert_true(len + sizeof(ch) + clen <= cap);
		memcpy(nelf + len, &ch, sizeof(ch));
		memcpy(nelf + len + sizeof(ch), c, clen);
		sh->sh_offset = len;
		sh->sh_size = sizeof(ch) + clen;
		sh->sh_flags |= SHF_COMPRESSED;
		sh->sh_addralign = 8;
		len += sizeof(ch) + clen;
		free(c);
	}
	spit(out, nelf, len);
	free(elf);
	free(nelf);
}

static void test_compressed_symtab(void **state)
{
	static const char *const tables[] = { ".symtab", ".strtab", NULL };
	char *pie = strdup(fixture_path("pie")), out[128];
	uint64_t gamma = nm_addr(pie, "fixture_static_gamma");

	(void)state;
	for (int type = ELFCOMPRESS_ZLIB; type <= 2; type++) {
		struct elfsym *es;

		snprintf(out, sizeof(out), "%s/pie.z%d", tmp, type);
		compress_sections(pie, out, tables, type, 0);
		es = elfsym__open(out);
		assert_non_null(es);
		assert_int_equal(elfsym__bad(es), 0);
		assert_true(elfsym__has_symtab(es));
		assert_string_equal(elfsym__lookup(es, gamma, NULL), "fixture_static_gamma");
		elfsym__free(es);
	}
	free(pie);
}

static void test_decompression_bombs(void **state)
{
	static const char *const symtab[] = { ".symtab", NULL };
	char *pie = strdup(fixture_path("pie")), out[128];
	uint64_t gamma = nm_addr(pie, "fixture_static_gamma");
	uint64_t alpha = nm_addr(pie, "fixture_alpha");
	const uint64_t claims[] = { 1ull << 40, (64ull << 20) + 1, 100 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(claims); i++) {
		for (int type = ELFCOMPRESS_ZLIB; type <= 2; type++) {
			struct elfsym *es;

			snprintf(out, sizeof(out), "%s/bomb.%zu.%d", tmp, i, type);
			/* A huge claimed size is refused before allocating; a small
			 * one (data inflates past it) fails to inflate. */
			compress_sections(pie, out, symtab, type, claims[i]);
			es = elfsym__open(out);
			assert_non_null(es);
			assert_true(elfsym__bad(es) >= 1);
			assert_null(elfsym__lookup(es, gamma, NULL));
			/* .dynsym still works: the rest of the file is fine. */
			(void)alpha;
			elfsym__free(es);
		}
	}
	free(pie);
}

static void test_debugdata_bomb(void **state)
{
	size_t n = 80u << 20, clen = 0;
	uint8_t *zeros = calloc(1, n), *xz = malloc(1u << 20);
	char bomb[128], bin[128];
	struct elfsym *es;

	(void)state;
	assert_non_null(zeros);
	assert_non_null(xz);
	/* 80 MiB of zeros: a few KiB of xz, more than the 64 MiB we inflate. */
	assert_int_equal(
		lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, NULL, zeros, n, xz, &clen, 1u << 20),
		LZMA_OK);
	snprintf(bomb, sizeof(bomb), "%s/bomb.xz", tmp);
	spit(bomb, xz, clen);
	snprintf(bin, sizeof(bin), "%s/bombbin", tmp);
	sh("strip -s '%s' -o %s.s && objcopy --add-section .gnu_debugdata=%s %s.s %s",
	   fixture_path("pie"), bin, bomb, bin, bin);
	es = elfsym__open(bin);
	assert_non_null(es);
	assert_true(elfsym__has_debugdata(es));
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	/* Garbage that is not xz at all. */
	spit(bomb, "not xz data", 11);
	sh("objcopy --update-section .gnu_debugdata=%s %s", bomb, bin);
	es = elfsym__open(bin);
	assert_non_null(es);
	assert_int_equal(elfsym__bad(es), 1);
	elfsym__free(es);
	free(zeros);
	free(xz);
}

/* --- the debug file search ------------------------------------------------- */

struct tree {
	char dir[160];
	int fd;
};

static struct mountinfo self_mi;

static void tree_new(struct tree *t, const char *name)
{
	if (!self_mi.nr)
		assert_int_equal(mountinfo__read("/proc/self/mountinfo", &self_mi), 0);
	snprintf(t->dir, sizeof(t->dir), "%s/%s", tmp, name);
	sh("mkdir -p %s/bin %s/usr/lib/debug", t->dir, t->dir);
	sh("cp '%s' %s/bin/dbgprog", fixture_path("dbgprog"), t->dir);
	t->fd = safeopen__dir(t->dir);
	assert_true(t->fd >= 0);
}

static void tree_free(struct tree *t)
{
	close(t->fd);
}

/* The build-id path of the dbgprog fixture, relative to a debug dir. */
static void build_id_rel(char *buf, size_t size)
{
	struct elfsym *es = elfsym__open(fixture_path("dbgprog"));
	const uint8_t *id;
	char hex[160];
	size_t len;

	assert_non_null(es);
	id = elfsym__build_id(es, &len);
	assert_non_null(id);
	elfnote__build_id_hex(id, len, hex, sizeof(hex));
	snprintf(buf, size, ".build-id/%s.debug", hex);
	elfsym__free(es);
}

/* Runs the search for /bin/dbgprog with these roots; returns where it was found ("" if not). */
static const char *search(const struct tree *container, const struct tree *host, bool *gamma_ok)
{
	static char found[512];
	char path[256];
	struct elfsym *bin, *dbg;
	struct stat st;
	char *full = strdup(fixture_path("dbgprog.full"));
	uint64_t gamma = nm_addr(full, "fixture_static_gamma");
	struct debuginfo_query q = { 0 };

	snprintf(path, sizeof(path), "%s/bin/dbgprog", container->dir);
	bin = elfsym__open(path);
	assert_non_null(bin);
	assert_false(elfsym__has_symtab(bin));
	assert_null(elfsym__lookup(bin, gamma, NULL));
	assert_int_equal(stat(path, &st), 0);
	q.bin = bin;
	q.path = "/bin/dbgprog";
	q.dev = st.st_dev;
	q.ino = st.st_ino;
	/* Both trees live on the test machine's own mounts: the agent's table knows them. */
	q.roots[0].fd = container->fd;
	q.roots[0].host_mi = &self_mi;
	q.roots[1].fd = host ? host->fd : -1;
	q.roots[1].host_mi = &self_mi;
	found[0] = '\0';
	dbg = debuginfo__find(&q, found, sizeof(found));
	*gamma_ok = false;
	if (dbg) {
		assert_int_equal(elfsym__merge(bin, dbg), 0);
		*gamma_ok = elfsym__lookup(bin, gamma, NULL) &&
			    !strcmp(elfsym__lookup(bin, gamma, NULL), "fixture_static_gamma");
	} else {
		assert_int_equal(errno, ENOENT);
	}
	elfsym__free(bin);
	free(full);
	return found;
}

static void test_search_by_build_id(void **state)
{
	struct tree c, h;
	char rel[256];
	bool ok;

	(void)state;
	build_id_rel(rel, sizeof(rel));
	tree_new(&c, "bid_c");
	tree_new(&h, "bid_h");
	assert_string_equal(search(&c, &h, &ok), "");
	/* In the host's /usr/lib/debug/.build-id (a -dbgsym package). */
	sh("mkdir -p $(dirname %s/usr/lib/debug/%s) && cp '%s' %s/usr/lib/debug/%s", h.dir, rel,
	   fixture_path("dbgprog.debug"), h.dir, rel);
	assert_non_null(strstr(search(&c, &h, &ok), rel));
	assert_true(ok);
	assert_null(strstr(search(&c, &h, &ok), "(process root)"));
	/* The container's own copy is preferred. */
	sh("mkdir -p $(dirname %s/usr/lib/debug/%s) && cp '%s' %s/usr/lib/debug/%s", c.dir, rel,
	   fixture_path("dbgprog.debug"), c.dir, rel);
	assert_non_null(strstr(search(&c, &h, &ok), "(process root)"));
	assert_true(ok);
	/* A file of another build at that path is refused: the host's is used. */
	sh("cp '%s' %s/usr/lib/debug/%s", fixture_path("libfix.so"), c.dir, rel);
	assert_null(strstr(search(&c, &h, &ok), "(process root)"));
	assert_true(ok);
	/* A relative symlink (Fedora's layout) is followed, inside the root. */
	sh("rm %s/usr/lib/debug/%s && cp '%s' %s/usr/lib/debug/bin/dbgprog-1.0.debug 2>/dev/null ||"
	   " (mkdir -p %s/usr/lib/debug/bin && cp '%s' %s/usr/lib/debug/bin/dbgprog-1.0.debug)",
	   c.dir, rel, fixture_path("dbgprog.debug"), c.dir, c.dir, fixture_path("dbgprog.debug"),
	   c.dir);
	sh("ln -s ../../bin/dbgprog-1.0.debug %s/usr/lib/debug/%s", c.dir, rel);
	assert_non_null(strstr(search(&c, NULL, &ok), "(process root)"));
	assert_true(ok);
	tree_free(&c);
	tree_free(&h);
}

static void test_search_by_debuglink(void **state)
{
	struct tree c, h;
	bool ok;

	(void)state;
	tree_new(&c, "dl_c");
	tree_new(&h, "dl_h");
	/* Beside the binary. */
	sh("cp '%s' %s/bin/dbgprog.debug", fixture_path("dbgprog.debug"), c.dir);
	assert_string_equal(search(&c, &h, &ok), "(process root) /bin/dbgprog.debug");
	assert_true(ok);
	/* A CRC mismatch (one byte more) is refused. */
	sh("echo >> %s/bin/dbgprog.debug", c.dir);
	assert_string_equal(search(&c, &h, &ok), "");
	/* In .debug/ beside it. */
	sh("mkdir %s/bin/.debug && cp '%s' %s/bin/.debug/dbgprog.debug", c.dir,
	   fixture_path("dbgprog.debug"), c.dir);
	assert_string_equal(search(&c, &h, &ok), "(process root) /bin/.debug/dbgprog.debug");
	assert_true(ok);
	sh("rm -r %s/bin/.debug", c.dir);
	/* Under the host's /usr/lib/debug/DIR. */
	sh("mkdir -p %s/usr/lib/debug/bin && cp '%s' %s/usr/lib/debug/bin/dbgprog.debug", h.dir,
	   fixture_path("dbgprog.debug"), h.dir);
	assert_string_equal(search(&c, &h, &ok), "/usr/lib/debug/bin/dbgprog.debug");
	assert_true(ok);
	/* ...but not beside the binary's path on the host: that is another file system. */
	sh("rm %s/usr/lib/debug/bin/dbgprog.debug && cp '%s' %s/bin/dbgprog.debug", h.dir,
	   fixture_path("dbgprog.debug"), h.dir);
	assert_string_equal(search(&c, &h, &ok), "");
	tree_free(&c);
	tree_free(&h);
}

static void test_crc32(void **state)
{
	char path[128];
	int fd;
	uint32_t crc;

	(void)state;
	snprintf(path, sizeof(path), "%s/crc", tmp);
	spit(path, "123456789", 9);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(debuginfo__crc32(fd, 100, &crc), 0);
	assert_int_equal(crc, 0xcbf43926); /* the CRC-32 check value */
	assert_int_equal(debuginfo__crc32(fd, 5, &crc), -EFBIG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_id_note),
		cmocka_unit_test(test_debuglink_parse),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_lookup_demangled_fixture),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_compressed_symtab),
		cmocka_unit_test(test_decompression_bombs),
		cmocka_unit_test(test_debugdata_bomb),
		cmocka_unit_test(test_search_by_build_id),
		cmocka_unit_test(test_search_by_debuglink),
		cmocka_unit_test(test_crc32),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
