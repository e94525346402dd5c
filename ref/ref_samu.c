/* SAMU in float64, transcribed from shared/spec/architectures.md.
 *
 * One batch row at a time: the forward pass keeps the per-token controller
 * values (u, s, g) and the per-element a, m, h of the row, so that the
 * backward pass walks t downwards with the exact values the forward used.
 * Parameter order is the spec table's: wu [D], wv [D], lam [D], bu, bv,
 * theta, omega (scalars have one element).
 */
#include "ref.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WU, WV, LAM, BU, BV, THETA, OMEGA, NPARAM };

static const char *const names[NPARAM] = { "wu", "wv", "lam", "bu", "bv", "theta", "omega" };

static long count(int i, const RefShape *s)
{
	return i <= LAM ? s->D : 1;
}

static double softplus(double z)
{
	/* log(1 + e^z) without overflow for large z or loss of digits for very negative z */
	return log1p(exp(-fabs(z))) + (z > 0 ? z : 0);
}

static double sigmoid(double z)
{
	if (z >= 0)
		return 1 / (1 + exp(-z));
	double e = exp(z);
	return e / (1 + e);
}

/* d sqrtb(z)/dz, bounded at 1000 as in RecurrentGemma */
static double dsqrtb(double z)
{
	double q = 4 * z;
	return 1 / sqrt(q > 1e-6 ? q : 1e-6);
}

/* n zeroed doubles */
static double *zeros(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof(double));
	if (!p) {
		fprintf(stderr, "%s:%d: out of memory\n", __FILE__, __LINE__);
		abort();
	}
	return p;
}

/* Per-row intermediates: u, s, g are [L], a, m, h are [L][D]. */
typedef struct { double *u, *s, *g, *a, *m, *h; } Row;

static void row_alloc(Row *w, int L, int D)
{
	long n = (long)L * D;
	w->u = zeros(L); w->s = zeros(L); w->g = zeros(L);
	w->a = zeros(n); w->m = zeros(n); w->h = zeros(n);
}

static void row_free(Row *w)
{
	free(w->u); free(w->s); free(w->g); free(w->a); free(w->m); free(w->h);
}

/* Forward of one sequence x[L][D]; fills w (h without the omega * x skip). */
static void row_forward(const RefShape *sh, const double *const *p, const double *x, Row *w)
{
	int L = sh->L, D = sh->D;
	double rs = 1 / sqrt((double)D), et = exp(p[THETA][0]);
	for (int t = 0; t < L; t++) {
		const double *xt = x + (long)t * D;
		double u = 0, v = 0;
		for (int c = 0; c < D; c++) {
			u += p[WU][c] * xt[c];
			v += p[WV][c] * xt[c];
		}
		u = p[BU][0] + rs * u;
		v = p[BV][0] + rs * v;
		double s = softplus(u), g = sigmoid(v);
		w->u[t] = u; w->s[t] = s; w->g[t] = g;
		for (int c = 0; c < D; c++) {
			long e = (long)t * D + c;
			double log_a = -et * s * softplus(p[LAM][c]);
			double a = exp(log_a);
			double m = t == 0 ? 1.0 : sqrt(1 - exp(2 * log_a));
			double hprev = t == 0 ? 0.0 : w->h[e - D];
			w->a[e] = a; w->m[e] = m;
			w->h[e] = a * hprev + m * g * xt[c];
		}
	}
}

static void forward(const RefShape *sh, const double *const *p, const double *x, double *y)
{
	long n = (long)sh->L * sh->D;
	Row w;
	row_alloc(&w, sh->L, sh->D);
	for (int b = 0; b < sh->B; b++) {
		row_forward(sh, p, x + b * n, &w);
		for (long e = 0; e < n; e++)
			y[b * n + e] = w.h[e] + p[OMEGA][0] * x[b * n + e];
	}
	row_free(&w);
}

static void backward(const RefShape *sh, const double *const *p, const double *x,
                     const double *dy, double *dx, double *const *dp)
{
	int L = sh->L, D = sh->D;
	long n = (long)L * D;
	double rs = 1 / sqrt((double)D), et = exp(p[THETA][0]), omega = p[OMEGA][0];
	const double *wu = p[WU], *wv = p[WV], *lam = p[LAM];
	for (int k = 0; k < NPARAM; k++)
		memset(dp[k], 0, count(k, sh) * sizeof(double));
	Row w;
	row_alloc(&w, L, D);
	double *dh = zeros(D);
	for (int b = 0; b < sh->B; b++) {
		const double *xb = x + b * n, *dyb = dy + b * n;
		double *dxb = dx + b * n;
		row_forward(sh, p, xb, &w);
		for (int t = L - 1; t >= 0; t--) {
			const double *xt = xb + (long)t * D;
			double s = w.s[t], g = w.g[t], dg = 0, ds = 0;
			for (int c = 0; c < D; c++) {
				long e = (long)t * D + c;
				/* the chain from t+1 is cut at the end of the sequence */
				dh[c] = dyb[e] + (t + 1 < L ? w.a[e + D] * dh[c] : 0.0);
				double a = w.a[e], m = w.m[e], sp = softplus(lam[c]);
				double dlog_a = 0;
				if (t > 0) {
					double dm = -2 * a * a * dsqrtb(1 - a * a);
					dlog_a = dh[c] * (a * w.h[e - D] + g * xt[c] * dm);
				}
				dg += dh[c] * m * xt[c];
				ds += dlog_a * (-et * sp);
				dp[LAM][c] += dlog_a * (-et * s * sigmoid(lam[c]));
				/* log_a recomputed exactly as the forward did */
				dp[THETA][0] += dlog_a * (-et * s * sp);
				dp[OMEGA][0] += dyb[e] * xt[c];
				dxb[e] = dh[c] * m * g + omega * dyb[e];
			}
			double du = ds * sigmoid(w.u[t]), dv = dg * g * (1 - g);
			dp[BU][0] += du;
			dp[BV][0] += dv;
			for (int c = 0; c < D; c++) {
				dxb[(long)t * D + c] += (wu[c] * du + wv[c] * dv) * rs;
				dp[WU][c] += rs * du * xt[c];
				dp[WV][c] += rs * dv * xt[c];
			}
		}
	}
	free(dh);
	row_free(&w);
}

const RefMixer ref_samu = { "samu", NPARAM, names, count, forward, backward };
