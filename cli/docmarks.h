/* Packed documents for recur verify --docs N: where each row's documents
 * start, as reset marks (util/seqstate.h). */
#ifndef RECUR_DOCMARKS_H
#define RECUR_DOCMARKS_H
#include "rng.h"
#include <stddef.h>
#include <stdint.h>

/* One row of L tokens as N documents (1 <= N <= L): mark[t] = 1 where a
 * document other than the first starts, else 0. Among the N - 1 starts in
 * 1 .. L-1: L - 1 (a document of one token at the row's end, N >= 2) and,
 * for N >= 4 and L > 4, a pair t, t + 1 (a document of one token inside
 * the row); the rest drawn uniformly without replacement, so that most
 * documents cross tiles. cand: scratch of L - 1 entries. */
void docmarks_row(unsigned char *mark, size_t L, int N, Rng *r, size_t *cand);

/* One row of L tokens' reset marks for recur verify --resets P: at rate P,
 * at t = 1 and 2 (consecutive) and L - 1, and on both sides of every
 * multiple of 128 tokens (the tile and chunk edges of every variant) that
 * lies in the first half of a 4096-token span (RESETMARKS_SPAN): in the
 * second halves only the random marks fall (t = 0 included), so that tiles
 * and groups with no mark run too (a kernel may take another copy of its
 * step for them). */
#define RESETMARKS_SPAN 4096
void resetmarks_row(unsigned char *mark, size_t L, double rate, Rng *r);

/* The same row's documents as offsets (flash-attn's and fla's cu_seqlens,
 * int32 as the kernels read them): cu[0] = 0, each marked t in 1 .. L-1,
 * then L; cu holds L + 1 entries. Returns the number of documents. */
int docmarks_offsets(const unsigned char *mark, int L, int32_t *cu);

#endif
