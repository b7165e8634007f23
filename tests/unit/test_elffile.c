// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_elffile.c - the load bias of a mapping (proc/elffile.h's
 * elffile__load_bias, which lang/cpython and lang/sbcl use): for this test's
 * own executable mapping, address - bias is the function's vaddr inside an
 * executable PT_LOAD; an offset no segment's file bytes hold is -ENOENT.
 */
#include "testutil.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include "proc/elffile.h"
#include "proc/procmaps.h"

static void test_load_bias(void **state)
{
	uint64_t here = (uint64_t)(uintptr_t)&test_load_bias, bias = 0, vaddr;
	const struct procmap *m;
	struct procmaps pm = { 0 };
	bool inside = false;
	size_t n;
	Elf *elf;
	int fd;

	(void)state;
	assert_int_equal(procmaps__read("/proc/self/maps", &pm), 0);
	m = procmaps__find(&pm, here);
	assert_non_null(m);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elffile__begin(fd);
	assert_non_null(elf);
	assert_int_equal(elffile__load_bias(elf, m->start, m->offset, &bias), 0);
	vaddr = here - bias;
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			inside = true;
	}
	assert_true(inside);
	/* Past the file: no segment holds it. */
	assert_int_equal(elffile__load_bias(elf, m->start, UINT64_C(1) << 40, &bias), -ENOENT);
	elffile__end(elf, NULL);
	close(fd);
	procmaps__free(&pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_bias),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
