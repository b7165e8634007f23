// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * speedscope.c - speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json): drop the file on
 * https://www.speedscope.app or open it with the `speedscope` CLI, which
 * runs offline.
 *
 * One "sampled" profile per process (comm and pid), largest first, or with
 * --merge one profile for everything with the process name as the root
 * frame, as folded output has it. Frames are shared; names carry the folded
 * kind suffixes (kernel "_[k]", JIT "_[j]", Python "_[py]", inlined "_[i]", Lisp "_[lisp]",
 * interpreted Java "_[0]"),
 * "file" is the source file (Go, Python) or else the module, and "line" the
 * source line when known: a function sampled at two lines is two frames.
 * Weights are sample counts (unit "none"), bytes for the allocation views'
 * bytes (bpfprof --alloc), or microseconds for the time
 * views of an --off-cpu profile (format/view.h); identical stacks of one profile
 * (threads of a process) are summed. Samples carry no time order: bpfprof
 * counts in the kernel, so the "Time Order" view shows aggregated stacks.
 */
#include "format/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

/* Frame index of comm in merged profiles: after the profile's frames. */
static int64_t comm_frame(struct htab *comms, size_t base, const char *comm)
{
	struct htab_entry *e;
	bool created;

	e = htab__upsert(comms, &comm, sizeof(comm), &created);
	if (!e)
		return -ENOMEM;
	if (created)
		e->value = (void *)(uintptr_t)(base + htab__count(comms) - 1);
	return (int64_t)(uintptr_t)e->value;
}

struct skey {
	uintptr_t comm;
	uint32_t stack, pad;
};

static int write_one(FILE *f, const struct profile *p, const struct wproc *sp, bool merge,
		     struct htab *comms)
{
	struct htab *stacks = htab__new(); /* (comm if merged, stack) -> index */
	struct {
		const struct psample *s;
		uint64_t weight;
	} *rows = calloc(sp->nr + 1, sizeof(*rows));
	size_t nr = 0;
	int err = 0;

	if (!stacks || !rows) {
		htab__free(stacks);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < sp->nr; i++) {
		const struct psample *s = profile__sample(p, sp->samples[i]);
		struct skey k = { .comm = merge ? (uintptr_t)s->comm : 0, .stack = s->stack };
		struct htab_entry *e;
		bool created;

		e = htab__upsert(stacks, &k, sizeof(k), &created);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		if (created) {
			rows[nr].s = s;
			e->value = (void *)(uintptr_t)nr++;
		}
		rows[(uintptr_t)e->value].weight += s->count;
	}
	if (!err) {
		struct sbuf name = { 0 };

		if (sp->pid)
			err = sbuf_printf(&name, "%s (pid %u)", sp->comm, sp->pid);
		else
			err = sbuf_puts(&name, sp->comm);
		fputs("{\"type\":\"sampled\",\"name\":", f);
		writer__json_string(f, err ? "" : name.buf);
		sbuf_free(&name);
		fprintf(f,
			",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
			",\n\"samples\":[",
			!strcmp(profile__meta_c(p)->unit, "us")	     ? "microseconds"
			: !strcmp(profile__meta_c(p)->unit, "bytes") ? "bytes"
								     : "none",
			sp->total);
	}
	for (size_t i = 0; i < nr && !err; i++) {
		const uint32_t *fr;
		uint32_t n;
		bool first = true;

		fputs(i ? ",[" : "[", f);
		if (merge) {
			int64_t c = comm_frame(comms, profile__nr_frames(p), rows[i].s->comm);

			if (c < 0) {
				err = (int)c;
				break;
			}
			fprintf(f, "%" PRId64, c);
			first = false;
		}
		fr = profile__stack_get(p, rows[i].s->stack, &n);
		for (uint32_t j = 0; j < n; j++) {
			fprintf(f, "%s%u", first ? "" : ",", fr[j]);
			first = false;
		}
		fputc(']', f);
	}
	if (!err) {
		fputs("],\n\"weights\":[", f);
		for (size_t i = 0; i < nr; i++)
			fprintf(f, "%s%" PRIu64, i ? "," : "", rows[i].weight);
		fputs("]}", f);
	}
	htab__free(stacks);
	free(rows);
	return err;
}

static int write_speedscope(const struct profile *p, FILE *f, const struct out_opts *o)
{
	const struct profile_meta *m = profile__meta_c(p);
	bool merge = o && o->merge;
	struct htab *comms = htab__new(); /* comm pointer -> frame index (merged) */
	struct wproc *profs = NULL;
	size_t nr = 0;
	char label[4096];
	int err;

	if (!comms)
		return -ENOMEM;
	err = writer__processes(p, merge, &profs, &nr);
	if (err) {
		htab__free(comms);
		return err;
	}
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"bpfprof\",\"name\":",
	      f);
	{
		char name[512];
		const char *what = m->value_name[0] && !strncmp(m->value_name, "memory", 6)
					   ? "Memory profile"
					   : "CPU profile";

		if (m->hostname[0] && m->duration_ns)
			snprintf(name, sizeof(name), "%s of %s, %.1f s", what, m->hostname,
				 m->duration_ns / NS_PER_SEC_F);
		else if (m->hostname[0])
			snprintf(name, sizeof(name), "%s of %s", what, m->hostname);
		else
			snprintf(name, sizeof(name), "%s", what);
		writer__json_string(f, name);
	}
	fputs(",\"activeProfileIndex\":0,\n\"profiles\":[\n", f);
	for (size_t i = 0; i < nr && !err; i++) {
		if (i)
			fputs(",\n", f);
		err = write_one(f, p, &profs[i], merge, comms);
	}
	if (!err) {
		/* Frames last: merged profiles add process names as they go. */
		const char **extra = calloc(htab__count(comms) + 1, sizeof(*extra));
		size_t pos = 0;
		struct htab_entry *e;

		if (!extra) {
			err = -ENOMEM;
		} else {
			fputs("],\n\"shared\":{\"frames\":[\n", f);
			for (size_t i = 0; i < profile__nr_frames(p); i++) {
				const struct pframe *fr = profile__frame_get(p, (uint32_t)i);

				writer__frame_display(fr, false, label, sizeof(label));
				snprintf(label + strlen(label), sizeof(label) - strlen(label), "%s",
					 writer__kind_suffix(fr->kind));
				fputs(i ? ",\n{\"name\":" : "{\"name\":", f);
				writer__json_string(f, label);
				if (fr->file || fr->module) {
					fputs(",\"file\":", f);
					writer__json_string(f, fr->file ? fr->file : fr->module);
				}
				if (fr->line)
					fprintf(f, ",\"line\":%u", fr->line);
				fputc('}', f);
			}
			while ((e = htab__next(comms, &pos)))
				extra[(uintptr_t)e->value - profile__nr_frames(p)] =
					*(const char **)e->key;
			for (size_t i = 0; i < htab__count(comms); i++) {
				fputs(i || profile__nr_frames(p) ? ",\n{\"name\":" : "{\"name\":",
				      f);
				writer__json_string(f, extra[i][0] ? extra[i] : "[unknown]");
				fputc('}', f);
			}
			fputs("]}}\n", f);
			free(extra);
		}
	}
	writer__processes_free(profs, nr);
	htab__free(comms);
	return err;
}

const struct writer writer_speedscope = {
	.name = "speedscope",
	.exts = { ".speedscope.json", ".json" },
	.description = "speedscope JSON (https://www.speedscope.app, offline CLI)",
	.write = write_speedscope,
};
