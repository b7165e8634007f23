/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * reader.h - readers of profiles bpfprof (and other tools) wrote, for
 * "bpfprof report", "convert" and "diff": the mirror of writer.h.
 *
 * Each format it reads has one file in src/format/, NAME_read.c beside
 * NAME_write.c, that provides a struct reader. The format of a file is
 * sniffed from its first bytes, after gunzip if it is gzipped: raw protobuf
 * (binary) is pprof, text that looks like perf script's is perf script
 * output, anything else folded text. Files people pass that bpfprof
 * recognises but does not read - perf.data, its own SVG flame graphs,
 * speedscope JSON - are an error that says what the file is and what to do.
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

/* How to read (what a format has more than one of). NULL: the defaults. */
struct input_opts {
	const char *event; /* perf script: the event whose samples are read
			    * ("cpu-clock" matches "cpu-clock:ppp"); NULL: the first */
};

struct reader {
	const char *name;
	/*
	 * Parses buf[0..len) (not NUL-terminated) into p, which is empty.
	 * Returns 0 or -errno (-EINVAL for malformed input, -EFBIG for input
	 * over a limit, -ENOMEM); on error, em (may be NULL) says what and where.
	 * On success em may hold a note - what the file had that was left out
	 * (perf script: the samples of its other events) - for the caller to
	 * show as a warning.
	 */
	int (*read)(const uint8_t *buf, size_t len, struct profile *p, struct errmsg *em);
	/* The same with options, for readers that take some (NULL: read()). */
	int (*read_opts)(const uint8_t *buf, size_t len, struct profile *p,
			 const struct input_opts *io, struct errmsg *em);
};

extern const struct reader reader_folded;
extern const struct reader reader_pprof;
extern const struct reader reader_perf_script;

/* Whether text starting with buf[0..len) is perf script's output. */
bool perfscript__sniff(const uint8_t *buf, size_t len);

/* The reader called name, or NULL. */
const struct reader *reader__find(const char *name);
/* The reader for data starting with buf[0..len). */
const struct reader *reader__sniff(const uint8_t *buf, size_t len);

/*
 * Reads path ("-": stdin) with the sniffed reader into a new profile.
 * NULL on failure with errno set and em holding a one-line reason (without
 * the file name, which the caller prints) and maybe a hint; on success em
 * may hold a note (see struct reader).
 */
struct profile *reader__read_path(const char *path, struct errmsg *em);
/* The same with options (io may be NULL); *format (may be NULL) gets the
 * name of the reader used, or NULL if none was. */
struct profile *reader__read_path_opts(const char *path, const struct input_opts *io,
				       const char **format, struct errmsg *em);

/* For readers: gunzips buf into a malloc'd buffer of at most max bytes.
 * 0, -EINVAL (corrupt), -EFBIG (over max) or -ENOMEM. */
int reader__gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len);

#endif
