/* The block-diagonal weights as bf16 matrices in shared memory, read as
 * the gates' (W) and dx's (W^T) mma B fragments by ldmatrix, or held in
 * registers over a sweep. */
#include "tmpl.h"
#include "diag.h"

/* W[k][j] of projection j at row k, 16-byte column chunk c: rows of 128
 * bytes with the chunk index XOR a 3-bit function of k, so that the eight
 * rows an ldmatrix matrix reads (same chunk) fall in eight different bank
 * groups: k mod 8 where rows are consecutive k; with slots_adjacent the transposed
 * projection's rows are k = 2nt + {0, 1, 4, 5, 8, 9, 12, 13} (wcol) as well,
 * and (k0, k2, k1 ^ k3) tells both sets apart */
static LLVMValueRef wmat_at(const Tmpl *T, Lanes *ln, Irb *I, int j, LLVMValueRef k, LLVMValueRef c)
{
	LLVMValueRef f = LLVMBuildAnd(I->b, k, ci32(I, 7), "");
	if (T->k.slots_adjacent) {
		LLVMValueRef k1k3 = LLVMBuildAnd(I->b, LLVMBuildXor(I->b, k, LLVMBuildLShr(I->b, k, ci32(I, 2), ""), ""), ci32(I, 2), "");
		f = LLVMBuildOr(I->b, LLVMBuildAnd(I->b, k, ci32(I, 1), ""),
		                LLVMBuildOr(I->b, LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, k, ci32(I, 1), ""), ci32(I, 2), ""),
		                            imul(I, k1k3, ci32(I, 2)), ""), "");
	}
	LLVMValueRef sw = LLVMBuildXor(I->b, c, f, "");
	return iadd(I, ci32(I, ln->wmat_smem + j * WMAT_BYTES), iadd(I, imul(I, k, ci32(I, 128)), imul(I, sw, ci32(I, 16))));
}

void wmat_stage(Tmpl *T, Lanes *ln, int off)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	ln->wmat_smem = off;
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4), v4i = LLVMVectorType(I->i32, 4);
	for (int j = 0; j < T->nbdproj; j++) {
		LLVMValueRef W = ln->param[mx->proj[T->bdproj[j]].weight];
		CHECK(W);
		for (int it = 0; it < 512 / T->k.threads; it++) {
			/* chunk e of 8 weights: row k = e / 8, column chunk e % 8 */
			LLVMValueRef e = iadd(I, ln->tid, ci32(I, it * T->k.threads));
			LLVMValueRef k = LLVMBuildLShr(I->b, e, ci32(I, 3), "");
			LLVMValueRef c = LLVMBuildAnd(I->b, e, ci32(I, 7), "");
			LLVMValueRef g = sext64(I, iadd(I, imul(I, ln->head, ci32(I, 4096)), imul(I, e, ci32(I, 8))));
			LLVMValueRef lo = ld(I, v4f, gep_f32(I, W, g), 16);
			LLVMValueRef hi = ld(I, v4f, gep_f32(I, W, iadd(I, g, ci64(I, 4))), 16);
			LLVMValueRef w = LLVMGetUndef(v4i);
			for (int p = 0; p < 4; p++) {
				LLVMValueRef src = p < 2 ? lo : hi;
				LLVMValueRef a = LLVMBuildExtractElement(I->b, src, ci32(I, (2 * p) & 3), "");
				LLVMValueRef b = LLVMBuildExtractElement(I->b, src, ci32(I, (2 * p + 1) & 3), "");
				w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, a, b), ci32(I, p), "");
			}
			if (!T->k.slots_adjacent) {
				st(I, w, smem_ptr(I, wmat_at(T, ln, I, j, k, c)), 16);
				continue;
			}
			/* channel pairs 4h + p of the 16-column group (h = c & 1): column
			 * pair 2h + (p >> 1) of n-tile p & 1 (wcol) */
			LLVMValueRef h8 = imul(I, LLVMBuildAnd(I->b, c, ci32(I, 1), ""), ci32(I, 8));
			LLVMValueRef c0 = LLVMBuildAnd(I->b, c, ci32(I, ~1), "");
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef two = LLVMGetUndef(I->v2i32);
				for (int e = 0; e < 2; e++)
					two = LLVMBuildInsertElement(I->b, two, LLVMBuildExtractElement(I->b, w, ci32(I, nt + 2 * e), ""),
					                             ci32(I, e), "");
				LLVMValueRef at = iadd(I, wmat_at(T, ln, I, j, k, iadd(I, c0, ci32(I, nt))), h8);
				st(I, two, smem_ptr(I, at), 8);
			}
		}
	}
	bar_sync(I);
}

void wmat_gate_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2])
{
	Irb *I = &T->I;
	/* B[k][n] = W[k][n]: matrix m = (nt, r) = (m >> 1, m & 1) holds rows
	 * k = 16ks + 8r.., columns n = 16w + 8nt.., transposed into (k pairs, n) */
	LLVMValueRef r, blk, d[4];
	ldsm_lane(I, ln, 0, &r, &blk);
	LLVMValueRef k = iadd(I, r, ci32(I, 16 * ks));
	LLVMValueRef c = iadd(I, imul(I, ln->w, ci32(I, 2)), blk);
	ldsm_x4(I, d, wmat_at(T, ln, I, j, k, c), 1);
	for (int e = 0; e < 4; e++)
		b[e >> 1][e & 1] = d[e];
}

/* a bf16 pair halved: exact (outside bf16's subnormals) */
static LLVMValueRef bf16x2_half(Irb *I, LLVMValueRef v)
{
	LLVMTypeRef v2 = LLVMVectorType(LLVMBFloatTypeInContext(I->ctx), 2);
	LLVMValueRef h = LLVMConstReal(LLVMBFloatTypeInContext(I->ctx), 0.5), hh[2] = { h, h };
	LLVMValueRef p = LLVMBuildFMul(I->b, LLVMBuildBitCast(I->b, v, v2, ""), LLVMConstVector(hh, 2), "");
	return LLVMBuildBitCast(I->b, p, I->i32, "");
}

int gate_frags_hold(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	int was = ln->wmat_smem;
	if (T->nbdproj == 0 || was < 0)
		return was;
	for (int j = 0; j < T->nbdproj; j++)
		for (int ks = 0; ks < 4; ks++) {
			wmat_gate_frags(T, ln, j, ks, ln->wfrag[j][ks]);
			for (int nt = 0; nt < 2 && T->k.gates_half; nt++)
				for (int r = 0; r < 2; r++)
					ln->wfrag[j][ks][nt][r] = bf16x2_half(I, ln->wfrag[j][ks][nt][r]);
		}
	ln->wmat_smem = -1;
	return was;
}

void wmat_dx_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2])
{
	Irb *I = &T->I;
	/* B[jj][k] = W[k][jj] for the warp's own k: matrix m = (nt, r) holds rows
	 * k = 16w + 8nt.. (with slots_adjacent the rows wcol(w, 0..7, nt): the output's
	 * columns then land on the slots' channels), columns jj = 16ks + 8r.. */
	LLVMValueRef r, blk, d[4];
	ldsm_lane(I, ln, 1, &r, &blk);
	LLVMValueRef k;
	if (T->k.slots_adjacent) {   /* rows 8..15 of r are n-tile 1 */
		LLVMValueRef row = wcol(T, I, ln->w, LLVMBuildAnd(I->b, r, ci32(I, 7), ""), 0);
		k = iadd(I, row, imul(I, LLVMBuildLShr(I->b, r, ci32(I, 3), ""), ci32(I, 2)));
	} else {
		k = iadd(I, r, imul(I, ln->w, ci32(I, 16)));
	}
	LLVMValueRef c = iadd(I, blk, ci32(I, 2 * ks));
	ldsm_x4(I, d, wmat_at(T, ln, I, j, k, c), 0);
	for (int e = 0; e < 4; e++)
		b[e >> 1][e & 1] = d[e];
}
