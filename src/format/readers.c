// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* readers.c - reader table, format sniffing, bounded file reading; see reader.h. */
#include "format/reader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"

static const struct reader *const readers[] = {
	&reader_folded,
	&reader_pprof,
	&reader_perf_script,
	NULL,
};

const struct reader *reader__find(const char *name)
{
	for (size_t i = 0; readers[i]; i++)
		if (!strcmp(readers[i]->name, name))
			return readers[i];
	return NULL;
}

const struct reader *reader__sniff(const uint8_t *buf, size_t len)
{
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b)
		return &reader_pprof; /* gzip: pprof on disk */
	/* Text never has these bytes; a raw (uncompressed) protobuf soon does. */
	for (size_t i = 0; i < len && i < 64; i++)
		if (buf[i] < 0x09 || (buf[i] > 0x0d && buf[i] < 0x20))
			return &reader_pprof;
	if (perfscript__sniff(buf, len))
		return &reader_perf_script;
	return &reader_folded;
}

static bool has(const uint8_t *buf, size_t len, const char *s)
{
	return memmem(buf, MIN(len, (size_t)4096), s, strlen(s)) != NULL;
}

/*
 * Files people pass that bpfprof recognises but does not read: em says what
 * the file is and what to do instead. gzipped: it was compressed.
 */
static bool foreign(const uint8_t *buf, size_t len, const char *path, bool gzipped,
		    struct errmsg *em)
{
	const char *name = strcmp(path, "-") ? path : "perf.data";
	const char *gz = gzipped ? "gzip-compressed " : "";
	size_t i = 0;

	/* perf record's file: "PERFILE2" (either byte order), "PERFFILE" before 2.6.37. */
	if (len >= 8 && (!memcmp(buf, "PERFILE2", 8) || !memcmp(buf, "2ELIFREP", 8) ||
			 !memcmp(buf, "PERFFILE", 8))) {
		errmsg_set(em, -EINVAL,
			   "this is a %sperf.data file (perf record's binary format), "
			   "which bpfprof does not read",
			   gz);
		errmsg_hint(em,
			    "read perf script's text of it: perf script -i %s > %s.txt, then "
			    "pass that (or pipe it: perf script -i %s | bpfprof report -)",
			    name, name, name);
		return true;
	}
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark */
	while (i < len && i < 4096 &&
	       (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	if (i < len && buf[i] == '<' && has(buf, len, "<svg")) {
		errmsg_set(em, -EINVAL, "this is %s%s, which cannot be read back into a profile",
			   gzipped ? "a gzip-compressed SVG image" : "an SVG image",
			   has(buf, len, "fg-data") ? " (a bpfprof flame graph)" : "");
		errmsg_hint(em, "read the profile it was drawn from (folded, pprof or perf script "
				"text); record with -o x.pb.gz to keep one, then draw it with "
				"bpfprof convert x.pb.gz -o x.svg");
		return true;
	}
	if (i < len && buf[i] == '{' && has(buf, len, "speedscope.app/file-format-schema")) {
		errmsg_set(em, -EINVAL,
			   "this is a %sspeedscope file, which bpfprof writes but does "
			   "not read",
			   gz);
		errmsg_hint(em, "read the profile it was made from (folded, pprof or perf script "
				"text); record with -o x.pb.gz to keep one");
		return true;
	}
	if (i < len && buf[i] == '<' &&
	    (has(buf, len, "<html") || has(buf, len, "<HTML") || has(buf, len, "<!DOCTYPE html"))) {
		errmsg_set(em, -EINVAL, "this is a %sweb page (HTML), not a profile", gz);
		errmsg_hint(em, "bpfprof reads folded stacks, pprof and perf script text");
		return true;
	}
	return false;
}

static int read_stdin(size_t max, uint8_t **out, size_t *out_len)
{
	size_t len = 0, cap = 0;
	uint8_t *buf = NULL;

	for (;;) {
		ssize_t n;

		if (len == cap && array_grow((void **)&buf, &cap, MAX(len + 1, (size_t)65536), 1)) {
			free(buf);
			return -ENOMEM;
		}
		n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			free(buf);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			return -EFBIG;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

struct profile *reader__read_path_opts(const char *path, const struct input_opts *io,
				       const char **format, struct errmsg *em)
{
	const struct reader *r;
	struct profile *p;
	uint8_t *buf = NULL, *raw;
	size_t len = 0;
	bool gzipped = false;
	int rc;

	if (format)
		*format = NULL;
	if (!strcmp(path, "-"))
		rc = read_stdin(INPUT_MAX_BYTES, &buf, &len);
	else
		rc = read_file(path, INPUT_MAX_BYTES, (char **)&buf, &len);
	if (rc) {
		errmsg_set(em, rc, "%s", rc == -EFBIG ? "larger than 1 GiB" : strerror(-rc));
		errno = -rc;
		return NULL;
	}
	if (!len) {
		free(buf);
		errno = -errmsg_set(em, -EINVAL, "empty file");
		return NULL;
	}
	/* Any format may come gzipped (pprof always does): what is inside decides. */
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		rc = reader__gunzip(buf, len, INPUT_MAX_INFLATED, &raw, &len);
		free(buf);
		if (rc) {
			errno = -errmsg_set(em, rc, "%s",
					    rc == -EFBIG    ? "more than 1 GiB once decompressed"
					    : rc == -EINVAL ? "corrupt or truncated gzip data"
							    : strerror(-rc));
			return NULL;
		}
		buf = raw;
		gzipped = true;
		if (!len) {
			free(buf);
			errno = -errmsg_set(em, -EINVAL, "empty once decompressed");
			return NULL;
		}
	}
	if (foreign(buf, len, path, gzipped, em)) {
		free(buf);
		errno = EINVAL;
		return NULL;
	}
	r = reader__sniff(buf, len);
	if (format)
		*format = r->name;
	p = profile__new();
	if (!p) {
		free(buf);
		errno = -errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	errmsg_clear(em);
	rc = r->read_opts ? r->read_opts(buf, len, p, io, em) : r->read(buf, len, p, em);
	free(buf);
	if (rc) {
		if (!errmsg_said(em))
			errmsg_set(em, rc, "%s", strerror(-rc));
		profile__free(p);
		errno = -rc;
		return NULL;
	}
	return p;
}

struct profile *reader__read_path(const char *path, struct errmsg *em)
{
	return reader__read_path_opts(path, NULL, NULL, em);
}

/*
 * Inflates buf (gzip or zlib, concatenated gzip members as one stream) into
 * out[0..cap) - or, with out NULL, only counts, through a small scratch
 * buffer. Stops with -EFBIG as soon as more than max bytes come out.
 */
static int inflate_into(const uint8_t *buf, size_t len, uint8_t *out, size_t cap, size_t max,
			size_t *total)
{
	uint8_t scratch[64 * 1024];
	size_t olen = 0;
	z_stream zs;
	int zr, err = 0;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 32: zlib or gzip header, detected. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)buf;
	zs.avail_in = (uInt)MIN(len, (size_t)UINT32_MAX);
	len -= zs.avail_in;
	for (;;) {
		size_t room, got;

		if (out) {
			zs.next_out = out + olen;
			room = MIN(cap - olen, (size_t)UINT32_MAX);
		} else {
			zs.next_out = scratch;
			room = sizeof(scratch);
		}
		zs.avail_out = (uInt)room;
		zr = inflate(&zs, Z_NO_FLUSH);
		got = room - zs.avail_out;
		olen += got;
		if (olen > max) {
			err = -EFBIG;
			break;
		}
		if (zr == Z_STREAM_END) {
			if (!zs.avail_in && !len)
				break;
			if (inflateReset(&zs) != Z_OK) {
				err = -EINVAL;
				break;
			}
			continue;
		}
		if (zr == Z_BUF_ERROR && zs.avail_in == 0) {
			if (!len) {
				err = -EINVAL; /* truncated */
				break;
			}
		} else if (zr != Z_OK) {
			err = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
		if (!zs.avail_in && len) {
			zs.avail_in = (uInt)MIN(len, (size_t)UINT32_MAX);
			len -= zs.avail_in;
		}
	}
	inflateEnd(&zs);
	*total = olen;
	return err;
}

int reader__gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len)
{
	size_t need, got;
	uint8_t *o;
	int err;

	/*
	 * Twice: first only counting, so that a decompression bomb (a few MB
	 * that inflate to gigabytes) is refused once it passes max without a
	 * byte allocated for it; then into a buffer of exactly the right size.
	 * Inflating is fast next to parsing what comes out.
	 */
	err = inflate_into(buf, len, NULL, 0, max, &need);
	if (err)
		return err;
	/* One byte more than needed: a trailing empty gzip member still has room. */
	o = malloc(need + 1);
	if (!o)
		return -ENOMEM;
	err = inflate_into(buf, len, o, need + 1, need, &got);
	if (!err && got != need)
		err = -EINVAL;
	if (err) {
		free(o);
		return err;
	}
	*out = o;
	*out_len = got;
	return 0;
}
