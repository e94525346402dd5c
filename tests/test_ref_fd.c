/* The float64 references' backward against central finite differences of
 * their own forward: f(p) = sum(dy * y(p)), so df/dp is the gradient the
 * backward must return, for every parameter and for x.
 *
 * Parameters are random, not the spec's initialisation, so that every term
 * matters (non-zero biases, theta and omega away from their defaults). The
 * decay is kept away from both ends: a ~ 0 would make the recurrence terms
 * vanish, and near a = 1 the backward's bounded sqrt derivative
 * 1/sqrt(max(4z, 1e-6)) deliberately differs from the true one (z = 1 - a^2
 * < 2.5e-7), where finite differences would rightly disagree. With
 * softplus(lam) in [0.05, 0.4] and the gates below, z stays above ~1e-3.
 */
#include "ref.h"
#include "rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-6
#define FULL_MAX 256    /* parameters up to this size are checked element by element */
#define SUBSET 40       /* elements checked of larger ones, and of x */

static int passed, failed;

static double *vec(long n)
{
	double *p = calloc(n ? n : 1, sizeof(double));
	if (!p) {
		fprintf(stderr, "%s:%d: out of memory\n", __FILE__, __LINE__);
		exit(1);
	}
	return p;
}

static double objective(const RefMixer *mx, const RefShape *s, const double *const *p,
                        const double *x, const double *dy, double *y)
{
	mx->forward(s, p, x, y);
	double f = 0;
	for (long e = 0; e < (long)s->B * s->L * s->D; e++)
		f += dy[e] * y[e];
	return f;
}

/* Random parameters that exercise every term (see the note at the top). */
static void init_params(const RefMixer *mx, const RefShape *s, double **p, Rng *r)
{
	double K = s->D / s->H;
	for (int i = 0; i < mx->nparam; i++) {
		const char *nm = mx->param[i];
		for (long k = 0; k < mx->param_count(i, s); k++) {
			double z = rng_normal(r), v;
			if (strcmp(nm, "lam") == 0)
				v = log(expm1(0.05 + 0.35 * rng_uniform(r)));   /* softplus(lam) in [0.05, 0.4] */
			else if (strcmp(nm, "Wa") == 0 || strcmp(nm, "Wx") == 0)
				v = z / sqrt(K);
			else if (strcmp(nm, "theta") == 0)
				v = log(2.0) + 0.3 * z;
			else if (nm[0] == 'b')
				v = 0.5 * z;                                     /* ba, bx, bu, bv */
			else
				v = z;                                           /* wu, wv, omega */
			p[i][k] = v;
		}
	}
}

/* Compares the analytic gradient g[n] of the array a[n] (which p or x aliases)
 * with central differences on a chosen set of elements. */
static void check(const char *what, double *a, const double *g, long n, Rng *r,
                  const RefMixer *mx, const RefShape *s, const double *const *p,
                  const double *x, const double *dy, double *y, const long *must, int nmust)
{
	long idx[FULL_MAX > SUBSET ? FULL_MAX : SUBSET];
	int m = 0;
	if (n <= FULL_MAX) {
		for (long k = 0; k < n; k++)
			idx[m++] = k;
	} else {
		for (int k = 0; k < nmust; k++)
			idx[m++] = must[k];
		while (m < SUBSET)
			idx[m++] = (long)(rng_uniform(r) * n);
	}
	double num = 0, den = 0;
	for (int k = 0; k < m; k++) {
		/* fourth-order central stencil: with h = 1e-3 both its truncation error (h^4)
		 * and the rounding of f (eps * |f| / h) stay near 1e-12 relative */
		double v = a[idx[k]], h = 1e-3 * (fabs(v) > 1 ? fabs(v) : 1), f[4];
		const double off[4] = { 2, 1, -1, -2 };
		for (int q = 0; q < 4; q++) {
			a[idx[k]] = v + off[q] * h;
			f[q] = objective(mx, s, p, x, dy, y);
		}
		a[idx[k]] = v;
		double fd = (8 * (f[1] - f[2]) - (f[0] - f[3])) / (12 * h), an = g[idx[k]];
		num += (fd - an) * (fd - an);
		den += an * an;
	}
	double rel = sqrt(num) / (sqrt(den) > 1e-300 ? sqrt(den) : 1e-300);
	int ok = rel <= TOL && den > 0;
	printf("%s %-5s B=%d L=%d D=%d %-6s %3d elements: rel err %.3e%s\n", ok ? "PASS" : "FAIL",
	       mx->name, s->B, s->L, s->D, what, m, rel, den > 0 ? "" : " (zero gradient)");
	ok ? passed++ : failed++;
}

static void run_case(const RefMixer *mx, RefShape s, uint64_t seed)
{
	Rng r;
	rng_seed(&r, seed);
	long n = (long)s.B * s.L * s.D;
	double *p[16], *dp[16];
	for (int i = 0; i < mx->nparam; i++) {
		p[i] = vec(mx->param_count(i, &s));
		dp[i] = vec(mx->param_count(i, &s));
	}
	init_params(mx, &s, p, &r);
	double *x = vec(n), *dy = vec(n), *dx = vec(n), *y = vec(n);
	for (long e = 0; e < n; e++) {
		x[e] = bf16_round((float)rng_normal(&r));
		dy[e] = rng_normal(&r);
	}
	const double *const *cp = (const double *const *)p;
	mx->backward(&s, cp, x, dy, dx, dp);
	for (int i = 0; i < mx->nparam; i++)
		check(mx->param[i], p[i], dp[i], mx->param_count(i, &s), &r, mx, &s, cp, x, dy, y, NULL, 0);
	/* x always includes the first (reset) and last token of a sequence */
	long must[] = { 0, (long)(s.L - 1) * s.D + s.D - 1, n - 1, (long)(s.B - 1) * s.L * s.D + 1 };
	check("x", x, dx, n, &r, mx, &s, cp, x, dy, y, must, 4);
	for (int i = 0; i < mx->nparam; i++) {
		free(p[i]);
		free(dp[i]);
	}
	free(x); free(dy); free(dx); free(y);
}

int main(void)
{
	const char *names[] = { "rglru", "samu" };
	const RefShape shapes[] = { { 2, 5, 64, 1 }, { 1, 9, 128, 2 } };
	for (int m = 0; m < 2; m++) {
		const RefMixer *mx = ref_find(names[m]);
		if (!mx || mx->nparam > 16) {
			printf("FAIL ref_find(\"%s\") is NULL or has too many parameters\n", names[m]);
			failed++;
			continue;
		}
		for (int k = 0; k < 2; k++)
			run_case(mx, shapes[k], 1000 + 10 * m + k);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
