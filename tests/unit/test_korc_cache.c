// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* test_korc_cache.c - the kernel ORC table on disk: a round trip rebased to
 * another _stext (KASLR), and every way a file is refused: another build,
 * a flipped byte, a short or long file, a broken table, unsafe ownership. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/korc_cache.h"

#define STEXT 0xffffffff81000000ull
#define ETEXT 0xffffffff81003800ull
#define IPTAB 0xffffffff83000000ull
#define SHIFT 0x2a00000ull /* another boot's KASLR slide */
#define BID   "7bdad2f33eb864144f7545c504378f3db829fd87"

static void make(struct korc *k, struct korc_meta *m)
{
	static const uint64_t ips[] = { STEXT,		STEXT + 0x10,	STEXT + 0x200,
					STEXT + 0x1008, STEXT + 0x2ff0, STEXT + 0x3000,
					STEXT + 0x37ff };
	enum { N = sizeof(ips) / sizeof(ips[0]) };
	int32_t rel[N];
	uint8_t orc[6 * N];

	for (uint32_t i = 0; i < N; i++) {
		uint64_t raw = (uint64_t)(i + 1) | ((uint64_t)KORC_TYPE_CALL << 40);

		rel[i] = (int32_t)(ips[i] - (IPTAB + 4ull * i));
		for (int b = 0; b < 6; b++)
			orc[6 * i + b] = (uint8_t)(raw >> (8 * b));
	}
	assert_int_equal(korc__build(rel, orc, N, IPTAB, STEXT, ETEXT, k), 0);
	*m = (struct korc_meta){ .stext = STEXT,
				 .orc_ip_start = IPTAB,
				 .orc_start = IPTAB + 0x1000,
				 .nr_orc = N,
				 .tramp = { STEXT + 0x100, 0, STEXT + 0x300 } };
}

static char *dir_path(void)
{
	static char dir[] = "/tmp/bpfprof-korc-XXXXXX";
	static bool made;

	if (!made)
		assert_non_null(mkdtemp(dir));
	made = true;
	return dir;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	char *buf;

	assert_int_equal(read_file(path, 1 << 24, &buf, len), 0);
	return (uint8_t *)buf;
}

static void test_round_trip_rebased(void **state)
{
	struct korc k, back;
	struct korc_meta m, mb;
	char path[4096];

	(void)state;
	setenv("BPFPROF_CACHE_DIR", dir_path(), 1);
	make(&k, &m);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), 0);
	assert_non_null(strstr(path, "korc-" BID ".bin"));
	assert_int_equal(korc_cache__save(path, BID, &k, &m), 0);
	/* Another boot: the kernel moved as a whole. */
	assert_int_equal(korc_cache__load(path, BID, STEXT + SHIFT, &back, &mb), 0);
	assert_int_equal(back.base, k.base + SHIFT);
	assert_int_equal(back.end, k.end + SHIFT);
	assert_int_equal(back.nents, k.nents);
	assert_int_equal(back.nuniq, k.nuniq);
	assert_int_equal(back.nblocks, k.nblocks);
	assert_memory_equal(back.ents, k.ents, k.nents * sizeof(*k.ents));
	assert_memory_equal(back.uniq, k.uniq, k.nuniq * sizeof(*k.uniq));
	assert_memory_equal(back.blocks, k.blocks, k.nblocks * sizeof(*k.blocks));
	assert_int_equal(mb.stext, STEXT + SHIFT);
	assert_int_equal(mb.orc_ip_start, IPTAB + SHIFT);
	assert_int_equal(mb.orc_start, IPTAB + 0x1000 + SHIFT);
	assert_int_equal(mb.nr_orc, m.nr_orc);
	assert_int_equal(mb.tramp[0], STEXT + 0x100 + SHIFT);
	assert_int_equal(mb.tramp[1], 0);
	assert_int_equal(mb.tramp[2], STEXT + 0x300 + SHIFT);
	for (uint64_t pc = STEXT; pc < ETEXT; pc += 7) {
		uint64_t a = 0, b = 0;
		int ea = korc__lookup(&k, pc, &a), eb = korc__lookup(&back, pc + SHIFT, &b);

		assert_int_equal(ea, eb);
		assert_true(a == b);
	}
	korc__free(&back);
	/* Another kernel build: stale. No file: -ENOENT. */
	assert_int_equal(korc_cache__load(path, "00" BID, STEXT, &back, &mb), -ESTALE);
	assert_int_equal(korc_cache__load("/nonexistent/korc.bin", BID, STEXT, &back, &mb),
			 -ENOENT);
	korc__free(&k);
}

/* Every byte flipped (the checksum covers the header too), the file cut or
 * grown: refused, never a crash. */
static void test_tampered_images_refused(void **state)
{
	struct korc k, back;
	struct korc_meta m, mb;
	char path[4096];
	uint8_t *img;
	size_t len;

	(void)state;
	setenv("BPFPROF_CACHE_DIR", dir_path(), 1);
	make(&k, &m);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), 0);
	assert_int_equal(korc_cache__save(path, BID, &k, &m), 0);
	img = slurp(path, &len);
	assert_int_equal(korc_cache__parse(img, len, BID, STEXT, &back, &mb), 0);
	korc__free(&back);
	for (size_t i = 0; i < len; i++) {
		int err;

		img[i] ^= 0x41;
		err = korc_cache__parse(img, len, BID, STEXT, &back, &mb);
		img[i] ^= 0x41;
		if (err != -EINVAL && err != -ESTALE)
			fail_msg("byte %zu flipped: %d", i, err);
		assert_null(back.ents);
	}
	assert_int_equal(korc_cache__parse(img, len - 8, BID, STEXT, &back, &mb), -EINVAL);
	assert_int_equal(korc_cache__parse(img, 10, BID, STEXT, &back, &mb), -EINVAL);
	img = realloc(img, len + 8);
	memset(img + len, 0, 8);
	assert_int_equal(korc_cache__parse(img, len + 8, BID, STEXT, &back, &mb), -EINVAL);
	free(img);
	korc__free(&k);
}

/* A checksum that matches a broken table (entries out of order, an index
 * past uniq): the structure is checked too. */
static void test_broken_table_refused(void **state)
{
	struct korc k, back;
	struct korc_meta m, mb;
	char path[4096];

	(void)state;
	setenv("BPFPROF_CACHE_DIR", dir_path(), 1);
	make(&k, &m);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), 0);
	k.ents[2].ip = k.ents[1].ip; /* not strictly increasing */
	assert_int_equal(korc_cache__save(path, BID, &k, &m), 0);
	assert_int_equal(korc_cache__load(path, BID, STEXT, &back, &mb), -EINVAL);
	k.ents[2].ip = k.ents[1].ip + 1;
	k.ents[3].uniq = k.nuniq; /* past the raw entries */
	assert_int_equal(korc_cache__save(path, BID, &k, &m), 0);
	assert_int_equal(korc_cache__load(path, BID, STEXT, &back, &mb), -EINVAL);
	korc__free(&k);
}

/* Files and directories others may write are never read. */
static void test_ownership_rules(void **state)
{
	struct korc k, back;
	struct korc_meta m, mb;
	char path[4096], link[4200];
	const char *dir = dir_path();

	(void)state;
	setenv("BPFPROF_CACHE_DIR", dir, 1);
	make(&k, &m);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), 0);
	assert_int_equal(korc_cache__save(path, BID, &k, &m), 0);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(korc_cache__load(path, BID, STEXT, &back, &mb), -EPERM);
	assert_int_equal(chmod(path, 0600), 0);
	snprintf(link, sizeof(link), "%s/link.bin", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(korc_cache__load(link, BID, STEXT, &back, &mb), -ELOOP);
	unlink(link);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), -EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
	/* Caching off, or a build id that is not hex: no path. */
	setenv("BPFPROF_CACHE_DIR", "", 1);
	assert_int_equal(korc_cache__path(BID, path, sizeof(path)), -ENOENT);
	setenv("BPFPROF_CACHE_DIR", dir, 1);
	assert_int_equal(korc_cache__path("../x", path, sizeof(path)), -ENOENT);
	korc__free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_rebased),
		cmocka_unit_test(test_tampered_images_refused),
		cmocka_unit_test(test_broken_table_refused),
		cmocka_unit_test(test_ownership_rules),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir_path());
	if (system(cmd))
		rc = rc ? rc : 1;
	return rc;
}
