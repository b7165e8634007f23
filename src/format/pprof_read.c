// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pprof_read.c - reads google/pprof profile.proto files (gzipped or not): what
 * bpfprof writes, and CPU profiles of Go programs and other pprof producers.
 *
 * Two passes over the message: the first records where each sample is and
 * decodes mappings, locations, functions and the string table (which may come
 * in any order); the second turns samples into profile stacks. Every varint
 * is at most 10 bytes, every length is checked against what is left, every
 * string index and id is checked before use; ids may be sparse, so they are
 * looked up through hash tables, never used as array indexes.
 *
 * Mapping to the profile: location lines become frames (line[0] is the
 * innermost, so it is the leafmost frame); a location without lines becomes
 * "module+0xOFFSET" or "[unknown]". Frames under the mapping
 * "[kernel.kallsyms]" are kernel frames; under "[jit]" or a perf-PID.map file,
 * JIT frames. Labels pid, thread (or tid), comm, cgroup and container give the
 * sample's identity; without a comm label the process name is the basename of
 * the main (first file) mapping. The count is the "samples" value, else the
 * "cpu"/"nanoseconds" value divided by the period, else the first value
 * that is not off-CPU time; an "off_cpu"/"nanoseconds" value (bpfprof
 * --off-cpu) is the sample's off-CPU time, and makes the profile one with
 * off-CPU time. Values <= 0 (e.g. pprof -diff_base output) are skipped.
 */
#include "format/reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "format/pprof_proto.h"
#include "base/util.h"

/* --- wire format ------------------------------------------------------------ */

struct pbr {
	const uint8_t *p, *end;
};

static int pbr_varint(struct pbr *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (r->p >= r->end)
			return -EINVAL;
		b = *r->p++;
		if (shift == 63 && b > 1)
			return -EINVAL; /* more than 64 bits */
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

/* Reads a field header; *wire and *field out. */
static int pbr_tag(struct pbr *r, unsigned *field, unsigned *wire)
{
	uint64_t t;

	if (pbr_varint(r, &t))
		return -EINVAL;
	*wire = t & 7;
	if ((t >> 3) == 0 || (t >> 3) > 536870911)
		return -EINVAL;
	*field = (unsigned)(t >> 3);
	return 0;
}

/* A length-delimited payload as a sub-reader. */
static int pbr_len(struct pbr *r, struct pbr *sub)
{
	uint64_t n;

	if (pbr_varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return -EINVAL;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return 0;
}

static int pbr_skip(struct pbr *r, unsigned wire)
{
	struct pbr sub;
	uint64_t v;

	switch (wire) {
	case PB_VARINT:
		return pbr_varint(r, &v);
	case PB_I64:
		if (r->end - r->p < 8)
			return -EINVAL;
		r->p += 8;
		return 0;
	case PB_LEN:
		return pbr_len(r, &sub);
	case PB_I32:
		if (r->end - r->p < 4)
			return -EINVAL;
		r->p += 4;
		return 0;
	default:
		return -EINVAL; /* groups (3, 4) are not in profile.proto */
	}
}

/* A varint field's value, or (wire LEN) the next packed value via *packed. */
static int pbr_uint(struct pbr *r, unsigned wire, uint64_t *v)
{
	if (wire != PB_VARINT)
		return -EINVAL;
	return pbr_varint(r, v);
}

/* Calls fn for each value of a repeated varint field, packed or not. */
static int pbr_repeated(struct pbr *r, unsigned wire, int (*fn)(void *ctx, uint64_t v), void *ctx)
{
	struct pbr sub;
	uint64_t v;
	int err;

	if (wire == PB_VARINT) {
		if (pbr_varint(r, &v))
			return -EINVAL;
		return fn(ctx, v);
	}
	if (wire != PB_LEN || pbr_len(r, &sub))
		return -EINVAL;
	while (sub.p < sub.end) {
		if (pbr_varint(&sub, &v))
			return -EINVAL;
		err = fn(ctx, v);
		if (err)
			return err;
	}
	return 0;
}

/* --- decoded tables ---------------------------------------------------------- */

struct u64vec {
	uint64_t *v;
	size_t nr, cap;
};

static int u64vec_push(void *ctx, uint64_t x)
{
	struct u64vec *vec = ctx;

	if (array_grow((void **)&vec->v, &vec->cap, vec->nr + 1, sizeof(*vec->v)))
		return -ENOMEM;
	vec->v[vec->nr++] = x;
	return 0;
}

struct pmapping {
	uint64_t id, start, offset, filename, build_id;
};

struct plocation {
	uint64_t id, mapping_id, address;
	size_t line_off, nr_lines; /* function ids in ctx.lines */
};

struct pfunction {
	uint64_t id, name, system_name, filename, start_line;
};

struct pstring {
	const uint8_t *s;
	size_t len;
};

struct pctx {
	struct profile *p;
	struct errmsg *em;

	struct u64vec sample_types; /* (type, unit) pairs of string indexes */
	/* A heap profile's alloc_objects, alloc_space, inuse_objects, inuse_space
	 * values (SIZE_MAX: absent); heap: it has all four. */
	size_t heap_at[4];
	bool heap;
	struct u64vec samples;	/* offsets and lengths of Sample messages */
	struct u64vec lines;	/* function ids of all locations */
	struct u64vec line_nos; /* ... and their source lines */
	struct u64vec comments;
	struct pmapping *maps;
	size_t nr_maps, cap_maps;
	struct plocation *locs;
	size_t nr_locs, cap_locs;
	struct pfunction *funcs;
	size_t nr_funcs, cap_funcs;
	struct pstring *strs;
	size_t nr_strs, cap_strs;
	uint64_t time_nanos, duration_nanos, period, period_type[2];

	struct htab *map_idx, *loc_idx, *func_idx; /* id -> index + 1 */
	char **cstrs;				   /* NUL-terminated copies, lazily */
	const uint8_t *base;
};

static int fail(struct pctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct pctx *c, int err, const char *fmt, ...)
{
	char msg[sizeof(c->em->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return errmsg_set(c->em, err, "%s", msg);
}

static int value_type(struct pbr *m, uint64_t out[2])
{
	unsigned field, wire;

	out[0] = out[1] = 0;
	while (m->p < m->end) {
		if (pbr_tag(m, &field, &wire))
			return -EINVAL;
		if (field == PPROF_VT_TYPE || field == PPROF_VT_UNIT) {
			if (pbr_uint(m, wire, &out[field - 1]))
				return -EINVAL;
		} else if (pbr_skip(m, wire)) {
			return -EINVAL;
		}
	}
	return 0;
}

static int mapping(struct pctx *c, struct pbr *m)
{
	struct pmapping mp = { 0 };
	unsigned field, wire;

	while (m->p < m->end) {
		uint64_t *dst = NULL;

		if (pbr_tag(m, &field, &wire))
			return -EINVAL;
		switch (field) {
		case PPROF_MAPPING_ID:
			dst = &mp.id;
			break;
		case PPROF_MAPPING_MEMORY_START:
			dst = &mp.start;
			break;
		case PPROF_MAPPING_FILE_OFFSET:
			dst = &mp.offset;
			break;
		case PPROF_MAPPING_FILENAME:
			dst = &mp.filename;
			break;
		case PPROF_MAPPING_BUILD_ID:
			dst = &mp.build_id;
			break;
		}
		if (dst ? pbr_uint(m, wire, dst) : pbr_skip(m, wire))
			return -EINVAL;
	}
	if (array_grow((void **)&c->maps, &c->cap_maps, c->nr_maps + 1, sizeof(*c->maps)))
		return -ENOMEM;
	c->maps[c->nr_maps++] = mp;
	return 0;
}

static int location(struct pctx *c, struct pbr *m)
{
	struct plocation l = { .line_off = c->lines.nr };
	unsigned field, wire;
	struct pbr line;

	while (m->p < m->end) {
		if (pbr_tag(m, &field, &wire))
			return -EINVAL;
		switch (field) {
		case PPROF_LOCATION_ID:
			if (pbr_uint(m, wire, &l.id))
				return -EINVAL;
			break;
		case PPROF_LOCATION_MAPPING_ID:
			if (pbr_uint(m, wire, &l.mapping_id))
				return -EINVAL;
			break;
		case PPROF_LOCATION_ADDRESS:
			if (pbr_uint(m, wire, &l.address))
				return -EINVAL;
			break;
		case PPROF_LOCATION_LINE: {
			uint64_t fid = 0, lno = 0;
			unsigned f2, w2;

			if (wire != PB_LEN || pbr_len(m, &line))
				return -EINVAL;
			while (line.p < line.end) {
				uint64_t *dst;

				if (pbr_tag(&line, &f2, &w2))
					return -EINVAL;
				dst = f2 == PPROF_LINE_FUNCTION_ID ? &fid
				      : f2 == PPROF_LINE_LINE	   ? &lno
								   : NULL;
				if (dst ? pbr_uint(&line, w2, dst) : pbr_skip(&line, w2))
					return -EINVAL;
			}
			/* int64 on the wire: a negative or huge line is no line. */
			if (lno > UINT32_MAX)
				lno = 0;
			if (u64vec_push(&c->lines, fid) || u64vec_push(&c->line_nos, lno))
				return -ENOMEM;
			l.nr_lines++;
			break;
		}
		default:
			if (pbr_skip(m, wire))
				return -EINVAL;
		}
	}
	if (array_grow((void **)&c->locs, &c->cap_locs, c->nr_locs + 1, sizeof(*c->locs)))
		return -ENOMEM;
	c->locs[c->nr_locs++] = l;
	return 0;
}

static int function(struct pctx *c, struct pbr *m)
{
	struct pfunction fn = { 0 };
	unsigned field, wire;

	while (m->p < m->end) {
		uint64_t *dst = NULL;

		if (pbr_tag(m, &field, &wire))
			return -EINVAL;
		if (field == PPROF_FUNCTION_ID)
			dst = &fn.id;
		else if (field == PPROF_FUNCTION_NAME)
			dst = &fn.name;
		else if (field == PPROF_FUNCTION_SYSTEM_NAME)
			dst = &fn.system_name;
		else if (field == PPROF_FUNCTION_FILENAME)
			dst = &fn.filename;
		else if (field == PPROF_FUNCTION_START_LINE)
			dst = &fn.start_line;
		if (dst ? pbr_uint(m, wire, dst) : pbr_skip(m, wire))
			return -EINVAL;
	}
	if (array_grow((void **)&c->funcs, &c->cap_funcs, c->nr_funcs + 1, sizeof(*c->funcs)))
		return -ENOMEM;
	c->funcs[c->nr_funcs++] = fn;
	return 0;
}

/* Pass 1: the top-level Profile fields. */
static int scan(struct pctx *c, const uint8_t *buf, size_t len)
{
	struct pbr r = { buf, buf + len }, m;
	unsigned field, wire;
	uint64_t vt[2];
	int err;

	while (r.p < r.end) {
		size_t at = (size_t)(r.p - buf);

		if (pbr_tag(&r, &field, &wire))
			return fail(c, -EINVAL, "bad field header at byte %zu", at);
		switch (field) {
		case PPROF_SAMPLE_TYPE:
		case PPROF_SAMPLE:
		case PPROF_MAPPING:
		case PPROF_LOCATION:
		case PPROF_FUNCTION:
		case PPROF_STRING_TABLE:
		case PPROF_PERIOD_TYPE:
			if (wire != PB_LEN || pbr_len(&r, &m))
				return fail(c, -EINVAL, "field %u at byte %zu: bad length", field,
					    at);
			break;
		default:
			break;
		}
		err = 0;
		switch (field) {
		case PPROF_SAMPLE_TYPE:
			err = value_type(&m, vt) ?: u64vec_push(&c->sample_types, vt[0]) ?:
				u64vec_push(&c->sample_types, vt[1]);
			break;
		case PPROF_SAMPLE:
			err = u64vec_push(&c->samples, (uint64_t)(m.p - buf))
				      ?: u64vec_push(&c->samples, (uint64_t)(m.end - m.p));
			break;
		case PPROF_MAPPING:
			err = mapping(c, &m);
			break;
		case PPROF_LOCATION:
			err = location(c, &m);
			break;
		case PPROF_FUNCTION:
			err = function(c, &m);
			break;
		case PPROF_STRING_TABLE:
			if (array_grow((void **)&c->strs, &c->cap_strs, c->nr_strs + 1,
				       sizeof(*c->strs)))
				return -ENOMEM;
			c->strs[c->nr_strs++] = (struct pstring){ m.p, (size_t)(m.end - m.p) };
			break;
		case PPROF_TIME_NANOS:
			err = pbr_uint(&r, wire, &c->time_nanos);
			break;
		case PPROF_DURATION_NANOS:
			err = pbr_uint(&r, wire, &c->duration_nanos);
			break;
		case PPROF_PERIOD_TYPE:
			err = value_type(&m, c->period_type);
			break;
		case PPROF_PERIOD:
			err = pbr_uint(&r, wire, &c->period);
			break;
		case PPROF_COMMENT:
			err = pbr_repeated(&r, wire, u64vec_push, &c->comments);
			break;
		default:
			err = pbr_skip(&r, wire);
		}
		if (err == -ENOMEM)
			return err;
		if (err)
			return fail(c, -EINVAL, "malformed field %u at byte %zu", field, at);
	}
	return 0;
}

/* The string at index i, NUL-terminated (NUL bytes inside become '?'). */
static const char *str(struct pctx *c, uint64_t i)
{
	if (i >= c->nr_strs)
		return NULL;
	if (!c->cstrs[i]) {
		const struct pstring *s = &c->strs[i];
		char *cs = malloc(s->len + 1);

		if (!cs)
			return NULL;
		for (size_t j = 0; j < s->len; j++)
			cs[j] = s->s[j] ? (char)s->s[j] : '?';
		cs[s->len] = '\0';
		c->cstrs[i] = cs;
	}
	return c->cstrs[i];
}

static bool str_is(struct pctx *c, uint64_t i, const char *want)
{
	const char *s = str(c, i);

	return s && !strcmp(s, want);
}

static int index_ids(struct pctx *c, struct htab **idx, const void *arr, size_t nr, size_t elem,
		     const char *what)
{
	*idx = htab__new();
	if (!*idx)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		uint64_t id = *(const uint64_t *)((const char *)arr + i * elem); /* id is first */
		struct htab_entry *e;
		bool created;

		if (!id)
			return fail(c, -EINVAL, "%s with id 0", what);
		e = htab__upsert(*idx, &id, sizeof(id), &created);
		if (!e)
			return -ENOMEM;
		if (!created)
			return fail(c, -EINVAL, "duplicate %s id %" PRIu64, what, id);
		e->value = (void *)(uintptr_t)(i + 1);
	}
	return 0;
}

static size_t lookup(struct htab *idx, uint64_t id)
{
	struct htab_entry *e = htab__find(idx, &id, sizeof(id));

	return e ? (size_t)(uintptr_t)e->value : 0; /* index + 1 */
}

static enum frame_kind kind_of_mapping(const char *file)
{
	const char *base;

	if (!file)
		return FRAME_USER;
	if (!strncmp(file, "[kernel", 7) || !strcmp(file, "[vmlinux]"))
		return FRAME_KERNEL;
	if (!strcmp(file, PPROF_JIT_MAPPING))
		return FRAME_JIT;
	if (!strcmp(file, PPROF_PYTHON_MAPPING))
		return FRAME_PYTHON;
	if (!strcmp(file, PPROF_LISP_MAPPING))
		return FRAME_LISP;
	if (!strcmp(file, PPROF_INTERP_MAPPING))
		return FRAME_JAVA_INTERP;
	base = path_basename(file);
	if (!strncmp(base, "perf-", 5) && strlen(base) > 9 &&
	    !strcmp(base + strlen(base) - 4, ".map"))
		return FRAME_JIT;
	return FRAME_USER;
}

struct sample_acc {
	struct u64vec locs, values;
	uint32_t pid, tid;
	const char *comm, *cgroup, *container;
};

/*
 * The leaf address a sample keeps (psample.addr): the address of its first
 * location when that is already file-relative - a mapping starting at 0, as
 * bpfprof writes them (Location.address = ELF virtual address). A runtime
 * address of another producer would need the binary's load segments to
 * become one: 0 (not kept).
 */
static uint64_t leaf_address(struct pctx *c, uint64_t loc_id)
{
	size_t li = lookup(c->loc_idx, loc_id), mi;
	const struct plocation *l;

	if (!li)
		return 0;
	l = &c->locs[li - 1];
	mi = l->mapping_id ? lookup(c->map_idx, l->mapping_id) : 0;
	if (mi && (c->maps[mi - 1].start || c->maps[mi - 1].offset))
		return 0;
	return l->address;
}

/* Frames of one location, leaf first, appended to fr. */
static int location_frames(struct pctx *c, uint64_t loc_id, struct u64vec *fr)
{
	size_t li = lookup(c->loc_idx, loc_id), mi;
	const struct plocation *l;
	const char *file = NULL, *module;
	enum frame_kind kind;
	int64_t f;

	if (!li)
		return fail(c, -EINVAL, "sample refers to missing location %" PRIu64, loc_id);
	l = &c->locs[li - 1];
	mi = l->mapping_id ? lookup(c->map_idx, l->mapping_id) : 0;
	if (l->mapping_id && !mi)
		return fail(c, -EINVAL, "location %" PRIu64 " refers to missing mapping %" PRIu64,
			    l->id, l->mapping_id);
	if (mi) {
		file = str(c, c->maps[mi - 1].filename);
		if (!file)
			return fail(c, -EINVAL, "mapping %" PRIu64 ": bad string index",
				    c->maps[mi - 1].id);
		if (!file[0])
			file = NULL;
	}
	kind = kind_of_mapping(file);
	module = kind == FRAME_KERNEL || (file && file[0] == '[') ? NULL : file;
	if (!l->nr_lines) {
		char name[512];

		if (file && kind != FRAME_KERNEL)
			snprintf(name, sizeof(name), "%s+0x%" PRIx64, path_basename(file),
				 l->address - c->maps[mi - 1].start + c->maps[mi - 1].offset);
		else
			snprintf(name, sizeof(name), "[unknown]");
		f = profile__frame(c->p, kind, name, module);
		return f < 0 ? (int)f : u64vec_push(fr, (uint64_t)f);
	}
	for (size_t j = 0; j < l->nr_lines; j++) {
		uint64_t fid = c->lines.v[l->line_off + j];
		size_t fi = fid ? lookup(c->func_idx, fid) : 0;
		struct pframe pf = { .module = module, .kind = kind };

		if (fid && !fi)
			return fail(c, -EINVAL,
				    "location %" PRIu64 " refers to missing function %" PRIu64,
				    l->id, fid);
		if (fi) {
			const struct pfunction *fn = &c->funcs[fi - 1];

			pf.name = str(c, fn->name);
			if (pf.name && !pf.name[0])
				pf.name = str(c, fn->system_name);
			pf.file = fn->filename ? str(c, fn->filename) : NULL;
			if (!pf.name || (fn->filename && !pf.file))
				return fail(c, -EINVAL, "function %" PRIu64 ": bad string index",
					    fid);
			if (pf.file && !pf.file[0])
				pf.file = NULL;
			pf.start_line = fn->start_line <= UINT32_MAX ? (uint32_t)fn->start_line : 0;
		}
		if (!pf.name || !pf.name[0])
			pf.name = "[unknown]";
		pf.line = (uint32_t)c->line_nos.v[l->line_off + j];
		/* Lines before the last are code inlined into the last one. */
		if (j + 1 < l->nr_lines && kind == FRAME_USER)
			pf.kind = FRAME_INLINE;
		f = profile__frame_src(c->p, &pf);
		if (f < 0)
			return (int)f;
		if (u64vec_push(fr, (uint64_t)f))
			return -ENOMEM;
	}
	return 0;
}

static int label(struct pctx *c, struct pbr *m, struct sample_acc *s)
{
	uint64_t key = 0, sv = 0, num = 0;
	unsigned field, wire;
	const char *k, *v;

	while (m->p < m->end) {
		uint64_t *dst = NULL;

		if (pbr_tag(m, &field, &wire))
			return -EINVAL;
		if (field == PPROF_LABEL_KEY)
			dst = &key;
		else if (field == PPROF_LABEL_STR)
			dst = &sv;
		else if (field == PPROF_LABEL_NUM)
			dst = &num;
		if (dst ? pbr_uint(m, wire, dst) : pbr_skip(m, wire))
			return -EINVAL;
	}
	k = str(c, key);
	v = str(c, sv);
	if (!k || !v)
		return fail(c, -EINVAL, "label: bad string index");
	if (!strcmp(k, "pid") && num <= UINT32_MAX)
		s->pid = (uint32_t)num;
	else if ((!strcmp(k, "thread") || !strcmp(k, "tid")) && num <= UINT32_MAX)
		s->tid = (uint32_t)num;
	else if (!strcmp(k, "comm") && v[0])
		s->comm = v;
	else if (!strcmp(k, "cgroup") && v[0])
		s->cgroup = v;
	else if ((!strcmp(k, "container_id") || !strcmp(k, "container")) && v[0])
		s->container = v;
	return 0;
}

/* Pass 2: one Sample message into the profile. */
static int sample(struct pctx *c, struct pbr *m, size_t value_index, uint64_t divisor,
		  size_t off_index, const char *default_comm, struct u64vec *fr, uint32_t **ids,
		  size_t *ids_cap)
{
	struct sample_acc s = { 0 };
	struct psample id = { 0 };
	struct palloc al = { 0 };
	bool has_alloc = false;
	unsigned field, wire;
	struct pbr sub;
	int64_t value = 0, off = 0;
	uint64_t count = 0;
	int err = 0;

	while (m->p < m->end && !err) {
		if (pbr_tag(m, &field, &wire)) {
			err = -EINVAL;
			break;
		}
		if (field == PPROF_SAMPLE_LOCATION_ID)
			err = pbr_repeated(m, wire, u64vec_push, &s.locs);
		else if (field == PPROF_SAMPLE_VALUE)
			err = pbr_repeated(m, wire, u64vec_push, &s.values);
		else if (field == PPROF_SAMPLE_LABEL)
			err = wire != PB_LEN || pbr_len(m, &sub) ? -EINVAL : label(c, &sub, &s);
		else
			err = pbr_skip(m, wire);
	}
	if (err)
		goto out;
	if (s.values.nr != c->sample_types.nr / 2) {
		err = fail(c, -EINVAL, "a sample has %zu values for %zu sample types", s.values.nr,
			   c->sample_types.nr / 2);
		goto out;
	}
	if (value_index != SIZE_MAX)
		value = (int64_t)s.values.v[value_index];
	if (off_index != SIZE_MAX)
		off = (int64_t)s.values.v[off_index];
	if (c->heap) {
		uint64_t *v[4] = { &al.alloc_objects, &al.alloc_bytes, &al.inuse_objects,
				   &al.inuse_bytes };

		for (int k = 0; k < 4; k++) {
			int64_t x = (int64_t)s.values.v[c->heap_at[k]];

			*v[k] = x > 0 ? (uint64_t)x : 0;
			has_alloc |= x > 0;
		}
	}
	if (value <= 0 && off <= 0 && !has_alloc)
		goto out; /* nothing to count (or a pprof diff profile's negative) */
	if (value > 0) {
		count = (uint64_t)value / divisor +
			((uint64_t)value % divisor >= (divisor + 1) / 2);
		if (!count)
			count = 1;
	}
	if (profile__total(c->p) + count < profile__total(c->p) ||
	    (off > 0 &&
	     profile__total_offcpu(c->p) + (uint64_t)off < profile__total_offcpu(c->p))) {
		err = fail(c, -ERANGE, "sample counts overflow");
		goto out;
	}
	fr->nr = 0;
	for (size_t i = 0; i < s.locs.nr && !err; i++) {
		err = location_frames(c, s.locs.v[i], fr);
		if (!err && fr->nr > INPUT_MAX_DEPTH)
			err = fail(c, -EFBIG, "a sample has more than %d frames", INPUT_MAX_DEPTH);
	}
	if (err)
		goto out;
	if (array_grow((void **)ids, ids_cap, fr->nr, sizeof(**ids))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < fr->nr; i++) /* leaf first -> root first */
		(*ids)[i] = (uint32_t)fr->v[fr->nr - 1 - i];
	id.pid = s.pid;
	id.tid = s.tid;
	id.comm = s.comm ? s.comm : default_comm;
	id.cgroup = s.cgroup;
	id.container = s.container;
	id.addr = s.locs.nr ? leaf_address(c, s.locs.v[0]) : 0;
	if (count)
		err = profile__add(c->p, &id, fr->nr ? *ids : &(uint32_t){ 0 }, (uint32_t)fr->nr,
				   count);
	if (!err && off > 0)
		err = profile__add_offcpu(c->p, &id, fr->nr ? *ids : &(uint32_t){ 0 },
					  (uint32_t)fr->nr, (uint64_t)off);
	if (!err && has_alloc)
		err = profile__add_alloc(c->p, &id, fr->nr ? *ids : &(uint32_t){ 0 },
					 (uint32_t)fr->nr, &al);
out:
	free(s.locs.v);
	free(s.values.v);
	return err == -EINVAL && !errmsg_said(c->em) ? fail(c, err, "malformed sample") : err;
}

static void read_meta(struct pctx *c)
{
	struct profile_meta *m = profile__meta(c->p);

	m->start_ns = c->time_nanos;
	m->duration_ns = c->duration_nanos;
	if (c->heap)
		m->alloc_period = c->period > 0 ? (uint64_t)c->period : 1;
	if (c->period && str_is(c, c->period_type[0], "cpu") &&
	    str_is(c, c->period_type[1], "nanoseconds")) {
		uint64_t hz = (NS_PER_SEC + c->period / 2) / c->period;

		m->freq_hz = hz <= UINT32_MAX ? (uint32_t)hz : 0;
	}
	for (size_t i = 0; i < c->comments.nr; i++) {
		const char *s = str(c, c->comments.v[i]);
		const size_t pl = strlen(PPROF_COMMENT_PREFIX);

		if (!s || strncmp(s, PPROF_COMMENT_PREFIX, pl))
			continue;
		s += pl;
		if (!strncmp(s, "host=", 5))
			snprintf(m->hostname, sizeof(m->hostname), "%s", s + 5);
		else if (!strncmp(s, "lost=", 5))
			parse_u64(s + 5, 10, &m->lost);
		else if (!strncmp(s, "offcpu_min_ns=", 14))
			parse_u64(s + 14, 10, &m->offcpu_min_ns);
		else if (!strncmp(s, "offcpu_lost=", 12))
			parse_u64(s + 12, 10, &m->offcpu_lost);
	}
}

/* The off_cpu/nanoseconds value, or SIZE_MAX. */
static size_t pick_offcpu(struct pctx *c)
{
	for (size_t i = 0; i < c->sample_types.nr / 2; i++)
		if (str_is(c, c->sample_types.v[2 * i], "off_cpu") &&
		    str_is(c, c->sample_types.v[2 * i + 1], "nanoseconds"))
			return i;
	return SIZE_MAX;
}

/* Which value to count (SIZE_MAX: none, the profile has only off-CPU time),
 * and what to divide it by. */
static int pick_value(struct pctx *c, size_t *index, uint64_t *divisor)
{
	size_t n = c->sample_types.nr / 2, off = pick_offcpu(c);

	static const char *const heap[4][2] = { { "alloc_objects", "count" },
						{ "alloc_space", "bytes" },
						{ "inuse_objects", "count" },
						{ "inuse_space", "bytes" } };

	if (!n)
		return fail(c, -EINVAL, "no sample types");
	*index = off == 0 ? (n > 1 ? 1 : SIZE_MAX) : 0;
	*divisor = 1;
	/* A heap profile (Go's, bpfprof --alloc's): its four values, no count. */
	c->heap = true;
	for (int k = 0; k < 4; k++) {
		c->heap_at[k] = SIZE_MAX;
		for (size_t i = 0; i < n; i++)
			if (str_is(c, c->sample_types.v[2 * i], heap[k][0]) &&
			    str_is(c, c->sample_types.v[2 * i + 1], heap[k][1]))
				c->heap_at[k] = i;
		c->heap &= c->heap_at[k] != SIZE_MAX;
	}
	if (c->heap) {
		*index = SIZE_MAX;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (str_is(c, c->sample_types.v[2 * i], "samples")) {
			*index = i;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		if (str_is(c, c->sample_types.v[2 * i], "cpu") &&
		    str_is(c, c->sample_types.v[2 * i + 1], "nanoseconds") && c->period) {
			*index = i;
			*divisor = c->period;
			return 0;
		}
	return 0;
}

static int decode(struct pctx *c, const uint8_t *buf, size_t len)
{
	const char *default_comm = "[unknown]";
	struct u64vec fr = { 0 };
	uint32_t *ids = NULL;
	size_t ids_cap = 0, vi = 0, oi;
	uint64_t div = 1;
	int err;

	err = scan(c, buf, len);
	if (err)
		return err;
	if (!c->nr_strs || c->strs[0].len)
		return fail(c, -EINVAL, "not a pprof profile (string_table[0] must be \"\")");
	c->cstrs = calloc(c->nr_strs, sizeof(*c->cstrs));
	if (!c->cstrs)
		return -ENOMEM;
	for (size_t i = 0; i < c->sample_types.nr; i++)
		if (!str(c, c->sample_types.v[i]))
			return fail(c, -EINVAL, "sample type: bad string index");
	err = index_ids(c, &c->map_idx, c->maps, c->nr_maps, sizeof(*c->maps), "mapping") ?:
	      index_ids(c, &c->loc_idx, c->locs, c->nr_locs, sizeof(*c->locs), "location") ?:
	      index_ids(c, &c->func_idx, c->funcs, c->nr_funcs, sizeof(*c->funcs), "function") ?:
	      pick_value(c, &vi, &div);
	if (err)
		return err;
	oi = pick_offcpu(c);
	profile__meta(c->p)->offcpu = oi != SIZE_MAX;
	/* Without comm labels: the main binary (first file mapping) names the process. */
	for (size_t i = 0; i < c->nr_maps; i++) {
		const char *f = str(c, c->maps[i].filename);

		if (f && f[0] && f[0] != '[') {
			default_comm = path_basename(f);
			break;
		}
	}
	for (size_t i = 0; i < c->nr_maps && !err; i++) {
		const char *f = str(c, c->maps[i].filename), *b = str(c, c->maps[i].build_id);

		if (!f || !b)
			return fail(c, -EINVAL, "mapping %" PRIu64 ": bad string index",
				    c->maps[i].id);
		if (f[0] && b[0])
			err = profile__set_build_id(c->p, f, b);
	}
	for (size_t i = 0; i + 1 < c->samples.nr && !err; i += 2) {
		struct pbr m = { buf + c->samples.v[i],
				 buf + c->samples.v[i] + c->samples.v[i + 1] };

		err = sample(c, &m, vi, div, oi, default_comm, &fr, &ids, &ids_cap);
	}
	free(fr.v);
	free(ids);
	if (!err)
		read_meta(c);
	return err;
}

static void pctx_free(struct pctx *c)
{
	free(c->sample_types.v);
	free(c->samples.v);
	free(c->lines.v);
	free(c->line_nos.v);
	free(c->comments.v);
	free(c->maps);
	free(c->locs);
	free(c->funcs);
	if (c->cstrs)
		for (size_t i = 0; i < c->nr_strs; i++)
			free(c->cstrs[i]);
	free(c->cstrs);
	free(c->strs);
	htab__free(c->map_idx);
	htab__free(c->loc_idx);
	htab__free(c->func_idx);
}

static int read_pprof(const uint8_t *buf, size_t len, struct profile *p, struct errmsg *em)
{
	struct pctx c = { .p = p, .em = em };
	uint8_t *msg = NULL;
	size_t msg_len = len;
	int rc;

	errmsg_clear(em);
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		rc = reader__gunzip(buf, len, INPUT_MAX_INFLATED, &msg, &msg_len);
		if (rc == -EFBIG)
			return fail(&c, rc, "more than 1 GiB once decompressed");
		if (rc == -EINVAL)
			return fail(&c, rc, "corrupt or truncated gzip data");
		if (rc)
			return rc;
		buf = msg;
	}
	rc = decode(&c, buf, msg_len);
	pctx_free(&c);
	free(msg);
	if (rc == -ENOMEM)
		errmsg_set(em, rc, "out of memory");
	return rc;
}

const struct reader reader_pprof = {
	.name = "pprof",
	.read = read_pprof,
};
