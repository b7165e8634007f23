// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * mountinfo.c - /proc/PID/mountinfo parser; see mountinfo.h.
 *
 * Line: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER".
 * Only ID, POINT and FSTYPE are used.
 */
#include "proc/mountinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define MOUNTINFO_MAX_FILE (16u << 20)

/* Decodes the kernel's "\ooo" escapes; false on a bad escape or a NUL. */
static bool unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\') {
			unsigned v = 0;

			if (n - i < 4)
				return false;
			for (size_t k = 1; k <= 3; k++) {
				if (s[i + k] < '0' || s[i + k] > '7')
					return false;
				v = v * 8 + (unsigned)(s[i + k] - '0');
			}
			if (!v || v > 255)
				return false;
			out[o++] = (char)v;
			i += 3;
		} else if (!s[i]) {
			return false;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return true;
}

/* "maj:min", decimal. */
static bool parse_devno(const char *t, size_t n, uint32_t *major, uint32_t *minor)
{
	const char *colon = memchr(t, ':', n);
	char a[12], b[12];
	uint64_t x, y;

	if (!colon || colon == t || (size_t)(colon - t) >= sizeof(a) ||
	    (size_t)(t + n - colon - 1) >= sizeof(b) || colon + 1 == t + n)
		return false;
	memcpy(a, t, (size_t)(colon - t));
	a[colon - t] = '\0';
	memcpy(b, colon + 1, (size_t)(t + n - colon - 1));
	b[t + n - colon - 1] = '\0';
	if (parse_u64(a, 10, &x) || parse_u64(b, 10, &y) || x > UINT32_MAX || y > UINT32_MAX)
		return false;
	*major = (uint32_t)x;
	*minor = (uint32_t)y;
	return true;
}

/*
 * File system types whose operations can wait forever on another party: FUSE
 * (fuse, fuseblk, fuse.*: a daemon), and network file systems (nfs, nfs4,
 * cifs, smb3, smbfs, 9p, ceph, afs, coda, ncpfs, lustre, glusterfs: a server).
 * virtiofs is not among them (its daemon is the VM host's).
 */
static bool mountinfo__type_may_block(const char *t, size_t n)
{
	static const char *const types[] = {
		"fuse", "fuseblk", "nfs", "nfs4", "cifs",  "smb3",   "smbfs",
		"9p",	"ceph",	   "afs", "coda", "ncpfs", "lustre", "glusterfs",
	};

	if (n > 5 && !memcmp(t, "fuse.", 5))
		return true;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i]) == n && !memcmp(t, types[i], n))
			return true;
	return false;
}

static int parse_line(struct mountinfo *mi, const char *p, const char *end)
{
	const char *tok, *point, *type = NULL;
	size_t n, point_len, type_len = 0;
	struct mountinfo_ent *e;
	uint32_t major = 0, minor = 0;
	uint64_t id;
	char num[24];
	int i;

	if (!next_token(&p, end, &tok, &n) || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, tok, n);
	num[n] = '\0';
	if (parse_u64(num, 10, &id))
		return -EINVAL;
	/* parent, maj:min, root */
	for (i = 0; i < 3; i++) {
		if (!next_token(&p, end, &tok, &n))
			return -EINVAL;
		if (i == 1 && !parse_devno(tok, n, &major, &minor))
			return -EINVAL;
	}
	if (!next_token(&p, end, &point, &point_len) || point[0] != '/')
		return -EINVAL;
	/* options, optional fields, then "-" and the type */
	while (next_token(&p, end, &tok, &n)) {
		if (n == 1 && tok[0] == '-') {
			if (!next_token(&p, end, &type, &type_len))
				return -EINVAL;
			break;
		}
	}
	if (!type)
		return -EINVAL;
	e = &mi->ents[mi->nr];
	e->point = malloc(point_len + 1);
	if (!e->point)
		return -ENOMEM;
	if (!unescape(point, point_len, e->point)) {
		free(e->point);
		e->point = NULL;
		return -EINVAL;
	}
	e->id = id;
	e->major = major;
	e->minor = minor;
	e->may_block = mountinfo__type_may_block(type, type_len);
	snprintf(e->fstype, sizeof(e->fstype), "%.*s", (int)MIN(type_len, sizeof(e->fstype) - 1),
		 type);
	mi->any_block |= e->may_block;
	mi->nr++;
	return 0;
}

int mountinfo__parse(const char *buf, size_t len, struct mountinfo *out)
{
	const char *p = buf, *end = buf + len;
	size_t lines = 1;
	int err;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return 0;
	for (const char *q = buf; q < end; q++)
		lines += *q == '\n';
	out->ents = calloc(lines, sizeof(*out->ents));
	if (!out->ents)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = p;

		while (q < le && is_blank(*q))
			q++;
		if (q < le) {
			err = parse_line(out, q, le);
			if (err == -ENOMEM) {
				mountinfo__free(out);
				return err;
			}
			if (err)
				out->bad_lines++;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int mountinfo__read(const char *path, struct mountinfo *out)
{
	size_t len;
	char *buf;
	int err;

	memset(out, 0, sizeof(*out));
	err = read_file(path, MOUNTINFO_MAX_FILE, &buf, &len);
	if (err)
		return err;
	err = mountinfo__parse(buf, len, out);
	free(buf);
	return err;
}

void mountinfo__free(struct mountinfo *mi)
{
	if (!mi)
		return;
	for (size_t i = 0; i < mi->nr; i++)
		free(mi->ents[i].point);
	free(mi->ents);
	memset(mi, 0, sizeof(*mi));
}

/* Whether mount point `mp` is `path` or a directory above it. */
static bool covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (n == 1 && mp[0] == '/')
		return true;
	while (n > 1 && mp[n - 1] == '/')
		n--;
	return !strncmp(mp, path, n) && (path[n] == '\0' || path[n] == '/');
}

const struct mountinfo_ent *mountinfo__path_may_block(const struct mountinfo *mi, const char *path)
{
	if (!mi || !mi->any_block || !path)
		return NULL;
	for (size_t i = 0; i < mi->nr; i++)
		if (mi->ents[i].may_block && covers(mi->ents[i].point, path))
			return &mi->ents[i];
	return NULL;
}

const struct mountinfo_ent *mountinfo__dev_may_block(const struct mountinfo *mi, uint32_t major,
						     uint32_t minor)
{
	if (!mi || !mi->any_block)
		return NULL;
	for (size_t i = 0; i < mi->nr; i++)
		if (mi->ents[i].may_block && mi->ents[i].major == major &&
		    mi->ents[i].minor == minor)
			return &mi->ents[i];
	return NULL;
}

const struct mountinfo_ent *mountinfo__find_id(const struct mountinfo *mi, uint64_t id)
{
	for (size_t i = 0; mi && i < mi->nr; i++)
		if (mi->ents[i].id == id)
			return &mi->ents[i];
	return NULL;
}
