// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_gobuildinfo.c - libFuzzer target for the Go build information
 * parser: any bytes, as a data segment's first bytes. A result must be a
 * NUL-terminated version within its cap, starting "go1." or "devel go1.".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/gobuildinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gobuild b;
	void *copy = malloc(size ? size : 1); /* exact size: ASan sees reads past it */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!gobuildinfo__parse(copy, size, &b)) {
		size_t n = strnlen(b.version, sizeof(b.version));

		if (n == 0 || n > GOBUILDINFO_MAX_VERSION)
			abort();
		if (strncmp(b.version, "go1.", 4) && strncmp(b.version, "devel go1.", 10))
			abort();
	}
	free(copy);
	return 0;
}
