// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * gzip.c - gzip for the writers of compressed formats (pprof, svgz); see
 * writer.h. The reading side, with its decompression-bomb limits, is
 * reader__gunzip() in readers.c.
 */
#include "format/writer.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "base/util.h"

/* gzip (RFC 1952, mtime 0 so output is reproducible) straight into f. */
int writer__gzip(FILE *f, const void *data, size_t len)
{
	const uint8_t *buf = data;
	uint8_t out[65536];
	z_stream zs;
	int zr, err = 0;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)buf;
	do {
		/* avail_in is 32-bit: feed at most 1 GiB at a time. */
		size_t chunk = MIN(len, (size_t)1 << 30);

		zs.avail_in = (uInt)chunk;
		len -= chunk;
		do {
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			zr = deflate(&zs, len ? Z_NO_FLUSH : Z_FINISH);
			if (zr == Z_STREAM_ERROR) {
				err = -EIO;
				break;
			}
			if (fwrite(out, 1, sizeof(out) - zs.avail_out, f) !=
			    sizeof(out) - zs.avail_out) {
				err = -errno ?: -EIO;
				break;
			}
		} while (zs.avail_out == 0);
	} while (len && !err);
	deflateEnd(&zs);
	return err;
}
