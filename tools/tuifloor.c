// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * tuifloor - the least a once-a-second terminal view costs: sleep a second,
 * redraw ~1.5 KB of screen, again. tools/bench_top.py --floor runs it beside
 * bpfprof top and perf top, so the figures show how much of a live view's
 * CPU is the machine's price of waking up and writing to a terminal at all
 * (under some hypervisors a wake-up after a second asleep costs hundreds of
 * microseconds), and how much is the tool's own work.
 *
 * Usage: tuifloor   (until killed; draws on stdout)
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char buf[2048];

	for (unsigned long n = 0;; n++) {
		int len;

		poll(NULL, 0, 1000);
		/* Home, then a screenful's worth of changed cells. */
		len = snprintf(buf, sizeof(buf), "\033[H\033[2Ktuifloor: refresh %lu\r\n", n);
		memset(buf + len, '.', 1500);
		len += 1500;
		if (write(STDOUT_FILENO, buf, (size_t)len) < 0)
			return 1;
	}
}
