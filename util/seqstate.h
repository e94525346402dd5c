/* The state of a sequence across calls: what a model needs besides x to
 * run a recurrent mixer over part of a sequence, several documents packed
 * into one row, or a long sequence split across calls or devices.
 *
 * Plain data, in util/ because both float64 references read it (ref/,
 * written from the spec, and script/reference.c, derived from a mixer's
 * graph) and neither may use the other's code.
 *
 * THE CONTRACT. Shapes: x [B][L][D]; a "state" is one [D] vector.
 *
 * Two forms, one per call:
 *   reset/h0 form   (cu_seqlens NULL) B rows; h0, hT, dhT, dh0, map_loga,
 *                   map_h are [B][D], one state per row; reset [B][L].
 *   cu_seqlens form (flash-attn / fla style) one packed row (B = 1) of
 *                   ndocs documents, document i the tokens
 *                   [cu_seqlens[i], cu_seqlens[i+1]); cu_seqlens[0] = 0,
 *                   strictly increasing, cu_seqlens[ndocs] = L; h0, hT,
 *                   dhT, dh0 are [ndocs][D], one state per document;
 *                   documents are independent; reset and the map are not
 *                   of this form.
 *
 * A position t is a RESET when it starts a document from nothing:
 *   - t = 0 of a row when h0 is NULL;
 *   - any t with reset[b][t] = 1 (at t = 0 too: the mark wins over h0,
 *     which is then unused, and that row's dh0 is 0);
 *   - every cu_seqlens[i] when h0 is NULL.
 * At a reset the spec's rule applies exactly as at a sequence's t = 0
 * today: the mixer's `first` is 1 (so m = 1), h_prev = 0 (a * h_prev is
 * dropped), the backward chain is cut there (dh[t-1] gets nothing from t)
 * and dlog_a = 0 there.
 *
 * A sequence start WITH h0 (t = 0 of row b, or cu_seqlens[i], unmarked and
 * h0 given) is no reset: first = 0 (so m = sqrtb(1 - a^2) at that token),
 * h_prev = h0[b] (or h0[i]), the chain is cut before it (nothing precedes
 * it in this call), and dh0 = a[t0] * dh[t0], dh[t0] being the total
 * adjoint of h at that token.
 *
 * hT is h at the last token of each row (or document). In the backward the
 * adjoint of hT joins there: dh[last] = dy-part + dhT (dhT NULL: 0). The
 * loss the backward differentiates is sum(dy * y) + sum(dhT * hT).
 *
 * The per-token parts (gates, controller, projections) do not see resets;
 * only the scan's chain and what depends on `first` do.
 *
 * THE ROW'S MAP (reset/h0 form only). The affine map a row applies to an
 * incoming state under continuation (t = 0 no reset unless marked, whether
 * or not h0 is given):
 *     hT = exp(map_loga) * h_in + map_h
 *   map_loga = the sum over the row's tokens of log_a, in token order;
 *              -INFINITY if any token of the row is a reset under
 *              continuation (a mark), since hT then no longer depends on h_in;
 *   map_h    = hT of the row from h_in = 0 with first = 0 at t = 0 (unless
 *              marked).
 * This is what a split of one long sequence exchanges: part k's map, known
 * before part k-1's hT, composes with it (the references compute it in the
 * forward, from the same per-element values).
 *
 * Which call writes what: the forward writes hT, map_loga, map_h (each when
 * non-NULL); the backward reads h0, reset, cu_seqlens, dhT and writes dh0
 * (zero for rows or documents that start with a reset) and ignores the
 * forward's outputs. A NULL SeqState, or one all zero, is today's call: each
 * row starts with a reset, nothing else.
 */
#ifndef RECUR_SEQSTATE_H
#define RECUR_SEQSTATE_H
#include <stddef.h>

typedef struct {
	const double *h0;           /* state before each sequence's first token; NULL: start with a reset */
	const unsigned char *reset; /* [B][L]: 1 where a document starts inside a row; NULL: none */
	const int *cu_seqlens;      /* [ndocs + 1]: document offsets in one packed row; NULL: reset/h0 form */
	int ndocs;                  /* documents of cu_seqlens; 0 without it */
	double *hT;                 /* out (forward): state after each row's (document's) last token */
	const double *dhT;          /* in (backward): adjoint of hT; NULL: 0 */
	double *dh0;                /* out (backward): adjoint of h0 */
	double *map_loga, *map_h;   /* out (forward, reset/h0 form): the row's map */
} SeqState;

/* A docs variant's kernels code each token's row or document in the bits
 * of an int32 above SEQSTATE_DOC_SHIFT flags: at most SEQSTATE_MAX_DOCS
 * states a call (ndocs in the cu_seqlens form, else B). */
#define SEQSTATE_DOC_SHIFT 3
#define SEQSTATE_MAX_DOCS (1 << (31 - SEQSTATE_DOC_SHIFT))

/* 0 when st suits x of shape [B][L][D] (st NULL: the empty state); -1 with
 * what is wrong, naming the offending index, in err: cu_seqlens not
 * starting at 0, not strictly increasing, not ending at L, B > 1 with
 * cu_seqlens, cu_seqlens with reset or the map, ndocs without cu_seqlens,
 * a reset mark other than 0 or 1, sizes past what a long holds. */
int seqstate_check(const SeqState *st, int B, int L, int D, char *err, size_t errlen);

/* The states of one call (rows of h0, hT, dhT, dh0): ndocs in the
 * cu_seqlens form, else B. For st seqstate_check accepted. */
int seqstate_nstates(const SeqState *st, int B);

#endif
