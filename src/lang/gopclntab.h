/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * gopclntab.h - Go's pc-line table (.gopclntab), read from the bytes of a
 * binary: function names, source files and lines, inlined calls and the
 * stack-pointer delta at every pc, for Go binaries without symbols (built
 * with -ldflags=-s) as well as with.
 *
 * Every Go binary keeps the table, because the runtime itself needs it for
 * tracebacks and garbage collection. Its layout changed with the Go release;
 * the first four bytes say which:
 *
 *   0xfffffffb  Go 1.2 - 1.15   offsets from the table start, pointer-size functab
 *   0xfffffffa  Go 1.16 - 1.17  subtables (names, compilation units, files, pc
 *                               tables, functions) behind a header
 *   0xfffffff0  Go 1.18 - 1.19  32-bit entries relative to the text start
 *   0xfffffff1  Go 1.20 and later: _func.startLine, a new inlined-call record
 *
 * Inlined calls come from the function's FUNCDATA_InlTree and
 * PCDATA_InlTreeIndex (1.16 and later; 1.2-1.15 numbered them differently
 * from release to release and have no marker of which: no inline frames
 * there). The tree lives outside the table: at an absolute address (1.16,
 * 1.17) or at an offset from moduledata.gofunc (1.18 and later), so the
 * caller hands over the read-only data holding it (gopclntab__set_funcdata();
 * gopclntab__find_gofunc() finds gofunc in a stripped binary through the
 * runtime's moduledata, which points at the table).
 *
 * The bytes are untrusted (the file is the profiled process's): the header
 * and the functions' order are checked in place before the table is copied,
 * every offset is checked against the subtable it indexes, strings must end
 * inside their table, pc-value tables are decoded with bounded varints,
 * functions must be sorted, and inline chains are cut at
 * GOPCLNTAB_MAX_INLINE levels. A corrupt function yields no answer, never a
 * read out of bounds.
 */
#ifndef BPFPROF_GOPCLNTAB_H
#define BPFPROF_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GOPCLNTAB_MAX_INLINE 32 /* inlined levels reported for one pc */

enum gopclntab_version {
	GOPCLNTAB_V12 = 12,   /* Go 1.2 - 1.15 */
	GOPCLNTAB_V116 = 116, /* Go 1.16 - 1.17 */
	GOPCLNTAB_V118 = 118, /* Go 1.18 - 1.19 */
	GOPCLNTAB_V120 = 120, /* Go 1.20 and later */
};

struct gopclntab;

/* A source position: function, file, line (file NULL, line 0 when unknown). */
struct gosrc {
	const char *name;
	const char *file;
	uint32_t line;
};

/*
 * Parses a table (copied) whose first byte is at virtual address tab_vaddr;
 * text_vaddr is the start of .text (1.18+ entries are relative to it; 0: the
 * header's own value). NULL with errno EINVAL (not a table, or corrupt) or
 * ENOMEM.
 */
struct gopclntab *gopclntab__new(const void *tab, size_t len, uint64_t tab_vaddr,
				 uint64_t text_vaddr);
void gopclntab__free(struct gopclntab *g);

/* Whether buf starts with a plausible table header (magic, quantum, pointer size). */
bool gopclntab__is_header(const void *buf, size_t len);

/*
 * Finding a table by its header when no section names it (sstrip): every
 * pointer-aligned place of the read-only data is a candidate. A candidate's
 * header is checked in place, and only one whose header holds has its
 * function table checked - O(functions) - and only the one that passes is
 * copied, so a file filled with a header-like pattern costs one pass over
 * its bytes, not a copy of the rest of the file per candidate. What one
 * file's search may spend, over all the buffers it searches:
 */
#define GOPCLNTAB_SCAN_BYTES   (256ull << 20) /* bytes searched */
#define GOPCLNTAB_SCAN_HEADERS 65536	      /* candidates whose header is read */
#define GOPCLNTAB_SCAN_TABLES  8	      /* ... whose function table is checked */

struct budget;

struct gopclntab_scan {
	uint64_t bytes_left;
	unsigned headers_left, tables_left;
	struct budget *budget; /* time (and stop requests), or NULL */
};

/* A search with the caps above and budget b (may be NULL). */
void gopclntab__scan_init(struct gopclntab_scan *sc, struct budget *b);
/*
 * The first table in buf (its first byte at vaddr) that passes the checks
 * of gopclntab__new() and has functions, copied; sc's caps are spent on the
 * way. NULL with errno: ENOENT none (or a cap reached), ETIMEDOUT or
 * ECANCELED the budget is over, ENOMEM.
 */
struct gopclntab *gopclntab__scan(const void *buf, size_t len, uint64_t vaddr,
				  struct gopclntab_scan *sc);

enum gopclntab_version gopclntab__version(const struct gopclntab *g);

/*
 * Read-only data (copied) at vaddr holding the inline trees: for 1.18+
 * gofunc is moduledata.gofunc, inside [vaddr, vaddr + len); for 1.16-1.17
 * it is unused (trees are at absolute addresses). 0 or -EINVAL/-ENOMEM.
 */
int gopclntab__set_funcdata(struct gopclntab *g, const void *data, size_t len, uint64_t vaddr,
			    uint64_t gofunc);

/*
 * moduledata.gofunc of a stripped binary: searches data (the .noptrdata
 * section, or any writable data, at vaddr) for the runtime's moduledata,
 * found by its first word pointing at the table and checked against the
 * table's own subtable offsets and text start. 0 if none is found.
 */
uint64_t gopclntab__find_gofunc(const struct gopclntab *g, const void *data, size_t len,
				uint64_t vaddr);

size_t gopclntab__nr_funcs(const struct gopclntab *g);
/* Function i: [start, end) and name (NULL if its name is corrupt). 0 or -EINVAL. */
int gopclntab__func(const struct gopclntab *g, size_t i, uint64_t *start, uint64_t *end,
		    const char **name);
/* Index of the function containing pc, or -1. */
ssize_t gopclntab__find(const struct gopclntab *g, uint64_t pc);

/*
 * What runs at pc, innermost first: the functions inlined there (deepest
 * first) and last the function containing pc, each with its file and line
 * (for an inlined call's callers, the line of the call). Returns how many
 * entries were written to out (at most max), 0 if pc is in no function.
 */
size_t gopclntab__frames(const struct gopclntab *g, uint64_t pc, struct gosrc *out, size_t max);

/*
 * The stack-pointer delta (bytes pushed since entry; the return address not
 * counted) of function i, as runs of pcs: cb(start, end, delta, ctx) for
 * each run in pc order, [start, end) inside the function. Stops and returns
 * cb's value if non-zero. -EINVAL if the table is corrupt (runs already
 * reported stand).
 */
int gopclntab__pcsp(const struct gopclntab *g, size_t i,
		    int (*cb)(uint64_t start, uint64_t end, int32_t delta, void *ctx), void *ctx);

/* Heap bytes held (the copies), for cache budgets. */
size_t gopclntab__bytes(const struct gopclntab *g);

#endif
