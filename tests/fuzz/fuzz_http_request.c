// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fuzz_http_request.c - libFuzzer target for what any client of --listen
 * controls: the request line parser and the query lookup. Every view the
 * parser returns must lie inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *buf, size_t size, const char *p, size_t n)
{
	if (n && (!p || p < buf || p + n > buf + size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_request r;
	char v[24];
	int status = http_request__parse(buf, size, &r);

	if (status != 0 && status != 400 && status != 405)
		abort();
	if (status)
		return 0;
	if ((!r.path && r.path_len) || r.minor > 9)
		abort();
	inside(buf, size, r.path, r.path_len);
	inside(buf, size, r.query, r.query_len);
	if (r.query && r.query != r.path + r.path_len + 1)
		abort();
	if (r.query && http_query__value(r.query, r.query_len, "seconds", v, sizeof(v)) &&
	    strlen(v) >= sizeof(v))
		abort();
	return 0;
}
