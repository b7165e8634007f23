// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* httpd.c - /debug/pprof/profile, /metrics, /healthz; see httpd.h. */
#include "agent/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"

struct httpd {
	struct MHD_Daemon *d;
	struct live *live;
	struct metrics *metrics;
	const char *content_type;
};

int httpd__parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128] = "127.0.0.1";
	const char *port_s = s, *colon;
	uint64_t port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, end - s - 1);
		host[end - s - 1] = '\0';
		port_s = end + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if ((size_t)(colon - s) >= sizeof(host) || colon == s)
			return -EINVAL;
		memcpy(host, s, colon - s);
		host[colon - s] = '\0';
		port_s = colon + 1;
	}
	if (parse_u64(port_s, 10, &port) || port == 0 || port > 65535)
		return -EINVAL;
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof(host), "127.0.0.1");
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	}
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)msg, strlen(msg),
		     MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	struct httpd *h = cls;

	if (!*state) {
		/* First call for this request: headers only. */
		*state = (void *)1;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");

	if (!strcmp(url, "/healthz")) {
		struct metrics_snapshot s;

		metrics__get(h->metrics, &s);
		if (s.last_drain_unix && (uint64_t)time(NULL) > s.last_drain_unix + 30)
			return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "stalled: no drain for 30 s\n");
		return text(c, MHD_HTTP_OK, "ok\n");
	}
	if (!strcmp(url, "/metrics")) {
		struct metrics_snapshot s;
		struct sbuf sb = { 0 };

		metrics__get(h->metrics, &s);
		if (metrics__render(&s, &sb))
			return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", sb.buf, sb.len,
			     MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/debug/pprof/profile")) {
		const char *sec = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
		uint64_t seconds = 30;
		char *body = NULL;
		size_t len = 0;
		int err;

		if (sec && (parse_u64(sec, 10, &seconds) || seconds == 0 || seconds > LIVE_MAX_SECONDS))
			return text(c, MHD_HTTP_BAD_REQUEST, "seconds must be 1 to 3600\n");
		err = live__collect(h->live, (unsigned)seconds, &body, &len);
		if (err == -EBUSY)
			return text(c, MHD_HTTP_TOO_MANY_REQUESTS, "too many profile requests at once\n");
		if (err)
			return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "profiler is stopping\n");
		return reply(c, MHD_HTTP_OK, h->content_type, body, len, MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/"))
		return text(c, MHD_HTTP_OK,
			    "bpfprof: /debug/pprof/profile?seconds=N, /metrics, /healthz\n");
	return text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

struct httpd *httpd__start(const char *listen, struct live *live, struct metrics *metrics,
			   const char *content_type, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct httpd *h;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ERROR_LOG;

	if (httpd__parse_listen(listen, &ss, &len)) {
		snprintf(err, errlen, "invalid --listen '%s': expected [ADDR:]PORT", listen);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->live = live;
	h->metrics = metrics;
	h->content_type = content_type;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 16U,
				MHD_OPTION_CONNECTION_TIMEOUT, 60U, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen, strerror(errno));
		free(h);
		return NULL;
	}
	return h;
}

void httpd__stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
