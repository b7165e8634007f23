// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakesbcl_exe - a tenant's program that passes for an SBCL executable saved
 * with its core (save-lisp-and-die :executable t, issue 38): the runtime's
 * exported variables (built with -rdynamic) point at a text space mapped
 * from the executable's own file past its ELF segments, as SBCL maps its
 * appended core. The file's symbol table has a function, decoy, whose
 * addresses are the file offsets of that space (in .bss: no file bytes), so
 * a profiler that names the space's pcs after the file's C symbols names
 * them decoy. In the space: code named "FAKE-LISP", code with a corrupt
 * trailer (no name), code named by a string that claims 2^40 characters;
 * a thread spins in each.
 *   fakesbcl_exe --make OUT   writes OUT: this program with the space appended
 *   OUT SECONDS               runs
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakesbcl.h"

/* The decoy: addresses 0x1000-aligned from .bss's start, 16 MiB of them. */
__asm__(".section .bss\n"
	".globl decoy\n"
	".type decoy, @function\n"
	".p2align 12\n"
	"decoy:\n"
	".zero 0x1000000\n"
	".size decoy, 0x1000000\n"
	".previous\n");

#define BASE	0x52a00000ul /* where the space is mapped (SBCL's text space) */
#define SPACE	0x10000ul    /* its bytes */
#define AT	0x100000ul   /* its file offset (in decoy's addresses) */

static void make_space(uint8_t *sp)
{
	uint8_t *str = sp + 0x3010, *big = sp + 0x3100;

	memset(sp, 0, SPACE);
	code(sp, 0x1000, BASE + 0x3010 + 15, 1);
	code(sp + 0x1000, 0x1000, BASE + 0x3010 + 15, 0);
	code(sp + 0x2000, 0x1000, BASE + 0x3100 + 15, 1);
	filler(sp + 0x3000, SPACE - 0x3000);
	w64(str, 0xe1); /* a base-string */
	w64(str + 8, 9 << 1);
	memcpy(str + 16, "FAKE-LISP", 9);
	w64(big, 0xe1);
	w64(big + 8, 1ul << 41);
	memset(big + 16, 'A', 512);
}

static int make(const char *out)
{
	static uint8_t buf[1 << 16], sp[SPACE];
	int in = open("/proc/self/exe", O_RDONLY), fd;
	ssize_t n;
	off_t at = 0;

	fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0755);
	if (in < 0 || fd < 0)
		return 1;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, (size_t)n) != n)
			return 1;
		at += n;
	}
	if (n < 0 || at > (off_t)AT)
		return 1;
	make_space(sp);
	if (pwrite(fd, sp, SPACE, AT) != (ssize_t)SPACE)
		return 1;
	return close(fd) ? 1 : 0;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	uint8_t *sp;
	int fd;

	if (argc > 2 && !strcmp(argv[1], "--make"))
		return make(argv[2]);
	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0)
		return 1;
	sp = mmap((void *)BASE, SPACE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd,
		  AT);
	if (sp != (void *)BASE)
		return 1;
	TEXT_SPACE_START = BASE;
	text_space_highwatermark = BASE + SPACE;
	tlsf_mem_start = BASE + SPACE;
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, run, sp + 0x1000 * (uint64_t)i + 0x60);
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 10);
	return fake_version[0] == 0;
}
