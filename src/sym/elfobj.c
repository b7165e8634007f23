// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * elfobj.c - a data object's address from .symtab; see elfobj.h.
 */
#include "sym/elfobj.h"

#include <errno.h>
#include <string.h>

#include <gelf.h>

int elfobj__find(Elf *elf, const char *name, uint64_t size, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		if (sh.sh_size > ELFOBJ_MAX_TABLE || !sh.sh_entsize)
			return -ENOENT;
		d = elf_getdata(scn, NULL);
		if (!d)
			return -EINVAL;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &s))
				return -EINVAL;
			if (GELF_ST_TYPE(s.st_info) != STT_OBJECT || s.st_size != size ||
			    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
				continue;
			nm = elf_strptr(elf, sh.sh_link, s.st_name);
			if (nm && !strcmp(nm, name)) {
				*vaddr = s.st_value;
				return 0;
			}
		}
		return -ENOENT;
	}
	return -ENOENT;
}
