// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* sampling.c - samples the events took against what they should have; see sampling.h. */
#include "collector/sampling.h"

#include <string.h>

#include "base/util.h"

void sampling__add(struct sampling_sum *s, const struct sampling_cpu *c, uint64_t period_ns,
		   uint64_t tick_ns)
{
	uint64_t off, busy_ns = 0, expected, ticks;

	if (!period_ns)
		return;
	/* Idle as the program saw it, where it saw more of it than /proc/stat. */
	off = MAX(c->off_ns, c->idle * period_ns);
	if (c->run_ns > c->steal_ns + off)
		busy_ns = c->run_ns - c->steal_ns - off;
	expected = (busy_ns + period_ns / 2) / period_ns;
	ticks = (tick_ns + period_ns - 1) / period_ns; /* periods in a tick, rounded up */
	s->expected += expected;
	s->taken += c->busy;
	s->busy_ns += busy_ns;
	s->kept += c->kept;
	s->kept_busy += c->kept_busy;
	/* Two ends of a window, a period each (a firing due, a sample in
	 * flight); idle, iowait and steal each truncated to a tick at both
	 * reads; the rounding of expected. */
	s->margin += 2 + 3 * ticks + 1;
	if (expected > c->busy) {
		double pos = (double)(expected - c->busy);

		s->short_pos += pos;
		/* A CPU that took no busy sample at all says nothing of whose
		 * they would have been: the profile's share over all CPUs. */
		if (c->busy)
			s->kept_short += pos * (double)c->kept_busy / (double)c->busy;
		else
			s->short_unknown += pos;
	}
}

void sampling__figures(struct sampling_figures *f, const struct sampling_sum *s)
{
	double share = 0;

	memset(f, 0, sizeof(*f));
	f->expected = s->expected;
	f->taken = s->taken;
	f->margin = s->margin;
	f->busy_ns = s->busy_ns;
	f->kept = s->kept;
	if (s->short_pos > 0)
		share = (s->kept_short +
			 s->short_unknown *
				 (s->taken ? (double)s->kept_busy / (double)s->taken : 1.0)) /
			s->short_pos;
	share = MIN(MAX(share, 0.0), 1.0);
	f->kept_short =
		s->expected > s->taken ? (uint64_t)((s->expected - s->taken) * share + 0.5) : 0;
}

/* floor(sqrt(x)), rounded up by one at most */
static uint64_t isqrt(uint64_t x)
{
	uint64_t r = 0;

	for (uint64_t bit = 1ULL << 62; bit; bit >>= 2) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
	}
	return r + (x > 0);
}

static uint64_t sub(uint64_t b, uint64_t a)
{
	return b > a ? b - a : 0;
}

void sampling__window(const struct sampling_figures *a, const struct sampling_figures *b,
		      struct sampling_window *w)
{
	static const struct sampling_figures zero;

	if (!a)
		a = &zero;
	w->expected = sub(b->expected, a->expected);
	w->taken = sub(b->taken, a->taken);
	w->shortfall = sub(w->expected, w->taken);
	w->margin = b->margin;
	w->real = w->shortfall > w->margin && w->shortfall * 100 >= w->expected;
	w->kept = sub(b->kept, a->kept);
	if (b->kept_cpu_known && b->period_ns) {
		uint64_t cpu_ns = sub(b->kept_cpu_ns, a->kept_cpu_ns);
		uint64_t expected = (cpu_ns + b->period_ns / 2) / b->period_ns;
		uint64_t kept_short = sub(expected, w->kept);

		uint64_t chance = 5 * isqrt(expected) + 5 + b->kept_cpu_margin;

		w->kept_not_taken = 0;
		if (w->real && kept_short > chance && kept_short * 100 >= expected)
			w->kept_not_taken = kept_short;
	} else {
		w->kept_not_taken =
			w->real ? MIN(sub(b->kept_short, a->kept_short), w->shortfall) : 0;
	}
	/* The rate reached, as far as it can be told: the asked one unless
	 * samples were not taken beyond what the measurement may be off by. */
	w->rate_hz = -1;
	if (b->period_ns)
		w->rate_hz = NS_PER_SEC_F / (double)b->period_ns;
	if (b->period_ns && w->real)
		w->rate_hz *= (double)w->taken / (double)w->expected;
	w->throttled = b->throttles > a->throttles;
	w->throttles_known = b->throttles_known;
}
