// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* readers.c - reader table, format sniffing, bounded file reading; see reader.h. */
#include "format/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"

static const struct reader *const readers[] = {
	&reader_folded,
	&reader_pprof,
	NULL,
};

const struct reader *input__find(const char *name)
{
	for (size_t i = 0; readers[i]; i++)
		if (!strcmp(readers[i]->name, name))
			return readers[i];
	return NULL;
}

const struct reader *input__sniff(const uint8_t *buf, size_t len)
{
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b)
		return &reader_pprof; /* gzip: pprof on disk */
	/* Text never has these bytes; a raw (uncompressed) protobuf soon does. */
	for (size_t i = 0; i < len && i < 64; i++)
		if (buf[i] < 0x09 || (buf[i] > 0x0d && buf[i] < 0x20))
			return &reader_pprof;
	return &reader_folded;
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

struct profile *input__read_path(const char *path, struct errmsg *em)
{
	const struct reader *r;
	struct profile *p;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

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
	r = input__sniff(buf, len);
	p = profile__new();
	if (!p) {
		free(buf);
		errno = -errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	errmsg_clear(em);
	rc = r->read(buf, len, p, em);
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

int input__gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len)
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
