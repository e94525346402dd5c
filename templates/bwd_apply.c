/* bwd_apply, and the backward scan as a whole.
 *
 * The adjoint of h[t] = a[t] h[t-1] + b[t] obeys dh[t] = gy[t] + u[t+1] with
 * the message u[t] = a[t] dh[t] = a[t] (gy[t] + u[t+1]), gy = dy * dy/dh: a
 * linear recurrence in reverse time whose per-step maps u -> a (g + u) are
 * local to t, so the forward machinery runs on them unchanged:
 *   reduce  per tile: the composed adjoint map of its T steps
 *   (carry) per channel: the message entering each tile from the right
 *   apply   per tile, groups in reverse: chunk starts h (from the forward's
 *           group checkpoints) and chunk-end messages u, then per chunk,
 *           segment by segment from the end: h before each step (the
 *           last segments apply pass A's per-step maps to the chunk's
 *           start; the others recompute h forward into shared memory from
 *           the map pass A kept at their boundary, or by sweeping the
 *           gates from the chunk start where no map fits), walk the
 *           segment backward, evaluate the derived adjoint expressions,
 *           project them back to dx on tensor cores, and once per segment
 *           accumulate the weight gradient x^T dproj on tensor cores.
 * With scan "onepass" apply runs alone, one group per trip: the message
 * entering a group comes from the groups' maps its pass A publishes
 * (lb_bwd_carry), and no reduce pass sweeps x and dy.
 * Parameter gradients leave each block as fp32 partials in a fixed slot
 * (a block's groups are fixed by its index in both plans); param_reduce
 * sums them in a fixed order, so every run gives the same bits.
 */
#include "bwd.h"

/* Projections apart: dx's own term and each projection's adjoint, in bf16
 * (the adjoints as the mma takes them; dx's own term rounded once more
 * before proj_dx adds the adjoints' part), a row's four adjacent channels
 * per store; proj_dx and proj_dw take them from there */
static void apart_store(Bwd *bw, Step *stp, LLVMValueRef gx[TM_SLOTS], LLVMValueRef gp[TM_SLOTS][MX_MAXPROJ])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	CHECK(T->k.slots_adjacent);
	LLVMValueRef dxd = ksig_arg(T, bw->sig, "ws:dxd");
	for (int r = 0; r < 2; r++) {
		IfBlk f;
		if_begin(I, &f, stp->valid[r], "apart_st");
		LLVMValueRef at = slot_index(T, ln, stp, r * 4);
		LLVMValueRef v = LLVMGetUndef(I->v2i32);
		for (int e = 0; e < 2; e++)
			v = LLVMBuildInsertElement(I->b, v, pack_bf16x2(I, gx[r * 4 + 2 * e], gx[r * 4 + 2 * e + 1]),
			                           ci32(I, e), "");
		st(I, v, gep_bf16(I, dxd, at), 8);
		char a[64];
		for (int j = 0; j < T->napj; j++) {
			snprintf(a, sizeof a, "ws:dproj_%s", apj_weight(T, j));
			LLVMValueRef w = LLVMGetUndef(I->v2i32);
			for (int e = 0; e < 2; e++)
				w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, gp[r * 4 + 2 * e][j], gp[r * 4 + 2 * e + 1][j]),
				                           ci32(I, e), "");
			st(I, w, gep_bf16(I, ksig_arg(T, bw->sig, a), at), 8);
		}
		if_end(I, &f);
	}
}

/* one backward step at row offset i of the group: gradients of the 8 slots,
 * dx through the transposed projection, dW accumulation */
static void bwd_step(Bwd *bw, LLVMValueRef i, LLVMValueRef si, Var u[TM_SLOTS])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	Mixer *mx = (Mixer *)T->mx;
	Step stp;
	step_gates(T, ln, &stp, bw->gb, i, 1);
	LLVMValueRef dy[TM_SLOTS];
	load_dy(T, ln, &stp, dy);
	LLVMValueRef gx[TM_SLOTS], gp[TM_SLOTS][MX_MAXPROJ], gz[TM_SLOTS][TM_MAXZ];
	LLVMValueRef hps[TM_SLOTS];
	if (bw->hm)
		hmap_hprev(bw, i, hps);
	/* docs: where a sequence starts from h0, h before it is h0[doc] (read
	 * inside a branch a row: docs.c), and its adjoint leaves there:
	 * dh0[doc] = a dh */
	int docs = docs_states(T);
	LLVMValueRef h0in[TM_SLOTS], dh0out[TM_SLOTS];
	if (docs)
		docs_fetch(T, ln, &stp, DOC_START, ln->h0, h0in);
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef valid = stp.valid[slot_r(s)];
		LLVMValueRef hp;
		if (bw->hm) {
			hp = hps[s];
		} else {
			hp = ld(I, I->f32, smem_ptr(I, hprev_at(bw, si, s)), 4);
		}
		if (docs)
			hp = fsel(I, docs_start(T, &stp, s), h0in[s], hp);
		LLVMValueRef hn = fadd(I, fmul(I, stp.a_eff[s], hp), stp.b_eff[s]);
		LLVMValueRef gy = eval_gy(T, ln, &stp, s, hn, dy[s]);
		LLVMValueRef dh = fadd(I, gy, var_get(I, u[s]));
		var_set(I, u[s], fmul(I, stp.a_eff[s], dh));
		if (docs)
			dh0out[s] = fmul(I, stp.a[s], dh);
		LLVMValueRef keep = land(I, valid, LLVMBuildNot(I->b, step_isfirst(T, &stp, s), ""));
		LLVMValueRef s0 = fsel(I, keep, fmul(I, fmul(I, dh, stp.a[s]), hp), cf32(I, 0.0));
		LLVMValueRef s1 = fsel(I, valid, dh, cf32(I, 0.0));
		LLVMValueRef s2 = fsel(I, valid, dy[s], cf32(I, 0.0));
		LLVMValueRef pv[MX_MAXPARAM], seeds[3] = { s0, s1, s2 };
		EmitEnv env = slot_env(T, ln, &stp, s, pv);
		env.h = hn;
		env.seed = seeds;
		LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
		CHECK(memo);
		LLVMValueRef zero = cf32(I, 0.0);
		gx[s] = fsel(I, valid, emit_expr(I, &mx->g, T->g_x, &env, memo), zero);
		for (int k = 0; k < T->ntokval; k++)
			gz[s][k] = fsel(I, valid, emit_expr(I, &mx->g, T->g_tok[k], &env, memo), zero);
		for (int j = 0; j < bd_count(T); j++)   /* apart: the adjoints go to memory (apart_store) */
			gp[s][j] = fsel(I, valid, emit_expr(I, &mx->g, T->g_proj[bd_proj(T, j)], &env, memo), zero);
		for (int p = 0; p < mx->nparam; p++) {
			LLVMValueRef v = NULL;
			/* a gradient the element stage never produces keeps no accumulator
			 * (x + 0.0 is not x for x = -0, so the compiler would keep it) */
			const ExNode *gn = &mx->g.n[T->g_param[p]];
			int nil = gn->op == EX_CONST && gn->k == 0.0;
			if ((bw->pm->cidx[p] >= 0 || bw->pm->sidx[p] >= 0) && !nil)
				v = fsel(I, valid, emit_expr(I, &mx->g, T->g_param[p], &env, memo), zero);
			for (int j = 0; j < bd_count(T); j++)   /* a projection's bias collects its adjoint */
				if (mx->proj[bd_proj(T, j)].bias == p)
					v = v ? fadd(I, v, gp[s][j]) : gp[s][j];
			if (!v)
				continue;
			if (bw->pm->cidx[p] >= 0)
				var_set(I, bw->cacc[p][slot_c(s)], fadd(I, var_get(I, bw->cacc[p][slot_c(s)]), v));
			else if (bw->pm->sidx[p] >= 0)
				var_set(I, bw->sacc[p], fadd(I, var_get(I, bw->sacc[p]), v));
		}
		free(memo);
	}
	if (docs)
		docs_put(T, ln, &stp, DOC_START, ln->dh0, dh0out);
	if (T->ntokval > 0)
		tok_partials(bw, &stp, si, gz);
	if (T->napj) {
		apart_store(bw, &stp, gx, gp);
		return;
	}
	if (T->nbdproj == 0) {
		/* no projection: dx here is the direct term; a token stage adds its
		 * term in tok_dx once the adjoints are summed over every channel */
		store_slots(T, ln, &stp, ln->dx, gx, NULL);
		return;
	}
	/* dproj to this step's buffer (bf16, [16 t][16 j] per warp): dx needs
	 * every warp's, the segment's dW pass (dw_segment) this warp's own */
	for (int j = 0; j < T->nbdproj; j++)
		for (int r = 0; r < 2; r++)
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef t = iadd(I, ln->g, ci32(I, 8 * r));
				LLVMValueRef off = iadd(I, dpa_at(bw, si, j, ln->w, t, ci32(I, nt)), imul(I, ln->q, ci32(I, 4)));
				st(I, pack_bf16x2(I, gp[r * 4 + 2 * nt][j], gp[r * 4 + 2 * nt + 1][j]), smem_ptr(I, off), 4);
			}
	bar_sync(I);
	/* dx[t, k] = sum_j dproj[t, j] W[k][j] for the warp's own 16 k: A = dproj of
	 * every warp (K = j, 4 k-steps, one per warp's buffer), B = W^T */
	LLVMValueRef acc[2][4];
	for (int nt = 0; nt < 2; nt++)
		for (int e = 0; e < 4; e++)
			acc[nt][e] = cf32(I, 0.0);
	LLVMValueRef mt, mh;
	ldsm_lane(I, ln, 0, &mt, &mh);
	for (int j = 0; j < T->nbdproj; j++)
		for (int ks = 0; ks < 4; ks++) {
			/* a0..a3 = (t 0-7, j 0-7), (t 8-15, j 0-7), (t 0-7, j 8-15), (t 8-15, j 8-15) */
			LLVMValueRef A[4], bfr[2][2];
			ldsm_x4(I, A, dpa_at(bw, si, j, ci32(I, ks), mt, mh), 0);
			if (bw->wdx)
				memcpy(bfr, bw->wdx[j][ks], sizeof bfr);
			else
				wmat_dx_frags(T, ln, j, ks, bfr);
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef d[4];
				mma_bf16(I, d, A, bfr[nt], acc[nt]);
				memcpy(acc[nt], d, sizeof d);
			}
		}
	store_slots(T, ln, &stp, ln->dx, gx, acc);
}

/* the message at slot s's row end: the chunks after it, then uR */
static LLVMValueRef ue_at(Bwd *bw, Maps *rm, Var uR[4], int s)
{
	Irb *I = &bw->T->I;
	return fadd(I, fmul(I, var_get(I, rm->A[s]), var_get(I, uR[slot_c(s)])), var_get(I, rm->B[s]));
}

/* Pass A: one sweep of the chunk forward, folding the chunk maps forward
 * (for h) into fm and backward (for u) into rm; where later segments take
 * h from maps, the map of the chunk's steps so far is kept per step
 * (hmap_store) and at segment boundaries (bmap). */
static void pass_a(Bwd *bw, Maps *fm, Maps *rm)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	LLVMValueRef gb = bw->gb;
	int wsave = gate_frags_hold(T, ln);
	pj_ahead_begin(T, ln, gb, ci32(I, 0), 1);
	Loop Ls, L;
	LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, T->chunk);
	L.unroll = 0;
	Step stp;
	step_gates(T, ln, &stp, gb, i, 0);
	LLVMValueRef dy[TM_SLOTS];
	load_dy(T, ln, &stp, dy);
	for (int s = 0; s < TM_SLOTS; s++) {
		maps_push_fwd(T, fm, s, stp.a_eff[s], stp.b_eff[s]);
		maps_push_bwd(T, rm, s, stp.a_eff[s], eval_gy(T, ln, &stp, s, cf32(I, 0.0), dy[s]));
	}
	if (bw->sm.nh > 0) {
		/* the map of steps 0 .. i: h before step i + 1 */
		IfBlk f;
		if_begin(I, &f, land(I, ilt(I, i, ci32(I, T->chunk - 1)), LLVMBuildICmp(I->b, LLVMIntSGE, i, ci32(I, bw->sm.hm0), "")), "hmap");
		hmap_store(bw, isub(I, i, ci32(I, bw->sm.hm0)), fm);
		if_end(I, &f);
	}
	loop_end(I, &L);
	if (bw->sm.nbm > 0) {
		/* the chunk's map so far, at every segment end but the last */
		LLVMValueRef k = idiv(I, loop_i(I, &Ls), ci32(I, T->seg));
		IfBlk f;
		if_begin(I, &f, ilt(I, k, ci32(I, bw->sm.nbm)), "bmap");
		for (int s = 0; s < TM_SLOTS; s++) {
			st(I, var_get(I, fm->A[s]), smem_ptr(I, bmap_at(bw, k, s, 0)), 4);
			st(I, var_get(I, fm->B[s]), smem_ptr(I, bmap_at(bw, k, s, 1)), 4);
		}
		if_end(I, &f);
	}
	loop_end(I, &Ls);
	pj_ahead_end(ln);
	ln->wmat_smem = wsave;
}

/* h at the start of segment sg (step s0 > 0) of a chunk that does not read
 * it from pass A's per-step maps: pass A's map at the boundary before it
 * applied to the chunk's start, or, where no such map fits, a sweep of
 * the gates from the chunk's start */
static void seg_h_start(Bwd *bw, int sg, Var h[TM_SLOTS])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	int s0 = sg * T->seg;
	if (bw->sm.nbm > 0) {
		LLVMValueRef k = ci32(I, sg - 1);   /* the boundary before this segment */
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef A = ld(I, I->f32, smem_ptr(I, bmap_at(bw, k, s, 0)), 4);
			LLVMValueRef B = ld(I, I->f32, smem_ptr(I, bmap_at(bw, k, s, 1)), 4);
			var_set(I, h[s], fadd(I, fmul(I, A, var_get(I, bw->h0[s])), B));
		}
		return;
	}
	int was = gate_frags_hold(T, ln);
	pj_ahead_begin(T, ln, bw->gb, ci32(I, 0), 1);
	Loop Ls, L;
	LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, bw->gb, s0);
	L.unroll = 0;
	Step stp;
	step_gates(T, ln, &stp, bw->gb, i, 0);
	for (int s = 0; s < TM_SLOTS; s++)
		var_set(I, h[s], fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]));
	seg_loop_end(T, &Ls, &L);
	pj_ahead_end(ln);
	ln->wmat_smem = was;
}

/* h before each of the segment's steps into the hprev region, sweeping its
 * gates forward from h at its start */
static void seg_h_store(Bwd *bw, int s0, Var h[TM_SLOTS])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	int was = gate_frags_hold(T, ln);
	pj_ahead_begin(T, ln, bw->gb, ci32(I, s0), 1);
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, T->seg), ci32(I, 1), "si");
	LLVMValueRef si = loop_i(I, &L);
	Step stp;
	step_gates(T, ln, &stp, bw->gb, iadd(I, si, ci32(I, s0)), 0);
	for (int s = 0; s < TM_SLOTS; s++) {
		st(I, var_get(I, h[s]), smem_ptr(I, hprev_at(bw, si, s)), 4);
		var_set(I, h[s], fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]));
	}
	loop_end(I, &L);
	pj_ahead_end(ln);
	ln->wmat_smem = was;
}

/* the reverse sweep holds the gates' fragments too (seg_reverse) */
static int reverse_holds(const Tmpl *T) { return T->nbdproj > 0 && T->chunk <= 8; }

/* The segment's steps from its end (bwd_step), the messages ue carried
 * through them. The weights' fragments are held in registers over every
 * gate sweep (gate_frags_hold): re-read by every warp at every step, they
 * were most of this kernel's shared-memory wavefronts. Over the reverse
 * sweep, with dx's as well (32 registers more for RG-LRU), at chunk 8
 * only: from chunk 16 on ptxas 13.0 spills 8-240 bytes with them held
 * there (24-72 with the gates' alone). */
static void seg_reverse(Bwd *bw, int s0, Var ue[TM_SLOTS])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	LLVMValueRef wdx[MX_MAXPROJ][4][2][2];
	int wsave = ln->wmat_smem;
	if (reverse_holds(T)) {
		for (int j = 0; j < T->nbdproj; j++)
			for (int ks = 0; ks < 4; ks++)
				wmat_dx_frags(T, ln, j, ks, wdx[j][ks]);
		bw->wdx = wdx;
		wsave = gate_frags_hold(T, ln);
	}
	/* where not staged (Ampere, Ada), the projections a step ahead, but in
	 * the one-pass backward, whose look-back state left no registers for
	 * them under sm_90's former three-block cap (168 with them, 8-16 bytes
	 * spilled) */
	if (!T->v->onepass)
		pj_ahead_begin(T, ln, bw->gb, ci32(I, s0 + T->seg - 1), -1);
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, T->seg), ci32(I, 1), "ri");
	LLVMValueRef si = isub(I, ci32(I, T->seg - 1), loop_i(I, &L));
	bwd_step(bw, iadd(I, si, ci32(I, s0)), si, ue);
	loop_end(I, &L);
	pj_ahead_end(ln);
	bw->wdx = NULL;
	ln->wmat_smem = wsave;
}

/* One group of the tile (16 rows of `chunk` steps from token bw->gb): pass
 * A, the rows' starting h and ending messages, then the segments from the
 * end; uR, the message entering the group from the right, leaves as the
 * one entering the group before it. */
static void bwd_group(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG, Var uR[4])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	LLVMValueRef gb = bw->gb;
	int onepass = T->v->onepass;
	LLVMValueRef gi = idiv(I, gb, ci32(I, 16 * T->chunk));
	LLVMValueRef hg[4];
	for (int c = 0; c < 4; c++)
		hg[c] = ld(I, I->f32, gep_f32(I, ckpt, tile_chan(T, ln, gi, NG, ln->ch[c])), 4);
	Maps fm, rm;
	maps_init(T, &fm, "f");
	maps_init(T, &rm, "r");
	pass_a(bw, &fm, &rm);
	LLVMValueRef fA[4], fB[4], rA[4], rB[4];
	warp_scan_fwd(T, ln, &fm, fA, fB);
	warp_scan_bwd(T, ln, &rm, rA, rB);
	/* the rows' ending messages; in a one-pass backward, once the first
	 * reverse step needs them: the other blocks' maps have had the time of
	 * h and the segment's staging to arrive */
	Var h0[TM_SLOTS], ue[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		h0[s] = var_init(I, fadd(I, fmul(I, var_get(I, fm.A[s]), hg[slot_c(s)]), var_get(I, fm.B[s])), "h0");
		ue[s] = onepass ? var_new(I, I->f32, "ue") : var_init(I, ue_at(bw, &rm, uR, s), "ue");
	}
	if (onepass)
		lb_bwd_publish(T, ln, bw->sig, gi, NG, rA, rB);
	if (tok_tail_mid(T)) {
		/* the token stage of the block's previous group (tok_tail.c), while
		 * the blocks before this one finish their pass A: the heads have had
		 * a trip and a pass A to publish their partials, and a block that
		 * would wait for the others' maps works instead (at the start of the
		 * trip, where every block waits on the slowest head, the tail cost
		 * chunk 8 0.23 ms at 1x131072x1024 against 0.10 here; for the group
		 * two trips back, whose rows have left L2, 0.14) */
		tok_tail_at(bw, NG, prev_group(bw, gb));
	}
	/* segments of `seg` steps from the end of the chunk */
	bw->h0 = h0;
	Var h[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++)
		h[s] = var_new(I, I->f32, "h");
	int nseg = T->chunk / T->seg;
	for (int sg = nseg - 1; sg >= 0; sg--) {
		int s0 = sg * T->seg;
		bw->hm = sg >= nseg - bw->sm.nh;
		for (int s = 0; s < TM_SLOTS; s++)
			var_set(I, h[s], var_get(I, h0[s]));
		/* (a segment that reads pass A's maps needs no h here) */
		if (!bw->hm && s0 > 0)
			seg_h_start(bw, sg, h);
		/* the segment's own steps, staged once for both of its sweeps; a
		 * chunk of one segment is still staged from pass A */
		if (T->chunk == ln->seg_n)
			ln->seg_i0 = ci32(I, 0);
		else
			seg_stage(T, ln, gb, ci32(I, s0));
		if (!bw->hm)
			seg_h_store(bw, s0, h);
		if (onepass && sg == nseg - 1) {
			lb_bwd_carry(T, ln, bw->sig, gi, NG, uR);
			for (int s = 0; s < TM_SLOTS; s++)
				var_set(I, ue[s], ue_at(bw, &rm, uR, s));
		}
		seg_reverse(bw, s0, ue);
		if (T->nbdproj > 0)
			dw_segment(bw, s0);
		if (T->ntokval > 0)
			tok_flush(bw, s0);
	}
	for (int c = 0; c < 4; c++)
		var_set(I, uR[c], fadd(I, fmul(I, rA[c], var_get(I, uR[c])), rB[c]));
}

struct GroupArg {
	Bwd *bw;
	LLVMValueRef ckpt, NG;
	Var *uR;
};

static void bwd_group_body(void *arg)
{
	struct GroupArg *a = arg;
	bwd_group(a->bw, a->ckpt, a->NG, a->uR);
}

/* a group inside the sequence has every step valid: its own copy of the
 * code, with the validity selects folded away (a sixth of the reverse
 * step's instructions). Chunks of 64 at prefix 64 and 128 already hold 255
 * registers, and with the copy ptxas spills: they keep one. */
static void bwd_group_split(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG, Var uR[4])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	struct GroupArg ga = { bw, ckpt, NG, uR };
	LLVMValueRef in = NULL;
	if (T->chunk <= 32 || T->quad_groups == 1)
		in = LLVMBuildICmp(I->b, LLVMIntSLE, iadd(I, bw->gb, ci32(I, 16 * T->chunk)), bw->ln->L, "");
	/* three copies: groups without reset marks (a docs variant's: without
	 * a start or an end) run the plain step, the marks' selects off its
	 * chain; groups with them a full copy of their own (H100, 64 documents'
	 * starts marked in 131072 tokens: RG-LRU 1.206-1.208 -> 1.169-1.172 ms,
	 * SAMU 0.815-0.819 -> 0.790; with a document's state each, 1.294-1.296
	 * -> 1.270-1.278 and 0.894-0.899 -> 0.869-0.872). Not at chunks
	 * over 8 or prefix 64, where RG-LRU's copies at 255 registers spill 16
	 * to 136 bytes. */
	emit_split_docs(T, bw->ln, in, bw->gb, 16 * T->chunk, T->chunk <= 8 && T->prefix <= 32, bwd_group_body, &ga);
}

/* hierarchical: the block's tiles (stride G), each from the message the
 * carry pass left at its end, its groups from the last to the first */
static void bwd_groups_tiles(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG, LLVMValueRef NT, LLVMValueRef ucarry)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Loop Lt;
	loop_begin(I, &Lt, ctaid(I, 0), NT, nctaid(I, 0), "tile");
	LLVMValueRef tile = loop_i(I, &Lt);
	Var uR[4];
	for (int c = 0; c < 4; c++)
		uR[c] = var_init(I, ld(I, I->f32, gep_f32(I, ucarry, tile_chan(T, bw->ln, tile, NT, bw->ln->ch[c])), 4), "uR");
	Loop Lg;
	int ngroups = T->prefix / 16;
	loop_begin(I, &Lg, ci32(I, 0), ci32(I, ngroups), ci32(I, 1), "grp");
	LLVMValueRef jg = isub(I, ci32(I, ngroups - 1), loop_i(I, &Lg));
	bw->gb = iadd(I, imul(I, tile, ci32(I, T->chunk * T->prefix)), imul(I, jg, ci32(I, 16 * T->chunk)));
	IfBlk live;
	if_begin(I, &live, ilt(I, bw->gb, bw->ln->L), "live");
	bwd_group_split(bw, ckpt, NG, uR);
	if_end(I, &live);
	loop_end(I, &Lg);
	loop_end(I, &Lt);
}

/* one-pass: one group per trip from the sequence's end, block k of G
 * taking groups NG - 1 - k - G i, the message entering each from the
 * look-back (lb_bwd_carry) */
static void bwd_groups_onepass(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	/* the window covers the groups of at most ONEPASS_MAXG blocks: a larger
	 * grid would fold too few maps, so it fails loudly */
	IfBlk big;
	if_begin(I, &big, ilt(I, ci32(I, ONEPASS_MAXG), nctaid(I, 0)), "lb_big");
	irb_trap(I);
	if_end(I, &big);
	/* every block's first group takes, through the look-back, the maps of
	 * all the groups after it, applied to what enters from beyond the end:
	 * dhT where the caller gives it (states variants), else 0 */
	Lanes *ln = bw->ln;
	LLVMValueRef dhT = T->v->states ? ksig_arg(T, bw->sig, "state:dhT") : NULL;
	LLVMValueRef sidx[4] = { NULL };
	Var uR[4];
	for (int c = 0; c < 4; c++) {
		if (dhT)
			sidx[c] = iadd(I, imul(I, sext64(I, ln->b), sext64(I, ln->D)),
			               sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), ln->ch[c])));
		uR[c] = var_init(I, dhT ? state_load(I, dhT, sidx[c], LLVMConstInt(I->i1, 1, 0)) : cf32(I, 0.0), "uR");
	}
	Var last = var_init(I, ci32(I, 0), "last_gb");
	Loop Lg;
	loop_begin(I, &Lg, ctaid(I, 0), NG, nctaid(I, 0), "grp");
	bw->gb = imul(I, isub(I, isub(I, NG, ci32(I, 1)), loop_i(I, &Lg)), ci32(I, 16 * T->chunk));
	var_set(I, last, bw->gb);
	if (tok_fused(T) && !tok_tail_mid(T)) {
		/* the previous group's token stage at the start of the trip */
		tok_tail_at(bw, NG, prev_group(bw, bw->gb));
	}
	bwd_group_split(bw, ckpt, NG, uR);
	if (dhT)   /* what leaves group 0 to the left is dh0 = a[0] dh[0] */
		for (int c = 0; c < 4; c++)
			state_store(I, ksig_arg(T, bw->sig, "state:dh0"), sidx[c],
			            land(I, ieq(I, bw->gb, ci32(I, 0)), ieq(I, ln->g, ci32(I, 0))), var_get(I, uR[c]));
	loop_end(I, &Lg);
	/* the block's last group: the trip after it never comes. Every block
	 * has one (G <= NG), so tok_tail_at's test holds here */
	if (tok_fused(T))
		tok_tail_at(bw, NG, var_get(I, last));
}

/* bwd_apply's launch: a block per (group range, head, sequence), in
 * clusters where there are weight gradients, all resident in a one-pass
 * backward (its blocks wait on each other); its signature */
static Launch *bwd_apply_launch(Tmpl *T, int smem)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	int onepass = T->v->onepass;
	char sm[32];
	snprintf(sm, sizeof sm, "%d", smem);
	Launch *l = tmpl_launch(T, 0, "bwd_apply", "G", scan_h(T), "B", 128, sm);
	if (T->nbdproj)   /* the gates, dx through W^T, dW = x^T dproj */
		launch_flops(l, 3 * proj_flops(T));
	l->minblocks = 1;
	l->resident = onepass;
	if (T->nbdproj > 0 && !T->portable)
		snprintf(l->cluster, sizeof l->cluster, "CS");
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dy", I->gptr);
	if (!T->napj)
		ksig_add(T, &l->sig, "dx", I->gptr);
	ksig_params(T, &l->sig);
	ksig_tok(T, &l->sig);
	if (T->ntokval > 0)
		ksig_add(T, &l->sig, "ws:dtokp", I->gptr);
	if (tok_fused(T)) {
		ksig_add(T, &l->sig, "ws:tproj", I->gptr);
		ksig_add(T, &l->sig, "ws:part_tchan", I->gptr);
	}
	ksig_add(T, &l->sig, "ws:ckpt", I->gptr);
	if (onepass) {
		ksig_add(T, &l->sig, "ws:baggA", I->gptr);
		ksig_add(T, &l->sig, "ws:baggB", I->gptr);
		if (T->v->states) {   /* the message entering the sequence's end, and the one leaving its start */
			ksig_add(T, &l->sig, "state:dhT", I->gptr);
			ksig_add(T, &l->sig, "state:dh0", I->gptr);
		}
	} else {
		ksig_add(T, &l->sig, "ws:ucarry", I->gptr);
	}
	char a[64];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[T->bdproj[j]].weight].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	if (T->nbdproj > 0 && !T->portable)
		ksig_add(T, &l->sig, "ws:dwsync", I->gptr);
	for (int j = 0; j < T->napj; j++) {   /* projections apart: their adjoints, and dx's own term */
		snprintf(a, sizeof a, "ws:dproj_%s", apj_weight(T, j));
		ksig_add(T, &l->sig, a, I->gptr);
	}
	if (T->napj)
		ksig_add(T, &l->sig, "ws:dxd", I->gptr);
	ksig_add(T, &l->sig, "ws:part_chan", I->gptr);
	ksig_add(T, &l->sig, "ws:part_scal", I->gptr);
	ksig_shape(T, &l->sig);
	if (!onepass)
		ksig_add(T, &l->sig, "i32:NT", I->i32);
	ksig_add(T, &l->sig, "i32:B", I->i32);
	return l;
}

/* The block's channel and scalar gradient partials into slot (ctaid.x, b):
 * a channel's summed over the lanes of its column, a scalar's over the
 * block, each in a fixed order */
static void bwd_write_partials(Bwd *bw, LLVMValueRef slot, LLVMValueRef H)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	const PartMap *pm = bw->pm;
	Lanes *ln = bw->ln;
	LLVMValueRef pc = ksig_arg(T, bw->sig, "ws:part_chan");
	for (int p = 0; p < mx->nparam; p++) {
		if (pm->cidx[p] < 0)
			continue;
		for (int c = 0; c < 4; c++) {
			LLVMValueRef v = var_get(I, bw->cacc[p][c]);
			for (int m = 4; m < 32; m <<= 1)
				v = fadd(I, v, shfl_xor_f(I, v, m));
			IfBlk f;
			if_begin(I, &f, ieq(I, ln->g, ci32(I, 0)), "pc");
			LLVMValueRef row = iadd(I, imul(I, slot, ci32(I, pm->nchan)), ci32(I, pm->cidx[p]));
			LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, ln->D)),
			                        sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), ln->ch[c])));
			st(I, v, gep_f32(I, pc, idx), 4);
			if_end(I, &f);
		}
	}
	if (pm->nscal > 0) {
		LLVMValueRef ps = ksig_arg(T, bw->sig, "ws:part_scal");
		for (int p = 0; p < mx->nparam; p++) {
			if (pm->sidx[p] < 0)
				continue;
			LLVMValueRef v = var_get(I, bw->sacc[p]);
			for (int m = 1; m < 32; m <<= 1)
				v = fadd(I, v, shfl_xor_f(I, v, m));
			IfBlk f;
			if_begin(I, &f, ieq(I, ln->lane, ci32(I, 0)), "ps");
			st(I, v, smem_ptr(I, iadd(I, ci32(I, bw->sm.scal), imul(I, iadd(I, imul(I, ln->w, ci32(I, pm->nscal)), ci32(I, pm->sidx[p])), ci32(I, 4)))), 4);
			if_end(I, &f);
		}
		bar_sync(I);
		IfBlk f;
		if_begin(I, &f, ieq(I, ln->tid, ci32(I, 0)), "ps0");
		for (int p = 0; p < mx->nparam; p++) {
			if (pm->sidx[p] < 0)
				continue;
			LLVMValueRef v = cf32(I, 0.0);
			for (int w = 0; w < 4; w++)
				v = fadd(I, v, ld(I, I->f32, smem_ptr(I, ci32(I, bw->sm.scal + (w * pm->nscal + pm->sidx[p]) * 4)), 4));
			LLVMValueRef idx = iadd(I, imul(I, iadd(I, imul(I, slot, H), ln->head), ci32(I, pm->nscal)), ci32(I, pm->sidx[p]));
			st(I, v, gep_f32(I, ps, sext64(I, idx)), 4);
		}
		if_end(I, &f);
	}
}

void tmpl_bwd_apply(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	PartMap pm;
	part_map(T, &pm);
	int lb = T->v->onepass;
	Bwd bw = { .T = T, .pm = &pm };
	bw.sm = bwd_smem(T, &pm);
	/* dproj buffers: step si - 1 writes while slower warps may still read
	 * step si's, so a segment needs at least two (chunks are >= 8) */
	CHECK(T->nbdproj == 0 || T->seg >= 2);
	Launch *l = bwd_apply_launch(T, bw.sm.total);
	tmpl_open(T, l);
	bw.sig = &l->sig;
	/* dx's transposed projection takes the weights' rows in the slots'
	 * order (wmat_dx_frags): about 10 registers more, which kernels with
	 * several groups per quad do not have (prefix 64 and 128 at chunk 32
	 * spilled) */
	T->k.slots_adjacent = T->nbdproj == 0 || T->quad_groups == 1;
	Lanes ln;
	T->k.gates_inline = 1;   /* it needs the projections' adjoints, so it recomputes them */
	/* where every sweep holds the gates' fragments: with the reverse
	 * sweep's read from shared memory (chunk 16 and more) both biases
	 * live beside them, and ptxas spilled 16-120 bytes */
	T->k.gates_half = gates_half_ok(T) && reverse_holds(T);
	lanes_init(T, &ln, &l->sig, 1);
	seg_enable(T, &ln, bw.sm.xs, T->seg, bw.sm.segf);
	bw.ln = &ln;
	if (T->ntokval > 0)
		bw.dtokp = ksig_arg(T, &l->sig, "ws:dtokp");
	LLVMValueRef Bn = ksig_arg(T, &l->sig, "i32:B");
	LLVMValueRef H = nctaid(I, 1);
	/* dW accumulators from zero */
	LLVMTypeRef v4 = LLVMVectorType(I->f32, 4);
	for (int j = 0; j < T->nbdproj; j++)
		for (int kt = 0; kt < 8; kt++)
			st(I, LLVMConstNull(v4), smem_ptr(I, dw_acc(&bw, j, kt, 0)), 16);
	/* the weights once, as bf16 matrices read by ldmatrix as the gate's and
	 * dx's B fragments, once per sweep where registers hold them over it
	 * (gate_frags_hold), else at every step */
	if (T->nbdproj > 0)
		wmat_stage(T, &ln, bw.sm.wmat);
	for (int p = 0; p < mx->nparam; p++) {
		if (pm.cidx[p] >= 0)
			for (int c = 0; c < 4; c++)
				bw.cacc[p][c] = var_init(I, cf32(I, 0.0), "dc");
		if (pm.sidx[p] >= 0)
			bw.sacc[p] = var_init(I, cf32(I, 0.0), "ds");
	}
	LLVMValueRef ckpt = ksig_arg(T, &l->sig, "ws:ckpt");
	LLVMValueRef NG = idiv(I, iadd(I, ln.L, ci32(I, 16 * T->chunk - 1)), ci32(I, 16 * T->chunk));
	bw.NG = NG;
	if (tok_fused(T))
		tok_tail_init(T, &ln, bw.sm.tail);
	if (lb)
		bwd_groups_onepass(&bw, ckpt, NG);
	else
		bwd_groups_tiles(&bw, ckpt, NG, ksig_arg(T, &l->sig, "i32:NT"), ksig_arg(T, &l->sig, "ws:ucarry"));

	/* partials of this block: slot (ctaid.x, b, head) */
	LLVMValueRef slot = iadd(I, imul(I, ctaid(I, 0), Bn), ln.b);
	if (T->nbdproj > 0)
		dw_cluster_write(&bw, &l->sig, Bn, H);
	if (tok_fused(T))
		tok_tail_flush(T, &ln, &l->sig, bw.sm.tail, slot);
	bwd_write_partials(&bw, slot, H);
	irb_ret(I);
}
