// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_allocrun.c - the --alloc engine's sets and takes (session/allocrun.h)
 * without BPF: collector/alloc.h's functions are faked here (libcore.a has
 * no libbpf user, so these definitions are the ones linked), the events
 * and the live table are the test's. The engine profiles this process (-p
 * self: its C library found and "probed"), and its stacks are addresses of
 * this file's functions, named by the real symbolizer.
 *
 * What it shows: alloc_* per interval and in-use from the live table only
 * (two takes never count a block twice); the run-long total; a stack only
 * live blocks name survives a full stack table (pins); the sweep of an
 * exited process's blocks (continuous takes only); the tick set; the
 * per-span scale; allocrun__metrics; the run-long total's cap ([other
 * stacks]; exited processes' samples folded to make room); a failed take committing nothing; -a's
 * guard: the scale /metrics gives (an interval's) and the profiles' notes; the process-name table
 * following the processes (one gone forgotten, a pid reused renamed).
 */
#include "testutil.h"

#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "agent/metrics.h"
#include "base/profile.h"
#include "collector/alloc.h"
#include "collector/allocguard.h"
#include "proc/ptab.h"
#include "session/allocrun.h"
#include "session/options.h"
#include "sym/symbolizer.h"

#define PERIOD 4096

/* --- the fake collector ---------------------------------------------- */

struct allocprof {
	int unused;
};
static struct allocprof fake;
static struct alloc_event events[16];
static size_t nr_events;
static struct {
	struct alloc_live_key k;
	struct alloc_live v;
} live[16];
static size_t nr_live;
static uint64_t counters[ALLOC_C_NR];

struct allocprof *allocprof__open(uint64_t period, bool libbpf_debug, struct errmsg *em)
{
	(void)period, (void)libbpf_debug, (void)em;
	return &fake;
}

struct allocprof *allocprof__open_scope(uint64_t period, const struct allocprof_scope *scope,
					bool libbpf_debug, struct errmsg *em)
{
	(void)scope;
	return allocprof__open(period, libbpf_debug, em);
}

void allocprof__free(struct allocprof *a)
{
	(void)a;
}

const char *allocprof__mode(const struct allocprof *a)
{
	(void)a;
	return "fake";
}

void allocprof__load_cost(const struct allocprof *a, uint64_t *ns, uint64_t *insns)
{
	(void)a;
	*ns = *insns = 0;
}

int allocprof__target(struct allocprof *a, uint32_t tgid, bool stop_at_exec)
{
	(void)a, (void)tgid, (void)stop_at_exec;
	return 0;
}

int allocprof__attach_exec_stop(struct allocprof *a, struct errmsg *em)
{
	(void)a, (void)em;
	return 0;
}

int allocprof__attach_stop(struct allocprof *a, const char *path, uint64_t off, int pid,
			   struct errmsg *em)
{
	(void)a, (void)path, (void)off, (void)pid, (void)em;
	return 0;
}

void allocprof__detach_stops(struct allocprof *a)
{
	(void)a;
}

int allocprof__attach_file(struct allocprof *a, const char *path, int pid, const uint32_t *fns,
			   const uint64_t *offs, size_t n, struct errmsg *em)
{
	(void)a, (void)path, (void)pid, (void)fns, (void)offs, (void)n, (void)em;
	return 0;
}

int allocprof__probes_off(struct allocprof *a)
{
	(void)a;
	return 0;
}

int allocprof__probes_on(struct allocprof *a, struct errmsg *em)
{
	(void)a, (void)em;
	return 0;
}

int allocprof__sbcl_layout(struct allocprof *a, uint32_t slot, const struct alloc_sbcl *l)
{
	(void)a, (void)slot, (void)l;
	return 0;
}

void allocprof__track_live(struct allocprof *a, bool on)
{
	(void)a, (void)on;
}

void allocprof__pause(struct allocprof *a)
{
	(void)a;
}

size_t allocprof__fds_per_file(const struct allocprof *a)
{
	(void)a;
	return 1;
}

void allocprof__fds(const struct allocprof *a, size_t *now, size_t *on)
{
	(void)a;
	*now = *on = 0;
}

size_t allocprof__probes(const struct allocprof *a)
{
	(void)a;
	return 7;
}

int allocprof__drain(struct allocprof *a, void (*cb)(void *ctx, const struct alloc_event *e),
		     void *ctx, size_t max)
{
	size_t n = nr_events;

	(void)a, (void)max;
	for (size_t i = 0; i < n; i++)
		cb(ctx, &events[i]);
	nr_events = 0;
	return (int)n;
}

int allocprof__live(struct allocprof *a,
		    bool (*cb)(void *ctx, const struct alloc_live_key *k,
			       const struct alloc_live *v),
		    void *ctx, size_t *deleted)
{
	size_t kept = 0;

	(void)a;
	*deleted = 0;
	for (size_t i = 0; i < nr_live; i++) {
		if (cb(ctx, &live[i].k, &live[i].v))
			(*deleted)++;
		else
			live[kept++] = live[i];
	}
	nr_live = kept;
	return 0;
}

/* Go's buckets: none here (tests/integration/test_gobucket.py runs them). */
int allocprof__go_buckets(struct allocprof *a,
			  void (*cb)(void *ctx, const struct alloc_go_bkey *k,
				     const struct alloc_go_bval *v),
			  void *ctx)
{
	(void)a;
	(void)cb;
	(void)ctx;
	return 0;
}

size_t allocprof__go_forget(struct allocprof *a, const struct alloc_go_bkey *keys, size_t n)
{
	(void)a;
	(void)keys;
	(void)n;
	return 0;
}

void allocprof__counters(struct allocprof *a, uint64_t out[ALLOC_C_NR])
{
	(void)a;
	memcpy(out, counters, sizeof(counters));
}

/* --- the stacks: this file's functions -------------------------------- */

static __attribute__((noinline, used)) void site_a(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static __attribute__((noinline, used)) void site_b(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static __attribute__((noinline, used)) void site_c(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static __attribute__((noinline, used)) void site_d(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

/* A sampled allocation of size bytes at addr by fn (its stack: fn alone, hash h). */
static void event(void (*fn)(void), uint64_t h, uint64_t size, uint64_t addr, bool keep)
{
	struct alloc_event *e = &events[nr_events++];

	memset(e, 0, sizeof(*e));
	e->tgid = (uint32_t)getpid();
	e->nr = 1;
	e->size = size;
	e->addr = addr;
	strcpy(e->comm, "test_allocrun");
	e->source = ALLOC_SRC_LIBC;
	e->stack = h;
	e->ips[0] = (uint64_t)(uintptr_t)fn + 4; /* a return address inside fn */
	counters[ALLOC_C_RECORDED]++;
	if (keep) {
		live[nr_live].k = (struct alloc_live_key){ .tgid = e->tgid, .addr = addr };
		live[nr_live].v = (struct alloc_live){ .size = size, .stack = h };
		nr_live++;
	}
}

static double weight(uint64_t size)
{
	return 1 / -expm1(-(double)size / PERIOD);
}

/* The values of the samples whose leaf is name, summed; how many samples. */
static size_t values_at(const struct profile *p, const char *name, struct palloc *v)
{
	size_t n = 0;

	*v = (struct palloc){ 0 };
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		uint32_t nf;
		const uint32_t *fr = profile__stack_get(p, s->stack, &nf);

		if (!nf || strcmp(profile__frame_get(p, fr[nf - 1])->name, name))
			continue;
		n++;
		v->alloc_objects += s->alloc.alloc_objects;
		v->alloc_bytes += s->alloc.alloc_bytes;
		v->inuse_objects += s->alloc.inuse_objects;
		v->inuse_bytes += s->alloc.inuse_bytes;
	}
	return n;
}

/* The inuse bytes of process pid's samples. */
static uint64_t inuse_of(const struct profile *p, uint32_t pid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < profile__nr_samples(p); i++)
		if (profile__sample(p, i)->pid == pid)
			n += profile__sample(p, i)->alloc.inuse_bytes;
	return n;
}

struct rig {
	struct options o;
	uint32_t pid;
	struct ptab *pt;
	struct symbolizer *sym;
	struct allocrun *ar;
};

static int rig_up(void **state)
{
	struct rig *g = calloc(1, sizeof(*g));

	nr_events = nr_live = 0;
	memset(counters, 0, sizeof(counters));
	g->pid = (uint32_t)getpid();
	g->o.pids = &g->pid;
	g->o.nr_pids = 1;
	g->o.alloc_period = PERIOD;
	g->o.verbosity = -1;
	g->pt = ptab__new(&(struct ptab_opts){ 0 });
	g->sym = symbolizer__new(&(struct symbolizer_opts){ .ptab = g->pt });
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_non_null(g->ar);
	assert_int_equal(allocrun__start(g->ar), 0);
	*state = g;
	return 0;
}

static int rig_down(void **state)
{
	struct rig *g = *state;

	allocrun__free(g->ar);
	symbolizer__free(g->sym);
	ptab__free(g->pt);
	free(g);
	unsetenv("BPFPROF_TEST_ALLOC_STACKS");
	return 0;
}

static struct profile *take(struct allocrun *ar, unsigned what)
{
	struct profile *p = profile__new();

	assert_non_null(p);
	allocrun__tick(ar, now_ns());
	assert_int_equal(allocrun__take(ar, p, what), 0);
	return p;
}

/*
 * Two interval takes: alloc_* only of each interval's own allocations,
 * inuse_* the live table's blocks once each time (not summed over takes);
 * the total holds the intervals; the one-shot take (ALL) keeps cur.
 */
static void test_two_takes(void **state)
{
	struct rig *g = *state;
	double wa = weight(4096) * 4096, wb = weight(100) * 100;
	struct profile *p;
	struct palloc v;

	event(site_a, 0x1111, 4096, 0x10000, true);
	event(site_b, 0x2222, 100, 0x20000, false);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(values_at(p, "site_a", &v), 1);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa));
	assert_int_equal(v.inuse_bytes, (uint64_t)llround(wa));
	assert_int_equal(values_at(p, "site_b", &v), 1);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wb));
	assert_int_equal(v.inuse_bytes, 0);
	assert_int_not_equal(profile__meta(p)->start_ns, 0);
	assert_int_equal(profile__meta(p)->alloc_period, PERIOD);
	profile__free(p);

	/* the second interval: nothing allocated; the block still in use, once */
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(values_at(p, "site_a", &v), 1);
	assert_int_equal(v.alloc_bytes, 0);
	assert_int_equal(v.inuse_bytes, (uint64_t)llround(wa));
	assert_int_equal(values_at(p, "site_b", &v), 0);
	profile__free(p);

	/* the third: site_c allocates; with TOTAL, the intervals before it too */
	event(site_c, 0x3333, 4096, 0x30000, false);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_TOTAL);
	values_at(p, "site_a", &v);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa));
	assert_int_equal(v.inuse_bytes, 0);
	values_at(p, "site_c", &v);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa));
	profile__free(p);
	p = take(g->ar, ALLOCRUN_TOTAL);
	values_at(p, "site_b", &v);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wb));
	values_at(p, "site_c", &v);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa)); /* merged once */
	profile__free(p);

	/* ALL (one-shot) keeps cur: twice the same */
	event(site_d, 0x4444, 4096, 0x40000, true);
	for (int i = 0; i < 2; i++) {
		p = take(g->ar, ALLOCRUN_ALL);
		values_at(p, "site_d", &v);
		assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa));
		assert_int_equal(v.inuse_bytes, (uint64_t)llround(wa));
		values_at(p, "site_a", &v);
		assert_int_equal(v.inuse_bytes, (uint64_t)llround(wa));
		profile__free(p);
	}
}

/*
 * A stack only a live block names survives a full stack table across
 * interval resets (its pin); once the block is freed, the pin goes at the
 * next walk and the stack makes room.
 */
static void test_pins(void **state)
{
	struct rig *g = *state;
	struct allocrun_stats st;
	struct profile *p;
	struct palloc v;

	/* the rig's run is replaced by one with a table of 2 stacks */
	allocrun__free(g->ar);
	setenv("BPFPROF_TEST_ALLOC_STACKS", "2", 1);
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_int_equal(allocrun__start(g->ar), 0);

	event(site_a, 0x1111, 4096, 0x10000, true);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(values_at(p, "site_a", &v), 1);
	profile__free(p);
	/* three new stacks: b takes the free place, c and d find the table full */
	event(site_b, 0x2222, 100, 0x20000, false);
	event(site_c, 0x3333, 100, 0x30000, false);
	event(site_d, 0x4444, 100, 0x40000, false);
	profile__free(take(g->ar, ALLOCRUN_INTERVAL));
	/* c again: b is unreferenced now and goes; a is pinned and stays */
	event(site_c, 0x3333, 100, 0x30000, false);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(values_at(p, "site_a", &v), 1);
	assert_int_equal(v.inuse_bytes, (uint64_t)llround(weight(4096) * 4096));
	assert_int_equal(values_at(p, "[stack lost]", &v), 0);
	assert_int_equal(values_at(p, "site_c", &v), 1);
	profile__free(p);
	allocrun__stats(g->ar, &st);
	assert_int_equal(st.stacks.pinned, 1);
	assert_int_equal(st.stack_unknown, 0);

	/* a freed: the next walk lets its pin go, and a is evicted for d */
	nr_live = 0;
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	allocrun__stats(g->ar, &st);
	assert_int_equal(st.stacks.pinned, 0);
	event(site_d, 0x4444, 100, 0x40000, false);
	event(site_b, 0x2222, 100, 0x20000, false);
	p = take(g->ar, ALLOCRUN_INTERVAL);
	assert_int_equal(values_at(p, "site_d", &v), 1);
	assert_int_equal(values_at(p, "site_b", &v), 1);
	profile__free(p);
}

/* A process gone: its blocks are in the next interval's in-use once, then
 * deleted from the table (counted); a one-shot take deletes nothing. */
static void test_sweep(void **state)
{
	struct rig *g = *state;
	struct metrics_alloc m;
	struct profile *p;
	struct palloc v;
	pid_t dead = fork();

	if (!dead)
		_exit(0);
	assert_true(dead > 0);
	waitpid(dead, NULL, 0);
	event(site_a, 0x1111, 4096, 0x10000, true);
	live[nr_live - 1].k.tgid = (uint32_t)dead;
	event(site_b, 0x2222, 4096, 0x20000, true);
	p = take(g->ar, ALLOCRUN_ALL);
	assert_int_equal(nr_live, 2);
	profile__free(p);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(inuse_of(p, (uint32_t)dead), (uint64_t)llround(weight(4096) * 4096));
	profile__free(p);
	assert_int_equal(nr_live, 1);
	allocrun__metrics(g->ar, &m);
	assert_int_equal(m.live_dropped_exited, 1);
	assert_int_equal(m.live_blocks, 2); /* the walk's: the dropped one counted in it */
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(inuse_of(p, (uint32_t)dead), 0);
	assert_int_equal(values_at(p, "site_b", &v), 1);
	profile__free(p);
	allocrun__metrics(g->ar, &m);
	assert_int_equal(m.live_blocks, 1);
	assert_int_equal(m.inuse_bytes, (uint64_t)llround(weight(4096) * 4096));
}

/* The tick set: kept only while heap requests wait, apart from cur (an
 * interval's reset leaves it), reset by each TICK take. */
static void test_ticks(void **state)
{
	struct rig *g = *state;
	double wa = weight(4096) * 4096;
	struct profile *p;
	struct palloc v;

	event(site_a, 0x1111, 4096, 0x10000, false); /* before: not in a tick */
	allocrun__tick(g->ar, now_ns());
	allocrun__want_ticks(g->ar, true);
	event(site_b, 0x2222, 4096, 0x20000, false);
	profile__free(take(g->ar, ALLOCRUN_INTERVAL));
	event(site_c, 0x3333, 4096, 0x30000, false);
	p = take(g->ar, ALLOCRUN_TICK);
	assert_int_equal(values_at(p, "site_a", &v), 0);
	assert_int_equal(values_at(p, "site_b", &v), 1);
	assert_int_equal(v.alloc_bytes, (uint64_t)llround(wa));
	assert_int_equal(values_at(p, "site_c", &v), 1);
	profile__free(p);
	p = take(g->ar, ALLOCRUN_TICK);
	assert_int_equal(profile__nr_samples(p), 0);
	profile__free(p);
	/* cur kept its own: c since the interval */
	p = take(g->ar, ALLOCRUN_INTERVAL);
	assert_int_equal(values_at(p, "site_b", &v), 0);
	assert_int_equal(values_at(p, "site_c", &v), 1);
	profile__free(p);
	allocrun__want_ticks(g->ar, false);
	event(site_d, 0x4444, 4096, 0x40000, false);
	p = take(g->ar, ALLOCRUN_TICK);
	assert_int_equal(profile__nr_samples(p), 0);
	profile__free(p);
}

/* The comm of process pid's samples (the first one's); NULL: none. */
static const char *comm_of(const struct profile *p, uint32_t pid)
{
	for (size_t i = 0; i < profile__nr_samples(p); i++)
		if (profile__sample(p, i)->pid == pid)
			return profile__sample(p, i)->comm;
	return NULL;
}

/* A child that waits until the pipe's write end closes, then exits. */
static pid_t waiter(int fds[2])
{
	pid_t pid = fork();

	if (!pid) {
		char c;

		close(fds[1]);
		_exit(read(fds[0], &c, 1) < 0);
	}
	assert_true(pid > 0);
	return pid;
}

/*
 * The name table forgets a process gone: one without blocks at the next
 * interval's sweep, one with blocks once the walk that deletes them has
 * named them (fcf51cc kept the first for good: the table filled up with
 * the pids of a busy host).
 */
static void test_comms_gone(void **state)
{
	struct rig *g = *state;
	struct profile *p;
	pid_t a, b;
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	a = waiter(fds);
	b = waiter(fds);
	close(fds[0]);
	event(site_a, 0x1111, 4096, 0x10000, false);
	events[nr_events - 1].tgid = (uint32_t)a;
	strcpy(events[nr_events - 1].comm, "ay");
	event(site_b, 0x2222, 4096, 0x20000, true);
	events[nr_events - 1].tgid = live[nr_live - 1].k.tgid = (uint32_t)b;
	strcpy(events[nr_events - 1].comm, "bee");
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, (uint32_t)b), "bee");
	profile__free(p);
	assert_int_equal(allocrun__nr_comms(g->ar), 2); /* both live: kept */

	close(fds[1]);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	/* b's block, allocated an interval ago: named from the table, then deleted */
	assert_string_equal(comm_of(p, (uint32_t)b), "bee");
	assert_int_equal(inuse_of(p, (uint32_t)b), (uint64_t)llround(weight(4096) * 4096));
	profile__free(p);
	assert_int_equal(nr_live, 0);
	assert_int_equal(allocrun__nr_comms(g->ar), 0);
}

/* The fake start time of every process (test_comms_reused), or the error its read fails with. */
static uint64_t fake_start = 100;
static int fake_err;

static int fake_starttime(struct ptab *t, uint32_t pid, uint64_t *ticks)
{
	(void)t, (void)pid;
	*ticks = fake_start;
	return fake_err;
}

/*
 * A pid another process has now (its start time changed): its blocks carry
 * the new process's name, not the one first seen under that pid (fcf51cc:
 * the old one, for good).
 */
static void test_comms_reused(void **state)
{
	struct rig *g = *state;
	struct profile *p;

	allocrun__set_starttime(g->ar, fake_starttime);
	event(site_a, 0x1111, 4096, 0x10000, false);
	strcpy(events[nr_events - 1].comm, "old");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	assert_int_equal(allocrun__nr_comms(g->ar), 1);

	/* the pid is another process's now: it allocates a block that stays */
	fake_start = 200;
	event(site_b, 0x2222, 4096, 0x20000, true);
	strcpy(events[nr_events - 1].comm, "new");
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, g->pid), "new"); /* from the interval's own */
	profile__free(p);
	/* an interval later the block is named from the table */
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(inuse_of(p, g->pid), (uint64_t)llround(weight(4096) * 4096));
	assert_string_equal(comm_of(p, g->pid), "new");
	profile__free(p);

	/* reused again, with no allocation of the new process seen: forgotten,
	 * then noted afresh by its next event */
	fake_start = 300;
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	assert_int_equal(allocrun__nr_comms(g->ar), 0);
	event(site_c, 0x3333, 100, 0x30000, false);
	strcpy(events[nr_events - 1].comm, "newer");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, g->pid), "newer");
	profile__free(p);

	/* reused within one interval, both processes allocating in it: the new
	 * one's first event under another name reads the start time again */
	fake_start = 500;
	event(site_a, 0x1111, 100, 0x10000, false);
	strcpy(events[nr_events - 1].comm, "first");
	allocrun__tick(g->ar, now_ns());
	fake_start = 600;
	event(site_d, 0x4444, 100, 0x40000, false);
	strcpy(events[nr_events - 1].comm, "second");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, g->pid), "second");
	profile__free(p);

	/* a start time not read when first seen: the sweep that reads it takes
	 * another name the interval's allocations carry (the pid may have been
	 * another's), whichever agg it meets first */
	fake_start = 400;
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE)); /* reused: forgotten */
	assert_int_equal(allocrun__nr_comms(g->ar), 0);
	fake_err = -EMFILE;
	event(site_a, 0x1111, 100, 0x10000, false);
	strcpy(events[nr_events - 1].comm, "unsure");
	allocrun__tick(g->ar, now_ns()); /* noted, its start time unread */
	fake_err = 0;
	event(site_c, 0x3333, 100, 0x30000, false);
	strcpy(events[nr_events - 1].comm, "sure");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, g->pid), "sure");
	profile__free(p);

	/* reused, the interval's allocations all under the name kept: in doubt,
	 * the next event's name is taken */
	fake_start = 900;
	event(site_c, 0x3333, 100, 0x30000, false);
	strcpy(events[nr_events - 1].comm, "sure");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	event(site_c, 0x3333, 100, 0x30000, false);
	strcpy(events[nr_events - 1].comm, "later");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_string_equal(comm_of(p, g->pid), "later");
	profile__free(p);
	fake_start = 100;
}

/* The counters as /metrics shows them. */
static void test_metrics(void **state)
{
	struct rig *g = *state;
	struct metrics_alloc m;

	counters[ALLOC_C_CALLS] = 100;
	counters[ALLOC_C_FREES] = 90;
	counters[ALLOC_C_RECORDED] = 12;
	counters[ALLOC_C_GO_SAMPLES] = 2;
	counters[ALLOC_C_GO_FREED] = 1;
	counters[ALLOC_C_FREED] = 5;
	counters[ALLOC_C_RING_FULL] = 3;
	counters[ALLOC_C_NO_RETURN] = 4;
	allocrun__metrics(g->ar, &m);
	assert_int_equal(m.calls, 100);
	assert_int_equal(m.frees, 90);
	assert_int_equal(m.samples_libc, 10);
	assert_int_equal(m.samples_go, 2);
	assert_int_equal(m.freed_libc, 5);
	assert_int_equal(m.freed_go, 1);
	assert_int_equal(m.lost[METRICS_ALLOC_LOST_RING_FULL], 3);
	assert_int_equal(m.lost[METRICS_ALLOC_LOST_NO_RETURN], 4);
	assert_int_equal(m.probes, 7);
	assert_false(m.guard); /* -p: no guard */
}

/* The meta of a span: what was lost in it, not since the start. */
static void test_meta(void **state)
{
	struct rig *g = *state;
	struct profile *p;

	counters[ALLOC_C_RING_FULL] = 5;
	p = take(g->ar, ALLOCRUN_INTERVAL);
	assert_int_equal(profile__meta(p)->lost, 5);
	profile__free(p);
	counters[ALLOC_C_RING_FULL] = 7;
	p = take(g->ar, ALLOCRUN_INTERVAL);
	assert_int_equal(profile__meta(p)->lost, 2);
	profile__free(p);
	p = take(g->ar, ALLOCRUN_ALL);
	assert_int_equal(profile__meta(p)->lost, 7); /* the run's */
	profile__free(p);
}

/*
 * The guard's scale over a span: its own time over its own time on. A run
 * on for its first 10 s, then on 2 s of each 10: the first interval's
 * scale is 1 and the second's 5, where the run-long one is 20/12.
 */
static void test_span_scale(void **state)
{
	const uint64_t s = NS_PER_SEC;
	struct allocguard gd = { .start_ns = 0 };
	uint64_t on10, on20;

	(void)state;
	gd.on_ns = 10 * s; /* at 10 s: on throughout */
	on10 = allocguard__on_ns(&gd, 10 * s);
	gd.on_ns = 12 * s; /* at 20 s: 2 s more */
	on20 = allocguard__on_ns(&gd, 20 * s);
	assert_true(fabs(allocrun__span_scale(0, 0, 10 * s, on10) - 1) < 1e-9);
	assert_true(fabs(allocrun__span_scale(10 * s, on10, 20 * s, on20) - 5) < 1e-9);
	assert_true(fabs(allocrun__span_scale(0, 0, 20 * s, on20) - 20.0 / 12) < 1e-9);
	/* never on, or no time: 1 */
	assert_true(allocrun__span_scale(0, 0, 10 * s, 0) == 1);
	assert_true(allocrun__span_scale(5, 3, 5, 3) == 1);
}

/* A sampled allocation whose stack is depth frames of fns (leaf first), hash h. */
static void event_deep(void (*const *fns)(void), uint32_t depth, uint64_t h, uint64_t size)
{
	event(fns[0], h, size, 0, false);
	events[nr_events - 1].nr = depth;
	for (uint32_t i = 0; i < depth; i++)
		events[nr_events - 1].ips[i] = (uint64_t)(uintptr_t)fns[i] + 4;
}

/* The alloc_bytes of every sample of p, summed. */
static uint64_t alloc_sum(const struct profile *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < profile__nr_samples(p); i++)
		n += profile__sample(p, i)->alloc.alloc_bytes;
	return n;
}

/*
 * The run-long total is bounded at insertion: one live process with 256
 * distinct stacks over 3 intervals, at a cap of 64, keeps at most 64
 * samples and one [other stacks] sample for it; the bytes of the stacks
 * left out are in that sample (nothing lost), the samples folded counted.
 */
static void test_total_cap(void **state)
{
	static void (*const sites[4])(void) = { site_a, site_b, site_c, site_d };
	struct rig *g = *state;
	struct metrics_alloc m;
	struct profile *p;
	struct palloc v;
	uint64_t want = 0;

	allocrun__free(g->ar);
	setenv("BPFPROF_TEST_ALLOC_TOTAL_MAX", "64", 1);
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_int_equal(allocrun__start(g->ar), 0);
	for (int ivl = 0; ivl < 3; ivl++) {
		for (uint32_t c = 0; c < 256; c++) {
			void (*fns[4])(void) = { sites[c & 3], sites[(c >> 2) & 3],
						 sites[(c >> 4) & 3], sites[(c >> 6) & 3] };

			if (nr_events == 16)
				allocrun__tick(g->ar, now_ns());
			event_deep(fns, 4, 0x100000 + c, 1000 + 100 * (uint64_t)ivl + c);
		}
		p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
		assert_int_equal(profile__nr_samples(p), 256);
		want += alloc_sum(p);
		profile__free(p);
	}
	p = take(g->ar, ALLOCRUN_TOTAL);
	assert_true(profile__nr_samples(p) <= 65);
	assert_int_equal(alloc_sum(p), want); /* conserved */
	assert_int_equal(values_at(p, "[other stacks]", &v), 1);
	assert_true(v.alloc_bytes > 0);
	profile__free(p);
	allocrun__metrics(g->ar, &m);
	assert_true(m.aggs_evicted >= 3 * (256 - 64));
	unsetenv("BPFPROF_TEST_ALLOC_TOTAL_MAX");
}

/* The comm of the [other stacks] sample of p named comm: its alloc_bytes (0: none). */
static uint64_t others_of(const struct profile *p, const char *comm)
{
	uint64_t n = 0;

	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		uint32_t nf;
		const uint32_t *fr = profile__stack_get(p, s->stack, &nf);

		if (nf && !strcmp(profile__frame_get(p, fr[nf - 1])->name, "[other stacks]") &&
		    !strcmp(s->comm, comm))
			n += s->alloc.alloc_bytes;
	}
	return n;
}

/*
 * The run-long total full: a process's stacks left out fold into its
 * [other stacks], one a process by (pid, start time) as the name table
 * keeps them: a pid reused by another process is another sample under the
 * new name (keyed by pid alone, the new one's bytes went under the exited
 * one's name).
 */
static void test_total_others_reused(void **state)
{
	struct rig *g = *state;
	struct profile *p;
	uint64_t wb = (uint64_t)llround(weight(4096) * 4096), old, new;

	allocrun__free(g->ar);
	setenv("BPFPROF_TEST_ALLOC_TOTAL_MAX", "1", 1);
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_int_equal(allocrun__start(g->ar), 0);
	allocrun__set_starttime(g->ar, fake_starttime);
	fake_start = 100;
	event(site_a, 0x1111, 4096, 0, false);
	strcpy(events[nr_events - 1].comm, "old");
	event(site_b, 0x2222, 4096, 0, false);
	strcpy(events[nr_events - 1].comm, "old");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	/* the pid is another process's now */
	fake_start = 200;
	event(site_c, 0x3333, 4096, 0, false);
	strcpy(events[nr_events - 1].comm, "new");
	profile__free(take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE));
	p = take(g->ar, ALLOCRUN_TOTAL);
	unsetenv("BPFPROF_TEST_ALLOC_TOTAL_MAX"); /* before a failed assert ends the test */
	fake_start = 100;
	old = others_of(p, "old");
	new = others_of(p, "new");
	profile__free(p);
	assert_int_equal(old, wb); /* site_b's */
	assert_int_equal(new, wb); /* site_c's, not under "old" */
}

/*
 * SBCL's frames named as the samples come, within a budget a drain: past
 * its new stacks (4 here) a sample is counted, not named then; a stack
 * named in the drain again is not counted; the next drain has its budget
 * anew.
 */
static void test_sbcl_name_budget(void **state)
{
	static void (*const sites[4])(void) = { site_a, site_b, site_c, site_d };
	struct rig *g = *state;
	struct allocrun_stats st;

	setenv("BPFPROF_TEST_ALLOC_SBCL_NAME_STACKS", "4", 1);
	for (uint32_t i = 0; i < 16; i++) {
		event(sites[i & 3], i < 14 ? 0x100 + i : 0x100, 4096, 0, false); /* 2 repeats */
		events[nr_events - 1].source = ALLOC_SRC_SBCL;
	}
	allocrun__tick(g->ar, now_ns());
	allocrun__stats(g->ar, &st);
	assert_int_equal(st.sbcl_unnamed, 14 - 4);
	for (uint32_t i = 0; i < 4; i++) {
		event(sites[i & 3], 0x200 + i, 4096, 0, false);
		events[nr_events - 1].source = ALLOC_SRC_SBCL;
	}
	allocrun__tick(g->ar, now_ns());
	unsetenv("BPFPROF_TEST_ALLOC_SBCL_NAME_STACKS");
	allocrun__stats(g->ar, &st);
	assert_int_equal(st.sbcl_unnamed, 14 - 4); /* a new drain: its 4 named */
}

/* The samples of process pid in p whose leaf is name; their alloc_bytes summed. */
static size_t pid_at(const struct profile *p, uint32_t pid, const char *name, uint64_t *bytes)
{
	size_t n = 0;

	*bytes = 0;
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		uint32_t nf;
		const uint32_t *fr = profile__stack_get(p, s->stack, &nf);

		if (s->pid != pid || !nf || strcmp(profile__frame_get(p, fr[nf - 1])->name, name))
			continue;
		n++;
		*bytes += s->alloc.alloc_bytes;
	}
	return n;
}

/* A child of this process (its stacks named as this one's), waiting to be killed. */
static pid_t child_waiting(void)
{
	pid_t pid = fork();

	if (!pid) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	return pid;
}

/* Process pid's samples of p; those with leaf name too (name NULL: all). */
static size_t samples_of(const struct profile *p, uint32_t pid, const char *comm)
{
	size_t n = 0;

	for (size_t i = 0; i < profile__nr_samples(p); i++)
		n += profile__sample(p, i)->pid == pid &&
		     (!comm || !strcmp(profile__sample(p, i)->comm, comm));
	return n;
}

/* Sampled allocations of process tgid (comm), stacks c in [from, to) of 3
 * frames each (64 distinct ones; hash: c), and the interval taken; its
 * alloc_bytes. */
static uint64_t interval_of(struct rig *g, uint32_t tgid, const char *comm, uint32_t from,
			    uint32_t to)
{
	void (*sites[4])(void) = { site_a, site_b, site_c, site_d };
	struct profile *p;
	uint64_t sum;

	for (uint32_t c = from; c < to; c++) {
		void (*fns[3])(void) = { sites[c & 3], sites[(c >> 2) & 3], sites[(c >> 4) & 3] };

		if (nr_events == 16)
			allocrun__tick(g->ar, now_ns());
		event_deep(fns, 3, 0x200000 + c, 1000 + c);
		events[nr_events - 1].tgid = tgid;
		strcpy(events[nr_events - 1].comm, comm);
	}
	p = take(g->ar, ALLOCRUN_INTERVAL);
	sum = alloc_sum(p);
	profile__free(p);
	return sum;
}

/*
 * A tenant's churn of short-lived allocating processes does not take the
 * run-long total from the live ones (cap 64). Two processes of one command,
 * 16 stacks each, exit; a live process's 40 distinct stacks are each in the
 * total by name (main: 8 of them in its [other stacks]), the exited ones'
 * merged under pid 0 and their command name (16 samples). Then another
 * process's 30 new stacks leave no room even so: the exited processes' go
 * into one sample, pid 0 [exited processes]. Nothing lost: the sum of the
 * values stays the intervals'.
 */
static void test_total_exited_fold(void **state)
{
	struct rig *g = *state;
	uint64_t want = 0, b;
	struct profile *p;
	pid_t kid[3];

	allocrun__free(g->ar);
	setenv("BPFPROF_TEST_ALLOC_TOTAL_MAX", "64", 1);
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_int_equal(allocrun__start(g->ar), 0);
	for (int i = 0; i < 2; i++) {
		kid[i] = child_waiting();
		want += interval_of(g, (uint32_t)kid[i], "churn", 0, 16);
	}
	for (int i = 0; i < 2; i++) {
		kill(kid[i], SIGKILL);
		waitpid(kid[i], NULL, 0);
	}
	want += interval_of(g, g->pid, "test_allocrun", 0, 40);
	p = take(g->ar, ALLOCRUN_TOTAL);
	assert_int_equal(alloc_sum(p), want); /* conserved */
	assert_int_equal(samples_of(p, g->pid, NULL), 40);
	assert_int_equal(pid_at(p, g->pid, "[other stacks]", &b), 0);
	assert_int_equal(samples_of(p, 0, "churn"), 16);
	assert_int_equal(
		samples_of(p, (uint32_t)kid[0], NULL) + samples_of(p, (uint32_t)kid[1], NULL), 0);
	profile__free(p);

	kid[2] = child_waiting();
	want += interval_of(g, (uint32_t)kid[2], "other", 10, 40);
	kill(kid[2], SIGKILL);
	waitpid(kid[2], NULL, 0);
	p = take(g->ar, ALLOCRUN_TOTAL);
	assert_int_equal(alloc_sum(p), want);
	assert_int_equal(samples_of(p, g->pid, NULL), 40);
	assert_int_equal(samples_of(p, 0, "churn"), 0);
	assert_int_equal(pid_at(p, 0, "[other stacks]", &b), 1); /* [exited processes] */
	assert_int_equal(samples_of(p, 0, "[exited processes]"), 1);
	assert_true(b > 0);
	assert_true(profile__nr_samples(p) <= 65);
	profile__free(p);
	unsetenv("BPFPROF_TEST_ALLOC_TOTAL_MAX");
}

/*
 * A take that fails (no memory for the total) commits nothing: the blocks
 * of an exited process stay in the table (not swept), cur stays; the next
 * take counts them, and the interval's allocations, once.
 */
static void test_take_fails_whole(void **state)
{
	struct rig *g = *state;
	uint64_t wa = (uint64_t)llround(weight(4096) * 4096);
	struct profile *p = profile__new();
	struct palloc v;
	pid_t dead = fork();

	if (!dead)
		_exit(0);
	assert_true(dead > 0);
	waitpid(dead, NULL, 0);
	event(site_a, 0x1111, 4096, 0x10000, true);
	live[nr_live - 1].k.tgid = (uint32_t)dead;
	event(site_b, 0x2222, 4096, 0x20000, false);
	allocrun__tick(g->ar, now_ns());
	setenv("BPFPROF_TEST_ALLOC_TOTAL_FAIL", "1", 1);
	assert_int_equal(allocrun__take(g->ar, p, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE), -ENOMEM);
	unsetenv("BPFPROF_TEST_ALLOC_TOTAL_FAIL");
	profile__free(p);
	assert_int_equal(nr_live, 1); /* not swept */
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_int_equal(inuse_of(p, (uint32_t)dead), wa);
	assert_int_equal(values_at(p, "site_b", &v), 1);
	assert_int_equal(v.alloc_bytes, wa);
	profile__free(p);
	assert_int_equal(nr_live, 0);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_TOTAL);
	values_at(p, "site_b", &v);
	assert_int_equal(v.alloc_bytes, wa); /* once in the total */
	profile__free(p);
}

/* A profile's note has what. */
static bool note_has(struct profile *p, const char *what)
{
	return strstr(profile__meta(p)->note, what) != NULL;
}

/*
 * -a with the guard engaged (a budget of 1 call/s, a million calls counted):
 * the scale /metrics gives is the last interval's; neither a tick's take
 * nor a heap request's (ALLOC without the run's stop) changes it. An
 * interval's meta has the time its probes were in, and the guard's note;
 * an in-use-only take (a heap window's part) none; a window's note from
 * its own time and time on.
 */
static void test_guard_scale_note(void **state)
{
	struct rig *g = *state;
	struct allocrun_stats st;
	struct profile_meta wm = { .duration_ns = 10 * NS_PER_SEC, .alloc_on_ns = 2 * NS_PER_SEC };
	struct profile *p;
	double want;

	allocrun__free(g->ar);
	g->o.pids = NULL;
	g->o.nr_pids = 0;
	g->o.all_cpus = true;
	g->o.alloc_budget = 1;
	g->ar = allocrun__new(&g->o, g->pt, g->sym);
	assert_int_equal(allocrun__start(g->ar), 0);
	allocrun__tick(g->ar, now_ns());
	usleep(150 * 1000);
	counters[ALLOC_C_CALLS] = 1000000;
	allocrun__tick(g->ar, now_ns()); /* engaged: off for 0.95 s or more */
	allocrun__stats(g->ar, &st);
	assert_true(st.g.engaged);
	usleep(50 * 1000);
	p = take(g->ar, ALLOCRUN_INTERVAL | ALLOCRUN_INUSE);
	assert_true(profile__meta(p)->alloc_on_ns > 0);
	assert_true(profile__meta(p)->alloc_on_ns < profile__meta(p)->duration_ns);
	want = (double)profile__meta(p)->duration_ns / (double)profile__meta(p)->alloc_on_ns;
	assert_true(note_has(p, "alloc_guard budget=1 "));
	profile__free(p);
	allocrun__stats(g->ar, &st);
	assert_true(st.scale > 1.01 && fabs(st.scale - want) < 1e-6 * want);

	allocrun__want_ticks(g->ar, true);
	usleep(20 * 1000);
	profile__free(take(g->ar, ALLOCRUN_TICK)); /* all of it off: its scale 1 */
	profile__free(take(g->ar, ALLOCRUN_TOTAL | ALLOCRUN_ALLOC | ALLOCRUN_INUSE));
	allocrun__stats(g->ar, &st);
	assert_true(fabs(st.scale - want) < 1e-6 * want);

	p = take(g->ar, ALLOCRUN_INUSE);
	assert_string_equal(profile__meta(p)->note, "");
	allocrun__window_note(g->ar, &wm);
	assert_non_null(strstr(wm.note, "on_fraction=0.2000 scale=5.000"));
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_takes, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_pins, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_sweep, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_ticks, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_metrics, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_meta, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_comms_gone, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_comms_reused, rig_up, rig_down),
		cmocka_unit_test(test_span_scale),
		cmocka_unit_test_setup_teardown(test_total_cap, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_total_others_reused, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_sbcl_name_budget, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_take_fails_whole, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_total_exited_fold, rig_up, rig_down),
		cmocka_unit_test_setup_teardown(test_guard_scale_note, rig_up, rig_down),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
