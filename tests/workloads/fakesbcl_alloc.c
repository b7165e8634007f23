// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakesbcl_alloc - a tenant's program that passes for an SBCL 2.2.9 runtime
 * to bpfprof --alloc (tests/integration/test_allocsbcl.py): it exports the
 * heap walker's variables and version (fakesbcl.h), and alloc, alloc_list
 * and gc_close_region, alloc and alloc_list beginning as Debian's 2.2.9's
 * do (current_thread's GOT entry loaded, the thread read from FS) but with
 * absurd region offsets (0x7ff0 and 0x78: past any thread structure). It
 * calls them in a loop. Usage: fakesbcl_alloc SECONDS; prints "ready" once
 * looping. bpfprof must leave its SBCL functions unprobed (and not crash).
 * FAKE_VERSION: fakesbcl_alloc_new is 9.9.9 (a release with no layout).
 * FAKE_ATTACH_FAILS: fakesbcl_attach has 2.2.9's region offsets and a TLS
 * block holding current_thread's offset (-8), so it passes every check, but
 * its gc_close_region begins with an int3, an instruction the kernel's
 * uprobes refuse: its attach fails (tests/integration/test_allocsbcl2.py,
 * the SBCL slot given back); its loop does not call gc_close_region.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fakesbcl.h"

/* A GOT entry's stand-in: a TLS offset as the dynamic linker would write it. */
int64_t fake_got = -8;

#ifdef FAKE_ATTACH_FAILS
__thread volatile long fake_tls[2]; /* a PT_TLS block: -8 inside it */
#endif

/* 2.2.9's alloc and alloc_list prologue (objdump of Debian's /usr/bin/sbcl),
 * the offsets absurd; each returns 0. gc_close_region returns at once. */
#define FAKE_FN(name, lea_sys, lea_user)                                                           \
	__asm__(".text\n.globl " name "\n.type " name ",@function\n" name ":\n"                    \
		"push %rbp\nmov %rsp,%rbp\npush %r14\npush %r13\nmov %esi,%r13d\n"                 \
		"push %r12\npush %rbx\nsub $0x10,%rsp\n"                                           \
		".byte 0x48,0x8b,0x05\n.long fake_got - . - 4\n"                                   \
		"test %r13d,%r13d\n.byte 0x64,0x48,0x8b,0x30\n"                                    \
		".byte 0x48,0x8d,0x86\n.long " lea_sys "\n"                                        \
		".byte 0x4c,0x8d,0x66," lea_user "\n"                                              \
		"cmovne %rax,%r12\nadd $0x10,%rsp\npop %rbx\npop %r12\npop %r13\npop %r14\n"       \
		"pop %rbp\nxor %eax,%eax\nret\n.size " name ",.-" name "\n")
#ifdef FAKE_ATTACH_FAILS
FAKE_FN("alloc", "0x118", "0x70");
FAKE_FN("alloc_list", "0x130", "0x58");
__asm__(".text\n.globl gc_close_region\n.type gc_close_region,@function\n"
	"gc_close_region:\nint3\nret\n.size gc_close_region,.-gc_close_region\n");
#else
FAKE_FN("alloc", "0x7ff0", "0x78");
FAKE_FN("alloc_list", "0x7ff8", "0x70");
__asm__(".text\n.globl gc_close_region\n.type gc_close_region,@function\n"
	"gc_close_region:\nret\n.size gc_close_region,.-gc_close_region\n");
#endif

void *alloc(long nbytes, int sys);
void *alloc_list(long nbytes, int sys);
void gc_close_region(void *region, int type);

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	struct timespec t0, t;
	static uint8_t region[64];
	unsigned long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	do {
		for (int i = 0; i < 1000; i++) {
			alloc(1L << 20, i & 1); /* over 2.2.9's large objects' size */
			alloc_list(1024, i & 1);
#ifdef FAKE_ATTACH_FAILS
			fake_tls[i & 1]++;
			(void)region;
#else
			gc_close_region(region, 0);
#endif
			n++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("calls %lu\n", n);
	return 0;
}
