// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_kallsyms.c - libFuzzer target for the kallsyms parser: parse, then
 * look up every symbol's address and its neighbours, and addresses taken
 * from the input, checking the lookup's own invariants.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct ksyms *ks, uint64_t addr)
{
	const struct ksym *s = ksyms__lookup(ks, addr);

	if (!s)
		return;
	/* The answer starts at or below addr and has a real, readable name. */
	if (s->addr > addr || ksyms__restricted(ks) || !s->name[0] || strlen(s->name) > (1u << 24))
		abort();
	if (s->module && strlen(s->module) > (1u << 24))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms *ks = ksyms__parse((const char *)data, size);
	uint64_t a;

	if (!ks)
		return 0;
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		memcpy(&a, data + i, 8);
		check(ks, a);
	}
	check(ks, 0);
	check(ks, UINT64_MAX);
	/* Every named symbol found by name and near its address. */
	for (size_t i = 0; i < 64 && i + 1 < size; i++) {
		char name[32];
		size_t n = data[i] % sizeof(name);
		const struct ksym *s;

		if (i + n > size)
			break;
		memcpy(name, data + i, n);
		name[n] = '\0';
		s = ksyms__find(ks, name);
		if (!s)
			continue;
		if (strcmp(s->name, name))
			abort();
		check(ks, s->addr);
		check(ks, s->addr - 1);
		check(ks, s->addr + 1);
		check(ks, s->addr + (1u << 20));
	}
	(void)ksyms__count(ks);
	(void)ksyms__bad_lines(ks);
	ksyms__free(ks);
	return 0;
}
