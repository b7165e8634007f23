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
 * runtime.MemProfile) and records each through runtime.mProf_Malloc in its
 * profile bucket, then runtime.setprofilebucket(p, b). Go 1.19 (the bucket
 * layout verified): with a symbol table the runtime's bucket list
 * (runtime.mbuckets) is polled each drain (go_poll_list: no trap per sample,
 * the allocations counted from the buckets' records, runtime.mProf_Flush
 * probed: a trap per GC), stripped x86-64 binaries too (the list's address
 * found in the runtime's code: go_find_mbuckets, go_list_check); else
 * setprofilebucket alone is probed, its calls counted by (process, bucket)
 * in BPF. Either way each bucket's size
 * and stack are read here once, its in-use counts every drain (go_drain,
 * go_inuse). Other releases: a
 * file defining mProf_Malloc, runtime.freeSpecial and runtime.mProf_Free gets entry probes
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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session/allocrun.h"

#include "base/htab.h"
#include "base/log.h"
#include "base/selfstat.h"
#include "base/stacktab.h"
#include "base/util.h"
#include "agent/metrics.h"
#include "collector/freeprobe.h"
#include "proc/procfs.h"
#include "session/launch.h"
#include "session/scope.h"
#include "lang/gobuildinfo.h"
#include "lang/sbcl.h"
#include "proc/elffile.h"
#include "sym/elfcode.h"
#include "sym/elfobj.h"
#include "sym/elfsym.h"
#include "sym/symbolizer.h"

#define ALLOC_DRAIN_MS	  100
#define ALLOC_DRAIN_MAX	  65536 /* sampled allocations taken per drain: the loop stays responsive */
#define ALLOC_REFRESH_NS  (1000 * NS_PER_MS) /* targets' mappings re-read (dlopen) */
#define ALLOC_MAX_FILES	  4		     /* files defining malloc probed per process */
#define ALLOC_MAX_FRAMES  512		     /* frames of a stack, inlined ones included */
#define ALLOC_MAX_PROCS	  131072	     /* processes -a and --cgroup look at */
#define ALLOC_MAX_NOTED	  64 /* -a: processes first seen noted per drain (their names) */
#define ALLOC_RESCAN_NS	  (10 * NS_PER_SEC) /* -a: the processes looked at again (new files) */
#define ALLOC_RESCAN_PER  256		    /* ... so many a drain (the guard's tick waits) */
#define ALLOC_TURN_NS	  (50 * NS_PER_MS)  /* ... and so much time a drain (then resumed) */
#define ALLOC_TOTAL_MAX	  65536 /* run-long (process, stack) totals (exited ones folded first) */
#define ALLOC_TOTAL_PIDS  1024	/* ... processes with their own; then one of pid 0 */
#define ALLOC_COMMS_MAX	  ALLOC_MAX_PROCS /* processes whose command name is kept */
#define ALLOC_FDS_RESERVE 64 /* -a: descriptors no file's probes take (output, symbols) */

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

/* Go's runtime functions, and older names of them: the first GO_PROBED are
 * probed, mProf_Free only looked for (a Go runtime's mark); setprofilebucket
 * probed alone where the release's bucket is verified. */
enum {
	GO_MALLOC,
	GO_FREE_SPECIAL,
	GO_MPROF_FREE,
	GO_SETPROFILEBUCKET,
	GO_MPROF_FLUSH,
	GO_STKBUCKET,	       /* looked for: its code names runtime.mbuckets (stripped) */
	GO_MPROF_FLUSH_LOCKED, /* ... and this one's, the cross-check */
	GO_NR,
	GO_PROBED = GO_MPROF_FREE
};
static const char *const go_names[GO_NR][2] = {
	[GO_MALLOC] = { "runtime.mProf_Malloc" },
	[GO_FREE_SPECIAL] = { "runtime.freeSpecial", "runtime.freespecial" },
	[GO_MPROF_FREE] = { "runtime.mProf_Free" },
	[GO_SETPROFILEBUCKET] = { "runtime.setprofilebucket" },
	[GO_MPROF_FLUSH] = { "runtime.mProf_Flush" },
	[GO_STKBUCKET] = { "runtime.stkbucket" },
	[GO_MPROF_FLUSH_LOCKED] = { "runtime.mProf_FlushLocked" },
};
static const uint32_t go_fn[GO_PROBED] = {
	[GO_MALLOC] = ALLOC_FN_GO_MALLOC,
	[GO_FREE_SPECIAL] = ALLOC_FN_GO_FREE_SPECIAL,
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
	/* its buckets polled (runtime.mbuckets, a symbol table's): no trap per sample */
	uint64_t mbuckets;    /* runtime.mbuckets's address; 0: not polled */
	uint64_t head_known;  /* the list's head at the last walk */
	uint64_t resume_at;   /* a walk stopped early: the first bucket it did not read */
	uint64_t resume_head; /* ... and the head it began at (go_poll_list) */
	uint64_t head_full;   /* the head last seen with the shared table full */
	unsigned layout;      /* the bucket layout's index */
	size_t nr_buckets;    /* buckets of its list kept (ALLOC_GO_BUCKETS_PROC at most) */
	bool walked;	      /* its list walked once (the buckets then: counted from then on) */
	uint64_t over;	      /* buckets of its list past that */
	char comm[16];
	bool walked_ok; /* a bucket of its list read (from_code: the list trusted) */
	bool from_code; /* mbuckets found in the runtime's code (stripped): its list's
			 * first bucket refused, the list is no longer polled */
	/* the process it was set up for: pid, start time and address space
	 * (go_same): GO_LIVE, else its buckets are not read again */
	uint64_t start_ticks, mm_sig;
	int gone;	/* GO_LIVE, GO_EXITED, GO_OTHER (its pid another's, or exec'd) */
	uint32_t walks; /* walks of its list begun */
	/* its list to poll once mProf_Flush's probe is in (go_poll_begin) */
	uint64_t pend_mbuckets;
	unsigned pend_layout;
	bool pend_from_code;
	/* its image not read at its probing (descriptors, memory): start_ticks
	 * the probing's time, the image read at the first go_same that can (a
	 * process started since: another) */
	bool ident_late;
	/* its in-use reads' first bucket: where the last one stopped (ptab__read_memv_from's
	 * bound), so that the buckets left unread are not always the same */
	size_t inuse_from;
};
#define ALLOC_GO_POLL_STEPS 4096 /* new buckets a walk of a polled list reads (then resumed) */
#define GO_LIVE		    0
#define GO_EXITED	    1
#define GO_OTHER	    2
#define ALLOC_GO_DROPS	    64 /* gone processes whose Go state is let go in a drain */

/*
 * Go's buckets (setprofilebucket's probe, alloc_abi.h): one a (process,
 * bucket) counted in BPF, read from the process once (size, stack) and its
 * in-use counts at each take; kept while the process lives (the map's
 * entries bound them), with the bucket's layout (cookie's, the key's pad).
 */
#define ALLOC_GO_INUSE_EVERY                                                                       \
	4096 /* a process's buckets whose in-use is read every drain; more: every s */
#define ALLOC_GO_READS 1024 /* new buckets read per drain (the others wait a drain) */

struct gobkt {
	uint64_t seen;	     /* the map's count taken so far */
	uint64_t size;	     /* each allocation's bytes */
	uint64_t stack;	     /* its stack's hash (a reference held); 0: none */
	uint32_t active_off; /* the memRecord's offset */
	int state; /* 0 not read yet, 1 read, -1 refused (not a bucket, unreadable), -2 gone */
	bool inuse_known;
	bool polled;   /* found in runtime.mbuckets: seen is its allocs, read from it */
	bool baseline; /* ... there before the first walk: its allocs until then not counted */
	double inuse_objects, inuse_bytes; /* as of the last read, weighed */
	char comm[17];
	uint32_t walk; /* polled: the last walk of its list that passed it (goproc's walks) */
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
	bool go;      /* sampled by the Go runtime: leading runtime.* frames left out */
	bool logical; /* a Go bucket's stack: an inlined call's callers have pcs of their own */
	char comm[17];
};

#define ALLOC_COMMS_SWEEP 4096 /* names checked after an interval's walk (start times read) */
#define ALLOC_COMMS_READS 64   /* start times of new names read per ALLOC_DRAIN_MS */

/* A process's command name (r->comms, by tgid): the first one seen, and
 * the start time of the process it was seen in (clock ticks; 0: unknown,
 * read at the next sweep). Another start time is another process. */
struct comm {
	char name[17];
	uint64_t start;
	uint64_t checked; /* the interval (r->comms_gen) another name was checked in */
	bool doubt;	  /* another process's maybe: the next event's name is taken */
};

/*
 * A span's edge: where the values of a set (cur, tick) start. Its
 * estimates are scaled by the guard over the span alone (time / time on),
 * its meta says when it started and what was lost in it.
 */
struct edge {
	uint64_t t;    /* now_ns() */
	uint64_t on;   /* allocguard__on_ns() then */
	uint64_t real; /* CLOCK_REALTIME then */
	uint64_t lost; /* ring full + userspace memory then */
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
	/* The sets of (process, stack) values (struct agg): cur since the
	 * interval's edge, tick since the tick's (want_ticks), inuse of one live
	 * walk. cur's and tick's each hold a reference to their stack; the live
	 * walk pins the stacks its blocks name (base/stacktab.h). */
	struct htab *aggs, *tick, *inuse;
	struct stacktab *stacks;
	uint64_t stack_unknown; /* live blocks whose stack the table did not know */
	uint64_t epoch;		/* live walks: each renews the pins */
	struct edge start, ivl, tickedge;
	struct profile *total; /* the run-long alloc_*: each interval merged in */
	struct htab *comms;    /* tgid -> struct comm: its name (the live blocks') */
	struct htab *alive;    /* one live walk: tgid -> 1 alive, 2 exited */
	bool sweep;	       /* this walk deletes the blocks of exited processes */
	uint64_t live_blocks;  /* the last walk's */
	double inuse_bytes;    /* ... and their weighed bytes */
	uint64_t live_dropped_exited, aggs_evicted;
	struct goproc *go;
	size_t nr_go, cap_go;
	size_t go_seen; /* Go processes set up during the run (the summary's gate) */
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
	uint64_t held_over, looked_over; /* not probed (cap, share, fds), not looked at */
	struct htab
		*others;  /* (pid, start) with an [other stacks] sample in the total -> its comm */
	uint32_t nr_sbcl; /* SBCL runtimes probed: their slots in the sbcl map */
	bool sbcl_said;	  /* in-use not measured for SBCL: said once (-v) */
	struct htab *sbcl_named;     /* (tgid, stack) named in this drain (sbcl_name_now) */
	uint64_t sbcl_name_ns;	     /* this drain's time naming SBCL's frames */
	bool sbcl_name_over;	     /* this drain's naming budget spent */
	uint64_t sbcl_unnamed;	     /* SBCL samples not named as they came (the budget) */
	uint64_t sbcl_write_unnamed; /* SBCL frames not named by the takes (their budget) */
	/* the process-name table's upkeep (comms_sweep) */
	int (*starttime)(struct ptab *t, uint32_t pid, uint64_t *ticks); /* NULL: ptab__starttime */
	size_t comms_pos;     /* the sweep's place in comms (a slot) */
	uint64_t comms_added; /* names noted since the last sweep */
	uint64_t comms_gen;   /* sweeps */
	uint64_t comms_turn;  /* when the reads of new names' start times were counted from */
	unsigned comms_reads; /* ... and how many since */
	uint64_t comms_gone, comms_reused; /* names the sweeps removed: process gone, pid reused */
	uint64_t comms_full;		   /* names not noted: the table full */
	/* allocrun__guard_thread: the guard ticks on a thread of its own, lock
	 * held by it and by allocrun__tick (everything that touches ap, g), and
	 * by guard_view for a copy of g (takes, stats, metrics) */
	pthread_t guard_tid;
	pthread_mutex_t lock;
	bool guard_threaded, guard_stop;
	/* allocrun__launch: -- COMMAND in the caller's struct child (released
	 * by the caller's SIGCONT, reaped by it) */
	bool launched;
	/* -a, --cgroup: cgroup (share_key) -> files first probed for its processes */
	struct htab *shares;
	bool share_said; /* the share's warning, once */
	/* Go's buckets: alloc_go_bkey -> struct gobkt */
	struct htab *gob;
	uint64_t go_bkt_over;	    /* samples of buckets not kept: the table full */
	uint64_t go_bkt_bad;	    /* samples of buckets refused (forged, unreadable) */
	uint64_t go_bkt_gone;	    /* samples of new buckets seen after their process exited */
	uint64_t go_bkt_read_ns;    /* userspace's time reading buckets (run-long) */
	uint64_t go_bkt_reads;	    /* buckets read (first reads and in-use reads) */
	uint64_t go_next_inuse;	    /* the next in-use read of many buckets */
	struct gobkt_new *new_bkts; /* this drain's new buckets (ALLOC_GO_READS) */
	size_t nr_new;
	unsigned go_refused_said;   /* refused buckets said (-v): the first few */
	uint64_t go_polled;	    /* samples counted from polled buckets */
	uint64_t go_poll_refused;   /* polled buckets refused */
	uint64_t go_reads_deferred; /* new buckets left for a later drain (the budget) */
	bool cap_said; /* the cap's warning, once (a share's refusal before it says its own) */
	bool fds_said; /* a file not probed for want of descriptors: said once */
	/* tgid -> the aggregates of cur and tick naming it (allocrun__references) */
	struct htab *refs;
	uint64_t go_poll_ended; /* polled processes that ended between polls */
	uint64_t go_other;	/* Go processes whose pid went to another image */
	/* the stack table's share of Go's buckets (go_stk_take): tgid -> buckets
	 * of it holding a stack reference; all of them */
	struct htab *go_stk;
	size_t go_stk_n;
	uint64_t go_stk_over;	  /* buckets kept without their stack: a share spent */
	uint64_t go_unnamed;	  /* samples counted without their stack (those buckets') */
	uint64_t go_bkts_refused; /* buckets refused (not a bucket, unreadable), both paths */
	uint64_t go_read_fails; /* reads of buckets' records or a polled list's head that failed */
	uint64_t go_list_over;	/* polled lists' buckets past their process's cap */
	/* -a, --cgroup: the stack table's share of one cgroup's Go buckets
	 * (go_stk_take): share_key -> struct gocg; each tgid of go_stk is
	 * charged to its cgroup's (the one it was in at its first stack) */
	struct htab *go_cg;
	uint64_t go_cg_over;	   /* of go_stk_over: past their cgroup's share */
	uint64_t go_reads_skipped; /* in-use reads not tried: a batch's failed pieces' bound */
	uint64_t sbcl_turn_ns;	   /* this turn's takes' time (allocrun__tick begins a turn) */
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

/*
 * Whether gp's process is the one it was set up for and still runs: the same
 * start time (not another process that took its pid) and address space (no
 * exec since: another image's addresses). Not: gp->gone set for good (its
 * polling stops; its buckets are not read again). A read that failed for
 * another reason (descriptors, memory): not for good, false this time.
 */
static bool go_same(struct allocrun *r, struct goproc *gp)
{
	uint64_t ticks = 0, sig = 0;
	int err;

	if (gp->gone)
		return false;
	err = ptab__image(r->ptab, gp->pid, &ticks, &sig);
	if (err && err != -ENOENT && err != -ESRCH)
		return false;
	if (!err && gp->ident_late && ticks <= gp->start_ticks) {
		gp->start_ticks = ticks; /* started before its probing: the process probed */
		gp->mm_sig = sig;
		gp->ident_late = false;
	}
	if (!err && ticks == gp->start_ticks && (!sig || !gp->mm_sig || sig == gp->mm_sig))
		return true;
	gp->gone = err ? GO_EXITED : GO_OTHER;
	if (gp->gone == GO_OTHER)
		r->go_other++;
	if (gp->mbuckets && gp->walked) /* its allocations since the last poll: lost */
		r->go_poll_ended++;
	gp->mbuckets = 0;
	return false;
}

/* runtime.MemProfileRate read from the process (its value as of now). */
static void go_read_rate(struct allocrun *r, struct goproc *g)
{
	struct proc_id id = { .pid = g->pid, .exec_id = PROC_EXEC_ANY };
	struct pproc *p;
	int64_t v;

	if (!g->rate_known || !go_same(r, g) || ptab__get(r->ptab, &id, &p))
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

/* Process tgid named by one aggregate more (d 1) or less (-1) of cur or
 * tick (r->refs). No memory: not counted (its names may go with it). */
static void refs_add(struct allocrun *r, uint32_t tgid, int d)
{
	struct htab_entry *e = r->refs ? htab__find(r->refs, &tgid, sizeof(tgid)) : NULL;
	bool created;

	if (!e && d > 0 && (r->refs || (r->refs = htab__new())))
		e = htab__upsert(r->refs, &tgid, sizeof(tgid), &created);
	if (!e)
		return;
	e->value = (void *)((uintptr_t)e->value + (uintptr_t)(intptr_t)d);
	if (!e->value)
		htab__remove(r->refs, &tgid, sizeof(tgid));
}

bool allocrun__references(const struct allocrun *r, uint32_t tgid)
{
	return r && r->refs && htab__find(r->refs, &tgid, sizeof(tgid));
}

/*
 * The aggregate of (tgid, stack) in set, made with a reference to its
 * stack: ips (nr frames) interned, or without ips the stack the table
 * knows. A stack the table cannot hold (full: dropped, counted there) or
 * does not know goes to (tgid, lost). pin (the live walk's set): no
 * reference, the stack pinned in this walk's epoch instead. NULL: out of
 * memory.
 */
static struct agg *agg_get(struct allocrun *r, struct htab *set, uint32_t tgid, uint64_t stack,
			   const uint64_t *ips, uint32_t nr, bool pin)
{
	struct agg_key k = { .tgid = tgid, .stack = stack };
	struct htab_entry *e = htab__find(set, &k, sizeof(k));
	bool created, ref = false;
	int err = 0;

	if (e)
		return e->value;
	if (stack == ALLOC_STACK_LOST) { /* its event lost to a full ring: counted there */
		k = (struct agg_key){ .tgid = tgid, .lost = 1 };
		stack = 0;
	} else if (stack && pin) {
		err = stacktab__pin(r->stacks, stack, r->epoch);
	} else if (stack) {
		if (ips || stacktab__find(r->stacks, stack, &nr))
			err = stacktab__get(r->stacks, stack, ips, nr);
		else
			err = -ENOENT;
		if (err == -ENOMEM)
			return NULL;
		ref = !err;
	}
	if (err) {
		if (err == -ENOENT)
			r->stack_unknown++;
		k = (struct agg_key){ .tgid = tgid, .lost = 1 };
		e = htab__find(set, &k, sizeof(k));
		if (e)
			return e->value;
	}
	e = htab__upsert(set, &k, sizeof(k), &created);
	if (e && created && !(e->value = calloc(1, sizeof(struct agg)))) {
		htab__remove(set, &k, sizeof(k));
		e = NULL;
	}
	if (!e && ref)
		stacktab__put(r->stacks, stack);
	if (e && created && !pin)
		refs_add(r, tgid, 1);
	return e ? e->value : NULL;
}

/* A set freed: its aggregates' references let go (pinned: it holds none). */
static void set_free(struct allocrun *r, struct htab *set, bool pinned)
{
	size_t pos = 0;

	if (!set)
		return;
	for (struct htab_entry *e; (e = htab__next(set, &pos));) {
		const struct agg_key *k = (const void *)e->key;

		if (!pinned && k->stack && !k->lost)
			stacktab__put(r->stacks, k->stack);
		if (!pinned)
			refs_add(r, k->tgid, -1);
		free(e->value);
	}
	htab__free(set);
}

/* A sampled allocation's weighed values into set's aggregate. false: out of memory. */
static bool set_add(struct allocrun *r, struct htab *set, const struct alloc_event *ev, double w)
{
	struct agg *a =
		agg_get(r, set, ev->tgid, ev->stack, (const uint64_t *)ev->ips, ev->nr, false);

	if (!a)
		return false;
	if (!a->comm[0]) {
		memcpy(a->comm, ev->comm, 16);
		a->comm[16] = '\0';
	}
	a->samples++;
	a->go |= ev->source == ALLOC_SRC_GO;
	a->alloc_objects += w;
	a->alloc_bytes += w * (double)ev->size;
	return true;
}

/* Start time of pid in clock ticks (proc/ptab.h). 0 or -errno. */
static int comm_start(struct allocrun *r, uint32_t pid, uint64_t *ticks)
{
	return r->starttime ? r->starttime(r->ptab, pid, ticks)
			    : ptab__starttime(r->ptab, pid, ticks);
}

/* Whether a start time may be read now: ALLOC_COMMS_READS per
 * ALLOC_DRAIN_MS (a tenant's new processes cost the loop so much). */
static bool comms_read_ok(struct allocrun *r)
{
	uint64_t now = now_ns();

	if (now - r->comms_turn >= ALLOC_DRAIN_MS * NS_PER_MS) {
		r->comms_turn = now;
		r->comms_reads = 0;
	}
	if (r->comms_reads >= ALLOC_COMMS_READS)
		return false;
	r->comms_reads++;
	return true;
}

/*
 * The process's command name kept for its live blocks (the first one seen),
 * with its start time: read once when the process is first seen (past the
 * reads' pace, or when the read fails, left for the sweep). A process
 * already gone is not noted (its pid may be another's by the sweep): its
 * blocks go at the next walk, named by this interval's events. An event
 * under another name (another thread's, or another process's with the
 * pid) reads the start time again, once an interval while it finds the
 * same process: another process's name replaces the old one at once.
 */
static void note_comm(struct allocrun *r, uint32_t tgid, const char *comm)
{
	struct htab_entry *e = htab__find(r->comms, &tgid, sizeof(tgid));
	struct comm *c;
	bool created;
	uint64_t t;

	if (e) {
		c = e->value;
		if (c->doubt) {
			memcpy(c->name, comm, 16);
			c->doubt = false;
			return;
		}
		if (c->start && c->checked != r->comms_gen && strncmp(c->name, comm, 16) &&
		    comms_read_ok(r)) {
			if (comm_start(r, tgid, &t) || t == c->start) {
				c->checked = r->comms_gen;
			} else {
				memcpy(c->name, comm, 16);
				c->start = t;
				r->comms_reused++;
			}
		}
		return;
	}
	if (htab__count(r->comms) >= ALLOC_COMMS_MAX) {
		r->comms_full++;
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	memcpy(c->name, comm, 16);
	c->checked = UINT64_MAX; /* read at its first other name */
	if (comms_read_ok(r)) {
		int err = comm_start(r, tgid, &c->start);

		if (err == -ENOENT || err == -ESRCH) {
			free(c);
			return;
		}
		if (err)
			c->start = 0;
	}
	e = htab__upsert(r->comms, &tgid, sizeof(tgid), &created);
	if (!e) {
		free(c);
		return;
	}
	e->value = c;
	r->comms_added++;
}

static size_t test_cap(const char *name, size_t cap);

/* SBCL's new stacks named a drain (tests: fewer, BPFPROF_TEST_ALLOC_SBCL_NAME_STACKS). */
static size_t sbcl_name_stacks(void)
{
	return test_cap("BPFPROF_TEST_ALLOC_SBCL_NAME_STACKS", ALLOCRUN_SBCL_NAME_STACKS);
}

/* A take's time naming SBCL's frames (tests: less, BPFPROF_TEST_ALLOC_SBCL_WRITE_MS). */
static uint64_t sbcl_write_ns(void)
{
	return test_cap("BPFPROF_TEST_ALLOC_SBCL_WRITE_MS", ALLOCRUN_SBCL_WRITE_MS) * NS_PER_MS;
}

/*
 * An SBCL sample's frames named now, while the process lives: a Lisp
 * function's name is read from its heap and kept with the pc
 * (lang/sbcl.h), given as of then once the process is gone (a command's
 * profile is written after its exit). Names already kept are only checked:
 * once a drain for each (process, stack) (a consing loop brings the same
 * few stacks thousands of times a second).
 *
 * Within a budget a drain (ALLOCRUN_SBCL_NAME_STACKS new stacks,
 * ALLOCRUN_SBCL_NAME_MS of naming; a runtime's first name costs some 50 ms,
 * its heap indexed, the next ones 0.05-0.5 ms): a tenant's many distinct or
 * deep stacks do not hold the loop; a sample past it is counted
 * (sbcl_unnamed), its frames (or the rest of them) named when the profile
 * is written (unnamed if its process is gone by then), within that take's
 * own budget (allocrun__take).
 */
static void sbcl_name_now(struct allocrun *r, const struct alloc_event *ev)
{
	struct proc_id id = { .pid = ev->tgid, .exec_id = PROC_EXEC_ANY };
	struct agg_key k = { .tgid = ev->tgid, .stack = ev->stack };
	struct sym s[SYM_MAX_FRAMES];
	const uint64_t budget = ALLOCRUN_SBCL_NAME_MS * NS_PER_MS;
	bool created = false;
	uint64_t t0;

	if ((!r->sbcl_named && !(r->sbcl_named = htab__new())) ||
	    htab__find(r->sbcl_named, &k, sizeof(k)))
		return;
	if (r->sbcl_name_over || htab__count(r->sbcl_named) >= sbcl_name_stacks()) {
		r->sbcl_name_over = true;
		r->sbcl_unnamed++;
		return;
	}
	if (!htab__upsert(r->sbcl_named, &k, sizeof(k), &created) || !created)
		return;
	t0 = now_ns();
	for (uint32_t i = 0; i < ev->nr && i < ALLOC_STACK_DEPTH; i++) {
		if (i % 8 == 7 && r->sbcl_name_ns + (now_ns() - t0) >= budget) {
			r->sbcl_unnamed++; /* the rest named at the writing */
			break;
		}
		symbolizer__user_frames(r->sym, &id, ev->ips[i], false, s, SYM_MAX_FRAMES);
	}
	r->sbcl_name_ns += now_ns() - t0;
	if (r->sbcl_name_ns >= budget)
		r->sbcl_name_over = true;
}

static void on_event(void *ctx, const struct alloc_event *ev)
{
	struct allocrun *r = ctx;
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
	note_comm(r, ev->tgid, ev->comm);
	if (ev->source == ALLOC_SRC_SBCL)
		sbcl_name_now(r, ev);
	if (!set_add(r, r->aggs, ev, w) || (r->tick && !set_add(r, r->tick, ev, w)))
		r->oom++;
}

static bool exited(struct allocrun *r, uint32_t tgid);
static bool gone_now(struct allocrun *r, uint32_t tgid);
static bool is_target(const struct allocrun *r, uint32_t pid);

/* a + b, at most UINT64_MAX (a forged record's counts are any words). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static size_t stacks_cap(void);

/* The stack table's share of all Go buckets (half: the other half is the
 * C library's, SBCL's and the aggregates'), and of one process's (an
 * eighth of the table, at most ALLOC_GO_BUCKETS_PROC): a bucket's stack
 * holds its entry while its process lives, unevictable. */
static size_t go_stk_cap(void)
{
	return stacks_cap() / 2 ? stacks_cap() / 2 : 1;
}

static size_t go_stk_cap_proc(void)
{
	size_t n = stacks_cap() / 8;

	return n > ALLOC_GO_BUCKETS_PROC ? ALLOC_GO_BUCKETS_PROC : n ? n : 1;
}

/* -a, --cgroup: the share of one cgroup's Go processes together (half of
 * Go's): a tenant's forgers, however many processes, leave the other half
 * to the other cgroups' Go processes. The root cgroup ("": the host's own
 * processes; a tenant cannot move there) has none of its own. */
static size_t go_stk_cap_cgroup(void)
{
	return go_stk_cap() / 2 ? go_stk_cap() / 2 : 1;
}

/* A process's charge (go_stk's values): its stacks, and the cgroup they are
 * also charged to (go_cg: key -> stacks; "": none, -p, --, the root cgroup).
 * Kept with no stack while its process's buckets are (go_drop lets go):
 * a process refused its first stack reads its cgroup once. */
struct gocharge {
	size_t n;
	char key[];
};

static void share_key(struct allocrun *r, uint32_t pid, char *key, size_t size);

static size_t go_cg_count(const struct allocrun *r, const char *key)
{
	struct htab_entry *e = key[0] && r->go_cg ? htab__find(r->go_cg, key, strlen(key)) : NULL;

	return e ? (size_t)(uintptr_t)e->value : 0;
}

/* go_cg's count of key (not ""), plus delta (+1, -1); removed at 0. */
static bool go_cg_add(struct allocrun *r, const char *key, int delta)
{
	struct htab_entry *e;
	size_t n;
	bool created;

	if (!key[0])
		return true;
	if (!r->go_cg && !(r->go_cg = htab__new()))
		return false;
	e = delta > 0 ? htab__upsert(r->go_cg, key, strlen(key), &created)
		      : htab__find(r->go_cg, key, strlen(key));
	if (!e)
		return delta < 0;
	n = (size_t)(uintptr_t)e->value;
	if (delta < 0 && n <= 1)
		htab__remove(r->go_cg, key, strlen(key));
	else
		e->value = (void *)(uintptr_t)(delta > 0 ? n + 1 : n - 1);
	return true;
}

/* Process tgid's charge, made (its cgroup read: -a, --cgroup) if new;
 * NULL without memory. */
static struct gocharge *go_charge(struct allocrun *r, uint32_t tgid)
{
	struct htab_entry *e = r->go_stk ? htab__find(r->go_stk, &tgid, sizeof(tgid)) : NULL;
	char key[512]; /* as the files' shares (probe_file) */
	struct gocharge *c;
	bool created;

	if (e)
		return e->value;
	key[0] = '\0';
	if (r->all)
		share_key(r, tgid, key, sizeof(key));
	c = calloc(1, sizeof(*c) + strlen(key) + 1);
	if (!c || (!r->go_stk && !(r->go_stk = htab__new())) ||
	    !(e = htab__upsert(r->go_stk, &tgid, sizeof(tgid), &created))) {
		free(c);
		return NULL;
	}
	memcpy(c->key, key, strlen(key) + 1);
	e->value = c;
	return c;
}

/* Process tgid's charge let go (its buckets gone: go_drop, go_inuse's sweep)
 * once it holds no stack. */
static void go_charge_drop(struct allocrun *r, uint32_t tgid)
{
	struct htab_entry *e = r->go_stk ? htab__find(r->go_stk, &tgid, sizeof(tgid)) : NULL;
	struct gocharge *c = e ? e->value : NULL;

	if (c && !c->n)
		free(htab__remove(r->go_stk, &tgid, sizeof(tgid)));
}

/* Whether a bucket of process tgid may hold a stack of the table (then
 * charged to it and to its cgroup). Not: its share (its own, its cgroup's,
 * or Go's) spent, counted and said; the bucket is kept without its stack,
 * its samples counted as [no stack]. */
static bool go_stk_take(struct allocrun *r, uint32_t tgid, const char *comm)
{
	struct gocharge *c = go_charge(r, tgid);
	size_t n = c ? c->n : 0;
	bool cg_full = c && n < go_stk_cap_proc() && c->key[0] &&
		       go_cg_count(r, c->key) >= go_stk_cap_cgroup();

	if (r->go_stk_n >= go_stk_cap() || n >= go_stk_cap_proc() || cg_full) {
		if (cg_full)
			r->go_cg_over++;
		if (cg_full && r->go_cg_over == 1)
			p_warn("process %u (%s) of cgroup %s: its Go buckets past its cgroup's "
			       "share of the stack table (%zu stacks the Go processes of one cgroup "
			       "together, of the %zu of all Go processes): their samples counted "
			       "without their stack ([no stack]), counted "
			       "(bpfprof_alloc_go_buckets_lost_total{reason=\"cgroup_share\"})",
			       tgid, comm, c->key, go_stk_cap_cgroup(), go_stk_cap());
		r->go_stk_over++;
		if (!cg_full && r->go_stk_over - r->go_cg_over == 1) {
			p_warn("process %u (%s): its Go buckets past %s share of the stack table "
			       "(%zu stacks a process, %zu all Go processes): their samples counted "
			       "without their stack ([no stack]), counted "
			       "(bpfprof_alloc_go_buckets_lost_total{reason=\"stack_share\"})",
			       tgid, comm, n >= go_stk_cap_proc() ? "its" : "the Go processes'",
			       go_stk_cap_proc(), go_stk_cap());
		}
		return false;
	}
	if (!c || !go_cg_add(r, c->key, 1)) {
		r->oom++;
		return false;
	}
	c->n++;
	r->go_stk_n++;
	return true;
}

/* A stack charged to process tgid given back (go_stk_take), to its cgroup's
 * share too; and released from the table when put (a bucket's reference). */
static void go_stk_give(struct allocrun *r, uint32_t tgid, uint64_t stack, bool put)
{
	struct htab_entry *e = r->go_stk ? htab__find(r->go_stk, &tgid, sizeof(tgid)) : NULL;
	struct gocharge *c = e ? e->value : NULL;

	if (put && stack)
		stacktab__put(r->stacks, stack);
	if (!c || !c->n)
		return;
	r->go_stk_n--;
	go_cg_add(r, c->key, -1);
	c->n--;
}

/* A Go bucket's layout: the one its probe's cookie named (the key's pad). */
static int go_layout_of(const struct alloc_go_bkey *k, struct gobucket_layout *l)
{
	return gobuildinfo__bucket_layout_at(k->pad, l);
}

/*
 * A new bucket read from its process p (NULL: gone) (bounded: at most
 * GOBUCKET_READ bytes of that process's memory, once; pre: those bytes
 * read already, else NULL): its size and stack (interned, a reference
 * held), and its in-use counts if the read reached them. A forged or
 * unreadable one is refused: its samples counted (go_bkt_bad), nothing else.
 */
static void go_bucket_read(struct allocrun *r, struct pproc *p, const struct alloc_go_bkey *k,
			   struct gobkt *b, const uint8_t *pre)
{
	uint8_t buf[GOBUCKET_READ];
	struct gobucket_layout l;
	struct gobucket gb;
	ssize_t got = -ESRCH;
	uint64_t h, nstk;

	b->state = -1;
	if (go_layout_of(k, &l))
		return;
	if (!p) {
		b->state = -2; /* gone before its first read */
		return;
	}
	r->go_bkt_reads++;
	if (pre) {
		memcpy(buf, pre, sizeof(buf));
		got = sizeof(buf);
	} else {
		/* the header, then exactly the stack and the record (the bucket may end
		 * at its mapping's end), else the stack alone */
		got = ptab__read_mem(r->ptab, p, k->b, buf, l.hdr);
		if (got == (ssize_t)l.hdr) {
			memcpy(&nstk, buf + l.nstk_off, sizeof(nstk));
			if (nstk <= GOBUCKET_MAX_STACK) {
				size_t want = l.hdr + 8 * nstk + 32;

				got = ptab__read_mem(r->ptab, p, k->b, buf, want);
				if (got < (ssize_t)want)
					got = ptab__read_mem(r->ptab, p, k->b, buf, want - 32);
			}
		}
	}
	if (got == -ESRCH)
		b->state = -2;
	if (got <= 0 || gobucket__parse(buf, (size_t)got, &l, &gb)) {
		r->go_bkts_refused++;
		if (got <= 0 && got != -ESRCH)
			r->go_read_fails++;
		if (r->go_refused_said++ < 8) /* a tenant's flood: a few said, all counted */
			p_debug("process %u: Go bucket 0x%" PRIx64 " refused (%s)", k->tgid,
				(uint64_t)k->b,
				got <= 0 ? "not readable" : "not a memory-profile bucket");
		return;
	}
	b->state = 1;
	b->size = gb.size;
	b->active_off = gb.active_off;
	if (gb.nstk) {
		h = bp_stack_hash((const __u64 *)gb.stk, gb.nstk, BP_SEED_USTACK);
		if (h == ALLOC_STACK_LOST || !h)
			h = 2;
		if (go_stk_take(r, k->tgid, b->comm)) {
			if (!stacktab__get(r->stacks, h, gb.stk, gb.nstk))
				b->stack = h;
			else
				go_stk_give(r, k->tgid, 0, false);
		}
	}
	if ((size_t)got >= (size_t)gb.active_off + 32) {
		uint64_t act[4];
		struct goproc *g = goproc_of(r, k->tgid);

		memcpy(act, buf + gb.active_off, sizeof(act));
		gobucket__inuse(act, g ? g->rate : GO_DEFAULT_RATE, &b->inuse_objects,
				&b->inuse_bytes);
		b->inuse_known = true;
	}
}

/* n samples of bucket b into set's aggregate of (tgid, its stack). */
static bool go_set_add(struct allocrun *r, struct htab *set, uint32_t tgid, const struct gobkt *b,
		       uint64_t n, double w)
{
	struct agg *a = agg_get(r, set, tgid, b->stack, NULL, 0, false);

	if (!a)
		return false;
	if (!a->comm[0])
		memcpy(a->comm, b->comm, sizeof(a->comm));
	a->samples = sat_add(a->samples, n); /* a forged record's n: any word */
	a->go = true;
	a->logical = true;
	a->alloc_objects += w * (double)n;
	a->alloc_bytes += w * (double)n * (double)b->size;
	return true;
}

/* A new bucket waiting for its first read (this drain's, sorted by process). */
struct gobkt_new {
	struct alloc_go_bkey k;
	struct alloc_go_bval v;
	struct gobkt *b;
};

/* bucket b's samples counted since the last drain (v: the map's value). */
static void go_count_n(struct allocrun *r, const struct alloc_go_bkey *k, const char *comm,
		       struct gobkt *b, uint64_t n)
{
	bool created;
	double w;

	if (!n)
		return;
	r->events = sat_add(r->events, n);
	if (r->all && r->noted_now < ALLOC_MAX_NOTED &&
	    !htab__find(r->noted, &k->tgid, sizeof(k->tgid))) {
		struct proc_id id = { .pid = k->tgid, .exec_id = PROC_EXEC_ANY };

		r->noted_now++;
		symbolizer__note_process(r->sym, &id);
		htab__upsert(r->noted, &k->tgid, sizeof(k->tgid), &created);
	}
	note_comm(r, k->tgid, comm);
	if (b->state < 0) {
		if (b->state == -2)
			r->go_bkt_gone = sat_add(r->go_bkt_gone, n);
		else
			r->go_bkt_bad = sat_add(r->go_bkt_bad, n);
		return;
	}
	if (!b->stack)
		r->go_unnamed = sat_add(r->go_unnamed, n);
	w = go_weight_of(r, k->tgid, b->size);
	if (!go_set_add(r, r->aggs, k->tgid, b, n, w) ||
	    (r->tick && !go_set_add(r, r->tick, k->tgid, b, n, w)))
		r->oom++;
}

static void go_count(struct allocrun *r, const struct alloc_go_bkey *k,
		     const struct alloc_go_bval *v, struct gobkt *b)
{
	uint64_t n = v->count >= b->seen ? v->count - b->seen : v->count; /* a new entry */

	b->seen = v->count;
	go_count_n(r, k, v->comm, b, n);
}

/* One entry of the gobuckets map: its samples since the last drain; a new
 * bucket's wait for its read (go_read_new), ALLOC_GO_READS a drain. */
static void on_gobucket(void *ctx, const struct alloc_go_bkey *k, const struct alloc_go_bval *v)
{
	struct allocrun *r = ctx;
	struct htab_entry *e = r->gob ? htab__find(r->gob, k, sizeof(*k)) : NULL;
	struct gobkt *b;
	bool created;

	if (!e) {
		if ((!r->gob && !(r->gob = htab__new())) ||
		    htab__count(r->gob) >= ALLOC_GO_BUCKETS || !(b = calloc(1, sizeof(*b)))) {
			/* counted again each drain: an upper bound */
			r->go_bkt_over = sat_add(r->go_bkt_over, v->count);
			return;
		}
		e = htab__upsert(r->gob, k, sizeof(*k), &created);
		if (!e) {
			free(b);
			r->go_bkt_over = sat_add(r->go_bkt_over, v->count);
			return;
		}
		e->value = b;
		memcpy(b->comm, v->comm, 16);
	}
	b = e->value;
	if (b->state) {
		go_count(r, k, v, b);
		return;
	}
	if (r->nr_new >= ALLOC_GO_READS ||
	    (!r->new_bkts && !(r->new_bkts = malloc(ALLOC_GO_READS * sizeof(*r->new_bkts))))) {
		r->go_reads_deferred++; /* its samples taken at a later drain */
		return;
	}
	r->new_bkts[r->nr_new++] = (struct gobkt_new){ *k, *v, b };
}

static int gobkt_new_cmp(const void *a, const void *b)
{
	const struct gobkt_new *x = a, *y = b;

	return x->k.tgid < y->k.tgid ? -1 : x->k.tgid > y->k.tgid;
}

/*
 * This drain's new buckets read, a process at a time: one process_vm_readv
 * for all of its (GOBUCKET_READ bytes each), a bucket that read missed
 * (at its mapping's end, or not readable) read alone; then counted.
 */
static void go_read_new(struct allocrun *r)
{
	size_t n = r->nr_new;
	uint8_t *bufs = n ? malloc(n * GOBUCKET_READ) : NULL;
	uint64_t *addrs = n ? malloc(n * sizeof(*addrs)) : NULL;
	bool *ok = n ? malloc(n * sizeof(*ok)) : NULL;
	uint64_t t0 = now_ns();

	if (n > 1) /* none new: new_bkts may be NULL (qsort takes no NULL) */
		qsort(r->new_bkts, n, sizeof(*r->new_bkts), gobkt_new_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		struct gobkt_new *nb = r->new_bkts;
		struct proc_id id = { .pid = nb[i].k.tgid, .exec_id = PROC_EXEC_ANY };
		struct pproc *p = NULL;
		bool batch = false;

		for (j = i; j < n && nb[j].k.tgid == id.pid; j++)
			if (addrs)
				addrs[j - i] = nb[j].k.b;
		if (ptab__get(r->ptab, &id, &p))
			p = NULL;
		if (p && bufs && addrs && ok)
			batch = ptab__read_memv(r->ptab, p, addrs, j - i, GOBUCKET_READ, bufs + 0,
						ok) >= 0;
		for (size_t x = i; x < j; x++) {
			const uint8_t *pre =
				batch && ok[x - i] ? bufs + (x - i) * GOBUCKET_READ : NULL;

			go_bucket_read(r, p, &nb[x].k, nb[x].b, pre);
			go_count(r, &nb[x].k, &nb[x].v, nb[x].b);
		}
		if (p)
			ptab__put(r->ptab, p);
	}
	r->nr_new = 0;
	r->go_bkt_read_ns += now_ns() - t0;
	free(bufs);
	free(addrs);
	free(ok);
}

struct gobkt_ref {
	const struct alloc_go_bkey *k;
	struct gobkt *b;
};

static int gobkt_ref_cmp(const void *a, const void *b)
{
	const struct gobkt_ref *x = a, *y = b;

	return x->k->tgid < y->k->tgid ? -1 : x->k->tgid > y->k->tgid;
}

/*
 * The in-use counts of the buckets of process refs[0..n) (one process)
 * read again: one process_vm_readv for up to 1024 buckets. Unreadable
 * (gone): the last values kept. A polled process's: the whole record, its
 * allocations (active's and the future cycles') counted when count (a
 * drain's read). The record is not read atomically: a read racing
 * mProf_FlushLocked (which adds future[c] to active, then clears it) can
 * see future[c] twice. Its count is then held high ("never back": seen is
 * not lowered), so the next reads count nothing until the real sum passes
 * it: the run's total is right, an interval's off by at most that
 * bucket's allocations of one GC cycle, moved to the next (not lost, not
 * counted twice). Reading twice for a consistent pair would double the
 * drain's reads for that.
 */
static void go_inuse_read(struct allocrun *r, struct gobkt_ref *refs, size_t n, bool count)
{
	struct proc_id id = { .pid = refs[0].k->tgid, .exec_id = PROC_EXEC_ANY };
	struct goproc *g = goproc_of(r, id.pid);
	bool polled = g && g->mbuckets;
	bool same = !g || go_same(r, g);
	size_t rec = polled ? 128 : 32; /* memRecord: active, future[3]; or active */
	uint64_t *addrs = malloc(n * sizeof(*addrs)), *act = malloc(n * rec);
	bool *ok = malloc(n * sizeof(*ok));
	struct gobkt **bs = malloc(n * sizeof(*bs));
	const struct alloc_go_bkey **ks = malloc(n * sizeof(*ks));
	struct pproc *p;
	size_t m = 0, first = 0, stop = 0;
	ssize_t got;

	if (same && bs && ks && addrs && act && ok && !ptab__get(r->ptab, &id, &p)) {
		for (size_t i = 0; i < n; i++)
			if (refs[i].b->state > 0) {
				bs[m] = refs[i].b;
				ks[m] = refs[i].k;
				addrs[m++] = refs[i].k->b + refs[i].b->active_off;
			}
		n = m;
		first = g && n ? g->inuse_from % n : 0;
		got = n ? ptab__read_memv_from(r->ptab, p, addrs, n, rec, act, ok, first, &stop)
			: 0;
		if (got >= 0 && stop < n) /* not tried: the last values kept */
			r->go_reads_skipped = sat_add(r->go_reads_skipped, n - stop);
		if (got > 0)
			for (size_t i = 0; i < n; i++) {
				const uint64_t *a = act + i * (rec / 8);
				uint64_t total = 0;

				if (!ok[i] && (i + n - first) % n >= stop)
					continue; /* not tried (counted above) */
				if (!ok[i]) {
					r->go_read_fails++; /* the last values kept */
					continue;
				}
				gobucket__inuse(a, g ? g->rate : GO_DEFAULT_RATE,
						&bs[i]->inuse_objects, &bs[i]->inuse_bytes);
				bs[i]->inuse_known = true;
				if (!bs[i]->polled || !count)
					continue;
				for (int c = 0; c < 4; c++) /* allocs of active and future[0..2] */
					total = a[c * 4] > UINT64_MAX - total ? UINT64_MAX
									      : total + a[c * 4];
				if (bs[i]->baseline) { /* before the first walk: not this run's */
					bs[i]->baseline = false;
					bs[i]->seen = total;
				} else if (total >
					   bs[i]->seen) { /* a read racing the flush: never back */
					uint64_t d = total - bs[i]->seen;

					bs[i]->seen = total;
					/* a forged record's: the sum saturates */
					r->go_polled = d > UINT64_MAX - r->go_polled
							       ? UINT64_MAX
							       : r->go_polled + d;
					go_count_n(r, ks[i], bs[i]->comm, bs[i], d);
				}
			}
		if (g && n) /* the next read from the first bucket not tried (or from here) */
			g->inuse_from = stop < n ? (first + stop) % n : first;
		ptab__put(r->ptab, p);
		r->go_bkt_reads += n;
	}
	free(ks);
	free(bs);
	free(addrs);
	free(act);
	free(ok);
}

/*
 * A polled process's new buckets: runtime.mbuckets's list (new ones are
 * prepended) walked from its head to the last walk's head, each bucket read
 * once (go_bucket_read); at most ALLOC_GO_BUCKETS_PROC kept for the process
 * (a tenant's list is its own memory: any length, cycles). At most
 * ALLOC_GO_POLL_STEPS new buckets a walk: one stopped early (that, the table
 * full) keeps a cursor (resume_at, the first bucket not read; resume_head,
 * the head that walk began at), and the next walk reads from the cursor down
 * to the last head first, then from the new head down to resume_head: only
 * buckets not read yet, never the kept ones again (the list is
 * prepend-only). The walk's end: the last head, the list's end, a bucket
 * already kept (a cycle: a tenant's), an allnext that cannot be read (for
 * good: not read again each drain), the cap. The shared table full: no walk
 * (the head read only; counted in go_bkt_over).
 */
#define GO_WALK_DONE	1 /* reached its end */
#define GO_WALK_STOPPED 2 /* stopped at *cur (not read yet): resumed there */
#define GO_WALK_OFF	3 /* the list no longer polled */
/* ALLOC_GO_POLL_STEPS; tests: BPFPROF_TEST_GO_POLL_STEPS (fewer: walks resumed more often) */
static size_t go_poll_steps(void)
{
	static size_t steps;
	const char *t;
	uint64_t n;

	if (!steps) {
		t = getenv("BPFPROF_TEST_GO_POLL_STEPS");
		steps = t && !parse_u64(t, 10, &n) && n && n <= ALLOC_GO_POLL_STEPS
				? (size_t)n
				: ALLOC_GO_POLL_STEPS;
	}
	return steps;
}

static int go_walk(struct allocrun *r, struct goproc *gp, struct pproc *p, uint64_t *cur,
		   uint64_t stop, size_t *steps)
{
	for (;;) {
		struct alloc_go_bkey k = { .tgid = gp->pid, .pad = gp->layout, .b = *cur };
		struct htab_entry *e;
		struct gobkt *b;
		bool created;

		if (!*cur || *cur == stop)
			return GO_WALK_DONE;
		if (r->gob && htab__find(r->gob, &k, sizeof(k)))
			return GO_WALK_DONE; /* kept already: a cycle, or a list not prepend-only */
		if (gp->nr_buckets >= ALLOC_GO_BUCKETS_PROC) {
			gp->over++;
			r->go_list_over++;
			return GO_WALK_DONE; /* for good: not walked again */
		}
		if ((*steps)++ >= go_poll_steps())
			return GO_WALK_STOPPED; /* the rest at the next drain */
		if ((!r->gob && !(r->gob = htab__new())) ||
		    htab__count(r->gob) >= ALLOC_GO_BUCKETS || !(b = calloc(1, sizeof(*b)))) {
			r->go_bkt_over++;
			return GO_WALK_STOPPED;
		}
		e = htab__upsert(r->gob, &k, sizeof(k), &created);
		if (!e) {
			free(b);
			return GO_WALK_STOPPED;
		}
		e->value = b;
		b->polled = true;
		b->walk = gp->walks;
		b->baseline = !gp->walked;
		memcpy(b->comm, gp->comm, sizeof(gp->comm));
		gp->nr_buckets++;
		go_bucket_read(r, p, &k, b, NULL);
		if (b->state < 0)
			r->go_poll_refused++;
		if (b->state == -1 && gp->from_code && !gp->walked_ok) {
			/* the address found in its code (go_find_mbuckets) is not the
			 * runtime's list: nothing more read from it */
			p_warn("process %u (%s): the word its code names as runtime.mbuckets "
			       "(0x%" PRIx64 ") holds no memory-profile bucket: its Go allocations "
			       "no longer polled",
			       gp->pid, gp->comm, gp->mbuckets);
			gp->mbuckets = 0;
			return GO_WALK_OFF;
		}
		if (b->state > 0)
			gp->walked_ok = true;
		if (b->state > 0 && b->baseline) { /* its allocations so far: not this run's */
			uint64_t rec[16];

			if (ptab__read_mem(r->ptab, p, *cur + b->active_off, rec, sizeof(rec)) ==
			    sizeof(rec)) {
				b->seen = 0;
				for (int c = 0; c < 4; c++)
					b->seen = rec[c * 4] > UINT64_MAX - b->seen
							  ? UINT64_MAX
							  : b->seen + rec[c * 4];
				b->baseline = false;
			}
		}
		r->go_bkt_reads++;
		if (ptab__read_mem(r->ptab, p, *cur + 8, cur, sizeof(*cur)) != sizeof(*cur))
			return GO_WALK_DONE; /* allnext unreadable: the list's end, for good */
	}
}

static void go_poll_list(struct allocrun *r, struct goproc *gp)
{
	struct proc_id id = { .pid = gp->pid, .exec_id = PROC_EXEC_ANY };
	uint64_t head = 0, cur;
	struct pproc *p;
	size_t steps = 0;
	int res;

	if (!go_same(r, gp) || ptab__get(r->ptab, &id, &p))
		return;
	if (ptab__read_mem(r->ptab, p, gp->mbuckets, &head, sizeof(head)) != sizeof(head)) {
		r->go_read_fails++;
		ptab__put(r->ptab, p);
		return;
	}
	if (r->gob && htab__count(r->gob) >= ALLOC_GO_BUCKETS) {
		if (head != gp->head_known && head != gp->head_full)
			r->go_bkt_over++; /* new buckets not read (counted once a head) */
		gp->head_full = head;
		ptab__put(r->ptab, p);
		return;
	}
	gp->walks++;
	if (gp->resume_at) { /* the rest of a walk stopped early, down to the last head */
		cur = gp->resume_at;
		res = go_walk(r, gp, p, &cur, gp->head_known, &steps);
		if (res == GO_WALK_STOPPED) {
			gp->resume_at = cur;
			goto out;
		}
		gp->head_known = gp->resume_head;
		gp->resume_at = gp->resume_head = 0;
		gp->walked = true;
		if (res == GO_WALK_OFF)
			goto out;
	}
	cur = head;
	res = go_walk(r, gp, p, &cur, gp->head_known, &steps);
	if (res == GO_WALK_STOPPED) {
		gp->resume_at = cur;
		gp->resume_head = head;
	} else {
		gp->head_known = head;
		gp->walked = true;
	}
out:
	ptab__put(r->ptab, p);
}

/*
 * The Go buckets' in-use counts: read again for each live process (as of
 * its runtime's last GC), kept from the last read for one that exited (a
 * command's profile is written after its exit: as of up to one drain
 * before it). into: the live walk's set (pinned stacks), and sweep: the
 * buckets of exited processes then let go (here and in BPF).
 */
static void go_inuse(struct allocrun *r, struct htab *into, bool sweep, bool big_too)
{
	size_t n = r->gob ? htab__count(r->gob) : 0, pos = 0, m = 0, nr_del = 0, cap_del = 0;
	struct gobkt_ref *refs = n ? malloc(n * sizeof(*refs)) : NULL;
	struct alloc_go_bkey *del = NULL;
	uint64_t t0 = now_ns();

	if (!refs)
		return;
	for (struct htab_entry *e; m < n && (e = htab__next(r->gob, &pos));)
		refs[m++] = (struct gobkt_ref){ (const void *)e->key, e->value };
	qsort(refs, m, sizeof(*refs), gobkt_ref_cmp);
	for (size_t i = 0, j; i < m; i = j) {
		uint32_t tgid = refs[i].k->tgid;
		bool gone;

		for (j = i; j < m && refs[j].k->tgid == tgid; j++)
			;
		{
			struct goproc *g = goproc_of(r, tgid);

			/* its pid another's (or exec'd): never read (go_same); else the
			 * process's pidfd where it is a target's */
			gone = (g && !go_same(r, g) && g->gone) ||
			       (into ? exited(r, tgid) : gone_now(r, tgid));
		}
		/* a drain's: the processes with few buckets (a command's last ones are
		 * those of its exit), the others every second */
		if (!gone && (into || big_too || j - i <= ALLOC_GO_INUSE_EVERY))
			go_inuse_read(r, refs + i, j - i, !into); /* the buckets read (state 1) */
		for (size_t x = i; into && x < j; x++) {
			struct gobkt *b = refs[x].b;
			struct agg *a;

			if (b->state <= 0 || !b->inuse_known || !(b->inuse_objects > 0))
				continue;
			a = agg_get(r, into, tgid, b->stack, NULL, 0, true);
			if (!a) {
				r->oom++;
				continue;
			}
			if (!a->comm[0])
				memcpy(a->comm, b->comm, sizeof(a->comm));
			a->go = true;
			a->logical = true;
			a->inuse_objects += b->inuse_objects;
			a->inuse_bytes += b->inuse_bytes;
			r->inuse_bytes += b->inuse_bytes;
		}
		/* a take's sweep; a drain's: the processes not targets (one-shot runs
		 * too: BPF's tables are shared, short-lived processes must not fill them) */
		if (!gone || !(sweep || (!into && !is_target(r, tgid))))
			continue;
		if (!into)
			p_debug("process %u has exited: its %zu Go buckets let go", tgid, j - i);
		for (size_t x = i; x < j; x++)
			if (!array_grow((void **)&del, &cap_del, nr_del + 1, sizeof(*del)))
				del[nr_del++] = *refs[x].k;
	}
	r->go_bkt_read_ns += now_ns() - t0;
	free(refs);
	if (!del)
		return;
	allocprof__go_forget(r->ap, del, nr_del);
	for (size_t i = 0; i < nr_del; i++) {
		struct gobkt *b = htab__remove(r->gob, &del[i], sizeof(del[i]));

		if (b && b->stack)
			go_stk_give(r, del[i].tgid, b->stack, true);
		free(b);
		go_charge_drop(r, del[i].tgid);
	}
	free(del);
}

/* Whether pid is one of the run's targets (-p, -- COMMAND). */
static bool is_target(const struct allocrun *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nr_pids; i++)
		if (r->pids[i] == pid)
			return true;
	return false;
}

/* The Go buckets of processes tgids[0..n) let go: userspace's and BPF's
 * (gobuckets, gobucket_procs), their stacks released. */
static void go_drop(struct allocrun *r, const uint32_t *tgids, size_t n)
{
	size_t cnt = r->gob ? htab__count(r->gob) : 0, pos = 0, nr = 0;
	struct alloc_go_bkey *del = calloc(cnt + n, sizeof(*del));
	struct htab_entry *e;

	if (!del) {
		r->oom++;
		return;
	}
	for (size_t i = 0; i < n; i++) /* gobucket_procs' entry even without a bucket kept */
		del[nr++] = (struct alloc_go_bkey){ .tgid = tgids[i] };
	while (nr < cnt + n && (e = htab__next(r->gob, &pos))) {
		const struct alloc_go_bkey *k = (const void *)e->key;

		for (size_t i = 0; i < n; i++)
			if (k->tgid == tgids[i]) {
				del[nr++] = *k;
				break;
			}
	}
	allocprof__go_forget(r->ap, del, nr);
	for (size_t i = n; i < nr; i++) {
		struct gobkt *b = htab__remove(r->gob, &del[i], sizeof(del[i]));

		if (b && b->stack)
			go_stk_give(r, del[i].tgid, b->stack, true);
		free(b);
	}
	for (size_t i = 0; i < n; i++)
		go_charge_drop(r, tgids[i]);
	free(del);
}

/*
 * The Go processes checked (go_same) before their samples and buckets are
 * read (exited false): one whose pid went to another image (reused, exec'd)
 * has its buckets let go now - their addresses are not the new image's, and
 * its samples would be weighed with the old ones. After the read (exited
 * true): one that exited and is not a target likewise (its last in-use
 * reading is of no process; one-shot runs too: the tables it holds are
 * shared) - its samples since the last drain counted first (its buckets'
 * sizes and stacks are kept: no read of the process needed). A target that
 * exited keeps its last reading for the profile (a take's sweep lets it go).
 * At most ALLOC_GO_DROPS a call.
 */
static void go_check_all(struct allocrun *r, bool exited)
{
	uint32_t drop[ALLOC_GO_DROPS];
	size_t n = 0;

	for (size_t i = 0; i < r->nr_go && n < ALLOC_GO_DROPS;) {
		struct goproc *gp = &r->go[i];

		if (!exited)
			go_same(r, gp);
		if (exited ? gp->gone == GO_EXITED && !is_target(r, gp->pid)
			   : gp->gone == GO_OTHER) {
			p_debug("process %u %s: its Go state let go", gp->pid,
				gp->gone == GO_OTHER
					? "runs another image (exec, or its pid reused)"
					: "has exited");
			drop[n++] = gp->pid;
			if (gp->gone == GO_OTHER && is_target(r, gp->pid)) {
				gp->gone = GO_EXITED; /* kept: never read again, not set up again */
				i++;
				continue;
			}
			r->go[i] = r->go[--r->nr_go]; /* its entry goes too */
			continue;
		}
		i++;
	}
	if (n)
		go_drop(r, drop, n);
}

/* A drain of the Go buckets' counts (and of their in-use counts: every drain
 * for a process with few buckets, a command's last ones those of its exit;
 * every second for one with more). */
static void go_drain(struct allocrun *r, uint64_t now)
{
	if (!r->nr_go && !r->all)
		return;
	r->nr_new = 0;
	go_check_all(r, false);
	allocprof__go_buckets(r->ap, on_gobucket, r);
	go_read_new(r);
	go_check_all(r, true);
	for (size_t i = 0; i < r->nr_go; i++)
		if (r->go[i].mbuckets) {
			uint64_t t0 = now_ns();

			go_poll_list(r, &r->go[i]);
			r->go_bkt_read_ns += now_ns() - t0;
		}
	if (r->gob) {
		bool big = now >= r->go_next_inuse;

		go_inuse(r, NULL, false, big);
		if (big)
			r->go_next_inuse = now + ALLOC_REFRESH_NS;
	}
}

/* Whether process tgid has exited, asked now: a target's pidfd (its pid may be
 * another's by now), else kill(2). */
static bool gone_now(struct allocrun *r, uint32_t tgid)
{
	size_t i;

	for (i = 0; i < r->nr_pids && r->pids[i] != tgid; i++)
		;
	if (i < r->nr_pids && r->ch.pid)
		return r->ch.exited;
	if (i < r->nr_pids && r->pidfds && r->pidfds[i] >= 0)
		return procfs__pidfd_exited(r->pidfds[i]);
	return kill((pid_t)tgid, 0) && errno == ESRCH;
}

/* Whether process tgid has exited (one live walk asks once a process). */
static bool exited(struct allocrun *r, uint32_t tgid)
{
	struct htab_entry *e = htab__find(r->alive, &tgid, sizeof(tgid));
	bool created, gone;

	if (e)
		return e->value == (void *)2;
	gone = gone_now(r, tgid);
	e = htab__upsert(r->alive, &tgid, sizeof(tgid), &created);
	if (e)
		e->value = (void *)(uintptr_t)(gone ? 2 : 1);
	return gone;
}

/* A live block: into the walk's set, its stack pinned; true: delete it
 * (its process has exited: it is in this profile, the last one). */
static bool on_live(void *ctx, const struct alloc_live_key *k, const struct alloc_live *v)
{
	struct allocrun *r = ctx;
	struct agg_key ak = { .tgid = k->tgid, .stack = v->stack };
	struct agg *a = agg_get(r, r->inuse, k->tgid, v->stack, NULL, 0, true);
	bool go = k->source == ALLOC_SRC_GO;
	double w = go ? go_weight_of(r, k->tgid, v->size) : weight(v->size, r->period);

	if (!a) {
		r->oom++;
		return false;
	}
	if (!a->comm[0]) {
		/* the name its allocation's aggregate has (one-shot: always), else the process's */
		struct htab_entry *e = htab__find(r->aggs, &ak, sizeof(ak));
		const char *c = e ? ((const struct agg *)e->value)->comm : NULL;

		if (!c || !c[0]) {
			e = htab__find(r->comms, &k->tgid, sizeof(k->tgid));
			c = e ? ((const struct comm *)e->value)->name : NULL;
		}
		if (c)
			snprintf(a->comm, sizeof(a->comm), "%s", c);
	}
	a->go |= go;
	a->inuse_objects += w;
	a->inuse_bytes += w * (double)v->size;
	r->live_blocks++;
	r->inuse_bytes += w * (double)v->size;
	return r->sweep && exited(r, k->tgid);
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

/*
 * x86-64: where a Go function's stack check jumps to morestack, if its
 * prologue is Go's (collector/freeprobe.h): an instruction the kernel
 * emulates, a trap several times cheaper than the single-step of the first
 * instruction with a frame. 0 and *pc, or -ENOENT.
 */
static int go_check_pc(struct mfile *f, uint64_t start, uint64_t *pc)
{
	uint8_t code[GOPROBE_BYTES];
	int fd = mfile__fd(f);
	struct elfcode *ec = fd >= 0 ? elfcode__open_fd(fd) : NULL;
	ssize_t got;
	size_t at = 0;

	if (!ec)
		return -ENOENT;
	got = elfcode__read(ec, start, code, sizeof(code));
	if (got > 0)
		at = alloc_go_probe_offset(code, (size_t)got);
	elfcode__free(ec);
	if (!at)
		return -ENOENT;
	*pc = start + at;
	return 0;
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

#define GO_CODE_MAX 65536 /* the most bytes of a function's code decoded */

/*
 * runtime.mbuckets of an x86-64 binary without it in its symbols (-s -w):
 * named by runtime.stkbucket's memProfile branch and by mProf_FlushLocked's
 * first load of the zero-filled data (both found in the pc-line table, each
 * decoded up to its end): both must name the same address. The file is the
 * process's own: a forgery points its own poll at its own memory, and the
 * list is checked (go_list_check) and read as any other. 0 and *va, or
 * -ENOENT.
 */
static int go_find_mbuckets(struct mfile *f, const uint64_t at[GO_NR], const uint64_t end[GO_NR],
			    uint64_t typ, uint64_t *va)
{
	static const int fk[2] = { GO_STKBUCKET, GO_MPROF_FLUSH_LOCKED };
	int fd = mfile__fd(f), err = -ENOENT;
	struct elfcode *ec = fd >= 0 ? elfcode__open_fd(fd) : NULL;
	uint64_t lo, hi, got[2] = { 0, 0 };

	if (!ec)
		return -ENOENT;
	if (elfcode__first_zero_fill(ec, &lo, &hi))
		goto out;
	for (int i = 0; i < 2; i++) {
		uint64_t a = at[fk[i]], e = end[fk[i]];
		uint8_t *code;
		ssize_t n;
		int bad;

		if (!a || e <= a || e - a > GO_CODE_MAX || !(code = malloc(e - a)))
			goto out;
		n = elfcode__read(ec, a, code, e - a);
		bad = n <= 0 || (i == 0 ? gobuildinfo__x86_memprof_lea(code, (size_t)n, a, typ, lo,
								       hi, &got[i])
					: gobuildinfo__x86_first_rip_load(code, (size_t)n, a, lo,
									  hi, &got[i]));
		free(code);
		if (bad)
			goto out;
	}
	if (got[0] == got[1]) {
		*va = got[0];
		err = 0;
	}
out:
	elfcode__free(ec);
	return err;
}

/*
 * The list at runtime.mbuckets found by go_find_mbuckets, checked in the
 * process before it is polled: empty, or its first buckets (up to 4) are
 * memory-profile buckets of the layout (gobucket__parse). 0, or -EINVAL.
 */
static int go_list_check(struct allocrun *r, uint32_t pid, uint64_t mbuckets,
			 const struct gobucket_layout *l)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };
	uint8_t buf[GOBUCKET_READ];
	struct gobucket gb;
	struct pproc *p;
	uint64_t cur = 0;
	int err = -EINVAL;

	if (ptab__get(r->ptab, &id, &p))
		return -EINVAL;
	if (ptab__read_mem(r->ptab, p, mbuckets, &cur, sizeof(cur)) != sizeof(cur))
		goto out;
	for (int i = 0; cur && i < 4; i++) {
		uint64_t nstk;

		if (ptab__read_mem(r->ptab, p, cur, buf, l->hdr) != (ssize_t)l->hdr)
			goto out;
		memcpy(&nstk, buf + l->nstk_off, sizeof(nstk));
		if (nstk > GOBUCKET_MAX_STACK ||
		    ptab__read_mem(r->ptab, p, cur, buf, l->hdr + 8 * nstk) !=
			    (ssize_t)(l->hdr + 8 * nstk) ||
		    gobucket__parse(buf, l->hdr + 8 * nstk, l, &gb) ||
		    ptab__read_mem(r->ptab, p, cur + 8, &cur, sizeof(cur)) != sizeof(cur))
			goto out; /* allnext */
	}
	err = 0;
out:
	ptab__put(r->ptab, p);
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
 * addresses, end[GO_*] their ends), as probes appended to fns/offs (n):
 * mProf_Flush alone where runtime.mbuckets is known (its symbol, or found in
 * the runtime's code and checked), else setprofilebucket alone
 * where the release's bucket layout is verified (the buckets read here:
 * go_bucket_read, go_inuse); else mProf_Malloc and freeSpecial (which reads
 * the special's kind) where that is verified; else mProf_Malloc alone
 * (allocations, no in-use values; said). The process's rate is found. 0, or -errno (said: the
 * file's Go allocations are not profiled).
 */
static int go_probes(struct allocrun *r, struct mfile *f, struct elfsym *es, const char *path,
		     const struct procmap *m, uint32_t pid, const uint64_t at[GO_NR],
		     const uint64_t end[GO_NR], uint32_t *fns, uint64_t *offs, size_t *n)
{
	const struct gopclntab *g = elfsym__gopclntab(es);
	struct goproc *gp;
	struct gobuild b = { .minor = 0 };
	unsigned pa, sa, fpa, fsa, koff = 0, kind = 0;
	int nprobed = GO_PROBED; /* mProf_Malloc alone: freeSpecial's layout not known */
	struct gobucket_layout layout;
	uint64_t mbuckets = 0;
	bool from_code = false, second = false;
	int bl;
	bool x86 = false;
	uint64_t bias, va, ticks = 0, sig = 0;
	int err, ident_err;

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
	bl = gobuildinfo__bucket_layout(b.minor, &layout);
	/* With a symbol table, the runtime's bucket list is polled (no trap per
	 * sample): mProf_Flush probed, a trap per GC (the process probed as others) */
	if (bl >= 0 && !r->all && at[GO_MPROF_FLUSH] && !getenv("BPFPROF_TEST_GO_NO_POLL") &&
	    mfile__elf(f) && !elffile__load_bias(mfile__elf(f), m->start, m->offset, &bias)) {
		if (!elfobj__find(mfile__elf(f), "runtime.mbuckets", 8, &va)) {
			mbuckets = va + bias;
		} else if (x86 && !go_find_mbuckets(f, at, end, layout.mem_type, &va)) {
			/* stripped: found in the runtime's code, checked in the process
			 * (tests: another word, as a forged code would name) */
			const char *shift = getenv("BPFPROF_TEST_GO_MBUCKETS_SHIFT");

			va += shift ? (uint64_t)strtoll(shift, NULL, 0) : 0;
			if (go_list_check(r, pid, va + bias, &layout)) {
				p_debug("%s: runtime.mbuckets found in runtime.stkbucket's code at "
					"0x%" PRIx64 " holds no bucket list in %u: "
					"runtime.setprofilebucket probed instead",
					path, va + bias, pid);
			} else {
				mbuckets = va + bias;
				from_code = true;
				p_debug("%s: runtime.mbuckets found in runtime.stkbucket's code "
					"(and mProf_FlushLocked's): 0x%" PRIx64,
					path, mbuckets);
			}
		}
	}
	gp = goproc_of(r, pid);
	if (mbuckets && gp && go_same(r, gp) &&
	    ((gp->mbuckets && gp->mbuckets != mbuckets) ||
	     (gp->pend_mbuckets && gp->pend_mbuckets != mbuckets))) {
		/* a second Go runtime in the process (c-shared libraries): one list is
		 * polled a process, this runtime's buckets are probed instead */
		p_info("%s: a second Go runtime in process %u: its buckets probed "
		       "(runtime.setprofilebucket: a trap per sample), the first's polled",
		       path, pid);
		mbuckets = 0;
		second = true;
	}
	if (bl >= 0 && (mbuckets || at[GO_SETPROFILEBUCKET])) {
		/* the bucket read in userspace: setprofilebucket alone, or mProf_Flush */
		int fk = mbuckets ? GO_MPROF_FLUSH : GO_SETPROFILEBUCKET;
		uint64_t pc, off;
		uint32_t c =
			mbuckets ? ALLOC_COOKIE(ALLOC_FN_GO_FLUSH, 0, 0)
				 : ALLOC_COOKIE(ALLOC_FN_GO_BUCKET, layout.p_arg, layout.b_arg) |
					   ALLOC_COOKIE_GO_LAYOUT_SET(bl);
		bool check = false, bad = go_probe_pc(g, at[fk], &pc) != 0;

		if (!bad && x86 && !go_check_pc(f, at[fk], &pc)) {
			check = true;
			c |= ALLOC_COOKIE_GO_AT_CHECK;
		}
		if (bad || elfsym__vaddr_to_off(es, pc, &off, NULL)) {
			p_warn("%s: %s not found in its pc-line table: its Go allocations not "
			       "profiled",
			       path, go_names[fk][0]);
			return -ENOENT;
		}
		p_debug("probing %s at %s+0x%" PRIx64 " (+%" PRIu64 " past its entry: %s) in %u",
			go_names[fk][0], path, off, pc - at[fk],
			check ? "its stack check's jump, emulated"
			      : "its first instruction with a frame",
			pid);
		if (mbuckets)
			p_debug("%s: runtime.mbuckets at 0x%" PRIx64 " in %u: its buckets polled "
				"each drain (no trap per sample; mProf_Flush: a trap per GC)",
				path, mbuckets, pid);
		p_debug("%s: built by %s: setprofilebucket's bucket in argument %u, read from "
			"the process (bucket size at +%u, nstk at +%u, stack at +%u): no free "
			"probed",
			path, b.version, layout.b_arg, layout.size_off, layout.nstk_off,
			layout.hdr);
		fns[*n] = c;
		offs[(*n)++] = off;
		nprobed = 0;
	} else if (gobuildinfo__special_kind(b.minor, &koff, &kind)) {
		/* allocations still: mProf_Malloc's arguments are known */
		p_warn("%s: built by %s, whose runtime's special records are not known to "
		       "bpfprof (the layouts verified: Go 1.19): its Go allocations profiled, "
		       "their frees not (no in-use values)",
		       path, b.version);
		nprobed = 1;
	}
	for (int k = 0; k < nprobed; k++) {
		uint64_t pc, off;
		uint32_t c = k == GO_MALLOC ? ALLOC_COOKIE(go_fn[k], pa, sa)
					    : ALLOC_COOKIE_SPECIAL(fpa, fsa, koff, kind);

		if (nprobed < GO_PROBED)
			c |= ALLOC_COOKIE_GO_UNFOLLOWED;
		bool check = false, bad = go_probe_pc(g, at[k], &pc) != 0;

		if (!bad && x86 && !go_check_pc(f, at[k], &pc)) {
			check = true;
			c |= ALLOC_COOKIE_GO_AT_CHECK;
		}
		if (bad || elfsym__vaddr_to_off(es, pc, &off, NULL)) {
			p_warn("%s: %s not found in its pc-line table: its Go allocations not "
			       "profiled",
			       path, go_names[k][0]);
			*n -= (size_t)k;
			return -ENOENT;
		}
		p_debug("probing %s at %s+0x%" PRIx64 " (+%" PRIu64 " past its entry: %s) in %u",
			go_names[k][0], path, off, pc - at[k],
			check ? "its stack check's jump, emulated"
			      : "its first instruction with a frame",
			pid);
		fns[*n] = c;
		offs[(*n)++] = off;
	}
	if (nprobed == GO_PROBED)
		p_debug("%s: built by %s: mProf_Malloc's address and size in arguments %u and "
			"%u, freeSpecial's special kind at +%u (profile %u)",
			path, b.version, pa, sa, koff, kind);
	gp = goproc_of(r, pid);
	ident_err = ptab__image(r->ptab, pid, &ticks, &sig);
	if (!gp && getenv("BPFPROF_TEST_GO_IDENT_FAIL")) /* tests: descriptors short */
		ident_err = -EMFILE;
	if (gp && gp->ident_late && !ident_err)
		go_same(r, gp); /* its image known now (or another's) */
	if (gp && !ident_err &&
	    (ticks != gp->start_ticks || (sig && gp->mm_sig && sig != gp->mm_sig))) {
		/* its state another image's (exec'd; or another took its pid) */
		if (ticks == gp->start_ticks || !is_target(r, pid)) {
			go_same(r, gp);
			go_drop(r, &pid, 1);
			*gp = (struct goproc){ .pid = pid, .rate = GO_DEFAULT_RATE };
			gp->start_ticks = ticks;
			gp->mm_sig = sig;
		} else {
			gp->gone = GO_EXITED; /* a target's pid, another process: not set up */
		}
	}
	if (!gp) {
		if (array_grow((void **)&r->go, &r->cap_go, r->nr_go + 1, sizeof(*r->go))) {
			*n -= (size_t)(nprobed ? nprobed : 1);
			return -ENOMEM;
		}
		gp = &r->go[r->nr_go++];
		r->go_seen++;
		*gp = (struct goproc){ .pid = pid, .rate = GO_DEFAULT_RATE };
		gp->start_ticks = ticks;
		gp->mm_sig = sig;
		if (ident_err == -ENOENT || ident_err == -ESRCH) {
			gp->gone = GO_EXITED; /* exited already: never polled, never read */
		} else if (ident_err) {
			/* not read now (descriptors, memory): at its first poll, a
			 * process started since its probing taken for another */
			gp->ident_late = true;
			gp->start_ticks = procfs__ns_to_ticks(boottime_ns());
			p_debug("process %u: its image not read at its probing (%s): read at "
				"its first poll",
				pid, strerror(-ident_err));
		}
	}
	if (mbuckets && !gp->mbuckets && !gp->gone) {
		const char *base = strrchr(path, '/');

		/* polled once the probe is in (go_poll_begin): else not at all */
		gp->pend_mbuckets = mbuckets;
		gp->pend_from_code = from_code;
		gp->pend_layout = (unsigned)bl;
		snprintf(gp->comm, sizeof(gp->comm), "%s", base ? base + 1 : path);
	}
	if (go_file_flag(f, "runtime.disableMemoryProfiling") == 1 && !gp->off_warned) {
		gp->off_warned = true;
		p_warn("process %u (%s): the Go runtime samples no allocation: its "
		       "runtime.MemProfileRate is 0, the program does not link runtime.MemProfile "
		       "(import runtime/pprof or net/http/pprof, or call runtime.MemProfile, to "
		       "turn its sampling on)",
		       pid, path);
	}
	if (second && gp->rate_known)
		return 0; /* the first runtime's rate weighs the process's samples (one a process)
			   */
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

/*
 * Process pid's bucket list (go_probes found it) polled from now on, once
 * the file's probes are in (attached); not attached: never polled, said
 * (its Go allocations are not profiled, as the file's other functions).
 */
static void go_poll_begin(struct allocrun *r, uint32_t pid, bool attached, const char *path)
{
	struct goproc *gp = goproc_of(r, pid);

	if (!gp || !gp->pend_mbuckets)
		return;
	if (!attached) {
		p_warn("process %u (%s): runtime.mProf_Flush not probed: its Go buckets "
		       "(runtime.mbuckets) not polled, its Go allocations not profiled",
		       pid, path);
	} else if (!gp->mbuckets && !gp->gone) {
		gp->mbuckets = gp->pend_mbuckets;
		gp->from_code = gp->pend_from_code;
		gp->layout = gp->pend_layout;
		go_poll_list(r, gp); /* the buckets there before the probes: not counted */
	}
	gp->pend_mbuckets = 0;
}

/* A cap tests make smaller through the environment variable name (1 to cap). */
static size_t test_cap(const char *name, size_t cap)
{
	const char *t = getenv(name);
	uint64_t n;

	if (t && !parse_u64(t, 10, &n) && n && n < cap)
		return (size_t)n;
	return cap;
}

/* -a: the cap on files probed. */
static size_t max_held(void)
{
	return test_cap("BPFPROF_TEST_ALLOC_MAX_HELD", ALLOCRUN_MAX_HELD);
}

/* -a: the share of one cgroup's processes in the files probed (tests: larger). */
static size_t max_share(void)
{
	const char *t = getenv("BPFPROF_TEST_ALLOC_MAX_SHARE");
	uint64_t n;

	if (t && !parse_u64(t, 10, &n) && n && n <= max_held())
		return (size_t)n;
	return max_held() / 4 ? max_held() / 4 : 1;
}

/*
 * -a, --cgroup: the cgroup pid's new files are charged to, into key: its v2
 * path cut at a container (cgroup__parse_v2: the cgroups a container makes
 * in its own are one), "" for none: the root cgroup, where the host's own
 * processes are (a tenant cannot move there: cgroup.procs of the root is
 * root's), and hosts without cgroup v2. A process whose cgroup is not read
 * (gone meanwhile) is charged to "?", one share for them all.
 */
static void share_key(struct allocrun *r, uint32_t pid, char *key, size_t size)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };
	int err = ptab__cgroup_v2(r->ptab, &id, key, size);

	if (err == -ENOENT || (!err && !strcmp(key, "/")))
		key[0] = '\0';
	else if (err)
		snprintf(key, size, "?");
}

static size_t share_of(struct allocrun *r, const char *key)
{
	struct htab_entry *e = r->shares ? htab__find(r->shares, key, strlen(key)) : NULL;

	return e ? (size_t)(uintptr_t)e->value : 0;
}

/* A file probed: charged to key's share (at most max_held() keys: each has a file). */
static void share_add(struct allocrun *r, const char *key)
{
	struct htab_entry *e;
	bool created;

	if (!key[0] || (!r->shares && !(r->shares = htab__new())))
		return;
	e = htab__upsert(r->shares, key, strlen(key), &created);
	if (e)
		e->value = (void *)((uintptr_t)e->value + 1);
}

/*
 * -a, --cgroup: whether the probes of one more file would leave fewer than
 * ALLOC_FDS_RESERVE descriptors under the limit (those held off counted as
 * on: the guard puts them back): a tenant's copies of the C library would
 * otherwise take every descriptor (perf-event uprobes: 26 a copy), and the
 * profile could not be written.
 */
static bool fds_short(struct allocrun *r)
{
	long open_now = selfstat__open_fds();
	size_t now, on;

	if (open_now < 0)
		return false;
	allocprof__fds(r->ap, &now, &on);
	return (uint64_t)open_now - MIN(now, (uint64_t)open_now) + on +
		       allocprof__fds_per_file(r->ap) + ALLOC_FDS_RESERVE >
	       selfstat__fd_limit();
}

/*
 * -a, --cgroup: whether the cap on files probed refuses path, a file that
 * defines the allocator (counted; the cap, the shares and the descriptors
 * each warn once: cap_said, share_said, fds_said; each file is looked at
 * once, so counted once). Files that define no
 * allocator do not count. Of the cap, at most max_share() files are first probed for the processes
 * of one cgroup (key, from pid: share_key), so that one tenant's copies of the C library do not use
 * it up for the others.
 */
static bool held_full(struct allocrun *r, const char *path, uint32_t pid, char *key, size_t size)
{
	key[0] = '\0';
	if (!r->all)
		return false;
	if (r->nr_held >= max_held()) {
		r->held_over++;
		if (!r->cap_said) {
			r->cap_said = true;
			p_warn("files newly mapped not probed any more: at most %zu files are "
			       "probed (each one's probes are taken off and put back at every "
			       "switch of the guard)",
			       max_held());
		}
		p_debug("%s: defines the allocator, not probed (the cap of %zu files probed)", path,
			max_held());
		return true;
	}
	if (fds_short(r)) {
		r->held_over++;
		if (!r->fds_said) {
			r->fds_said = true;
			p_warn("files newly mapped not probed while file descriptors are short: the "
			       "probes of one more would leave fewer than %d of the limit of %" PRIu64
			       " (kept for the output and symbol files)",
			       ALLOC_FDS_RESERVE, selfstat__fd_limit());
			p_hint("raise it with 'ulimit -n' (LimitNOFILE= in a systemd unit)");
		}
		p_debug("%s: defines the allocator, not probed (file descriptors short)", path);
		return true;
	}
	share_key(r, pid, key, size);
	if (!key[0] || share_of(r, key) < max_share())
		return false;
	r->held_over++;
	if (!r->share_said) {
		r->share_said = true;
		p_warn("files newly mapped by processes of cgroup %s not probed: at most %zu of "
		       "the %zu files probed are first probed for one cgroup's processes",
		       key, max_share(), max_held());
	}
	p_debug("%s: defines the allocator, not probed (the share of %zu files probed of "
		"cgroup %s)",
		path, max_share(), key);
	return true;
}

/*
 * The descriptors the probes of a run may hold at most, per_file a file: -a,
 * --cgroup's cap on files probed, else ALLOC_MAX_FILES a process (-p, --
 * COMMAND), and FDS_ALLOC_BASE for the programs, maps and ring.
 */
#define FDS_ALLOC_BASE 16
uint64_t allocrun__fds_need(const struct options *o, size_t per_file)
{
	uint64_t files = o->all_cpus || o->nr_cgroups ? max_held()
			 : o->cmd_is_target	      ? ALLOC_MAX_FILES
					    : (uint64_t)MAX(o->nr_pids, 1) * ALLOC_MAX_FILES;

	return FDS_ALLOC_BASE + files * per_file;
}

/*
 * Once the mode is known (the program open): the soft limit on descriptors
 * raised to the hard one, and whether it holds the probes of as many files
 * as the run may probe (perf-event uprobes: two a probe, 26 a C library).
 * Short: said once, with what to raise it to; the files past it are
 * counted not probed (attach_failed).
 */
static void fds_check(struct allocrun *r)
{
	uint64_t limit = selfstat__raise_fd_limit(), need;
	long open_now = selfstat__open_fds();

	if (open_now < 0)
		return;
	need = (uint64_t)open_now + allocrun__fds_need(r->o, allocprof__fds_per_file(r->ap)) -
	       FDS_ALLOC_BASE; /* the programs are open already */
	if (limit >= need)
		return;
	p_warn("file descriptors: the limit is %" PRIu64 ", %ld are open, and the probes of the "
	       "%" PRIu64 " files this run may probe need up to %" PRIu64 " more (%zu a file): "
	       "files past the limit are not probed",
	       limit, open_now, (allocrun__fds_need(r->o, 1) - FDS_ALLOC_BASE),
	       need - (uint64_t)open_now, allocprof__fds_per_file(r->ap));
	p_hint("raise it with 'ulimit -n %" PRIu64 "' (LimitNOFILE= in a systemd unit)", need + 64);
}

/* A file's probes not attached (err, em): said; for want of descriptors
 * (EMFILE, ENFILE) said once, then -v only, and counted with the files
 * not probed (files_not_probed). */
static void attach_failed(struct allocrun *r, const char *path, uint32_t pid, int err,
			  const struct errmsg *em)
{
	const char *why = errmsg_said(em) ? em->msg : strerror(-err);
	char in[32] = "";

	if (!r->all)
		snprintf(in, sizeof(in), " in %u", pid);
	if (err != -EMFILE && err != -ENFILE) {
		p_warn("%s: its allocator not probed%s: %s", path, in, why);
		return;
	}
	r->held_over++;
	if (!r->fds_said) {
		r->fds_said = true;
		p_warn("%s: its allocator not probed%s: %s: out of file descriptors (the limit is "
		       "%" PRIu64 "); files newly mapped are not probed while they are short, "
		       "counted with the files not probed",
		       path, in, why, selfstat__fd_limit());
		p_hint("raise it with 'ulimit -n' (LimitNOFILE= in a systemd unit)");
		return;
	}
	p_debug("%s: its allocator not probed%s: %s", path, in, why);
}

/* SBCL's exported alloc, alloc_list and gc_close_region among a file's
 * symbols (probe_file's loop); gc_alloc_large, where alloc's large objects
 * go (its tail jump there probed if found: sbcl__alloc_large_exit). */
enum { SBCL_ALLOC, SBCL_ALLOC_LIST, SBCL_CLOSE, SBCL_LARGE, SBCL_NR };

/* The SBCL runtimes' slots (tests: fewer, BPFPROF_TEST_ALLOC_SBCL_SLOTS). */
static uint32_t sbcl_slots(void)
{
	return (uint32_t)test_cap("BPFPROF_TEST_ALLOC_SBCL_SLOTS", ALLOC_SBCL_SLOTS);
}

static void sbcl_sym(const char *name, uint64_t start, uint64_t at[SBCL_NR], bool have[SBCL_NR])
{
	int k = !strcmp(name, "alloc")		   ? SBCL_ALLOC
		: !strcmp(name, "alloc_list")	   ? SBCL_ALLOC_LIST
		: !strcmp(name, "gc_close_region") ? SBCL_CLOSE
		: !strcmp(name, "gc_alloc_large")  ? SBCL_LARGE
						   : -1;

	if (k >= 0 && !have[k]) {
		have[k] = true;
		at[k] = start;
	}
}

/* An SBCL runtime to be probed: what sbcl_probes found, given to the BPF
 * program (sbcl_probed) once its probes are attached. */
struct sbcl_found {
	struct alloc_sbcl al;
	char version[32];
	bool large_exit;
};

/*
 * The SBCL runtime's regions closed and large objects (gc_close_region and
 * alloc: alloc_abi.h) of a file, as probes: appended to fns/offs (n), its
 * layout in *sf (the BPF program's sbcl map gets it once they are attached:
 * sbcl_probed; a slot written before would serve the probes of an attach
 * that then fails, and another runtime's after it). Only a release whose regions are
 * verified (sbcl.h's tlab), and only code that is that release's: alloc's
 * and alloc_list's first instructions hold the regions' offsets
 * (sbcl__alloc_code: a fake's alloc with other offsets is not probed); the
 * thread's TLS offset read from the process (its GOT entry, relocated by
 * the dynamic linker).
 * 0, or -errno (said, but for a file that is not an SBCL runtime).
 */
static int sbcl_probes(struct allocrun *r, struct mfile *f, struct elfsym *es, const char *path,
		       const struct procmap *m, uint32_t pid, const uint64_t at[SBCL_NR],
		       const bool have[SBCL_NR], uint32_t *fns, uint64_t *offs, size_t *n,
		       struct sbcl_found *sf)
{
	struct proc_id id = { .pid = pid, .exec_id = PROC_EXEC_ANY };
	const struct sbcl_layout *l;
	struct alloc_sbcl al = { .tpoff = 0 };
	uint64_t got[SBCL_NR], off[SBCL_NR], bias;
	char *version = sf->version;
	const size_t version_len = sizeof(sf->version);
	struct elfcode *ec;
	struct pproc *p;
	bool warn, large_exit = false;
	int err;

	err = sbcl__file_layout(f, &l, version, version_len, &warn);
	if (err == -ENOENT)
		return err; /* another program's alloc */
	if (err) {
		if (warn)
			p_warn("%s: SBCL %s: a release whose allocation regions bpfprof has not "
			       "verified (it knows 2.2.9): its Lisp allocations not profiled",
			       path, version);
		return err;
	}
	ec = mfile__fd(f) >= 0 ? elfcode__open_fd(mfile__fd(f)) : NULL;
	for (int k = 0; k < SBCL_NR; k++) {
		uint8_t code[64] = { 0 };
		ssize_t got_bytes;

		if (k == SBCL_CLOSE) {
			err = elfsym__vaddr_to_off(es, at[k], &off[k], NULL) ? -ENOENT : 0;
			break;
		}
		got_bytes = ec ? elfcode__read(ec, at[k], code, sizeof(code)) : -1;
		err = got_bytes > 0 ? sbcl__alloc_code(l, k == SBCL_ALLOC_LIST, code,
						       (size_t)got_bytes, at[k], &got[k])
				    : -EIO;
		if (!err && elfsym__vaddr_to_off(es, at[k], &off[k], NULL))
			err = -ENOENT;
		if (err)
			break;
	}
	if (!err && ec && have[SBCL_LARGE]) {
		/* alloc probed at its large objects' exit, not at each region refilled */
		uint8_t code[1024] = { 0 };
		ssize_t got_bytes = elfcode__read(ec, at[SBCL_ALLOC], code, sizeof(code));
		uint64_t va, o;

		if (got_bytes > 0 &&
		    !sbcl__alloc_large_exit(code, (size_t)got_bytes, at[SBCL_ALLOC], at[SBCL_LARGE],
					    &va) &&
		    !elfsym__vaddr_to_off(es, va, &o, NULL)) {
			off[SBCL_ALLOC] = o;
			large_exit = true;
		}
	}
	if (ec)
		elfcode__free(ec);
	if (!err && got[SBCL_ALLOC] != got[SBCL_ALLOC_LIST])
		err = -ENOTSUP;
	if (err) {
		p_warn("%s: SBCL %s: its alloc, alloc_list and gc_close_region are not the code "
		       "verified for it (another build, or not SBCL's): its Lisp allocations not "
		       "profiled",
		       path, version);
		return err;
	}
	err = mfile__elf(f) ? elffile__load_bias(mfile__elf(f), m->start, m->offset, &bias)
			    : -ENOENT;
	if (!err)
		err = ptab__get(r->ptab, &id, &p);
	if (!err) {
		if (ptab__read_mem(r->ptab, p, got[SBCL_ALLOC] + bias, &al.tpoff,
				   sizeof(al.tpoff)) != (ssize_t)sizeof(al.tpoff))
			err = -EFAULT;
		ptab__put(r->ptab, p);
	}
	/* in the executable's static TLS block: a tenant's own rewritten GOT
	 * entry is not believed for every process of the file (-a) */
	if (!err && sbcl__tls_offset_ok(mfile__elf(f), al.tpoff))
		err = -EINVAL;
	if (!err && r->nr_sbcl >= sbcl_slots())
		err = -ENOSPC;
	if (err) {
		p_warn("%s: SBCL %s: its thread's TLS offset not read in process %u (%s): its "
		       "Lisp allocations not profiled",
		       path, version, pid,
		       err == -EINVAL	? "not in the executable's TLS block"
		       : err == -ENOSPC ? "no slot left for another SBCL runtime"
					: strerror(-err));
		return err;
	}
	al.large = l->large_bytes;
	for (int k = 0; k < 2; k++)
		for (int sys = 0; sys < 2; sys++)
			al.region[k * 2 + sys] = l->tlab[k][sys];
	sf->al = al;
	sf->large_exit = large_exit;
	fns[*n] = ALLOC_SBCL_COOKIE(ALLOC_FN_SBCL_ALLOC, r->nr_sbcl);
	offs[(*n)++] = off[SBCL_ALLOC];
	fns[*n] = ALLOC_SBCL_COOKIE(ALLOC_FN_SBCL_CLOSE, r->nr_sbcl);
	offs[(*n)++] = off[SBCL_CLOSE];
	return 0; /* the slot taken once the probes are attached (probe_file) */
}

/*
 * An SBCL runtime's probes attached (sbcl_probes found it): its layout in
 * its slot, which is now taken (the probes carry it in their cookies: never
 * given to another runtime, even if the layout cannot be written).
 */
static void sbcl_probed(struct allocrun *r, const char *path, const struct sbcl_found *sf)
{
	int err = allocprof__sbcl_layout(r->ap, r->nr_sbcl, &sf->al);

	r->nr_sbcl++;
	if (err) {
		p_warn("%s: its Lisp allocations not profiled: %s", path, strerror(-err));
		return;
	}
	p_debug("%s: SBCL %s: alloc and gc_close_region probed, current_thread at %" PRId64
		" from the thread pointer (slot %u; alloc at %s)",
		path, sf->version, (int64_t)sf->al.tpoff, r->nr_sbcl - 1,
		sf->large_exit ? "its large objects' jump to gc_alloc_large (emulated)"
			       : "its entry");
	if (!r->sbcl_said) {
		r->sbcl_said = true;
		p_info("SBCL: the bytes of its threads' allocation regions as each is closed "
		       "(full), and its large objects; in-use bytes are not measured (its GC "
		       "moves objects)");
	}
}

/* The allocator functions of one file that defines malloc and free: probed
 * in pid (-a, --cgroup: unless the cap on files probed, or the share of it
 * of pid's cgroup, refuses it: held_full). */
static int probe_file(struct allocrun *r, struct mfile *f, const char *path,
		      const struct procmap *m, uint32_t pid, bool *probed)
{
	Elf *elf = mfile__elf(f);
	struct elfsym *es = elf ? elfsym__open_elf(elf, (uint64_t)mfile__stat(f)->st_size) : NULL;
	uint64_t offs[ALLOC_FN_NR];
	uint32_t fns[ALLOC_FN_NR];
	bool have[ALLOC_FN_NR] = { false };
	uint64_t at[ALLOC_FN_NR], at_end[ALLOC_FN_NR], go_at[GO_NR] = { 0 }, go_end[GO_NR] = { 0 };
	bool go_have[GO_NR] = { false }, libc, go, go_ok = false;
	uint64_t sb_at[SBCL_NR];
	bool sb_have[SBCL_NR] = { false }, sbcl, sbcl_ok;
	struct sbcl_found sf = { .large_exit = false };
	size_t n = 0, nsyms;
	struct errmsg em = { 0 };
	char kpath[64], key[512];
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
					go_end[k] = end;
				}
		sbcl_sym(name, start, sb_at, sb_have);
	}
	libc = have[ALLOC_FN_MALLOC] && have[ALLOC_FN_FREE];
	go = go_have[GO_MALLOC] && go_have[GO_FREE_SPECIAL] && go_have[GO_MPROF_FREE];
	sbcl = sb_have[SBCL_ALLOC] && sb_have[SBCL_ALLOC_LIST] && sb_have[SBCL_CLOSE];
	if (!libc && !go && !sbcl)
		goto out;
	if (held_full(r, path, pid, key, sizeof(key)))
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
	go_ok = go && !go_probes(r, f, es, path, m, pid, go_at, go_end, fns, offs, &n);
	if (go && !go_ok && !libc)
		goto out;
	sbcl_ok = sbcl && !sbcl_probes(r, f, es, path, m, pid, sb_at, sb_have, fns, offs, &n, &sf);
	if ((sbcl && !sbcl_ok && !libc && !go) || !n)
		goto out;
	err = mfile__kernel_path(f, kpath, sizeof(kpath));
	if (!err && go_ok && test_cap("BPFPROF_TEST_GO_ATTACH_FAIL", UINT32_MAX) == pid)
		err = -EPERM; /* tests: a failed attach in that process */
	else if (!err)
		err = allocprof__attach_file(r->ap, kpath, (int)pid, fns, offs, n, &em);
	if (err) {
		attach_failed(r, path, pid, err, &em);
		goto out;
	}
	*probed = true;
	if (sbcl_ok)
		sbcl_probed(r, path, &sf); /* its slot (a failed attach leaves it for another) */
	share_add(r, key);
	if (r->all)
		p_info("%s: %zu allocator functions probed in every process mapping it%s", path, n,
		       go ? " (the Go runtime's sampled allocations)" : "");
	else
		p_info("%s: %zu allocator functions probed in process %u%s", path, n, pid,
		       go ? " (the Go runtime's sampled allocations)" : "");
out:
	if (go_ok)
		go_poll_begin(r, pid, *probed, path);
	elfsym__free(es);
	return 0;
}

/*
 * -a, --cgroup: whether f is a file not looked at yet (then remembered as
 * looked at, whatever comes of it): 1, 0 seen before or past the cap on
 * files looked at (counted), or -EAGAIN when a rescan's turn is spent and
 * it looked at a file already (f is left for the next turn).
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
	if (htab__count(r->fseen) >= ALLOCRUN_MAX_LOOKED) {
		if (!r->looked_over++) /* counted at each rescan: a lower bound of the files */
			p_warn("files newly mapped not looked at any more: at most %d files are "
			       "looked at",
			       ALLOCRUN_MAX_LOOKED);
		return 0;
	}
	e = htab__upsert(r->fseen, &serial, sizeof(serial), &created);
	if (!e)
		return 0;
	r->rescan_did = true;
	return 1; /* the cap on files probed is probe_file's: only allocators count */
}

/*
 * Every file of pid that defines malloc and free (at most ALLOC_MAX_FILES).
 * -a, --cgroup: each file once, whichever process maps it, at most
 * max_held() probed (max_share() first probed for one cgroup's processes); in a rescan, -EAGAIN
 * when its turn is spent (the process is looked at again at the next turn: the files done are
 * skipped).
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
static int start_command(struct allocrun *r, struct child *ch)
{
	const struct launch_stops stops = {
		.ctx = r,
		.at_exec = alloc_at_exec,
		.at_entry = alloc_at_entry,
		.detach = alloc_detach_stops,
	};

	if (launch__start(ch, r->o->cmd, r->ptab, &stops))
		return 1;
	r->pids = calloc(1, sizeof(*r->pids));
	if (!r->pids) {
		p_err("out of memory");
		child__abort(ch);
		return 1;
	}
	r->pids[0] = (uint32_t)ch->pid;
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
		"turn %.1f ms; %zu files probed, %" PRIu64
		" defining the allocator not probed (the cap of %zu probed, a cgroup's share of %zu),"
		" %" PRIu64 " times a file not looked at (the cap of %d looked at)",
		r->nr_rescan, r->rescan_turns, r->fseen ? htab__count(r->fseen) : 0,
		(double)r->rescan_max_ns / 1e6, r->nr_held, r->held_over, max_held(), max_share(),
		r->looked_over, ALLOCRUN_MAX_LOOKED);
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

/*
 * The guard as the caller's thread reads it. While the guard's thread runs
 * (allocrun__guard_thread: --alloc --on-cpu -a, whose takes come while it
 * switches), it changes r->g, the switches' times and the probes held under
 * the lock: a copy of them is taken under it, with the time (the time on
 * to it is the guard's at that instant, not one a switch made since). A
 * struct copy: the guard's switch waits for no take. Without the thread
 * (or after allocrun__stop joined it), r's own, read as they are.
 */
struct guard_view {
	struct allocguard g;
	uint64_t toggle_ns[2], toggle_max_ns, toggle_cpu_ns;
	size_t probes;
	uint64_t now; /* now_ns() when the copy was taken */
};

static void guard_view(struct allocrun *r, struct guard_view *v)
{
	if (r->guard_threaded)
		pthread_mutex_lock(&r->lock);
	*v = (struct guard_view){
		.g = r->g,
		.toggle_ns = { r->toggle_ns[0], r->toggle_ns[1] },
		.toggle_max_ns = r->toggle_max_ns,
		.toggle_cpu_ns = r->toggle_cpu_ns,
		.probes = allocprof__probes(r->ap),
		.now = now_ns(),
	};
	if (r->guard_threaded)
		pthread_mutex_unlock(&r->lock);
}

/* An edge at t (now_ns()'s clock; the counters c read then), g the guard then. */
static void edge_at(struct allocrun *r, const struct allocguard *g, struct edge *e, uint64_t t,
		    const uint64_t c[ALLOC_C_NR])
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*e = (struct edge){
		.t = t,
		.on = r->all ? allocguard__on_ns(g, t) : 0,
		.real = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec,
		.lost = c[ALLOC_C_RING_FULL] + r->oom,
	};
}

/* The run's clock, the guard and the rescans start. */
static void run_start(struct allocrun *r)
{
	uint64_t c[ALLOC_C_NR];

	r->t0 = now_ns();
	allocprof__counters(r->ap, c);
	if (r->all) {
		r->calls0 = c[ALLOC_C_CALLS] + c[ALLOC_C_FREES] + c[ALLOC_C_OTHERS];
		allocguard__init(&r->g, r->o->alloc_budget, r->t0, r->calls0);
		r->next_rescan = r->t0 + rescan_ns();
	}
	edge_at(r, &r->g, &r->start, r->t0, c); /* no guard thread yet */
	r->ivl = r->tickedge = r->start;
	r->next_refresh = r->t0 + ALLOC_REFRESH_NS;
}

/* A drain of the ring begins: SBCL's names are read at each event (a
 * symbolizer drain of their own, the stacks named in it forgotten). */
static void sbcl_drain_begins(struct allocrun *r)
{
	r->sbcl_name_ns = 0;
	r->sbcl_name_over = false;
	htab__free(r->sbcl_named);
	r->sbcl_named = NULL;
	if (r->nr_sbcl)
		symbolizer__lisp_drain(r->sym);
}

uint64_t allocrun__tick(struct allocrun *r, uint64_t now)
{
	uint64_t due;

	/* The guard's thread switching the probes (~50 ms a file held, seconds
	 * at the cap): the caller's loop goes on, this tick comes back soon. */
	if (r->guard_threaded && pthread_mutex_trylock(&r->lock))
		return now_ns() + 10 * NS_PER_MS;
	r->noted_now = 0;
	r->sbcl_turn_ns = 0; /* a turn of the loop: its takes share one naming budget */
	sbcl_drain_begins(r);
	allocprof__drain(r->ap, on_event, r, ALLOC_DRAIN_MAX);
	go_drain(r, now);
	if (!r->guard_threaded)
		guard_tick(r);
	if (r->all)
		rescan(r, now);
	if (now >= r->next_refresh) {
		refresh(r);
		r->next_refresh = now + ALLOC_REFRESH_NS;
	}
	due = next_due(r, now_ns());
	if (r->guard_threaded)
		pthread_mutex_unlock(&r->lock);
	return due;
}

/* The guard's thread: a tick when due (next_due: 100 ms, or the phase's end). */
static void *guard_main(void *arg)
{
	struct allocrun *r = arg;

	pthread_mutex_lock(&r->lock);
	while (!r->guard_stop) {
		uint64_t now, due;
		struct timespec ts;

		guard_tick(r);
		due = next_due(r, now_ns());
		pthread_mutex_unlock(&r->lock);
		now = now_ns();
		if (due > now) {
			ts.tv_sec = (time_t)((due - now) / NS_PER_SEC);
			ts.tv_nsec = (long)((due - now) % NS_PER_SEC);
			nanosleep(&ts, NULL);
		}
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int allocrun__guard_thread(struct allocrun *r)
{
	sigset_t all, old;
	int err;

	if (!r->all || !r->g.budget || r->guard_threaded)
		return 0;
	err = pthread_mutex_init(&r->lock, NULL);
	if (err)
		return -err;
	/* Signals stay the main thread's (stop.h's handler, its poll). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r->guard_threaded = true;
	err = pthread_create(&r->guard_tid, NULL, guard_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		r->guard_threaded = false;
		pthread_mutex_destroy(&r->lock);
		return -err;
	}
	return 0;
}

/* The guard's thread ended (its last tick done); the engine one-threaded again. */
static void guard_join(struct allocrun *r)
{
	if (!r->guard_threaded)
		return;
	pthread_mutex_lock(&r->lock);
	r->guard_stop = true;
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->guard_tid, NULL);
	pthread_mutex_destroy(&r->lock);
	r->guard_threaded = false;
}

bool allocrun__targets_gone(struct allocrun *r)
{
	return targets_gone(r);
}

void allocrun__stop(struct allocrun *r)
{
	guard_join(r);
	r->sbcl_turn_ns = 0; /* the last take's budget its own */
	/* Nothing more from here (--alloc --on-cpu writes the CPU profile
	 * first: its calls would be counted, its frees matched, the ring fill). */
	allocprof__pause(r->ap);
	/* What is left: the ring holds at most ALLOC_RING_BYTES of it. */
	sbcl_drain_begins(r);
	allocprof__drain(r->ap, on_event, r, ALLOC_RING_BYTES / sizeof(struct alloc_event) + 1);
	go_drain(r, now_ns());
	r->t1 = now_ns();
	r->scale = allocrun__span_scale(r->start.t, r->start.on, r->t1,
					r->all ? allocguard__on_ns(&r->g, r->t1) : 0);
}

double allocrun__span_scale(uint64_t t_from, uint64_t on_from, uint64_t t_to, uint64_t on_to)
{
	uint64_t on = on_to > on_from ? on_to - on_from : 0,
		 total = t_to > t_from ? t_to - t_from : 0;

	if (!on || on >= total)
		return 1;
	return (double)total / (double)on;
}

/* A frame's name, file and line hashed (FNV-1a): frames compared across symbolizer calls. */
static uint64_t frame_hash(const struct sym *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[2] = { s->name ? s->name : "", s->file ? s->file : "" };

	for (int i = 0; i < 2; i++) {
		for (const char *c = parts[i]; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
	}
	return (h ^ s->line) * 0x100000001b3ull;
}

/*
 * A Go bucket's stack (runtime.callers: logical frames) made physical:
 * where a call was inlined, the runtime gives the inlined code's pc and then
 * one pc per caller it was inlined into (the inline mark + 1), while a pc
 * here is named with its inlined callers already. skip[i]: ips[i] names
 * exactly what ips[i - 1] names past its innermost frame (such a pc).
 */
static void go_logical_frames(struct allocrun *r, const struct proc_id *id, const uint64_t *ips,
			      int n, bool *skip)
{
	uint64_t prev[SYM_MAX_FRAMES], cur[SYM_MAX_FRAMES];
	size_t np = 0;

	for (int i = 0; i < n && i < ALLOC_STACK_DEPTH; i++) {
		struct sym s[SYM_MAX_FRAMES];
		size_t nc = symbolizer__user_frames(r->sym, id, ips[i], false, s, SYM_MAX_FRAMES);

		for (size_t j = 0; j < nc; j++)
			cur[j] = s[j].name ? frame_hash(&s[j]) : 0;
		skip[i] = i && np >= 2 && nc == np - 1 && cur[0] &&
			  !memcmp(prev + 1, cur, nc * sizeof(*cur));
		memcpy(prev, cur, nc * sizeof(*cur));
		np = nc;
	}
}

/* One (process, stack)'s weighed values into the profile. */
static int add_agg(struct allocrun *r, struct profile *prof, const void *key, const struct agg *a,
		   double scale, uint32_t *ids)
{
	const struct agg_key *k = key;
	struct proc_id id = { .pid = k->tgid, .exec_id = PROC_EXEC_ANY };
	struct psample ps = { .pid = k->tgid, .comm = a->comm[0] ? a->comm : "[unknown]" };
	struct palloc v = {
		.alloc_objects = value_of(a->alloc_objects * scale),
		.alloc_bytes = value_of(a->alloc_bytes * scale),
		.inuse_objects = value_of(a->inuse_objects),
		.inuse_bytes = value_of(a->inuse_bytes),
	};
	uint32_t nr = 0, nf = 0;
	const uint64_t *ips = k->stack ? stacktab__find(r->stacks, k->stack, &nr) : NULL;
	int n = ips ? (int)nr : 0;
	bool skip[ALLOC_STACK_DEPTH] = { false };

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

	if (a->logical)
		go_logical_frames(r, &id, ips, n, skip);
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
		size_t ns;

		if (i < ALLOC_STACK_DEPTH && skip[i])
			continue;
		ns = symbolizer__user_frames(r->sym, &id, ips[i], false, s, SYM_MAX_FRAMES);

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

/* allocrun__window_note with g, the guard as the caller read it (guard_view). */
static void window_note(struct allocrun *r, const struct allocguard *g, struct profile_meta *m)
{
	uint64_t on = m->alloc_on_ns, total = m->duration_ns;
	double frac = total ? (double)on / (double)total : 1;
	size_t n = 0;
	int w;

	if (!r->all || (!g->engaged && !r->held_over))
		return;
	m->note[0] = '\0';
	if (g->engaged) {
		w = snprintf(m->note, sizeof(m->note),
			     "alloc_guard budget=%" PRIu64 " on_fraction=%.4f scale=%.3f"
			     " windows=%" PRIu64 " toggles=%" PRIu64 " inuse=not_measured",
			     g->budget, frac > 1 ? 1 : frac, allocrun__span_scale(0, 0, total, on),
			     g->windows, g->toggles);
		n = w < 0 ? 0 : (size_t)w < sizeof(m->note) ? (size_t)w : sizeof(m->note) - 1;
	}
	if (r->held_over)
		snprintf(m->note + n, sizeof(m->note) - n, "%sfiles_not_probed=%" PRIu64,
			 n ? " " : "", r->held_over);
}

void allocrun__window_note(struct allocrun *r, struct profile_meta *m)
{
	struct guard_view v;

	guard_view(r, &v);
	window_note(r, &v.g, m);
}

/* A set's values into prof, alloc_* multiplied by scale. 0 or -ENOMEM. */
static int add_set(struct allocrun *r, struct profile *prof, struct htab *set, double scale)
{
	uint32_t ids[ALLOC_MAX_FRAMES + 1];
	size_t pos = 0;
	int err = 0;

	for (struct htab_entry *e; !err && set && (e = htab__next(set, &pos));)
		err = add_agg(r, prof, e->key, e->value, scale, ids);
	return err;
}

/* The scale of the alloc values of the span from its edge to t (g: the guard then). */
static double scale_since(struct allocrun *r, const struct allocguard *g, const struct edge *from,
			  uint64_t t)
{
	if (!r->all)
		return 1;
	return allocrun__span_scale(from->t, from->on, t, allocguard__on_ns(g, t));
}

/* The cap on the run-long total's samples. */
static size_t total_max(void)
{
	return test_cap("BPFPROF_TEST_ALLOC_TOTAL_MAX", ALLOC_TOTAL_MAX);
}

/* Tests: BPFPROF_TEST_ALLOC_TOTAL_FAIL=N, the process's first N stagings
 * of the total fail as without memory. */
static bool total_fail(void)
{
	static uint64_t failed;
	const char *t = getenv("BPFPROF_TEST_ALLOC_TOTAL_FAIL");
	uint64_t n;

	if (!t || parse_u64(t, 10, &n) || failed >= n)
		return false;
	failed++;
	return true;
}

/*
 * An interval's change to the run-long total, staged: its samples as they go
 * in (delta), each one's place in the total (at: reserved there, its values
 * 0 until the commit), and the samples folded into [other stacks].
 */
struct total_stage {
	struct profile *delta;
	int64_t *at;
	uint64_t folded;
};

static void stage_free(struct total_stage *st)
{
	profile__free(st->delta);
	free(st->at);
	*st = (struct total_stage){ 0 };
}

/* Sample s (the interval's, a stack the total has no room for) into its
 * process's [other stacks] sample in delta; past ALLOC_TOTAL_PIDS such
 * processes, into one of pid 0. 0 or -ENOMEM. */
static int total_fold(struct allocrun *r, struct profile *delta, const struct psample *s)
{
	/* a process: its pid and start time (the name table's, 0 unknown), as
	 * the name table keeps them: a pid reused is another [other stacks] */
	struct htab_entry *ce = r->comms ? htab__find(r->comms, &s->pid, sizeof(s->pid)) : NULL;
	struct {
		uint32_t pid, pad;
		uint64_t start;
	} k = { .pid = s->pid, .start = ce ? ((struct comm *)ce->value)->start : 0 };
	struct htab_entry *e = htab__find(r->others, &k, sizeof(k));
	struct psample ps = { .pid = s->pid };
	int64_t f;

	if (!e && htab__count(r->others) < ALLOC_TOTAL_PIDS) {
		char *c = strdup(s->comm ? s->comm : "");
		bool created;

		/* its name the first one's: one such sample a process */
		e = c ? htab__upsert(r->others, &k, sizeof(k), &created) : NULL;
		if (!e) {
			free(c);
			return -ENOMEM;
		}
		e->value = c;
	}
	if (e)
		ps.comm = e->value;
	else
		ps = (struct psample){ .pid = 0, .comm = "[other processes]" };
	f = profile__frame(delta, FRAME_OTHER, "[other stacks]", NULL);
	if (f < 0)
		return (int)f;
	return profile__add_alloc(delta, &ps, &(uint32_t){ (uint32_t)f }, 1, &s->alloc);
}

/* What total_make_room folds: the total's processes found exited, by pid
 * (one kill(2) each a fold), and the tier it folds to. */
struct total_room {
	struct htab *gone; /* pid -> 1 alive, 2 exited */
	bool all_exited;   /* the second tier: exited processes' samples all in one */
};

/* Whether the total's process pid has exited, as total_make_room's first
 * pass found (pid 0: [other processes] and the exited processes' own
 * samples are no process's). */
static bool total_gone(const struct total_room *t, uint32_t pid)
{
	struct htab_entry *e = pid ? htab__find(t->gone, &pid, sizeof(pid)) : NULL;

	return e && e->value == (void *)2;
}

/* total_make_room's first pass: whether pid has exited asked (once a
 * fold). 0 or -ENOMEM. */
static int total_ask(struct total_room *t, uint32_t pid)
{
	struct htab_entry *e;
	bool created;

	if (!pid || htab__find(t->gone, &pid, sizeof(pid)))
		return 0;
	e = htab__upsert(t->gone, &pid, sizeof(pid), &created);
	if (!e)
		return -ENOMEM;
	e->value = (void *)(uintptr_t)(kill((pid_t)pid, 0) && errno == ESRCH ? 2 : 1);
	return 0;
}

/* A sample of exited processes' (pid 0, not [other processes]). Command
 * names have at most 15 bytes: no process can take this one's. */
static bool total_exited_sample(const struct psample *s)
{
	return !s->pid && strcmp(s->comm, "[other processes]");
}

static bool total_keep(const struct psample *s, void *ctx)
{
	struct total_room *t = ctx;

	return t->all_exited ? !total_exited_sample(s) : !total_gone(t, s->pid);
}

/* Sample s of src (one total_keep refused) into dst: an exited process's
 * under pid 0 and its command name, its stack kept; the second tier: into
 * the one [exited processes] sample. 0 or -ENOMEM. */
static int total_fold_exited(struct profile *dst, const struct profile *src,
			     const struct psample *s, bool all)
{
	struct psample ps = { .comm = all ? "[exited processes]" : s->comm };
	uint32_t ids[ALLOC_MAX_FRAMES + 2], n = 0;
	const uint32_t *fr = all ? NULL : profile__stack_get(src, s->stack, &n);
	int64_t f;

	if (all) {
		f = profile__frame(dst, FRAME_OTHER, "[other stacks]", NULL);
		if (f < 0)
			return (int)f;
		ids[0] = (uint32_t)f;
		n = 1;
	}
	for (uint32_t i = 0; fr && i < n && i < ARRAY_SIZE(ids); i++) {
		f = profile__frame_src(dst, profile__frame_get(src, fr[i]));
		if (f < 0)
			return (int)f;
		ids[i] = (uint32_t)f;
	}
	return profile__add_alloc(dst, &ps, ids, MIN(n, (uint32_t)ARRAY_SIZE(ids)), &s->alloc);
}

/* One tier of total_make_room: the total rebuilt with the samples
 * total_keep refuses folded. 0 or -ENOMEM (the total unchanged). */
static int total_refold(struct allocrun *r, struct total_room *t)
{
	struct profile *np = profile__new();
	size_t n = profile__nr_samples(r->total);
	int err = np ? profile__merge_if(np, r->total, total_keep, t) : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		const struct psample *s = profile__sample(r->total, i);

		if (!total_keep(s, t))
			err = total_fold_exited(np, r->total, s, t->all_exited);
	}
	if (err) {
		profile__free(np);
		return err;
	}
	*profile__meta(np) = *profile__meta_c(r->total);
	profile__free(r->total);
	r->total = np;
	return 0;
}

/*
 * Room in the run-long total for need more samples, made of what exited
 * processes left there (each fold of a tenant's churn would otherwise keep
 * its place for the rest of the run, and every new stack of a live process
 * go to [other stacks]): their samples merge under pid 0 and their command
 * name, their stacks kept; if that leaves too little room, into one sample,
 * pid 0 [exited processes] / [other stacks]. Only identities change: every
 * value stays in the total. Their [other stacks] names are forgotten (a
 * reused pid is another process). Called when the cap would fold samples;
 * nothing done when no process of the total has exited. 0 or -ENOMEM
 * (the total unchanged).
 */
static int total_make_room(struct allocrun *r, size_t need)
{
	struct total_room t = { .gone = htab__new() };
	size_t n = profile__nr_samples(r->total), exited = 0, folded = 0;
	int err = t.gone ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		uint32_t pid = profile__sample(r->total, i)->pid;

		err = total_ask(&t, pid);
		folded += total_gone(&t, pid);
	}
	if (!err && folded)
		err = total_refold(r, &t);
	n = r->total ? profile__nr_samples(r->total) : 0;
	for (size_t i = 0; !err && n + need > total_max() && i < n; i++)
		exited += total_exited_sample(profile__sample(r->total, i));
	if (!err && exited > 1) {
		t.all_exited = true;
		err = total_refold(r, &t);
	}
	/* the exited processes' [other stacks] names let go: r->others is keyed
	 * by (pid, start time), t.gone by pid (2: exited) */
	for (size_t pos = 0; !err && folded && r->others;) {
		struct htab_entry *e = htab__next(r->others, &pos), *g;
		unsigned char key[16];
		uint32_t pid;

		if (!e)
			break;
		if (e->klen != sizeof(key))
			continue;
		memcpy(key, e->key, sizeof(key));
		memcpy(&pid, key, sizeof(pid));
		g = htab__find(t.gone, &pid, sizeof(pid));
		if (g && g->value == (void *)2)
			free(htab__remove(r->others, key,
					  sizeof(key))); /* a tombstone: pos holds */
	}
	if (!err && (folded || exited > 1))
		p_debug("run-long total: %zu samples of exited processes folded%s, %zu samples now",
			folded, exited > 1 ? " (all in one, [exited processes])" : "",
			profile__nr_samples(r->total));
	htab__free(t.gone);
	return err;
}

struct stage_keep {
	const struct profile *ivl;
	const bool *keep;
};

static bool stage_keep(const struct psample *s, void *ctx)
{
	const struct stage_keep *k = ctx;

	return k->keep[s - profile__sample(k->ivl, 0)];
}

/*
 * An interval's alloc_* staged for the run-long total (st): a sample whose
 * identity the total has goes to it, a new one while the total has fewer
 * than total_max() samples (room made first of what exited processes left
 * there: total_make_room), the others fold into their process's [other
 * stacks] (counted at the commit). The places reserved in the total (values
 * 0) are all that changes there. 0 or -ENOMEM (st freed).
 */
static int total_stage(struct allocrun *r, const struct profile *ivl, struct total_stage *st)
{
	size_t n = profile__nr_samples(ivl), cap = total_max(), nr;
	struct stage_keep k = { .ivl = ivl };
	int64_t *at = NULL;
	bool *keep = NULL;
	int err = 0;

	*st = (struct total_stage){ 0 };
	if (total_fail()) /* tests: no memory */
		return -ENOMEM;
	if ((!r->total && !(r->total = profile__new())) ||
	    (!r->others && !(r->others = htab__new())) || !(st->delta = profile__new()) ||
	    !(keep = calloc(n ? n : 1, sizeof(*keep))) || !(at = malloc((n ? n : 1) * sizeof(*at))))
		err = -ENOMEM;
	if (!err)
		err = profile__find_all(r->total, ivl, at);
	for (size_t i = nr = 0; !err && i < n; i++)
		nr += at[i] < 0;
	if (!err && nr && profile__nr_samples(r->total) + nr > cap &&
	    !(err = total_make_room(r, nr)))
		err = profile__find_all(r->total, ivl, at); /* its indexes changed */
	nr = r->total ? profile__nr_samples(r->total) : 0;
	for (size_t i = 0; !err && i < n; i++) {
		if (at[i] >= 0 || nr < cap) {
			keep[i] = true;
			nr += at[i] < 0;
		} else if (!(err = total_fold(r, st->delta, profile__sample(ivl, i))))
			st->folded++;
	}
	k.keep = keep;
	if (!err)
		err = profile__merge_if(st->delta, ivl, stage_keep, &k);
	free(keep);
	free(at);
	nr = err ? 0 : profile__nr_samples(st->delta);
	if (!err && !(st->at = malloc((nr ? nr : 1) * sizeof(*st->at))))
		err = -ENOMEM;
	if (!err) /* left 0-valued in the total on failure: filled when tried again */
		err = profile__copy_if(r->total, st->delta, NULL, st->at);
	if (err)
		stage_free(st);
	return err;
}

/* The staged interval into the total: cannot fail (its places are reserved). */
static void total_commit(struct allocrun *r, struct total_stage *st)
{
	for (size_t i = 0; st->delta && i < profile__nr_samples(st->delta); i++)
		profile__add_alloc_at(r->total, (size_t)st->at[i],
				      &profile__sample(st->delta, i)->alloc);
	r->aggs_evicted += st->folded;
	stage_free(st);
}

/* The names of the processes the walk found exited go with their blocks. */
static void forget_exited(struct allocrun *r)
{
	uint32_t *gone = NULL;
	size_t pos = 0, n = 0, cap = 0;

	for (struct htab_entry *e; (e = htab__next(r->alive, &pos));)
		if (e->value == (void *)2 &&
		    !array_grow((void **)&gone, &cap, n + 1, sizeof(*gone)))
			memcpy(&gone[n++], e->key, sizeof(*gone));
	for (size_t i = 0; i < n; i++) {
		struct htab_entry *c = htab__find(r->comms, &gone[i], sizeof(gone[i]));

		if (c) {
			free(c->value);
			htab__remove(r->comms, &gone[i], sizeof(gone[i]));
		}
	}
	free(gone);
}

/* A name the sweep found in doubt: its pid another process's now (reused),
 * or its start time read only now (unsure). */
struct comm_doubt {
	uint32_t pid;
	bool reused;
};

/*
 * The names in doubt take the one this interval's allocations by their pid
 * carry (cur: the events since the edge, all after a reuse unless the old
 * process allocated in this interval too: a name other than the one kept is
 * the new process's). With none other, the name stays in doubt (the next
 * event's decides), or a reused one with no allocation at all is forgotten
 * (the next event notes it again).
 */
static void comms_renamed(struct allocrun *r, const struct comm_doubt *d, size_t n)
{
	struct htab *want = htab__new(); /* pid -> 1: its name seen in cur */
	size_t pos = 0;
	bool created;

	for (size_t i = 0; want && i < n; i++)
		if (!htab__upsert(want, &d[i].pid, sizeof(d[i].pid), &created)) {
			htab__free(want);
			want = NULL;
		}
	for (struct htab_entry *e; want && htab__count(want) && (e = htab__next(r->aggs, &pos));) {
		const struct agg_key *k = (const void *)e->key;
		const struct agg *a = e->value;
		struct htab_entry *w = htab__find(want, &k->tgid, sizeof(k->tgid));
		struct htab_entry *ce = htab__find(r->comms, &k->tgid, sizeof(k->tgid));
		struct comm *c = ce ? ce->value : NULL;

		if (!w || !a->comm[0] || !c)
			continue;
		if (!strcmp(c->name, a->comm)) {
			w->value = (void *)1;
			continue;
		}
		snprintf(c->name, sizeof(c->name), "%s", a->comm);
		c->doubt = false;
		htab__remove(want, &k->tgid, sizeof(k->tgid));
	}
	for (size_t i = 0; i < n; i++) {
		struct htab_entry *w = want ? htab__find(want, &d[i].pid, sizeof(d[i].pid)) : NULL;
		struct htab_entry *ce = htab__find(r->comms, &d[i].pid, sizeof(d[i].pid));

		r->comms_reused += d[i].reused;
		if (!ce || (want && !w))
			continue;
		if (d[i].reused && (!w || !w->value))
			free(htab__remove(r->comms, &d[i].pid, sizeof(d[i].pid)));
		else
			((struct comm *)ce->value)->doubt = true;
	}
	htab__free(want);
}

/* Whether the walk found process tgid alive, its blocks in the table. */
static bool walked_alive(struct allocrun *r, uint32_t tgid)
{
	struct htab_entry *e = r->alive ? htab__find(r->alive, &tgid, sizeof(tgid)) : NULL;

	return e && e->value == (void *)1;
}

/*
 * After an interval's walk, the names checked round robin: at most
 * ALLOC_COMMS_SWEEP start times read, and at most as many names looked at,
 * or twice as many as were noted since the last sweep (a gone process costs
 * a kill(2) only), within ALLOC_TURN_NS (the rest left to the next sweep: a
 * tenant's churn may fill the table, not stall the loop). A process gone is
 * forgotten, unless the walk found it alive with blocks (the next walk
 * deletes them, named, then forget_exited); a pid another process has now,
 * or one whose start time is read only now, is renamed from this interval's
 * allocations (comms_renamed). So the table follows the processes: a
 * tenant's churn of pids leaves in it the live ones and those noted since a
 * sweep or two.
 */
static void comms_sweep(struct allocrun *r)
{
	size_t n = htab__count(r->comms), seen = 0, reads = 0, pos = r->comms_pos;
	size_t visits = MIN(n, MAX((size_t)ALLOC_COMMS_SWEEP, 2 * r->comms_added));
	struct comm_doubt *doubt = NULL;
	size_t nr_doubt = 0, cap_doubt = 0;
	uint64_t t0 = now_ns();
	bool wrapped = pos == 0;

	r->comms_gen++;
	while (seen < visits && reads < ALLOC_COMMS_SWEEP &&
	       ((seen & 63) || now_ns() - t0 < ALLOC_TURN_NS)) {
		struct htab_entry *e = htab__next(r->comms, &pos);
		struct comm *c;
		uint32_t tgid;
		uint64_t t;
		bool gone;
		int err;

		if (!e) {
			if (wrapped)
				break;
			wrapped = true;
			pos = 0;
			continue;
		}
		seen++;
		memcpy(&tgid, e->key, sizeof(tgid));
		c = e->value;
		gone = kill((pid_t)tgid, 0) && errno == ESRCH;
		if (!gone) {
			reads++;
			err = comm_start(r, tgid, &t);
			gone = err == -ENOENT || err == -ESRCH;
			if (!err && t != c->start) {
				bool reused = c->start;

				c->start = t;
				if (!array_grow((void **)&doubt, &cap_doubt, nr_doubt + 1,
						sizeof(*doubt)))
					doubt[nr_doubt++] = (struct comm_doubt){ tgid, reused };
				continue;
			}
		}
		if (gone && !walked_alive(r, tgid)) {
			free(htab__remove(r->comms, &tgid, sizeof(tgid)));
			r->comms_gone++;
		}
	}
	r->comms_pos = pos;
	r->comms_added = (visits - seen) / 2; /* the sweep cut short: more next time */
	if (nr_doubt)
		comms_renamed(r, doubt, nr_doubt);
	free(doubt);
	p_debug("process names: %zu kept, %zu checked (%zu start times read); run-long: %" PRIu64
		" gone, %" PRIu64 " reused, %" PRIu64 " not noted (table full)",
		htab__count(r->comms), seen, reads, r->comms_gone, r->comms_reused, r->comms_full);
}

/*
 * One walk of the live table into prof's inuse_*: the stacks its blocks
 * name pinned (the epoch's pins not renewed let go), sweep: the blocks of
 * exited processes deleted once in it. The guard engaged: not measured
 * (its windows off miss frees), every pin let go (engaged: the guard's, as
 * the take read it). 0 or -ENOMEM.
 */
static int take_inuse(struct allocrun *r, bool engaged, struct profile *prof, bool sweep)
{
	size_t deleted = 0;
	int err;

	r->epoch++;
	r->live_blocks = 0;
	r->inuse_bytes = 0;
	if (engaged) {
		stacktab__pin_epoch(r->stacks, r->epoch);
		if (sweep)
			comms_sweep(r);
		return 0;
	}
	r->inuse = htab__new();
	r->alive = r->alive ? r->alive : htab__new();
	if (!r->inuse || !r->alive) {
		htab__free(r->inuse);
		r->inuse = NULL;
		return -ENOMEM;
	}
	r->sweep = sweep;
	err = allocprof__live(r->ap, on_live, r, &deleted);
	go_inuse(r, r->inuse, sweep, true);
	r->sweep = false;
	r->live_dropped_exited += deleted;
	if (err)
		p_warn("the blocks in use could not be read: in-use values are incomplete");
	else
		stacktab__pin_epoch(r->stacks, r->epoch);
	err = add_set(r, prof, r->inuse, 1);
	set_free(r, r->inuse, true);
	r->inuse = NULL;
	if (deleted)
		forget_exited(r);
	if (sweep)
		comms_sweep(r);
	return err;
}

static int take(struct allocrun *r, struct profile *prof, unsigned what);

/*
 * A take names the SBCL frames its drains left (sbcl_name_now) within a
 * budget (ALLOCRUN_SBCL_WRITE_MS) that the takes of one turn of the loop
 * share (an interval's file, the live heap's tick, heap requests: what one
 * take spent, the next has not), each SBCL process an equal share of it
 * (symbolizer__lisp_budget): a tenant's Lisp code making many distinct
 * stacks cannot stall a turn, nor leave another SBCL process unnamed; the
 * frames past it are SYM_LISP_UNNAMED, counted (sbcl_write_unnamed) and
 * said in the profile's note (sbcl_unnamed_frames=N).
 */
int allocrun__take(struct allocrun *r, struct profile *prof, unsigned what)
{
	uint64_t unnamed = symbolizer__lisp_unnamed(r->sym);
	int err = take(r, prof, what);
	struct profile_meta *m;
	size_t n;

	r->sbcl_turn_ns = sat_add(r->sbcl_turn_ns, symbolizer__lisp_used(r->sym));
	symbolizer__lisp_budget(r->sym, 0);
	unnamed = symbolizer__lisp_unnamed(r->sym) - unnamed;
	r->sbcl_write_unnamed += unnamed;
	if (err || !unnamed)
		return err;
	m = profile__meta(prof);
	n = strnlen(m->note, sizeof(m->note));
	if (n < sizeof(m->note) - 1)
		snprintf(m->note + n, sizeof(m->note) - n, "%ssbcl_unnamed_frames=%" PRIu64,
			 n ? " " : "", unnamed);
	return 0;
}

static int take(struct allocrun *r, struct profile *prof, unsigned what)
{
	uint64_t c[ALLOC_C_NR], now;
	struct htab *fresh_cur = NULL, *fresh_tick = NULL;
	struct profile *ivl = NULL;
	struct total_stage st = { 0 };
	const struct edge *from = &r->start;
	struct profile_meta *m;
	struct guard_view gv;
	struct edge e;
	double scale = 1;
	int err = 0;

	if (!r->t1) { /* what the ring holds first: its blocks in the table name its stacks */
		allocprof__drain(r->ap, on_event, r, ALLOC_DRAIN_MAX);
		go_drain(r, now_ns());
	}
	/* what this turn's takes left of the budget (none: 1 ns, every frame unnamed) */
	symbolizer__lisp_budget(
		r->sym, MAX(sbcl_write_ns() - MIN(r->sbcl_turn_ns, sbcl_write_ns()), (uint64_t)1));
	guard_view(r, &gv); /* the guard's thread may switch meanwhile: one instant of it */
	now = r->t1 ? r->t1 : gv.now;
	allocprof__counters(r->ap, c);
	edge_at(r, &gv.g, &e, now, c);
	if (what & ALLOCRUN_INTERVAL)
		from = &r->ivl;
	else if (what & ALLOCRUN_TICK)
		from = &r->tickedge;
	if (((what & ALLOCRUN_INTERVAL) && !(fresh_cur = htab__new())) ||
	    ((what & ALLOCRUN_TICK) && r->tick && !(fresh_tick = htab__new())) ||
	    ((what & (ALLOCRUN_ALLOC | ALLOCRUN_INTERVAL)) && !(ivl = profile__new())))
		err = -ENOMEM;
	if (!err && ivl) {
		scale = scale_since(r, &gv.g, &r->ivl, now);
		err = add_set(r, ivl, r->aggs, scale);
		if (!err)
			err = profile__merge(prof, ivl);
	}
	if (!err && (what & ALLOCRUN_TICK) && r->tick) {
		double ts = scale_since(r, &gv.g, &r->tickedge, now);

		err = add_set(r, prof, r->tick, ts);
		if (!ivl)
			scale = ts;
	}
	if (!err && (what & ALLOCRUN_TOTAL) && r->total)
		err = profile__merge(prof, r->total);
	/* Staged: the total's change, then the live walk (its sweep deletes the
	 * blocks of exited processes; only its own add can fail after that),
	 * then the commit, which cannot fail. On an error nothing is committed. */
	if (!err && (what & ALLOCRUN_INTERVAL))
		err = total_stage(r, ivl, &st);
	if (!err && (what & ALLOCRUN_INUSE))
		err = take_inuse(r, gv.g.engaged, prof, what & ALLOCRUN_INTERVAL);
	profile__free(ivl);
	htab__free(r->alive); /* processes exit between takes: asked again next time */
	r->alive = NULL;
	if (err) {
		stage_free(&st);
		htab__free(fresh_cur);
		htab__free(fresh_tick);
		return err;
	}
	total_commit(r, &st);
	/* the guard's scale (/metrics) is an interval's, or the one-shot run's */
	if ((what & ALLOCRUN_INTERVAL) || ((what & ALLOCRUN_ALLOC) && r->t1))
		r->scale = scale;
	m = profile__meta(prof);
	m->alloc_period = r->period;
	m->start_ns = from->real;
	m->duration_ns = now - from->t;
	m->lost = e.lost - from->lost;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	m->alloc_on_ns = r->all ? allocguard__on_ns(&gv.g, now) - from->on : m->duration_ns;
	if (what & ~ALLOCRUN_INUSE) /* in-use only: a window's part, its note the window's */
		window_note(r, &gv.g, m);
	profile__sort(prof);
	if (fresh_cur) {
		set_free(r, r->aggs, false);
		r->aggs = fresh_cur;
		r->ivl = e;
	}
	if (fresh_tick) {
		set_free(r, r->tick, false);
		r->tick = fresh_tick;
		r->tickedge = e;
	}
	return 0;
}

void allocrun__want_ticks(struct allocrun *r, bool on)
{
	uint64_t c[ALLOC_C_NR];
	struct guard_view gv;

	if (on == !!r->tick)
		return;
	if (!on) {
		set_free(r, r->tick, false);
		r->tick = NULL;
		return;
	}
	r->tick = htab__new(); /* NULL: no memory, no tick set (an empty tick) */
	if (!r->ap)	       /* not started: the run's start is the tick's edge */
		return;
	guard_view(r, &gv);
	allocprof__counters(r->ap, c);
	edge_at(r, &gv.g, &r->tickedge, gv.now, c);
}

void allocrun__stats(struct allocrun *r, struct allocrun_stats *st)
{
	struct guard_view gv;

	guard_view(r, &gv);
	*st = (struct allocrun_stats){
		.period = r->period,
		.oom = r->oom,
		.t0 = r->t0,
		.t1 = r->t1,
		.all = r->all,
		.nr_go = r->go_seen, /* not those alive now: exited ones' counters stay */
		.nr_held = r->nr_held,
		.g = gv.g,
		.calls0 = r->calls0,
		.toggle_ns = { gv.toggle_ns[0], gv.toggle_ns[1] },
		.toggle_max_ns = gv.toggle_max_ns,
		.toggle_cpu_ns = gv.toggle_cpu_ns,
		.scale = r->scale,
		.stack_unknown = r->stack_unknown,
		.max_held = max_held(),
		.held_over = r->held_over,
		.looked_over = r->looked_over,
		.go_buckets = r->gob ? htab__count(r->gob) : 0,
		.go_bkt_bad = r->go_bkt_bad,
		.go_bkt_gone = r->go_bkt_gone,
		.go_bkt_over = r->go_bkt_over,
		.go_bkt_reads = r->go_bkt_reads,
		.go_bkt_read_ns = r->go_bkt_read_ns,
		.go_polled = r->go_polled,
		.go_poll_refused = r->go_poll_refused,
		.nr_sbcl = r->nr_sbcl,
		.sbcl_unnamed = r->sbcl_unnamed,
		.sbcl_write_unnamed = r->sbcl_write_unnamed,
		.go_poll_ended = r->go_poll_ended,
		.go_other = r->go_other,
		.go_stacks = r->go_stk_n,
		.go_stacks_max = go_stk_cap(),
		.go_stacks_proc = go_stk_cap_proc(),
		.go_stk_over = r->go_stk_over,
		.go_unnamed = r->go_unnamed,
		.go_bkts_refused = r->go_bkts_refused,
		.go_read_fails = r->go_read_fails,
		.go_list_over = r->go_list_over,
		.go_cg_over = r->go_cg_over,
		.go_stacks_cgroup = r->all ? go_stk_cap_cgroup() : 0,
		.go_reads_skipped = r->go_reads_skipped,
	};
	stacktab__stats(r->stacks, &st->stacks);
	allocprof__counters(r->ap, st->c);
	for (size_t i = 0; i < r->nr_go; i++)
		st->go_off_warned |= r->go[i].off_warned;
}

void allocrun__metrics(struct allocrun *r, struct metrics_alloc *m)
{
	uint64_t c[ALLOC_C_NR] = { 0 };
	struct guard_view gv;

	guard_view(r, &gv);
	if (r->ap)
		allocprof__counters(r->ap, c);
	*m = (struct metrics_alloc){
		.calls = c[ALLOC_C_CALLS],
		.frees = c[ALLOC_C_FREES],
		.others = c[ALLOC_C_OTHERS],
		.samples_libc = c[ALLOC_C_RECORDED] > c[ALLOC_C_GO_SAMPLES]
					? c[ALLOC_C_RECORDED] - c[ALLOC_C_GO_SAMPLES]
					: 0,
		.samples_go = c[ALLOC_C_GO_SAMPLES],
		.freed_libc = c[ALLOC_C_FREED],
		.freed_go = c[ALLOC_C_GO_FREED],
		.live_blocks = r->live_blocks,
		.inuse_bytes = value_of(r->inuse_bytes),
		.probes = gv.probes,
		.live_dropped_exited = r->live_dropped_exited,
		.aggs_evicted = r->aggs_evicted,
		.sbcl_unnamed_frames = r->sbcl_write_unnamed,
		.all = r->all,
		.files_probed = r->nr_held,
		.files_probed_max = max_held(),
		.files_not_probed = r->held_over,
		.files_not_looked = r->looked_over,
	};
	m->lost[METRICS_ALLOC_LOST_RING_FULL] = c[ALLOC_C_RING_FULL];
	m->lost[METRICS_ALLOC_LOST_LIVE_FULL] = c[ALLOC_C_LIVE_FULL];
	m->lost[METRICS_ALLOC_LOST_NO_STACK] = c[ALLOC_C_NO_STACK];
	m->lost[METRICS_ALLOC_LOST_NO_THREAD] = c[ALLOC_C_NO_THREAD];
	m->lost[METRICS_ALLOC_LOST_NO_RETURN] = c[ALLOC_C_NO_RETURN];
	m->lost[METRICS_ALLOC_LOST_MEMORY] = r->oom;
	m->go = r->nr_go || r->gob || r->all;
	m->go_lost[METRICS_GO_LOST_REFUSED] = r->go_bkt_bad;
	m->go_lost[METRICS_GO_LOST_TABLES_FULL] =
		sat_add(r->go_bkt_over, c[ALLOC_C_GO_BUCKETS_FULL]);
	m->go_lost[METRICS_GO_LOST_EXITED] = r->go_bkt_gone;
	m->go_unnamed = r->go_unnamed;
	m->go_bkts_refused = r->go_bkts_refused;
	m->go_bkts_unnamed = r->go_stk_over - MIN(r->go_cg_over, r->go_stk_over);
	m->go_bkts_cgroup = r->go_cg_over;
	m->go_stacks_cgroup = r->all ? go_stk_cap_cgroup() : 0;
	m->go_reads_skipped = r->go_reads_skipped;
	m->go_read_fails = r->go_read_fails;
	m->go_list_over = r->go_list_over;
	m->go_poll_ended = r->go_poll_ended;
	m->go_other = r->go_other;
	m->go_buckets = r->gob ? htab__count(r->gob) : 0;
	m->go_stacks = r->go_stk_n;
	m->go_stacks_max = go_stk_cap();
	m->go_stacks_proc = go_stk_cap_proc();
	if (!r->all || !gv.g.budget)
		return;
	m->guard = true;
	m->guard_engaged = gv.g.engaged;
	m->guard_duty = gv.g.duty;
	m->guard_scale = r->scale;
	m->guard_rate = gv.g.rate;
	m->guard_windows = gv.g.windows;
	m->guard_toggles = gv.g.toggles;
	m->probes_on_ns = allocguard__on_ns(&gv.g, r->t1 ? r->t1 : gv.now);
	m->switch_ns[0] = gv.toggle_ns[0];
	m->switch_ns[1] = gv.toggle_ns[1];
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
	fds_check(r);
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
	/* The probes in (kept while the processes were looked at), the run at once;
	 * "profiling" said once they are (a caller waiting for it may start the
	 * workload: its first calls were not seen when it was said before). */
	if (allocprof__probes_on(r->ap, &em))
		p_warn("the allocator's probes not all attached: %s",
		       errmsg_said(&em) ? em.msg : "(no reason given)");
	if (!allocprof__probes(r->ap)) {
		p_err("no probe could be attached");
		return 1;
	}
	p_info("profiling allocations of %s (%zu files), one sample every %" PRIu64
	       " bytes on average; %s",
	       o->nr_cgroups ? "the cgroups' processes" : "every process", r->nr_held, r->period,
	       o->alloc_budget ? "the guard holds the calls under --alloc-budget" : "no guard");
	if (o->alloc_budget)
		p_debug("--alloc-budget %" PRIu64 " calls/s across the CPUs", o->alloc_budget);
	p_info("probes: %s", allocprof__mode(r->ap));
	p_debug("%zu probes in", allocprof__probes(r->ap));
	load_cost(r);
	run_start(r);
	return 0;
}

/* The allocator's programs, for -p and -- COMMAND. 0 or 1 (said). */
static int open_targeted(struct allocrun *r)
{
	struct errmsg em = { 0 };

	r->ap = allocprof__open(r->period, log_level() >= LOG_DEBUG && r->o->verbosity > 1, &em);
	if (!r->ap) {
		p_errmsg(&em);
		return 1;
	}
	p_debug("allocator probes: %s", allocprof__mode(r->ap));
	fds_check(r);
	load_cost(r);
	return 0;
}

int allocrun__launch(struct allocrun *r, struct child *ch)
{
	if (open_targeted(r) || start_command(r, ch))
		return 1;
	r->launched = true;
	return 0;
}

int allocrun__start(struct allocrun *r)
{
	int err;

	if (r->all)
		return start_all(r);
	if (r->launched) {
		/* allocrun__launch: the caller's child, stopped at its entry;
		 * watched by its pidfd like -p's, never reaped nor ended here */
	} else if (open_targeted(r)) {
		return 1;
	} else if (r->o->cmd_is_target) {
		if (start_command(r, &r->ch))
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

/* The stack table's cap (tests: its overflow). */
static size_t stacks_cap(void)
{
	return test_cap("BPFPROF_TEST_ALLOC_STACKS", ALLOCRUN_STACKS);
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
	r->comms = htab__new();
	r->stacks = stacktab__new(stacks_cap(), ALLOC_STACK_DEPTH);
	if (!r->aggs || !r->comms || !r->stacks) {
		htab__free(r->aggs);
		htab__free(r->comms);
		stacktab__free(r->stacks);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

size_t allocrun__nr_comms(const struct allocrun *r)
{
	return htab__count(r->comms);
}

void allocrun__set_starttime(struct allocrun *r,
			     int (*fn)(struct ptab *t, uint32_t pid, uint64_t *ticks))
{
	r->starttime = fn;
}

void allocrun__free(struct allocrun *r)
{
	size_t pos = 0;

	if (!r)
		return;
	guard_join(r);
	if (r->ch.pid && !r->ch.exited) /* -d, a stop request or a failed start: bpfprof ends it */
		child__abort(&r->ch);
	allocprof__free(r->ap);
	for (size_t i = 0; i < r->nr_held; i++)
		mfile__put(r->ptab, r->held[i]);
	free(r->held);
	set_free(r, r->aggs, false);
	set_free(r, r->tick, false);
	for (struct htab_entry *e; r->gob && (e = htab__next(r->gob, &pos));) {
		struct gobkt *b = e->value;

		if (b->stack)
			stacktab__put(r->stacks, b->stack);
		free(b);
	}
	htab__free(r->gob);
	pos = 0;
	for (struct htab_entry *e; r->go_stk && (e = htab__next(r->go_stk, &pos));)
		free(e->value);
	htab__free(r->go_stk);
	htab__free(r->go_cg);
	free(r->new_bkts);
	pos = 0;
	for (struct htab_entry *e; (e = htab__next(r->comms, &pos));)
		free(e->value);
	htab__free(r->refs);
	htab__free(r->comms);
	htab__free(r->alive);
	profile__free(r->total);
	pos = 0;
	for (struct htab_entry *e; r->others && (e = htab__next(r->others, &pos));)
		free(e->value);
	htab__free(r->others);
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
	htab__free(r->sbcl_named);
	htab__free(r->shares);
	free(r->rescan);
	htab__free(r->noted);
	free(r);
}
