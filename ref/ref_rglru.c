/* RG-LRU in float64, transcribed from shared/spec/architectures.md.
 *
 * One batch row at a time: the forward pass keeps every per-element
 * intermediate of the row (r, i, a, m, h) so that the backward pass can walk t
 * downwards with the exact values the forward used. Heads are independent
 * and run on all cores (par.h); each head's arithmetic is that of a plain
 * sequential pass. Parameter order is the
 * spec table's: Wa [H][K][K], ba [D], Wx [H][K][K], bx [D], lam [D].
 */
#include "ref.h"
#include "par.h"
#include "ref_math.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WA, BA, WX, BX, LAM, NPARAM };
#define C_GATE 8.0

static const char *const names[NPARAM] = { "Wa", "ba", "Wx", "bx", "lam" };

static long count(int i, const RefShape *s)
{
	long K = s->D / s->H;
	return (i == WA || i == WX) ? (long)s->H * K * K : s->D;
}

/* Per-row intermediates, each [L][D]. */
typedef struct { double *r, *i, *a, *m, *h; } Row;

static void row_alloc(Row *w, long n)
{
	w->r = zeros(n); w->i = zeros(n); w->a = zeros(n); w->m = zeros(n); w->h = zeros(n);
}

static void row_free(Row *w)
{
	free(w->r); free(w->i); free(w->a); free(w->m); free(w->h);
}

/* Forward of head hd of one sequence x[L][D]; fills the head's columns of w. */
static void row_forward(const RefShape *s, const double *const *p, const double *x, Row *w, int hd)
{
	int L = s->L, D = s->D, H = s->H, K = D / H;
	const double *Wa = p[WA], *ba = p[BA], *Wx = p[WX], *bx = p[BX], *lam = p[LAM];
	for (int t = 0; t < L; t++) {
		const double *xt = x + (long)t * D;
		for (int j = 0; j < K; j++) {
			int c = hd * K + j;
			double pa = ba[c], px = bx[c];
			for (int i = 0; i < K; i++) {
				pa += xt[hd * K + i] * Wa[((long)hd * K + i) * K + j];
				px += xt[hd * K + i] * Wx[((long)hd * K + i) * K + j];
			}
			long e = (long)t * D + c;
			double r = sigmoid(pa), ig = sigmoid(px);
			double log_a = -C_GATE * r * softplus(lam[c]);
			double a = exp(log_a);
			double m = t == 0 ? 1.0 : sqrt(1 - exp(2 * log_a));
			double hprev = t == 0 ? 0.0 : w->h[e - D];
			w->r[e] = r; w->i[e] = ig; w->a[e] = a; w->m[e] = m;
			w->h[e] = a * hprev + m * ig * xt[c];
		}
	}
}

/* Heads are independent (block-diagonal projections, per-channel gates), so
 * each head is one work item: same operations in the same order as a
 * sequential pass, on every core. */
typedef struct {
	const RefShape *s;
	const double *const *p;
	const double *x, *dy;
	double *y, *dx;
	double *const *dp;
	Row w;                 /* [L][D], each head in its own columns */
	double *dh, *dpa, *dpx;   /* [D] */
} Job;

static void forward_head(void *ctx, int hd)
{
	Job *j = ctx;
	const RefShape *s = j->s;
	long n = (long)s->L * s->D;
	int K = s->D / s->H;
	for (int b = 0; b < s->B; b++) {
		row_forward(s, j->p, j->x + b * n, &j->w, hd);
		for (int t = 0; t < s->L; t++)
			memcpy(j->y + b * n + (long)t * s->D + hd * K, j->w.h + (long)t * s->D + hd * K, K * sizeof(double));
	}
}

static void forward(const RefShape *s, const double *const *p, const double *x, double *y)
{
	Job j = { .s = s, .p = p, .x = x, .y = y };
	row_alloc(&j.w, (long)s->L * s->D);
	par_run(s->H, forward_head, &j);
	row_free(&j.w);
}

static void backward_head(void *ctx, int hd)
{
	Job *jb = ctx;
	const RefShape *s = jb->s;
	int L = s->L, D = s->D, H = s->H, K = D / H;
	long n = (long)L * D;
	const double *const *p = jb->p;
	double *const *dp = jb->dp;
	const double *Wa = p[WA], *Wx = p[WX], *lam = p[LAM];
	double *dh = jb->dh, *dpa = jb->dpa, *dpx = jb->dpx;
	Row *w = &jb->w;
	for (int b = 0; b < s->B; b++) {
		const double *xb = jb->x + b * n, *dyb = jb->dy + b * n;
		double *dxb = jb->dx + b * n;
		row_forward(s, p, xb, w, hd);
		for (int t = L - 1; t >= 0; t--) {
			const double *xt = xb + (long)t * D;
			for (int c = hd * K; c < (hd + 1) * K; c++) {
				long e = (long)t * D + c;
				/* the chain from t+1 is cut at the end of the sequence */
				dh[c] = dyb[e] + (t + 1 < L ? w->a[e + D] * dh[c] : 0.0);
				double r = w->r[e], ig = w->i[e], a = w->a[e], m = w->m[e];
				double dlog_a = 0;
				if (t > 0) {
					double dm = -2 * a * a * dsqrtb(1 - a * a);
					dlog_a = dh[c] * (a * w->h[e - D] + ig * xt[c] * dm);
				}
				double sp = softplus(lam[c]);
				double dr = dlog_a * (-C_GATE * sp);
				double di = dh[c] * m * xt[c];
				dpa[c] = dr * r * (1 - r);
				dpx[c] = di * ig * (1 - ig);
				dxb[e] = dh[c] * m * ig;
				dp[LAM][c] += dlog_a * (-C_GATE * r * sigmoid(lam[c]));
				dp[BA][c] += dpa[c];
				dp[BX][c] += dpx[c];
			}
			for (int i = 0; i < K; i++) {
				int ci = hd * K + i;
				const double *wa = Wa + ((long)hd * K + i) * K, *wx = Wx + ((long)hd * K + i) * K;
				double *dwa = dp[WA] + ((long)hd * K + i) * K, *dwx = dp[WX] + ((long)hd * K + i) * K;
				double acc = 0;
				for (int j = 0; j < K; j++) {
					acc += wa[j] * dpa[hd * K + j] + wx[j] * dpx[hd * K + j];
					dwa[j] += xt[ci] * dpa[hd * K + j];
					dwx[j] += xt[ci] * dpx[hd * K + j];
				}
				dxb[(long)t * D + ci] += acc;
			}
		}
	}
}

static void backward(const RefShape *s, const double *const *p, const double *x,
                     const double *dy, double *dx, double *const *dp)
{
	for (int k = 0; k < NPARAM; k++)
		memset(dp[k], 0, count(k, s) * sizeof(double));
	Job j = { .s = s, .p = p, .x = x, .dy = dy, .dx = dx, .dp = dp };
	row_alloc(&j.w, (long)s->L * s->D);
	j.dh = zeros(s->D); j.dpa = zeros(s->D); j.dpx = zeros(s->D);
	par_run(s->H, backward_head, &j);
	free(j.dh); free(j.dpa); free(j.dpx);
	row_free(&j.w);
}

const RefMixer ref_rglru = { "rglru", NPARAM, names, count, forward, backward };
