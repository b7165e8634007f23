// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * open_load.c - collector__open(): opens the skeleton, sets its filters and
 * map sizes, loads it with the first attempt the kernel takes, and fills
 * its maps; the BPF program list (kprogs.bpf.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/selfstat.h"
#include "base/util.h"
#include "collector/collector_int.h"

/* Maps an mmapable array map whole; *len: the mapping's length. */
void *map_array(struct bpf_map *m, int prot, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*len = (size_t)bpf_map__value_size(m) * bpf_map__max_entries(m);
	*len = (*len + page - 1) / page * page;
	p = mmap(NULL, *len, prot, MAP_SHARED, bpf_map__fd(m), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Writes an mmapable array's contents. */
int fill_mmap(struct bpf_map *m, const void *data, size_t len)
{
	size_t size;
	void *p = map_array(m, PROT_READ | PROT_WRITE, &size);

	if (!p)
		return -errno;
	if (len <= size)
		memcpy(p, data, len);
	munmap(p, size);
	return len <= size ? 0 : -E2BIG;
}

static bool libbpf_debug_on;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !libbpf_debug_on)
		return 0;
	if (level == LIBBPF_WARN || libbpf_debug_on)
		return vfprintf(stderr, fmt, args);
	return 0;
}

/*
 * What the program is loaded with, most first. A kernel that refuses one
 * (verifier budget, a missing helper) gets the next; the collector keeps why
 * for the user. The kernel stack walk with the ORC table costs verifier
 * budget and goes first; the program's own stack walker needs bpf_loop() and
 * bpf_task_pt_regs() (5.17+): without them, --unwind auto and fp still
 * profile, with the kernel's frame-pointer walk (bpf_get_stack). The verifier
 * never sees the walker's helper calls then: they sit behind rodata
 * constants, in branches it prunes.
 */
static const struct load_attempt {
	bool walker;	  /* the program walks user stacks itself */
	bool kernel_walk; /* and kernel stacks, with the kernel's ORC table */
} load_attempts[] = {
	{ .walker = true, .kernel_walk = true },
	{ .walker = true, .kernel_walk = false },
	{ .walker = false, .kernel_walk = false },
};

/* Whether attempt a can be tried at all; prepares the ORC table when it needs it. */
static bool attempt_possible(struct collector *c, const struct load_attempt *a, bool walker_ok)
{
	if (a->walker && !walker_ok)
		return false;
	if (!a->walker && c->opts.unwind_mode == UNWIND_MODE_DWARF)
		return false; /* tables need the program's walker */
	if (!a->kernel_walk)
		return true;
	if (!c->kw_err && !c->korc.nents) {
		uint64_t t0 = now_ns();

		c->kw_err = kwalk__prepare(c);
		c->korc_ns = now_ns() - t0;
	}
	return !c->kw_err;
}

/*
 * Count slots: max_counts keys per set, split evenly among the CPUs'
 * regions (a CPU's new keys take its own region), plus one region of the
 * same size for the end-of-run flush. The counts maps are sized to hold
 * every slot's key.
 */
#define SLOTS_MIN_PER_REGION 64

static int slots_configure(struct collector *c, struct errmsg *em)
{
	struct profile_bpf *s = c->skel;
	uint64_t want =
		c->opts.max_counts ? c->opts.max_counts : bpf_map__max_entries(s->maps.counts_0);
	uint64_t per = MAX((want + (uint64_t)c->ncpu - 1) / (uint64_t)c->ncpu,
			   (uint64_t)SLOTS_MIN_PER_REGION);
	uint64_t regions = (uint64_t)c->ncpu + 1, total = regions * per;

	if (total * PROFILE_NR_BUFS > UINT32_MAX / sizeof(struct bp_sample_key)) {
		errmsg_set(em, -E2BIG, "%" PRIu64 " count slots on %d CPUs is too many", want,
			   c->ncpu);
		return -E2BIG;
	}
	c->regions = (uint32_t)regions;
	c->per_region = (uint32_t)per;
	s->rodata->slot_regions = c->regions;
	s->rodata->slot_per_region = c->per_region;
	if (bpf_map__set_max_entries(s->maps.counts_0, (uint32_t)total) ||
	    bpf_map__set_max_entries(s->maps.counts_1, (uint32_t)total) ||
	    bpf_map__set_max_entries(s->maps.slot_next, c->regions) ||
	    bpf_map__set_max_entries(s->maps.slot_counts, (uint32_t)(total * PROFILE_NR_BUFS)) ||
	    bpf_map__set_max_entries(s->maps.slot_keys, (uint32_t)(total * PROFILE_NR_BUFS))) {
		errmsg_set(em, -EINVAL, "cannot size the count slot maps");
		return -EINVAL;
	}
	return 0;
}

/* Filters are read-only data, map sizes are set before load. */
static int skel_configure(struct collector *c, const struct load_attempt *a, struct errmsg *em)
{
	const struct collector_opts *opts = &c->opts;
	struct profile_bpf *s = c->skel;

	s->rodata->filter_tgids = opts->nr_pids > 0 || opts->child;
	s->rodata->drop_kernel = opts->drop_kernel;
	s->rodata->drop_user = opts->drop_user;
	s->rodata->include_idle = opts->include_idle;
	s->rodata->per_thread = opts->per_thread;
	/* Tests: what a kernel without task_struct.in_execve runs. */
	s->rodata->execve_by_mm = opts->test.execve_by_mm;
	s->rodata->nr_cgroups = (uint32_t)opts->nr_cgroups;
	if (opts->nr_cgroups > bpf_map__max_entries(s->maps.cgroups)) {
		errmsg_set(em, -E2BIG, "at most %u --cgroup options",
			   bpf_map__max_entries(s->maps.cgroups));
		return -E2BIG;
	}
	if (opts->max_stacks) {
		bpf_map__set_max_entries(s->maps.stacks_0, opts->max_stacks);
		bpf_map__set_max_entries(s->maps.stacks_1, opts->max_stacks);
	}
	/* A command's descendants come and go: room for many alive at once.
	 * Tests: a smaller room. */
	if (opts->child) {
		uint32_t t = opts->test.targets_max;

		bpf_map__set_max_entries(s->maps.tgids, t ? t : TARGETS_FOLLOWED_MAX);
	} else {
		bpf_map__set_max_entries(s->maps.tgids, opts->nr_pids ? opts->nr_pids : 1);
	}
	bpf_program__set_autoload(s->progs.target_fork, opts->child != 0);
	bpf_program__set_autoload(s->progs.target_exit, opts->nr_pids || opts->child);
	c->ncpu = libbpf_num_possible_cpus();
	if (c->ncpu <= 0 || bpf_map__set_max_entries(s->maps.cpu_state, c->ncpu)) {
		errmsg_set(em, -EINVAL, "cannot size the per-CPU state map");
		return -EINVAL;
	}
	if (slots_configure(c, em))
		return -EINVAL;
	s->rodata->unwind_mode = c->unwind_mode;
	s->rodata->fp_walker = a->walker;
#if defined(__x86_64__)
	/* bpf_find_vma() came with bpf_loop() (5.17), which the walker needs.
	 * Tests: notices without mappings, as before them. */
	s->rodata->notice_vmas = a->walker && !opts->test.no_notice_vmas;
#endif
	if (a->kernel_walk) {
		s->rodata->kw_enabled = true;
		s->rodata->kw_verify = opts->test.kwalk_verify;
		s->rodata->kw_base = c->korc.base;
		s->rodata->kw_end = c->korc.end;
		s->rodata->kw_nblocks = c->korc.nblocks;
		s->rodata->kw_tramp0 = c->korc_tramp[0];
		s->rodata->kw_tramp1 = c->korc_tramp[1];
		s->rodata->kw_tramp2 = c->korc_tramp[2];
		bpf_map__set_max_entries(s->maps.korc_ents, c->korc.nents);
		bpf_map__set_max_entries(s->maps.korc_uniq, c->korc.nuniq);
		bpf_map__set_max_entries(s->maps.korc_blocks, c->korc.nblocks);
	}
	if (opts->unwind_max_procs) {
		bpf_map__set_max_entries(s->maps.unwind_procs, opts->unwind_max_procs);
		bpf_map__set_max_entries(s->maps.python_procs, opts->unwind_max_procs);
		bpf_map__set_max_entries(s->maps.hotspot_procs, opts->unwind_max_procs);
	}
	offcpu__configure(c);
	return 0;
}

static void load_error(struct errmsg *em, int err)
{
	if (err == -EPERM || err == -EACCES) {
		errmsg_set(em, err, "loading the BPF program was refused: %s", strerror(-err));
		errmsg_hint(
			em,
			"run as root, or grant CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN on kernels before 5.8)");
	} else if (err == -EMFILE || err == -ENFILE) {
		errmsg_set(em, err,
			   "out of file descriptors loading the BPF program (the limit is %llu)",
			   (unsigned long long)selfstat__fd_limit());
		errmsg_hint(em, FD_LIMIT_HINT);
	} else {
		errmsg_set(em, err, "loading the BPF program failed: %s", strerror(-err));
		errmsg_hint(em, "run with -v -v to see the verifier log");
	}
}

/*
 * Opens, configures and loads the skeleton with the first attempt the kernel
 * takes. Leaves c->skel loaded, or NULL with em set.
 */
static int skel_load(struct collector *c, struct errmsg *em)
{
	/* Tests: the program a kernel without bpf_loop() gets. */
	bool walker_ok = !(c->opts.test.no_walker && c->unwind_mode != UNWIND_MODE_DWARF);
	int err = -ENOENT, walker_err = 0;

	if (!walker_ok)
		c->unwind_mode = UNWIND_MODE_FP;
	if (c->opts.drop_kernel || c->opts.kernel_helper)
		c->kw_err = -ECANCELED; /* -U: no kernel stacks to walk */
	for (size_t i = 0; i < ARRAY_SIZE(load_attempts); i++) {
		const struct load_attempt *a = &load_attempts[i];

		if (!attempt_possible(c, a, walker_ok))
			continue;
		if (!a->walker && walker_err && c->unwind_mode == UNWIND_MODE_AUTO) {
			c->unwind_err = walker_err; /* auto falls back to frame pointers */
			c->unwind_mode = UNWIND_MODE_FP;
		}
		c->skel = profile_bpf__open();
		if (!c->skel) {
			err = -errno;
			errmsg_set(em, err, "cannot open the BPF object: %s", strerror(-err));
			return err;
		}
		err = skel_configure(c, a, em);
		if (err)
			goto out_destroy;
		if (!c->prefill_tried) {
			c->prefill_tried = true;
			/* Tests: the fill after the load, as on a failure here. */
			if (!c->opts.test.no_prefill)
				c->prefill = prefill__start(c);
		}
		if (c->prefill && !prefill__reuse(c->prefill, c->skel)) {
			prefill__free(c->prefill); /* prefill__finish() after the load, then */
			c->prefill = NULL;
		}
		bpf_program__set_autoload(c->skel->progs.kprogs, !c->kprogs_off);
		err = profile_bpf__load(c->skel);
		if (err == -EMFILE || err == -ENFILE) {
			/* Not the program's fault: the next attempts would fail the same way. */
			profile_bpf__destroy(c->skel);
			c->skel = NULL;
			break;
		}
		if (!err) {
			c->fp_walker = a->walker;
			if (!a->kernel_walk && !c->kw_err)
				c->kw_err = -ENOTSUP; /* the ORC walk is part of the walker */
			return 0;
		}
		profile_bpf__destroy(c->skel);
		c->skel = NULL;
		if (!c->kprogs_off) {
			/* Perhaps a kernel without the bpf_prog iterator: the same
			 * attempt once more without the program list. */
			c->kprogs_off = true;
			c->kprogs_err = err;
			i--;
			continue;
		}
		if (a->kernel_walk) {
			c->kw_err = err;
			korc__free(&c->korc);
		}
		if (a->walker)
			walker_err = err;
	}
	load_error(em, err);
	return err;

out_destroy:
	profile_bpf__destroy(c->skel);
	c->skel = NULL;
	return err;
}

/* The -p, -- COMMAND and --cgroup filters. */
static int filters_fill(struct collector *c, struct errmsg *em)
{
	const struct collector_opts *opts = &c->opts;
	uint32_t child = (uint32_t)opts->child;
	int err;

	for (uint32_t i = 0; i <= opts->nr_pids; i++) {
		const uint32_t *pid = i < opts->nr_pids ? &opts->pids[i] : &child;
		uint8_t one = 1;

		if (!*pid)
			continue;
		if (bpf_map__update_elem(c->skel->maps.tgids, pid, sizeof(*pid), &one, sizeof(one),
					 BPF_ANY)) {
			err = -errno;
			errmsg_set(em, err, "cannot add pid %u to the filter: %s", *pid,
				   strerror(-err));
			return err;
		}
	}
	for (uint32_t i = 0; i < opts->nr_cgroups; i++) {
		if (bpf_map__update_elem(c->skel->maps.cgroups, &i, sizeof(i), &opts->cgroup_fds[i],
					 sizeof(int), BPF_ANY)) {
			err = -errno;
			errmsg_set(em, err, "cannot add cgroup %u to the filter: %s", i,
				   strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * The BPF program list (kprogs.bpf.h): an iterator link made while bpfprof
 * still has its capabilities. Kernels without the bpf_prog iterator (before
 * 5.9) load the object without it (skel_load) and go without: kernel frames
 * in BPF programs are then named by kallsyms alone, as before. Not an error.
 */
static void kprogs_open(struct collector *c)
{
	if (c->kprogs_off)
		return;
	c->kprogs_link = bpf_program__attach_iter(c->skel->progs.kprogs, NULL);
	if (!c->kprogs_link)
		c->kprogs_err = -errno;
}

#define KPROGS_MAX_RECORDS (1u << 16) /* programs and functions listed (1 MiB) */

int collector__bpf_progs(struct collector *c, struct bp_kprog **out, size_t *nr)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, err;

	*out = NULL;
	*nr = 0;
	if (!c->kprogs_link)
		return c->kprogs_err ? c->kprogs_err : -EOPNOTSUPP;
	fd = bpf_iter_create(bpf_link__fd(c->kprogs_link));
	if (fd < 0)
		return -errno;
	err = read_fd(fd, KPROGS_MAX_RECORDS * sizeof(**out), &buf, &len);
	close(fd);
	if (err)
		return err == -EFBIG ? -E2BIG : err;
	*out = (struct bp_kprog *)buf; /* malloc'd: aligned for any record */
	*nr = len / sizeof(**out);
	return 0;
}

struct collector *collector__open(const struct collector_opts *opts, struct errmsg *em)
{
	struct collector *c;

	uint64_t t0 = now_ns();

	c = calloc(1, sizeof(*c));
	if (!c) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	c->opts = *opts;
	libbpf_debug_on = opts->libbpf_debug;
	libbpf_set_print(libbpf_print);

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		errmsg_set(
			em, -ENOENT,
			"this kernel has no BTF type information (/sys/kernel/btf/vmlinux is missing)");
		errmsg_hint(
			em,
			"bpfprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.4 or later, as every major distribution ships)");
		goto out_free;
	}
	c->unwind_mode = opts->unwind_mode;
	c->kprogs_off = opts->test.no_kprogs; /* as before 5.9 */
	if (skel_load(c, em))
		goto out_free;
	c->counts_fd[0] = bpf_map__fd(c->skel->maps.counts_0);
	c->counts_fd[1] = bpf_map__fd(c->skel->maps.counts_1);
	c->stacks_fd[0] = bpf_map__fd(c->skel->maps.stacks_0);
	c->stacks_fd[1] = bpf_map__fd(c->skel->maps.stacks_1);
	if (prefill__finish(c, em) || kwalk__fill(c, em) || filters_fill(c, em) ||
	    offcpu__fill(c, em))
		goto out_destroy;

	c->active = 0;
	/* Counters as plain loads (see profile.bpf.c); NULL: read by lookups.
	 * Writable: the hot slots are read and emptied through it, so the
	 * program only uses them once it is there. */
	c->cpu_state =
		map_array(c->skel->maps.cpu_state, PROT_READ | PROT_WRITE, &c->cpu_state_len);
	if (c->cpu_state && !opts->test.no_hot_slots)
		__atomic_store_n(&c->skel->bss->hot_slots, 1, __ATOMIC_SEQ_CST);
	/* Flip at half of the smaller map (a key names up to two stacks): what the
	 * other half holds is what one drain period may bring before a flip. */
	c->flip_at = MIN(bpf_map__max_entries(c->skel->maps.counts_0),
			 bpf_map__max_entries(c->skel->maps.stacks_0) / 2) /
		     2;
	if (drain__open(c, em))
		goto out_destroy;
	kprogs_open(c);
	c->open_ns = now_ns() - t0;
	return c;

out_destroy:
	if (c->cpu_state)
		munmap(c->cpu_state, c->cpu_state_len);
	drain__close(c);
	profile_bpf__destroy(c->skel);
out_free:
	prefill__free(c->prefill);
	korc__free(&c->korc);
	free(c);
	return NULL;
}
