/* Forward scan kernels.
 *
 *   gates   (unfused variants only) log_a and b of every element to memory
 *   reduce  per tile: the affine map h -> A h + B of its T steps, per channel
 *   apply   per tile: chunk starts from the tile's carry, then h and y for
 *           every step; writes h at every group start as the backward's
 *           checkpoint (one float per 16*chunk steps and channel)
 * The carry kernel (carry.c) turns the reduce output into tile carries.
 * With scan "lookback" apply runs alone (as fwd_scan): its first sweep's
 * tile map is published and the carry comes from the tiles before it
 * (lookback.c), so the forward is one launch and two sweeps instead of three.
 * Projections are recomputed in apply rather than stored: reading x twice
 * costs 2 bytes per element, storing gates would cost 8.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

/* x, params (+ materialised gates) and shape: what a gate step reads */
static void sig_inputs(Tmpl *T, KSig *s)
{
	ksig_add(T, s, "x", T->I.gptr);
	ksig_params(T, s);
	ksig_tok(T, s);
	if (!gates_inline(T)) {
		ksig_add(T, s, "ws:log_a", T->I.gptr);
		ksig_add(T, s, "ws:b", T->I.gptr);
	}
}

/* Phase 1 of reduce/apply: the quad's groups folded into chunk maps (kept
 * per group in ex[]) and group totals composed into the quad map q. */
static void quad_fold(Tmpl *T, Lanes *ln, LLVMValueRef qbase, Maps ex[], LLVMValueRef totA[][4],
                      LLVMValueRef totB[][4], Var qA[4], Var qB[4])
{
	Irb *I = &T->I;
	for (int c = 0; c < 4; c++) {
		qA[c] = var_init(I, cf32(I, 1.0), "qA");
		qB[c] = var_init(I, cf32(I, 0.0), "qB");
	}
	for (int j = 0; j < T->GQ; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->C));
		maps_init(T, &ex[j], "m");
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, T->C);
		Step st;
		step_gates(T, ln, &st, gb, i, 0);
		for (int s = 0; s < TM_SLOTS; s++)
			maps_push_fwd(T, &ex[j], s, st.a_eff[s], st.b_eff[s]);
		seg_loop_end(T, &Ls, &L);
		warp_scan_fwd(T, ln, &ex[j], totA[j], totB[j]);
		for (int c = 0; c < 4; c++) {
			LLVMValueRef A = var_get(I, qA[c]);
			var_set(I, qA[c], fmul(I, A, totA[j][c]));
			var_set(I, qB[c], fadd(I, fmul(I, var_get(I, qB[c]), totA[j][c]), totB[j][c]));
		}
	}
}


/* channel ch of the block's tile in a [B][NT][D] array (NT = nctaid.x) */
static LLVMValueRef tile_chan_index(Tmpl *T, Lanes *ln, LLVMValueRef ch)
{
	return tile_chan(T, ln, lane_tile(&T->I, ln), nctaid(&T->I, 0), ch);
}

static LLVMValueRef quad_base(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	LLVMValueRef tb = imul(I, lane_tile(I, ln), ci32(I, T->C * T->P));
	return iadd(I, tb, imul(I, ln->quad, ci32(I, T->GQ * 16 * T->C)));
}

/* apply keeps every group's chunk maps live: with four groups per quad a
 * shorter segment leaves registers for them */
static int apply_seg(Tmpl *T) { return T->GQ >= 4 && seg_len(T) > 4 ? 4 : seg_len(T); }

static char *smem_quads(Tmpl *T, char *buf, size_t n)
{
	snprintf(buf, n, "%d", quad_smem(T, SEG_X));
	return buf;
}

void tmpl_fwd_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	Launch *l = tmpl_launch(T, 1, "fwd_reduce", "NT", "H", "B", 128 * T->TW, smem_quads(T, sm, sizeof sm));
	l->minblocks = reduce_minblocks(T);
	sig_inputs(T, &l->sig);
	ksig_add(T, &l->sig, "ws:aggA", I->gptr);
	ksig_add(T, &l->sig, "ws:aggB", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, seg_len(T), SEG_X);
	Maps ex[4];
	LLVMValueRef tA[4][4], tB[4][4];
	Var qA[4], qB[4];
	quad_fold(T, &ln, quad_base(T, &ln), ex, tA, tB, qA, qB);
	quad_publish(T, &ln, qA, qB);
	/* threads 0..63 compose the quads of their channel in time order */
	IfBlk f;
	if_begin(I, &f, ilt(I, ln.tid, ci32(I, 64)), "tile");
	LLVMValueRef A, B;
	quads_tile_map(T, ln.tid, &A, &B);
	LLVMValueRef idx = tile_chan_index(T, &ln, ln.tid);
	st(I, A, gep_f32(I, ksig_arg(T, &l->sig, "ws:aggA"), idx), 4);
	st(I, B, gep_f32(I, ksig_arg(T, &l->sig, "ws:aggB"), idx), 4);
	if_end(I, &f);
	irb_ret(I);
}

void tmpl_fwd_apply(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	int lb = T->v->lookback;
	int lbo = quad_smem(T, SEG_X);      /* look-back's ticket and carries after the quads' memory */
	char sm[32];
	snprintf(sm, sizeof sm, "%d", lbo + (lb ? LB_SMEM : 0));
	Launch *l = tmpl_launch(T, 1, lb ? "fwd_scan" : "fwd_apply", "NT", "H", "B", 128 * T->TW, sm);
	l->minblocks = T->GQ == 1 ? 2 : 1;   /* more groups keep more chunk maps live: 128 registers spill */
	sig_inputs(T, &l->sig);
	ksig_add(T, &l->sig, "y", I->gptr);
	if (lb) {
		ksig_add(T, &l->sig, "ws:ticket", I->gptr);
		ksig_add(T, &l->sig, "ws:aggA", I->gptr);
		ksig_add(T, &l->sig, "ws:aggB", I->gptr);
		ksig_add(T, &l->sig, "ws:hend", I->gptr);
	} else {
		ksig_add(T, &l->sig, "ws:carry", I->gptr);
	}
	ksig_add(T, &l->sig, "ws:ckpt", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	if (lb)
		lb_ticket(T, ksig_arg(T, &l->sig, "ws:ticket"), lbo);
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, apply_seg(T), SEG_X);
	memset(T->lb_thb, 0, sizeof T->lb_thb);
	Maps ex[4];
	LLVMValueRef tA[4][4], tB[4][4];
	Var qA[4], qB[4];
	LLVMValueRef qbase = quad_base(T, &ln);
	quad_fold(T, &ln, qbase, ex, tA, tB, qA, qB);
	quad_publish(T, &ln, qA, qB);
	if (lb)
		lb_carry(T, &ln, &l->sig, lbo);
	/* the quad's start: the tile carry through the earlier quads */
	LLVMValueRef ckpt = ksig_arg(T, &l->sig, "ws:ckpt");
	Var hg[4];
	for (int c = 0; c < 4; c++) {
		LLVMValueRef h = lb ? ld(I, I->f32, smem_ptr(I, iadd(I, ci32(I, lb_carry_at(lbo)), imul(I, ln.ch[c], ci32(I, 4)))), 4)
		                    : ld(I, I->f32, gep_f32(I, ksig_arg(T, &l->sig, "ws:carry"), tile_chan_index(T, &ln, ln.ch[c])), 4);
		for (int qd = 0; qd < T->TW - 1; qd++) {
			LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ln.ch[c]), ci32(I, 8));
			LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
			LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
			LLVMValueRef nh = fadd(I, fmul(I, a, h), b);
			h = fsel(I, ilt(I, ci32(I, qd), ln.quad), nh, h);
		}
		hg[c] = var_init(I, h, "hg");
	}
	LLVMValueRef ytmp[TM_SLOTS];
	for (int j = 0; j < T->GQ; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->C));
		/* checkpoint: h at the group start, for the backward */
		IfBlk f;
		if_begin(I, &f, land(I, ieq(I, ln.g, ci32(I, 0)), ilt(I, gb, ln.L)), "ckpt");
		LLVMValueRef gi = idiv(I, gb, ci32(I, 16 * T->C));
		LLVMValueRef ng = idiv(I, iadd(I, ln.L, ci32(I, 16 * T->C - 1)), ci32(I, 16 * T->C));
		for (int c = 0; c < 4; c++) {
			st(I, var_get(I, hg[c]), gep_f32(I, ckpt, tile_chan(T, &ln, gi, ng, ln.ch[c])), 4);
		}
		if_end(I, &f);
		Var h[TM_SLOTS];
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef hgc = var_get(I, hg[slot_c(s)]);
			h[s] = var_init(I, fadd(I, fmul(I, var_get(I, ex[j].A[s]), hgc), var_get(I, ex[j].B[s])), "h");
		}
		Loop Ls, L;
		/* one group of one segment per quad: phase 1's staging still holds it */
		ln.seg_keep = T->GQ == 1 && T->C == ln.seg_n;
		LLVMValueRef i = seg_loop_begin(T, &ln, &Ls, &L, gb, T->C);
		Step stp;
		step_gates(T, &ln, &stp, gb, i, 0);
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef hn = fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]);
			var_set(I, h[s], hn);
			LLVMValueRef pv[MX_MAXPARAM] = { 0 };
			EmitEnv env = slot_env(T, &ln, &stp, s, pv);
			env.h = hn;
			LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
			CHECK(memo);
			ytmp[s] = emit_expr(I, &mx->g, T->e_y, &env, memo);
			free(memo);
		}
		store_slots(T, &ln, &stp, ln.y, ytmp, NULL);
		seg_loop_end(T, &Ls, &L);
		for (int c = 0; c < 4; c++) {
			LLVMValueRef hgc = var_get(I, hg[c]);
			var_set(I, hg[c], fadd(I, fmul(I, tA[j][c], hgc), tB[j][c]));
		}
	}
	irb_ret(I);
}

void tmpl_fwd_gates(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	snprintf(sm, sizeof sm, "%d", T->TW * seg_bytes(T, seg_len(T), SEG_X));
	Launch *l = tmpl_launch(T, 1, "fwd_gates", "NT", "H", "B", 128 * T->TW, sm);
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_params(T, &l->sig);
	ksig_tok(T, &l->sig);
	ksig_add(T, &l->sig, "ws:log_a", I->gptr);
	ksig_add(T, &l->sig, "ws:b", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	Lanes ln;
	lanes_init(T, &ln, &l->sig, 1);
	seg_enable(T, &ln, 0, seg_len(T), SEG_X);
	LLVMValueRef la = ln.la_ws, bw = ln.b_ws;
	ln.la_ws = ln.b_ws = NULL;
	LLVMValueRef qbase = quad_base(T, &ln);
	for (int j = 0; j < T->GQ; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->C));
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, &ln, &Ls, &L, gb, T->C);
		Step stp;
		/* need_proj forces the fused path: this kernel is where gates are made */
		step_gates(T, &ln, &stp, gb, i, 1);
		for (int s = 0; s < TM_SLOTS; s++) {
			IfBlk f;
			if_begin(I, &f, stp.valid[slot_r(s)], "st");
			LLVMValueRef idx = slot_index(T, &ln, &stp, s);
			st(I, stp.log_a[s], gep_f32(I, la, idx), 4);
			st(I, stp.bb[s], gep_f32(I, bw, idx), 4);
			if_end(I, &f);
		}
		seg_loop_end(T, &Ls, &L);
	}
	irb_ret(I);
}
