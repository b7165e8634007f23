// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* debuginfo.c - separate debug files by build id and debug link; see debuginfo.h. */
#include "sym/debuginfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <zlib.h>

#include "proc/elffile.h"
#include "proc/elfnote.h"
#include "sym/elfsym.h"
#include "proc/safeopen.h"

int debuginfo__crc32(int fd, uint64_t max, uint32_t *crc)
{
	const size_t chunk = 1u << 20;
	uLong c = crc32(0L, Z_NULL, 0);
	uint64_t off = 0;
	unsigned char *buf = malloc(chunk);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread(fd, buf, chunk, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (!n)
			break;
		off += (uint64_t)n;
		if (off > max) {
			free(buf);
			return -EFBIG;
		}
		c = crc32(c, buf, (uInt)n);
	}
	free(buf);
	*crc = (uint32_t)c;
	return 0;
}

static bool same_build_id(const struct elfsym *a, const struct elfsym *b)
{
	size_t la, lb;
	const uint8_t *ia = elfsym__build_id(a, &la), *ib = elfsym__build_id(b, &lb);

	return ia && ib && la == lb && !memcmp(ia, ib, la);
}

/*
 * Opens one candidate. crc: NULL for a build-id match, else the debuglink's
 * CRC to check. Returns the symbols or NULL.
 */
static struct elfsym *try_file(const struct debuginfo_query *q, const struct safe_root *r,
			       const char *path, const uint32_t *crc)
{
	struct safe_file f;
	struct elfsym *es = NULL;
	uint32_t got;

	if (r->fd < 0 ||
	    (q->nr_readers ? safeopen__in_root_as(r, path, 0, q->readers, q->nr_readers, &f, NULL)
			   : safeopen__in_root(r, path, 0, &f)))
		return NULL;
	if ((uint64_t)f.st.st_dev == q->dev && (uint64_t)f.st.st_ino == q->ino)
		goto out; /* the binary itself ("prog" linking to "prog") */
	if ((uint64_t)f.st.st_size > DEBUGINFO_MAX_FILE)
		goto out;
	if (crc && (debuginfo__crc32(f.fd, DEBUGINFO_MAX_FILE, &got) || got != *crc))
		goto out;
	es = elfsym__open_fd(f.fd);
	if (!es)
		goto out;
	/* By build id: it must be that build. By link: a differing build id vetoes. */
	if (crc ? (elfsym__build_id(es, NULL) && elfsym__build_id(q->bin, NULL) &&
		   !same_build_id(es, q->bin))
		: !same_build_id(es, q->bin)) {
		elfsym__free(es);
		es = NULL;
	}
out:
	if (es && q->fd_out)
		*q->fd_out = f.fd;
	else
		close(f.fd);
	return es;
}

static void note_found(const struct debuginfo_query *q, char *found, size_t size, int root,
		       const char *path)
{
	if (q->root_out)
		*q->root_out = root;
	if (q->path_out)
		snprintf(q->path_out, PATH_MAX, "%s", path);
	if (found && size)
		snprintf(found, size, "%s%s", root ? "" : "(process root) ", path);
}

struct elfsym *debuginfo__find(const struct debuginfo_query *q, char *found, size_t found_size)
{
	const char *dd = q->debug_dir ? q->debug_dir : "/usr/lib/debug";
	char path[PATH_MAX], dir[PATH_MAX], hex[2 * BUILD_ID_MAX + 2];
	const uint8_t *id;
	const char *link, *slash;
	struct elfsym *es;
	size_t id_len;
	uint32_t crc;

	if (q->fd_out)
		*q->fd_out = -1;
	if (q->root_out)
		*q->root_out = -1;
	id = elfsym__build_id(q->bin, &id_len);
	if (id && id_len >= 2) {
		elfnote__build_id_hex(id, id_len, hex, sizeof(hex));
		snprintf(path, sizeof(path), "%s/.build-id/%s.debug", dd, hex);
		for (int r = 0; r < 2; r++) {
			es = try_file(q, &q->roots[r], path, NULL);
			if (es) {
				note_found(q, found, found_size, r, path);
				return es;
			}
		}
	}
	link = elfsym__debuglink(q->bin, &crc);
	slash = q->path ? strrchr(q->path, '/') : NULL;
	if (link && slash && (size_t)(slash - q->path) < sizeof(dir)) {
		/* DIR without its trailing slash; "" for a file in "/". */
		memcpy(dir, q->path, (size_t)(slash - q->path));
		dir[slash - q->path] = '\0';
		for (int r = 0; r < 2; r++) {
			const char *const fmts[] = { "%s/%s", "%s/.debug/%s", "%s%s/%s" };

			for (int k = 0; k < 3; k++) {
				int n;

				/* Beside the binary only means something in its own root. */
				if (r == 1 && k < 2)
					continue;
				if (k < 2)
					n = snprintf(path, sizeof(path), fmts[k], dir, link);
				else
					n = snprintf(path, sizeof(path), fmts[k], dd, dir, link);
				if (n < 0 || (size_t)n >= sizeof(path))
					continue;
				es = try_file(q, &q->roots[r], path, &crc);
				if (es) {
					note_found(q, found, found_size, r, path);
					return es;
				}
			}
		}
	}
	errno = ENOENT;
	return NULL;
}

struct elfsym *debuginfo__from_fd(const struct elfsym *bin, int fd)
{
	struct elfsym *es = elfsym__open_fd(fd);

	if (es && !same_build_id(es, bin)) {
		elfsym__free(es);
		errno = EINVAL;
		return NULL;
	}
	return es;
}

size_t debuginfo__fetchable(Elf *elf, uint8_t id[BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	size_t n = 0;
	GElf_Shdr sh;

	/* Section headers are bounded by the file (libelf checks their count). */
	while ((scn = elf_nextscn(elf, scn)) && n++ < 65536)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 0;
	return elffile__build_id(elf, id);
}

bool debuginfo__local(const char *debug_dir, const uint8_t *id, size_t len)
{
	char path[PATH_MAX], hex[2 * BUILD_ID_MAX + 2];
	struct stat st;

	if (len < 2)
		return false;
	elfnote__build_id_hex(id, len, hex, sizeof(hex));
	snprintf(path, sizeof(path), "%s/.build-id/%s.debug",
		 debug_dir ? debug_dir : "/usr/lib/debug", hex);
	return !fstatat(AT_FDCWD, path, &st, 0);
}
