/* recur verify --docs N's rows (cli/docmarks.c): at many random lengths
 * and document counts, from 1 document to one per token, each row holds
 * exactly N documents; N >= 2 puts a document of one token at the row's
 * end, N >= 4 one inside it (two starts together); the same seed gives the
 * same row, another seed another; docmarks_offsets gives the row's
 * documents as cu_seqlens. recur verify --resets P's rows (resetmarks_row):
 * both sides of every multiple of 128 in the first half of each 4096
 * tokens, t = 1, 2 and L - 1, nothing else at rate 0 (so that groups of
 * 128 and tiles up to 2048 tokens without a mark exist), and about P of
 * the tokens at rate P. */
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
	/* --resets P: the edges in the first half of each span, none in the second */
	enum { RL = 3 * RESETMARKS_SPAN + 1000 };
	static unsigned char rm[RL];
	resetmarks_row(rm, RL, 0.0, &r);
	int miss = 0, extra = 0, empty = 0;
	for (size_t t = 0; t < RL; t++) {
		size_t m = t % 128 == 127 ? t + 1 : t;
		int want = t > 0 && ((m % 128 == 0 && m % RESETMARKS_SPAN < RESETMARKS_SPAN / 2) || t == 1 || t == 2 ||
		                     t == RL - 1);
		miss += want && !rm[t];
		extra += !want && rm[t];
	}
	for (size_t g = 0; g + 128 <= RL; g += 128) {
		int any = 0;
		for (size_t t = g; t < g + 128; t++)
			any |= rm[t];
		empty += !any;
	}
	check(miss == 0 && extra == 0, "--resets at rate 0: exactly the edges of each span's first half, t = 1, 2 "
	      "and L-1 (%d missing, %d extra)", miss, extra);
	check(empty >= 3 * (RESETMARKS_SPAN / 2 / 128 - 2), "--resets at rate 0: groups of 128 tokens without a mark "
	      "in the spans' second halves (%d)", empty);
	int hole = 1;   /* a whole 2048-token tile at 2048 .. 4095 but its last token */
	for (size_t t = RESETMARKS_SPAN / 2; t < RESETMARKS_SPAN - 1; t++)
		hole &= !rm[t];
	check(hole, "--resets at rate 0: tokens 2048 .. 4094 unmarked");
	static unsigned char rp[100000];
	resetmarks_row(rp, sizeof rp, 0.01, &r);
	int nm = 0;
	for (size_t t = 0; t < sizeof rp; t++)
		nm += rp[t];
	/* 1000 random marks (sd 31) and 782 edges at most: between 850 and 1900 */
	check(nm > 850 && nm < 1900, "--resets 0.01 over 100000 tokens: %d marks", nm);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
