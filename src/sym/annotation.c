// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * annotation.c - instructions, samples and source lines of one function;
 * see annotation.h.
 */
#include "sym/annotation.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "sym/disasm.h"
#include "sym/elfcode.h"

static int cmp_counts(const void *a, const void *b)
{
	const struct ann_count *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* An empty a for [start, end): 0, or -EINVAL (an empty range), -EFBIG (too large). */
static int annotation_init(struct annotation *a, uint64_t start, uint64_t end)
{
	memset(a, 0, sizeof(*a));
	a->start = start;
	a->end = end;
	if (end <= start)
		return -EINVAL;
	if (end - start > ANNOTATION_MAX_BYTES)
		return -EFBIG;
	return 0;
}

int annotation__build(struct annotation *a, const struct elfcode *code, struct srcline *sl,
		      uint64_t start, uint64_t end, const struct ann_count *counts, size_t n)
{
	uint8_t *bytes;
	ssize_t got;
	bool is64;
	int machine, err;

	err = annotation_init(a, start, end);
	if (err)
		return err;
	bytes = malloc((size_t)(end - start));
	if (!bytes)
		return -ENOMEM;
	got = elfcode__read(code, start, bytes, (size_t)(end - start));
	if (got <= 0) {
		free(bytes);
		return got ? (int)got : -ENOENT;
	}
	machine = elfcode__machine(code, &is64);
	/* A function cut short by its segment's end: what there is. */
	err = annotation__build_bytes(a, bytes, (size_t)got, machine, is64, sl, start, end, counts,
				      n);
	free(bytes);
	return err;
}

int annotation__build_bytes(struct annotation *a, const uint8_t *bytes, size_t len, int machine,
			    bool is64, struct srcline *sl, uint64_t start, uint64_t end,
			    const struct ann_count *counts, size_t n)
{
	struct ann_count *sorted = NULL;
	struct disasm *d = NULL;
	size_t cap = 0, ci = 0;
	int err = 0;

	err = annotation_init(a, start, end);
	if (err)
		return err;
	if (len > end - start)
		len = (size_t)(end - start);
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted) {
		err = -ENOMEM;
		goto out;
	}
	d = disasm__new(machine, is64);
	if (!d) {
		err = -errno;
		goto out;
	}
	if (n)
		memcpy(sorted, counts, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_counts);
	if (sl && srcline__rows(sl, start, end, &a->rows, &a->nr_rows))
		a->rows = NULL, a->nr_rows = 0;

	/* Samples below the function. */
	while (ci < n && sorted[ci].addr < start)
		a->outside += sorted[ci++].count;
	for (size_t off = 0; off < len;) {
		struct ann_insn *in;
		size_t sz;

		if (array_grow((void **)&a->insns, &cap, a->nr + 1, sizeof(*a->insns))) {
			err = -ENOMEM;
			goto out;
		}
		in = &a->insns[a->nr++];
		memset(in, 0, sizeof(*in));
		in->addr = start + off;
		sz = disasm__one(d, bytes + off, len - off, in->addr, start, end, in->text,
				 sizeof(in->text));
		in->size = (uint32_t)sz;
		while (ci < n && sorted[ci].addr < in->addr + sz) {
			in->count += sorted[ci].count;
			a->total += sorted[ci++].count;
		}
		if (a->rows)
			in->src = srcline__find(a->rows, a->nr_rows, in->addr);
		off += sz;
	}
	/* Past what was read (the function's symbol outruns its segment) or above. */
	while (ci < n)
		a->outside += sorted[ci++].count;
out:
	free(sorted);
	disasm__free(d);
	if (err)
		annotation__free(a);
	return err;
}

void annotation__free(struct annotation *a)
{
	if (!a)
		return;
	free(a->insns);
	free(a->rows);
	a->insns = NULL;
	a->rows = NULL;
	a->nr = a->nr_rows = 0;
}
