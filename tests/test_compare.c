/* cli/compare.c and cli/svg.c on a synthetic pair of files: rows matched
 * by (architecture, batch, length, width), speedup = reference / ours,
 * fraction of the floor = floor ms / ours, peak extra bytes per element;
 * `recur compare` itself (cli_compare) writes the chart, which must be one
 * <svg> element holding a series per mixer for ours and the reference and
 * the floor, with tick labels, a legend and a title. Then the same against
 * the real seed file when it is there. Then the command line's shape
 * parser (args.c: checked numbers, the limits named) and the CLI's output
 * files (results.c: whole or not at all, never over an input, a SIGINT in
 * the middle leaving no temporary file).
 */
#include "cli.h"
#include "compare.h"
#include "results.h"
#include "svg.h"
#include <signal.h>
#include <sys/wait.h>
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

/* The command line's shape parser (args.c): checked numbers and limits. */
static void shape_parser(void)
{
	static const struct { const char *s; int ok, B, L, D; const char *named; } T[] = {
		{ "1x8192x1024", 1, 1, 8192, 1024, NULL },
		{ "2147483647x1x1", 1, 2147483647, 1, 1, NULL },
		{ "1024x1024x1048576", 1, 1024, 1024, 1048576, NULL },   /* 2^40 elements exactly */
		{ "007x3x64", 1, 7, 3, 64, NULL },
		{ "1x99999999999x1024", 0, 0, 0, 0, "L = 99999999999 is above 2147483647" },
		{ "2147483648x1x1", 0, 0, 0, 0, "B = 2147483648" },
		{ "18446744073709551617x1x1", 0, 0, 0, 0, "above 2147483647" },
		{ "1024x1024x1048577", 0, 0, 0, 0, "B*L*D is more than 1099511627776" },
		{ "2147483647x2147483647x2147483647", 0, 0, 0, 0, "B*L*D" },
		{ "0x1x64", 0, 0, 0, 0, "B = 0" },
		{ "1x1", 0, 0, 0, 0, "joined by 'x'" },
		{ "1x1x1x1", 0, 0, 0, 0, "after D" },
		{ "+1x2x64", 0, 0, 0, 0, "B is not a whole number" },
		{ " 1x2x64", 0, 0, 0, 0, "B is not" },
		{ "1x2x64 ", 0, 0, 0, 0, "after D" },
		{ "1x-2x64", 0, 0, 0, 0, "L is not" },
		{ "1X2X64", 0, 0, 0, 0, "joined" },
		{ "", 0, 0, 0, 0, "B is not" },
	};
	int bad = 0;
	char first[600] = "";
	for (size_t i = 0; i < sizeof T / sizeof *T; i++) {
		recur_shape sh = { -1, -1, -1 };
		char err[512] = "";
		int rc = cli_parse_shape(T[i].s, &sh, err, sizeof err);
		int ok = T[i].ok ? rc == 0 && sh.B == T[i].B && sh.L == T[i].L && sh.D == T[i].D
		                 : rc != 0 && sh.B == -1 && strstr(err, T[i].named) && strstr(err, "2^40");
		if (!ok && !bad++)
			snprintf(first, sizeof first, "\"%s\": rc %d, %dx%dx%d, %s", T[i].s, rc, sh.B, sh.L, sh.D, err);
	}
	check(bad == 0, "shapes: whole numbers 1..2^31-1, B*L*D at most 2^40, nothing wrapped or half read", "%s", first);
	recur_shape sh[4];
	char err[512];
	int n = cli_parse_shapes("1x2x64,3x1000x128,", sh, 4, err, sizeof err);
	check(n == 2 && sh[1].L == 1000, "a list with a trailing comma", "%d %s", n, n < 0 ? err : "");
	n = cli_parse_shapes("1x2x64,,3x4x64", sh, 4, err, sizeof err);
	check(n < 0 && strstr(err, "bad shape \"\""), "an empty item is named", "%s", err);
	n = cli_parse_shapes("1x2x64,1x2x64,1x2x64,1x2x64,1x2x64", sh, 4, err, sizeof err);
	check(n < 0 && strstr(err, "more than 4"), "more shapes than room", "%s", err);
	char longs[300];
	memset(longs, '9', sizeof longs - 1);
	longs[sizeof longs - 1] = 0;
	n = cli_parse_shapes(longs, sh, 4, err, sizeof err);
	check(n < 0 && strstr(err, "...") && strlen(err) < 400, "a long item is quoted in part", "%s", err);
}

/* Output files: whole or not at all, never over an input. */
static void out_files(void)
{
	char path[600], err[1024], buf[640];
	snprintf(path, sizeof path, "%s/out.txt", tmpdir);
	FILE *f = fopen(path, "w");
	fputs("old", f);
	fclose(f);
	CliOut o;
	int rc = cli_out_open(&o, path, err, sizeof err);
	if (rc == 0)
		fputs("half", o.f);
	char *now = slurp(path);
	check(rc == 0 && now && !strcmp(now, "old"), "while being written, the target keeps its old content", "%s",
	      now ? now : err);
	free(now);
	char tmp[sizeof o.tmp];
	snprintf(tmp, sizeof tmp, "%s", o.tmp);
	int had = access(tmp, F_OK) == 0;
	cli_out_abort(&o);
	now = slurp(path);
	check(had && now && !strcmp(now, "old") && access(tmp, F_OK) != 0,
	      "an aborted write leaves the target as it was and no temporary file", "%s: %s", tmp, now ? now : "?");
	free(now);
	rc = cli_out_open(&o, path, err, sizeof err);
	if (rc == 0) {
		fputs("new", o.f);
		rc = cli_out_commit(&o, err, sizeof err);
	}
	now = slurp(path);
	check(rc == 0 && now && !strcmp(now, "new"), "a committed write replaces it", "%s", rc ? err : "");
	free(now);
	rc = cli_out_open(&o, tmpdir, err, sizeof err);
	check(rc != 0 && strstr(err, "folder"), "a folder is not a file to write", "%s", err);
	snprintf(buf, sizeof buf, "%s/tmpname", tmpdir);
	const char *inputs[2] = { "/nonexistent", path };
	char link[640];
	snprintf(link, sizeof link, "%s/link.txt", tmpdir);
	rc = symlink(path, link);
	rc = rc || !cli_out_not_input(link, "chart", inputs, 2, err, sizeof err);
	check(rc == 0 && strstr(err, "would overwrite its input") && strstr(err, path),
	      "an output that is an input through a link is refused", "%s", err);
	check(cli_out_not_input("/nonexistent/other", "chart", inputs, 2, err, sizeof err) == 0,
	      "another file is not an input", NULL);

	/* SIGINT in the middle of a write: the temporary file goes, the target stays */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		CliOut c;
		if (cli_out_open(&c, path, err, sizeof err) == 0) {
			fputs("interrupted", c.f);
			fflush(c.f);
			FILE *t = fopen(buf, "w");   /* tells the parent the temporary's name */
			if (t) {
				fputs(c.tmp, t);
				fclose(t);
			}
			raise(SIGINT);
		}
		_exit(3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	char *tmpname = slurp(buf);
	now = slurp(path);
	check(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT && tmpname && access(tmpname, F_OK) != 0 && now &&
	      !strcmp(now, "new"), "SIGINT while writing: the process still dies of it, its temporary file is gone, the "
	      "target is as it was", "status %d, temporary %s", st, tmpname ? tmpname : "?");
	free(tmpname);
	free(now);
	unlink(buf);
	unlink(link);
	unlink(path);
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
	shape_parser();
	out_files();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (failed == 0 && system(cmd) != 0)
		printf("note: could not remove %s\n", tmpdir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
