// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * offcpu.c - --off-cpu: the off-CPU programs (bpf/offcpu.bpf.h), their
 * filters, their task table, and the flush of the waits still going when
 * sampling stops.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/collector_int.h"

/* --- --off-cpu (bpf/offcpu.bpf.h) ------------------------------------------- */

/* The programs load only with --off-cpu; the fork tracker only with targets. */
void offcpu__configure(struct collector *c)
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
int offcpu__fill(struct collector *c, struct errmsg *em)
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

int offcpu__attach(struct collector *c, struct errmsg *em)
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
			errmsg_set(em, err,
				   "attaching the off-CPU program to the %s tracepoint failed: %s",
				   what[i], strerror(-err));
			errmsg_hint(em,
				    "--off-cpu needs BTF-typed tracepoints (tp_btf, Linux 5.5+)");
			return err;
		}
	}
	return 0;
}

/* Waits still going are counted up to now (offcpu_flush in offcpu.bpf.h):
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

void offcpu__detach(struct collector *c)
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
			     int (*fn)(struct collector *c, const struct bp_offcpu_task *t,
				       void *arg),
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

/* The user stack of a blocked task, into the new set (see offcpu.bpf.h). */
static int carry_task(struct collector *c, const struct bp_offcpu_task *t, void *arg)
{
	struct carry *ca = arg;

	if (t->ustack == STACK_ID_NONE || bpf_map_lookup_elem(ca->from, &t->ustack, &ca->st))
		return 0;
	if (!bpf_map_update_elem(ca->to, &t->ustack, &ca->st, BPF_NOEXIST))
		c->offcpu_carried++;
	return 0; /* EEXIST: there already; E2BIG: its resume counts the loss */
}

int offcpu__carry(struct collector *c, int from_fd, int to_fd)
{
	struct carry ca = { .from = from_fd, .to = to_fd };

	return offcpu_tasks_each(c, carry_task, &ca);
}

int offcpu__pending(struct collector *c, uint64_t *n)
{
	return offcpu_tasks_each(c, count_task, n);
}
