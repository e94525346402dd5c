/* Packed documents with a state each (Variant.docs; util/seqstate.h's
 * contract, both forms).
 *
 * A docs variant handles every sequence start and end per token, where a
 * states variant handles a row's at the carry across tiles: docs_prep, the
 * first kernel of both passes, gives each token a code in ws:dcode,
 *     doc << SEQSTATE_DOC_SHIFT | 1 (a start from h0[doc]) | 2 (the end
 *     of doc, where the call takes hT or gives dhT) | 4 (a reset mark),
 * which the scans stage with each segment where a resets variant stages its
 * marks (segment.c), and read as its marks (step_marks) and where the
 * states are read and written. "doc" is the row in the reset/h0 form (start at
 * t = 0, end at L - 1, the caller's marks copied) and the document in the
 * cu_seqlens form (B = 1; the starts and ends of cu_seqlens; a start is a
 * mark where h0 is not given). Then, in code every scan kind shares, each
 * inside a branch a row taken at a start or end alone (docs_fetch):
 *   - a start from h0 cuts the chain and adds a h0[doc] to its b
 *     (docs_inject, from step_gates_n);
 *   - an end stores h in hT[doc] (docs_store_hT, where y is made);
 *   - an end's adjoint joins dhT[doc] (eval_gy);
 *   - a start from h0 takes h_prev = h0[doc] in the backward and stores
 *     dh0[doc] = a dh there (bwd_step).
 * A sequence that starts with a reset has dh0 = 0: docs_prep clears its
 * row of dh0 (in the backward, where dh0 is given) before bwd_apply runs.
 */
#include "tmpl.h"
#include "diag.h"
#include "seqstate.h"
#include <string.h>

#define PREP_THREADS 256

static LLVMValueRef gep_i32(Irb *I, LLVMValueRef base, LLVMValueRef idx64)
{
	return LLVMBuildGEP2(I->b, I->i32, base, &idx64, 1, "");
}

/* bit in a token's code where the i1 v holds, else 0 */
static LLVMValueRef code_flag(Irb *I, LLVMValueRef v, int bit)
{
	return LLVMBuildSelect(I->b, v, ci32(I, bit), ci32(I, 0), "");
}

/* the document of token t in cu_seqlens[0..ndocs] (t < L = cu[ndocs]): the
 * last i with cu[i] <= t, by bisection over a fixed 31 steps (ndocs < 2^31) */
static LLVMValueRef doc_of(Irb *I, LLVMValueRef cu, LLVMValueRef ndocs, LLVMValueRef t)
{
	Var lo = var_init(I, ci32(I, 0), "lo"), hi = var_init(I, ndocs, "hi");
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, 31), ci32(I, 1), "bisect");
	LLVMValueRef l = var_get(I, lo), h = var_get(I, hi);
	LLVMValueRef live = ilt(I, iadd(I, l, ci32(I, 1)), h);
	LLVMValueRef mid = LLVMBuildLShr(I->b, iadd(I, l, h), ci32(I, 1), "");
	LLVMValueRef at = ld(I, I->i32, gep_i32(I, cu, sext64(I, mid)), 4);   /* mid in [lo, hi]: inside */
	LLVMValueRef below = LLVMBuildICmp(I->b, LLVMIntSLE, at, t, "");
	var_set(I, lo, LLVMBuildSelect(I->b, land(I, live, below), mid, l, ""));
	var_set(I, hi, LLVMBuildSelect(I->b, land(I, live, LLVMBuildNot(I->b, below, "")), mid, h, ""));
	loop_end(I, &L);
	return var_get(I, lo);
}

void tmpl_docs_prep(Tmpl *T)
{
	Irb *I = &T->I;
	char g0[32];
	snprintf(g0, sizeof g0, "cdiv(B*L,%d)", PREP_THREADS);
	Launch *l = tmpl_launch(T, 1, "docs_prep", g0, "1", "1", PREP_THREADS, "0");
	ksig_add(T, &l->sig, "state:reset", I->gptr);
	ksig_add(T, &l->sig, "state:cu_seqlens", I->gptr);
	ksig_add(T, &l->sig, "state:h0", I->gptr);
	ksig_add(T, &l->sig, "state:dh0", I->gptr);
	ksig_add(T, &l->sig, "state:hT", I->gptr);
	ksig_add(T, &l->sig, "state:dhT", I->gptr);
	ksig_add(T, &l->sig, "ws:dcode", I->gptr);
	ksig_add(T, &l->sig, "i32:B*L", I->i32);
	ksig_add(T, &l->sig, "i32:L", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	ksig_add(T, &l->sig, "i32:ndocs", I->i32);
	tmpl_open(T, l);
	const KSig *s = &l->sig;
	LLVMValueRef reset = ksig_arg(T, s, "state:reset"), cu = ksig_arg(T, s, "state:cu_seqlens");
	LLVMValueRef h0 = ksig_arg(T, s, "state:h0"), dh0 = ksig_arg(T, s, "state:dh0");
	LLVMValueRef BL = ksig_arg(T, s, "i32:B*L"), L = ksig_arg(T, s, "i32:L"), D = ksig_arg(T, s, "i32:D");
	LLVMValueRef ndocs = ksig_arg(T, s, "i32:ndocs");
	LLVMValueRef e = iadd(I, imul(I, ctaid(I, 0), ci32(I, PREP_THREADS)), tid_x(I));
	IfBlk in;
	if_begin(I, &in, ilt(I, e, BL), "tok");
	LLVMValueRef b = idiv(I, e, L), t = isub(I, e, imul(I, b, L));
	LLVMValueRef packed = state_given(I, cu), has_h0 = state_given(I, h0);
	/* an end is an event only where a final state is taken or its adjoint
	 * given: a call asking for neither (training on packed documents) has
	 * none, and its tiles and groups without a start run the quiet copy */
	LLVMValueRef has_end = LLVMBuildOr(I->b, state_given(I, ksig_arg(T, s, "state:hT")),
	                                   state_given(I, ksig_arg(T, s, "state:dhT")), "");
	Var doc = var_init(I, b, "doc"), start = var_init(I, ieq(I, t, ci32(I, 0)), "start");
	Var end = var_init(I, ieq(I, t, isub(I, L, ci32(I, 1))), "end");
	Var mark = var_init(I, LLVMConstInt(I->i1, 0, 0), "mark");
	IfBlk f;
	if_begin(I, &f, packed, "packed");   /* B = 1 (the runtime's check): e is t */
	{
		LLVMValueRef i = doc_of(I, cu, ndocs, t);
		LLVMValueRef c0 = ld(I, I->i32, gep_i32(I, cu, sext64(I, i)), 4);
		LLVMValueRef c1 = ld(I, I->i32, gep_i32(I, cu, sext64(I, iadd(I, i, ci32(I, 1)))), 4);
		LLVMValueRef st0 = ieq(I, c0, t);
		var_set(I, doc, i);
		var_set(I, start, st0);
		var_set(I, end, ieq(I, isub(I, c1, ci32(I, 1)), t));
		var_set(I, mark, land(I, st0, LLVMBuildNot(I->b, has_h0, "")));
	}
	if_end(I, &f);
	/* the reset/h0 form: the caller's marks, where given */
	LLVMValueRef given = land(I, LLVMBuildNot(I->b, packed, ""), state_given(I, reset));
	LLVMValueRef m = ld_u8_if(I, LLVMBuildGEP2(I->b, I->i8, reset, (LLVMValueRef[]){ sext64(I, e) }, 1, ""),
	                          LLVMBuildZExt(I->b, given, I->i32, ""));
	LLVMValueRef mk = LLVMBuildOr(I->b, var_get(I, mark), LLVMBuildICmp(I->b, LLVMIntNE, m, ci32(I, 0), ""), "");
	LLVMValueRef inj = land(I, land(I, var_get(I, start), has_h0), LLVMBuildNot(I->b, mk, ""));
	LLVMValueRef flags = LLVMBuildOr(I->b, code_flag(I, inj, DOC_START),
	                                 LLVMBuildOr(I->b, code_flag(I, land(I, var_get(I, end), has_end), DOC_END),
	                                             code_flag(I, mk, DOC_RESET), ""), "");
	LLVMValueRef code = LLVMBuildOr(I->b, LLVMBuildShl(I->b, var_get(I, doc), ci32(I, SEQSTATE_DOC_SHIFT), ""),
	                                flags, "");
	st(I, code, gep_i32(I, ksig_arg(T, s, "ws:dcode"), sext64(I, e)), 4);
	/* a sequence that starts with a reset leaves h0 unused: its dh0 is 0 */
	IfBlk z;
	if_begin(I, &z, land(I, state_given(I, dh0), land(I, var_get(I, start), LLVMBuildNot(I->b, inj, ""))), "dh0_zero");
	{
		Loop Lc;
		loop_begin(I, &Lc, ci32(I, 0), D, ci32(I, 1), "c");
		LLVMValueRef at = iadd(I, imul(I, sext64(I, var_get(I, doc)), sext64(I, D)), sext64(I, loop_i(I, &Lc)));
		st(I, cf32(I, 0.0), gep_f32(I, dh0, at), 4);
		loop_end(I, &Lc);
	}
	if_end(I, &z);
	if_end(I, &in);
	irb_ret(I);
}

/* The backward's first launch: the same kernel again (the backward may
 * run with other buffers, and it clears dh0 where a reset starts) */
void docs_prep_again(Tmpl *T)
{
	CHECK(T->nbwd < 8);
	for (int i = 0; i < T->nfwd; i++)
		if (strstr(T->fwd[i].kernel, "_docs_prep")) {
			T->bwd[T->nbwd++] = T->fwd[i];
			return;
		}
	CHECK(!"docs_prep_again before tmpl_docs_prep");
}

static LLVMValueRef code_bit(Tmpl *T, const Step *st, int s, int bit)
{
	Irb *I = &T->I;
	CHECK(st->code[slot_r(s)]);
	return LLVMBuildICmp(I->b, LLVMIntNE, LLVMBuildAnd(I->b, st->code[slot_r(s)], ci32(I, bit), ""), ci32(I, 0), "");
}

/* whether slot s's token starts a sequence from h0 (i1) */
LLVMValueRef docs_start(Tmpl *T, const Step *st, int s) { return code_bit(T, st, s, DOC_START); }

/* token t's code of the lane's row where ok, else 0 */
LLVMValueRef docs_code_at(Tmpl *T, const Lanes *ln, LLVMValueRef t, LLVMValueRef ok)
{
	Irb *I = &T->I;
	CHECK(ln->dcode);   /* every step kernel of a docs variant takes ws:dcode (ksig_shape) */
	LLVMValueRef at = LLVMBuildSelect(I->b, ok, iadd(I, imul(I, ln->b, ln->L), t), ci32(I, 0), "");
	return LLVMBuildSelect(I->b, ok, ld(I, I->i32, gep_i32(I, ln->dcode, sext64(I, at)), 4), ci32(I, 0), "");
}

/* the codes of the step's two rows, and their reset marks: from the staged
 * segment where the step is staged (segment.c stages the codes where a
 * resets variant stages its marks: a load from memory per step stalls the
 * scan on its latency), else from memory */
void docs_load_codes(Tmpl *T, Lanes *ln, Step *st)
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		if (st->seg) {
			LLVMValueRef at = seg_mark_at(T, ln, st->seg, iadd(I, ln->g, ci32(I, 8 * r)));
			st->code[r] = ld(I, I->i32, smem_ptr(I, at), 4);
		} else {
			st->code[r] = docs_code_at(T, ln, st->t[r], st->valid[r]);
		}
		st->mark[r] = code_bit(T, st, 4 * r, DOC_RESET);
	}
}

/* element (doc, channel) of slot s in a [docs][D] state */
LLVMValueRef docs_state_idx(Tmpl *T, const Lanes *ln, const Step *st, int s)
{
	Irb *I = &T->I;
	LLVMValueRef doc = LLVMBuildLShr(I->b, st->code[slot_r(s)], ci32(I, SEQSTATE_DOC_SHIFT), "");
	LLVMValueRef col = iadd(I, imul(I, ln->head, ci32(I, 64)), ln->ch[slot_c(s)]);
	return iadd(I, imul(I, sext64(I, doc), sext64(I, ln->D)), sext64(I, col));
}

/* whether row r's code has flag and p is given: the test of a branch a
 * row around the states' loads and stores. The starts and ends are a few
 * tokens in thousands, so the common step pays this test, where predicated
 * accesses cost their address arithmetic on every slot of every step */
static LLVMValueRef row_has(Tmpl *T, const Step *st, int r, int flag, LLVMValueRef p)
{
	return land(&T->I, code_bit(T, st, 4 * r, flag), state_given(&T->I, p));
}

/* v[s] = p at slot s's (document, channel) where its row's code has flag
 * and p is given, else 0 */
void docs_fetch(Tmpl *T, const Lanes *ln, const Step *st, int flag, LLVMValueRef p, LLVMValueRef v[TM_SLOTS])
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		Var w[4];
		for (int c = 0; c < 4; c++)
			w[c] = var_init(I, cf32(I, 0.0), "doc_in");
		IfBlk f;
		if_begin(I, &f, row_has(T, st, r, flag, p), "doc_in");
		for (int c = 0; c < 4; c++)
			var_set(I, w[c], ld(I, I->f32, gep_f32(I, p, docs_state_idx(T, ln, st, 4 * r + c)), 4));
		if_end(I, &f);
		for (int c = 0; c < 4; c++)
			v[4 * r + c] = var_get(I, w[c]);
	}
}

/* p at each slot's (document, channel) = v[s] where its row's code has
 * flag and p is given */
void docs_put(Tmpl *T, const Lanes *ln, const Step *sp, int flag, LLVMValueRef p, const LLVMValueRef v[TM_SLOTS])
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		IfBlk f;
		if_begin(I, &f, row_has(T, sp, r, flag, p), "doc_out");
		for (int c = 0; c < 4; c++)
			st(I, v[4 * r + c], gep_f32(I, p, docs_state_idx(T, ln, sp, 4 * r + c)), 4);
		if_end(I, &f);
	}
}

/* a start from h0: no carry in (a = 0) and b + a h0[doc], in the step's
 * eight slots. (The selects inside the branch instead, with a_eff and b_eff
 * merged after it: RG-LRU +3% on the H100, bench/experiments/2026-12-05-docs-h100) */
void docs_inject(Tmpl *T, Lanes *ln, Step *st)
{
	Irb *I = &T->I;
	if (!docs_states(T))
		return;
	LLVMValueRef h0[TM_SLOTS];
	docs_fetch(T, ln, st, DOC_START, ln->h0, h0);
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef inj = docs_start(T, st, s);
		st->a_eff[s] = fsel(I, inj, cf32(I, 0.0), st->a_eff[s]);
		st->b_eff[s] = fsel(I, inj, fadd(I, st->bb[s], fmul(I, st->a[s], h0[s])), st->b_eff[s]);
	}
}

/* a sequence's last token: its final state, h of the step's eight slots */
void docs_store_hT(Tmpl *T, Lanes *ln, const Step *st, LLVMValueRef h[TM_SLOTS])
{
	if (docs_states(T))
		docs_put(T, ln, st, DOC_END, ln->hT, h);
}

/* whether any of tokens t0 .. t0 + ntok - 1 of the lane's row (those inside
 * it) is marked: for a docs variant, its code has one of the bits given
 * (DOC_START | DOC_END: it starts from h0 or ends a sequence); for a resets
 * variant, the caller marks it a reset (bits 1). An i1 the same in every
 * thread of the block, whose threads each read ntok / threads codes or
 * marks (a block-wide barrier: every thread must reach it). */
LLVMValueRef tile_holds(Tmpl *T, const Lanes *ln, LLVMValueRef t0, int ntok, int bits)
{
	Irb *I = &T->I;
	CHECK(T->v->resets);
	int nt = T->k.threads;
	LLVMValueRef any = ci32(I, 0);
	for (int k = 0; k < (ntok + nt - 1) / nt; k++) {
		LLVMValueRef e = iadd(I, tid_x(I), ci32(I, k * nt));
		LLVMValueRef t = iadd(I, t0, e);
		LLVMValueRef ok = land(I, ilt(I, e, ci32(I, ntok)), ilt(I, t, ln->L));
		any = LLVMBuildOr(I->b, any, T->v->docs ? docs_code_at(T, ln, t, ok) : reset_mark_at(T, ln, t, ok), "");
	}
	return bar_or(I, LLVMBuildICmp(I->b, LLVMIntNE, LLVMBuildAnd(I->b, any, ci32(I, bits), ""), ci32(I, 0), ""));
}
