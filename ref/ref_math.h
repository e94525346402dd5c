/* What the float64 references share, private to ref/: the gates'
 * functions in their numerically safe forms, zeroed scratch, and the
 * per-token reading of a SeqState (ref_find.c), ref/'s own reading of
 * util/seqstate.h, independent of script/reference.c's. */
#ifndef RECUR_REF_MATH_H
#define RECUR_REF_MATH_H

#include "ref.h"
#include <math.h>
#include <stddef.h>
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

/* The SeqState of one call, token by token ([B][L] each, k = b L + t).
 * start and end name a state: a row of h0 / dh0 (start) or of hT / dhT
 * (end), b in the reset/h0 form, the document in the cu_seqlens form. */
typedef struct {
	unsigned char *first;   /* 1 at a reset (the spec's first token rule) */
	int *start;             /* the state a sequence continues from at this token (no reset), else -1 */
	int *end;               /* the state whose last token this is, else -1 */
	unsigned char *first0;  /* [B]: first at t = 0 under continuation (a mark only): the row's map */
	const SeqState *st;     /* never NULL: the caller's, or an empty one */
} RefPlan;

/* Checks s (B, L, D, H at least 1, H dividing D, B L D within a long) and
 * st against it, then reads st into pl (st NULL: each row starts with a
 * reset). 0, or -1 with the reason in err, prefixed with name. */
int ref_plan(const char *name, const RefShape *s, const SeqState *st, RefPlan *pl, char *err, size_t errlen);
void ref_plan_free(RefPlan *pl);

/* t + 1 starts a sequence (reset or h0): nothing of t's chain comes from it */
static inline int ref_starts(const RefPlan *pl, long k)
{
	return pl->first[k] || pl->start[k] >= 0;
}

/* What the adjoint of h at token k (row b, token t, channel c) receives
 * from after it: a[t+1] dh[t+1] along the chain (a points at a[t][c] of
 * [L][D]; dh_next is dh[t+1]), dhT at a sequence's last token, else 0. */
static inline double ref_carry(const RefPlan *pl, long k, int t, int L, int D, int c, const double *a,
                               double dh_next)
{
	if (t + 1 < L && !ref_starts(pl, k + 1))
		return a[D] * dh_next;
	return pl->end[k] >= 0 && pl->st->dhT ? pl->st->dhT[(long)pl->end[k] * D + c] : 0.0;
}

/* h before token k (channel c; h points at h[t][c] of [L][D]): 0 at a
 * reset, h0 where a sequence continues from it, else h[t-1][c] */
static inline double ref_hprev(const RefPlan *pl, long k, int D, int c, const double *h)
{
	if (pl->first[k])
		return 0.0;
	return pl->start[k] >= 0 ? pl->st->h0[(long)pl->start[k] * D + c] : h[-D];
}

/* n zeroed doubles, or NULL (the state entry points report it) */
static inline double *zalloc(size_t n)
{
	return calloc(n ? n : 1, sizeof(double));
}

/* The old entry points have no error channel: what the new ones report
 * stops them, as running out of memory always did. */
static inline void ref_die(const char *err)
{
	fprintf(stderr, "float64 reference: %s\n", err);
	abort();
}

#endif
