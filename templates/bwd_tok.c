/* bwd_apply's share of the token stage: the per-(token, head) adjoints of
 * the token values, summed over a head's channels and published per
 * segment, and where the one-pass backward finishes the token stage
 * itself (tok_tail.c), when each group's tail runs. */
#include "bwd.h"

/* Adjoints of the per-token values: summed over the warp's 16 channels by
 * shuffles and parked per (step, row, warp) in shared memory; tok_flush
 * adds the four warps in order once per segment and writes one partial per
 * (token, head), which tok_bwd adds over the heads in order: the same bits
 * on every run. */
void tok_partials(Bwd *bw, Step *stp, LLVMValueRef si, LLVMValueRef gz[TM_SLOTS][TM_MAXZ])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	for (int r = 0; r < 2; r++) {
		LLVMValueRef v[TM_MAXZ];
		for (int k = 0; k < T->ntokval; k++) {
			v[k] = fadd(I, fadd(I, gz[r * 4][k], gz[r * 4 + 1][k]), fadd(I, gz[r * 4 + 2][k], gz[r * 4 + 3][k]));
			v[k] = fadd(I, v[k], shfl_xor_f(I, v[k], 1));
			v[k] = fadd(I, v[k], shfl_xor_f(I, v[k], 2));
		}
		IfBlk f;
		if_begin(I, &f, ieq(I, ln->q, ci32(I, 0)), "dz");
		LLVMValueRef row = iadd(I, ln->g, ci32(I, 8 * r));
		LLVMValueRef cell = iadd(I, imul(I, iadd(I, imul(I, si, ci32(I, 16)), row), ci32(I, 4)), ln->w);
		for (int k = 0; k < T->ntokval; k++) {
			LLVMValueRef o = imul(I, iadd(I, imul(I, cell, ci32(I, T->ntokval)), ci32(I, k)), ci32(I, 4));
			st(I, v[k], smem_ptr(I, iadd(I, ci32(I, bw->sm.dz), o)), 4);
		}
		if_end(I, &f);
	}
}

/* after the reverse sweep of the segment at s0: one partial per (token, head) */
void tok_flush(Bwd *bw, int s0)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	bar_sync(I);
	int n = T->seg * 16 * T->ntokval;
	for (int base = 0; base < n; base += 128) {
		LLVMValueRef e = iadd(I, ln->tid, ci32(I, base));
		LLVMValueRef k = LLVMBuildURem(I->b, e, ci32(I, T->ntokval), "");
		LLVMValueRef sr = LLVMBuildUDiv(I->b, e, ci32(I, T->ntokval), "");    /* si * 16 + row */
		LLVMValueRef si = LLVMBuildUDiv(I->b, sr, ci32(I, 16), "");
		LLVMValueRef row = LLVMBuildURem(I->b, sr, ci32(I, 16), "");
		LLVMValueRef t = iadd(I, bw->gb, iadd(I, imul(I, row, ci32(I, T->chunk)), iadd(I, si, ci32(I, s0))));
		IfBlk f;
		if_begin(I, &f, land(I, ilt(I, e, ci32(I, n)), in_seq(T, ln, t)), "flush");
		LLVMValueRef sum = cf32(I, 0.0);
		for (int w = 0; w < 4; w++) {
			LLVMValueRef o = imul(I, iadd(I, imul(I, iadd(I, imul(I, sr, ci32(I, 4)), ci32(I, w)), ci32(I, T->ntokval)), k), ci32(I, 4));
			sum = fadd(I, sum, ld(I, I->f32, smem_ptr(I, iadd(I, ci32(I, bw->sm.dz), o)), 4));
		}
		if (tok_fused(T)) {
			/* a look-back word, for the blocks of every head (tok_tail_group) */
			LLVMValueRef n16 = ci32(I, 16 * T->chunk);
			LLVMValueRef gi = idiv(I, bw->gb, n16), tl = isub(I, t, bw->gb);
			LLVMValueRef idx = tok_part_index(T, ln, bw->NG, gi, tl, ln->head, k);
			st_volatile(I, lb_enc(I, sum), gep_f32(I, bw->dtokp, idx), 4);
		} else {
			LLVMValueRef tok = iadd(I, imul(I, ln->b, ln->L), t);
			LLVMValueRef H = LLVMBuildLShr(I->b, ln->D, ci32(I, 6), "");
			LLVMValueRef idx = iadd(I, imul(I, iadd(I, imul(I, sext64(I, tok), sext64(I, H)), sext64(I, ln->head)), ci64(I, T->ntokval)), sext64(I, k));
			st(I, sum, gep_f32(I, bw->dtokp, idx), 4);
		}
		if_end(I, &f);
	}
	bar_sync(I);
}

/* Where a one-pass backward finishes its previous group's token stage:
 * after the publish of pass A's map where a chunk is one segment, else at
 * the start of the trip. A chunk of two segments (16) gained nothing from
 * the later place (1.213 against 1.203 ms f+b at 1x131072x1024, 16-bit h
 * maps then) and, with fp32 maps, spills there. */
int tok_tail_mid(const Tmpl *T) { return tok_fused(T) && T->chunk == T->seg; }

/* the group a block ran in its trip before the one at gb */
LLVMValueRef prev_group(Bwd *bw, LLVMValueRef gb)
{
	Irb *I = &bw->T->I;
	return iadd(I, gb, imul(I, nctaid(I, 0), ci32(I, 16 * bw->T->chunk)));
}

/* the token stage of the group at gb (tok_tail.c), where it starts inside
 * the sequence */
void tok_tail_at(Bwd *bw, LLVMValueRef NG, LLVMValueRef gb)
{
	Irb *I = &bw->T->I;
	IfBlk f;
	if_begin(I, &f, ilt(I, gb, bw->ln->L), "tt_group");
	tok_tail_group(bw->T, bw->ln, bw->sig, bw->sm.tail, NG, gb, bw->sacc);
	if_end(I, &f);
}
