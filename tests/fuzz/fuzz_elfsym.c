// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_elfsym.c - libFuzzer target for the ELF symbol reader. The input is
 * written to a memfd (elfsym reads through an fd, like it reads mapped
 * files), then symbols, segments and the build id are exercised.
 *
 * Seeds in corpus/elfsym/: tiny ELFs (a few KB) of three functions and a
 * _start, built with
 *   cc -Os -nostdlib -fno-asynchronous-unwind-tables -Wl,--build-id
 *      -Wl,-z,noseparate-code -Wl,-z,max-page-size=16 -Wl,-z,common-page-size=16
 * as ET_EXEC (-no-pie -Wl,-n), ET_DYN (-shared), a stripped PIE, a 32-bit
 * (-m32) executable, a truncated .so, and a non-ELF text file; plus copies of
 * tiny_exec with zlib- and zstd-compressed .symtab/.strtab (SHF_COMPRESSED),
 * one whose compressed header claims 1 TiB, one with a .gnu_debuglink, and
 * a stripped one carrying its symbols as MiniDebugInfo (.gnu_debugdata);
 * and noshdr_go, an executable without section headers whose read-only
 * segment holds Go-header lookalikes and then a Go 1.20 pc-line table (the
 * corpus/gopclntab/go120 one), found by its header.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/elfsym.h"

#include "fuzz_memfd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(struct elfsym *es, uint64_t addr)
{
	uint64_t off = 0, off2 = 0;
	const char *name = elfsym__lookup(es, addr, &off);
	const char *pretty = elfsym__lookup_demangled(es, addr, &off2);

	if (name && (off > addr || !name[0]))
		abort();
	if ((name == NULL) != (pretty == NULL) || (name && (!pretty[0] || off != off2)))
		abort();
	/* An unnamed function's start (.eh_frame) is at or below the address. */
	if (!elfsym__fde_start(es, addr, &off) && off > addr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym *es;
	size_t len;
	int memfd;
	uint64_t v;

	memfd = fuzz_memfd("fuzz_elfsym", data, size);
	es = elfsym__open_fd(memfd);
	if (!es) {
		if (errno != ENOEXEC && errno != EINVAL && errno != ENOMEM)
			abort();
		return 0;
	}
	for (size_t i = 0; i + 8 <= size && i < 512; i += 8) {
		memcpy(&v, data + i, 8);
		check(es, v);
		check(es, v & 0xffffff);
		if (!elfsym__off_to_vaddr(es, v & 0xffffff, &v))
			check(es, v);
	}
	for (uint64_t a = 0; a < 0x2000; a += 0x11) {
		check(es, a);
		check(es, a + 0x400000);
		if (!elfsym__off_to_vaddr(es, a, &v))
			check(es, v);
	}
	if (elfsym__build_id(es, &len) && (len < 1 || len > 64))
		abort();
	{
		uint32_t crc;
		const char *link = elfsym__debuglink(es, &crc);

		if (link && (!link[0] || strchr(link, '/')))
			abort();
	}
	(void)elfsym__has_symtab(es);
	(void)elfsym__has_debugdata(es);
	(void)elfsym__bytes(es);
	/* The in-memory reader (MiniDebugInfo uses it) sees the same file. */
	{
		struct elfsym *m = elfsym__open_mem(data, size);

		if (m && elfsym__count(m) != elfsym__count(es))
			abort();
		elfsym__free(m);
	}
	(void)elfsym__count(es);
	(void)elfsym__type(es);
	elfsym__free(es);
	return 0;
}
