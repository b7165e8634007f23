// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_perfmap.c - libFuzzer target for the JIT perf map parser: the input
 * is fed whole, and again in two pieces the way a growing file is read
 * (perfmap__add continuing where complete lines ended); both must agree,
 * and every lookup must return a non-empty name with a sane offset. Wanted
 * mode (scans that keep only what addresses need) must agree with both.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void check(const struct perfmap *a, const struct perfmap *b, uint64_t addr)
{
	uint64_t off = 0;
	const char *x = perfmap__lookup(a, addr, &off);
	const char *y = perfmap__lookup(b, addr, NULL);

	if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
		abort();
	if (x && (!x[0] || off > addr))
		abort();
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Wanted mode against the whole map: a reader that scanned the first `cut`
 * bytes for some addresses, the rest for others, then everything again for
 * what it still missed, names each of them as the whole map does - and
 * names no address at all differently (it may only not know it).
 */
static void check_wanted(const struct perfmap *whole, const char *text, size_t size, size_t cut,
			 const uint64_t *addrs, size_t n)
{
	struct perfmap *pm = perfmap__new_wanted();
	uint64_t w1[64], w2[64], rem[128], lines;
	size_t n1 = 0, n2 = 0, nr = 0, consumed;

	if (!pm)
		abort();
	for (size_t i = 0; i < n && i < 128; i++) {
		if (i % 2)
			w2[n2++] = addrs[i];
		else
			w1[n1++] = addrs[i];
	}
	qsort(w1, n1, sizeof(*w1), u64_cmp);
	qsort(w2, n2, sizeof(*w2), u64_cmp);
	perfmap__scan_tail(pm, text, cut, w1, n1);
	perfmap__finish(pm);
	consumed = perfmap__consumed(pm);
	perfmap__scan_tail(pm, text + consumed, size - consumed, w2, n2);
	perfmap__finish(pm);
	for (size_t i = 0; i < n1 + n2; i++) {
		uint64_t a = i < n1 ? w1[i] : w2[i - n1];

		if (!perfmap__lookup(pm, a, NULL))
			rem[nr++] = a;
	}
	qsort(rem, nr, sizeof(*rem), u64_cmp);
	if (nr) {
		perfmap__scan(pm, text, perfmap__consumed(pm), 0, rem, nr, true, &lines);
		perfmap__finish(pm);
		if (lines != perfmap__lines(pm))
			abort();
	}
	for (size_t i = 0; i < n; i++) {
		const char *x = perfmap__lookup(pm, addrs[i], NULL);
		const char *y = perfmap__lookup(whole, addrs[i], NULL);

		/* Wanted: the same answer. Any: never a different name. */
		if (i < 128 && (x == NULL) != (y == NULL))
			abort();
		if (x && (!y || strcmp(x, y)))
			abort();
	}
	perfmap__free(pm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t addrs[256];
	size_t naddrs = 0;
	const char *text = (const char *)data;
	struct perfmap *whole, *parts;
	size_t cut = size ? data[0] % (size + 1) : 0, consumed;
	uint64_t a;

	whole = perfmap__parse(text, size);
	parts = perfmap__new();
	if (!whole || !parts)
		abort();
	/* A reader that saw only the first `cut` bytes, then the whole file. */
	if (perfmap__add(parts, text, cut) || perfmap__finish(parts))
		abort();
	consumed = perfmap__consumed(parts);
	if (consumed > cut)
		abort();
	if (perfmap__add(parts, text + consumed, size - consumed) || perfmap__finish(parts))
		abort();
	if (perfmap__consumed(parts) != perfmap__consumed(whole) ||
	    perfmap__count(parts) != perfmap__count(whole))
		abort();
	for (size_t i = 0; i + 8 <= size && i < 512; i += 4) {
		memcpy(&a, data + i, 8);
		check(whole, parts, a);
		check(whole, parts, a & 0xffffffffffffULL);
		if (naddrs + 2 <= ARRAY_LEN(addrs)) {
			addrs[naddrs++] = a & 0xffffffffffffULL;
			addrs[naddrs++] = 0x7f0000001000ULL + (a & 0xfff);
		}
	}
	check_wanted(whole, text, size, cut, addrs, naddrs);
	for (a = 0; a < 0x100; a++)
		check(whole, parts, 0x7f0000001000ULL + a * 0x10);
	check(whole, parts, 0);
	check(whole, parts, UINT64_MAX);
	(void)perfmap__bad_lines(whole);
	(void)perfmap__bytes(whole);
	perfmap__free(whole);
	perfmap__free(parts);
	return 0;
}
