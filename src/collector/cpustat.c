// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* cpustat.c - /proc/stat's idle, iowait and steal ticks by CPU (cpustat.h). */
#include "collector/cpustat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

int cpustat__ticks(const char *path, uint64_t *off, uint64_t *steal, int n)
{
	char *buf, *line, *save = NULL;
	int err = read_file(path, 1 << 20, &buf, NULL);

	if (err)
		return err;
	memset(off, 0, (size_t)n * sizeof(*off));
	memset(steal, 0, (size_t)n * sizeof(*steal));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long cpu, v[8];

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		/* cpuN user nice system idle iowait irq softirq steal ... */
		if (sscanf(line + 3, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
			continue;
		if (cpu < (unsigned long long)n) {
			off[cpu] = v[3] + v[4];
			steal[cpu] = v[7];
		}
	}
	free(buf);
	return 0;
}
