/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * perfmap.h - JIT symbol maps, /tmp/perf-PID.map, as written by Node
 * (--perf-basic-prof), Java agents, SBCL's sb-perf, Python 3.12 (-X perf),
 * .NET (DOTNET_PerfMapEnabled) and others: one "START SIZE name" line per
 * piece of generated code, START and SIZE in hex, START an absolute address
 * in the process (never rebased).
 *
 * The text is hostile input (any process can write its own map, and in a
 * container the file lives in the container's /tmp). Parsing is tolerant of
 * what real writers produce and strict about everything else:
 *   - accepted: "0x"/"0X" prefixes (JDK 25), upper-case hex, CRLF, leading
 *     blanks, tabs as separators, names with spaces, ';' or any byte but NUL
 *     (writers sanitize names on output);
 *   - skipped and counted: fewer than three fields, bad hex or more than 16
 *     digits, START 0, SIZE 0, START + SIZE overflowing, an empty name, a NUL
 *     byte, a line longer than PERFMAP_MAX_LINE;
 *   - a last line without '\n' is not used yet: the writer may be in the
 *     middle of it. It is read when the file grows (perfmap__add continues
 *     where the complete lines ended).
 * Entries may come unsorted and overlap (code is freed and its addresses
 * reused): the newest entry (later in the file) wins wherever entries
 * overlap. The table is rebuilt into sorted, disjoint ranges on every add, so
 * lookups are a binary search.
 *
 * Bounded: one map is one item of the symbolizer's perf map cache, with a
 * cap of its own, PERFMAP_MAX_BYTES of heap as allocated: half for its
 * entries (each with the two ranges it may become), half for their names.
 * A map read whole that would need more is not read further (perfmap__add()
 * says -E2BIG: the caller keeps only what sampled addresses need instead,
 * wanted mode below); callers cap the file size they read.
 */
#ifndef BPFPROF_PERFMAP_H
#define BPFPROF_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_LINE  4096
#define PERFMAP_MAX_BYTES (16u << 20) /* one map's heap, all told */
/* Entries one map may hold: whole (each with its two ranges), or wanted
 * (each also with its line number kept and its code in the cover). */
#define PERFMAP_MAX_ENTRIES (PERFMAP_MAX_BYTES / 2 / 72)
#define PERFMAP_MAX_KEPT    (PERFMAP_MAX_BYTES / 2 / 152 / 2) /* wanted mode: named */

struct perfmap;

struct perfmap *perfmap__new(void);
void perfmap__free(struct perfmap *pm);

/*
 * Parses the next bytes of the file, buf[0..len), which start at offset
 * perfmap__consumed(pm) of the file. Complete lines are used and consumed;
 * a trailing partial line is left for the next call. 0, -ENOMEM, or -E2BIG:
 * the map would take more than PERFMAP_MAX_BYTES (nothing more is read: read
 * it in wanted mode instead). Lookups see the new entries after
 * perfmap__finish().
 */
int perfmap__add(struct perfmap *pm, const char *buf, size_t len);
/* Rebuilds the lookup table after adds (a no-op if nothing was added). 0 or -ENOMEM. */
int perfmap__finish(struct perfmap *pm);
/* A whole text at once (new + add); NULL with errno ENOMEM or E2BIG. */
struct perfmap *perfmap__parse(const char *buf, size_t len);

/* The name of the code containing addr (newest entry), or NULL. *offset gets addr - start. */
const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr, uint64_t *offset);

/*
 * Wanted mode, for maps too large to hold (a process can write hundreds of
 * megabytes): the map keeps only entries that name an address someone
 * asked about, and the file is scanned again for new ones. An entry's age is
 * its line number in the file, so entries found by different scans of the
 * same (append-only) file order as in one read, and the newest still wins.
 * Caps: PERFMAP_MAX_KEPT entries named, half of PERFMAP_MAX_BYTES of names
 * (the rest kept without a name, counted as dropped: they still hide what
 * they overlap), twice that many entries in all (past it the map names
 * nothing).
 */
struct perfmap *perfmap__new_wanted(void);
/*
 * Parses the complete lines of buf, the first of which is line first_line of
 * the file, keeping each line whose code holds one of want[0..nwant) (sorted
 * ascending) or, with overlaps, that overlaps code a kept entry names (a
 * newer line over it must win there). Returns the bytes of complete lines;
 * *lines gets their number. Lookups see new entries after perfmap__finish().
 */
size_t perfmap__scan(struct perfmap *pm, const char *buf, size_t len, uint64_t first_line,
		     const uint64_t *want, size_t nwant, bool overlaps, uint64_t *lines);
/* perfmap__scan() of the next bytes of the file (at perfmap__consumed()), with
 * overlaps; advances consumed and the line count. 0. */
int perfmap__scan_tail(struct perfmap *pm, const char *buf, size_t len, const uint64_t *want,
		       size_t nwant);
uint64_t perfmap__lines(const struct perfmap *pm); /* complete lines consumed */
size_t perfmap__dropped(const struct perfmap *pm); /* wanted entries over a cap */

size_t perfmap__consumed(const struct perfmap *pm);  /* bytes of the file used so far */
size_t perfmap__count(const struct perfmap *pm);     /* entries kept */
size_t perfmap__bad_lines(const struct perfmap *pm); /* malformed or over the cap */
size_t perfmap__bytes(const struct perfmap *pm);     /* heap bytes held: <= PERFMAP_MAX_BYTES */

#endif
