/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * reader.h - readers of profiles bpfprof (and other tools) wrote, for
 * "bpfprof report", "convert" and "diff": the mirror of writer.h.
 *
 * Each format it reads has one file in src/format/, NAME_read.c beside
 * NAME_write.c, that provides a struct reader. The
 * format of a file is sniffed from its first bytes: gzip (or raw protobuf,
 * which is binary) is pprof, anything else is folded text.
 *
 * Every reader treats its input as hostile: lengths are checked before use,
 * sizes are bounded (INPUT_MAX_BYTES in, INPUT_MAX_INFLATED after gunzip, so
 * a decompression bomb stops early), and a malformed file is an error saying
 * where and why - never a crash or a silently partial profile.
 */
#ifndef BPFPROF_FORMAT_READER_H
#define BPFPROF_FORMAT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errmsg.h"
#include "base/profile.h"

#define INPUT_MAX_BYTES	   (1ull << 30) /* a file as read */
#define INPUT_MAX_INFLATED (1ull << 30) /* a pprof message after gunzip */
#define INPUT_MAX_DEPTH	   65536	/* frames in one stack */

struct reader {
	const char *name;
	/*
	 * Parses buf[0..len) (not NUL-terminated) into p, which is empty.
	 * Returns 0 or -errno (-EINVAL for malformed input, -EFBIG for input
	 * over a limit, -ENOMEM); on error, em (may be NULL) says what and where.
	 */
	int (*read)(const uint8_t *buf, size_t len, struct profile *p, struct errmsg *em);
};

extern const struct reader reader_folded;
extern const struct reader reader_pprof;

/* The reader called name, or NULL. */
const struct reader *input__find(const char *name);
/* The reader for data starting with buf[0..len). */
const struct reader *input__sniff(const uint8_t *buf, size_t len);

/*
 * Reads path ("-": stdin) with the sniffed reader into a new profile.
 * NULL on failure with errno set and em holding a one-line reason (without
 * the file name, which the caller prints).
 */
struct profile *input__read_path(const char *path, struct errmsg *em);

/* For readers: gunzips buf into a malloc'd buffer of at most max bytes.
 * 0, -EINVAL (corrupt), -EFBIG (over max) or -ENOMEM. */
int input__gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len);

#endif
