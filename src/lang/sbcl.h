/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sbcl.h - SBCL's heap, read from outside the process: the Lisp function
 * that holds a pc, and its name printed as SBCL prints it (issue 38).
 *
 * SBCL compiles Lisp into code objects in its heap: the core's own
 * functions in the text space mapped from the core file, code compiled
 * after start into the text space's TLSF-managed pages, or into dynamic
 * space (gencgc's code pages; on 2.2.9 when sb-c::*compile-to-memory-space*
 * is :dynamic), where a GC moves it: found from page_table's scan start of
 * the pc's page (2.2.9: 8 bytes a page, a 32-bit offset back in words or,
 * its low bit set, in halves of a 1 KiB card; the page's type in byte 6). A code object
 * (x86-64, 2.2.9; what later releases change is in struct sbcl_layout) is
 *
 *   word 0     header: widetag 0x35, total size in words in the high 32 bits
 *              (bit 8: a free TLSF block of that size, in text space)
 *   word 1     boxed size in bytes (low 32 bits)
 *   word 4+4i  the name of simple-fun i (then its arglist, type, info)
 *   ...        machine code from the boxed size on; simple-fun i's header
 *              (widetag 0x41) at boxed size + offset[i]
 *   trailer    the last 2 bytes: the trailer's length; the 2 before them:
 *              the number of simple-funs << 5; offset[i], 32 bits, at
 *              end - 8 - 4i
 *
 * A name is a symbol (its name string and its package's id in the high 16
 * bits of its name slot; the package's name through the runtime's
 * lisp_package_vector), a string, or a list: (SETF X), (LAMBDA (X) :IN
 * FOO), (FLET BAR :IN FOO), printed with the prefix SBCL's printer gives in
 * COMMON-LISP-USER: none for COMMON-LISP and COMMON-LISP-USER, ":" for
 * keywords, "PACKAGE:" for a symbol in its package's external symbols (the
 * cells of its EXTERNAL-SYMBOLS table, at most SBCL_MAX_EXT of them
 * read), "PACKAGE::" otherwise (and when that table cannot be read).
 *
 * Everything is read through the caller's reader (the process-and-file
 * layer's memory reads) and is untrusted: every object's header and size
 * are checked against the space it is in, walks are bounded in steps and
 * bytes (SBCL_MAX_*), names in length and depth; a bad object gives no
 * name, never a read outside the spaces given or a loop.
 */
#ifndef BPFPROF_SBCL_H
#define BPFPROF_SBCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#define SBCL_PAGE_BYTES	   4096u	/* the core text's index: bytes per entry */
#define SBCL_MAX_CODE	   (16u << 20)	/* largest code object believed */
#define SBCL_MAX_FUNS	   4096u	/* simple-funs per code object */
#define SBCL_MAX_STEPS	   65536u	/* objects walked per lookup */
#define SBCL_MAX_SCAN	   64u		/* pages searched back for a scan start */
#define SBCL_MAX_TEXT	   (256u << 20) /* text space indexed per process */
#define SBCL_NAME_MAX	   512u		/* printed name, bytes (longer: cut, "...") */
#define SBCL_STRING_MAX	   200u		/* characters read of one string */
#define SBCL_LIST_MAX	   16u		/* elements printed of one list */
#define SBCL_DEPTH_MAX	   4u		/* lists within lists */
#define SBCL_MAX_EXT	   32768u	/* cells read of a package's external symbols */
#define SBCL_MAX_DYN_WALK  (4u << 20)	/* dynamic space walked back to a scan start */
#define SBCL_MAX_DYN_SPACE (1ull << 44) /* dynamic space believed (16 TiB) */
#define SBCL_DYN_BUDGET	   (64u << 20)	/* dynamic space read by walks a second */

/* Reads len bytes of the process at addr; 0, or -errno (a short read is an error). */
typedef int (*sbcl_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * A version's layout (what differs between releases), for the releases
 * version..last (x86-64). Debian 12's 2.2.9 is verified on the real runtime;
 * the others are taken from SBCL's published sources (sbcl.c says where).
 */
struct sbcl_layout {
	const char *version; /* the first release it holds for ("2.4.7") */
	const char *last;    /* ... and the last ("2.6.1") */
	bool verified;	     /* on a real runtime, not only from its sources */
	uint64_t nil;	     /* NIL's address (static space); 0: known by its shape */
	uint8_t code_widetag, fun_widetag, symbol_widetag, filler_widetag;
	uint8_t base_string_widetag, char_string_widetag, vector_widetag, instance_widetag;
	uint32_t name_slot;	  /* symbol: word of the name (and package id) */
	bool pkg_id_in_header;	  /* symbol: package id in header bits 8-23, else name >> 48 */
	uint32_t pkg_name_slot;	  /* package instance: word of %NAME */
	uint32_t fun_names_word;  /* code: word of simple-fun 0's name */
	uint32_t fun_slots;	  /* code: words per simple-fun */
	uint32_t debug_info_word; /* code: word of its debug-info */
	uint32_t ht_pairs_word;	  /* hash-table instance: word of its key/value vector */
	uint32_t pkg_ext_slot;	  /* package: word of EXTERNAL-SYMBOLS (0: not known) */
	uint32_t pht_cells_word;  /* its table: word of its CELLS vector */
	bool cells_in_cdr;	  /* ... which holds (hash-fun . CELLS) */
	uint32_t card_bytes;	  /* text space's TLSF pages (IMMOBILE_CARD_BYTES) */
	uint32_t sso_bytes;	  /* bytes of one page's scan start in tlsf_page_sso (2, 4) */
	/* Dynamic space (gencgc): 0 gc_page_bytes for a version whose code there
	 * is not named. */
	uint32_t gc_page_bytes; /* GENCGC_PAGE_BYTES */
	uint8_t gc_card_shift;	/* GENCGC_CARD_SHIFT: a page-aligned scan start's scale */
	uint8_t fin_widetag;	/* funcallable instances share code pages */
	/* --alloc (bpf/alloc_abi.h): the thread structure's allocation regions
	 * alloc's [0] and alloc_list's [1], the user's [][0] and the system's
	 * [][1]; alloc's objects of large_bytes or more are out of regions. 0:
	 * not known (a release not verified: not probed). */
	uint16_t tlab[2][2];
	uint32_t large_bytes;
};

/*
 * The layout for a runtime's version string ("2.2.9.debian", "2.4.7"), or
 * NULL: a release outside every layout's range, or a development build
 * ("2.4.7.45-abcdef", which may be anything past 2.4.7).
 */
const struct sbcl_layout *sbcl__layout(const char *version);
/* The releases with a layout, for a message ("2.2.9 to 2.6.7"). */
const char *sbcl__known_versions(void);

/*
 * The layout of the runtime whose .rodata is b[0..len): of its
 * NUL-delimited strings that look like a version (SBCL_VERSION_STRING is
 * one), those of SBCL's major version must agree on one layout - another
 * ("2.6.8", a release without one) or two layouts leave which is SBCL's in
 * doubt: NULL, never a guess. version (if version_len) gets the string
 * with the layout, else the first of SBCL's major version without one, else
 * the first that looks like a version, else "".
 */
const struct sbcl_layout *sbcl__rodata_layout(const char *b, size_t len, char *version,
					      size_t version_len);

struct mfile;

/*
 * --alloc: the layout of the SBCL runtime in file mf (its exported variables
 * and version, as sbcl__probe finds them, remembered with the file) into
 * *l: 0; -ENOENT not an SBCL runtime; -ENOTSUP a release without a layout,
 * or whose allocation regions are not verified (version gets the version
 * string, *warn is true the first time for the file, else false).
 */
int sbcl__file_layout(struct mfile *mf, const struct sbcl_layout **l, char *version,
		      size_t version_len, bool *warn);

/*
 * --alloc: whether code (len bytes of the function at address va) is the
 * beginning of l's alloc (list false) or alloc_list (list true) as
 * verified: current_thread's GOT entry loaded, the thread read from the FS
 * segment, the system's and the user's regions at l->tlab[list]'s offsets,
 * chosen by the second argument. 0 and *got (the GOT entry's address, of
 * the file's addresses), or -ENOTSUP: other code (another build, a fake),
 * not probed.
 */
int sbcl__alloc_code(const struct sbcl_layout *l, bool list, const uint8_t *code, size_t len,
		     uint64_t va, uint64_t *got);

/*
 * --alloc: alloc's large-object exit, where a probe traps only for large
 * objects (not for each region refilled, half of a vector loop's traps):
 * in code (alloc's first len bytes, at file address va) the one tail jump
 * to gc_alloc_large (its address large) with the frame popped and nbytes
 * in %rdi - Debian's 2.2.9: add $0x10,%rsp; mov %rbx,%rdi; mov $3,%esi;
 * pop %rbx, %r12, %r13, %r14, %rbp; jmp gc_alloc_large. The stack there is
 * the entry's (the caller's return address on top), the jmp an instruction
 * the kernel emulates. *at: the jmp's file address. 0, or -ENOTSUP: not
 * found, or more than one (the entry is probed instead).
 */
int sbcl__alloc_large_exit(const uint8_t *code, size_t len, uint64_t va, uint64_t large,
			   uint64_t *at);

/*
 * --alloc: whether tpoff (current_thread's offset from the thread pointer,
 * read from a process's GOT entry) lies in the static TLS block of the
 * executable elf (its PT_TLS, x86-64's variant II: the executable's block
 * ends at the thread pointer). A process that rewrote its own GOT entry
 * cannot point the offset, used for every process of the file (-a),
 * anywhere else. 0, or -EINVAL.
 */
int sbcl__tls_offset_ok(Elf *elf, int64_t tpoff);

/* One process's heap: where things are (from the runtime's exported
 * variables) and how to read it. */
struct sbcl_heap {
	const struct sbcl_layout *l;
	sbcl_read_fn read;
	void *ctx;
	uint64_t text_start, text_end; /* TEXT_SPACE_START, text_space_highwatermark */
	uint64_t tlsf_start;	       /* tlsf_mem_start: pages from here have a scan start */
	uint64_t sso;		       /* tlsf_page_sso: their scan starts (16 bits a page) */
	uint64_t package_vector;       /* lisp_package_vector: id -> package */
	/* Dynamic space: DYNAMIC_SPACE_START, dynamic_space_size, and the address
	 * of page_table's entries (8 bytes a page); 0 when not known. */
	uint64_t dyn_start, dyn_size, page_table;
	/* The core's text (text_start to tlsf_start): per page, the start of the
	 * object holding its first byte (built at the first lookup there). */
	uint32_t *index;
	uint32_t nr_index;
	uint64_t bytes_read; /* what the reads cost so far */
	uint64_t max_bytes;  /* 0, or reads fail with -E2BIG past this many (of bytes_read) */
	/* Dynamic-space walks failed lookups repeat (a name is kept, a failure
	 * is not): SBCL_DYN_BUDGET bytes of them a second, then -EBUSY
	 * (counted in dyn_over) until the next second; dyn_walked: bytes so read. */
	uint64_t dyn_walk_left, dyn_walk_ns, dyn_over, dyn_walked;
};

/* Frees h's index of the core's text (built at the first pc there: one
 * walk of its objects, read in pieces of 1 MiB; not built over
 * SBCL_MAX_TEXT, or for a walk that does not end where the space does). */
void sbcl__release(struct sbcl_heap *h);

/* The code object holding pc (its untagged address) in text space, or in
 * dynamic space (code compiled there: COMPILE with
 * sb-c::*compile-to-memory-space* :dynamic): walked from the scan start of
 * pc's page in page_table, on a code page only, over code objects,
 * funcallable instances and fillers, at most SBCL_MAX_DYN_WALK bytes, and
 * within SBCL_DYN_BUDGET a second (-EBUSY past it); 0 or -errno. */
int sbcl__find_code(struct sbcl_heap *h, uint64_t pc, uint64_t *code);

/* The name of the Lisp function at pc (of the simple-fun of its code object
 * at or below it), printed into buf (NUL-terminated, cut with "..."); its
 * length, or -errno: -ENOENT for a pc in no simple-fun, -EINVAL for
 * objects that are not what the layout says, the reader's error. */
int sbcl__name_pc(struct sbcl_heap *h, uint64_t pc, char *buf, size_t len);

/* The instructions of the simple-fun holding pc: [start, end), from past its
 * header to the next simple-fun or its code's trailer; 0 or -errno
 * (-ENOENT: no simple-fun's instructions hold pc, as an assembly routine's). */
int sbcl__fun_range(struct sbcl_heap *h, uint64_t pc, uint64_t *start, uint64_t *end);

/* Reads len bytes of code at addr (bounded by SBCL_MAX_CODE); 0 or -errno. */
int sbcl__read_code(struct sbcl_heap *h, uint64_t addr, void *buf, size_t len);

/* --- a process ------------------------------------------------------------------- */

struct ptab;
struct pproc;

/* Read of one process's heap for one name: the index of the core's text
 * (once per process) and a lookup's walk and name. */
#define SBCL_MAX_BYTES (SBCL_MAX_TEXT + (4u << 20))

#define SBCL_MAX_NAMES	    65536u     /* names kept per process (and names replaced) */
#define SBCL_MAX_NAME_BYTES (4u << 20) /* ... and their bytes */

/* An SBCL process: its heap, read through the process table, and the names
 * found in it. */
struct sbcl_proc {
	struct sbcl_heap h;
	struct ptab *t;
	struct pproc *p;       /* the caller's reference */
	uint64_t packages_var; /* lisp_package_vector's address: read again per name (GC moves
				* the vector, a new package replaces it) */
	struct htab *names;    /* pc -> struct sbcl_name */
	void **retired;	       /* names replaced: freed with the process */
	size_t nr_retired, cap_retired;
	size_t nr_names, name_bytes;
	/* GCs between drains (sbcl__new_drain): the runtime's n_gcs (0: not
	 * exported), as read at this drain; the GCs since the last; the
	 * highest serial number of code named by the end of the last drain,
	 * and by now; names not given for a GC in the window (counted). */
	uint64_t gc_var;
	uint32_t gcs, gc_window;
	bool gcs_known;
	uint32_t serial_floor, max_serial;
	uint64_t gc_dropped;
	/* text_space_highwatermark's address: read again for a pc past text_end
	 * (code compiled since the probe, as a script's own functions) */
	uint64_t hwm_var;
};

/*
 * Whether process p runs an SBCL runtime (an executable ELF mapping that
 * exports TEXT_SPACE_START, text_space_highwatermark, tlsf_mem_start,
 * tlsf_page_sso and lisp_package_vector in its symbol tables), and if so
 * fills out to read its heap (out must stay where it is: it is its reader's
 * context): 0; -ENOENT no SBCL; -ENOTSUP an SBCL whose version has no
 * layout here (why says so the first time for its runtime file, then is
 * empty); -EAGAIN its variables not readable or set yet.
 * A file's verdict is remembered with it (mfile__memo).
 */
int sbcl__probe(struct ptab *t, struct pproc *p, struct sbcl_proc *out, char *why, size_t why_len);

/*
 * The name of the Lisp function at pc, or NULL. Kept per pc, with the
 * identity of its code object (header's widetag and size, boxed size, and
 * the serial number in the first word of its instructions), which is read
 * again before a kept name is trusted: code freed, or moved by a GC, and
 * other code made at its place is named anew, never after what was there.
 * Once the process is gone (its memory unreadable: -ESRCH, the drain after
 * a command exited) a kept name is given as of its last check; a pc never
 * named before gets none.
 * A name stays valid until sbcl__proc_free().
 */
const char *sbcl__name(struct sbcl_proc *sp, uint64_t pc);

/*
 * A drain begins: the samples it names were taken since the last one.
 * Reads the runtime's GC count (n_gcs). When a GC ran in between, a pc
 * of code that can move or be freed (dynamic space, text space's TLSF
 * pages) is named only from a kept name still checked, or from code
 * older than the last drain (its serial number at most the highest named
 * by then) after a single GC: what a GC moved away, with other code made
 * at its place before the drain, is never named after that code (NULL,
 * counted in gc_dropped). Before the first call (or without n_gcs) no
 * name is held back.
 */
void sbcl__new_drain(struct sbcl_proc *sp);
void sbcl__proc_free(struct sbcl_proc *sp);

#endif /* BPFPROF_SBCL_H */
