// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_hotspot_interp.c - interpreted Java frames named by their Method*
 * (issue 42): hotspot__method() on an image in OpenJDK 17's layout
 * (tests/workloads/fakejvm.h): "package.Class.method", kept per Method*
 * with what it was read from and read again at every lookup (a Method*
 * freed with its class and reused by another method is named anew, never
 * the old name); no name for what is not a method. Then the frame kind
 * through the formats: folded "_[0]" written and read back, pprof's
 * mapping, speedscope's suffix.
 */
#include "outfixture.h"

#include "format/reader.h"
#include "lang/hotspot.h"
#include "../workloads/fakejvm.h"

#define BASE 0x7f1200000000ull

struct img {
	uint8_t *m;
	uint64_t reads;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *i = ctx;

	i->reads++;
	if (addr < BASE || addr - BASE > FJ_SIZE || len > FJ_SIZE - (addr - BASE))
		return -EFAULT;
	memcpy(buf, i->m + (addr - BASE), len);
	return 0;
}

static void setup(struct hotspot_proc *hp, struct img *i)
{
	uint64_t var[HSV_NR];

	i->m = malloc(FJ_SIZE);
	assert_non_null(i->m);
	i->reads = 0;
	fj_build(i->m, BASE, var, NULL);
	memset(hp, 0, sizeof(*hp));
	assert_int_equal(hotspot__read_tables(img_read, i, var, &hp->h.vm), 0);
	hp->h.read = img_read;
	hp->h.ctx = i;
	hp->h.max_bytes = HS_MAX_LOOKUP;
}

static void test_method_named_and_kept(void **state)
{
	struct hotspot_proc hp;
	struct img i;
	const char *n1;
	uint64_t reads, r1;

	(void)state;
	setup(&hp, &i);
	reads = i.reads;
	n1 = hotspot__method(&hp, BASE + FJ_METHOD_AT);
	assert_non_null(n1);
	assert_string_equal(n1, "com.example.Fake.work");
	r1 = i.reads - reads;
	assert_string_equal(hotspot__method(&hp, BASE + FJ_METHOD2_AT), "com.example.Fake.inl");
	/* Kept: the identity read again, not the Symbols' text. */
	reads = i.reads;
	assert_ptr_equal(hotspot__method(&hp, BASE + FJ_METHOD_AT), n1);
	assert_true(i.reads - reads < r1);
	hotspot__proc_free(&hp);
	free(i.m);
}

/* A Method* freed with its class and another method made at its place. */
static void test_method_reused(void **state)
{
	struct hotspot_proc hp;
	struct img i;
	const char *n1, *n2;

	(void)state;
	setup(&hp, &i);
	n1 = hotspot__method(&hp, BASE + FJ_METHOD_AT);
	assert_string_equal(n1, "com.example.Fake.work");
	/* Another ConstMethod (name #6, "other") at the same Method*. */
	memcpy(i.m + FJ_CMETHOD_AT + 0x80, i.m + FJ_CMETHOD_AT, 0x40);
	fj_w16(i.m, FJ_CMETHOD_AT + 0x80 + 34, 6);
	fj_w64(i.m, FJ_CPOOL_AT + 72 + 6 * 8, BASE + FJ_MSYM_AT + 0x40);
	fj_w16(i.m, FJ_MSYM_AT + 0x40 + 4, 5);
	memcpy(i.m + FJ_MSYM_AT + 0x40 + 6, "other", 5);
	fj_w64(i.m, FJ_METHOD_AT + 8, BASE + FJ_CMETHOD_AT + 0x80);
	n2 = hotspot__method(&hp, BASE + FJ_METHOD_AT);
	assert_non_null(n2);
	assert_string_equal(n2, "com.example.Fake.other");
	assert_string_equal(n1, "com.example.Fake.work"); /* still valid */
	/* The same ConstMethod, its class's name Symbol elsewhere (another
	 * class at the same place): named anew too. */
	memcpy(i.m + FJ_KSYM_AT + 0x40, i.m + FJ_KSYM_AT, 0x30);
	memcpy(i.m + FJ_KSYM_AT + 0x40 + 6, "com/example/Gake", 16);
	fj_w64(i.m, FJ_KLASS_AT + 24, BASE + FJ_KSYM_AT + 0x40);
	assert_string_equal(hotspot__method(&hp, BASE + FJ_METHOD_AT), "com.example.Gake.other");
	/* Freed and not a method now: no name (the caller says Interpreter). */
	fj_w64(i.m, FJ_METHOD_AT + 8, 0);
	assert_null(hotspot__method(&hp, BASE + FJ_METHOD_AT));
	hotspot__proc_free(&hp);
	free(i.m);
}

/* What is no method: no name, bounded. */
static void test_method_not_a_method(void **state)
{
	struct hotspot_proc hp;
	struct img i;

	(void)state;
	setup(&hp, &i);
	assert_null(hotspot__method(&hp, 0));
	assert_null(hotspot__method(&hp, BASE + FJ_METHOD_AT + 4)); /* unaligned */
	assert_null(hotspot__method(&hp, BASE - 0x1000));	    /* unreadable */
	assert_null(hotspot__method(&hp, BASE + FJ_STRINGS));	    /* text */
	/* A name index past the pool's length. */
	fj_w16(i.m, FJ_CMETHOD2_AT + 34, 16);
	assert_null(hotspot__method(&hp, BASE + FJ_METHOD2_AT));
	/* A Symbol with a NUL in it. */
	fj_w16(i.m, FJ_CMETHOD2_AT + 34, 7);
	i.m[FJ_MSYM2_AT + 7] = '\0';
	assert_null(hotspot__method(&hp, BASE + FJ_METHOD2_AT));
	/* Still named: the good one. */
	assert_string_equal(hotspot__method(&hp, BASE + FJ_METHOD_AT), "com.example.Fake.work");
	hotspot__proc_free(&hp);
	free(i.m);
}

/* --- the frame kind through the formats --------------------------------------- */

static struct profile *interp_profile(void)
{
	struct profile *p = profile__new();

	assert_non_null(p);
	FX(p, "java", 7, 7, 5, { FRAME_USER, "JavaMain", "/usr/lib/jvm/libjli.so" },
	   { FRAME_JIT, "StubRoutines (1)", NULL }, { FRAME_JAVA_INTERP, "JavaHot.main", NULL },
	   { FRAME_JIT, "JavaHot.alpha", NULL });
	FX(p, "java", 7, 7, 2, { FRAME_USER, "JavaMain", "/usr/lib/jvm/libjli.so" },
	   { FRAME_JIT, "Interpreter", NULL });
	return p;
}

static void test_kind_folded_pprof_speedscope(void **state)
{
	const char *want =
		"java;JavaMain;Interpreter_[j] 2\n"
		"java;JavaMain;StubRoutines (1)_[j];JavaHot.main_[0];JavaHot.alpha_[j] 5\n";
	struct profile *p = interp_profile(), *q;
	struct errmsg err = { 0 };
	size_t kinds[FRAME_KIND_MAX] = { 0 }, zlen;
	char *out, *gz;

	(void)state;
	profile__sort(p);
	out = fx_write(&writer_folded, p, NULL, NULL);
	assert_string_equal(out, want);
	/* Read back: the kind, the suffix gone from the name. */
	q = profile__new();
	assert_int_equal(reader_folded.read((const uint8_t *)out, strlen(out), q, &err), 0);
	for (size_t i = 0; i < profile__nr_frames(q); i++) {
		const struct pframe *f = profile__frame_get(q, (uint32_t)i);

		kinds[f->kind]++;
		if (f->kind == FRAME_JAVA_INTERP)
			assert_string_equal(f->name, "JavaHot.main");
	}
	assert_int_equal(kinds[FRAME_JAVA_INTERP], 1);
	profile__free(q);
	free(out);
	/* pprof: a mapping of their own, read back as the kind. */
	gz = fx_write(&writer_pprof, p, NULL, &zlen);
	q = profile__new();
	assert_int_equal(reader_pprof.read((const uint8_t *)gz, zlen, q, &err), 0);
	profile__sort(q);
	out = fx_write(&writer_folded, q, NULL, NULL);
	assert_string_equal(out, want);
	free(out);
	free(gz);
	profile__free(q);
	/* speedscope: the folded suffix in the frame's name. */
	out = fx_write(&writer_speedscope, p, NULL, NULL);
	assert_non_null(strstr(out, "\"JavaHot.main_[0]\""));
	free(out);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_method_named_and_kept),
		cmocka_unit_test(test_method_reused),
		cmocka_unit_test(test_method_not_a_method),
		cmocka_unit_test(test_kind_folded_pprof_speedscope),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
