/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * korc.h - the kernel's ORC unwind table, reshaped for the BPF kernel stack
 * walker (profile.bpf.c). Pure: the raw tables are read from kernel memory
 * by the collector and handed in, so this is unit-tested with fixtures.
 *
 * Why walk kernel stacks in the program rather than call bpf_get_stack():
 * at 99 Hz every sample starts with cold caches, and the kernel's unwinder
 * touches its ORC tables (several MiB) and stack-info helpers afresh for
 * every frame - most of a sample's cost on a syscall-heavy machine. The
 * program's walk goes through its per-CPU row cache instead, so a frame
 * seen before costs one cache line. Anything the table walk does not cover
 * (modules, BPF and ftrace trampolines, stack switches) falls back to
 * bpf_get_stack() for the whole stack.
 */
#ifndef BPFPROF_KORC_H
#define BPFPROF_KORC_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "profile_abi.h"

/* Addresses from /proc/kallsyms the walker needs. 0: not found. */
struct korc_syms {
	uint64_t orc_ip_start, orc_ip_stop; /* __start_orc_unwind_ip, __stop_orc_unwind_ip */
	uint64_t orc_start;		    /* __start_orc_unwind */
	uint64_t stext, etext;		    /* _stext, _etext: the table's range */
	uint64_t trampolines[3];	    /* return_to_handler, *rethook/kretprobe trampolines */
};

/*
 * Takes one core-kernel symbol (any type) into s if it is one of the names
 * above. Fed by the one kallsyms parser (sym/kallsyms.h kallsyms__for_each);
 * start from a zeroed s.
 */
void korc__syms_take(struct korc_syms *s, const char *name, size_t len, uint64_t addr);

struct korc {
	uint64_t base; /* lowest ip in [stext, etext), 4 KiB aligned */
	uint64_t end;  /* etext */
	struct bp_korc_ent *ents;
	uint32_t nents;
	uint64_t *uniq; /* distinct raw entries */
	uint32_t nuniq;
	struct bp_korc_block *blocks;
	uint32_t nblocks;
};

/*
 * Builds from the raw tables: ip_rel[i] is orc_unwind_ip[i] (relative to its
 * own address, ip_addr + 4 * i), orc is n packed 6-byte orc_entry records.
 * Keeps entries in [stext, etext). 0, -EINVAL (unsorted, empty), -E2BIG, -ENOMEM.
 */
int korc__build(const int32_t *ip_rel, const uint8_t *orc, uint32_t n, uint64_t ip_addr,
		uint64_t stext, uint64_t etext, struct korc *k);
void korc__free(struct korc *k);

/* The raw entry the walker would use for pc; -ENOENT if none. */
int korc__lookup(const struct korc *k, uint64_t pc, uint64_t *raw);

#endif
