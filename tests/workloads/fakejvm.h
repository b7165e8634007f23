/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fakejvm.h - a HotSpot JVM's self-description and code cache, written into
 * memory: what tests/unit/test_hotspot.c names pcs in (an image at any
 * address) and what tests/workloads/fakejvm.c runs code in and exports
 * (a tenant's fake JVM). The layout is OpenJDK 17's (entry strides and
 * offsets as its tables give them), at offsets of one region:
 *
 *   FJ_STRUCTS  the VMStructEntry table     FJ_TYPES  the VMTypeEntry table
 *   FJ_STRINGS  their names                  FJ_META   CodeCache::_heaps, the
 *   GrowableArray, the CodeHeap, Method, ConstMethod, ConstantPool, Klass,
 *   Symbols                                  FJ_HEAP   the code heap (1 MiB,
 *   FJ_SEGMAP its segment map): blob 0 an nmethod of FJ_CLASS.FJ_METHOD,
 *   blob 1 "Interpreter", each FJ_BLOB bytes, code from +0x100 to +0x800.
 *   Blob 0's debug information (after its code): metadata [work, inl],
 *   scopes (at 1: work; at 7: inl, its sender at 1) and PcDescs at code
 *   offsets 0x20 (work), 0x60 (inl in work), 0x100 (none), 0x600 (work).
 *   Blob 2 (FJ_STUB) "StubRoutines (1)": the call stub, its return address
 *   FJ_CALL_STUB_RA. What the frame walker needs (hotspot__bpf()): blob 0's
 *   frame size FJ_FRAME words, the code cache the one heap's reserved
 *   bounds, the interpreter's StubQueue blob 1's code.
 */
#ifndef FAKEJVM_H
#define FAKEJVM_H

#include <stdint.h>
#include <string.h>

#define FJ_SIZE	   (4u << 20)
#define FJ_STRUCTS 0x1000u
#define FJ_TYPES   0x10000u
#define FJ_STRINGS 0x18000u
#define FJ_META	   0x20000u
#define FJ_METHOD_AT  (FJ_META + 0x1000u)
#define FJ_CMETHOD_AT (FJ_META + 0x1100u)
#define FJ_CPOOL_AT   (FJ_META + 0x1200u)
#define FJ_KLASS_AT   (FJ_META + 0x1400u)
#define FJ_KSYM_AT    (FJ_META + 0x1800u)
#define FJ_MSYM_AT    (FJ_META + 0x1900u)
#define FJ_METHOD2_AT  (FJ_META + 0x1a00u) /* "inl", inlined into blob 0's method */
#define FJ_CMETHOD2_AT (FJ_META + 0x1b00u)
#define FJ_MSYM2_AT    (FJ_META + 0x1c00u)
#define FJ_SEGMAP  0x80000u
#define FJ_HEAP	   0x100000u
#define FJ_HEAP_SIZE 0x100000u
#define FJ_LOG2	   7u
#define FJ_BLOB	   0x1000u
#define FJ_CODE	   0x100u /* code begins at blob + this ... */
#define FJ_CODE_END 0x800u /* ... and ends here */
#define FJ_STUB	   (FJ_HEAP + 2 * FJ_BLOB)	/* blob 2: the call stub */
#define FJ_CALL_STUB_RA (FJ_STUB + FJ_CODE + 0x10) /* its return address */
#define FJ_FRAME   6u /* blob 0's frame size, words */
#define FJ_STATICS (FJ_META + 0x600u) /* CodeCache::_low/_high_bound, the call stub's ra, _code */
#define FJ_SQ_AT   (FJ_META + 0x700u) /* the interpreter's StubQueue */
#define FJ_CLASS   "com/example/Fake"
#define FJ_METH    "work"

/* The variables a libjvm exports, in hotspot.h's order (enum hs_var). */
enum { FJ_NR_VARS = 11 };

struct fj_opts {
	int omit_name; /* no CodeBlob::_name in the tables (an unknown layout) */
	int omit_frame_size; /* no CodeBlob::_frame_size (names, but no frame walk) */
};

static inline void fj_w64(uint8_t *m, uint32_t off, uint64_t v)
{
	memcpy(m + off, &v, 8);
}

static inline void fj_w32(uint8_t *m, uint32_t off, uint32_t v)
{
	memcpy(m + off, &v, 4);
}

static inline void fj_w16(uint8_t *m, uint32_t off, uint16_t v)
{
	memcpy(m + off, &v, 2);
}

struct fj_b {
	uint8_t *m;
	uint64_t base;
	uint32_t str, se, te;
};

static inline uint64_t fj_str(struct fj_b *b, const char *s)
{
	uint32_t at = b->str;
	size_t n = strlen(s) + 1;

	memcpy(b->m + at, s, n);
	b->str += (uint32_t)n;
	return b->base + at;
}

static inline void fj_field(struct fj_b *b, const char *type, const char *field, uint64_t off)
{
	uint32_t e = FJ_STRUCTS + 48u * b->se++;

	fj_w64(b->m, e, fj_str(b, type));
	fj_w64(b->m, e + 8, fj_str(b, field));
	fj_w64(b->m, e + 32, off);
}

static inline void fj_static(struct fj_b *b, const char *type, const char *field, uint64_t addr)
{
	uint32_t e = FJ_STRUCTS + 48u * b->se++;

	fj_w64(b->m, e, fj_str(b, type));
	fj_w64(b->m, e + 8, fj_str(b, field));
	fj_w32(b->m, e + 24, 1);
	fj_w64(b->m, e + 40, addr);
}

static inline void fj_type(struct fj_b *b, const char *type, uint64_t size)
{
	uint32_t e = FJ_TYPES + 40u * b->te++;

	fj_w64(b->m, e, fj_str(b, type));
	fj_w64(b->m, e + 32, size);
}

/* A block of segs segments at segment first, used, holding a blob named name. */
static inline void fj_blob(struct fj_b *b, uint32_t at, const char *name, uint64_t method,
			   int32_t id)
{
	uint8_t *m = b->m;
	uint32_t first = (at - FJ_HEAP) >> FJ_LOG2, segs = FJ_BLOB >> FJ_LOG2;
	uint32_t blob = at + 16;

	for (uint32_t i = 0; i < segs; i++)
		m[FJ_SEGMAP + first + i] = (uint8_t)(i < 0xfe ? i : 0xfe);
	fj_w64(m, at, segs);	    /* HeapBlock::Header _length */
	m[at + 8] = 1;		    /* _used */
	fj_w32(m, blob + 12, FJ_BLOB - 16); /* _size */
	fj_w64(m, blob + 32, b->base + at + FJ_CODE);
	fj_w64(m, blob + 40, b->base + at + FJ_CODE_END);
	fj_w64(m, blob + 96, fj_str(b, name));
	fj_w64(m, blob + 112, method);
	fj_w32(m, blob + 304, (uint32_t)id);
}

/* Writes the image into m (FJ_SIZE bytes, at address base in the reader's
 * view) and the exported variables' values into var. */
static inline void fj_build(uint8_t *m, uint64_t base, uint64_t var[FJ_NR_VARS],
			    const struct fj_opts *o)
{
	struct fj_b b = { m, base, FJ_STRINGS, 0, 0 };
	const uint32_t heaps = FJ_META, ga = FJ_META + 0x100, data = FJ_META + 0x200,
		       heap = FJ_META + 0x400;

	memset(m, 0, FJ_SIZE);
	fj_static(&b, "CodeCache", "_heaps", base + heaps);
	fj_field(&b, "GrowableArrayBase", "_len", 0);
	fj_field(&b, "GrowableArray<int>", "_data", 8);
	fj_field(&b, "CodeHeap", "_memory", 8);
	fj_field(&b, "CodeHeap", "_segmap", 120);
	fj_field(&b, "CodeHeap", "_log2_segment_size", 256);
	fj_field(&b, "VirtualSpace", "_low_boundary", 0);
	fj_field(&b, "VirtualSpace", "_low", 16);
	fj_field(&b, "VirtualSpace", "_high", 24);
	fj_field(&b, "HeapBlock", "_header", 0);
	fj_field(&b, "HeapBlock::Header", "_used", 8);
	if (!o || !o->omit_name)
		fj_field(&b, "CodeBlob", "_name", 96);
	fj_field(&b, "CodeBlob", "_size", 12);
	fj_field(&b, "CodeBlob", "_code_begin", 32);
	fj_field(&b, "CodeBlob", "_code_end", 40);
	fj_field(&b, "CompiledMethod", "_method", 112);
	fj_field(&b, "nmethod", "_compile_id", 304);
	fj_field(&b, "Method", "_constMethod", 8);
	fj_field(&b, "ConstMethod", "_constants", 8);
	fj_field(&b, "ConstMethod", "_name_index", 34);
	fj_field(&b, "ConstantPool", "_pool_holder", 24);
	fj_field(&b, "ConstantPool", "_length", 60);
	fj_field(&b, "Klass", "_name", 24);
	fj_field(&b, "Symbol", "_length", 4);
	fj_field(&b, "Symbol", "_body", 6);
	fj_field(&b, "CompiledMethod", "_scopes_data_begin", 120);
	fj_field(&b, "nmethod", "_metadata_offset", 260);
	fj_field(&b, "nmethod", "_scopes_pcs_offset", 268);
	fj_field(&b, "nmethod", "_dependencies_offset", 272);
	fj_field(&b, "PcDesc", "_pc_offset", 0);
	fj_field(&b, "PcDesc", "_scope_decode_offset", 4);
	fj_type(&b, "PcDesc", 16);
	fj_static(&b, "Abstract_VM_Version", "_s_vm_release", base + FJ_META + 0x80);
	fj_w64(m, FJ_META + 0x80, fj_str(&b, "17.0.99-fake"));
	fj_type(&b, "HeapBlock", 16);
	fj_type(&b, "ConstantPool", 72);
	fj_type(&b, "Method", 88);
	/* The frame walker's (after the others: tests patch entries by index) */
	if (!o || !o->omit_frame_size)
		fj_field(&b, "CodeBlob", "_frame_size", 28);
	fj_field(&b, "CodeBlob", "_frame_complete_offset", 20);
	fj_field(&b, "VirtualSpace", "_high_boundary", 8);
	fj_static(&b, "CodeCache", "_low_bound", base + FJ_STATICS);
	fj_static(&b, "CodeCache", "_high_bound", base + FJ_STATICS + 8);
	fj_static(&b, "StubRoutines", "_call_stub_return_address", base + FJ_STATICS + 16);
	fj_static(&b, "AbstractInterpreter", "_code", base + FJ_STATICS + 24);
	fj_field(&b, "StubQueue", "_stub_buffer", 8);
	fj_field(&b, "StubQueue", "_buffer_limit", 20);
	fj_field(&b, "CompiledMethod", "_deopt_handler_begin", 128);
	fj_field(&b, "CompiledMethod", "_deopt_mh_handler_begin", 136);
	fj_field(&b, "nmethod", "_orig_pc_offset", 300);

	/* CodeCache::_heaps -> GrowableArray {1, data} -> [heap] */
	fj_w64(m, heaps, base + ga);
	fj_w32(m, ga, 1);
	fj_w64(m, ga + 8, base + data);
	fj_w64(m, data, base + heap);
	fj_w64(m, heap + 8, base + FJ_HEAP); /* reserved = committed */
	fj_w64(m, heap + 8 + 8, base + FJ_HEAP + FJ_HEAP_SIZE);
	fj_w64(m, heap + 120, base + FJ_SEGMAP);
	fj_w64(m, heap + 120 + 8, base + FJ_SEGMAP + (FJ_HEAP_SIZE >> FJ_LOG2));
	fj_w64(m, heap + 8 + 16, base + FJ_HEAP);
	fj_w64(m, heap + 8 + 24, base + FJ_HEAP + FJ_HEAP_SIZE);
	fj_w64(m, heap + 120 + 16, base + FJ_SEGMAP);
	fj_w64(m, heap + 120 + 24, base + FJ_SEGMAP + (FJ_HEAP_SIZE >> FJ_LOG2));
	fj_w32(m, heap + 256, FJ_LOG2);
	memset(m + FJ_SEGMAP, 0xff, FJ_HEAP_SIZE >> FJ_LOG2);

	/* Method -> ConstMethod -> ConstantPool (#5: the name) -> Klass -> Symbol */
	fj_w64(m, FJ_METHOD_AT + 8, base + FJ_CMETHOD_AT);
	fj_w64(m, FJ_CMETHOD_AT + 8, base + FJ_CPOOL_AT);
	fj_w16(m, FJ_CMETHOD_AT + 34, 5);
	fj_w64(m, FJ_CPOOL_AT + 24, base + FJ_KLASS_AT);
	fj_w32(m, FJ_CPOOL_AT + 60, 16);
	fj_w64(m, FJ_CPOOL_AT + 72 + 5 * 8, base + FJ_MSYM_AT);
	fj_w64(m, FJ_KLASS_AT + 24, base + FJ_KSYM_AT);
	fj_w16(m, FJ_KSYM_AT + 4, (uint16_t)strlen(FJ_CLASS));
	memcpy(m + FJ_KSYM_AT + 6, FJ_CLASS, strlen(FJ_CLASS));
	fj_w16(m, FJ_MSYM_AT + 4, (uint16_t)strlen(FJ_METH));
	memcpy(m + FJ_MSYM_AT + 6, FJ_METH, strlen(FJ_METH));

	/* Method "inl": its own ConstMethod, the same pool (#7). */
	fj_w64(m, FJ_METHOD2_AT + 8, base + FJ_CMETHOD2_AT);
	fj_w64(m, FJ_CMETHOD2_AT + 8, base + FJ_CPOOL_AT);
	fj_w16(m, FJ_CMETHOD2_AT + 34, 7);
	fj_w64(m, FJ_CPOOL_AT + 72 + 7 * 8, base + FJ_MSYM2_AT);
	fj_w16(m, FJ_MSYM2_AT + 4, 3);
	memcpy(m + FJ_MSYM2_AT + 6, "inl", 3);

	fj_blob(&b, FJ_HEAP, "nmethod", base + FJ_METHOD_AT, 7);
	{
		/* blob 0's debug information, from blob + 0x800 (its code ends at 0x7f0) */
		const uint32_t blob = FJ_HEAP + 16, md = 0x800, sc = 0x840, pcs = 0x900;
		const uint8_t scopes[] = { 0xff, 0, 1, 6, 0, 0, 0, 1, 2, 4, 0, 0, 0 };
		const uint32_t pd[4][2] = { { 0x20, 1 }, { 0x60, 7 }, { 0x100, 0 }, { 0x600, 1 } };

		fj_w64(m, blob + md, base + FJ_METHOD_AT);
		fj_w64(m, blob + md + 8, base + FJ_METHOD2_AT);
		memcpy(m + blob + sc, scopes, sizeof(scopes));
		for (int i = 0; i < 4; i++) {
			fj_w32(m, blob + pcs + 16 * i, pd[i][0]);
			fj_w32(m, blob + pcs + 16 * i + 4, pd[i][1]);
		}
		fj_w64(m, blob + 120, base + blob + sc);
		fj_w32(m, blob + 260, md);
		fj_w32(m, blob + 268, pcs);
		fj_w32(m, blob + 272, pcs + 4 * 16);
	}
	fj_blob(&b, FJ_HEAP + FJ_BLOB, "Interpreter", 0, 0);
	fj_blob(&b, FJ_STUB, "StubRoutines (1)", 0, 0);
	/* Frames: blob 0 FJ_FRAME words, complete at code + 8; the stubs none, never. */
	fj_w32(m, FJ_HEAP + 16 + 28, FJ_FRAME);
	fj_w32(m, FJ_HEAP + 16 + 20, 8);
	fj_w32(m, FJ_HEAP + FJ_BLOB + 16 + 20, (uint32_t)-1);
	fj_w32(m, FJ_STUB + 16 + 20, (uint32_t)-1);
	/* The code cache, the call stub, the interpreter's code (blob 1's). */
	fj_w64(m, FJ_STATICS, base + FJ_HEAP);
	fj_w64(m, FJ_STATICS + 8, base + FJ_HEAP + FJ_HEAP_SIZE);
	fj_w64(m, FJ_STATICS + 16, base + FJ_CALL_STUB_RA);
	fj_w64(m, FJ_STATICS + 24, base + FJ_SQ_AT);
	fj_w64(m, FJ_SQ_AT + 8, base + FJ_HEAP + FJ_BLOB + FJ_CODE);
	fj_w32(m, FJ_SQ_AT + 20, FJ_CODE_END - FJ_CODE);

	/* The variables: the tables, then their entries' layout. */
	var[0] = base + FJ_STRUCTS;
	var[1] = base + FJ_TYPES;
	var[2] = 0;  /* type name */
	var[3] = 8;  /* field name */
	var[4] = 24; /* is static */
	var[5] = 32; /* offset */
	var[6] = 40; /* address */
	var[7] = 48; /* stride */
	var[8] = 0;  /* type: name */
	var[9] = 32; /* type: size */
	var[10] = 40;
}

#endif
