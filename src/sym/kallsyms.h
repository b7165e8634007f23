/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * kallsyms.h - kernel symbols from /proc/kallsyms.
 *
 * Keeps text symbols only (types t, T, w, W), sorted by address, for binary
 * search. Module symbols keep their module name ("bpf" for BPF programs).
 * Under kptr_restrict every address reads 0: ksyms__restricted() says so and
 * every lookup fails, rather than naming every frame after the first symbol.
 *
 * Input is hostile-tolerant: names of any length (KSYM_NAME_LEN is 512 and
 * Rust symbols use it), malformed lines are skipped and counted, no final
 * newline is fine, CRLF and tabs are accepted, blank lines are ignored.
 * "__pfx_" and "__cfi_" symbols (padding and CFI preambles in front of every
 * function) are dropped. Names live in one string pool owned by the ksyms.
 *
 * Bounding: /proc/kallsyms has no sizes, so a symbol extends to the next
 * symbol, with two limits so that an address in a gap is not blamed on a
 * far-away symbol:
 *   - "_etext" and "_einittext" of the core kernel are end markers: an
 *     address at or past one (up to the next symbol) resolves to NULL;
 *   - no symbol extends more than 1 MiB past its start. This bounds the last
 *     symbol of a module or BPF program group, and the core kernel's last
 *     symbol when the markers are missing.
 * Among aliases at one address the lookup returns a non-weak over a weak, then
 * the one with fewer leading underscores (section labels like _stext and
 * _sinittext share their address with a real function), then a global (T)
 * over a local (t), then the first in the file. Symbols at address 0 are
 * never returned.
 */
#ifndef BPFPROF_KALLSYMS_H
#define BPFPROF_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksyms;

/*
 * The one kallsyms line parser, for every reader of kernel symbols (the
 * symbol table below, the ORC walker's addresses): "ADDR TYPE NAME" or
 * "ADDR TYPE NAME\t[MODULE]". Fields point into the text (not NUL-terminated).
 */
struct kallsyms_line {
	uint64_t addr;
	char type;
	const char *name;
	size_t name_len;
	const char *module; /* NULL for the core kernel */
	size_t module_len;
};
/*
 * Calls cb for every well-formed line of buf[0..len) (CRLF, blank lines and
 * no final newline are fine). Returns the number of malformed lines, or the
 * first negative value cb returned (which stops the walk).
 */
long kallsyms__for_each(const char *buf, size_t len,
			int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx);
/*
 * The same over a file (normally "/proc/kallsyms"; tests give a fake one),
 * as perf's kallsyms__parse(path, arg, callback): the whole file, at most
 * max bytes (-EFBIG if it is longer). Returns what kallsyms__for_each()
 * returns, or -errno.
 */
long kallsyms__parse(const char *path, size_t max,
		     int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx);
/*
 * Only the file's first head bytes, as one read() gives them, up to the last
 * whole line in them: the core kernel's symbols come first, and a few lines
 * cost nothing where the whole file costs tens of milliseconds. An empty
 * file has no lines (0).
 */
long kallsyms__parse_head(const char *path, size_t head,
			  int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx);

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* NULL for the core kernel */
};

/*
 * Parses a kallsyms text (need not be NUL-terminated); NULL with errno ENOMEM,
 * or EFBIG for more than 4G lines.
 */
struct ksyms *ksyms__parse(const char *buf, size_t len);
/* Reads and parses a file (normally "/proc/kallsyms"); NULL with errno. */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *ks);

/*
 * The symbol containing addr: the one with the greatest address <= addr.
 * NULL if addr is below the first symbol, beyond the last symbol of its
 * region, or all addresses are zero.
 */
const struct ksym *ksyms__lookup(const struct ksyms *ks, uint64_t addr);
/*
 * Where sym (a symbol ksyms__lookup() or ksyms__find() returned) ends: the
 * next symbol's address, at most KSYMS_MAX_EXTENT (1 MiB) past its start;
 * 0 for a symbol not of ks.
 */
uint64_t ksyms__end(const struct ksyms *ks, const struct ksym *sym);
/*
 * The symbol with exactly this name (of duplicates, the one at the lowest
 * address), or NULL. A linear scan: meant for a few names, not per sample.
 */
const struct ksym *ksyms__find(const struct ksyms *ks, const char *name);

size_t ksyms__count(const struct ksyms *ks);
size_t ksyms__bad_lines(const struct ksyms *ks);
/* True if the file had symbols but every address was zero (kptr_restrict). */
bool ksyms__restricted(const struct ksyms *ks);

#endif
