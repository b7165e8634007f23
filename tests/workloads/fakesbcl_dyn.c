// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakesbcl_dyn - a tenant's fake SBCL runtime (like fakesbcl) with a
 * dynamic space made to cost: it also exports DYNAMIC_SPACE_START,
 * dynamic_space_size and page_table, over 16 MiB of executable memory
 * whose first 15 MiB are 64-byte fillers a thread runs through as a sled
 * (each filler's instructions jump over the next one's header), every page
 * marked code with its scan start as far back as bpfprof walks (4 MiB:
 * 65,536 objects, none of them code): every sample a new pc, every lookup
 * the longest walk, and none may be named. A second thread spins in a real
 * code object on the last page but one's start, named by the string
 * "DYNOK": it must be named so. Usage: fakesbcl_dyn SECONDS.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakesbcl.h"

uintptr_t DYNAMIC_SPACE_START, dynamic_space_size;
uint64_t *page_table;

#define DYN	  (16 * MB)
#define SLED	  (15 * MB)
#define GC_PAGE	  32768ul
#define PAGE_CODE 7ull
#define MAX_WALK  (4 * MB)

int main(int argc, char **argv)
{
	uint8_t *text, *dyn, *heap, *str, *vec, *last;
	const uint32_t name[5] = { 'D', 'Y', 'N', 'O', 'K' };
	int32_t rel;
	pthread_t t[2];

	text = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dyn = mmap(NULL, DYN, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	heap = aligned_alloc(16, MB);
	tlsf_page_sso = calloc(512, sizeof(*tlsf_page_sso));
	page_table = calloc(DYN / GC_PAGE, sizeof(*page_table));
	if (text == MAP_FAILED || dyn == MAP_FAILED || !heap || !tlsf_page_sso || !page_table)
		return 1;
	memset(heap, 0, MB);
	str = heap;
	vec = heap + 0x100;
	w64(str, 0xe5);
	w64(str + 8, 5 << 1);
	memcpy(str + 16, name, sizeof(name));
	w64(vec, 0x89);
	w64(text, (4 * MB / 8) << 32 | 0x6d); /* the core's text: one filler */
	/* The sled: fillers of 8 words, their instructions nops and a jump over
	 * the next one's header; the last one jumps back to the first. */
	for (uint64_t o = 0; o < SLED; o += 64) {
		w64(dyn + o, 8ull << 32 | 0x6d);
		memset(dyn + o + 8, 0x90, 54);
		dyn[o + 62] = 0xeb;
		dyn[o + 63] = 0x08;
	}
	last = dyn + SLED - 64;
	last[56] = 0xe9;
	rel = (int32_t)((dyn + 8) - (last + 61));
	memcpy(last + 57, &rel, 4);
	for (uint64_t p = 0; p < SLED / GC_PAGE; p++) {
		uint64_t back = p * GC_PAGE < MAX_WALK ? p * GC_PAGE : MAX_WALK;

		page_table[p] = PAGE_CODE << 48 | (back >> 3);
	}
	/* The named code, at the start of its page (its scan start 0). */
	code(dyn + SLED, 0x1000, (uint64_t)(uintptr_t)str + 15, 1);
	page_table[SLED / GC_PAGE] = PAGE_CODE << 48;
	TEXT_SPACE_START = (uintptr_t)text;
	tlsf_mem_start = (uintptr_t)text + 2 * MB;
	text_space_highwatermark = (uintptr_t)text + 4 * MB;
	lisp_package_vector = (uintptr_t)vec + 15;
	DYNAMIC_SPACE_START = (uintptr_t)dyn;
	dynamic_space_size = DYN;
	pthread_create(&t[0], NULL, run, dyn + 8);
	pthread_create(&t[1], NULL, run, dyn + SLED + 0x60);
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 10);
	return fake_version[0] == 0;
}
