/* Packed documents for recur verify --docs N (see docmarks.h). */
#include "docmarks.h"
#include <string.h>

void docmarks_row(unsigned char *mark, size_t L, int N, Rng *r, size_t *cand)
{
	memset(mark, 0, L);
	size_t want = N > 1 ? (size_t)N - 1 : 0, got = 0;
	if (want > L - 1)
		want = L - 1;
	if (want >= 1) {
		mark[L - 1] = 1;
		got++;
	}
	if (want >= 3 && L > 4) {
		size_t t = 1 + (size_t)(rng_uniform(r) * (double)(L - 3));   /* 1 .. L-3, so t + 1 < L - 1 */
		if (t > L - 3)
			t = L - 3;
		mark[t] = mark[t + 1] = 1;
		got += 2;
	}
	size_t nc = 0;
	for (size_t t = 1; t < L; t++)
		if (!mark[t])
			cand[nc++] = t;
	/* the rest: a partial Fisher-Yates draw from the unmarked tokens */
	for (size_t k = 0; got < want && k < nc; k++, got++) {
		size_t j = k + (size_t)(rng_uniform(r) * (double)(nc - k));
		if (j >= nc)
			j = nc - 1;
		size_t t = cand[j];
		cand[j] = cand[k];
		cand[k] = t;
		mark[t] = 1;
	}
}

void resetmarks_row(unsigned char *mark, size_t L, double rate, Rng *r)
{
	for (size_t t = 0; t < L; t++) {
		/* t beside a multiple m of 128: m = t (t on its right) or t + 1 */
		size_t m = t % 128 == 127 ? t + 1 : t;
		int edge = (m % 128 == 0 && m % RESETMARKS_SPAN < RESETMARKS_SPAN / 2) || t == 1 || t == 2 || t == L - 1;
		int drawn = rng_uniform(r) < rate;   /* one draw a token, t = 0's too */
		mark[t] = (t > 0 && edge) || drawn;
	}
}

int docmarks_offsets(const unsigned char *mark, int L, int32_t *cu)
{
	int n = 0;
	cu[n++] = 0;
	for (int t = 1; t < L; t++)
		if (mark[t])
			cu[n++] = t;
	cu[n] = L;
	return n;
}
