// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * unwind_kops.c - the kernel side of src/unwind/unwinder.c: the unwind
 * tables' chunks, rows and processes in the program's maps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/collector_int.h"
#include "unwind/unwinder.h"

/* --- unwind tables: the kernel side of src/unwind/unwinder.c ----------------- */

bool collector__kernel_walk(const struct collector *c, int *err, size_t *entries)
{
	if (err)
		*err = c->kw_err;
	if (entries)
		*entries = c->korc_entries;
	return c->skel->rodata->kw_enabled;
}

bool collector__kernel_fp_walk(const struct collector *c)
{
	return !c->fp_walker;
}

uint32_t collector__unwind_mode(const struct collector *c, int *fallback_err)
{
	if (fallback_err)
		*fallback_err = c->unwind_err;
	return c->unwind_mode;
}

/* A chunk of the slot pool is an ARRAY map installed in unwind_chunks[chunk]. */
static int uw_chunk_add(void *ctx, uint32_t chunk)
{
	struct collector *c = ctx;
	int fd, err;

	if (chunk == 0 && c->chunk0_spare) {
		c->chunk0_spare = false; /* installed with the buffer sets (prefill__finish) */
		return 0;
	}
	if (chunk >= UNWIND_MAX_CHUNKS || c->chunk_fd[chunk] > 0)
		return -EINVAL;
	fd = uw_chunk_map();
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.unwind_chunks), &chunk, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	c->chunk_fd[chunk] = fd;
	return 0;
}

static int uw_chunk_drop(void *ctx, uint32_t chunk)
{
	struct collector *c = ctx;

	if (chunk >= UNWIND_MAX_CHUNKS || c->chunk_fd[chunk] <= 0)
		return -EINVAL;
	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.unwind_chunks), &chunk))
		return -errno;
	close(c->chunk_fd[chunk]);
	c->chunk_fd[chunk] = 0;
	return 0;
}

/*
 * Chunks are mmapable ARRAY maps: map just the pages to write, copy, unmap
 * (so the pool never counts in our RSS). A table of 50k rows is one memcpy
 * instead of 50k element updates.
 */
static int uw_slots_mmap_write(int fd, uint32_t idx, const void *vals, uint32_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t start = (size_t)idx * 8, end = start + (size_t)n * 8;
	size_t off = start & ~(page - 1), len = ((end + page - 1) & ~(page - 1)) - off;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);

	if (m == MAP_FAILED)
		return -errno;
	memcpy((char *)m + (start - off), vals, (size_t)n * 8);
	munmap(m, len);
	return 0;
}

static int uw_slots_write(void *ctx, uint32_t slot, const void *vals, uint32_t n)
{
	struct collector *c = ctx;
	uint32_t chunk = slot >> UNWIND_CHUNK_SHIFT, idx = slot & (UNWIND_CHUNK_SLOTS - 1);
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint32_t *keys, count = n;
	int fd, err = 0;

	if (chunk >= UNWIND_MAX_CHUNKS || (fd = c->chunk_fd[chunk]) <= 0 ||
	    (uint64_t)idx + n > UNWIND_CHUNK_SLOTS)
		return -EINVAL;
	if (!n)
		return 0;
	if (!uw_slots_mmap_write(fd, idx, vals, n))
		return 0;
	keys = calloc(n, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		keys[i] = idx + i;
	/* One syscall for the whole run (5.6+), else one per slot. */
	if (bpf_map_update_batch(fd, keys, vals, &count, &opts)) {
		for (uint32_t i = 0; i < n && !err; i++)
			if (bpf_map_update_elem(fd, &keys[i], (const char *)vals + 8 * (size_t)i,
						BPF_ANY))
				err = -errno;
	}
	free(keys);
	return err;
}

static int uw_proc_set(void *ctx, uint32_t tgid, const struct bp_uproc *p)
{
	struct collector *c = ctx;

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.unwind_procs), &tgid, p, BPF_ANY))
		return -errno;
	/* After the update: the walker's per-CPU copy of the old entry is stale. */
	__atomic_add_fetch(&c->skel->bss->uw_proc_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/*
 * Also forgets that the process was noticed: if it is still running (it was
 * evicted to make room), its next sample sends a new notice and it gets its
 * entry back.
 */
static int uw_proc_del(void *ctx, uint32_t tgid)
{
	struct collector *c = ctx;

	bpf_map_delete_elem(bpf_map__fd(c->skel->maps.seen), &tgid);
	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.unwind_procs), &tgid) && errno != ENOENT)
		return -errno;
	__atomic_add_fetch(&c->skel->bss->uw_proc_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* A Python process's interpreter, for the walker (python.bpf.h); before its unwind entry. */
static int uw_py_set(void *ctx, uint32_t tgid, const struct bp_pyproc *p)
{
	struct collector *c = ctx;

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.python_procs), &tgid, p, BPF_ANY))
		return -errno;
	return 0;
}

static int uw_py_del(void *ctx, uint32_t tgid)
{
	struct collector *c = ctx;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.python_procs), &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

/* A JVM's code cache, for the walker (hotspot.bpf.h); before its unwind entry. */
static int uw_hs_set(void *ctx, uint32_t tgid, const struct bp_hsproc *p)
{
	struct collector *c = ctx;

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.hotspot_procs), &tgid, p, BPF_ANY))
		return -errno;
	/* After the update: the walker's per-CPU copy (hs_begin()) is stale. */
	__atomic_add_fetch(&c->skel->bss->uw_proc_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int uw_hs_del(void *ctx, uint32_t tgid)
{
	struct collector *c = ctx;

	if (bpf_map_delete_elem(bpf_map__fd(c->skel->maps.hotspot_procs), &tgid) && errno != ENOENT)
		return -errno;
	__atomic_add_fetch(&c->skel->bss->uw_proc_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* The walker's row cache keeps only entries of the current generation. */
static void uw_pool_changed(void *ctx, uint64_t generation)
{
	struct collector *c = ctx;

	__atomic_store_n(&c->skel->bss->uw_gen, generation, __ATOMIC_SEQ_CST);
}

void collector__unwind_kops(struct collector *c, struct unwind_kops *k)
{
	memset(k, 0, sizeof(*k));
	k->ctx = c;
	k->chunk_add = uw_chunk_add;
	k->chunk_drop = uw_chunk_drop;
	k->slots_write = uw_slots_write;
	k->proc_set = uw_proc_set;
	k->py_set = uw_py_set;
	k->py_del = uw_py_del;
	k->hs_set = uw_hs_set;
	k->hs_del = uw_hs_del;
	k->pool_changed = uw_pool_changed;
	k->proc_del = uw_proc_del;
}
