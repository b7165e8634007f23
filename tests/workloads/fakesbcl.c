// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakesbcl - a tenant's program that passes for an SBCL runtime (issue 38):
 * it exports the variables bpfprof's heap walker reads (TEXT_SPACE_START,
 * text_space_highwatermark, tlsf_mem_start, tlsf_page_sso,
 * lisp_package_vector; built with -rdynamic) and a version string, and
 * points them at a heap made to hurt: two threads spin in "code objects"
 * of an executable anonymous mapping, one named by a cyclic list of a
 * symbol whose name claims 2^40 characters and whose package id is past
 * the package vector, the other by a string of absurd length behind a
 * long walk of tiny objects; a third thread rewrites the names, lengths
 * and trailers all the time (a heap that changes while read).
 * Usage: fakesbcl SECONDS. Its version: FAKE_VERSION (2.2.9.fake, or
 * another at build time: fakesbcl_new is 9.9.9, one bpfprof has no layout for).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fakesbcl.h"

#define NIL 0x50000117ul

static uint8_t *text, *heap;

static void *mutate(void *arg)
{
	uint64_t x = 88172645463325252ull;
	uint8_t *list = arg;

	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w64(list + 8, (x & 1) ? (uint64_t)(uintptr_t)list + 7 : NIL);
		w64(heap + 0x208, (x >> 8) << 1);		    /* the string's length */
		w64(text + MB + 0x1000 - 4, (x >> 20) & 0xffff000000ull); /* its trailer */
		memcpy(text + MB + 0x1000 - 4, (uint16_t[]){ (uint16_t)(x >> 40), 8 }, 4);
		w64(text + 3 * MB + 0x800 + 8, (x & 2) ? 0x40 : x >> 32); /* boxed size */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	uint8_t *cell, *sym, *str, *vec;

	text = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	heap = aligned_alloc(16, MB);
	tlsf_page_sso = calloc(512, sizeof(*tlsf_page_sso));
	if (text == MAP_FAILED || !heap || !tlsf_page_sso)
		return 1;
	memset(heap, 0, MB);
	/* The heap: a cyclic list of one symbol, its name a string of 2^40
	 * characters, its package id 0x7fff; a package vector of 2^50. */
	cell = heap;
	sym = heap + 0x100;
	str = heap + 0x200;
	vec = heap + 0x400;
	w64(cell, (uint64_t)(uintptr_t)sym + 15);
	w64(cell + 8, (uint64_t)(uintptr_t)cell + 7);
	w64(sym, 0x52d);
	w64(sym + 40, 0x7ffful << 48 | ((uint64_t)(uintptr_t)str + 15));
	w64(str, 0xe5);
	w64(str + 8, 1ul << 41);
	memset(str + 16, 'A', 4096);
	w64(vec, 0x89);
	w64(vec + 8, 1ul << 51);
	/* The core's text: a filler, the cyclic-named code, a filler. */
	filler(text, MB);
	code(text + MB, 0x1000, (uint64_t)(uintptr_t)cell + 7, 1);
	filler(text + MB + 0x1000, MB - 0x1000);
	/* The TLSF pages: 16-byte objects up to a code named by the long string. */
	for (uint64_t o = 2 * MB; o < 3 * MB + 0x800; o += 16)
		filler(text + o, 16);
	code(text + 3 * MB + 0x800, 0x1000, (uint64_t)(uintptr_t)str + 15, 1);
	filler(text + 3 * MB + 0x1800, MB - 0x1800);
	TEXT_SPACE_START = (uintptr_t)text;
	tlsf_mem_start = (uintptr_t)text + 2 * MB;
	text_space_highwatermark = (uintptr_t)text + 4 * MB;
	lisp_package_vector = (uintptr_t)vec + 15;
	pthread_create(&t[0], NULL, run, text + MB + 0x60);
	pthread_create(&t[1], NULL, run, text + 3 * MB + 0x800 + 0x60);
	pthread_create(&t[2], NULL, mutate, cell);
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 10);
	return fake_version[0] == 0;
}
