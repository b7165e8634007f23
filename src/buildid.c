// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * buildid.c - GNU build ids of ELF files and of the kernel; see buildid.h.
 *
 * Deliberately independent of sym/elfsym (which reads the build id along
 * with all symbols): record.c asks for build ids of the modules that ended
 * up in a profile, at exit, and reading only the ELF header, the program
 * headers and the PT_NOTE segments costs a few small reads per file.
 */
#include "buildid.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define NOTES_MAX (64 * 1024) /* bytes of one PT_NOTE segment we look at */
#define PHDRS_MAX 512

static void to_hex(const uint8_t *id, size_t len, char hex[BUILDID_HEX_MAX])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * len] = '\0';
}

int buildid__from_notes(const uint8_t *buf, size_t len, char hex[BUILDID_HEX_MAX])
{
	size_t off = 0;

	/* Each note: namesz, descsz, type (32-bit), name and desc padded to 4. */
	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t name_off, desc_off, next;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		name_off = off + 12;
		desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
		next = desc_off + (((uint64_t)descsz + 3) & ~3ull);
		if (desc_off + descsz > len)
			return -EINVAL;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name_off, "GNU", 4)) {
			if (descsz == 0 || descsz > (BUILDID_HEX_MAX - 1) / 2)
				return -EINVAL;
			to_hex(buf + desc_off, descsz, hex);
			return 0;
		}
		if (next >= len)
			break;
		off = (size_t)next;
	}
	return -ENOENT;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EINVAL; /* truncated */
		done += (size_t)n;
	}
	return 0;
}

/* Notes at [off, off + size) of the file. */
static int notes_at(int fd, uint64_t off, uint64_t size, char hex[BUILDID_HEX_MAX])
{
	uint8_t *buf;
	int err;

	if (!size)
		return -ENOENT;
	if (size > NOTES_MAX)
		size = NOTES_MAX;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	err = pread_full(fd, buf, size, off);
	if (!err)
		err = buildid__from_notes(buf, size, hex);
	free(buf);
	return err;
}

int buildid__read_fd(int fd, char hex[BUILDID_HEX_MAX])
{
	unsigned char ident[EI_NIDENT];
	uint64_t phoff;
	unsigned phnum, phentsize;
	bool is64;
	int err;

	err = pread_full(fd, ident, sizeof(ident), 0);
	if (err)
		return err == -EINVAL ? -ENOEXEC : err;
	if (memcmp(ident, ELFMAG, SELFMAG) ||
	    (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64))
		return -ENOEXEC;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
#else
	if (ident[EI_DATA] != ELFDATA2MSB)
		return -ENOEXEC;
#endif
	is64 = ident[EI_CLASS] == ELFCLASS64;
	if (is64) {
		Elf64_Ehdr eh;

		err = pread_full(fd, &eh, sizeof(eh), 0);
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
		if (!err && phentsize != sizeof(Elf64_Phdr))
			err = -EINVAL;
	} else {
		Elf32_Ehdr eh;

		err = pread_full(fd, &eh, sizeof(eh), 0);
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
		if (!err && phentsize != sizeof(Elf32_Phdr))
			err = -EINVAL;
	}
	if (err)
		return err;
	if (phnum > PHDRS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < phnum; i++) {
		uint64_t at = phoff + (uint64_t)i * phentsize, off, size;
		uint32_t type;

		if (at < phoff)
			return -EINVAL;
		if (is64) {
			Elf64_Phdr ph;

			err = pread_full(fd, &ph, sizeof(ph), at);
			type = ph.p_type, off = ph.p_offset, size = ph.p_filesz;
		} else {
			Elf32_Phdr ph;

			err = pread_full(fd, &ph, sizeof(ph), at);
			type = ph.p_type, off = ph.p_offset, size = ph.p_filesz;
		}
		if (err)
			return err;
		if (type != PT_NOTE)
			continue;
		err = notes_at(fd, off, size, hex);
		if (err != -ENOENT && err != -EINVAL)
			return err; /* found (0), or an I/O error */
	}
	return -ENOENT;
}

int buildid__read_path(const char *path, char hex[BUILDID_HEX_MAX])
{
	/* O_NONBLOCK: a FIFO at the path must not block us. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = -ENOEXEC;
	else
		err = buildid__read_fd(fd, hex);
	close(fd);
	return err;
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
