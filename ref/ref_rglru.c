/* RG-LRU in float64, transcribed from shared/spec/architectures.md.
 *
 * One batch row at a time: the forward pass keeps every per-element
 * intermediate of the row (r, i, a, m, h) so that the backward pass can walk t
 * downwards with the exact values the forward used. Heads are independent
 * and run on all cores (par.h); each head's arithmetic is that of a plain
 * sequential pass. Parameter order is the
 * spec table's: Wa [H][K][K], ba [D], Wx [H][K][K], bx [D], lam [D].
 *
 * A sequence's state (util/seqstate.h) enters token by token through the
 * call's RefPlan (ref_math.h): the spec's t = 0 branches (m = 1, h_prev = 0,
 * dlog_a = 0) run wherever a token is a reset, h_prev is h0 where a
 * sequence continues from it, and the chain back is cut before every
 * sequence start; the empty state is the plain call, in the same operations.
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

/* frees the row's intermediates and leaves it empty (freeing it again is a no-op) */
static void row_free(Row *w)
{
	free(w->r); free(w->i); free(w->a); free(w->m); free(w->h);
	*w = (Row){ 0 };
}

static int row_alloc(Row *w, long n)
{
	w->r = zalloc(n); w->i = zalloc(n); w->a = zalloc(n); w->m = zalloc(n); w->h = zalloc(n);
	if (w->r && w->i && w->a && w->m && w->h)
		return 0;
	row_free(w);
	return -1;
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
	RefPlan pl;            /* the call's state, token by token */
	Row w;                 /* [L][D], each head in its own columns */
	double *dh, *dpa, *dpx;   /* [D] */
	double *pa, *px;          /* [D]: a token's projections (each head its own columns) */
} Job;

/* Forward of head hd of row b, x[L][D]; fills the head's columns of w. */
static void row_forward(Job *jb, const double *x, int b, int hd)
{
	const RefShape *s = jb->s;
	int L = s->L, D = s->D, H = s->H, K = D / H;
	const double *const *p = jb->p;
	const double *Wa = p[WA], *ba = p[BA], *Wx = p[WX], *bx = p[BX], *lam = p[LAM];
	Row *w = &jb->w;
	double *pa = jb->pa + hd * K, *px = jb->px + hd * K;
	for (int t = 0; t < L; t++) {
		const double *xt = x + (long)t * D;
		long k = (long)b * L + t;
		/* pa[j] = ba + sum_i x_i Wa[i][j], summed over i in order: by rows
		 * of W, every column's sum at once (independent adds, not a chain) */
		for (int j = 0; j < K; j++) {
			pa[j] = ba[hd * K + j];
			px[j] = bx[hd * K + j];
		}
		for (int i = 0; i < K; i++) {
			const double *wa = Wa + ((long)hd * K + i) * K, *wx = Wx + ((long)hd * K + i) * K;
			double xi = xt[hd * K + i];
			for (int j = 0; j < K; j++) {
				pa[j] += xi * wa[j];
				px[j] += xi * wx[j];
			}
		}
		for (int j = 0; j < K; j++) {
			int c = hd * K + j;
			long e = (long)t * D + c;
			double r = sigmoid(pa[j]), ig = sigmoid(px[j]);
			double log_a = -C_GATE * r * softplus(lam[c]);
			double a = exp(log_a);
			double m = jb->pl.first[k] ? 1.0 : sqrt(1 - exp(2 * log_a));
			double hprev = ref_hprev(&jb->pl, k, D, c, w->h + e);
			w->r[e] = r; w->i[e] = ig; w->a[e] = a; w->m[e] = m;
			w->h[e] = a * hprev + m * ig * xt[c];
		}
	}
}

/* hT of the states whose last token is in row b, head hd's channels. */
static void row_final(const Job *jb, int b, int hd)
{
	int L = jb->s->L, D = jb->s->D, K = D / jb->s->H;
	for (int t = 0; t < L; t++) {
		int d = jb->pl.end[(long)b * L + t];
		if (d >= 0)
			memcpy(jb->pl.st->hT + (long)d * D + hd * K, jb->w.h + (long)t * D + hd * K,
			       K * sizeof(double));
	}
}

/* The row's map (seqstate.h) on head hd's channels: log_a summed, and the
 * scan again from h_in = 0 with first only where marked, each value as the
 * forward computes it. */
static void row_map(const Job *jb, const double *x, int b, int hd)
{
	int L = jb->s->L, D = jb->s->D, K = D / jb->s->H;
	const Row *w = &jb->w;
	const SeqState *st = jb->pl.st;
	for (int c = hd * K; c < (hd + 1) * K; c++) {
		double sp = softplus(jb->p[LAM][c]), la = 0, h = 0;
		for (int t = 0; t < L; t++) {
			long e = (long)t * D + c;
			int f = t ? jb->pl.first[(long)b * L + t] : jb->pl.first0[b];
			double log_a = -C_GATE * w->r[e] * sp;
			double m = f ? 1.0 : sqrt(1 - exp(2 * log_a));
			la = f ? -INFINITY : la + log_a;
			h = w->a[e] * (f ? 0.0 : h) + m * w->i[e] * x[e];
		}
		if (st->map_loga)
			st->map_loga[(long)b * D + c] = la;
		if (st->map_h)
			st->map_h[(long)b * D + c] = h;
	}
}

static void forward_head(void *ctx, int hd)
{
	Job *j = ctx;
	const RefShape *s = j->s;
	long n = (long)s->L * s->D;
	int K = s->D / s->H;
	for (int b = 0; b < s->B; b++) {
		row_forward(j, j->x + b * n, b, hd);
		for (int t = 0; t < s->L; t++)
			memcpy(j->y + b * n + (long)t * s->D + hd * K, j->w.h + (long)t * s->D + hd * K,
			       K * sizeof(double));
		if (j->pl.st->hT)
			row_final(j, b, hd);
		if (j->pl.st->map_loga || j->pl.st->map_h)
			row_map(j, j->x + b * n, b, hd);
	}
}

/* frees what the job holds (the backward's adjoints too, where allocated) */
static void job_close(Job *j)
{
	free(j->pa); free(j->px);
	free(j->dh); free(j->dpa); free(j->dpx);
	row_free(&j->w);
	ref_plan_free(&j->pl);
}

/* The plan, the row's intermediates and a token's projections; -1 with why in err. */
static int job_open(Job *j, const RefShape *s, const SeqState *st, char *err, size_t errlen)
{
	if (ref_plan("rglru", s, st, &j->pl, err, errlen))
		return -1;
	if (row_alloc(&j->w, (long)s->L * s->D) == 0) {
		j->pa = zalloc(s->D); j->px = zalloc(s->D);
		if (j->pa && j->px)
			return 0;
	}
	job_close(j);
	snprintf(err, errlen, "rglru reference at %dx%dx%d: out of memory for a row's intermediates", s->B, s->L,
	         s->D);
	return -1;
}

static int forward_state(const RefShape *s, const double *const *p, const double *x, double *y,
                         const SeqState *st, char *err, size_t errlen)
{
	Job j = { .s = s, .p = p, .x = x, .y = y };
	if (job_open(&j, s, st, err, errlen))
		return -1;
	par_run(s->H, forward_head, &j);
	job_close(&j);
	return 0;
}

static void forward(const RefShape *s, const double *const *p, const double *x, double *y)
{
	char err[1024];
	if (forward_state(s, p, x, y, NULL, err, sizeof err))
		ref_die(err);
}

/* The gates of head hd at token t of row b, backwards: dh carried down,
 * dpa, dpx, dx's direct term, the per-channel gradients and dh0. */
static void gates_back(Job *jb, const double *xb, const double *dyb, double *dxb, int b, int t, int hd)
{
	const RefShape *s = jb->s;
	int L = s->L, D = s->D, K = D / s->H;
	const double *lam = jb->p[LAM];
	double *const *dp = jb->dp;
	double *dh = jb->dh;
	const Row *w = &jb->w;
	const double *xt = xb + (long)t * D;
	long k = (long)b * L + t;
	for (int c = hd * K; c < (hd + 1) * K; c++) {
		long e = (long)t * D + c;
		dh[c] = dyb[e] + ref_carry(&jb->pl, k, t, L, D, c, w->a + e, dh[c]);
		double r = w->r[e], ig = w->i[e], a = w->a[e], m = w->m[e];
		double dlog_a = 0;
		if (!jb->pl.first[k]) {
			double dm = -2 * a * a * dsqrtb(1 - a * a);
			dlog_a = dh[c] * (a * ref_hprev(&jb->pl, k, D, c, w->h + e) + ig * xt[c] * dm);
		}
		if (jb->pl.start[k] >= 0 && jb->pl.st->dh0)
			jb->pl.st->dh0[(long)jb->pl.start[k] * D + c] = a * dh[c];
		double sp = softplus(lam[c]);
		double dr = dlog_a * (-C_GATE * sp);
		double di = dh[c] * m * xt[c];
		jb->dpa[c] = dr * r * (1 - r);
		jb->dpx[c] = di * ig * (1 - ig);
		dxb[e] = dh[c] * m * ig;
		dp[LAM][c] += dlog_a * (-C_GATE * r * sigmoid(lam[c]));
		dp[BA][c] += jb->dpa[c];
		dp[BX][c] += jb->dpx[c];
	}
}

/* The projections of head hd at token t, backwards: dx's share and dWa, dWx. */
static void proj_back(Job *jb, const double *xt, double *dxt, int hd)
{
	int K = jb->s->D / jb->s->H;
	const double *Wa = jb->p[WA], *Wx = jb->p[WX];
	double *const *dp = jb->dp;
	const double *dpa = jb->dpa + hd * K, *dpx = jb->dpx + hd * K;
	for (int i = 0; i < K; i++) {
		double *dwa = dp[WA] + ((long)hd * K + i) * K, *dwx = dp[WX] + ((long)hd * K + i) * K;
		double xi = xt[hd * K + i];
		for (int j = 0; j < K; j++) {
			dwa[j] += xi * dpa[j];
			dwx[j] += xi * dpx[j];
		}
	}
	/* dx's share of row i: sum_j (Wa[i][j] dpa[j] + Wx[i][j] dpx[j]) in the
	 * order of j, 8 rows' sums at once (independent adds, not one chain) */
	enum { ROWS = 8 };
	for (int i0 = 0; i0 < K; i0 += ROWS) {
		int n = K - i0 < ROWS ? K - i0 : ROWS;
		const double *wa = Wa + ((long)hd * K + i0) * K, *wx = Wx + ((long)hd * K + i0) * K;
		double acc[ROWS] = { 0 };
		for (int j = 0; j < K; j++)
			for (int r = 0; r < n; r++)
				acc[r] += wa[(long)r * K + j] * dpa[j] + wx[(long)r * K + j] * dpx[j];
		for (int r = 0; r < n; r++)
			dxt[hd * K + i0 + r] += acc[r];
	}
}

static void backward_head(void *ctx, int hd)
{
	Job *jb = ctx;
	const RefShape *s = jb->s;
	int L = s->L, D = s->D;
	long n = (long)L * D;
	for (int b = 0; b < s->B; b++) {
		const double *xb = jb->x + b * n, *dyb = jb->dy + b * n;
		double *dxb = jb->dx + b * n;
		row_forward(jb, xb, b, hd);
		for (int t = L - 1; t >= 0; t--) {
			gates_back(jb, xb, dyb, dxb, b, t, hd);
			proj_back(jb, xb + (long)t * D, dxb + (long)t * D, hd);
		}
	}
}

static int backward_state(const RefShape *s, const double *const *p, const double *x, const double *dy,
                          double *dx, double *const *dp, const SeqState *st, char *err, size_t errlen)
{
	Job j = { .s = s, .p = p, .x = x, .dy = dy, .dx = dx, .dp = dp };
	if (job_open(&j, s, st, err, errlen))
		return -1;
	j.dh = zalloc(s->D); j.dpa = zalloc(s->D); j.dpx = zalloc(s->D);
	if (!j.dh || !j.dpa || !j.dpx) {
		snprintf(err, errlen, "rglru reference at %dx%dx%d: out of memory for the adjoints", s->B, s->L, s->D);
	} else {
		for (int k = 0; k < NPARAM; k++)
			memset(dp[k], 0, count(k, s) * sizeof(double));
		if (j.pl.st->dh0)
			memset(j.pl.st->dh0, 0, (size_t)seqstate_nstates(st, s->B) * s->D * sizeof(double));
		par_run(s->H, backward_head, &j);
	}
	int rc = j.dh && j.dpa && j.dpx ? 0 : -1;
	job_close(&j);
	return rc;
}

static void backward(const RefShape *s, const double *const *p, const double *x,
                     const double *dy, double *dx, double *const *dp)
{
	char err[1024];
	if (backward_state(s, p, x, dy, dx, dp, NULL, err, sizeof err))
		ref_die(err);
}

const RefMixer ref_rglru = { "rglru", NPARAM, names, count, forward, backward, forward_state, backward_state };
