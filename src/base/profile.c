// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * profile.c - interned frames, stacks and samples; see profile.h.
 *
 * Interning uses htab with byte keys: strings by their bytes, frames by
 * (kind, name, module, file pointers, line) - interned pointers are stable, so the
 * pointer values are a valid identity - stacks by their frame ids, samples by
 * (identity pointers, pid, tid, stack id, leaf address).
 */
#include "base/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

struct profile {
	struct profile_meta meta;
	struct htab *strings; /* bytes -> entry whose key is the string */
	struct htab *frame_idx;
	struct htab *stack_idx;
	struct htab *sample_idx;
	struct htab *build_ids; /* module bytes -> interned hex */

	struct pframe *frames;
	size_t nr_frames, cap_frames;

	uint32_t *stack_pool; /* frames of all stacks, back to back */
	size_t pool_len, pool_cap;
	struct {
		size_t off;
		uint32_t n;
	} * stacks;
	size_t nr_stacks, cap_stacks;

	struct psample *samples;
	size_t nr_samples, cap_samples;
	uint64_t total, total_offcpu;
	uint64_t layout_gen; /* bumped when samples move (profile__sort) */
	uint64_t serial;     /* no other profile of this process had it */
};

struct frame_key {
	uintptr_t name, module, file;
	uint32_t kind;
	uint32_t line;
};

struct sample_key {
	uintptr_t comm, cgroup, container;
	uint32_t pid, tid, stack, pad;
	uint64_t addr;
};

struct profile *profile__new(void)
{
	static uint64_t serials;
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	p->strings = htab__new();
	p->frame_idx = htab__new();
	p->stack_idx = htab__new();
	p->sample_idx = htab__new();
	p->build_ids = htab__new();
	if (!p->strings || !p->frame_idx || !p->stack_idx || !p->sample_idx || !p->build_ids) {
		profile__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	htab__free(p->strings);
	htab__free(p->frame_idx);
	htab__free(p->stack_idx);
	htab__free(p->sample_idx);
	htab__free(p->build_ids);
	free(p->frames);
	free(p->stack_pool);
	free(p->stacks);
	free(p->samples);
	free(p);
}

struct profile_meta *profile__meta(struct profile *p)
{
	return &p->meta;
}

const struct profile_meta *profile__meta_c(const struct profile *p)
{
	return &p->meta;
}

/* Interned copy of s (NULL for NULL); NULL with errno ENOMEM on failure. */
static const char *profile__intern(struct profile *p, const char *s)
{
	struct htab_entry *e;

	if (!s)
		return NULL;
	e = htab__upsert(p->strings, s, strlen(s), NULL);
	if (!e)
		return NULL;
	return (const char *)e->key; /* NUL-terminated copy owned by the table */
}

int64_t profile__frame(struct profile *p, enum frame_kind kind, const char *name,
		       const char *module)
{
	struct pframe f = { .name = name, .module = module, .kind = kind };

	return profile__frame_src(p, &f);
}

int64_t profile__frame_src(struct profile *p, const struct pframe *f)
{
	struct frame_key k = { 0 };
	struct htab_entry *e;
	const char *iname, *imod = NULL, *ifile = NULL;
	bool created;

	iname = profile__intern(p, f->name ? f->name : "[unknown]");
	if (!iname)
		return -ENOMEM;
	if (f->module && !(imod = profile__intern(p, f->module)))
		return -ENOMEM;
	if (f->file && !(ifile = profile__intern(p, f->file)))
		return -ENOMEM;
	k.name = (uintptr_t)iname;
	k.module = (uintptr_t)imod;
	k.file = (uintptr_t)ifile;
	k.kind = f->kind;
	k.line = f->line;
	e = htab__upsert(p->frame_idx, &k, sizeof(k), &created);
	if (!e)
		return -ENOMEM;
	if (!created)
		return (int64_t)(uintptr_t)e->value;
	if (array_grow((void **)&p->frames, &p->cap_frames, p->nr_frames + 1, sizeof(*p->frames))) {
		htab__remove(p->frame_idx, &k, sizeof(k));
		return -ENOMEM;
	}
	p->frames[p->nr_frames] = (struct pframe){ .name = iname,
						   .module = imod,
						   .kind = f->kind,
						   .file = ifile,
						   .line = f->line,
						   .start_line = f->start_line };
	e->value = (void *)(uintptr_t)p->nr_frames;
	return p->nr_frames++;
}

/* Stack id for frames[0..n) (root first); -ENOMEM on failure. */
static int64_t profile__stack(struct profile *p, const uint32_t *frames, uint32_t n)
{
	struct htab_entry *e;
	bool created;

	e = htab__upsert(p->stack_idx, frames, (size_t)n * sizeof(*frames), &created);
	if (!e)
		return -ENOMEM;
	if (!created)
		return (int64_t)(uintptr_t)e->value;
	if (array_grow((void **)&p->stacks, &p->cap_stacks, p->nr_stacks + 1, sizeof(*p->stacks)) ||
	    array_grow((void **)&p->stack_pool, &p->pool_cap, p->pool_len + n,
		       sizeof(*p->stack_pool))) {
		htab__remove(p->stack_idx, frames, (size_t)n * sizeof(*frames));
		return -ENOMEM;
	}
	if (n)
		memcpy(p->stack_pool + p->pool_len, frames, (size_t)n * sizeof(*frames));
	p->stacks[p->nr_stacks].off = p->pool_len;
	p->stacks[p->nr_stacks].n = n;
	p->pool_len += n;
	e->value = (void *)(uintptr_t)p->nr_stacks;
	return p->nr_stacks++;
}

int profile__add(struct profile *p, const struct psample *id, const uint32_t *frames, uint32_t n,
		 uint64_t count)
{
	int64_t i = profile__add_idx(p, id, frames, n, count);

	return i < 0 ? (int)i : 0;
}

/* Allocation values add up to INT64_MAX at most (pprof's values are int64). */
static uint64_t alloc_add(uint64_t a, uint64_t b)
{
	return a > (uint64_t)INT64_MAX - MIN(b, (uint64_t)INT64_MAX) ? (uint64_t)INT64_MAX : a + b;
}

static int64_t add_values(struct profile *p, const struct psample *id, const uint32_t *frames,
			  uint32_t n, uint64_t count, uint64_t offcpu_ns, const struct palloc *al)
{
	struct sample_key k = { 0 };
	struct htab_entry *e;
	int64_t stack;
	bool created;

	stack = profile__stack(p, frames, n);
	if (stack < 0)
		return (int)stack;
	k.comm = (uintptr_t)profile__intern(p, id->comm ? id->comm : "");
	k.cgroup = (uintptr_t)profile__intern(p, id->cgroup);
	k.container = (uintptr_t)profile__intern(p, id->container);
	if (!k.comm || (id->cgroup && !k.cgroup) || (id->container && !k.container))
		return -ENOMEM;
	k.pid = id->pid;
	k.tid = id->tid;
	k.stack = (uint32_t)stack;
	k.addr = id->addr;
	e = htab__upsert(p->sample_idx, &k, sizeof(k), &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		if (array_grow((void **)&p->samples, &p->cap_samples, p->nr_samples + 1,
			       sizeof(*p->samples))) {
			htab__remove(p->sample_idx, &k, sizeof(k));
			return -ENOMEM;
		}
		p->samples[p->nr_samples] = (struct psample){
			.pid = id->pid,
			.tid = id->tid,
			.comm = (const char *)k.comm,
			.cgroup = (const char *)k.cgroup,
			.container = (const char *)k.container,
			.stack = (uint32_t)stack,
			.count = 0,
			.addr = id->addr,
		};
		e->value = (void *)(uintptr_t)p->nr_samples++;
	}
	p->samples[(uintptr_t)e->value].count += count;
	p->samples[(uintptr_t)e->value].offcpu_ns += offcpu_ns;
	if (al) {
		struct palloc *d = &p->samples[(uintptr_t)e->value].alloc;

		d->alloc_objects = alloc_add(d->alloc_objects, al->alloc_objects);
		d->alloc_bytes = alloc_add(d->alloc_bytes, al->alloc_bytes);
		d->inuse_objects = alloc_add(d->inuse_objects, al->inuse_objects);
		d->inuse_bytes = alloc_add(d->inuse_bytes, al->inuse_bytes);
	}
	p->total += count;
	p->total_offcpu += offcpu_ns;
	return (int64_t)(uintptr_t)e->value;
}

int64_t profile__add_idx(struct profile *p, const struct psample *id, const uint32_t *frames,
			 uint32_t n, uint64_t count)
{
	return add_values(p, id, frames, n, count, 0, NULL);
}

int64_t profile__add_offcpu_idx(struct profile *p, const struct psample *id, const uint32_t *frames,
				uint32_t n, uint64_t ns)
{
	return add_values(p, id, frames, n, 0, ns, NULL);
}

int profile__add_offcpu(struct profile *p, const struct psample *id, const uint32_t *frames,
			uint32_t n, uint64_t ns)
{
	int64_t i = add_values(p, id, frames, n, 0, ns, NULL);

	return i < 0 ? (int)i : 0;
}

int profile__add_alloc(struct profile *p, const struct psample *id, const uint32_t *frames,
		       uint32_t n, const struct palloc *v)
{
	int64_t i = add_values(p, id, frames, n, 0, 0, v);

	return i < 0 ? (int)i : 0;
}

int profile__add_count(struct profile *p, size_t i, uint64_t count)
{
	if (i >= p->nr_samples)
		return -EINVAL;
	p->samples[i].count += count;
	p->total += count;
	return 0;
}

int profile__add_offcpu_count(struct profile *p, size_t i, uint64_t ns)
{
	if (i >= p->nr_samples)
		return -EINVAL;
	p->samples[i].offcpu_ns += ns;
	p->total_offcpu += ns;
	return 0;
}

int profile__add_alloc_at(struct profile *p, size_t i, const struct palloc *v)
{
	struct palloc *d;

	if (i >= p->nr_samples)
		return -EINVAL;
	d = &p->samples[i].alloc;
	d->alloc_objects = alloc_add(d->alloc_objects, v->alloc_objects);
	d->alloc_bytes = alloc_add(d->alloc_bytes, v->alloc_bytes);
	d->inuse_objects = alloc_add(d->inuse_objects, v->inuse_objects);
	d->inuse_bytes = alloc_add(d->inuse_bytes, v->inuse_bytes);
	return 0;
}

/* s as p interned it (p's copy; NULL s: 0), or 0 with *absent set: p has no s. */
static uintptr_t interned(const struct profile *p, const char *s, bool *absent)
{
	const struct htab_entry *e;

	if (!s)
		return 0;
	e = htab__find(p->strings, s, strlen(s));
	if (!e)
		*absent = true;
	return e ? (uintptr_t)e->key : 0;
}

/* src's frame f as p has it: its id, or -1 (p has none). */
static int64_t frame_in(const struct profile *p, const struct pframe *f)
{
	bool absent = false;
	struct frame_key k = {
		.name = interned(p, f->name, &absent),
		.module = interned(p, f->module, &absent),
		.file = interned(p, f->file, &absent),
		.kind = f->kind,
		.line = f->line,
	};
	const struct htab_entry *e = absent ? NULL : htab__find(p->frame_idx, &k, sizeof(k));

	return e ? (int64_t)(uintptr_t)e->value : -1;
}

int profile__find_all(const struct profile *p, const struct profile *src, int64_t *at)
{
	int64_t *frame_map = malloc((src->nr_frames ? src->nr_frames : 1) * sizeof(*frame_map));
	uint32_t *ids = NULL;
	size_t cap = 0;

	if (!frame_map)
		return -ENOMEM;
	for (size_t i = 0; i < src->nr_frames; i++)
		frame_map[i] = -2; /* not looked up yet */
	for (size_t i = 0; i < src->nr_samples; i++) {
		const struct psample *s = &src->samples[i];
		const struct htab_entry *e = NULL;
		struct sample_key k = { 0 };
		bool absent = false;
		const uint32_t *fr;
		uint32_t n;

		at[i] = -1;
		fr = profile__stack_get(src, s->stack, &n);
		if (array_grow((void **)&ids, &cap, n + 1, sizeof(*ids))) {
			free(frame_map);
			return -ENOMEM;
		}
		for (uint32_t j = 0; j < n && !absent; j++) {
			if (frame_map[fr[j]] == -2)
				frame_map[fr[j]] = frame_in(p, &src->frames[fr[j]]);
			absent = frame_map[fr[j]] < 0;
			ids[j] = (uint32_t)frame_map[fr[j]];
		}
		e = absent ? NULL : htab__find(p->stack_idx, ids, (size_t)n * sizeof(*ids));
		if (!e)
			continue;
		k.comm = interned(p, s->comm ? s->comm : "", &absent);
		k.cgroup = interned(p, s->cgroup, &absent);
		k.container = interned(p, s->container, &absent);
		k.pid = s->pid;
		k.tid = s->tid;
		k.stack = (uint32_t)(uintptr_t)e->value;
		k.addr = s->addr;
		e = absent ? NULL : htab__find(p->sample_idx, &k, sizeof(k));
		if (e)
			at[i] = (int64_t)(uintptr_t)e->value;
	}
	free(ids);
	free(frame_map);
	return 0;
}

uint64_t profile__layout_gen(const struct profile *p)
{
	return p->layout_gen;
}

uint64_t profile__serial(const struct profile *p)
{
	return p ? p->serial : 0;
}

int profile__merge(struct profile *dst, const struct profile *src)
{
	return profile__merge_if(dst, src, NULL, NULL);
}

/*
 * The samples of src that keep() (or keep_at[i]) accepts, into dst: with
 * their values, or (values false) as identities with count 0. map, if
 * given, gets each sample's index in dst (-1: not copied). Each distinct
 * frame is interned in dst once, however many stacks share it.
 */
static int copy_samples(struct profile *dst, const struct profile *src,
			bool (*keep)(const struct psample *s, void *ctx), void *ctx,
			const bool *keep_at, bool values, int64_t *map)
{
	int64_t *frame_map = malloc((src->nr_frames ? src->nr_frames : 1) * sizeof(*frame_map));
	uint32_t *ids = NULL;
	size_t cap = 0;
	int err = 0;

	if (!frame_map)
		return -ENOMEM;
	for (size_t i = 0; i < src->nr_frames; i++)
		frame_map[i] = -1;
	for (size_t i = 0; map && i < src->nr_samples; i++)
		map[i] = -1;
	for (size_t i = 0; i < src->nr_samples && !err; i++) {
		const struct psample *s = &src->samples[i];
		const uint32_t *fr;
		uint32_t n;
		int64_t at;

		if ((keep_at && !keep_at[i]) || (keep && !keep(s, ctx)))
			continue;
		fr = profile__stack_get(src, s->stack, &n);
		if (array_grow((void **)&ids, &cap, n + 1, sizeof(*ids))) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t j = 0; j < n && !err; j++) {
			if (frame_map[fr[j]] < 0) {
				frame_map[fr[j]] = profile__frame_src(dst, &src->frames[fr[j]]);
				if (frame_map[fr[j]] < 0)
					err = (int)frame_map[fr[j]];
			}
			ids[j] = (uint32_t)frame_map[fr[j]];
		}
		if (err)
			break;
		at = add_values(dst, s, ids, n, values ? s->count : 0, values ? s->offcpu_ns : 0,
				values ? &s->alloc : NULL);
		if (at < 0)
			err = (int)at;
		else if (map)
			map[i] = at;
	}
	free(ids);
	free(frame_map);
	for (size_t pos = 0; !err;) {
		struct htab_entry *e = htab__next(src->build_ids, &pos);

		if (!e)
			break;
		if (!profile__build_id(dst, (const char *)e->key))
			err = profile__set_build_id(dst, (const char *)e->key, e->value);
	}
	return err;
}

int profile__merge_if(struct profile *dst, const struct profile *src,
		      bool (*keep)(const struct psample *s, void *ctx), void *ctx)
{
	return copy_samples(dst, src, keep, ctx, NULL, true, NULL);
}

int profile__copy_if(struct profile *dst, const struct profile *src, const bool *keep, int64_t *map)
{
	return copy_samples(dst, src, NULL, NULL, keep, false, map);
}

size_t profile__nr_samples(const struct profile *p)
{
	return p->nr_samples;
}

const struct psample *profile__sample(const struct profile *p, size_t i)
{
	return i < p->nr_samples ? &p->samples[i] : NULL;
}

size_t profile__nr_frames(const struct profile *p)
{
	return p->nr_frames;
}

const struct pframe *profile__frame_get(const struct profile *p, uint32_t id)
{
	return id < p->nr_frames ? &p->frames[id] : NULL;
}

size_t profile__nr_stacks(const struct profile *p)
{
	return p->nr_stacks;
}

const uint32_t *profile__stack_get(const struct profile *p, uint32_t id, uint32_t *n)
{
	if (id >= p->nr_stacks) {
		*n = 0;
		return NULL;
	}
	*n = p->stacks[id].n;
	/* Empty stacks only (samples with just a process name): no pool yet. */
	if (!p->stack_pool) {
		static const uint32_t none[1];

		return none;
	}
	return p->stack_pool + p->stacks[id].off;
}

uint64_t profile__total(const struct profile *p)
{
	return p->total;
}

uint64_t profile__total_offcpu(const struct profile *p)
{
	return p->total_offcpu;
}

static const struct profile *sort_ctx;

static int cmp_u32(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_samples(const void *a, const void *b)
{
	const struct psample *x = a, *y = b;
	const uint32_t *fx, *fy;
	uint32_t nx, ny;
	int c;

	c = strcmp(x->comm, y->comm);
	if (c)
		return c;
	c = cmp_u32(x->pid, y->pid);
	if (c)
		return c;
	c = cmp_u32(x->tid, y->tid);
	if (c)
		return c;
	fx = profile__stack_get(sort_ctx, x->stack, &nx);
	fy = profile__stack_get(sort_ctx, y->stack, &ny);
	for (uint32_t i = 0; i < nx && i < ny; i++) {
		if (fx[i] == fy[i])
			continue;
		c = strcmp(sort_ctx->frames[fx[i]].name, sort_ctx->frames[fy[i]].name);
		if (c)
			return c;
		c = cmp_u32(sort_ctx->frames[fx[i]].kind, sort_ctx->frames[fy[i]].kind);
		if (c)
			return c;
		c = cmp_u32(sort_ctx->frames[fx[i]].line, sort_ctx->frames[fy[i]].line);
		if (c)
			return c;
		c = cmp_u32(fx[i], fy[i]);
		if (c)
			return c;
	}
	c = cmp_u32(nx, ny);
	if (c)
		return c;
	c = strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
	if (c)
		return c;
	c = strcmp(x->container ? x->container : "", y->container ? y->container : "");
	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void profile__sort(struct profile *p)
{
	struct sample_key k;

	p->layout_gen++;
	sort_ctx = p;
	if (p->nr_samples) /* qsort(NULL, 0) is undefined */
		qsort(p->samples, p->nr_samples, sizeof(*p->samples), cmp_samples);
	sort_ctx = NULL;
	/* Reindex: the sample index maps identities to positions. */
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct psample *s = &p->samples[i];
		struct htab_entry *e;

		memset(&k, 0, sizeof(k));
		k.comm = (uintptr_t)s->comm;
		k.cgroup = (uintptr_t)s->cgroup;
		k.container = (uintptr_t)s->container;
		k.pid = s->pid;
		k.tid = s->tid;
		k.stack = s->stack;
		k.addr = s->addr;
		e = htab__find(p->sample_idx, &k, sizeof(k));
		if (e)
			e->value = (void *)(uintptr_t)i;
	}
}

int profile__set_build_id(struct profile *p, const char *module, const char *hex)
{
	const char *ihex = profile__intern(p, hex);
	struct htab_entry *e;

	if (!module || !hex)
		return -EINVAL;
	if (!ihex)
		return -ENOMEM;
	e = htab__upsert(p->build_ids, module, strlen(module), NULL);
	if (!e)
		return -ENOMEM;
	e->value = (void *)ihex;
	return 0;
}

const char *profile__build_id(const struct profile *p, const char *module)
{
	struct htab_entry *e;

	if (!module)
		return NULL;
	e = htab__find(p->build_ids, module, strlen(module));
	return e ? e->value : NULL;
}
