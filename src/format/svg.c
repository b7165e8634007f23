// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * svg.c - interactive flame graphs (and differential ones) as one
 * self-contained SVG file: no network, no external scripts or fonts.
 *
 * Why JSON + script rather than one <rect> per frame: a profile with 50,000
 * distinct stacks has hundreds of thousands of tree nodes; as SVG elements
 * (with titles) that is tens of megabytes and seconds of layout, and most of
 * them are narrower than a pixel. Instead the call tree (flametree.c, sub-pixel
 * siblings aggregated) is embedded as a compact preorder array, and the script
 * (flamegraph.js, compiled in) draws only the frames wide enough to see at the
 * current zoom, redrawing on click, reset and search. Viewers that do not run
 * scripts (an <img> tag) show the title and a note saying so.
 */
#include "format/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/flametree.h"
#include "base/util.h"

#include "gen/flamegraph_js.h" /* static const char flamegraph_js[] */

#define SVG_WIDTH  1200
#define SVG_FRAME  16
#define SVG_PAD	   10
#define SVG_TOP	   58
#define SVG_BOTTOM 30

/*
 * Nodes with less than this share of all samples are aggregated per parent
 * into one "[N small frames]" node. At 1180 px they stay under 0.3 px until
 * one zooms 25x (into a frame with 4% of the samples); flamegraph.pl drops
 * frames under 0.1 px for good, 8x coarser. Profiles under 100,000 samples
 * lose nothing. For 50,000 random distinct stacks (765k tree nodes) this
 * keeps ~230k nodes: 6.8 MB becomes ~2 MB.
 */
#define SVG_MIN_SHARE 1e-5

static uint64_t min_value(uint64_t total)
{
	double v = total * SVG_MIN_SHARE;
	uint64_t m = (uint64_t)v;

	return m < v ? m + 1 : m; /* round up: under the share means invisible */
}

static void put_xml_text(FILE *f, const char *s)
{
	size_t size = 3 * strlen(s) + 1;
	char *clean = malloc(size);

	if (!clean)
		return;
	writer__clean_utf8(s, clean, size);
	for (const char *p = clean; *p; p++) {
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*p, f);
		}
	}
	free(clean);
}

static void put_count(struct sbuf *sb, uint64_t v)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);

	for (int i = 0; i < n; i++) {
		sbuf_add(sb, &digits[i], 1);
		if ((n - i - 1) % 3 == 0 && i + 1 < n)
			sbuf_add(sb, ",", 1);
	}
}

/* How a view's unit reads: "us" is "µs". */
static const char *unit_label(const char *unit)
{
	return !strcmp(unit, "us") ? "\u00b5s" : unit;
}

/* "host · 2025-01-02 10:00 UTC · 10.0 s at 99 Hz · 1,980 samples · 3 lost" */
static void describe_profile(struct sbuf *sb, const struct profile *p, uint64_t total)
{
	const struct profile_meta *m = profile__meta_c(p);

	if (m->hostname[0])
		sbuf_printf(sb, "%s \u00b7 ", m->hostname);
	if (m->start_ns) {
		time_t t = (time_t)(m->start_ns / NS_PER_SEC);
		struct tm tm;
		char when[32];

		if (gmtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm))
			sbuf_printf(sb, "%s \u00b7 ", when);
	}
	if (m->duration_ns)
		sbuf_printf(sb, "%.1f s", m->duration_ns / NS_PER_SEC_F);
	if (m->freq_hz)
		sbuf_printf(sb, "%s%u Hz", m->duration_ns ? " at " : "", m->freq_hz);
	if (m->duration_ns || m->freq_hz)
		sbuf_puts(sb, " \u00b7 ");
	put_count(sb, total);
	if (m->unit[0])
		sbuf_printf(sb, " %s of %s", unit_label(m->unit), m->value_name);
	else
		sbuf_puts(sb, total == 1 ? " sample" : " samples");
	if (m->lost) {
		sbuf_puts(sb, " \u00b7 ");
		put_count(sb, m->lost);
		sbuf_puts(sb, " lost");
	}
}

static int emit(FILE *f, const struct flametree *t, const char *title, const char *subtitle,
		bool diff, bool inverted, const char *unit)
{
	uint32_t depth = flametree__max_depth(t), *stack;
	unsigned height = SVG_TOP + (depth + 1) * SVG_FRAME + SVG_BOTTOM;
	size_t sp = 0, nr = flametree__nr_nodes(t);
	bool first = true;

	stack = malloc((nr + 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
		"height=\"%u\" viewBox=\"0 0 %u %u\" id=\"flamegraph\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<style>\n"
	      "text { font-family: ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace;"
	      " font-size: 12px; fill: #000; }\n"
	      "#title { font-size: 17px; font-weight: bold; text-anchor: middle; }\n"
	      "#subtitle, #fg-loading { text-anchor: middle; fill: #555; }\n"
	      "#matched { text-anchor: end; }\n"
	      ".btn { cursor: pointer; fill: #0645ad; text-decoration: underline; }\n"
	      ".btn.off { visibility: hidden; }\n"
	      "#search { text-anchor: end; }\n"
	      "#frames g { cursor: pointer; }\n"
	      "#frames rect { stroke: none; }\n"
	      "#frames g:hover rect { stroke: #000; stroke-width: 0.7; }\n"
	      "#frames text { pointer-events: none; }\n"
	      "#frames .anc rect { opacity: 0.55; }\n"
	      "</style>\n"
	      "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	      "<stop offset=\"5%\" stop-color=\"#f4f4f4\"/><stop offset=\"95%\" "
	      "stop-color=\"#e8e8ee\"/></linearGradient></defs>\n"
	      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"url(#bg)\"/>\n",
	      f);
	fprintf(f, "<text id=\"title\" x=\"%u\" y=\"24\">", SVG_WIDTH / 2);
	put_xml_text(f, title);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"44\">", SVG_WIDTH / 2);
	put_xml_text(f, subtitle);
	fprintf(f, "</text>\n");
	fprintf(f,
		"<text id=\"reset\" class=\"btn off\" x=\"%u\" y=\"44\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%u\" y=\"44\">Search</text>\n"
		"<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n"
		"<text id=\"fg-loading\" x=\"%u\" y=\"%u\">This flame graph is drawn by "
		"JavaScript: open the file itself in a web browser.</text>\n"
		"<g id=\"frames\"></g>\n",
		SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_PAD, height - 10, SVG_WIDTH - SVG_PAD,
		height - 10, SVG_WIDTH / 2, SVG_TOP + 20);

	fprintf(f,
		"<script type=\"application/json\" id=\"fg-data\"><![CDATA[\n"
		"{\"version\":1,\"width\":%u,\"height\":%u,\"frameHeight\":%u,\"pad\":%u,"
		"\"top\":%u,\"bottom\":%u,\"diff\":%d,\"inverted\":%d,\"unit\":",
		SVG_WIDTH, height, SVG_FRAME, SVG_PAD, SVG_TOP, SVG_BOTTOM, diff, inverted);
	writer__json_string(f, unit && unit[0] ? unit_label(unit) : "samples");
	fputs(",\n\"labels\":[", f);
	for (size_t i = 0; i < flametree__nr_labels(t); i++) {
		if (i)
			fputc(',', f);
		writer__json_string(f, flametree__label(t, i)->name);
	}
	fputs("],\n\"kinds\":[", f);
	for (size_t i = 0; i < flametree__nr_labels(t); i++)
		fprintf(f, "%s%d", i ? "," : "", (int)flametree__label(t, i)->kind);
	fputs("],\n\"nodes\":[", f);
	/* Preorder, siblings in the order flametree__finish() left them. */
	stack[sp++] = 0;
	while (sp) {
		const struct ftnode *nd = flametree__node(t, stack[--sp]);
		size_t base = sp;

		if (diff)
			fprintf(f, "%s%u,%" PRIu64 ",%" PRIu64 ",%u", first ? "" : ",", nd->label,
				nd->value[0], nd->value[1], nd->nr_children);
		else
			fprintf(f, "%s%u,%" PRIu64 ",%u", first ? "" : ",", nd->label, nd->value[0],
				nd->nr_children);
		first = false;
		for (uint32_t c = nd->child; c != FT_NONE; c = flametree__node(t, c)->next)
			stack[sp++] = c;
		/* Reverse what was pushed so the first child is on top. */
		for (size_t lo = base, hi = sp; lo + 1 < hi; lo++, hi--) {
			uint32_t tmp = stack[lo];

			stack[lo] = stack[hi - 1];
			stack[hi - 1] = tmp;
		}
	}
	fputs("]}\n]]></script>\n<script><![CDATA[\n", f);
	fputs(flamegraph_js, f);
	fputs("]]></script>\n</svg>\n", f);
	free(stack);
	return 0;
}

static int write_svg(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct flametree *t = flametree__new();
	struct sbuf sub = { 0 };
	bool inverted = o && o->inverted;
	const char *title;
	int err;

	if (!t)
		return -ENOMEM;
	flametree__set_lines(t, o && o->lines);
	err = flametree__add(t, p, 0);
	if (!err)
		err = flametree__finish(t, min_value(profile__total(p)));
	if (!err) {
		const struct profile_meta *m = profile__meta_c(p);
		char deflt[96];

		describe_profile(&sub, p, profile__total(p));
		if (m->unit[0])
			snprintf(deflt, sizeof(deflt), "%s%s (%s)%s", m->value_name,
				 inverted ? " icicle graph" : " flame graph", unit_label(m->unit),
				 strcmp(m->value_name, "wall-clock time")
					 ? ""
					 : ": running and [off-cpu] waiting");
		else
			snprintf(deflt, sizeof(deflt), "%s",
				 inverted ? "CPU icicle graph" : "CPU flame graph");
		if (deflt[0] >= 'a' && deflt[0] <= 'z')
			deflt[0] = (char)(deflt[0] - 'a' + 'A');
		title = o && o->title ? o->title : deflt;
		err = emit(f, t, title, sub.buf ? sub.buf : "", false, inverted, m->unit);
	}
	sbuf_free(&sub);
	flametree__free(t);
	return err;
}

static int write_diff_svg(const struct profile *before, const struct profile *after, FILE *f,
			  const struct out_opts *o)
{
	struct flametree *t = flametree__new();
	struct sbuf sub = { 0 };
	int err;

	if (!t)
		return -ENOMEM;
	flametree__set_lines(t, o && o->lines);
	err = flametree__add(t, after, 0) ?: flametree__add(t, before, 1);
	if (!err)
		err = flametree__finish(t, min_value(profile__total(after)));
	if (!err) {
		sbuf_puts(&sub, "width: after (");
		put_count(&sub, profile__total(after));
		sbuf_puts(&sub, " samples) \u00b7 colour: change in share since before (");
		put_count(&sub, profile__total(before));
		sbuf_puts(&sub, " samples), red grew, blue shrank");
		err = emit(f, t, o && o->title ? o->title : "Differential CPU flame graph",
			   sub.buf ? sub.buf : "", true, o && o->inverted, NULL);
	}
	sbuf_free(&sub);
	flametree__free(t);
	return err;
}

/*
 * SVGZ: the same file gzip-compressed (SVG's own compressed form: browsers
 * open .svgz files as SVG), about a sixth of the size. Written whole into
 * memory first: a flame graph is a few MB at most.
 */
static int gzip_svg(FILE *f, int (*svg)(FILE *m, const void *ctx), const void *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -errno;
	err = svg(m, ctx);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (!err)
		err = writer__gzip(f, buf, len);
	free(buf);
	return err;
}

struct svg_job {
	const struct profile *p, *before;
	const struct out_opts *o;
};

static int svg_of(FILE *m, const void *ctx)
{
	const struct svg_job *j = ctx;

	return j->before ? write_diff_svg(j->before, j->p, m, j->o) : write_svg(j->p, m, j->o);
}

static int write_svgz(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct svg_job j = { .p = p, .o = o };

	return gzip_svg(f, svg_of, &j);
}

static int write_diff_svgz(const struct profile *before, const struct profile *after, FILE *f,
			   const struct out_opts *o)
{
	struct svg_job j = { .p = after, .before = before, .o = o };

	return gzip_svg(f, svg_of, &j);
}

const struct writer writer_svg = {
	.name = "svg",
	.exts = { ".svg" },
	.description = "interactive flame graph (open in a web browser)",
	.write = write_svg,
};

const struct diff_writer diff_writer_svg = {
	.name = "svg",
	.exts = { ".svg" },
	.description = "differential flame graph: widths from AFTER, red grew, blue shrank",
	.write = write_diff_svg,
};

const struct writer writer_svgz = {
	.name = "svgz",
	.exts = { ".svgz" },
	.description = "the flame graph gzip-compressed (web servers, Firefox)",
	.write = write_svgz,
};

const struct diff_writer diff_writer_svgz = {
	.name = "svgz",
	.exts = { ".svgz" },
	.description = "the differential flame graph gzip-compressed",
	.write = write_diff_svgz,
};
