// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_hotspot.c - a HotSpot JVM's code cache read from outside
 * (src/lang/hotspot.c), on an image written in OpenJDK 17's layout
 * (tests/workloads/fakejvm.h): the tables' offsets, a pc's blob through
 * the segment map, an nmethod's method named package.Class.method, stubs
 * by their name, names kept per blob and named anew when the blob holds
 * other code; then hostile tables and heaps (no terminator, absurd
 * strides, hop chains, huge and unprintable symbols, huge arrays), each
 * bounded.
 */
#include "testutil.h"

#include <inttypes.h>

#include "lang/hotspot.h"
#include "../workloads/fakejvm.h"

#define BASE 0x7f1200000000ull

struct img {
	uint8_t *m;
	uint64_t reads, bytes;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *i = ctx;

	i->reads++;
	i->bytes += len;
	if (addr < BASE || addr - BASE > FJ_SIZE || len > FJ_SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, i->m + (addr - BASE), len);
	return 0;
}

static void setup_img(struct img *i, uint64_t var[HSV_NR], const struct fj_opts *o)
{
	i->m = malloc(FJ_SIZE);
	assert_non_null(i->m);
	i->reads = i->bytes = 0;
	fj_build(i->m, BASE, var, o);
}

static void setup_h(struct hotspot *h, struct img *i, uint64_t var[HSV_NR])
{
	memset(h, 0, sizeof(*h));
	assert_int_equal(hotspot__read_tables(img_read, i, var, &h->vm), 0);
	h->read = img_read;
	h->ctx = i;
	h->max_bytes = HS_MAX_LOOKUP;
}

static const uint64_t CODE0 = BASE + FJ_HEAP + FJ_CODE + 0x40;
static const uint64_t CODE1 = BASE + FJ_HEAP + FJ_BLOB + FJ_CODE + 0x10;

static void test_tables(void **state)
{
	uint64_t var[HSV_NR];
	struct hotspot_vm vm;
	struct img i;

	(void)state;
	setup_img(&i, var, NULL);
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), 0);
	assert_int_equal(vm.off[HS_CB_NAME], 96);
	assert_int_equal(vm.off[HS_NM_METHOD], 112);
	assert_int_equal(vm.off[HS_CP_SIZE], 72);
	assert_int_equal(vm.off[HS_HB_SIZE], 16);
	assert_int_equal(vm.off[HS_CC_HEAPS], (int64_t)(BASE + FJ_META));
	assert_int_equal(vm.off[HS_CC_HEAP], -1);
	assert_string_equal(vm.release, "17.0.99-fake");
	assert_true(vm.scopes);
	/* Another release: scopes in an encoding not known here, not read. */
	memcpy(i.m + FJ_STRINGS + 0x7000, "21.0.2+13", 10);
	fj_w64(i.m, FJ_META + 0x80, BASE + FJ_STRINGS + 0x7000);
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), 0);
	assert_false(vm.scopes);
	free(i.m);

	/* An unknown layout: what is missing is named. */
	setup_img(&i, var, &(struct fj_opts){ .omit_name = 1 });
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -ENOTSUP);
	assert_string_equal(vm.missing, "CodeBlob::_name");
	free(i.m);
}

static void test_names(void **state)
{
	uint64_t var[HSV_NR];
	struct hotspot_blob b;
	struct hotspot h;
	struct img i;
	char buf[HS_NAME_MAX];

	(void)state;
	setup_img(&i, var, NULL);
	setup_h(&h, &i, var);
	assert_int_equal(hotspot__blob_at(&h, CODE0, &b), 0);
	assert_int_equal(b.addr, BASE + FJ_HEAP + 16);
	assert_int_equal(b.method, BASE + FJ_METHOD_AT);
	assert_int_equal(b.id, 7);
	assert_string_equal(b.name, "nmethod");
	assert_true(hotspot__name_pc(&h, CODE0, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "com.example.Fake.work");
	/* The last segment of the blob: walked back to its first. */
	assert_true(hotspot__name_pc(&h, BASE + FJ_HEAP + FJ_CODE_END - 1, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "com.example.Fake.work");
	assert_true(hotspot__name_pc(&h, CODE1, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "Interpreter");
	/* Not code: the blob's header, past its code, a free block, no heap. */
	assert_int_equal(hotspot__name_pc(&h, BASE + FJ_HEAP + 0x20, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(hotspot__name_pc(&h, BASE + FJ_HEAP + FJ_CODE_END, buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(hotspot__name_pc(&h, BASE + FJ_HEAP + 0x10000, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(hotspot__name_pc(&h, BASE + FJ_HEAP - 8, buf, sizeof(buf)), -ENOENT);
	/* A block marked free in its header. */
	i.m[FJ_HEAP + 8] = 0;
	assert_int_equal(hotspot__name_pc(&h, CODE0, buf, sizeof(buf)), -ENOENT);
	free(i.m);
}

/* Names are kept per blob and checked against what the blob holds now. */
static void test_recompiled(void **state)
{
	uint64_t var[HSV_NR];
	struct hotspot_proc hp;
	struct img i;
	const char *n1, *n2;
	uint64_t reads;

	(void)state;
	setup_img(&i, var, NULL);
	memset(&hp, 0, sizeof(hp));
	setup_h(&hp.h, &i, var);
	n1 = hotspot__name(&hp, CODE0);
	assert_non_null(n1);
	assert_string_equal(n1, "com.example.Fake.work");
	reads = i.reads;
	assert_ptr_equal(hotspot__name(&hp, CODE0), n1); /* kept: fewer reads */
	assert_true(i.reads - reads < 8);

	/* The blob freed and another method compiled at its place (a new Method*,
	 * a new compile id): named anew, the old name still valid. */
	memcpy(i.m + FJ_METHOD_AT + 0x80, i.m + FJ_METHOD_AT, 88);
	fj_w64(i.m, FJ_CMETHOD_AT + 0x80 + 8, BASE + FJ_CPOOL_AT);
	fj_w16(i.m, FJ_CMETHOD_AT + 0x80 + 34, 6);
	fj_w64(i.m, FJ_METHOD_AT + 0x80 + 8, BASE + FJ_CMETHOD_AT + 0x80);
	fj_w64(i.m, FJ_CPOOL_AT + 72 + 6 * 8, BASE + FJ_MSYM_AT + 0x40);
	fj_w16(i.m, FJ_MSYM_AT + 0x40 + 4, 5);
	memcpy(i.m + FJ_MSYM_AT + 0x40 + 6, "other", 5);
	fj_w64(i.m, FJ_HEAP + 16 + 112, BASE + FJ_METHOD_AT + 0x80);
	fj_w32(i.m, FJ_HEAP + 16 + 304, 8);
	n2 = hotspot__name(&hp, CODE0);
	assert_non_null(n2);
	assert_string_equal(n2, "com.example.Fake.other");
	assert_string_equal(n1, "com.example.Fake.work");
	/* Recompiled (the same method, a new compile id): read again. */
	fj_w32(i.m, FJ_HEAP + 16 + 304, 9);
	reads = i.reads;
	assert_string_equal(hotspot__name(&hp, CODE0), "com.example.Fake.other");
	assert_true(i.reads - reads >= 8);
	/* Its place now a stub: the stub's name. */
	fj_w64(i.m, FJ_HEAP + 16 + 96, BASE + FJ_STRINGS); /* "CodeCache" */
	assert_string_equal(hotspot__name(&hp, CODE0), "CodeCache");
	/* Freed: no name. */
	memset(i.m + FJ_SEGMAP, 0xff, FJ_BLOB >> FJ_LOG2);
	assert_null(hotspot__name(&hp, CODE0));
	hotspot__proc_free(&hp);
	free(i.m);
}

/* Methods the JIT inlined: frames from the PcDesc at or after the pc and its scopes. */
static void test_inlined(void **state)
{
	const uint64_t code = BASE + FJ_HEAP + FJ_CODE, blob = FJ_HEAP + 16;
	uint64_t var[HSV_NR], ms[HS_MAX_INLINE];
	struct hotspot_blob b;
	struct hotspot_proc hp;
	const char *names[HS_MAX_INLINE];
	struct img i;

	(void)state;
	setup_img(&i, var, NULL);
	memset(&hp, 0, sizeof(hp));
	setup_h(&hp.h, &i, var);
	assert_int_equal(hotspot__blob_at(&hp.h, code + 0x40, &b), 0);
	assert_int_equal(b.code, code);
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), 2);
	assert_int_equal(ms[0], BASE + FJ_METHOD2_AT);
	assert_int_equal(ms[1], BASE + FJ_METHOD_AT);
	assert_int_equal(hotspot__frames(&hp, code + 0x40, names, HS_MAX_INLINE), 2);
	assert_string_equal(names[0], "com.example.Fake.inl");
	assert_string_equal(names[1], "com.example.Fake.work");
	/* max 1: the outermost */
	assert_int_equal(hotspot__frames(&hp, code + 0x40, names, 1), 1);
	assert_string_equal(names[0], "com.example.Fake.work");
	/* Before 0x20: work's scope; 0x60 to 0x100: no scope; past the last: the method. */
	assert_int_equal(hotspot__frames(&hp, code + 0x10, names, HS_MAX_INLINE), 1);
	assert_string_equal(names[0], "com.example.Fake.work");
	assert_int_equal(hotspot__frames(&hp, code + 0x80, names, HS_MAX_INLINE), 1);
	assert_int_equal(hotspot__frames(&hp, code + 0x680, names, HS_MAX_INLINE), 1);
	assert_string_equal(names[0], "com.example.Fake.work");

	/* Hostile debug information: the nmethod's method alone, never a wrong chain. */
	i.m[blob + 0x840 + 7] = 7; /* a scope its own sender */
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), -EINVAL);
	i.m[blob + 0x840 + 7] = 1;
	i.m[blob + 0x840 + 8] = 200; /* a metadata index past the metadata (multi-byte) */
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), -EINVAL);
	i.m[blob + 0x840 + 8] = 1; /* inl's scope says work: the chain work, work */
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), 2);
	i.m[blob + 0x840 + 1] = 7; /* the outer scope's sender the inner: a cycle */
	assert_true(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE) < 0);
	i.m[blob + 0x840 + 1] = 0;
	i.m[blob + 0x840 + 8] = 2;
	fj_w32(i.m, blob + 0x900 + 16 + 4, 0x7fffffff); /* a scope past the scopes */
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), -EINVAL);
	fj_w32(i.m, blob + 0x900 + 16 + 4, 7);
	fj_w32(i.m, blob + 272, 0x7fffff00); /* PcDescs past the blob: no debug information */
	assert_int_equal(hotspot__blob_at(&hp.h, code + 0x40, &b), 0);
	assert_int_equal(b.scopes, 0);
	assert_int_equal(hotspot__scopes(&hp.h, &b, code + 0x40, ms, HS_MAX_INLINE), 1);
	hotspot__proc_free(&hp);
	free(i.m);
}

static void test_hostile_tables(void **state)
{
	uint64_t var[HSV_NR];
	struct hotspot_vm vm;
	struct img i;

	(void)state;
	/* No terminator: every entry a type name (one not looked for). */
	setup_img(&i, var, NULL);
	for (uint32_t e = 0; FJ_STRUCTS + 48 * (e + 1) <= FJ_SIZE; e++)
		fj_w64(i.m, FJ_STRUCTS + 48 * e, BASE + FJ_STRINGS + 10);
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -E2BIG);
	assert_true(i.bytes <= HS_MAX_TABLE);
	free(i.m);

	/* Type names without a NUL (the whole image 'A's from them on), each
	 * entry its own pointer: read HS_STR_MAX bytes each, no further. */
	setup_img(&i, var, NULL);
	memset(i.m + FJ_HEAP, 'A', FJ_SIZE - FJ_HEAP);
	for (uint32_t e = 0; e < 20000; e++)
		fj_w64(i.m, FJ_STRUCTS + 48 * e, BASE + FJ_HEAP + e);
	assert_true(hotspot__read_tables(img_read, &i, var, &vm) < 0);
	assert_true(i.bytes <= HS_MAX_TABLE);
	free(i.m);

	/* Absurd strides and offsets. */
	setup_img(&i, var, NULL);
	var[HSV_SE_STRIDE] = 1u << 30;
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -EINVAL);
	var[HSV_SE_STRIDE] = 48;
	var[HSV_SE_ADDRESS] = 1000;
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -EINVAL);
	var[HSV_SE_ADDRESS] = 40;
	var[HSV_STRUCTS] = 0;
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -EINVAL);
	/* Fields at offsets past any object: not taken (the layout then lacks them). */
	fj_build(i.m, BASE, var, NULL);
	fj_w64(i.m, FJ_STRUCTS + 48 * 11 + 32, 1ull << 40); /* CodeBlob::_name */
	assert_int_equal(hotspot__read_tables(img_read, &i, var, &vm), -ENOTSUP);
	assert_string_equal(vm.missing, "CodeBlob::_name");
	free(i.m);
}

static void test_hostile_heap(void **state)
{
	uint64_t var[HSV_NR];
	struct hotspot_proc hp;
	struct img i;
	char buf[HS_NAME_MAX];
	const char *n;

	(void)state;
	setup_img(&i, var, NULL);
	memset(&hp, 0, sizeof(hp));
	setup_h(&hp.h, &i, var);

	/* A class name of 65535 bytes (over the method's too), control
	 * characters and bytes over 0x7e in it: cut, printable. */
	fj_w16(i.m, FJ_KSYM_AT + 4, 0xffff);
	memset(i.m + FJ_KSYM_AT + 6, '\n', 0xffff);
	i.m[FJ_KSYM_AT + 7] = (char)0xc3;
	n = hotspot__name(&hp, CODE0);
	assert_non_null(n);
	assert_true(strlen(n) < HS_NAME_MAX);
	for (const char *c = n; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
	/* (the method's Symbol is under the class name's bytes: cut as well) */
	assert_int_equal(strlen(n), 2 * HS_SYMBOL_MAX + 1);
	assert_non_null(strstr(n, "...."));
	hotspot__proc_free(&hp);
	memset(&hp, 0, sizeof(hp));
	setup_h(&hp.h, &i, var);

	/* A NUL in a symbol, a zero length, cyclic metadata (ConstMethod's
	 * constants the Method itself), a name index past the pool. */
	fj_w16(i.m, FJ_KSYM_AT + 4, 3);
	memcpy(i.m + FJ_KSYM_AT + 6, "a\0b", 3);
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -EINVAL);
	fj_w16(i.m, FJ_KSYM_AT + 4, 0);
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -EINVAL);
	fj_w16(i.m, FJ_KSYM_AT + 4, 1);
	fj_w16(i.m, FJ_CMETHOD_AT + 34, 200);
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -EINVAL);
	fj_w16(i.m, FJ_CMETHOD_AT + 34, 5);
	fj_w64(i.m, FJ_CMETHOD_AT + 8, BASE + FJ_METHOD_AT);
	fj_w64(i.m, FJ_METHOD_AT + 24, BASE + FJ_METHOD_AT);
	assert_true(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)) < 0);
	fj_w64(i.m, FJ_CMETHOD_AT + 8, BASE + FJ_CPOOL_AT);

	/* Blob sizes and code ranges that cannot be. */
	fj_w32(i.m, FJ_HEAP + 16 + 12, 0x7fffffff);
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -EINVAL);
	fj_w32(i.m, FJ_HEAP + 16 + 12, FJ_BLOB - 16);
	fj_w64(i.m, FJ_HEAP + 16 + 40, BASE + FJ_HEAP + 0x100000);
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -ENOENT);
	fj_w64(i.m, FJ_HEAP + 16 + 40, BASE + FJ_HEAP + FJ_CODE_END);

	/* A hop chain longer than HS_MAX_HOPS; a hop past the map's start. */
	memset(i.m + FJ_SEGMAP + 64, 1, (FJ_HEAP_SIZE >> FJ_LOG2) - 64);
	assert_int_equal(
		hotspot__name_pc(&hp.h, BASE + FJ_HEAP + FJ_HEAP_SIZE - 8, buf, sizeof(buf)),
		-ELOOP);
	i.m[FJ_SEGMAP + 3] = 200;
	assert_int_equal(hotspot__name_pc(&hp.h, BASE + FJ_HEAP + (3 << FJ_LOG2), buf, sizeof(buf)),
			 -EINVAL);
	i.m[FJ_SEGMAP + 3] = 3;

	/* A GrowableArray of 2^31-1 heaps, each the same: at most HS_MAX_HEAPS read. */
	fj_w32(i.m, FJ_META + 0x100, 0x7fffffff);
	for (int k = 0; k < 64; k++)
		fj_w64(i.m, FJ_META + 0x200 + 8 * k, BASE + FJ_META + 0x400);
	hp.h.nr_heaps = 0;
	assert_true(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)) > 0);
	assert_int_equal(hp.h.nr_heaps, HS_MAX_HEAPS);
	/* A heap whose segment map is smaller than its segments need. */
	fj_w64(i.m, FJ_META + 0x400 + 120 + 24, BASE + FJ_SEGMAP + 4);
	hp.h.nr_heaps = 0;
	assert_int_equal(hotspot__name_pc(&hp.h, CODE0, buf, sizeof(buf)), -ENOENT);
	hotspot__proc_free(&hp);
	free(i.m);
}

/* The struct table's entry of type::field in the image: its offset (a
 * field's) or address (a static's) slot. */
static uint32_t entry_slot(struct img *i, const char *type, const char *field)
{
	for (uint32_t e = FJ_STRUCTS;; e += 48) {
		uint64_t t, f;

		memcpy(&t, i->m + e, 8);
		memcpy(&f, i->m + e + 8, 8);
		assert_true(t != 0);
		if (!strcmp((char *)i->m + (t - BASE), type) &&
		    !strcmp((char *)i->m + (f - BASE), field))
			return e + (i->m[e + 24] ? 40 : 32);
	}
}

static int bpf_entry(struct img *i, uint64_t var[HSV_NR], struct bp_hsproc *bp)
{
	struct hotspot h;

	setup_h(&h, i, var);
	return hotspot__bpf(&h, bp);
}

/* What the BPF frame walker is given (hotspot_abi.h). */
static void test_bpf(void **state)
{
	uint64_t var[HSV_NR], reads;
	struct bp_hsproc bp;
	struct hotspot h;
	struct img i;

	(void)state;
	setup_img(&i, var, NULL);
	setup_h(&h, &i, var);
	h.max_bytes = 8; /* not the lookups' budget */
	reads = i.bytes;
	assert_int_equal(hotspot__bpf(&h, &bp), 0);
	assert_true(i.bytes - reads < 4096);
	assert_int_equal(bp.cc_lo, BASE + FJ_HEAP);
	assert_int_equal(bp.cc_hi, BASE + FJ_HEAP + FJ_HEAP_SIZE);
	assert_int_equal(bp.nr_heaps, 1);
	assert_int_equal(bp.heap[0].lo, BASE + FJ_HEAP);
	assert_int_equal(bp.heap[0].hi, BASE + FJ_HEAP + FJ_HEAP_SIZE);
	assert_int_equal(bp.heap[0].segmap, BASE + FJ_SEGMAP);
	assert_int_equal(bp.heap[1].lo, 0);
	assert_int_equal(bp.log2_seg, FJ_LOG2);
	assert_int_equal(bp.interp_lo, BASE + FJ_HEAP + FJ_BLOB + FJ_CODE);
	assert_int_equal(bp.interp_hi, BASE + FJ_HEAP + FJ_BLOB + FJ_CODE_END);
	assert_int_equal(bp.call_stub_ra, BASE + FJ_CALL_STUB_RA);
	assert_int_equal(bp.cb_frame_size, 28);
	assert_int_equal(bp.cb_frame_complete, 20);
	assert_int_equal(bp.cb_begin, 32);
	assert_int_equal(bp.cb_end, 40);
	assert_int_equal(bp.cb_size, 12);
	assert_int_equal(bp.hb_size, 16);
	assert_int_equal(bp.hb_used, 8);
	assert_int_equal(bp.flags, 0);
	assert_int_equal(bp.if_sender_sp, -1);
	assert_int_equal(bp.if_method, -3);
	assert_int_equal(bp.if_bcp, -8);
	assert_int_equal(bp.nm_deopt, 128);
	assert_int_equal(bp.nm_deopt_mh, 136);
	assert_int_equal(bp.nm_orig_pc, 300);
	assert_int_equal(bp.start_time, 0); /* the caller's */
	/* The blobs the walker is to find: the call stub and blob 0's frame. */
	{
		struct hotspot_blob b;
		char buf[HS_NAME_MAX];
		int32_t fs;

		h.max_bytes = HS_MAX_LOOKUP;
		assert_int_equal(hotspot__blob_at(&h, BASE + FJ_CALL_STUB_RA, &b), 0);
		assert_string_equal(b.name, "StubRoutines (1)");
		assert_true(hotspot__name_pc(&h, CODE0, buf, sizeof(buf)) > 0);
		memcpy(&fs, i.m + FJ_HEAP + bp.hb_size + bp.cb_frame_size, 4);
		assert_int_equal(fs, FJ_FRAME);
	}
	free(i.m);

	/* A VM whose tables lack _frame_size: names, no walk. */
	setup_img(&i, var, &(struct fj_opts){ .omit_frame_size = 1 });
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	setup_h(&h, &i, var);
	assert_true(hotspot__name_pc(&h, CODE0, (char[HS_NAME_MAX]){ 0 }, HS_NAME_MAX) > 0);
	free(i.m);

	/* Offsets outside the header window the walker reads: refused. */
	setup_img(&i, var, NULL);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_frame_size"), BP_HS_HDR - 4);
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_frame_size"), BP_HS_HDR - 8);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_code_end"), 200);
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_code_end"), 40);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_frame_complete_offset"), 1000);
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	fj_w64(i.m, entry_slot(&i, "CodeBlob", "_frame_complete_offset"), 20);
	/* Deopt handlers past the header read, or an orig pc offset past any
	 * object: walked, deoptimised frames at the handler's pc (never a read
	 * the window does not hold). */
	fj_w64(i.m, entry_slot(&i, "CompiledMethod", "_deopt_mh_handler_begin"),
	       BP_HS_HDR + BP_HS_HDR_EXTRA - 16 - 7);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);
	assert_int_equal(bp.nm_deopt + bp.nm_deopt_mh + bp.nm_orig_pc, 0);
	fj_w64(i.m, entry_slot(&i, "CompiledMethod", "_deopt_mh_handler_begin"),
	       BP_HS_HDR + BP_HS_HDR_EXTRA - 16 - 8);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);
	assert_int_equal(bp.nm_deopt_mh, BP_HS_HDR + BP_HS_HDR_EXTRA - 16 - 8);
	fj_w64(i.m, entry_slot(&i, "nmethod", "_orig_pc_offset"), 1u << 20);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);
	assert_int_equal(bp.nm_deopt + bp.nm_deopt_mh + bp.nm_orig_pc, 0);
	fj_w64(i.m, entry_slot(&i, "nmethod", "_orig_pc_offset"), 300);
	/* HeapBlock::Header::_used past sizeof(HeapBlock) */
	fj_w64(i.m, entry_slot(&i, "HeapBlock::Header", "_used"), 16);
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	fj_w64(i.m, entry_slot(&i, "HeapBlock::Header", "_used"), 8);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);

	/* A VM still starting: no interpreter, no call stub, no code cache yet. */
	fj_w64(i.m, FJ_STATICS + 24, 0);
	assert_int_equal(bpf_entry(&i, var, &bp), -EAGAIN);
	fj_w64(i.m, FJ_STATICS + 24, BASE + FJ_SQ_AT);
	fj_w64(i.m, FJ_STATICS + 16, 0);
	assert_int_equal(bpf_entry(&i, var, &bp), -EAGAIN);
	fj_w64(i.m, FJ_STATICS + 16, BASE + FJ_CALL_STUB_RA);
	fj_w64(i.m, FJ_STATICS, 0);
	assert_int_equal(bpf_entry(&i, var, &bp), -EAGAIN);
	fj_w64(i.m, FJ_STATICS, BASE + FJ_HEAP);

	/* Values that cannot be: the call stub or the interpreter outside the
	 * code cache, a heap outside it, a code cache of 8 GiB, a segment map
	 * shorter than its heap, five heaps. */
	fj_w64(i.m, FJ_STATICS + 16, BASE);
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	fj_w64(i.m, FJ_STATICS + 16, BASE + FJ_CALL_STUB_RA);
	fj_w32(i.m, FJ_SQ_AT + 20, FJ_HEAP_SIZE);
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	fj_w32(i.m, FJ_SQ_AT + 20, 0x80000000u);
	assert_int_equal(bpf_entry(&i, var, &bp), -EAGAIN); /* (a negative size: not made yet) */
	fj_w32(i.m, FJ_SQ_AT + 20, FJ_CODE_END - FJ_CODE);
	fj_w64(i.m, FJ_STATICS, BASE + FJ_HEAP + 0x1000);
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	fj_w64(i.m, FJ_STATICS, BASE + FJ_HEAP - (8ull << 30));
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	fj_w64(i.m, FJ_STATICS, BASE + FJ_HEAP);
	fj_w64(i.m, FJ_META + 0x400 + 8 + 8, BASE + FJ_HEAP + 2 * FJ_HEAP_SIZE);
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	fj_w64(i.m, FJ_META + 0x400 + 8 + 8, BASE + FJ_HEAP + FJ_HEAP_SIZE);
	assert_int_equal(bpf_entry(&i, var, &bp), 0);
	fj_w32(i.m, FJ_META + 0x100, 5);
	for (int k = 0; k < 5; k++)
		fj_w64(i.m, FJ_META + 0x200 + 8 * k, BASE + FJ_META + 0x400);
	assert_int_equal(bpf_entry(&i, var, &bp), -ENOTSUP);
	/* (two heaps, the same: overlapping) */
	fj_w32(i.m, FJ_META + 0x100, 2);
	assert_int_equal(bpf_entry(&i, var, &bp), -EINVAL);
	free(i.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),	     cmocka_unit_test(test_names),
		cmocka_unit_test(test_recompiled),   cmocka_unit_test(test_hostile_tables),
		cmocka_unit_test(test_hostile_heap), cmocka_unit_test(test_inlined),
		cmocka_unit_test(test_bpf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
