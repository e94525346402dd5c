/* A log-log line chart as SVG, drawn here so that `recur compare` needs no
 * plotting dependency: axes with tick labels (powers of two on x when asked,
 * 1-2-5 decades on y), grid, one polyline with point markers per series, a
 * legend beside the plot and a title. Each series is a <g> whose
 * data-label attribute is its label, so tests and scripts can find it.
 */
#ifndef RECUR_SVG_H
#define RECUR_SVG_H

#include <stddef.h>
#include <stdio.h>

#define SVG_MAXPTS 64

typedef struct {
	char label[128];
	const char *color;       /* CSS colour */
	int dash;                /* 0 solid, 1 dashed, 2 dotted */
	int marker;              /* 0 circle, 1 square, 2 none */
	int n;
	double x[SVG_MAXPTS], y[SVG_MAXPTS];   /* points with x or y <= 0 are not drawn */
} SvgSeries;

typedef struct {
	const char *title, *subtitle, *xlabel, *ylabel;
	int x_pow2;              /* x ticks at powers of two, labelled 8K, 1M, ... */
} SvgChart;

/* Adds a point (ignored past SVG_MAXPTS). */
void svg_add(SvgSeries *s, double x, double y);
/* Writes the chart; 0, or -1 when no series has a drawable point. */
int  svg_render(FILE *f, const SvgChart *c, const SvgSeries *s, int ns);
/* svg_render into path, whole or not at all (a CliOut, results.h): 0, or
 * -1 with a message naming the file, which is then as it was. */
int  svg_write(const char *path, const SvgChart *c, const SvgSeries *s, int ns, char *err, size_t errlen);

#endif
