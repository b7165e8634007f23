/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fakesbcl.h - what the tenant's fake SBCL runtimes (fakesbcl.c,
 * fakesbcl_dyn.c, fakesbcl_exe.c) share: the runtime's variables that
 * bpfprof's heap walker reads (defined here, exported by -rdynamic: a
 * program includes this once) with a version string, and the heap objects
 * they write in SBCL 2.2's x86-64 layout: a filler, a code object whose
 * only function spins.
 */
#ifndef FAKESBCL_H
#define FAKESBCL_H

#include <stdint.h>
#include <string.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION "2.2.9.fake"
#endif

uintptr_t TEXT_SPACE_START, text_space_highwatermark, tlsf_mem_start, lisp_package_vector;
uint16_t *tlsf_page_sso;
const char fake_version[] = FAKE_VERSION;

#define MB   (1ul << 20)
#define SPIN 0xfeeb /* jmp . */

static inline void w64(uint8_t *at, uint64_t v)
{
	memcpy(at, &v, 8);
}

static inline void filler(uint8_t *at, uint64_t bytes)
{
	w64(at, (bytes / 8) << 32 | 0x6d);
}

/* A code object of size bytes at at, named name, with nfun simple-funs (0:
 * a corrupt trailer), spinning at its first function (at + 0x60). */
static inline void code(uint8_t *at, uint64_t size, uint64_t name, uint16_t nfun)
{
	uint8_t *end = at + size;
	uint16_t tr[2] = { (uint16_t)(nfun << 5), 8 };
	uint32_t off = 0x10;

	w64(at, (size / 8) << 32 | 0x35);
	w64(at + 8, 0x40);
	w64(at + 32, name);
	w64(at + 0x50, 0x41);
	memcpy(at + 0x60, &(uint16_t){ SPIN }, 2);
	memcpy(end - 8, &off, 4);
	memcpy(end - 4, tr, 4);
}

/* A thread that runs the code at pc (a spin or a sled: it never returns). */
static inline void *run(void *pc)
{
	((void (*)(void))pc)();
	return NULL;
}

#endif
