/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * push.h - ships interval profiles to a Grafana Pyroscope server (--push).
 *
 *   POST {URL}/ingest?name=<app>{hostname=H,container_id=C}&from=S&until=S
 *        &sampleRate=F&spyName=bpfprof&units=samples&aggregationType=sum&format=pprof
 *
 * Pyroscope takes a pprof body's profile type from its sample types and the
 * whole name before "{" as service_name (grafana/pyroscope,
 * pkg/og/convert/pprof/profile.go createLabels); a folded body (the writer's
 * fallback, no "format") names its type in the name instead, <app>.cpu{...},
 * split off by the server (pkg/ingester/pyroscope/ingest_adapter.go
 * convertMetadata). One series per container (and one for the host's own
 * processes); with --off-cpu each also gets its off-CPU time as a second
 * profile type: pprof with one off_cpu/nanoseconds sample type,
 * units=nanoseconds (folded: <app>.off_cpu{...}).
 *
 * An allocation profile (--alloc, PUSH_HEAP) goes as one series, always
 * pprof, the way Pyroscope's Go client sends heap profiles:
 *
 *   POST {URL}/ingest?name=<app>{hostname=H}&from=S&until=S&spyName=bpfprof
 *   Content-Type: multipart/form-data; boundary=bpfprof-<32 random hex digits>
 *
 * with two parts, each a form file (the server reads only files): "profile"
 * (the gzipped profile.proto with alloc_objects, alloc_space, inuse_objects,
 * inuse_space) and "sample_type_config" (PUSH_HEAP_SAMPLE_TYPE_CONFIG: the
 * types' units, inuse_* averaged over time, none cumulative: each upload is
 * the interval's own allocations and its end's in-use blocks). There is no
 * "format": the server takes a format=pprof body whole as the profile, and
 * reads the parts only without it (grafana/pyroscope ingest_handler.go
 * readInputRawDataFromRequest; pkg/og/convert/pprof/profile.go
 * loadPprofFromForm; pkg/og/storage/tree SampleTypeConfig). Profiles
 * are serialized on submit and queued (bounded: the oldest is dropped and
 * counted when full); one worker thread sends them with libcurl, retrying
 * failures with exponential backoff, or after the server's Retry-After (at
 * most PUSH_MAX_RETRY_AFTER s) when it gives one; failures are reported to a
 * warn callback at most once a minute, with the HTTP status or the transport
 * error and the server's first words. TLS peers are verified. The bearer token
 * (from --token-file or $BPFPROF_PUSH_TOKEN) is sent in a header and never
 * logged. Nothing here blocks sampling or draining.
 *
 * The server's answer is capped: PUSH_MAX_RESPONSE_HEADERS bytes of headers
 * (and libcurl's own CURL_MAX_HTTP_HEADER for one line), PUSH_MAX_RESPONSE_BODY
 * of body. An answer over a cap ends the attempt there (a failed attempt,
 * retried like a 5xx, whatever its status), counted in too_large and said as
 * "response too large (over N bytes ...)".
 */
#ifndef BPFPROF_PUSH_H
#define BPFPROF_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "format/writer.h"
#include "base/profile.h"

struct pusher;
struct errmsg;

/* Called on the push thread with a complete sentence (never the token). */
typedef void (*pusher_warn_fn)(void *ctx, const char *msg);

/* Longest wait a server's Retry-After is honoured for; longer ones are cut to it. */
#define PUSH_MAX_RETRY_AFTER 120
/* The most of an answer read: headers (status line included), and body. */
#define PUSH_MAX_RESPONSE_HEADERS (64 * 1024)
#define PUSH_MAX_RESPONSE_BODY	  (1024 * 1024)

struct pusher_opts {
	const char *url;
	const char *app;
	const char *token; /* NULL: no Authorization header */
	uint32_t freq;
	const struct writer *writer; /* pprof (preferred) or folded */
	size_t max_queue;	     /* default 64 */
	unsigned max_attempts;	     /* per profile; default 5 */
	unsigned timeout_s;	     /* per request; default 10 */
	pusher_warn_fn warn;	     /* failures, at most once a minute; may be NULL */
	void *warn_ctx;
};

struct pusher_stats {
	uint64_t sent, failed, dropped, retries;
	uint64_t too_large; /* failed attempts whose answer was over a cap */
	size_t queued;
	long last_status; /* HTTP status of the last attempt, 0 if none */
};

/* Starts the sending thread. NULL with errno set and em saying why. */
struct pusher *pusher__start(const struct pusher_opts *o, struct errmsg *em);
/* What a profile handed to the pusher is. */
enum push_kind {
	PUSH_CPU,  /* on-CPU samples (and --off-cpu's time): a series per container */
	PUSH_HEAP, /* an allocation profile (meta.alloc_period set): one series */
};

/* The multipart part "sample_type_config" of a PUSH_HEAP upload. */
#define PUSH_HEAP_SAMPLE_TYPE_CONFIG                                                               \
	"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"        \
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"                   \
	"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}"

/*
 * Queues p's requests: for PUSH_CPU one per container (and per profile
 * type), for PUSH_HEAP one. 0, -ENOMEM, or -EINVAL when p is not of that
 * kind (an allocation profile sent as CPU, or the reverse).
 */
int pusher__submit_kind(struct pusher *ps, enum push_kind kind, const struct profile *p,
			uint64_t from_ns, uint64_t until_ns);
/* pusher__submit_kind(PUSH_CPU). */
int pusher__submit(struct pusher *ps, const struct profile *p, uint64_t from_ns, uint64_t until_ns);
/* Stops the worker, giving queued profiles up to flush_ms to go out; the
 * final counters go to *final if given. */
void pusher__stop(struct pusher *ps, unsigned flush_ms, struct pusher_stats *final);
void pusher__stats(struct pusher *ps, struct pusher_stats *st);

/*
 * Seconds to wait for a Retry-After header value (delta-seconds or an
 * HTTP-date, RFC 9110 10.2.3) at unix time now, at most PUSH_MAX_RETRY_AFTER;
 * -1 if it is neither.
 */
long pusher__retry_after(const char *value, time_t now);

/* The URL without "user:password@", for messages. */
void pusher__shown_url(const char *url, char *out, size_t size);

/* "app.cpu{hostname=h,container_id=c}" (unescaped); 0 or -ENAMETOOLONG. */
int pusher__series_name(const char *app, const char *hostname, const char *container, char *out,
			size_t size);
/*
 * The same for another profile type: "app.TYPE{...}" (TYPE "cpu", "off_cpu"),
 * or "app{...}" with TYPE NULL, as pprof bodies are sent (Pyroscope takes
 * the type from the profile's sample types and the whole name as the
 * service_name).
 */
int pusher__series_name_of(const char *app, const char *type, const char *hostname,
			   const char *container, char *out, size_t size);

#endif
