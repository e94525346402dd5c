/* proj_dw on Hopper's warpgroup tensor cores (sm_90a): dW's slab sums
 * with both operands MN-major (proj_wg.h's ring and copies). On an H100
 * it went from 2.7 to 1.55 ms at 1x131072x4096 (bench/experiments/
 * 2026-12-06-proj-dw-wgmma/). Every thread copies: a producer warpgroup,
 * as proj_fwd's, did not pay here (2026-12-06-proj-wgmma-dw-producer/,
 * built in f52c0a8).
 *
 * A block of one k tile read each adjoint's columns once per k tile and x's
 * once per m tile: at K = 256, 24 bytes an element through L2 for 6 from
 * memory, and Nsight Compute found L2 at 95% of its throughput (H100,
 * bench/experiments/2026-12-06-proj-l2-ncu/). DW_KT warpgroups a block,
 * one k tile each, share the adjoints' blocks of a stage: 16 bytes an
 * element at 2, 12 at 4; at 4, 1.62 -> 1.13 ms at 1x131072x4096 on an
 * H100, 96% of the copy rate (2026-12-06-proj-dw-kt/). */
#include "proj_wg.h"
#include "diag.h"

#ifndef DW_KT
#define DW_KT 4   /* k tiles (warpgroups) a block: 1, 2 or 4 */
#endif
_Static_assert(DW_KT == 1 || DW_KT == 2 || DW_KT == 4, "a head's k tiles split evenly");

/* the most k tiles up to DW_KT that split the head's evenly (1, 2 or 4:
 * heads of 192 take 1; 3, the least of DW_KT and the head's tiles, had no
 * ring that fits two blocks an SM and stopped the generator) */
int proj_dw_kt(const Tmpl *T)
{
	int nkt = T->mx->k / 64, kt = DW_KT;
	while (kt > 1 && nkt % kt)
		kt /= 2;
	return proj_wgmma(T) ? kt : 1;
}

/* The ring: a stage holds kt + 2 blocks of 8 KB; kt = 1, 4 stages (96 KB);
 * kt = 2, 3 stages (96 KB); kt = 4, 4 stages (192 KB) */
static Ring dw_ring(int kt) { return kt == 2 ? (Ring){ 3, 2 } : (Ring){ WG_STAGES, WG_AHEAD }; }

/* the blocks an SM holds: the ring's shared memory allows two at 96 KB,
 * one at 192 (228 KB an SM, 1 KB of it a block's own) */
static int dw_per_sm(int kt) { return kt == 4 ? 1 : 2; }

/* the slots the slabs are planned on: at kt = 1 the 396 its slabs have
 * always had (their order is the sums'), else the kernel's own */
int proj_dw_slots(const Tmpl *T)
{
	int kt = proj_dw_kt(T);
	return kt == 1 ? PROJ_DW_SLOTS : PROJ_PLAN_SMS * dw_per_sm(kt);
}

/* proj_dw on wgmma: dW_j[hp][k][m] = sum over the slab's rows of
 * x[row][hp K + k] dP_j[row][hp K + m], a block per (kt k tiles, m tile)
 * of head hp and slab, warpgroup wgi the k tile kg kt + wgi (as proj.c's
 * at kt = 1), D = A B^T with A = x^T (64 k by the rows)
 * and B = dP_j^T: both read as loaded, blocks of 64 rows of 128 bytes
 * whose rows are the contraction, so MN-major (wgmma's transpose bits).
 * A stage of the ring holds a row tile's x blocks (one a k tile) and each
 * adjoint's; one trip a row tile, the accumulators across the slab,
 * written once. */
typedef struct {
	ProjLanes p;
	LLVMValueRef x, dp[MX_MAXPROJ], xcol, dcol, t1;
	LLVMValueRef wgi, ltid;   /* this thread's warpgroup, its index in it */
	int kt;      /* k tiles: x blocks a stage */
	int stage;   /* bytes of a stage: x's blocks, then each adjoint's */
	Ring rg;
} WgDw;

/* block b of a stage (x's k tiles, then the adjoints) by warpgroup b % kt */
static void dw_copy_one(Tmpl *T, const WgDw *d, LLVMValueRef t, LLVMValueRef base, int b)
{
	Irb *I = &T->I;
	LLVMValueRef src = b < d->kt ? d->x : d->dp[b - d->kt];
	LLVMValueRef col = b >= d->kt ? d->dcol : b ? iadd(I, d->xcol, ci32(I, 64 * b)) : d->xcol;
	LLVMValueRef at = b ? iadd(I, base, ci32(I, b * WG_BLOCK)) : base;
	if (d->kt == 1) {   /* every thread copies every block */
		copy_block(T, &d->p, src, t, col, at, tid_x(I));
		return;
	}
	IfBlk f;
	if_begin(I, &f, ieq(I, d->wgi, ci32(I, b % d->kt)), "dw_copy_wg");
	copy_block(T, &d->p, src, t, col, at, d->ltid);
	if_end(I, &f);
}

/* row tile t's blocks (when t < t1) into ring slot `slot`, then a commit */
static void dw_copy(Tmpl *T, const WgDw *d, LLVMValueRef t, LLVMValueRef slot)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, d->t1), "dw_copy");
	LLVMValueRef base = imul(I, slot, ci32(I, d->stage));
	for (int b = 0; b < d->kt + T->napj; b++)
		dw_copy_one(T, d, t, base, b);
	if_end(I, &f);
	cp_async_commit(I);
}

/* The slab's row tiles: each one's buffer ready (this thread's copies, a
 * block barrier), the refill ahead, its 4 x 16 contraction rows per
 * adjoint into the accumulators. (Its copies by TMA, thread 0 issuing a
 * stage on an mbarrier every thread waited on, were 6-7% slower on an
 * H100: bench/experiments/2026-12-07-dw-tma/.) */
static void dw_multiply(Tmpl *T, WgDw *d, LLVMValueRef tstart, Var acc[][32])
{
	Irb *I = &T->I;
	int na = T->napj;
	const Ring *rg = &d->rg;
	for (int st = 0; st < rg->ahead; st++)
		dw_copy(T, d, iadd(I, tstart, ci32(I, st)), ci32(I, st));
	Loop L;
	loop_begin(I, &L, tstart, d->t1, ci32(I, 1), "rt");
	LLVMValueRef t = loop_i(I, &L), n = isub(I, t, tstart);
	ring_ready(I, rg);
	dw_copy(T, d, iadd(I, t, ci32(I, rg->ahead)), ring_slot(I, rg, n, rg->ahead));
	LLVMValueRef base = imul(I, ring_slot(I, rg, n, 0), ci32(I, d->stage));
	LLVMValueRef abase = d->kt == 1 ? base : iadd(I, base, imul(I, d->wgi, ci32(I, WG_BLOCK)));
	LLVMValueRef a[2][32];
	for (int j = 0; j < na; j++)
		for (int e = 0; e < 32; e++)
			a[j][e] = var_get(I, acc[j][e]);
	wg_fence(I);
	for (int ks = 0; ks < 4; ks++)   /* contraction rows 16 ks.. of the tile */
		for (int j = 0; j < na; j++)
			wg_mma64(I, a[j], wg_desc(I, abase, 128 * 16 * ks),
			         wg_desc(I, iadd(I, base, ci32(I, (d->kt + j) * WG_BLOCK)), 128 * 16 * ks), 1, 1);
	wg_commit(I);
	wg_wait_acc(I, a, na);
	for (int j = 0; j < na; j++)
		for (int e = 0; e < 32; e++)
			var_set(I, acc[j][e], a[j][e]);
	loop_end(I, &L);
}

void proj_dw_wg(Tmpl *T)
{
	Irb *I = &T->I;
	int K = T->mx->k, nmt = K / 64, na = T->napj;
	WgDw d;
	d.kt = proj_dw_kt(T);
	d.stage = (d.kt + na) * WG_BLOCK;
	d.rg = dw_ring(d.kt);
	int smem = d.rg.stages * d.stage;
	CHECK(dw_per_sm(d.kt) * (smem + TARGET_SMEM_RESERVED) <= T->smem_sm);   /* its blocks an SM fit */
	Launch *l = proj_dw_open(T, smem, PROJ_THREADS * d.kt, dw_per_sm(d.kt));
	proj_lanes(T, &l->sig, &d.p);
	d.wgi = d.ltid = NULL;
	if (d.kt > 1) {   /* a warpgroup's own warps and threads */
		d.wgi = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 7), "");
		d.ltid = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 127), "");
		d.p.w = LLVMBuildAnd(I->b, d.p.w, ci32(I, 3), "");
	}
	wg_align_smem(I);
	const ProjLanes *p = &d.p;
	d.x = ksig_arg(T, &l->sig, "x");
	LLVMValueRef part[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		d.dp[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
		part[j] = ksig_each_arg(T, &l->sig, "part_", j);
	}
	LLVMValueRef kg = idiv(I, ctaid(I, 0), ci32(I, nmt));   /* the block's k tiles kg kt.. */
	LLVMValueRef k0 = imul(I, kg, ci32(I, 64 * d.kt));
	LLVMValueRef m0 = imul(I, isub(I, ctaid(I, 0), imul(I, kg, ci32(I, nmt))), ci32(I, 64));
	LLVMValueRef hp = ctaid(I, 1), slab = ctaid(I, 2), GW = nctaid(I, 2);
	d.xcol = iadd(I, imul(I, hp, ci32(I, K)), k0);
	if (d.kt > 1)   /* this warpgroup's k tile, for its rows of dW */
		k0 = iadd(I, k0, imul(I, d.wgi, ci32(I, 64)));
	d.dcol = iadd(I, imul(I, hp, ci32(I, K)), m0);
	/* the slab's rows: whole tiles of 64, slab after slab (proj.c's order) */
	LLVMValueRef ntile = idiv(I, iadd(I, p->BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	LLVMValueRef per = idiv(I, iadd(I, ntile, isub(I, GW, ci32(I, 1))), GW);
	LLVMValueRef tstart = imul(I, slab, per);
	LLVMValueRef t1 = imul(I, iadd(I, slab, ci32(I, 1)), per);
	d.t1 = LLVMBuildSelect(I->b, ilt(I, t1, ntile), t1, ntile, "");
	Var acc[2][32];
	for (int j = 0; j < na; j++)
		for (int e = 0; e < 32; e++)
			acc[j][e] = var_init(I, cf32(I, 0.0), "dw");
	dw_multiply(T, &d, tstart, acc);
	/* the slab's partial: [GW][H][K][K], c0 c1 at k = 16w + g, c2 c3 at + 8 */
	LLVMTypeRef v2f = LLVMVectorType(I->f32, 2);
	for (int j = 0; j < na; j++)
		for (int r = 0; r < 2; r++) {
			LLVMValueRef k = acc_row(I, p, k0, r);
			LLVMValueRef rowk = iadd(I, imul(I, iadd(I, imul(I, slab, idiv(I, p->D, ci32(I, K))), hp), ci32(I, K)), k);
			for (int i = 0; i < 8; i++) {
				LLVMValueRef v = LLVMGetUndef(v2f);
				for (int e = 0; e < 2; e++)
					v = LLVMBuildInsertElement(I->b, v, var_get(I, acc[j][4 * i + 2 * r + e]), ci32(I, e), "");
				LLVMValueRef idx = iadd(I, imul(I, sext64(I, rowk), ci64(I, K)), sext64(I, acc_col(I, p, m0, i)));
				st(I, v, gep_f32(I, part[j], idx), 8);
			}
		}
	irb_ret(I);
}
