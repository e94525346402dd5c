/* Scalar helpers the float64 references share: the gates' functions in
 * their numerically safe forms and zeroed scratch. Private to ref/. */
#ifndef RECUR_REF_MATH_H
#define RECUR_REF_MATH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline double softplus(double z)
{
	/* log(1 + e^z) without overflow for large z or loss of digits for very negative z */
	return log1p(exp(-fabs(z))) + (z > 0 ? z : 0);
}

static inline double sigmoid(double z)
{
	if (z >= 0)
		return 1 / (1 + exp(-z));
	double e = exp(z);
	return e / (1 + e);
}

/* d sqrtb(z)/dz, bounded at 1000 as in RecurrentGemma */
static inline double dsqrtb(double z)
{
	double q = 4 * z;
	return 1 / sqrt(q > 1e-6 ? q : 1e-6);
}

/* n zeroed doubles; a reference that cannot allocate has nothing to report */
static inline double *zeros(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof(double));
	if (!p) {
		fprintf(stderr, "float64 reference: out of memory for %zu doubles\n", n);
		abort();
	}
	return p;
}

#endif
