/* What the references share about a call: its shape checked and its
 * SeqState (util/seqstate.h) read token by token into a RefPlan
 * (ref_math.h): where each sequence starts, from h0 or a reset, and ends. */
#include "ref.h"
#include "ref_math.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ref_fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ref_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* What the references index with long and split into heads. */
static int ref_check_shape(const char *name, const RefShape *s, char *err, size_t n)
{
	long bl, bld;
	if (s->B < 1 || s->L < 1 || s->D < 1 || s->H < 1)
		return ref_fail(err, n, "%s reference: shape %dx%dx%d with %d heads: each must be at least 1", name,
		                s->B, s->L, s->D, s->H);
	if (s->D % s->H)
		return ref_fail(err, n, "%s reference: shape %dx%dx%d: %d heads do not divide D", name, s->B, s->L,
		                s->D, s->H);
	if (__builtin_mul_overflow((long)s->B, (long)s->L, &bl) || __builtin_mul_overflow(bl, (long)s->D, &bld) ||
	    bld > (long)(SIZE_MAX / sizeof(double)))
		return ref_fail(err, n, "%s reference: shape %dx%dx%d: B L D doubles do not fit in memory", name, s->B,
		                s->L, s->D);
	return 0;
}

void ref_plan_free(RefPlan *pl)
{
	free(pl->first);
	free(pl->start);
	free(pl->end);
	free(pl->first0);
	memset(pl, 0, sizeof *pl);
}

/* The reset/h0 form: row b is state b, from its t = 0 to its last token. */
static void ref_plan_rows(const SeqState *st, int B, int L, RefPlan *pl)
{
	for (int b = 0; b < B; b++) {
		long k0 = (long)b * L;
		for (int t = 0; t < L; t++)
			pl->first[k0 + t] = st->reset ? st->reset[k0 + t] : 0;
		pl->first0[b] = pl->first[k0];
		if (!st->h0)
			pl->first[k0] = 1;
		pl->start[k0] = pl->first[k0] ? -1 : b;
		pl->end[k0 + L - 1] = b;
	}
}

/* The cu_seqlens form: document i is state i, its first token a reset
 * without h0. */
static void ref_plan_docs(const SeqState *st, RefPlan *pl)
{
	for (int i = 0; i < st->ndocs; i++) {
		int t0 = st->cu_seqlens[i];
		pl->first[t0] = !st->h0;
		pl->start[t0] = st->h0 ? i : -1;
		pl->end[st->cu_seqlens[i + 1] - 1] = i;
	}
}

int ref_plan(const char *name, const RefShape *s, const SeqState *st, RefPlan *pl, char *err, size_t errlen)
{
	static const SeqState empty;
	memset(pl, 0, sizeof *pl);
	if (ref_check_shape(name, s, err, errlen))
		return -1;
	if (seqstate_check(st, s->B, s->L, s->D, err, errlen)) {
		/* the message names the field; say whose call it was */
		char why[512];
		snprintf(why, sizeof why, "%s", err);
		return ref_fail(err, errlen, "%s reference at %dx%dx%d: %s", name, s->B, s->L, s->D, why);
	}
	size_t n = (size_t)s->B * (size_t)s->L;
	pl->st = st ? st : &empty;
	pl->first = calloc(n, 1);
	pl->start = malloc(n * sizeof *pl->start);
	pl->end = malloc(n * sizeof *pl->end);
	pl->first0 = calloc((size_t)s->B, 1);
	if (!pl->first || !pl->start || !pl->end || !pl->first0) {
		ref_plan_free(pl);
		return ref_fail(err, errlen, "%s reference at %dx%dx%d: out of memory for the state's plan", name,
		                s->B, s->L, s->D);
	}
	for (size_t k = 0; k < n; k++)
		pl->start[k] = pl->end[k] = -1;
	if (pl->st->cu_seqlens)
		ref_plan_docs(pl->st, pl);
	else
		ref_plan_rows(pl->st, s->B, s->L, pl);
	return 0;
}
