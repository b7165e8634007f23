/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * curllib.h - libcurl, loaded on first use (base/dynlib.h), for the two
 * users it has: the push client (agent/push.c) and the debuginfod client
 * (sym/debuginfod.c). Linked normally, it and the TLS, Kerberos and LDAP
 * libraries it needs are 4 MiB of resident memory in every run.
 *
 * Call through the table `libcurl`: members are the functions without their
 * curl_ prefix (curl.h makes curl_easy_setopt() a macro), each declared with
 * __typeof__ of libcurl's own prototype, so every call is still checked
 * against curl.h. The table is filled by curllib__load() and stays valid for
 * the rest of the run.
 */
#ifndef BPFPROF_CURLLIB_H
#define BPFPROF_CURLLIB_H

#include <curl/curl.h>

/* An X-macro list: clang-format would indent it by nesting. */
/* clang-format off */
#define CURLLIB_FNS(X) \
	X(easy_cleanup) X(easy_escape) X(easy_getinfo) X(easy_init) X(easy_perform) \
	X(easy_reset) X(easy_setopt) X(easy_strerror) X(free) X(global_cleanup) \
	X(global_init) X(slist_append) X(slist_free_all)
/* clang-format on */
#define CURLLIB_PTR(f) __typeof__(curl_##f) *f;
struct curllib {
	CURLLIB_FNS(CURLLIB_PTR)
};
#undef CURLLIB_PTR

extern struct curllib libcurl;

/*
 * Loads libcurl (once, thread-safe) and calls its global_init (libcurl
 * counts these: each caller may pair its own with libcurl.global_cleanup()).
 * 0; -ELIBACC, the library or a function missing (curllib__why() says which);
 * -ENOMEM, global_init failed.
 */
int curllib__load(void);
const char *curllib__why(void);

#endif
