// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * collector.c - owns the skeleton: load, perf events, attach, drain.
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
 * pair, so a run never increments an element that is being freed.
 */
#include "collector/collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <bpf/btf.h>

#include "base/errmsg.h"
#include "base/htab.h"
#include "base/selfstat.h"
#include "sym/kallsyms.h"
#include "sym/kbuildid.h"
#include "unwind/korc.h"
#include "unwind/korc_cache.h"
#include "unwind/unwinder.h"
#include "base/util.h"
#include "collector/sampling.h"
#include "collector/slotset.h"
#include "proc/procfs.h"
#include "kread.skel.h"
#include "profile.skel.h"

struct collector {
	struct collector_opts opts;
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	struct event {
		int fd; /* perf event; -1 once closed (the figures below stay) */
		struct bpf_link *link;
		int cpu;
		struct perf_event_mmap_page *ring; /* its records (event_ring()), or NULL */
		uint64_t throttles;		   /* ... of throttling, seen so far */
		uint64_t run_ns;		   /* running time, at the last read */
		uint64_t off_base, steal_base;	   /* its CPU's /proc/stat ticks at attach */
		uint64_t off, steal;		   /* ... at the last read */
	} *events;
	size_t nr_events, cap_events;
	uint32_t active;   /* mirror of bss->active_buf */
	int counts_fd[PROFILE_NR_BUFS];
	int stacks_fd[PROFILE_NR_BUFS];
	collector_proc_fn proc_fn;
	void *proc_ctx;
	uint64_t drains, drain_ns, drain_ns_total, missing_stacks, flips, stacks_read;
	struct htab *stacks_seen; /* stack id -> its copy, read from the active set */
	/* collector__stats() is asked several times a drain (rates, metrics):
	 * its last answer, reused while no drain or detach came in between and
	 * it is younger than STATS_REUSE_NS (each answer reads every event's
	 * count - an IPI to its CPU - and /proc/stat). */
	struct collector_stats last_stats;
	uint64_t last_stats_ns;
	/* What the events took against what they should have (measure()):
	 * measured once sampling has run a second, then at most every
	 * MEASURE_EVERY_NS while sampling: each time costs tens of us of CPU
	 * (2 CPUs: a cold /proc/stat read ~55 us, the event reads ~20-35
	 * more), a good part of a bpfprof top refresh. The last measurement,
	 * the one before, and the profile's samples not taken by cause. */
	struct sampling_figures acct, acct_prev;
	uint64_t attach_ns;
	uint64_t not_taken_throttled, not_taken_late;
	uint64_t *off_now, *steal_now; /* /proc/stat by CPU: idle + iowait, steal; or NULL */
	struct target_cpu {	       /* -p: each target's CPU time (ticks) */
		uint32_t pid;
		uint64_t start;	       /* its start time: the same process */
		uint64_t base, last;   /* at attach, at the last read */
	} *tcpu;
	/* Count slots (profile_abi.h): the arrays' mmaps, and what the drain
	 * knows of the active set's slots. */
	struct bp_slot_region *slot_next;
	uint64_t *slot_counts;
	struct bp_sample_key *slot_keys;
	size_t slot_next_len, slot_counts_len, slot_keys_len;
	uint32_t regions, per_region; /* possible CPUs + 1, slots per region and set */
	uint32_t *taken;	      /* per region: slots taken in the set being read */
	struct slotset *sset;
	size_t flip_at;		/* keys in the active set that make the next drain flip */
	bool sampling;		/* attached: runs may still come */
	uint32_t unwind_mode;	/* in effect (auto falls back to fp if the walker cannot load) */
	int unwind_err;		/* why it fell back */
	bool fp_walker;		/* frame pointers walked by the program, not bpf_get_stack() */
	int chunk_fd[UNWIND_MAX_CHUNKS]; /* unwind slot pool chunks, 0 = none */
	bool chunk0_spare;	/* chunk 0 installed ahead, not asked for yet */
	struct prefill *prefill; /* the map-in-map slots filled during the load */
	bool prefill_tried;
	bool prefilled;		/* ... and they were */
	struct korc korc;	/* kernel ORC table, until it is in the kernel */
	size_t korc_entries;
	uint64_t open_ns, korc_ns; /* collector__open, and the ORC table's part of it */
	bool kprogs_off;	   /* the BPF program list (kprogs.bpf.h) is not loaded */
	struct bpf_link *kprogs_link;
	int kprogs_err;
	int korc_load_err;	/* 0: the table came from the cache, else why not */
	int korc_save_err;	/* built: 0 saved in the cache, else why not */
	uint64_t korc_tramp[3];
	int kw_err;		/* why it does not (0: it does) */
	int ncpu;		/* possible CPUs: entries of cpu_state */
	void *cpu_state;	/* its mmap, NULL: read by lookups (and no hot slots) */
	size_t cpu_state_len;
	bool always_flip;	/* tests: every drain flips (BPFPROF_TEST_ALWAYS_FLIP) */
	struct bpf_link *offcpu_links[2]; /* --off-cpu: sched_switch, sched_process_fork */
	struct bpf_link *target_links[2]; /* -p, -- COMMAND: sched_process_exit, ..._fork */
	uint64_t offcpu_carried;
};

/* --- kernel stacks with the kernel's ORC table (src/unwind/korc.h) --------- */

#if defined(__x86_64__)
#define IS_X86_64 1
#else
#define IS_X86_64 0
#endif

/* The orc_entry layout the walker decodes (KORC_* in profile_abi.h), 6.3+. */
static int orc_layout_ok(void)
{
	static const struct {
		const char *name;
		uint32_t off, bits;
	} want[] = { { "sp_offset", 0, 0 }, { "bp_offset", 16, 0 }, { "sp_reg", 32, 4 },
		     { "bp_reg", 36, 4 },    { "type", 40, 3 },	     { "signal", 43, 1 } };
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id, ok = 0;

	if (!btf)
		return -errno ? -errno : -ENOENT;
	id = btf__find_by_name_kind(btf, "orc_entry", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (!t || t->size != 6 || btf_vlen(t) < ARRAY_SIZE(want)) {
		btf__free(btf);
		return -ENOTSUP;
	}
	m = btf_members(t);
	for (uint32_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *name = btf__name_by_offset(btf, m[i].name_off);

		if (name && !strcmp(name, want[i].name) &&
		    btf_member_bit_offset(t, i) == want[i].off &&
		    btf_member_bitfield_size(t, i) == want[i].bits)
			ok++;
	}
	btf__free(btf);
	return ok == (int)ARRAY_SIZE(want) ? 0 : -ENOTSUP;
}

/* Copies len bytes of kernel memory at addr (kread.bpf.c). */
static int kread(struct kread_bpf *sk, void *dst, uint64_t addr, size_t len)
{
	struct bp_kread_args a = { 0 };

	for (size_t off = 0; off < len;) {
		size_t n = MIN(len - off, sizeof(sk->bss->buf));
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

		a.addr = addr + off;
		a.len = (uint32_t)n;
		if (bpf_prog_test_run_opts(bpf_program__fd(sk->progs.kread), &o))
			return -errno;
		if (o.retval)
			return (int)o.retval;
		memcpy((char *)dst + off, sk->bss->buf, n);
		off += n;
	}
	return 0;
}

/* A kallsyms line for the ORC walker: core kernel symbols only. */
static int take_korc_sym(void *ctx, const struct kallsyms_line *l)
{
	if (!l->module)
		korc__syms_take(ctx, l->name, l->name_len, l->addr);
	return 0;
}

/* Builds c->korc from the running kernel's tables; m: what it was built from. */
static int kw_build(struct collector *c, struct korc_meta *m)
{
	struct korc_syms ks = {0};
	struct kread_bpf *sk = NULL;
	int32_t *ip = NULL;
	uint8_t *orc = NULL;
	char *buf = NULL;
	size_t len, n;
	int err;

	err = read_file("/proc/kallsyms", 256u << 20, &buf, &len);
	if (err)
		return err;
	kallsyms__for_each(buf, len, take_korc_sym, &ks);
	free(buf);
	if (!ks.orc_ip_start || !ks.orc_ip_stop || !ks.orc_start || !ks.stext || !ks.etext ||
	    ks.orc_ip_stop <= ks.orc_ip_start)
		return -ENOENT; /* no ORC (frame-pointer kernel), or kptr_restrict */
	err = orc_layout_ok();
	if (err)
		return err;
	n = (ks.orc_ip_stop - ks.orc_ip_start) / 4;
	if (n > (8u << 20))
		return -E2BIG;
	ip = malloc(n * 4);
	orc = malloc(n * 6);
	sk = kread_bpf__open_and_load();
	if (!sk)
		err = -errno;
	else if (!ip || !orc)
		err = -ENOMEM;
	else
		err = kread(sk, ip, ks.orc_ip_start, n * 4);
	if (!err)
		err = kread(sk, orc, ks.orc_start, n * 6);
	if (!err)
		err = korc__build(ip, orc, (uint32_t)n, ks.orc_ip_start, ks.stext, ks.etext, &c->korc);
	kread_bpf__destroy(sk);
	free(ip);
	free(orc);
	*m = (struct korc_meta){ .stext = ks.stext, .orc_ip_start = ks.orc_ip_start,
				 .orc_start = ks.orc_start, .nr_orc = (uint32_t)n };
	memcpy(m->tramp, ks.trampolines, sizeof(m->tramp));
	return err;
}

static int take_stext(void *ctx, const struct kallsyms_line *l)
{
	if (!l->module && l->name_len == 6 && !memcmp(l->name, "_stext", 6)) {
		*(uint64_t *)ctx = l->addr;
		return -1; /* found: stop */
	}
	return 0;
}

/*
 * _stext, from the head of /proc/kallsyms: the core kernel's text comes
 * first, so a few lines do, where the whole file costs tens of milliseconds.
 */
static int kallsyms_stext(uint64_t *stext)
{
	char buf[16384];
	ssize_t n;
	char *nl;
	int fd;

	*stext = 0;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	nl = memrchr(buf, '\n', (size_t)n);
	if (nl)
		kallsyms__for_each(buf, (size_t)(nl - buf), take_stext, stext);
	return *stext ? 0 : -ENOENT; /* 0: not among the first lines, or addresses hidden */
}

static uint64_t orc_raw(const uint8_t *e)
{
	uint64_t v = 0;

	for (int i = 5; i >= 0; i--)
		v = v << 8 | e[i];
	return v;
}

/*
 * A table from the cache must say what the kernel's own table says: entries
 * spread over the whole table are read from kernel memory and looked up.
 * 0, or -ESTALE at the first disagreement.
 */
#define KW_CHECKS 64

static int kw_check(const struct korc *k, const struct korc_meta *m)
{
	struct kread_bpf *sk;
	int err = 0, checked = 0;

	if (m->nr_orc < 2)
		return -ESTALE;
	sk = kread_bpf__open_and_load();
	if (!sk)
		return -errno;
	for (uint32_t j = 0; j < KW_CHECKS && !err; j++) {
		uint32_t i = (uint32_t)((uint64_t)j * (m->nr_orc - 1) / KW_CHECKS);
		int32_t rel[2];
		uint8_t e[6];
		uint64_t ip, next, raw;

		err = kread(sk, rel, m->orc_ip_start + 4ull * i, sizeof(rel));
		if (!err)
			err = kread(sk, e, m->orc_start + 6ull * i, sizeof(e));
		if (err)
			break;
		ip = m->orc_ip_start + 4ull * i + (int64_t)rel[0];
		next = m->orc_ip_start + 4ull * (i + 1) + (int64_t)rel[1];
		if (ip < m->stext || ip >= k->end || next == ip)
			continue; /* outside the walked range, or a later entry wins */
		if (korc__lookup(k, ip, &raw) || raw != orc_raw(e))
			err = -ESTALE;
		checked++;
	}
	kread_bpf__destroy(sk);
	return err ? err : checked >= KW_CHECKS / 2 ? 0 : -ESTALE;
}

/*
 * c->korc: from the cache for this kernel build if it is there and agrees
 * with the kernel (unwind/korc_cache.h), else built from the kernel's
 * tables and saved there for the next start. 0 or -errno.
 */
static int kw_prepare(struct collector *c)
{
	char bid[BUILDID_HEX_MAX], path[PATH_MAX] = "";
	struct korc_meta m;
	uint64_t stext;
	int err;

	if (!IS_X86_64)
		return -ENOTSUP; /* the walker and the orc_entry decoding are x86-64's */
	err = buildid__kernel(bid);
	if (!err)
		err = kallsyms_stext(&stext);
	if (!err)
		err = korc_cache__path(bid, path, sizeof(path));
	if (!err)
		err = korc_cache__load(path, bid, stext, &c->korc, &m);
	if (!err)
		err = kw_check(&c->korc, &m);
	c->korc_load_err = c->korc_save_err = err;
	if (!err) {
		memcpy(c->korc_tramp, m.tramp, sizeof(c->korc_tramp));
		return 0;
	}
	korc__free(&c->korc);
	err = kw_build(c, &m);
	memcpy(c->korc_tramp, m.tramp, sizeof(c->korc_tramp));
	if (!err && path[0])
		c->korc_save_err = korc_cache__save(path, bid, &c->korc, &m);
	return err;
}

/* Maps an mmapable array map whole; *len: the mapping's length. */
static void *map_array(struct bpf_map *m, int prot, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*len = (size_t)bpf_map__value_size(m) * bpf_map__max_entries(m);
	*len = (*len + page - 1) / page * page;
	p = mmap(NULL, *len, prot, MAP_SHARED, bpf_map__fd(m), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Writes an mmapable array's contents. */
static int fill_mmap(struct bpf_map *m, const void *data, size_t len)
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

#define FD_LIMIT_HINT "raise it with 'ulimit -n 4096' (LimitNOFILE= in a systemd unit)"

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

		c->kw_err = kw_prepare(c);
		c->korc_ns = now_ns() - t0;
	}
	return !c->kw_err;
}

/* --- --off-cpu (the off-CPU section of bpf/profile.bpf.c) ------------------ */

/* The programs load only with --off-cpu; the fork tracker only with targets. */
static void offcpu_configure(struct collector *c)
{
	const struct collector_opts *o = &c->opts;
	bool targets = o->nr_pids || o->child;

	bpf_program__set_autoload(c->skel->progs.offcpu_switch, o->offcpu);
	bpf_program__set_autoload(c->skel->progs.offcpu_flush, o->offcpu);
	bpf_program__set_autoload(c->skel->progs.offcpu_fork, o->offcpu && targets);
	if (!o->offcpu) { /* the maps exist anyway: keep them small */
		bpf_map__set_max_entries(c->skel->maps.offcpu_tasks, 1);
		bpf_map__set_max_entries(c->skel->maps.offcpu_tgids, 1);
		return;
	}
	c->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	c->skel->rodata->self_tgid = (uint32_t)getpid();
	c->skel->rodata->offcpu_filter_tgids = targets;
	c->skel->rodata->offcpu_filter_cpus = o->cpus != NULL;
	{
		/* Slots are tid & mask: a power of two, at least what was asked. */
		uint32_t n = 16;

		while (n < (o->offcpu_tasks ? o->offcpu_tasks : OFFCPU_DEFAULT_TASKS) &&
		       n < (1u << 22))
			n <<= 1;
		bpf_map__set_max_entries(c->skel->maps.offcpu_tasks, n);
		c->skel->rodata->offcpu_slot_mask = n - 1;
	}
	bpf_map__set_max_entries(c->skel->maps.offcpu_cpus, c->ncpu > 0 ? c->ncpu : 1);
}

/* Targets and CPUs into their filter maps, after load. */
static int offcpu_fill(struct collector *c, struct errmsg *em)
{
	const struct collector_opts *o = &c->opts;
	int tfd = bpf_map__fd(c->skel->maps.offcpu_tgids);
	uint64_t any = 0;
	uint8_t yes = 1;
	int err;

	if (!o->offcpu)
		return 0;
	for (size_t i = 0; i < o->nr_pids; i++)
		if (bpf_map_update_elem(tfd, &o->pids[i], &any, BPF_ANY))
			goto fail;
	if (o->child) {
		uint32_t pid = (uint32_t)o->child;

		if (bpf_map_update_elem(tfd, &pid, &any, BPF_ANY))
			goto fail;
	}
	for (int cpu = 0; o->cpus && cpu < o->nr_cpus && cpu < c->ncpu; cpu++) {
		uint32_t k = (uint32_t)cpu;

		if (o->cpus[cpu] &&
		    bpf_map_update_elem(bpf_map__fd(c->skel->maps.offcpu_cpus), &k, &yes, BPF_ANY))
			goto fail;
	}
	return 0;
fail:
	err = -errno;
	errmsg_set(em, err, "cannot fill the off-CPU filters: %s", strerror(-err));
	return err;
}

static int offcpu_attach(struct collector *c, struct errmsg *em)
{
	struct bpf_program *progs[2] = { c->skel->progs.offcpu_switch, c->skel->progs.offcpu_fork };
	static const char *const what[2] = { "sched_switch", "sched_process_fork" };

	if (!c->opts.offcpu)
		return 0;
	for (int i = 0; i < 2; i++) {
		int err;

		if (!bpf_program__autoload(progs[i]))
			continue;
		c->offcpu_links[i] = bpf_program__attach(progs[i]);
		if (!c->offcpu_links[i]) {
			err = -errno;
			c->offcpu_links[i] = NULL;
			errmsg_set(em, err, "attaching the off-CPU program to the %s tracepoint failed: %s",
				   what[i], strerror(-err));
			errmsg_hint(em, "--off-cpu needs BTF-typed tracepoints (tp_btf, Linux 5.5+)");
			return err;
		}
	}
	return 0;
}

/* Waits still going are counted up to now (offcpu_flush in profile.bpf.c):
 * one run of the task iterator, while the switch program still runs. */
static void offcpu_flush(struct collector *c)
{
	struct bpf_link *link;
	char buf[64];
	int fd;

	if (!c->offcpu_links[0])
		return;
	link = bpf_program__attach_iter(c->skel->progs.offcpu_flush, NULL);
	if (!link)
		return; /* the waits stay pending, and are reported so */
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd >= 0) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	bpf_link__destroy(link);
}

static void offcpu_detach(struct collector *c)
{
	offcpu_flush(c);
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(c->offcpu_links[i]);
		c->offcpu_links[i] = NULL;
	}
}

/* Calls fn for every wait in the task table (slots in use); fn returns 0 or
 * -errno. Reads the table through an mmap: a few hundred KiB, no syscalls
 * per entry. A slot changing under the scan is seen before or after. */
static int offcpu_tasks_each(struct collector *c,
			     int (*fn)(struct collector *c, const struct bp_offcpu_task *t, void *arg),
			     void *arg)
{
	const volatile struct bp_offcpu_task *tab;
	size_t len, n = bpf_map__max_entries(c->skel->maps.offcpu_tasks);
	int err = 0;

	tab = map_array(c->skel->maps.offcpu_tasks, PROT_READ, &len);
	if (!tab)
		return -errno;
	for (size_t i = 0; i < n && !err; i++) {
		struct bp_offcpu_task t;

		t.tid = tab[i].tid;
		if (!t.tid)
			continue;
		t.ts = tab[i].ts;
		t.ustack = tab[i].ustack;
		t.flags = tab[i].flags;
		err = fn(c, &t, arg);
	}
	munmap((void *)tab, len);
	return err;
}

static int count_task(struct collector *c, const struct bp_offcpu_task *t, void *arg)
{
	(*(uint64_t *)arg)++;
	return 0;
}

struct carry {
	int from, to;
	struct bp_stack st;
};

/* The user stack of a blocked task, into the new set (see profile.bpf.c, --off-cpu). */
static int carry_task(struct collector *c, const struct bp_offcpu_task *t, void *arg)
{
	struct carry *ca = arg;

	if (t->ustack == STACK_ID_NONE || bpf_map_lookup_elem(ca->from, &t->ustack, &ca->st))
		return 0;
	if (!bpf_map_update_elem(ca->to, &t->ustack, &ca->st, BPF_NOEXIST))
		c->offcpu_carried++;
	return 0; /* EEXIST: there already; E2BIG: its resume counts the loss */
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
	uint64_t want = c->opts.max_counts ? c->opts.max_counts
					   : bpf_map__max_entries(s->maps.counts_0);
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

/* Maps the count slot arrays (read and emptied in place) and starts the drain's view. */
static int slots_open(struct collector *c, struct errmsg *em)
{
	struct profile_bpf *s = c->skel;

	c->slot_next = map_array(s->maps.slot_next, PROT_READ | PROT_WRITE, &c->slot_next_len);
	c->slot_counts = map_array(s->maps.slot_counts, PROT_READ | PROT_WRITE,
				   &c->slot_counts_len);
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

static void slots_close(struct collector *c)
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

/* Filters are read-only data, map sizes are set before load. */
static int skel_configure(struct collector *c, const struct load_attempt *a,
			  struct errmsg *em)
{
	const struct collector_opts *opts = &c->opts;
	struct profile_bpf *s = c->skel;

	s->rodata->filter_tgids = opts->nr_pids > 0 || opts->child;
	s->rodata->drop_kernel = opts->drop_kernel;
	s->rodata->drop_user = opts->drop_user;
	s->rodata->include_idle = opts->include_idle;
	s->rodata->per_thread = opts->per_thread;
	/* Tests: what a kernel without task_struct.in_execve runs. */
	s->rodata->execve_by_mm = getenv("BPFPROF_TEST_EXECVE_BY_MM") != NULL;
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
	 * Tests: a smaller room (BPFPROF_TEST_TARGETS_MAX). */
	if (opts->child) {
		const char *t = getenv("BPFPROF_TEST_TARGETS_MAX");

		bpf_map__set_max_entries(s->maps.tgids, t ? (uint32_t)atoi(t) : TARGETS_FOLLOWED_MAX);
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
	s->rodata->notice_vmas = a->walker && !getenv("BPFPROF_TEST_NO_NOTICE_VMAS");
#endif
	if (a->kernel_walk) {
		s->rodata->kw_enabled = true;
		s->rodata->kw_verify = getenv("BPFPROF_TEST_KWALK_VERIFY") != NULL;
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
	}
	offcpu_configure(c);
	return 0;
}

static void load_error(struct errmsg *em, int err)
{
	if (err == -EPERM || err == -EACCES) {
		errmsg_set(em, err, "loading the BPF program was refused: %s", strerror(-err));
		errmsg_hint(em, "run as root, or grant CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN on kernels before 5.8)");
	} else if (err == -EMFILE || err == -ENFILE) {
		errmsg_set(em, err, "out of file descriptors loading the BPF program (the limit is %llu)",
			   (unsigned long long)selfstat__fd_limit());
		errmsg_hint(em, FD_LIMIT_HINT);
	} else {
		errmsg_set(em, err, "loading the BPF program failed: %s", strerror(-err));
		errmsg_hint(em, "run with -v -v to see the verifier log");
	}
}

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

static int uw_chunk_map(void)
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
 * slots_fill() after the load, as before.
 */
struct prefill {
	int fd[7]; /* counts_0/1, stacks_0/1, counts, stacks, unwind_chunks */
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
static void prefill_free(struct prefill *p)
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
static struct prefill *prefill_start(struct collector *c)
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
		p->f[p->nr++] = (struct slot_fill){ .outer = p->fd[4], .inner = p->fd[i], .idx = i };
		p->f[p->nr++] = (struct slot_fill){ .outer = p->fd[5], .inner = p->fd[2 + i],
						    .idx = i };
	}
	if (p->fd[6] >= 0)
		p->f[p->nr++] = (struct slot_fill){ .outer = p->fd[6], .inner = p->chunk0, .idx = 0 };
	p->joined = false;
	for (size_t i = 0; i < p->nr; i++)
		p->started[i] = !pthread_create(&p->th[i], NULL, slot_fill_run, &p->f[i]);
	return p;
fail:
	prefill_free(p);
	return NULL;
}

/* Hands the pre-made maps to a (re)opened skeleton; false if libbpf refused. */
static bool prefill_reuse(struct prefill *p, struct profile_bpf *s)
{
	struct bpf_map *m[7] = { s->maps.counts_0, s->maps.counts_1, s->maps.stacks_0,
				 s->maps.stacks_1, s->maps.counts,   s->maps.stacks,
				 s->maps.unwind_chunks };

	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		if (p->fd[i] >= 0 && bpf_map__reuse_fd(m[i], p->fd[i]))
			return false;
	return true;
}

/*
 * Opens, configures and loads the skeleton with the first attempt the kernel
 * takes. Leaves c->skel loaded, or NULL with em set.
 */
static int skel_load(struct collector *c, struct errmsg *em)
{
	/* Tests: the program a kernel without bpf_loop() gets. */
	bool walker_ok = !(getenv("BPFPROF_TEST_NO_WALKER") && c->unwind_mode != UNWIND_MODE_DWARF);
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
			if (!getenv("BPFPROF_TEST_NO_PREFILL"))
				c->prefill = prefill_start(c);
		}
		if (c->prefill && !prefill_reuse(c->prefill, c->skel)) {
			prefill_free(c->prefill); /* slots_fill() after the load, then */
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

/* Hands the kernel ORC table to its maps, then drops the copy. */
static int korc_fill(struct collector *c, struct errmsg *em)
{
	int err;

	if (!c->skel->rodata->kw_enabled)
		return 0;
	err = fill_mmap(c->skel->maps.korc_ents, c->korc.ents,
			c->korc.nents * sizeof(*c->korc.ents));
	if (!err)
		err = fill_mmap(c->skel->maps.korc_uniq, c->korc.uniq,
				c->korc.nuniq * sizeof(*c->korc.uniq));
	if (!err)
		err = fill_mmap(c->skel->maps.korc_blocks, c->korc.blocks,
				c->korc.nblocks * sizeof(*c->korc.blocks));
	if (err) {
		errmsg_set(em, err, "cannot fill the kernel unwind table: %s", strerror(-err));
		return err;
	}
	c->korc_entries = c->korc.nents;
	korc__free(&c->korc);
	return 0;
}

static int slots_fill(struct collector *c, struct errmsg *em)
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

				bpf_map_delete_elem(bpf_map__fd(c->skel->maps.unwind_chunks), &zero);
			}
		}
		prefill_free(p);
		if (ok) {
			c->prefilled = true;
			return 0;
		}
	}

	for (uint32_t i = 0; i < PROFILE_NR_BUFS; i++) {
		f[2 * i] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.counts),
					       .inner = c->counts_fd[i], .idx = i };
		f[2 * i + 1] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.stacks),
						   .inner = c->stacks_fd[i], .idx = i };
	}
	/* The unwinder's first table chunk too: it asks for one at once (the
	 * vDSO's table), and installing it alone would wait a grace period more. */
	if (c->unwind_mode != UNWIND_MODE_FP && c->fp_walker) {
		int fd = uw_chunk_map();

		if (fd >= 0) {
			c->chunk_fd[0] = fd;
			c->chunk0_spare = true;
			f[nr++] = (struct slot_fill){ .outer = bpf_map__fd(s->maps.unwind_chunks),
						      .inner = fd, .idx = 0 };
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
		errmsg_set(em, -ENOENT,
			   "this kernel has no BTF type information (/sys/kernel/btf/vmlinux is missing)");
		errmsg_hint(em, "bpfprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.4 or later, as every major distribution ships)");
		goto out_free;
	}
	c->unwind_mode = opts->unwind_mode;
	c->always_flip = getenv("BPFPROF_TEST_ALWAYS_FLIP") != NULL;
	c->kprogs_off = getenv("BPFPROF_TEST_NO_KPROGS") != NULL; /* as before 5.9 */
	if (skel_load(c, em))
		goto out_free;
	c->counts_fd[0] = bpf_map__fd(c->skel->maps.counts_0);
	c->counts_fd[1] = bpf_map__fd(c->skel->maps.counts_1);
	c->stacks_fd[0] = bpf_map__fd(c->skel->maps.stacks_0);
	c->stacks_fd[1] = bpf_map__fd(c->skel->maps.stacks_1);
	if (slots_fill(c, em) || korc_fill(c, em) || filters_fill(c, em) || offcpu_fill(c, em))
		goto out_destroy;

	c->active = 0;
	/* Counters as plain loads (see profile.bpf.c); NULL: read by lookups.
	 * Writable: the hot slots are read and emptied through it, so the
	 * program only uses them once it is there. */
	c->cpu_state = map_array(c->skel->maps.cpu_state, PROT_READ | PROT_WRITE,
				 &c->cpu_state_len);
	if (c->cpu_state && !getenv("BPFPROF_TEST_NO_HOT_SLOTS"))
		__atomic_store_n(&c->skel->bss->hot_slots, 1, __ATOMIC_SEQ_CST);
	/* Flip at half of the smaller map (a key names up to two stacks): what the
	 * other half holds is what one drain period may bring before a flip. */
	c->flip_at = MIN(bpf_map__max_entries(c->skel->maps.counts_0),
			 bpf_map__max_entries(c->skel->maps.stacks_0) / 2) / 2;
	if (slots_open(c, em))
		goto out_destroy;
	kprogs_open(c);
	c->open_ns = now_ns() - t0;
	return c;

out_destroy:
	if (c->cpu_state)
		munmap(c->cpu_state, c->cpu_state_len);
	slots_close(c);
	profile_bpf__destroy(c->skel);
out_free:
	prefill_free(c->prefill);
	korc__free(&c->korc);
	free(c);
	return NULL;
}

static int perf_event_open_cpu_clock(uint32_t freq, int cpu)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq;
	attr.disabled = 1; /* enabled once the program is attached: no run unseen */
	/* How long the event ran: what it should have sampled (measure()). */
	attr.read_format = PERF_FORMAT_TOTAL_TIME_RUNNING;
	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * The event's ring: the kernel writes a PERF_RECORD_THROTTLE there each
 * time it throttles the event (and UNTHROTTLE when it lets it go). Nothing
 * else: the program returns 0, so no sample is written. One data page; a
 * full ring drops records, and says how many (PERF_RECORD_LOST). NULL if it
 * cannot be had (locked memory): whether the kernel throttled is unknown.
 */
static struct perf_event_mmap_page *event_ring(int fd)
{
	void *p = mmap(NULL, 2 * (size_t)getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Counts the throttling records that came since the last call, and lets them go. */
static void event_throttles(struct event *e)
{
	struct perf_event_mmap_page *m = e->ring;
	const unsigned char *data;
	uint64_t head, tail, size;

	if (!m)
		return;
	data = (const unsigned char *)m + getpagesize();
	size = (uint64_t)getpagesize();
	head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	/* Records are 8-byte aligned in a ring of whole pages: a header, and
	 * each u64 field, lies in one piece. */
	for (tail = m->data_tail; tail < head;) {
		struct perf_event_header h;

		memcpy(&h, data + tail % size, sizeof(h));
		if (h.size < sizeof(h))
			break; /* cannot happen; never spin */
		if (h.type == PERF_RECORD_THROTTLE) {
			e->throttles++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t lost;

			memcpy(&lost, data + (tail + sizeof(h) + 8) % size, sizeof(lost));
			e->throttles += (lost + 1) / 2; /* throttle, unthrottle, ... */
		}
		tail += h.size;
	}
	__atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
}

/*
 * Idle + iowait and steal ticks (USER_HZ) of every CPU from /proc/stat: time
 * in which a CPU ran nothing, and time the hypervisor ran something else.
 * 0 or -errno.
 */
static int read_cpu_ticks(uint64_t *off, uint64_t *steal, int n)
{
	char *buf, *line, *save = NULL;
	int err = read_file("/proc/stat", 1 << 20, &buf, NULL);

	if (err)
		return err;
	memset(off, 0, (size_t)n * sizeof(*off));
	memset(steal, 0, (size_t)n * sizeof(*steal));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long cpu, v[8];

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		/* cpuN user nice system idle iowait irq softirq steal ... */
		if (sscanf(line + 3, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
			continue;
		if (cpu < (unsigned long long)n) {
			off[cpu] = v[3] + v[4];
			steal[cpu] = v[7];
		}
	}
	free(buf);
	return 0;
}

static uint64_t tick_ns(void)
{
	long t = sysconf(_SC_CLK_TCK);

	return 1000000000ULL / (t > 0 ? (uint64_t)t : 100);
}

/* The events' period: the kernel turns cpu-clock's frequency into a fixed
 * hrtimer period of 1e9 / F ns, at least 10 us. */
static uint64_t period_of(uint32_t freq)
{
	uint64_t p = freq ? 1000000000ULL / freq : 1000000000ULL;

	return p < 10000 ? 10000 : p;
}

/* Event e's running time now (its last one once closed). */
static uint64_t event_run_ns(struct event *e)
{
	uint64_t v[2]; /* value, time running */

	if (e->fd >= 0 && read(e->fd, v, sizeof(v)) == (ssize_t)sizeof(v))
		e->run_ns = v[1];
	return e->run_ns;
}

static int add_event(struct collector *c, int pfd, struct errmsg *em, const char *what)
{
	struct bpf_link *link;
	int err;

	if (array_grow((void **)&c->events, &c->cap_events, c->nr_events + 1, sizeof(*c->events))) {
		close(pfd);
		return errmsg_set(em, -ENOMEM, "out of memory");
	}
	link = bpf_program__attach_perf_event(c->skel->progs.do_sample, pfd);
	if (!link) {
		err = -errno;
		close(pfd);
		errmsg_set(em, err, "attaching the BPF program to %s failed: %s", what,
			   strerror(-err));
		return err;
	}
	c->events[c->nr_events++] = (struct event){ .fd = pfd, .link = link, .cpu = -1 };
	return 0;
}

static void perf_open_error(struct errmsg *em, int err, const char *what)
{
	if (err == -EACCES || err == -EPERM) {
		errmsg_set(em, err, "perf_event_open for %s was refused: %s", what, strerror(-err));
		errmsg_hint(em, "run as root, or grant CAP_PERFMON (or lower kernel.perf_event_paranoid)");
	} else if (err == -EMFILE || err == -ENFILE) {
		errmsg_set(em, err,
			   "out of file descriptors opening the perf event for %s (the limit is %llu)",
			   what, (unsigned long long)selfstat__fd_limit());
		errmsg_hint(em, FD_LIMIT_HINT);
	} else {
		errmsg_set(em, err, "perf_event_open for %s failed: %s", what, strerror(-err));
		if (err == -EINVAL)
			errmsg_hint(em, "check -F against kernel.perf_event_max_sample_rate");
	}
}

static bool cpu_online(int cpu)
{
	char path[64], *buf;
	bool online = true;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (!read_file(path, 64, &buf, NULL)) {
		online = buf[0] != '0';
		free(buf);
	}
	return online; /* cpu0 usually has no "online" file: it cannot go offline */
}

static int attach_cpus(struct collector *c, struct errmsg *em)
{
	int nr = libbpf_num_possible_cpus();
	char what[32];

	if (nr < 0) {
		errmsg_set(em, nr, "cannot count the possible CPUs: %s", strerror(-nr));
		return nr;
	}
	/* Where the CPUs' idle and steal time stand (measure()): read before
	 * the events start, so idle time they never ran in only makes what
	 * they should take smaller. */
	c->off_now = calloc((size_t)nr, sizeof(*c->off_now));
	c->steal_now = calloc((size_t)nr, sizeof(*c->steal_now));
	if (!c->off_now || !c->steal_now || read_cpu_ticks(c->off_now, c->steal_now, nr)) {
		free(c->off_now);
		free(c->steal_now);
		c->off_now = c->steal_now = NULL;
	}
	c->attach_ns = now_ns();
	for (int cpu = 0; cpu < nr; cpu++) {
		struct event *e;
		int pfd, err;

		if (c->opts.cpus && (cpu >= c->opts.nr_cpus || !c->opts.cpus[cpu]))
			continue;
		pfd = perf_event_open_cpu_clock(c->opts.freq, cpu);
		if (pfd < 0) {
			err = -errno;
			if (err == -ENODEV || !cpu_online(cpu))
				continue; /* offline CPU */
			snprintf(what, sizeof(what), "CPU %d", cpu);
			perf_open_error(em, err, what);
			return err;
		}
		snprintf(what, sizeof(what), "CPU %d", cpu);
		err = add_event(c, pfd, em, what);
		if (err)
			return err;
		e = &c->events[c->nr_events - 1];
		e->cpu = cpu;
		e->ring = event_ring(pfd);
		if (c->off_now) {
			e->off_base = e->off = c->off_now[cpu];
			e->steal_base = e->steal = c->steal_now[cpu];
		}
	}
	if (!c->nr_events) {
		errmsg_set(em, -ENODEV, "none of the selected CPUs is online");
		errmsg_hint(em, "check -C against /sys/devices/system/cpu/online");
		return -ENODEV;
	}
	return 0;
}

/*
 * Targets (-p, -- COMMAND) are kept in the tgids map by the sampler's filter;
 * these keep the map right: the command's new processes join it, exited
 * processes leave it. Attached before the events, and before the command
 * runs, so no descendant escapes.
 */
static int attach_targets(struct collector *c, struct errmsg *em)
{
	struct bpf_program *progs[2] = { c->skel->progs.target_exit, c->skel->progs.target_fork };
	static const char *const what[2] = { "sched_process_exit", "sched_process_fork" };

	for (int i = 0; i < 2; i++) {
		int err;

		if (!bpf_program__autoload(progs[i]))
			continue;
		c->target_links[i] = bpf_program__attach(progs[i]);
		if (!c->target_links[i]) {
			err = -errno;
			errmsg_set(em, err, "attaching the program that follows the targets to the %s tracepoint failed: %s",
				   what[i], strerror(-err));
			errmsg_hint(em, "-p and -- COMMAND need BTF-typed tracepoints (tp_btf, Linux 5.5+)");
			return err;
		}
	}
	return 0;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;

	if (size < sizeof(struct bp_proc_event) || !c->proc_fn)
		return 0;
	c->proc_fn(c->proc_ctx, data);
	return 0;
}

static size_t targets_read(struct collector *c, bool base);

int collector__attach(struct collector *c, struct errmsg *em)
{
	int err = 0;

	c->sampling = true;

	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), handle_event, c, NULL);
	if (!c->rb) {
		err = -errno;
		errmsg_set(em, err, "cannot set up the ring buffer: %s", strerror(-err));
		return err;
	}

	/* Per-CPU events for every target: -p and -- COMMAND keep their
	 * processes with the program's filter (tgids). */
	err = attach_targets(c, em);
	if (!err)
		err = attach_cpus(c, em);
	/* -p on every CPU: the targets' samples are held against their CPU
	 * time (measure()); under -C they may run where nothing samples. */
	if (!err && c->opts.nr_pids && !c->opts.cpus) {
		c->tcpu = calloc(c->opts.nr_pids, sizeof(*c->tcpu));
		for (size_t i = 0; c->tcpu && i < c->opts.nr_pids; i++)
			c->tcpu[i].pid = c->opts.pids[i];
		/* Sampling runs (the filter has them): gone already, all of them? */
		if (c->tcpu && !targets_read(c, true)) {
			errmsg_set(em, -ESRCH, "process %u does not exist", c->opts.pids[0]);
			errmsg_hint(em, "check the pid with ps");
			err = -ESRCH;
		}
	}
	if (!err)
		err = offcpu_attach(c, em);
	if (err)
		collector__detach(c);
	return err;
}

int collector__poll(struct collector *c, int timeout_ms, collector_proc_fn fn, void *ctx)
{
	int n;

	c->proc_fn = fn;
	c->proc_ctx = ctx;
	n = ring_buffer__poll(c->rb, timeout_ms);
	c->proc_fn = NULL;
	return n;
}

int collector__notice_fd(const struct collector *c)
{
	return ring_buffer__epoll_fd(c->rb);
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
static void forget_stacks(struct collector *c)
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

	return (struct bp_hot_slot *)(v + vsz - sizeof(struct bp_hot_slot) * PROFILE_NR_BUFS *
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
	if (!__atomic_load_n(&c->skel->bss->hot_slots, __ATOMIC_RELAXED) ||
	    !slotset__keys(c->sset))
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
	forget_stacks(c);
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
	bool flip = slots_taken(c, buf) || !c->sampling ||
		    slotset__keys(c->sset) >= c->flip_at || c->always_flip;
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
		struct carry ca = { .from = c->stacks_fd[buf], .to = c->stacks_fd[buf ^ 1] };
		int e0 = offcpu_tasks_each(c, carry_task, &ca);

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

/* The program's counters on one CPU (the values of its cpu_state). */
static bool cpu_counters(struct collector *c, int cpu, uint64_t *v)
{
	size_t vsz = bpf_map__value_size(c->skel->maps.cpu_state);
	uint32_t key = cpu;
	void *buf;

	if (c->cpu_state) {
		/* The program's counters: aligned 8-byte loads; stats[] is the value's first member. */
		const volatile uint64_t *p =
			(const volatile uint64_t *)((const char *)c->cpu_state + (size_t)cpu * vsz);

		for (uint32_t i = 0; i < STAT_MAX; i++)
			v[i] = p[i];
		return true;
	}
	buf = malloc(vsz);
	if (!buf || bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.cpu_state), &key, buf)) {
		free(buf);
		return false;
	}
	memcpy(v, buf, STAT_MAX * sizeof(*v));
	free(buf);
	return true;
}

/*
 * -p: reads the targets' CPU time (/proc/PID/stat: every thread's, the exited
 * ones' too). A target that has exited, or whose pid names another process
 * now, keeps its last reading. With base, where they stand at attach.
 */
static size_t targets_read(struct collector *c, bool base)
{
	size_t found = 0;

	if (!c->tcpu)
		return 0;
	for (size_t i = 0; i < c->opts.nr_pids; i++) {
		struct target_cpu *t = &c->tcpu[i];
		struct proc_stat ps;
		char rel[16];

		snprintf(rel, sizeof(rel), "%u", t->pid);
		if (procfs__stat("/proc", rel, &ps) || (!base && ps.start_time != t->start))
			continue;
		t->last = ps.utime + ps.stime;
		if (base) {
			t->base = t->last;
			t->start = ps.start_time;
		}
		found++;
	}
	return found;
}

/*
 * What the events took against what they should have (collector/sampling.h),
 * CPU by CPU, since attach. Read in this order - the events' running times,
 * /proc/stat, the program's counters - so a sample or an idle tick that comes
 * meanwhile only makes the shortfall smaller. Once the events are closed,
 * their last figures (collector__detach() read them after stopping them).
 */
static void measure(struct collector *c, bool read_targets)
{
	struct sampling_sum sum = { 0 };
	uint64_t period = period_of(c->opts.freq), tick = tick_ns(), throttles = 0;
	uint64_t v[STAT_MAX];
	bool rings = c->nr_events > 0;

	if (read_targets)
		targets_read(c, false);
	for (size_t i = 0; i < c->nr_events; i++)
		event_run_ns(&c->events[i]);
	if (c->sampling && c->off_now && read_cpu_ticks(c->off_now, c->steal_now, c->ncpu)) {
		free(c->off_now);
		free(c->steal_now);
		c->off_now = c->steal_now = NULL;
	}
	for (size_t i = 0; i < c->nr_events; i++) {
		struct event *e = &c->events[i];
		struct sampling_cpu cpu = { .run_ns = e->run_ns };

		if (c->sampling && c->off_now && e->cpu < c->ncpu) {
			e->off = c->off_now[e->cpu];
			e->steal = c->steal_now[e->cpu];
		}
		if (!c->off_now && c->sampling)
			continue; /* idle time unknown: nothing is claimed */
		if (e->cpu >= c->ncpu || !cpu_counters(c, e->cpu, v))
			continue;
		cpu.off_ns = (e->off - MIN(e->off, e->off_base)) * tick;
		cpu.steal_ns = (e->steal - MIN(e->steal, e->steal_base)) * tick;
		cpu.idle = v[STAT_IDLE];
		/* Idle samples kept by --include-idle are in SAMPLES or FILTERED. */
		cpu.busy = v[STAT_SAMPLES] + v[STAT_FILTERED] -
			   (c->opts.include_idle ? MIN(v[STAT_IDLE], v[STAT_SAMPLES] + v[STAT_FILTERED]) : 0);
		cpu.kept = v[STAT_SAMPLES];
		cpu.kept_busy = v[STAT_SAMPLES] - MIN(v[STAT_IDLE_KEPT], v[STAT_SAMPLES]);
		sampling__add(&sum, &cpu, period, tick);
		event_throttles(e);
		throttles += e->throttles;
		rings &= e->ring != NULL;
	}
	c->acct_prev = c->acct;
	sampling__figures(&c->acct, &sum);
	c->acct.at_ns = now_ns();
	c->acct.throttles = throttles;
	c->acct.throttles_known = rings;
	c->acct.period_ns = period;
	if (c->tcpu) {
		c->acct.kept_cpu_known = true;
		for (size_t i = 0; i < c->opts.nr_pids; i++) {
			const struct target_cpu *t = &c->tcpu[i];

			c->acct.kept_cpu_ns += (t->last - MIN(t->last, t->base)) * tick;
			/* user and system time, each truncated at both reads */
			c->acct.kept_cpu_margin += 2 * ((tick + period - 1) / period);
		}
	}
	if (c->acct_prev.at_ns) {
		struct sampling_window w;

		/* The profile's samples not taken, by cause, window by window. */
		sampling__window(&c->acct_prev, &c->acct, &w);
		if (w.throttled)
			c->not_taken_throttled += w.kept_not_taken;
		else
			c->not_taken_late += w.kept_not_taken;
	}
}

#define STATS_REUSE_NS	   (50ull * 1000000)
#define MEASURE_FIRST_NS   (1000ull * 1000000)
#define MEASURE_EVERY_NS   (15000ull * 1000000)

void collector__stats(struct collector *c, struct collector_stats *st)
{
	uint64_t now = now_ns();

	if (c->last_stats_ns && now - c->last_stats_ns < STATS_REUSE_NS) {
		*st = c->last_stats;
		return;
	}
	memset(st, 0, sizeof(*st));
	st->drains = c->drains;
	st->drain_ns = c->drain_ns;
	st->drain_ns_total = c->drain_ns_total;
	st->open_ns = c->open_ns;
	st->korc_ns = c->korc_ns;
	st->slots_prefilled = c->prefilled;
	st->korc_load_err = c->korc_load_err;
	st->korc_save_err = c->korc_save_err;
	st->missing_stacks = c->missing_stacks;
	st->stacks_read = c->stacks_read;
	st->flips = c->flips;
	st->nr_events = c->nr_events;
	st->targets_room = c->opts.child ? bpf_map__max_entries(c->skel->maps.tgids) : 0;
	for (int cpu = 0; cpu < c->ncpu; cpu++) {
		uint64_t v[STAT_MAX];

		if (!cpu_counters(c, cpu, v))
			continue;
		for (uint32_t i = 0; i < STAT_MAX; i++)
			st->v[i] += v[i];
	}
	if (c->sampling && c->nr_events &&
	    (c->acct.at_ns ? now - c->acct.at_ns >= MEASURE_EVERY_NS :
			     now - c->attach_ns >= MEASURE_FIRST_NS))
		measure(c, true);
	st->acct = c->acct;
	st->acct_prev = c->acct_prev;
	st->not_taken_throttled = c->not_taken_throttled;
	st->not_taken_late = c->not_taken_late;
	if (c->opts.offcpu) {
		offcpu_tasks_each(c, count_task, &st->offcpu_pending);
		st->offcpu_evicted = st->v[STAT_OFFCPU_EVICTED];
		st->offcpu_carried = c->offcpu_carried;
	}
	c->last_stats = *st;
	c->last_stats_ns = now;
}

int collector__prog_runtime(struct collector *c, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(c->skel->progs.do_sample), &info, &len))
		return -errno;
	*run_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

void collector__detach(struct collector *c)
{
	if (!c)
		return;
	c->last_stats_ns = 0;
	/* The targets' CPU time before the events stop (what they did after
	 * could not be sampled); the events stopped before their running times
	 * are read, so no sample comes after; /proc/stat after them. */
	if (c->sampling)
		targets_read(c, false);
	for (size_t i = 0; i < c->nr_events; i++)
		if (c->events[i].fd >= 0)
			ioctl(c->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	if (c->sampling && c->nr_events)
		measure(c, false); /* the final figures */
	for (size_t i = 0; i < c->nr_events; i++) {
		struct event *e = &c->events[i];

		if (e->fd < 0)
			continue;
		bpf_link__destroy(e->link);
		if (e->ring)
			munmap(e->ring, 2 * (size_t)getpagesize());
		e->ring = NULL;
		close(e->fd);
		e->fd = -1;
	}
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(c->target_links[i]);
		c->target_links[i] = NULL;
	}
	offcpu_detach(c);
	c->sampling = false;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	collector__detach(c);
	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		if (c->chunk_fd[i] > 0)
			close(c->chunk_fd[i]);
	ring_buffer__free(c->rb);
	slots_close(c);
	forget_stacks(c);
	korc__free(&c->korc);
	if (c->cpu_state)
		munmap(c->cpu_state, c->cpu_state_len);
	bpf_link__destroy(c->kprogs_link);
	profile_bpf__destroy(c->skel);
	free(c->events);
	free(c->off_now);
	free(c->steal_now);
	free(c->tcpu);
	free(c);
}

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
		c->chunk0_spare = false; /* installed with the buffer sets (slots_fill) */
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
	k->pool_changed = uw_pool_changed;
	k->proc_del = uw_proc_del;
}
