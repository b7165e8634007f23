/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pprofdec.h - for unit tests: the few fields of a gzipped pprof profile that
 * the tests of /debug/pprof/heap and /allocs look at (sample types, the
 * default one, the period, how many samples), read back without a protobuf
 * library. Include after testutil.h.
 */
#ifndef BPFPROF_TEST_PPROFDEC_H
#define BPFPROF_TEST_PPROFDEC_H

#include "format/pprof_proto.h"
#include "format/reader.h"

struct pprofdec {
	char strings[64][32];
	int nstr;
	uint64_t types[8]; /* sample types' string indexes */
	int ntypes;
	int64_t dflt; /* default_sample_type's index, -1 if absent */
	uint64_t period;
	int nsamples;
};

static inline uint64_t pprofdec_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	fail_msg("truncated varint");
	return 0;
}

static inline void pprofdec(const char *gz, size_t gzlen, struct pprofdec *d)
{
	uint8_t *buf;
	size_t len;
	const uint8_t *p, *end;

	memset(d, 0, sizeof(*d));
	d->dflt = -1;
	assert_int_equal(reader__gunzip((const uint8_t *)gz, gzlen, 1 << 20, &buf, &len), 0);
	p = buf;
	end = buf + len;
	while (p < end) {
		uint64_t key = pprofdec_varint(&p, end), field = key >> 3, v;
		const uint8_t *sub;

		if ((key & 7) == 0) {
			v = pprofdec_varint(&p, end);
			if (field == PPROF_DEFAULT_SAMPLE_TYPE)
				d->dflt = (int64_t)v;
			else if (field == PPROF_PERIOD)
				d->period = v;
			continue;
		}
		assert_int_equal(key & 7, 2);
		v = pprofdec_varint(&p, end);
		assert_true(v <= (uint64_t)(end - p));
		sub = p;
		p += v;
		if (field == PPROF_SAMPLE_TYPE) {
			/* ValueType { type = 1; unit = 2 } */
			assert_true(d->ntypes < 8);
			while (sub < p) {
				uint64_t k = pprofdec_varint(&sub, p), x = pprofdec_varint(&sub, p);

				if (k >> 3 == 1)
					d->types[d->ntypes] = x;
			}
			d->ntypes++;
		} else if (field == PPROF_SAMPLE) {
			d->nsamples++;
		} else if (field == PPROF_STRING_TABLE) {
			assert_true(d->nstr < 64);
			snprintf(d->strings[d->nstr++], sizeof(d->strings[0]), "%.*s", (int)v,
				 (const char *)sub);
		}
	}
	free(buf);
}

static inline const char *pprofdec_str(const struct pprofdec *d, uint64_t i)
{
	assert_true(i < (uint64_t)d->nstr);
	return d->strings[i];
}

#endif
