// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_folded_reader.c - libFuzzer target for the folded reader: parse, then
 * write every format from what was parsed (writers see hostile names too),
 * and check that folded output parses back to the same total.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/reader.h"
#include "format/writer.h"
#include "base/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *write_all(const struct profile *p, size_t *folded_len)
{
	const struct writer *const *w;
	struct out_opts o = { .top = 5, .merge = true };
	char *folded = NULL;

	for (w = writer__all(); *w; w++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			abort();
		if ((*w)->write(p, f, &o))
			abort(); /* only ENOMEM could fail, and inputs are small */
		fclose(f);
		if (*w == &writer_folded) {
			folded = buf;
			*folded_len = len;
		} else {
			free(buf);
		}
	}
	return folded;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile__new(), *q;
	struct errmsg err = { 0 };
	char *folded;
	size_t len = 0;

	if (!p)
		return 0;
	if (reader_folded.read(data, size, p, &err)) {
		if (!err.msg[0])
			abort(); /* every failure says why */
		profile__free(p);
		return 0;
	}
	profile__sort(p);
	folded = write_all(p, &len);
	q = profile__new();
	if (len) {
		if (reader_folded.read((const uint8_t *)folded, len, q, &err) ||
		    profile__total(q) != profile__total(p))
			abort();
	}
	free(folded);
	profile__free(q);
	profile__free(p);
	return 0;
}
