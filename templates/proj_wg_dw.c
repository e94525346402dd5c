/* proj_dw on Hopper's warpgroup tensor cores (sm_90a): dW's slab sums
 * with both operands MN-major (proj_wg.h's ring and copies). On an H100
 * it went from 2.7 to 1.55 ms at 1x131072x4096 (bench/experiments/
 * 2026-12-06-proj-dw-wgmma/). Every thread copies: a producer warpgroup,
 * as proj_fwd's, did not pay here (2026-12-06-proj-wgmma-dw-producer/,
 * built in f52c0a8). */
#include "proj_wg.h"
#include "diag.h"

/* proj_dw on wgmma: dW_j[hp][k][m] = sum over the slab's rows of
 * x[row][hp K + k] dP_j[row][hp K + m], a block per (k tile, m tile) of
 * head hp and slab as proj.c's, D = A B^T with A = x^T (64 k by the rows)
 * and B = dP_j^T: both read as loaded, blocks of 64 rows of 128 bytes
 * whose rows are the contraction, so MN-major (wgmma's transpose bits).
 * A stage of the ring holds a row tile's x block and each adjoint's; one
 * trip a row tile, the accumulators across the slab, written once. */
typedef struct {
	ProjLanes p;
	LLVMValueRef x, dp[MX_MAXPROJ], xcol, dcol, t1;
	int stage;   /* bytes of a stage: x's block, then each adjoint's */
	Ring rg;
} WgDw;

/* row tile t's blocks (when t < t1) into ring slot `slot`, then a commit */
static void dw_copy(Tmpl *T, const WgDw *d, LLVMValueRef t, LLVMValueRef slot)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, d->t1), "dw_copy");
	LLVMValueRef base = imul(I, slot, ci32(I, d->stage));
	copy_block(T, &d->p, d->x, t, d->xcol, base, tid_x(I));
	for (int j = 0; j < T->napj; j++)
		copy_block(T, &d->p, d->dp[j], t, d->dcol, iadd(I, base, ci32(I, (1 + j) * WG_BLOCK)), tid_x(I));
	if_end(I, &f);
	cp_async_commit(I);
}

/* The slab's row tiles: each one's buffer ready (this thread's copies, a
 * block barrier), the refill ahead, its 4 x 16 contraction rows per
 * adjoint into the accumulators */
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
	LLVMValueRef all[64];
	for (int j = 0; j < na; j++)
		for (int e = 0; e < 32; e++)
			all[32 * j + e] = var_get(I, acc[j][e]);
	wg_fence(I);
	for (int ks = 0; ks < 4; ks++)   /* contraction rows 16 ks.. of the tile */
		for (int j = 0; j < na; j++)
			wg_mma64(I, all + 32 * j, wg_desc(I, base, 128 * 16 * ks), wg_desc(I, iadd(I, base, ci32(I, (1 + j) * WG_BLOCK)), 128 * 16 * ks),
			         1, 1);
	wg_commit(I);
	wg_wait(I, 0, all, 32 * na);
	for (int j = 0; j < na; j++)
		for (int e = 0; e < 32; e++)
			var_set(I, acc[j][e], all[32 * j + e]);
	loop_end(I, &L);
}

void proj_dw_wg(Tmpl *T)
{
	Irb *I = &T->I;
	int K = T->mx->k, nmt = K / 64, na = T->napj;
	WgDw d;
	d.stage = (1 + na) * WG_BLOCK;
	d.rg = (Ring){ WG_STAGES, WG_AHEAD };
	Launch *l = proj_dw_open(T, WG_STAGES * d.stage, 2);
	proj_lanes(T, &l->sig, &d.p);
	wg_align_smem(I);
	const ProjLanes *p = &d.p;
	d.x = ksig_arg(T, &l->sig, "x");
	LLVMValueRef part[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		d.dp[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
		part[j] = ksig_each_arg(T, &l->sig, "part_", j);
	}
	LLVMValueRef kt = idiv(I, ctaid(I, 0), ci32(I, nmt));
	LLVMValueRef k0 = imul(I, kt, ci32(I, 64));
	LLVMValueRef m0 = imul(I, isub(I, ctaid(I, 0), imul(I, kt, ci32(I, nmt))), ci32(I, 64));
	LLVMValueRef hp = ctaid(I, 1), slab = ctaid(I, 2), GW = nctaid(I, 2);
	d.xcol = iadd(I, imul(I, hp, ci32(I, K)), k0);
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
