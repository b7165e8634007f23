// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* elfnote.c - build-id notes and .gnu_debuglink; see elfnote.h. */
#include "proc/elfnote.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* NT_GNU_BUILD_ID; spelled out so this file needs no <elf.h> feature macros. */
#define NOTE_GNU_BUILD_ID 3

size_t elfnote__build_id(const void *notes, size_t len, size_t align, uint8_t id[BUILD_ID_MAX])
{
	const uint8_t *d = notes;
	uint64_t off = 0;

	if (!d || (align != 4 && align != 8))
		return 0;
	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t name_off, desc_off, next;

		memcpy(&namesz, d + off, 4);
		memcpy(&descsz, d + off + 4, 4);
		memcpy(&type, d + off + 8, 4);
		/* In 64-bit arithmetic: 32-bit sizes cannot overflow it. */
		name_off = off + 12;
		desc_off = (name_off + namesz + align - 1) & ~(uint64_t)(align - 1);
		next = (desc_off + descsz + align - 1) & ~(uint64_t)(align - 1);
		if (name_off + namesz > len || desc_off + descsz > len)
			return 0;
		if (type == NOTE_GNU_BUILD_ID && namesz == 4 && !memcmp(d + name_off, "GNU", 4)) {
			if (descsz < 1 || descsz > BUILD_ID_MAX)
				return 0;
			memcpy(id, d + desc_off, descsz);
			return descsz;
		}
		if (next >= len)
			return 0;
		off = next;
	}
	return 0;
}

int elfnote__debuglink(const void *data, size_t len, bool big_endian,
		       char name[DEBUGLINK_NAME_MAX + 1], uint32_t *crc)
{
	const uint8_t *d = data;
	const uint8_t *nul;
	size_t n, crc_off;

	if (!d || !len)
		return -EINVAL;
	nul = memchr(d, '\0', len);
	if (!nul)
		return -EINVAL;
	n = (size_t)(nul - d);
	if (!n || n > DEBUGLINK_NAME_MAX)
		return -EINVAL;
	/* One file name, looked up in a few fixed directories: nothing that walks. */
	if (memchr(d, '/', n) || (n <= 2 && d[0] == '.' && (n == 1 || d[1] == '.')))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (d[i] < 0x20 || d[i] == 0x7f)
			return -EINVAL;
	crc_off = (n + 1 + 3) & ~(size_t)3;
	if (crc_off > len || len - crc_off < 4)
		return -EINVAL;
	d += crc_off;
	if (big_endian)
		*crc = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
	else
		*crc = (uint32_t)d[3] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[1] << 8 | d[0];
	memcpy(name, data, n);
	name[n] = '\0';
	return 0;
}

int elfnote__altlink(const void *data, size_t len, char name[ALTLINK_NAME_MAX],
		     uint8_t id[BUILD_ID_MAX], size_t *id_len)
{
	const uint8_t *d = data, *nul;
	size_t n;

	if (!d || !len)
		return -EINVAL;
	nul = memchr(d, '\0', len);
	if (!nul)
		return -EINVAL;
	n = (size_t)(nul - d);
	if (!n || n >= ALTLINK_NAME_MAX || len - n - 1 < 1 || len - n - 1 > BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (d[i] < 0x20 || d[i] == 0x7f)
			return -EINVAL;
	memcpy(name, d, n);
	name[n] = '\0';
	*id_len = len - n - 1;
	memcpy(id, nul + 1, *id_len);
	return 0;
}

void elfnote__build_id_hex(const uint8_t *id, size_t len, char *buf, size_t size)
{
	size_t o = 0;

	if (!size)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < len && o + 4 < size; i++) {
		o += (size_t)snprintf(buf + o, size - o, "%02x", id[i]);
		if (i == 0 && len > 1)
			buf[o++] = '/', buf[o] = '\0';
	}
}
