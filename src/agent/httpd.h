/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * httpd.h - the agent's HTTP endpoint (--listen):
 *
 *   GET /debug/pprof/profile?seconds=N   gzip pprof of the next N seconds
 *                                        (default 30), as Go services serve it,
 *                                        so `go tool pprof` and Parca read it
 *   GET /debug/pprof/heap[?seconds=N]    --alloc: Go's heap profile (alloc_*,
 *   GET /debug/pprof/allocs[?seconds=N]  inuse_*); without seconds the profile
 *                                        now (allocations since the start),
 *                                        with it the allocations of the next N
 *                                        seconds; /allocs has alloc_space the
 *                                        default type. debug=N (N != 0): 400.
 *                                        404 in a CPU run, as /profile is in
 *                                        an --alloc run
 *   GET /metrics                         Prometheus text
 *   GET /healthz                         "ok" once drained and while drains
 *                                        are on time, else 503 and why
 *
 * Anyone who can connect is a client, so the endpoint is built to stay up
 * under hostile ones: one event-loop thread (epoll, non-blocking sockets)
 * serves every connection; a request's header must arrive whole within 10 s
 * (a client trickling a byte a second is cut off); when the connection cap
 * or the descriptor budget is reached, one connection gives way to the new
 * one: the oldest of those that got their answer and linger, else the
 * oldest still sending its header, else the oldest not reading its answer.
 * So /healthz and /metrics answer while hundreds of idle, slow or
 * never-closing clients hold connections, at any rate they come. A client
 * that shuts its write side after its request (half-close) still gets its
 * answer. Descriptors are shared with the rest of the agent, which comes
 * first: HTTP leaves HTTPD_FD_RESERVE of them free for interval files,
 * symbol files and the push client, and when accept() itself fails for lack
 * of them the listening socket rests a second (no busy loop) and one warning
 * a minute goes to the warn callback.
 *
 * Only GET and HEAD are served (405 with "Allow: GET, HEAD" otherwise); one
 * request per connection ("Connection: close"). A profile request waits on a
 * thread of its own (at most LIVE_MAX_REQUESTS, 429 beyond), never in the
 * loop. Nothing here blocks sampling or draining (see live.h). Binds to
 * loopback unless an address is given.
 *
 * /healthz is "ok" (200) once a drain has completed and while none is
 * overdue, else 503 with the reason (metrics.h says when a drain is overdue).
 */
#ifndef BPFPROF_HTTPD_H
#define BPFPROF_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "agent/live.h"
#include "agent/metrics.h"

#define HTTPD_MAX_CONNS	     1024  /* connections at once (fewer if descriptors are short) */
#define HTTPD_FD_RESERVE     16	   /* descriptors HTTP never takes */
#define HTTPD_HEADER_MAX     8192  /* request line and headers */
#define HTTPD_HEADER_TIMEOUT 10000 /* ms from accept to a complete header */
#define HTTPD_WRITE_TIMEOUT  60000 /* ms to send a response */

struct httpd;
struct errmsg;

/* Called on the HTTP thread with a complete sentence; at most once a minute per kind. */
typedef void (*httpd_warn_fn)(void *ctx, const char *msg);

struct httpd_opts {
	const char *listen;	/* "[ADDR:]PORT" */
	struct live *live;	/* /debug/pprof/profile; NULL: 404 */
	struct live *live_heap; /* /debug/pprof/heap, /allocs (live__new_heap); NULL: 404 */
	struct metrics *metrics;
	const char *content_type; /* of CPU profiles (heap ones are pprof) */
	httpd_warn_fn warn;	  /* may be NULL */
	void *warn_ctx;
	unsigned max_conns; /* 0: HTTPD_MAX_CONNS */
};

/* "[ADDR:]PORT" or "[IPV6]:PORT"; ADDR defaults to 127.0.0.1. 0 or -EINVAL. */
int httpd__parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* A request line, as http_request__parse() found it (pointers into its buffer). */
struct http_request {
	bool head;		  /* HEAD, else GET */
	unsigned char minor;	  /* HTTP/1.minor */
	const char *path, *query; /* query NULL if none */
	size_t path_len, query_len;
};

/* Parses the request line at the start of buf[0..len): 0, 400 (malformed) or
 * 405 (a method other than GET and HEAD). For the server and its fuzz target. */
int http_request__parse(const char *buf, size_t len, struct http_request *r);

/* The value of key in a query string, not decoded (the values used here are
 * digits), cut to size - 1 bytes. */
bool http_query__value(const char *q, size_t qlen, const char *key, char *out, size_t size);

/* Binds and starts serving; NULL with the reason in em. */
struct httpd *httpd__start(const struct httpd_opts *o, struct errmsg *em);
/* Closes every connection and waits for profile threads (call live__shutdown first). */
void httpd__stop(struct httpd *h);

#endif
