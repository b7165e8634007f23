// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_kbuildid.c - the kernel's build id: found among other notes, malformed
 * notes rejected without reading past the end, the running kernel's is hex.
 */
#include "testutil.h"

#include "sym/kbuildid.h"

static void note(uint8_t *buf, size_t *len, uint32_t namesz, uint32_t descsz, uint32_t type,
		 const char *name, const uint8_t *desc)
{
	memcpy(buf + *len, &namesz, 4);
	memcpy(buf + *len + 4, &descsz, 4);
	memcpy(buf + *len + 8, &type, 4);
	*len += 12;
	memcpy(buf + *len, name, namesz);
	*len += (namesz + 3) & ~3u;
	memcpy(buf + *len, desc, descsz);
	*len += (descsz + 3) & ~3u;
}

static void test_notes(void **state)
{
	static const uint8_t id[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
	uint8_t buf[256] = { 0 }, big[80] = { 0 };
	char hex[BUILDID_HEX_MAX];
	size_t len = 0;

	/* Another note first, then the build id. */
	note(buf, &len, 6, 4, 1, "Linux", id);
	note(buf, &len, 4, sizeof(id), 3, "GNU", id);
	assert_int_equal(buildid__from_notes(buf, len, hex), 0);
	assert_string_equal(hex, "deadbeef01");
	/* Cut inside the descriptor: malformed, not read past the end. */
	assert_int_equal(buildid__from_notes(buf, len - 4, hex), -ENOENT);
	/* No build id note at all. */
	assert_int_equal(buildid__from_notes(buf, 24, hex), -ENOENT);
	assert_int_equal(buildid__from_notes(buf, 5, hex), -ENOENT);
	/* Sizes that would overflow 32-bit arithmetic. */
	len = 0;
	note(buf, &len, 4, 0, 3, "GNU", id);
	memcpy(buf + 4, &(uint32_t){ 0xfffffffc }, 4);
	assert_int_equal(buildid__from_notes(buf, len, hex), -ENOENT);
	memcpy(buf, &(uint32_t){ 0xfffffffe }, 4);
	assert_int_equal(buildid__from_notes(buf, len, hex), -ENOENT);
	/* Empty and over-long ids. */
	len = 0;
	note(buf, &len, 4, 0, 3, "GNU", id);
	assert_int_equal(buildid__from_notes(buf, len, hex), -ENOENT);
	len = 0;
	note(buf, &len, 4, sizeof(big) - 12, 3, "GNU", big);
	assert_int_equal(buildid__from_notes(buf, len, hex), -ENOENT);
}

static void test_kernel(void **state)
{
	char hex[BUILDID_HEX_MAX];
	int err = buildid__kernel(hex);

	/* Readable by everyone on the kernels we support; in odd containers it may be absent. */
	if (err) {
		assert_true(err == -ENOENT || err == -EACCES);
		return;
	}
	assert_true(strlen(hex) >= 2 && strspn(hex, "0123456789abcdef") == strlen(hex));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
