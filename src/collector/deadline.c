// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * deadline.c - sampling ends when -d says, whatever the main loop is doing.
 *
 * A drain of a large profile (-F 100000 on every CPU) can take seconds; the
 * main loop looks at the deadline only between drains, so a run of -d 1 went
 * on sampling for 3.9 s. A thread of its own sleeps until the deadline and
 * then disables the perf events (what collector__detach() does first), and
 * takes there and then what the sampling figures compare the samples with:
 * /proc/stat's idle and steal time and the -p targets' CPU time. Measured
 * later, they would count time after sampling stopped and the figures would
 * claim samples were missed. events.c uses the snapshot once it is taken.
 *
 * The thread only ioctl()s the events' descriptors and reads /proc into its
 * own arrays; collector__detach() ends it (deadline__cancel()) before the
 * descriptors are closed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "base/util.h"
#include "collector/collector_int.h"
#include "collector/cpustat.h"
#include "proc/procfs.h"

static void snapshot_stat(struct collector *c)
{
	struct deadline *d = &c->dl;

	if (c->off_now && d->off && !cpustat__ticks(CPUSTAT_PATH, d->off, d->steal, c->ncpu))
		d->stat_ok = true;
}

static void snapshot_targets(struct collector *c)
{
	struct deadline *d = &c->dl;

	for (size_t i = 0; c->tcpu && i < c->opts.nr_pids; i++) {
		const struct target_cpu *t = &c->tcpu[i];
		struct proc_stat ps;
		char rel[16];

		snprintf(rel, sizeof(rel), "%u", t->pid);
		d->tok[i] = !procfs__stat("/proc", rel, &ps) && ps.start_time == t->start;
		if (d->tok[i])
			d->tlast[i] = ps.utime + ps.stime;
	}
}

static void *run(void *arg)
{
	struct collector *c = arg;
	struct deadline *d = &c->dl;
	struct timespec ts = { .tv_sec = (time_t)(d->at / NS_PER_SEC),
			       .tv_nsec = (long)(d->at % NS_PER_SEC) };

	pthread_mutex_lock(&d->mu);
	while (!d->cancel && now_ns() < d->at)
		if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) == ETIMEDOUT)
			break;
	if (!d->cancel) {
		/* The targets' CPU time first (what they did after cannot be
		 * sampled), then the events, then /proc/stat: as detach does. */
		snapshot_targets(c);
		for (size_t i = 0; i < c->nr_events; i++)
			if (c->events[i].fd >= 0)
				ioctl(c->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		snapshot_stat(c);
		d->fired_ns = now_ns();
		__atomic_store_n(&d->fired, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int collector__stop_sampling_at(struct collector *c, uint64_t at_ns)
{
	struct deadline *d = &c->dl;
	pthread_condattr_t ca;
	int err;

	if (d->started || !c->sampling)
		return -EINVAL;
	d->at = at_ns;
	d->off = calloc((size_t)c->ncpu, sizeof(*d->off));
	d->steal = calloc((size_t)c->ncpu, sizeof(*d->steal));
	d->tlast = calloc(c->opts.nr_pids + 1, sizeof(*d->tlast));
	d->tok = calloc(c->opts.nr_pids + 1, sizeof(*d->tok));
	if (!d->off || !d->steal || !d->tlast || !d->tok) {
		deadline__free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&d->th, NULL, run, c);
	if (err) {
		pthread_cond_destroy(&d->cv);
		pthread_mutex_destroy(&d->mu);
		deadline__free(c);
		return -err;
	}
	d->started = true;
	return 0;
}

bool collector__stopped_at_deadline(const struct collector *c, uint64_t *at_ns)
{
	if (!__atomic_load_n(&c->dl.fired, __ATOMIC_ACQUIRE))
		return false;
	if (at_ns)
		*at_ns = c->dl.at;
	return true;
}

void deadline__cancel(struct collector *c)
{
	struct deadline *d = &c->dl;

	if (!d->started)
		return;
	pthread_mutex_lock(&d->mu);
	d->cancel = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->th, NULL);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	d->started = false;
}

bool deadline__stat(const struct collector *c, uint64_t *off, uint64_t *steal)
{
	const struct deadline *d = &c->dl;

	if (!__atomic_load_n(&d->fired, __ATOMIC_ACQUIRE) || !d->stat_ok)
		return false;
	memcpy(off, d->off, (size_t)c->ncpu * sizeof(*off));
	memcpy(steal, d->steal, (size_t)c->ncpu * sizeof(*steal));
	return true;
}

bool deadline__targets(struct collector *c)
{
	const struct deadline *d = &c->dl;

	if (!__atomic_load_n(&d->fired, __ATOMIC_ACQUIRE))
		return false;
	for (size_t i = 0; c->tcpu && i < c->opts.nr_pids; i++)
		if (d->tok[i])
			c->tcpu[i].last = d->tlast[i];
	return true;
}

void deadline__free(struct collector *c)
{
	struct deadline *d = &c->dl;

	deadline__cancel(c);
	free(d->off);
	free(d->steal);
	free(d->tlast);
	free(d->tok);
	d->off = d->steal = d->tlast = NULL;
	d->tok = NULL;
}
