/* SAMU in float64, transcribed from shared/spec/architectures.md.
 *
 * One batch row at a time: the forward pass keeps the per-token controller
 * values (u, s, g) and the per-element a, m, h of the row, so that the
 * backward pass walks t downwards with the exact values the forward used.
 * Token blocks, then channel blocks, run on all cores (par.h).
 * Parameter order is the spec table's: wu [D], wv [D], lam [D], bu, bv,
 * theta, omega (scalars have one element).
 *
 * A sequence's state (util/seqstate.h) enters token by token through the
 * call's RefPlan (ref_math.h), as in ref_rglru.c; the controller, per token,
 * does not see it.
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

static void row_free(Row *w)
{
	free(w->u); free(w->s); free(w->g); free(w->a); free(w->m); free(w->h);
}

static int row_alloc(Row *w, int L, int D)
{
	long n = (long)L * D;
	w->u = zalloc(L); w->s = zalloc(L); w->g = zalloc(L);
	w->a = zalloc(n); w->m = zalloc(n); w->h = zalloc(n);
	if (w->u && w->s && w->g && w->a && w->m && w->h)
		return 0;
	row_free(w);
	return -1;
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
	int b;                     /* this row */
	const double *x, *dy;      /* this row */
	double *y, *dx;            /* this row */
	double *const *dp;
	RefPlan pl;                /* the call's state, token by token */
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

/* hT of the states whose last token is in this row, channel block blk. */
static void row_final(const Job *j, int blk)
{
	int L = j->sh->L, D = j->sh->D;
	for (int t = 0; t < L; t++) {
		int d = j->pl.end[(long)j->b * L + t];
		for (int c = blk * CHBLK; d >= 0 && c < D && c < (blk + 1) * CHBLK; c++)
			j->pl.st->hT[(long)d * D + c] = j->w.h[(long)t * D + c];
	}
}

/* The row's map (seqstate.h) on channel block blk: log_a summed, and the
 * scan again from h_in = 0 with first only where marked, each value as the
 * forward computes it. */
static void row_map(const Job *j, int blk)
{
	int L = j->sh->L, D = j->sh->D;
	double et = exp(j->p[THETA][0]);
	const Row *w = &j->w;
	const SeqState *st = j->pl.st;
	for (int c = blk * CHBLK; c < D && c < (blk + 1) * CHBLK; c++) {
		double la = 0, h = 0;
		for (int t = 0; t < L; t++) {
			long e = (long)t * D + c;
			int f = t ? j->pl.first[(long)j->b * L + t] : j->pl.first0[j->b];
			double log_a = -et * w->s[t] * softplus(j->p[LAM][c]);
			double m = f ? 1.0 : sqrt(1 - exp(2 * log_a));
			la = f ? -INFINITY : la + log_a;
			h = w->a[e] * (f ? 0.0 : h) + m * w->g[t] * j->x[e];
		}
		if (st->map_loga)
			st->map_loga[(long)j->b * D + c] = la;
		if (st->map_h)
			st->map_h[(long)j->b * D + c] = h;
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
		long k = (long)j->b * L + t;
		for (int c = blk * CHBLK; c < D && c < (blk + 1) * CHBLK; c++) {
			long e = (long)t * D + c;
			double log_a = -et * w->s[t] * softplus(p[LAM][c]);
			double a = exp(log_a);
			double m = j->pl.first[k] ? 1.0 : sqrt(1 - exp(2 * log_a));
			double hprev = ref_hprev(&j->pl, k, D, c, w->h + e);
			w->a[e] = a; w->m[e] = m;
			w->h[e] = a * hprev + m * w->g[t] * xt[c];
			if (j->y)
				j->y[e] = w->h[e] + p[OMEGA][0] * xt[c];
		}
	}
	/* the backward recomputes the forward with y NULL and wants neither */
	if (j->y && j->pl.st->hT)
		row_final(j, blk);
	if (j->y && (j->pl.st->map_loga || j->pl.st->map_h))
		row_map(j, blk);
}

/* Forward of row j->b: fills j->w (h without the omega * x skip) and,
 * when j->y is set, y and the state's outputs. */
static void row_forward(Job *j)
{
	par_run((j->sh->L + TOKBLK - 1) / TOKBLK, controller, j);
	par_run((j->sh->D + CHBLK - 1) / CHBLK, recurrence, j);
}

/* The plan and the row's intermediates; -1 with why in err. */
static int job_open(Job *j, const RefShape *sh, const SeqState *st, char *err, size_t errlen)
{
	if (ref_plan("samu", sh, st, &j->pl, err, errlen))
		return -1;
	if (row_alloc(&j->w, sh->L, sh->D) == 0)
		return 0;
	ref_plan_free(&j->pl);
	snprintf(err, errlen, "samu reference at %dx%dx%d: out of memory for a row's intermediates", sh->B, sh->L,
	         sh->D);
	return -1;
}

static int forward_state(const RefShape *sh, const double *const *p, const double *x, double *y,
                         const SeqState *st, char *err, size_t errlen)
{
	long n = (long)sh->L * sh->D;
	Job j = { .sh = sh, .p = p };
	if (job_open(&j, sh, st, err, errlen))
		return -1;
	for (int b = 0; b < sh->B; b++) {
		j.b = b;
		j.x = x + b * n;
		j.y = y + b * n;
		row_forward(&j);
	}
	row_free(&j.w);
	ref_plan_free(&j.pl);
	return 0;
}

static void forward(const RefShape *sh, const double *const *p, const double *x, double *y)
{
	char err[1024];
	if (forward_state(sh, p, x, y, NULL, err, sizeof err))
		ref_die(err);
}

/* the reverse scan of one channel block: dh, the element gradients, dh0,
 * and the block's sums over its channels of dg, ds, dtheta, domega */
static void reverse(void *ctx, int blk)
{
	Job *j = ctx;
	int L = j->sh->L, D = j->sh->D;
	const double *const *p = j->p;
	double et = exp(p[THETA][0]), omega = p[OMEGA][0];
	const double *lam = p[LAM];
	const RefPlan *pl = &j->pl;
	Row *w = &j->w;
	double dh[CHBLK], dth = 0, dom = 0;
	for (int t = L - 1; t >= 0; t--) {
		const double *xt = j->x + (long)t * D, *dyt = j->dy + (long)t * D;
		double s = w->s[t], g = w->g[t], dg = 0, ds = 0;
		long k = (long)j->b * L + t;
		for (int q = 0; q < CHBLK && blk * CHBLK + q < D; q++) {
			int c = blk * CHBLK + q;
			long e = (long)t * D + c;
			dh[q] = dyt[c] + ref_carry(pl, k, t, L, D, c, w->a + e, dh[q]);
			double a = w->a[e], m = w->m[e], sp = softplus(lam[c]);
			double dlog_a = 0;
			if (!pl->first[k]) {
				double dm = -2 * a * a * dsqrtb(1 - a * a);
				dlog_a = dh[q] * (a * ref_hprev(pl, k, D, c, w->h + e) + g * xt[c] * dm);
			}
			if (pl->start[k] >= 0 && pl->st->dh0)
				pl->st->dh0[(long)pl->start[k] * D + c] = a * dh[q];
			dg += dh[q] * m * xt[c];
			ds += dlog_a * (-et * sp);
			j->dp[LAM][c] += dlog_a * (-et * s * sigmoid(lam[c]));
			/* log_a recomputed exactly as the forward did */
			dth += dlog_a * (-et * s * sp);
			dom += dyt[c] * xt[c];
			j->dx[e] = dh[q] * m * g + omega * dyt[c];
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

/* One row backwards: the forward again, the reverse scan per channel
 * block, the controller's adjoints in token order, then its weights. */
static void row_backward(Job *j, int nblk)
{
	int L = j->sh->L;
	double *const *dp = j->dp;
	j->y = NULL;
	row_forward(j);
	par_run(nblk, reverse, j);
	for (int t = L - 1; t >= 0; t--) {
		double dg = 0, ds = 0;
		for (int k = 0; k < nblk; k++) {
			dg += j->dgp[(long)k * L + t];
			ds += j->dsp[(long)k * L + t];
		}
		j->du[t] = ds * sigmoid(j->w.u[t]);
		j->dv[t] = dg * j->w.g[t] * (1 - j->w.g[t]);
		dp[BU][0] += j->du[t];
		dp[BV][0] += j->dv[t];
	}
	par_run(nblk, controller_back, j);
}

/* The backward's scratch beyond the row: -1 when out of memory. */
static int job_scratch(Job *j, int L, int nblk)
{
	j->dgp = zalloc((size_t)nblk * L); j->dsp = zalloc((size_t)nblk * L);
	j->dthp = zalloc(nblk); j->domp = zalloc(nblk);
	j->du = zalloc(L); j->dv = zalloc(L);
	return j->dgp && j->dsp && j->dthp && j->domp && j->du && j->dv ? 0 : -1;
}

static int backward_state(const RefShape *sh, const double *const *p, const double *x, const double *dy,
                          double *dx, double *const *dp, const SeqState *st, char *err, size_t errlen)
{
	int L = sh->L, D = sh->D, nblk = (D + CHBLK - 1) / CHBLK;
	long n = (long)L * D;
	Job j = { .sh = sh, .p = p, .dp = dp };
	if (job_open(&j, sh, st, err, errlen))
		return -1;
	int rc = job_scratch(&j, L, nblk);
	if (rc)
		snprintf(err, errlen, "samu reference at %dx%dx%d: out of memory for the adjoints", sh->B, L, D);
	else {
		for (int k = 0; k < NPARAM; k++)
			memset(dp[k], 0, count(k, sh) * sizeof(double));
		if (j.pl.st->dh0)
			memset(j.pl.st->dh0, 0, (size_t)seqstate_nstates(st, sh->B) * D * sizeof(double));
		for (int b = 0; b < sh->B; b++) {
			j.b = b;
			j.x = x + b * n;
			j.dy = dy + b * n;
			j.dx = dx + b * n;
			row_backward(&j, nblk);
		}
		for (int k = 0; k < nblk; k++) {
			dp[THETA][0] += j.dthp[k];
			dp[OMEGA][0] += j.domp[k];
		}
	}
	free(j.dgp); free(j.dsp); free(j.dthp); free(j.domp); free(j.du); free(j.dv);
	row_free(&j.w);
	ref_plan_free(&j.pl);
	return rc;
}

static void backward(const RefShape *sh, const double *const *p, const double *x,
                     const double *dy, double *dx, double *const *dp)
{
	char err[1024];
	if (backward_state(sh, p, x, dy, dx, dp, NULL, err, sizeof err))
		ref_die(err);
}

const RefMixer ref_samu = { "samu", NPARAM, names, count, forward, backward, forward_state, backward_state };
