/* float64 CPU references of the mixers, written directly from
 * shared/spec/architectures.md, sharing no code with the generator: they are
 * the oracle that GPU kernels and the generator's own derivatives are judged
 * against. Plain sequential scans over t, one batch row after another.
 *
 * The _state entry points carry a sequence's state across calls (initial
 * and final state, resets inside a row, packed documents, the row's map),
 * with the meaning util/seqstate.h gives them; forward and backward are
 * the same calls with the empty state (st NULL), bit for bit.
 */
#ifndef RECUR_REF_H
#define RECUR_REF_H

#include <stddef.h>
#include "seqstate.h"

typedef struct { int B, L, D, H; } RefShape;   /* H heads of K = D / H channels (64 in the shipped mixers) */

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
	/* forward with state st (NULL: none): y, and st's hT, map_loga, map_h
	 * where non-NULL. 0, or -1 with why in err (the shape, st, memory). */
	int (*forward_state)(const RefShape *s, const double *const *param, const double *x, double *y,
	                     const SeqState *st, char *err, size_t errlen);
	/* backward with state st: dx, every parameter gradient (overwritten)
	 * and st's dh0 where non-NULL, of sum(dy y) + sum(dhT hT). */
	int (*backward_state)(const RefShape *s, const double *const *param, const double *x, const double *dy,
	                      double *dx, double *const *dparam, const SeqState *st, char *err, size_t errlen);
} RefMixer;

/* NULL when no reference of that name exists. */
const RefMixer *ref_find(const char *name);
extern const RefMixer ref_rglru;
extern const RefMixer ref_samu;

#endif
