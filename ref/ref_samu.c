/* SAMU in float64, transcribed from shared/spec/architectures.md.
 *
 * One batch row at a time: the forward pass keeps the per-token controller
 * values (u, s, g) and the per-element a, m, h of the row, so that the
 * backward pass walks t downwards with the exact values the forward used.
 * Token blocks, then channel blocks, run on all cores (par.h).
 * Parameter order is the spec table's: wu [D], wv [D], lam [D], bu, bv,
 * theta, omega (scalars have one element).
 */
#include "ref.h"
#include "par.h"
#include "ref_math.h"
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

/* Work spread over the cores (par.h): the controller is independent per
 * token, the recurrence per channel, so a row runs as token blocks, then
 * channel blocks (heads of 64); the backward's sums over channels are made
 * per block and added in block order. */
#define TOKBLK 256
#define CHBLK 64

typedef struct {
	const RefShape *sh;
	const double *const *p;
	const double *x, *dy;      /* this row */
	double *y, *dx;            /* this row */
	double *const *dp;
	Row w;
	double *dgp, *dsp;         /* [nblk][L]: per channel block, sums over its channels */
	double *dthp, *domp;       /* [nblk] */
	double *du, *dv;           /* [L] */
} Job;

static void controller(void *ctx, int blk)
{
	Job *j = ctx;
	int L = j->sh->L, D = j->sh->D;
	const double *const *p = j->p;
	double rs = 1 / sqrt((double)D);
	for (int t = blk * TOKBLK; t < L && t < (blk + 1) * TOKBLK; t++) {
		const double *xt = j->x + (long)t * D;
		double u = 0, v = 0;
		for (int c = 0; c < D; c++) {
			u += p[WU][c] * xt[c];
			v += p[WV][c] * xt[c];
		}
		u = p[BU][0] + rs * u;
		v = p[BV][0] + rs * v;
		j->w.u[t] = u; j->w.s[t] = softplus(u); j->w.g[t] = sigmoid(v);
	}
}

static void recurrence(void *ctx, int blk)
{
	Job *j = ctx;
	int L = j->sh->L, D = j->sh->D;
	const double *const *p = j->p;
	double et = exp(p[THETA][0]);
	Row *w = &j->w;
	for (int t = 0; t < L; t++) {
		const double *xt = j->x + (long)t * D;
		for (int c = blk * CHBLK; c < D && c < (blk + 1) * CHBLK; c++) {
			long e = (long)t * D + c;
			double log_a = -et * w->s[t] * softplus(p[LAM][c]);
			double a = exp(log_a);
			double m = t == 0 ? 1.0 : sqrt(1 - exp(2 * log_a));
			double hprev = t == 0 ? 0.0 : w->h[e - D];
			w->a[e] = a; w->m[e] = m;
			w->h[e] = a * hprev + m * w->g[t] * xt[c];
			if (j->y)
				j->y[e] = w->h[e] + p[OMEGA][0] * xt[c];
		}
	}
}

/* Forward of one sequence: fills j->w (h without the omega * x skip) and,
 * when j->y is set, y. */
static void row_forward(Job *j)
{
	par_run((j->sh->L + TOKBLK - 1) / TOKBLK, controller, j);
	par_run((j->sh->D + CHBLK - 1) / CHBLK, recurrence, j);
}

static void forward(const RefShape *sh, const double *const *p, const double *x, double *y)
{
	long n = (long)sh->L * sh->D;
	Job j = { .sh = sh, .p = p };
	row_alloc(&j.w, sh->L, sh->D);
	for (int b = 0; b < sh->B; b++) {
		j.x = x + b * n;
		j.y = y + b * n;
		row_forward(&j);
	}
	row_free(&j.w);
}

/* the reverse scan of one channel block: dh, the element gradients, and the
 * block's sums over its channels of dg, ds, dtheta, domega */
static void reverse(void *ctx, int blk)
{
	Job *j = ctx;
	int L = j->sh->L, D = j->sh->D;
	const double *const *p = j->p;
	double et = exp(p[THETA][0]), omega = p[OMEGA][0];
	const double *lam = p[LAM];
	Row *w = &j->w;
	double dh[CHBLK], dth = 0, dom = 0;
	for (int t = L - 1; t >= 0; t--) {
		const double *xt = j->x + (long)t * D, *dyt = j->dy + (long)t * D;
		double s = w->s[t], g = w->g[t], dg = 0, ds = 0;
		for (int k = 0; k < CHBLK && blk * CHBLK + k < D; k++) {
			int c = blk * CHBLK + k;
			long e = (long)t * D + c;
			/* the chain from t+1 is cut at the end of the sequence */
			dh[k] = dyt[c] + (t + 1 < L ? w->a[e + D] * dh[k] : 0.0);
			double a = w->a[e], m = w->m[e], sp = softplus(lam[c]);
			double dlog_a = 0;
			if (t > 0) {
				double dm = -2 * a * a * dsqrtb(1 - a * a);
				dlog_a = dh[k] * (a * w->h[e - D] + g * xt[c] * dm);
			}
			dg += dh[k] * m * xt[c];
			ds += dlog_a * (-et * sp);
			j->dp[LAM][c] += dlog_a * (-et * s * sigmoid(lam[c]));
			/* log_a recomputed exactly as the forward did */
			dth += dlog_a * (-et * s * sp);
			dom += dyt[c] * xt[c];
			j->dx[e] = dh[k] * m * g + omega * dyt[c];
		}
		j->dgp[(long)blk * L + t] = dg;
		j->dsp[(long)blk * L + t] = ds;
	}
	j->dthp[blk] += dth;
	j->domp[blk] += dom;
}

/* the controller's share of dx and the gradients of its weights, per channel block */
static void controller_back(void *ctx, int blk)
{
	Job *j = ctx;
	int L = j->sh->L, D = j->sh->D;
	double rs = 1 / sqrt((double)D);
	const double *wu = j->p[WU], *wv = j->p[WV];
	for (int t = L - 1; t >= 0; t--) {
		const double *xt = j->x + (long)t * D;
		for (int c = blk * CHBLK; c < D && c < (blk + 1) * CHBLK; c++) {
			j->dx[(long)t * D + c] += (wu[c] * j->du[t] + wv[c] * j->dv[t]) * rs;
			j->dp[WU][c] += rs * j->du[t] * xt[c];
			j->dp[WV][c] += rs * j->dv[t] * xt[c];
		}
	}
}

static void backward(const RefShape *sh, const double *const *p, const double *x,
                     const double *dy, double *dx, double *const *dp)
{
	int L = sh->L, D = sh->D, nblk = (D + CHBLK - 1) / CHBLK;
	long n = (long)L * D;
	for (int k = 0; k < NPARAM; k++)
		memset(dp[k], 0, count(k, sh) * sizeof(double));
	Job j = { .sh = sh, .p = p, .dp = dp };
	row_alloc(&j.w, L, D);
	j.dgp = zeros((size_t)nblk * L); j.dsp = zeros((size_t)nblk * L);
	j.dthp = zeros(nblk); j.domp = zeros(nblk);
	j.du = zeros(L); j.dv = zeros(L);
	for (int b = 0; b < sh->B; b++) {
		j.x = x + b * n;
		j.dy = dy + b * n;
		j.dx = dx + b * n;
		j.y = NULL;
		row_forward(&j);
		par_run(nblk, reverse, &j);
		for (int t = L - 1; t >= 0; t--) {
			double dg = 0, ds = 0;
			for (int k = 0; k < nblk; k++) {
				dg += j.dgp[(long)k * L + t];
				ds += j.dsp[(long)k * L + t];
			}
			j.du[t] = ds * sigmoid(j.w.u[t]);
			j.dv[t] = dg * j.w.g[t] * (1 - j.w.g[t]);
			dp[BU][0] += j.du[t];
			dp[BV][0] += j.dv[t];
		}
		par_run(nblk, controller_back, &j);
	}
	for (int k = 0; k < nblk; k++) {
		dp[THETA][0] += j.dthp[k];
		dp[OMEGA][0] += j.domp[k];
	}
	free(j.dgp); free(j.dsp); free(j.dthp); free(j.domp); free(j.du); free(j.dv);
	row_free(&j.w);
}

const RefMixer ref_samu = { "samu", NPARAM, names, count, forward, backward };
