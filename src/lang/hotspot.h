/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hotspot.h - a HotSpot JVM read from outside the process: the code blob
 * that holds a pc in its code cache, and the Java method compiled into it
 * (issue 42), with no JVM option.
 *
 * libjvm.so exports the VM's description of itself, the tables its
 * serviceability agent reads: gHotSpotVMStructs (per field: type name,
 * field name, static or not, offset or address), gHotSpotVMTypes (per type:
 * name and size) and the layout of their entries (gHotSpotVMStructEntry*Offset,
 * *ArrayStride...), filled at the VM's start. The offsets bpfprof needs are
 * taken from them, so a version is data, not code:
 *
 *   CodeCache::_heaps   GrowableArray<CodeHeap*> (_len, _data) (8: _heap)
 *   CodeHeap            _memory, _segmap (VirtualSpace _low/_high), _log2_segment_size
 *   HeapBlock           a block's header (_used), sizeof: where its blob starts
 *   CodeBlob            _name, _code_begin/_code_end (or _code_offset/_data_offset), _size
 *   nmethod             _method (CompiledMethod's in 17), _compile_id
 *   Method -> ConstMethod (_constants, _name_index) -> ConstantPool
 *   (_pool_holder, its entries after sizeof(ConstantPool)) -> Klass::_name;
 *   Symbol _length, _body
 *
 * A pc's blob: its segment in the code heap, the segment map walked back
 * (a byte per segment: 0 a block's first, n: n segments further back, 0xff
 * free) to the block's first segment, the block's header, the blob after
 * it. An nmethod ("nmethod", "native nmethod") is named by its Method*:
 * "package.Class.method" as Java stack traces print it; other blobs by
 * their own name ("Interpreter", "StubRoutines (1)", ...).
 *
 * Everything is read through the caller's reader and is untrusted: tables
 * bounded in entries, string lengths, bytes and time; walks in steps;
 * names in length and characters. A bad table or blob gives no name, never
 * a loop or a read the caps do not allow.
 */
#ifndef BPFPROF_HOTSPOT_H
#define BPFPROF_HOTSPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotspot_abi.h"

#define HS_MAX_ENTRIES	16384u	       /* entries read of one table */
#define HS_MAX_TABLE	(4u << 20)     /* bytes read for the tables */
#define HS_MAX_TABLE_NS (200000000ull) /* ... and their time */
#define HS_STR_MAX	64u	       /* bytes read of a type or field name */
#define HS_MAX_HEAPS	8u	       /* code heaps */
#define HS_MAX_HOPS	4096u	       /* segment map steps per lookup */
#define HS_MAX_BLOB	(64u << 20)    /* largest code blob believed */
#define HS_MAX_LOOKUP	(64u << 10)    /* bytes read per lookup */
#define HS_SYMBOL_MAX	200u	       /* bytes read of a class or method name */
#define HS_NAME_MAX	(2 * HS_SYMBOL_MAX + 8)

/* Reads len bytes of the process at addr; 0, or -errno (a short read is an error). */
typedef int (*hotspot_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The exported variables read (their values: a table's address, a layout's number). */
enum hs_var {
	HSV_STRUCTS,	/* gHotSpotVMStructs: VMStructEntry* */
	HSV_TYPES,	/* gHotSpotVMTypes: VMTypeEntry* */
	HSV_SE_TYPE,	/* gHotSpotVMStructEntryTypeNameOffset */
	HSV_SE_FIELD,	/* ...FieldNameOffset */
	HSV_SE_STATIC,	/* ...IsStaticOffset */
	HSV_SE_OFFSET,	/* ...OffsetOffset */
	HSV_SE_ADDRESS, /* ...AddressOffset */
	HSV_SE_STRIDE,	/* gHotSpotVMStructEntryArrayStride */
	HSV_TE_TYPE,	/* gHotSpotVMTypeEntryTypeNameOffset */
	HSV_TE_SIZE,	/* ...SizeOffset */
	HSV_TE_STRIDE,	/* gHotSpotVMTypeEntryArrayStride */
	HSV_NR,
};
extern const char *const hotspot_var_names[HSV_NR];

/* What is taken from the tables: a field's offset, a static's address, a type's size. */
enum hs_off {
	HS_CC_HEAPS,	 /* static CodeCache::_heaps (GrowableArray<CodeHeap*>*) */
	HS_CC_HEAP,	 /* static CodeCache::_heap (CodeHeap*; JDK 8) */
	HS_GA_LEN,	 /* GrowableArrayBase::_len (int) */
	HS_GA_DATA,	 /* GrowableArray<int>::_data */
	HS_HEAP_MEMORY,	 /* CodeHeap::_memory (VirtualSpace) */
	HS_HEAP_SEGMAP,	 /* CodeHeap::_segmap (VirtualSpace) */
	HS_HEAP_LOG2,	 /* CodeHeap::_log2_segment_size (int) */
	HS_VS_LOW,	 /* VirtualSpace::_low */
	HS_VS_HIGH,	 /* VirtualSpace::_high */
	HS_HB_HEADER,	 /* HeapBlock::_header */
	HS_HBH_USED,	 /* HeapBlock::Header::_used (bool) */
	HS_HB_SIZE,	 /* sizeof(HeapBlock) */
	HS_CB_NAME,	 /* CodeBlob::_name (const char*) */
	HS_CB_SIZE,	 /* CodeBlob::_size (int) */
	HS_CB_BEGIN,	 /* CodeBlob::_code_begin */
	HS_CB_END,	 /* CodeBlob::_code_end */
	HS_CB_CODE_OFF,	 /* CodeBlob::_code_offset (int; when no _code_begin) */
	HS_CB_DATA_OFF,	 /* CodeBlob::_data_offset (int) */
	HS_NM_METHOD,	 /* nmethod's (CompiledMethod's) _method */
	HS_NM_ID,	 /* nmethod::_compile_id (int) */
	HS_M_CONST,	 /* Method::_constMethod */
	HS_CM_CONSTANTS, /* ConstMethod::_constants */
	HS_CM_NAME,	 /* ConstMethod::_name_index (u2) */
	HS_CP_HOLDER,	 /* ConstantPool::_pool_holder */
	HS_CP_LENGTH,	 /* ConstantPool::_length (int) */
	HS_CP_SIZE,	 /* sizeof(ConstantPool): its entries follow it */
	HS_K_NAME,	 /* Klass::_name */
	HS_SYM_LENGTH,	 /* Symbol::_length (u2) */
	HS_SYM_BODY,	 /* Symbol::_body */
	/* Inlined methods (optional: without them, no inlined frames) */
	HS_NM_SCOPES,	/* nmethod's (CompiledMethod's) _scopes_data_begin */
	HS_NM_METADATA, /* nmethod::_metadata_offset (int, from the blob) */
	HS_NM_PCS,	/* nmethod::_scopes_pcs_offset (int) */
	HS_NM_PCS_END,	/* nmethod::_dependencies_offset (int): the PcDescs' end */
	HS_PC_OFFSET,	/* PcDesc::_pc_offset (int) */
	HS_PC_SCOPE,	/* PcDesc::_scope_decode_offset (int) */
	HS_PC_SIZE,	/* sizeof(PcDesc) */
	HS_VM_RELEASE,	/* static Abstract_VM_Version::_s_vm_release (const char*) */
	/* Walking its frames (optional: without them, native frames alone) */
	HS_CB_FRAME_SIZE,     /* CodeBlob::_frame_size (int, words) */
	HS_CB_FRAME_COMPLETE, /* CodeBlob::_frame_complete_offset (int; int16_t from 23) */
	HS_VS_LOW_B,	      /* VirtualSpace::_low_boundary (reserved: never moves) */
	HS_VS_HIGH_B,	      /* VirtualSpace::_high_boundary */
	HS_CC_LOW,	      /* static CodeCache::_low_bound (address) */
	HS_CC_HIGH,	      /* static CodeCache::_high_bound */
	HS_CALL_STUB_RA,      /* static StubRoutines::_call_stub_return_address */
	HS_INTERP_CODE,	      /* static AbstractInterpreter::_code (StubQueue*) */
	HS_SQ_BUFFER,	      /* StubQueue::_stub_buffer (address) */
	HS_SQ_LIMIT,	      /* StubQueue::_buffer_limit (int: its size) */
	/* Deoptimised frames walked at their original pc (optional) */
	HS_NM_DEOPT,	/* nmethod's (CompiledMethod's) _deopt_handler_begin (address) */
	HS_NM_DEOPT_MH, /* ... _deopt_mh_handler_begin (address) */
	HS_NM_ORIG_PC,	/* nmethod::_orig_pc_offset (int: the slot, from the frame's sp) */
	HS_OFF_NR,
};

/* One VM's layout, from its tables. */
struct hotspot_vm {
	int64_t off[HS_OFF_NR]; /* -1: not in the tables */
	char missing[48];	/* "Type::_field" of the first needed entry not found */
	char release[32];	/* the VM's release ("17.0.15+6-Debian-1deb12u1"), or "" */
	/* Its scopes' encoding is known (JDK 9 to 19: CompressedReadStream's;
	 * 20 made it UNSIGNED5's): inlined methods are read. */
	bool scopes;
};

/*
 * Reads the tables var[] describes (the variables' values) into vm; 0,
 * -ENOTSUP (a needed entry is missing: vm->missing names it), -EINVAL (a
 * layout that cannot be: a stride or offset out of range), -E2BIG/-ETIME
 * (over the caps), or the reader's error.
 */
int hotspot__read_tables(hotspot_read_fn rd, void *ctx, const uint64_t var[HSV_NR],
			 struct hotspot_vm *vm);

struct hotspot_heap {
	uint64_t lo, hi, seg_lo, seg_hi;		 /* committed */
	uint64_t res_lo, res_hi, seg_res_lo, seg_res_hi; /* reserved (0: not in the tables) */
	unsigned log2;
};

/* One process's code cache: the layout and how to read it. */
struct hotspot {
	struct hotspot_vm vm;
	hotspot_read_fn read;
	void *ctx;
	struct hotspot_heap heap[HS_MAX_HEAPS];
	unsigned nr_heaps;
	uint64_t bytes_read, max_bytes; /* reads fail with -E2BIG past max_bytes (0: no cap) */
};

/* A code blob, as read at a pc. */
struct hotspot_blob {
	uint64_t addr;	 /* the blob */
	uint64_t method; /* its Method* (an nmethod), else 0 */
	int32_t id;	 /* its compile id (an nmethod), else -1 */
	char name[48];	 /* its own name ("nmethod", "Interpreter", ...) */
	/* An nmethod's code, debug information and metadata (0: not known). */
	uint64_t code, scopes, pcs, pcs_end, metadata;
};

/* The blob holding pc in a code heap; 0, -ENOENT (none: no heap, a free
 * block, a pc outside its code), -EINVAL (bytes that are not a blob) or
 * the reader's error. The heaps are read again when pc is in none. */
int hotspot__blob_at(struct hotspot *h, uint64_t pc, struct hotspot_blob *b);

/* The name of the code at pc (a method's, else its blob's); its length or -errno. */
int hotspot__name_pc(struct hotspot *h, uint64_t pc, char *buf, size_t len);

#define HS_MAX_CODE_CACHE (4ull << 30) /* largest code cache believed (HotSpot's cap: 2 GiB) */

/*
 * What the BPF walker needs to step through h's JIT-compiled and
 * interpreted frames (hotspot_abi.h), read now through h's reader: the
 * code cache's and heaps' reserved bounds, the interpreter's code, the call
 * stub's return address, the CodeBlob fields' offsets (each within the
 * BP_HS_HDR bytes the walker reads of a blob). start_time and exec_id are
 * the caller's. 0; -ENOTSUP a layout the walker cannot follow (an entry
 * missing from the tables, an offset outside its window, more heaps than
 * BP_HS_HEAPS); -EAGAIN the VM not started far enough (its code cache or
 * interpreter not made yet); -EINVAL values that cannot be (bounds
 * inverted, a heap or the interpreter outside the code cache); or the
 * reader's error. Reads a few hundred bytes, whatever h->max_bytes says.
 */
int hotspot__bpf(const struct hotspot *h, struct bp_hsproc *out);

#define HS_MAX_INLINE 16u	 /* inlined methods per pc (C2's MaxInlineLevel is 15) */
#define HS_MAX_PCS    (1u << 20) /* PcDescs of an nmethod believed */

/*
 * The methods at pc of nmethod b, innermost first (the methods the JIT
 * inlined there, then b's own): from the PcDesc of the first safepoint at
 * or after pc (a return address: its call's), its scope and its senders
 * in the debug information; out[0] = b's method alone when it has none.
 * Their number (at least 1), or -errno for debug information that cannot be.
 */
int hotspot__scopes(struct hotspot *h, const struct hotspot_blob *b, uint64_t pc, uint64_t *out,
		    size_t max);

/* --- a process ------------------------------------------------------------------- */

struct ptab;
struct pproc;
struct htab;

#define HS_MAX_NAMES	  65536u     /* names kept per process (and names replaced) */
#define HS_MAX_NAME_BYTES (8u << 20) /* ... and their bytes */

struct hotspot_proc {
	struct hotspot h;
	struct ptab *t;
	struct pproc *p;      /* the caller's reference */
	struct htab *names;   /* pc -> struct hs_name */
	struct htab *methods; /* Method* -> its name (interpreted frames) */
	void **retired;	      /* names replaced: freed with the process */
	size_t nr_retired, cap_retired;
	size_t nr_names, name_bytes;
};

/*
 * Whether process p runs a HotSpot JVM (an executable mapping of a file
 * that exports the gHotSpotVM* variables in .dynsym), and if so fills out
 * (which must stay where it is: it is its reader's context): 0; -ENOENT no
 * JVM; -ENOTSUP a JVM whose tables lack what is needed (why says so the
 * first time for its libjvm file, then is empty); -EAGAIN tables not
 * readable or not filled yet. A file's verdict is kept with it (mfile__memo).
 */
int hotspot__probe(struct ptab *t, struct pproc *p, struct hotspot_proc *out, char *why,
		   size_t why_len);

/*
 * The names of the code at pc into names, innermost first (the methods
 * inlined there, then the nmethod's own, or a stub's name); their number,
 * 0 for none. Kept per pc with its blob's identity (address, Method*,
 * compile id, own name), read again at every lookup: a blob freed and code
 * made at its place, or recompiled, is named anew - never a stale name.
 * Names stay valid until hotspot__proc_free().
 */
size_t hotspot__frames(struct hotspot_proc *hp, uint64_t pc, const char **names, size_t max);
/* The outermost of them, or NULL. */
const char *hotspot__name(struct hotspot_proc *hp, uint64_t pc);
/*
 * "package.Class.method" of Method* method (an interpreted frame's, as the
 * BPF walker read it from the frame: hotspot_abi.h BP_HS_INTERP_MARK), or
 * NULL. Kept per Method* with what its name was read from (its ConstMethod,
 * ConstantPool, holder, and their name Symbols' addresses), read again at
 * every lookup: a Method* freed with its class and reused by another method
 * is named anew. Valid until hotspot__proc_free(), with the same caps as
 * hotspot__frames()'s names.
 */
const char *hotspot__method(struct hotspot_proc *hp, uint64_t method);
void hotspot__proc_free(struct hotspot_proc *hp);

#endif /* BPFPROF_HOTSPOT_H */
