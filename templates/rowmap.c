/* map_finish: the row's map (util/seqstate.h) of a map variant's forward,
 * from the partial sums of log_a that its folding kernel left per quad of
 * each tile (fwd_scan.c, ws:mapL [B][NT * quads][D]), and from h0 and hT:
 *   map_loga = the sum of the partials in time order;
 *   map_h    = hT - exp(map_loga) * h0, which is hT where a mark made
 *              map_loga -inf (bit for bit: exp gives 0).
 * A call asking for the map gives h0, and for map_h hT too (the runtime
 * refuses one that does not), so t = 0 is no reset unless marked, as the
 * map's contract has it. The sums have a fixed order, so the bits repeat.
 *
 * As the carry kernel (chan_runs): 32 channels a block, MAP_SEGS warps
 * each summing a run of the partials, then warp 0 the runs in order. */
#include "tmpl.h"
#include <stdio.h>

#define MAP_SEGS 16

void tmpl_map_finish(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[16];
	snprintf(sm, sizeof sm, "%d", MAP_SEGS * 32 * 4);
	Launch *l = tmpl_launch(T, 1, "map_finish", "cdiv(D,32)", "B", "1", 32 * MAP_SEGS, sm);
	ksig_add(T, &l->sig, "ws:mapL", I->gptr);
	ksig_add(T, &l->sig, "state:h0", I->gptr);
	ksig_add(T, &l->sig, "state:hT", I->gptr);
	ksig_add(T, &l->sig, "state:map_loga", I->gptr);
	ksig_add(T, &l->sig, "state:map_h", I->gptr);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	ksig_add(T, &l->sig, "i32:NT", I->i32);
	tmpl_open(T, l);
	LLVMValueRef part = irb_arg(I, 0), h0 = irb_arg(I, 1), hT = irb_arg(I, 2);
	LLVMValueRef mla = irb_arg(I, 3), mh = irb_arg(I, 4), D = irb_arg(I, 5), NT = irb_arg(I, 6);
	/* a call without the map: nothing to do (the branch is the same for
	 * every thread, so no barrier is skipped by some) */
	IfBlk any;
	if_begin(I, &any, LLVMBuildOr(I->b, state_given(I, mla), state_given(I, mh), ""), "asked");
	LLVMValueRef np = imul(I, NT, ci32(I, T->quads));   /* partials a channel */
	ChanRuns run;
	chan_runs(I, MAP_SEGS, D, np, &run);
	LLVMValueRef tid = run.tid, lane = run.lane, seg = run.seg, c = run.c, live = run.live, cs = run.cs, b = run.b;
	Var sum = var_init(I, cf32(I, 0.0), "sum");
	{
		Loop L;
		loop_begin(I, &L, run.k0, run.k1, ci32(I, 1), "k");
		L.unroll = 4;
		LLVMValueRef row = iadd(I, imul(I, b, np), loop_i(I, &L));
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, cs));
		var_set(I, sum, fadd(I, var_get(I, sum), ld(I, I->f32, gep_f32(I, part, idx), 4)));
		loop_end(I, &L);
	}
	st(I, var_get(I, sum), smem_ptr(I, imul(I, tid, ci32(I, 4))), 4);
	bar_sync(I);
	IfBlk f;
	if_begin(I, &f, land(I, ieq(I, seg, ci32(I, 0)), live), "runs");
	LLVMValueRef la = cf32(I, 0.0);
	for (int s = 0; s < MAP_SEGS; s++)
		la = fadd(I, la, ld(I, I->f32, smem_ptr(I, imul(I, iadd(I, lane, ci32(I, 32 * s)), ci32(I, 4))), 4));
	LLVMValueRef sidx = iadd(I, imul(I, sext64(I, b), sext64(I, D)), sext64(I, c));
	state_store(I, mla, sidx, LLVMConstInt(I->i1, 1, 0), la);
	IfBlk fh;
	if_begin(I, &fh, state_given(I, mh), "map_h");
	LLVMValueRef hend = ld(I, I->f32, gep_f32(I, hT, sidx), 4);
	LLVMValueRef hin = ld(I, I->f32, gep_f32(I, h0, sidx), 4);
	st(I, fsub(I, hend, fmul(I, f_exp(I, la), hin)), gep_f32(I, mh, sidx), 4);
	if_end(I, &fh);
	if_end(I, &f);
	if_end(I, &any);
	irb_ret(I);
}
