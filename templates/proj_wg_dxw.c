/* proj_dxw on Hopper's warpgroup tensor cores (sm_90a): proj_dx and
 * proj_dw as one kernel, so that the adjoints bwd_apply leaves (4 bytes an
 * element at two projections) are read from memory once, not twice: 10
 * bytes an element (x, the adjoints, dx's own term, dx) where the two
 * kernels apart move 14 (bench/ROOFLINE.md, "The apart form's own floor").
 *
 * A block owns a k tile of 64 input channels of head hp and a slab of
 * rows, as proj_dw's slabs (plan.c orders their sums), and reads each row
 * tile's x columns of its k tile and every adjoint's whole head row:
 *   dW_j[hp][k0 + k][m] += x[row][k]^T dP_j[row][m]   (A = x^T, B = dP_j^T:
 *                          MN-major, as proj_dw's), warpgroup w the m
 *                          blocks of 64 w nb.. (nb = napj K / 256 of them)
 *   dx[row][k0 + k]     = own[row][k] + sum over j, m of dP_j[row][m] W_j[k0 + k][m]
 *                          (A = the adjoints as loaded, K-major, B = W's
 *                          rows k0.. staged once, transposed), warpgroup w
 *                          the 16 columns k0 + 16 w.. over the whole
 *                          contraction: each output is one warpgroup's sum,
 *                          in one order, with no partials to add.
 * Four warpgroups, one block an SM (the weight slice 64 KB and two stages
 * of a row tile, 72 KB each, at K = 256), every thread copying by
 * cp.async one stage ahead. dW's accumulators (32 registers a block of
 * 64 m) stay across the slab and leave as proj_dw's partials. Where the
 * head's m blocks do not split evenly over the warpgroups (K = 64 at two
 * projections, K = 128 at one) proj_dx and proj_dw run apart. */
#include "proj_wg.h"
#include "diag.h"

#ifndef PROJ_DXW
#define PROJ_DXW 1   /* dx and dW in one kernel where the head allows (0: proj_dx and proj_dw apart) */
#endif

enum { DXW_WGS = 4, DXW_THREADS = DXW_WGS * PROJ_THREADS, DXW_N = 64 / DXW_WGS };   /* DXW_N: dx's columns a warpgroup */

/* the head's adjoint blocks of 64 columns, all projections */
static int dxw_blocks(const Tmpl *T) { return T->napj * (T->mx->k / 64); }

int proj_dxw(const Tmpl *T) { return PROJ_DXW && proj_wgmma(T) && dxw_blocks(T) % DXW_WGS == 0; }

/* shared memory: the transposed weight blocks, then two stages of a row
 * tile (x's block of the k tile, then the adjoints' blocks in order) */
static int dxw_stage(const Tmpl *T) { return (1 + dxw_blocks(T)) * WG_BLOCK; }
static int dxw_ring(const Tmpl *T) { return dxw_blocks(T) * WG_BLOCK; }
static const Ring DXW_RING = { 2, 1 };
static int dxw_smem(const Tmpl *T) { return dxw_ring(T) + DXW_RING.stages * dxw_stage(T); }

/* a row tile's bytes through a block (x's k tile, the adjoints, dx's own
 * term and dx), for the slabs' plan */
int proj_dxw_tile_kb(const Tmpl *T) { return PROJ_ROWS * 2 * (3 * 64 + T->napj * T->mx->k) / 1024; }

typedef struct {
	ProjLanes p;
	LLVMValueRef x, dp[MX_MAXPROJ], dxd, dx, hp, k0, t1;
	LLVMValueRef wgi, ltid;   /* this thread's warpgroup, its index in it */
} Dxw;

/* row tile t's blocks (when t < t1) into stage `slot`, then a commit (a
 * group every trip, empty or not): block b, x's (b = 0) or adjoint block
 * b - 1 (projection (b - 1) / (K/64), its columns 64 ((b - 1) % (K/64))..
 * of the head), copied by warpgroup b % 4, the block chosen at run time
 * (one copy of the code: 9 blocks unrolled kept their addresses in
 * registers across the loop and spilled) */
static void dxw_copy(Tmpl *T, const Dxw *d, LLVMValueRef t, LLVMValueRef slot)
{
	Irb *I = &T->I;
	int nb = dxw_blocks(T), kbh = T->mx->k / 64;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, d->t1), "dxw_copy");
	LLVMValueRef base = iadd(I, ci32(I, dxw_ring(T)), imul(I, slot, ci32(I, dxw_stage(T))));
	LLVMValueRef hcol = imul(I, d->hp, ci32(I, T->mx->k));
	for (int s = 0; s * DXW_WGS <= nb; s++) {
		LLVMValueRef b = iadd(I, d->wgi, ci32(I, s * DXW_WGS));
		IfBlk g;
		if_begin(I, &g, LLVMBuildICmp(I->b, LLVMIntULE, b, ci32(I, nb), ""), "dxw_copy_b");
		LLVMValueRef a = isub(I, b, ci32(I, 1));   /* the adjoint block, where b > 0 */
		LLVMValueRef j = LLVMBuildUDiv(I->b, a, ci32(I, kbh), "");
		LLVMValueRef src = d->dp[0];
		for (int jj = 1; jj < T->napj; jj++)
			src = LLVMBuildSelect(I->b, ieq(I, j, ci32(I, jj)), d->dp[jj], src, "");
		LLVMValueRef acol = iadd(I, hcol, imul(I, isub(I, a, imul(I, j, ci32(I, kbh))), ci32(I, 64)));
		LLVMValueRef x = ieq(I, b, ci32(I, 0));
		src = LLVMBuildSelect(I->b, x, d->x, src, "");
		LLVMValueRef col = LLVMBuildSelect(I->b, x, iadd(I, hcol, d->k0), acol, "");
		copy_block(T, &d->p, src, t, col, iadd(I, base, imul(I, b, ci32(I, WG_BLOCK))), d->ltid);
		if_end(I, &g);
	}
	if_end(I, &f);
	cp_async_commit(I);
}

/* this thread's dx elements of the tile at row0: rows g, g + 8 of its
 * warp's 16, the pair of columns 2q of n-tiles 0, 1 of its warpgroup's 16 */
static LLVMValueRef dxw_col(Irb *I, const Dxw *d, int i)
{
	return acc_col(I, &d->p, iadd(I, d->k0, imul(I, d->wgi, ci32(I, DXW_N))), i);
}

/* dx's own terms of the tile, loaded before its wgmma so that they fly
 * while the tensor cores work (a row past B*L reads row B*L - 1) */
static void dxw_own(Tmpl *T, const Dxw *d, LLVMValueRef row0, LLVMValueRef idx[2][2], LLVMValueRef own[2][2])
{
	Irb *I = &T->I;
	const ProjLanes *p = &d->p;
	LLVMValueRef hcol = imul(I, d->hp, ci32(I, T->mx->k));
	for (int r = 0; r < 2; r++) {
		LLVMValueRef row = acc_row(I, p, row0, r);
		LLVMValueRef rr = LLVMBuildSelect(I->b, ilt(I, row, p->BL), row, isub(I, p->BL, ci32(I, 1)), "");
		for (int i = 0; i < DXW_N / 8; i++) {
			LLVMValueRef col = sext64(I, iadd(I, hcol, dxw_col(I, d, i)));
			idx[r][i] = iadd(I, imul(I, sext64(I, row), sext64(I, p->D)), col);
			own[r][i] = ld(I, I->i32, gep_bf16(I, d->dxd, iadd(I, imul(I, sext64(I, rr), sext64(I, p->D)), col)), 4);
		}
	}
}

/* The slab's row tiles: each one's stage ready (this thread's copies, a
 * block barrier), the next tile's copies, then the warpgroup's wgmma: dW
 * of its m blocks (4 steps of 16 rows each) and its 16 columns of dx (4
 * steps of 16 columns through every adjoint block), waited for; dx added
 * to its own term and written. */
static void dxw_tiles(Tmpl *T, Dxw *d, LLVMValueRef tstart, Var acc[][32])
{
	Irb *I = &T->I;
	int nb = dxw_blocks(T), per = nb / DXW_WGS;
	const Ring *rg = &DXW_RING;
	dxw_copy(T, d, tstart, ci32(I, 0));
	Loop L;
	loop_begin(I, &L, tstart, d->t1, ci32(I, 1), "rt");
	LLVMValueRef t = loop_i(I, &L), n = isub(I, t, tstart), row0 = imul(I, t, ci32(I, PROJ_ROWS));
	LLVMValueRef idx[2][2], own[2][2];
	dxw_own(T, d, row0, idx, own);
	ring_ready(I, rg);
	dxw_copy(T, d, iadd(I, t, ci32(I, 1)), ring_slot(I, rg, n, 1));
	LLVMValueRef base = iadd(I, ci32(I, dxw_ring(T)), imul(I, ring_slot(I, rg, n, 0), ci32(I, dxw_stage(T))));
	LLVMValueRef all[4 * 32 + 8];
	for (int i = 0; i < per; i++)
		for (int e = 0; e < 32; e++)
			all[32 * i + e] = var_get(I, acc[i][e]);
	LLVMValueRef *dxa = all + 32 * per;
	wg_fence(I);
	LLVMValueRef mine = imul(I, d->wgi, ci32(I, per));   /* the warpgroup's first m block */
	for (int i = 0; i < per; i++) {
		LLVMValueRef bblk = iadd(I, base, imul(I, iadd(I, mine, ci32(I, 1 + i)), ci32(I, WG_BLOCK)));
		for (int ks = 0; ks < 4; ks++)   /* contraction rows 16 ks.. of the tile */
			wg_mma64(I, all + 32 * i, wg_desc(I, base, 128 * 16 * ks), wg_desc(I, bblk, 128 * 16 * ks), 1, 1);
	}
	/* dx's operands: the adjoints from the stage's block 1, W's blocks from
	 * the warpgroup's rows of the first, each slice's descriptor one add
	 * from these (W's are the loop's invariants: hoisted, 32 of them
	 * took 64 registers across it and ptxas spilled) */
	LLVMValueRef adesc = wg_desc(I, base, WG_BLOCK);
	LLVMValueRef wdesc = wg_desc_here(I, wg_desc(I, imul(I, d->wgi, ci32(I, DXW_N * 128)), 0));
	for (int b = 0; b < nb; b++)
		for (int ks = 0; ks < 4; ks++)   /* contraction columns 16 ks.. of adjoint block b */
			wg_mma(I, DXW_N, dxa, wg_desc_at(I, adesc, b * WG_BLOCK + 2 * 16 * ks),
			       wg_desc_at(I, wdesc, b * WG_BLOCK + 2 * 16 * ks), b > 0 || ks > 0, 0);
	wg_commit(I);
	wg_wait(I, 0, all, 32 * per + DXW_N / 2);
	for (int i = 0; i < per; i++)
		for (int e = 0; e < 32; e++)
			var_set(I, acc[i][e], all[32 * i + e]);
	/* c0 c1: row g, columns 2q, 2q + 1 of n-tile i; c2 c3: row g + 8 */
	for (int r = 0; r < 2; r++) {
		IfBlk f;
		if_begin(I, &f, ilt(I, acc_row(I, &d->p, row0, r), d->p.BL), "dxw_out");
		for (int i = 0; i < DXW_N / 8; i++) {
			LLVMValueRef v0 = fadd(I, unpack_bf16_lo(I, own[r][i]), dxa[4 * i + 2 * r]);
			LLVMValueRef v1 = fadd(I, unpack_bf16_hi(I, own[r][i]), dxa[4 * i + 2 * r + 1]);
			st(I, pack_bf16x2(I, v0, v1), gep_bf16(I, d->dx, idx[r][i]), 4);
		}
		if_end(I, &f);
	}
	loop_end(I, &L);
}

void tmpl_proj_dxw(Tmpl *T)
{
	Irb *I = &T->I;
	int K = T->mx->k, na = T->napj, per = dxw_blocks(T) / DXW_WGS;
	CHECK(proj_dxw(T) && per <= 4 && DXW_N % 8 == 0);
	int smem = dxw_smem(T);
	CHECK(smem + TARGET_SMEM_RESERVED <= T->smem_sm);   /* one block an SM */
	char g0[16], sm[16];
	snprintf(g0, sizeof g0, "%d", K / 64);
	snprintf(sm, sizeof sm, "%d", smem);
	Launch *l = tmpl_launch(T, 0, "proj_dxw", g0, "H", "GW", DXW_THREADS, sm);
	l->minblocks = 1;
	launch_flops(l, 2 * proj_flops(T));
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dx", I->gptr);
	ksig_params(T, &l->sig);
	ksig_each(T, &l->sig, "dproj_");
	ksig_add(T, &l->sig, "ws:dxd", I->gptr);
	ksig_each(T, &l->sig, "part_");
	ksig_add(T, &l->sig, "i32:B*L", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	tmpl_open(T, l);
	Dxw d;
	proj_lanes(T, &l->sig, &d.p);
	d.wgi = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 7), "");
	d.ltid = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 127), "");
	d.p.w = LLVMBuildAnd(I->b, d.p.w, ci32(I, 3), "");   /* the warp in its warpgroup: the accumulators' rows */
	wg_align_smem(I);
	const ProjLanes *p = &d.p;
	d.x = ksig_arg(T, &l->sig, "x");
	d.dx = ksig_arg(T, &l->sig, "dx");
	d.dxd = ksig_arg(T, &l->sig, "ws:dxd");
	LLVMValueRef part[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		d.dp[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
		part[j] = ksig_each_arg(T, &l->sig, "part_", j);
	}
	d.hp = ctaid(I, 1);
	d.k0 = imul(I, ctaid(I, 0), ci32(I, 64));
	LLVMValueRef slab = ctaid(I, 2), GW = nctaid(I, 2);
	/* W's rows k0.. of the head, transposed: block b holds B[n][m] = W_j[hp][k0 + n][64 kb + m] */
	wg_stage_weights(T, &l->sig, d.hp, d.k0, 0, 1, DXW_THREADS);
	/* the slab's rows: whole tiles of 64, slab after slab (proj_dw's order) */
	LLVMValueRef ntile = idiv(I, iadd(I, p->BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	LLVMValueRef rows = idiv(I, iadd(I, ntile, isub(I, GW, ci32(I, 1))), GW);
	LLVMValueRef tstart = imul(I, slab, rows);
	LLVMValueRef t1 = imul(I, iadd(I, slab, ci32(I, 1)), rows);
	d.t1 = LLVMBuildSelect(I->b, ilt(I, t1, ntile), t1, ntile, "");
	Var acc[4][32];
	for (int i = 0; i < per; i++)
		for (int e = 0; e < 32; e++)
			acc[i][e] = var_init(I, cf32(I, 0.0), "dw");
	dxw_tiles(T, &d, tstart, acc);   /* its first barrier shows the staged weights to the async proxy's reads */
	/* the slab's partials: [GW][H][K][K], row k0 + 16w + g (+ 8) of block
	 * m = wgi per + i (projection m / (K/64), its columns 64 (m % (K/64)).. */
	LLVMTypeRef v2f = LLVMVectorType(I->f32, 2);
	int kbh = K / 64;
	for (int i = 0; i < per; i++) {
		LLVMValueRef m = iadd(I, imul(I, d.wgi, ci32(I, per)), ci32(I, i));
		LLVMValueRef j = idiv(I, m, ci32(I, kbh));
		LLVMValueRef mcol = imul(I, isub(I, m, imul(I, j, ci32(I, kbh))), ci32(I, 64));
		LLVMValueRef out = part[0];
		for (int jj = 1; jj < na; jj++)
			out = LLVMBuildSelect(I->b, ieq(I, j, ci32(I, jj)), part[jj], out, "");
		for (int r = 0; r < 2; r++) {
			LLVMValueRef k = acc_row(I, p, d.k0, r);
			LLVMValueRef rowk = iadd(I, imul(I, iadd(I, imul(I, slab, idiv(I, p->D, ci32(I, K))), d.hp), ci32(I, K)), k);
			for (int c = 0; c < 8; c++) {
				LLVMValueRef v = LLVMGetUndef(v2f);
				for (int e = 0; e < 2; e++)
					v = LLVMBuildInsertElement(I->b, v, var_get(I, acc[i][4 * c + 2 * r + e]), ci32(I, e), "");
				LLVMValueRef at = iadd(I, imul(I, sext64(I, rowk), ci64(I, K)), sext64(I, acc_col(I, p, mcol, c)));
				st(I, v, gep_f32(I, out, at), 8);
			}
		}
	}
	irb_ret(I);
}
