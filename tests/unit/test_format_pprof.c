// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_format_pprof.c - the pprof writer. The uncompressed message is decoded
 * here by a small schema-driven protobuf printer, independent of the
 * reader in src/format/pprof_read.c, into readable text compared with a golden file; the
 * invariants pprof readers require are checked on the decoded message; the
 * gzip layer must give back exactly the same bytes.
 */
#include "outfixture.h"

#include <inttypes.h>
#include <zlib.h>

#include "format/counttab.h"
#include "format/pprof_proto.h"

/* --- a schema-driven protobuf printer -------------------------------------------- */

enum ftype { F_UINT, F_STRIDX, F_PACKED, F_MSG, F_STRING };

struct fdesc {
	unsigned num;
	const char *name;
	enum ftype type;
	const struct mdesc *msg;
};

struct mdesc {
	const struct fdesc *fields;
	size_t n;
};

/* clang-format off */
#define M(arr)		{ arr, sizeof(arr) / sizeof(arr[0]) }
#define F(n, name, t)	{ n, name, t, NULL }
#define FM(n, name, m)	{ n, name, F_MSG, m }
/* clang-format on */

static const struct fdesc value_type_f[] = { F(1, "type", F_STRIDX), F(2, "unit", F_STRIDX) };
static const struct mdesc value_type_m = M(value_type_f);
static const struct fdesc label_f[] = { F(1, "key", F_STRIDX), F(2, "str", F_STRIDX),
					F(3, "num", F_UINT), F(4, "num_unit", F_STRIDX) };
static const struct mdesc label_m = M(label_f);
static const struct fdesc sample_f[] = { F(1, "location_id", F_PACKED), F(2, "value", F_PACKED),
					 FM(3, "label", &label_m) };
static const struct mdesc sample_m = M(sample_f);
static const struct fdesc mapping_f[] = {
	F(1, "id", F_UINT),	      F(2, "memory_start", F_UINT), F(3, "memory_limit", F_UINT),
	F(4, "file_offset", F_UINT),  F(5, "filename", F_STRIDX),   F(6, "build_id", F_STRIDX),
	F(7, "has_functions", F_UINT)
};
static const struct mdesc mapping_m = M(mapping_f);
static const struct fdesc line_f[] = { F(1, "function_id", F_UINT), F(2, "line", F_UINT) };
static const struct mdesc line_m = M(line_f);
static const struct fdesc location_f[] = { F(1, "id", F_UINT), F(2, "mapping_id", F_UINT),
					   F(3, "address", F_UINT), FM(4, "line", &line_m) };
static const struct mdesc location_m = M(location_f);
static const struct fdesc function_f[] = { F(1, "id", F_UINT), F(2, "name", F_STRIDX),
					   F(3, "system_name", F_STRIDX),
					   F(4, "filename", F_STRIDX), F(5, "start_line", F_UINT) };
static const struct mdesc function_m = M(function_f);
static const struct fdesc profile_f[] = {
	FM(1, "sample_type", &value_type_m),  FM(2, "sample", &sample_m),
	FM(3, "mapping", &mapping_m),	      FM(4, "location", &location_m),
	FM(5, "function", &function_m),	      F(6, "string_table", F_STRING),
	F(9, "time_nanos", F_UINT),	      F(10, "duration_nanos", F_UINT),
	FM(11, "period_type", &value_type_m), F(12, "period", F_UINT),
	F(13, "comment", F_STRIDX),	      F(14, "default_sample_type", F_STRIDX),
};
static const struct mdesc profile_m = M(profile_f);

struct strs {
	const uint8_t *s[4096];
	size_t len[4096];
	size_t n;
};

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		assert_true(*p < end && shift < 64);
		v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return v;
	}
}

static void collect_strings(const uint8_t *p, const uint8_t *end, struct strs *st)
{
	while (p < end) {
		uint64_t tag = varint(&p, end), len;

		if ((tag & 7) == PB_VARINT) {
			varint(&p, end);
			continue;
		}
		assert_int_equal(tag & 7, PB_LEN);
		len = varint(&p, end);
		assert_true(len <= (uint64_t)(end - p));
		if (tag >> 3 == PPROF_STRING_TABLE) {
			assert_true(st->n < 4096);
			st->s[st->n] = p;
			st->len[st->n++] = len;
		}
		p += len;
	}
}

static void dump(struct sbuf *out, const uint8_t *p, const uint8_t *end, const struct mdesc *m,
		 const struct strs *st, int indent)
{
	while (p < end) {
		uint64_t tag = varint(&p, end), v, len;
		const struct fdesc *fd = NULL;

		for (size_t i = 0; i < m->n; i++)
			if (m->fields[i].num == tag >> 3)
				fd = &m->fields[i];
		if (!fd) {
			print_error("unexpected field %" PRIu64 "\n", tag >> 3);
			fail();
		}
		sbuf_printf(out, "%*s%s", indent, "", fd->name);
		switch (fd->type) {
		case F_UINT:
		case F_STRIDX:
			assert_int_equal(tag & 7, PB_VARINT);
			v = varint(&p, end);
			if (fd->type == F_UINT) {
				sbuf_printf(out, ": %" PRIu64 "\n", v);
			} else {
				assert_true(v < st->n);
				sbuf_printf(out, ": \"%.*s\"\n", (int)st->len[v], st->s[v]);
			}
			break;
		case F_PACKED:
			assert_int_equal(tag & 7, PB_LEN);
			len = varint(&p, end);
			assert_true(len <= (uint64_t)(end - p));
			sbuf_puts(out, ": [");
			for (const uint8_t *q = p, *qe = p + len; q < qe;) {
				const char *sep = q == p ? "" : " ";

				v = varint(&q, qe);
				sbuf_printf(out, "%s%" PRIu64, sep, v);
			}
			sbuf_puts(out, "]\n");
			p += len;
			break;
		case F_STRING:
		case F_MSG:
			assert_int_equal(tag & 7, PB_LEN);
			len = varint(&p, end);
			assert_true(len <= (uint64_t)(end - p));
			if (fd->type == F_STRING) {
				sbuf_printf(out, ": \"%.*s\"\n", (int)len, p);
			} else {
				sbuf_puts(out, " {\n");
				dump(out, p, p + len, fd->msg, st, indent + 2);
				sbuf_printf(out, "%*s}\n", indent, "");
			}
			p += len;
			break;
		}
	}
}

static char *decode_text(const uint8_t *buf, size_t len)
{
	struct strs *st = calloc(1, sizeof(*st));
	struct sbuf out = { 0 };

	collect_strings(buf, buf + len, st);
	/* What every pprof reader requires of the string table. */
	assert_true(st->n > 0);
	assert_int_equal(st->len[0], 0);
	for (size_t i = 0; i < st->n; i++)
		for (size_t j = i + 1; j < st->n; j++)
			assert_false(st->len[i] == st->len[j] &&
				     !memcmp(st->s[i], st->s[j], st->len[i]));
	dump(&out, buf, buf + len, &profile_m, st, 0);
	free(st);
	return out.buf;
}

/* Plain zlib, not the reader's gunzip: the writer is tested on its own. */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream zs = { 0 };

	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

/* --- tests ------------------------------------------------------------------ */

static void test_pprof_golden(void **state)
{
	struct profile *p = fx_profile();
	uint8_t *msg;
	size_t len;
	char *text;

	assert_int_equal(pprof__encode(p, &msg, &len), 0);
	text = decode_text(msg, len);
	assert_golden("fixture.pprof.txt", text, strlen(text));
	/* Leaf first: the first location of the first sample is a leaf. */
	assert_non_null(strstr(text, "key: \"comm\"\n    str: \"app\""));
	assert_non_null(
		strstr(text, "filename: \"[kernel.kallsyms]\"\n  build_id: \"fedcba9876543210\""));
	free(text);
	free(msg);
	profile__free(p);
}

static void test_pprof_gzip_layer(void **state)
{
	struct profile *p = fx_profile();
	uint8_t *msg, *back;
	size_t len, blen, zlen;
	char *gz = fx_write(&writer_pprof, p, NULL, &zlen);

	assert_int_equal(pprof__encode(p, &msg, &len), 0);
	assert_true(zlen > 18);
	assert_int_equal((uint8_t)gz[0], 0x1f);
	assert_int_equal((uint8_t)gz[1], 0x8b);
	assert_int_equal(gz[4] | gz[5] | gz[6] | gz[7], 0); /* mtime 0: reproducible */
	back = gunzip((const uint8_t *)gz, zlen, &blen);
	assert_int_equal(blen, len);
	assert_memory_equal(back, msg, len);
	free(back);
	free(msg);
	free(gz);
	profile__free(p);
}

static void test_pprof_unknown_frequency(void **state)
{
	struct profile *p = profile__new();
	uint8_t *msg;
	size_t len;
	char *text;

	/* As converted from folded text: no pid, no frequency, no time. */
	FX(p, "sh", 0, 0, 3, FX_NOMOD("main"));
	assert_int_equal(pprof__encode(p, &msg, &len), 0);
	text = decode_text(msg, len);
	assert_string_equal(text, "sample_type {\n"
				  "  type: \"samples\"\n"
				  "  unit: \"count\"\n"
				  "}\n"
				  "function {\n"
				  "  id: 1\n"
				  "  name: \"main\"\n"
				  "  system_name: \"main\"\n"
				  "}\n"
				  "location {\n"
				  "  id: 1\n"
				  "  line {\n"
				  "    function_id: 1\n"
				  "  }\n"
				  "}\n"
				  "sample {\n"
				  "  location_id: [1]\n"
				  "  value: [3]\n"
				  "  label {\n"
				  "    key: \"comm\"\n"
				  "    str: \"sh\"\n"
				  "  }\n"
				  "}\n"
				  "period_type {\n"
				  "  type: \"samples\"\n"
				  "  unit: \"count\"\n"
				  "}\n"
				  "period: 1\n"
				  "string_table: \"\"\n"
				  "string_table: \"samples\"\n"
				  "string_table: \"count\"\n"
				  "string_table: \"main\"\n"
				  "string_table: \"comm\"\n"
				  "string_table: \"sh\"\n");
	free(text);
	free(msg);
	profile__free(p);
}

/*
 * bpfprof count's encoder: a counted function called by another counted one
 * (the same location), by an uncounted one (a location of its own, no
 * mapping), and calls by no known caller (a sample of the function alone).
 */
static void test_pprof_count(void **state)
{
	struct count_caller work_callers[] = { { "main", 3 }, { "libc+0x10", 1 } };
	struct count_fn fns[] = {
		{ .function = "work",
		  .module = "/usr/bin/app",
		  .st = { .calls = 6, .total_ns = 600 },
		  .callers = work_callers,
		  .nr_callers = 2 },
		{ .function = "main",
		  .module = "/usr/bin/app",
		  .st = { .calls = 1, .total_ns = 1000 } },
		{ .function = "idle", .module = "/lib/libc.so.6" }, /* no calls: left out */
	};
	uint8_t *msg;
	size_t len;
	char *text;

	assert_int_equal(pprof__encode_count(fns, 3, 5000000000ull, &msg, &len), 0);
	text = decode_text(msg, len);
	assert_golden("count.pprof.txt", text, strlen(text));
	free(text);
	free(msg);
	assert_int_equal(pprof__encode_count(NULL, 0, 0, &msg, &len), 0);
	text = decode_text(msg, len);
	assert_non_null(strstr(text, "default_sample_type: \"time\""));
	free(text);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pprof_golden),
		cmocka_unit_test(test_pprof_gzip_layer),
		cmocka_unit_test(test_pprof_unknown_frequency),
		cmocka_unit_test(test_pprof_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
