// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_elfnote.c - libFuzzer target for the debug-link and build-id note
 * parsers, and the .gnu_debugaltlink one. The first byte picks the parser
 * and its options (alignment 4 or 8, byte order); the rest is the blob.
 * Results must respect their bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/elfnote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[BUILD_ID_MAX];
	char name[DEBUGLINK_NAME_MAX + 1], hex[2 * BUILD_ID_MAX + 2], alt[ALTLINK_NAME_MAX];
	uint32_t crc;
	size_t n;
	void *copy;

	if (!size)
		return 0;
	/* An exact-size heap copy, so ASan sees any read past the blob. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (data[0] & 1) {
		n = elfnote__build_id(copy, size - 1, data[0] & 2 ? 8 : 4, id);
		if (n > BUILD_ID_MAX)
			abort();
		elfnote__build_id_hex(id, n, hex, sizeof(hex));
		if (strlen(hex) > 2 * n + 1)
			abort();
	} else if (data[0] & 4) {
		if (!elfnote__altlink(copy, size - 1, alt, id, &n)) {
			size_t l = strlen(alt);

			if (!n || n > BUILD_ID_MAX || !l || l >= ALTLINK_NAME_MAX ||
			    l + 1 + n != size - 1 || memcmp(id, (const char *)copy + l + 1, n))
				abort();
		}
	} else if (!elfnote__debuglink(copy, size - 1, data[0] & 2, name, &crc)) {
		n = strlen(name);
		if (!n || n > DEBUGLINK_NAME_MAX || strchr(name, '/') || !strcmp(name, "..") ||
		    !strcmp(name, "."))
			abort();
	}
	free(copy);
	return 0;
}
