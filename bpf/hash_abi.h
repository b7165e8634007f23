/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hash_abi.h - the hashing both BPF programs (profile.bpf.c, alloc.bpf.c)
 * and userspace use: the mixing step, its seeds, and a stack's hash, the
 * id of a stack sent by value (the sampler's stacks map keys, --alloc's
 * events and live blocks). Fixed-width types only.
 */
#ifndef BPFPROF_HASH_ABI_H
#define BPFPROF_HASH_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * Hashing. Stack ids, key hashes and address-space signatures all use the
 * same mixing step (splitmix64's finalizer constants), each started from
 * its own seed so that equal inputs of different kinds never share a value:
 * a kernel and a user stack with the same addresses get different ids.
 */
#define BP_MIX_MUL1    0xbf58476d1ce4e5b9ULL /* splitmix64 */
#define BP_MIX_MUL2    0x94d049bb133111ebULL
#define BP_GOLDEN      0x9e3779b97f4a7c15ULL /* 2^64 / golden ratio: spreads small values */
#define BP_SEED_KEY    0x243f6a8885a308d3ULL /* pi's fraction: sample keys, mm signatures */
#define BP_SEED_KSTACK 0x6bULL		     /* 'k': kernel stacks */
#define BP_SEED_USTACK 0x75ULL		     /* 'u': user stacks */

/* One 64-bit word into the hash. */
static inline __u64 bp_hash_step(__u64 h, __u64 w)
{
	h ^= w;
	h *= BP_MIX_MUL1;
	return h ^ (h >> 31);
}

/* The final avalanche; never 0 (0 means "no stack"). */
static inline __u64 bp_hash_end(__u64 h)
{
	h ^= h >> 30;
	h *= BP_MIX_MUL2;
	h ^= h >> 31;
	return h ? h : 1;
}

#define BP_STACK_HASH_MAX 127 /* frames a stack hash covers: the kernel's stack limit */

/* ips[0..nr) (nr <= BP_STACK_HASH_MAX): one mixing step per frame, the
 * count in the seed; never 0 (0 is "no stack"). */
static __always_inline __u64 bp_stack_hash(const __u64 *ips, __u32 nr, __u64 seed)
{
	__u64 h = seed ^ ((__u64)nr * BP_GOLDEN);

	for (__u32 i = 0; i < BP_STACK_HASH_MAX; i++) {
		if (i >= nr)
			break;
		h = bp_hash_step(h, ips[i]);
	}
	return bp_hash_end(h);
}

#endif
