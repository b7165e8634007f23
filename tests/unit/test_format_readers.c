// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_readers.c - the folded and pprof readers: round trips through the
 * writers, frame kinds, metadata, sniffing, and malformed input (which must
 * fail with a message saying where, never crash or half-succeed).
 */
#include "outfixture.h"

#include <zlib.h>

#include "format/reader.h"
#include "format/pprof_proto.h"

static struct profile *read_buf(const struct reader *r, const void *buf, size_t len, int want_err,
				struct errmsg *err)
{
	struct profile *p = profile__new();
	int rc;

	rc = r->read(buf, len, p, err);
	if (rc != want_err) {
		print_error("read returned %d (%s), wanted %d\n", rc, err->msg, want_err);
		fail();
	}
	if (rc) {
		assert_true(err->msg[0] != '\0');
		profile__free(p);
		return NULL;
	}
	return p;
}

static char *folded_of(const struct profile *p)
{
	return fx_write(&writer_folded, p, NULL, NULL);
}

/* --- folded --------------------------------------------------------------- */

static void test_folded_round_trip_and_kinds(void **state)
{
	const char *text = "app;main;compute;leaf_a 50\n"
			   "app;main;read;entry_SYSCALL_64_[k];vfs_read_[k] 10\n"
			   "java;Interpreter;LFoo:::bar_[j] 8\n"
			   "kthread 4\n"
			   "my app;frame with spaces;libc.so.6+0x1234 2\n";
	struct profile *p;
	struct errmsg err = { 0 };
	char *out;
	size_t kinds[FRAME_KIND_MAX] = { 0 };

	p = read_buf(&reader_folded, text, strlen(text), 0, &err);
	assert_int_equal(profile__total(p), 74);
	for (size_t i = 0; i < profile__nr_frames(p); i++)
		kinds[profile__frame_get(p, (uint32_t)i)->kind]++;
	assert_int_equal(kinds[FRAME_KERNEL], 2);
	assert_int_equal(kinds[FRAME_JIT], 1);
	assert_int_equal(kinds[FRAME_USER], 7);
	for (size_t i = 0; i < profile__nr_samples(p); i++)
		assert_int_equal(profile__sample(p, i)->pid, 0); /* folded has no pid */
	profile__sort(p);
	out = folded_of(p);
	assert_string_equal(out, "app;main;compute;leaf_a 50\n"
				 "app;main;read;entry_SYSCALL_64_[k];vfs_read_[k] 10\n"
				 "java;Interpreter;LFoo:::bar_[j] 8\n"
				 "kthread 4\n"
				 "my app;frame with spaces;libc.so.6+0x1234 2\n");
	free(out);
	profile__free(p);
}

static void test_folded_tolerated_forms(void **state)
{
	/* CRLF, blank lines, trailing blanks, no final newline, repeated stacks. */
	const char *text = "\r\na;b 1\r\n\n   \na;b 2  \na;c 3";
	struct profile *p;
	struct errmsg err = { 0 };
	char *out;

	p = read_buf(&reader_folded, text, strlen(text), 0, &err);
	profile__sort(p);
	out = folded_of(p);
	assert_string_equal(out, "a;b 3\na;c 3\n");
	free(out);
	profile__free(p);
}

static void test_folded_malformed(void **state)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		int err;
		const char *msg;
	} cases[] = {
		{ "a;b 1\nno_count\n", 0, -EINVAL, "line 2: expected" },
		{ "a;b 12x\n", 0, -EINVAL, "line 1: bad sample count '12x'" },
		{ "a;b -1\n", 0, -EINVAL, "bad sample count" },
		{ "a;b 99999999999999999999\n", 0, -EINVAL, "bad sample count" },
		{ " 5\n", 0, -EINVAL, "line 1: expected" },
		{ "a 18446744073709551615\nb 1\n", 0, -ERANGE, "line 2: sample counts overflow" },
		{ "a;b\0c 1\n", 8, -EINVAL, "NUL bytes" },
		{ "", 0, -EINVAL, "no stacks" },
		{ "\n\r\n  \n", 0, -EINVAL, "no stacks" },
	};
	struct errmsg err = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);

		read_buf(&reader_folded, cases[i].text, len, cases[i].err, &err);
		if (!strstr(err.msg, cases[i].msg)) {
			print_error("case %zu: message '%s' lacks '%s'\n", i, err.msg,
				    cases[i].msg);
			fail();
		}
	}
}

static void test_folded_depth_limit(void **state)
{
	size_t n = INPUT_MAX_DEPTH + 1, len = 2 * n + 8;
	char *line = malloc(len);
	struct errmsg err = { 0 };
	struct profile *p;
	size_t k = 0;

	line[k++] = 'c';
	for (size_t i = 0; i < n; i++) {
		line[k++] = ';';
		line[k++] = 'f';
	}
	memcpy(line + k, " 1\n", 3);
	k += 3;
	read_buf(&reader_folded, line, k, -EFBIG, &err);
	assert_non_null(strstr(err.msg, "more than 65536 frames"));
	/* One frame fewer is fine. */
	memcpy(line + k - 5, " 1\n", 3);
	p = read_buf(&reader_folded, line, k - 2, 0, &err);
	profile__free(p);
	free(line);
}

/* --- pprof ------------------------------------------------------------------- */

/* Samples as sorted "pid/tid/comm;folded;stack count" lines. */
static char *identity_text(struct profile *p)
{
	struct sbuf sb = { 0 };
	char label[512];

	profile__sort(p);
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct psample *s = profile__sample(p, i);
		const uint32_t *fr;
		uint32_t n;

		sbuf_printf(&sb, "%u/%u/%s", s->pid, s->tid, s->comm);
		fr = profile__stack_get(p, s->stack, &n);
		for (uint32_t j = 0; j < n; j++) {
			const struct pframe *f = profile__frame_get(p, fr[j]);

			writer__frame_label(f, label, sizeof(label));
			sbuf_printf(&sb, ";%s", label);
			if (f->kind == FRAME_USER && f->module)
				sbuf_printf(&sb, "@%s", f->module);
		}
		sbuf_printf(&sb, " %llu\n", (unsigned long long)s->count);
	}
	return sb.buf;
}

/* A frame named exactly name (its bytes, not a label). */
static bool has_frame(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < profile__nr_frames(p); i++)
		if (!strcmp(profile__frame_get(p, (uint32_t)i)->name, name))
			return true;
	return false;
}

static void test_pprof_round_trip(void **state)
{
	struct profile *p = fx_profile(), *q;
	const struct profile_meta *m;
	struct errmsg err = { 0 };
	char *want, *got;
	size_t zlen;
	char *gz = fx_write(&writer_pprof, p, NULL, &zlen);
	uint8_t *raw;
	size_t rawlen;

	assert_ptr_equal(reader__sniff((const uint8_t *)gz, zlen), &reader_pprof);
	q = read_buf(&reader_pprof, gz, zlen, 0, &err);
	/* Identity, stacks, counts, modules survive; invalid UTF-8 was replaced
	 * (in the file; the labels replace it the same way). */
	want = identity_text(p);
	got = identity_text(q);
	assert_string_equal(got, want);
	assert_non_null(strstr(got, "bad\xef\xbf\xbdutf8"));
	assert_true(has_frame(q, "bad\xef\xbf\xbdutf8"));
	assert_false(has_frame(q, "bad\xffutf8"));
	assert_true(has_frame(p, "bad\xffutf8"));
	free(want);
	free(got);
	m = profile__meta_c(q);
	assert_int_equal(m->freq_hz, 99);
	assert_int_equal(m->start_ns, 1700000000123456789ull);
	assert_int_equal(m->duration_ns, 10000000000ull);
	assert_int_equal(m->lost, 3);
	assert_string_equal(m->hostname, "testhost");
	assert_string_equal(profile__build_id(q, "/usr/bin/app"), "0123456789abcdef");
	assert_string_equal(profile__build_id(q, "[kernel.kallsyms]"), "fedcba9876543210");
	profile__free(q);

	/* Uncompressed protobuf is sniffed as pprof too. */
	assert_int_equal(pprof__encode(p, &raw, &rawlen), 0);
	assert_ptr_equal(reader__sniff(raw, rawlen), &reader_pprof);
	q = read_buf(&reader_pprof, raw, rawlen, 0, &err);
	assert_int_equal(profile__total(q), profile__total(p));
	profile__free(q);
	free(raw);
	free(gz);
	profile__free(p);
}

static void test_pprof_folded_round_trip(void **state)
{
	/* folded -> profile -> pprof -> profile -> folded: identical text. */
	const char *text = "app;main;compute;leaf_a 50\n"
			   "app;main;read;entry_SYSCALL_64_[k];vfs_read_[k] 10\n"
			   "java;Interpreter;LFoo:::bar_[j] 8\n"
			   "kthread 4\n";
	struct profile *p, *q;
	struct errmsg err = { 0 };
	char *gz, *out;
	size_t zlen;

	p = read_buf(&reader_folded, text, strlen(text), 0, &err);
	gz = fx_write(&writer_pprof, p, NULL, &zlen);
	q = read_buf(&reader_pprof, gz, zlen, 0, &err);
	profile__sort(q);
	out = folded_of(q);
	assert_string_equal(out, text);
	assert_int_equal(profile__meta_c(q)->freq_hz, 0);
	free(out);
	free(gz);
	profile__free(p);
	profile__free(q);
}

/* Lisp frames (issue 38): "_[lisp]", their names never split as "name (file:line)",
 * kept through pprof (its "[lisp]" mapping). */
static void test_lisp_frames_round_trip(void **state)
{
	const char *text = "sbcl;main;call_into_lisp_;\"GENERIC-+ (x)\"_[lisp] 10\n"
			   "sbcl;main;call_into_lisp_;(FLET SB-UNIX::BODY :IN "
			   "SB-IMPL::START-LISP)_[lisp];LISPHOT::ALPHA-WORK_[lisp] 20\n"
			   "sbcl;main;call_into_lisp_;(LAMBDA (X) :IN FOO:12)_[lisp] 30\n";
	struct profile *p, *q;
	struct errmsg err = { 0 };
	size_t lisp = 0, zlen;
	char *gz, *out;

	(void)state;
	p = read_buf(&reader_folded, text, strlen(text), 0, &err);
	for (size_t i = 0; i < profile__nr_frames(p); i++) {
		const struct pframe *f = profile__frame_get(p, (uint32_t)i);

		if (f->kind == FRAME_LISP) {
			lisp++;
			assert_null(f->file);
			assert_int_equal(f->line, 0);
		}
	}
	assert_int_equal(lisp, 4);
	profile__sort(p);
	out = folded_of(p);
	assert_string_equal(out, text);
	free(out);
	gz = fx_write(&writer_pprof, p, NULL, &zlen);
	q = read_buf(&reader_pprof, gz, zlen, 0, &err);
	profile__sort(q);
	out = folded_of(q);
	assert_string_equal(out, text);
	free(out);
	free(gz);
	profile__free(p);
	profile__free(q);
}

/* Leaf addresses (record --addresses) survive pprof; writers without them sum. */
static void test_pprof_leaf_addresses(void **state)
{
	struct profile *p = profile__new(), *q;
	struct psample s = { .pid = 7, .comm = "app" };
	uint32_t ids[3];
	uint64_t by_addr[4] = { 0 };
	struct errmsg err = { 0 };
	char *gz, *folded;
	size_t zlen;

	ids[0] = (uint32_t)profile__frame(p, FRAME_USER, "main", "/bin/app");
	ids[1] = (uint32_t)profile__frame(p, FRAME_USER, "loop", "/bin/app");
	s.addr = 0x1130;
	assert_int_equal(profile__add(p, &s, ids, 2, 5), 0);
	s.addr = 0x1134;
	assert_int_equal(profile__add(p, &s, ids, 2, 3), 0);
	s.addr = 0x1130;
	assert_int_equal(profile__add(p, &s, ids, 2, 1), 0); /* same address: one sample */
	ids[2] = (uint32_t)profile__frame(p, FRAME_KERNEL, "do_syscall_64", NULL);
	s.addr = 0xffffffff81001234ull;
	assert_int_equal(profile__add(p, &s, ids, 3, 2), 0);
	s.addr = 0;
	assert_int_equal(profile__add(p, &s, ids, 2, 4), 0); /* no address kept */
	assert_int_equal(profile__nr_samples(p), 4);
	assert_int_equal(profile__nr_stacks(p), 2);

	folded = folded_of(p);
	assert_string_equal(folded, "app;main;loop 13\napp;main;loop;do_syscall_64_[k] 2\n");
	free(folded);

	gz = fx_write(&writer_pprof, p, NULL, &zlen);
	q = read_buf(&reader_pprof, gz, zlen, 0, &err);
	assert_int_equal(profile__nr_samples(q), 4);
	for (size_t i = 0; i < profile__nr_samples(q); i++) {
		const struct psample *t = profile__sample(q, i);

		switch (t->addr) {
		case 0x1130:
			by_addr[0] += t->count;
			break;
		case 0x1134:
			by_addr[1] += t->count;
			break;
		case 0xffffffff81001234ull:
			by_addr[2] += t->count;
			break;
		case 0:
			by_addr[3] += t->count;
			break;
		default:
			fail();
		}
	}
	assert_int_equal(by_addr[0], 6);
	assert_int_equal(by_addr[1], 3);
	assert_int_equal(by_addr[2], 2);
	assert_int_equal(by_addr[3], 4);
	/* A merge keeps them apart too. */
	{
		struct profile *m = profile__new();

		assert_int_equal(profile__merge(m, q), 0);
		assert_int_equal(profile__merge(m, q), 0);
		assert_int_equal(profile__nr_samples(m), 4);
		assert_int_equal(profile__total(m), 30);
		profile__free(m);
	}
	free(gz);
	profile__free(p);
	profile__free(q);
}

/* A hand-built message: sample types, one sample, strings. */
struct msg {
	uint8_t b[512];
	size_t n;
};

static void put(struct msg *m, const void *d, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, d, n);
	m->n += n;
}

static void put_str(struct msg *m, unsigned field, const char *s)
{
	uint8_t h[2] = { (uint8_t)(field << 3 | PB_LEN), (uint8_t)strlen(s) };

	put(m, h, 2);
	put(m, s, strlen(s));
}

static void put_raw(struct msg *m, const char *bytes, size_t n)
{
	put(m, bytes, n);
}

/* Strings: 0 "", 1 "samples", 2 "count", 3 "main", 4 "/bin/prog", 5 "comm", 6 "x". */
static void base(struct msg *m)
{
	m->n = 0;
	put_str(m, 6, "");
	put_str(m, 6, "samples");
	put_str(m, 6, "count");
	put_str(m, 6, "main");
	put_str(m, 6, "/bin/prog");
	put_str(m, 6, "comm");
	put_str(m, 6, "x");
	put_raw(m, "\x0a\x04\x08\x01\x10\x02", 6); /* sample_type {1, 2} */
	put_raw(m, "\x1a\x04\x08\x07\x28\x04", 6); /* mapping {id 7, filename 4} */
	put_raw(m, "\x2a\x04\x08\x05\x10\x03", 6); /* function {id 5, name 3} */
	put_raw(m, "\x22\x08\x08\x09\x10\x07\x22\x02\x08\x05",
		10); /* location {9, map 7, line{5}} */
}

static void test_pprof_hand_built(void **state)
{
	struct msg m;
	struct profile *p;
	struct errmsg err = { 0 };
	char *out;

	/* Unpacked repeated fields are accepted as well as packed ones. */
	base(&m);
	put_raw(&m, "\x12\x04\x08\x09\x10\x03", 6); /* sample {location 9, value 3} */
	p = read_buf(&reader_pprof, m.b, m.n, 0, &err);
	out = folded_of(p);
	/* No comm label: the main binary's name. */
	assert_string_equal(out, "prog;main 3\n");
	assert_null(profile__build_id(p, "/bin/prog"));
	free(out);
	profile__free(p);

	/* A comm label wins; unknown fields are skipped; value 0 is not a sample. */
	base(&m);
	put_raw(&m, "\x12\x0c\x0a\x01\x09\x12\x01\x05\x1a\x04\x08\x05\x10\x06", 14);
	put_raw(&m, "\x12\x06\x0a\x01\x09\x12\x01\x00", 8);
	put_raw(&m, "\xb8\x01\x2a", 3); /* field 23, varint: unknown */
	p = read_buf(&reader_pprof, m.b, m.n, 0, &err);
	out = folded_of(p);
	assert_string_equal(out, "x;main 5\n");
	free(out);
	profile__free(p);
}

static void test_pprof_malformed(void **state)
{
	static const struct {
		const char *bytes;
		size_t n;
		const char *msg;
	} tails[] = {
		{ "\x12\x06\x0a\x01\x08\x12\x01\x03", 8, "missing location 8" },
		{ "\x12\x0a\x0a\x01\x09\x12\x01\x03\x1a\x02\x08\x63", 12,
		  "label: bad string index" },
		{ "\x12\x07\x0a\x01\x09\x12\x02\x03\x03", 9, "2 values for 1 sample types" },
		{ "\x22\x02\x08\x09", 4, "duplicate location id 9" },
		{ "\x2a\x00", 2, "function with id 0" },
		{ "\x22\x04\x08\x0a\x10\x63\x12\x06\x0a\x01\x0a\x12\x01\x01", 14,
		  "location 10 refers to missing mapping 99" },
		{ "\x12\x10", 2, "bad length" },
		{ "\xa3\x01", 2, "malformed field 20" }, /* wire type 3 (group) */
		{ "\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11, "malformed field 9" },
		{ "\xfa\xff\xff\xff\x1f", 5, "bad field header" },
		{ "\x1a\x04\x08\x08\x28\x63", 6, "mapping 8: bad string index" },
	};
	struct msg m;
	struct errmsg err = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(tails); i++) {
		base(&m);
		put_raw(&m, tails[i].bytes, tails[i].n);
		read_buf(&reader_pprof, m.b, m.n, -EINVAL, &err);
		if (!strstr(err.msg, tails[i].msg)) {
			print_error("case %zu: message '%s' lacks '%s'\n", i, err.msg,
				    tails[i].msg);
			fail();
		}
	}
	/* string_table[0] must be "". */
	m.n = 0;
	put_str(&m, 6, "x");
	read_buf(&reader_pprof, m.b, m.n, -EINVAL, &err);
	assert_non_null(strstr(err.msg, "string_table[0]"));
}

static void test_pprof_every_truncation_fails_cleanly(void **state)
{
	struct profile *p = fx_profile(), *q;
	uint8_t *raw;
	size_t len, zlen;
	struct errmsg err = { 0 };
	char *gz = fx_write(&writer_pprof, p, NULL, &zlen);

	assert_int_equal(pprof__encode(p, &raw, &len), 0);
	/* Any prefix either parses (it ends between fields) or fails with a reason. */
	for (size_t cut = 0; cut < len; cut++) {
		q = profile__new();
		err.msg[0] = '\0';
		if (reader_pprof.read(raw, cut, q, &err))
			assert_true(err.msg[0] != '\0');
		profile__free(q);
	}
	for (size_t cut = 2; cut < zlen; cut++) {
		q = profile__new();
		assert_int_equal(reader_pprof.read((uint8_t *)gz, cut, q, &err), -EINVAL);
		profile__free(q);
	}
	free(raw);
	free(gz);
	profile__free(p);
}

static void test_gunzip_limits(void **state)
{
	struct profile *p = fx_profile();
	size_t zlen, olen;
	char *gz = fx_write(&writer_pprof, p, NULL, &zlen);
	uint8_t *out;

	assert_int_equal(reader__gunzip((uint8_t *)gz, zlen, 16, &out, &olen), -EFBIG);
	assert_int_equal(
		reader__gunzip((uint8_t *)"\x1f\x8b\x08\x00garbage", 11, 1 << 20, &out, &olen),
		-EINVAL);
	free(gz);
	profile__free(p);
}

/* gzip of n zero bytes (one member). */
static uint8_t *gzip_zeros(size_t n, size_t *zlen)
{
	uint8_t *zero = calloc(1, n), *gz = malloc(n / 100 + 4096);
	z_stream zs = { 0 };

	assert_non_null(zero);
	assert_non_null(gz);
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = zero;
	zs.avail_in = (uInt)n;
	zs.next_out = gz;
	zs.avail_out = (uInt)(n / 100 + 4096);
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*zlen = zs.total_out;
	deflateEnd(&zs);
	free(zero);
	return gz;
}

static void test_gunzip_bomb_and_members(void **state)
{
	size_t zlen, olen, one;
	uint8_t *gz = gzip_zeros(64 << 20, &zlen), *two, *out;

	/* 64 MiB from ~64 KiB: refused at the limit, whatever the ratio. */
	assert_true(zlen < (128 << 10));
	assert_int_equal(reader__gunzip(gz, zlen, 1 << 20, &out, &olen), -EFBIG);
	assert_int_equal(reader__gunzip(gz, zlen, (64 << 20) - 1, &out, &olen), -EFBIG);
	/* Exactly at the limit is fine, and exactly that long. */
	assert_int_equal(reader__gunzip(gz, zlen, 64 << 20, &out, &olen), 0);
	assert_int_equal(olen, 64 << 20);
	assert_int_equal(out[0] | out[olen - 1], 0);
	free(out);
	free(gz);

	/* Concatenated members, the last one empty: one stream (RFC 1952). */
	gz = gzip_zeros(1000, &one);
	two = malloc(2 * one + 64);
	memcpy(two, gz, one);
	memcpy(two + one, gz, one);
	free(gz);
	gz = gzip_zeros(0, &zlen);
	memcpy(two + 2 * one, gz, zlen);
	assert_int_equal(reader__gunzip(two, 2 * one + zlen, 2000, &out, &olen), 0);
	assert_int_equal(olen, 2000);
	free(out);
	assert_int_equal(reader__gunzip(two, 2 * one + zlen, 1999, &out, &olen), -EFBIG);
	/* Truncated in the second member. */
	assert_int_equal(reader__gunzip(two, one + one / 2, 1 << 20, &out, &olen), -EINVAL);
	free(gz);
	free(two);
}

static void test_pprof_from_go(void **state)
{
	/* A CPU profile written by Go's runtime/pprof (go 1.19), committed. */
	struct errmsg err = { 0 };
	char *out;
	struct profile *p = reader__read_path("tests/unit/data/go-cpu.pb.gz", &err);

	assert_non_null(p);
	profile__sort(p);
	out = folded_of(p);
	/* No comm label: the main binary names the process; values are cpu ns / period;
	 * main.hot and main.cold were inlined into main.main (one location, two lines). */
	assert_string_equal(out, "gop;runtime.main;main.main;main.cold_[i];main.spin 9\n"
				 "gop;runtime.main;main.main;main.hot_[i];main.spin 17\n"
				 "gop;runtime.main;main.main;main.hot_[i];main.spin;time.Now 1\n");
	assert_int_equal(profile__meta_c(p)->freq_hz, 100);
	free(out);
	profile__free(p);
}

/* --- files and sniffing ---------------------------------------------------------- */

static void test_read_path(void **state)
{
	struct errmsg err = { 0 };
	char *path;
	struct profile *p;

	path = write_temp_str("a;b 2\n");
	p = reader__read_path(path, &err);
	assert_non_null(p);
	assert_int_equal(profile__total(p), 2);
	profile__free(p);
	unlink(path);
	free(path);

	assert_null(reader__read_path("/nonexistent/x.folded", &err));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.msg, "No such file or directory");
	assert_null(reader__read_path("/", &err));
	assert_int_equal(errno, EISDIR);

	path = write_temp_str("");
	assert_null(reader__read_path(path, &err));
	assert_string_equal(err.msg, "empty file");
	unlink(path);
	free(path);

	path = write_temp_str("a;b 1\nbroken\n");
	assert_null(reader__read_path(path, &err));
	assert_non_null(strstr(err.msg, "line 2"));
	unlink(path);
	free(path);

	assert_ptr_equal(reader__sniff((const uint8_t *)"a;b 1\n", 6), &reader_folded);
	assert_ptr_equal(reader__sniff((const uint8_t *)"\xc3\xa9t\xc3\xa9;x 1\n", 10),
			 &reader_folded);
	assert_ptr_equal(reader__find("pprof"), &reader_pprof);
	assert_null(reader__find("nope"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_round_trip_and_kinds),
		cmocka_unit_test(test_folded_tolerated_forms),
		cmocka_unit_test(test_folded_malformed),
		cmocka_unit_test(test_folded_depth_limit),
		cmocka_unit_test(test_pprof_round_trip),
		cmocka_unit_test(test_pprof_folded_round_trip),
		cmocka_unit_test(test_lisp_frames_round_trip),
		cmocka_unit_test(test_pprof_leaf_addresses),
		cmocka_unit_test(test_pprof_hand_built),
		cmocka_unit_test(test_pprof_malformed),
		cmocka_unit_test(test_pprof_every_truncation_fails_cleanly),
		cmocka_unit_test(test_gunzip_limits),
		cmocka_unit_test(test_gunzip_bomb_and_members),
		cmocka_unit_test(test_pprof_from_go),
		cmocka_unit_test(test_read_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
