/* What storing the gates' sigmoids in fp16 (PJ_SIG) does to RG-LRU's
 * outputs and gradients, against storing the projections in bf16 (the
 * tree), both against float64 with nothing rounded.
 *
 *   cc -O2 -o sigerr sigerr.c -lm && ./sigerr
 *
 * One layer's element math in float64 (spec/architectures.md's RG-LRU,
 * c = 8): r = sigmoid(pa), i = sigmoid(px), log a = -c r softplus(lam),
 * h = a h + sqrt(1 - a^2) i x (m = 1 at t = 0), y = h; its backward by
 * hand (checked against central differences at startup). Three ways of
 * holding the gates' inputs:
 *   exact  the projections as drawn;
 *   bf16   pa, px rounded to bf16 (what proj_fwd stores today), the
 *          sigmoid and its derivative r (1 - r) from the rounded value;
 *   sig16  sigmoid(pa), sigmoid(px) rounded to fp16 (PJ_SIG), the
 *          derivative r (1 - r) from the rounded sigmoid;
 *   h2     the same through fp16 arithmetic a pair at a time (SIG_H2):
 *          z/2 rounded to fp16, its tanh rounded to fp16, then
 *          0.5 t + 0.5 rounded once (fma.rn.f16x2).
 * Reported: ||out - exact|| / ||exact|| over all tokens and channels (the
 * metric recur verify uses) for y, dx, dpa, dpx and dlam, at projections
 * of standard deviation 1 (the init) and 3 and 6 (gates near 0 and 1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { L = 8192, D = 64 };
#define C 8.0

static uint64_t st = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
	st ^= st << 13, st ^= st >> 7, st ^= st << 17;
	return (double)(st >> 11) / 9007199254740992.0;
}
static double nrand(void)
{
	double u = urand(), v = urand();
	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static double sigm(double z) { return 1 / (1 + exp(-z)); }
static double softplus(double z) { return z > 30 ? z : log1p(exp(z)); }

static double bf16(double v)
{
	float f = (float)v;
	uint32_t u;
	memcpy(&u, &f, 4);
	u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}
static double fp16(double v) { return (double)(_Float16)(float)v; }

typedef struct { double y[L], dx[L], dpa[L], dpx[L], dlam; } Out;

enum { NMODE = 4 };
/* sigmoid as SIG_H2 takes it: tanh.approx.f16x2 of z/2 in fp16 (here
 * rounded correctly: the instruction's own error is not modelled), then
 * one fma.rn.f16x2 */
static double sig_h2(double z) { return fp16(0.5 + 0.5 * fp16(tanh(fp16(z / 2)))); }

/* mode 0 exact, 1 bf16 projections, 2 fp16 sigmoids, 3 fp16 sigmoids in fp16 arithmetic */
static void run(int mode, const double *x, const double *pa, const double *px, double lam, const double *dy, Out *o)
{
	static double r[L], ig[L], a[L], m[L], h[L];
	double sp = softplus(lam), hp = 0;
	for (int t = 0; t < L; t++) {
		double za = pa[t], zx = px[t];
		if (mode == 1) za = bf16(za), zx = bf16(zx);
		r[t] = sigm(za), ig[t] = sigm(zx);
		if (mode == 2) r[t] = fp16(r[t]), ig[t] = fp16(ig[t]);
		if (mode == 3) r[t] = sig_h2(za), ig[t] = sig_h2(zx);
		a[t] = exp(-C * r[t] * sp);
		m[t] = t == 0 ? 1 : sqrt(fmax(1 - a[t] * a[t], 0));
		h[t] = a[t] * hp + m[t] * ig[t] * x[t];
		hp = h[t];
		o->y[t] = h[t];
	}
	double dh = 0, dlam = 0, sl = sigm(lam);
	for (int t = L - 1; t >= 0; t--) {
		dh = dy[t] + (t + 1 < L ? a[t + 1] * dh : 0);
		double hprev = t ? h[t - 1] : 0, db = dh;
		double dm = t ? db * ig[t] * x[t] : 0;
		double da = dh * hprev + (t && m[t] > 0 ? dm * (-a[t] / m[t]) : 0);
		double dloga = da * a[t];
		o->dpa[t] = dloga * (-C * sp) * r[t] * (1 - r[t]);
		o->dpx[t] = db * m[t] * x[t] * ig[t] * (1 - ig[t]);
		o->dx[t] = db * m[t] * ig[t];
		dlam += dloga * (-C * r[t]) * sl;
	}
	o->dlam = dlam;
}

static double loss(const double *x, const double *pa, const double *px, double lam, const double *dy)
{
	static Out o;
	run(0, x, pa, px, lam, dy, &o);
	double s = 0;
	for (int t = 0; t < L; t++) s += dy[t] * o.y[t];
	return s;
}

/* the hand-written backward against central differences, on one channel */
static int check_grad(void)
{
	static double x[L], pa[L], px[L], dy[L];
	static Out o;
	for (int t = 0; t < L; t++) x[t] = nrand(), pa[t] = nrand(), px[t] = nrand(), dy[t] = nrand();
	double lam = 2.0;
	run(0, x, pa, px, lam, dy, &o);
	int bad = 0;
	int ts[] = { 0, 1, 7, 100, L - 1 };
	for (int k = 0; k < 5; k++) {
		int t = ts[k];
		double *v[3] = { &x[t], &pa[t], &px[t] }, g[3] = { o.dx[t], o.dpa[t], o.dpx[t] };
		for (int q = 0; q < 3; q++) {
			double s = *v[q], e = 1e-6;
			*v[q] = s + e; double lp = loss(x, pa, px, lam, dy);
			*v[q] = s - e; double lm = loss(x, pa, px, lam, dy);
			*v[q] = s;
			double fd = (lp - lm) / (2 * e);
			if (fabs(fd - g[q]) > 1e-5 * (1 + fabs(fd))) { printf("grad check t=%d q=%d: %g vs %g\n", t, q, g[q], fd); bad = 1; }
		}
	}
	double e = 1e-6, lp = loss(x, pa, px, lam + e, dy), lm = loss(x, pa, px, lam - e, dy), fd = (lp - lm) / (2 * e);
	if (fabs(fd - o.dlam) > 1e-5 * (1 + fabs(fd))) { printf("grad check lam: %g vs %g\n", o.dlam, fd); bad = 1; }
	return bad;
}

int main(void)
{
	if (check_grad()) return 1;
	printf("hand backward = central differences (x, pa, px at 5 tokens, lam)\n\n");
	printf("%-6s %-6s %10s %10s %10s %10s %10s\n", "pstd", "store", "y", "dx", "dpa", "dpx", "dlam");
	double stds[] = { 1, 3, 6 };
	for (int si = 0; si < 3; si++) {
		double num[NMODE][5] = { { 0 } }, den[5] = { 0 };
		static double x[L], pa[L], px[L], dy[L];
		static Out o[NMODE];
		for (int c = 0; c < D; c++) {
			double u = 0.81 + (0.998 - 0.81) * urand();
			double lam = log(exp(-0.5 * log(u)) - 1);   /* a_param at its init */
			for (int t = 0; t < L; t++)
				x[t] = nrand(), pa[t] = stds[si] * nrand(), px[t] = stds[si] * nrand(), dy[t] = nrand();
			for (int mode = 0; mode < NMODE; mode++)
				run(mode, x, pa, px, lam, dy, &o[mode]);
			for (int t = 0; t < L; t++) {
				double ev[5] = { o[0].y[t], o[0].dx[t], o[0].dpa[t], o[0].dpx[t], 0 };
				for (int k = 0; k < 4; k++) den[k] += ev[k] * ev[k];
				for (int mode = 1; mode < NMODE; mode++) {
					double mv[4] = { o[mode].y[t], o[mode].dx[t], o[mode].dpa[t], o[mode].dpx[t] };
					for (int k = 0; k < 4; k++) num[mode][k] += (mv[k] - ev[k]) * (mv[k] - ev[k]);
				}
			}
			den[4] += o[0].dlam * o[0].dlam;
			for (int mode = 1; mode < NMODE; mode++)
				num[mode][4] += (o[mode].dlam - o[0].dlam) * (o[mode].dlam - o[0].dlam);
		}
		const char *nm[NMODE] = { "", "bf16", "sig16", "h2" };
		for (int mode = 1; mode < NMODE; mode++) {
			printf("%-6g %-6s", stds[si], nm[mode]);
			for (int k = 0; k < 5; k++) printf(" %10.2e", sqrt(num[mode][k] / den[k]));
			printf("\n");
		}
	}
	return 0;
}
