/* Backward scan kernels.
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
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gy = dy * dy/dh, from the derived graph with seeds (0, 0, dy) */
static LLVMValueRef eval_gy(Tmpl *T, Lanes *ln, Step *st_, int s, LLVMValueRef hnew, LLVMValueRef dy)
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
	return fsel(I, st_->valid[slot_r(s)], v, cf32(I, 0.0));
}

/* adjoint maps compose right to left; folding steps in time order:
 * F := F o f_t with f_t(u) = a (g + u): (M, N) := (M a, M a g + N) */
static void maps_push_bwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef gy)
{
	Irb *I = &T->I;
	LLVMValueRef Ma = fmul(I, var_get(I, m->A[s]), a);
	var_set(I, m->B[s], fadd(I, fmul(I, Ma, gy), var_get(I, m->B[s])));
	var_set(I, m->A[s], Ma);
}

void tmpl_bwd_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	/* the adjoint maps need a and dy/dh only: x is read when they use it */
	const ExGraph *eg = &T->mx->g;
	int segf = SEG_DY;
	if (T->nbdproj > 0 || ex_depends(eg, T->e_log_a, EX_X, -1) || ex_depends(eg, T->g_h, EX_X, -1))
		segf |= SEG_X;
	snprintf(sm, sizeof sm, "%d", quad_smem(T, segf));
	Launch *l = tmpl_launch(T, 0, "bwd_reduce", "NT", "H", "B", 128 * T->quads, sm);
	l->minblocks = reduce_minblocks(T);
	if (!(segf & SEG_X))
		snprintf(l->bytes_unread, sizeof l->bytes_unread, "x");
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dy", I->gptr);
	ksig_params(T, &l->sig);
	ksig_tok(T, &l->sig);
	if (!gates_inline(T)) {
		ksig_add(T, &l->sig, "ws:log_a", I->gptr);
		ksig_add(T, &l->sig, "ws:b", I->gptr);
	}
	ksig_add(T, &l->sig, "ws:baggA", I->gptr);
	ksig_add(T, &l->sig, "ws:baggB", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, seg_len(T), segf);
	LLVMValueRef tile = ctaid(I, 0);
	LLVMValueRef qbase = iadd(I, imul(I, tile, ci32(I, T->chunk * T->prefix)), imul(I, ln.quad, ci32(I, T->quad_groups * 16 * T->chunk)));
	Var qA[4], qB[4];
	for (int c = 0; c < 4; c++) {
		qA[c] = var_init(I, cf32(I, 1.0), "qA");
		qB[c] = var_init(I, cf32(I, 0.0), "qB");
	}
	for (int j = 0; j < T->quad_groups; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->chunk));
		Maps m;
		maps_init(T, &m, "r");
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, &ln, &Ls, &L, gb, T->chunk);
		Step stp;
		step_gates(T, &ln, &stp, gb, i, 0);
		LLVMValueRef dy[TM_SLOTS];
		load_dy(T, &ln, &stp, dy);
		for (int s = 0; s < TM_SLOTS; s++) {
			/* gy may depend on h only through an output that is affine in h (checked at setup) */
			LLVMValueRef gy = eval_gy(T, &ln, &stp, s, cf32(I, 0.0), dy[s]);
			maps_push_bwd(T, &m, s, stp.a_eff[s], gy);
		}
		seg_loop_end(T, &Ls, &L);
		LLVMValueRef tA[4], tB[4];
		warp_scan_bwd(T, &ln, &m, tA, tB);
		for (int c = 0; c < 4; c++) {   /* Q := Q o G_j */
			LLVMValueRef QA = var_get(I, qA[c]);
			var_set(I, qB[c], fadd(I, fmul(I, QA, tB[c]), var_get(I, qB[c])));
			var_set(I, qA[c], fmul(I, QA, tA[c]));
		}
	}
	quad_publish(T, &ln, qA, qB);
	IfBlk f2;
	if_begin(I, &f2, ilt(I, ln.tid, ci32(I, 64)), "tile");
	LLVMValueRef A = cf32(I, 1.0), B = cf32(I, 0.0);
	for (int qd = 0; qd < T->quads; qd++) {   /* tile := tile o Q_qd */
		LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ln.tid), ci32(I, 8));
		LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
		LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
		B = fadd(I, fmul(I, A, b), B);
		A = fmul(I, A, a);
	}
	LLVMValueRef idx = tile_chan(T, &ln, tile, nctaid(I, 0), ln.tid);
	st(I, A, gep_f32(I, ksig_arg(T, &l->sig, "ws:baggA"), idx), 4);
	st(I, B, gep_f32(I, ksig_arg(T, &l->sig, "ws:baggB"), idx), 4);
	if_end(I, &f2);
	irb_ret(I);
}

/* ---- apply ---- */

typedef struct {
	int nchan, nscal;            /* channel / scalar parameters */
	int cidx[MX_MAXPARAM];       /* parameter -> channel-partial index, -1 */
	int sidx[MX_MAXPARAM];       /* parameter -> scalar-partial index, -1 */
} PartMap;

static void part_map(Tmpl *T, PartMap *pm)
{
	memset(pm, 0, sizeof *pm);
	for (int p = 0; p < T->mx->nparam; p++) {
		pm->cidx[p] = pm->sidx[p] = -1;
		if (T->mx->param[p].kind == PK_CHANNEL)
			pm->cidx[p] = pm->nchan++;
		else if (T->mx->param[p].kind == PK_SCALAR)
			pm->sidx[p] = pm->nscal++;
	}
}

/* Shared memory of bwd_apply, byte offsets. Per-thread regions are laid
 * out [word][thread] so a warp's accesses never conflict, and no thread
 * reads another's words in them. */
typedef struct {
	int hprev;      /* h before each step of a segment, [step][slot][thread] */
	int nh, hm0;    /* the chunk's last nh segments read h from pass A's maps of steps hm0 .. C-2 */
	int h16;        /* those maps as 16-bit pairs (map16_pack), half the bytes */
	int segf;       /* what a segment stages (SEG_*) */
	int dpa, scal, wmat, dW, xs, dz, tail, bmap, nbm, total;
} BwdSmem;

/* Two blocks per SM (4 warps each, SMEM_2BLK) are what hides this kernel's latency */
#define MAP_BYTES (TM_SLOTS * 2 * 128 * 4)   /* one map [slot][A, B][thread] */
#define MAP16_BYTES (TM_SLOTS * 128 * 4)    /* one map [slot][thread] of 16-bit pairs */

/* The last nh segments of a chunk take h before their steps from the maps
 * of the chunk's steps (from its start) that pass A keeps, instead of
 * sweeping the gates forward again: their gates are evaluated twice (pass
 * A, reverse step) instead of three times. The other segments store h in
 * the same region (they run after), starting from pass A's map at their
 * boundary where those fit. */
static BwdSmem bwd_layout(const Tmpl *T, const PartMap *pm, int nh, int swz, int h16)
{
	int nbd = T->nbdproj, nseg = T->chunk / T->seg;
	BwdSmem s;
	s.nh = nh;
	s.h16 = h16;
	s.segf = SEG_X | SEG_DY | (swz ? SEG_SWZ : 0);
	s.hm0 = T->chunk - nh * T->seg - 1;
	if (s.hm0 < 0)
		s.hm0 = 0;          /* step 0 starts from the chunk's start itself */
	int hbytes = nh > 0 ? (T->chunk - 1 - s.hm0) * (h16 ? MAP16_BYTES : MAP_BYTES) : 0, hseg = T->seg * TM_SLOTS * 128 * 4;
	if (nh < nseg && hbytes < hseg)
		hbytes = hseg;
	s.hprev = 0;
	s.dpa = s.hprev + hbytes;                           /* dproj, bf16 [step][proj][warp][16 t][16 j] */
	s.scal = s.dpa + T->seg * nbd * 4 * 512;
	s.wmat = s.scal + 4 * (pm->nscal ? pm->nscal : 1) * 4;
	s.wmat = (s.wmat + 15) & ~15;
	s.dW = s.wmat + nbd * WMAT_BYTES;                  /* dW^T accumulators, v4 [proj][kt][thread] */
	s.xs = s.dW + nbd * 8 * 128 * 16;                  /* staged x rows */
	s.dz = s.xs + seg_bytes(T, T->seg, s.segf);          /* token adjoints [S][16 rows][4 warps][nz] */
	s.tail = (s.dz + T->seg * 16 * 4 * T->ntokval * 4 + 15) & ~15;   /* the token stage (tok_tail.c) */
	s.total = s.tail + (tok_fused(T) ? tok_tail_bytes(T) : 0);
	/* pass A's maps at the inner boundaries of the segments that sweep,
	 * [boundary][slot][A, B][thread]: h at such a segment's start without
	 * sweeping the gates from the chunk start again, where they fit */
	s.bmap = s.total;
	s.nbm = nseg - nh - 1 > 0 ? nseg - nh - 1 : 0;
	if (s.bmap + s.nbm * MAP_BYTES > SMEM_2BLK)
		s.nbm = 0;
	s.total = s.bmap + s.nbm * MAP_BYTES;
	return s;
}

/* gate evaluations per slot per chunk: pass A, then per segment the
 * reverse step, and where h is not read from maps the forward sweep and,
 * without a boundary map, the sweep from the chunk start to the segment */
static int bwd_gate_steps(const Tmpl *T, const BwdSmem *s)
{
	int nseg = T->chunk / T->seg, n = T->chunk;
	for (int sg = 0; sg < nseg; sg++) {
		n += T->seg;
		if (sg >= nseg - s->nh)
			continue;
		n += T->seg;
		if (sg > 0 && s->nbm == 0)
			n += sg * T->seg;
	}
	return n;
}

/* of the layouts that let two blocks share an SM, the one with the fewest
 * gate evaluations, then fp32 maps over 16-bit ones, then the least shared
 * memory. 16-bit maps fit twice as many steps: RG-LRU at chunk 8 keeps
 * all seven instead of the last segment's four, and its first segment no
 * longer sweeps the gates forward (20 -> 16 evaluations per chunk). A
 * chunk of more than 8 segments keeps the sweeps: its unrolled segments
 * already hold 250-255 registers, and with the maps' loads and the
 * swizzled addresses ptxas spills (RG-LRU chunk 64 at prefix 64 and 128),
 * for a tenth fewer evaluations. A mixer with a token stage keeps fp32
 * maps: its token adjoints sum over whole tokens, where h rounded to
 * 2^-11 before each step does not average out (SAMU at chunk 16, the one
 * that took 16-bit maps, missed 1e-2 on dbu: 1.2e-2 at 1x37x128, 100 times
 * chunk 8's error on the same inputs). */
static BwdSmem bwd_smem(const Tmpl *T, const PartMap *pm)
{
	BwdSmem best = bwd_layout(T, pm, 0, 0, 0);
	for (int h16 = 0; h16 < (T->ntokval > 0 ? 1 : 2); h16++)
		for (int nh = 1; nh <= T->chunk / T->seg && T->chunk / T->seg <= 8; nh++) {
			/* staged rows swizzled only where the padding is what does not fit */
			BwdSmem s = bwd_layout(T, pm, nh, 0, h16);
			if (s.total > SMEM_2BLK)
				s = bwd_layout(T, pm, nh, 1, h16);
			if (s.total > SMEM_2BLK)
				continue;
			int d = bwd_gate_steps(T, &s) - bwd_gate_steps(T, &best);
			if (d < 0 || (d == 0 && s.h16 == best.h16 && s.total < best.total))
				best = s;
		}
	return best;
}

typedef struct {
	Tmpl *T;
	Lanes *ln;
	const PartMap *pm;
	BwdSmem sm;
	Var cacc[MX_MAXPARAM][4];               /* channel partials per lane channel */
	Var sacc[MX_MAXPARAM];                  /* scalar partials per lane */
	LLVMValueRef gb;
	Var *h0;                                /* h at the chunk's start per slot */
	int hm;                                 /* this segment reads h from pass A's maps */
	LLVMValueRef dtokp;                     /* per-(token, head) adjoints of the per-token values */
	LLVMValueRef NG;                        /* groups per sequence */
	const KSig *sig;
	LLVMValueRef (*wdx)[4][2][2];           /* dx's B fragments held over the reverse sweep, or NULL */
} Bwd;

/* this thread's word w of a [word][thread] region at base */
static LLVMValueRef thr_word(Bwd *bw, int base, LLVMValueRef w)
{
	Irb *I = &bw->T->I;
	return iadd(I, ci32(I, base), imul(I, iadd(I, imul(I, w, ci32(I, 128)), bw->ln->tid), ci32(I, 4)));
}

/* word ab (0 = A, 1 = B) of slot s's map k in a region of maps at base */
static LLVMValueRef map_word(Bwd *bw, int base, LLVMValueRef k, int s, int ab)
{
	Irb *I = &bw->T->I;
	return thr_word(bw, base, iadd(I, imul(I, k, ci32(I, TM_SLOTS * 2)), ci32(I, s * 2 + ab)));
}

/* the map at inner boundary k (the start of segment k + 1) */
static LLVMValueRef bmap_at(Bwd *bw, LLVMValueRef k, int s, int ab) { return map_word(bw, bw->sm.bmap, k, s, ab); }
/* the map of the chunk's steps 0 .. hm0 + k */
static LLVMValueRef hmap_at(Bwd *bw, LLVMValueRef k, int s, int ab) { return map_word(bw, bw->sm.hprev, k, s, ab); }

/* slot s's word of record k in the hprev region, [k][slot][thread]: h
 * before a segment's step k, or (h16) the map of the chunk's steps
 * 0 .. hm0 + k as one 16-bit pair */
static LLVMValueRef hprev_at(Bwd *bw, LLVMValueRef k, int s)
{
	Irb *I = &bw->T->I;
	return thr_word(bw, bw->sm.hprev, iadd(I, imul(I, k, ci32(I, TM_SLOTS)), ci32(I, s)));
}

/* A map (A, B) in 32 bits: an fp16 pair (A high, B low), each value
 * rounded once (2^-11) and never accumulated. Where either would pass
 * fp16's range (above 6e4: B is h from a zero start, so large
 * activations), a bf16 pair instead, marked by the sign bit: A, a product
 * of exponentials and resets' zeros, is never negative, so the bit is
 * free. Such a value loses precision (2^-8), never range. */
static LLVMValueRef map16_pack(Irb *I, LLVMValueRef A, LLVMValueRef B)
{
	LLVMValueRef big = f16_overflow(I, A, B);
	LLVMValueRef wide = LLVMBuildOr(I->b, pack_bf16x2(I, B, A), ci32(I, (int64_t)0x80000000u), "");
	return LLVMBuildSelect(I->b, big, wide, pack_f16x2(I, B, A), "");
}

/* pass A keeps the map of the chunk's steps 0 .. hm0 + k, every slot. The
 * 16-bit words are stored as fp16 pairs with one running max of the
 * values for the range test, and rewritten through map16_pack only in a
 * warp where one passed it: the same words as map16_pack's everywhere,
 * for 2 instructions per pair where the test per value took 5. */
static void hmap_store(Bwd *bw, LLVMValueRef k, const Maps *fm)
{
	Irb *I = &bw->T->I;
	LLVMValueRef A[TM_SLOTS], B[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		A[s] = var_get(I, fm->A[s]);
		B[s] = var_get(I, fm->B[s]);
	}
	if (!bw->sm.h16) {
		for (int s = 0; s < TM_SLOTS; s++) {
			st(I, A[s], smem_ptr(I, hmap_at(bw, k, s, 0)), 4);
			st(I, B[s], smem_ptr(I, hmap_at(bw, k, s, 1)), 4);
		}
		return;
	}
	LLVMValueRef big = NULL;
	for (int s = 0; s < TM_SLOTS; s++) {
		st(I, pack_f16x2(I, B[s], A[s]), smem_ptr(I, hprev_at(bw, k, s)), 4);
		LLVMValueRef m = fmaxnum_(I, fabs_(I, A[s]), fabs_(I, B[s]));
		big = big ? fmaxnum_(I, big, m) : m;
	}
	IfBlk wide;
	if_begin(I, &wide, warp_any(I, fgt(I, big, cf32(I, F16_MAP_MAX))), "map_wide_st");
	for (int s = 0; s < TM_SLOTS; s++)
		st(I, map16_pack(I, A[s], B[s]), smem_ptr(I, hprev_at(bw, k, s)), 4);
	if_end(I, &wide);
}

/* h before step i of the chunk, every slot: the map of steps 0 .. i-1 on
 * the chunk's start h0; step 0 takes the start itself (its load stays in
 * range). A warp whose 16-bit maps of the step are all fp16 pairs (every
 * warp, short of activations near fp16's range) widens them with two
 * conversions and no test per value. */
static void hmap_hprev(Bwd *bw, LLVMValueRef i, LLVMValueRef hp[TM_SLOTS])
{
	Irb *I = &bw->T->I;
	LLVMValueRef k = isub(I, i, ci32(I, 1 + bw->sm.hm0));
	k = LLVMBuildSelect(I->b, ilt(I, k, ci32(I, 0)), ci32(I, 0), k, "");
	LLVMValueRef A[TM_SLOTS], B[TM_SLOTS];
	if (bw->sm.h16) {
		LLVMValueRef m[TM_SLOTS], sign = ci32(I, 0);
		Var vA[TM_SLOTS], vB[TM_SLOTS];
		for (int s = 0; s < TM_SLOTS; s++) {
			m[s] = ld(I, I->i32, smem_ptr(I, hprev_at(bw, k, s)), 4);
			sign = LLVMBuildOr(I->b, sign, m[s], "");
			vA[s] = var_init(I, unpack_f16(I, m[s], 1), "hA");
			vB[s] = var_init(I, unpack_f16(I, m[s], 0), "hB");
		}
		IfBlk wide;
		if_begin(I, &wide, warp_any(I, ilt(I, sign, ci32(I, 0))), "map_wide");
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef bf = ilt(I, m[s], ci32(I, 0));
			LLVMValueRef Aw = LLVMBuildBitCast(I->b, LLVMBuildAnd(I->b, m[s], ci32(I, 0x7fff0000), ""), I->f32, "");
			var_set(I, vA[s], fsel(I, bf, Aw, var_get(I, vA[s])));
			var_set(I, vB[s], fsel(I, bf, unpack_bf16_lo(I, m[s]), var_get(I, vB[s])));
		}
		if_end(I, &wide);
		for (int s = 0; s < TM_SLOTS; s++) {
			A[s] = var_get(I, vA[s]);
			B[s] = var_get(I, vB[s]);
		}
	} else {
		for (int s = 0; s < TM_SLOTS; s++) {
			A[s] = ld(I, I->f32, smem_ptr(I, hmap_at(bw, k, s, 0)), 4);
			B[s] = ld(I, I->f32, smem_ptr(I, hmap_at(bw, k, s, 1)), 4);
		}
	}
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef h0 = var_get(I, bw->h0[s]);
		hp[s] = fadd(I, fmul(I, A[s], h0), B[s]);
		if (bw->sm.hm0 == 0)
			hp[s] = fsel(I, ieq(I, i, ci32(I, 0)), h0, hp[s]);
	}
}

/* word e of this thread's dW^T accumulator fragment of projection j, tile kt */
static LLVMValueRef dw_acc(Bwd *bw, int j, int kt, int e)
{
	Irb *I = &bw->T->I;
	return iadd(I, ci32(I, bw->sm.dW + (j * 8 + kt) * 128 * 16 + e * 4), imul(I, bw->ln->tid, ci32(I, 16)));
}

/* dproj of step si, projection j, warp w: 16 rows t of 32 bytes (the warp's
 * 16 j), the two 16-byte halves swapped on rows 4..7 and 12..15 so that
 * ldmatrix rows and the fragment stores hit distinct banks */
static LLVMValueRef dpa_at(Bwd *bw, LLVMValueRef si, int j, LLVMValueRef w, LLVMValueRef t, LLVMValueRef half)
{
	Irb *I = &bw->T->I;
	LLVMValueRef blk = iadd(I, imul(I, iadd(I, imul(I, si, ci32(I, bw->T->nbdproj)), ci32(I, j)), ci32(I, 4)), w);
	LLVMValueRef sw = LLVMBuildXor(I->b, half, LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, t, ci32(I, 2), ""), ci32(I, 1), ""), "");
	return iadd(I, ci32(I, bw->sm.dpa), iadd(I, imul(I, blk, ci32(I, 512)), iadd(I, imul(I, t, ci32(I, 32)), imul(I, sw, ci32(I, 16)))));
}

/* Adjoints of the per-token values: summed over the warp's 16 channels by
 * shuffles and parked per (step, row, warp) in shared memory; tok_flush
 * adds the four warps in order once per segment and writes one partial per
 * (token, head), which tok_bwd adds over the heads in order: the same bits
 * on every run. */
static void tok_partials(Bwd *bw, Step *stp, LLVMValueRef si, LLVMValueRef gz[TM_SLOTS][TM_MAXZ])
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
static void tok_flush(Bwd *bw, int s0)
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
static int tok_tail_mid(const Tmpl *T) { return tok_fused(T) && T->chunk == T->seg; }

/* the group a block ran in its trip before the one at gb */
static LLVMValueRef prev_group(Bwd *bw, LLVMValueRef gb)
{
	Irb *I = &bw->T->I;
	return iadd(I, gb, imul(I, nctaid(I, 0), ci32(I, 16 * bw->T->chunk)));
}

/* the token stage of the group at gb (tok_tail.c), where it starts inside
 * the sequence */
static void tok_tail_at(Bwd *bw, LLVMValueRef NG, LLVMValueRef gb)
{
	Irb *I = &bw->T->I;
	IfBlk f;
	if_begin(I, &f, ilt(I, gb, bw->ln->L), "tt_group");
	tok_tail_group(bw->T, bw->ln, bw->sig, bw->sm.tail, NG, gb, bw->sacc);
	if_end(I, &f);
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
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef valid = stp.valid[slot_r(s)];
		LLVMValueRef hp;
		if (bw->hm) {
			hp = hps[s];
		} else {
			hp = ld(I, I->f32, smem_ptr(I, hprev_at(bw, si, s)), 4);
		}
		LLVMValueRef hn = fadd(I, fmul(I, stp.a_eff[s], hp), stp.b_eff[s]);
		LLVMValueRef gy = eval_gy(T, ln, &stp, s, hn, dy[s]);
		LLVMValueRef dh = fadd(I, gy, var_get(I, u[s]));
		var_set(I, u[s], fmul(I, stp.a_eff[s], dh));
		LLVMValueRef keep = land(I, valid, LLVMBuildFCmp(I->b, LLVMRealOEQ, stp.first[s], cf32(I, 0.0), ""));
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
		for (int j = 0; j < T->nbdproj; j++)
			gp[s][j] = fsel(I, valid, emit_expr(I, &mx->g, T->g_proj[T->bdproj[j]], &env, memo), zero);
		for (int p = 0; p < mx->nparam; p++) {
			LLVMValueRef v = NULL;
			/* a gradient the element stage never produces keeps no accumulator
			 * (x + 0.0 is not x for x = -0, so the compiler would keep it) */
			const ExNode *gn = &mx->g.n[T->g_param[p]];
			int nil = gn->op == EX_CONST && gn->k == 0.0;
			if ((bw->pm->cidx[p] >= 0 || bw->pm->sidx[p] >= 0) && !nil)
				v = fsel(I, valid, emit_expr(I, &mx->g, T->g_param[p], &env, memo), zero);
			for (int j = 0; j < T->nbdproj; j++)   /* a projection's bias collects its adjoint */
				if (mx->proj[T->bdproj[j]].bias == p)
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
	if (T->ntokval > 0)
		tok_partials(bw, &stp, si, gz);
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

/* After the reverse sweep of the segment at s0: dW^T[j][k] += sum_t
 * dproj[t][j] x[t][k] over its S steps, for the warp's own 16 j. The
 * accumulators live in shared memory; touching them once per segment
 * instead of once per step keeps this pass cheap. A = dproj^T of the warp
 * (ldmatrix.trans of its own buffers), B = x rows of the staged segment
 * (ldmatrix.trans, two 8-column tiles per load; rows past L are zero). */
static void dw_segment(Bwd *bw, int s0)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	CHECK(T->seg <= 8);
	/* A: a0..a3 = (j 0-7, t 0-7), (j 8-15, t 0-7), (j 0-7, t 8-15), (j 8-15, t 8-15) */
	LLVMValueRef at, ah;
	ldsm_lane(I, ln, 1, &at, &ah);
	/* B: matrix m = x rows 8(m&1).., columns of tile kt + (m>>1) */
	int swz = ln->seg_flags & SEG_SWZ;
	LLVMValueRef xo = swz ? NULL : xs_ldsm_at(I, ln, 0);
	LLVMTypeRef v4 = LLVMVectorType(I->f32, 4);
	/* every projection's A fragments of the S steps at once, so that each
	 * x fragment is loaded once for all of them (40 -> 24 ldmatrix per
	 * segment for RG-LRU); chunks of 64, and of 32 at more than one group
	 * per quad, take one projection at a time, as their unrolled segments
	 * already hold 254-255 registers and spill with the fragments of both */
	int jn = T->chunk <= 16 || (T->chunk <= 32 && T->quad_groups == 1) ? T->nbdproj : 1;
	for (int j0 = 0; j0 < T->nbdproj; j0 += jn) {
		LLVMValueRef A[MX_MAXPROJ][8][4];
		for (int j = j0; j < j0 + jn; j++)
			for (int si = 0; si < T->seg; si++)
				ldsm_x4(I, A[j][si], dpa_at(bw, ci32(I, si), j, ln->w, at, ah), 1);
		for (int kp = 0; kp < 8; kp += 2) {
			LLVMValueRef Bx[8][4];
			for (int si = 0; si < T->seg; si++)
				ldsm_x4(I, Bx[si], iadd(I, seg_step_at(T, ln, ci32(I, s0 + si)), swz ? xs_ldsm_at(I, ln, kp) : iadd(I, xo, ci32(I, 16 * kp))), 1);
			for (int j = j0; j < j0 + jn; j++)
				for (int kt = kp; kt < kp + 2; kt++) {
					LLVMValueRef po = smem_ptr(I, dw_acc(bw, j, kt, 0));
					LLVMValueRef cv = ld(I, v4, po, 16);
					LLVMValueRef c[4];
					for (int e = 0; e < 4; e++)
						c[e] = LLVMBuildExtractElement(I->b, cv, ci32(I, e), "");
					for (int si = 0; si < T->seg; si++) {
						LLVMValueRef B[2] = { Bx[si][2 * (kt - kp)], Bx[si][2 * (kt - kp) + 1] }, d[4];
						mma_bf16(I, d, A[j][si], B, c);
						memcpy(c, d, sizeof c);
					}
					LLVMValueRef dv = LLVMGetUndef(v4);
					for (int e = 0; e < 4; e++)
						dv = LLVMBuildInsertElement(I->b, dv, c[e], ci32(I, e), "");
					st(I, dv, po, 16);
				}
		}
	}
}

/* Tile jk of the weight-gradient accumulators summed over the cluster's
 * blocks in rank order: all BWD_CLUSTER loads in flight at once (block
 * min(r, nrank - 1), always a valid rank), then the adds. Each thread
 * reads the words at its own tid in every block, so the fragment-to-(k, j)
 * mapping is its own. */
static void dw_tile_sum(Bwd *bw, LLVMValueRef jk, LLVMValueRef nrank, LLVMValueRef acc[4])
{
	Irb *I = &bw->T->I;
	LLVMValueRef off = iadd(I, dw_acc(bw, 0, 0, 0), imul(I, jk, ci32(I, 128 * 16)));
	LLVMValueRef v[BWD_CLUSTER][4], last = isub(I, nrank, ci32(I, 1));
	for (int r = 0; r < BWD_CLUSTER; r++) {
		LLVMValueRef rr = ci32(I, r);
		ld_cluster_v4(I, v[r], off, LLVMBuildSelect(I->b, ilt(I, rr, nrank), rr, last, ""));
	}
	for (int e = 0; e < 4; e++) {
		acc[e] = v[0][e];
		for (int r = 1; r < BWD_CLUSTER; r++)
			acc[e] = fsel(I, ilt(I, ci32(I, r), nrank), fadd(I, acc[e], v[r][e]), acc[e]);
	}
}

/* where this thread's 4 words of tile jk go in the slot at base */
static void dw_tile_at(Bwd *bw, LLVMValueRef const out[], LLVMValueRef jk, LLVMValueRef base, LLVMValueRef at[4])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	LLVMValueRef j = LLVMBuildUDiv(I->b, jk, ci32(I, 8), ""), kt = LLVMBuildURem(I->b, jk, ci32(I, 8), "");
	LLVMValueRef dst = out[0];
	for (int p = 1; p < T->nbdproj; p++)
		dst = LLVMBuildSelect(I->b, ieq(I, j, ci32(I, p)), out[p], dst, "");
	for (int e = 0; e < 4; e++) {
		/* dW^T fragment: row j = g (+8) (the channel wcol), column k = 8kt + 2q (+1); stored [k][j] */
		LLVMValueRef jj = T->k.slots_adjacent ? wcol(T, I, ln->w, ln->g, e >> 1)
		                         : iadd(I, iadd(I, imul(I, ln->w, ci32(I, 16)), ln->g), ci32(I, 8 * (e >> 1)));
		LLVMValueRef k = iadd(I, iadd(I, imul(I, ln->q, ci32(I, 2)), imul(I, kt, ci32(I, 8))), ci32(I, e & 1));
		at[e] = gep_f32(I, dst, sext64(I, iadd(I, base, iadd(I, imul(I, k, ci32(I, 64)), jj))));
	}
}

/* The weight-gradient partials of the cluster (launched as clusters of
 * CS blocks along x, CS | G): after a cluster barrier, block `rank` sums
 * the accumulator tiles (j, kt) with j * 8 + kt = rank mod CS over the
 * cluster's blocks in rank order -- a fixed order, so the bits do not
 * depend on timing. A last cluster barrier keeps every block's shared
 * memory alive until the others have read it.
 *
 * Clusters 2m and 2m+1 of a (sequence, head) then share slot m: the block
 * of either that counts itself in first (an atomic count per slot and
 * rank) writes its sums and raises a flag; the second sums its tiles,
 * waits for the flag, adds the slot's words to its sums and writes them
 * back. a + b == b + a exactly, so the slot's bits do not depend on which
 * came first; the second only ever waits on a block that has already
 * counted itself in, so it is running and no launch order can deadlock.
 * The second's tail is unrolled so that all its loads of the slot are in
 * flight at once (one memory round trip, not one per tile). The counts and
 * flags are cleared before each backward pass (workspace dwsync). */
static void dw_cluster_write(Bwd *bw, const KSig *sig, LLVMValueRef Bn, LLVMValueRef H)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	Mixer *mx = (Mixer *)T->mx;
	cluster_sync(I);
	LLVMValueRef rank = cluster_rank(I), nrank = cluster_nrank(I);
	LLVMValueRef cl = cluster_id_x(I), one = ci32(I, 1);
	LLVMValueRef gw = LLVMBuildUDiv(I->b, nctaid(I, 0), nrank, "");
	LLVMValueRef paired = ilt(I, LLVMBuildXor(I->b, cl, one, ""), gw);
	/* a launch in larger clusters than these sums cover, or a pair of
	 * clusters smaller than the second's unrolled tail assumes, fails
	 * loudly rather than dropping blocks' gradients */
	IfBlk big;
	LLVMValueRef odd = land(I, paired, LLVMBuildICmp(I->b, LLVMIntNE, nrank, ci32(I, BWD_CLUSTER), ""));
	if_begin(I, &big, LLVMBuildOr(I->b, ilt(I, ci32(I, BWD_CLUSTER), nrank), odd, ""), "cl_big");
	irb_trap(I);
	if_end(I, &big);
	LLVMValueRef slot = iadd(I, imul(I, LLVMBuildUDiv(I->b, cl, ci32(I, 2), ""), Bn), ln->b);
	LLVMValueRef shead = iadd(I, imul(I, slot, H), ln->head);
	LLVMValueRef base = imul(I, shead, ci32(I, 4096));
	LLVMValueRef sw = iadd(I, imul(I, shead, ci32(I, 2 * BWD_CLUSTER)), rank);
	LLVMValueRef sync = ksig_arg(T, sig, "ws:dwsync");
	LLVMValueRef count = gep_f32(I, sync, sext64(I, sw));
	LLVMValueRef flag = gep_f32(I, sync, sext64(I, iadd(I, sw, ci32(I, BWD_CLUSTER))));
	LLVMValueRef t0 = ieq(I, tid_x(I), ci32(I, 0));
	Var tk = var_init(I, ci32(I, 0), "dw_tk");
	IfBlk fc;
	if_begin(I, &fc, land(I, t0, paired), "dw_count");
	var_set(I, tk, atom_add_u32(I, count, one));
	if_end(I, &fc);
	LLVMValueRef second = bar_or(I, ieq(I, var_get(I, tk), one));
	LLVMValueRef out[MX_MAXPROJ];
	char a[64];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[T->bdproj[j]].weight].name);
		out[j] = ksig_arg(T, sig, a);
	}

	/* in clusters of BWD_CLUSTER (every pair, checked above) the tiles are
	 * unrolled: the second sums its tiles before it waits on the first's
	 * flag, then has all its loads of the slot in flight at once; the
	 * first's stores, which the second waits for, go out together */
	enum { NTB = MX_MAXPROJ * 8 / BWD_CLUSTER };
	int ntb = T->nbdproj * 8 / BWD_CLUSTER;
	CHECK(T->nbdproj * 8 % BWD_CLUSTER == 0 && ntb <= NTB);
	LLVMValueRef full = ieq(I, nrank, ci32(I, BWD_CLUSTER));
	IfBlk fu, fl;
	if_begin(I, &fu, full, "dw_full");
	{
		LLVMValueRef at[NTB][4];
		Var sum[NTB][4];
		for (int t = 0; t < ntb; t++) {
			LLVMValueRef jk = iadd(I, rank, ci32(I, BWD_CLUSTER * t)), v[4];
			dw_tile_sum(bw, jk, nrank, v);
			dw_tile_at(bw, out, jk, base, at[t]);
			for (int e = 0; e < 4; e++)
				sum[t][e] = var_init(I, v[e], "dw_sum");
		}
		IfBlk fs, fw;
		if_begin(I, &fs, second, "dw_second");
		if_begin(I, &fw, t0, "dw_wait");
		LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "dw_spin");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "dw_flag");
		LLVMBuildBr(I->b, spin);
		LLVMPositionBuilderAtEnd(I->b, spin);
		LLVMBuildCondBr(I->b, ieq(I, ld_volatile(I, I->i32, flag, 4), ci32(I, 0)), spin, done);
		LLVMPositionBuilderAtEnd(I->b, done);
		fence_gpu(I);
		if_end(I, &fw);
		bar_sync(I);
		LLVMValueRef o[NTB][4];
		for (int t = 0; t < ntb; t++)
			for (int e = 0; e < 4; e++)
				o[t][e] = ld_volatile(I, I->f32, at[t][e], 4);
		for (int t = 0; t < ntb; t++)
			for (int e = 0; e < 4; e++)
				var_set(I, sum[t][e], fadd(I, o[t][e], var_get(I, sum[t][e])));
		if_end(I, &fs);
		for (int t = 0; t < ntb; t++)
			for (int e = 0; e < 4; e++)
				st(I, var_get(I, sum[t][e]), at[t][e], 4);
	}
	if_end(I, &fu);
	/* a cluster of one block (a head with one block, never paired): one
	 * loop over the tiles */
	if_begin(I, &fl, LLVMBuildNot(I->b, full, ""), "dw_loop");
	Loop L;
	loop_begin(I, &L, rank, ci32(I, T->nbdproj * 8), nrank, "dwt");
	LLVMValueRef jk = loop_i(I, &L), acc[4], at[4];
	dw_tile_sum(bw, jk, nrank, acc);
	dw_tile_at(bw, out, jk, base, at);
	for (int e = 0; e < 4; e++)
		st(I, acc[e], at[e], 4);
	loop_end(I, &L);
	if_end(I, &fl);
	/* the first of a pair publishes: every thread's sums are in memory
	 * (fence) before the flag that lets the second read them */
	IfBlk ff;
	if_begin(I, &ff, land(I, paired, LLVMBuildNot(I->b, second, "")), "dw_first");
	fence_gpu(I);
	bar_sync(I);
	IfBlk fp;
	if_begin(I, &fp, t0, "dw_pub");
	st_volatile(I, one, flag, 4);
	if_end(I, &fp);
	if_end(I, &ff);
	cluster_sync(I);
}

/* the message at slot s's row end: the chunks after it, then uR */
static LLVMValueRef ue_at(Bwd *bw, Maps *rm, Var uR[4], int s)
{
	Irb *I = &bw->T->I;
	return fadd(I, fmul(I, var_get(I, rm->A[s]), var_get(I, uR[slot_c(s)])), var_get(I, rm->B[s]));
}

/* One group of the tile (16 rows of C steps from token bw->gb): pass A,
 * the rows' starting h and ending messages, then the segments from the
 * end; uR, the message entering the group from the right, leaves as the
 * one entering the group before it. */
static void bwd_group(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG, Var uR[4])
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	LLVMValueRef gb = bw->gb;
	LLVMValueRef gi = idiv(I, gb, ci32(I, 16 * T->chunk));
	LLVMValueRef hg[4];
	for (int c = 0; c < 4; c++)
		hg[c] = ld(I, I->f32, gep_f32(I, ckpt, tile_chan(T, ln, gi, NG, ln->ch[c])), 4);
	/* pass A: chunk maps forward (for h) and backward (for u) in one sweep */
	Maps fm, rm;
	maps_init(T, &fm, "f");
	maps_init(T, &rm, "r");
	{
		int wsave = gate_frags_hold(T, ln);
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, T->chunk);
		L.unroll = 0;
		Step stp;
		step_gates(T, ln, &stp, gb, i, 0);
		LLVMValueRef dy[TM_SLOTS];
		load_dy(T, ln, &stp, dy);
		for (int s = 0; s < TM_SLOTS; s++) {
			maps_push_fwd(T, &fm, s, stp.a_eff[s], stp.b_eff[s]);
			maps_push_bwd(T, &rm, s, stp.a_eff[s], eval_gy(T, ln, &stp, s, cf32(I, 0.0), dy[s]));
		}
		if (bw->sm.nh > 0) {
			/* the map of steps 0 .. i: h before step i + 1 */
			IfBlk f;
			if_begin(I, &f, land(I, ilt(I, i, ci32(I, T->chunk - 1)), LLVMBuildICmp(I->b, LLVMIntSGE, i, ci32(I, bw->sm.hm0), "")), "hmap");
			hmap_store(bw, isub(I, i, ci32(I, bw->sm.hm0)), &fm);
			if_end(I, &f);
		}
		loop_end(I, &L);
		if (bw->sm.nbm > 0) {
			/* the chunk's map so far, at every segment end but the last */
			LLVMValueRef k = idiv(I, loop_i(I, &Ls), ci32(I, T->seg));
			IfBlk f;
			if_begin(I, &f, ilt(I, k, ci32(I, bw->sm.nbm)), "bmap");
			for (int s = 0; s < TM_SLOTS; s++) {
				st(I, var_get(I, fm.A[s]), smem_ptr(I, bmap_at(bw, k, s, 0)), 4);
				st(I, var_get(I, fm.B[s]), smem_ptr(I, bmap_at(bw, k, s, 1)), 4);
			}
			if_end(I, &f);
		}
		loop_end(I, &Ls);
		ln->wmat_smem = wsave;
	}
	LLVMValueRef fA[4], fB[4], rA[4], rB[4];
	warp_scan_fwd(T, ln, &fm, fA, fB);
	warp_scan_bwd(T, ln, &rm, rA, rB);
	/* the rows' ending messages; with the look-back, once the first reverse
	 * step needs them: the other blocks' maps have had the time of h and
	 * the segment's staging to arrive */
	Var h0[TM_SLOTS], ue[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		h0[s] = var_init(I, fadd(I, fmul(I, var_get(I, fm.A[s]), hg[slot_c(s)]), var_get(I, fm.B[s])), "h0");
		ue[s] = T->v->bwd_lookback ? var_new(I, I->f32, "ue") : var_init(I, ue_at(bw, &rm, uR, s), "ue");
	}
	if (T->v->bwd_lookback)
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
	/* segments of S steps from the end of the chunk */
	bw->h0 = h0;
	Var h[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++)
		h[s] = var_new(I, I->f32, "h");
	for (int sg = T->chunk / T->seg - 1; sg >= 0; sg--) {
		int s0 = sg * T->seg;
		bw->hm = sg >= T->chunk / T->seg - bw->sm.nh;
		for (int s = 0; s < TM_SLOTS; s++)
			var_set(I, h[s], var_get(I, h0[s]));
		/* (a segment that reads pass A's maps needs no h here) */
		if (!bw->hm && s0 > 0 && bw->sm.nbm > 0) {
			LLVMValueRef k = ci32(I, sg - 1);   /* the boundary before this segment */
			for (int s = 0; s < TM_SLOTS; s++) {
				LLVMValueRef A = ld(I, I->f32, smem_ptr(I, bmap_at(bw, k, s, 0)), 4);
				LLVMValueRef B = ld(I, I->f32, smem_ptr(I, bmap_at(bw, k, s, 1)), 4);
				var_set(I, h[s], fadd(I, fmul(I, A, var_get(I, h0[s])), B));
			}
		} else if (!bw->hm && s0 > 0) {
			int was = gate_frags_hold(T, ln);
			Loop Ls, L;
			LLVMValueRef i = seg_loop_begin(T, ln, &Ls, &L, gb, s0);
			L.unroll = 0;
			Step stp;
			step_gates(T, ln, &stp, gb, i, 0);
			for (int s = 0; s < TM_SLOTS; s++)
				var_set(I, h[s], fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]));
			seg_loop_end(T, &Ls, &L);
			ln->wmat_smem = was;
		}
		/* the segment's own steps, staged once for both of its sweeps; a
		 * chunk of one segment is still staged from pass A */
		if (T->chunk == ln->seg_n)
			ln->seg_i0 = ci32(I, 0);
		else
			seg_stage(T, ln, gb, ci32(I, s0));
		if (!bw->hm) {
			int was = gate_frags_hold(T, ln);
			Loop L;
			loop_begin(I, &L, ci32(I, 0), ci32(I, T->seg), ci32(I, 1), "si");
			LLVMValueRef si = loop_i(I, &L);
			Step stp;
			step_gates(T, ln, &stp, gb, iadd(I, si, ci32(I, s0)), 0);
			for (int s = 0; s < TM_SLOTS; s++) {
				st(I, var_get(I, h[s]), smem_ptr(I, hprev_at(bw, si, s)), 4);
				var_set(I, h[s], fadd(I, fmul(I, stp.a_eff[s], var_get(I, h[s])), stp.b_eff[s]));
			}
			loop_end(I, &L);
			ln->wmat_smem = was;
		}
		if (T->v->bwd_lookback && sg == T->chunk / T->seg - 1) {
			lb_bwd_carry(T, ln, bw->sig, gi, NG, uR);
			for (int s = 0; s < TM_SLOTS; s++)
				var_set(I, ue[s], ue_at(bw, &rm, uR, s));
		}
		/* the weights' fragments held in registers over every gate sweep
		 * (gate_frags_hold): re-read by every warp at every step, they were
		 * most of this kernel's shared-memory wavefronts. Over the reverse
		 * sweep, with dx's as well (32 registers more for RG-LRU), at chunk
		 * 8 only: from chunk 16 on ptxas 13.0 spills 8-240 bytes with them
		 * held there (24-72 with the gates' alone) */
		LLVMValueRef wdx[MX_MAXPROJ][4][2][2];
		int wsave = ln->wmat_smem;
		if (T->nbdproj > 0 && T->chunk <= 8) {
			for (int j = 0; j < T->nbdproj; j++)
				for (int ks = 0; ks < 4; ks++)
					wmat_dx_frags(T, ln, j, ks, wdx[j][ks]);
			bw->wdx = wdx;
			wsave = gate_frags_hold(T, ln);
		}
		{
			Loop L;
			loop_begin(I, &L, ci32(I, 0), ci32(I, T->seg), ci32(I, 1), "ri");
			LLVMValueRef si = isub(I, ci32(I, T->seg - 1), loop_i(I, &L));
			bwd_step(bw, iadd(I, si, ci32(I, s0)), si, ue);
			loop_end(I, &L);
		}
		bw->wdx = NULL;
		ln->wmat_smem = wsave;
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
	emit_split(T, bw->ln, in, bwd_group_body, &ga);
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

/* single pass: one group per trip from the sequence's end, block k of G
 * taking groups NG - 1 - k - G i, the message entering each from the
 * look-back (lb_bwd_carry) */
static void bwd_groups_lookback(Bwd *bw, LLVMValueRef ckpt, LLVMValueRef NG)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	/* the window covers the groups of at most LB_BWD_MAXG blocks: a larger
	 * grid would fold too few maps, so it fails loudly */
	IfBlk big;
	if_begin(I, &big, ilt(I, ci32(I, LB_BWD_MAXG), nctaid(I, 0)), "lb_big");
	irb_trap(I);
	if_end(I, &big);
	Var uR[4];
	for (int c = 0; c < 4; c++)
		uR[c] = var_init(I, cf32(I, 0.0), "uR");
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
	loop_end(I, &Lg);
	/* the block's last group: the trip after it never comes. Every block
	 * has one (G <= NG), so tok_tail_at's test holds here */
	if (tok_fused(T))
		tok_tail_at(bw, NG, var_get(I, last));
}

void tmpl_bwd_apply(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	PartMap pm;
	part_map(T, &pm);
	int lb = T->v->bwd_lookback;
	Bwd bw = { .T = T, .pm = &pm };
	bw.sm = bwd_smem(T, &pm);
	/* dproj buffers: step si - 1 writes while slower warps may still read
	 * step si's, so a segment needs at least two (chunks are >= 8) */
	CHECK(T->nbdproj == 0 || T->seg >= 2);
	char sm[32];
	snprintf(sm, sizeof sm, "%d", bw.sm.total);
	Launch *l = tmpl_launch(T, 0, "bwd_apply", "G", "H", "B", 128, sm);
	l->minblocks = 1;
	l->resident = lb;
	if (T->nbdproj > 0)
		snprintf(l->cluster, sizeof l->cluster, "CS");
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dy", I->gptr);
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
	if (lb) {
		ksig_add(T, &l->sig, "ws:baggA", I->gptr);
		ksig_add(T, &l->sig, "ws:baggB", I->gptr);
	} else {
		ksig_add(T, &l->sig, "ws:ucarry", I->gptr);
	}
	char a[64];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[T->bdproj[j]].weight].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	if (T->nbdproj > 0)
		ksig_add(T, &l->sig, "ws:dwsync", I->gptr);
	ksig_add(T, &l->sig, "ws:part_chan", I->gptr);
	ksig_add(T, &l->sig, "ws:part_scal", I->gptr);
	ksig_shape(T, &l->sig);
	if (!lb)
		ksig_add(T, &l->sig, "i32:NT", I->i32);
	ksig_add(T, &l->sig, "i32:B", I->i32);
	tmpl_open(T, l);
	bw.sig = &l->sig;
	/* dx's transposed projection takes the weights' rows in the slots'
	 * order (wmat_dx_frags): about 10 registers more, which kernels with
	 * several groups per quad do not have (prefix 64 and 128 at chunk 32
	 * spilled) */
	T->k.slots_adjacent = T->nbdproj == 0 || T->quad_groups == 1;
	Lanes ln;
	T->k.gates_inline = 1;   /* it needs the projections' adjoints, so it recomputes them */
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
		bwd_groups_lookback(&bw, ckpt, NG);
	else
		bwd_groups_tiles(&bw, ckpt, NG, ksig_arg(T, &l->sig, "i32:NT"), ksig_arg(T, &l->sig, "ws:ucarry"));

	/* partials of this block: slot (ctaid.x, b, head) */
	LLVMValueRef slot = iadd(I, imul(I, ctaid(I, 0), Bn), ln.b);
	if (T->nbdproj > 0)
		dw_cluster_write(&bw, &l->sig, Bn, H);
	if (tok_fused(T))
		tok_tail_flush(T, &ln, &l->sig, bw.sm.tail, slot);
	LLVMValueRef pc = ksig_arg(T, &l->sig, "ws:part_chan");
	for (int p = 0; p < mx->nparam; p++) {
		if (pm.cidx[p] < 0)
			continue;
		for (int c = 0; c < 4; c++) {
			LLVMValueRef v = var_get(I, bw.cacc[p][c]);
			for (int m = 4; m < 32; m <<= 1)
				v = fadd(I, v, shfl_xor_f(I, v, m));
			IfBlk f;
			if_begin(I, &f, ieq(I, ln.g, ci32(I, 0)), "pc");
			LLVMValueRef row = iadd(I, imul(I, slot, ci32(I, pm.nchan)), ci32(I, pm.cidx[p]));
			LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, ln.D)),
			                        sext64(I, iadd(I, imul(I, ln.head, ci32(I, 64)), ln.ch[c])));
			st(I, v, gep_f32(I, pc, idx), 4);
			if_end(I, &f);
		}
	}
	if (pm.nscal > 0) {
		LLVMValueRef ps = ksig_arg(T, &l->sig, "ws:part_scal");
		for (int p = 0; p < mx->nparam; p++) {
			if (pm.sidx[p] < 0)
				continue;
			LLVMValueRef v = var_get(I, bw.sacc[p]);
			for (int m = 1; m < 32; m <<= 1)
				v = fadd(I, v, shfl_xor_f(I, v, m));
			IfBlk f;
			if_begin(I, &f, ieq(I, ln.lane, ci32(I, 0)), "ps");
			st(I, v, smem_ptr(I, iadd(I, ci32(I, bw.sm.scal), imul(I, iadd(I, imul(I, ln.w, ci32(I, pm.nscal)), ci32(I, pm.sidx[p])), ci32(I, 4)))), 4);
			if_end(I, &f);
		}
		bar_sync(I);
		IfBlk f;
		if_begin(I, &f, ieq(I, ln.tid, ci32(I, 0)), "ps0");
		for (int p = 0; p < mx->nparam; p++) {
			if (pm.sidx[p] < 0)
				continue;
			LLVMValueRef v = cf32(I, 0.0);
			for (int w = 0; w < 4; w++)
				v = fadd(I, v, ld(I, I->f32, smem_ptr(I, ci32(I, bw.sm.scal + (w * pm.nscal + pm.sidx[p]) * 4)), 4));
			LLVMValueRef idx = iadd(I, imul(I, iadd(I, imul(I, slot, H), ln.head), ci32(I, pm.nscal)), ci32(I, pm.sidx[p]));
			st(I, v, gep_f32(I, ps, sext64(I, idx)), 4);
		}
		if_end(I, &f);
	}
	irb_ret(I);
}

/* param_reduce sums the per-block partials of every parameter gradient in
 * a fixed order: each parameter has its range of blocks (pr_kind), whose
 * threads cover its elements. */
/* A scalar's partials (every block and head of bwd_apply, every warp of
 * tok_bwd) summed by the 256 threads of its one block (mine): strided
 * sums, then a tree in shared memory -- an order fixed by the shape. */
static void scalar_reduce(Tmpl *T, const KSig *sig, const PartMap *pm, int p, LLVMValueRef mine, LLVMValueRef out,
                          LLVMValueRef nslot)
{
	Irb *I = &T->I;
	LLVMValueRef tid = tid_x(I);
	IfBlk f;
	if_begin(I, &f, mine, "scal");
	Var acc = var_init(I, cf32(I, 0.0), "acc");
	for (int src = 0; src < 1 + (T->ntokval > 0 && !tok_fused(T)); src++) {
		LLVMValueRef base = ksig_arg(T, sig, src ? "ws:part_tscal" : "ws:part_scal");
		LLVMValueRef n = src ? ksig_arg(T, sig, "i32:NTB*8") : nslot;
		Loop L;
		loop_begin(I, &L, tid, n, ci32(I, 256), "s");
		LLVMValueRef k = iadd(I, imul(I, sext64(I, loop_i(I, &L)), ci64(I, pm->nscal)), ci64(I, pm->sidx[p]));
		var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, base, k), 4)));
		loop_end(I, &L);
	}
	LLVMValueRef me = smem_ptr(I, imul(I, tid, ci32(I, 4)));
	st(I, var_get(I, acc), me, 4);
	bar_sync(I);
	for (int w = 128; w >= 1; w >>= 1) {
		IfBlk g;
		if_begin(I, &g, ilt(I, tid, ci32(I, w)), "tree");
		LLVMValueRef o = ld(I, I->f32, smem_ptr(I, imul(I, iadd(I, tid, ci32(I, w)), ci32(I, 4))), 4);
		st(I, fadd(I, ld(I, I->f32, me, 4), o), me, 4);
		if_end(I, &g);
		bar_sync(I);
	}
	IfBlk g;
	if_begin(I, &g, ieq(I, tid, ci32(I, 0)), "out");
	st(I, ld(I, I->f32, me, 4), out, 4);
	if_end(I, &g);
	if_end(I, &f);
}

/* the blocks of parameter p's range in param_reduce's grid: a scalar's
 * one, a channel vector's one per 256 channels, a weight's one per 256 of
 * its 64 D entries, none for a weight no projection uses (no gradient path) */
enum { PR_NONE, PR_SCALAR, PR_CHANNEL, PR_WEIGHT };
static int pr_kind(const Tmpl *T, int p)
{
	const Mixer *mx = T->mx;
	if (mx->param[p].kind == PK_SCALAR)
		return PR_SCALAR;
	if (mx->param[p].kind != PK_BLOCKDIAG)
		return PR_CHANNEL;
	for (int k = 0; k < T->nbdproj; k++)
		if (mx->proj[T->bdproj[k]].weight == p)
			return PR_WEIGHT;
	return PR_NONE;
}

void tmpl_param_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	PartMap pm;
	part_map(T, &pm);
	/* one 1-D grid of the parameters' block ranges in mixer order: a grid
	 * of 256 blocks per parameter, most of them idle, cost its launch a
	 * few microseconds */
	int cnt[4] = { 0 };
	for (int p = 0; p < mx->nparam; p++)
		cnt[pr_kind(T, p)]++;
	char g0[64];
	snprintf(g0, sizeof g0, "%d*cdiv(D*64,256)+%d*cdiv(D,256)+%d", cnt[PR_WEIGHT], cnt[PR_CHANNEL], cnt[PR_SCALAR]);
	Launch *l = tmpl_launch(T, 0, "param_reduce", g0, "1", "1", 256, "1024");
	char a[64];
	for (int p = 0; p < mx->nparam; p++) {
		snprintf(a, sizeof a, "grad:%s", mx->param[p].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[T->bdproj[j]].weight].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	ksig_add(T, &l->sig, "ws:part_chan", I->gptr);
	ksig_add(T, &l->sig, "ws:part_scal", I->gptr);
	if (T->ntokval > 0)
		ksig_add(T, &l->sig, "ws:part_tchan", I->gptr);
	if (T->ntokval > 0 && !tok_fused(T)) {
		ksig_add(T, &l->sig, "ws:part_tscal", I->gptr);
		ksig_add(T, &l->sig, "i32:NXB", I->i32);
		ksig_add(T, &l->sig, "i32:NTB*8", I->i32);
	}
	ksig_add(T, &l->sig, "i32:G", I->i32);
	if (T->nbdproj > 0)
		ksig_add(T, &l->sig, "i32:GP", I->i32);   /* weight partials: one slot per pair of bwd_apply clusters */
	ksig_add(T, &l->sig, "i32:B", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	tmpl_open(T, l);
	LLVMValueRef G = ksig_arg(T, &l->sig, "i32:G");
	LLVMValueRef Bn = ksig_arg(T, &l->sig, "i32:B");
	LLVMValueRef D = ksig_arg(T, &l->sig, "i32:D");
	LLVMValueRef H = idiv(I, D, ci32(I, 64));
	LLVMValueRef nslot = imul(I, G, Bn);
	LLVMValueRef nb[4] = { NULL, ci32(I, 1), idiv(I, iadd(I, D, ci32(I, 255)), ci32(I, 256)),
	                       idiv(I, iadd(I, imul(I, D, ci32(I, 64)), ci32(I, 255)), ci32(I, 256)) };
	LLVMValueRef first = ci32(I, 0);   /* the range's first block */
	for (int p = 0; p < mx->nparam; p++) {
		int kind = pr_kind(T, p);
		if (kind == PR_NONE)
			continue;   /* an empty range */
		LLVMValueRef rb = isub(I, ctaid(I, 0), first);   /* the block within the range */
		LLVMValueRef mine = land(I, ige(I, rb, ci32(I, 0)), ilt(I, rb, nb[kind]));
		LLVMValueRef e = iadd(I, imul(I, rb, ci32(I, 256)), tid_x(I));
		first = iadd(I, first, nb[kind]);
		LLVMValueRef out = ksig_arg(T, &l->sig, (snprintf(a, sizeof a, "grad:%s", mx->param[p].name), a));
		if (kind == PR_SCALAR) {
			scalar_reduce(T, &l->sig, &pm, p, mine, out, imul(I, nslot, H));
			continue;
		}
		LLVMValueRef src = NULL, n = NULL, stride = NULL, off = NULL, ns = nslot;
		if (kind == PR_WEIGHT) {
			snprintf(a, sizeof a, "ws:part_%s", mx->param[p].name);
			src = ksig_arg(T, &l->sig, a);
			n = imul(I, H, ci32(I, 4096));
			stride = n;
			off = ci32(I, 0);
			ns = imul(I, ksig_arg(T, &l->sig, "i32:GP"), Bn);
		} else {
			src = ksig_arg(T, &l->sig, "ws:part_chan");
			n = D;
			stride = imul(I, D, ci32(I, pm.nchan));
			off = imul(I, D, ci32(I, pm.cidx[p]));
		}
		IfBlk f;
		if_begin(I, &f, land(I, mine, ilt(I, e, n)), "p");
		Var acc = var_init(I, cf32(I, 0.0), "acc");
		Loop L;
		loop_begin(I, &L, ci32(I, 0), ns, ci32(I, 1), "s");
		LLVMValueRef sbase = iadd(I, imul(I, sext64(I, loop_i(I, &L)), sext64(I, stride)), sext64(I, off));
		var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, src, iadd(I, sbase, sext64(I, e))), 4)));
		loop_end(I, &L);
		if (T->ntokval > 0) {
			/* a token projection's weight: tok_dx's partials, or bwd_apply's
			 * (tok_tail_flush: a slot per block, as part_chan) */
			int j = -1;
			for (int k = 0; k < T->ntokproj; k++)
				if (mx->proj[T->tokproj[k]].weight == p)
					j = k;
			if (mx->param[p].kind == PK_CHANNEL && j >= 0) {
				LLVMValueRef tsrc = ksig_arg(T, &l->sig, "ws:part_tchan");
				Loop Lq;
				loop_begin(I, &Lq, ci32(I, 0), tok_fused(T) ? nslot : ksig_arg(T, &l->sig, "i32:NXB"), ci32(I, 1), "ts");
				LLVMValueRef row = iadd(I, imul(I, loop_i(I, &Lq), ci32(I, T->ntokproj)), ci32(I, j));
				LLVMValueRef k = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, e));
				var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, tsrc, k), 4)));
				loop_end(I, &Lq);
			}
		}
		st(I, var_get(I, acc), gep_f32(I, out, sext64(I, e)), 4);
		if_end(I, &f);
	}
	irb_ret(I);
}
