/* Log-log SVG charts (see svg.h). */
#include "svg.h"
#include "results.h"
#include <errno.h>
#include <math.h>
#include <string.h>

enum { W = 900, H = 540, ML = 90, MR = 250, MT = 70, MB = 70 };

typedef struct { double lo, hi; } Range;   /* log10 of the axis ends */

void svg_add(SvgSeries *s, double x, double y)
{
	if (s->n < SVG_MAXPTS) {
		s->x[s->n] = x;
		s->y[s->n] = y;
		s->n++;
	}
}

static void text_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '&') fputs("&amp;", f);
		else if (*s == '<') fputs("&lt;", f);
		else if (*s == '>') fputs("&gt;", f);
		else if (*s == '"') fputs("&quot;", f);
		else fputc(*s, f);
	}
}

static int ok(double x, double y)
{
	return isfinite(x) && isfinite(y) && x > 0 && y > 0;
}

/* The data's extent in log10, widened by a margin (and to a decade's tenth
 * when all points share a value). */
static int extent(const SvgSeries *s, int ns, int axis, Range *r)
{
	double lo = INFINITY, hi = -INFINITY;
	for (int k = 0; k < ns; k++)
		for (int i = 0; i < s[k].n; i++)
			if (ok(s[k].x[i], s[k].y[i])) {
				double v = log10(axis ? s[k].y[i] : s[k].x[i]);
				lo = v < lo ? v : lo;
				hi = v > hi ? v : hi;
			}
	if (!(lo <= hi))
		return -1;
	double pad = (hi - lo) * 0.06;
	if (pad < 0.05)
		pad = 0.05;
	r->lo = lo - pad;
	r->hi = hi + pad;
	return 0;
}

static double px(const Range *r, double v)
{
	return ML + (log10(v) - r->lo) / (r->hi - r->lo) * (W - ML - MR);
}

static double py(const Range *r, double v)
{
	return H - MB - (log10(v) - r->lo) / (r->hi - r->lo) * (H - MT - MB);
}

static void label_pow2(double v, char *out, size_t n)
{
	if (v >= 1048576 && fmod(v, 1048576) == 0)
		snprintf(out, n, "%gM", v / 1048576);
	else if (v >= 1024 && fmod(v, 1024) == 0)
		snprintf(out, n, "%gK", v / 1024);
	else
		snprintf(out, n, "%g", v);
}

/* Tick values inside r: powers of two, or 1-2-5 per decade (1..9 when the
 * range is under a decade and 1-2-5 gives fewer than three). */
static int ticks(const Range *r, int pow2, double *t, int max)
{
	int n = 0;
	double lo = pow(10, r->lo), hi = pow(10, r->hi);
	if (pow2) {
		int step = (int)ceil((log2(hi) - log2(lo)) / 12);
		step = step < 1 ? 1 : step;
		for (int e = (int)ceil(log2(lo)); e <= (int)floor(log2(hi)) && n < max; e += step)
			t[n++] = ldexp(1, e);
		return n;
	}
	static const double m125[] = { 1, 2, 5 }, m19[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	for (int pass = 0; pass < 2 && n < 3; pass++) {
		const double *m = pass ? m19 : m125;
		int nm = pass ? 9 : 3;
		n = 0;
		for (int e = (int)floor(r->lo); e <= (int)ceil(r->hi); e++)
			for (int i = 0; i < nm && n < max; i++) {
				double v = m[i] * pow(10, e);
				if (v >= lo && v <= hi)
					t[n++] = v;
			}
	}
	return n;
}

static const char *dasharray(int d)
{
	return d == 1 ? " stroke-dasharray=\"8 5\"" : d == 2 ? " stroke-dasharray=\"2 4\"" : "";
}

static void axes(FILE *f, const SvgChart *c, const Range *rx, const Range *ry)
{
	double t[64];
	char lab[32];
	int n = ticks(rx, c->x_pow2, t, 64);
	fprintf(f, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
	for (int i = 0; i < n; i++) {
		double x = px(rx, t[i]);
		if (c->x_pow2)
			label_pow2(t[i], lab, sizeof lab);
		else
			snprintf(lab, sizeof lab, "%g", t[i]);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, MT, x, H - MB);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, H - MB + 18, lab);
	}
	n = ticks(ry, 0, t, 64);
	for (int i = 0; i < n; i++) {
		double y = py(ry, t[i]);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y, W - MR, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 6, y + 4, t[i]);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", ML, MT,
	        W - ML - MR, H - MT - MB);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">", (ML + W - MR) / 2, H - 22);
	text_esc(f, c->xlabel);
	fprintf(f, "</text>\n<text transform=\"translate(%d %d) rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">",
	        24, (MT + H - MB) / 2);
	text_esc(f, c->ylabel);
	fputs("</text>\n</g>\n", f);
}

static void marker(FILE *f, const SvgSeries *s, double x, double y)
{
	if (s->marker == 0)
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, s->color);
	else if (s->marker == 1)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"white\" stroke=\"%s\"/>\n", x - 3.5,
		        y - 3.5, s->color);
}

static void series(FILE *f, const SvgSeries *s, const Range *rx, const Range *ry)
{
	/* points in x order, so the line reads left to right */
	int idx[SVG_MAXPTS], n = 0;
	for (int i = 0; i < s->n; i++)
		if (ok(s->x[i], s->y[i]))
			idx[n++] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && s->x[idx[j]] < s->x[idx[j - 1]]; j--) {
			int t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	fputs("<g class=\"series\" data-label=\"", f);
	text_esc(f, s->label);
	fputs("\">\n<polyline fill=\"none\" stroke-width=\"2\" points=\"", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", px(rx, s->x[idx[i]]), py(ry, s->y[idx[i]]));
	fprintf(f, "\" stroke=\"%s\"%s/>\n", s->color, dasharray(s->dash));
	for (int i = 0; i < n; i++) {
		marker(f, s, px(rx, s->x[idx[i]]), py(ry, s->y[idx[i]]));
		fprintf(f, "<title>");
		text_esc(f, s->label);
		fprintf(f, ": L=%g, %.4g ms</title>\n", s->x[idx[i]], s->y[idx[i]]);
	}
	fputs("</g>\n", f);
}

static void legend(FILE *f, const SvgSeries *s, int ns)
{
	int x = W - MR + 16, y = MT + 6;
	fputs("<g class=\"legend\" font-size=\"12\">\n", f);
	for (int k = 0; k < ns; k++, y += 22) {
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x, y, x + 30,
		        y, s[k].color, dasharray(s[k].dash));
		marker(f, &s[k], x + 15, y);
		fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 38, y + 4);
		text_esc(f, s[k].label);
		fputs("</text>\n", f);
	}
	fputs("</g>\n", f);
}

int svg_render(FILE *f, const SvgChart *c, const SvgSeries *s, int ns)
{
	Range rx, ry;
	if (extent(s, ns, 0, &rx) || extent(s, ns, 1, &ry))
		return -1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	fprintf(f, "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">", W / 2);
	text_esc(f, c->title);
	fputs("</text>\n", f);
	if (c->subtitle) {
		fprintf(f, "<text x=\"%d\" y=\"50\" text-anchor=\"middle\" font-size=\"12\" fill=\"#555\">", W / 2);
		text_esc(f, c->subtitle);
		fputs("</text>\n", f);
	}
	axes(f, c, &rx, &ry);
	for (int k = 0; k < ns; k++)
		series(f, &s[k], &rx, &ry);
	legend(f, s, ns);
	fputs("</svg>\n", f);
	return 0;
}

int svg_write(const char *path, const SvgChart *c, const SvgSeries *s, int ns, char *err, size_t errlen)
{
	CliOut o;
	if (cli_out_open(&o, path, err, errlen))
		return -1;
	if (svg_render(o.f, c, s, ns)) {
		snprintf(err, errlen, "%s: nothing to draw (no row has a positive time); the file is left as it was", path);
		cli_out_abort(&o);
		return -1;
	}
	return cli_out_commit(&o, err, errlen);
}
