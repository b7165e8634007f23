// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* elffile.c - libelf handles and build ids; see elffile.h. */
#include "proc/elffile.h"

#include "base/budget.h"

#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

Elf *elffile__begin(int fd)
{
	struct stat st;
	Elf *elf;

	pthread_once(&elf_once, elf_init);
	if (!elf_ok) {
		errno = ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		errno = EINVAL;
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	return elf;
}

Elf *elffile__begin_mem(const void *image, size_t size, void **copy)
{
	Elf *elf;
	char *c;

	*copy = NULL;
	pthread_once(&elf_once, elf_init);
	if (!elf_ok) {
		errno = ENOSYS;
		return NULL;
	}
	c = malloc(size ? size : 1);
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (size)
		memcpy(c, image, size);
	elf = elf_memory(c, size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		free(c);
		errno = elf ? ENOEXEC : EINVAL;
		return NULL;
	}
	*copy = c;
	return elf;
}

Elf *elffile__adopt_mem(void *image, size_t size)
{
	Elf *elf;

	pthread_once(&elf_once, elf_init);
	if (!elf_ok) {
		errno = ENOSYS;
		return NULL;
	}
	elf = elf_memory(image, size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		errno = elf ? ENOEXEC : EINVAL;
		return NULL;
	}
	return elf;
}

void elffile__end(Elf *elf, void *copy)
{
	if (elf)
		elf_end(elf);
	free(copy);
}

/* A block of notes whose headers libelf converted to host order (ELF_T_NHDR*). */
static size_t notes_build_id(Elf_Data *d, uint8_t id[BUILD_ID_MAX])
{
	if (!d || !d->d_buf || (d->d_type != ELF_T_NHDR && d->d_type != ELF_T_NHDR8))
		return 0;
	return elfnote__build_id(d->d_buf, d->d_size, d->d_type == ELF_T_NHDR8 ? 8 : 4, id);
}

size_t elffile__build_id(Elf *elf, uint8_t id[BUILD_ID_MAX])
{
	uint64_t budget = ELFFILE_MAX_NOTES;
	Elf_Scn *scn = NULL;
	size_t n, len;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    (sh.sh_flags & SHF_COMPRESSED) || !sh.sh_size || sh.sh_size > budget)
			continue;
		budget -= sh.sh_size;
		len = notes_build_id(elf_getdata(scn, NULL), id);
		if (len)
			return len;
	}
	if (elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n && i < 65535; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE || !ph.p_filesz ||
		    ph.p_filesz > budget || ph.p_offset > INT64_MAX)
			continue;
		budget -= ph.p_filesz;
		len = notes_build_id(
			elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					     ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR),
			id);
		if (len)
			return len;
	}
	return 0;
}

int elffile__load_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (offset >= ph.p_offset && offset - ph.p_offset < ph.p_filesz) {
			*bias = start - (offset - ph.p_offset + ph.p_vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/* One table of type `type`: the names not found yet; -ETIMEDOUT/-ECANCELED over b. */
static int find_in(Elf *elf, Elf64_Word type, const char *const *names, int n, unsigned flags,
		   size_t *left, struct budget *b, const uint8_t first[32], int *n_found,
		   bool *found, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;

	while (*n_found < n && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		if (cnt > *left || !(d = elf_getdata(scn, NULL)))
			continue;
		*left -= cnt;
		for (size_t i = 0; i < cnt && *n_found < n; i++) {
			GElf_Sym sym;
			const char *name;
			uint8_t c;

			if (b && budget__over(b))
				return budget__err(b);
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value ||
			    ((flags & ELFFILE_OBJECTS) && GELF_ST_TYPE(sym.st_info) != STT_OBJECT))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			c = (uint8_t)name[0];
			if (!(first[c >> 3] & (1u << (c & 7))))
				continue; /* no wanted name starts so: most symbols */
			for (int k = 0; k < n; k++) {
				if (!found[k] && !strcmp(name, names[k])) {
					found[k] = true;
					value[k] = sym.st_value;
					if (size)
						size[k] = sym.st_size;
					(*n_found)++;
					break;
				}
			}
		}
	}
	return 0;
}

int elffile__find_syms(Elf *elf, const char *const *names, int n, unsigned flags, size_t max_syms,
		       struct budget *b, bool *found, uint64_t *value, uint64_t *size)
{
	uint8_t first[32] = { 0 };
	size_t left = max_syms;
	int n_found = 0, err;

	for (int k = 0; k < n; k++) {
		uint8_t c = (uint8_t)names[k][0];

		first[c >> 3] |= (uint8_t)(1u << (c & 7));
		found[k] = false;
	}
	err = find_in(elf, SHT_DYNSYM, names, n, flags, &left, b, first, &n_found, found, value,
		      size);
	if (!err && (flags & ELFFILE_SYMTAB))
		err = find_in(elf, SHT_SYMTAB, names, n, flags, &left, b, first, &n_found, found,
			      value, size);
	return err ? err : n_found;
}
