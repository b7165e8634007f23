// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pprof_write.c - the profile as google/pprof's profile.proto, gzip-compressed:
 * what `go tool pprof`, Parca, Pyroscope and Grafana read.
 *
 * The protobuf encoding is written by hand. The schema subset is tiny (eight
 * message types, varints and length-delimited fields only) and fixed, and
 * protobuf-c would need protoc and a code generator at build time plus a
 * runtime library for ~150 lines of encoder. Nested messages are encoded into
 * a scratch buffer first, then copied behind their length.
 *
 * What goes where:
 *   sample types  samples/count, cpu/nanoseconds (= count x period); with an
 *                 unknown frequency (e.g. converted folded input) only
 *                 samples/count, and period type samples/count, period 1.
 *                 With off-CPU time (--off-cpu) also off_cpu/nanoseconds
 *                 and, when the period is known, wall/nanoseconds (cpu +
 *                 off_cpu); the default sample type stays cpu (samples).
 *                 A view (out_opts.view) keeps only its values: cpu the
 *                 first two, off-cpu or wall just that one
 *                 An allocation profile (meta.alloc_period, --alloc) has
 *                 Go's heap profile types instead: alloc_objects/count,
 *                 alloc_space/bytes, inuse_objects/count, inuse_space/bytes,
 *                 all four whatever the view; an allocation view names the
 *                 default type (/debug/pprof/allocs: alloc_space, as Go's
 *                 allocs profile), else none (pprof then shows the last,
 *                 inuse_space, as for Go's heap profile)
 *   period        cpu/nanoseconds, 1e9 / F (off-CPU or wall alone: that
 *                 type, period 1); allocations: space/bytes, the mean
 *                 bytes between samples
 *   sample        location ids leaf first; labels pid and thread (numbers,
 *                 when known), comm, cgroup, container (strings, when known)
 *   mapping       one per module file (with its build id when the profile
 *                 has one), "[kernel.kallsyms]" for every kernel frame,
 *                 "[jit]" for JIT frames without a perf map file; frames
 *                 without a module have none (mapping id 0)
 *                 "[python]" for Python frames
 *   location      one per frame, no address (frames are symbolized), one line
 *                 with the source line when known; inlined frames (Go) join
 *                 the frame they were inlined into as its first lines,
 *                 innermost first, as pprof represents inlining. A sample's
 *                 leaf gets one location per distinct address when the
 *                 profile keeps them (psample.addr, record --addresses):
 *                 Location.address is the ELF virtual address in the
 *                 mapping's file (the kernel address for [kernel.kallsyms]),
 *                 the mapping starting at 0
 *   function      one per (kind, name, source file); system_name = name;
 *                 filename = the source file (Go, Python) when known
 *   comment       "bpfprof host=NAME", "bpfprof lost=N" when known; with
 *                 off-CPU time "bpfprof offcpu_min_ns=N", "bpfprof
 *                 offcpu_lost=N" (read back by pprof_read.c); "bpfprof
 *                 note=TEXT" (profile_meta.note: --alloc -a's guard)
 */
#include "format/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "format/counttab.h"
#include "format/pprof_proto.h"
#include "base/util.h"

/* --- encoder ---------------------------------------------------------------- */

struct pb {
	uint8_t *buf;
	size_t len, cap;
	bool oom;
};

static void pb_raw(struct pb *b, const void *d, size_t n)
{
	if (b->oom)
		return;
	if (n > SIZE_MAX - b->len || array_grow((void **)&b->buf, &b->cap, b->len + n, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->buf + b->len, d, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, tmp, n);
}

static void pb_tag(struct pb *b, unsigned field, unsigned wire)
{
	pb_varint(b, ((uint64_t)field << 3) | wire);
}

/* A varint field; zero is the default and is left out, as proto3 does. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *d, size_t n)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n);
	pb_raw(b, d, n);
}

/* Appends sub as embedded message `field` of b and empties sub. */
static void pb_msg(struct pb *b, unsigned field, struct pb *sub)
{
	if (sub->oom)
		b->oom = true;
	pb_bytes(b, field, sub->buf, sub->len);
	sub->len = 0;
}

/* A packed repeated varint field. */
static void pb_packed(struct pb *b, struct pb *scratch, unsigned field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	scratch->len = 0;
	for (size_t i = 0; i < n; i++)
		pb_varint(scratch, v[i]);
	pb_msg(b, field, scratch);
}

/* --- string table ------------------------------------------------------------- */

struct strtab {
	struct htab *idx;  /* string -> index */
	const char **strs; /* by index; point into idx's keys */
	size_t nr, cap;
};

static uint64_t str_id_raw(struct strtab *t, const char *s, bool *oom);

/*
 * Index of s in the table (added if new); 0 is always "". profile.proto is
 * proto3, whose strings must be UTF-8 (C++ and Java parsers reject others):
 * invalid sequences become U+FFFD, control characters '?'.
 */
static uint64_t str_id(struct strtab *t, const char *s, bool *oom)
{
	char small[256], *buf = small;
	size_t size;
	uint64_t id;

	if (!s)
		s = "";
	size = 3 * strlen(s) + 1;
	if (size > sizeof(small) && !(buf = malloc(size))) {
		*oom = true;
		return 0;
	}
	writer__clean_utf8(s, buf, size);
	id = str_id_raw(t, buf, oom);
	if (buf != small)
		free(buf);
	return id;
}

static uint64_t str_id_raw(struct strtab *t, const char *s, bool *oom)
{
	struct htab_entry *e;
	bool created;
	size_t at;

	e = htab__index(t->idx, s, strlen(s), &at, &created, &t->nr, (void **)&t->strs, &t->cap,
			sizeof(*t->strs));
	if (!e) {
		*oom = true;
		return 0;
	}
	if (created)
		t->strs[at] = (const char *)e->key;
	return at;
}

/* --- the Profile message's writer ------------------------------------------------- */

/*
 * What both encoders below (a profile's, bpfprof count's) write with: the
 * Profile message, scratch messages for the nested ones, the string table.
 * pbw_open() first; pbw_close() last, whatever happened in between.
 */
struct pbw {
	struct pb out, sub, sub2, scratch;
	struct strtab st;
	struct htab *mappings; /* mapping file name -> id - 1 */
	size_t nr_mappings;
	bool oom;
};

static uint64_t pbw_str(struct pbw *w, const char *s)
{
	return str_id(&w->st, s, &w->oom);
}

/*
 * key's id in h (a table of ids, numbered from 1 and counted by *nr: tables
 * that share it share the numbering), *created when key is new: the caller
 * writes its message. 0 out of memory (w->oom set).
 */
static uint64_t pbw_id(struct pbw *w, struct htab *h, const void *key, size_t len, size_t *nr,
		       bool *created)
{
	size_t at;

	if (!htab__index(h, key, len, &at, created, nr, NULL, NULL, 0)) {
		w->oom = true;
		return 0;
	}
	return at + 1;
}

static int pbw_open(struct pbw *w)
{
	w->st.idx = htab__new();
	w->mappings = htab__new();
	if (!w->st.idx || !w->mappings)
		return -ENOMEM;
	pbw_str(w, ""); /* index 0 */
	return 0;
}

static void pbw_value_type(struct pbw *w, unsigned field, const char *type, const char *unit)
{
	pb_uint(&w->sub, PPROF_VT_TYPE, pbw_str(w, type));
	pb_uint(&w->sub, PPROF_VT_UNIT, pbw_str(w, unit));
	pb_msg(&w->out, field, &w->sub);
}

/* The id of file's mapping, its Mapping message written the first time (build_id NULL: none). */
static uint64_t pbw_mapping(struct pbw *w, const char *file, const char *build_id)
{
	bool created;
	uint64_t id = pbw_id(w, w->mappings, file, strlen(file), &w->nr_mappings, &created);

	if (!created)
		return id;
	pb_uint(&w->sub, PPROF_MAPPING_ID, id);
	pb_uint(&w->sub, PPROF_MAPPING_FILENAME, pbw_str(w, file));
	pb_uint(&w->sub, PPROF_MAPPING_BUILD_ID, build_id ? pbw_str(w, build_id) : 0);
	pb_uint(&w->sub, PPROF_MAPPING_HAS_FUNCTIONS, 1);
	pb_msg(&w->out, PPROF_MAPPING, &w->sub);
	return id;
}

/* A Function message (file NULL, start_line 0: not known). */
static void pbw_function(struct pbw *w, uint64_t id, const char *name, const char *file,
			 uint64_t start_line)
{
	uint64_t sid = pbw_str(w, name);

	pb_uint(&w->sub, PPROF_FUNCTION_ID, id);
	pb_uint(&w->sub, PPROF_FUNCTION_NAME, sid);
	pb_uint(&w->sub, PPROF_FUNCTION_SYSTEM_NAME, sid);
	pb_uint(&w->sub, PPROF_FUNCTION_FILENAME, file ? pbw_str(w, file) : 0);
	pb_uint(&w->sub, PPROF_FUNCTION_START_LINE, start_line);
	pb_msg(&w->out, PPROF_FUNCTION, &w->sub);
}

/*
 * Unless err, ends the message with the string table (last: by now it holds
 * every string used) and hands it out in *buf, the caller's to free; frees
 * everything else.
 */
static int pbw_close(struct pbw *w, int err, uint8_t **buf, size_t *len)
{
	for (size_t i = 0; !err && i < w->st.nr && !w->oom; i++)
		pb_bytes(&w->out, PPROF_STRING_TABLE, w->st.strs[i], strlen(w->st.strs[i]));
	if (!err && (w->oom || w->out.oom || w->sub.oom || w->sub2.oom || w->scratch.oom))
		err = -ENOMEM;
	htab__free(w->st.idx);
	htab__free(w->mappings);
	free(w->st.strs);
	free(w->sub.buf);
	free(w->sub2.buf);
	free(w->scratch.buf);
	if (err) {
		free(w->out.buf);
		return err;
	}
	*buf = w->out.buf;
	*len = w->out.len;
	return 0;
}

/* --- the profile ----------------------------------------------------------- */

/* Inlined frames joined into one location at most (deeper runs are split). */
#define PPROF_MAX_INLINE 32

struct enc {
	const struct profile *p;
	struct pbw w;
	struct htab *functions;	 /* kind byte + name -> id - 1 */
	uint32_t *loc_of_frame;	 /* frame id -> location id, 0 = not yet */
	struct htab *loc_groups; /* frame ids of an inlined run, innermost first -> id - 1 */
	struct htab *leaf_locs;	 /* the same with a leaf address after them -> id - 1 */
	size_t nr_functions, nr_locations;
};

static const char *mapping_name(const struct pframe *f)
{
	if (f->kind == FRAME_KERNEL)
		return PPROF_KERNEL_MAPPING;
	if (f->kind == FRAME_JIT)
		return f->module ? f->module : PPROF_JIT_MAPPING;
	if (f->kind == FRAME_PYTHON)
		return PPROF_PYTHON_MAPPING;
	if (f->kind == FRAME_LISP)
		return PPROF_LISP_MAPPING;
	if (f->kind == FRAME_JAVA_INTERP)
		return PPROF_INTERP_MAPPING;
	return f->module;
}

static uint64_t mapping_id(struct enc *e, const struct pframe *f)
{
	const char *name = mapping_name(f);

	if (!name)
		return 0;
	return pbw_mapping(
		&e->w, name,
		profile__build_id(e->p, f->kind == FRAME_KERNEL ? PPROF_KERNEL_MAPPING : name));
}

static uint64_t function_id(struct enc *e, const struct pframe *f)
{
	size_t len = strlen(f->name), flen = f->file ? strlen(f->file) : 0;
	char *key = malloc(len + flen + 2);
	uint64_t id;
	bool created;

	if (!key) {
		e->w.oom = true;
		return 0;
	}
	/* kind, name, NUL, file: unambiguous since names have no NUL. */
	key[0] = (char)f->kind;
	memcpy(key + 1, f->name, len + 1);
	if (flen)
		memcpy(key + len + 2, f->file, flen);
	id = pbw_id(&e->w, e->functions, key, len + 1 + (flen ? flen + 1 : 0), &e->nr_functions,
		    &created);
	free(key);
	if (created)
		pbw_function(&e->w, id, f->name, f->file, f->start_line);
	return id;
}

/*
 * The location of frames[0..n): one frame, or inlined frames (innermost
 * first) and the frame they were inlined into, which gives the mapping.
 */
static uint64_t location_id(struct enc *e, const uint32_t *frames, uint32_t n, uint64_t addr)
{
	const struct pframe *outer = profile__frame_get(e->p, frames[n - 1]);
	uint64_t mid, id, fids[PPROF_MAX_INLINE];
	uint32_t key[PPROF_MAX_INLINE + 2];
	bool created = true;

	if (n == 1 && !addr && e->loc_of_frame[frames[0]])
		return e->loc_of_frame[frames[0]];
	if (addr) {
		/* A leaf address: one location per (frames, address). */
		memcpy(key, frames, n * sizeof(*frames));
		memcpy(key + n, &addr, sizeof(addr));
		id = pbw_id(&e->w, e->leaf_locs, key, n * sizeof(*frames) + sizeof(addr),
			    &e->nr_locations, &created);
	} else if (n > 1) {
		id = pbw_id(&e->w, e->loc_groups, frames, n * sizeof(*frames), &e->nr_locations,
			    &created);
	} else {
		id = ++e->nr_locations;
		e->loc_of_frame[frames[0]] = (uint32_t)id;
	}
	if (!created)
		return id;
	mid = mapping_id(e, outer);
	/* Functions first: their messages must not interleave with this one's. */
	for (uint32_t i = 0; i < n; i++)
		fids[i] = function_id(e, profile__frame_get(e->p, frames[i]));
	pb_uint(&e->w.sub, PPROF_LOCATION_ID, id);
	pb_uint(&e->w.sub, PPROF_LOCATION_MAPPING_ID, mid);
	pb_uint(&e->w.sub, PPROF_LOCATION_ADDRESS, addr);
	for (uint32_t i = 0; i < n; i++) {
		const struct pframe *f = profile__frame_get(e->p, frames[i]);

		pb_uint(&e->w.sub2, PPROF_LINE_FUNCTION_ID, fids[i]);
		pb_uint(&e->w.sub2, PPROF_LINE_LINE, f->line);
		pb_msg(&e->w.sub, PPROF_LOCATION_LINE, &e->w.sub2);
	}
	pb_msg(&e->w.out, PPROF_LOCATION, &e->w.sub);
	return id;
}

static void label(struct enc *e, const char *key, const char *str, uint64_t num)
{
	pb_uint(&e->w.sub2, PPROF_LABEL_KEY, pbw_str(&e->w, key));
	if (str)
		pb_uint(&e->w.sub2, PPROF_LABEL_STR, pbw_str(&e->w, str));
	else
		pb_uint(&e->w.sub2, PPROF_LABEL_NUM, num);
	pb_msg(&e->w.sub, PPROF_SAMPLE_LABEL, &e->w.sub2);
}

static void comment(struct enc *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void comment(struct enc *e, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pb_uint(&e->w.out, PPROF_COMMENT, pbw_str(&e->w, buf));
}

/* Which values a profile's samples carry, in this order. */
enum {
	V_SAMPLES,
	V_CPU,
	V_OFFCPU,
	V_WALL,
	V_ALLOC_OBJ,
	V_ALLOC_SPACE,
	V_INUSE_OBJ,
	V_INUSE_SPACE,
	V_MAX
};

static const char *const vtypes[V_MAX][2] = {
	[V_SAMPLES] = { "samples", "count" },	      [V_CPU] = { "cpu", "nanoseconds" },
	[V_OFFCPU] = { "off_cpu", "nanoseconds" },    [V_WALL] = { "wall", "nanoseconds" },
	[V_ALLOC_OBJ] = { "alloc_objects", "count" }, [V_ALLOC_SPACE] = { "alloc_space", "bytes" },
	[V_INUSE_OBJ] = { "inuse_objects", "count" }, [V_INUSE_SPACE] = { "inuse_space", "bytes" },
};

/* Encodes the uncompressed Profile message, but its string table, into e->w.out. */
static int encode(struct enc *e, enum view view)
{
	const struct profile_meta *m = profile__meta_c(e->p);
	uint64_t period = m->freq_hz ? (NS_PER_SEC + m->freq_hz / 2) / m->freq_hz : 0;
	bool want[V_MAX] = { false };
	int which[V_MAX], nv = 0, dflt = -1;
	uint64_t *locs = NULL;
	size_t cap = 0;

	/* A heap profile: the view names the default type (any other: none). */
	if (m->alloc_period && view__is_alloc(view))
		dflt = view == VIEW_ALLOC_SPACE	    ? V_ALLOC_SPACE
		       : view == VIEW_ALLOC_OBJECTS ? V_ALLOC_OBJ
		       : view == VIEW_INUSE_SPACE   ? V_INUSE_SPACE
						    : V_INUSE_OBJ;
	view = m->offcpu ? view : VIEW_CPU;
	want[V_SAMPLES] = view == VIEW_CPU || view == VIEW_AUTO;
	want[V_CPU] = want[V_SAMPLES] && period;
	want[V_OFFCPU] = view == VIEW_OFFCPU || view == VIEW_AUTO;
	want[V_WALL] = (view == VIEW_WALL || view == VIEW_AUTO) && period;
	if (view == VIEW_WALL && !period)
		return -EINVAL; /* on-CPU samples cannot be turned into time */
	if (m->alloc_period) {	/* a heap profile, as Go writes one: its four types */
		memset(want, 0, sizeof(want));
		want[V_ALLOC_OBJ] = want[V_ALLOC_SPACE] = want[V_INUSE_OBJ] = want[V_INUSE_SPACE] =
			true;
	}

	for (int v = 0; v < V_MAX; v++) {
		if (!want[v])
			continue;
		which[nv++] = v;
		pbw_value_type(&e->w, PPROF_SAMPLE_TYPE, vtypes[v][0], vtypes[v][1]);
	}

	for (size_t i = 0; i < profile__nr_samples(e->p) && !e->w.oom; i++) {
		const struct psample *s = profile__sample(e->p, i);
		uint64_t all[V_MAX] = { s->count,
					s->count * period,
					s->offcpu_ns,
					s->count * period + s->offcpu_ns,
					s->alloc.alloc_objects,
					s->alloc.alloc_bytes,
					s->alloc.inuse_objects,
					s->alloc.inuse_bytes };
		uint64_t values[V_MAX];
		const uint32_t *fr;
		uint32_t n, nl;
		bool any = false;

		for (int j = 0; j < nv; j++) {
			values[j] = all[which[j]];
			any |= values[j] != 0;
		}
		if (!any)
			continue;
		fr = profile__stack_get(e->p, s->stack, &n);
		if (array_grow((void **)&locs, &cap, n, sizeof(*locs))) {
			e->w.oom = true;
			break;
		}
		/* Location messages go out as frames are first seen, before the
		 * sample that uses them: any order is valid protobuf. */
		nl = 0;
		for (uint32_t j = 0; j < n;) {
			uint32_t group[PPROF_MAX_INLINE], g = 0;

			/* Leaf first: inlined frames, then the frame they are part of. */
			do {
				group[g++] = fr[n - 1 - j];
			} while (++j < n && g < PPROF_MAX_INLINE &&
				 profile__frame_get(e->p, group[g - 1])->kind == FRAME_INLINE);
			/* The sample's leaf address (if kept) goes on the leaf's location. */
			locs[nl] = location_id(e, group, g, nl ? 0 : s->addr);
			nl++;
		}
		pb_packed(&e->w.sub, &e->w.scratch, PPROF_SAMPLE_LOCATION_ID, locs, nl);
		pb_packed(&e->w.sub, &e->w.scratch, PPROF_SAMPLE_VALUE, values, (size_t)nv);
		if (s->pid)
			label(e, "pid", NULL, s->pid);
		if (s->tid)
			label(e, "thread", NULL, s->tid);
		label(e, "comm", s->comm, 0);
		if (s->cgroup)
			label(e, "cgroup", s->cgroup, 0);
		if (s->container)
			label(e, "container_id", s->container, 0);
		pb_msg(&e->w.out, PPROF_SAMPLE, &e->w.sub);
	}
	free(locs);

	pb_uint(&e->w.out, PPROF_TIME_NANOS, m->start_ns);
	pb_uint(&e->w.out, PPROF_DURATION_NANOS, m->duration_ns);
	if (m->alloc_period) {
		pbw_value_type(&e->w, PPROF_PERIOD_TYPE, "space", "bytes");
		pb_uint(&e->w.out, PPROF_PERIOD, m->alloc_period);
	} else if (want[V_CPU]) {
		pbw_value_type(&e->w, PPROF_PERIOD_TYPE, "cpu", "nanoseconds");
		pb_uint(&e->w.out, PPROF_PERIOD, period);
	} else if (want[V_SAMPLES]) {
		pbw_value_type(&e->w, PPROF_PERIOD_TYPE, "samples", "count");
		pb_uint(&e->w.out, PPROF_PERIOD, 1);
	} else {
		pbw_value_type(&e->w, PPROF_PERIOD_TYPE, vtypes[which[0]][0], vtypes[which[0]][1]);
		pb_uint(&e->w.out, PPROF_PERIOD, 1);
	}
	/* Several types: the on-CPU one stays the default, as without --off-cpu. */
	if (nv > 1 && m->offcpu)
		dflt = want[V_CPU] ? V_CPU : V_SAMPLES;
	if (dflt >= 0)
		pb_uint(&e->w.out, PPROF_DEFAULT_SAMPLE_TYPE, pbw_str(&e->w, vtypes[dflt][0]));
	if (m->hostname[0])
		comment(e, PPROF_COMMENT_PREFIX "host=%s", m->hostname);
	if (m->lost)
		comment(e, PPROF_COMMENT_PREFIX "lost=%" PRIu64, m->lost);
	if (m->offcpu && m->offcpu_min_ns)
		comment(e, PPROF_COMMENT_PREFIX "offcpu_min_ns=%" PRIu64, m->offcpu_min_ns);
	if (m->offcpu && m->offcpu_lost)
		comment(e, PPROF_COMMENT_PREFIX "offcpu_lost=%" PRIu64, m->offcpu_lost);
	if (m->note[0])
		comment(e, PPROF_COMMENT_PREFIX "note=%s", m->note);
	return 0;
}

int pprof__encode(const struct profile *p, uint8_t **buf, size_t *len)
{
	return pprof__encode_view(p, VIEW_AUTO, buf, len);
}

int pprof__encode_view(const struct profile *p, enum view view, uint8_t **buf, size_t *len)
{
	struct enc e = { .p = p };
	int err = pbw_open(&e.w);

	e.functions = htab__new();
	e.loc_groups = htab__new();
	e.loc_of_frame = calloc(profile__nr_frames(p) + 1, sizeof(*e.loc_of_frame));
	e.leaf_locs = htab__new();
	if (!err && !(e.functions && e.loc_groups && e.leaf_locs && e.loc_of_frame))
		err = -ENOMEM;
	if (!err)
		err = encode(&e, view);
	htab__free(e.loc_groups);
	htab__free(e.leaf_locs);
	htab__free(e.functions);
	free(e.loc_of_frame);
	return pbw_close(&e.w, err, buf, len);
}

static int write_pprof(const struct profile *p, FILE *f, const struct out_opts *o)
{
	uint8_t *buf;
	size_t len;
	int err = pprof__encode_view(p, o ? o->view : VIEW_AUTO, &buf, &len);

	if (err)
		return err;
	err = writer__gzip(f, buf, len);
	free(buf);
	return err;
}

const struct writer writer_pprof = {
	.name = "pprof",
	.exts = { ".pb.gz", ".pprof" },
	.description = "gzipped profile.proto for go tool pprof, Parca, Pyroscope",
	.write = write_pprof,
	.all_values = true,
};

/* The same message uncompressed: go tool pprof reads both, and a .pb file
 * name (as its -proto output and some tools write) was refused. */
static int write_pprof_pb(const struct profile *p, FILE *f, const struct out_opts *o)
{
	uint8_t *buf;
	size_t len;
	int err = pprof__encode_view(p, o ? o->view : VIEW_AUTO, &buf, &len);

	if (err)
		return err;
	if (len && fwrite(buf, 1, len, f) != len)
		err = -EIO;
	free(buf);
	return err;
}

const struct writer writer_pb = {
	.name = "pb",
	.exts = { ".pb" },
	.description = "profile.proto uncompressed (go tool pprof reads it)",
	.write = write_pprof_pb,
	.all_values = true,
};

/* --- bpfprof count's calls and times ---------------------------------------------- */

/*
 * bpfprof count -f pprof: sample types calls/count and time/nanoseconds (the
 * default), one sample per (function, caller) edge, its location ids the
 * function then its caller; calls not counted by caller (the callers map
 * full, or unknown) in a sample of the function alone. A function's time is
 * its inclusive entry-to-return time, split among its callers in proportion
 * to their calls (the BPF side times calls per function, not per caller):
 * the function's flat time is exact, each edge's time its share of it.
 * Locations are one per function (name and module), the callers' by name:
 * a caller that is itself counted is the same location; one not counted
 * has no mapping.
 */
struct cenc {
	struct pbw w;
	struct htab *locs;    /* module NUL name -> location id (= function id) - 1 */
	struct htab *by_name; /* name -> the first counted function's location id */
	size_t nr_locs;
};

/* The location (and function, the same id) of name in module (NULL: none). */
static uint64_t cenc_loc(struct cenc *e, const char *name, const char *module)
{
	size_t ml = module ? strlen(module) : 0, nl = strlen(name);
	char *key = malloc(ml + nl + 1);
	struct htab_entry *bn;
	uint64_t mid, id;
	bool created;

	if (!key) {
		e->w.oom = true;
		return 0;
	}
	if (ml)
		memcpy(key, module, ml);
	key[ml] = '\0';
	memcpy(key + ml + 1, name, nl);
	id = pbw_id(&e->w, e->locs, key, ml + 1 + nl, &e->nr_locs, &created);
	free(key);
	if (!created)
		return id;
	mid = module && *module ? pbw_mapping(&e->w, module, NULL) : 0;
	if (module) {
		bn = htab__upsert(e->by_name, name, nl, &created);
		if (!bn)
			e->w.oom = true;
		else if (created)
			bn->value = (void *)(uintptr_t)id;
	}
	pbw_function(&e->w, id, name, NULL, 0);
	pb_uint(&e->w.sub, PPROF_LOCATION_ID, id);
	pb_uint(&e->w.sub, PPROF_LOCATION_MAPPING_ID, mid);
	pb_uint(&e->w.sub2, PPROF_LINE_FUNCTION_ID, id);
	pb_msg(&e->w.sub, PPROF_LOCATION_LINE, &e->w.sub2);
	pb_msg(&e->w.out, PPROF_LOCATION, &e->w.sub);
	return id;
}

/* A caller's location: the counted function of that name, else one of its own. */
static uint64_t cenc_caller(struct cenc *e, const char *name)
{
	struct htab_entry *he = htab__find(e->by_name, name, strlen(name));

	return he ? (uintptr_t)he->value : cenc_loc(e, name, NULL);
}

static void cenc_sample(struct cenc *e, uint64_t leaf, uint64_t caller, uint64_t calls, uint64_t ns)
{
	uint64_t locs[2] = { leaf, caller }, values[2] = { calls, ns };

	pb_packed(&e->w.sub, &e->w.scratch, PPROF_SAMPLE_LOCATION_ID, locs, caller ? 2 : 1);
	pb_packed(&e->w.sub, &e->w.scratch, PPROF_SAMPLE_VALUE, values, 2);
	pb_msg(&e->w.out, PPROF_SAMPLE, &e->w.sub);
}

static void cenc_run(struct cenc *e, const struct count_fn *fns, size_t n, uint64_t duration_ns)
{
	uint64_t *ids = calloc(n ? n : 1, sizeof(*ids));

	if (!ids) {
		e->w.oom = true;
		return;
	}
	pbw_value_type(&e->w, PPROF_SAMPLE_TYPE, "calls", "count");
	pbw_value_type(&e->w, PPROF_SAMPLE_TYPE, "time", "nanoseconds");
	/* Every counted function's location first: callers that are counted use it. */
	for (size_t i = 0; i < n; i++)
		if (fns[i].st.calls)
			ids[i] = cenc_loc(e, fns[i].function, fns[i].module);
	for (size_t i = 0; i < n && !e->w.oom; i++) {
		const struct count_fn *f = &fns[i];
		uint64_t calls = f->st.calls, left = calls, left_ns = f->st.total_ns;

		if (!calls)
			continue;
		for (size_t c = 0; c < f->nr_callers && left; c++) {
			uint64_t k = MIN(f->callers[c].calls, left);
			/* its share of the function's time, by calls */
			uint64_t ns =
				(uint64_t)((double)f->st.total_ns * (double)k / (double)calls);

			ns = MIN(ns, left_ns);
			cenc_sample(e, ids[i], cenc_caller(e, f->callers[c].function), k, ns);
			left -= k;
			left_ns -= ns;
		}
		if (left || left_ns)
			cenc_sample(e, ids[i], 0, left, left_ns);
	}
	free(ids);
	pb_uint(&e->w.out, PPROF_DURATION_NANOS, duration_ns);
	pbw_value_type(&e->w, PPROF_PERIOD_TYPE, "calls", "count");
	pb_uint(&e->w.out, PPROF_PERIOD, 1);
	pb_uint(&e->w.out, PPROF_DEFAULT_SAMPLE_TYPE, pbw_str(&e->w, "time"));
	pb_uint(&e->w.out, PPROF_COMMENT,
		pbw_str(&e->w,
			PPROF_COMMENT_PREFIX "count: time is each function's inclusive time, "
					     "split among its callers by their calls"));
}

int pprof__encode_count(const struct count_fn *fns, size_t n, uint64_t duration_ns, uint8_t **buf,
			size_t *len)
{
	struct cenc e = { 0 };
	int err = pbw_open(&e.w);

	e.locs = htab__new();
	e.by_name = htab__new();
	if (!err && !(e.locs && e.by_name))
		err = -ENOMEM;
	if (!err)
		cenc_run(&e, fns, n, duration_ns);
	htab__free(e.locs);
	htab__free(e.by_name);
	return pbw_close(&e.w, err, buf, len);
}
