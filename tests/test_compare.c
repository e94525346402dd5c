/* cli/compare.c and cli/svg.c on a synthetic pair of files: rows matched
 * by (architecture, batch, length, width), speedup = reference / ours,
 * fraction of the floor = floor ms / ours, peak extra bytes per element;
 * `recur compare` itself (cli_compare) writes the chart, which must be one
 * <svg> element holding a series per mixer for ours and the reference and
 * the floor, with tick labels, a legend and a title. Then the same against
 * the real seed file when it is there.
 */
#include "cli.h"
#include "compare.h"
#include "svg.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char tmpdir[256];

/* A row as results files hold it; floor_ms <= 0 leaves the floor out. */
static json_t *row(const char *arch, int L, double fb_ms, long long delta, double floor_ms)
{
	json_t *r = json_object(), *sh = json_object(), *fb = json_object();
	json_object_set_new(sh, "batch", json_integer(1));
	json_object_set_new(sh, "length", json_integer(L));
	json_object_set_new(sh, "width", json_integer(1024));
	json_object_set_new(r, "shape", sh);
	json_object_set_new(r, "architecture", json_string(arch));
	json_object_set_new(r, "backend", json_string("fused_grouped_prefix32_hierarchical_chunk16"));
	json_object_set_new(fb, "median_ms", json_real(fb_ms));
	json_object_set_new(r, "forward_backward", fb);
	json_object_set_new(r, "peak_allocated_delta_bytes", json_integer(delta));
	if (floor_ms > 0) {
		json_t *f = json_object();
		json_object_set_new(f, "copy_bandwidth_gb_per_s", json_real(4000));
		json_object_set_new(f, "forward_backward_ms", json_real(floor_ms));
		json_object_set_new(r, "floor", f);
	}
	return r;
}

static json_t *doc(const char *gpu)
{
	json_t *d = json_object(), *env = json_object();
	json_object_set_new(d, "schema_version", json_integer(1));
	json_object_set_new(env, "gpu", json_string(gpu));
	json_object_set_new(d, "environment", env);
	json_object_set_new(d, "rows", json_array());
	return d;
}

static void add(json_t *d, json_t *r)
{
	json_array_append_new(json_object_get(d, "rows"), r);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	size_t got = fread(s, 1, (size_t)n, f);
	s[got] = 0;
	fclose(f);
	return s;
}

static int count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * (1 + fabs(b));
}

/* The SVG is one element: starts with <svg, ends with </svg>, and its
 * groups and texts are balanced. */
static void svg_shape(const char *svg, const char *what)
{
	size_t n = strlen(svg);
	while (n && (svg[n - 1] == '\n' || svg[n - 1] == ' '))
		n--;
	char t[300];
	snprintf(t, sizeof t, "%s: starts with <svg and ends with </svg>", what);
	check(!strncmp(svg, "<svg", 4) && n >= 6 && !strncmp(svg + n - 6, "</svg>", 6), t, NULL);
	snprintf(t, sizeof t, "%s: one <svg>, balanced <g> and <text> elements", what);
	check(count(svg, "<svg") == 1 && count(svg, "</svg>") == 1 && count(svg, "<g ") + count(svg, "<g>") == count(svg, "</g>") &&
	      count(svg, "<text") == count(svg, "</text>"), t, "g %d/%d text %d/%d", count(svg, "<g "), count(svg, "</g>"),
	      count(svg, "<text"), count(svg, "</text>"));
}

static void synthetic(void)
{
	json_t *ours = doc("NVIDIA H200"), *ref = doc("NVIDIA H800 PCIe");
	double elems8 = 8192.0 * 1024, elems32 = 32768.0 * 1024;
	add(ours, row("rglru", 8192, 0.5, (long long)(4 * elems8), 0.025));
	add(ours, row("samu", 8192, 0.8, (long long)(4.5 * elems8), 0.025));
	add(ours, row("rglru", 32768, 2.0, (long long)(4 * elems32), 0.1));
	add(ours, row("samu", 32768, 3.0, (long long)(5 * elems32), -1));
	add(ours, row("rglru", 65536, 4.0, 0, 0.2));   /* no reference row */
	add(ref, row("samu", 8192, 2.0, (long long)(18 * elems8), -1));
	add(ref, row("rglru", 8192, 1.6, (long long)(23 * elems8), -1));
	add(ref, row("rglru", 32768, 5.0, (long long)(20 * elems32), -1));
	add(ref, row("samu", 32768, 7.5, (long long)(16 * elems32), -1));
	add(ref, row("rglru", 8192, 9.9, 0, -1));
	json_object_set_new(json_object_get(json_array_get(json_object_get(ref, "rows"), 4), "shape"), "width",
	                    json_integer(2048));   /* same mixer and length, other width: must not match */

	CmpRow *rows = NULL;
	int n = 0;
	char err[1024];
	int rc = compare_rows(ours, ref, &rows, &n, err, sizeof err);
	check(rc == 0 && n == 5, "one comparison row per row of ours", "%d %s", n, rc ? err : "");
	if (rc == 0 && n == 5) {
		check(near(rows[0].speedup, 1.6 / 0.5) && near(rows[1].speedup, 2.0 / 0.8) && near(rows[2].speedup, 2.5) &&
		      near(rows[3].speedup, 2.5), "speedup = reference median / our median, matched by mixer and shape",
		      "%g %g %g %g", rows[0].speedup, rows[1].speedup, rows[2].speedup, rows[3].speedup);
		check(near(rows[0].floor_frac, 0.05) && near(rows[2].floor_frac, 0.05) && isnan(rows[3].floor_frac),
		      "fraction of the floor = floor ms / our ms; none without a floor", "%g %g %g", rows[0].floor_frac,
		      rows[2].floor_frac, rows[3].floor_frac);
		check(near(rows[0].ours_mem, 4) && near(rows[0].ref_mem, 23) && near(rows[1].ours_mem, 4.5) &&
		      near(rows[3].ref_mem, 16), "peak extra bytes per element for both", "%g %g", rows[0].ours_mem, rows[0].ref_mem);
		check(isnan(rows[4].ref_ms) && isnan(rows[4].speedup) && near(rows[4].ours_ms, 4.0),
		      "a row without a reference match keeps its own figures", NULL);
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		compare_print(mem, rows, n);
		fclose(mem);
		check(strstr(buf, "3.20x") && strstr(buf, "5.0%") && strstr(buf, "23.00") && strstr(buf, "1x65536x1024"),
		      "the table prints speedup, floor fraction, bytes per element", NULL);
		free(buf);
	}
	free(rows);

	char po[512], pr[512], psvg[512];
	snprintf(po, sizeof po, "%s/ours.json", tmpdir);
	snprintf(pr, sizeof pr, "%s/ref.json", tmpdir);
	json_dump_file(ours, po, JSON_INDENT(2));
	json_dump_file(ref, pr, JSON_INDENT(2));
	/* recur compare RESULTS REFERENCE (default chart path beside RESULTS) */
	char *argv1[] = { "compare", po, pr, NULL };
	rc = cli_compare(3, argv1);
	snprintf(psvg, sizeof psvg, "%s/ours.svg", tmpdir);
	char *svg = slurp(psvg);
	check(rc == 0 && svg, "recur compare RESULTS REFERENCE writes RESULTS.svg", "rc %d", rc);
	if (svg) {
		svg_shape(svg, "chart");
		check(strstr(svg, "data-label=\"rglru, ours\"") && strstr(svg, "data-label=\"samu, ours\"") &&
		      strstr(svg, "data-label=\"rglru, reference\"") && strstr(svg, "data-label=\"samu, reference\""),
		      "chart: both mixers' series, ours and the reference", NULL);
		check(strstr(svg, "data-label=\"floor (copy, 4000 GB/s)\"") != NULL, "chart: the floor series", NULL);
		check(strstr(svg, ">8K</text>") && strstr(svg, ">32K</text>") && strstr(svg, ">64K</text>") &&
		      strstr(svg, "class=\"legend\"") && strstr(svg, "forward + backward time against sequence length"),
		      "chart: length ticks (8K, 32K, 64K), legend and title", NULL);
		check(!strstr(svg, "9.9 ms"), "chart: a reference row at another width is left out", NULL);
		free(svg);
	}
	snprintf(psvg, sizeof psvg, "%s/chart.svg", tmpdir);
	char *argv2[] = { "compare", po, pr, "--svg", psvg, NULL };
	rc = cli_compare(5, argv2);
	svg = slurp(psvg);
	check(rc == 0 && svg && !strncmp(svg, "<svg", 4), "--svg FILE puts the chart there", NULL);
	free(svg);
	char *argv3[] = { "compare", "/nonexistent/ours.json", pr, NULL };
	check(cli_compare(3, argv3) == 1, "a missing results file is an error (exit 1)", NULL);
	char *argv4[] = { "compare", NULL };
	check(cli_compare(1, argv4) == 2, "no RESULTS is a usage error (exit 2)", NULL);
	json_t *empty = doc("x");
	json_object_del(empty, "rows");
	rc = compare_rows(empty, ref, &rows, &n, err, sizeof err);
	check(rc != 0 && strstr(err, "rows"), "results without rows are refused", "%s", err);
	json_decref(empty);
	json_decref(ours);
	json_decref(ref);

	char out[512];
	compare_svg_path("bench/results/x.json", out, sizeof out);
	int ok = !strcmp(out, "bench/results/x.svg");
	compare_svg_path("a.b/results", out, sizeof out);
	ok &= !strcmp(out, "a.b/results.svg");
	compare_svg_path("seed.txt", out, sizeof out);
	ok &= !strcmp(out, "seed.svg");
	check(ok, "the default chart path replaces the extension (and only in the file name)", "%s", out);

	SvgSeries s = { .label = "x", .color = "red" };
	SvgChart c = { .title = "t", .xlabel = "x", .ylabel = "y" };
	FILE *devnull = fopen("/dev/null", "w");
	svg_add(&s, -1, 1);
	check(svg_render(devnull, &c, &s, 1) == -1, "a chart with no drawable point is refused", NULL);
	fclose(devnull);
}

/* Our rows at the seed's shapes against the seed itself. */
static void against_seed(void)
{
	char seed[4096];
	compare_seed_path(seed, sizeof seed);
	if (access(seed, R_OK) != 0) {
		printf("SKIP comparison with the seed: %s not readable; set RECUR_SEED\n", seed);
		return;
	}
	json_error_t je;
	json_t *ref = json_load_file(seed, 0, &je), *ours = doc("NVIDIA H200");
	const int L[4] = { 8192, 32768, 65536, 131072 };
	for (int i = 0; i < 4; i++) {
		double floor_ms = 10.0 * L[i] * 1024 / 4e12 * 1e3;
		add(ours, row("rglru", L[i], 0.8 * L[i] / 8192, 4LL * L[i] * 1024, floor_ms));
		add(ours, row("samu", L[i], 1.0 * L[i] / 8192, 5LL * L[i] * 1024, floor_ms));
	}
	CmpRow *rows = NULL;
	int n = 0;
	char err[512];
	int rc = compare_rows(ours, ref, &rows, &n, err, sizeof err);
	int matched = 0;
	for (int i = 0; i < n; i++)
		matched += isfinite(rows[i].speedup);
	check(rc == 0 && n == 8 && matched == 8 && near(rows[0].speedup, 1.6036760061979294 / 0.8) &&
	      near(rows[0].ref_mem, 193410048.0 / (8192.0 * 1024)),
	      "all 8 rows match the seed's; speedup and memory per element from its figures", "n %d matched %d", n, matched);
	free(rows);
	char po[512], psvg[512];
	snprintf(po, sizeof po, "%s/ours_seed.json", tmpdir);
	json_dump_file(ours, po, JSON_INDENT(2));
	char *argv[] = { "compare", po, NULL };   /* the seed is the default reference */
	rc = cli_compare(2, argv);
	snprintf(psvg, sizeof psvg, "%s/ours_seed.svg", tmpdir);
	char *svg = slurp(psvg);
	check(rc == 0 && svg && strstr(svg, "NVIDIA H800 PCIe"), "recur compare RESULTS uses the seed by default", NULL);
	if (svg)
		svg_shape(svg, "seed chart");
	free(svg);
	json_decref(ours);
	json_decref(ref);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/recur_test_compare_XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("cannot create a temporary folder %s\n", tmpdir);
		return 1;
	}
	synthetic();
	against_seed();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (failed == 0 && system(cmd) != 0)
		printf("note: could not remove %s\n", tmpdir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
