// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * prefill.c - the buffer sets (and the unwinder's first table chunk) in
 * their ARRAY_OF_MAPS slots: filled on threads while the kernel verifies
 * the program, or after the load.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/collector_int.h"

/*
 * The buffer sets in their ARRAY_OF_MAPS slots. Every update of a map-in-map
 * waits for an RCU grace period (the kernel's promise that no program still
 * uses the old value, which the drain relies on), so the four go out at
 * once, each on a thread of its own, and wait for one grace period together
 * instead of four in turn: tens of milliseconds of start-up on a busy machine.
 */
struct slot_fill {
	int outer, inner;
	uint32_t idx;
	int err;
};

static void *slot_fill_run(void *arg)
{
	struct slot_fill *f = arg;

	f->err = bpf_map_update_elem(f->outer, &f->idx, &f->inner, BPF_ANY) ? -errno : 0;
	return NULL;
}

int uw_chunk_map(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);

	return bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_chunk", sizeof(__u32), sizeof(__u64),
			      UNWIND_CHUNK_SLOTS, &mo);
}

/*
 * The same fill, overlapped with the verifier: the buffer sets, their outer
 * maps and the first table chunk are created before the program load,
 * handed to libbpf (bpf_map__reuse_fd: it creates the other maps), and the
 * slots filled on threads while the kernel verifies the program, so the
 * grace period costs no start-up time (10-25 ms after the load on a busy
 * machine). Any failure leaves the maps to libbpf and the fill to
 * prefill__finish() after the load, as before.
 */
struct prefill {
	int fd[7];  /* counts_0/1, stacks_0/1, counts, stacks, unwind_chunks */
	int chunk0; /* the first table chunk, or -1 */
	struct slot_fill f[2 * PROFILE_NR_BUFS + 1];
	pthread_t th[2 * PROFILE_NR_BUFS + 1];
	bool started[2 * PROFILE_NR_BUFS + 1];
	size_t nr;
	bool joined, ok;
};

static int map_like(const struct bpf_map *m, const char *name, int inner_fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = bpf_map__map_flags(m),
		    .inner_map_fd = (__u32)inner_fd);

	return bpf_map_create(bpf_map__type(m), name, bpf_map__key_size(m), bpf_map__value_size(m),
			      bpf_map__max_entries(m), &mo);
}

/* Waits for the fills; true if every slot is in place. */
static bool prefill_join(struct prefill *p)
{
	if (p->joined)
		return p->ok;
	p->joined = true;
	p->ok = true;
	for (size_t i = 0; i < p->nr; i++) {
		if (p->started[i])
			pthread_join(p->th[i], NULL);
		else
			slot_fill_run(&p->f[i]); /* no thread: now */
		if (p->f[i].err)
			p->ok = false;
	}
	return p->ok;
}

/* Our descriptors (libbpf holds its own copies of those it took). */
void prefill__free(struct prefill *p)
{
	if (!p)
		return;
	prefill_join(p);
	for (size_t i = 0; i < ARRAY_SIZE(p->fd); i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	if (p->chunk0 >= 0)
		close(p->chunk0);
	free(p);
}

/* Creates the maps and starts the fills; NULL if it could not (libbpf then
 * creates the maps as usual). Called with the configured skeleton. */
struct prefill *prefill__start(struct collector *c)
{
	struct profile_bpf *s = c->skel;
	struct bpf_map *inner[4] = { s->maps.counts_0, s->maps.counts_1, s->maps.stacks_0,
				     s->maps.stacks_1 };
	static const char *const names[4] = { "counts_0", "counts_1", "stacks_0", "stacks_1" };
	struct prefill *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(p->fd); i++)
		p->fd[i] = -1;
	p->chunk0 = -1;
	p->joined = true; /* nothing started yet */
	for (int i = 0; i < 4; i++)
		if ((p->fd[i] = map_like(inner[i], names[i], 0)) < 0)
			goto fail;
	if ((p->fd[4] = map_like(s->maps.counts, "counts", p->fd[0])) < 0 ||
	    (p->fd[5] = map_like(s->maps.stacks, "stacks", p->fd[2])) < 0)
		goto fail;
	if (c->unwind_mode != UNWIND_MODE_FP && (p->chunk0 = uw_chunk_map()) >= 0 &&
	    (p->fd[6] = map_like(s->maps.unwind_chunks, "unwind_chunks", p->chunk0)) < 0) {
		close(p->chunk0);
		p->chunk0 = -1;
	}
	for (uint32_t i = 0; i < PROFILE_NR_BUFS; i++) {
		p->f[p->nr++] =
			(struct slot_fill){ .outer = p->fd[4], .inner = p->fd[i], .idx = i };
		p->f[p->nr++] =
			(struct slot_fill){ .outer = p->fd[5], .inner = p->fd[2 + i], .idx = i };
	}
	if (p->fd[6] >= 0)
		p->f[p->nr++] =
			(struct slot_fill){ .outer = p->fd[6], .inner = p->chunk0, .idx = 0 };
	p->joined = false;
	for (size_t i = 0; i < p->nr; i++)
		p->started[i] = !pthread_create(&p->th[i], NULL, slot_fill_run, &p->f[i]);
	return p;
fail:
	prefill__free(p);
	return NULL;
}

/* Hands the pre-made maps to a (re)opened skeleton; false if libbpf refused. */
bool prefill__reuse(struct prefill *p, struct profile_bpf *s)
{
	struct bpf_map *m[7] = { s->maps.counts_0,     s->maps.counts_1, s->maps.stacks_0,
				 s->maps.stacks_1,     s->maps.counts,	 s->maps.stacks,
				 s->maps.unwind_chunks };

	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		if (p->fd[i] >= 0 && bpf_map__reuse_fd(m[i], p->fd[i]))
			return false;
	return true;
}

int prefill__finish(struct collector *c, struct errmsg *em)
{
	struct profile_bpf *s = c->skel;
	struct slot_fill f[2 * PROFILE_NR_BUFS + 1];
	pthread_t th[ARRAY_SIZE(f)];
	bool started[ARRAY_SIZE(f)] = { false };
	size_t nr = 2 * PROFILE_NR_BUFS;
	int err = 0;

	if (c->prefill) {
		struct prefill *p = c->prefill;
		bool ok = prefill_join(p);

		c->prefill = NULL;
		if (ok && p->chunk0 >= 0) {
			if (c->unwind_mode != UNWIND_MODE_FP && c->fp_walker) {
				c->chunk_fd[0] = p->chunk0; /* as below: there ahead */
				c->chunk0_spare = true;
				p->chunk0 = -1;
			} else { /* the loaded program walks no tables after all */
				uint32_t zero = 0;

				bpf_map_delete_elem(bpf_map__fd(c->skel->maps.unwind_chunks),
						    &zero);
			}
		}
		prefill__free(p);
		if (ok) {
			c->prefilled = true;
			return 0;
		}
	}

	for (uint32_t i = 0; i < PROFILE_NR_BUFS; i++) {
		f[2 * i] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.counts),
					       .inner = c->counts_fd[i],
					       .idx = i };
		f[2 * i + 1] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.stacks),
						   .inner = c->stacks_fd[i],
						   .idx = i };
	}
	/* The unwinder's first table chunk too: it asks for one at once (the
	 * vDSO's table), and installing it alone would wait a grace period more. */
	if (c->unwind_mode != UNWIND_MODE_FP && c->fp_walker) {
		int fd = uw_chunk_map();

		if (fd >= 0) {
			c->chunk_fd[0] = fd;
			c->chunk0_spare = true;
			f[nr++] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.unwind_chunks),
						      .inner = fd,
						      .idx = 0 };
		}
	}
	for (size_t i = 1; i < nr; i++)
		started[i] = !pthread_create(&th[i], NULL, slot_fill_run, &f[i]);
	slot_fill_run(&f[0]);
	for (size_t i = 1; i < nr; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			slot_fill_run(&f[i]); /* no thread: in turn */
	}
	if (nr > 2 * PROFILE_NR_BUFS && f[nr - 1].err) {
		close(c->chunk_fd[0]); /* the unwinder creates it when it needs it */
		c->chunk_fd[0] = 0;
		c->chunk0_spare = false;
		nr--;
	}
	for (size_t i = 0; i < nr && !err; i++)
		err = f[i].err;
	if (err)
		errmsg_set(em, err, "cannot set up the count and stack maps: %s", strerror(-err));
	return err;
}
