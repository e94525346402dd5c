/* float64 CPU references of the mixers, written directly from
 * shared/spec/architectures.md, sharing no code with the generator: they are
 * the oracle that GPU kernels and the generator's own derivatives are judged
 * against. Plain sequential scans over t, one batch row after another.
 */
#ifndef RECUR_REF_H
#define RECUR_REF_H

typedef struct { int B, L, D, H; } RefShape;   /* H = D / 64 for both mixers */

typedef struct {
	const char *name;            /* "rglru", "samu" */
	int nparam;
	const char *const *param;    /* parameter names, in the order the functions take them */
	/* element count of parameter i at shape s */
	long (*param_count)(int i, const RefShape *s);
	/* y[B*L*D] from x[B*L*D] and params (each param_count(i) doubles) */
	void (*forward)(const RefShape *s, const double *const *param, const double *x, double *y);
	/* dx and every parameter gradient (same counts as the params) from x and dy */
	void (*backward)(const RefShape *s, const double *const *param, const double *x,
	                 const double *dy, double *dx, double *const *dparam);
} RefMixer;

/* NULL when no reference of that name exists. */
const RefMixer *ref_find(const char *name);
extern const RefMixer ref_rglru;
extern const RefMixer ref_samu;

#endif
