/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * httpd.h - the agent's HTTP endpoint (--listen), on libmicrohttpd:
 *
 *   GET /debug/pprof/profile?seconds=N   gzip pprof of the next N seconds
 *                                        (default 30), as Go services serve it,
 *                                        so `go tool pprof` and Parca read it
 *   GET /metrics                         Prometheus text
 *   GET /healthz                         "ok" while drains are recent
 *
 * Requests run on libmicrohttpd's threads; they never block sampling or
 * draining (see live.h). Binds to loopback unless an address is given.
 */
#ifndef BPFPROF_HTTPD_H
#define BPFPROF_HTTPD_H

#include <stddef.h>
#include <sys/socket.h>

#include "agent/live.h"
#include "agent/metrics.h"

struct httpd;

/* "[ADDR:]PORT" or "[IPV6]:PORT"; ADDR defaults to 127.0.0.1. 0 or -EINVAL. */
int httpd__parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len);

struct httpd *httpd__start(const char *listen, struct live *live, struct metrics *metrics,
			   const char *content_type, char *err, size_t errlen);
void httpd__stop(struct httpd *h);

#endif
