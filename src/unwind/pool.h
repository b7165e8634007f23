/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pool.h - bookkeeping of the kernel's unwind slot pool (unwind_abi.h):
 * which 8-byte slots of which chunk are free. Pure: the kernel side is
 * reached through two callbacks, so the allocator is unit-tested without BPF.
 *
 * Runs are contiguous inside one chunk (the walker indexes a chunk, never
 * across). Allocation is first fit over the chunks in index order; a new
 * chunk is created (grow callback) only when no existing one has room, up to
 * max_chunks. Freed runs are not reusable at once: a BPF program that read
 * the old process entry a microsecond ago may still be walking them, so
 * upool__release() parks a run and it becomes free at the second
 * upool__reclaim() after that (reclaim runs every few hundred ms). A chunk
 * that becomes entirely free is dropped (shrink callback), giving its memory
 * back to the kernel.
 */
#ifndef BPFPROF_UNWIND_POOL_H
#define BPFPROF_UNWIND_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct upool;

/* Create (grow) or destroy (shrink) chunk `chunk` in the kernel; 0 or -errno. */
typedef int (*upool_chunk_fn)(void *ctx, uint32_t chunk);

struct upool_stats {
	uint32_t chunks;       /* chunks allocated in the kernel */
	uint64_t used_slots;   /* in live runs */
	uint64_t parked_slots; /* released, waiting for reclaim */
	uint64_t peak_chunks;
	uint64_t failed_allocs; /* -ENOSPC: the cap was reached */
};

struct upool *upool__new(uint32_t chunk_slots, uint32_t max_chunks, upool_chunk_fn grow,
			 upool_chunk_fn shrink, void *ctx);
void upool__free(struct upool *p);

/*
 * Allocates n contiguous slots (1 <= n <= chunk_slots) inside one chunk;
 * *slot is the global index of the first. 0, -ENOSPC (cap reached: evict
 * something and retry), -EINVAL (n out of range), -ENOMEM, or the grow
 * callback's error.
 */
int upool__alloc(struct upool *p, uint32_t n, uint32_t *slot);
/* Gives a run back; reusable after the second upool__reclaim() from now. */
void upool__release(struct upool *p, uint32_t slot, uint32_t n);
/* Frees the runs parked before the previous reclaim; drops empty chunks. */
void upool__reclaim(struct upool *p);
/*
 * Changes whenever slots become free for reuse (never while no slot is
 * freed): what was read from slots before a change may be stale after it.
 */
uint64_t upool__generation(const struct upool *p);
/* Largest run an allocation could get now without creating a chunk. */
uint32_t upool__largest_free(const struct upool *p);

void upool__stats(const struct upool *p, struct upool_stats *st);

#endif
