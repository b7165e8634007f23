// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * inlbench - what naming addresses with their inlined frames and lines
 * costs (sym/dwinline.h), for tools/bench_inlines.py: opens FILE's DWARF,
 * asks for every address of ADDRS (hex, one a line) cold (the unit index
 * built, each address's unit walked) and warm (the cache), and, for the cost
 * of the option, the same addresses' names alone from the symbol table
 * (elfsym, what bpfprof does without DWARF). Prints one line of key=value:
 * CPU seconds of each step, frames found, peak RSS, bytes held.
 *
 * Usage: inlbench FILE ADDRS
 *        inlbench -p FILE ADDRS   (prints each address's frames instead:
 *        "ADDR name file:line; ...", innermost first)
 *        inlbench -s FILE ADDRS   (the symbol table alone, DWARF never
 *        opened: bpfprof without lines, its own time and peak RSS)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sym/dwinline.h"
#include "sym/elfsym.h"

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

int main(int argc, char **argv)
{
	uint64_t *addrs = NULL, frames = 0, inl = 0, named = 0;
	size_t n = 0, cap = 0;
	double t0, t_open, t_cold, t_warm, t_sym;
	struct dwinline *d;
	struct elfsym *es;
	char line[64];
	FILE *in;
	int fd;

	bool print = argc == 4 && !strcmp(argv[1], "-p");
	bool symtab_only = argc == 4 && !strcmp(argv[1], "-s");

	if (print || symtab_only) {
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: inlbench [-p|-s] FILE ADDRS\n");
		return 2;
	}
	in = fopen(argv[2], "r");
	if (!in)
		return 1;
	while (fgets(line, sizeof(line), in)) {
		if (n == cap && !(addrs = realloc(addrs, (cap = cap * 2 + 1024) * sizeof(*addrs))))
			return 1;
		addrs[n++] = strtoull(line, NULL, 16);
	}
	fclose(in);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;

	t0 = cpu_s();
	es = elfsym__open_fd(fd);
	for (size_t i = 0; es && i < n; i++)
		named += elfsym__lookup_demangled(es, addrs[i], NULL) != NULL;
	t_sym = cpu_s() - t0;
	if (symtab_only) {
		printf("addresses=%zu named=%" PRIu64 " symtab_s=%.3f peak_rss_mib=%.1f\n", n,
		       named, t_sym, (double)peak_kib() / 1024);
		elfsym__free(es);
		close(fd);
		free(addrs);
		return 0;
	}

	t0 = cpu_s();
	d = dwinline__open_fd(fd, (size_t)4 << 30, NULL, NULL);
	t_open = cpu_s() - t0;
	if (!d) {
		perror("dwinline__open_fd");
		return 1;
	}
	t0 = cpu_s();
	for (size_t i = 0; i < n; i++) {
		const struct dwinline_frame *f;
		struct budget b;
		size_t k;

		budget__start(&b, 10ull * 1000 * 1000 * 1000);
		if (!dwinline__frames(d, addrs[i], &b, &f, &k)) {
			frames += k;
			inl += k - 1;
			if (print) {
				printf("%" PRIx64, addrs[i]);
				for (size_t j = 0; j < k; j++)
					printf(" %s %s:%u;", f[j].name ? f[j].name : "??",
					       f[j].file ? f[j].file : "??", f[j].line);
				printf("\n");
			}
		} else if (print) {
			printf("%" PRIx64 " -\n", addrs[i]);
		}
	}
	t_cold = cpu_s() - t0;
	t0 = cpu_s();
	for (size_t i = 0; i < n; i++) {
		const struct dwinline_frame *f;
		struct budget b;
		size_t k;

		budget__start(&b, 10ull * 1000 * 1000 * 1000);
		dwinline__frames(d, addrs[i], &b, &f, &k);
	}
	t_warm = cpu_s() - t0;
	if (print)
		return 0;
	printf("addresses=%zu named=%" PRIu64 " frames=%" PRIu64 " inlined=%" PRIu64
	       " symtab_s=%.3f open_s=%.3f cold_s=%.3f warm_s=%.4f held_mib=%.1f peak_rss_mib=%.1f\n",
	       n, named, frames, inl, t_sym, t_open, t_cold, t_warm,
	       (double)dwinline__bytes(d) / (1 << 20), (double)peak_kib() / 1024);
	dwinline__free(d);
	elfsym__free(es);
	close(fd);
	free(addrs);
	return 0;
}
