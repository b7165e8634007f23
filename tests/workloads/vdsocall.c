// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* vdsocall - spends its time in the vDSO: main -> clock_gettime (libc) ->
 * __vdso_clock_gettime. Usage: vdsocall SECONDS */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec ts, end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += argc > 1 ? atoi(argv[1]) : 2;
	do
		for (int i = 0; i < 10000; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
	while (ts.tv_sec < end.tv_sec || (ts.tv_sec == end.tv_sec && ts.tv_nsec < end.tv_nsec));
	return 0;
}
