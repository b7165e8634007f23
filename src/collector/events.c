// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * events.c - the perf events that run the sampler, one per CPU, and what
 * they took against what they should have (collector/sampling.h): their
 * running times, /proc/stat's idle and steal time, the targets' CPU time.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/selfstat.h"
#include "base/util.h"
#include "collector/collector_int.h"
#include "collector/cpustat.h"
#include "proc/procfs.h"

static int perf_event_open_cpu_clock(uint32_t freq, int cpu)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq;
	attr.disabled = 1; /* enabled once the program is attached: no run unseen */
	/* How long the event ran: what it should have sampled (events__measure()). */
	attr.read_format = PERF_FORMAT_TOTAL_TIME_RUNNING;
	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * The event's ring: the kernel writes a PERF_RECORD_THROTTLE there each
 * time it throttles the event (and UNTHROTTLE when it lets it go). Nothing
 * else: the program returns 0, so no sample is written. One data page; a
 * full ring drops records, and says how many (PERF_RECORD_LOST). NULL if it
 * cannot be had (locked memory): whether the kernel throttled is unknown.
 */
static struct perf_event_mmap_page *event_ring(int fd)
{
	void *p = mmap(NULL, 2 * (size_t)getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Counts the throttling records that came since the last call, and lets them go. */
static void event_throttles(struct event *e)
{
	struct perf_event_mmap_page *m = e->ring;
	const unsigned char *data;
	uint64_t head, tail, size;

	if (!m)
		return;
	data = (const unsigned char *)m + getpagesize();
	size = (uint64_t)getpagesize();
	head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	/* Records are 8-byte aligned in a ring of whole pages: a header, and
	 * each u64 field, lies in one piece. */
	for (tail = m->data_tail; tail < head;) {
		struct perf_event_header h;

		memcpy(&h, data + tail % size, sizeof(h));
		if (h.size < sizeof(h))
			break; /* cannot happen; never spin */
		if (h.type == PERF_RECORD_THROTTLE) {
			e->throttles++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t lost;

			memcpy(&lost, data + (tail + sizeof(h) + 8) % size, sizeof(lost));
			e->throttles += (lost + 1) / 2; /* throttle, unthrottle, ... */
		}
		tail += h.size;
	}
	__atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
}

static uint64_t tick_ns(void)
{
	long t = sysconf(_SC_CLK_TCK);

	return NS_PER_SEC / (t > 0 ? (uint64_t)t : 100);
}

/* The events' period: the kernel turns cpu-clock's frequency into a fixed
 * hrtimer period of 1e9 / F ns, at least 10 us. */
static uint64_t period_of(uint32_t freq)
{
	uint64_t p = freq ? NS_PER_SEC / freq : NS_PER_SEC;

	return p < 10000 ? 10000 : p;
}

/* Event e's running time now (its last one once closed). */
static uint64_t event_run_ns(struct event *e)
{
	uint64_t v[2]; /* value, time running */

	if (e->fd >= 0 && read(e->fd, v, sizeof(v)) == (ssize_t)sizeof(v))
		e->run_ns = v[1];
	return e->run_ns;
}

static int add_event(struct collector *c, int pfd, struct errmsg *em, const char *what)
{
	struct bpf_link *link;
	int err;

	if (array_grow((void **)&c->events, &c->cap_events, c->nr_events + 1, sizeof(*c->events))) {
		close(pfd);
		return errmsg_set(em, -ENOMEM, "out of memory");
	}
	link = bpf_program__attach_perf_event(c->skel->progs.do_sample, pfd);
	if (!link) {
		err = -errno;
		close(pfd);
		errmsg_set(em, err, "attaching the BPF program to %s failed: %s", what,
			   strerror(-err));
		return err;
	}
	c->events[c->nr_events++] = (struct event){ .fd = pfd, .link = link, .cpu = -1 };
	return 0;
}

static void perf_open_error(struct errmsg *em, int err, const char *what)
{
	if (err == -EACCES || err == -EPERM) {
		errmsg_set(em, err, "perf_event_open for %s was refused: %s", what, strerror(-err));
		errmsg_hint(
			em,
			"run as root, or grant CAP_PERFMON (or lower kernel.perf_event_paranoid)");
	} else if (err == -EMFILE || err == -ENFILE) {
		errmsg_set(
			em, err,
			"out of file descriptors opening the perf event for %s (the limit is %llu)",
			what, (unsigned long long)selfstat__fd_limit());
		errmsg_hint(em, FD_LIMIT_HINT);
	} else {
		errmsg_set(em, err, "perf_event_open for %s failed: %s", what, strerror(-err));
		if (err == -EINVAL)
			errmsg_hint(em, "check -F against kernel.perf_event_max_sample_rate");
	}
}

static bool cpu_online(int cpu)
{
	char path[64], *buf;
	bool online = true;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (!read_file(path, 64, &buf, NULL)) {
		online = buf[0] != '0';
		free(buf);
	}
	return online; /* cpu0 usually has no "online" file: it cannot go offline */
}

int events__attach(struct collector *c, struct errmsg *em)
{
	int nr = libbpf_num_possible_cpus();
	char what[32];

	if (nr < 0) {
		errmsg_set(em, nr, "cannot count the possible CPUs: %s", strerror(-nr));
		return nr;
	}
	/* Where the CPUs' idle and steal time stand (events__measure()): read before
	 * the events start, so idle time they never ran in only makes what
	 * they should take smaller. */
	c->off_now = calloc((size_t)nr, sizeof(*c->off_now));
	c->steal_now = calloc((size_t)nr, sizeof(*c->steal_now));
	if (!c->off_now || !c->steal_now ||
	    cpustat__ticks(CPUSTAT_PATH, c->off_now, c->steal_now, nr)) {
		free(c->off_now);
		free(c->steal_now);
		c->off_now = c->steal_now = NULL;
	}
	c->attach_ns = now_ns();
	for (int cpu = 0; cpu < nr; cpu++) {
		struct event *e;
		int pfd, err;

		if (c->opts.cpus && (cpu >= c->opts.nr_cpus || !c->opts.cpus[cpu]))
			continue;
		pfd = perf_event_open_cpu_clock(c->opts.freq, cpu);
		if (pfd < 0) {
			err = -errno;
			if (err == -ENODEV || !cpu_online(cpu))
				continue; /* offline CPU */
			snprintf(what, sizeof(what), "CPU %d", cpu);
			perf_open_error(em, err, what);
			return err;
		}
		snprintf(what, sizeof(what), "CPU %d", cpu);
		err = add_event(c, pfd, em, what);
		if (err)
			return err;
		e = &c->events[c->nr_events - 1];
		e->cpu = cpu;
		e->ring = event_ring(pfd);
		if (c->off_now) {
			e->off_base = e->off = c->off_now[cpu];
			e->steal_base = e->steal = c->steal_now[cpu];
		}
	}
	if (!c->nr_events) {
		errmsg_set(em, -ENODEV, "none of the selected CPUs is online");
		errmsg_hint(em, "check -C against /sys/devices/system/cpu/online");
		return -ENODEV;
	}
	return 0;
}

/*
 * -p: reads the targets' CPU time (/proc/PID/stat: every thread's, the exited
 * ones' too). A target that has exited, or whose pid names another process
 * now, keeps its last reading. With base, where they stand at attach.
 */
size_t events__targets_read(struct collector *c, bool base)
{
	size_t found = 0;

	if (!c->tcpu)
		return 0;
	if (!base && deadline__targets(c))
		return c->opts.nr_pids; /* as they were when sampling stopped */
	for (size_t i = 0; i < c->opts.nr_pids; i++) {
		struct target_cpu *t = &c->tcpu[i];
		struct proc_stat ps;
		char rel[16];

		snprintf(rel, sizeof(rel), "%u", t->pid);
		if (procfs__stat("/proc", rel, &ps) || (!base && ps.start_time != t->start))
			continue;
		t->last = ps.utime + ps.stime;
		if (base) {
			t->base = t->last;
			t->start = ps.start_time;
		}
		found++;
	}
	return found;
}

/*
 * What the events took against what they should have (collector/sampling.h),
 * CPU by CPU, since attach. Read in this order - the events' running times,
 * /proc/stat, the program's counters - so a sample or an idle tick that comes
 * meanwhile only makes the shortfall smaller. Once the events are closed,
 * their last figures (collector__detach() read them after stopping them).
 */
void events__measure(struct collector *c, bool read_targets)
{
	struct sampling_sum sum = { 0 };
	uint64_t period = period_of(c->opts.freq), tick = tick_ns(), throttles = 0;
	uint64_t v[STAT_MAX];
	bool rings = c->nr_events > 0;

	if (read_targets)
		events__targets_read(c, false);
	for (size_t i = 0; i < c->nr_events; i++)
		event_run_ns(&c->events[i]);
	if (c->sampling && c->off_now && !deadline__stat(c, c->off_now, c->steal_now) &&
	    cpustat__ticks(CPUSTAT_PATH, c->off_now, c->steal_now, c->ncpu)) {
		free(c->off_now);
		free(c->steal_now);
		c->off_now = c->steal_now = NULL;
	}
	for (size_t i = 0; i < c->nr_events; i++) {
		struct event *e = &c->events[i];
		struct sampling_cpu cpu = { .run_ns = e->run_ns };

		if (c->sampling && c->off_now && e->cpu < c->ncpu) {
			e->off = c->off_now[e->cpu];
			e->steal = c->steal_now[e->cpu];
		}
		if (!c->off_now && c->sampling)
			continue; /* idle time unknown: nothing is claimed */
		if (e->cpu >= c->ncpu || !stats__cpu_counters(c, e->cpu, v))
			continue;
		cpu.off_ns = (e->off - MIN(e->off, e->off_base)) * tick;
		cpu.steal_ns = (e->steal - MIN(e->steal, e->steal_base)) * tick;
		cpu.idle = v[STAT_IDLE];
		/* Idle samples kept by --include-idle are in SAMPLES or FILTERED. */
		cpu.busy = v[STAT_SAMPLES] + v[STAT_FILTERED] -
			   (c->opts.include_idle
				    ? MIN(v[STAT_IDLE], v[STAT_SAMPLES] + v[STAT_FILTERED])
				    : 0);
		cpu.kept = v[STAT_SAMPLES];
		cpu.kept_busy = v[STAT_SAMPLES] - MIN(v[STAT_IDLE_KEPT], v[STAT_SAMPLES]);
		sampling__add(&sum, &cpu, period, tick);
		event_throttles(e);
		throttles += e->throttles;
		rings &= e->ring != NULL;
	}
	c->acct_prev = c->acct;
	sampling__figures(&c->acct, &sum);
	c->acct.at_ns = now_ns();
	c->acct.throttles = throttles;
	c->acct.throttles_known = rings;
	c->acct.period_ns = period;
	if (c->tcpu) {
		c->acct.kept_cpu_known = true;
		for (size_t i = 0; i < c->opts.nr_pids; i++) {
			const struct target_cpu *t = &c->tcpu[i];

			c->acct.kept_cpu_ns += (t->last - MIN(t->last, t->base)) * tick;
			/* user and system time, each truncated at both reads */
			c->acct.kept_cpu_margin += 2 * ((tick + period - 1) / period);
		}
	}
	if (c->acct_prev.at_ns) {
		struct sampling_window w;

		/* The profile's samples not taken, by cause, window by window. */
		sampling__window(&c->acct_prev, &c->acct, &w);
		if (w.throttled)
			c->not_taken_throttled += w.kept_not_taken;
		else
			c->not_taken_late += w.kept_not_taken;
	}
}
