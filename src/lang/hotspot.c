// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * hotspot.c - a HotSpot JVM's code cache read from outside: code blobs and
 * Java method names (layout and rules in hotspot.h).
 */
#include "lang/hotspot.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "proc/ptab.h"

#define PAGE	 4096u
#define SEG_FREE 0xffu /* a free segment in the segment map */

const char *const hotspot_var_names[HSV_NR] = {
	"gHotSpotVMStructs",
	"gHotSpotVMTypes",
	"gHotSpotVMStructEntryTypeNameOffset",
	"gHotSpotVMStructEntryFieldNameOffset",
	"gHotSpotVMStructEntryIsStaticOffset",
	"gHotSpotVMStructEntryOffsetOffset",
	"gHotSpotVMStructEntryAddressOffset",
	"gHotSpotVMStructEntryArrayStride",
	"gHotSpotVMTypeEntryTypeNameOffset",
	"gHotSpotVMTypeEntrySizeOffset",
	"gHotSpotVMTypeEntryArrayStride",
};

enum want_kind { W_FIELD, W_STATIC, W_SIZE };

/* What is looked for; "need" entries missing make the VM unusable. */
static const struct want {
	const char *type, *field; /* field NULL: the type's size */
	enum hs_off off;
	enum want_kind kind;
	bool need;
} wants[] = {
	{ "CodeCache", "_heaps", HS_CC_HEAPS, W_STATIC, false },
	{ "CodeCache", "_heap", HS_CC_HEAP, W_STATIC, false },
	{ "GrowableArrayBase", "_len", HS_GA_LEN, W_FIELD, false },
	{ "GrowableArray<int>", "_len", HS_GA_LEN, W_FIELD, false },
	{ "GrowableArray<int>", "_data", HS_GA_DATA, W_FIELD, false },
	{ "CodeHeap", "_memory", HS_HEAP_MEMORY, W_FIELD, true },
	{ "CodeHeap", "_segmap", HS_HEAP_SEGMAP, W_FIELD, true },
	{ "CodeHeap", "_log2_segment_size", HS_HEAP_LOG2, W_FIELD, true },
	{ "VirtualSpace", "_low", HS_VS_LOW, W_FIELD, true },
	{ "VirtualSpace", "_high", HS_VS_HIGH, W_FIELD, true },
	{ "HeapBlock", "_header", HS_HB_HEADER, W_FIELD, false },
	{ "HeapBlock::Header", "_used", HS_HBH_USED, W_FIELD, true },
	{ "HeapBlock", NULL, HS_HB_SIZE, W_SIZE, true },
	{ "CodeBlob", "_name", HS_CB_NAME, W_FIELD, true },
	{ "CodeBlob", "_size", HS_CB_SIZE, W_FIELD, true },
	{ "CodeBlob", "_code_begin", HS_CB_BEGIN, W_FIELD, false },
	{ "CodeBlob", "_code_end", HS_CB_END, W_FIELD, false },
	{ "CodeBlob", "_code_offset", HS_CB_CODE_OFF, W_FIELD, false },
	{ "CodeBlob", "_data_offset", HS_CB_DATA_OFF, W_FIELD, false },
	{ "CompiledMethod", "_method", HS_NM_METHOD, W_FIELD, false },
	{ "nmethod", "_method", HS_NM_METHOD, W_FIELD, false },
	{ "nmethod", "_compile_id", HS_NM_ID, W_FIELD, false },
	{ "Method", "_constMethod", HS_M_CONST, W_FIELD, true },
	{ "ConstMethod", "_constants", HS_CM_CONSTANTS, W_FIELD, true },
	{ "ConstMethod", "_name_index", HS_CM_NAME, W_FIELD, true },
	{ "ConstantPool", "_pool_holder", HS_CP_HOLDER, W_FIELD, true },
	{ "ConstantPool", "_length", HS_CP_LENGTH, W_FIELD, false },
	{ "ConstantPool", NULL, HS_CP_SIZE, W_SIZE, true },
	{ "Klass", "_name", HS_K_NAME, W_FIELD, true },
	{ "Symbol", "_length", HS_SYM_LENGTH, W_FIELD, true },
	{ "Symbol", "_body", HS_SYM_BODY, W_FIELD, true },
	{ "CompiledMethod", "_scopes_data_begin", HS_NM_SCOPES, W_FIELD, false },
	{ "nmethod", "_scopes_data_begin", HS_NM_SCOPES, W_FIELD, false },
	{ "nmethod", "_metadata_offset", HS_NM_METADATA, W_FIELD, false },
	{ "nmethod", "_scopes_pcs_offset", HS_NM_PCS, W_FIELD, false },
	{ "nmethod", "_dependencies_offset", HS_NM_PCS_END, W_FIELD, false },
	{ "PcDesc", "_pc_offset", HS_PC_OFFSET, W_FIELD, false },
	{ "PcDesc", "_scope_decode_offset", HS_PC_SCOPE, W_FIELD, false },
	{ "PcDesc", NULL, HS_PC_SIZE, W_SIZE, false },
	{ "Abstract_VM_Version", "_s_vm_release", HS_VM_RELEASE, W_STATIC, false },
	{ "CodeBlob", "_frame_size", HS_CB_FRAME_SIZE, W_FIELD, false },
	{ "CodeBlob", "_frame_complete_offset", HS_CB_FRAME_COMPLETE, W_FIELD, false },
	{ "VirtualSpace", "_low_boundary", HS_VS_LOW_B, W_FIELD, false },
	{ "VirtualSpace", "_high_boundary", HS_VS_HIGH_B, W_FIELD, false },
	{ "CodeCache", "_low_bound", HS_CC_LOW, W_STATIC, false },
	{ "CodeCache", "_high_bound", HS_CC_HIGH, W_STATIC, false },
	{ "StubRoutines", "_call_stub_return_address", HS_CALL_STUB_RA, W_STATIC, false },
	{ "AbstractInterpreter", "_code", HS_INTERP_CODE, W_STATIC, false },
	{ "StubQueue", "_stub_buffer", HS_SQ_BUFFER, W_FIELD, false },
	{ "StubQueue", "_buffer_limit", HS_SQ_LIMIT, W_FIELD, false },
	{ "CompiledMethod", "_deopt_handler_begin", HS_NM_DEOPT, W_FIELD, false },
	{ "nmethod", "_deopt_handler_begin", HS_NM_DEOPT, W_FIELD, false },
	{ "CompiledMethod", "_deopt_mh_handler_begin", HS_NM_DEOPT_MH, W_FIELD, false },
	{ "nmethod", "_deopt_mh_handler_begin", HS_NM_DEOPT_MH, W_FIELD, false },
	{ "nmethod", "_orig_pc_offset", HS_NM_ORIG_PC, W_FIELD, false },
};
#define NR_WANTS (sizeof(wants) / sizeof(wants[0]))

/* Largest offset (and type size) believed: every object read is smaller. */
#define MAX_OFF 4096

/* --- the tables -------------------------------------------------------------------- */

struct treader {
	hotspot_read_fn rd;
	void *ctx;
	uint64_t bytes;
	uint64_t deadline;
	/* The last type name read (one pointer per type, usually). */
	uint64_t last_ptr;
	char last[HS_STR_MAX];
	bool last_ok;
};

static int tr_read(struct treader *r, uint64_t addr, void *buf, size_t len)
{
	if (r->bytes + len > HS_MAX_TABLE)
		return -E2BIG;
	r->bytes += len;
	return r->rd(r->ctx, addr, buf, len);
}

/* A C string of at most HS_STR_MAX - 1 bytes at addr (read page by page:
 * never past its NUL into a page that may not be there); 0, -ENAMETOOLONG
 * or the reader's error. */
static int tr_str(struct treader *r, uint64_t addr, char *out)
{
	size_t got = 0;

	if (!addr)
		return -EINVAL;
	while (got < HS_STR_MAX) {
		uint64_t a = addr + got;
		size_t n = PAGE - (a & (PAGE - 1));
		int err;

		if (a < addr)
			return -EINVAL;
		if (n > HS_STR_MAX - got)
			n = HS_STR_MAX - got;
		if ((err = tr_read(r, a, out + got, n)))
			return err;
		if (memchr(out + got, '\0', n))
			return 0;
		got += n;
	}
	return -ENAMETOOLONG;
}

static bool wanted_type(const char *name)
{
	for (size_t i = 0; i < NR_WANTS; i++)
		if (!strcmp(wants[i].type, name))
			return true;
	return false;
}

/* The type name at ptr, through the one-name cache; true if it is a type looked for. */
static int tr_type(struct treader *r, uint64_t ptr, bool *want)
{
	int err;

	if (ptr != r->last_ptr || !r->last_ptr) {
		r->last_ptr = ptr;
		r->last_ok = false;
		if ((err = tr_str(r, ptr, r->last))) {
			r->last_ptr = 0;
			/* A name too long is no type we want; a read that fails ends it. */
			return err == -ENAMETOOLONG || err == -EINVAL ? 0 : err;
		}
		r->last_ok = wanted_type(r->last);
	}
	*want = r->last_ok;
	return 0;
}

static void take(struct hotspot_vm *vm, const char *type, const char *field, enum want_kind kind,
		 int64_t value)
{
	for (size_t i = 0; i < NR_WANTS; i++) {
		const struct want *w = &wants[i];

		if (w->kind != kind || strcmp(w->type, type) ||
		    (field ? !w->field || strcmp(w->field, field) : w->field != NULL))
			continue;
		if (vm->off[w->off] < 0)
			vm->off[w->off] = value;
	}
}

/* A table's entries: stride bytes each, fields at the offsets given (each
 * 8 bytes, the static flag 4), ended by a NULL type name. */
static int walk(struct treader *r, struct hotspot_vm *vm, uint64_t table, uint64_t stride,
		const uint64_t *offs, size_t nr_offs, bool structs)
{
	enum { CHUNK = 32 };
	uint8_t buf[CHUNK * 256];
	uint64_t base = 0, have = 0;

	if (!table || stride < 16 || stride > 256)
		return -EINVAL;
	for (size_t i = 0; i < nr_offs; i++)
		if (offs[i] > stride - 8)
			return -EINVAL;
	for (uint64_t i = 0;; i++) {
		uint64_t e = table + i * stride, tname, v[5] = { 0 };
		const uint8_t *p;
		bool want = false;
		int err;

		if (i >= HS_MAX_ENTRIES)
			return -E2BIG;
		if (!(i & 255) && now_ns() > r->deadline)
			return -ETIME;
		if (e < table)
			return -EINVAL;
		if (i < base || i >= base + have) {
			/* Read CHUNK entries at once; near the table's end, one. */
			base = i;
			have = CHUNK;
			if (tr_read(r, e, buf, CHUNK * stride)) {
				have = 1;
				if ((err = tr_read(r, e, buf, stride)))
					return err;
			}
		}
		p = buf + (i - base) * stride;
		for (size_t k = 0; k < nr_offs; k++)
			memcpy(&v[k], p + offs[k], 8);
		tname = v[0];
		if (!tname)
			return 0;
		if ((err = tr_type(r, tname, &want)))
			return err;
		if (!want)
			continue;
		if (structs) {
			/* typeName, fieldName, isStatic, offset, address */
			char field[HS_STR_MAX];
			int32_t is_static;
			char type[HS_STR_MAX];

			memcpy(type, r->last, sizeof(type));
			memcpy(&is_static, p + offs[2], 4);
			if (tr_str(r, v[1], field))
				continue;
			if (is_static)
				take(vm, type, field, W_STATIC,
				     v[4] > INT64_MAX ? -1 : (int64_t)v[4]);
			else if (v[3] <= MAX_OFF)
				take(vm, type, field, W_FIELD, (int64_t)v[3]);
		} else if (v[1] && v[1] <= MAX_OFF) {
			take(vm, r->last, NULL, W_SIZE, (int64_t)v[1]);
		}
	}
}

int hotspot__read_tables(hotspot_read_fn rd, void *ctx, const uint64_t var[HSV_NR],
			 struct hotspot_vm *vm)
{
	struct treader r = { .rd = rd, .ctx = ctx, .deadline = now_ns() + HS_MAX_TABLE_NS };
	uint64_t so[5] = { var[HSV_SE_TYPE], var[HSV_SE_FIELD], var[HSV_SE_STATIC],
			   var[HSV_SE_OFFSET], var[HSV_SE_ADDRESS] };
	uint64_t to[2] = { var[HSV_TE_TYPE], var[HSV_TE_SIZE] };
	int err;

	memset(vm, 0, sizeof(*vm));
	for (int i = 0; i < HS_OFF_NR; i++)
		vm->off[i] = -1;
	if ((err = walk(&r, vm, var[HSV_STRUCTS], var[HSV_SE_STRIDE], so, 5, true)))
		return err;
	r.last_ptr = 0;
	if ((err = walk(&r, vm, var[HSV_TYPES], var[HSV_TE_STRIDE], to, 2, false)))
		return err;
	if (vm->off[HS_HB_HEADER] < 0)
		vm->off[HS_HB_HEADER] = 0;
	for (size_t i = 0; i < NR_WANTS; i++) {
		if (wants[i].need && vm->off[wants[i].off] < 0) {
			snprintf(vm->missing, sizeof(vm->missing), "%s::%s", wants[i].type,
				 wants[i].field ? wants[i].field : "(size)");
			return -ENOTSUP;
		}
	}
	/* One of each pair. */
	if (vm->off[HS_CC_HEAPS] < 0 && vm->off[HS_CC_HEAP] < 0)
		snprintf(vm->missing, sizeof(vm->missing), "CodeCache::_heaps");
	else if (vm->off[HS_CC_HEAPS] >= 0 && (vm->off[HS_GA_LEN] < 0 || vm->off[HS_GA_DATA] < 0))
		snprintf(vm->missing, sizeof(vm->missing), "GrowableArray<int>::_data");
	else if ((vm->off[HS_CB_BEGIN] < 0 || vm->off[HS_CB_END] < 0) &&
		 (vm->off[HS_CB_CODE_OFF] < 0 || vm->off[HS_CB_DATA_OFF] < 0))
		snprintf(vm->missing, sizeof(vm->missing), "CodeBlob::_code_begin");
	else if (vm->off[HS_NM_METHOD] < 0)
		snprintf(vm->missing, sizeof(vm->missing), "nmethod::_method");
	if (vm->missing[0])
		return -ENOTSUP;
	/* The release: "17.0.15+6-Debian-1deb12u1" (JDK 8's is HotSpot's own, 25.x). */
	if (vm->off[HS_VM_RELEASE] > 0) {
		uint64_t s;
		char rel[HS_STR_MAX];

		if (!tr_read(&r, (uint64_t)vm->off[HS_VM_RELEASE], &s, sizeof(s)) &&
		    !tr_str(&r, s, rel)) {
			unsigned major = 0;
			size_t l = strnlen(rel, sizeof(vm->release) - 1);

			memcpy(vm->release, rel, l);
			vm->release[l] = '\0';
			for (const char *c = rel; *c >= '0' && *c <= '9' && major < 1000; c++)
				major = major * 10 + (unsigned)(*c - '0');
			vm->scopes = major >= 9 && major <= 19;
		}
	}
	return 0;
}

/* --- lookups ----------------------------------------------------------------------- */

static int rd(struct hotspot *h, uint64_t addr, void *buf, size_t len)
{
	if (h->max_bytes && h->bytes_read + len > h->max_bytes)
		return -E2BIG;
	h->bytes_read += len;
	return h->read(h->ctx, addr, buf, len);
}

static int rd_ptr(struct hotspot *h, uint64_t addr, uint64_t *v)
{
	return rd(h, addr, v, sizeof(*v));
}

static uint64_t get64(const uint8_t *p, int64_t off)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	return v;
}

static int32_t get32(const uint8_t *p, int64_t off)
{
	int32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static int64_t max_off(const struct hotspot_vm *vm, const enum hs_off *o, size_t n, size_t width)
{
	int64_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (vm->off[o[i]] >= 0 && vm->off[o[i]] + (int64_t)width > m)
			m = vm->off[o[i]] + (int64_t)width;
	return m;
}

static int read_heap(struct hotspot *h, uint64_t heap, struct hotspot_heap *out)
{
	const struct hotspot_vm *vm = &h->vm;
	const enum hs_off o[] = { HS_HEAP_MEMORY, HS_HEAP_SEGMAP };
	uint8_t b[MAX_OFF + 256];
	const enum hs_off vso[] = { HS_VS_LOW, HS_VS_HIGH, HS_VS_LOW_B, HS_VS_HIGH_B };
	int64_t vs = max_off(vm, vso, 4, 8);
	int64_t n = max_off(vm, o, 2, (size_t)vs);
	int32_t log2;
	int err;

	if (vm->off[HS_HEAP_LOG2] + 4 > n)
		n = vm->off[HS_HEAP_LOG2] + 4;
	if (!heap || n > (int64_t)sizeof(b))
		return -EINVAL;
	if ((err = rd(h, heap, b, (size_t)n)))
		return err;
	out->lo = get64(b, vm->off[HS_HEAP_MEMORY] + vm->off[HS_VS_LOW]);
	out->hi = get64(b, vm->off[HS_HEAP_MEMORY] + vm->off[HS_VS_HIGH]);
	out->seg_lo = get64(b, vm->off[HS_HEAP_SEGMAP] + vm->off[HS_VS_LOW]);
	out->seg_hi = get64(b, vm->off[HS_HEAP_SEGMAP] + vm->off[HS_VS_HIGH]);
	if (vm->off[HS_VS_LOW_B] >= 0 && vm->off[HS_VS_HIGH_B] >= 0) {
		out->res_lo = get64(b, vm->off[HS_HEAP_MEMORY] + vm->off[HS_VS_LOW_B]);
		out->res_hi = get64(b, vm->off[HS_HEAP_MEMORY] + vm->off[HS_VS_HIGH_B]);
		out->seg_res_lo = get64(b, vm->off[HS_HEAP_SEGMAP] + vm->off[HS_VS_LOW_B]);
		out->seg_res_hi = get64(b, vm->off[HS_HEAP_SEGMAP] + vm->off[HS_VS_HIGH_B]);
	} else {
		out->res_lo = out->res_hi = out->seg_res_lo = out->seg_res_hi = 0;
	}
	log2 = get32(b, vm->off[HS_HEAP_LOG2]);
	if (log2 < 4 || log2 > 16 || out->hi <= out->lo || out->seg_hi <= out->seg_lo ||
	    ((out->hi - out->lo) >> log2) > out->seg_hi - out->seg_lo)
		return -EINVAL;
	out->log2 = (unsigned)log2;
	return 0;
}

/* The code heaps, read again (they grow as the VM commits more). */
static int read_heaps(struct hotspot *h)
{
	const struct hotspot_vm *vm = &h->vm;
	uint64_t heaps[HS_MAX_HEAPS];
	unsigned n = 0;
	int err;

	h->nr_heaps = 0;
	if (vm->off[HS_CC_HEAPS] >= 0) {
		uint64_t ga, data;
		int32_t len;

		if ((err = rd_ptr(h, (uint64_t)vm->off[HS_CC_HEAPS], &ga)))
			return err;
		if (!ga)
			return -EAGAIN;
		if ((err = rd(h, ga + (uint64_t)vm->off[HS_GA_LEN], &len, sizeof(len))) ||
		    (err = rd_ptr(h, ga + (uint64_t)vm->off[HS_GA_DATA], &data)))
			return err;
		if (len <= 0 || !data)
			return -EAGAIN;
		n = (unsigned)len < HS_MAX_HEAPS ? (unsigned)len : HS_MAX_HEAPS;
		if ((err = rd(h, data, heaps, n * sizeof(heaps[0]))))
			return err;
	} else {
		if ((err = rd_ptr(h, (uint64_t)vm->off[HS_CC_HEAP], &heaps[0])))
			return err;
		n = 1;
	}
	for (unsigned i = 0; i < n; i++)
		if (!read_heap(h, heaps[i], &h->heap[h->nr_heaps]))
			h->nr_heaps++;
	return h->nr_heaps ? 0 : -EAGAIN;
}

static const struct hotspot_heap *heap_of(const struct hotspot *h, uint64_t pc)
{
	for (unsigned i = 0; i < h->nr_heaps; i++)
		if (pc >= h->heap[i].lo && pc < h->heap[i].hi)
			return &h->heap[i];
	return NULL;
}

/* The first segment of the block holding segment idx. */
static int block_start(struct hotspot *h, const struct hotspot_heap *hp, uint64_t idx,
		       uint64_t *first)
{
	uint8_t win[256];
	uint64_t wlo = 0, wn = 0;

	for (unsigned step = 0; step < HS_MAX_HOPS; step++) {
		uint8_t b;
		int err;

		if (idx >= hp->seg_hi - hp->seg_lo)
			return -EINVAL;
		if (!wn || idx < wlo || idx >= wlo + wn) {
			wlo = idx >= sizeof(win) - 1 ? idx - (sizeof(win) - 1) : 0;
			wn = idx - wlo + 1;
			if ((err = rd(h, hp->seg_lo + wlo, win, wn)))
				return err;
		}
		b = win[idx - wlo];
		if (b == SEG_FREE)
			return -ENOENT;
		if (!b) {
			*first = idx;
			return 0;
		}
		if (b > idx)
			return -EINVAL;
		idx -= b;
	}
	return -ELOOP;
}

static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

int hotspot__blob_at(struct hotspot *h, uint64_t pc, struct hotspot_blob *b)
{
	const struct hotspot_vm *vm = &h->vm;
	const enum hs_off o[] = { HS_CB_NAME, HS_CB_BEGIN, HS_CB_END, HS_NM_METHOD, HS_NM_SCOPES };
	const enum hs_off o4[] = { HS_CB_SIZE,	   HS_CB_CODE_OFF, HS_CB_DATA_OFF, HS_NM_ID,
				   HS_NM_METADATA, HS_NM_PCS,	   HS_NM_PCS_END };
	const struct hotspot_heap *hp = heap_of(h, pc);
	uint8_t hdr[MAX_OFF + 16];
	uint64_t idx, block, begin, end, name;
	int64_t n, n4;
	int32_t size;
	uint8_t used;
	int err;

	memset(b, 0, sizeof(*b));
	b->id = -1;
	if (!hp) {
		if ((err = read_heaps(h)))
			return err == -EAGAIN ? -ENOENT : err;
		if (!(hp = heap_of(h, pc)))
			return -ENOENT;
	}
	if ((err = block_start(h, hp, (pc - hp->lo) >> hp->log2, &idx)))
		return err;
	block = hp->lo + (idx << hp->log2);
	if ((err = rd(h, block + (uint64_t)vm->off[HS_HB_HEADER] + (uint64_t)vm->off[HS_HBH_USED],
		      &used, 1)))
		return err;
	if (!used)
		return -ENOENT;
	b->addr = block + (uint64_t)vm->off[HS_HB_SIZE];
	n = max_off(vm, o, 5, 8);
	n4 = max_off(vm, o4, 7, 4);
	if (n4 > n)
		n = n4;
	if (n > (int64_t)sizeof(hdr))
		return -EINVAL;
	if ((err = rd(h, b->addr, hdr, (size_t)n)))
		return err;
	size = get32(hdr, vm->off[HS_CB_SIZE]);
	if (size <= 0 || (uint64_t)size > HS_MAX_BLOB || b->addr + (uint64_t)size > hp->hi)
		return -EINVAL;
	if (vm->off[HS_CB_BEGIN] >= 0 && vm->off[HS_CB_END] >= 0) {
		begin = get64(hdr, vm->off[HS_CB_BEGIN]);
		end = get64(hdr, vm->off[HS_CB_END]);
	} else {
		begin = b->addr + (uint64_t)(int64_t)get32(hdr, vm->off[HS_CB_CODE_OFF]);
		end = b->addr + (uint64_t)(int64_t)get32(hdr, vm->off[HS_CB_DATA_OFF]);
	}
	if (begin < b->addr || end > b->addr + (uint64_t)size || pc < begin || pc >= end)
		return -ENOENT;
	name = get64(hdr, vm->off[HS_CB_NAME]);
	if (!name || (err = rd(h, name, b->name, sizeof(b->name) - 1)))
		/* A name near a page's end: a shorter read. */
		if (!name || (err = rd(h, name, b->name, 16)))
			return err ? err : -EINVAL;
	b->name[sizeof(b->name) - 1] = '\0';
	clean(b->name);
	if (!strcmp(b->name, "nmethod") || !strcmp(b->name, "native nmethod")) {
		b->method = get64(hdr, vm->off[HS_NM_METHOD]);
		if (vm->off[HS_NM_ID] >= 0)
			b->id = get32(hdr, vm->off[HS_NM_ID]);
		if (!b->method)
			return -EINVAL;
		b->code = begin;
		if (vm->scopes && vm->off[HS_NM_SCOPES] >= 0 && vm->off[HS_NM_METADATA] >= 0 &&
		    vm->off[HS_NM_PCS] >= 0 && vm->off[HS_NM_PCS_END] >= 0 &&
		    vm->off[HS_PC_OFFSET] >= 0 && vm->off[HS_PC_SCOPE] >= 0 &&
		    vm->off[HS_PC_SIZE] > 0) {
			int32_t md = get32(hdr, vm->off[HS_NM_METADATA]);
			int32_t pcs = get32(hdr, vm->off[HS_NM_PCS]);
			int32_t pcs_end = get32(hdr, vm->off[HS_NM_PCS_END]);

			b->scopes = get64(hdr, vm->off[HS_NM_SCOPES]);
			/* metadata < scopes data < PcDescs, all in the blob */
			if (md > 0 && pcs > md && pcs_end >= pcs && pcs_end <= size &&
			    b->scopes > b->addr + (uint64_t)md &&
			    b->scopes <= b->addr + (uint64_t)pcs) {
				b->metadata = b->addr + (uint64_t)md;
				b->pcs = b->addr + (uint64_t)pcs;
				b->pcs_end = b->addr + (uint64_t)pcs_end;
			} else {
				b->scopes = 0;
			}
		}
	}
	return 0;
}

/* A Symbol's text into out (cap bytes with its NUL, cut with "..."); its length. */
static int symbol(struct hotspot *h, uint64_t sym, char *out, size_t cap)
{
	const struct hotspot_vm *vm = &h->vm;
	uint16_t len;
	size_t n;
	int err;

	if (!sym || (sym & 7) || cap < 8)
		return -EINVAL;
	if ((err = rd(h, sym + (uint64_t)vm->off[HS_SYM_LENGTH], &len, sizeof(len))))
		return err;
	if (!len)
		return -EINVAL;
	n = len < cap - 1 ? len : cap - 1;
	if ((err = rd(h, sym + (uint64_t)vm->off[HS_SYM_BODY], out, n)))
		return err;
	out[n] = '\0';
	if (memchr(out, '\0', n))
		return -EINVAL;
	clean(out);
	if (n < len)
		memcpy(out + n - 3, "...", 3);
	return (int)n;
}

/* What a Method*'s name is read from: the pointers to its class's and its
 * own Symbol, and the chain that led there. Equal ones name the same. */
struct method_id {
	uint64_t cm, constants, holder, kname, mname;
	uint16_t name_index;
};

/* The identity of Method* method (no Symbol text read); 0 or -errno. */
static int method_id(struct hotspot *h, uint64_t method, struct method_id *id)
{
	const struct hotspot_vm *vm = &h->vm;
	const enum hs_off cpo[] = { HS_CP_HOLDER };
	uint8_t cp[MAX_OFF + 8];
	int64_t n = max_off(vm, cpo, 1, 8);
	int err;

	memset(id, 0, sizeof(*id));
	if (!method || (method & 7))
		return -EINVAL;
	if (vm->off[HS_CP_LENGTH] >= 0 && vm->off[HS_CP_LENGTH] + 4 > n)
		n = vm->off[HS_CP_LENGTH] + 4;
	if ((err = rd_ptr(h, method + (uint64_t)vm->off[HS_M_CONST], &id->cm)))
		return err;
	if (!id->cm || (id->cm & 7))
		return -EINVAL;
	if ((err = rd_ptr(h, id->cm + (uint64_t)vm->off[HS_CM_CONSTANTS], &id->constants)) ||
	    (err = rd(h, id->cm + (uint64_t)vm->off[HS_CM_NAME], &id->name_index,
		      sizeof(id->name_index))))
		return err;
	if (!id->constants || (id->constants & 7) || !id->name_index)
		return -EINVAL;
	if ((err = rd(h, id->constants, cp, (size_t)n)))
		return err;
	id->holder = get64(cp, vm->off[HS_CP_HOLDER]);
	if (vm->off[HS_CP_LENGTH] >= 0 && id->name_index >= get32(cp, vm->off[HS_CP_LENGTH]))
		return -EINVAL;
	if ((err = rd_ptr(h, id->constants + (uint64_t)vm->off[HS_CP_SIZE] + 8u * id->name_index,
			  &id->mname)) ||
	    (err = id->holder ? rd_ptr(h, id->holder + (uint64_t)vm->off[HS_K_NAME], &id->kname)
			      : -EINVAL))
		return err;
	return 0;
}

/* "package.Class.method" of a method's identity into buf (NUL-terminated,
 * cut with "..."); its length, or -errno. */
static int method_text(struct hotspot *h, const struct method_id *id, char *buf, size_t len)
{
	char cls[HS_SYMBOL_MAX + 1], meth[HS_SYMBOL_MAX + 1];
	int64_t n;
	int cl, ml;

	if (len < 8)
		return -EINVAL;
	if ((cl = symbol(h, id->kname, cls, sizeof(cls))) < 0)
		return cl;
	if ((ml = symbol(h, id->mname, meth, sizeof(meth))) < 0)
		return ml;
	/* java/lang/String -> java.lang.String */
	for (char *c = cls; *c; c++)
		if (*c == '/')
			*c = '.';
	n = snprintf(buf, len, "%s.%s", cls, meth);
	if (n >= (int64_t)len) {
		memcpy(buf + len - 4, "...", 4);
		n = (int64_t)len - 1;
	}
	return (int)n;
}

/* "package.Class.method" of Method* method into buf (NUL-terminated, cut
 * with "..."); its length, or -errno. */
static int method_name(struct hotspot *h, uint64_t method, char *buf, size_t len)
{
	struct method_id id;
	int err;

	if (len < 8)
		return -EINVAL;
	if ((err = method_id(h, method, &id)))
		return err;
	return method_text(h, &id, buf, len);
}

/* HotSpot's compressed ints (CompressedReadStream, to JDK 20: UNSIGNED5
 * with L = 192, lg H = 6, at most 5 bytes) from b[*pos..n); -1 past n. */
static int64_t read_int(const uint8_t *b, size_t n, size_t *pos)
{
	uint32_t sum, shift = 6;

	if (*pos >= n)
		return -1;
	sum = b[(*pos)++];
	if (sum < 192)
		return sum;
	for (int i = 1; i < 5; i++, shift += 6) {
		uint32_t bi;

		if (*pos >= n)
			return -1;
		bi = b[(*pos)++];
		sum += bi << shift;
		if (bi < 192)
			break;
	}
	return (int64_t)(int32_t)sum;
}

int hotspot__scopes(struct hotspot *h, const struct hotspot_blob *b, uint64_t pc, uint64_t *out,
		    size_t max)
{
	const struct hotspot_vm *vm = &h->vm;
	uint64_t psize = (uint64_t)vm->off[HS_PC_SIZE], lo = 0, hi, rel, scope;
	uint8_t pd[MAX_OFF + 8];
	size_t n = 0;
	int err;

	if (!max)
		return -EINVAL;
	if (!b->scopes || pc < b->code) {
		out[0] = b->method;
		return 1;
	}
	if (psize < 8 || psize > MAX_OFF || vm->off[HS_PC_OFFSET] + 4 > (int64_t)psize ||
	    vm->off[HS_PC_SCOPE] + 4 > (int64_t)psize)
		return -EINVAL;
	hi = (b->pcs_end - b->pcs) / psize;
	if (hi > HS_MAX_PCS)
		return -EINVAL;
	rel = pc - b->code;
	/* The first PcDesc whose pc offset is past rel (sorted by pc offset). */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int32_t off;

		if ((err = rd(h, b->pcs + mid * psize + (uint64_t)vm->off[HS_PC_OFFSET], &off, 4)))
			return err;
		if ((int64_t)off > (int64_t)rel)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo >= (b->pcs_end - b->pcs) / psize) {
		out[0] = b->method;
		return 1;
	}
	if ((err = rd(h, b->pcs + lo * psize, pd, (size_t)psize)))
		return err;
	scope = (uint64_t)(uint32_t)get32(pd, vm->off[HS_PC_SCOPE]);
	/* Each scope: its sender's offset, its method (an index in the metadata), its bci. */
	while (scope) {
		uint8_t sb[16];
		size_t pos = 0, len = sizeof(sb);
		int64_t sender, mi;
		uint64_t m;

		if (n == max || n == HS_MAX_INLINE)
			return -E2BIG;
		if (b->scopes + scope < b->scopes || b->scopes + scope >= b->pcs)
			return -EINVAL;
		if (b->pcs - (b->scopes + scope) < len)
			len = (size_t)(b->pcs - (b->scopes + scope));
		if ((err = rd(h, b->scopes + scope, sb, len)))
			return err;
		sender = read_int(sb, len, &pos);
		mi = read_int(sb, len, &pos);
		if (sender < 0 || mi <= 0 || (uint64_t)sender >= scope)
			return -EINVAL; /* senders come before their scopes */
		if (b->metadata + 8 * (uint64_t)mi > b->scopes)
			return -EINVAL;
		if ((err = rd_ptr(h, b->metadata + 8 * (uint64_t)(mi - 1), &m)))
			return err;
		if (!m || (m & 7))
			return -EINVAL;
		out[n++] = m;
		scope = (uint64_t)sender;
	}
	if (!n) {
		out[0] = b->method; /* no scope here */
		return 1;
	}
	if (out[n - 1] != b->method)
		return -EINVAL; /* the outermost scope is the nmethod's own */
	return (int)n;
}

int hotspot__name_pc(struct hotspot *h, uint64_t pc, char *buf, size_t len)
{
	struct hotspot_blob b;
	int err = hotspot__blob_at(h, pc, &b);

	if (err)
		return err;
	if (b.method)
		return method_name(h, b.method, buf, len);
	if (!b.name[0] || len < 2)
		return -EINVAL;
	snprintf(buf, len, "%s", b.name);
	return (int)strlen(buf);
}

/* --- the walker's entry ------------------------------------------------------------ */

/* An offset into the BP_HS_HDR bytes the walker reads of a blob (each read 8 bytes wide). */
static bool in_window(int64_t off)
{
	return off >= 0 && off <= BP_HS_HDR - 8;
}

int hotspot__bpf(const struct hotspot *hs, struct bp_hsproc *out)
{
	static const enum hs_off walk[] = { HS_CB_FRAME_SIZE, HS_CB_FRAME_COMPLETE, HS_VS_LOW_B,
					    HS_VS_HIGH_B,     HS_CALL_STUB_RA,	    HS_INTERP_CODE,
					    HS_SQ_BUFFER,     HS_SQ_LIMIT };
	struct hotspot h = *hs; /* its own reads: not the caller's lookup budget */
	const struct hotspot_vm *vm = &h.vm;
	bool offsets = vm->off[HS_CB_BEGIN] < 0 || vm->off[HS_CB_END] < 0;
	int64_t begin = offsets ? vm->off[HS_CB_CODE_OFF] : vm->off[HS_CB_BEGIN];
	int64_t end = offsets ? vm->off[HS_CB_DATA_OFF] : vm->off[HS_CB_END];
	int64_t used = vm->off[HS_HB_HEADER] + vm->off[HS_HBH_USED];
	uint64_t sq, ra, buf, cc_lo = UINT64_MAX, cc_hi = 0;
	int32_t limit;
	int err;

	memset(out, 0, sizeof(*out));
	h.max_bytes = 0;
	for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++)
		if (vm->off[walk[i]] < 0)
			return -ENOTSUP;
	/* What the walker reads of a blob, in the window it reads. */
	if (!in_window(vm->off[HS_CB_FRAME_SIZE]) || !in_window(vm->off[HS_CB_FRAME_COMPLETE]) ||
	    !in_window(begin) || !in_window(end) || !in_window(vm->off[HS_CB_SIZE]))
		return -ENOTSUP;
	if (vm->off[HS_HB_SIZE] < 8 || vm->off[HS_HB_SIZE] > 256 || (vm->off[HS_HB_SIZE] & 7) ||
	    used < 0 || used >= vm->off[HS_HB_SIZE])
		return -ENOTSUP;

	/* The heaps, with their reserved bounds (the segment map covers them). */
	if ((err = read_heaps(&h)))
		return err;
	if (h.nr_heaps > BP_HS_HEAPS)
		return -ENOTSUP;
	for (unsigned i = 0; i < h.nr_heaps; i++) {
		const struct hotspot_heap *hp = &h.heap[i];

		if (hp->log2 != h.heap[0].log2)
			return -ENOTSUP; /* one segment size for all */
		if (hp->res_lo > hp->lo || hp->res_hi < hp->hi || hp->seg_res_lo != hp->seg_lo ||
		    hp->seg_res_hi < hp->seg_hi ||
		    ((hp->res_hi - hp->res_lo) >> hp->log2) > hp->seg_res_hi - hp->seg_res_lo)
			return -EINVAL;
		for (unsigned k = 0; k < i; k++)
			if (hp->res_lo < h.heap[k].res_hi && h.heap[k].res_lo < hp->res_hi)
				return -EINVAL; /* overlapping heaps */
		out->heap[i].lo = hp->res_lo;
		out->heap[i].hi = hp->res_hi;
		out->heap[i].segmap = hp->seg_res_lo;
		cc_lo = MIN(cc_lo, hp->res_lo);
		cc_hi = MAX(cc_hi, hp->res_hi);
	}
	out->nr_heaps = (uint8_t)h.nr_heaps;
	out->log2_seg = (uint8_t)h.heap[0].log2;

	/* The code cache's bounds (JDK 8 has none: its one heap's). */
	if (vm->off[HS_CC_LOW] >= 0 && vm->off[HS_CC_HIGH] >= 0) {
		uint64_t lo, hi;

		if ((err = rd_ptr(&h, (uint64_t)vm->off[HS_CC_LOW], &lo)) ||
		    (err = rd_ptr(&h, (uint64_t)vm->off[HS_CC_HIGH], &hi)))
			return err;
		if (!lo || !hi)
			return -EAGAIN;
		if (lo > cc_lo || hi < cc_hi)
			return -EINVAL; /* a heap outside the code cache */
		cc_lo = lo;
		cc_hi = hi;
	}
	if (cc_hi <= cc_lo || cc_hi - cc_lo > HS_MAX_CODE_CACHE)
		return -EINVAL;
	out->cc_lo = cc_lo;
	out->cc_hi = cc_hi;

	/* The interpreter's code (a StubQueue) and the call stub. */
	if ((err = rd_ptr(&h, (uint64_t)vm->off[HS_INTERP_CODE], &sq)))
		return err;
	if (!sq)
		return -EAGAIN;
	if ((err = rd_ptr(&h, sq + (uint64_t)vm->off[HS_SQ_BUFFER], &buf)) ||
	    (err = rd(&h, sq + (uint64_t)vm->off[HS_SQ_LIMIT], &limit, sizeof(limit))) ||
	    (err = rd_ptr(&h, (uint64_t)vm->off[HS_CALL_STUB_RA], &ra)))
		return err;
	if (!buf || limit <= 0 || !ra)
		return -EAGAIN;
	if ((uint64_t)limit > HS_MAX_BLOB || buf < cc_lo || buf + (uint64_t)limit > cc_hi ||
	    ra < cc_lo || ra >= cc_hi)
		return -EINVAL;
	out->interp_lo = buf;
	out->interp_hi = buf + (uint64_t)limit;
	out->call_stub_ra = ra;

	out->cb_frame_size = (uint16_t)vm->off[HS_CB_FRAME_SIZE];
	out->cb_frame_complete = (uint16_t)vm->off[HS_CB_FRAME_COMPLETE];
	out->cb_begin = (uint16_t)begin;
	out->cb_end = (uint16_t)end;
	out->cb_size = (uint16_t)vm->off[HS_CB_SIZE];
	out->hb_size = (uint16_t)vm->off[HS_HB_SIZE];
	out->hb_used = (uint16_t)used;
	out->flags = offsets ? HSPROC_F_CODE_OFFSETS : 0;
	/* x86-64's interpreter frame (frame_x86.hpp); JDK 8 (one code heap) has
	 * no mirror slot, so its bcp is one word nearer. */
	out->if_sender_sp = -1;
	out->if_method = -3;
	out->if_bcp = vm->off[HS_CC_HEAPS] < 0 ? -7 : -8;
	/* Deoptimised frames: both handlers' addresses in the header the walker
	 * reads (past the HeapBlock), the original pc's slot offset anywhere in
	 * the nmethod (a read of its own); else such a frame keeps the handler's
	 * pc (its nmethod's name without the methods inlined at the call). */
	if (vm->off[HS_NM_DEOPT] > 0 && vm->off[HS_NM_DEOPT_MH] > 0 && vm->off[HS_NM_ORIG_PC] > 0 &&
	    vm->off[HS_NM_ORIG_PC] <= MAX_OFF - 4 &&
	    vm->off[HS_NM_DEOPT] + out->hb_size <= BP_HS_HDR + BP_HS_HDR_EXTRA - 8 &&
	    vm->off[HS_NM_DEOPT_MH] + out->hb_size <= BP_HS_HDR + BP_HS_HDR_EXTRA - 8) {
		out->nm_deopt = (uint16_t)vm->off[HS_NM_DEOPT];
		out->nm_deopt_mh = (uint16_t)vm->off[HS_NM_DEOPT_MH];
		out->nm_orig_pc = (uint16_t)vm->off[HS_NM_ORIG_PC];
	}
	return 0;
}

/* --- a process ------------------------------------------------------------------- */

#define MAX_SYMS    (1u << 20) /* symbols looked at in one file */
#define PROBE_FILES 8

/* What one file holds (its memo, MFILE_MEMO_HOTSPOT). */
struct hsfile {
	bool jvm;
	uint64_t var[HSV_NR]; /* the variables' addresses (file vaddr) */
	bool warned;	      /* -ENOTSUP's why given (once per libjvm file) */
};

static void find_vars(Elf *elf, struct hsfile *f)
{
	bool found[HSV_NR];

	f->jvm = elffile__find_syms(elf, hotspot_var_names, HSV_NR, ELFFILE_OBJECTS, MAX_SYMS, NULL,
				    found, f->var, NULL) == HSV_NR;
}

/* Load bias of mapping m of the file: address = vaddr + bias. */
static int load_bias(Elf *elf, const struct procmap *m, uint64_t *bias)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (m->offset >= ph.p_offset && m->offset - ph.p_offset < ph.p_filesz) {
			*bias = m->start - (m->offset - ph.p_offset + ph.p_vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

static struct hsfile *file_vars(struct mfile *mf, unsigned *left)
{
	struct hsfile *f = (struct hsfile *)mfile__memo(mf, MFILE_MEMO_HOTSPOT);
	Elf *elf;

	if (f)
		return f;
	if (!*left || !(elf = mfile__elf(mf)))
		return NULL;
	(*left)--;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	find_vars(elf, f);
	mfile__set_memo(mf, MFILE_MEMO_HOTSPOT, f);
	return f;
}

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct hotspot_proc *hp = ctx;

	return ptab__read_mem(hp->t, hp->p, addr, buf, len) == (ssize_t)len ? 0 : -EFAULT;
}

int hotspot__probe(struct ptab *t, struct pproc *p, struct hotspot_proc *out, char *why,
		   size_t why_len)
{
	struct pmaps *pm = ptab__maps(t, p);
	unsigned left = PROBE_FILES;
	int err = -ENOENT;

	why[0] = '\0';
	if (!pm)
		return -ENOENT;
	for (size_t i = 0; i < pm->m.nr && err == -ENOENT; i++) {
		const struct procmap *m = &pm->m.maps[i];
		struct hsfile *f;
		uint64_t bias, var[HSV_NR];
		struct mfile *mf;

		if (!m->path || !(m->perms & PROCMAP_X) || m->path[0] != '/')
			continue;
		if (i && pm->m.maps[i - 1].path && !strcmp(pm->m.maps[i - 1].path, m->path))
			continue; /* the same file, already tried */
		if (ptab__file(t, p, m, &mf))
			continue;
		f = file_vars(mf, &left);
		if (!f || !f->jvm || !mfile__elf(mf) || load_bias(mfile__elf(mf), m, &bias)) {
			mfile__put(t, mf);
			continue;
		}
		mfile__put(t, mf);
		memset(out, 0, sizeof(*out));
		out->t = t;
		out->p = p;
		out->h.read = proc_read;
		out->h.ctx = out;
		err = 0;
		for (int k = 0; k < HSV_NR && !err; k++)
			err = rd_ptr(&out->h, f->var[k] + bias, &var[k]);
		if (err || !var[HSV_STRUCTS] || !var[HSV_SE_STRIDE] || !var[HSV_TE_STRIDE]) {
			err = -EAGAIN; /* not filled yet */
			break;
		}
		/* Set: a table not readable now is not going to be. */
		err = hotspot__read_tables(proc_read, out, var, &out->h.vm);
		if (err) {
			if (!f->warned)
				snprintf(why, why_len,
					 "HotSpot JVM %s: %s%s: its Java methods are not named",
					 m->path,
					 err == -ENOTSUP ? "its VM structures lack "
							 : "its VM structures are not readable: ",
					 err == -ENOTSUP ? out->h.vm.missing
					 : err == -ETIME ? "over their time budget"
					 : err == -E2BIG ? "over their size cap"
							 : strerror(-err));
			/* The memo is this module's: one warning per libjvm file. */
			f->warned = true;
			err = -ENOTSUP;
		}
	}
	pmaps__put(pm);
	out->h.max_bytes = HS_MAX_LOOKUP;
	return err;
}

struct hs_name {
	uint64_t blob, method;
	int32_t id;
	uint32_t n;
	char blob_name[48];
	const char *name[HS_MAX_INLINE]; /* innermost first, into text */
	char text[];
};

static bool same(const struct hs_name *n, const struct hotspot_blob *b)
{
	return n->blob == b->addr && n->method == b->method && n->id == b->id &&
	       !strcmp(n->blob_name, b->name);
}

size_t hotspot__frames(struct hotspot_proc *hp, uint64_t pc, const char **names, size_t max)
{
	struct hotspot_blob b;
	struct htab_entry *e;
	struct hs_name *n;
	char buf[HS_MAX_INLINE][HS_NAME_MAX];
	uint64_t methods[HS_MAX_INLINE];
	size_t bytes = 0, nr;
	bool created;
	int k;

	if (!max || (!hp->names && !(hp->names = htab__new())))
		return 0;
	hp->h.bytes_read = 0; /* HS_MAX_LOOKUP: per lookup */
	if (hotspot__blob_at(&hp->h, pc, &b))
		return 0;
	e = htab__find(hp->names, &pc, sizeof(pc));
	n = e ? e->value : NULL;
	if (!n || !same(n, &b)) {
		if (!b.method) {
			nr = 1;
			snprintf(buf[0], sizeof(buf[0]), "%s", b.name);
		} else {
			/* Inlined methods: their names, else the nmethod's alone. */
			k = hotspot__scopes(&hp->h, &b, pc, methods, HS_MAX_INLINE);
			if (k <= 0) {
				methods[0] = b.method;
				k = 1;
			}
			nr = (size_t)k;
			for (size_t i = 0; i < nr; i++) {
				if (method_name(&hp->h, methods[i], buf[i], sizeof(buf[i])) > 0)
					continue;
				/* One not named: the nmethod's own alone. */
				if (method_name(&hp->h, b.method, buf[0], sizeof(buf[0])) <= 0)
					return 0;
				nr = 1;
				break;
			}
		}
		for (size_t i = 0; i < nr; i++)
			bytes += strlen(buf[i]) + 1;
		if (n) {
			/* Replaced: the old names may still be in use until the process goes. */
			if (array_grow((void **)&hp->retired, &hp->cap_retired, hp->nr_retired + 1,
				       sizeof(*hp->retired)))
				return 0;
			hp->retired[hp->nr_retired++] = n;
			e->value = NULL;
		}
		if (hp->nr_names + hp->nr_retired >= HS_MAX_NAMES ||
		    hp->name_bytes + sizeof(*n) + bytes > HS_MAX_NAME_BYTES)
			return 0;
		n = malloc(sizeof(*n) + bytes);
		if (!n)
			return 0;
		n->blob = b.addr;
		n->method = b.method;
		n->id = b.id;
		n->n = (uint32_t)nr;
		memcpy(n->blob_name, b.name, sizeof(n->blob_name));
		for (size_t i = 0, at = 0; i < nr; i++) {
			size_t l = strlen(buf[i]) + 1;

			memcpy(n->text + at, buf[i], l);
			n->name[i] = n->text + at;
			at += l;
		}
		e = htab__upsert(hp->names, &pc, sizeof(pc), &created);
		if (!e) {
			free(n);
			return 0;
		}
		if (created)
			hp->nr_names++;
		e->value = n;
		hp->name_bytes += sizeof(*n) + bytes;
	}
	nr = n->n < max ? n->n : max;
	/* Cut to max: the outermost ones kept (the nmethod's own last). */
	for (size_t i = 0; i < nr; i++)
		names[i] = n->name[n->n - nr + i];
	return nr;
}

/* A Method*'s name, kept with what it was read from (method_id). */
struct hs_mname {
	struct method_id id;
	char text[];
};

const char *hotspot__method(struct hotspot_proc *hp, uint64_t method)
{
	struct method_id id;
	struct htab_entry *e;
	struct hs_mname *n;
	char buf[HS_NAME_MAX];
	size_t bytes;
	bool created;
	int len;

	if (!hp->methods && !(hp->methods = htab__new()))
		return NULL;
	hp->h.bytes_read = 0; /* HS_MAX_LOOKUP: per lookup */
	/* Its identity read again each time: a Method* freed with its class
	 * and made another method's names that one. */
	if (method_id(&hp->h, method, &id))
		return NULL;
	e = htab__find(hp->methods, &method, sizeof(method));
	n = e ? e->value : NULL;
	if (n && !memcmp(&n->id, &id, sizeof(id)))
		return n->text;
	if ((len = method_text(&hp->h, &id, buf, sizeof(buf))) <= 0)
		return NULL;
	bytes = (size_t)len + 1;
	if (n) {
		/* Replaced: the old name may still be in use until the process goes. */
		if (array_grow((void **)&hp->retired, &hp->cap_retired, hp->nr_retired + 1,
			       sizeof(*hp->retired)))
			return NULL;
		hp->retired[hp->nr_retired++] = n;
		e->value = NULL;
	}
	if (hp->nr_names + hp->nr_retired >= HS_MAX_NAMES ||
	    hp->name_bytes + sizeof(*n) + bytes > HS_MAX_NAME_BYTES)
		return NULL;
	n = malloc(sizeof(*n) + bytes);
	if (!n)
		return NULL;
	memcpy(&n->id, &id, sizeof(id)); /* with its padding: compared by memcmp */
	memcpy(n->text, buf, bytes);
	e = htab__upsert(hp->methods, &method, sizeof(method), &created);
	if (!e) {
		free(n);
		return NULL;
	}
	if (created)
		hp->nr_names++;
	e->value = n;
	hp->name_bytes += sizeof(*n) + bytes;
	return n->text;
}

const char *hotspot__name(struct hotspot_proc *hp, uint64_t pc)
{
	const char *names[HS_MAX_INLINE];
	size_t n = hotspot__frames(hp, pc, names, HS_MAX_INLINE);

	return n ? names[n - 1] : NULL;
}

void hotspot__proc_free(struct hotspot_proc *hp)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!hp)
		return;
	while (hp->names && (e = htab__next(hp->names, &pos)))
		free(e->value);
	htab__free(hp->names);
	pos = 0;
	while (hp->methods && (e = htab__next(hp->methods, &pos)))
		free(e->value);
	htab__free(hp->methods);
	for (size_t i = 0; i < hp->nr_retired; i++)
		free(hp->retired[i]);
	free(hp->retired);
	memset(hp, 0, sizeof(*hp));
}
