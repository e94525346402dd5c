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
#include "wgmma.h"
#include "diag.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The per-step maps a one-group apply keeps for its second sweep (keep):
 * the map of the chunk's steps 0 .. k for k < C-1, as a pair of fp16 (A
 * low, B high) per slot and thread, [k][slot][thread], so the sweep reads
 * h = A h0 + B instead of evaluating the gates again. Each value is
 * rounded once (2^-11 relative) and never accumulated: the carries, the
 * checkpoints and the maps composed across chunks and tiles stay fp32. */
static LLVMValueRef keep_at(Tmpl *T, Lanes *ln, int keep, LLVMValueRef k, int s)
{
	Irb *I = &T->I;
	if (ln->keep_staged)
		return pj_keep_at(T, ln, k, s);
	LLVMValueRef w = iadd(I, imul(I, k, ci32(I, TM_SLOTS)), ci32(I, s));
	return iadd(I, ci32(I, keep), imul(I, iadd(I, imul(I, w, ci32(I, 128 * T->quads)), ln->tid), ci32(I, 4)));
}

/* The row's map (map variants; util/seqstate.h): the forward's kernel
 * that folds each tile once (fwd_reduce, or the look-back's fwd_scan) also
 * sums log_a over each quad's tokens per channel, in a fixed order, for
 * map_finish. A slot adds log_a of each valid step, and -inf at a reset
 * (a mark: hT no longer depends on the state entering the row; a map
 * variant's call gives h0, so t = 0 is no reset unless marked). */
static void map_push(Tmpl *T, const Step *stp, Var sl[4])
{
	Irb *I = &T->I;
	LLVMValueRef la[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		la[s] = fsel(I, step_isfirst(T, stp, s), cf32(I, -INFINITY), stp->log_a[s]);
		la[s] = fsel(I, stp->valid[slot_r(s)], la[s], cf32(I, 0.0));
	}
	/* a channel's two rows per step: 4 sums held over the fold, not 8 */
	for (int c = 0; c < 4; c++)
		var_set(I, sl[c], fadd(I, var_get(I, sl[c]), fadd(I, la[c], la[4 + c])));
}

/* a group's sums into the quad's per channel: the 8 lanes g of the
 * channel by an xor butterfly (every lane ends with the same bits: each
 * sum adds the same two values) */
static void map_group(Tmpl *T, Var sl[4], Var ml[4])
{
	Irb *I = &T->I;
	for (int c = 0; c < 4; c++) {
		LLVMValueRef v = var_get(I, sl[c]);
		for (int m = 4; m <= 16; m *= 2)
			v = fadd(I, v, shfl_xor_f(I, v, m));
		var_set(I, ml[c], fadd(I, var_get(I, ml[c]), v));
	}
}

/* the quad's sums to ws:mapL [B][NT * quads][D], one row per quad of each
 * tile in time order (lane g = 0 of each q holds its 4 channels) */
static void map_store(Tmpl *T, Lanes *ln, KSig *sig, Var ml[4])
{
	Irb *I = &T->I;
	LLVMValueRef mapL = ksig_arg(T, sig, "ws:mapL");
	LLVMValueRef pos = iadd(I, imul(I, lane_tile(I, ln), ci32(I, T->quads)), ln->quad);
	LLVMValueRef np = imul(I, kern_nt(T), ci32(I, T->quads));
	IfBlk f;
	if_begin(I, &f, ieq(I, ln->g, ci32(I, 0)), "map");
	for (int c = 0; c < 4; c++)
		st(I, var_get(I, ml[c]), gep_f32(I, mapL, tile_chan(T, ln, pos, np, ln->ch[c])), 4);
	if_end(I, &f);
}

/* Phase 1 of reduce/apply: the quad's groups folded into chunk maps (kept
 * per group in ex[]) and group totals composed into the quad map q. With
 * keep >= 0 every step's map is also stored there (keep_at), and ovf
 * records a value fp16 cannot hold. */
static void quad_fold(Tmpl *T, Lanes *ln, LLVMValueRef qbase, Maps ex[], LLVMValueRef totA[][4],
                      LLVMValueRef totB[][4], Var qA[4], Var qB[4], int keep, Var *ovf, Var *ml)
{
	Irb *I = &T->I;
	for (int c = 0; c < 4; c++) {
		qA[c] = var_init(I, cf32(I, 1.0), "qA");
		qB[c] = var_init(I, cf32(I, 0.0), "qB");
		if (ml)
			ml[c] = var_init(I, cf32(I, 0.0), "ml");
	}
	for (int j = 0; j < T->quad_groups; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->chunk));
		maps_init(T, &ex[j], "m");
		/* with kept maps, two steps per trip: their stores between the steps
		 * keep the compiler from sharing the weight fragments of an unrolled
		 * pair, so step_gates_n reads them once for both */
		int n = keep >= 0 && !ln->keep_staged && ln->seg_n % 2 == 0 ? 2 : 1;
		/* and there, with one group per quad (121 registers), the weight
		 * fragments are held over the sweep (4 more; elsewhere ptxas
		 * spills under the 2-block cap or the kernel loses a block) */
		int was = keep >= 0 ? gate_frags_hold(T, ln) : ln->wmat_smem;
		Var sl[4];
		for (int c = 0; ml && c < 4; c++)
			sl[c] = var_init(I, cf32(I, 0.0), "sl");
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin_n(T, ln, &Ls, &L, gb, T->chunk, n);
		/* at the two-block cap of 128 registers pairs spilled 4 bytes; with
		 * the stored sigmoids (pj_sig) 4 spilled 8 and the chunk's 8 none */
		if (ln->keep_staged)
			L.unroll = pj_sig_any(T) ? 8 : 4;
		Step stp[2];
		step_gates_n(T, ln, stp, n, gb, i, 0);
		for (int k = 0; k < n; k++) {
			LLVMValueRef ik = iadd(I, i, ci32(I, k));
			for (int s = 0; s < TM_SLOTS; s++)
				maps_push_fwd(T, &ex[j], s, stp[k].a_eff[s], stp[k].b_eff[s]);
			if (ml)
				map_push(T, &stp[k], sl);
			if (keep >= 0) {
				IfBlk f;
				if_begin(I, &f, ilt(I, ik, ci32(I, T->chunk - 1)), "keep");
				for (int s = 0; s < TM_SLOTS; s++) {
					LLVMValueRef A = var_get(I, ex[j].A[s]), B = var_get(I, ex[j].B[s]);
					st(I, pack_f16x2(I, A, B), smem_ptr(I, keep_at(T, ln, keep, ik, s)), 4);
					var_set(I, *ovf, LLVMBuildOr(I->b, var_get(I, *ovf), f16_overflow(I, A, B), ""));
				}
				if_end(I, &f);
			}
		}
		seg_loop_end(T, &Ls, &L);
		ln->wmat_smem = was;
		if (ml)
			map_group(T, sl, ml);
		warp_scan_fwd(T, ln, &ex[j], totA[j], totB[j]);
		for (int c = 0; c < 4; c++) {
			LLVMValueRef A = var_get(I, qA[c]);
			var_set(I, qA[c], fmul(I, A, totA[j][c]));
			var_set(I, qB[c], fadd(I, fmul(I, var_get(I, qB[c]), totA[j][c]), totB[j][c]));
		}
	}
}


/* channel ch of the block's tile in a [B][NT][D] array */
static LLVMValueRef tile_chan_index(Tmpl *T, Lanes *ln, LLVMValueRef ch)
{
	return tile_chan(T, ln, lane_tile(&T->I, ln), kern_nt(T), ch);
}

static LLVMValueRef quad_base(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	LLVMValueRef tb = imul(I, lane_tile(I, ln), ci32(I, T->chunk * T->prefix));
	return iadd(I, tb, imul(I, ln->quad, ci32(I, T->quad_groups * 16 * T->chunk)));
}

/* apply keeps every group's chunk maps live: with four groups per quad a
 * shorter segment leaves registers for them */
static int apply_seg(Tmpl *T) { return T->quad_groups >= 4 && seg_len(T) > 4 ? 4 : seg_len(T); }

/* what apply stages: x's rows, and the projections apart where two blocks
 * still share an SM. Their per-step loads were where fwd_scan waited (47%
 * of its warps' cycles on long scoreboard at 1x32768x4096, heads of 256);
 * staged, the kernel holds two blocks instead of three and still gains:
 * 1.95 -> 1.80 ms at 1x131072x4096 on an H100, where a 4-step segment at
 * three blocks' 80 registers took 2.46 */
static int apply_segf(Tmpl *T, int proj)
{
	int pj = SEG_X | SEG_PJ;
	return seg_pj(T) && quad_smem(T, pj, proj) + LB_SMEM <= smem_2blk(T) ? pj : SEG_X;
}

static char *smem_quads(Tmpl *T, char *buf, size_t n)
{
	snprintf(buf, n, "%d", quad_smem(T, SEG_X, gates_inline(T)));
	return buf;
}

void tmpl_fwd_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	Launch *l = tmpl_launch(T, 1, "fwd_reduce", "NT", scan_h(T), "B", 128 * T->quads, smem_quads(T, sm, sizeof sm));
	l->minblocks = reduce_minblocks(T);
	if (gates_inline(T) && T->nbdproj)
		launch_flops(l, proj_flops(T));   /* the gates */
	sig_inputs(T, &l->sig);
	ksig_add(T, &l->sig, "ws:aggA", I->gptr);
	ksig_add(T, &l->sig, "ws:aggB", I->gptr);
	if (T->v->map)
		ksig_add(T, &l->sig, "ws:mapL", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, seg_len(T), SEG_X);
	Maps ex[4];
	LLVMValueRef tA[4][4], tB[4][4];
	Var qA[4], qB[4], ml[4];
	quad_fold(T, &ln, quad_base(T, &ln), ex, tA, tB, qA, qB, -1, NULL, T->v->map ? ml : NULL);
	if (T->v->map)
		map_store(T, &ln, &l->sig, ml);
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

/* the output y of slot s at step stp, given h after the step */
static LLVMValueRef emit_y(Tmpl *T, Lanes *ln, Step *stp, int s, LLVMValueRef h)
{
	Mixer *mx = (Mixer *)T->mx;
	LLVMValueRef pv[MX_MAXPARAM] = { 0 };
	EmitEnv env = slot_env(T, ln, stp, s, pv);
	env.h = h;
	LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
	CHECK(memo);
	LLVMValueRef y = emit_expr(&T->I, &mx->g, T->e_y, &env, memo);
	free(memo);
	return y;
}

/* bytes of the kept maps: steps 0 .. C-2, a slot's fp16 pair per thread */
static int keep_bytes(const Tmpl *T) { return (T->chunk - 1) * TM_SLOTS * 128 * T->quads * 4; }

/* whether the output needs a projection (or anything step_gates computes
 * beyond a step's inputs and h) */
static int y_needs_gates(const ExGraph *g, int node)
{
	return ex_depends(g, node, EX_PROJ, -1) || ex_depends(g, node, EX_SEED, -1);
}

/* the byte offset of the kept maps (keep_at) in a look-back apply, or -1
 * where it does not keep them: more than one group per quad or segment
 * per chunk, an output over the gates, more than two blocks per SM
 * without them, or two blocks per SM lost with them. With the projections
 * apart and staged (two or more), each step's maps take the bytes of the
 * projections it has read (*staged; pj_keep_at): no memory of their own,
 * and the second sweep evaluates no gates; but not where steps carry
 * reset marks or documents' codes (at 128 registers ptxas spilled 72-128
 * bytes there, heads of 256). Otherwise a mixer without
 * block-diagonal projections in the scans keeps none: its sweep is cheap
 * (no tensor cores) and its kernel holds three blocks per SM, which the
 * maps' 56 KB would cut to two (SAMU on the H200: fwd_scan 0.261 -> 0.321
 * ms at L = 131072, against RG-LRU's 0.528 -> 0.437). */
static int fwd_keep(Tmpl *T, int lbo, int segf, int *staged)
{
	*staged = 0;
	if (!T->v->lookback || T->quad_groups != 1 || T->chunk != apply_seg(T) || T->chunk < 2)
		return -1;
	if (y_needs_gates(&T->mx->g, T->e_y))
		return -1;
	if ((segf & SEG_PJ) && T->napj >= 2 && !T->v->resets) {
		*staged = 1;
		return 0;
	}
	int keep = (lbo + LB_SMEM + 15) & ~15;
	if (T->nbdproj == 0 || keep + keep_bytes(T) > smem_2blk(T))
		return -1;
	return keep;
}

/* The second sweep from the kept maps (where kept): h after step i is the
 * map of steps 0 .. i on the chunk's start h0; after the chunk's last step
 * it is the next chunk's start (lane g + 1, or row 1 of lane g = 0, or
 * past the group's last chunk the group's end), which no map holds. */
static void apply_kept(Tmpl *T, Lanes *ln, LLVMValueRef gb, int keep, LLVMValueRef kept, Var h[TM_SLOTS],
                       Var hg[4], LLVMValueRef tA[4], LLVMValueRef tB[4])
{
	Irb *I = &T->I;
	LLVMValueRef h0[TM_SLOTS], hend[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++)
		h0[s] = var_get(I, h[s]);
	LLVMValueRef last = ieq(I, ln->g, ci32(I, 7));
	for (int s = 0; s < TM_SLOTS; s++) {
		int r = slot_r(s), c = slot_c(s);
		LLVMValueRef down = shfl_down_f(I, h0[s], 4);
		LLVMValueRef wrap = r == 0 ? shfl_idx_f(I, h0[s + 4], ln->q)
		                           : fadd(I, fmul(I, tA[c], var_get(I, hg[c])), tB[c]);
		hend[s] = fsel(I, last, wrap, down);
	}
	IfBlk f;
	if_begin(I, &f, kept, "kept");
	Loop Ls, L;
	LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, T->chunk);
	Step stp;
	memset(&stp, 0, sizeof stp);
	step_inputs(T, ln, &stp, gb, i);
	step_marks(T, ln, &stp);   /* y may read first */
	LLVMValueRef end = ieq(I, i, ci32(I, T->chunk - 1));
	LLVMValueRef k = LLVMBuildSelect(I->b, end, ci32(I, 0), i, "");   /* in range, unused at the end */
	LLVMValueRef y[TM_SLOTS], hk[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef m = ld(I, I->i32, smem_ptr(I, keep_at(T, ln, keep, k, s)), 4);
		LLVMValueRef hs = fadd(I, fmul(I, unpack_f16(I, m, 0), h0[s]), unpack_f16(I, m, 1));
		LLVMValueRef h = fsel(I, end, hend[s], hs);
		y[s] = emit_y(T, ln, &stp, s, h);
		hk[s] = h;
	}
	if (T->v->docs)   /* a sequence's last token: its final state */
		docs_store_hT(T, ln, &stp, hk);
	store_slots(T, ln, &stp, ln->y, y, NULL);
	seg_loop_end(T, &Ls, &L);
	if_end(I, &f);
}

/* One tile: the quads' maps, the tile's carry (look-back or the carry
 * pass's), then h and y from the kept maps or a second sweep. */
static void fwd_apply_tile(Tmpl *T, Lanes *ln, Launch *l, int keep, int lbo)
{
	Irb *I = &T->I;
	int lb = T->v->lookback;
	Maps ex[4];
	LLVMValueRef tA[4][4], tB[4][4];
	Var qA[4], qB[4];
	LLVMValueRef qbase = quad_base(T, ln);
	Var ovf = { 0 };
	if (keep >= 0)
		ovf = var_init(I, LLVMConstInt(I->i1, 0, 0), "ovf");
	Var ml[4];
	int map = lb && T->v->map;   /* the hierarchical scan's fwd_reduce stored the sums */
	quad_fold(T, ln, qbase, ex, tA, tB, qA, qB, keep, &ovf, map ? ml : NULL);
	if (map)
		map_store(T, ln, &l->sig, ml);
	/* the kept maps serve unless one of the block's values overflowed fp16 */
	LLVMValueRef kept = keep >= 0 ? LLVMBuildNot(I->b, bar_or(I, var_get(I, ovf)), "") : NULL;
	quad_publish(T, ln, qA, qB);
	if (lb)
		lb_carry(T, ln, &l->sig, lbo);
	/* the quad's start: the tile carry through the earlier quads */
	LLVMValueRef ckpt = ksig_arg(T, &l->sig, "ws:ckpt");
	Var hg[4];
	for (int c = 0; c < 4; c++) {
		LLVMValueRef h = lb ? ld(I, I->f32, smem_ptr(I, iadd(I, ci32(I, lb_carry_at(lbo)), imul(I, ln->ch[c], ci32(I, 4)))), 4)
		                    : ld(I, I->f32, gep_f32(I, ksig_arg(T, &l->sig, "ws:carry"), tile_chan_index(T, ln, ln->ch[c])), 4);
		for (int qd = 0; qd < T->quads - 1; qd++) {
			LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ln->ch[c]), ci32(I, 8));
			LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
			LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
			LLVMValueRef nh = fadd(I, fmul(I, a, h), b);
			h = fsel(I, ilt(I, ci32(I, qd), ln->quad), nh, h);
		}
		hg[c] = var_init(I, h, "hg");
	}
	LLVMValueRef ytmp[TM_SLOTS], hk[TM_SLOTS];
	for (int j = 0; j < T->quad_groups; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->chunk));
		/* checkpoint: h at the group start, for the backward */
		IfBlk f;
		if_begin(I, &f, land(I, ieq(I, ln->g, ci32(I, 0)), ilt(I, gb, ln->L)), "ckpt");
		LLVMValueRef gi = idiv(I, gb, ci32(I, 16 * T->chunk));
		LLVMValueRef ng = idiv(I, iadd(I, ln->L, ci32(I, 16 * T->chunk - 1)), ci32(I, 16 * T->chunk));
		for (int c = 0; c < 4; c++) {
			st(I, var_get(I, hg[c]), gep_f32(I, ckpt, tile_chan(T, ln, gi, ng, ln->ch[c])), 4);
		}
		if_end(I, &f);
		Var h[TM_SLOTS];
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef hgc = var_get(I, hg[slot_c(s)]);
			h[s] = var_init(I, fadd(I, fmul(I, var_get(I, ex[j].A[s]), hgc), var_get(I, ex[j].B[s])), "h");
		}
		/* one group of one segment per quad: phase 1's staging still holds it */
		ln->seg_keep = T->quad_groups == 1 && T->chunk == ln->seg_n;
		if (keep >= 0)
			apply_kept(T, ln, gb, keep, kept, h, hg, tA[j], tB[j]);
		IfBlk sweep;   /* the sweep over the gates, where no kept maps serve */
		if (keep >= 0)
			if_begin(I, &sweep, LLVMBuildNot(I->b, kept, ""), "sweep");
		if (ln->keep_staged)   /* the maps took the staged projections' bytes: stage the steps again */
			ln->seg_keep = 0;
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, T->chunk);
		Step stp;
		step_gates(T, ln, &stp, gb, i, 0);
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef hn = fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]);
			var_set(I, h[s], hn);
			ytmp[s] = emit_y(T, ln, &stp, s, hn);
			hk[s] = hn;
		}
		if (T->v->docs)   /* a sequence's last token: its final state */
			docs_store_hT(T, ln, &stp, hk);
		store_slots(T, ln, &stp, ln->y, ytmp, NULL);
		seg_loop_end(T, &Ls, &L);
		if (keep >= 0)
			if_end(I, &sweep);
		for (int c = 0; c < 4; c++) {
			LLVMValueRef hgc = var_get(I, hg[c]);
			var_set(I, hg[c], fadd(I, fmul(I, tA[j][c], hgc), tB[j][c]));
		}
	}
}

struct TileArg {
	Tmpl *T;
	Lanes *ln;
	Launch *l;
	int keep, lbo;
};

static void fwd_apply_tile_body(void *arg)
{
	struct TileArg *a = arg;
	fwd_apply_tile(a->T, a->ln, a->l, a->keep, a->lbo);
}

/* scan_proj's persistent form (proj_ahead): fwd_scan's launch of resident
 * blocks, two quads and the producer warpgroup (scan_proj.c) a block, the
 * shared memory of both (a), the logical grid's B an argument */
static Launch *ahead_launch(Tmpl *T, const SpAhead *a)
{
	Irb *I = &T->I;
	CHECK(T->v->lookback && a->bytes <= smem_blk_max(T) && !T->v->docs && !T->v->map);
	char sm[32];
	snprintf(sm, sizeof sm, "%d", a->bytes);
	Launch *l = tmpl_launch(T, 1, "fwd_scan", "PB", "1", "1", 128 * T->quads + 128, sm);
	l->minblocks = 1;
	launch_flops(l, proj_flops(T));   /* the projections, proj_fwd's */
	sig_inputs(T, &l->sig);
	ksig_add(T, &l->sig, "ws:wimg", I->gptr);
	ksig_add(T, &l->sig, SP_XMAP, I->ptr);
	for (int j = 0; j < T->napj; j++) {
		char a[64];
		sp_pmap_arg(T, j, a, sizeof a);
		ksig_add(T, &l->sig, a, I->ptr);
	}
	ksig_add(T, &l->sig, "y", I->gptr);
	ksig_add(T, &l->sig, "ws:ticket", I->gptr);
	ksig_add(T, &l->sig, "ws:aggA", I->gptr);
	ksig_add(T, &l->sig, "ws:aggB", I->gptr);
	ksig_add(T, &l->sig, "ws:hend", I->gptr);
	if (T->v->states)
		ksig_add(T, &l->sig, "state:hT", I->gptr);
	ksig_add(T, &l->sig, "ws:ckpt", I->gptr);
	ksig_shape(T, &l->sig);
	ksig_add(T, &l->sig, "i32:B", I->i32);
	return l;
}

/* The quads' loop: each tile the producer posted in slot k % 2 (its
 * ticket past total: the end) swept as fwd_scan's blocks sweep theirs
 * (fwd_apply_tile, ta with the tile's lanes), then the slot released;
 * their block barrier is SP_BAR_QUADS, of their threads alone */
static void ahead_sweeps(Tmpl *T, Launch *l, const SpAhead *a, LLVMValueRef HS, LLVMValueRef B, LLVMValueRef total,
                         struct TileArg ta, int staged, int segf)
{
	Irb *I = &T->I;
	int steps = T->chunk * T->prefix;
	I->bar_id = SP_BAR_QUADS;
	I->bar_n = T->k.threads;
	Var k = var_init(I, ci32(I, 0), "sp_k");
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "sp_sweep");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "sp_sweep_tile");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "sp_sweep_done");
	LLVMBuildBr(I->b, head);
	LLVMPositionBuilderAtEnd(I->b, head);
	LLVMValueRef kk = var_get(I, k), s = LLVMBuildAnd(I->b, kk, ci32(I, 1), "");
	LLVMValueRef use = LLVMBuildLShr(I->b, kk, ci32(I, 1), "");   /* the slot's use: the phase's parity */
	mbar_wait(I, sp_slot(I, a->full, s, 8), LLVMBuildAnd(I->b, use, ci32(I, 1), ""));
	LLVMValueRef t = ld(I, I->i32, smem_ptr(I, sp_slot(I, a->tick, s, 4)), 4);
	LLVMBuildCondBr(I->b, LLVMBuildICmp(I->b, LLVMIntULT, t, total, ""), body, done);
	LLVMPositionBuilderAtEnd(I->b, body);
	sp_ticket(T, t, HS, B);
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, apply_seg(T), segf);
	ln.keep_staged = staged;
	memset(T->k.ticket_thb, 0, sizeof T->k.ticket_thb);
	ta.ln = &ln;
	LLVMValueRef end = imul(I, iadd(I, lane_tile(I, &ln), ci32(I, 1)), ci32(I, steps));
	LLVMValueRef in = LLVMBuildICmp(I->b, LLVMIntSLE, end, ln.L, "");
	emit_split_docs(T, &ln, in, imul(I, lane_tile(I, &ln), ci32(I, steps)), steps, 0, fwd_apply_tile_body, &ta);
	/* every quad past the tile's shared maps, carries and staging before
	 * the next tile's; the slot back to the producer */
	bar_sync(I);
	mbar_arrive(I, sp_slot(I, a->empty, s, 8));
	var_set(I, k, iadd(I, kk, ci32(I, 1)));
	LLVMBuildBr(I->b, head);
	LLVMPositionBuilderAtEnd(I->b, done);
	I->bar_n = 0;
}

/* fwd_scan of scan_proj's persistent form: the launch, the slots'
 * mbarriers, then the producer's loop and the quads' */
static void fwd_apply_ahead(Tmpl *T, int sweep_bytes, int keep, int staged, int lbo, int segf, int proj)
{
	Irb *I = &T->I;
	SpAhead a;
	sp_layout(T, sweep_bytes, &a);
	Launch *l = ahead_launch(T, &a);
	tmpl_open(T, l);
	T->k.slots_adjacent = 1;
	T->k.proj_inline = proj;
	int nq = 128 * T->quads;
	T->k.threads = nq;   /* what the sweeps' code sizes by: the quads' threads */
	wg_align_smem(I);
	LLVMValueRef Lv = ksig_arg(T, &l->sig, "i32:L"), Dv = ksig_arg(T, &l->sig, "i32:D");
	LLVMValueRef Bv = ksig_arg(T, &l->sig, "i32:B"), tid = tid_x(I);
	int steps = T->chunk * T->prefix;
	LLVMValueRef NT = LLVMBuildUDiv(I->b, iadd(I, Lv, ci32(I, steps - 1)), ci32(I, steps), "NT");
	LLVMValueRef HS = LLVMBuildUDiv(I->b, Dv, ci32(I, 64), "HS");
	LLVMValueRef total = imul(I, imul(I, NT, HS), Bv);
	T->k.grid_nt = NT;
	IfBlk f;
	if_begin(I, &f, ieq(I, tid, ci32(I, 0)), "sp_bars");
	for (int s = 0; s < 2; s++) {
		mbar_init(I, ci32(I, a.full + 8 * s), 128);
		mbar_init(I, ci32(I, a.empty + 8 * s), nq);
	}
	for (int s = 0; s < SP_STAGES; s++)
		mbar_init(I, ci32(I, a.xfull + 8 * s), 1);
	fence_proxy_async(I);   /* the barriers seen by the copies that complete on them */
	if_end(I, &f);
	bar_sync(I);
	LLVMValueRef prod = LLVMBuildICmp(I->b, LLVMIntUGE, tid, ci32(I, nq), "");
	/* the registers moved to the producer (its 64 accumulators beside the
	 * next tile's copies spilled at the kernel's 168), from the quads,
	 * which sweep within 128 at two blocks an SM elsewhere */
	if_begin(I, &f, prod, "producer");
	wg_setmaxnreg(I, 1, SP_PRODUCER_REGS);
	scan_proj_producer(T, &l->sig, &a, HS, Bv, total);
	if_end(I, &f);
	if_begin(I, &f, LLVMBuildNot(I->b, prod, ""), "quads");
	wg_setmaxnreg(I, 0, SP_QUAD_REGS);
	struct TileArg ta = { T, NULL, l, keep, lbo };   /* its lanes a tile's */
	ahead_sweeps(T, l, &a, HS, Bv, total, ta, staged, segf);
	if_end(I, &f);
	irb_ret(I);
}

void tmpl_fwd_apply(Tmpl *T)
{
	Irb *I = &T->I;
	int lb = T->v->lookback;
	int proj = kern_proj(T, T->e_y);    /* an unfused output gated by a projection runs it here */
	int segf = apply_segf(T, proj);
	int lbo = quad_smem(T, segf, proj);   /* look-back's ticket and carries after the quads' memory */
	int staged;
	int keep = fwd_keep(T, lbo, segf, &staged);
	int bytes = keep >= 0 && !staged ? keep + keep_bytes(T) : lbo + (lb ? LB_SMEM : 0);
	if (scan_proj_ahead(T)) {
		fwd_apply_ahead(T, bytes, keep, staged, lbo, segf, proj);
		return;
	}
	char sm[32];
	snprintf(sm, sizeof sm, "%d", bytes);
	Launch *l = tmpl_launch(T, 1, lb ? "fwd_scan" : "fwd_apply", "NT", scan_h(T), "B", 128 * T->quads, sm);
	l->minblocks = T->quad_groups == 1 ? 2 : 1;   /* more groups keep more chunk maps live: 128 registers spill */
	if (proj && T->nbdproj)
		launch_flops(l, proj_flops(T));   /* the gates (the look-back's second sweep may compute them again) */
	if (scan_proj_on(T))
		launch_flops(l, proj_flops(T));   /* the projections, proj_fwd's */
	sig_inputs(T, &l->sig);
	if (scan_proj_on(T))
		ksig_add(T, &l->sig, "ws:wimg", I->gptr);
	ksig_add(T, &l->sig, "y", I->gptr);
	if (lb) {
		ksig_add(T, &l->sig, "ws:ticket", I->gptr);
		ksig_add(T, &l->sig, "ws:aggA", I->gptr);
		ksig_add(T, &l->sig, "ws:aggB", I->gptr);
		ksig_add(T, &l->sig, "ws:hend", I->gptr);
		if (T->v->states)   /* the last tile's end state (h0 comes with the step kernels' args) */
			ksig_add(T, &l->sig, "state:hT", I->gptr);
		if (T->v->map)
			ksig_add(T, &l->sig, "ws:mapL", I->gptr);
	} else {
		ksig_add(T, &l->sig, "ws:carry", I->gptr);
	}
	ksig_add(T, &l->sig, "ws:ckpt", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	T->k.slots_adjacent = 1;
	T->k.proj_inline = proj;
	T->k.gates_half = gates_half_ok(T);   /* where it holds the gates' fragments */
	if (lb)
		lb_ticket(T, ksig_arg(T, &l->sig, "ws:ticket"), lbo);
	if (scan_proj_on(T)) {
		/* each quad's projections of its rows (one group of one segment),
		 * ahead of the lanes' parameters and invariants: none of them is
		 * live beside the 64 accumulators (after them ptxas spilled 372
		 * bytes at the two-block cap of 128 registers) */
		CHECK(scan_proj_ok(T) && (segf & SEG_PJ));   /* tmpl_check refused the rest */
		wg_align_smem(I);
		Lanes pl;
		quad_lanes(T, &pl, &l->sig, apply_seg(T), segf);
		pl.wimg = ksig_arg(T, &l->sig, "ws:wimg");
		scan_project(T, &pl, quad_base(T, &pl));
	}
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, apply_seg(T), segf);
	ln.keep_staged = staged;
	memset(T->k.ticket_thb, 0, sizeof T->k.ticket_thb);
	/* a tile inside the sequence has every step valid: its own copy of the
	 * code, with the validity selects folded away. RG-LRU's look-back scan
	 * at prefix 32 and chunks over 8 (128 registers for two blocks) spills
	 * with the copy: it keeps one. */
	struct TileArg ta = { T, &ln, l, keep, lbo };
	LLVMValueRef in = NULL;
	if (!(lb && T->nbdproj > 0 && T->quad_groups == 1 && T->chunk > 8))
		in = LLVMBuildICmp(I->b, LLVMIntSLE, imul(I, iadd(I, lane_tile(I, &ln), ci32(I, 1)), ci32(I, T->chunk * T->prefix)), ln.L, "");
	/* two copies, not bwd_apply's three (on the H100, 64 documents in
	 * 131072 tokens: a resets variant's three spill 64 bytes in RG-LRU's
	 * fwd_scan, and a plain copy and the rest lost 2%; a docs variant's
	 * three took RG-LRU's fwd_scan from 0.441 to 0.409 ms with final states
	 * but SAMU's from 0.284 to 0.303 without them) */
	emit_split_docs(T, &ln, in, imul(I, lane_tile(I, &ln), ci32(I, T->chunk * T->prefix)), T->chunk * T->prefix, 0,
	                fwd_apply_tile_body, &ta);
	irb_ret(I);
}

void tmpl_fwd_gates(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	snprintf(sm, sizeof sm, "%d", T->quads * seg_bytes(T, seg_len(T), SEG_X));
	Launch *l = tmpl_launch(T, 1, "fwd_gates", "NT", scan_h(T), "B", 128 * T->quads, sm);
	if (T->nbdproj)
		launch_flops(l, proj_flops(T));
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
	for (int j = 0; j < T->quad_groups; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->chunk));
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, &ln, &Ls, &L, gb, T->chunk);
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
