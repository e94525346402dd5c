/* recur verify --docs N's rows (cli/docmarks.c): at many random lengths
 * and document counts, from 1 document to one per token, each row holds
 * exactly N documents; N >= 2 puts a document of one token at the row's
 * end, N >= 4 one inside it (two starts together); the same seed gives the
 * same row, another seed another; docmarks_offsets gives the row's
 * documents as cu_seqlens. */
#include "docmarks.h"
#include "checkf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int starts(const unsigned char *m, size_t L)
{
	int n = 1;   /* t = 0 */
	for (size_t t = 1; t < L; t++)
		n += m[t] != 0;
	return n;
}

static int has_pair(const unsigned char *m, size_t L)
{
	for (size_t t = 1; t + 2 < L; t++)
		if (m[t] && m[t + 1])
			return 1;
	return 0;
}

int main(void)
{
	const char *env = getenv("RECUR_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
	printf("seed %llu (RECUR_TEST_SEED repeats it)\n", (unsigned long long)seed);
	Rng r;
	rng_seed(&r, seed);
	size_t Ls[] = { 1, 2, 3, 5, 37, 128, 1000, 8192 };
	int bad_count = 0, bad_end = 0, bad_pair = 0, bad_zero = 0, rows = 0;
	for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; i++) {
		size_t L = Ls[i];
		unsigned char *m = malloc(L);
		size_t *cand = malloc(L * sizeof *cand);
		if (!m || !cand)
			return 1;
		int Ns[] = { 1, 2, 3, 4, 7, 64, 1000, (int)L };
		for (size_t k = 0; k < sizeof Ns / sizeof Ns[0]; k++) {
			int N = Ns[k] < (int)L ? Ns[k] : (int)L;
			docmarks_row(m, L, N, &r, cand);
			rows++;
			bad_count += starts(m, L) != N;
			bad_zero += m[0] != 0;
			bad_end += N >= 2 && !m[L - 1];
			bad_pair += N >= 4 && L > 4 && !has_pair(m, L);
		}
		free(m);
		free(cand);
	}
	check(bad_count == 0, "%d rows of 1 to 8192 tokens: each holds exactly N documents (%d do not)", rows, bad_count);
	check(bad_zero == 0, "no row marks t = 0 (the row's start is a document start anyway; %d do)", bad_zero);
	check(bad_end == 0, "N >= 2: the last token is a document of its own (%d rows miss it)", bad_end);
	check(bad_pair == 0, "N >= 4: two starts together inside the row, a document of one token (%d rows miss it)",
	      bad_pair);
	unsigned char a[1000], b[1000], c[1000];
	size_t cand[1000];
	Rng r1, r2, r3;
	rng_seed(&r1, seed);
	rng_seed(&r2, seed);
	rng_seed(&r3, seed + 1);
	docmarks_row(a, 1000, 50, &r1, cand);
	docmarks_row(b, 1000, 50, &r2, cand);
	docmarks_row(c, 1000, 50, &r3, cand);
	check(!memcmp(a, b, sizeof a), "the same seed gives the same row");
	check(memcmp(a, c, sizeof a) != 0, "another seed another row");
	/* the row as cu_seqlens: 0, every marked start (the mark at t = 0 is
	 * the row's own start), L; strictly increasing, one entry per document */
	int32_t cu[1001];
	a[0] = 1;
	int nd = docmarks_offsets(a, 1000, cu), ok = nd == 50 && cu[0] == 0 && cu[nd] == 1000;
	for (int i = 0; ok && i < nd; i++)
		ok = cu[i] < cu[i + 1] && (i == 0 || a[cu[i]]);
	check(ok, "the row's 50 documents as offsets 0, its starts, 1000 (%d documents, last offset %d)", nd, cu[nd]);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
