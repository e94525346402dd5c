/* Checks of a SeqState against a shape (see seqstate.h). */
#include "seqstate.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

static int ss_fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ss_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* a * b fits in a long (both >= 0): the references index with long */
static int ss_fits(long a, long b)
{
	long ab;
	return !__builtin_mul_overflow(a, b, &ab);
}

/* The packed form: one row, offsets from 0 to L, each document at least a token. */
static int ss_check_cu(const SeqState *st, int B, int L, char *err, size_t n)
{
	const int *cu = st->cu_seqlens;
	if (B != 1)
		return ss_fail(err, n, "cu_seqlens packs documents into one row, but B is %d (want 1)", B);
	if (st->reset)
		return ss_fail(err, n, "both reset and cu_seqlens given: a call takes one form or the other");
	if (st->map_loga || st->map_h)
		return ss_fail(err, n, "the row's map (map_loga, map_h) is of the reset/h0 form, not of cu_seqlens");
	/* ndocs is checked first, so that no offset past the end is read */
	if (st->ndocs < 1 || st->ndocs > L)
		return ss_fail(err, n, "ndocs %d: want 1 to L = %d documents (each at least one token)", st->ndocs, L);
	if (cu[0] != 0)
		return ss_fail(err, n, "cu_seqlens[0] is %d: the first document starts at 0", cu[0]);
	for (int i = 1; i <= st->ndocs; i++)
		if (cu[i] <= cu[i - 1])
			return ss_fail(err, n,
			               "cu_seqlens[%d] = %d is not above cu_seqlens[%d] = %d: offsets must strictly "
			               "increase (document %d would be empty or reversed)",
			               i, cu[i], i - 1, cu[i - 1], i - 1);
	if (cu[st->ndocs] != L)
		return ss_fail(err, n, "cu_seqlens[%d] = %d: the last offset must be L = %d", st->ndocs, cu[st->ndocs],
		               L);
	return 0;
}

/* Marks are 0 or 1: anything else is most likely a buffer of another type. */
static int ss_check_reset(const SeqState *st, int B, int L, char *err, size_t n)
{
	if (!ss_fits(B, L))
		return ss_fail(err, n, "reset: %d x %d marks do not fit in a long", B, L);
	for (long k = 0; k < (long)B * L; k++)
		if (st->reset[k] > 1)
			return ss_fail(err, n, "reset[%ld][%ld] = %d: a mark is 0 or 1", k / L, k % L, st->reset[k]);
	return 0;
}

int seqstate_check(const SeqState *st, int B, int L, int D, char *err, size_t errlen)
{
	if (B < 1 || L < 1 || D < 1)
		return ss_fail(err, errlen, "shape %dx%dx%d: B, L and D must be at least 1", B, L, D);
	if (!st)
		return 0;
	if (st->cu_seqlens ? ss_check_cu(st, B, L, err, errlen) : 0)
		return -1;
	if (!st->cu_seqlens && st->ndocs != 0)
		return ss_fail(err, errlen, "ndocs %d without cu_seqlens (want 0)", st->ndocs);
	if (st->reset && ss_check_reset(st, B, L, err, errlen))
		return -1;
	int ns = seqstate_nstates(st, B);
	if (!ss_fits(ns, D))
		return ss_fail(err, errlen, "%d states of %d channels do not fit in a long", ns, D);
	return 0;
}

int seqstate_nstates(const SeqState *st, int B)
{
	return st && st->cu_seqlens ? st->ndocs : B;
}
