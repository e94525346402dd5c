/* See vmath.h. */
#include "vmath.h"
#include "par.h"
#include "rng.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
	const float *out;
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
	ref_parallel(nc, relerr_chunk, &j);
	double num = 0, den = 0;
	for (int k = 0; k < nc; k++) {
		num += j.num[k];
		den += j.den[k];
		*bad += j.bad[k];
	}
	free(j.num); free(j.den); free(j.bad);
	return den > 0 ? sqrt(num / den) : sqrt(num);
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
	ref_parallel(nchunks(n), to_bf16_chunk, &j);
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
	ref_parallel(nchunks(n), from_bf16_chunk, &j);
}
