// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * count.c - bpfprof count's BPF side: bpf/count.bpf.c's skeleton, its probes
 * and its maps (count.h). The only file of the command that touches libbpf.
 */
#include "collector/count.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "count.skel.h"

struct probe {
	uint32_t fn;
	struct bpf_link *link;
};

struct counter {
	struct count_bpf *skel;
	uint32_t nfuncs;
	int ncpus;
	struct probe *probes;
	size_t nr_probes, cap_probes;
	struct bpf_link *exec_stop;
	struct bpf_link **stops;
	size_t nr_stops, cap_stops;
	void *percpu; /* ncpus values of the largest per-CPU value read */
};

static bool debug_on;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !debug_on)
		return 0;
	if (level == LIBBPF_WARN || debug_on)
		return vfprintf(stderr, fmt, args);
	return 0;
}

struct counter *counter__open(uint32_t nfuncs, bool all_procs, bool libbpf_debug, struct errmsg *em)
{
	struct counter *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	debug_on = libbpf_debug;
	libbpf_set_print(print_fn);
	c->nfuncs = nfuncs ? nfuncs : 1;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0) {
		errmsg_set(em, c->ncpus ? c->ncpus : -EINVAL, "cannot count the possible CPUs");
		goto out_free;
	}
	c->percpu = calloc((size_t)c->ncpus, sizeof(struct count_stat));
	if (!c->percpu) {
		errmsg_set(em, -ENOMEM, "out of memory");
		goto out_free;
	}
	c->skel = count_bpf__open();
	if (!c->skel) {
		errmsg_set(em, -errno, "cannot open the BPF program: %s", strerror(errno));
		goto out_free;
	}
	c->skel->rodata->all_procs = all_procs;
	err = bpf_map__set_max_entries(c->skel->maps.stats, c->nfuncs);
	if (!err)
		err = count_bpf__load(c->skel);
	if (err) {
		errmsg_set(em, err, "cannot load the BPF program: %s", strerror(-err));
		if (err == -EPERM)
			errmsg_hint(em, "run as root (or with CAP_BPF and CAP_PERFMON)");
		goto out_free;
	}
	return c;

out_free:
	counter__free(c);
	return NULL;
}

void counter__detach_stops(struct counter *c)
{
	for (size_t i = 0; i < c->nr_stops; i++)
		bpf_link__destroy(c->stops[i]);
	c->nr_stops = 0;
}

void counter__free(struct counter *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_probes; i++)
		bpf_link__destroy(c->probes[i].link);
	free(c->probes);
	counter__detach_stops(c);
	free(c->stops);
	bpf_link__destroy(c->exec_stop);
	count_bpf__destroy(c->skel);
	free(c->percpu);
	free(c);
}

const char *counter__mode(const struct counter *c)
{
	return "uprobe + uretprobe per function and process (perf-event links; libbpf here has "
	       "no uprobe_multi API)";
}

int counter__target(struct counter *c, uint32_t tgid, bool stop_at_exec)
{
	uint8_t v = stop_at_exec ? COUNT_TARGET_STOP : COUNT_TARGET_ON;

	if (bpf_map__update_elem(c->skel->maps.targets, &tgid, sizeof(tgid), &v, sizeof(v), 0))
		return -errno;
	return 0;
}

int counter__attach_exec_stop(struct counter *c, struct errmsg *em)
{
	c->exec_stop = bpf_program__attach(c->skel->progs.count_exec);
	if (!c->exec_stop) {
		int err = -errno;

		return errmsg_set(em, err, "cannot attach to sched_process_exec: %s",
				  strerror(-err));
	}
	return 0;
}

static struct bpf_link *uprobe(struct bpf_program *prog, bool ret, uint64_t cookie,
			       const char *path, uint64_t off, int pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret, .bpf_cookie = cookie);

	return bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &o);
}

int counter__attach_stop(struct counter *c, const char *path, uint64_t off, int pid,
			 struct errmsg *em)
{
	struct bpf_link *l;

	if (array_grow((void **)&c->stops, &c->cap_stops, c->nr_stops + 1, sizeof(*c->stops)))
		return errmsg_set(em, -ENOMEM, "out of memory");
	l = uprobe(c->skel->progs.count_stop, false, 0, path, off, pid);
	if (!l) {
		int err = -errno;

		return errmsg_set(em, err, "cannot attach a uprobe at the entry point: %s",
				  strerror(-err));
	}
	c->stops[c->nr_stops++] = l;
	return 0;
}

int counter__attach(struct counter *c, uint32_t fn, const char *path, uint64_t off, int pid,
		    struct errmsg *em)
{
	struct bpf_link *in, *out;
	int err;

	if (fn >= c->nfuncs)
		return errmsg_set(em, -EINVAL, "function %u past the %u loaded", fn, c->nfuncs);
	if (array_grow((void **)&c->probes, &c->cap_probes, c->nr_probes + 2, sizeof(*c->probes)))
		return errmsg_set(em, -ENOMEM, "out of memory");
	/* The return probe first: a call entered between the two is a return
	 * without its frame (counted), never a frame without its return. */
	out = uprobe(c->skel->progs.count_return, true, fn, path, off, pid);
	if (!out) {
		err = -errno;
		return errmsg_set(em, err, "uretprobe: %s", strerror(-err));
	}
	in = uprobe(c->skel->progs.count_entry, false, fn, path, off, pid);
	if (!in) {
		err = -errno;
		bpf_link__destroy(out);
		return errmsg_set(em, err, "uprobe: %s", strerror(-err));
	}
	c->probes[c->nr_probes++] = (struct probe){ fn, in };
	c->probes[c->nr_probes++] = (struct probe){ fn, out };
	return 0;
}

void counter__detach(struct counter *c, uint32_t fn)
{
	size_t j = 0;

	for (size_t i = 0; i < c->nr_probes; i++) {
		if (c->probes[i].fn == fn)
			bpf_link__destroy(c->probes[i].link);
		else
			c->probes[j++] = c->probes[i];
	}
	c->nr_probes = j;
}

size_t counter__probes(const struct counter *c)
{
	return c ? c->nr_probes : 0;
}

int counter__read(struct counter *c, uint32_t fn, struct count_stat *out)
{
	struct count_stat *v = c->percpu;
	bool first = true;

	memset(out, 0, sizeof(*out));
	if (bpf_map__lookup_elem(c->skel->maps.stats, &fn, sizeof(fn), v,
				 sizeof(*v) * (size_t)c->ncpus, 0))
		return -errno;
	for (int i = 0; i < c->ncpus; i++) {
		const struct count_stat *s = &v[i];

		out->calls += s->calls;
		if (!s->returns)
			continue;
		if (first || s->min_ns < out->min_ns)
			out->min_ns = s->min_ns;
		first = false;
		if (s->max_ns > out->max_ns)
			out->max_ns = s->max_ns;
		out->returns += s->returns;
		out->total_ns += s->total_ns;
		for (int b = 0; b < COUNT_HIST_BUCKETS; b++)
			out->hist[b] += s->hist[b];
	}
	return 0;
}

int counter__callers(struct counter *c,
		     void (*cb)(void *ctx, const struct count_caller_key *k, uint64_t n), void *ctx)
{
	int fd = bpf_map__fd(c->skel->maps.callers);
	struct count_caller_key k, next;
	uint64_t n;
	void *prev = NULL;

	/* At most the map's capacity: keys deleted meanwhile could restart the walk. */
	for (size_t i = 0; i < COUNT_CALLERS; i++) {
		if (bpf_map_get_next_key(fd, prev, &next))
			return errno == ENOENT ? 0 : -errno;
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(fd, &k, &n))
			cb(ctx, &k, n);
	}
	return 0;
}

void counter__counters(struct counter *c, uint64_t out[COUNT_C_NR])
{
	uint64_t *v = c->percpu;

	for (uint32_t w = 0; w < COUNT_C_NR; w++) {
		out[w] = 0;
		if (bpf_map__lookup_elem(c->skel->maps.counters, &w, sizeof(w), v,
					 sizeof(*v) * (size_t)c->ncpus, 0))
			continue;
		for (int i = 0; i < c->ncpus; i++)
			out[w] += v[i];
	}
}
