/* One step of a chunk for the lane's 8 slots: its rows, inputs and gates
 * (projections on tensor cores, log_a and b from the mixer's expressions),
 * the leaves the expressions see, and the stores of a step's outputs. */
#include "tmpl.h"
#include "diag.h"
#include <stdlib.h>
#include <string.h>

LLVMValueRef load_pair(Tmpl *T, LLVMValueRef base, LLVMValueRef idx64, LLVMValueRef valid)
{
	Irb *I = &T->I;
	LLVMValueRef k = LLVMBuildSelect(I->b, valid, idx64, ci64(I, 0), "");
	LLVMValueRef p = gep_bf16(I, base, k);
	LLVMValueRef v = ld(I, I->i32, p, 4);
	return LLVMBuildSelect(I->b, valid, v, ci32(I, 0), "");
}

void step_rows(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i)
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		LLVMValueRef row = iadd(I, ln->g, ci32(I, 8 * r));
		st->t[r] = iadd(I, gb, iadd(I, imul(I, row, ci32(I, T->chunk)), i));
		st->valid[r] = in_seq(T, ln, st->t[r]);
	}
}

LLVMValueRef *param_vals(Tmpl *T, Lanes *ln, int s, LLVMValueRef *pv)
{
	for (int p = 0; p < T->mx->nparam; p++)
		pv[p] = T->mx->param[p].kind == PK_CHANNEL ? ln->chan[p][slot_c(s)] : ln->scal[p];
	return pv;
}

EmitEnv slot_env(Tmpl *T, Lanes *ln, const Step *st, int s, LLVMValueRef *pv)
{
	EmitEnv e = { .x = st->x[s], .first = step_first(T, st, s), .param = param_vals(T, ln, s, pv),
	              .proj = st->proj[s], .proj_sig = T->pj_sig, .proj_half = st->proj_half ? T->bd_sig : NULL,
	              .tok = st->tok[slot_r(s)] };
	if (ln->hoist) {
		size_t n = (size_t)T->mx->g.len;
		e.inv_node = T->inv_node;
		e.inv = T->k.inv_memo + (size_t)slot_c(s) * n;
		e.inv_l2e = T->k.inv_memo + (size_t)(4 + slot_c(s)) * n;
		e.hoist = ln->hoist;
	}
	return e;
}

LLVMValueRef slot_index(Tmpl *T, Lanes *ln, const Step *st, int s)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), st->t[slot_r(s)]);
	LLVMValueRef col = iadd(I, imul(I, ln->head, ci32(I, 64)), ln->ch[slot_c(s)]);
	return iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)), sext64(I, col));
}

/* the value slot (r, c) stores: v, plus acc's element for the same channel
 * (n-tile c >> 1, element 2r + (c & 1)) where given */
static LLVMValueRef slot_out(Irb *I, LLVMValueRef v[TM_SLOTS], LLVMValueRef acc[2][4], int r, int c)
{
	return acc ? fadd(I, v[r * 4 + c], acc[c >> 1][2 * r + (c & 1)]) : v[r * 4 + c];
}

void store_slots(Tmpl *T, Lanes *ln, Step *st_, LLVMValueRef out, LLVMValueRef v[TM_SLOTS], LLVMValueRef acc[2][4])
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		if (T->k.slots_adjacent) {   /* the row's four channels are adjacent: one 8-byte store */
			LLVMValueRef w = LLVMGetUndef(I->v2i32), u[4];
			for (int c = 0; c < 4; c++)
				u[c] = slot_out(I, v, acc, r, c);
			for (int e = 0; e < 2; e++)
				w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, u[2 * e], u[2 * e + 1]), ci32(I, e), "");
			IfBlk f;
			if_begin(I, &f, st_->valid[r], "store");
			st(I, w, gep_bf16(I, out, slot_index(T, ln, st_, r * 4)), 8);
			if_end(I, &f);
			continue;
		}
		for (int nt = 0; nt < 2; nt++) {   /* the mma's order: a pair per n-tile */
			LLVMValueRef v0 = slot_out(I, v, acc, r, 2 * nt), v1 = slot_out(I, v, acc, r, 2 * nt + 1);
			IfBlk f;
			if_begin(I, &f, st_->valid[r], "store");
			st(I, pack_bf16x2(I, v0, v1), gep_bf16(I, out, slot_index(T, ln, st_, r * 4 + 2 * nt)), 4);
			if_end(I, &f);
		}
	}
}

/* reset[b][t] (0 or 1, i32) for a row inside the sequence of a call that
 * gave marks (ok); 0 otherwise. One predicated load, no branch: a branch
 * around it split the step's code where bwd_apply has no register to
 * spare, and the predicate keeps a null pointer unread. */
LLVMValueRef reset_mark_at(Tmpl *T, const Lanes *ln, LLVMValueRef t, LLVMValueRef ok)
{
	Irb *I = &T->I;
	LLVMValueRef given = LLVMBuildICmp(I->b, LLVMIntNE, LLVMBuildPtrToInt(I->b, ln->reset, I->i64, ""),
	                                   ci64(I, 0), "");
	LLVMValueRef at = sext64(I, t);
	LLVMValueRef p = LLVMBuildGEP2(I->b, I->i8, ln->reset_row, &at, 1, "");
	LLVMValueRef v = ld_u8_if(I, p, LLVMBuildZExt(I->b, land(I, ok, given), I->i32, ""));
	return LLVMBuildZExt(I->b, LLVMBuildICmp(I->b, LLVMIntNE, v, ci32(I, 0), ""), I->i32, "");
}

/* whether the caller marks slot row r of the step a reset (i1): from the
 * staged segment where the step is staged (bwd_apply and the look-back
 * forward have no register to spare for a global address per step), else
 * from memory */
static LLVMValueRef reset_mark(Tmpl *T, Lanes *ln, const Step *st, int r)
{
	Irb *I = &T->I;
	if (st->seg) {
		LLVMValueRef at = seg_mark_at(T, ln, st->seg, iadd(I, ln->g, ci32(I, 8 * r)));
		return LLVMBuildICmp(I->b, LLVMIntNE, ld(I, I->i8, smem_ptr(I, at), 1), LLVMConstInt(I->i8, 0, 0), "");
	}
	return LLVMBuildICmp(I->b, LLVMIntNE, reset_mark_at(T, ln, st->t[r], st->valid[r]), ci32(I, 0), "");
}

/* The caller's reset marks of the step's two rows (a resets variant; a
 * null pointer: none), loaded late, where first is about to be used: a
 * mark loaded with the step's other inputs would stay live across the
 * projections, where bwd_apply has no register to spare. */
void step_marks(Tmpl *T, Lanes *ln, Step *st)
{
	/* a kernel of a resets variant without the marks or codes: ksig_shape */
	CHECK(!T->v->resets || ln->reset || ln->dcode);
	if (st->marked)
		return;
	if (T->k.marks_quiet) {   /* a copy for tokens with none (emit_split_docs) */
		st->marked = 1;
		return;
	}
	if (T->v->docs) {   /* the marks and where sequences start from h0 and end (docs.c) */
		docs_load_codes(T, ln, st);
	} else {
		for (int r = 0; r < 2; r++)
			st->mark[r] = reset_mark(T, ln, st, r);
	}
	st->marked = 1;
}

/* Whether slot s's token is a reset (i1) and the same as 1.0 / 0.0, built
 * where each is used: the marks stay predicates until then */
LLVMValueRef step_isfirst(Tmpl *T, const Step *st, int s)
{
	Irb *I = &T->I;
	CHECK(st->marked);   /* the caller's reset marks are in (step_marks) */
	LLVMValueRef f = LLVMBuildFCmp(I->b, LLVMRealONE, st->first[s], cf32(I, 0.0), "");
	return st->mark[slot_r(s)] ? LLVMBuildOr(I->b, f, st->mark[slot_r(s)], "") : f;
}

LLVMValueRef step_first(Tmpl *T, const Step *st, int s)
{
	Irb *I = &T->I;
	CHECK(st->marked);
	return st->mark[slot_r(s)] ? LLVMBuildSelect(I->b, st->mark[slot_r(s)], cf32(I, 1.0), st->first[s], "")
	                          : st->first[s];
}

void step_inputs(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i)
{
	Irb *I = &T->I;
	step_rows(T, ln, st, gb, i);
	st->proj_half = 0;
	st->seg = NULL;
	st->xs = NULL;
	if (ln->seg_off >= 0) {
		st->seg = seg_step_at(T, ln, i);
		st->xs = ln->seg_flags & SEG_X ? st->seg : NULL;
	}
	/* a reset at t = 0 of every row that starts from nothing (no h0 given);
	 * the caller's marks join in step_marks */
	CHECK(!T->v->states || ln->h0);   /* a kernel of a states variant without h0: ksig_shape */
	LLVMValueRef fresh = ln->h0 ? LLVMBuildICmp(I->b, LLVMIntEQ, LLVMBuildPtrToInt(I->b, ln->h0, I->i64, ""),
	                                            ci64(I, 0), "fresh") : NULL;
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef t0 = ieq(I, st->t[slot_r(s)], ci32(I, 0));
		st->first[s] = b2f(I, fresh ? land(I, t0, fresh) : t0);
	}
	st->mark[0] = st->mark[1] = NULL;
	st->marked = !ln->reset && !ln->dcode;
	memset(st->dhT_in, 0, sizeof st->dhT_in);
	/* the row's per-token values: the q lanes of a row read the same words */
	if (T->ntokval > 0 && st->seg) {
		LLVMValueRef tb = iadd(I, st->seg, ci32(I, seg_part(T, ln->seg_flags, SEG_TOK)));
		for (int r = 0; r < 2; r++)
			for (int k = 0; k < T->ntokval; k++) {
				LLVMValueRef o = imul(I, iadd(I, imul(I, iadd(I, ln->g, ci32(I, 8 * r)), ci32(I, T->ntokval)), ci32(I, k)), ci32(I, 4));
				st->tok[r][k] = ld(I, I->f32, smem_ptr(I, iadd(I, tb, o)), 4);
			}
	} else if (T->ntokval > 0) {
		CHECK(ln->tok);
		for (int r = 0; r < 2; r++) {
			LLVMValueRef row = LLVMBuildSelect(I->b, st->valid[r], iadd(I, imul(I, ln->b, ln->L), st->t[r]), ci32(I, 0), "");
			LLVMValueRef base = imul(I, sext64(I, row), ci64(I, T->ntokval));
			for (int k = 0; k < T->ntokval; k++)
				st->tok[r][k] = ld(I, I->f32, gep_f32(I, ln->tok, iadd(I, base, ci64(I, k))), 4);
		}
	}
	/* projections run apart: their values, rounded to bf16 by proj_fwd
	 * (half the bytes of fp32 in every scan kernel that reads them), read
	 * from the segment where it stages them (SEG_PJ), else loaded here or a
	 * step ahead (pj_ahead_begin) */
	LLVMValueRef pj[MX_MAXPROJ][2][2];
	int staged = st->seg && (ln->seg_flags & SEG_PJ);
	CHECK(!(staged && ln->pja.on));
	if (ln->pja.on)
		pj_ahead_step(T, ln, st, pj);
	for (int j = 0; j < T->napj; j++) {
		int p = T->apj[j], sg = T->pj_sig[p];   /* sg: fp16 sigmoids (proj_pack), else bf16 */
		for (int r = 0; r < 2; r++) {
			LLVMValueRef *pr = pj[j][r];
			if (staged)
				xs_slots(T, ln, pj_staged_at(T, ln, st, j), iadd(I, ln->g, ci32(I, 8 * r)), pr);
			else if (!ln->pja.on)
				pj_load(T, ln, st, j, r, pr);
			for (int e = 0; e < 2; e++) {
				st->proj[r * 4 + 2 * e][p] = sg ? unpack_f16(I, pr[e], 0) : unpack_bf16_lo(I, pr[e]);
				st->proj[r * 4 + 2 * e + 1][p] = sg ? unpack_f16(I, pr[e], 1) : unpack_bf16_hi(I, pr[e]);
			}
		}
	}
	/* the slot's own x: pairs (c, c+1) are adjacent channels */
	for (int r = 0; r < 2; r++) {
		LLVMValueRef pr[2];
		if (st->xs)
			xs_slots(T, ln, st->xs, iadd(I, ln->g, ci32(I, 8 * r)), pr);
		else
			for (int nt = 0; nt < 2; nt++)
				pr[nt] = load_pair(T, ln->x, xidx(T, ln, st->t[r], ln->ch[2 * nt]), st->valid[r]);
		for (int nt = 0; nt < 2; nt++) {
			st->x[r * 4 + 2 * nt] = unpack_bf16_lo(I, pr[nt]);
			st->x[r * 4 + 2 * nt + 1] = unpack_bf16_hi(I, pr[nt]);
		}
	}
}

/* the gates of n consecutive steps from row offset i: each projection's
 * weight fragments are read once for all n (ldmatrix is not shared across
 * steps by the compiler where shared stores fall between them) */
void step_gates_n(Tmpl *T, Lanes *ln, Step st[], int n, LLVMValueRef gb, LLVMValueRef i, int need_proj)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	CHECK(n >= 1 && n <= 2);
	CHECK(!ln->pja.on || n == 1);   /* the loads ahead are one step's */
	for (int k = 0; k < n; k++)
		step_inputs(T, ln, &st[k], gb, iadd(I, i, ci32(I, k)));
	int fused = T->k.gates_inline || need_proj;
	/* an unfused kernel may still need the projections beside the loaded gates (kern_proj) */
	if ((fused || T->k.proj_inline) && T->nbdproj > 0) {
		/* A fragments of 16 rows x 64 input channels, four k-steps */
		/* every kernel that runs the projections stages x */
		LLVMValueRef A[2][4][4];
		for (int k = 0; k < n; k++) {
			CHECK(st[k].xs);
			/* one ldmatrix per k-step: matrix m = rows 8(m&1).., columns 16ks + 8(m>>1).. */
			LLVMValueRef ro = iadd(I, st[k].xs, xs_ldsm_at(I, ln, 0));
			for (int ks = 0; ks < 4; ks++)
				ldsm_x4(I, A[k][ks], ln->seg_flags & SEG_SWZ ? iadd(I, st[k].xs, xs_ldsm_at(I, ln, 2 * ks))
				                                             : iadd(I, ro, ci32(I, 32 * ks)), 0);
		}
		/* held fragments are halved where the kernel asks (gate_frags_hold,
		 * lanes_init): the biases too, and the projections are z / 2 */
		int half = T->k.gates_half && ln->wmat_smem < 0;
		for (int k = 0; k < n; k++)
			st[k].proj_half = half;
		for (int j = 0; j < T->nbdproj; j++) {
			LLVMValueRef wf[4][2][2];   /* [ks][nt][r] */
			for (int ks = 0; ks < 4; ks++)
				if (ln->wmat_smem >= 0)
					wmat_gate_frags(T, ln, j, ks, wf[ks]);
				else
					memcpy(wf[ks], ln->wfrag[j][ks], sizeof wf[ks]);
			LLVMValueRef b[4];   /* the halves: loop-invariant, hoisted */
			for (int c = 0; c < 4; c++)
				b[c] = half ? fmul(I, ln->bias[j][c], cf32(I, 0.5)) : ln->bias[j][c];
			for (int k = 0; k < n; k++)
				for (int nt = 0; nt < 2; nt++) {
					LLVMValueRef acc[4] = { b[2 * nt], b[2 * nt + 1], b[2 * nt], b[2 * nt + 1] };
					for (int ks = 0; ks < 4; ks++) {
						LLVMValueRef d[4];
						LLVMValueRef bfr[2] = { wf[ks][nt][0], wf[ks][nt][1] };
						mma_bf16(I, d, A[k][ks], bfr, acc);
						memcpy(acc, d, sizeof acc);
					}
					/* c0: (row g, ch 2q) c1: (g, 2q+1) c2: (g+8, 2q) c3: (g+8, 2q+1) */
					for (int e = 0; e < 4; e++) {
						int r = e >> 1, c = 2 * nt + (e & 1);
						st[k].proj[r * 4 + c][T->bdproj[j]] = acc[e];
					}
				}
		}
	}
	for (int k = 0; k < n; k++)
		step_marks(T, ln, &st[k]);
	for (int k = 0; k < n; k++)
		for (int s = 0; s < TM_SLOTS; s++) {
			Step *sp = &st[k];
			LLVMValueRef valid = sp->valid[slot_r(s)];
			if (fused) {
				LLVMValueRef pv[MX_MAXPARAM] = { 0 };
				EmitEnv env = slot_env(T, ln, sp, s, pv);
				LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
				CHECK(memo);
				sp->log_a[s] = emit_expr(I, &mx->g, T->e_log_a, &env, memo);
				sp->bb[s] = emit_expr(I, &mx->g, T->e_b, &env, memo);
				/* the exp m = sqrtb(1 - exp(2 log_a)) took: one ex2 */
				sp->a[s] = emit_exp(I, &mx->g, T->e_log_a, &env, memo);
				free(memo);
			} else {
				LLVMValueRef idx = LLVMBuildSelect(I->b, valid, slot_index(T, ln, sp, s), ci64(I, 0), "");
				sp->log_a[s] = ld(I, I->f32, gep_f32(I, ln->la_ws, idx), 4);
				sp->bb[s] = ld(I, I->f32, gep_f32(I, ln->b_ws, idx), 4);
				sp->a[s] = f_exp(I, sp->log_a[s]);
			}
			/* a reset cuts the carry (a*h_prev dropped); rows past L are identities */
			LLVMValueRef isfirst = step_isfirst(T, sp, s);
			LLVMValueRef ae = fsel(I, isfirst, cf32(I, 0.0), sp->a[s]);
			sp->a_eff[s] = fsel(I, valid, ae, cf32(I, 1.0));
			sp->b_eff[s] = fsel(I, valid, sp->bb[s], cf32(I, 0.0));
		}
	if (T->v->docs)   /* where a sequence starts from h0 */
		for (int k = 0; k < n; k++)
			docs_inject(T, ln, &st[k]);
}

void step_gates(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i, int need_proj)
{
	step_gates_n(T, ln, st, 1, gb, i, need_proj);
}

/* gy = dy * dy/dh, from the derived graph with seeds (0, 0, dy) */
LLVMValueRef eval_gy(Tmpl *T, Lanes *ln, Step *st_, int s, LLVMValueRef hnew, LLVMValueRef dy)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	LLVMValueRef pv[MX_MAXPARAM], seeds[3] = { cf32(I, 0.0), cf32(I, 0.0), dy };
	EmitEnv env = slot_env(T, ln, st_, s, pv);
	env.h = hnew;
	env.seed = seeds;
	LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
	CHECK(memo);
	LLVMValueRef v = emit_expr(I, &mx->g, T->g_h, &env, memo);
	free(memo);
	if (docs_states(T)) {   /* the adjoint of a sequence's final state joins at its end */
		if (!st_->dhT_in[0])   /* the step's first slot fetches all eight */
			docs_fetch(T, ln, st_, DOC_END, ln->dhT, st_->dhT_in);
		v = fadd(I, v, st_->dhT_in[s]);
	}
	return fsel(I, st_->valid[slot_r(s)], v, cf32(I, 0.0));
}
