/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * testutil.h - helpers for the cmocka unit tests: fixture paths and temp files.
 * Fixtures built by the Makefile live in $BPFPROF_FIXTURES (build/fixtures).
 */
#ifndef BPFPROF_TESTUTIL_H
#define BPFPROF_TESTUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/util.h"

/* Path of a fixture built by the Makefile (static buffer). */
static inline const char *fixture_path(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("BPFPROF_FIXTURES");

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "build/fixtures", name);
	return buf;
}

/* ELF vaddr of symbol `name` in `file`, from binutils' nm (fails the test if absent). */
static inline uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[4200], line[512];
	uint64_t addr = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sym[256], type;
		unsigned long long a;

		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, name))
			addr = a;
	}
	pclose(p);
	if (!addr)
		fail_msg("nm found no %s in %s", name, file);
	return addr;
}

/* Writes len bytes to a new temp file; returns its malloc'd path. */
static inline char *write_temp(const void *data, size_t len)
{
	char tmpl[] = "/tmp/bpfprof-test-XXXXXX";
	int fd = mkstemp(tmpl);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return strdup(tmpl);
}

static inline char *write_temp_str(const char *s)
{
	return write_temp(s, strlen(s));
}

#endif
