/* See vmath.h. */
#include "vmath.h"
#include "par.h"
#include "rng.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
	const float *out;
	size_t rows, cols, rpc;   /* vm_local: shape, rows per chunk */
	double *rd, *rr;          /* vm_local: per row */
	double *cd, *cr;          /* vm_local: per chunk and column */
	const double *ref;
	const double *dv;
	uint16_t *bits;
	const uint16_t *cbits;
	float *f;
	size_t n;
	double *num, *den;   /* per chunk */
	int *bad;            /* per chunk */
} VmJob;

static void relerr_chunk(void *ctx, int k)
{
	VmJob *j = ctx;
	size_t lo = (size_t)k * VM_CHUNK, hi = lo + VM_CHUNK < j->n ? lo + VM_CHUNK : j->n;
	double num = 0, den = 0;
	int bad = 0;
	for (size_t i = lo; i < hi; i++) {
		if (!isfinite(j->out[i]))
			bad++;
		double d = (double)j->out[i] - j->ref[i];
		num += d * d;
		den += j->ref[i] * j->ref[i];
	}
	j->num[k] = num;
	j->den[k] = den;
	j->bad[k] = bad;
}

static int nchunks(size_t n) { return (int)((n + VM_CHUNK - 1) / VM_CHUNK); }

double vm_relerr(const float *out, const double *ref, size_t n, int *bad)
{
	int nc = nchunks(n);
	VmJob j = { .out = out, .ref = ref, .n = n };
	j.num = calloc((size_t)nc + 1, sizeof(double));
	j.den = calloc((size_t)nc + 1, sizeof(double));
	j.bad = calloc((size_t)nc + 1, sizeof(int));
	if (!j.num || !j.den || !j.bad) {
		free(j.num); free(j.den); free(j.bad);
		*bad += 1;   /* no memory to judge: counted as a failure, never a pass */
		return INFINITY;
	}
	par_run(nc, relerr_chunk, &j);
	double num = 0, den = 0;
	for (int k = 0; k < nc; k++) {
		num += j.num[k];
		den += j.den[k];
		*bad += j.bad[k];
	}
	free(j.num); free(j.den); free(j.bad);
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void local_chunk(void *ctx, int k)
{
	VmJob *j = ctx;
	size_t lo = (size_t)k * j->rpc, hi = lo + j->rpc < j->rows ? lo + j->rpc : j->rows;
	double *cd = j->cd + (size_t)k * j->cols, *cr = j->cr + (size_t)k * j->cols;
	for (size_t r = lo; r < hi; r++) {
		double d2 = 0, r2 = 0;
		for (size_t c = 0; c < j->cols; c++) {
			size_t i = r * j->cols + c;
			double d = (double)j->out[i] - j->ref[i];
			d2 += d * d;
			r2 += j->ref[i] * j->ref[i];
			cd[c] += d * d;
			cr[c] += j->ref[i] * j->ref[i];
		}
		j->rd[r] = d2;
		j->rr[r] = r2;
	}
}

/* the worst of n entries: sqrt(d2) / max(sqrt(r2), floor) */
static double worst(const double *d2, const double *r2, size_t n, double floor, size_t *at)
{
	double w = 0;
	*at = 0;
	for (size_t i = 0; i < n; i++) {
		double den = sqrt(r2[i]) > floor ? sqrt(r2[i]) : floor;
		double e = den > 0 ? sqrt(d2[i]) / den : sqrt(d2[i]);
		if (!(e <= w)) {   /* a NaN wins, and stays */
			w = e;
			*at = i;
			if (isnan(e))
				break;
		}
	}
	return w;
}

double vm_relerr_loga(const float *out, const double *ref, size_t n, int *bad)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (isinf(ref[i]) && ref[i] < 0) {
			*bad += !(isinf(out[i]) && out[i] < 0);
			continue;
		}
		if (!isfinite(out[i])) {
			(*bad)++;
			continue;
		}
		double d = (double)out[i] - ref[i];
		num += d * d;
		den += ref[i] * ref[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

int vm_local(const float *out, const double *ref, size_t rows, size_t cols, VmLocal *lc)
{
	VmJob j = { .out = out, .ref = ref, .rows = rows, .cols = cols };
	j.rpc = cols >= VM_CHUNK ? 1 : VM_CHUNK / cols;
	int nc = (int)((rows + j.rpc - 1) / j.rpc);
	j.rd = malloc((rows + 1) * sizeof(double));
	j.rr = malloc((rows + 1) * sizeof(double));
	j.cd = calloc((size_t)nc * cols + 1, sizeof(double));
	j.cr = calloc((size_t)nc * cols + 1, sizeof(double));
	double *cd = calloc(cols + 1, sizeof(double)), *cr = calloc(cols + 1, sizeof(double));
	int rc = -1;
	if (j.rd && j.rr && j.cd && j.cr && cd && cr) {
		par_run(nc, local_chunk, &j);
		double tot = 0;
		for (size_t r = 0; r < rows; r++)
			tot += j.rr[r];
		for (int k = 0; k < nc; k++)
			for (size_t c = 0; c < cols; c++) {
				cd[c] += j.cd[(size_t)k * cols + c];
				cr[c] += j.cr[(size_t)k * cols + c];
			}
		lc->row = worst(j.rd, j.rr, rows, VM_LOCAL_FLOOR * sqrt(tot / (double)rows), &lc->at_row);
		lc->col = worst(cd, cr, cols, VM_LOCAL_FLOOR * sqrt(tot / (double)cols), &lc->at_col);
		rc = 0;
	}
	free(j.rd); free(j.rr); free(j.cd); free(j.cr); free(cd); free(cr);
	return rc;
}

static void to_bf16_chunk(void *ctx, int k)
{
	VmJob *j = ctx;
	size_t lo = (size_t)k * VM_CHUNK, hi = lo + VM_CHUNK < j->n ? lo + VM_CHUNK : j->n;
	for (size_t i = lo; i < hi; i++)
		j->bits[i] = bf16_bits((float)j->dv[i]);
}

void vm_to_bf16(const double *v, uint16_t *bits, size_t n)
{
	VmJob j = { .dv = v, .bits = bits, .n = n };
	par_run(nchunks(n), to_bf16_chunk, &j);
}

static void from_bf16_chunk(void *ctx, int k)
{
	VmJob *j = ctx;
	size_t lo = (size_t)k * VM_CHUNK, hi = lo + VM_CHUNK < j->n ? lo + VM_CHUNK : j->n;
	for (size_t i = lo; i < hi; i++)
		j->f[i] = bf16_to_float(j->cbits[i]);
}

void vm_from_bf16(const uint16_t *bits, float *f, size_t n)
{
	VmJob j = { .cbits = bits, .f = f, .n = n };
	par_run(nchunks(n), from_bf16_chunk, &j);
}
