// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_cpython - what bpfprof parses out of a Python process's memory: the
 * location table of a code object (co_linetable) for every instruction, a
 * str object's header and text (every version's layout), the
 * _Py_DebugOffsets block at the start of _PyRuntime, and a python3.X
 * executable's DT_NEEDED list (does it need a libpython?). The first byte
 * picks which, the rest is the input.
 */
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/cpython.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cpython_layout l;
	char out[64];
	uint32_t line, v;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		for (uint32_t i = 0; i < 4 * size + 4; i++)
			if (!cpython__line(data + 1, size - 1, 1, i, &line) && !line)
				abort();
		break;
	case 1:
		for (uint32_t ver = 11; ver <= 12; ver++) {
			int n = cpython__str(cpython__table(CPY_VERSION(3, ver)), data + 1,
					     size - 1, out, sizeof(out));

			if (n >= (int)sizeof(out) || (n >= 0 && strlen(out) != (size_t)n))
				abort();
		}
		break;
	case 3: {
		/* libelf reads the image in place: a copy it may not outlive. */
		char *img = malloc(size - 1 ? size - 1 : 1);
		Elf *elf;

		if (!img)
			return 0;
		memcpy(img, data + 1, size - 1);
		elf_version(EV_CURRENT);
		elf = elf_memory(img, size - 1);
		if (elf) {
			(void)cpython__needs_libpython(elf);
			elf_end(elf);
		}
		free(img);
		break;
	}
	default:
		if (!cpython__debug_offsets(data + 1, size - 1, &l, &v)) {
			int n = cpython__str(&l, data + 1, size - 1, out, sizeof(out));

			if (n >= (int)sizeof(out))
				abort();
		}
		break;
	}
	return 0;
}
