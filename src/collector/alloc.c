// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * alloc.c - bpfprof --alloc's BPF side: bpf/alloc.bpf.c's skeleton, its
 * probes and maps (alloc.h). The only file of --alloc that touches libbpf.
 */
#include "collector/alloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "alloc.skel.h"
#include "base/util.h"
#include "collector/execstop.h"
#include "collector/uprobe.h"

enum alloc_mode { MODE_PERF, MODE_MULTI, MODE_SESSION };

/* -a, --cgroup: a file's probes as attached (every process), to put them back. */
struct saved_file {
	char path[64]; /* a kernel_path: the file is held open by the caller */
	uint32_t fns[ALLOC_FN_NR];
	uint64_t offs[ALLOC_FN_NR];
	size_t n;
};

struct allocprof {
	struct alloc_bpf *skel;
	enum alloc_mode mode;
	int ncpus;
	int *fds; /* uprobe_multi / session link descriptors */
	size_t nr_fds, cap_fds;
	struct bpf_link **links; /* perf-event probes */
	size_t nr_links, cap_links;
	size_t probes;
	struct execstop stop; /* -- COMMAND's */
	struct ring_buffer *rb;
	void (*cb)(void *ctx, const struct alloc_event *e);
	void *cb_ctx;
	size_t got, max;
	bool all;		  /* -a, --cgroup: probes in every process (pid 0) */
	bool off;		  /* the guard took the probes off */
	struct saved_file *saved; /* -a, --cgroup: what allocprof__probes_on puts back */
	size_t nr_saved, cap_saved;
	uint64_t load_ns; /* the load that succeeded: its wall time (the verifier's mostly) */
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

static int on_event(void *ctx, void *data, size_t size)
{
	struct allocprof *a = ctx;

	if (size < sizeof(struct alloc_event))
		return 0;
	a->cb(a->cb_ctx, data);
	a->got++;
	return a->max && a->got >= a->max ? -EAGAIN : 0; /* < 0 stops the consume */
}

/* The mode's programs: loaded for their attach type, the others left out. */
static int prepare(struct alloc_bpf *s, enum alloc_mode mode)
{
	int err = 0;

	bpf_program__set_autoload(s->progs.alloc_session, mode == MODE_SESSION);
	bpf_program__set_autoload(s->progs.alloc_entry, mode != MODE_SESSION);
	bpf_program__set_autoload(s->progs.alloc_return, mode != MODE_SESSION);
	if (mode == MODE_SESSION)
		err = bpf_program__set_expected_attach_type(s->progs.alloc_session,
							    UPROBE_ATTACH_SESSION);
	if (!err && mode == MODE_MULTI)
		err = bpf_program__set_expected_attach_type(s->progs.alloc_entry,
							    UPROBE_ATTACH_MULTI);
	if (!err && mode == MODE_MULTI)
		err = bpf_program__set_expected_attach_type(s->progs.alloc_return,
							    UPROBE_ATTACH_MULTI);
	return err;
}

struct allocprof *allocprof__open(uint64_t period, bool libbpf_debug, struct errmsg *em)
{
	return allocprof__open_scope(period, NULL, libbpf_debug, em);
}

struct allocprof *allocprof__open_scope(uint64_t period, const struct allocprof_scope *scope,
					bool libbpf_debug, struct errmsg *em)
{
	struct allocprof *a = calloc(1, sizeof(*a));
	const char *force = getenv("BPFPROF_TEST_ALLOC_MODE"); /* tests: "multi", "perf" */
	int mode = MODE_SESSION, err = 0;

	if (!a) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	if (scope && scope->nr_cgroups > ALLOC_CGROUPS) {
		errmsg_set(em, -E2BIG, "at most %u --cgroup options", ALLOC_CGROUPS);
		goto out_free;
	}
	a->all = scope && scope->all;
	debug_on = libbpf_debug;
	libbpf_set_print(print_fn);
	a->ncpus = libbpf_num_possible_cpus();
	if (a->ncpus <= 0) {
		errmsg_set(em, a->ncpus ? a->ncpus : -EINVAL, "cannot count the possible CPUs");
		goto out_free;
	}
	if (force && !strcmp(force, "multi"))
		mode = MODE_MULTI;
	else if (force && !strcmp(force, "perf"))
		mode = MODE_PERF;
	for (; mode >= MODE_PERF; mode--) {
		alloc_bpf__destroy(a->skel);
		a->skel = alloc_bpf__open();
		if (!a->skel) {
			errmsg_set(em, -errno, "cannot open the BPF program: %s", strerror(errno));
			goto out_free;
		}
		/* Gaps of an exponential distribution of mean period: the
		 * midpoints of 65536 equal slices of probability. */
		for (size_t i = 0; i < ALLOC_GAPS; i++)
			a->skel->bss->gaps[i] = (uint64_t)llround(
				-log(((double)i + 0.5) / ALLOC_GAPS) * (double)period);
		a->skel->rodata->all_procs = a->all;
		a->skel->rodata->nr_cgroups = a->all ? scope->nr_cgroups : 0;
		a->skel->rodata->self_tgid = (uint32_t)getpid();
		err = prepare(a->skel, (enum alloc_mode)mode);
		if (!err) {
			uint64_t t = now_ns();

			err = alloc_bpf__load(a->skel);
			a->load_ns = now_ns() - t;
		}
		if (!err) {
			a->mode = (enum alloc_mode)mode;
			break;
		}
		if (err == -EPERM)
			break;
	}
	if (err) {
		errmsg_set(em, err, "cannot load the BPF program: %s", strerror(-err));
		if (err == -EPERM)
			errmsg_hint(em, "run as root (or with CAP_BPF and CAP_PERFMON)");
		goto out_free;
	}
	for (uint32_t i = 0; a->all && i < scope->nr_cgroups; i++) {
		if (bpf_map__update_elem(a->skel->maps.cgroups, &i, sizeof(i),
					 &scope->cgroup_fds[i], sizeof(scope->cgroup_fds[i]), 0)) {
			err = -errno;
			errmsg_set(em, err, "cannot add cgroup %u to the filter: %s", i,
				   strerror(-err));
			goto out_free;
		}
	}
	a->rb = ring_buffer__new(bpf_map__fd(a->skel->maps.events), on_event, a, NULL);
	if (!a->rb) {
		err = -errno;
		errmsg_set(em, err, "cannot open the ring buffer: %s", strerror(-err));
		goto out_free;
	}
	return a;

out_free:
	allocprof__free(a);
	return NULL;
}

void allocprof__detach_stops(struct allocprof *a)
{
	execstop__detach_entries(&a->stop);
}

void allocprof__free(struct allocprof *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nr_links; i++)
		bpf_link__destroy(a->links[i]);
	free(a->links);
	for (size_t i = 0; i < a->nr_fds; i++)
		close(a->fds[i]);
	free(a->fds);
	execstop__free(&a->stop);
	free(a->saved);
	ring_buffer__free(a->rb);
	alloc_bpf__destroy(a->skel);
	free(a);
}

void allocprof__load_cost(const struct allocprof *a, uint64_t *ns, uint64_t *insns)
{
	struct bpf_program *p;

	*ns = a->load_ns;
	*insns = 0;
	bpf_object__for_each_program(p, a->skel->obj)
	{
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			*insns += info.verified_insns;
	}
}

const char *allocprof__mode(const struct allocprof *a)
{
	switch (a->mode) {
	case MODE_SESSION:
		return "session uprobes: one entry program per call, a return probe only for "
		       "sampled calls";
	case MODE_MULTI:
		return "uprobe_multi: an entry probe per call and a return probe per allocation call "
		       "(no session uprobes in this kernel)";
	default:
		return "perf-event uprobes and uretprobes: an entry and a return probe per "
		       "allocation call";
	}
}

int allocprof__target(struct allocprof *a, uint32_t tgid, bool stop_at_exec)
{
	uint8_t v = stop_at_exec ? ALLOC_TARGET_STOP : ALLOC_TARGET_ON;

	if (bpf_map__update_elem(a->skel->maps.targets, &tgid, sizeof(tgid), &v, sizeof(v), 0))
		return -errno;
	return 0;
}

int allocprof__attach_exec_stop(struct allocprof *a, struct errmsg *em)
{
	return execstop__attach_exec(&a->stop, a->skel->progs.alloc_exec, em);
}

static struct bpf_link *uprobe(struct bpf_program *prog, bool ret, uint64_t cookie,
			       const char *path, uint64_t off, int pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret, .bpf_cookie = cookie);

	return bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &o);
}

int allocprof__attach_stop(struct allocprof *a, const char *path, uint64_t off, int pid,
			   struct errmsg *em)
{
	return execstop__attach_entry(&a->stop, a->skel->progs.alloc_stop, path, off, pid, em);
}

static int keep_link(struct allocprof *a, struct bpf_link *l)
{
	if (array_grow((void **)&a->links, &a->cap_links, a->nr_links + 1, sizeof(*a->links))) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	a->links[a->nr_links++] = l;
	return 0;
}

static int keep_fd(struct allocprof *a, int fd)
{
	if (array_grow((void **)&a->fds, &a->cap_fds, a->nr_fds + 1, sizeof(*a->fds))) {
		close(fd);
		return -ENOMEM;
	}
	a->fds[a->nr_fds++] = fd;
	return 0;
}

/* A file's probes attached as a's mode does it; on an error, those attached
 * so far are kept (attach_one takes them back). */
static int attach_all(struct allocprof *a, const char *path, int pid, const uint32_t *fns,
		      const uint64_t *offs, size_t n, struct errmsg *em)
{
	uint64_t cookies[ALLOC_FN_NR], roffs[ALLOC_FN_NR], rcookies[ALLOC_FN_NR];
	size_t nr = 0;
	int fd, err;

	if (n > ALLOC_FN_NR)
		return errmsg_set(em, -EINVAL, "%zu functions, at most %d", n, ALLOC_FN_NR);
	for (size_t i = 0; i < n; i++) {
		cookies[i] = fns[i];
		if (alloc_fn_has_return(fns[i])) { /* free and Go's have none to see */
			roffs[nr] = offs[i];
			rcookies[nr++] = fns[i];
		}
	}
	if (a->mode == MODE_PERF) {
		/* The returns first: a call entered between the two is a
		 * return without its entry (ignored), never the reverse. */
		for (size_t i = 0; i < nr; i++) {
			struct bpf_link *l = uprobe(a->skel->progs.alloc_return, true, rcookies[i],
						    path, roffs[i], pid);

			if (!l || keep_link(a, l))
				goto perf_err;
			a->probes++;
		}
		for (size_t i = 0; i < n; i++) {
			struct bpf_link *l = uprobe(a->skel->progs.alloc_entry, false, cookies[i],
						    path, offs[i], pid);

			if (!l || keep_link(a, l))
				goto perf_err;
			a->probes++;
		}
		return 0;
	perf_err:
		err = errno ? -errno : -ENOMEM;
		return errmsg_set(em, err, "uprobe: %s", strerror(-err));
	}
	if (a->mode == MODE_MULTI && nr) {
		fd = uprobe__link(bpf_program__fd(a->skel->progs.alloc_return), UPROBE_ATTACH_MULTI,
				  true, path, roffs, rcookies, nr, pid);
		if (fd < 0)
			return errmsg_set(em, fd, "uprobe_multi (returns): %s", strerror(-fd));
		err = keep_fd(a, fd);
		if (err)
			return errmsg_set(em, err, "out of memory");
		a->probes += nr;
	}
	fd = uprobe__link(bpf_program__fd(a->mode == MODE_SESSION ? a->skel->progs.alloc_session
								  : a->skel->progs.alloc_entry),
			  a->mode == MODE_SESSION ? UPROBE_ATTACH_SESSION : UPROBE_ATTACH_MULTI,
			  false, path, offs, cookies, n, pid);
	if (fd < 0)
		return errmsg_set(em, fd, "%s: %s",
				  a->mode == MODE_SESSION ? "session uprobe" : "uprobe_multi",
				  strerror(-fd));
	err = keep_fd(a, fd);
	if (err)
		return errmsg_set(em, err, "out of memory");
	a->probes += n;
	return 0;
}

/* The links and descriptors kept from (nl, nf, np) on taken back: a file's
 * attach that failed part way leaves none of its probes. */
static void attach_undo(struct allocprof *a, size_t nl, size_t nf, size_t np)
{
	while (a->nr_links > nl)
		bpf_link__destroy(a->links[--a->nr_links]);
	while (a->nr_fds > nf)
		close(a->fds[--a->nr_fds]);
	a->probes = np;
}

/*
 * A file's probes (n functions fns at offs) in pid (0: every process), all
 * or none: a probe left behind by an attach that failed part way would
 * fire for a file the caller took as not probed, with a cookie (an SBCL
 * runtime's slot) the caller hands to the next one (issue 39).
 */
static int attach_one(struct allocprof *a, const char *path, int pid, const uint32_t *fns,
		      const uint64_t *offs, size_t n, struct errmsg *em)
{
	const size_t nl = a->nr_links, nf = a->nr_fds, np = a->probes;
	int err = attach_all(a, path, pid, fns, offs, n, em);

	if (err)
		attach_undo(a, nl, nf, np);
	return err;
}

int allocprof__attach_file(struct allocprof *a, const char *path, int pid, const uint32_t *fns,
			   const uint64_t *offs, size_t n, struct errmsg *em)
{
	struct saved_file *sf;
	int err;

	if (!a->all)
		return attach_one(a, path, pid, fns, offs, n, em);
	if (n > ALLOC_FN_NR || strlen(path) >= sizeof(sf->path))
		return errmsg_set(em, -EINVAL, "%zu functions at %s: not kept", n, path);
	if (array_grow((void **)&a->saved, &a->cap_saved, a->nr_saved + 1, sizeof(*a->saved)))
		return errmsg_set(em, -ENOMEM, "out of memory");
	if (!a->off) {
		err = attach_one(a, path, 0, fns, offs, n, em);
		if (err)
			return err;
	}
	sf = &a->saved[a->nr_saved++];
	memset(sf, 0, sizeof(*sf));
	strcpy(sf->path, path);
	memcpy(sf->fns, fns, n * sizeof(*fns));
	memcpy(sf->offs, offs, n * sizeof(*offs));
	sf->n = n;
	return 0;
}

static void detach_all(struct allocprof *a)
{
	for (size_t i = 0; i < a->nr_links; i++)
		bpf_link__destroy(a->links[i]);
	a->nr_links = 0;
	for (size_t i = 0; i < a->nr_fds; i++)
		close(a->fds[i]);
	a->nr_fds = 0;
	a->probes = 0;
}

static void set_flag(volatile bool *flag, bool on)
{
	*flag = on;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int allocprof__probes_off(struct allocprof *a)
{
	if (!a->all)
		return -EINVAL;
	if (a->off)
		return 0;
	set_flag(&a->skel->data->enabled, false); /* first: the window ends here */
	detach_all(a);
	a->off = true;
	return 0;
}

void allocprof__pause(struct allocprof *a)
{
	set_flag(&a->skel->data->enabled, false);
}

int allocprof__probes_on(struct allocprof *a, struct errmsg *em)
{
	int err = 0, first = 0;

	if (!a->all)
		return -EINVAL;
	if (!a->off)
		return 0;
	for (size_t i = 0; i < a->nr_saved; i++) {
		const struct saved_file *sf = &a->saved[i];

		err = attach_one(a, sf->path, 0, sf->fns, sf->offs, sf->n, em);
		if (err && !first)
			first = err;
	}
	a->off = false;
	set_flag(&a->skel->data->enabled, true); /* last: the window starts here */
	return first;
}

void allocprof__track_live(struct allocprof *a, bool on)
{
	set_flag(&a->skel->data->track_live, on);
}

size_t allocprof__probes(const struct allocprof *a)
{
	return a ? a->probes : 0;
}

size_t allocprof__fds_per_file(const struct allocprof *a)
{
	size_t probes = 0;

	if (a->mode == MODE_SESSION)
		return 1;
	if (a->mode == MODE_MULTI)
		return 2;
	for (uint32_t fn = 0; fn < ALLOC_FN_NR; fn++)
		probes += 1 + (size_t)alloc_fn_has_return(fn);
	return 2 * probes;
}

/* The descriptors of one file's probes (n functions fns) in a's mode. */
static size_t file_fds(const struct allocprof *a, const uint32_t *fns, size_t n)
{
	size_t ret = 0;

	for (size_t i = 0; i < n; i++)
		ret += (size_t)alloc_fn_has_return(fns[i]);
	if (a->mode == MODE_PERF)
		return 2 * (n + ret);
	return a->mode == MODE_MULTI && ret ? 2 : 1;
}

void allocprof__fds(const struct allocprof *a, size_t *now, size_t *on)
{
	*now = 2 * a->nr_links + a->nr_fds;
	if (!a->all) {
		*on = *now;
		return;
	}
	*on = 0;
	for (size_t i = 0; i < a->nr_saved; i++)
		*on += file_fds(a, a->saved[i].fns, a->saved[i].n);
}

int allocprof__drain(struct allocprof *a, void (*cb)(void *ctx, const struct alloc_event *e),
		     void *ctx, size_t max)
{
	int err;

	a->cb = cb;
	a->cb_ctx = ctx;
	a->got = 0;
	a->max = max;
	err = ring_buffer__consume(a->rb);
	return err < 0 && !a->got ? err : (int)a->got;
}

/*
 * The live table read in batches (a few system calls for 65536 blocks,
 * where a walk by key takes two per block): into keys/vals (cap each),
 * *n of them. 0, or -errno (-EINVAL, -ENOTSUP...: the kernel has no batch
 * for the map; *n then 0).
 */
static int live_batch(int fd, struct alloc_live_key *keys, struct alloc_live *vals, size_t cap,
		      size_t *n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct alloc_live_key in, out; /* the batch token: a hash map's is a bucket (u32) */
	bool first = true;

	*n = 0;
	while (*n < cap) {
		__u32 count = (__u32)(cap - *n);
		int err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys + *n, vals + *n,
					       &count, &opts);

		*n += count;
		if (err)
			return errno == ENOENT ? 0 : -errno;
		in = out;
		first = false;
	}
	return 0;
}

int allocprof__live(struct allocprof *a,
		    bool (*cb)(void *ctx, const struct alloc_live_key *k,
			       const struct alloc_live *v),
		    void *ctx, size_t *deleted)
{
	int fd = bpf_map__fd(a->skel->maps.live), err = 0;
	struct alloc_live_key k, next, *del = NULL, *keys;
	struct alloc_live v, *vals;
	size_t nr_del = 0, cap_del = 0, n = 0;
	void *prev = NULL;

	keys = malloc(ALLOC_LIVE_MAX * sizeof(*keys));
	vals = malloc(ALLOC_LIVE_MAX * sizeof(*vals));
	if (keys && vals && !live_batch(fd, keys, vals, ALLOC_LIVE_MAX, &n)) {
		for (size_t i = 0; i < n; i++)
			if (cb(ctx, &keys[i], &vals[i]) &&
			    !array_grow((void **)&del, &cap_del, nr_del + 1, sizeof(*del)))
				del[nr_del++] = keys[i];
		goto out;
	}
	/* No batch (or no memory for one): a walk by key, at most the map's
	 * capacity (keys deleted meanwhile could restart it). */
	for (size_t i = 0; i < ALLOC_LIVE_MAX; i++) {
		if (bpf_map_get_next_key(fd, prev, &next)) {
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v) || !cb(ctx, &k, &v))
			continue;
		/* deleted after the walk: a key deleted under it would restart it */
		if (!array_grow((void **)&del, &cap_del, nr_del + 1, sizeof(*del)))
			del[nr_del++] = k;
	}
out:
	*deleted = 0;
	for (size_t i = 0; i < nr_del; i++)
		*deleted += !bpf_map_delete_elem(fd, &del[i]);
	free(del);
	free(keys);
	free(vals);
	return err;
}

int allocprof__go_buckets(struct allocprof *a,
			  void (*cb)(void *ctx, const struct alloc_go_bkey *k,
				     const struct alloc_go_bval *v),
			  void *ctx)
{
	enum { CHUNK = 4096 }; /* entries a batch call reads (the map holds ALLOC_GO_BUCKETS) */
	int fd = bpf_map__fd(a->skel->maps.gobuckets), err = 0;
	struct alloc_go_bkey *keys, k, next, in, out;
	struct alloc_go_bval *vals, v;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t n = 0;
	void *prev = NULL;
	bool first = true;

	keys = malloc(CHUNK * sizeof(*keys));
	vals = malloc(CHUNK * sizeof(*vals));
	while (keys && vals && n < ALLOC_GO_BUCKETS) {
		__u32 count = CHUNK;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &count,
					      &opts);
		int e = rc ? errno : 0;

		if (rc && e != ENOENT) {
			if (first) /* no batch: the walk by key below */
				break;
			err = -e; /* part walked: the rest at the next drain */
			goto out;
		}
		for (__u32 i = 0; i < count; i++)
			cb(ctx, &keys[i], &vals[i]);
		n += count;
		if (rc)
			goto out; /* ENOENT: the whole map walked */
		in = out;
		first = false;
	}
	if (keys && vals && !first) {
		err = 0;
		goto out;
	}
	/* No batch: a walk by key, at most the map's capacity. */
	err = 0;
	for (size_t i = 0; i < ALLOC_GO_BUCKETS; i++) {
		if (bpf_map_get_next_key(fd, prev, &next)) {
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(fd, &k, &v))
			cb(ctx, &k, &v);
	}
out:
	free(keys);
	free(vals);
	return err;
}

size_t allocprof__go_forget(struct allocprof *a, const struct alloc_go_bkey *keys, size_t n)
{
	int fd = bpf_map__fd(a->skel->maps.gobuckets);
	int pfd = bpf_map__fd(a->skel->maps.gobucket_procs);
	size_t done = 0;

	for (size_t i = 0; i < n; i++) {
		done += !bpf_map_delete_elem(fd, &keys[i]);
		if (!i || keys[i].tgid != keys[i - 1].tgid)
			bpf_map_delete_elem(pfd, &keys[i].tgid);
	}
	return done;
}

void allocprof__counters(struct allocprof *a, uint64_t out[ALLOC_C_NR])
{
	uint64_t *v = calloc((size_t)a->ncpus, sizeof(*v));

	for (uint32_t w = 0; w < ALLOC_C_NR; w++) {
		out[w] = 0;
		if (!v || bpf_map__lookup_elem(a->skel->maps.counters, &w, sizeof(w), v,
					       sizeof(*v) * (size_t)a->ncpus, 0))
			continue;
		for (int i = 0; i < a->ncpus; i++)
			out[w] += v[i];
	}
	free(v);
}

int allocprof__sbcl_layout(struct allocprof *a, uint32_t slot, const struct alloc_sbcl *l)
{
	if (slot >= ALLOC_SBCL_SLOTS)
		return -ENOSPC;
	return bpf_map__update_elem(a->skel->maps.sbcl, &slot, sizeof(slot), l, sizeof(*l), BPF_ANY)
		       ? -errno
		       : 0;
}
