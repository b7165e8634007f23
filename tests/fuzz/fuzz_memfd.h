/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_memfd.h - the input as a file: the readers of mapped files read
 * through an fd, so the fuzzers that drive them (elfsym, dwinline,
 * annotation) write each input to a memfd, made once per process and
 * rewritten for every input. Aborts on failure (a harness fault, not a find).
 */
#ifndef BPFPROF_FUZZ_MEMFD_H
#define BPFPROF_FUZZ_MEMFD_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The memfd (named name) holding data[0..size) and nothing more. */
static inline int fuzz_memfd(const char *name, const uint8_t *data, size_t size)
{
	static int memfd = -1;
	size_t done = 0;

	if (memfd < 0) {
		memfd = memfd_create(name, MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	if (ftruncate(memfd, 0))
		abort();
	while (done < size) {
		ssize_t n = pwrite(memfd, data + done, size - done, (off_t)done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	return memfd;
}

#endif
