/* recur compare (see compare.h).
 * (Its options: the table below, which `recur compare --help` prints.)
 */
#include "compare.h"
#include "cli.h"
#include "svg.h"
#include "results.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED_NAME "000_c94c45093349daa5.txt"
#define C_MAXSERIES 32

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A dimension of a row's shape: a whole number in 1..INT_MAX (a larger
 * double would not convert to int defined). */
static int row_dim(const json_t *sh, const char *key, int *out)
{
	double v = num(sh, key);
	if (!(v >= 1 && v <= INT_MAX && v == floor(v)))
		return -1;
	*out = (int)v;
	return 0;
}

static int row_shape(const json_t *row, recur_shape *s)
{
	const json_t *sh = json_object_get(row, "shape");
	recur_shape t;
	if (row_dim(sh, "batch", &t.B) || row_dim(sh, "length", &t.L) || row_dim(sh, "width", &t.D))
		return -1;
	*s = t;
	return 0;
}

static const char *arch_of(const json_t *row)
{
	const char *a = json_string_value(json_object_get(row, "architecture"));
	return a ? a : "?";
}

static double fb_median(const json_t *row)
{
	return num(json_object_get(row, "forward_backward"), "median_ms");
}

static double mem_per_elem(const json_t *row, recur_shape s)
{
	return num(row, "peak_allocated_delta_bytes") / ((double)s.B * s.L * s.D);
}

static const json_t *find_match(const json_t *ref, const char *arch, recur_shape s)
{
	size_t i;
	const json_t *r;
	recur_shape t;
	json_array_foreach(json_object_get(ref, "rows"), i, r)
		if (!strcmp(arch_of(r), arch) && row_shape(r, &t) == 0 && !memcmp(&t, &s, sizeof s))
			return r;
	return NULL;
}

int compare_rows(const json_t *ours, const json_t *ref, CmpRow **rows, int *n, char *err, size_t errlen)
{
	const json_t *a = json_object_get(ours, "rows");
	*rows = NULL;
	*n = 0;
	if (!json_is_array(a)) {
		snprintf(err, errlen, "the results have no \"rows\" array");
		return -1;
	}
	if (!json_is_array(json_object_get(ref, "rows"))) {
		snprintf(err, errlen, "the reference has no \"rows\" array");
		return -1;
	}
	CmpRow *out = calloc(json_array_size(a) + 1, sizeof *out);
	if (!out) {
		snprintf(err, errlen, "out of host memory");
		return -1;
	}
	size_t i;
	const json_t *r;
	json_array_foreach(a, i, r) {
		CmpRow *c = &out[*n];
		if (row_shape(r, &c->s)) {
			snprintf(err, errlen, "results row %zu has no valid shape {batch, length, width}", i);
			free(out);
			return -1;
		}
		snprintf(c->arch, sizeof c->arch, "%s", arch_of(r));
		const char *b = json_string_value(json_object_get(r, "backend"));
		snprintf(c->backend, sizeof c->backend, "%s", b ? b : "?");
		c->ours_ms = fb_median(r);
		c->ours_mem = mem_per_elem(r, c->s);
		c->floor_ms = num(json_object_get(r, "floor"), "forward_backward_ms");
		c->floor_frac = c->floor_ms / c->ours_ms;   /* NAN propagates */
		const json_t *m = find_match(ref, c->arch, c->s);
		c->ref_ms = m ? fb_median(m) : NAN;
		c->ref_mem = m ? mem_per_elem(m, c->s) : NAN;
		b = m ? json_string_value(json_object_get(m, "backend")) : NULL;
		snprintf(c->ref_backend, sizeof c->ref_backend, "%s", b ? b : "");
		c->speedup = c->ref_ms / c->ours_ms;
		(*n)++;
	}
	*rows = out;
	return 0;
}

static void cell(char *out, size_t n, const char *fmt, double v)
{
	if (isfinite(v))
		snprintf(out, n, fmt, v);
	else
		snprintf(out, n, "-");
}

void compare_print(FILE *f, const CmpRow *rows, int n)
{
	fprintf(f, "%-7s %-15s %11s %11s %8s %9s %8s %11s %11s  %s\n", "mixer", "shape", "ours f+b", "ref f+b",
	        "speedup", "floor ms", "of floor", "ours B/el", "ref B/el", "variant");
	for (int i = 0; i < n; i++) {
		const CmpRow *c = &rows[i];
		char sh[48], a[5][32], sp[32];
		snprintf(sh, sizeof sh, "%dx%dx%d", c->s.B, c->s.L, c->s.D);
		cell(a[0], 32, "%.4f ms", c->ours_ms);
		cell(a[1], 32, "%.4f ms", c->ref_ms);
		cell(sp, 32, "%.2fx", c->speedup);
		cell(a[2], 32, "%.4f", c->floor_ms);
		cell(a[3], 32, "%.1f%%", 100 * c->floor_frac);
		fprintf(f, "%-7s %-15s %11s %11s %8s %9s %8s", c->arch, sh, a[0], a[1], sp, a[2], a[3]);
		cell(a[0], 32, "%.2f", c->ours_mem);
		cell(a[1], 32, "%.2f", c->ref_mem);
		fprintf(f, " %11s %11s  %s\n", a[0], a[1], c->backend);
	}
}

/* ---- the chart ---- */

typedef struct { int B, D; } Group;

typedef struct {
	SvgSeries s[C_MAXSERIES];
	int n;
	Group g[8];
	int ng;
} Chart;

static int group_of(const Chart *ch, recur_shape s)
{
	for (int i = 0; i < ch->ng; i++)
		if (ch->g[i].B == s.B && ch->g[i].D == s.D)
			return i;
	return -1;
}

/* The series named label (created on first use), or NULL when full. */
static SvgSeries *series_for(Chart *ch, const char *label, const char *color, int dash, int marker)
{
	for (int i = 0; i < ch->n; i++)
		if (!strcmp(ch->s[i].label, label))
			return &ch->s[i];
	if (ch->n == C_MAXSERIES)
		return NULL;
	SvgSeries *s = &ch->s[ch->n++];
	memset(s, 0, sizeof *s);
	snprintf(s->label, sizeof s->label, "%s", label);
	s->color = color;
	s->dash = dash;
	s->marker = marker;
	return s;
}

static const char *mixer_color(const char *arch)
{
	static const char *const named[][2] = { { "rglru", "#1f77b4" }, { "samu", "#d62728" } };
	static const char *const other[] = { "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b" };
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (!strcmp(arch, named[i][0]))
			return named[i][1];
	unsigned h = 0;
	for (const char *p = arch; *p; p++)
		h = h * 31 + (unsigned char)*p;
	return other[h % 4];
}

static void add_rows(Chart *ch, const json_t *doc, const char *who, int dash, int marker)
{
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(doc, "rows"), i, r) {
		recur_shape s;
		if (row_shape(r, &s))
			continue;
		int g = group_of(ch, s);
		if (g < 0)
			continue;   /* a reference row at a batch/width we did not run */
		char label[128], gl[48] = "";
		if (ch->ng > 1)
			snprintf(gl, sizeof gl, " B=%d D=%d", s.B, s.D);
		snprintf(label, sizeof label, "%s, %s%s", arch_of(r), who, gl);
		SvgSeries *se = series_for(ch, label, mixer_color(arch_of(r)), dash, marker);
		if (se)
			svg_add(se, s.L, fb_median(r));
	}
}

static void add_floor(Chart *ch, const json_t *doc)
{
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(doc, "rows"), i, r) {
		const json_t *fl = json_object_get(r, "floor");
		recur_shape s;
		double ms = num(fl, "forward_backward_ms");
		if (!fl || row_shape(r, &s) || !isfinite(ms))
			continue;
		double bw = num(fl, "copy_bandwidth_gb_per_s");
		const char *what = "copy";
		if (!isfinite(bw)) {
			bw = num(fl, "write_bandwidth_gb_per_s");
			what = "write";
		}
		char label[128], gl[48] = "";
		if (ch->ng > 1)
			snprintf(gl, sizeof gl, " B=%d D=%d", s.B, s.D);
		/* 10 B per element (forward + backward) at the bandwidth measured in the run */
		snprintf(label, sizeof label, "floor (%s, %.0f GB/s)%s", what, bw, gl);
		SvgSeries *se = series_for(ch, label, "#222", 2, 2);
		if (!se)
			continue;
		int dup = 0;   /* one point per length: every mixer's floor is the same */
		for (int k = 0; k < se->n; k++)
			dup |= se->x[k] == s.L;
		if (!dup)
			svg_add(se, s.L, ms);
	}
}

static const char *gpu_of(const json_t *doc)
{
	const char *g = json_string_value(json_object_get(json_object_get(doc, "environment"), "gpu"));
	return g ? g : "unknown GPU";
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int compare_svg(const char *path, const json_t *ours, const json_t *ref, const char *ours_name,
                const char *ref_name, char *err, size_t errlen)
{
	Chart *ch = calloc(1, sizeof *ch);
	if (!ch) {
		snprintf(err, errlen, "out of host memory");
		return -1;
	}
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(ours, "rows"), i, r) {
		recur_shape s;
		if (row_shape(r, &s) == 0 && group_of(ch, s) < 0 && ch->ng < 8)
			ch->g[ch->ng++] = (Group){ s.B, s.D };
	}
	add_rows(ch, ours, "ours", 0, 0);
	add_rows(ch, ref, "reference", 1, 1);
	add_floor(ch, ours);
	char sub[512], groups[64] = "";
	if (ch->ng == 1)
		snprintf(groups, sizeof groups, "; B=%d, D=%d", ch->g[0].B, ch->g[0].D);
	snprintf(sub, sizeof sub, "ours: %s (%s) vs reference: %s (%s)%s", gpu_of(ours), base_name(ours_name),
	         gpu_of(ref), base_name(ref_name), groups);
	SvgChart c = { .title = "forward + backward time against sequence length", .subtitle = sub,
	               .xlabel = "sequence length L (tokens)", .ylabel = "forward + backward median (ms)", .x_pow2 = 1 };
	int rc = svg_write(path, &c, ch->s, ch->n, err, errlen);
	free(ch);
	return rc;
}

void compare_seed_path(char *out, size_t n)
{
	const char *e = getenv("RECUR_SEED");
	if (e && *e)
		snprintf(out, n, "%s", e);
	else
		snprintf(out, n, "%s/../shared/seed/%s", RECUR_SOURCE_DIR, SEED_NAME);
}

void compare_svg_path(const char *results, char *out, size_t n)
{
	size_t len = strlen(results);
	const char *dot = strrchr(results, '.'), *slash = strrchr(results, '/');
	if (dot && (!slash || dot > slash) && dot != results && dot[-1] != '/')
		len = (size_t)(dot - results);
	snprintf(out, n, "%.*s.svg", (int)len, results);
}

static json_t *load(const char *path, const char *what, char *err, size_t errlen)
{
	json_error_t je;
	json_t *d = json_load_file(path, 0, &je);
	if (d)
		return d;
	if (je.line < 1)   /* not opened: jansson's text already names the file */
		snprintf(err, errlen, "cannot read the %s: %s", what, je.text);
	else
		snprintf(err, errlen, "%s %s:%d:%d: %s", what, path, je.line, je.column, je.text);
	return d;
}

enum { K_SVG };

static const CliOpt OPTS[] = {
	[K_SVG] = { "--svg", "FILE", NULL, "where the chart goes (default: RESULTS with the extension .svg)", 0 },
};

const CliCmd cli_compare_cmd = {
	"compare", "RESULTS [REFERENCE]",
	"table and chart of RESULTS against REFERENCE (default: $RECUR_SEED, else the seed's results)",
	OPTS, CLI_NOPTS(OPTS), cli_compare,
};

typedef struct {
	const char *pos[2];   /* RESULTS, REFERENCE */
	int npos;
	const char *svg;
} CmpArgs;

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	CmpArgs *a = ctx;
	switch (opt) {
	case K_SVG: return cli_parse_path(v, &a->svg, err, n);
	case CLI_OPERAND:
		if (a->npos == 2) {
			snprintf(err, n, "unexpected argument %s: RESULTS and REFERENCE are already %s and %s", v, a->pos[0],
			         a->pos[1]);
			return -1;
		}
		if (!*v) {
			snprintf(err, n, "%s is an empty string: want a path", a->npos ? "REFERENCE" : "RESULTS");
			return -1;
		}
		a->pos[a->npos++] = v;
		return 0;
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

int cli_compare(int argc, char **argv)
{
	CmpArgs a = { .npos = 0 };
	int prc = cli_parse(&cli_compare_cmd, argc, argv, set, &a);
	if (prc)
		return prc > 0 ? 0 : 2;
	const char **pos = a.pos, *svg = a.svg;
	if (!pos[0]) {
		fputs("recur compare: RESULTS missing: which results file to compare (see recur compare --help)\n", stderr);
		return 2;
	}
	char refpath[4096], svgpath[4096], err[4096];
	if (pos[1])
		snprintf(refpath, sizeof refpath, "%s", pos[1]);
	else
		compare_seed_path(refpath, sizeof refpath);
	if (svg)
		snprintf(svgpath, sizeof svgpath, "%s", svg);
	else
		compare_svg_path(pos[0], svgpath, sizeof svgpath);
	/* the chart never replaces what it is drawn from: "compare res.svg REF"
	 * would otherwise derive res.svg itself as the chart's path */
	const char *inputs[2] = { pos[0], refpath };
	if (cli_out_not_input(svgpath, svg ? "chart (--svg)" : "chart (by default RESULTS with .svg)", inputs, 2, err,
	                      sizeof err)) {
		fprintf(stderr, "recur compare: %s%s\n", err, svg ? "" : " with --svg FILE");
		return 2;
	}
	json_t *ours = load(pos[0], "results", err, sizeof err), *ref = NULL;
	if (ours && !(ref = load(refpath, "reference", err, sizeof err)) && !pos[1])
		snprintf(err + strlen(err), sizeof err - strlen(err),
		         " (the seed file: pass REFERENCE or set RECUR_SEED)");
	CmpRow *rows = NULL;
	int n = 0, rc = 1;
	if (ours && ref && compare_rows(ours, ref, &rows, &n, err, sizeof err) == 0) {
		printf("ours: %s (%s)\nreference: %s (%s)\n", pos[0], gpu_of(ours), refpath, gpu_of(ref));
		compare_print(stdout, rows, n);
		if (compare_svg(svgpath, ours, ref, pos[0], refpath, err, sizeof err) == 0) {
			printf("wrote %s\n", svgpath);
			rc = 0;
		}
	}
	if (rc)
		fprintf(stderr, "recur compare: %s\n", err);
	free(rows);
	json_decref(ours);
	json_decref(ref);
	return rc;
}
