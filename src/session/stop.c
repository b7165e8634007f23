// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* stop.c - stop requests by signal; see stop.h. */
#include "session/stop.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/budget.h"

static volatile sig_atomic_t stop_signal;  /* the first request */
static volatile sig_atomic_t exit_pending; /* "exit now" that came during a write */
static volatile sig_atomic_t writing;
static uint64_t first_ms; /* written by the handler before stop_signal */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void die_by(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_signal(int sig)
{
	uint64_t now = mono_ms();

	if (!stop_signal) {
		first_ms = now;
		stop_signal = sig;
		/* A hostile file being read gives up within the grace (budget.h). */
		budget__stop();
		return;
	}
	if (now - first_ms < STOP_REPEAT_MS)
		return; /* another copy of the same request */
	if (writing) {
		exit_pending = sig;
		return;
	}
	die_by(sig);
}

void stop__install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* Writes and reads restart: a repeated signal must not fail the output
	 * (poll and epoll_wait still return EINTR, so the main loop wakes). */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* One handler at a time: a burst of signals is seen in order. */
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int stop__requested(void)
{
	return stop_signal;
}

void stop__writing(bool on)
{
	writing = on;
	if (!on && exit_pending)
		die_by(exit_pending);
}
