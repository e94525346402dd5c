/* A long sequence split into parts, the way a split across devices runs
 * it: each part's forward from a zero state with the row's map (a variant
 * of a grid with map = { true }), the maps composed in order into the
 * state entering each part, then each part's forward again from that
 * state. The result is checked against one forward over the whole
 * sequence.
 *
 *   ./build/recur gen lua/variants/state.lua -o out/state
 *   ./build/split_map out/state states_map_fused_grouped_prefix32_lookback_chunk8 2 8192 1024 4
 *
 * Here the parts run one after another on one GPU. Across devices, part
 * k's first forward needs nothing from the others; only the [B][D] maps
 * travel, and the state entering part k is
 *     s_k = exp(map_loga_{k-1}) * s_{k-1} + map_h_{k-1},   s_0 = h0,
 * the same few multiply-adds on every device. */
#include "recur.h"
#include "example_args.h"
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x) do { if ((x) != 0) { fprintf(stderr, "split_map: %s\n", err); goto out; } } while (0)
#define MAXP 16      /* parameters this example has buffers for */
#define MAXPARTS 64

/* uniform in (0, 1) from a 64-bit LCG; normal by Box-Muller */
static double uni(uint64_t *r)
{
	*r = *r * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(*r >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(uint64_t *r) { return sqrt(-2.0 * log(uni(r))) * cos(6.283185307179586 * uni(r)); }

static uint16_t to_bf16(float f)   /* round to nearest even */
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* the script's init for parameter k (recur_param_init): a real program loads its own */
static int init_param(const recur_manifest *m, int vi, int k, recur_shape s, float *v, long e, uint64_t *r,
                      char *err, size_t n)
{
	double a = 0, b = 0;
	const char *kind = recur_param_init(m, vi, k, s, &a, &b);
	if (!kind) {
		snprintf(err, n, "parameter %s has no init", recur_param_name(m, vi, k));
		return -1;
	}
	for (long i = 0; i < e; i++) {
		double u = a + (b - a) * uni(r);   /* "decay": u uniform in [a, b], stored as log(u^(-1/2) - 1) */
		v[i] = (float)(!strcmp(kind, "zeros") ? 0.0 : !strcmp(kind, "const") ? a
		               : !strcmp(kind, "normal") ? a * normal(r) : log(exp(-0.5 * log(u)) - 1.0));
	}
	return 0;
}

/* ||a - b|| / ||b|| */
static double relerr(const float *a, const float *b, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += (double)b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* part k of P of every row of x (host [B][L][D] bf16), tokens
 * [L k / P, L (k + 1) / P), uploaded contiguous as [B][Lk][D] */
static int upload_part(recur_rt *rt, CUdeviceptr x, const uint16_t *xh, uint16_t *part, int B, int L, int D, int P,
                       int k, recur_shape *ps, char *err, size_t n)
{
	int t0 = (int)((long)L * k / P), t1 = (int)((long)L * (k + 1) / P);
	size_t row = (size_t)(t1 - t0) * (size_t)D;
	*ps = (recur_shape){ B, t1 - t0, D };
	for (int b = 0; b < B; b++)
		memcpy(part + (size_t)b * row, xh + ((size_t)b * L + t0) * D, row * 2);
	return recur_memcpy_htod(rt, x, part, (size_t)B * row * 2, err, n);
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: split_map DIR VARIANT B L D PARTS   (VARIANT: one taking map_loga, map_h)\n");
		return 2;
	}
	char err[4096] = "";
	recur_rt *rt = NULL;
	recur_manifest *m = NULL;
	recur_variant *v = NULL;
	CUdeviceptr x = 0, y = 0, h0 = 0, hT = 0, mla = 0, mh = 0, p[MAXP] = { 0 };
	uint16_t *xh = NULL, *yh = NULL, *part = NULL;
	float *yw = NULL, *yp = NULL, *st = NULL, *la = NULL, *hm = NULL, *hw = NULL, *hw_part = NULL, *pv = NULL;
	double *sk = NULL;
	recur_shape ps[MAXPARTS];
	int rc = 1, B, L, D, P;
	TRY(whole(argv[3], "B", 1 << 20, &B, err, sizeof err) || whole(argv[4], "L", INT_MAX, &L, err, sizeof err) ||
	    whole(argv[5], "D", 1 << 20, &D, err, sizeof err) || whole(argv[6], "PARTS", MAXPARTS, &P, err, sizeof err));
	if (P > L) {
		snprintf(err, sizeof err, "%d parts of %d tokens: each part needs one at least", P, L);
		TRY(-1);
	}
	recur_shape s = { B, L, D };
	TRY(recur_manifest_load(argv[1], &m, err, sizeof err));
	int vi = recur_manifest_find(m, argv[2]);
	if (vi < 0 || !strstr(recur_manifest_variant_state(m, vi), "map_loga")) {
		snprintf(err, sizeof err, "%s in %s is %s: give one whose state lists map_loga (a grid with map = { true }; "
		         "recur list --dir %s)", argv[2], argv[1], vi < 0 ? "no variant" : "no map variant", argv[1]);
		TRY(-1);
	}
	TRY(recur_check_shape(m, vi, s, err, sizeof err));
	int np = recur_param_count(m, vi);
	if (np > MAXP) {
		snprintf(err, sizeof err, "variant %s has %d parameters, more than this example's %d", argv[2], np, MAXP);
		TRY(-1);
	}
	size_t bytes, ns = (size_t)B * (size_t)D;
	TRY(recur_tensor_bytes(s, 2, &bytes, err, sizeof err));   /* checked: B*L*D*2 cannot wrap */
	size_t ne = bytes / 2;
	xh = malloc(bytes);
	yh = malloc(bytes);
	part = malloc(bytes);
	yw = malloc(ne * 4);
	yp = malloc(ne * 4);
	st = calloc(ns, 4);
	la = malloc((size_t)P * ns * 4);
	hm = malloc((size_t)P * ns * 4);
	hw = malloc(ns * 4);
	hw_part = malloc(ns * 4);
	sk = calloc(ns, sizeof *sk);
	if (!xh || !yh || !part || !yw || !yp || !st || !la || !hm || !hw || !hw_part || !sk) {
		snprintf(err, sizeof err, "out of host memory for %zu elements", ne);
		TRY(-1);
	}
	uint64_t r = 1;
	for (size_t i = 0; i < ne; i++)
		xh[i] = to_bf16((float)normal(&r));
	TRY(recur_rt_open(&rt, 0, err, sizeof err));
	TRY(recur_variant_load(rt, m, argv[2], &v, err, sizeof err));
	for (int k = 0; k < np; k++) {
		long e = recur_param_elems(m, vi, k, s, err, sizeof err);
		TRY(e < 0);
		free(pv);
		if (!(pv = malloc((size_t)e * 4))) {
			snprintf(err, sizeof err, "out of host memory for %ld parameter values", e);
			TRY(-1);
		}
		TRY(init_param(m, vi, k, s, pv, e, &r, err, sizeof err));
		TRY(recur_alloc(rt, (size_t)e * 4, &p[k], err, sizeof err));
		TRY(recur_memcpy_htod(rt, p[k], pv, (size_t)e * 4, err, sizeof err));
	}
	CUdeviceptr *d[6] = { &x, &y, &h0, &hT, &mla, &mh };
	for (int k = 0; k < 6; k++)
		TRY(recur_alloc(rt, k < 2 ? bytes : ns * 4, d[k], err, sizeof err));
	recur_seqstate ss = { .h0 = h0, .hT = hT };
	recur_io io = { .x = x, .y = y, .params = p, .state = &ss };

	/* one forward over the whole sequence from h0 = 0 */
	TRY(recur_memcpy_htod(rt, h0, st, ns * 4, err, sizeof err));
	TRY(recur_memcpy_htod(rt, x, xh, bytes, err, sizeof err));
	TRY(recur_forward(v, s, &io, 0, err, sizeof err));
	TRY(recur_memcpy_dtoh(rt, yh, y, bytes, err, sizeof err));
	TRY(recur_memcpy_dtoh(rt, hw, hT, ns * 4, err, sizeof err));
	for (size_t i = 0; i < ne; i++)
		yw[i] = from_bf16(yh[i]);

	/* pass 1: every part from a zero state, with its map (across devices,
	 * all at once: nothing here depends on another part) */
	for (int k = 0; k < P; k++) {
		TRY(upload_part(rt, x, xh, part, B, L, D, P, k, &ps[k], err, sizeof err));
		memset(hw_part, 0, ns * 4);
		TRY(recur_memcpy_htod(rt, h0, hw_part, ns * 4, err, sizeof err));
		ss.map_loga = mla;
		ss.map_h = mh;
		TRY(recur_forward(v, ps[k], &io, 0, err, sizeof err));
		TRY(recur_memcpy_dtoh(rt, la + (size_t)k * ns, mla, ns * 4, err, sizeof err));
		TRY(recur_memcpy_dtoh(rt, hm + (size_t)k * ns, mh, ns * 4, err, sizeof err));
	}
	/* pass 2: every part from the state its predecessors' maps compose to,
	 * s_0 = 0, s_{k+1} = exp(map_loga_k) s_k + map_h_k */
	ss.map_loga = ss.map_h = 0;
	for (int k = 0; k < P; k++) {
		for (size_t i = 0; i < ns; i++)
			hw_part[i] = (float)sk[i];
		TRY(upload_part(rt, x, xh, part, B, L, D, P, k, &ps[k], err, sizeof err));
		TRY(recur_memcpy_htod(rt, h0, hw_part, ns * 4, err, sizeof err));
		TRY(recur_forward(v, ps[k], &io, 0, err, sizeof err));
		size_t row = (size_t)ps[k].L * (size_t)D, t0 = (size_t)((long)L * k / P);
		TRY(recur_memcpy_dtoh(rt, part, y, (size_t)B * row * 2, err, sizeof err));
		for (int b = 0; b < B; b++)
			for (size_t i = 0; i < row; i++)
				yp[((size_t)b * L + t0) * D + i] = from_bf16(part[(size_t)b * row + i]);
		for (size_t i = 0; i < ns; i++)
			sk[i] = exp((double)la[(size_t)k * ns + i]) * sk[i] + hm[(size_t)k * ns + i];
	}
	TRY(recur_memcpy_dtoh(rt, hw_part, hT, ns * 4, err, sizeof err));   /* the last part's hT */
	for (size_t i = 0; i < ns; i++)
		st[i] = (float)sk[i];
	double ey = relerr(yp, yw, ne), es = relerr(st, hw, ns), el = relerr(hw_part, hw, ns);
	printf("%s %dx%dx%d in %d parts: y of the parts against one forward %.1e; the state the maps compose to "
	       "against its hT %.1e; the last part's hT %.1e\n", argv[2], B, L, D, P, ey, es, el);
	rc = ey <= 1e-2 && es <= 1e-2 && el <= 1e-2 ? 0 : 1;
out:
	if (rt) {
		for (int k = 0; k < MAXP; k++)
			if (p[k]) recur_free(rt, p[k]);
		CUdeviceptr f[6] = { x, y, h0, hT, mla, mh };
		for (int k = 0; k < 6; k++)
			if (f[k]) recur_free(rt, f[k]);
	}
	if (v) recur_variant_free(v);
	if (m) recur_manifest_free(m);
	if (rt) recur_rt_close(rt);
	free(xh); free(yh); free(part); free(yw); free(yp); free(st); free(la); free(hm); free(hw); free(hw_part);
	free(sk); free(pv);
	return rc;
}
