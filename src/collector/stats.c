// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * stats.c - collector__stats(): the program's counters summed over CPUs,
 * the drain's and the load's figures, what the events took.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "collector/collector_int.h"

/* The program's counters on one CPU (the values of its cpu_state). */
bool stats__cpu_counters(struct collector *c, int cpu, uint64_t *v)
{
	size_t vsz = bpf_map__value_size(c->skel->maps.cpu_state);
	uint32_t key = cpu;
	void *buf;

	if (c->cpu_state) {
		/* The program's counters: aligned 8-byte loads; stats[] is the value's first
		 * member. */
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

#define STATS_REUSE_NS	 (50ull * 1000000)
#define MEASURE_FIRST_NS (1000ull * 1000000)
#define MEASURE_EVERY_NS (15000ull * 1000000)

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

		if (!stats__cpu_counters(c, cpu, v))
			continue;
		for (uint32_t i = 0; i < STAT_MAX; i++)
			st->v[i] += v[i];
	}
	if (c->sampling && c->nr_events &&
	    (c->acct.at_ns ? now - c->acct.at_ns >= MEASURE_EVERY_NS
			   : now - c->attach_ns >= MEASURE_FIRST_NS))
		events__measure(c, true);
	st->acct = c->acct;
	st->acct_prev = c->acct_prev;
	st->not_taken_throttled = c->not_taken_throttled;
	st->not_taken_late = c->not_taken_late;
	if (c->opts.offcpu) {
		offcpu__pending(c, &st->offcpu_pending);
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
