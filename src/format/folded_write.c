// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * folded_write.c - Brendan Gregg's collapsed-stack format:
 *
 *     comm;root_frame;...;leaf_frame COUNT
 *
 * One line per distinct text (samples of different pids with the same comm
 * and frames are summed, as stackcollapse does), sorted for stable output.
 */
#include "format/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

static int cmp_entries(const void *a, const void *b)
{
	const struct htab_entry *x = *(const struct htab_entry *const *)a;
	const struct htab_entry *y = *(const struct htab_entry *const *)b;

	return strcmp((const char *)x->key, (const char *)y->key);
}

/* Appends "comm;frame;...;frame" for sample s to sb. */
static int format_stack(const struct profile *p, const struct psample *s, bool lines,
			struct sbuf *sb)
{
	struct pframe comm = { .name = s->comm, .kind = FRAME_OTHER };
	char label[4096];
	const uint32_t *fr;
	uint32_t n;
	int err;

	writer__frame_label(&comm, label, sizeof(label));
	err = sbuf_puts(sb, label[0] ? label : "[unknown]");
	fr = profile__stack_get(p, s->stack, &n);
	for (uint32_t i = 0; i < n && !err; i++) {
		writer__frame_label_lines(profile__frame_get(p, fr[i]), lines, label,
					  sizeof(label));
		err = sbuf_add(sb, ";", 1) ?: sbuf_puts(sb, label);
	}
	return err;
}

static int write_folded(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct htab *lines = htab__new();
	struct htab_entry **sorted = NULL, *e;
	struct sbuf sb = { 0 };
	size_t n = 0, pos = 0;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct psample *s = profile__sample(p, i);

		if (!s->count)
			continue;
		sbuf_reset(&sb);
		err = format_stack(p, s, o && o->lines, &sb);
		if (err)
			break;
		e = htab__upsert(lines, sb.buf, sb.len, NULL);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		e->value = (void *)((uintptr_t)e->value + s->count);
	}
	if (!err) {
		sorted = malloc((htab__count(lines) + 1) * sizeof(*sorted));
		if (!sorted)
			err = -ENOMEM;
	}
	if (!err) {
		while ((e = htab__next(lines, &pos)))
			sorted[n++] = e;
		qsort(sorted, n, sizeof(*sorted), cmp_entries);
		for (size_t i = 0; i < n; i++)
			if (fprintf(f, "%s %" PRIu64 "\n", (const char *)sorted[i]->key,
				    (uint64_t)(uintptr_t)sorted[i]->value) < 0) {
				err = -errno;
				break;
			}
	}
	free(sorted);
	sbuf_free(&sb);
	htab__free(lines);
	return err;
}

const struct writer writer_folded = {
	.name = "folded",
	.exts = { ".folded", ".collapsed", ".stacks" },
	.description = "collapsed stacks, one \"comm;root;...;leaf COUNT\" line each",
	.write = write_folded,
};
