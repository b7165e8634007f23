// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * kbuildid.c - the running kernel's GNU build id; see kbuildid.h.
 */
#include "sym/kbuildid.h"

#include <errno.h>
#include <stdlib.h>

#include "proc/elfnote.h"
#include "base/util.h"

#define NOTES_MAX (64 * 1024) /* /sys/kernel/notes is a few hundred bytes */

int buildid__from_notes(const uint8_t *buf, size_t len, char hex[BUILDID_HEX_MAX])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t id[BUILD_ID_MAX];
	size_t n = elfnote__build_id(buf, len, 4, id);

	if (!n || 2 * n >= BUILDID_HEX_MAX)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * n] = '\0';
	return 0;
}

int buildid__kernel(char hex[BUILDID_HEX_MAX])
{
	char *buf;
	size_t len;
	int err = read_file("/sys/kernel/notes", NOTES_MAX, &buf, &len);

	if (err)
		return err;
	err = buildid__from_notes((const uint8_t *)buf, len, hex);
	free(buf);
	return err;
}
