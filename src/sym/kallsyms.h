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
 * newline is fine.
 */
#ifndef BPFPROF_KALLSYMS_H
#define BPFPROF_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksyms;

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* NULL for the core kernel */
};

/* Parses a kallsyms text; NULL with errno on allocation failure only. */
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
/* The symbol with exactly this name (first of duplicates), or NULL. */
const struct ksym *ksyms__find(const struct ksyms *ks, const char *name);

size_t ksyms__count(const struct ksyms *ks);
size_t ksyms__bad_lines(const struct ksyms *ks);
/* True if the file had symbols but every address was zero (kptr_restrict). */
bool ksyms__restricted(const struct ksyms *ks);

#endif
