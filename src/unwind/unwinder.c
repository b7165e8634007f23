// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * unwinder.c - the table cache, the slot pool and the per-process mapping
 * lists behind the BPF walker; see unwinder.h for the life cycle.
 *
 * Ordering against the walker, which may run on another CPU at any time:
 * a table's slots are written before any mapping list names them, and a
 * mapping list before the process entry that names it (each write is a
 * bpf() syscall, which orders them); slots a list or table stops using are
 * only parked (upool__release) and reused two ticks later, long after any
 * walk that could still read them has finished.
 */
#include "unwind/unwinder.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"
#include "proc/ptab.h"
#include "unwind/pool.h"
#include "unwind/table.h"
#include "lang/cpython.h"
#include "lang/hotspot.h"

#define REFRESH_MIN_NS (250ull * 1000000) /* per process */
#define REFRESH_MAX_NS (32 * NS_PER_SEC)  /* ... after re-reads that found nothing new */
#define TICK_SWEEP_NS  (1000ull * 1000000)
#define SEG_ROWS       (UNWIND_CHUNK_SLOTS / 8) /* rows per run: tables are split in pieces */

struct run {
	uint32_t slot, n;
};

/* One file's table (in the kernel), or the remembered failure to make one. */
struct ufile {
	int err;	  /* 0: loaded; else why there is no table */
	struct utable *t; /* segments and base only: rows and pages are in the kernel */
	uint32_t pages, nr_pages;
	struct run *runs;
	size_t nr_runs, cap_runs;
	size_t rows;
	unsigned refs;	    /* processes whose mapping lists name it */
	uint64_t last_used; /* ns */
	uint64_t *keys;	    /* mfile serials naming it (copies shared by build id) */
	size_t nr_keys, cap_keys;
	bool by_build_id; /* also in u->by_build_id */
};

struct uproc {
	uint32_t pid;
	uint64_t start_time, exec_id;
	struct pproc *pp; /* the process table's entry, held while installed */
	struct run maps;  /* the mapping list's slots; n == 0: none */
	uint32_t nr_maps;
	struct ufile **files; /* references held by the list */
	size_t nr_files;
	uint64_t sig; /* hash of the executable mappings */
	uint64_t last_used, last_refresh;
	uint64_t start_ticks; /* for an entry installed ahead (ids unknown): /proc start time */
	bool any_image;	      /* UPROC_F_ANY_IMAGE: installed by unwinder__install() */
	bool vfork;	      /* noticed as a vfork() child before its exec (proc_id.vfork) */
	bool in_kernel;
	/* Python: its interpreter in python_procs (walked), or why not. */
	bool python;
	int py_err; /* last probe: 0 not tried / found, -EAGAIN not initialized yet */
	/* -EAGAIN with the interpreter's file mapped (not a libpython to come):
	 * what the probe found in it, for a retry that reads only memory. */
	struct cpython_proc *py_wait;
	unsigned py_tries;
	uint64_t py_retry_ns;
	/* start_time + 1 of the process told its Python is not walked: kept
	 * across exec (a forked Python that runs python again) and eviction,
	 * so a process gets that warning once. */
	uint64_t py_warned;
	/* A HotSpot JVM: its code cache in hotspot_procs (walked), or why not;
	 * probed again on Python's schedule while it starts (-EAGAIN). */
	bool jvm;
	int jvm_err;
	unsigned jvm_tries;
	uint64_t jvm_retry_ns;
	uint64_t refresh_gap; /* ns before the next re-read (backs off, see unwinder__refresh) */
	bool over_limit;      /* over UNWIND_MAX_MAPS: counted once */
	bool warned_maps;     /* ... and mappings with tables left out: said once */
};

/*
 * A Python the walker cannot walk is said once per interpreter file (its
 * device and inode), not once per process: a server of 64 workers is one
 * line. Past this many files, one more line says the rest are not named.
 */
#define PY_WARN_FILES 64

struct unwinder {
	struct ptab *pt;
	bool own_pt;
	struct unwind_kops k;
	uint32_t max_procs;
	uint32_t seg_rows;
	uint64_t idle_ns;
	struct upool *pool;
	struct htab *files;	  /* mfile serial -> ufile */
	struct htab *by_build_id; /* build id bytes -> ufile */
	struct htab *procs;	  /* pid -> uproc */
	bool python;
	bool jvm;
	bool jvm_warned; /* a JVM whose frames cannot be walked: said once */
	/* Time spent reading JVM tables in the current second (HS_MAX_TABLE_NS at most). */
	uint64_t jvm_probe_t0, jvm_probe_ns;
	struct cpython_tls_cache tls_cache; /* the libcs' thread-data layouts, by file */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	struct ufile *vdso;
	size_t nr_in_kernel;
	uint64_t last_sweep;
	uint64_t pool_gen;    /* the pool generation the walker was last told */
	uint64_t py_found_ns; /* the last Python process handed to the walker */
	/* The earliest retry of a Python still starting up (py_err -EAGAIN), and
	 * the latest the caller's loop may wake up to take one; 0: none. */
	uint64_t py_retry_due, py_wake_by;
	/* Interpreter files already warned about (PY_WARN_FILES at most). */
	struct py_warned_file {
		uint64_t dev, ino;
	} py_warned_files[PY_WARN_FILES];
	size_t nr_py_warned;
	struct unwinder_stats st;
};

/* --- kernel callbacks through the pool ----------------------------------- */

/*
 * If any slot became reusable since the walker was last told, tell it now:
 * its cached rows may name slots about to be rewritten. Called after every
 * reclaim and before any freshly allocated run is written.
 */
static void sync_pool_gen(struct unwinder *u)
{
	uint64_t gen = upool__generation(u->pool);

	if (gen != u->pool_gen) {
		u->pool_gen = gen;
		if (u->k.pool_changed)
			u->k.pool_changed(u->k.ctx, gen);
	}
}

static void reclaim(struct unwinder *u)
{
	upool__reclaim(u->pool);
	sync_pool_gen(u);
}

static int pool_grow(void *ctx, uint32_t chunk)
{
	struct unwinder *u = ctx;

	return u->k.chunk_add ? u->k.chunk_add(u->k.ctx, chunk) : 0;
}

static int pool_shrink(void *ctx, uint32_t chunk)
{
	struct unwinder *u = ctx;

	return u->k.chunk_drop ? u->k.chunk_drop(u->k.ctx, chunk) : 0;
}

static int kwrite(struct unwinder *u, uint32_t slot, const void *vals, uint32_t n)
{
	return u->k.slots_write ? u->k.slots_write(u->k.ctx, slot, vals, n) : 0;
}

/* --- tables --------------------------------------------------------------- */

static void ufile_unload(struct unwinder *u, struct ufile *f)
{
	for (size_t i = 0; i < f->nr_runs; i++)
		upool__release(u->pool, f->runs[i].slot, f->runs[i].n);
	free(f->runs);
	f->runs = NULL;
	f->nr_runs = 0;
	f->cap_runs = 0;
	if (!f->err) {
		u->st.tables--;
		u->st.rows -= f->rows;
	}
}

static void ufile_free(struct ufile *f)
{
	if (!f)
		return;
	utable__free(f->t);
	free(f->runs);
	free(f->keys);
	free(f);
}

/* Forgets a file: its kernel slots, its keys. Only when nothing refers to it. */
static void ufile_forget(struct unwinder *u, struct ufile *f)
{
	ufile_unload(u, f);
	for (size_t i = 0; i < f->nr_keys; i++)
		htab__remove(u->files, &f->keys[i], sizeof(f->keys[i]));
	if (f->by_build_id && f->t)
		htab__remove(u->by_build_id, f->t->build_id, f->t->build_id_len);
	if (f != u->vdso)
		ufile_free(f);
}

static void ufile_evict(struct unwinder *u, struct ufile *f)
{
	if (!f->err)
		u->st.tables_evicted++;
	ufile_forget(u, f);
}

/* Frees the least recently used table no process refers to; false if none. */
static bool evict_one_table(struct unwinder *u, const struct ufile *keep)
{
	struct ufile *victim = NULL;
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(u->files, &pos))) {
		struct ufile *f = e->value;

		if (f == keep || f->refs || f->err || !f->nr_runs)
			continue;
		if (!victim || f->last_used < victim->last_used)
			victim = f;
	}
	if (!victim)
		return false;
	ufile_evict(u, victim);
	/* Its slots become free only after the grace period: reclaim twice so
	 * an allocation under pressure can use them (no walk lasts that long
	 * as the syscalls between). */
	return true;
}

static int alloc_run(struct unwinder *u, uint32_t n, const struct ufile *keep, struct run *r)
{
	int err;

	for (;;) {
		err = upool__alloc(u->pool, n, &r->slot);
		if (err != -ENOSPC)
			break;
		if (!evict_one_table(u, keep))
			return -ENOSPC;
		reclaim(u);
		reclaim(u);
	}
	if (!err) {
		r->n = n;
		sync_pool_gen(u);
	}
	return err;
}

static int add_run(struct ufile *f, struct run r)
{
	if (array_grow((void **)&f->runs, &f->cap_runs, f->nr_runs + 1, sizeof(*f->runs)))
		return -ENOMEM;
	f->runs[f->nr_runs++] = r;
	return 0;
}

/*
 * Copies rows [first, first + n) of t into a fresh run; fills page entries
 * [p0, p1) (whose rows all lie in that range) with global row slots.
 */
static int upload_rows(struct unwinder *u, struct ufile *f, const struct utable *t, size_t first,
		       size_t n, size_t p0, size_t p1, struct bp_upage *pages)
{
	struct run r;
	int err;

	err = alloc_run(u, (uint32_t)n, f, &r);
	if (err)
		return err;
	err = add_run(f, r);
	if (err) {
		upool__release(u->pool, r.slot, r.n);
		return err;
	}
	err = kwrite(u, r.slot, &t->rows[first], (uint32_t)n);
	if (err)
		return err;
	for (size_t p = p0; p < p1; p++) {
		pages[p].count = t->pages[p].count;
		pages[p].first =
			t->pages[p].count ? r.slot + (uint32_t)(t->pages[p].first - first) : 0;
	}
	return 0;
}

/*
 * Puts t into the pool: the page index in one run, the rows in runs of up
 * to seg_rows rows split at page boundaries (each starting with the row in
 * force at its first page). Small runs fit the gaps that freed tables leave,
 * so the pool does not fragment into unusable pieces.
 */
static int upload_table(struct unwinder *u, struct ufile *f, const struct utable *t)
{
	struct bp_upage *pages;
	struct run pr;
	int err;

	if (!t->nr_pages || t->nr_pages > UNWIND_CHUNK_SLOTS || !t->nr_rows)
		return -E2BIG;
	pages = calloc(t->nr_pages, sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	err = alloc_run(u, (uint32_t)t->nr_pages, f, &pr);
	if (!err)
		err = add_run(f, pr);
	/* Greedy groups of whole pages, at most seg_rows rows each (a page has
	 * at most UNWIND_PAGE_MAX_ROWS, so a group always takes one page). */
	for (size_t p0 = 0; p0 < t->nr_pages && !err;) {
		size_t p1 = p0, first = SIZE_MAX, end = 0;

		while (p1 < t->nr_pages) {
			const struct utable_page *pg = &t->pages[p1];
			size_t nf = first, ne = end;

			if (pg->count) {
				nf = MIN(first, (size_t)pg->first);
				ne = MAX(end, (size_t)pg->first + pg->count);
			}
			if (nf != SIZE_MAX && ne - nf > u->seg_rows && p1 > p0)
				break;
			first = nf;
			end = ne;
			p1++;
		}
		if (first != SIZE_MAX) /* else: pages without rows, count 0 */
			err = upload_rows(u, f, t, first, end - first, p0, p1, pages);
		p0 = p1;
	}
	if (!err)
		err = kwrite(u, pr.slot, pages, (uint32_t)t->nr_pages);
	if (!err) {
		f->pages = pr.slot;
		f->nr_pages = (uint32_t)t->nr_pages;
	}
	free(pages);
	if (err) {
		for (size_t i = 0; i < f->nr_runs; i++)
			upool__release(u->pool, f->runs[i].slot, f->runs[i].n);
		free(f->runs);
		f->runs = NULL;
		f->nr_runs = 0;
		f->cap_runs = 0;
	}
	return err;
}

/* Keeps only what mapping lists need from a built table: base and segments. */
static void strip_table(struct utable *t)
{
	free(t->rows);
	free(t->pages);
	t->rows = NULL;
	t->pages = NULL;
}

/* Builds and uploads; f->err says how it went. */
static void load_table(struct unwinder *u, struct ufile *f, struct utable *t)
{
	int err;

	f->t = t;
	u->st.build_ns += t->st.build_ns;
	u->st.tables_built++;
	err = upload_table(u, f, t);
	if (err) {
		f->err = err;
		if (err == -ENOSPC)
			u->st.tables_no_room++;
		else
			u->st.tables_failed++;
	} else {
		f->err = 0;
		f->rows = t->nr_rows;
		u->st.tables++;
		u->st.rows += t->nr_rows;
	}
	strip_table(t);
}

static int add_key(struct unwinder *u, struct ufile *f, const uint64_t *k)
{
	struct htab_entry *e;
	bool created;

	if (array_grow((void **)&f->keys, &f->cap_keys, f->nr_keys + 1, sizeof(*f->keys)))
		return -ENOMEM;
	e = htab__upsert(u->files, k, sizeof(*k), &created);
	if (!e)
		return -ENOMEM;
	e->value = f;
	f->keys[f->nr_keys++] = *k;
	return 0;
}

/* A file whose table took more than its time budget: counted, and said once
 * (the file is remembered, so once per file). */
static void over_budget(struct unwinder *u, const char *path)
{
	char msg[PATH_MAX + 200];

	u->st.tables_over_budget++;
	if (!u->warn)
		return;
	snprintf(msg, sizeof(msg),
		 "%s: its unwind table took more than %.0f s of CPU to build, given up; "
		 "its frames are walked with frame pointers",
		 path ? path : "a mapped file", UTABLE_CPU_BUDGET_NS / NS_PER_SEC_F);
	u->warn(u->warn_ctx, msg);
}

/*
 * The table for the file of mapping m of p (built and uploaded on first
 * use); NULL when out of memory or stopping. The file is the process table's
 * mfile, opened and checked there; its build id finds copies already built.
 */
static struct ufile *get_file(struct unwinder *u, struct pproc *pp, const struct procmap *m)
{
	struct htab_entry *e;
	struct ufile *f;
	struct mfile *mf;
	struct utable *t;
	const uint8_t *bid;
	uint64_t k;
	size_t len;
	Elf *elf;
	int err;

	err = ptab__file(u->pt, pp, m, &mf);
	if (err) {
		/* Refused (warned once by the table) or unreadable now: frame pointers. */
		u->st.tables_failed++;
		return NULL;
	}
	k = mfile__serial(mf);
	e = htab__find(u->files, &k, sizeof(k));
	if (e) {
		f = e->value;
		/* A table that did not fit earlier may fit now. */
		if (f->err != -ENOSPC) {
			/* A failure (no process refers to it) is kept while asked for. */
			if (f->err)
				f->last_used = now_ns();
			mfile__put(u->pt, mf);
			return f;
		}
		ufile_forget(u, f);
	}
	f = calloc(1, sizeof(*f));
	if (!f || add_key(u, f, &k)) {
		ufile_free(f);
		mfile__put(u->pt, mf);
		return NULL;
	}
	elf = mfile__elf(mf);
	len = elf ? mfile__build_id(mf, &bid) : 0;
	if (len) {
		e = htab__find(u->by_build_id, bid, len);
		if (e && !((struct ufile *)e->value)->err) {
			/* The same code under another inode (a copy in a container). */
			struct ufile *shared = e->value;

			mfile__put(u->pt, mf);
			htab__remove(u->files, &k, sizeof(k));
			ufile_free(f);
			if (add_key(u, shared, &k))
				return NULL;
			u->st.tables_shared++;
			return shared;
		}
	}
	t = elf ? utable__build_elf(elf) : NULL;
	f->err = t ? 0 : -errno;
	if (f->err == -ETIMEDOUT)
		over_budget(u, mfile__path(mf));
	mfile__put(u->pt, mf);
	if (f->err == -ECANCELED) {
		/* Cut by a stop request: not the file's fault, not remembered. */
		ufile_forget(u, f);
		return NULL;
	}
	if (!t) {
		/* Remembered (for idle_ns after its last use): a refused file costs once. */
		f->last_used = now_ns();
		u->st.tables_failed++;
		return f;
	}
	load_table(u, f, t);
	if (!f->err && f->t->build_id_len) {
		bool created;

		e = htab__upsert(u->by_build_id, f->t->build_id, f->t->build_id_len, &created);
		if (e && created) {
			e->value = f;
			f->by_build_id = true;
		}
	}
	return f;
}

/* Our own vDSO is the one every native process of this kernel maps. */
static void load_vdso(struct unwinder *u)
{
	size_t len;
	const void *image = ptab__vdso(u->pt, &len);
	struct utable *t = image ? utable__build_mem(image, len) : NULL;

	if (!t)
		return;
	u->vdso = calloc(1, sizeof(*u->vdso));
	if (!u->vdso) {
		utable__free(t);
		return;
	}
	load_table(u, u->vdso, t);
	u->vdso->refs = 1; /* never evicted */
}

/* --- processes -------------------------------------------------------------- */

static bool proc_alive(struct unwinder *u, uint32_t pid, uint64_t start_time)
{
	struct proc_id id = { .pid = pid, .start_time = start_time };

	return ptab__alive(u->pt, &id);
}

static bool uproc_alive(struct unwinder *u, const struct uproc *p)
{
	uint64_t ticks;

	if (!p->any_image)
		return proc_alive(u, p->pid, p->start_time);
	return !ptab__starttime(u->pt, p->pid, &ticks) && ticks == p->start_ticks;
}

static void drop_refs(struct ufile **files, size_t n, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		if (files[i]->refs)
			files[i]->refs--;
		files[i]->last_used = now;
	}
}

/* Removes p's kernel entry and frees its mapping list. */
static void proc_unload(struct unwinder *u, struct uproc *p)
{
	if (p->python) {
		if (u->k.py_del)
			u->k.py_del(u->k.ctx, p->pid);
		p->python = false;
		u->st.python_procs--;
	}
	p->py_err = 0;
	p->py_tries = 0;
	free(p->py_wait);
	p->py_wait = NULL;
	if (p->jvm) {
		if (u->k.hs_del)
			u->k.hs_del(u->k.ctx, p->pid);
		p->jvm = false;
		u->st.jvm_procs--;
	}
	p->jvm_err = 0;
	p->jvm_tries = 0;
	if (p->in_kernel) {
		if (u->k.proc_del)
			u->k.proc_del(u->k.ctx, p->pid);
		p->in_kernel = false;
		u->nr_in_kernel--;
	}
	if (p->maps.n)
		upool__release(u->pool, p->maps.slot, p->maps.n);
	p->maps.n = 0;
	p->nr_maps = 0;
	drop_refs(p->files, p->nr_files, now_ns());
	free(p->files);
	p->files = NULL;
	p->nr_files = 0;
	p->sig = 0;
	ptab__put(u->pt, p->pp);
	p->pp = NULL;
}

static void proc_forget(struct unwinder *u, struct uproc *p)
{
	proc_unload(u, p);
	htab__remove(u->procs, &p->pid, sizeof(p->pid));
	free(p);
}

/* Makes room for one more kernel entry: the least recently noticed goes. */
static void evict_one_proc(struct unwinder *u, const struct uproc *keep)
{
	struct uproc *victim = NULL;
	struct htab_entry *e;
	size_t pos = 0;

	while ((e = htab__next(u->procs, &pos))) {
		struct uproc *p = e->value;

		if (p == keep || !p->in_kernel)
			continue;
		if (!victim || p->last_used < victim->last_used)
			victim = p;
	}
	if (victim) {
		proc_unload(u, victim);
		u->st.procs_evicted++;
	}
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* A mapping of the list being built, with what fit_maps() orders it by. */
struct mcand {
	struct bp_umap m;
	struct ufile *f;  /* its table's file, NULL: frame pointers */
	uint32_t sharers; /* mappings of the list with the same table */
	uint32_t idx;	  /* position by address */
};

static int cmp_keep(const void *a, const void *b)
{
	const struct mcand *x = a, *y = b;

	if (x->sharers != y->sharers)
		return x->sharers < y->sharers ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct mcand *x = a, *y = b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_pages(const void *a, const void *b)
{
	const struct mcand *x = a, *y = b;

	if (x->m.pages != y->m.pages)
		return x->m.pages < y->m.pages ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Fits a list over UNWIND_MAX_MAPS (a process mapping code thousands of
 * times: JIT pages, hostile mmap loops) into the limit without losing
 * frames where it can: contiguous mappings without a table are already
 * merged; next go the mappings without a table (a pc in no listed mapping
 * takes the same frame-pointer step as one in such a mapping); last, if
 * still too many, mappings with tables - those of the files mapped the most
 * times first, so the libraries every stack passes through stay. Returns
 * the number of table mappings left out (the list is then UPROC_F_CAPPED)
 * and the path mapped most often in *worst.
 */
static size_t fit_maps(struct mcand *c, size_t *n, const struct procmaps *maps, const char **worst)
{
	size_t k = 0, lost, best = 0;

	for (size_t i = 0; i < *n; i++)
		if (c[i].f)
			c[k++] = c[i];
	*n = k;
	if (k <= UNWIND_MAX_MAPS)
		return 0;
	/* Count the sharers of each table (same page index: same file). */
	qsort(c, k, sizeof(*c), cmp_pages);
	for (size_t i = 0, j; i < k; i = j) {
		for (j = i; j < k && c[j].m.pages == c[i].m.pages; j++)
			;
		for (size_t x = i; x < j; x++)
			c[x].sharers = (uint32_t)(j - i);
		if (j - i > best) {
			best = j - i;
			*worst = maps->maps[c[i].idx].path;
		}
	}
	qsort(c, k, sizeof(*c), cmp_keep);
	lost = k - UNWIND_MAX_MAPS;
	*n = UNWIND_MAX_MAPS;
	qsort(c, *n, sizeof(*c), cmp_addr);
	return lost;
}

/*
 * (Re)builds p's mapping list from /proc/PID/maps and installs it. Nothing
 * changes in the kernel if the executable mappings are the same as last time.
 */
static int load_maps(struct unwinder *u, struct uproc *p)
{
	struct pmaps *pm = ptab__maps(u->pt, p->pp);
	const struct procmaps maps = pm->m;
	struct bp_umap *um = NULL;
	struct ufile **files = NULL;
	struct mcand *c = NULL;
	size_t n = 0, nf = 0, nx = 0, lost = 0;
	const char *worst = NULL;
	struct bp_uproc kp;
	struct run r = { 0 };
	uint64_t sig = 0x5157, now = now_ns();
	int err = 0;

	for (size_t i = 0; i < maps.nr; i++) {
		const struct procmap *m = &maps.maps[i];

		if (!(m->perms & PROCMAP_X))
			continue;
		nx++;
		sig = mix(mix(mix(sig, m->start), m->end), mix(m->inode, m->offset));
	}
	if (p->in_kernel && sig == p->sig) {
		pmaps__put(pm);
		return 0;
	}
	c = calloc(nx ? nx : 1, sizeof(*c));
	if (!c) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < maps.nr; i++) {
		const struct procmap *m = &maps.maps[i];
		struct bp_umap *x;
		struct ufile *f = NULL;
		uint64_t bias;

		if (!(m->perms & PROCMAP_X))
			continue;
		memset(&c[n], 0, sizeof(c[n]));
		c[n].idx = (uint32_t)i;
		x = &c[n].m;
		x->start = m->start;
		x->end = m->end;
		x->pages = UNWIND_NO_TABLE;
		if (m->path && !strcmp(m->path, "[vdso]"))
			f = u->vdso;
		else if (procmap__is_file(m))
			f = get_file(u, p->pp, m);
		if (f && !f->err && f->t && !utable__bias(f->t, m->start, m->offset, &bias)) {
			x->bias = bias + f->t->base;
			x->pages = f->pages;
			x->nr_pages = f->nr_pages;
			c[n].f = f;
		} else if (n && !c[n - 1].f && c[n - 1].m.end == m->start) {
			c[n - 1].m.end = m->end; /* contiguous code without a table: one range */
			continue;
		}
		n++;
	}
	if (n > UNWIND_MAX_MAPS) {
		size_t before = n;

		lost = fit_maps(c, &n, &maps, &worst);
		if (!p->over_limit) { /* counted once per process, not per re-read */
			p->over_limit = true;
			u->st.maps_dropped += before - n;
			u->st.maps_lost += lost;
		}
	}
	um = calloc(n ? n : 1, sizeof(*um));
	files = calloc(n ? n : 1, sizeof(*files));
	if (!um || !files) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		um[i] = c[i].m;
		if (c[i].f) {
			c[i].f->refs++;
			files[nf++] = c[i].f;
		}
	}
	if (lost && !p->warned_maps && u->warn) {
		char msg[1024];

		p->warned_maps = true;
		snprintf(msg, sizeof(msg),
			 "process %u has %zu executable mappings with unwind tables, over the "
			 "stack walker's limit of %u: %zu mappings of the files mapped most often "
			 "(%s the most) are left out, and a stack that reaches one ends there "
			 "(\"mapping limit\" under -v)",
			 p->pid, n + lost, UNWIND_MAX_MAPS, lost, worst ? worst : "anonymous");
		u->warn(u->warn_ctx, msg);
	}
	if (n) {
		err = alloc_run(u, (uint32_t)(n * UNWIND_MAP_SLOTS), NULL, &r);
		if (!err)
			err = kwrite(u, r.slot, um, (uint32_t)(n * UNWIND_MAP_SLOTS));
		if (err)
			goto out_release;
	}
	memset(&kp, 0, sizeof(kp));
	kp.start_time = p->start_time;
	kp.exec_id = p->exec_id;
	kp.maps = r.slot;
	kp.nr_maps = (uint32_t)n;
	kp.flags = (p->any_image ? UPROC_F_ANY_IMAGE : 0) | (p->python ? UPROC_F_PYTHON : 0) |
		   (p->jvm ? UPROC_F_HOTSPOT : 0) | (lost ? UPROC_F_CAPPED : 0);
	if (!p->in_kernel && u->nr_in_kernel >= u->max_procs)
		evict_one_proc(u, p);
	err = u->k.proc_set ? u->k.proc_set(u->k.ctx, p->pid, &kp) : 0;
	if (err == -E2BIG || err == -ENOMEM) {
		evict_one_proc(u, p); /* map fuller than we thought: try once more */
		err = u->k.proc_set(u->k.ctx, p->pid, &kp);
	}
	if (err)
		goto out_release;
	/* Installed: retire the previous list. */
	if (p->maps.n)
		upool__release(u->pool, p->maps.slot, p->maps.n);
	drop_refs(p->files, p->nr_files, now);
	free(p->files);
	p->files = files;
	p->nr_files = nf;
	files = NULL;
	p->maps = r;
	p->nr_maps = (uint32_t)n;
	p->sig = sig;
	if (!p->in_kernel) {
		p->in_kernel = true;
		u->nr_in_kernel++;
	}
	u->st.procs_loaded++;
	goto out;

out_release:
	if (r.n)
		upool__release(u->pool, r.slot, r.n);
	drop_refs(files, nf, now);
out:
	free(c);
	free(um);
	free(files);
	pmaps__put(pm);
	return err;
}

static struct uproc *proc_get(struct unwinder *u, uint32_t pid, bool *created)
{
	struct htab_entry *e = htab__upsert(u->procs, &pid, sizeof(pid), created);
	struct uproc *p;

	if (!e)
		return NULL;
	if (!*created)
		return e->value;
	p = calloc(1, sizeof(*p));
	if (!p) {
		htab__remove(u->procs, &pid, sizeof(pid));
		return NULL;
	}
	p->pid = pid;
	e->value = p;
	return p;
}

/* Takes the process table's entry for id into p (dropping another image's). */
static int hold_image(struct unwinder *u, struct uproc *p, const struct proc_id *id)
{
	struct pproc *pp;
	int err = ptab__get(u->pt, id, &pp);

	if (err)
		return err;
	ptab__put(u->pt, p->pp);
	p->pp = pp;
	return 0;
}

/* --- Python ------------------------------------------------------------------ */

/*
 * An interpreter not initialized yet is probed again: every 20 ms for its
 * first 80 ms (a Python is initialized some 10-50 ms after its exec, and
 * its frames go unwalked - a short script's code objects unnamed - until it
 * is found), every 100 ms up to its first second, then every second,
 * PY_MAX_TRIES times in all. unwinder__tick() takes the retries when due,
 * and unwinder__next_due_ns() tells the caller's loop when it must wake up
 * for them. The once-a-second ones wait up to a second more for a wake-up
 * the loop has anyway (top refreshes every second): a program that links
 * libpython but never starts an interpreter (perf, gdb, vim) would
 * otherwise wake the agent once more every second for 40 s - and a wake-up
 * after a long sleep is the costliest thing a quiet agent does (~0.3 ms of
 * CPU on a VM with shadow paging).
 *
 * A python3.X waiting for the libpython3 it needs (the dynamic loader maps
 * it within milliseconds of the exec) is given the first second's tries,
 * PY_FAST_TRIES: a program that names one and never maps it - or maps one
 * without an interpreter - is no Python (-ENOENT), and one dlopen()ed later
 * is noticed by unwinder__refresh() as any new mapping is. Each try reads
 * the mappings again, and the files' verdicts are remembered (cpython.h).
 */
#define PY_RETRY_FIRST_NS (20u * 1000 * 1000)
#define PY_RETRY_NS	  (100u * 1000 * 1000)
#define PY_RETRY_SLOW_NS  (1000u * 1000 * 1000)
#define PY_FIRST_TRIES	  4
#define PY_FAST_TRIES	  13
#define PY_MAX_TRIES	  50

/* p's next probe at p->py_retry_ns (a slow one up to a second later, at
 * the caller's first wake-up): the tick's earliest due retry and the loop's
 * wake-up follow it. */
static void retry_at(struct unwinder *u, uint64_t when, unsigned tries)
{
	uint64_t late = when + (tries < PY_FAST_TRIES ? 0 : PY_RETRY_SLOW_NS);

	if (!u->py_retry_due || when < u->py_retry_due)
		u->py_retry_due = when;
	if (!u->py_wake_by || late < u->py_wake_by)
		u->py_wake_by = late;
}

static void python_retry_at(struct unwinder *u, const struct uproc *p)
{
	retry_at(u, p->py_retry_ns, p->py_tries);
}

/* The wait before try number tries (counted from 1). */
static uint64_t retry_wait(unsigned tries)
{
	return tries < PY_FIRST_TRIES  ? PY_RETRY_FIRST_NS
	       : tries < PY_FAST_TRIES ? PY_RETRY_NS
				       : PY_RETRY_SLOW_NS;
}

/*
 * Says that p's Python is not walked, once per interpreter file: the
 * processes of one binary (a server's workers, -a) share one line.
 */
static void python_warn(struct unwinder *u, const struct uproc *p, const struct cpython_proc *cp,
			const char *why)
{
	char msg[1024];

	if (!u->warn)
		return;
	for (size_t i = 0; i < u->nr_py_warned; i++)
		if (u->py_warned_files[i].dev == cp->dev && u->py_warned_files[i].ino == cp->ino)
			return;
	if (u->nr_py_warned > PY_WARN_FILES)
		return;
	if (u->nr_py_warned == PY_WARN_FILES) {
		u->nr_py_warned++;
		u->warn(u->warn_ctx, "more Python interpreters bpfprof cannot walk are running; "
				     "they are not named (their Python functions are not shown)");
		return;
	}
	u->py_warned_files[u->nr_py_warned++] = (struct py_warned_file){ cp->dev, cp->ino };
	snprintf(msg, sizeof(msg),
		 "process %u runs %s: %s; its Python functions are not shown "
		 "(native frames only; said once for all processes of this file)",
		 p->pid, cp->module[0] ? cp->module : "Python", why);
	u->warn(u->warn_ctx, msg);
}

/*
 * Finds the Python interpreter of p, if it is one, and puts what the walker
 * needs in python_procs (before the unwind entry that points the walker
 * there). A Python whose layout bpfprof does not know gets one warning and
 * native frames only.
 */
static void python_probe(struct unwinder *u, struct uproc *p)
{
	struct cpython_proc cp;
	struct bp_pyproc bp;
	char why[256];
	int err;

	if (!u->python || p->python || !p->pp || p->any_image ||
	    (p->py_err && p->py_err != -EAGAIN))
		return;
	/*
	 * A vfork() child (subprocess, posix_spawn) runs in its parent's
	 * memory until its exec, a few milliseconds later: a Python's looks
	 * like a Python, but runs no Python code, and its memory is another
	 * program's by the time it is read. Its exec is noticed anew.
	 */
	if (p->vfork) {
		p->py_err = -ENOENT;
		u->st.python_vfork++;
		return;
	}
	u->st.python_retries += p->py_tries > 0;
	if (p->py_wait) {
		cp = *p->py_wait;
		err = cpython__recheck(u->pt, p->pp, &cp, why, sizeof(why));
	} else {
		err = cpython__probe(u->pt, p->pp, &cp, why, sizeof(why));
	}
	p->py_err = err;
	if (err == -EAGAIN && cp.runtime && !p->py_wait)
		p->py_wait = malloc(sizeof(*p->py_wait)); /* (none: probed in full again) */
	if (err == -EAGAIN && p->py_wait) {
		*p->py_wait = cp;
	} else {
		free(p->py_wait);
		p->py_wait = NULL;
	}
	u->st.python_file_reads += cp.files_read;
	if (err == -EAGAIN) {
		if (!p->py_wait && p->py_tries + 1 >= PY_FAST_TRIES) {
			p->py_err = -ENOENT; /* no libpython came */
			p->py_tries = 0;
			return;
		}
		if (++p->py_tries >= PY_MAX_TRIES) {
			p->py_err = -ETIMEDOUT;
			free(p->py_wait);
			p->py_wait = NULL;
			return;
		}
		p->py_retry_ns = now_ns() + retry_wait(p->py_tries);
		python_retry_at(u, p);
		return;
	}
	if (err == -ENOTSUP) {
		if (p->py_warned == p->start_time + 1)
			return;
		p->py_warned = p->start_time + 1;
		u->st.python_unknown++;
		python_warn(u, p, &cp, why);
		return;
	}
	if (err || !u->k.py_set)
		return;
	/* Without it, a thread is found by a search of the first threads only. */
	u->st.python_tls += !cpython__tls(u->pt, p->pp, &cp, &u->tls_cache);
	cpython__bpf(&cp, &bp);
	bp.start_time = p->start_time;
	bp.exec_id = p->exec_id;
	if (u->k.py_set(u->k.ctx, p->pid, &bp))
		return;
	p->python = true;
	u->st.python_procs++;
	u->py_found_ns = now_ns();
}

/* --- HotSpot ------------------------------------------------------------------ */

/* p's next JVM probe (a VM still starting), on Python's schedule. */
static void jvm_retry(struct unwinder *u, struct uproc *p)
{
	p->jvm_err = -EAGAIN;
	p->jvm_retry_ns = now_ns() + retry_wait(p->jvm_tries);
	retry_at(u, p->jvm_retry_ns, p->jvm_tries);
}

/*
 * Finds the HotSpot JVM of p, if it is one (lang/hotspot.c reads its
 * exported tables), and puts what the walker needs to step through its JIT
 * and interpreter frames in hotspot_procs (before the unwind entry that
 * points the walker there). A VM still starting is probed again (its
 * tables, code cache and interpreter are made during its first tens of
 * milliseconds). A JVM whose layout the walker cannot follow keeps native
 * frames (and its Java methods' names): said once. Reading tables costs up
 * to HS_MAX_TABLE_NS per JVM: at most that much per second, the rest later.
 */
static void jvm_probe(struct unwinder *u, struct uproc *p)
{
	struct hotspot_proc *hp;
	struct bp_hsproc bp;
	char why[320], msg[400];
	uint64_t t0 = now_ns(), c0 = thread_cputime_ns();
	int err;

	if (!u->jvm || p->jvm || !p->pp || p->any_image || (p->jvm_err && p->jvm_err != -EAGAIN))
		return;
	if (p->vfork) {
		p->jvm_err = -ENOENT; /* its parent's memory until its exec */
		return;
	}
	if (t0 - u->jvm_probe_t0 >= NS_PER_SEC) {
		u->jvm_probe_t0 = t0;
		u->jvm_probe_ns = 0;
	}
	if (u->jvm_probe_ns >= HS_MAX_TABLE_NS) {
		jvm_retry(u, p); /* this second's time spent: not a try */
		return;
	}
	u->st.jvm_retries += p->jvm_tries > 0;
	hp = calloc(1, sizeof(*hp));
	if (!hp)
		return;
	err = hotspot__probe(u->pt, p->pp, hp, why, sizeof(why));
	if (err == -ENOTSUP) {
		u->st.jvm_unknown++;
		if (why[0] && u->warn) {
			/* (the symbolizer's probe finds the same: said once, here) */
			snprintf(msg, sizeof(msg), "process %u: %s", p->pid, why);
			u->warn(u->warn_ctx, msg);
		}
	} else if (!err && (err = hotspot__bpf(&hp->h, &bp)) && err != -EAGAIN) {
		u->st.jvm_unknown++;
		if (!u->jvm_warned && u->warn) {
			u->jvm_warned = true;
			snprintf(msg, sizeof(msg),
				 "process %u runs a HotSpot JVM (%s) whose frames bpfprof cannot "
				 "walk: %s; its stacks end at their first Java frame (its Java "
				 "methods are still named; said once for all JVMs)",
				 p->pid, hp->h.vm.release[0] ? hp->h.vm.release : "release unknown",
				 err == -ENOTSUP ? "its VM structures lack what the walk needs, or "
						   "place it where the walker does not read"
				 : err == -EINVAL ? "its code cache's bounds cannot be"
						  : strerror(-err));
			u->warn(u->warn_ctx, msg);
		}
		err = -ENOTSUP;
	}
	hotspot__proc_free(hp);
	free(hp);
	u->jvm_probe_ns += now_ns() - t0;
	u->st.jvm_probe_ns += thread_cputime_ns() - c0;
	p->jvm_err = err;
	if (err == -EAGAIN) {
		if (++p->jvm_tries >= PY_MAX_TRIES) {
			p->jvm_err = -ETIMEDOUT;
			return;
		}
		jvm_retry(u, p);
		return;
	}
	if (err || !u->k.hs_set)
		return;
	bp.start_time = p->start_time;
	bp.exec_id = p->exec_id;
	if (u->k.hs_set(u->k.ctx, p->pid, &bp))
		return;
	p->jvm = true;
	u->st.jvm_procs++;
}

/*
 * A JVM's first kernel entry, before load_maps() builds its files' unwind
 * tables (libjvm.so's take seconds on a loaded machine: the first JVM that
 * -a meets would have its stacks cut at the first compiled frame until
 * then): no mappings, so its native frames are walked by frame pointers as
 * for a process without an entry, and its Java frames by hotspot_procs.
 * load_maps() rewrites it in place with the tables.
 */
static void jvm_early_entry(struct unwinder *u, struct uproc *p)
{
	struct bp_uproc kp;

	if (!p->jvm || p->in_kernel || !u->k.proc_set)
		return;
	if (u->nr_in_kernel >= u->max_procs)
		evict_one_proc(u, p);
	memset(&kp, 0, sizeof(kp));
	kp.start_time = p->start_time;
	kp.exec_id = p->exec_id;
	kp.flags = (p->any_image ? UPROC_F_ANY_IMAGE : 0) | UPROC_F_HOTSPOT;
	if (u->k.proc_set(u->k.ctx, p->pid, &kp))
		return;
	p->in_kernel = true;
	u->nr_in_kernel++;
}

uint64_t unwinder__next_due_ns(const struct unwinder *u)
{
	return u->py_wake_by;
}

uint64_t unwinder__python_found_ns(const struct unwinder *u)
{
	return u->py_found_ns;
}

int unwinder__note_process(struct unwinder *u, const struct proc_id *id)
{
	uint32_t pid = id->pid;
	struct uproc *p;
	bool created;
	int err;

	p = proc_get(u, pid, &created);
	if (!p)
		return -ENOMEM;
	p->last_used = now_ns();
	if (!created && p->any_image && p->in_kernel && uproc_alive(u, p) &&
	    proc_alive(u, pid, id->start_time) && !hold_image(u, p, id)) {
		/* Installed ahead: now the ids are known. Rewrite the entry in
		 * place (no window without one), with this image's mappings. */
		p->any_image = false;
		p->start_time = id->start_time;
		p->exec_id = id->exec_id;
		p->vfork = id->vfork;
		p->sig = 0;
		python_probe(u, p);
		jvm_probe(u, p);
		err = load_maps(u, p);
		if (!err)
			return 0;
	}
	if (!created && p->start_time == id->start_time && p->exec_id == id->exec_id &&
	    p->in_kernel)
		return 0;
	if (!created &&
	    (p->any_image || p->start_time != id->start_time || p->exec_id != id->exec_id))
		proc_unload(u, p); /* exec, or a new process under a recycled pid */
	p->any_image = false;
	p->start_time = id->start_time;
	p->exec_id = id->exec_id;
	p->vfork = id->vfork;
	err = ptab__check_x86_64(u->pt, pid);
	if (!err)
		err = hold_image(u, p, id);
	if (!err) {
		python_probe(u, p);
		jvm_probe(u, p);
		jvm_early_entry(u, p);
	}
	if (!err)
		err = load_maps(u, p);
	if (err) {
		u->st.procs_skipped++;
		proc_forget(u, p);
	}
	return err;
}

int unwinder__refresh(struct unwinder *u, const struct proc_id *id)
{
	struct htab_entry *e = htab__find(u->procs, &id->pid, sizeof(id->pid));
	struct uproc *p;
	uint64_t now = now_ns(), sig;
	int err;

	if (!e)
		return unwinder__note_process(u, id);
	p = e->value;
	if (p->start_time != id->start_time || p->exec_id != id->exec_id || !p->pp)
		return unwinder__note_process(u, id);
	if (now - p->last_refresh < MAX(p->refresh_gap, REFRESH_MIN_NS))
		return 1;
	p->last_refresh = now;
	u->st.refreshes++;
	sig = p->sig;
	err = ptab__refresh(u->pt, p->pp);
	if (!err)
		err = load_maps(u, p);
	/* Nothing new: the pcs were in mappings left out (UNWIND_MAX_MAPS) or
	 * junk. Re-reading 30,000 mappings costs ~50 ms of CPU, so wait twice
	 * as long before the next one, up to REFRESH_MAX_NS; a change resets it. */
	if (!err && p->sig == sig)
		p->refresh_gap = MIN(MAX(p->refresh_gap, REFRESH_MIN_NS) * 2, REFRESH_MAX_NS);
	else
		p->refresh_gap = REFRESH_MIN_NS;
	/* New mappings: a libpython mapped after the exec (by the dynamic
	 * loader after the first notice, or dlopen()ed by an embedding program)
	 * makes a process that was not a Python one. (A vfork() child's
	 * mappings are its parent's until its exec: it stays unprobed.) */
	if (!err && p->sig != sig && p->py_err == -ENOENT && !p->vfork) {
		p->py_err = 0;
		python_probe(u, p);
		if (p->python) {
			p->sig = 0;
			err = load_maps(u, p);
		}
	}
	/* Likewise a libjvm.so (the java launcher dlopen()s it after its exec). */
	if (!err && p->sig != sig && p->jvm_err == -ENOENT && !p->vfork) {
		p->jvm_err = 0;
		jvm_probe(u, p);
		if (p->jvm) {
			p->sig = 0;
			err = load_maps(u, p);
		}
	}
	return err;
}

/* The entry of whatever image pid runs now, before its ids are known. */
static int hold_any_image(struct unwinder *u, uint32_t pid, struct pproc **pp)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };

	return ptab__get(u->pt, &id, pp);
}

int unwinder__install(struct unwinder *u, uint32_t pid)
{
	struct uproc *p;
	uint64_t ticks;
	bool created;
	int err;

	err = ptab__starttime(u->pt, pid, &ticks);
	if (!err)
		err = ptab__check_x86_64(u->pt, pid);
	if (err)
		return err;
	p = proc_get(u, pid, &created);
	if (!p)
		return -ENOMEM;
	if (!created)
		return 0;
	p->any_image = true;
	p->start_ticks = ticks;
	p->last_used = now_ns();
	err = hold_any_image(u, pid, &p->pp);
	if (!err)
		err = load_maps(u, p);
	if (err) {
		u->st.procs_skipped++;
		proc_forget(u, p);
	}
	return err;
}

/* The Pythons and JVMs that were still starting up and are due: looked at
 * again, the walker told of those found. */
static void probe_retries(struct unwinder *u, uint64_t now)
{
	struct htab_entry *e;
	size_t pos = 0;

	/* python_probe() sets them again for those still starting */
	u->py_retry_due = 0;
	u->py_wake_by = 0;
	while ((e = htab__next(u->procs, &pos))) {
		struct uproc *p = e->value;

		if (p->jvm_err == -EAGAIN && p->in_kernel) {
			if (now < p->jvm_retry_ns) {
				retry_at(u, p->jvm_retry_ns, p->jvm_tries);
			} else {
				/* (a gone process: its reads fail, the sweep forgets it) */
				jvm_probe(u, p);
				if (p->jvm) {
					p->sig = 0;
					load_maps(u, p);
				}
			}
		}
		if (p->py_err != -EAGAIN || !p->in_kernel)
			continue;
		if (now < p->py_retry_ns) {
			python_retry_at(u, p);
			continue;
		}
		/* Its mappings read again when the loader may have mapped its
		 * libpython since; when the interpreter's file was found, only its
		 * initialization is awaited (a probe of a gone process fails). */
		if (!p->py_wait && ptab__refresh(u->pt, p->pp))
			continue; /* gone: the sweep forgets it */
		python_probe(u, p);
		if (p->python) {
			p->sig = 0;
			load_maps(u, p);
		}
	}
}

void unwinder__tick(struct unwinder *u)
{
	uint64_t now = now_ns();
	struct htab_entry *e;
	size_t pos = 0;

	reclaim(u);
	if (u->py_retry_due && now >= u->py_retry_due)
		probe_retries(u, now);
	if (now - u->last_sweep < TICK_SWEEP_NS)
		return;
	u->last_sweep = now;
	/* Exited processes (or pid reused): their lists and references go. */
	while ((e = htab__next(u->procs, &pos))) {
		struct uproc *p = e->value;

		if (!uproc_alive(u, p))
			proc_forget(u, p);
	}
	/* Tables nobody used for idle_ns. */
	for (;;) {
		struct ufile *victim = NULL;

		pos = 0;
		while ((e = htab__next(u->files, &pos))) {
			struct ufile *f = e->value;

			/* (last_used may be later than now: set by the sweep above) */
			if (!f->refs && f != u->vdso && f->last_used + u->idle_ns < now) {
				victim = f;
				break;
			}
		}
		if (!victim)
			break;
		ufile_evict(u, victim); /* a remembered failure is just forgotten */
	}
}

/* --- life cycle ------------------------------------------------------------ */

struct unwinder *unwinder__new(const struct unwinder_opts *opts, const struct unwind_kops *kops)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	uint32_t max_chunks = opts && opts->max_chunks ? opts->max_chunks : 128;

	if (!u)
		return NULL;
	if (opts && opts->ptab) {
		u->pt = opts->ptab;
	} else {
		struct ptab_opts po = { .proc_root = opts ? opts->proc_root : NULL };

		u->pt = ptab__new(&po);
		u->own_pt = true;
	}
	if (kops)
		u->k = *kops;
	u->max_procs = opts && opts->max_procs ? opts->max_procs : 4096;
	u->seg_rows = opts && opts->seg_rows ? opts->seg_rows : SEG_ROWS;
	u->python = opts && opts->python;
	u->jvm = opts && opts->jvm;
	u->warn = opts ? opts->warn : NULL;
	u->warn_ctx = opts ? opts->warn_ctx : NULL;
	if (u->seg_rows < UNWIND_PAGE_MAX_ROWS)
		u->seg_rows = UNWIND_PAGE_MAX_ROWS;
	u->idle_ns =
		(uint64_t)(opts && opts->idle_table_secs ? opts->idle_table_secs : 60) * NS_PER_SEC;
	if (max_chunks > UNWIND_MAX_CHUNKS)
		max_chunks = UNWIND_MAX_CHUNKS;
	u->pool = upool__new(UNWIND_CHUNK_SLOTS, max_chunks, pool_grow, pool_shrink, u);
	u->files = htab__new();
	u->by_build_id = htab__new();
	u->procs = htab__new();
	if (!u->pt || !u->pool || !u->files || !u->by_build_id || !u->procs) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->last_sweep = now_ns();
	load_vdso(u);
	return u;
}

void unwinder__free(struct unwinder *u)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!u)
		return;
	if (u->procs) {
		while ((e = htab__next(u->procs, &pos))) {
			struct uproc *p = e->value;

			ptab__put(u->pt, p->pp);
			free(p->files);
			free(p->py_wait);
			free(p);
		}
	}
	/* A file may be listed under several keys: collect each once. */
	if (u->files) {
		struct ufile **all = NULL;
		size_t n = 0, cap = 0;

		pos = 0;
		while ((e = htab__next(u->files, &pos))) {
			struct ufile *f = e->value;
			bool seen = false;

			for (size_t i = 0; i < n && !seen; i++)
				seen = all[i] == f;
			if (seen || f == u->vdso)
				continue;
			if (array_grow((void **)&all, &cap, n + 1, sizeof(*all)))
				break; /* leak the rest at exit rather than double free */
			all[n++] = f;
		}
		for (size_t i = 0; i < n; i++)
			ufile_free(all[i]);
		free(all);
	}
	ufile_free(u->vdso);
	htab__free(u->procs);
	htab__free(u->files);
	htab__free(u->by_build_id);
	upool__free(u->pool);
	if (u->own_pt)
		ptab__free(u->pt);
	free(u);
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st)
{
	struct upool_stats ps;

	*st = u->st;
	st->procs = u->nr_in_kernel;
	upool__stats(u->pool, &ps);
	st->kernel_bytes = (uint64_t)ps.chunks * UNWIND_CHUNK_SLOTS * 8;
	st->used_bytes = ps.used_slots * 8;
}
