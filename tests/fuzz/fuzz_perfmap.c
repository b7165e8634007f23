// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_perfmap.c - libFuzzer target for the JIT perf map parser: the input
 * is fed whole, and again in two pieces the way a growing file is read
 * (perfmap__add continuing where complete lines ended); both must agree,
 * and every lookup must return a non-empty name with a sane offset.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
	}
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
