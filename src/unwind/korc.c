// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * korc.c - the kernel's ORC table for the BPF kernel stack walker (korc.h).
 */
#include "unwind/korc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

void korc__syms_take(struct korc_syms *s, const char *name, size_t len, uint64_t addr)
{
	static const struct {
		const char *name;
		size_t off;
	} want[] = {
		{ "__start_orc_unwind_ip", offsetof(struct korc_syms, orc_ip_start) },
		{ "__stop_orc_unwind_ip", offsetof(struct korc_syms, orc_ip_stop) },
		{ "__start_orc_unwind", offsetof(struct korc_syms, orc_start) },
		{ "_stext", offsetof(struct korc_syms, stext) },
		{ "_etext", offsetof(struct korc_syms, etext) },
		{ "return_to_handler", offsetof(struct korc_syms, trampolines[0]) },
		{ "arch_rethook_trampoline", offsetof(struct korc_syms, trampolines[1]) },
		{ "__kretprobe_trampoline", offsetof(struct korc_syms, trampolines[2]) },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strlen(want[i].name) == len && !memcmp(want[i].name, name, len))
			*(uint64_t *)((char *)s + want[i].off) = addr;
}

static uint64_t raw_of(const uint8_t *e)
{
	uint64_t v = 0;

	for (int i = 5; i >= 0; i--)
		v = (v << 8) | e[i];
	return v;
}

int korc__build(const int32_t *ip_rel, const uint8_t *orc, uint32_t n, uint64_t ip_addr,
		uint64_t stext, uint64_t etext, struct korc *k)
{
	struct htab *seen = NULL;
	uint64_t prev = 0;
	uint32_t first = UINT32_MAX, m = 0;
	size_t cap_uniq = 0;

	memset(k, 0, sizeof(*k));
	if (!n || stext >= etext || etext - stext > UINT32_MAX)
		return -EINVAL;
	/* The entries for [stext, etext) (the kernel's fast lookup range; a pc
	 * below the first of them has no entry here, and the walk falls back). */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ip = ip_addr + 4ull * i + (int64_t)ip_rel[i];

		if (i && ip < prev)
			return -EINVAL; /* the kernel sorts this table at build time */
		prev = ip;
		if (ip < etext && first == UINT32_MAX && ip >= stext)
			first = i;
	}
	if (first == UINT32_MAX)
		return -EINVAL;
	k->base = stext & ~((1ull << KORC_BLOCK_SHIFT) - 1);
	k->end = etext;
	k->ents = calloc(n - first, sizeof(*k->ents));
	seen = htab__new();
	if (!k->ents || !seen)
		goto fail;
	for (uint32_t i = first; i < n; i++) {
		uint64_t ip = ip_addr + 4ull * i + (int64_t)ip_rel[i], raw = raw_of(orc + 6ull * i);
		struct htab_entry *e;
		bool created;

		if (ip >= etext)
			break;
		e = htab__upsert(seen, &raw, sizeof(raw), &created);
		if (!e)
			goto fail;
		if (created) {
			if (array_grow((void **)&k->uniq, &cap_uniq, (size_t)k->nuniq + 1,
				       sizeof(*k->uniq)))
				goto fail;
			k->uniq[k->nuniq] = raw;
			e->value = (void *)(uintptr_t)(k->nuniq + 1);
			k->nuniq++;
		}
		/* Equal ips: the kernel's search takes the last; so do we. */
		if (m && k->ents[m - 1].ip == (uint32_t)(ip - k->base))
			m--;
		/* The same rule as the entry before: a lookup finds the same raw
		 * value either way, so one entry covers both ranges. */
		if (m && k->ents[m - 1].uniq == (uint32_t)(uintptr_t)e->value - 1)
			continue;
		k->ents[m].ip = (uint32_t)(ip - k->base);
		k->ents[m].uniq = (uint32_t)(uintptr_t)e->value - 1;
		m++;
	}
	k->nents = m;
	k->nblocks =
		(uint32_t)((etext - k->base + (1ull << KORC_BLOCK_SHIFT) - 1) >> KORC_BLOCK_SHIFT);
	k->blocks = calloc(k->nblocks, sizeof(*k->blocks));
	if (!k->blocks)
		goto fail;
	/* Block b: from the last entry at or before its start to the last one
	 * before its end. A pc before the first entry has none. */
	for (uint32_t b = 0, lo = 0, hi = 0; b < k->nblocks; b++) {
		uint64_t bs = (uint64_t)b << KORC_BLOCK_SHIFT, be = bs + (1ull << KORC_BLOCK_SHIFT);

		while (lo + 1 < m && k->ents[lo + 1].ip <= bs)
			lo++;
		if (hi < lo)
			hi = lo;
		while (hi + 1 < m && k->ents[hi + 1].ip < be)
			hi++;
		k->blocks[b].first = lo;
		k->blocks[b].count = k->ents[lo].ip < be ? hi - lo + 1 : 0;
	}
	htab__free(seen);
	return 0;
fail:
	htab__free(seen);
	korc__free(k);
	return -ENOMEM;
}

void korc__free(struct korc *k)
{
	free(k->ents);
	free(k->uniq);
	free(k->blocks);
	memset(k, 0, sizeof(*k));
}

int korc__lookup(const struct korc *k, uint64_t pc, uint64_t *raw)
{
	const struct bp_korc_block *b;
	uint32_t off, lo, n;

	if (pc < k->base || pc >= k->end)
		return -ENOENT;
	off = (uint32_t)(pc - k->base);
	b = &k->blocks[off >> KORC_BLOCK_SHIFT];
	lo = b->first;
	n = b->count;
	if (!n)
		return -ENOENT;
	/* The same search as the program: the last entry with ip <= off. */
	while (n > 1) {
		uint32_t half = n / 2;

		if (k->ents[lo + half].ip <= off)
			lo += half;
		n -= half;
	}
	if (k->ents[lo].ip > off)
		return -ENOENT;
	*raw = k->uniq[k->ents[lo].uniq];
	return 0;
}
