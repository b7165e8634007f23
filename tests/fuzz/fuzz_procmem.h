/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_procmem.h - the input as a process's memory, for the fuzzers of the
 * language walkers that read a profiled process (sbcl, sbcl_dyn, hotspot):
 * the same bytes seen at each of a few addresses at once, every read
 * counted so that a fuzzer can check the walker's caps on what it reads,
 * and the check of a name the walker wrote.
 */
#ifndef BPFPROF_FUZZ_PROCMEM_H
#define BPFPROF_FUZZ_PROCMEM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_PROCMEM_BASES 3

struct procmem {
	const uint8_t *p;
	size_t n;
	uint64_t bytes;			   /* read so far */
	uint64_t base[FUZZ_PROCMEM_BASES]; /* where p is seen; 0: not used */
};

/* The walkers' read callback (ctx a struct procmem): -EFAULT outside every copy. */
static inline int procmem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct procmem *m = ctx;

	m->bytes += len;
	for (int i = 0; i < FUZZ_PROCMEM_BASES && m->base[i]; i++) {
		uint64_t off = addr - m->base[i];

		if (addr < m->base[i] || off > m->n || len > m->n - off)
			continue;
		memcpy(buf, m->p + off, len);
		return 0;
	}
	return -EFAULT;
}

/* Aborts unless the n a name_pc returned and its out[0..size) are a NUL-terminated name. */
static inline void procmem_check_name(const char *out, size_t size, int n)
{
	if (n >= (int)size || (n >= 0 && strlen(out) != (size_t)n))
		abort();
}

#endif
