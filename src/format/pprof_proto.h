/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pprof_proto.h - the subset of google/pprof's proto/profile.proto that
 * bpfprof writes (out/pprof.c) and reads (in/pprof.c): field numbers and wire
 * types. See https://github.com/google/pprof/blob/main/proto/profile.proto.
 */
#ifndef BPFPROF_PPROF_PROTO_H
#define BPFPROF_PPROF_PROTO_H

/* Wire types. */
enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

/* message Profile */
enum {
	PPROF_SAMPLE_TYPE = 1, /* ValueType */
	PPROF_SAMPLE = 2,
	PPROF_MAPPING = 3,
	PPROF_LOCATION = 4,
	PPROF_FUNCTION = 5,
	PPROF_STRING_TABLE = 6,
	PPROF_DROP_FRAMES = 7,
	PPROF_KEEP_FRAMES = 8,
	PPROF_TIME_NANOS = 9,
	PPROF_DURATION_NANOS = 10,
	PPROF_PERIOD_TYPE = 11, /* ValueType */
	PPROF_PERIOD = 12,
	PPROF_COMMENT = 13,
	PPROF_DEFAULT_SAMPLE_TYPE = 14,
};

/* message ValueType */
enum { PPROF_VT_TYPE = 1, PPROF_VT_UNIT = 2 };

/* message Sample: location ids leaf first, one value per sample type */
enum { PPROF_SAMPLE_LOCATION_ID = 1, PPROF_SAMPLE_VALUE = 2, PPROF_SAMPLE_LABEL = 3 };

/* message Label */
enum { PPROF_LABEL_KEY = 1, PPROF_LABEL_STR = 2, PPROF_LABEL_NUM = 3, PPROF_LABEL_NUM_UNIT = 4 };

/* message Mapping */
enum {
	PPROF_MAPPING_ID = 1,
	PPROF_MAPPING_MEMORY_START = 2,
	PPROF_MAPPING_MEMORY_LIMIT = 3,
	PPROF_MAPPING_FILE_OFFSET = 4,
	PPROF_MAPPING_FILENAME = 5,
	PPROF_MAPPING_BUILD_ID = 6,
	PPROF_MAPPING_HAS_FUNCTIONS = 7,
};

/* message Location: line[0] is the innermost (inlined-into-last) function */
enum {
	PPROF_LOCATION_ID = 1,
	PPROF_LOCATION_MAPPING_ID = 2,
	PPROF_LOCATION_ADDRESS = 3,
	PPROF_LOCATION_LINE = 4,
};

/* message Line */
enum { PPROF_LINE_FUNCTION_ID = 1, PPROF_LINE_LINE = 2 };

/* message Function */
enum {
	PPROF_FUNCTION_ID = 1,
	PPROF_FUNCTION_NAME = 2,
	PPROF_FUNCTION_SYSTEM_NAME = 3,
	PPROF_FUNCTION_FILENAME = 4,
	PPROF_FUNCTION_START_LINE = 5,
};

/* Conventions bpfprof follows (and recognises when reading). */
#define PPROF_KERNEL_MAPPING "[kernel.kallsyms]"
#define PPROF_JIT_MAPPING    "[jit]"
#define PPROF_PYTHON_MAPPING "[python]"
#define PPROF_LISP_MAPPING   "[lisp]"
#define PPROF_INTERP_MAPPING "[java-interpreted]" /* interpreted Java frames */
#define PPROF_COMMENT_PREFIX "bpfprof "

#include <stddef.h>
#include <stdint.h>

#include "format/view.h"

struct profile;

/* The uncompressed Profile message for p (pprof_write.c); caller frees *buf.
 * 0 or -ENOMEM. */
int pprof__encode(const struct profile *p, uint8_t **buf, size_t *len);
/* The same with only the values of a view (VIEW_AUTO: all of them);
 * -EINVAL for the wall view of a profile whose frequency is unknown. */
int pprof__encode_view(const struct profile *p, enum view view, uint8_t **buf, size_t *len);

struct count_fn;
/* bpfprof count's results (counttab.h) as an uncompressed Profile message:
 * calls/count and time/nanoseconds, one sample per (function, caller) edge
 * (pprof_write.c says how). Caller frees *buf. 0 or -ENOMEM. */
int pprof__encode_count(const struct count_fn *fns, size_t n, uint64_t duration_ns, uint8_t **buf,
			size_t *len);

#endif
