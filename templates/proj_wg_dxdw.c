/* proj_dx and proj_dw in one pass on wgmma (sm_90a; DXDW, off until it is
 * measured): both read the adjoints dP that bwd_apply wrote, so one
 * kernel reads them once (bench/ROOFLINE.md, "proj_dx and proj_dw in one
 * pass": 42.3 -> 38.3 bytes an element at K = 256, one kernel fewer).
 *
 * A block owns a 64-channel slice c0.. of dx, the rows k = c0.. of the
 * slice's head in both projections' dW, and strides over the row tiles
 * by GW (the slabs of dW's partial sums, param_reduce's). One warpgroup a
 * projection j multiplies; a producer warpgroup's one thread copies by
 * TMA. A trip brings block kb (contraction columns m = 64 kb..) of every
 * adjoint's row tile into a ring slot; warpgroup j takes its own:
 *
 *   dx_j  += dP_j[tile][m block] W_j[c0.., m block]^T  (both K-major, as proj_dx)
 *   dW_j[kb] += x[tile][c0..]^T dP_j[tile][m block]      (both MN-major, as proj_dw)
 *
 * x's block of the tile and dx's own terms (ws:dxd) come once a tile into
 * a ring of two slots of their own. At a tile's end the warpgroups' dx
 * sums meet in shared memory and are added in warpgroup order (the bits
 * repeat), with the own term, by both warpgroups' threads. The dW
 * accumulators (K/64 x 32 a thread) stay in registers across the block's
 * tiles and are written once, as proj_dw's slab partials [GW][H][K][K].
 * One block an SM: the multiplying warpgroups take DXDW_MUL_REGS
 * registers a thread. */
#include "proj_wg.h"
#include "diag.h"

#ifndef DXDW_STAGES
#define DXDW_STAGES 4   /* the adjoints' ring: slots of a block of each */
#endif
#ifndef DXDW_MUL_REGS
#define DXDW_MUL_REGS 232   /* a multiplying thread's registers */
#endif
#ifndef DXDW_PROD_REGS
#define DXDW_PROD_REGS 40   /* the producer's */
#endif
_Static_assert(2 * 128 * DXDW_MUL_REGS + 128 * DXDW_PROD_REGS <= 65536, "one block an SM holds its registers");

/* mixers of two projections (the form verified on a GPU: RG-LRU's at
 * heads of 256, 128 and 64); one of one projection keeps proj_dx and
 * proj_dw until its form (one multiplying warpgroup) is */
int proj_dxdw_on(const Tmpl *T) { return DXDW && proj_wgmma(T) && T->napj == 2; }

/* The kernel's plan beyond Wg's: the x ring and its mbarriers */
typedef struct {
	Wg g;
	int slot;          /* bytes of an adjoints' slot: a block of each projection */
	Ring xrg;          /* a tile's block of x and of dx's own terms, a slot a tile */
	int xbuf, xbars;   /* shared offsets: that ring, its mbarriers */
	LLVMValueRef xmap, dmap, part[MX_MAXPROJ];
	LLVMValueRef GW;   /* the tiles' stride: the grid's rows */
	LLVMValueRef otid; /* a multiplying thread among its warpgroup's 128 */
} Dxdw;

static void dxdw_plan(Tmpl *T, Dxdw *d)
{
	Wg *g = &d->g;
	int na = T->napj;
	*g = (Wg){ 0 };
	g->fwd = 0;
	g->kbh = T->mx->k / 64;
	g->nkb = g->kbh;   /* a trip a contraction block, every projection's at once */
	g->producer = 1;
	g->tma = 1;
	g->nwg = na;
	g->wblk = 0;
	g->ring = na * g->kbh * WG_BLOCK;
	g->rg = (Ring){ DXDW_STAGES, DXDW_STAGES - 1 };
	d->slot = na * WG_BLOCK;
	d->xrg = (Ring){ 2, 1 };
	d->xbuf = g->ring + g->rg.stages * d->slot;
	g->obuf = d->xbuf + d->xrg.stages * 2 * WG_BLOCK;
	g->bars = g->obuf + T->napj * 2 * WG_BLOCK;   /* dx's 64 x 64 fp32 sums, a tile a warpgroup */
	d->xbars = g->bars + RING_BAR_BYTES(&g->rg);
	g->smem = d->xbars + RING_BAR_BYTES(&d->xrg);
	CHECK(na >= 1 && na <= 2 && proj_nc(T) == 64);
	CHECK(g->smem <= smem_blk_max(T));
}

/* map arg i: x's (0), projection i - 1's adjoint's (proj_dw's), then dx's own terms' */
static void dxdw_map_arg(const Tmpl *T, int i, char *a, size_t n)
{
	if (i <= T->napj)
		proj_dw_map_arg(T, i, a, n);
	else
		snprintf(a, n, "tmaprows:ws:dxd:64x64");
}

/* trip n's adjoint blocks (tile t, block kb) into its slot, by TMA: the
 * slot's full mbarrier counts their bytes (when t < ntile) */
static void dxdw_copy(Tmpl *T, Dxdw *d, LLVMValueRef t, int kb, LLVMValueRef slot)
{
	Irb *I = &T->I;
	Wg *g = &d->g;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, g->ntile), "dxdw_copy");
	LLVMValueRef base = iadd(I, ci32(I, g->ring), imul(I, slot, ci32(I, d->slot)));
	LLVMValueRef bar = ring_full_bar(I, g->bars, &g->rg, slot);
	LLVMValueRef at[3] = { iadd(I, imul(I, g->p.hp, ci32(I, T->mx->k)), ci32(I, 64 * kb)),
	                       imul(I, t, ci32(I, PROJ_ROWS)), ci32(I, 0) };
	mbar_arrive_tx(I, bar, ci32(I, d->slot));
	for (int j = 0; j < T->napj; j++)
		tma_load3(I, j ? iadd(I, base, ci32(I, j * WG_BLOCK)) : base, g->map[j], at, bar);
	if_end(I, &f);
}

/* tile t's blocks of x and of dx's own terms (ws:dxd, from bwd_apply),
 * columns c0.., into slot `slot` of their ring (when t < ntile): the own
 * terms wait in shared memory for the tile's epilogue, no registers held
 * and no load's latency exposed there */
static void dxdw_copy_x(Tmpl *T, Dxdw *d, LLVMValueRef t, LLVMValueRef slot)
{
	Irb *I = &T->I;
	Wg *g = &d->g;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, g->ntile), "dxdw_copy_x");
	LLVMValueRef bar = ring_full_bar(I, d->xbars, &d->xrg, slot);
	LLVMValueRef at[3] = { g->p.c0, imul(I, t, ci32(I, PROJ_ROWS)), ci32(I, 0) };
	LLVMValueRef base = iadd(I, ci32(I, d->xbuf), imul(I, slot, ci32(I, 2 * WG_BLOCK)));
	mbar_arrive_tx(I, bar, ci32(I, 2 * WG_BLOCK));
	tma_load3(I, base, d->xmap, at, bar);
	tma_load3(I, iadd(I, base, ci32(I, WG_BLOCK)), d->dmap, at, bar);
	if_end(I, &f);
}

/* The producer's thread: the rings primed (the first `ahead` trips, the
 * first tile's x), then at each trip the slot `ahead` trips on refilled
 * once its last use released it, and at a tile's first trip the next
 * tile's x */
static void dxdw_produce(Tmpl *T, Dxdw *d)
{
	Irb *I = &T->I;
	Wg *g = &d->g;
	int nkb = g->nkb, ahead = g->rg.ahead;
	LLVMValueRef t0 = ctaid(I, 1);
	for (int st = 0; st < ahead; st++)
		dxdw_copy(T, d, iadd(I, t0, imul(I, ci32(I, st / nkb), d->GW)), st % nkb, ci32(I, st));
	dxdw_copy_x(T, d, t0, ci32(I, 0));
	Var u = var_init(I, ci32(I, 0), "u");
	Loop L;
	loop_begin(I, &L, t0, g->ntile, d->GW, "pt");
	LLVMValueRef t = loop_i(I, &L), uu = var_get(I, u);
	for (int kb = 0; kb < nkb; kb++) {
		LLVMValueRef n = iadd(I, imul(I, uu, ci32(I, nkb)), ci32(I, kb));
		ring_refill_wait(I, g->bars, &g->rg, n);
		int a = kb + ahead;
		dxdw_copy(T, d, iadd(I, t, imul(I, ci32(I, a / nkb), d->GW)), a % nkb, ring_slot(I, &g->rg, n, ahead));
		if (kb == 0) {
			ring_refill_wait(I, d->xbars, &d->xrg, uu);
			dxdw_copy_x(T, d, iadd(I, t, d->GW), ring_slot(I, &d->xrg, uu, 1));
		}
	}
	var_set(I, u, iadd(I, uu, ci32(I, 1)));
	loop_end(I, &L);
}

/* v as a value the compiler cannot hoist out of the loop it is in (a
 * mov with side effects): the weight blocks' descriptors, loop-invariant,
 * were hoisted and held 32 registers across the tiles, spilling at K = 256 */
static LLVMValueRef pinned(Irb *I, LLVMValueRef v)
{
	LLVMTypeRef fty = LLVMFunctionType(I->i32, &I->i32, 1, 0);
	return LLVMBuildCall2(I->b, fty, irb_asm(fty, "mov.b32 $0, $1;", "=r,r", 1), &v, 1, "");
}

/* Warpgroup j's trip n (tile block kb): its adjoint's block multiplied
 * into dx's sums and into dW's accumulators of block kb, committed as one
 * group of wgmma */
static void dxdw_trip(Tmpl *T, Dxdw *d, int j, int kb, LLVMValueRef n, LLVMValueRef xb, LLVMValueRef dxa[32],
                      LLVMValueRef dwa[32])
{
	Irb *I = &T->I;
	Wg *g = &d->g;
	ring_take(I, g->bars, &g->rg, n);
	LLVMValueRef mine = iadd(I, ci32(I, g->ring + j * WG_BLOCK), imul(I, ring_slot(I, &g->rg, n, 0), ci32(I, d->slot)));
	LLVMValueRef wb = pinned(I, ci32(I, g->wblk + (j * g->kbh + kb) * WG_BLOCK));
	wg_fence(I);
	for (int ks = 0; ks < 4; ks++) {
		wg_mma64(I, dxa, wg_desc(I, mine, 2 * 16 * ks), wg_desc(I, wb, 2 * 16 * ks), kb > 0 || ks > 0, 0);
		wg_mma64(I, dwa, wg_desc(I, xb, 128 * 16 * ks), wg_desc(I, mine, 128 * 16 * ks), 1, 1);
	}
	wg_commit(I);
}

/* a trip's wgmma waited for, dx's sums and dW's block passed through the
 * wait, and its slot released. (A group left in flight a trip longer,
 * its slot released then, was 1% slower on an H100:
 * bench/experiments/2026-12-07-dxdw/run2.) */
static void dxdw_done(Tmpl *T, Dxdw *d, LLVMValueRef n, LLVMValueRef dxa[32], LLVMValueRef dwa[32])
{
	wg_wait_sets(&T->I, (LLVMValueRef *[2]){ dxa, dwa }, 2);
	ring_release(&T->I, d->g.bars, &d->g.rg, n);
}

/* A tile's end for warpgroup j of na, its dx sums stored as fp32 into
 * output tile j (proj_dx's layout, at obuf + 16 KB j) once the tiles are
 * free (a barrier of the multiplying warpgroups), then, after a second,
 * every multiplying thread a chunk of 8 columns at a time (the rows
 * shared, so that neither warpgroup runs ahead alone): the tiles' sums
 * in warpgroup order plus dx's own term (in shared memory at ob, the x
 * ring's), rounded once and written as 16 bytes. Nothing is held in
 * registers across the two barriers but the dW accumulators. */
static void dxdw_tile_end(Tmpl *T, Dxdw *d, const KSig *s, int j, LLVMValueRef row0, LLVMValueRef dxa[32],
                          LLVMValueRef ob)
{
	Irb *I = &T->I;
	int na = T->napj, id = na == 2 ? 2 : 1;
	const Wg *g = &d->g;
	const ProjLanes *p = &g->p;
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4), v4i = LLVMVectorType(I->i32, 4);
	bar_named(I, ci32(I, id), 128 * na);
	dx_store_sums(I, p, g->obuf + j * 2 * WG_BLOCK, dxa);
	bar_named(I, ci32(I, id), 128 * na);
	LLVMValueRef dx = ksig_arg(T, s, "dx");
	LLVMValueRef ct = j ? iadd(I, d->otid, ci32(I, 128 * j)) : d->otid;   /* among the na 128 */
	LLVMValueRef c = LLVMBuildAnd(I->b, ct, ci32(I, 7), "");
	LLVMValueRef col = sext64(I, iadd(I, p->c0, imul(I, c, ci32(I, 8))));
	for (int it = 0; it < DX_NIT / na; it++) {
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, ct, ci32(I, 3), ""), ci32(I, it * 16 * na));
		LLVMValueRef row = iadd(I, row0, r);
		IfBlk f;
		if_begin(I, &f, ilt(I, row, p->BL), "dxdw_out");
		LLVMValueRef sum[2], own = ld(I, v4i, smem_ptr(I, iadd(I, ob, wg_swz(I, r, imul(I, c, ci32(I, 8))))), 16);
		for (int h = 0; h < 2; h++) {
			LLVMValueRef c16 = iadd(I, imul(I, c, ci32(I, 2)), ci32(I, h));
			sum[h] = ld(I, v4f, smem_ptr(I, dx_chunk(I, g->obuf, r, c16)), 16);
			for (int w = 1; w < na; w++)
				sum[h] = fadd(I, sum[h], ld(I, v4f, smem_ptr(I, dx_chunk(I, g->obuf + w * 2 * WG_BLOCK, r, c16)), 16));
		}
		LLVMValueRef v = dx_round(I, own, sum);
		st(I, v, gep_bf16(I, dx, iadd(I, imul(I, sext64(I, row), sext64(I, p->D)), col)), 16);
		if_end(I, &f);
	}
}

/* dW_j's accumulators as the slab's partial: part_j[slab][hp][k][m], k
 * the block's rows c0.. of the head (proj_dw's layout) */
static void dxdw_write_dw(Tmpl *T, Dxdw *d, int j, Var acc[][32])
{
	Irb *I = &T->I;
	const ProjLanes *p = &d->g.p;
	int K = T->mx->k;
	LLVMTypeRef v2f = LLVMVectorType(I->f32, 2);
	LLVMValueRef head = iadd(I, imul(I, ctaid(I, 1), idiv(I, p->D, ci32(I, K))), p->hp);
	for (int kb = 0; kb < d->g.kbh; kb++)
		for (int r = 0; r < 2; r++) {
			LLVMValueRef rowk = iadd(I, imul(I, head, ci32(I, K)), acc_row(I, p, p->n0, r));
			for (int i = 0; i < 8; i++) {
				LLVMValueRef v = LLVMGetUndef(v2f);
				for (int e = 0; e < 2; e++)
					v = LLVMBuildInsertElement(I->b, v, var_get(I, acc[kb][4 * i + 2 * r + e]), ci32(I, e), "");
				LLVMValueRef m = acc_col(I, p, ci32(I, 64 * kb), i);
				st(I, v, gep_f32(I, d->part[j], iadd(I, imul(I, sext64(I, rowk), ci64(I, K)), sext64(I, m))), 8);
			}
		}
}

/* Warpgroup j: the block's tiles, each x's block taken, its trips, its
 * end; then dW's partials */
static void dxdw_multiply(Tmpl *T, Dxdw *d, const KSig *s, int j)
{
	Irb *I = &T->I;
	Wg *g = &d->g;
	int nkb = g->nkb;
	Var dw[4][32];
	CHECK(g->kbh <= 4);
	for (int kb = 0; kb < g->kbh; kb++)
		for (int e = 0; e < 32; e++)
			dw[kb][e] = var_init(I, cf32(I, 0.0), "dw");
	Var u = var_init(I, ci32(I, 0), "u");
	Loop L;
	loop_begin(I, &L, ctaid(I, 1), g->ntile, d->GW, "mt");
	LLVMValueRef t = loop_i(I, &L), uu = var_get(I, u), row0 = imul(I, t, ci32(I, PROJ_ROWS));
	ring_take(I, d->xbars, &d->xrg, uu);
	LLVMValueRef xb = iadd(I, ci32(I, d->xbuf), imul(I, ring_slot(I, &d->xrg, uu, 0), ci32(I, 2 * WG_BLOCK)));
	LLVMValueRef dxa[32];
	for (int e = 0; e < 32; e++)
		dxa[e] = LLVMGetUndef(I->f32);
	for (int kb = 0; kb < nkb; kb++) {
		LLVMValueRef dwa[32], n = iadd(I, imul(I, uu, ci32(I, nkb)), ci32(I, kb));
		for (int e = 0; e < 32; e++)
			dwa[e] = var_get(I, dw[kb][e]);
		dxdw_trip(T, d, j, kb, n, xb, dxa, dwa);
		dxdw_done(T, d, n, dxa, dwa);
		for (int e = 0; e < 32; e++)
			var_set(I, dw[kb][e], dwa[e]);
	}
	/* the epilogue's lanes pinned in the loop: its addresses, invariant,
	 * were hoisted and held across the trips, and spilled at K = 256 */
	Dxdw e = *d;
	e.g.p.q = pinned(I, g->p.q);
	e.g.p.g = pinned(I, g->p.g);
	e.g.p.w = pinned(I, g->p.w);
	e.g.p.c0 = pinned(I, g->p.c0);
	e.otid = pinned(I, d->otid);
	LLVMValueRef ob = iadd(I, ci32(I, d->xbuf + WG_BLOCK), imul(I, ring_slot(I, &d->xrg, pinned(I, uu), 0),
	                                                        ci32(I, 2 * WG_BLOCK)));
	dxdw_tile_end(T, &e, s, j, row0, dxa, ob);
	ring_release(I, d->xbars, &d->xrg, uu);   /* x's block and the own terms read */
	var_set(I, u, iadd(I, uu, ci32(I, 1)));
	loop_end(I, &L);
	dxdw_write_dw(T, d, j, dw);
}

void proj_dxdw_wg(Tmpl *T)
{
	Irb *I = &T->I;
	int na = T->napj;
	Dxdw d;
	dxdw_plan(T, &d);
	Wg *g = &d.g;
	char sm[16];
	snprintf(sm, sizeof sm, "%d", g->smem);
	Launch *l = tmpl_launch(T, 0, "proj_dxdw", "NX", "GW", "1", wg_threads(g), sm);
	l->minblocks = 1;
	launch_flops(l, 2 * proj_flops(T));
	KSig *s = &l->sig;
	ksig_add(T, s, "dx", I->gptr);
	ksig_params(T, s);
	ksig_each(T, s, "part_");
	ksig_add(T, s, "i32:B*L", I->i32);
	ksig_add(T, s, "i32:D", I->i32);
	/* the maps: x's, each adjoint's (proj_dw's names), dx's own terms' */
	char a[64];
	for (int i = 0; i <= na + 1; i++) {
		dxdw_map_arg(T, i, a, sizeof a);
		ksig_add(T, s, a, I->ptr);
	}
	tmpl_open(T, l);
	proj_lanes(T, s, &g->p);
	proj_tile(T, &g->p);
	for (int i = 0; i <= na + 1; i++) {
		dxdw_map_arg(T, i, a, sizeof a);
		LLVMValueRef m = ksig_arg(T, s, a);
		if (i == 0)
			d.xmap = m;
		else if (i <= na)
			g->map[i - 1] = m;
		else
			d.dmap = m;
	}
	for (int j = 0; j < na; j++)
		d.part[j] = ksig_each_arg(T, s, "part_", j);
	d.GW = nctaid(I, 1);
	wg_align_smem(I);
	ring_bars_init(I, g->bars, &g->rg, 1, 128 * na);
	ring_bars_init(I, d.xbars, &d.xrg, 1, 128 * na);
	wg_stage_weights(T, g, s);
	g->ntile = idiv(I, iadd(I, g->p.BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	fence_proxy_async(I);   /* the weights and the barriers seen by all, the async proxy's copies too */
	bar_sync(I);
	IfBlk f;
	LLVMValueRef prod = wg_split(I, &f, 128 * na, DXDW_PROD_REGS);
	IfBlk one;
	if_begin(I, &one, ieq(I, tid_x(I), ci32(I, 128 * na)), "tma_producer");
	dxdw_produce(T, &d);
	if_end(I, &one);
	wg_split_multiply(I, &f, prod, DXDW_MUL_REGS);
	/* a warpgroup's own warps and epilogue threads */
	LLVMValueRef wgi = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 7), "");
	g->p.w = LLVMBuildAnd(I->b, g->p.w, ci32(I, 3), "");
	d.otid = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 127), "");
	for (int j = 0; j < na; j++) {
		IfBlk wf;
		if_begin(I, &wf, ieq(I, wgi, ci32(I, j)), "dxdw_wg");
		dxdw_multiply(T, &d, s, j);
		if_end(I, &wf);
	}
	if_end(I, &f);
	irb_ret(I);
}
