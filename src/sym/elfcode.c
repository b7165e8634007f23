// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * elfcode.c - reading code by virtual address through PT_LOAD; see elfcode.h.
 */
#include "sym/elfcode.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/elffile.h"

/* /proc/kcore has one segment per memory region: a few hundred at most. */
#define ELFCODE_MAX_SEGS 65536

struct seg {
	uint64_t vaddr, off, filesz;
	bool writable;
	uint64_t memsz; /* filesz, or more: the rest zero-filled (.bss) */
};

struct elfcode {
	int fd;
	int machine;
	bool is64;
	struct seg *segs;
	size_t nr;
};

struct elfcode *elfcode__open_fd(int fd)
{
	struct elfcode *ec = NULL;
	struct stat st;
	GElf_Ehdr eh;
	size_t phnum;
	Elf *elf;
	int err = EINVAL;

	if (fstat(fd, &st)) {
		errno = EBADF;
		return NULL;
	}
	elf = elffile__begin(fd);
	if (!elf) {
		err = errno;
		goto out;
	}
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) || phnum > ELFCODE_MAX_SEGS)
		goto out;
	ec = calloc(1, sizeof(*ec));
	if (!ec || (phnum && !(ec->segs = calloc(phnum, sizeof(*ec->segs))))) {
		err = ENOMEM;
		goto out;
	}
	ec->fd = fd;
	ec->machine = eh.e_machine;
	ec->is64 = gelf_getclass(elf) == ELFCLASS64;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			goto out;
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > UINT64_MAX - ph.p_filesz || ph.p_vaddr > UINT64_MAX - ph.p_filesz)
			continue;
		/* A segment past the end of the file is a lie (/proc/kcore's size
		 * is the end of its address space, so it passes too). */
		if (S_ISREG(st.st_mode) && ph.p_offset + ph.p_filesz > (uint64_t)st.st_size)
			continue;
		ec->segs[ec->nr++] =
			(struct seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz, !!(ph.p_flags & PF_W),
				      ph.p_memsz > ph.p_filesz &&
						      ph.p_memsz <= UINT64_MAX - ph.p_vaddr
					      ? ph.p_memsz
					      : ph.p_filesz };
	}
	err = 0;
out:
	elffile__end(elf, NULL);
	if (err) {
		elfcode__free(ec);
		errno = err;
		return NULL;
	}
	return ec;
}

void elfcode__free(struct elfcode *ec)
{
	if (!ec)
		return;
	free(ec->segs);
	free(ec);
}

ssize_t elfcode__read(const struct elfcode *ec, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < ec->nr; i++) {
		const struct seg *s = &ec->segs[i];
		uint64_t in, n;
		size_t done = 0;

		if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz)
			continue;
		in = vaddr - s->vaddr;
		n = s->filesz - in < len ? s->filesz - in : len;
		if (s->off + in > INT64_MAX)
			return -EIO;
		while (done < n) {
			ssize_t r = pread(ec->fd, (char *)buf + done, n - done,
					  (off_t)(s->off + in + done));

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return done ? (ssize_t)done : -EIO;
			if (!r)
				break; /* the file ends early */
			done += (size_t)r;
		}
		return (ssize_t)done;
	}
	return -ENOENT;
}

int elfcode__first_zero_fill(const struct elfcode *ec, uint64_t *lo, uint64_t *hi)
{
	for (size_t i = 0; i < ec->nr; i++) {
		const struct seg *s = &ec->segs[i];

		if (s->writable && s->memsz > s->filesz) {
			*lo = s->vaddr + s->filesz;
			*hi = s->vaddr + s->memsz;
			return 0;
		}
	}
	return -ENOENT;
}

int elfcode__machine(const struct elfcode *ec, bool *is64)
{
	if (is64)
		*is64 = ec->is64;
	return ec->machine;
}

int elfcode__first_writable(const struct elfcode *ec, uint64_t *vaddr, uint64_t *filesz)
{
	for (size_t i = 0; i < ec->nr; i++) {
		if (ec->segs[i].writable) {
			*vaddr = ec->segs[i].vaddr;
			*filesz = ec->segs[i].filesz;
			return 0;
		}
	}
	return -ENOENT;
}
