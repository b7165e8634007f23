// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * drain.c - hands out what every stack gained (collector__drain()).
 *
 * Drain protocol (see also bpf/profile.bpf.c): every program run reads
 * active_buf once and uses only that (counts, stacks) pair. Counts only grow
 * while their key is in the map, so most drains read the active pair in place
 * and hand out what each count gained since the last read (a mirror here holds
 * the last value per key). Keys and stacks stay in the kernel: a stack seen
 * before takes the program's cheap path instead of being inserted again after
 * every drain. When the active pair is half full, or sampling has stopped, the
 * drain flips instead:
 *
 *   1. store active_buf = other           (new runs go to the other pair, empty)
 *   2. re-store the old inner map into its ARRAY_OF_MAPS slot: the kernel
 *      does synchronize_rcu() after a map-in-map update, and perf_event
 *      programs run inside an RCU read-side section, so when the syscall
 *      returns no run that saw the old index is still going
 *   3. read the old counts and the stacks they name, hand out the gains
 *   4. delete every entry of the old pair, forget the mirror
 *
 * Nothing is lost and nothing is counted twice: an increment the in-place
 * read misses is seen by the next read or by the flip, which happens after
 * the last run that can increment. Keys are never deleted from the active
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/htab.h"
#include "base/util.h"
#include "collector/collector_int.h"

/* Maps the count slot arrays (read and emptied in place) and starts the drain's view. */
int drain__open(struct collector *c, struct errmsg *em)
{
	struct profile_bpf *s = c->skel;

	c->slot_next = map_array(s->maps.slot_next, PROT_READ | PROT_WRITE, &c->slot_next_len);
	c->slot_counts =
		map_array(s->maps.slot_counts, PROT_READ | PROT_WRITE, &c->slot_counts_len);
	c->slot_keys = map_array(s->maps.slot_keys, PROT_READ, &c->slot_keys_len);
	if (!c->slot_next || !c->slot_counts || !c->slot_keys) {
		errmsg_set(em, -errno, "cannot map the count slots: %s", strerror(errno));
		return -1;
	}
	c->taken = calloc(c->regions, sizeof(*c->taken));
	c->sset = slotset__new(c->regions, c->per_region, (size_t)c->ncpu * PROFILE_HOT_SLOTS);
	if (!c->taken || !c->sset) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return -1;
	}
	return 0;
}

void drain__close(struct collector *c)
{
	if (c->slot_next)
		munmap(c->slot_next, c->slot_next_len);
	if (c->slot_counts)
		munmap(c->slot_counts, c->slot_counts_len);
	if (c->slot_keys)
		munmap(c->slot_keys, c->slot_keys_len);
	free(c->taken);
	slotset__free(c->sset);
}

/* Reads every key of a hash map into a growing array. */
static int read_keys(int fd, size_t key_size, void **keys, size_t *nr)
{
	size_t cap = 0, n = 0;
	unsigned char *arr = NULL, *prev = NULL;
	int err = 0;

	for (;;) {
		if (array_grow((void **)&arr, &cap, n + 1, key_size)) {
			err = -ENOMEM;
			break;
		}
		prev = n ? arr + (n - 1) * key_size : NULL; /* the array may have moved */
		if (bpf_map_get_next_key(fd, prev, arr + n * key_size)) {
			if (errno != ENOENT)
				err = -errno;
			break;
		}
		n++;
	}
	if (err) {
		free(arr);
		return err;
	}
	*keys = arr;
	*nr = n;
	return 0;
}

static int clear_map(int fd, size_t key_size)
{
	void *keys = NULL;
	size_t nr = 0;
	int err = read_keys(fd, key_size, &keys, &nr);

	if (err)
		return err;
	if (nr) {
		uint32_t count = (uint32_t)nr;
		DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);

		/* One syscall for all keys when the kernel has batch ops (5.6+). */
		if (bpf_map_delete_batch(fd, keys, &count, &opts)) {
			for (size_t i = 0; i < nr; i++)
				bpf_map_delete_elem(fd, (unsigned char *)keys + i * key_size);
		}
	}
	free(keys);
	return 0;
}

/*
 * Stacks read from the active set, kept until it is emptied: a key new to
 * the set often shares a stack with one read before (a new kernel stack
 * under a known user stack), and a read costs a syscall copying 1 KiB. Ids
 * are hashes of the frames, so an id names one stack for the set's life.
 * At most the set's stacks map, in copies of the used part only.
 */
static const struct bp_stack *get_stack(struct collector *c, int fd, uint64_t id)
{
	struct htab_entry *e;
	struct bp_stack st, *copy;
	bool created;

	if (id == STACK_ID_NONE)
		return NULL;
	if (!c->stacks_seen && !(c->stacks_seen = htab__new()))
		return NULL;
	e = htab__upsert(c->stacks_seen, &id, sizeof(id), &created);
	if (!e)
		return NULL;
	if (!created)
		return e->value;
	if (bpf_map_lookup_elem(fd, &id, &st) || st.nr > PROFILE_MAX_DEPTH ||
	    !(copy = malloc(offsetof(struct bp_stack, ips) + st.nr * sizeof(st.ips[0])))) {
		htab__remove(c->stacks_seen, &id, sizeof(id)); /* asked again next time */
		c->missing_stacks++;
		return NULL;
	}
	memcpy(copy, &st, offsetof(struct bp_stack, ips) + st.nr * sizeof(st.ips[0]));
	e->value = copy;
	c->stacks_read++;
	return copy;
}

/* The set whose stacks were kept was emptied. */
void drain__forget_stacks(struct collector *c)
{
	struct htab_entry *e;
	size_t pos = 0;

	while (c->stacks_seen && (e = htab__next(c->stacks_seen, &pos)))
		free(e->value);
	htab__free(c->stacks_seen);
	c->stacks_seen = NULL;
}

/* CPU cpu's hot slots of buffer set buf (the last page of its cpu_state value). */
static struct bp_hot_slot *hot_slots(struct collector *c, int cpu, uint32_t buf)
{
	size_t vsz = bpf_map__value_size(c->skel->maps.cpu_state);
	char *v = (char *)c->cpu_state + (size_t)cpu * vsz;

	return (struct bp_hot_slot *)(v + vsz -
				      sizeof(struct bp_hot_slot) * PROFILE_NR_BUFS *
					      PROFILE_HOT_SLOTS) +
	       (size_t)buf * PROFILE_HOT_SLOTS;
}

/*
 * Adds what every CPU counted in its hot slots of set buf to this read of
 * the set's keys (slotset__hot()). A hot slot is claimed only by a key that
 * has a count slot, so its key is known once that slot is scanned - or, if
 * it was claimed after the scan, at the next read. Every part only grows
 * until the set is emptied, so totals only grow.
 */
static void add_hot(struct collector *c, uint32_t buf)
{
	if (!__atomic_load_n(&c->skel->bss->hot_slots, __ATOMIC_RELAXED) || !slotset__keys(c->sset))
		return;
	for (int cpu = 0; cpu < c->ncpu; cpu++) {
		const struct bp_hot_slot *hs = hot_slots(c, cpu, buf);

		for (uint32_t i = 0; i < PROFILE_HOT_SLOTS; i++) {
			/* The hash first: a claim writes the count before it. */
			uint64_t h = __atomic_load_n(&hs[i].khash, __ATOMIC_ACQUIRE);

			if (h)
				slotset__hot(c->sset, (size_t)cpu * PROFILE_HOT_SLOTS + i, h,
					     __atomic_load_n(&hs[i].count, __ATOMIC_RELAXED));
		}
	}
}

/* Empties every CPU's hot slots of set buf, which no run uses any more. */
static void clear_hot(struct collector *c, uint32_t buf)
{
	if (!__atomic_load_n(&c->skel->bss->hot_slots, __ATOMIC_RELAXED))
		return;
	for (int cpu = 0; cpu < c->ncpu; cpu++)
		memset(hot_slots(c, cpu, buf), 0, sizeof(struct bp_hot_slot) * PROFILE_HOT_SLOTS);
}

/* Set buf's count slots, as slotset.h reads them. */
static struct slotset_mem slot_mem(const struct collector *c, uint32_t buf)
{
	size_t off = (size_t)buf * c->regions * c->per_region;

	return (struct slotset_mem){ .counts = c->slot_counts + off, .keys = c->slot_keys + off };
}

/* Each region's slots taken in set buf, into c->taken; true if one is half full. */
static bool slots_taken(struct collector *c, uint32_t buf)
{
	bool half = false;

	for (uint32_t r = 0; r < c->regions; r++) {
		c->taken[r] = __atomic_load_n(&c->slot_next[r].next[buf], __ATOMIC_ACQUIRE);
		if (c->taken[r] >= c->per_region / 2)
			half = true;
	}
	return half;
}

/*
 * Deletes keys from a map: batches (5.6+), stepping over a key that is not
 * there (a batch stops at it); key by key without batch ops.
 */
static void delete_keys(int fd, const unsigned char *keys, size_t n, size_t key_size)
{
	size_t done = 0;

	while (done < n) {
		DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
		uint32_t count = (uint32_t)MIN(n - done, (size_t)UINT32_MAX);

		if (!bpf_map_delete_batch(fd, keys + done * key_size, &count, &opts)) {
			done += count;
			continue;
		}
		if (errno == ENOENT && count < n - done) {
			done += (size_t)count + 1; /* deleted up to it; it was not there */
			continue;
		}
		for (; done < n; done++)
			bpf_map_delete_elem(fd, keys + done * key_size);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted ids without repeats, in place; their number. */
static size_t unique_u64(uint64_t *ids, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n; i++)
		if (!j || ids[j - 1] != ids[i])
			ids[j++] = ids[i];
	return j;
}

/*
 * Empties set buf (no run uses it any more): its counts and stacks maps,
 * first by the keys and stack ids the drain knows (batch deletes), then
 * whatever is left (a walk that usually finds nothing: stacks of keys that
 * got no slot); its count slots, and its regions' next; every CPU's hot slots.
 */
static int clear_set(struct collector *c, uint32_t buf)
{
	size_t nk = slotset__keys(c->sset), ns = 0;
	struct bp_sample_key *keys = malloc((nk ? nk : 1) * sizeof(*keys));
	uint64_t *ids = malloc((nk ? 2 * nk : 1) * sizeof(*ids));
	struct slotset_mem m = slot_mem(c, buf);
	int e1, e2;

	if (keys && ids) {
		for (size_t i = 0; i < nk; i++) {
			keys[i] = *slotset__key(c->sset, i);
			if (keys[i].kstack)
				ids[ns++] = keys[i].kstack;
			if (keys[i].ustack)
				ids[ns++] = keys[i].ustack;
		}
		qsort(ids, ns, sizeof(*ids), cmp_u64);
		ns = unique_u64(ids, ns); /* a batch stops at a missing key */
		delete_keys(c->counts_fd[buf], (const unsigned char *)keys, nk, sizeof(*keys));
		delete_keys(c->stacks_fd[buf], (const unsigned char *)ids, ns, sizeof(*ids));
	}
	free(keys);
	free(ids);
	e1 = clear_map(c->counts_fd[buf], sizeof(struct bp_sample_key));
	e2 = clear_map(c->stacks_fd[buf], sizeof(uint64_t));
	for (uint32_t r = 0; r < c->regions; r++) {
		uint32_t n = MIN(__atomic_load_n(&c->slot_next[r].next[buf], __ATOMIC_RELAXED),
				 c->per_region);

		/* Counts 0 again (unpublished), then the region starts over. */
		memset((void *)(m.counts + (size_t)r * c->per_region), 0, n * sizeof(uint64_t));
		__atomic_store_n(&c->slot_next[r].next[buf], 0, __ATOMIC_RELEASE);
	}
	clear_hot(c, buf);
	slotset__reset(c->sset);
	drain__forget_stacks(c);
	return e1 ? e1 : e2;
}

int collector__drain(struct collector *c, collector_known_fn known, collector_sample_fn pre,
		     collector_sample_fn fn, void *ctx)
{
	uint32_t buf = c->active;
	uint64_t t0 = now_ns();
	const struct slotset_gain *gains = NULL;
	struct slotset_mem m = slot_mem(c, buf);
	size_t nr = 0;
	bool flip = slots_taken(c, buf) || !c->sampling || slotset__keys(c->sset) >= c->flip_at ||
		    c->opts.test.always_flip;
	int err;

	if (flip) {
		/* 1-2: flip, then wait out every run that may still use the old set. */
		uint32_t next = buf ^ 1;
		int inner = c->counts_fd[buf];

		__atomic_store_n(&c->skel->bss->active_buf, next, __ATOMIC_SEQ_CST);
		c->active = next;
		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.counts), &buf, &inner, BPF_ANY))
			return -errno;
		c->flips++;
		slots_taken(c, buf); /* final now */
	}

	/* 3: read in place: new slots, then every key's total against the last. */
	err = slotset__scan(c->sset, &m, c->taken);
	if (!err) {
		add_hot(c, buf);
		err = slotset__gains(c->sset, &m, &gains, &nr);
	}
	/* Every sample announced first, then handed out: a consumer can batch
	 * work (the symbolizer scans a large perf map once per drain). The
	 * stacks are kept by the first pass for the second (get_stack()). */
	for (int pass = pre ? 0 : 1; pass < 2 && !err; pass++) {
		for (size_t i = 0; i < nr && !err; i++) {
			const struct bp_sample_key *key = gains[i].key;
			struct collector_sample s = { .key = key,
						      .count = gains[i].count,
						      .cookie = gains[i].cookie };
			const struct bp_stack *ks, *us;

			/* Asked right before fn: nothing comes between its answer and use. */
			if (known && known(ctx, &s)) {
				err = pass ? fn(ctx, &s) : 0;
				continue;
			}
			ks = get_stack(c, c->stacks_fd[buf], key->kstack);
			us = get_stack(c, c->stacks_fd[buf], key->ustack);
			if (ks) {
				s.kips = ks->ips;
				s.nr_kips = ks->nr;
			}
			if (us) {
				s.uips = us->ips;
				s.nr_uips = us->nr;
			}
			err = pass ? fn(ctx, &s) : pre(ctx, &s);
		}
		if (!pass && !err)
			err = pre(ctx, NULL); /* all announced */
	}

	/* 4: empty the old set for its next turn - also after a failed callback,
	 * or its next drain would hand the same counts out again. */
	if (flip && c->opts.offcpu) {
		int e0 = offcpu__carry(c, c->stacks_fd[buf], c->stacks_fd[buf ^ 1]);

		if (!err)
			err = e0;
	}
	if (flip) {
		int e1 = clear_set(c, buf);

		if (!err)
			err = e1;
	}
	c->drains++;
	c->last_stats_ns = 0;
	c->drain_ns = now_ns() - t0;
	c->drain_ns_total += c->drain_ns;
	return err;
}
