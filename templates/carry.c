/* The backward's carry kernel: the top level of its hierarchical scan.
 *
 * Per channel it walks the per-tile adjoint maps of its sequence from the
 * last tile to the first and writes the message entering each tile from the
 * right. The combination order is fixed: the same bits on every run. (The
 * forward needs no such kernel: it finds tile carries by look-back.)
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

/* One warp per channel: lane l folds tiles [l*K, (l+1)*K) in reverse time
 * order, the 32 lane maps are combined with a shuffle scan, and
 * each lane then walks its tiles again writing the carry entering each. A
 * single thread per channel would walk NT dependent steps; this walks
 * 2*NT/32 + 5. The order of every combination is fixed. */
void tmpl_carry(Tmpl *T)
{
	Irb *I = &T->I;
	Launch *l = &T->bwd[T->nbwd++];
	memset(l, 0, sizeof *l);
	snprintf(l->kernel, sizeof l->kernel, "%s_%s", T->prefix, "bwd_carry");
	snprintf(l->grid[0], sizeof l->grid[0], "cdiv(D,4)");
	snprintf(l->grid[1], sizeof l->grid[1], "B");
	snprintf(l->grid[2], sizeof l->grid[2], "1");
	l->block = 128;
	snprintf(l->smem, sizeof l->smem, "0");
	ksig_add(T, &l->sig, "ws:baggA", I->gptr);
	ksig_add(T, &l->sig, "ws:baggB", I->gptr);
	ksig_add(T, &l->sig, "ws:ucarry", I->gptr);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	ksig_add(T, &l->sig, "i32:NT", I->i32);
	irb_kernel(I, l->kernel, l->sig.ty, l->sig.n, 128);
	T->cur_threads = 128;
	LLVMValueRef A = irb_arg(I, 0), B = irb_arg(I, 1), out = irb_arg(I, 2);
	LLVMValueRef D = irb_arg(I, 3), NT = irb_arg(I, 4);
	LLVMValueRef tid = tid_x(I);
	LLVMValueRef lane = LLVMBuildAnd(I->b, tid, ci32(I, 31), "");
	LLVMValueRef c = iadd(I, imul(I, ctaid(I, 0), ci32(I, 4)), LLVMBuildLShr(I->b, tid, ci32(I, 5), ""));
	LLVMValueRef b = ctaid(I, 1);
	LLVMValueRef live = ilt(I, c, D);
	LLVMValueRef cc = LLVMBuildSelect(I->b, live, c, ci32(I, 0), "");
	LLVMValueRef K = idiv(I, iadd(I, NT, ci32(I, 31)), ci32(I, 32));
	LLVMValueRef k0 = imul(I, lane, K);
	LLVMValueRef k1 = LLVMBuildSelect(I->b, ilt(I, iadd(I, k0, K), NT), iadd(I, k0, K), NT, "");
	/* k-th tile in walking order */
	#define TILE_IDX(k) isub(I, isub(I, NT, ci32(I, 1)), (k))
	#define ELEM(k) iadd(I, imul(I, sext64(I, iadd(I, imul(I, b, NT), TILE_IDX(k))), sext64(I, D)), sext64(I, cc))
	Var fa = var_init(I, cf32(I, 1.0), "fa"), fb = var_init(I, cf32(I, 0.0), "fb");
	Loop L;
	loop_begin(I, &L, k0, k1, ci32(I, 1), "k");
	{
		LLVMValueRef idx = ELEM(loop_i(I, &L));
		LLVMValueRef a = ld(I, I->f32, gep_f32(I, A, idx), 4);
		LLVMValueRef bb = ld(I, I->f32, gep_f32(I, B, idx), 4);
		var_set(I, fb, fadd(I, fmul(I, var_get(I, fb), a), bb));
		var_set(I, fa, fmul(I, var_get(I, fa), a));
	}
	loop_end(I, &L);
	/* exclusive scan of the lane maps: (A1,B1) then (A2,B2) = (A1 A2, B1 A2 + B2) */
	LLVMValueRef xa = var_get(I, fa), xb = var_get(I, fb);
	for (int d = 1; d < 32; d <<= 1) {
		LLVMValueRef pa = shfl_up_f(I, xa, d), pb = shfl_up_f(I, xb, d);
		LLVMValueRef ok = ige(I, lane, ci32(I, d));
		LLVMValueRef nb = fadd(I, fmul(I, pb, xa), xb);
		xa = fsel(I, ok, fmul(I, pa, xa), xa);
		xb = fsel(I, ok, nb, xb);
	}
	/* the state entering lane l is the inclusive value of lane l-1 applied to 0 */
	LLVMValueRef hin = shfl_up_f(I, xb, 1);
	hin = fsel(I, ieq(I, lane, ci32(I, 0)), cf32(I, 0.0), hin);
	Var h = var_init(I, hin, "h");
	IfBlk f;
	if_begin(I, &f, live, "chan");
	Loop L2;
	loop_begin(I, &L2, k0, k1, ci32(I, 1), "k");
	{
		LLVMValueRef idx = ELEM(loop_i(I, &L2));
		st(I, var_get(I, h), gep_f32(I, out, idx), 4);
		LLVMValueRef a = ld(I, I->f32, gep_f32(I, A, idx), 4);
		LLVMValueRef bb = ld(I, I->f32, gep_f32(I, B, idx), 4);
		var_set(I, h, fadd(I, fmul(I, a, var_get(I, h)), bb));
	}
	loop_end(I, &L2);
	#undef ELEM
	#undef TILE_IDX
	if_end(I, &f);
	irb_ret(I);
}
