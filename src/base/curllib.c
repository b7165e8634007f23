// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* curllib.c - libcurl loaded on first use; see curllib.h. */
#include "base/curllib.h"

#include <errno.h>

#include "base/dynlib.h"
#include "base/util.h"

#ifndef CURL_SONAME
#define CURL_SONAME "libcurl.so.4" /* the Makefile passes the one linked against */
#endif

#define CURLLIB_NAME(f) "curl_" #f,

struct curllib libcurl;
static const char *const libcurl_names[] = { CURLLIB_FNS(CURLLIB_NAME) };
static struct dynlib libcurl_lib = DYNLIB_INIT(CURL_SONAME, libcurl_names, &libcurl);
_Static_assert(sizeof(libcurl) == ARRAY_SIZE(libcurl_names) * sizeof(void *),
	       "libcurl: one pointer per name");

int curllib__load(void)
{
	int err = dynlib__load(&libcurl_lib);

	if (err)
		return err;
	return libcurl.global_init(CURL_GLOBAL_DEFAULT) ? -ENOMEM : 0;
}

const char *curllib__why(void)
{
	return dynlib__why(&libcurl_lib);
}
