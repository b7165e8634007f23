// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* korc_cache.c - the reshaped kernel ORC table on disk, per kernel build; see korc_cache.h. */
#include "unwind/korc_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define MAGIC	      "bpfprof korc\n\0\0\0"
#define BUILD_ID_SIZE 136 /* BUILDID_HEX_MAX, 8-byte aligned */
#define NO_TRAMP      INT64_MIN

/* The file: this header, then ents[nents], uniq[nuniq], blocks[nblocks]. */
struct hdr {
	char magic[16];
	uint32_t version, hdr_size;
	char build_id[BUILD_ID_SIZE]; /* hex, NUL-terminated */
	/* Relative to _stext when the table was built. */
	int64_t base, end, orc_ip_start, orc_start, tramp[3];
	uint32_t nr_orc, nents, nuniq, nblocks;
	uint64_t checksum; /* of the header (this field 0) and the payload, 8-byte words */
};
_Static_assert(sizeof(struct hdr) % 8 == 0, "payload 8-byte aligned");

/* Over the payload's 8-byte words, in order; fed part by part. */
static uint64_t checksum_add(uint64_t h, const void *p, size_t len)
{
	uint64_t w;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, (const uint8_t *)p + i, 8);
		h = bp_hash_step(h, w);
	}
	return h;
}

/* Over the header (its checksum field zero) and the payload. */
static uint64_t checksum_of(const struct hdr *hdr, const struct korc *k, size_t len)
{
	struct hdr z = *hdr;
	uint64_t h = BP_SEED_KEY ^ len;

	z.checksum = 0;
	h = checksum_add(h, &z, sizeof(z));
	h = checksum_add(h, k->ents, (size_t)k->nents * sizeof(*k->ents));
	h = checksum_add(h, k->uniq, (size_t)k->nuniq * sizeof(*k->uniq));
	h = checksum_add(h, k->blocks, (size_t)k->nblocks * sizeof(*k->blocks));
	return bp_hash_end(h);
}

static size_t payload_size(uint32_t nents, uint32_t nuniq, uint32_t nblocks)
{
	return (size_t)nents * sizeof(struct bp_korc_ent) + (size_t)nuniq * sizeof(uint64_t) +
	       (size_t)nblocks * sizeof(struct bp_korc_block);
}

/* Nobody but root (or us) may have written it. */
static bool owned_safely(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int korc_cache__path(const char *build_id, char *path, size_t size)
{
	const char *dir = getenv("BPFPROF_CACHE_DIR");
	struct stat st;

	path[0] = '\0';
	if (!dir)
		dir = KORC_CACHE_DIR;
	if (!*dir || !build_id || !*build_id ||
	    strspn(build_id, "0123456789abcdef") != strlen(build_id))
		return -ENOENT;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || !owned_safely(&st))
		return -EPERM;
	if ((size_t)snprintf(path, size, "%s/korc-%s.bin", dir, build_id) >= size) {
		path[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

static int64_t rel(uint64_t addr, uint64_t stext)
{
	return addr ? (int64_t)(addr - stext) : NO_TRAMP;
}

static int write_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

int korc_cache__save(const char *path, const char *build_id, const struct korc *k,
		     const struct korc_meta *m)
{
	struct hdr h = { .version = KORC_CACHE_VERSION, .hdr_size = sizeof(h) };
	char tmp[PATH_MAX];
	int fd, err;

	if (strlen(build_id) >= sizeof(h.build_id) || !k->nents || !k->nuniq || !k->nblocks)
		return -EINVAL;
	memcpy(h.magic, MAGIC, sizeof(h.magic));
	strcpy(h.build_id, build_id);
	h.base = (int64_t)(k->base - m->stext);
	h.end = (int64_t)(k->end - m->stext);
	h.orc_ip_start = (int64_t)(m->orc_ip_start - m->stext);
	h.orc_start = (int64_t)(m->orc_start - m->stext);
	for (int i = 0; i < 3; i++)
		h.tramp[i] = rel(m->tramp[i], m->stext);
	h.nr_orc = m->nr_orc;
	h.nents = k->nents;
	h.nuniq = k->nuniq;
	h.nblocks = k->nblocks;
	h.checksum = checksum_of(&h, k, payload_size(k->nents, k->nuniq, k->nblocks));

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fchmod(fd, 0600) ? -errno : 0;
	if (!err)
		err = write_all(fd, &h, sizeof(h));
	if (!err)
		err = write_all(fd, k->ents, (size_t)k->nents * sizeof(*k->ents));
	if (!err)
		err = write_all(fd, k->uniq, (size_t)k->nuniq * sizeof(*k->uniq));
	if (!err)
		err = write_all(fd, k->blocks, (size_t)k->nblocks * sizeof(*k->blocks));
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Sorted entries, indexes in range, blocks inside the entries. */
static bool well_formed(const struct korc *k)
{
	uint64_t span = k->end - k->base;

	for (uint32_t i = 0; i < k->nents; i++) {
		if (k->ents[i].uniq >= k->nuniq || k->ents[i].ip >= span)
			return false;
		if (i && k->ents[i].ip <= k->ents[i - 1].ip)
			return false;
	}
	for (uint32_t b = 0; b < k->nblocks; b++) {
		const struct bp_korc_block *bl = &k->blocks[b];

		if (bl->first >= k->nents || bl->count > k->nents - bl->first)
			return false;
	}
	return true;
}

/* The header's promises, checked against the file's length: the payload's size or -errno. */
static ssize_t check_hdr(const struct hdr *h, size_t file_len, const char *build_id)
{
	uint64_t span;
	size_t plen;

	if (file_len < sizeof(*h) || memcmp(h->magic, MAGIC, sizeof(h->magic)))
		return -EINVAL;
	if (h->version != KORC_CACHE_VERSION || h->hdr_size != sizeof(*h))
		return -ESTALE;
	if (!memchr(h->build_id, '\0', sizeof(h->build_id)) || strcmp(h->build_id, build_id))
		return -ESTALE;
	if (!h->nents || h->nents > (8u << 20) || !h->nuniq || h->nuniq > h->nents || !h->nblocks ||
	    h->nblocks > (1u << 20) || h->nr_orc < h->nents)
		return -EINVAL;
	/* base: _stext rounded down to a block; end after it, within 4 GiB. */
	if (h->base > 0 || h->base <= -(1 << KORC_BLOCK_SHIFT) || h->end <= 0 ||
	    h->end > (int64_t)UINT32_MAX)
		return -EINVAL;
	span = (uint64_t)(h->end - h->base);
	if (h->nblocks != (span + (1u << KORC_BLOCK_SHIFT) - 1) >> KORC_BLOCK_SHIFT)
		return -EINVAL;
	plen = payload_size(h->nents, h->nuniq, h->nblocks);
	return file_len - sizeof(*h) == plen ? (ssize_t)plen : -EINVAL;
}

/* Reads len bytes at payload offset off into dst: from memory or from a file. */
struct source {
	const uint8_t *buf; /* NULL: fd */
	int fd;
};

static int source_read(const struct source *src, void *dst, size_t len, size_t off)
{
	ssize_t n;

	off += sizeof(struct hdr);
	if (src->buf) {
		memcpy(dst, src->buf + off, len);
		return 0;
	}
	n = pread(src->fd, dst, len, (off_t)off);
	return n < 0 ? -errno : (size_t)n == len ? 0 : -EINVAL;
}

/* The payload straight into k's arrays, checked; m rebased to stext. */
static int read_table(const struct source *src, const struct hdr *h, size_t plen, uint64_t stext,
		      struct korc *k, struct korc_meta *m)
{
	size_t ents = (size_t)h->nents * sizeof(*k->ents), uniq = (size_t)h->nuniq * 8;
	int err;

	k->base = stext + (uint64_t)h->base;
	k->end = stext + (uint64_t)h->end;
	k->nents = h->nents;
	k->nuniq = h->nuniq;
	k->nblocks = h->nblocks;
	k->ents = malloc(ents);
	k->uniq = malloc(uniq);
	k->blocks = malloc((size_t)h->nblocks * sizeof(*k->blocks));
	if (!k->ents || !k->uniq || !k->blocks) {
		korc__free(k);
		return -ENOMEM;
	}
	err = source_read(src, k->ents, ents, 0);
	if (!err)
		err = source_read(src, k->uniq, uniq, ents);
	if (!err)
		err = source_read(src, k->blocks, (size_t)h->nblocks * sizeof(*k->blocks),
				  ents + uniq);
	if (!err && (checksum_of(h, k, plen) != h->checksum || !well_formed(k)))
		err = -EINVAL;
	if (err) {
		korc__free(k);
		return err;
	}
	m->stext = stext;
	m->orc_ip_start = stext + (uint64_t)h->orc_ip_start;
	m->orc_start = stext + (uint64_t)h->orc_start;
	m->nr_orc = h->nr_orc;
	for (int i = 0; i < 3; i++)
		m->tramp[i] = h->tramp[i] == NO_TRAMP ? 0 : stext + (uint64_t)h->tramp[i];
	return 0;
}

int korc_cache__parse(const uint8_t *buf, size_t len, const char *build_id, uint64_t stext,
		      struct korc *k, struct korc_meta *m)
{
	struct source src = { .buf = buf };
	struct hdr h;
	ssize_t plen;

	memset(k, 0, sizeof(*k));
	memset(m, 0, sizeof(*m));
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	plen = check_hdr(&h, len, build_id);
	return plen < 0 ? (int)plen : read_table(&src, &h, (size_t)plen, stext, k, m);
}

int korc_cache__load(const char *path, const char *build_id, uint64_t stext, struct korc *k,
		     struct korc_meta *m)
{
	struct source src;
	struct stat st;
	struct hdr h;
	ssize_t plen;
	int err;

	memset(k, 0, sizeof(*k));
	memset(m, 0, sizeof(*m));
	src.buf = NULL;
	src.fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (src.fd < 0)
		return -errno;
	if (fstat(src.fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode) || !owned_safely(&st) || st.st_size <= 0 ||
		 (uint64_t)st.st_size > KORC_CACHE_MAX)
		err = -EPERM;
	else if (pread(src.fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		err = -EINVAL;
	else if ((plen = check_hdr(&h, (size_t)st.st_size, build_id)) < 0)
		err = (int)plen;
	else
		err = read_table(&src, &h, (size_t)plen, stext, k, m);
	close(src.fd);
	return err;
}
