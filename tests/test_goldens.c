/* The float64 references against the golden cases of an independent
 * implementation (tests/goldens/README.md): y, dx and every parameter
 * gradient must agree to 1e-10 relative (||out - golden|| / ||golden||).
 * The folder name gives mixer and shape: <mixer>_B<b>_L<l>_D<d>, H = D / 64.
 */
#include "npy.h"
#include "ref.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOL 1e-10
#define MAXP 16

static int passed, failed;

static void fail_line(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failed++;
}

/* Loads dir/name.npy and checks it holds n elements; NULL (and a FAIL line) otherwise. */
static double *load(const char *dir, const char *name, long n)
{
	char path[1024], err[1024];
	double *d;
	long shape[NPY_MAXDIM];
	int ndim;
	snprintf(path, sizeof path, "%s/%s.npy", dir, name);
	if (npy_read(path, &d, shape, &ndim, err, sizeof err) != 0) {
		fail_line("%s", err);
		return NULL;
	}
	long got = 1;
	for (int i = 0; i < ndim; i++)
		got *= shape[i];
	if (got != n) {
		fail_line("%s: %ld elements, expected %ld", path, got, n);
		free(d);
		return NULL;
	}
	return d;
}

static void compare(const char *dir, const char *name, const double *out, long n, double *worst)
{
	double *g = load(dir, name, n);
	if (!g) {
		*worst = INFINITY;
		return;
	}
	double num = 0, den = 0;
	for (long e = 0; e < n; e++) {
		num += (out[e] - g[e]) * (out[e] - g[e]);
		den += g[e] * g[e];
	}
	free(g);
	double rel = den > 0 ? sqrt(num / den) : sqrt(num);
	int ok = rel <= TOL;
	printf("%s %-20s %-6s rel err %.3e\n", ok ? "PASS" : "FAIL", strrchr(dir, '/') + 1, name, rel);
	ok ? passed++ : failed++;
	if (!(rel <= *worst))
		*worst = rel;
}

static void run_case(const char *root, const char *cs)
{
	char dir[1024], mixer[32];
	RefShape s;
	snprintf(dir, sizeof dir, "%s/%s", root, cs);
	const char *u = strstr(cs, "_B");
	if (!u || u - cs >= (long)sizeof mixer || sscanf(u, "_B%d_L%d_D%d", &s.B, &s.L, &s.D) != 3) {
		fail_line("%s: case name not <mixer>_B<b>_L<l>_D<d>", cs);
		return;
	}
	memcpy(mixer, cs, u - cs);
	mixer[u - cs] = 0;
	s.H = s.D / 64;
	const RefMixer *mx = ref_find(mixer);
	if (!mx || mx->nparam > MAXP) {
		fail_line("%s: no reference for mixer '%s'", cs, mixer);
		return;
	}
	long n = (long)s.B * s.L * s.D;
	double *p[MAXP] = { 0 }, *dp[MAXP] = { 0 };
	double *x = load(dir, "x", n), *dy = load(dir, "dy", n);
	int ok = x && dy;
	for (int i = 0; i < mx->nparam; i++) {
		long c = mx->param_count(i, &s);
		p[i] = load(dir, mx->param[i], c);
		dp[i] = calloc(c, sizeof(double));
		ok = ok && p[i] && dp[i];
	}
	double *y = calloc(n, sizeof(double)), *dx = calloc(n, sizeof(double));
	if (ok && y && dx) {
		const double *const *cp = (const double *const *)p;
		double worst = 0;
		mx->forward(&s, cp, x, y);
		mx->backward(&s, cp, x, dy, dx, dp);
		compare(dir, "y", y, n, &worst);
		compare(dir, "dx", dx, n, &worst);
		for (int i = 0; i < mx->nparam; i++) {
			char name[40];
			snprintf(name, sizeof name, "d%s", mx->param[i]);
			compare(dir, name, dp[i], mx->param_count(i, &s), &worst);
		}
		printf("     %-20s max rel err %.3e\n", cs, worst);
	}
	for (int i = 0; i < mx->nparam; i++) {
		free(p[i]);
		free(dp[i]);
	}
	free(x); free(dy); free(y); free(dx);
}

int main(void)
{
	/* $RECUR_GOLDENS, else the repository's own copy: tests/goldens of
	 * $RECUR_SOURCE_DIR (ctest sets both), else of the tree this was built from */
	char buf[1200];
	const char *root = getenv("RECUR_GOLDENS");
	if (!root || !*root) {
		const char *src = getenv("RECUR_SOURCE_DIR");
		snprintf(buf, sizeof buf, "%s/tests/goldens", src && *src ? src : RECUR_SOURCE_DIR);
		root = buf;
	}
	/* the cases are part of the repository: missing, the test fails */
	struct stat st;
	if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
		printf("FAIL golden directory %s not found (the repository's tests/goldens; RECUR_GOLDENS overrides it)\n", root);
		return 1;
	}
	const char *cases[] = { "rglru_B2_L37_D128", "rglru_B1_L300_D64",
	                        "samu_B2_L37_D128", "samu_B1_L300_D64" };
	for (int k = 0; k < 4; k++)
		run_case(root, cases[k]);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
