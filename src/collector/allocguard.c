// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* allocguard.c - --alloc -a's calls-per-second guard: a duty cycle of the probes (allocguard.h). */
#include "collector/allocguard.h"

void allocguard__init(struct allocguard *g, uint64_t budget, uint64_t now_ns, uint64_t calls)
{
	*g = (struct allocguard){
		.budget = budget,
		.on = true,
		.duty = 1,
		.start_ns = now_ns,
		.since_ns = now_ns,
		.last_ns = now_ns,
		.last_calls = calls,
		.phase_calls = calls,
	};
}

static double clamp_duty(double budget, double rate)
{
	double d = rate > 0 ? budget / rate : 1;

	return d < ALLOCGUARD_MIN_DUTY ? ALLOCGUARD_MIN_DUTY : d > 1 ? 1 : d;
}

static uint64_t on_len(const struct allocguard *g)
{
	uint64_t on = (uint64_t)(g->duty * (double)ALLOCGUARD_WINDOW_NS);

	return on < ALLOCGUARD_MIN_ON_NS ? ALLOCGUARD_MIN_ON_NS : on;
}

/* The rest of the window, times a factor in [0.5, 1.5) (mean 1); a window
 * on held at ALLOCGUARD_MIN_ON_NS stretches the window, keeping the duty. */
static uint64_t off_len(const struct allocguard *g, uint32_t rnd)
{
	double rest = g->duty < 1 ? (double)on_len(g) * (1 / g->duty - 1) : 0;

	return (uint64_t)(rest * (0.5 + (double)rnd / 4294967296.0));
}

static void note_rate(struct allocguard *g, double rate)
{
	g->rate = rate;
	if (rate > g->max_rate)
		g->max_rate = rate;
}

static enum allocguard_act go_off(struct allocguard *g, uint64_t now_ns, uint32_t rnd)
{
	g->on_ns += now_ns - g->since_ns;
	g->since_ns = now_ns;
	g->until_ns = now_ns + off_len(g, rnd);
	g->on = false;
	g->toggles++;
	return ALLOCGUARD_OFF;
}

enum allocguard_act allocguard__tick(struct allocguard *g, uint64_t now_ns, uint64_t calls,
				     uint32_t rnd)
{
	uint64_t dt = now_ns > g->last_ns ? now_ns - g->last_ns : 0;
	uint64_t dc = calls > g->last_calls ? calls - g->last_calls : 0;
	double rate;

	if (now_ns < g->last_ns)
		return ALLOCGUARD_NONE; /* a clock that went back: wait */
	g->last_ns = now_ns;
	g->last_calls = calls;
	if (!g->budget)
		return ALLOCGUARD_NONE;
	if (!g->on) {
		if (now_ns < g->until_ns)
			return ALLOCGUARD_NONE;
		g->on = true;
		g->toggles++;
		g->windows++;
		g->since_ns = now_ns;
		g->until_ns = now_ns + on_len(g);
		g->phase_calls = calls;
		return ALLOCGUARD_ON;
	}
	if (!g->engaged) {
		if (dt < ALLOCGUARD_MIN_TICK_NS)
			return ALLOCGUARD_NONE;
		rate = (double)dc * 1e9 / (double)dt;
		note_rate(g, rate);
		if (rate <= (double)g->budget)
			return ALLOCGUARD_NONE;
		g->engaged = true;
		g->engaged_ns = now_ns;
		g->windows = 1;
		g->duty = clamp_duty((double)g->budget, rate);
		g->still_over = g->duty == ALLOCGUARD_MIN_DUTY &&
				rate * ALLOCGUARD_MIN_DUTY > (double)g->budget;
		return go_off(g, now_ns, rnd);
	}
	if (now_ns < g->until_ns && (double)(calls - g->phase_calls) <=
					    (double)g->budget * (double)on_len(g) / g->duty / 1e9)
		return ALLOCGUARD_NONE; /* (a window on over its window's budget ends early) */
	/* The end of a window on: its rate sets the next window's duty. */
	rate = now_ns > g->since_ns
		       ? (double)(calls - g->phase_calls) * 1e9 / (double)(now_ns - g->since_ns)
		       : 0;
	note_rate(g, rate);
	g->duty = clamp_duty((double)g->budget, rate);
	g->still_over =
		g->duty == ALLOCGUARD_MIN_DUTY && rate * ALLOCGUARD_MIN_DUTY > (double)g->budget;
	if (on_len(g) >= ALLOCGUARD_WINDOW_NS) { /* under the budget again: stay on a window */
		g->on_ns += now_ns - g->since_ns;
		g->since_ns = now_ns;
		g->until_ns = now_ns + ALLOCGUARD_WINDOW_NS;
		g->phase_calls = calls;
		g->windows++;
		return ALLOCGUARD_NONE;
	}
	return go_off(g, now_ns, rnd);
}

void allocguard__on_at(struct allocguard *g, uint64_t t_ns)
{
	if (!g->on || t_ns < g->since_ns)
		return;
	g->until_ns += t_ns - g->since_ns;
	g->since_ns = t_ns;
}

uint64_t allocguard__deadline(const struct allocguard *g)
{
	return g->engaged ? g->until_ns : 0;
}

uint64_t allocguard__on_ns(const struct allocguard *g, uint64_t now_ns)
{
	return g->on_ns + (g->on && now_ns > g->since_ns ? now_ns - g->since_ns : 0);
}

double allocguard__scale(const struct allocguard *g, uint64_t now_ns)
{
	uint64_t on = allocguard__on_ns(g, now_ns), total = now_ns - g->start_ns;

	if (!on || on >= total)
		return 1;
	return (double)total / (double)on;
}
