// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * collector.c - the collector's life cycle (collector.h): attach, poll,
 * detach, free. Its rooms, each owning one part of struct collector
 * (collector_int.h):
 *
 *   open_load.c    open, configure and load the skeleton, fill its maps
 *   kwalk.c        the kernel's ORC table for the program's kernel stack walk
 *   prefill.c      the map-in-map slots, filled while the verifier runs
 *   events.c       the perf events, and what they took against what they should have
 *   offcpu.c       --off-cpu (bpf/offcpu.bpf.h)
 *   drain.c        the double-buffered drain
 *   stats.c        collector__stats()
 *   unwind_kops.c  the kernel side of src/unwind/unwinder.c
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/collector_int.h"

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
			errmsg_set(
				em, err,
				"attaching the program that follows the targets to the %s tracepoint failed: %s",
				what[i], strerror(-err));
			errmsg_hint(
				em,
				"-p and -- COMMAND need BTF-typed tracepoints (tp_btf, Linux 5.5+)");
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
		err = events__attach(c, em);
	/* -p on every CPU: the targets' samples are held against their CPU
	 * time (events__measure()); under -C they may run where nothing samples. */
	if (!err && c->opts.nr_pids && !c->opts.cpus) {
		c->tcpu = calloc(c->opts.nr_pids, sizeof(*c->tcpu));
		for (size_t i = 0; c->tcpu && i < c->opts.nr_pids; i++)
			c->tcpu[i].pid = c->opts.pids[i];
		/* Sampling runs (the filter has them): gone already, all of them? */
		if (c->tcpu && !events__targets_read(c, true)) {
			errmsg_set(em, -ESRCH, "process %u does not exist", c->opts.pids[0]);
			errmsg_hint(em, "check the pid with ps");
			err = -ESRCH;
		}
	}
	if (!err)
		err = offcpu__attach(c, em);
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

void collector__detach(struct collector *c)
{
	if (!c)
		return;
	c->last_stats_ns = 0;
	deadline__cancel(c); /* before the events' descriptors are closed */
	/* The targets' CPU time before the events stop (what they did after
	 * could not be sampled); the events stopped before their running times
	 * are read, so no sample comes after; /proc/stat after them. */
	if (c->sampling)
		events__targets_read(c, false);
	for (size_t i = 0; i < c->nr_events; i++)
		if (c->events[i].fd >= 0)
			ioctl(c->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	if (c->sampling && c->nr_events)
		events__measure(c, false); /* the final figures */
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
	offcpu__detach(c);
	c->sampling = false;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	collector__detach(c);
	deadline__free(c);
	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		if (c->chunk_fd[i] > 0)
			close(c->chunk_fd[i]);
	ring_buffer__free(c->rb);
	drain__close(c);
	drain__forget_stacks(c);
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
