// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_dwinline.c - libFuzzer target for the inlined frames and lines read
 * from a file's DWARF (dwinline: units and their scopes through libdw, line
 * programs through lineprog). The input is written to a memfd, as a mapped
 * file is read through an fd; addresses are asked for across its executable
 * sections, each answer checked (1..DWINLINE_MAX_FRAMES frames, strings
 * that end), and asked again (the cached answer must be the same).
 *
 * Seeds in corpus/dwinline/: the annotation seeds (DWARF 4, 5, compressed,
 * a debug file, no DWARF, not ELF, an unterminated string section) and tiny
 * -O2 ELFs of a function with two always-inlined callees (clang DWARF 5 and
 * gcc DWARF 4, one with compressed sections).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/elffile.h"
#include "sym/dwinline.h"

#include "fuzz_memfd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(struct dwinline *d, uint64_t addr)
{
	const struct dwinline_frame *f;
	struct budget b;
	size_t n, n2, len = 0;

	budget__start(&b, 1000ull * 1000 * 1000);
	if (dwinline__frames(d, addr, &b, &f, &n))
		return;
	if (!n || n > DWINLINE_MAX_FRAMES)
		abort();
	for (size_t i = 0; i < n; i++)
		len += (f[i].name ? strlen(f[i].name) : 0) + (f[i].file ? strlen(f[i].file) : 0);
	if (dwinline__frames(d, addr, &b, &f, &n2) || n2 != n)
		abort();
	(void)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwinline *d;
	int memfd;
	Elf_Scn *scn = NULL;
	Elf *elf;

	memfd = fuzz_memfd("fuzz_dwinline", data, size);
	d = dwinline__open_fd(memfd, 64u << 20, NULL, NULL);
	if (!d)
		return 0;
	elf = elffile__begin(memfd);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		for (uint64_t k = 0; k < 32; k++)
			check(d, sh.sh_addr + sh.sh_size * k / 32);
	}
	/* Addresses outside every section too. */
	check(d, 0);
	check(d, UINT64_MAX);
	elffile__end(elf, NULL);
	if (dwinline__bytes(d) < sizeof(void *))
		abort();
	dwinline__free(d);
	return 0;
}
