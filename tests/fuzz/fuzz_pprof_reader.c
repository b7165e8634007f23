// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_pprof_reader.c - libFuzzer target for the pprof reader, fed raw
 * protobuf (most inputs) or gzip (inputs starting with the gzip magic). A
 * profile that parses is written back as pprof and must parse again to the
 * same samples; the other writers must cope with whatever it holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/reader.h"
#include "format/writer.h"
#include "format/pprof_proto.h"
#include "base/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile__new(), *q = NULL;
	const struct writer *const *w;
	struct errmsg err = { 0 };
	uint8_t *msg = NULL;
	size_t len;

	if (!p)
		return 0;
	err.msg[0] = '\0';
	if (reader_pprof.read(data, size, p, &err)) {
		if (!err.msg[0])
			abort(); /* every failure says why */
		goto out;
	}
	profile__sort(p);
	if (pprof__encode(p, &msg, &len))
		abort();
	q = profile__new();
	if (reader_pprof.read(msg, len, q, &err) || profile__total(q) != profile__total(p) ||
	    profile__nr_samples(q) != profile__nr_samples(p))
		abort();
	for (w = writer__all(); *w; w++) {
		char *buf = NULL;
		size_t blen = 0;
		FILE *f = open_memstream(&buf, &blen);

		if (!f || (*w)->write(p, f, NULL))
			abort();
		fclose(f);
		free(buf);
	}
out:
	free(msg);
	profile__free(q);
	profile__free(p);
	return 0;
}
