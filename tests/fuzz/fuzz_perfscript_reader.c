// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_perfscript_reader.c - libFuzzer target for the perf script reader:
 * parse (the first event's samples, then those of an event the first byte
 * picks from a few names), write every format from what was parsed, and
 * check that the folded output parses back to the same total. Every failure
 * must say why; a success's note, if any, must too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/reader.h"
#include "format/writer.h"
#include "base/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_all_and_check(const struct profile *p)
{
	struct out_opts o = { .top = 5, .merge = true };
	char *folded = NULL;
	size_t folded_len = 0;

	for (const struct writer *const *w = writer__all(); *w; w++) {
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
			folded_len = len;
		} else {
			free(buf);
		}
	}
	if (folded_len) {
		struct profile *q = profile__new();
		struct errmsg err = { 0 };

		if (!q || reader_folded.read((const uint8_t *)folded, folded_len, q, &err) ||
		    profile__total(q) != profile__total(p))
			abort();
		profile__free(q);
	}
	free(folded);
}

static void one(const uint8_t *data, size_t size, const char *event)
{
	struct input_opts io = { .event = event };
	struct profile *p = profile__new();
	struct errmsg err = { 0 };

	if (!p)
		return;
	if (reader_perf_script.read_opts(data, size, p, &io, &err)) {
		if (!err.msg[0])
			abort(); /* every failure says why */
		profile__free(p);
		return;
	}
	if (err.hint[0] && !err.msg[0])
		abort();
	profile__sort(p);
	write_all_and_check(p);
	profile__free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const events[] = { "cpu-clock", "task-clock", "cycles", "" };

	one(data, size, NULL);
	if (size)
		one(data + 1, size - 1, events[data[0] % 4]);
	(void)perfscript__sniff(data, size);
	return 0;
}
