/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * dirfixture.h - for the tests of what continuous mode writes into a
 * directory (test_store.c, test_sinks.c): dir, a new temporary directory
 * for each test (dir_setup and dir_teardown, cmocka's setup and teardown),
 * the names in it, a one-sample CPU profile and the times to write it at.
 */
#ifndef BPFPROF_DIRFIXTURE_H
#define BPFPROF_DIRFIXTURE_H

#include "testutil.h"

#include "base/profile.h"

#define T0  (1795338600ULL * 1000000000ULL) /* 2026-11-22T09:10:00Z */
#define SEC 1000000000ULL

static char dir[64];

static int dir_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/bpfprof-dir-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int dir_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* How many names in dir (as ls lists them) match(name, arg). */
static inline int dir_count(bool (*match)(const char *name, const char *arg), const char *arg)
{
	char cmd[128], line[256];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -1 %s", dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		n += match(line, arg);
	}
	pclose(f);
	return n;
}

/* Matchers for dir_count. */
static inline bool name_has(const char *name, const char *part)
{
	return strstr(name, part) != NULL;
}

static inline bool name_ends(const char *name, const char *suffix)
{
	size_t l = strlen(name), e = strlen(suffix);

	return l >= e && !strcmp(name + l - e, suffix);
}

/* One sample of 7 in "app;main" (folded: "app;main 7\n", 11 bytes). */
static inline struct profile *small_profile(void)
{
	struct profile *p = profile__new();
	struct psample s = { .pid = 1, .comm = "app" };
	uint32_t f = (uint32_t)profile__frame(p, FRAME_USER, "main", "/bin/app");

	assert_int_equal(profile__add(p, &s, &f, 1, 7), 0);
	return p;
}

#endif
