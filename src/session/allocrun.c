// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * allocrun.c - the --alloc engine (allocrun.h): memory profiles from the
 * C library's allocator. The allocation and free functions of the files a target maps
 * (malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign:
 * every file that defines malloc and free, glibc's libc.so.6 or a
 * statically linked allocator) are probed (collector/alloc.h); allocations
 * are sampled by bytes in BPF, one every --alloc BYTES on average, each
 * sampled one weighed by the inverse of its probability of being sampled,
 * 1 / (1 - exp(-size / period)), as pprof scales Go's heap profiles; what
 * was not freed when the profile is taken is in use.
 *
 * The files are a tenant's: opened and read through the process table
 * (proc/ptab.h), their symbols by sym/elfsym.h within its caps, probes
 * attached by the checked descriptor's kernel path. What a tenant can make
 * the probes record is bounded: in BPF the live table and the ring buffer,
 * here the distinct stacks kept (base/stacktab.h: each event brings its
 * stack by value, aggregates and live blocks name it by hash); each
 * overflow counted and reported.
 *
 * Go: the runtime samples its own allocations (one per
 * runtime.MemProfileRate bytes on average, when the program links
 * runtime.MemProfile) and records each through runtime.mProf_Malloc; a file
 * defining it, runtime.freeSpecial and runtime.mProf_Free gets entry probes
 * there (past each function's stack-check prologue, from the pc-line
 * table's stack deltas), every call recorded, weighed with the target's own
 * MemProfileRate, read from its memory (512 KiB, the default, when the
 * binary has no symbol table). The release (.go.buildinfo, else the table's
 * version) says which registers hold the arguments. Leading runtime.*
 * frames are left out of Go stacks, as runtime/pprof does.
 *
 * -- COMMAND: as bpfprof count does, the command is stopped at its exec and
 * at its entry point (its libraries mapped), probed, then let go. Only that
 * process is profiled (not what it starts); -p: the processes named.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session/allocrun.h"

#include "base/htab.h"
#include "base/log.h"
#include "base/stacktab.h"
#include "base/util.h"
#include "collector/freeprobe.h"
#include "proc/procfs.h"
#include "session/launch.h"
#include "session/scope.h"
#include "lang/gobuildinfo.h"
#include "proc/elffile.h"
#include "sym/elfcode.h"
#include "sym/elfobj.h"
#include "sym/elfsym.h"
#include "sym/symbolizer.h"

#define ALLOC_DRAIN_MS	 100
#define ALLOC_DRAIN_MAX	 65536 /* sampled allocations taken per drain: the loop stays responsive */
#define ALLOC_REFRESH_NS (1000 * NS_PER_MS) /* targets' mappings re-read (dlopen) */
#define ALLOC_MAX_FILES	 4		    /* files defining malloc probed per process */
#define ALLOC_MAX_FRAMES 512		    /* frames of a stack, inlined ones included */
#define ALLOC_MAX_PROCS	 131072		    /* processes -a and --cgroup look at */
#define ALLOC_MAX_NOTED	 64 /* -a: processes first seen noted per drain (their names) */
#define ALLOC_RESCAN_NS	 (10 * NS_PER_SEC) /* -a: the processes looked at again (new files) */
#define ALLOC_RESCAN_PER 256		   /* ... so many a drain (the guard's tick waits) */
#define ALLOC_TURN_NS	 (50 * NS_PER_MS)  /* ... and so much time a drain (then resumed) */
#define ALLOC_MAX_HELD	 256   /* -a: files probed (each one's probes cost every switch) */
#define ALLOC_MAX_LOOKED 65536 /* -a: files looked at (their verdicts remembered) */

/* Each function's names: aliases at one address merge under one of them
 * (sym/elfsym.h: glibc's free shows as cfree, memalign as __libc_memalign). */
static const char *const fn_names[ALLOC_FN_NR][3] = {
	[ALLOC_FN_MALLOC] = { "malloc", "__libc_malloc" },
	[ALLOC_FN_CALLOC] = { "calloc", "__libc_calloc" },
	[ALLOC_FN_REALLOC] = { "realloc", "__libc_realloc" },
	[ALLOC_FN_FREE] = { "free", "cfree", "__libc_free" },
	[ALLOC_FN_POSIX_MEMALIGN] = { "posix_memalign", "__posix_memalign" },
	[ALLOC_FN_ALIGNED_ALLOC] = { "aligned_alloc" },
	[ALLOC_FN_MEMALIGN] = { "memalign", "__libc_memalign" },
};

/* Go's runtime functions, and older names of them. */
enum { GO_MALLOC, GO_FREE_SPECIAL, GO_MPROF_FREE, GO_NR };
static const char *const go_names[GO_NR][2] = {
	[GO_MALLOC] = { "runtime.mProf_Malloc" },
	[GO_FREE_SPECIAL] = { "runtime.freeSpecial", "runtime.freespecial" },
	[GO_MPROF_FREE] = { "runtime.mProf_Free" },
};
static const uint32_t go_fn[GO_NR] = {
	[GO_MALLOC] = ALLOC_FN_GO_MALLOC,
	[GO_FREE_SPECIAL] = ALLOC_FN_GO_FREE_SPECIAL,
	[GO_MPROF_FREE] = ALLOC_FN_GO_MPROF_FREE,
};
#define GO_DEFAULT_RATE ALLOCRUN_GO_DEFAULT_RATE

/* A Go process probed: where its sampling rate lives, and the rate. */
struct goproc {
	uint32_t pid;
	bool rate_known; /* rate_addr is runtime.MemProfileRate */
	bool rate_read;	 /* rate was read from the process at least once */
	uint64_t rate_addr;
	int64_t rate;	 /* the last read (GO_DEFAULT_RATE until then, or without symbols) */
	bool off_warned; /* the program does not sample: said at attach */
};

/* Sampled allocations of one (process, stack), weighed. stack 0: none
 * (not read in BPF), or with lost, one the table could not hold or did not
 * know, or a live block whose event the full ring lost. */
struct agg_key {
	uint32_t tgid;
	uint32_t lost;
	uint64_t stack; /* the stack's hash (r->stacks holds it) */
};

struct agg {
	double alloc_objects, alloc_bytes, inuse_objects, inuse_bytes;
	uint64_t samples;
	bool go; /* sampled by the Go runtime: leading runtime.* frames left out */
	char comm[17];
};

struct allocrun {
	const struct options *o;
	uint64_t period;
	struct child ch;
	uint32_t *pids;
	size_t nr_pids;
	int *pidfds;
	struct ptab *ptab;
	struct symbolizer *sym;
	struct allocprof *ap;
	struct mfile **held; /* probed files, held open: the probes' paths name them */
	size_t nr_held, cap_held;
	struct htab *aggs;
	struct stacktab *stacks; /* each aggregate holds a reference to its stack */
	uint64_t stack_unknown;	 /* live blocks whose stack the table did not know */
	struct goproc *go;
	size_t nr_go, cap_go;
	uint64_t events, oom;
	uint64_t t0, t1;
	uint64_t next_refresh;
	/* -a, --cgroup: probes in every process mapping the files, the guard */
	bool all;
	int *cgroup_fds;
	struct htab *fseen; /* files looked at, each once (by serial) */
	struct htab *noted; /* processes whose mappings were noted for the names */
	size_t noted_now;
	struct allocguard g;
	uint64_t toggle_ns[2], toggle_max_ns, toggle_fails; /* [0] off, [1] on */
	uint64_t toggle_cpu_ns;				    /* this thread's CPU time in them */
	double scale;	  /* of the alloc values: time / time on */
	uint64_t calls0;  /* calls counted before the run (the probes going in) */
	uint32_t *rescan; /* the processes of this rescan */
	size_t nr_rescan, rescan_pos;
	uint64_t next_rescan;
	uint64_t rescan_max_ns;		 /* the longest turn of rescan work */
	unsigned rescan_turns;		 /* turns of this rescan */
	uint64_t rescan_until;		 /* this turn's rescan work ends then (0: not a rescan) */
	bool rescan_did;		 /* a file was looked at in this turn */
	uint64_t held_over, looked_over; /* files not probed, not looked at: the caps */
};

/* 1 / P(an allocation of size bytes is sampled), as pprof scales heap profiles. */
static double weight(uint64_t size, uint64_t period)
{
	double p;

	if (!size)
		return 1;
	p = -expm1(-(double)size / (double)period);
	return p > 0 ? 1 / p : 1;
}

/* Go's weight: runtime/pprof's scaleHeapSample (a rate of 0 or 1: every allocation). */
static double go_weight(uint64_t size, int64_t rate)
{
	return rate <= 1 ? 1 : weight(size, (uint64_t)rate);
}

static struct goproc *goproc_of(struct allocrun *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nr_go; i++)
		if (r->go[i].pid == pid)
			return &r->go[i];
	return NULL;
}

/* runtime.MemProfileRate read from the process (its value as of now). */
static void go_read_rate(struct allocrun *r, struct goproc *g)
{
	struct proc_id id = { .pid = g->pid, .exec_id = PROC_EXEC_ANY };
	struct pproc *p;
	int64_t v;

	if (!g->rate_known || ptab__get(r->ptab, &id, &p))
		return;
	if (ptab__read_mem(r->ptab, p, g->rate_addr, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
		if (!g->rate_read || v != g->rate)
			p_debug("process %u: runtime.MemProfileRate is %" PRId64, g->pid, v);
		g->rate = v;
		g->rate_read = true;
	}
	ptab__put(r->ptab, p);
}

/* The weight of a Go sample of size bytes in process pid. */
static double go_weight_of(struct allocrun *r, uint32_t pid, uint64_t size)
{
	struct goproc *g = goproc_of(r, pid);

	if (!g)
		return go_weight(size, GO_DEFAULT_RATE);
	if (g->rate_known && !g->rate_read)
		go_read_rate(r, g); /* its first sample: the runtime has set the rate by now */
	return go_weight(size, g->rate);
}

/* An estimate as a profile value: rounded, within [0, INT64_MAX] (pprof's
 * values are int64; a tenant's absurd sizes must not wrap a sum negative). */
static uint64_t value_of(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 9.2e18)
		return INT64_MAX;
	return (uint64_t)llround(x);
}

/*
 * The aggregate of (tgid, stack), made with a reference to its stack: ips
 * (nr frames) interned, or without ips (a live block) the stack the table
 * knows. A stack the table cannot hold (full: dropped, counted there) or
 * does not know goes to (tgid, lost). NULL: out of memory.
 */
static struct agg *agg_get(struct allocrun *r, uint32_t tgid, uint64_t stack, const uint64_t *ips,
			   uint32_t nr)
{
	struct agg_key k = { .tgid = tgid, .stack = stack };
	struct htab_entry *e = htab__find(r->aggs, &k, sizeof(k));
	bool created, ref = false;
	int err = 0;

	if (e)
		return e->value;
	if (stack == ALLOC_STACK_LOST) { /* its event lost to a full ring: counted there */
		k = (struct agg_key){ .tgid = tgid, .lost = 1 };
		stack = 0;
	} else if (stack) {
		if (ips || stacktab__find(r->stacks, stack, &nr))
			err = stacktab__get(r->stacks, stack, ips, nr);
		else
			err = -ENOENT;
		if (err == -ENOMEM)
			return NULL;
		if (err == -ENOENT)
			r->stack_unknown++;
		ref = !err;
		if (err) {
			k = (struct agg_key){ .tgid = tgid, .lost = 1 };
			e = htab__find(r->aggs, &k, sizeof(k));
			if (e)
				return e->value;
		}
	}
	e = htab__upsert(r->aggs, &k, sizeof(k), &created);
	if (e && created && !(e->value = calloc(1, sizeof(struct agg)))) {
		htab__remove(r->aggs, &k, sizeof(k));
		e = NULL;
	}
	if (!e && ref)
		stacktab__put(r->stacks, stack);
	return e ? e->value : NULL;
}

static void on_event(void *ctx, const struct alloc_event *ev)
{
	struct allocrun *r = ctx;
	struct agg *a = agg_get(r, ev->tgid, ev->stack, (const uint64_t *)ev->ips, ev->nr);
	bool go = ev->source == ALLOC_SRC_GO;
	double w = go ? go_weight_of(r, ev->tgid, ev->size) : weight(ev->size, r->period);

	r->events++;
	if (r->all && r->noted_now < ALLOC_MAX_NOTED &&
	    !htab__find(r->noted, &ev->tgid, sizeof(ev->tgid))) {
		struct proc_id id = { .pid = ev->tgid, .exec_id = PROC_EXEC_ANY };
		bool created;

		/* -a, --cgroup: a process first seen is noted while it lives (its
		 * stacks named even once it has exited); a few per drain */
		r->noted_now++;
		symbolizer__note_process(r->sym, &id);
		htab__upsert(r->noted, &ev->tgid, sizeof(ev->tgid), &created);
	}
	if (!a) {
		r->oom++;
		return;
	}
	if (!a->comm[0]) {
		memcpy(a->comm, ev->comm, 16);
		a->comm[16] = '\0';
	}
	a->samples++;
	a->go |= go;
	a->alloc_objects += w;
	a->alloc_bytes += w * (double)ev->size;
}

static void on_live(void *ctx, const struct alloc_live_key *k, const struct alloc_live *v)
{
	struct allocrun *r = ctx;
	struct agg *a = agg_get(r, k->tgid, v->stack, NULL, 0);
	double w = k->source == ALLOC_SRC_GO ? go_weight_of(r, k->tgid, v->size)
					     : weight(v->size, r->period);

	if (!a) {
		r->oom++;
		return;
	}
	a->inuse_objects += w;
	a->inuse_bytes += w * (double)v->size;
}

/*
 * How far past free's entry its probe goes (collector/freeprobe.h): past
 * glibc's NULL test on x86-64, where a probe on the first instruction is
 * single-stepped and one on the push after it emulated; 0: at the entry.
 * The first bytes of [start, end), the function as its symbol bounds it,
 * read from the file the symbols came from (bounded preads, sym/elfcode.h).
 */
static size_t free_skip(struct mfile *f, uint64_t start, uint64_t end)
{
	uint8_t code[FREEPROBE_BYTES];
	size_t want =
		end > start && end - start < sizeof(code) ? (size_t)(end - start) : sizeof(code);
	int fd = mfile__fd(f);
	struct elfcode *ec = fd >= 0 ? elfcode__open_fd(fd) : NULL;
	size_t skip = 0;
	bool is64 = false;
	ssize_t got;

	if (!ec)
		return 0;
	if (elfcode__machine(ec, &is64) == EM_X86_64 && is64) {
		got = elfcode__read(ec, start, code, want);
		if (got > 0)
			skip = alloc_free_probe_offset(code, (size_t)got);
	}
	elfcode__free(ec);
	return skip;
}

struct pcsp_first {
	uint64_t pc;
	bool found;
};

static int pcsp_first_frame(uint64_t start, uint64_t end, int32_t delta, void *ctx)
{
	struct pcsp_first *pf = ctx;

	(void)end;
	if (delta <= 0)
		return 0;
	pf->pc = start;
	pf->found = true;
	return 1;
}

/*
 * Where a Go function is probed: at its first pc with a frame (the stack
 * delta > 0), past the prologue's stack check whose morestack path jumps
 * back to the entry (a probe at the entry would count a call twice when the
 * goroutine's stack grows there); the entry for a function without a
 * frame (no stack check either). 0 or -ENOENT (not in the pc-line table).
 */
static int go_probe_pc(const struct gopclntab *g, uint64_t start, uint64_t *pc)
{
	struct pcsp_first pf = { 0 };
	ssize_t i = gopclntab__find(g, start);
	const char *name;
	uint64_t fs, fe;

	if (i < 0 || gopclntab__func(g, (size_t)i, &fs, &fe, &name) || fs != start)
		return -ENOENT;
	if (gopclntab__pcsp(g, (size_t)i, pcsp_first_frame, &pf) < 0 || !pf.found)
		*pc = start;
	else
		*pc = pf.pc;
	return *pc >= fs && *pc < fe ? 0 : -ENOENT;
}

/* The Go release of the file (its build information, else its pc-line table). 0 or -errno. */
static int go_release(struct mfile *f, const struct gopclntab *g, struct gobuild *b, bool *x86)
{
	int fd = mfile__fd(f), err = -ENOENT;
	struct elfcode *ec = fd >= 0 ? elfcode__open_fd(fd) : NULL;
	uint64_t va, len;
	bool is64 = false;
	int machine;
	void *buf;

	if (!ec)
		return -ENOEXEC;
	machine = elfcode__machine(ec, &is64);
	*x86 = machine == EM_X86_64;
	if (!is64 || (machine != EM_X86_64 && machine != EM_AARCH64)) {
		elfcode__free(ec);
		return -ENOEXEC;
	}
	if (!elfcode__first_writable(ec, &va, &len)) {
		len = len < GOBUILDINFO_SCAN ? len : GOBUILDINFO_SCAN;
		buf = malloc(len ? len : 1);
		if (buf) {
			ssize_t got = elfcode__read(ec, va, buf, (size_t)len);

			err = got > 0 ? gobuildinfo__parse(buf, (size_t)got, b) : -ENOENT;
			free(buf);
		}
	}
	elfcode__free(ec);
	if (err && gopclntab__version(g) == GOPCLNTAB_V118) { /* 1.18 or 1.19: both alike */
		snprintf(b->version, sizeof(b->version), "go1.18 or go1.19 (pc-line table)");
		b->minor = 18;
		err = 0;
	}
	return err;
}

/* A linked flag of the runtime read from the file (Go's linker sets it: the
 * value does not change at run time). 1, 0, or -errno. */
static int go_file_flag(struct mfile *f, const char *name)
{
	int fd = mfile__fd(f);
	Elf *elf = mfile__elf(f);
	struct elfcode *ec;
	uint64_t va;
	uint8_t v;
	ssize_t got;

	if (!elf || fd < 0 || elfobj__find(elf, name, 1, &va))
		return -ENOENT;
	ec = elfcode__open_fd(fd);
	if (!ec)
		return -ENOENT;
	got = elfcode__read(ec, va, &v, 1);
	elfcode__free(ec);
	return got == 1 ? v != 0 : -ENOENT;
}

/*
 * The Go runtime's memory-profiling functions of a file (at[GO_*] their
 * addresses), as probes: appended to fns/offs (n). The process's rate is
 * found. 0, or -errno (said: the file's Go allocations are not profiled).
 */
static int go_probes(struct allocrun *r, struct mfile *f, struct elfsym *es, const char *path,
		     const struct procmap *m, uint32_t pid, const uint64_t at[GO_NR], uint32_t *fns,
		     uint64_t *offs, size_t *n)
{
	const struct gopclntab *g = elfsym__gopclntab(es);
	struct goproc *gp;
	struct gobuild b = { .minor = 0 };
	unsigned pa, sa, fpa, fsa;
	bool x86 = false;
	uint64_t bias, va;
	int err;

	if (!g) {
		p_warn("%s: defines runtime.mProf_Malloc but has no Go pc-line table: its Go "
		       "allocations not profiled",
		       path);
		return -ENOENT;
	}
	err = go_release(f, g, &b, &x86);
	if (err) {
		p_warn("%s: Go release not known (%s): its Go allocations not profiled", path,
		       err == -ENOTSUP ? "build information older than Go 1.18"
				       : "no build information");
		return err;
	}
	if (!gobuildinfo__matches_pclntab(b.minor, gopclntab__version(g))) {
		p_warn("%s: its build information names %s, its pc-line table is another "
		       "release's (version %d): its Go allocations not profiled (which registers "
		       "hold the arguments is not known)",
		       path, b.version, (int)gopclntab__version(g));
		return -EINVAL;
	}
	if (gobuildinfo__mprof_malloc_args(b.minor, &pa, &sa) ||
	    gobuildinfo__free_special_args(b.minor, &fpa, &fsa) || (!x86 && b.minor < 18)) {
		p_warn("%s: built by %s, whose runtime passes arguments on the stack: its Go "
		       "allocations not profiled (Go 1.17 and later on x86-64, 1.18 on arm64)",
		       path, b.version);
		return -ENOTSUP;
	}
	for (int k = 0; k < GO_NR; k++) {
		uint64_t pc, off;
		uint32_t c = k == GO_MALLOC	    ? ALLOC_COOKIE(go_fn[k], pa, sa)
			     : k == GO_FREE_SPECIAL ? ALLOC_COOKIE(go_fn[k], fpa, fsa)
						    : ALLOC_COOKIE(go_fn[k], 0, 0);

		if (go_probe_pc(g, at[k], &pc) || elfsym__vaddr_to_off(es, pc, &off, NULL)) {
			p_warn("%s: %s not found in its pc-line table: its Go allocations not "
			       "profiled",
			       path, go_names[k][0]);
			*n -= (size_t)k;
			return -ENOENT;
		}
		p_debug("probing %s at %s+0x%" PRIx64 " (+%" PRIu64 " past its entry) in %u",
			go_names[k][0], path, off, pc - at[k], pid);
		fns[*n] = c;
		offs[(*n)++] = off;
	}
	p_debug("%s: built by %s: mProf_Malloc's address and size in arguments %u and %u", path,
		b.version, pa, sa);
	gp = goproc_of(r, pid);
	if (!gp) {
		if (array_grow((void **)&r->go, &r->cap_go, r->nr_go + 1, sizeof(*r->go))) {
			*n -= GO_NR;
			return -ENOMEM;
		}
		gp = &r->go[r->nr_go++];
		*gp = (struct goproc){ .pid = pid, .rate = GO_DEFAULT_RATE };
	}
	if (go_file_flag(f, "runtime.disableMemoryProfiling") == 1 && !gp->off_warned) {
		gp->off_warned = true;
		p_warn("process %u (%s): the Go runtime samples no allocation: its "
		       "runtime.MemProfileRate is 0, the program does not link runtime.MemProfile "
		       "(import runtime/pprof or net/http/pprof, or call runtime.MemProfile, to "
		       "turn its sampling on)",
		       pid, path);
	}
	if (mfile__elf(f) && !elfobj__find(mfile__elf(f), "runtime.MemProfileRate", 8, &va) &&
	    !elffile__load_bias(mfile__elf(f), m->start, m->offset, &bias)) {
		gp->rate_known = true;
		gp->rate_addr = va + bias;
		go_read_rate(r, gp); /* -- COMMAND: before the runtime's start: read again later */
		if (gp->rate_read && gp->rate == 0)
			gp->rate_read = false;
	} else {
		p_info("%s: no symbol table: its Go samples weighed with runtime.MemProfileRate's "
		       "default, %d bytes",
		       path, GO_DEFAULT_RATE);
	}
	return 0;
}

/* The allocator functions of one file that defines malloc and free: probed in pid. */
static int probe_file(struct allocrun *r, struct mfile *f, const char *path,
		      const struct procmap *m, uint32_t pid, bool *probed)
{
	Elf *elf = mfile__elf(f);
	struct elfsym *es = elf ? elfsym__open_elf(elf, (uint64_t)mfile__stat(f)->st_size) : NULL;
	uint64_t offs[ALLOC_FN_NR];
	uint32_t fns[ALLOC_FN_NR];
	bool have[ALLOC_FN_NR] = { false };
	uint64_t at[ALLOC_FN_NR], at_end[ALLOC_FN_NR], go_at[GO_NR];
	bool go_have[GO_NR] = { false }, libc, go;
	size_t n = 0, nsyms;
	struct errmsg em = { 0 };
	char kpath[64];
	int err;

	*probed = false;
	if (!es) {
		p_debug("%s: no symbols read: %s", path, elfsym__strerror(errno));
		return 0;
	}
	nsyms = elfsym__count(es);
	for (size_t i = 0; i < nsyms; i++) {
		const char *name;
		uint64_t start, end;

		if (elfsym__symbol(es, i, &name, &start, &end))
			break;
		for (int k = 0; k < ALLOC_FN_NR; k++)
			for (int a = 0; a < 3 && fn_names[k][a]; a++)
				if (!have[k] && !strcmp(name, fn_names[k][a])) {
					have[k] = true;
					at[k] = start;
					at_end[k] = end;
				}
		for (int k = 0; k < GO_NR && !strncmp(name, "runtime.", 8); k++)
			for (int a = 0; a < 2 && go_names[k][a]; a++)
				if (!go_have[k] && !strcmp(name, go_names[k][a])) {
					go_have[k] = true;
					go_at[k] = start;
				}
	}
	libc = have[ALLOC_FN_MALLOC] && have[ALLOC_FN_FREE];
	go = go_have[GO_MALLOC] && go_have[GO_FREE_SPECIAL] && go_have[GO_MPROF_FREE];
	if (!libc && !go)
		goto out;
	for (int k = 0; libc && k < ALLOC_FN_GO_MALLOC; k++) {
		uint64_t off;
		bool dup = false;

		if (!have[k] || elfsym__vaddr_to_off(es, at[k], &off, NULL))
			continue;
		if (k == ALLOC_FN_FREE) {
			size_t skip = free_skip(f, at[k], at_end[k]);

			if (skip)
				p_debug("%s: free probed past its NULL test at +%zu (a push the "
					"kernel emulates, not a single-stepped test)",
					path, skip);
			off += skip;
		}
		/* One probe per address (aligned_alloc is memalign in some glibcs). */
		for (size_t j = 0; j < n; j++)
			dup |= offs[j] == off;
		if (dup)
			continue;
		p_debug("probing %s at %s+0x%" PRIx64 " in %u", fn_names[k][0], path, off, pid);
		fns[n] = (uint32_t)k;
		offs[n++] = off;
	}
	if (go && go_probes(r, f, es, path, m, pid, go_at, fns, offs, &n) && !libc)
		goto out;
	err = mfile__kernel_path(f, kpath, sizeof(kpath));
	if (!err)
		err = allocprof__attach_file(r->ap, kpath, (int)pid, fns, offs, n, &em);
	if (err) {
		if (r->all)
			p_warn("%s: its allocator not probed: %s", path,
			       errmsg_said(&em) ? em.msg : strerror(-err));
		else
			p_warn("%s: its allocator not probed in %u: %s", path, pid,
			       errmsg_said(&em) ? em.msg : strerror(-err));
		goto out;
	}
	*probed = true;
	if (r->all)
		p_info("%s: %zu allocator functions probed in every process mapping it%s", path, n,
		       go ? " (the Go runtime's sampled allocations)" : "");
	else
		p_info("%s: %zu allocator functions probed in process %u%s", path, n, pid,
		       go ? " (the Go runtime's sampled allocations)" : "");
out:
	elfsym__free(es);
	return 0;
}

/* -a: the cap on files probed (tests make it smaller). */
static size_t max_held(void)
{
	const char *t = getenv("BPFPROF_TEST_ALLOC_MAX_HELD");
	uint64_t n;

	if (t && !parse_u64(t, 10, &n) && n && n < ALLOC_MAX_HELD)
		return (size_t)n;
	return ALLOC_MAX_HELD;
}

/*
 * -a, --cgroup: whether f is a file not looked at yet (then remembered as
 * looked at, whatever comes of it): 1, 0 seen before or past a cap (counted),
 * or -EAGAIN when a rescan's turn is spent and it looked at a file already
 * (f is left for the next turn).
 */
static int first_look(struct allocrun *r, struct mfile *f)
{
	uint64_t serial = mfile__serial(f);
	struct htab_entry *e;
	bool created;

	if (!r->fseen && !(r->fseen = htab__new()))
		return 0;
	if (htab__find(r->fseen, &serial, sizeof(serial)))
		return 0;
	if (r->rescan_until && r->rescan_did && now_ns() >= r->rescan_until)
		return -EAGAIN;
	if (htab__count(r->fseen) >= ALLOC_MAX_LOOKED) {
		if (!r->looked_over++) /* counted at each rescan: a lower bound of the files */
			p_warn("files newly mapped not looked at any more: at most %d files are "
			       "looked at",
			       ALLOC_MAX_LOOKED);
		return 0;
	}
	e = htab__upsert(r->fseen, &serial, sizeof(serial), &created);
	if (!e)
		return 0;
	r->rescan_did = true;
	if (r->nr_held >= max_held()) {
		if (!r->held_over++)
			p_warn("files newly mapped not probed any more: at most %zu files are "
			       "probed (each one's probes are taken off and put back at every "
			       "switch of the guard)",
			       max_held());
		return 0;
	}
	return 1;
}

/*
 * Every file of pid that defines malloc and free (at most ALLOC_MAX_FILES).
 * -a, --cgroup: each file once, whichever process maps it, at most
 * max_held() probed; in a rescan, -EAGAIN when its turn is spent (the
 * process is looked at again at the next turn: the files done are skipped).
 */
static int probe_process(struct allocrun *r, uint32_t pid)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };
	struct pproc *p;
	struct pmaps *pm;
	uint64_t seen[64];
	size_t nr_seen = 0, files = 0;
	int err, again = 0;

	err = ptab__get(r->ptab, &id, &p);
	if (err)
		return err;
	pm = ptab__maps(r->ptab, p);
	p_debug("process %u: %zu executable mappings", pid, pm->m.nr);
	for (size_t i = 0; i < pm->m.nr && files < ALLOC_MAX_FILES && nr_seen < 64; i++) {
		const struct procmap *m = &pm->m.maps[i];
		struct mfile *f;
		bool dup = false, probed;

		if (!m->path || m->path[0] != '/') /* the snapshot holds executable mappings only */
			continue;
		err = ptab__file(r->ptab, p, m, &f);
		if (err) {
			p_debug("%s: %s", m->path, strerror(-err));
			err = 0;
			continue;
		}
		for (size_t s = 0; s < nr_seen; s++)
			dup |= seen[s] == mfile__serial(f);
		if (dup) {
			mfile__put(r->ptab, f);
			continue;
		}
		seen[nr_seen++] = mfile__serial(f);
		/* -a, --cgroup: a file once, whichever process maps it (its probes are in every
		 * one), as bpfprof count's pass */
		if (r->all && (again = first_look(r, f)) != 1) {
			mfile__put(r->ptab, f);
			if (again)
				break;
			continue;
		}
		again = 0;
		probe_file(r, f, m->path, m, pid, &probed);
		if (probed && !array_grow((void **)&r->held, &r->cap_held, r->nr_held + 1,
					  sizeof(*r->held))) {
			r->held[r->nr_held++] = f;
			files++;
			continue;
		}
		files += probed;
		mfile__put(r->ptab, f);
	}
	pmaps__put(pm);
	ptab__put(r->ptab, p);
	if (again)
		return again;
	return files ? 0 : -ENOENT;
}

/* -- COMMAND's stops (session/launch.h). */
static int alloc_at_exec(void *ctx, uint32_t pid, struct errmsg *em)
{
	struct allocrun *r = ctx;
	int err = allocprof__target(r->ap, pid, true);

	if (!err)
		err = allocprof__attach_exec_stop(r->ap, em);
	return err;
}

static int alloc_at_entry(void *ctx, const char *path, uint64_t off, int pid, struct errmsg *em)
{
	return allocprof__attach_stop(((struct allocrun *)ctx)->ap, path, off, pid, em);
}

static void alloc_detach_stops(void *ctx)
{
	allocprof__detach_stops(((struct allocrun *)ctx)->ap);
}

/*
 * -- COMMAND: start it, stopped at its exec and then at its entry point,
 * where the loader has mapped its libraries. 0, or 1 (said; the command is
 * ended).
 */
static int start_command(struct allocrun *r)
{
	const struct launch_stops stops = {
		.ctx = r,
		.at_exec = alloc_at_exec,
		.at_entry = alloc_at_entry,
		.detach = alloc_detach_stops,
	};

	if (launch__start(&r->ch, r->o->cmd, r->ptab, &stops))
		return 1;
	r->pids = calloc(1, sizeof(*r->pids));
	if (!r->pids) {
		p_err("out of memory");
		child__abort(&r->ch);
		return 1;
	}
	r->pids[0] = (uint32_t)r->ch.pid;
	r->nr_pids = 1;
	return 0;
}

static bool targets_gone(struct allocrun *r)
{
	if (r->all)
		return false;
	if (r->ch.pid) {
		child__reap(&r->ch, false);
		return r->ch.exited;
	}
	for (size_t i = 0; i < r->nr_pids; i++)
		if (r->pidfds[i] < 0 || !procfs__pidfd_exited(r->pidfds[i]))
			return false;
	return true;
}

/* The targets' mappings re-read while they live: libraries they dlopen()ed
 * are named too. */
/*
 * -a, --cgroup: every ALLOC_RESCAN_NS the processes are listed again and
 * their files not seen yet (a container's own C library, a library
 * dlopen()ed) probed. The work is cut in turns, one a drain, so that the
 * drains and the guard's ticks keep their pace however many processes and
 * files a tenant makes: at most ALLOC_RESCAN_PER processes and
 * ALLOC_TURN_NS a turn, and no later than the end of the guard's
 * phase (past it, once a file or a process was done, the next turn resumes
 * where this one stopped). What one file costs (its symbols, read within
 * elfsym's own time budget) is the most a turn goes over.
 */
static uint64_t rescan_ns(void)
{
	const char *t = getenv("BPFPROF_TEST_ALLOC_RESCAN_MS"); /* tests: sooner */
	uint64_t ms;

	if (t && !parse_u64(t, 10, &ms) && ms && ms < 60000)
		return ms * NS_PER_MS;
	return ALLOC_RESCAN_NS;
}

static void rescan(struct allocrun *r, uint64_t now)
{
	const struct options *o = r->o;
	size_t end, start, before = r->nr_held;
	uint64_t t;

	if (r->rescan_pos >= r->nr_rescan) {
		if (now < r->next_rescan)
			return;
		r->next_rescan = now + rescan_ns();
		r->rescan_pos = r->nr_rescan = 0;
		r->rescan_turns = 0;
		if (!r->rescan && !(r->rescan = calloc(ALLOC_MAX_PROCS, sizeof(*r->rescan))))
			return;
		if (scope__pids(o->cgroups, r->cgroup_fds, o->nr_cgroups, r->rescan,
				ALLOC_MAX_PROCS, &r->nr_rescan, NULL))
			return;
	}
	t = now_ns();
	r->rescan_until = t + ALLOC_TURN_NS;
	if (allocguard__deadline(&r->g) > t && allocguard__deadline(&r->g) < r->rescan_until)
		r->rescan_until = allocguard__deadline(&r->g);
	r->rescan_did = false;
	start = r->rescan_pos;
	end = r->rescan_pos + ALLOC_RESCAN_PER < r->nr_rescan ? r->rescan_pos + ALLOC_RESCAN_PER
							      : r->nr_rescan;
	for (; r->rescan_pos < end; r->rescan_pos++) {
		if ((r->rescan_did || r->rescan_pos > start) && now_ns() >= r->rescan_until)
			break;
		if (probe_process(r, r->rescan[r->rescan_pos]) == -EAGAIN)
			break; /* this process again at the next turn */
	}
	r->rescan_until = 0;
	t = now_ns() - t;
	r->rescan_turns++;
	if (t > r->rescan_max_ns)
		r->rescan_max_ns = t;
	if (r->nr_held > before)
		p_info("%zu files newly mapped probed", r->nr_held - before);
	if (r->rescan_pos < r->nr_rescan)
		return;
	p_debug("rescan: %zu processes in %u turns, %zu files looked at so far, the longest "
		"turn %.1f ms",
		r->nr_rescan, r->rescan_turns, r->fseen ? htab__count(r->fseen) : 0,
		(double)r->rescan_max_ns / 1e6);
	if (r->held_over + r->looked_over)
		p_debug("rescan: %" PRIu64
			" files not probed (the cap of %zu files probed), %" PRIu64
			" times a file not looked at (the cap of %d files looked at)",
			r->held_over, max_held(), r->looked_over, ALLOC_MAX_LOOKED);
}

static void refresh(struct allocrun *r)
{
	for (size_t i = 0; i < r->nr_pids; i++) {
		struct proc_id id = { .pid = r->pids[i], .exec_id = PROC_EXEC_ANY };

		symbolizer__refresh_process(r->sym, &id);
	}
	for (size_t i = 0; i < r->nr_go; i++)
		go_read_rate(r, &r->go[i]);
}

static uint32_t rnd32(void)
{
	static uint64_t x;

	if (!x)
		x = now_ns() | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (uint32_t)(x >> 16);
}

/*
 * -a, --cgroup: the guard's tick (collector/allocguard.h). Calls are counted
 * only while the probes are in; when it says so, the probes are taken off
 * (the program switched off first) or put back (switched on last, the
 * window on starting then). Each switch's cost is measured.
 */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void guard_tick(struct allocrun *r)
{
	uint64_t c[ALLOC_C_NR], t, cpu, now;
	struct errmsg em = { 0 };
	bool was = r->g.engaged;
	enum allocguard_act act;
	int err;

	if (!r->all || !r->g.budget)
		return;
	allocprof__counters(r->ap, c);
	now = now_ns(); /* the window's edge: the switch follows at once */
	act = allocguard__tick(&r->g, now, c[ALLOC_C_CALLS] + c[ALLOC_C_FREES] + c[ALLOC_C_OTHERS],
			       rnd32());
	if (!was && r->g.engaged) {
		/* The frees of the windows off are unseen: in-use is not measured from now. */
		allocprof__track_live(r->ap, false);
		p_warn("the allocator's probes saw %.0f calls/s, over --alloc-budget %" PRIu64
		       ": from now on for %.0f%% of the time (windows of 1 s or more), the "
		       "allocations scaled by the time over the time on; in-use not measured",
		       r->g.rate, r->g.budget, r->g.duty * 100);
		p_debug("the scale assumes the calls of the windows off are like those of the "
			"windows on: biased for bursty programs; a process that lived only in "
			"windows off is missed");
	}
	if (act == ALLOCGUARD_NONE)
		return;
	t = now_ns();
	cpu = thread_cpu_ns();
	if (act == ALLOCGUARD_OFF) {
		allocprof__probes_off(r->ap);
	} else {
		err = allocprof__probes_on(r->ap, &em);
		allocguard__on_at(&r->g, now_ns());
		if (err && !r->toggle_fails++)
			p_warn("the allocator's probes not all put back: %s",
			       errmsg_said(&em) ? em.msg : strerror(-err));
	}
	r->toggle_cpu_ns += thread_cpu_ns() - cpu;
	t = now_ns() - t;
	r->toggle_ns[act == ALLOCGUARD_ON] += t;
	if (t > r->toggle_max_ns)
		r->toggle_max_ns = t;
}

/* Until the next drain: ALLOC_DRAIN_MS, or less to the end of the guard's phase. */
static uint64_t next_due(struct allocrun *r, uint64_t now)
{
	uint64_t d = r->all ? allocguard__deadline(&r->g) : 0;

	if (!d || d >= now + ALLOC_DRAIN_MS * NS_PER_MS)
		return now + ALLOC_DRAIN_MS * NS_PER_MS;
	return d > now ? d : now;
}

/* The run's clock, the guard and the rescans start. */
static void run_start(struct allocrun *r)
{
	r->t0 = now_ns();
	if (r->all) {
		uint64_t c[ALLOC_C_NR];

		allocprof__counters(r->ap, c);
		r->calls0 = c[ALLOC_C_CALLS] + c[ALLOC_C_FREES] + c[ALLOC_C_OTHERS];
		allocguard__init(&r->g, r->o->alloc_budget, r->t0, r->calls0);
		r->next_rescan = r->t0 + rescan_ns();
	}
	r->next_refresh = r->t0 + ALLOC_REFRESH_NS;
}

uint64_t allocrun__tick(struct allocrun *r, uint64_t now)
{
	r->noted_now = 0;
	allocprof__drain(r->ap, on_event, r, ALLOC_DRAIN_MAX);
	guard_tick(r);
	if (r->all)
		rescan(r, now);
	if (now >= r->next_refresh) {
		refresh(r);
		r->next_refresh = now + ALLOC_REFRESH_NS;
	}
	return next_due(r, now_ns());
}

bool allocrun__targets_gone(struct allocrun *r)
{
	return targets_gone(r);
}

void allocrun__stop(struct allocrun *r)
{
	/* What is left: the ring holds at most ALLOC_RING_BYTES of it. */
	allocprof__drain(r->ap, on_event, r, ALLOC_RING_BYTES / sizeof(struct alloc_event) + 1);
	r->t1 = now_ns();
	r->scale = r->all ? allocguard__scale(&r->g, r->t1) : 1;
}

/* One (process, stack)'s weighed values into the profile. */
static int add_agg(struct allocrun *r, struct profile *prof, const void *key, const struct agg *a,
		   uint32_t *ids)
{
	const struct agg_key *k = key;
	struct proc_id id = { .pid = k->tgid, .exec_id = PROC_EXEC_ANY };
	struct psample ps = { .pid = k->tgid, .comm = a->comm[0] ? a->comm : "[unknown]" };
	struct palloc v = {
		.alloc_objects = value_of(a->alloc_objects * r->scale),
		.alloc_bytes = value_of(a->alloc_bytes * r->scale),
		.inuse_objects = value_of(a->inuse_objects),
		.inuse_bytes = value_of(a->inuse_bytes),
	};
	uint32_t nr = 0, nf = 0;
	const uint64_t *ips = k->stack ? stacktab__find(r->stacks, k->stack, &nr) : NULL;
	int n = ips ? (int)nr : 0;

	if (a->go) {
		/* The runtime's own frames above the first frame of the program
		 * are left out, as runtime/pprof does (all kept if none is the
		 * program's). */
		int lead = 0;

		while (lead < n) {
			struct sym s[SYM_MAX_FRAMES];
			size_t ns = symbolizer__user_frames(r->sym, &id, ips[lead], false, s,
							    SYM_MAX_FRAMES);

			if (!ns || !s[ns - 1].name || strncmp(s[ns - 1].name, "runtime.", 8))
				break;
			lead++;
		}
		if (lead < n) {
			ips += lead;
			n -= lead;
		}
	}

	if (n <= 0) {
		int64_t f = profile__frame(prof, FRAME_OTHER,
					   k->lost ? "[stack lost]" : "[no stack]", NULL);

		if (f < 0)
			return (int)f;
		ids[nf++] = (uint32_t)f;
	}
	/* ips is leaf first; the profile's stacks are root first. Every
	 * address is a return address (the stack is taken at the return);
	 * functions inlined there (DWARF, Go) follow their caller. */
	for (int i = n - 1; i >= 0; i--) {
		struct sym s[SYM_MAX_FRAMES];
		size_t ns = symbolizer__user_frames(r->sym, &id, ips[i], false, s, SYM_MAX_FRAMES);

		for (size_t j = ns; j-- > 0 && nf < ALLOC_MAX_FRAMES;) {
			char buf[512];
			const char *name = sym__display(&s[j], buf, sizeof(buf));
			int64_t f = profile__frame_src(
				prof, &(struct pframe){ .name = name,
							.module = s[j].module,
							.kind = s[j].kind,
							.file = s[j].file,
							.line = s[j].line,
							.start_line = s[j].start_line });

			if (f < 0)
				return (int)f;
			ids[nf++] = (uint32_t)f;
		}
	}
	return profile__add_alloc(prof, &ps, ids, nf, &v);
}

/* -a, --cgroup: what the guard did, kept in the profile. */
static void guard_note(struct allocrun *r, struct profile_meta *m)
{
	uint64_t on = allocguard__on_ns(&r->g, r->t1), total = r->t1 - r->t0;
	double frac = total ? (double)on / (double)total : 1;

	if (!r->g.engaged)
		return;
	snprintf(m->note, sizeof(m->note),
		 "alloc_guard budget=%" PRIu64 " on_fraction=%.4f scale=%.3f windows=%" PRIu64
		 " toggles=%" PRIu64 " inuse=not_measured",
		 r->g.budget, frac, r->scale, r->g.windows, r->g.toggles);
}

int allocrun__take(struct allocrun *r, struct profile *prof, unsigned what)
{
	uint64_t c[ALLOC_C_NR];
	uint32_t ids[ALLOC_MAX_FRAMES + 1];
	struct profile_meta *m;
	size_t pos = 0;
	int err = 0;

	if (!(what & ALLOCRUN_INUSE) || r->g.engaged)
		; /* not measured (the guard's windows off): said, the values left 0 */
	else if (allocprof__live(r->ap, on_live, r))
		p_warn("the blocks in use could not be read: in-use values are incomplete");
	allocprof__counters(r->ap, c);
	for (struct htab_entry *e; !err && (e = htab__next(r->aggs, &pos));)
		err = add_agg(r, prof, e->key, e->value, ids);
	if (err)
		return err;
	m = profile__meta(prof);
	m->alloc_period = r->period;
	m->start_ns = 0;
	m->duration_ns = r->t1 - r->t0;
	m->lost = c[ALLOC_C_RING_FULL] + r->oom;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	if (r->all)
		guard_note(r, m);
	profile__sort(prof);
	return 0;
}

void allocrun__stats(struct allocrun *r, struct allocrun_stats *st)
{
	*st = (struct allocrun_stats){
		.period = r->period,
		.oom = r->oom,
		.t0 = r->t0,
		.t1 = r->t1,
		.all = r->all,
		.nr_go = r->nr_go,
		.nr_held = r->nr_held,
		.g = r->g,
		.calls0 = r->calls0,
		.toggle_ns = { r->toggle_ns[0], r->toggle_ns[1] },
		.toggle_max_ns = r->toggle_max_ns,
		.toggle_cpu_ns = r->toggle_cpu_ns,
		.scale = r->scale,
		.stack_unknown = r->stack_unknown,
	};
	stacktab__stats(r->stacks, &st->stacks);
	allocprof__counters(r->ap, st->c);
	for (size_t i = 0; i < r->nr_go; i++)
		st->go_off_warned |= r->go[i].off_warned;
}

const struct child *allocrun__child(const struct allocrun *r)
{
	return r->ch.pid ? &r->ch : NULL;
}

/* -v: what the program's load cost (the verifier's time, mostly). */
static void load_cost(struct allocrun *r)
{
	uint64_t ns, insns;

	allocprof__load_cost(r->ap, &ns, &insns);
	p_debug("allocator programs loaded in %.1f ms, %" PRIu64 " instructions verified",
		(double)ns / 1e6, insns);
}

/*
 * -a, --cgroup: the files of every process (or the cgroups'), each once,
 * probed in every process that maps them; the program counts bpfprof's
 * own calls apart, and --cgroup's filter is in BPF. The guard holds the
 * calls to --alloc-budget.
 */
static int start_all(struct allocrun *r)
{
	struct allocprof_scope scope = { .all = true };
	const struct options *o = r->o;
	struct errmsg em = { 0 };
	size_t n = 0;

	r->noted = htab__new();
	r->cgroup_fds = calloc(o->nr_cgroups ? o->nr_cgroups : 1, sizeof(*r->cgroup_fds));
	r->pids = calloc(ALLOC_MAX_PROCS, sizeof(*r->pids));
	if (!r->noted || !r->cgroup_fds || !r->pids) {
		p_err("out of memory");
		return 1;
	}
	for (size_t i = 0; i < o->nr_cgroups; i++)
		r->cgroup_fds[i] = -1;
	if (o->nr_cgroups && scope__open_cgroups(o->cgroups, o->nr_cgroups, r->cgroup_fds))
		return 1;
	scope.cgroup_fds = r->cgroup_fds;
	scope.nr_cgroups = (uint32_t)o->nr_cgroups;
	r->ap = allocprof__open_scope(r->period, &scope,
				      log_level() >= LOG_DEBUG && o->verbosity > 1, &em);
	if (!r->ap) {
		p_errmsg(&em);
		return 1;
	}
	if (scope__pids(o->cgroups, r->cgroup_fds, o->nr_cgroups, r->pids, ALLOC_MAX_PROCS, &n,
			"files that define malloc and free"))
		return 1;
	/* The files' probes are kept while the processes are looked at (which
	 * takes a while on a busy host), and put in together when the run and
	 * its guard start: no call traps unguarded. */
	allocprof__probes_off(r->ap);
	for (size_t i = 0; i < n; i++)
		probe_process(r, r->pids[i]); /* gone, a kernel thread: its files are others' too */
	if (!r->nr_held) {
		p_err("no file the %s map defines malloc and free, or none could be probed",
		      o->nr_cgroups ? "cgroups' processes" : "processes");
		return 1;
	}
	free(r->pids); /* targets_gone: never, for -a */
	r->pids = NULL;
	p_info("profiling allocations of %s (%zu files), one sample every %" PRIu64
	       " bytes on average; %s",
	       o->nr_cgroups ? "the cgroups' processes" : "every process", r->nr_held, r->period,
	       o->alloc_budget ? "the guard holds the calls under --alloc-budget" : "no guard");
	if (o->alloc_budget)
		p_debug("--alloc-budget %" PRIu64 " calls/s across the CPUs", o->alloc_budget);
	p_info("probes: %s", allocprof__mode(r->ap));
	/* The probes in (kept while the processes were looked at), the run at once. */
	if (allocprof__probes_on(r->ap, &em))
		p_warn("the allocator's probes not all attached: %s",
		       errmsg_said(&em) ? em.msg : "(no reason given)");
	if (!allocprof__probes(r->ap)) {
		p_err("no probe could be attached");
		return 1;
	}
	p_debug("%zu probes in", allocprof__probes(r->ap));
	load_cost(r);
	run_start(r);
	return 0;
}

int allocrun__start(struct allocrun *r)
{
	struct errmsg em = { 0 };
	int err;

	if (r->all)
		return start_all(r);
	r->ap = allocprof__open(r->period, log_level() >= LOG_DEBUG && r->o->verbosity > 1, &em);
	if (!r->ap) {
		p_errmsg(&em);
		return 1;
	}
	p_debug("allocator probes: %s", allocprof__mode(r->ap));
	load_cost(r);
	if (r->o->cmd_is_target) {
		if (start_command(r))
			return 1;
	} else {
		r->pids = calloc(r->o->nr_pids, sizeof(*r->pids));
		if (!r->pids) {
			p_err("out of memory");
			return 1;
		}
		memcpy(r->pids, r->o->pids, r->o->nr_pids * sizeof(*r->pids));
		r->nr_pids = r->o->nr_pids;
		for (size_t i = 0; i < r->nr_pids; i++) {
			if (allocprof__target(r->ap, r->pids[i], false)) {
				p_err("cannot add process %u to the targets", r->pids[i]);
				return 1;
			}
		}
	}
	r->pidfds = calloc(r->nr_pids, sizeof(*r->pidfds));
	if (!r->pidfds) {
		p_err("out of memory");
		return 1;
	}
	for (size_t i = 0; i < r->nr_pids; i++)
		r->pidfds[i] = -1;
	for (size_t i = 0; i < r->nr_pids; i++) {
		struct proc_id id = { .pid = r->pids[i], .exec_id = PROC_EXEC_ANY };

		r->pidfds[i] = r->ch.pid ? -1 : procfs__pidfd(r->pids[i]);
		err = probe_process(r, r->pids[i]);
		if (err == -ESRCH) {
			p_err("process %u not found", r->pids[i]);
			return 1;
		}
		if (err) {
			p_err("process %u: no file it maps defines malloc and free, or Go's "
			      "runtime.mProf_Malloc (%s)",
			      r->pids[i], strerror(-err));
			return 1;
		}
		/* Known now, while alive: stacks are named even after it exits. */
		symbolizer__note_process(r->sym, &id);
	}
	p_info("profiling allocations of %zu process%s (%zu probes), one sample every %" PRIu64
	       " bytes on average",
	       r->nr_pids, r->nr_pids == 1 ? "" : "es", allocprof__probes(r->ap), r->period);
	p_info("probes: %s", allocprof__mode(r->ap));
	run_start(r);
	if (r->ch.pid)
		kill(r->ch.pid, SIGCONT);
	return 0;
}

/* The stack table's cap: tests make it smaller (its overflow). */
static size_t stacks_cap(void)
{
	const char *t = getenv("BPFPROF_TEST_ALLOC_STACKS");
	uint64_t n;

	if (t && !parse_u64(t, 10, &n) && n && n < ALLOCRUN_STACKS)
		return (size_t)n;
	return ALLOCRUN_STACKS;
}

struct allocrun *allocrun__new(const struct options *o, struct ptab *pt, struct symbolizer *sym)
{
	struct allocrun *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	*r = (struct allocrun){ .o = o,
				.period = o->alloc_period,
				.ch = CHILD_INIT,
				.all = o->all_cpus || o->nr_cgroups,
				.scale = 1,
				.ptab = pt,
				.sym = sym };
	r->aggs = htab__new();
	r->stacks = stacktab__new(stacks_cap(), ALLOC_STACK_DEPTH);
	if (!r->aggs || !r->stacks) {
		htab__free(r->aggs);
		stacktab__free(r->stacks);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void allocrun__free(struct allocrun *r)
{
	size_t pos = 0;

	if (!r)
		return;
	if (r->ch.pid && !r->ch.exited) /* -d, a stop request or a failed start: bpfprof ends it */
		child__abort(&r->ch);
	allocprof__free(r->ap);
	for (size_t i = 0; i < r->nr_held; i++)
		mfile__put(r->ptab, r->held[i]);
	free(r->held);
	for (struct htab_entry *e; (e = htab__next(r->aggs, &pos));)
		free(e->value);
	htab__free(r->aggs);
	stacktab__free(r->stacks);
	for (size_t i = 0; r->pidfds && i < r->nr_pids; i++)
		if (r->pidfds[i] >= 0)
			close(r->pidfds[i]);
	free(r->pidfds);
	free(r->pids);
	free(r->go);
	for (size_t i = 0; r->cgroup_fds && i < r->o->nr_cgroups; i++)
		if (r->cgroup_fds[i] >= 0)
			close(r->cgroup_fds[i]);
	free(r->cgroup_fds);
	htab__free(r->fseen);
	free(r->rescan);
	htab__free(r->noted);
	free(r);
}
