// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_offcpu.c - profiles with off-CPU time (--off-cpu) outside the
 * kernel: the second value in the profile, the views writers of one value
 * get (cpu, off-cpu, wall-clock with "[off-cpu]" leaves), pprof's sample
 * types and their round trip through the reader, the report's two parts,
 * the flame graph's title and units, and the Pyroscope series names.
 */
#include "outfixture.h"

#include <errno.h>

/* GCC 12 takes fx_write()'s result (open_memstream's buffer) for a pointer to
 * its local variable once inlined; it is the heap buffer. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

#include "agent/push.h"
#include "format/pprof_proto.h"
#include "format/reader.h"
#include "format/view.h"

static void fx_add_off(struct profile *p, const char *comm, uint32_t pid, uint64_t ns,
		       const struct fx_frame *fr, size_t n)
{
	struct psample s = { .pid = pid, .comm = comm };
	uint32_t ids[32];

	for (size_t i = 0; i < n; i++) {
		int64_t id = profile__frame(p, fr[i].kind, fr[i].name, fr[i].module);

		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	assert_int_equal(profile__add_offcpu(p, &s, ids, (uint32_t)n, ns), 0);
}

#define FXO(p, comm, pid, ns, ...)                                                                 \
	do {                                                                                       \
		const struct fx_frame fr_[] = { __VA_ARGS__ };                                     \
		fx_add_off(p, comm, pid, ns, fr_, sizeof(fr_) / sizeof(fr_[0]));                   \
	} while (0)

/*
 * 100 Hz (10 ms a sample): "app" runs 30 samples in compute (300 ms) and
 * waits 1.5 s in read and 2.0004 s in nanosleep; "db" waits 250.4996 us,
 * which rounds to 250 us.
 */
static struct profile *offcpu_profile(void)
{
	struct profile *p = profile__new();
	struct profile_meta *m = profile__meta(p);

	assert_non_null(p);
	m->freq_hz = 100;
	m->duration_ns = 5000000000ull;
	m->lost = 2;
	m->offcpu = true;
	m->offcpu_min_ns = 1000000;
	m->offcpu_lost = 4;
	snprintf(m->hostname, sizeof(m->hostname), "testhost");
	FX(p, "app", 10, 0, 30, FX_USER("main"), FX_USER("compute"));
	FXO(p, "app", 10, 1500000000ull, FX_USER("main"), FX_LIB("read"), FX_KERN("vfs_read"),
	    FX_KERN("schedule"));
	FXO(p, "app", 10, 2000400000ull, FX_USER("main"), FX_LIB("nanosleep"),
	    FX_KERN("do_nanosleep"), FX_KERN("schedule"));
	FXO(p, "db", 20, 250499ull, FX_USER("query"), FX_KERN("schedule"));
	assert_int_equal(profile__set_build_id(p, "/usr/bin/app", "0123456789abcdef"), 0);
	profile__sort(p);
	return p;
}

static void test_profile_values(void **state)
{
	struct profile *p = offcpu_profile(), *q = profile__new();

	assert_int_equal(profile__total(p), 30);
	assert_int_equal(profile__total_offcpu(p), 1500000000ull + 2000400000ull + 250499ull);
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);

		assert_true((s->count == 0) != (s->offcpu_ns == 0)); /* one value each here */
	}
	/* Merging carries both values; adding again sums into the same sample. */
	assert_int_equal(profile__merge(q, p), 0);
	assert_int_equal(profile__merge(q, p), 0);
	assert_int_equal(profile__total(q), 60);
	assert_int_equal(profile__total_offcpu(q), 2 * profile__total_offcpu(p));
	assert_int_equal(profile__nr_samples(q), profile__nr_samples(p));
	profile__free(p);
	profile__free(q);
}

static void test_view_names(void **state)
{
	enum view v;

	assert_int_equal(view__parse("cpu", &v), 0);
	assert_int_equal(v, VIEW_CPU);
	assert_int_equal(view__parse("off-cpu", &v), 0);
	assert_int_equal(v, VIEW_OFFCPU);
	assert_int_equal(view__parse("wall", &v), 0);
	assert_int_equal(v, VIEW_WALL);
	assert_int_equal(view__parse("offcpu", &v), -EINVAL);
	assert_int_equal(view__parse("auto", &v), -EINVAL);
	assert_string_equal(view__name(VIEW_OFFCPU), "off-cpu");
}

static void test_view_values(void **state)
{
	struct profile *p = offcpu_profile(), *v;
	char *txt;

	/* auto: wall for a profile with off-CPU time */
	assert_int_equal(view__resolve(p, VIEW_AUTO), VIEW_WALL);

	v = view__build(p, VIEW_CPU);
	assert_non_null(v);
	txt = fx_write(&writer_folded, v, NULL, NULL);
	assert_string_equal(txt, "app;main;compute 30\n");
	assert_false(profile__meta_c(v)->offcpu);
	assert_string_equal(profile__meta_c(v)->unit, "");
	assert_int_equal(profile__meta_c(v)->lost, 2);
	free(txt);
	profile__free(v);

	v = view__build(p, VIEW_OFFCPU);
	assert_non_null(v);
	txt = fx_write(&writer_folded, v, NULL, NULL);
	assert_string_equal(txt, "app;main;nanosleep;do_nanosleep_[k];schedule_[k] 2000400\n"
				 "app;main;read;vfs_read_[k];schedule_[k] 1500000\n"
				 "db;query;schedule_[k] 250\n");
	assert_string_equal(profile__meta_c(v)->unit, "us");
	assert_string_equal(profile__meta_c(v)->value_name, "off-CPU time");
	assert_int_equal(profile__meta_c(v)->lost, 4);
	/* build ids go along */
	assert_string_equal(profile__build_id(v, "/usr/bin/app"), "0123456789abcdef");
	free(txt);
	profile__free(v);

	/* wall: 30 samples x 10 ms = 300,000 us, waiting ends in [off-cpu] */
	v = view__build(p, VIEW_WALL);
	assert_non_null(v);
	txt = fx_write(&writer_folded, v, NULL, NULL);
	assert_string_equal(txt,
			    "app;main;compute 300000\n"
			    "app;main;nanosleep;do_nanosleep_[k];schedule_[k];[off-cpu] 2000400\n"
			    "app;main;read;vfs_read_[k];schedule_[k];[off-cpu] 1500000\n"
			    "db;query;schedule_[k];[off-cpu] 250\n");
	assert_string_equal(profile__meta_c(v)->value_name, "wall-clock time");
	assert_int_equal(profile__meta_c(v)->lost, 6);
	free(txt);
	profile__free(v);

	/* No frequency: samples cannot become time. */
	profile__meta(p)->freq_hz = 0;
	errno = 0;
	assert_null(view__build(p, VIEW_WALL));
	assert_int_equal(errno, EINVAL);
	profile__free(p);
}

/* The same frames both sampled running and waiting: two stacks in the wall view. */
static void test_view_wall_split(void **state)
{
	struct profile *p = profile__new(), *v;
	char *txt;

	profile__meta(p)->freq_hz = 1000;
	profile__meta(p)->offcpu = true;
	FX(p, "t", 1, 0, 3, FX_USER("f"), FX_KERN("__schedule"));
	FXO(p, "t", 1, 7000000, FX_USER("f"), FX_KERN("__schedule"));
	assert_int_equal(profile__nr_samples(p), 1);
	v = view__build(p, VIEW_WALL);
	txt = fx_write(&writer_folded, v, NULL, NULL);
	assert_string_equal(txt, "t;f;__schedule_[k] 3000\nt;f;__schedule_[k];[off-cpu] 7000\n");
	free(txt);
	profile__free(v);
	profile__free(p);
}

/* Writers of one value get the view through writer__write_file. */
static void test_write_file_views(void **state)
{
	struct profile *p = offcpu_profile();
	struct out_opts o = { .view = VIEW_OFFCPU };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(writer__write_file(&writer_folded, p, f, &o), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "db;query;schedule_[k] 250\n"));
	assert_null(strstr(buf, "compute"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(writer__write_file(&writer_folded, p, f, NULL), 0); /* auto: wall */
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "app;main;compute 300000\n"));
	assert_non_null(strstr(buf, "[off-cpu] 1500000\n"));
	free(buf);
	profile__free(p);
}

static struct profile *pprof_round_trip(const struct profile *p, enum view v)
{
	uint8_t *buf;
	size_t len;
	struct errmsg em = { 0 };
	struct profile *q = profile__new();

	assert_int_equal(pprof__encode_view(p, v, &buf, &len), 0);
	assert_int_equal(reader__find("pprof")->read(buf, len, q, &em), 0);
	free(buf);
	return q;
}

static void test_pprof_values(void **state)
{
	struct profile *p = offcpu_profile(), *q;
	const struct profile_meta *m;

	/* All values: samples, cpu, off_cpu and wall; both read back. */
	q = pprof_round_trip(p, VIEW_AUTO);
	m = profile__meta_c(q);
	assert_true(m->offcpu);
	assert_int_equal(m->freq_hz, 100);
	assert_int_equal(m->offcpu_min_ns, 1000000);
	assert_int_equal(m->offcpu_lost, 4);
	assert_int_equal(m->lost, 2);
	assert_int_equal(profile__total(q), 30);
	assert_int_equal(profile__total_offcpu(q), profile__total_offcpu(p));
	profile__free(q);

	/* The off-CPU view alone (Pyroscope's .off_cpu series). */
	q = pprof_round_trip(p, VIEW_OFFCPU);
	assert_true(profile__meta_c(q)->offcpu);
	assert_int_equal(profile__total(q), 0);
	assert_int_equal(profile__total_offcpu(q), profile__total_offcpu(p));
	profile__free(q);

	/* The on-CPU view: what a profile without --off-cpu has. */
	q = pprof_round_trip(p, VIEW_CPU);
	assert_false(profile__meta_c(q)->offcpu);
	assert_int_equal(profile__total(q), 30);
	assert_int_equal(profile__total_offcpu(q), 0);
	profile__free(q);
	profile__free(p);
}

/* The encoded message names the types in order, and cpu stays the default. */
static void test_pprof_sample_types(void **state)
{
	struct profile *p = offcpu_profile();
	uint8_t *buf;
	size_t len;
	const char *want[] = { "samples", "count", "cpu", "nanoseconds", "off_cpu", "wall" };
	const uint8_t *at = NULL;

	assert_int_equal(pprof__encode(p, &buf, &len), 0);
	/* The strings are in the table, in first-use order. */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const uint8_t *hit = memmem(buf, len, want[i], strlen(want[i]));

		assert_non_null(hit);
		assert_true(hit > at);
		at = hit;
	}
	free(buf);
	/* A profile without off-CPU time is written as before. */
	profile__meta(p)->offcpu = false;
	assert_int_equal(pprof__encode(p, &buf, &len), 0);
	assert_null(memmem(buf, len, "off_cpu", 7));
	free(buf);
	profile__free(p);
}

static void test_report_both(void **state)
{
	struct profile *p = offcpu_profile();
	struct out_opts o = { .top = 5 };
	char *txt = fx_write(&writer_report, p, &o, NULL);
	size_t on, off;

	assert_non_null(strstr(txt, "bpfprof report, on-CPU: 30 samples"));
	assert_non_null(
		strstr(txt, "bpfprof report, off-CPU: 3,500,650 \u00b5s of off-CPU time, 4 lost"));
	on = (size_t)(strstr(txt, "on-CPU: 30") - txt);
	off = (size_t)(strstr(txt, "off-CPU: 3,500,650") - txt);
	assert_true(on < off);
	assert_non_null(strstr(txt + off, "total off-CPU time (\u00b5s, there or in a callee)"));
	assert_non_null(strstr(txt + off, "Off-CPU time by process (\u00b5s, 2 of 2)"));
	assert_non_null(strstr(txt + off, "2,000,400"));
	free(txt);
	o.view = VIEW_OFFCPU;
	txt = fx_write(&writer_report, p, &o, NULL);
	assert_null(strstr(txt, "on-CPU"));
	assert_non_null(strstr(txt, "bpfprof report: 3,500,650 \u00b5s of off-CPU time"));
	free(txt);
	profile__free(p);
}

static void test_svg_units(void **state)
{
	struct profile *p = offcpu_profile(), *v = view__build(p, VIEW_WALL);
	struct out_opts o = { 0 };
	char *svg = fx_write(&writer_svg, v, &o, NULL);

	assert_non_null(strstr(svg, ">Wall-clock time flame graph (\u00b5s): running and [off-cpu] "
				    "waiting</text>"));
	assert_non_null(strstr(svg, "3,800,650 \u00b5s of wall-clock time"));
	assert_non_null(strstr(svg, "\"unit\":\"\u00b5s\""));
	assert_non_null(strstr(svg, "\"[off-cpu]\""));
	free(svg);
	profile__free(v);
	v = view__build(p, VIEW_OFFCPU);
	svg = fx_write(&writer_svg, v, &o, NULL);
	assert_non_null(strstr(svg, ">Off-CPU time flame graph (\u00b5s)</text>"));
	assert_null(strstr(svg, "\"[off-cpu]\""));
	free(svg);
	svg = fx_write(&writer_speedscope, v, &o, NULL);
	assert_non_null(strstr(svg, "\"unit\":\"microseconds\""));
	free(svg);
	profile__free(v);
	profile__free(p);
}

static void test_push_series(void **state)
{
	char name[128];

	assert_int_equal(pusher__series_name_of("app", "off_cpu", "h", "abc", name, sizeof(name)),
			 0);
	assert_string_equal(name, "app.off_cpu{hostname=h,container_id=abc}");
	assert_int_equal(pusher__series_name("app", "h", NULL, name, sizeof(name)), 0);
	assert_string_equal(name, "app.cpu{hostname=h}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_values),	   cmocka_unit_test(test_view_names),
		cmocka_unit_test(test_view_values),	   cmocka_unit_test(test_view_wall_split),
		cmocka_unit_test(test_write_file_views),   cmocka_unit_test(test_pprof_values),
		cmocka_unit_test(test_pprof_sample_types), cmocka_unit_test(test_report_both),
		cmocka_unit_test(test_svg_units),	   cmocka_unit_test(test_push_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
