/* Affine maps per slot (h -> A h + B forward, u -> A u + B for the
 * adjoint) and their scans: across the 16 chunks of a group (warp
 * shuffles), across the quads of a block (shared memory). */
#include "tmpl.h"
#include "diag.h"

/* Quad maps to shared memory [quad][64][2] at offset 0 (lanes g == 0 hold
 * each channel once), then a block barrier. */
void quad_publish(Tmpl *T, Lanes *ln, Var qA[4], Var qB[4])
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, ieq(I, ln->g, ci32(I, 0)), "publish");
	for (int c = 0; c < 4; c++) {
		LLVMValueRef off = imul(I, iadd(I, imul(I, ln->quad, ci32(I, 64)), ln->ch[c]), ci32(I, 8));
		st(I, var_get(I, qA[c]), smem_ptr(I, off), 4);
		st(I, var_get(I, qB[c]), smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
	}
	if_end(I, &f);
	bar_sync(I);
}

LLVMValueRef tile_chan(Tmpl *T, const Lanes *ln, LLVMValueRef r, LLVMValueRef n, LLVMValueRef ch)
{
	Irb *I = &T->I;
	LLVMValueRef row = iadd(I, imul(I, ln->b, n), r);
	return iadd(I, imul(I, sext64(I, row), sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), ch)));
}

void quads_tile_map(Tmpl *T, LLVMValueRef ch, LLVMValueRef *A, LLVMValueRef *B)
{
	Irb *I = &T->I;
	*A = cf32(I, 1.0);
	*B = cf32(I, 0.0);
	for (int qd = 0; qd < T->quads; qd++) {
		LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ch), ci32(I, 8));
		LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
		LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
		*B = fadd(I, fmul(I, *B, a), b);
		*A = fmul(I, *A, a);
	}
}

void maps_init(Tmpl *T, Maps *m, const char *name)
{
	Irb *I = &T->I;
	for (int s = 0; s < TM_SLOTS; s++) {
		m->A[s] = var_init(I, cf32(I, 1.0), name);
		m->B[s] = var_init(I, cf32(I, 0.0), name);
	}
}

void maps_push_fwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef b)
{
	Irb *I = &T->I;
	var_set(I, m->A[s], fmul(I, var_get(I, m->A[s]), a));
	var_set(I, m->B[s], fadd(I, fmul(I, var_get(I, m->B[s]), a), b));
}

/* Forward maps compose as (A1,B1) then (A2,B2) = (A1 A2, B1 A2 + B2).
 * Chunk k of a group lives in slot row r = k / 8 of lane g = k % 8 (same q). */
void warp_scan_fwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4])
{
	Irb *I = &T->I;
	LLVMValueRef l7 = iadd(I, ci32(I, 28), ln->q);
	LLVMValueRef g0 = ieq(I, ln->g, ci32(I, 0));
	for (int c = 0; c < 4; c++) {
		LLVMValueRef A[2], B[2];
		for (int r = 0; r < 2; r++) {
			A[r] = var_get(I, m->A[r * 4 + c]);
			B[r] = var_get(I, m->B[r * 4 + c]);
			/* inclusive scan over g within the half: shuffles by 4, 8, 16 lanes */
			for (int d = 1; d < 8; d <<= 1) {
				LLVMValueRef pA = shfl_up_f(I, A[r], 4 * d);
				LLVMValueRef pB = shfl_up_f(I, B[r], 4 * d);
				LLVMValueRef ok = ige(I, ln->g, ci32(I, d));
				LLVMValueRef nA = fmul(I, pA, A[r]);
				LLVMValueRef nB = fadd(I, fmul(I, pB, A[r]), B[r]);
				A[r] = fsel(I, ok, nA, A[r]);
				B[r] = fsel(I, ok, nB, B[r]);
			}
		}
		/* half 0's total (lane g = 7) prefixes every chunk of half 1 */
		LLVMValueRef t0A = shfl_idx_f(I, A[0], l7), t0B = shfl_idx_f(I, B[0], l7);
		LLVMValueRef B1 = fadd(I, fmul(I, t0B, A[1]), B[1]);
		LLVMValueRef A1 = fmul(I, t0A, A[1]);
		totA[c] = shfl_idx_f(I, A1, l7);
		totB[c] = shfl_idx_f(I, B1, l7);
		/* exclusive: the inclusive value of the previous chunk */
		LLVMValueRef eA0 = shfl_up_f(I, A[0], 4), eB0 = shfl_up_f(I, B[0], 4);
		LLVMValueRef eA1 = shfl_up_f(I, A1, 4), eB1 = shfl_up_f(I, B1, 4);
		var_set(I, m->A[c], fsel(I, g0, cf32(I, 1.0), eA0));
		var_set(I, m->B[c], fsel(I, g0, cf32(I, 0.0), eB0));
		var_set(I, m->A[4 + c], fsel(I, g0, t0A, eA1));
		var_set(I, m->B[4 + c], fsel(I, g0, t0B, eB1));
	}
}

/* Adjoint maps u -> M u + N compose right to left: the map of chunks k..15 is
 * F_k o F_{k+1} o ... ; (F o G) = (M_F M_G, M_F N_G + N_F). On return slot
 * (r, c) holds the map of the chunks after its own (identity for chunk 15)
 * and tot the map of the whole group. */
void warp_scan_bwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4])
{
	Irb *I = &T->I;
	LLVMValueRef l0 = ln->q;               /* lane of g = 0 */
	LLVMValueRef g7 = ieq(I, ln->g, ci32(I, 7));
	for (int c = 0; c < 4; c++) {
		LLVMValueRef A[2], B[2];
		for (int r = 0; r < 2; r++) {
			A[r] = var_get(I, m->A[r * 4 + c]);
			B[r] = var_get(I, m->B[r * 4 + c]);
			/* inclusive suffix over g within the half: S_g = F_g o S_{g+d} */
			for (int d = 1; d < 8; d <<= 1) {
				LLVMValueRef nA_ = shfl_down_f(I, A[r], 4 * d);
				LLVMValueRef nB_ = shfl_down_f(I, B[r], 4 * d);
				LLVMValueRef ok = ilt(I, ln->g, ci32(I, 8 - d));
				LLVMValueRef cA = fmul(I, A[r], nA_);
				LLVMValueRef cB = fadd(I, fmul(I, A[r], nB_), B[r]);
				A[r] = fsel(I, ok, cA, A[r]);
				B[r] = fsel(I, ok, cB, B[r]);
			}
		}
		/* half 1's total (chunk 8, lane g = 0) follows every chunk of half 0 */
		LLVMValueRef t1A = shfl_idx_f(I, A[1], l0), t1B = shfl_idx_f(I, B[1], l0);
		LLVMValueRef B0 = fadd(I, fmul(I, A[0], t1B), B[0]);
		LLVMValueRef A0 = fmul(I, A[0], t1A);
		totA[c] = shfl_idx_f(I, A0, l0);
		totB[c] = shfl_idx_f(I, B0, l0);
		/* exclusive: the inclusive suffix of the next chunk */
		LLVMValueRef xA0 = shfl_down_f(I, A0, 4), xB0 = shfl_down_f(I, B0, 4);
		LLVMValueRef xA1 = shfl_down_f(I, A[1], 4), xB1 = shfl_down_f(I, B[1], 4);
		var_set(I, m->A[c], fsel(I, g7, t1A, xA0));
		var_set(I, m->B[c], fsel(I, g7, t1B, xB0));
		var_set(I, m->A[4 + c], fsel(I, g7, cf32(I, 1.0), xA1));
		var_set(I, m->B[4 + c], fsel(I, g7, cf32(I, 0.0), xB1));
	}
}

/* adjoint maps compose right to left; folding steps in time order:
 * F := F o f_t with f_t(u) = a (g + u): (M, N) := (M a, M a g + N) */
void maps_push_bwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef gy)
{
	Irb *I = &T->I;
	LLVMValueRef Ma = fmul(I, var_get(I, m->A[s]), a);
	var_set(I, m->B[s], fadd(I, fmul(I, Ma, gy), var_get(I, m->B[s])));
	var_set(I, m->A[s], Ma);
}
