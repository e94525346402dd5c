/* Carry kernels: the top level of the hierarchical scan.
 *
 * Per channel, the NT per-tile maps of a sequence are walked in order
 * (forward: h entering each tile) or in reverse (backward: the adjoint
 * message entering each tile from the right). A block holds 32 channels
 * and CARRY_SEGS warps; warp s owns a contiguous run of the walk:
 *   1. each warp folds its run into one map (independent loads in flight);
 *   2. warp 0 walks the CARRY_SEGS run maps: the value entering each run;
 *   3. each warp walks its run again from that value, writing every tile's
 *      carry.
 * A single thread walking all NT tiles waited on NT dependent steps, on
 * D / 128 blocks; this waits on about 2 NT / CARRY_SEGS + CARRY_SEGS. The
 * order of every combination is fixed by the shape: the same bits on every
 * run.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

#define CARRY_SEGS 16

void chan_runs(Irb *I, int nsegs, LLVMValueRef D, LLVMValueRef n, ChanRuns *r)
{
	r->tid = tid_x(I);
	r->lane = LLVMBuildAnd(I->b, r->tid, ci32(I, 31), "");
	r->seg = LLVMBuildLShr(I->b, r->tid, ci32(I, 5), "");
	r->c = iadd(I, imul(I, ctaid(I, 0), ci32(I, 32)), r->lane);
	r->live = ilt(I, r->c, D);
	r->b = ctaid(I, 1);
	/* run of warp s: positions [s m, min((s+1) m, n)), m = cdiv(n, nsegs) */
	LLVMValueRef m = idiv(I, iadd(I, n, ci32(I, nsegs - 1)), ci32(I, nsegs));
	r->k0 = imul(I, r->seg, m);
	LLVMValueRef k1 = iadd(I, r->k0, m);
	r->k1 = LLVMBuildSelect(I->b, ilt(I, k1, n), k1, n, "");
	r->cs = LLVMBuildSelect(I->b, r->live, r->c, ci32(I, 0), "");
}

void tmpl_carry(Tmpl *T, int backward)
{
	Irb *I = &T->I;
	char sm[16];
	/* run maps (A, B) [seg][32] and entering values [seg][32] */
	snprintf(sm, sizeof sm, "%d", CARRY_SEGS * 32 * 12);
	Launch *l = tmpl_launch(T, !backward, backward ? "bwd_carry" : "fwd_carry", "cdiv(D,32)", "B", "1",
	                        32 * CARRY_SEGS, sm);
	ksig_add(T, &l->sig, backward ? "ws:baggA" : "ws:aggA", I->gptr);
	ksig_add(T, &l->sig, backward ? "ws:baggB" : "ws:aggB", I->gptr);
	ksig_add(T, &l->sig, backward ? "ws:ucarry" : "ws:carry", I->gptr);
	/* the value entering the walk and the one leaving it: h0 and hT, or in
	 * the backward dhT (joining at the last token) and dh0 = a[0] dh[0] */
	if (T->v->states) {
		ksig_add(T, &l->sig, backward ? "state:dhT" : "state:h0", I->gptr);
		ksig_add(T, &l->sig, backward ? "state:dh0" : "state:hT", I->gptr);
	}
	ksig_add(T, &l->sig, "i32:D", I->i32);
	ksig_add(T, &l->sig, "i32:NT", I->i32);
	tmpl_open(T, l);
	LLVMValueRef A = irb_arg(I, 0), B = irb_arg(I, 1), out = irb_arg(I, 2);
	int ns = T->v->states ? 2 : 0;
	LLVMValueRef s_in = ns ? irb_arg(I, 3) : NULL, s_out = ns ? irb_arg(I, 4) : NULL;
	LLVMValueRef D = irb_arg(I, 3 + ns), NT = irb_arg(I, 4 + ns);
	ChanRuns run;
	chan_runs(I, CARRY_SEGS, D, NT, &run);
	LLVMValueRef lane = run.lane, seg = run.seg, live = run.live, b = run.b, cs = run.cs;
	LLVMValueRef k0 = run.k0, k1 = run.k1;
#define TILE_IDX(k) iadd(I, imul(I, sext64(I, iadd(I, imul(I, b, NT), \
	backward ? isub(I, isub(I, NT, ci32(I, 1)), (k)) : (k))), sext64(I, D)), sext64(I, cs))
	LLVMValueRef cell = imul(I, iadd(I, imul(I, seg, ci32(I, 32)), lane), ci32(I, 4));
	LLVMValueRef offA = cell;
	LLVMValueRef offB = iadd(I, cell, ci32(I, CARRY_SEGS * 32 * 4));
	LLVMValueRef offH = iadd(I, cell, ci32(I, CARRY_SEGS * 32 * 8));

	/* 1: the run's map, h -> RA h + RB */
	Var RA = var_init(I, cf32(I, 1.0), "RA"), RB = var_init(I, cf32(I, 0.0), "RB");
	{
		Loop L;
		loop_begin(I, &L, k0, k1, ci32(I, 1), "k");
		L.unroll = 4;
		LLVMValueRef idx = TILE_IDX(loop_i(I, &L));
		LLVMValueRef a = ld(I, I->f32, gep_f32(I, A, idx), 4);
		LLVMValueRef bb = ld(I, I->f32, gep_f32(I, B, idx), 4);
		var_set(I, RB, fadd(I, fmul(I, var_get(I, RB), a), bb));
		var_set(I, RA, fmul(I, var_get(I, RA), a));
		loop_end(I, &L);
	}
	st(I, var_get(I, RA), smem_ptr(I, offA), 4);
	st(I, var_get(I, RB), smem_ptr(I, offB), 4);
	bar_sync(I);
	/* 2: warp 0 walks the runs; the sequence starts from 0, or from the
	 * caller's state */
	IfBlk f0;
	if_begin(I, &f0, ieq(I, seg, ci32(I, 0)), "runs");
	LLVMValueRef sidx = iadd(I, imul(I, sext64(I, b), sext64(I, D)), sext64(I, cs));
	LLVMValueRef h = s_in ? state_load(I, s_in, sidx, live) : cf32(I, 0.0);
	for (int s = 0; s < CARRY_SEGS; s++) {
		LLVMValueRef o = iadd(I, imul(I, lane, ci32(I, 4)), ci32(I, s * 32 * 4));
		st(I, h, smem_ptr(I, iadd(I, o, ci32(I, CARRY_SEGS * 32 * 8))), 4);
		LLVMValueRef ra = ld(I, I->f32, smem_ptr(I, o), 4);
		LLVMValueRef rb = ld(I, I->f32, smem_ptr(I, iadd(I, o, ci32(I, CARRY_SEGS * 32 * 4))), 4);
		h = fadd(I, fmul(I, ra, h), rb);
	}
	if (s_out)   /* what leaves the last run: hT, or dh0 */
		state_store(I, s_out, sidx, live, h);
	if_end(I, &f0);
	bar_sync(I);
	/* 3: every tile's entering value */
	IfBlk f1;
	if_begin(I, &f1, live, "chan");
	Var hv = var_init(I, ld(I, I->f32, smem_ptr(I, offH), 4), "h");
	{
		Loop L;
		loop_begin(I, &L, k0, k1, ci32(I, 1), "k");
		L.unroll = 4;
		LLVMValueRef idx = TILE_IDX(loop_i(I, &L));
		st(I, var_get(I, hv), gep_f32(I, out, idx), 4);
		LLVMValueRef a = ld(I, I->f32, gep_f32(I, A, idx), 4);
		LLVMValueRef bb = ld(I, I->f32, gep_f32(I, B, idx), 4);
		var_set(I, hv, fadd(I, fmul(I, a, var_get(I, hv)), bb));
		loop_end(I, &L);
	}
	if_end(I, &f1);
#undef TILE_IDX
	irb_ret(I);
}
