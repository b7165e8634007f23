// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uwtable - prints the unwind table bpfprof builds for ELF files: rows, page
 * index, build time, userspace and kernel bytes, row kinds. A developer tool
 * (tools/bench_unwind.py uses it for the table numbers in the README).
 *
 * Usage: build/uwtable [-r] [-n RUNS] FILE...   (-r: also dump the rows)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/table.h"

static const char *const cfa_names[] = {"none",	  "rsp", "rbp",		"plt",	"*rbp",
					"signal", "end", "unsupported", "rsp*8"};

int main(int argc, char **argv)
{
	bool rows = false;
	int runs = 1, c, ret = 0;

	while ((c = getopt(argc, argv, "rn:")) != -1) {
		if (c == 'r')
			rows = true;
		else if (c == 'n')
			runs = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else
			return 2;
	}
	printf("%-40s %8s %6s %8s %9s %9s %6s %6s %6s\n", "file", "rows", "pages", "build_ms",
	       "user_KiB", "kern_KiB", "fdes", "gaps", "unsup");
	for (int i = optind; i < argc; i++) {
		struct utable *t = NULL;
		uint64_t best = UINT64_MAX;

		for (int r = 0; r < runs; r++) {
			int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

			if (fd < 0) {
				fprintf(stderr, "uwtable: %s: %s\n", argv[i], strerror(errno));
				ret = 1;
				break;
			}
			utable__free(t);
			t = utable__build_fd(fd);
			close(fd);
			if (!t) {
				fprintf(stderr, "uwtable: %s: %s\n", argv[i], strerror(errno));
				ret = 1;
				break;
			}
			if (t->st.build_ns < best)
				best = t->st.build_ns;
		}
		if (!t)
			continue;
		/* In the kernel: 8-byte slots for rows and page entries, plus the
		 * row that starts each run of a split table (at most 1 per 16384). */
		printf("%-40s %8zu %6zu %8.2f %9.1f %9.1f %6u %6u %6u\n", argv[i], t->nr_rows,
		       t->nr_pages, best / 1e6, utable__mem(t) / 1024.0,
		       (t->nr_rows + t->nr_pages) * 8 / 1024.0, t->st.fdes + t->st.fdes_debug,
		       t->st.rows_gap, t->st.rows_unsupported);
		for (size_t r = 0; rows && r < t->nr_rows; r++) {
			const struct bp_urow *w = &t->rows[r];
			unsigned k = UROW_CFA_OF(w->op);

			printf("  0x%" PRIx64 " cfa=%s%+d rbp=%d@%d\n", t->base + w->pc,
			       k < sizeof(cfa_names) / sizeof(cfa_names[0]) ? cfa_names[k] : "?",
			       k == UROW_CFA_DEREF_RBP ? (int16_t)w->cfa : w->cfa,
			       UROW_RBP_OF(w->op), w->rbp * 8);
		}
		utable__free(t);
	}
	return ret;
}
