// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * count.c - bpfprof count's BPF side: bpf/count.bpf.c's skeleton, its probes
 * and its maps (count.h). The only file of the command that touches libbpf.
 */
#include "collector/count.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "collector/execstop.h"
#include "collector/uprobe.h"
#include "count.skel.h"

/* Not in this libbpf's headers (the kernel's enum bpf_attach_type). */
#define TRACE_UPROBE_MULTI   UPROBE_ATTACH_MULTI   /* kernel 6.6+ */
#define TRACE_UPROBE_SESSION UPROBE_ATTACH_SESSION /* kernel 6.13+ */
#define TRACE_KPROBE_MULTI   42			   /* BPF_TRACE_KPROBE_MULTI */
#define TRACE_KPROBE_SESSION 56			   /* BPF_TRACE_KPROBE_SESSION: kernel 6.10+ */

/* bpf_attr's link_create for kprobe_multi (and kprobe session). */
struct link_create_kprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint32_t km_flags, cnt;
	uint64_t syms, addrs, cookies;
	uint8_t pad[128 - 48];
};

struct probe {
	uint32_t fn;
	struct bpf_link *link;
};

/* uprobe_multi: the links of one file in one process, all its functions. */
struct mlink {
	uint64_t file; /* the caller's key for the file: the same in every process */
	char path[64];
	int pid;
	uint32_t gen; /* the cookies' high half: fn_gen of its functions */
	uint32_t *fns;
	uint64_t *offs;
	size_t n;
	int in, out; /* link descriptors, -1 none (a session link is in alone) */
};

/* How the probes are attached, best first. */
enum count_mode {
	MODE_PERF,    /* a perf-event uprobe and uretprobe per function and process */
	MODE_MULTI,   /* uprobe_multi: an entry and a return link per file and process */
	MODE_SESSION, /* session uprobes: one link per file and process, one program */
};

struct counter {
	struct count_bpf *skel;
	enum count_mode mode;
	bool multi; /* uprobe_multi links, session or not (else perf-event uprobes) */
	struct mlink *mlinks;
	size_t nr_mlinks, cap_mlinks;
	bool *off; /* functions detached */
	uint32_t nfuncs;
	int ncpus;
	struct probe *probes;
	size_t nr_probes, cap_probes;
	int *klinks; /* kprobe session links (-k) */
	size_t nr_klinks, cap_klinks, nr_kfuncs;
	struct execstop stop;	      /* -- COMMAND's */
	struct bpf_link *fork, *exit; /* --children */
	void *percpu;		      /* ncpus values of the largest per-CPU value read */
};

static bool debug_on;

static void mlink_close(struct mlink *m);

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !debug_on)
		return 0;
	if (level == LIBBPF_WARN || debug_on)
		return vfprintf(stderr, fmt, args);
	return 0;
}

struct counter *counter__open(uint32_t nfuncs, bool all_procs, const int *cgroup_fds,
			      uint32_t nr_cgroups, bool kernel, bool libbpf_debug,
			      struct errmsg *em)
{
	struct counter *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	if (nr_cgroups > COUNT_CGROUPS) {
		errmsg_set(em, -E2BIG, "at most %u --cgroup options", COUNT_CGROUPS);
		goto out_free;
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
	c->off = calloc(c->nfuncs, sizeof(*c->off));
	if (!c->off) {
		errmsg_set(em, -ENOMEM, "out of memory");
		goto out_free;
	}
	/* Session uprobes first (one link and one program for entries and
	 * returns: 6.13+), then uprobe_multi (6.6+), then perf-event uprobes,
	 * each where the kernel refuses the one before; tests ask for the
	 * fallbacks by name. */
	int mode = getenv("BPFPROF_TEST_COUNT_NO_MULTI")     ? MODE_PERF
		   : getenv("BPFPROF_TEST_COUNT_NO_SESSION") ? MODE_MULTI
							     : MODE_SESSION;
	for (; mode >= MODE_PERF; mode--) {
		struct bpf_program *ps = NULL, *pe = NULL, *pr = NULL, *pk = NULL;

		count_bpf__destroy(c->skel);
		c->skel = count_bpf__open();
		if (!c->skel) {
			errmsg_set(em, -errno, "cannot open the BPF program: %s", strerror(errno));
			goto out_free;
		}
		ps = c->skel->progs.count_session;
		pe = c->skel->progs.count_entry;
		pr = c->skel->progs.count_return;
		pk = c->skel->progs.count_ksession;
		c->skel->rodata->all_procs = all_procs || nr_cgroups;
		c->skel->rodata->nr_cgroups = nr_cgroups;
		err = bpf_map__set_max_entries(c->skel->maps.stats, c->nfuncs);
		if (!err)
			err = bpf_map__set_max_entries(c->skel->maps.fn_gen, c->nfuncs);
		if (!err)
			err = bpf_program__set_autoload(ps, mode == MODE_SESSION);
		if (!err)
			err = bpf_program__set_autoload(pk, kernel && mode == MODE_SESSION);
		if (!err && kernel && mode == MODE_SESSION)
			err = bpf_program__set_expected_attach_type(pk, TRACE_KPROBE_SESSION);
		if (!err)
			err = bpf_program__set_autoload(pe, mode != MODE_SESSION);
		if (!err)
			err = bpf_program__set_autoload(pr, mode != MODE_SESSION);
		if (!err && mode == MODE_SESSION)
			err = bpf_program__set_expected_attach_type(ps, TRACE_UPROBE_SESSION);
		if (!err && mode == MODE_MULTI)
			err = bpf_program__set_expected_attach_type(pe, TRACE_UPROBE_MULTI);
		if (!err && mode == MODE_MULTI)
			err = bpf_program__set_expected_attach_type(pr, TRACE_UPROBE_MULTI);
		if (!err)
			err = count_bpf__load(c->skel);
		if (!err) {
			c->mode = (enum count_mode)mode;
			c->multi = mode != MODE_PERF;
			break;
		}
		if (mode == MODE_PERF || err == -EPERM || kernel)
			break;
		if (debug_on)
			fprintf(stderr, "count: %s refused (%s), trying the next way\n",
				mode == MODE_SESSION ? "session uprobes" : "uprobe_multi",
				strerror(-err));
	}
	if (err) {
		errmsg_set(em, err, "cannot load the BPF program: %s", strerror(-err));
		if (kernel && err != -EPERM)
			errmsg_hint(em, "kernel functions need session kprobes and uprobes (Linux "
					"6.13 or later)");
		if (err == -EPERM)
			errmsg_hint(em, "run as root (or with CAP_BPF and CAP_PERFMON)");
		goto out_free;
	}
	for (uint32_t i = 0; i < nr_cgroups; i++) {
		if (bpf_map__update_elem(c->skel->maps.cgroups, &i, sizeof(i), &cgroup_fds[i],
					 sizeof(cgroup_fds[i]), 0)) {
			err = -errno;
			errmsg_set(em, err, "cannot add cgroup %u to the filter: %s", i,
				   strerror(-err));
			goto out_free;
		}
	}
	return c;

out_free:
	counter__free(c);
	return NULL;
}

void counter__detach_stops(struct counter *c)
{
	execstop__detach_entries(&c->stop);
}

/*
 * Destroying a perf-event uprobe waits for RCU grace periods (tracepoint
 * unregistration): 10 to 300 ms each here, one probe after another, so 2,000
 * probes took minutes. Threads destroying slices at once share the grace
 * periods.
 */
#define DESTROY_THREADS 32

struct destroy_slice {
	struct probe *probes;
	size_t from, n, step;
};

static void *destroy_slice(void *arg)
{
	struct destroy_slice *d = arg;

	for (size_t i = d->from; i < d->n; i += d->step)
		bpf_link__destroy(d->probes[i].link);
	return NULL;
}

static void destroy_probes(struct probe *probes, size_t n)
{
	struct destroy_slice d[DESTROY_THREADS];
	pthread_t th[DESTROY_THREADS];
	bool started[DESTROY_THREADS] = { 0 };
	size_t nt = MIN(n, (size_t)DESTROY_THREADS);

	for (size_t t = 0; t < nt; t++) {
		d[t] = (struct destroy_slice){ probes, t, n, nt };
		started[t] = !pthread_create(&th[t], NULL, destroy_slice, &d[t]);
		if (!started[t])
			destroy_slice(&d[t]);
	}
	for (size_t t = 0; t < nt; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}

void counter__free(struct counter *c)
{
	if (!c)
		return;
	destroy_probes(c->probes, c->nr_probes);
	free(c->probes);
	for (size_t i = 0; i < c->nr_mlinks; i++) {
		mlink_close(&c->mlinks[i]);
		free(c->mlinks[i].fns);
		free(c->mlinks[i].offs);
	}
	free(c->mlinks);
	for (size_t i = 0; i < c->nr_klinks; i++)
		close(c->klinks[i]);
	free(c->klinks);
	free(c->off);
	execstop__free(&c->stop);
	bpf_link__destroy(c->fork);
	bpf_link__destroy(c->exit);
	count_bpf__destroy(c->skel);
	free(c->percpu);
	free(c);
}

const char *counter__mode(const struct counter *c)
{
	if (c->mode == MODE_SESSION)
		return "session uprobes: one uprobe_multi link per file and process for entries and "
		       "returns, the entry's time in the call's session cookie (raw BPF_LINK_CREATE, "
		       "BPF_TRACE_UPROBE_SESSION)";
	if (c->multi)
		return "uprobe_multi: one entry and one return link per file and process (raw "
		       "BPF_LINK_CREATE: libbpf here has no uprobe_multi API)";
	return "uprobe + uretprobe per function and process (perf-event links)";
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
	return execstop__attach_exec(&c->stop, c->skel->progs.count_exec, em);
}

int counter__attach_children(struct counter *c, struct errmsg *em)
{
	int err;

	c->fork = bpf_program__attach(c->skel->progs.count_fork);
	if (c->fork)
		c->exit = bpf_program__attach(c->skel->progs.count_exit);
	if (!c->fork || !c->exit) {
		err = -errno;
		return errmsg_set(em, err, "cannot attach to sched_process_fork/exit: %s",
				  strerror(-err));
	}
	return 0;
}

void counter__follow_execs(struct counter *c)
{
	c->skel->bss->follow_exec = true;
}

int counter__next_exec(struct counter *c, uint32_t *pid, uint64_t *start_ns)
{
	int fd = bpf_map__fd(c->skel->maps.execs);

	if (bpf_map_get_next_key(fd, NULL, pid))
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, pid, start_ns))
		*start_ns = 0; /* deleted meanwhile: not one to signal */
	bpf_map_delete_elem(fd, pid);
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
	return execstop__attach_entry(&c->stop, c->skel->progs.count_stop, path, off, pid, em);
}

static int attach_one(struct counter *c, uint32_t fn, const char *path, uint64_t off, int pid,
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

static int multi_link(struct counter *c, struct bpf_program *prog, uint32_t type, bool ret,
		      const struct mlink *m)
{
	uint64_t *cookies = calloc(m->n, sizeof(*cookies));
	int fd;

	if (!cookies)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		cookies[i] = (uint64_t)m->gen << 32 | m->fns[i];
	fd = uprobe__link(bpf_program__fd(prog), type, ret, m->path, m->offs, cookies, m->n,
			  m->pid);
	free(cookies);
	return fd;
}

static void mlink_close(struct mlink *m)
{
	if (m->in >= 0)
		close(m->in);
	if (m->out >= 0)
		close(m->out);
	m->in = m->out = -1;
}

/* m's session link, or its two links (the return first: see attach_one). 0 or -errno. */
static int mlink_attach(struct counter *c, struct mlink *m)
{
	m->in = m->out = -1;
	if (c->mode == MODE_SESSION) {
		m->in = multi_link(c, c->skel->progs.count_session, TRACE_UPROBE_SESSION, false, m);
		return m->in < 0 ? m->in : 0;
	}
	m->out = multi_link(c, c->skel->progs.count_return, TRACE_UPROBE_MULTI, true, m);
	if (m->out < 0)
		return m->out;
	m->in = multi_link(c, c->skel->progs.count_entry, TRACE_UPROBE_MULTI, false, m);
	if (m->in < 0) {
		int err = m->in;

		mlink_close(m);
		return err;
	}
	return 0;
}

/* One uprobe_multi pair for fns[0..n). 0 or -errno. */
static int multi_attach(struct counter *c, uint64_t file, const char *path, int pid,
			const uint32_t *fns, const uint64_t *offs, size_t n)
{
	struct mlink *m;
	int err;

	if (array_grow((void **)&c->mlinks, &c->cap_mlinks, c->nr_mlinks + 1, sizeof(*c->mlinks)))
		return -ENOMEM;
	m = &c->mlinks[c->nr_mlinks];
	*m = (struct mlink){ .file = file, .pid = pid, .n = n, .in = -1, .out = -1 };
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->fns = malloc(n * sizeof(*m->fns));
	m->offs = malloc(n * sizeof(*m->offs));
	if (!m->fns || !m->offs) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(m->fns, fns, n * sizeof(*fns));
	memcpy(m->offs, offs, n * sizeof(*offs));
	/* Every function of a file has its links in every process at one generation. */
	for (size_t i = 0; i < c->nr_mlinks; i++)
		if (c->mlinks[i].file == file)
			m->gen = c->mlinks[i].gen;
	err = mlink_attach(c, m);
	if (err)
		goto out_free;
	c->nr_mlinks++;
	return 0;

out_free:
	free(m->fns);
	free(m->offs);
	return err;
}

/*
 * A link fails whole when one offset cannot be probed (an instruction the
 * kernel cannot single-step: -ENOTSUPP): halves are tried, down to the
 * functions that fail alone, at most about 2 log2(n) tries per bad one.
 * How many were attached; *err the first failure.
 */
static size_t multi_attach_split(struct counter *c, uint64_t file, const char *path, int pid,
				 const uint32_t *fns, const uint64_t *offs, size_t n, int *err,
				 unsigned depth)
{
	int e = multi_attach(c, file, path, pid, fns, offs, n);

	if (!e)
		return n;
	if (!*err)
		*err = e;
	if (n == 1 || e == -ENOMEM || e == -EMFILE || e == -EPERM || depth > 40)
		return 0;
	return multi_attach_split(c, file, path, pid, fns, offs, n / 2, err, depth + 1) +
	       multi_attach_split(c, file, path, pid, fns + n / 2, offs + n / 2, n - n / 2, err,
				  depth + 1);
}

int counter__attach_file(struct counter *c, uint64_t file, const char *path, int pid,
			 const uint32_t *fns, const uint64_t *offs, size_t n, struct errmsg *em)
{
	size_t done = 0;
	int err = 0;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (fns[i] >= c->nfuncs)
			return errmsg_set(em, -EINVAL, "function %u past the %u loaded", fns[i],
					  c->nfuncs);
	if (!c->multi) {
		for (size_t i = 0; i < n; i++) {
			struct errmsg e1 = { 0 };
			int e = attach_one(c, fns[i], path, offs[i], pid, &e1);

			if (!e)
				done++;
			else if (!err && (err = e))
				*em = e1;
		}
		return done ? (int)done : err;
	}
	done = multi_attach_split(c, file, path, pid, fns, offs, n, &err, 0);
	if (err)
		errmsg_set(em, err, "uprobe_multi: %s",
			   err == -524 ? "an instruction the kernel cannot probe (ENOTSUPP)"
				       : strerror(-err));
	return done ? (int)done : err;
}

/*
 * uprobe_multi links cannot lose one function: the file's links (in every
 * process) are replaced by ones without the detached functions, at the next
 * generation; the generation switches function by function (fn_gen), so a
 * call is counted by the old links or the new, and a call entered at the
 * switch itself may be counted twice or not at all.
 */
static void multi_detach(struct counter *c, uint32_t fn)
{
	uint64_t file = 0;
	uint32_t gen = 0;
	bool found = false;
	size_t first = c->nr_mlinks, i;
	int fd = bpf_map__fd(c->skel->maps.fn_gen);

	for (i = 0; i < c->nr_mlinks && !found; i++)
		for (size_t j = 0; j < c->mlinks[i].n; j++)
			if (c->mlinks[i].fns[j] == fn) {
				found = true;
				file = c->mlinks[i].file;
				gen = c->mlinks[i].gen + 1;
				break;
			}
	if (!found)
		return;
	for (i = 0; i < first; i++) {
		struct mlink *old = &c->mlinks[i], *m;
		size_t k = 0;

		if (old->file != file)
			continue;
		if (array_grow((void **)&c->mlinks, &c->cap_mlinks, c->nr_mlinks + 1,
			       sizeof(*c->mlinks)))
			break;
		old = &c->mlinks[i];
		m = &c->mlinks[c->nr_mlinks];
		*m = (struct mlink){
			.file = file, .pid = old->pid, .gen = gen, .in = -1, .out = -1
		};
		memcpy(m->path, old->path, sizeof(m->path));
		m->fns = malloc(old->n * sizeof(*m->fns));
		m->offs = malloc(old->n * sizeof(*m->offs));
		if (!m->fns || !m->offs) {
			free(m->fns);
			free(m->offs);
			break;
		}
		for (size_t j = 0; j < old->n; j++) {
			if (c->off[old->fns[j]])
				continue;
			m->fns[k] = old->fns[j];
			m->offs[k++] = old->offs[j];
		}
		m->n = k;
		if (k && mlink_attach(c, m)) {
			free(m->fns);
			free(m->offs);
			break;
		}
		c->nr_mlinks++;
	}
	/* Switch every function of the file (the detached one to a generation no
	 * link has), then drop the old links. */
	for (i = 0; i < c->nr_mlinks; i++) {
		if (c->mlinks[i].file != file || c->mlinks[i].gen == gen)
			continue;
		for (size_t j = 0; j < c->mlinks[i].n; j++) {
			uint32_t f = c->mlinks[i].fns[j], g = c->off[f] ? UINT32_MAX : gen;

			bpf_map_update_elem(fd, &f, &g, 0);
		}
	}
	for (i = 0; i < c->nr_mlinks;) {
		struct mlink *m = &c->mlinks[i];

		if (m->file == file && (m->gen != gen || !m->n)) {
			mlink_close(m);
			free(m->fns);
			free(m->offs);
			*m = c->mlinks[--c->nr_mlinks];
			continue;
		}
		i++;
	}
}

void counter__detach(struct counter *c, uint32_t fn)
{
	size_t j = 0;

	if (fn >= c->nfuncs)
		return;
	c->off[fn] = true;
	if (c->nr_klinks) {
		/* A kernel function: switched off in BPF (its kprobe stays till the end). */
		uint32_t g = UINT32_MAX;

		bpf_map_update_elem(bpf_map__fd(c->skel->maps.fn_gen), &fn, &g, 0);
	}
	if (c->multi) {
		multi_detach(c, fn);
		return;
	}

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
	size_t n = c ? c->nr_probes : 0;

	for (size_t i = 0; c && i < c->nr_mlinks; i++)
		n += 2 * c->mlinks[i].n;
	return n + (c ? 2 * c->nr_kfuncs : 0);
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

/* --- kernel functions (-k): kprobe session links ----------------------------------- */

/* One kprobe session link for names[0..n); its fd or -errno. */
static int klink(struct counter *c, const char *const *names, const uint32_t *fns, size_t n)
{
	struct link_create_kprobe_multi a;
	uint64_t *cookies = calloc(n, sizeof(*cookies));
	int fd, err;

	if (!cookies)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		cookies[i] = fns[i]; /* generation 0 */
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(c->skel->progs.count_ksession);
	a.attach_type = TRACE_KPROBE_SESSION;
	a.syms = (uint64_t)(uintptr_t)names;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = (uint32_t)n;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	err = -errno;
	free(cookies);
	return fd < 0 ? err : fd;
}

/* Halves down to the functions the kernel refuses alone (kprobe blacklist). */
static size_t klink_split(struct counter *c, const char *const *names, const uint32_t *fns,
			  size_t n, int *err, unsigned depth)
{
	int fd;

	if (array_grow((void **)&c->klinks, &c->cap_klinks, c->nr_klinks + 1, sizeof(*c->klinks))) {
		*err = -ENOMEM;
		return 0;
	}
	fd = klink(c, names, fns, n);
	if (fd >= 0) {
		c->klinks[c->nr_klinks++] = fd;
		return n;
	}
	if (!*err)
		*err = fd;
	if (n == 1 || fd == -ENOMEM || fd == -EMFILE || fd == -EPERM || depth > 40)
		return 0;
	return klink_split(c, names, fns, n / 2, err, depth + 1) +
	       klink_split(c, names + n / 2, fns + n / 2, n - n / 2, err, depth + 1);
}

int counter__attach_kernel(struct counter *c, const char *const *names, const uint32_t *fns,
			   size_t n, struct errmsg *em)
{
	size_t done;
	int err = 0;

	if (!c->skel->progs.count_ksession || bpf_program__fd(c->skel->progs.count_ksession) < 0)
		return errmsg_set(em, -EOPNOTSUPP, "kernel functions need session kprobes");
	for (size_t i = 0; i < n; i++)
		if (fns[i] >= c->nfuncs)
			return errmsg_set(em, -EINVAL, "function %u past the %u loaded", fns[i],
					  c->nfuncs);
	done = klink_split(c, names, fns, n, &err, 0);
	c->nr_kfuncs += done;
	if (err)
		errmsg_set(em, err, "kprobe session: %s", strerror(-err));
	return done ? (int)done : err;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int counter__each_kfunc(void (*cb)(void *ctx, const char *name), void *ctx)
{
	char *buf = NULL, **names = NULL;
	size_t len = 0, n = 0, cap = 0;
	bool ksyms = false;
	int err;

	/* tracefs lists what ftrace can attach to; where it cannot be read (a
	 * locked-down tracefs), kallsyms's text symbols: the kernel refuses the
	 * few it cannot probe, one by one (klink_split). */
	err = read_file("/sys/kernel/tracing/available_filter_functions", 64 << 20, &buf, &len);
	if (err) {
		ksyms = true;
		err = read_file("/proc/kallsyms", 64 << 20, &buf, &len);
	}
	if (err)
		return err;
	/* "name [module]" a line, or kallsyms's "address type name [module]"; a
	 * name may be listed more than once. */
	for (char *line = buf, *nl; line && *line; line = nl) {
		char *name = line;

		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (ksyms) {
			char *t = strchr(line, ' ');

			if (!t || (t[1] != 't' && t[1] != 'T') || t[2] != ' ')
				continue;
			name = t + 3;
			if (!strncmp(name, "__pfx_", 6))
				continue; /* the padding before a function, not one */
		}
		name[strcspn(name, " \t")] = '\0';
		if (!*name)
			continue;
		if (array_grow((void **)&names, &cap, n + 1, sizeof(*names))) {
			err = -ENOMEM;
			goto out;
		}
		names[n++] = name;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (!i || strcmp(names[i], names[i - 1]))
			cb(ctx, names[i]);
out:
	free(names);
	free(buf);
	return err;
}
