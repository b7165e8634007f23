// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fakejvm - a tenant's program that passes for a HotSpot JVM (issue 42): it
 * exports the variables bpfprof reads (gHotSpotVMStructs, gHotSpotVMTypes
 * and their entries' layout; built with -rdynamic) and points them at
 * tables and a code cache in an executable anonymous mapping
 * (tests/workloads/fakejvm.h), where two threads spin. Modes:
 *
 *   hostile  the tables are right; the code is made to hurt: one thread
 *            spins in an nmethod whose class name claims 65535 bytes of
 *            control characters, the other behind a segment-map hop chain
 *            longer than any walk may take, and a third thread rewrites
 *            Method and ConstMethod pointers (to themselves, to nothing),
 *            symbol lengths, blob sizes, the code heaps' count and the
 *            segment map, in bursts between calm moments of 5 ms (a code
 *            cache that changes while read)
 *   tables   the struct table has 4 Mi entries (256 MiB: one piece mapped
 *            over and over), its type names no NUL
 *   unknown  the tables lack CodeBlob::_name (a layout bpfprof cannot use)
 *   frames   two threads call through frames as a JVM without
 *            -XX:+PreserveFramePointer builds them: the C function
 *            spin_via() calls the call stub (blob 2: push rbp; mov rbp,rsp;
 *            call rdi, the return address FJ_CALL_STUB_RA), which calls the
 *            interpreter (blob 1: an interpreter frame - fp, sender sp at
 *            fp - 8, last sp, Method* - then a call), which calls the
 *            nmethod (blob 0, FJ_FRAME words: push rbp; sub rsp, 0x20).
 *            There the first thread leaves a junk rbp and spins (a
 *            frame-pointer walk stops at the junk rbp, the HotSpot walk
 *            reaches spin_via() and start_thread); the second takes its
 *            frame down again (add rsp; pop rbp) and spins in the return
 *            poll (cmp rsp, [r15 + 8]; ja): a leaf in its epilogue, where the
 *            frame-size step would skip the interpreter frame
 *
 * Usage: fakejvm MODE SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fakejvm.h"

uint64_t gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMStructEntryTypeNameOffset,
	gHotSpotVMStructEntryFieldNameOffset, gHotSpotVMStructEntryIsStaticOffset,
	gHotSpotVMStructEntryOffsetOffset, gHotSpotVMStructEntryAddressOffset,
	gHotSpotVMStructEntryArrayStride, gHotSpotVMTypeEntryTypeNameOffset,
	gHotSpotVMTypeEntrySizeOffset, gHotSpotVMTypeEntryArrayStride;

static uint8_t *m;

/* Writes n bytes of code at off; returns the offset after them. */
static uint32_t code(uint32_t off, const void *bytes, uint32_t n)
{
	memcpy(m + off, bytes, n);
	return off + n;
}

/* A call at off to target (both offsets into m); the offset after it. */
static uint32_t call(uint32_t off, uint32_t target)
{
	int32_t rel = (int32_t)(target - (off + 5));

	m[off] = 0xe8;
	memcpy(m + off + 1, &rel, 4);
	return off + 5;
}

/* The frames mode's code; the interpreter's entries its two threads call
 * through the call stub. */
static void frames(uint64_t base, uint8_t *entry[2])
{
	/* blob 0, the nmethod: push rbp; sub rsp, 0x20; (frame complete:)
	 * mov ebp, 0x0badf00d; jmp . */
	static const uint8_t nm[] = { 0x55, 0x48, 0x83, 0xec, 0x20, 0x90, 0x90, 0x90,
				      0xbd, 0x0d, 0xf0, 0xad, 0x0b, 0xeb, 0xfe };
	/* blob 1, the interpreter: push rbp; mov rbp, rsp; lea rax, [rbp + 16];
	 * push rax (sender sp); push 0 (last sp); movabs rax, Method*; push rax */
	static const uint8_t in[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x8d, 0x45,
				      0x10, 0x50, 0x6a, 0x00, 0x48, 0xb8 };
	/* blob 0 at +0x200, the epilogue: push rbp; sub rsp, 0x20; add rsp,
	 * 0x20; pop rbp; movabs r15, a zero word - 8; then the return poll
	 * spins: cmp rsp, [r15 + 8]; ja (back to the cmp); ret */
	static const uint8_t ep[] = { 0x55, 0x48, 0x83, 0xec, 0x20, 0x48,
				      0x83, 0xc4, 0x20, 0x5d, 0x49, 0xbf };
	static const uint8_t poll[] = { 0x49, 0x3b, 0x67, 0x08, 0x0f, 0x87,
					0xf6, 0xff, 0xff, 0xff, 0xc3 };
	/* blob 2, the call stub: push rbp; mov rbp, rsp; nops; call rdi
	 * (returns to FJ_CALL_STUB_RA) */
	static const uint8_t cs[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90,
				      0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd7 };
	const uint32_t nm_at = FJ_HEAP + FJ_CODE, ep_at = nm_at + 0x200,
		       in_at = FJ_HEAP + FJ_BLOB + FJ_CODE, cs_at = FJ_STUB + FJ_CODE;
	uint64_t method = base + FJ_METHOD_AT, zero = base + FJ_META + 0x7f0;
	uint32_t at;

	code(nm_at, nm, sizeof(nm));
	at = code(code(ep_at, ep, sizeof(ep)), &zero, 8);
	code(at, poll, sizeof(poll));
	for (int i = 0; i < 2; i++) {
		at = code(in_at + 0x100 * i, in, sizeof(in));
		at = code(at, &method, 8);
		at = code(at, &(uint8_t){ 0x50 }, 1);
		call(at, i ? ep_at : nm_at);
		entry[i] = m + in_at + 0x100 * i;
	}
	if (code(cs_at, cs, sizeof(cs)) != FJ_CALL_STUB_RA)
		abort();
}

#define SPIN 0xfeeb				/* jmp . */
#define FAR  (FJ_HEAP + FJ_HEAP_SIZE - FJ_BLOB) /* behind the hop chain */

static void *spin(void *pc)
{
	((void (*)(void))pc)();
	return NULL;
}

/* frames: the call stub, asked to call entry. */
static void *spin_via(void *entry)
{
	((void (*)(void *))(m + FJ_STUB + FJ_CODE))(entry);
	return NULL;
}

static void *mutate(void *arg)
{
	uint64_t x = 88172645463325252ull, base = (uint64_t)(uintptr_t)m;

	(void)arg;
	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 8) {
		case 0: /* ConstMethod's constants: the Method itself, or nothing */
			fj_w64(m, FJ_CMETHOD_AT + 8,
			       (x & 256)   ? base + FJ_METHOD_AT
			       : (x & 512) ? 0
					   : base + FJ_CPOOL_AT);
			break;
		case 1: /* Method's ConstMethod: itself, unmapped, right */
			fj_w64(m, FJ_METHOD_AT + 8,
			       (x & 256)   ? base + FJ_METHOD_AT
			       : (x & 512) ? 0x10
					   : base + FJ_CMETHOD_AT);
			break;
		case 2:
			fj_w16(m, FJ_KSYM_AT + 4, (uint16_t)(x >> 16));
			break;
		case 3: /* the blob's size */
			fj_w32(m, FJ_HEAP + 16 + 12,
			       (x & 256) ? (uint32_t)(x >> 32) : FJ_BLOB - 16);
			break;
		case 4: /* the heaps' count */
			fj_w32(m, FJ_META + 0x100, (x & 256) ? (uint32_t)(x >> 32) : 1);
			break;
		case 5: /* a segment of blob 0 */
			m[FJ_SEGMAP + (x >> 16) % (FJ_BLOB >> FJ_LOG2)] =
				(x & 256) ? (uint8_t)(x >> 24)
					  : (uint8_t)((x >> 16) % (FJ_BLOB >> FJ_LOG2));
			break;
		case 6: /* the compile id (a recompiled method) */
			fj_w32(m, FJ_HEAP + 16 + 304, (uint32_t)(x >> 40));
			break;
		default:
			fj_w16(m, FJ_CMETHOD_AT + 34, (x & 256) ? (uint16_t)(x >> 16) : 5);
			break;
		}
		if (!(x & 1023)) {
			/* A calm moment: everything right, for 5 ms. */
			fj_w64(m, FJ_CMETHOD_AT + 8, base + FJ_CPOOL_AT);
			fj_w64(m, FJ_METHOD_AT + 8, base + FJ_CMETHOD_AT);
			fj_w16(m, FJ_KSYM_AT + 4, 0xffff);
			fj_w32(m, FJ_HEAP + 16 + 12, FJ_BLOB - 16);
			fj_w32(m, FJ_META + 0x100, 1);
			for (uint32_t i = 0; i < FJ_BLOB >> FJ_LOG2; i++)
				m[FJ_SEGMAP + i] = (uint8_t)i;
			fj_w16(m, FJ_CMETHOD_AT + 34, 5);
			usleep(5000);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct fj_opts o = { 0 };
	uint64_t var[FJ_NR_VARS], base;
	const char *mode = argc > 1 ? argv[1] : "hostile";
	unsigned secs = argc > 2 ? (unsigned)atoi(argv[2]) : 30;
	uint8_t *entry[2] = { NULL, NULL };
	pthread_t t;

	m = mmap(NULL, FJ_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (m == MAP_FAILED)
		return 1;
	base = (uint64_t)(uintptr_t)m;
	o.omit_name = !strcmp(mode, "unknown");
	fj_build(m, base, var, &o);
	memcpy(m + FJ_HEAP + FJ_CODE, &(uint16_t){ SPIN }, 2);
	memcpy(m + FAR + FJ_CODE, &(uint16_t){ SPIN }, 2);
	if (!strcmp(mode, "frames")) {
		frames(base, entry);
	} else if (!strcmp(mode, "hostile")) {
		/* A class name of 65535 bytes, control characters in it. */
		memset(m + FJ_KSYM_AT + 6, '\n', 0xffff);
		fj_w16(m, FJ_KSYM_AT + 4, 0xffff);
		/* The far blob: hops of 1 all the way back. */
		memset(m + FJ_SEGMAP + 64, 1, (FJ_HEAP_SIZE >> FJ_LOG2) - 64);
	} else if (!strcmp(mode, "tables")) {
		/* 256 MiB of table (4 Mi entries of 64 bytes): one 2 MiB memfd
		 * mapped 128 times in a row, each type name 64 bytes into 1 MiB
		 * of 'A's. */
		size_t piece = 2u << 20, n = 128;
		uint8_t *tab = mmap(NULL, piece * n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *as = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int fd = memfd_create("fakejvm-table", 0);

		if (tab == MAP_FAILED || as == MAP_FAILED || fd < 0 || ftruncate(fd, (off_t)piece))
			return 1;
		memset(as, 'A', 1u << 20);
		for (size_t i = 0; i < n; i++)
			if (mmap(tab + i * piece, piece, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
				return 1;
		for (uint32_t e = 0; 64 * (e + 1) <= piece; e++)
			fj_w64(tab, 64 * e, (uint64_t)(uintptr_t)as + (64 * e) % (1u << 20));
		var[0] = (uint64_t)(uintptr_t)tab;
		var[7] = 64;
	}
	gHotSpotVMStructs = var[0];
	gHotSpotVMTypes = var[1];
	gHotSpotVMStructEntryTypeNameOffset = var[2];
	gHotSpotVMStructEntryFieldNameOffset = var[3];
	gHotSpotVMStructEntryIsStaticOffset = var[4];
	gHotSpotVMStructEntryOffsetOffset = var[5];
	gHotSpotVMStructEntryAddressOffset = var[6];
	gHotSpotVMStructEntryArrayStride = var[7];
	gHotSpotVMTypeEntryTypeNameOffset = var[8];
	gHotSpotVMTypeEntrySizeOffset = var[9];
	gHotSpotVMTypeEntryArrayStride = var[10];
	if (entry[0]) {
		pthread_create(&t, NULL, spin_via, entry[0]);
		pthread_create(&t, NULL, spin_via, entry[1]);
	} else {
		pthread_create(&t, NULL, spin, m + FJ_HEAP + FJ_CODE);
		pthread_create(&t, NULL, spin, m + FAR + FJ_CODE);
	}
	if (!strcmp(mode, "hostile"))
		pthread_create(&t, NULL, mutate, NULL);
	sleep(secs);
	return 0;
}
