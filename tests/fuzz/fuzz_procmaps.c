// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_procmaps.c - libFuzzer target for the /proc/PID/maps parser: parse,
 * check that the result is sorted and disjoint, and find() at every boundary.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct procmaps *m, uint64_t addr)
{
	const struct procmap *pm = procmaps__find(m, addr);

	if (pm && (addr < pm->start || addr >= pm->end))
		abort();
	if (pm)
		(void)procmap__is_file(pm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps m = { 0 };

	if (procmaps__parse((const char *)data, size, &m))
		return 0;
	for (size_t i = 0; i < m.nr; i++) {
		const struct procmap *pm = &m.maps[i];

		if (pm->start >= pm->end || (i && pm->start < m.maps[i - 1].end))
			abort();
		if (pm->path && strlen(pm->path) > size)
			abort();
		check(&m, pm->start);
		check(&m, pm->end - 1);
		check(&m, pm->end);
		check(&m, pm->start - 1);
	}
	check(&m, 0);
	check(&m, UINT64_MAX);
	procmaps__free(&m);
	return 0;
}
