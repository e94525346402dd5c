/* proj_fwd and proj_dx on Hopper's warpgroup tensor cores (sm_90a): the
 * math of proj.c's, where a warpgroup multiplies a tile of 64 rows by the
 * 64 columns of its head slice with wgmma, both operands read from shared
 * memory through descriptors (no fragments in registers, 32 accumulators
 * a thread a projection).
 *
 * The contraction is cut in blocks of 64: proj_fwd's K/64 blocks of x's
 * head rows, proj_dx's K/64 of each adjoint in turn. The block's weight
 * slice is staged once as bf16 blocks [n][k] (K-major, 128-byte swizzle,
 * ir/wgmma.h); the rows' blocks pass through a ring of WG_STAGES buffers,
 * filled three blocks ahead (across row tiles: the block's next tile is
 * GY further), so that loads fly while the tensor cores work. A second
 * warpgroup copies (WG_PRODUCER): one of its threads issues each block as
 * a TMA copy from a tensor map of the rows (WG_TMA; rows past B L read as
 * zeros), which completes on the buffer's full mbarrier, once the
 * multiplying warpgroup has released the buffer (its empty mbarrier);
 * without TMA its 128 threads copy by cp.async, wait for their copies,
 * make them visible to the async proxy and arrive at full. The
 * multiplying warpgroup waits on full, runs its 4 x 16-column steps per
 * projection, waits for them and releases the buffer: no block barrier a
 * trip, and the registers moved to it (setmaxnreg: 200 a thread, the
 * copier 56, two blocks an SM). A row tile ends in an epilogue through
 * shared memory, written as 16-byte chunks. Measured on an H100
 * (bench/experiments/2026-12-06-proj-wgmma, -groups and -producer): the
 * epilogue took a third off; the ring's depth, wgmma left in flight and
 * two multiplying warpgroups a block did not pay; the producer 2-13%; its
 * copies by TMA 4% (proj_fwd) and 9% (proj_dx) at 1x131072x4096
 * (bench/experiments/2026-12-07-wg-tma).
 * proj_dw on wgmma: proj_wg_dw.c; the ring, copies and accumulator
 * layout the three share: proj_wg.h. */
#include "proj_wg.h"
#include "diag.h"

#ifndef WG_PENDING
#define WG_PENDING 0    /* wgmma groups left in flight at the end of a trip (not the tile's last) */
#endif
_Static_assert(WG_AHEAD + WG_PENDING < WG_STAGES, "a refill waits for the trip that read its buffer");
#ifndef FWD_SPLIT
#define FWD_SPLIT 0     /* proj_fwd of two projections: a multiplying warpgroup a projection, one block an SM
                         * (proj_fwd_split) */
#endif
#ifndef FWD_SPLIT_STAGES
#define FWD_SPLIT_STAGES 12   /* its ring of x blocks, all but one ahead */
#endif
#ifndef FWD_SPLIT_MUL_REGS
#define FWD_SPLIT_MUL_REGS 232   /* a multiplying thread's registers there, and the producer's */
#endif
#ifndef FWD_SPLIT_PROD_REGS
#define FWD_SPLIT_PROD_REGS 40
#endif
_Static_assert(2 * 128 * FWD_SPLIT_MUL_REGS + 128 * FWD_SPLIT_PROD_REGS <= 65536, "one block an SM holds them");
#ifndef WG_PRODUCER
#define WG_PRODUCER 1   /* proj_fwd's and proj_dx's copies by a warpgroup of their own, a barrier a buffer */
#endif


int proj_wgmma(const Tmpl *T) { return T->wgmma && T->mx->k % 64 == 0 && T->napj <= 2; }

/* proj_fwd with a warpgroup of its own a projection, both on the same x
 * blocks from one ring, one block an SM: the weight slice staged once an
 * SM, not twice, and the ring FWD_SPLIT_STAGES deep, where two blocks of
 * one warpgroup hold 4 buffers each (the H200 runs proj_fwd at the
 * H100's time, 55% of its copy rate: latency, not bandwidth) */
int proj_fwd_split(const Tmpl *T) { return FWD_SPLIT && WG_TMA && WG_PRODUCER && proj_wgmma(T) && T->napj == 2; }

/* A's tensor and head-relative column of contraction block kb */
static LLVMValueRef a_src(const Wg *g, int kb) { return g->fwd ? g->src[0] : g->src[kb / g->kbh]; }
static LLVMValueRef a_map(const Wg *g, int kb) { return g->fwd ? g->map[0] : g->map[kb / g->kbh]; }
static int a_col(const Wg *g, int kb) { return 64 * (kb % g->kbh); }

/* Two blocks share an SM: 4 buffers of 8 KB, 3 ahead. (Two multiplying
 * warpgroups a block on one weight slice, one block an SM and a ring of
 * 8 x 16 KB, did not pay on an H100: bench/experiments/2026-12-06-proj-
 * wgmma-groups/, built in f29c617.) */
static void wg_plan(Tmpl *T, Wg *g, int fwd)
{
	g->fwd = fwd;
	g->kbh = T->mx->k / 64;
	g->nkb = fwd ? g->kbh : T->napj * g->kbh;
	g->producer = WG_PRODUCER;
	g->split = fwd && proj_fwd_split(T);
	g->wj = 0;
	g->nwg = g->split ? T->napj : 1;
	g->tma = WG_TMA && g->producer;
	g->wblk = 0;
	g->ring = T->napj * g->kbh * WG_BLOCK;
	g->rg = g->split ? (Ring){ FWD_SPLIT_STAGES, FWD_SPLIT_STAGES - 1 } : (Ring){ WG_STAGES, WG_AHEAD };
	g->obuf = g->ring + g->rg.stages * WG_BLOCK;
	g->bars = g->obuf + 2 * WG_BLOCK;   /* 64 rows of 64 columns: 2 projections in bf16, or dx's sums in fp32 */
	g->smem = g->bars + (g->producer ? RING_BAR_BYTES(&g->rg) : 0);
	CHECK(g->smem <= smem_blk_max(T));
}

/* the block's threads: the multiplying warpgroups, and the producer's */
int wg_threads(const Wg *g) { return PROJ_THREADS * g->nwg + 128 * g->producer; }

/* a barrier of the threads that multiply: all the block's, or with a
 * producer warpgroup beside them barrier 1 of theirs alone (split: 1 + wj,
 * warpgroup wj's own) */
static void wg_bar(Irb *I, const Wg *g, int wj)
{
	if (g->producer)
		bar_named(I, ci32(I, 1 + wj), PROJ_THREADS);
	else
		bar_sync(I);
}

/* the copies of contraction block kb of row tile t into ring buffer slot
 * (when t < ntile), then a commit: one group a trip, empty or not */
static void wg_copy(Tmpl *T, const Wg *g, LLVMValueRef t, int kb, LLVMValueRef slot)
{
	Irb *I = &T->I;
	const ProjLanes *p = &g->p;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, g->ntile), "wg_copy");
	LLVMValueRef base = iadd(I, ci32(I, g->ring), imul(I, slot, ci32(I, WG_BLOCK)));
	LLVMValueRef col0 = iadd(I, imul(I, p->hp, ci32(I, T->mx->k)), ci32(I, a_col(g, kb)));
	if (g->tma) {   /* the producer's one thread: the slot's full counts the block's bytes */
		LLVMValueRef bar = ring_full_bar(I, g->bars, &g->rg, slot);
		LLVMValueRef at[3] = { col0, imul(I, t, ci32(I, PROJ_ROWS)), ci32(I, 0) };
		mbar_arrive_tx(I, bar, ci32(I, WG_BLOCK));
		tma_load3(I, base, a_map(g, kb), at, bar);
		if_end(I, &f);
		return;
	}
	copy_block(T, p, a_src(g, kb), t, col0, base, g->ctid);
	if_end(I, &f);
	cp_async_commit(I);
}

/* The weight slice of every projection as bf16 blocks [n][k] at wblk, block
 * j kbh + kb holding contraction columns 64 kb.. of projection j: forward,
 * B[n][k] = W_j[hp][k][n0 + n] (a float4 is 4 columns n of one row k: four
 * 2-byte stores); proj_dx, B[n][m] = W_j[hp][n0 + n][m] (4 adjacent m: one
 * 8-byte store) */
void wg_stage_weights(Tmpl *T, const Wg *g, const KSig *s)
{
	Irb *I = &T->I;
	const ProjLanes *p = &g->p;
	int K = T->mx->k, n = K * 64 / 4;   /* float4 loads a projection */
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	LLVMValueRef hbase = imul(I, p->hp, ci32(I, K * K));
	for (int j = 0; j < T->napj; j++) {
		LLVMValueRef W = ksig_param(T, s, T->mx->proj[T->apj[j]].weight);
		int jb = g->wblk + j * g->kbh * WG_BLOCK;
		Loop L;   /* a loop, not unrolled: 64 loads in flight would take 256 registers */
		loop_begin(I, &L, tid_x(I), ci32(I, n), ci32(I, wg_threads(g)), "wst");
		{
			LLVMValueRef e = loop_i(I, &L);
			if (g->fwd) {   /* e: row k of W, columns 4 (e % 16).. of the slice */
				LLVMValueRef k = LLVMBuildLShr(I->b, e, ci32(I, 4), ""), n4 = imul(I, LLVMBuildAnd(I->b, e, ci32(I, 15), ""), ci32(I, 4));
				LLVMValueRef gi = iadd(I, hbase, iadd(I, imul(I, k, ci32(I, K)), iadd(I, p->n0, n4)));
				LLVMValueRef v = ld(I, v4f, gep_f32(I, W, sext64(I, gi)), 16);
				LLVMValueRef blk = iadd(I, ci32(I, jb), imul(I, LLVMBuildLShr(I->b, k, ci32(I, 6), ""), ci32(I, WG_BLOCK)));
				LLVMValueRef kk = LLVMBuildAnd(I->b, k, ci32(I, 63), "");
				for (int i = 0; i < 4; i++) {
					LLVMValueRef h = f32_to_bf16(I, LLVMBuildExtractElement(I->b, v, ci32(I, i), ""));
					st(I, h, smem_ptr(I, iadd(I, blk, wg_swz(I, iadd(I, n4, ci32(I, i)), kk))), 2);
				}
			} else {        /* e: row n0 + nn of W, columns m = 4 (e % (K/4)).. */
				LLVMValueRef nn = idiv(I, e, ci32(I, K / 4));
				LLVMValueRef m4 = imul(I, isub(I, e, imul(I, nn, ci32(I, K / 4))), ci32(I, 4));
				LLVMValueRef gi = iadd(I, hbase, iadd(I, imul(I, iadd(I, p->n0, nn), ci32(I, K)), m4));
				LLVMValueRef v = ld(I, v4f, gep_f32(I, W, sext64(I, gi)), 16);
				LLVMValueRef w = pack_bf16x4(I, v);
				LLVMValueRef blk = iadd(I, ci32(I, jb), imul(I, LLVMBuildLShr(I->b, m4, ci32(I, 6), ""), ci32(I, WG_BLOCK)));
				st(I, w, smem_ptr(I, iadd(I, blk, wg_swz(I, nn, LLVMBuildAnd(I->b, m4, ci32(I, 63), "")))), 8);
			}
		}
		loop_end(I, &L);
	}
}

/* Epilogue: what a kernel does with its accumulators of a row tile */
typedef void (*WgOut)(Tmpl *T, const Wg *g, const KSig *s, LLVMValueRef row0, LLVMValueRef acc[][32], void *ctx);

/* The block's trips in order: row tiles ctaid.y, GY apart, each through
 * its nkb contraction blocks (trip n = the tiles before times nkb + kb),
 * the ring primed with the first `ahead` blocks; trip() at each, end()
 * after each tile */
typedef struct {
	void (*trip)(Tmpl *T, Wg *g, LLVMValueRef t, int kb, LLVMValueRef n, void *arg);
	void (*end)(Tmpl *T, Wg *g, LLVMValueRef t, void *arg);
	void *arg;
} WgTrips;

static void wg_trips(Tmpl *T, Wg *g, int prime, const WgTrips *w)
{
	Irb *I = &T->I;
	LLVMValueRef GY = nctaid(I, 1);
	for (int st = 0; prime && st < g->rg.ahead; st++)
		wg_copy(T, g, iadd(I, ctaid(I, 1), imul(I, ci32(I, st / g->nkb), GY)), st % g->nkb, ci32(I, st));
	Var trip = var_init(I, ci32(I, 0), "trip");
	Loop L;
	loop_begin(I, &L, ctaid(I, 1), g->ntile, GY, "rt");
	LLVMValueRef t = loop_i(I, &L);
	for (int kb = 0; kb < g->nkb; kb++)
		w->trip(T, g, t, kb, iadd(I, var_get(I, trip), ci32(I, kb)), w->arg);
	var_set(I, trip, iadd(I, var_get(I, trip), ci32(I, g->nkb)));
	if (w->end)
		w->end(T, g, t, w->arg);
	loop_end(I, &L);
}

/* the copies of the block `ahead` trips after trip n (tile t, block kb) */
static void copy_ahead(Tmpl *T, Wg *g, LLVMValueRef t, int kb, LLVMValueRef n)
{
	Irb *I = &T->I;
	int a = kb + g->rg.ahead;
	wg_copy(T, g, iadd(I, t, imul(I, ci32(I, a / g->nkb), nctaid(I, 1))), a % g->nkb, ring_slot(I, &g->rg, n, g->rg.ahead));
}

/* The producer warpgroup's trip: trip n's blocks landed (its copies waited
 * for and made visible to the async proxy), full arrived at; then the
 * buffer of trip n + ahead refilled once the wgmma of its last use
 * (trip n + ahead - stages) have released it */
static void produce_trip(Tmpl *T, Wg *g, LLVMValueRef t, int kb, LLVMValueRef n, void *arg)
{
	(void)arg;
	if (g->tma)   /* no copies of its own to wait for: TMA completes full */
		ring_refill_wait(&T->I, g->bars, &g->rg, n);
	else
		ring_produced(&T->I, g->bars, &g->rg, n);
	copy_ahead(T, g, t, kb, n);
}

/* What a kernel loads for a tile's epilogue before its first trip, so
 * that the loads fly while the tensor cores work (proj_dx's own terms) */
typedef void (*WgPre)(Tmpl *T, const Wg *g, const KSig *s, LLVMValueRef row0, void *ctx);

/* The multiplying warps' state: accumulators, the epilogue */
typedef struct {
	LLVMValueRef acc[2][32];
	WgPre pre;
	WgOut out;
	const KSig *s;
	void *ctx;
} WgMul;

/* A trip of the warpgroups: at a tile's first, the kernel's loads for
 * the tile's epilogue (pre); the buffer's blocks ready (the producer's
 * barrier, or this thread's copies and a block barrier, then the refill
 * ahead), its 4 x 16-column steps per projection, a wait for them, and
 * with a producer the buffer released */
static void mul_trip(Tmpl *T, Wg *g, LLVMValueRef t, int kb, LLVMValueRef n, void *arg)
{
	Irb *I = &T->I;
	WgMul *m = arg;
	int na = g->fwd && !g->split ? T->napj : 1;   /* accumulator sets: a projection each, or dx's one */
	if (kb == 0 && m->pre)
		m->pre(T, g, m->s, imul(I, t, ci32(I, PROJ_ROWS)), m->ctx);
	if (g->producer) {
		ring_take(I, g->bars, &g->rg, n);
	} else {
		ring_ready(I, &g->rg);
		copy_ahead(T, g, t, kb, n);
	}
	LLVMValueRef abuf = iadd(I, ci32(I, g->ring), imul(I, ring_slot(I, &g->rg, n, 0), ci32(I, WG_BLOCK)));
	wg_fence(I);
	for (int ks = 0; ks < 4; ks++)
		for (int j = 0; j < na; j++) {
			int wb = g->fwd ? (g->split ? g->wj : j) * g->kbh + kb : kb;
			if (kb == 0 && ks == 0)
				for (int e = 0; e < 32; e++)
					m->acc[j][e] = LLVMGetUndef(I->f32);
			wg_mma64(I, m->acc[j], wg_desc(I, abuf, 2 * 16 * ks), wg_desc(I, ci32(I, g->wblk + wb * WG_BLOCK), 2 * 16 * ks),
			         kb > 0 || ks > 0, 0);
		}
	wg_commit(I);
	if (kb < g->nkb - 1 && WG_PENDING > 0) {
		wg_wait(I, WG_PENDING, NULL, 0);
		return;
	}
	wg_wait_acc(I, m->acc, na);
	if (g->producer)
		ring_release(I, g->bars, &g->rg, n);
}

/* a tile's end: with a producer, a barrier of the warpgroup first (the
 * output tile is free: every thread's reads of the last one are done;
 * without, each trip's block barrier saw to it), then the epilogue */
static void mul_end(Tmpl *T, Wg *g, LLVMValueRef t, void *arg)
{
	Irb *I = &T->I;
	WgMul *m = arg;
	if (g->producer)
		wg_bar(I, g, g->wj);
	m->out(T, g, m->s, imul(I, t, ci32(I, PROJ_ROWS)), m->acc, m->ctx);
}

/* the A operands' maps, where the copies are TMA's */
static void wg_maps(Tmpl *T, Wg *g, const KSig *s)
{
	for (int j = 0; g->tma && j < (g->fwd ? 1 : T->napj); j++) {
		char a[64];
		proj_map_arg(T, g->fwd, j, a, sizeof a);
		g->map[j] = ksig_arg(T, s, a);
	}
}

/* The kernel's body after its signature: weights staged, then the trips
 * (with a producer warpgroup: it copies, the other multiplies, a full
 * and an empty mbarrier a buffer between them, and the registers moved
 * to the multiplying one: two blocks an SM at 128 a thread), each tile
 * with its epilogue's loads ahead (pre, or NULL) and its epilogue (out) */
static void wg_body(Tmpl *T, Wg *g, const KSig *s, WgPre pre, WgOut out, void *ctx)
{
	Irb *I = &T->I;
	wg_align_smem(I);
	CHECK(!g->producer || WG_PENDING == 0);   /* a buffer is released after its wgmma are waited for */
	if (g->producer)
		ring_bars_init(I, g->bars, &g->rg, g->tma ? 1 : 128, 128 * g->nwg);
	wg_stage_weights(T, g, s);
	g->ntile = idiv(I, iadd(I, g->p.BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	WgMul m = { .pre = pre, .out = out, .s = s, .ctx = ctx };
	WgTrips mul = { mul_trip, mul_end, &m };
	if (!g->producer) {
		g->ctid = tid_x(I);
		wg_trips(T, g, 1, &mul);
		irb_ret(I);
		return;
	}
	/* the weights and the barriers' init seen by all: the first trip's
	 * barrier does it where every thread copies */
	fence_proxy_async(I);
	bar_sync(I);
	IfBlk f;
	LLVMValueRef prod = wg_split(I, &f, 128 * g->nwg, g->split ? FWD_SPLIT_PROD_REGS : WG_PRODUCER_REGS);
	g->ctid = isub(I, tid_x(I), ci32(I, 128 * g->nwg));
	WgTrips pr = { produce_trip, NULL, NULL };
	if (g->tma) {   /* one thread issues every copy; the warpgroup's others idle */
		IfBlk one;
		if_begin(I, &one, ieq(I, g->ctid, ci32(I, 0)), "tma_producer");
		wg_trips(T, g, 1, &pr);
		if_end(I, &one);
	} else {
		wg_trips(T, g, 1, &pr);
	}
	if (!g->split) {
		wg_split_multiply(I, &f, prod, 256 - WG_PRODUCER_REGS);
		wg_trips(T, g, 0, &mul);
	} else {   /* warpgroup wj multiplies projection wj, its warps 0..3 */
		wg_split_multiply(I, &f, prod, FWD_SPLIT_MUL_REGS);
		LLVMValueRef wgi = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 7), "");
		g->p.w = LLVMBuildAnd(I->b, g->p.w, ci32(I, 3), "");
		for (int wj = 0; wj < g->nwg; wj++) {
			IfBlk wf;
			if_begin(I, &wf, ieq(I, wgi, ci32(I, wj)), "fwd_wg");
			g->wj = wj;
			wg_trips(T, g, 0, &mul);
			if_end(I, &wf);
		}
	}
	if_end(I, &f);
	irb_ret(I);
}

/* proj_fwd's epilogue: each projection with its bias rounded to bf16 into
 * the output tile (block j of obuf, swizzled: a warp's 4-byte pairs fall in
 * 32 banks), then written out a 16-byte chunk a thread, a row's 128 bytes
 * by 8 lanes, where the accumulators' pairs would write 16 bytes of 8 rows */
typedef struct { LLVMValueRef out[2], bias[2][8][2]; } FwdOut;

static void fwd_out(Tmpl *T, const Wg *g, const KSig *s, LLVMValueRef row0, LLVMValueRef acc[][32], void *ctx)
{
	(void)s;
	Irb *I = &T->I;
	const FwdOut *o = ctx;
	const ProjLanes *p = &g->p;
	int j0 = g->split ? g->wj : 0, nj = g->split ? 1 : T->napj;   /* split: the warpgroup's own projection */
	for (int jj = 0; jj < nj; jj++)
		for (int r = 0; r < 2; r++) {
			int j = j0 + jj;
			LLVMValueRef tr = acc_row(I, p, ci32(I, 0), r);   /* the row in the tile */
			for (int i = 0; i < 8; i++) {
				LLVMValueRef v = proj_pack_biased(T, j, acc[jj][4 * i + 2 * r], o->bias[j][i][0],
				                                  acc[jj][4 * i + 2 * r + 1], o->bias[j][i][1]);
				LLVMValueRef at = iadd(I, ci32(I, g->obuf + j * WG_BLOCK), wg_swz(I, tr, acc_col(I, p, ci32(I, 0), i)));
				st(I, v, smem_ptr(I, at), 4);
			}
		}
	wg_bar(I, g, j0);
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);
	LLVMValueRef tid = g->split ? LLVMBuildAnd(I->b, tid_x(I), ci32(I, 127), "") : tid_x(I);
	LLVMValueRef c = LLVMBuildAnd(I->b, tid, ci32(I, 7), "");
	for (int it = 0; it < nj * 64 * 8 / PROJ_THREADS; it++) {
		int j = j0 + it * PROJ_THREADS / 512;   /* 512 chunks a projection */
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, tid, ci32(I, 3), ""), ci32(I, (it * PROJ_THREADS / 8) % 64));
		LLVMValueRef v = ld(I, v4i, smem_ptr(I, iadd(I, ci32(I, g->obuf + j * WG_BLOCK), wg_swz(I, r, imul(I, c, ci32(I, 8))))), 16);
		LLVMValueRef row = iadd(I, row0, r);
		IfBlk f;
		if_begin(I, &f, ilt(I, row, p->BL), "out");
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, p->D)), sext64(I, iadd(I, p->c0, imul(I, c, ci32(I, 8)))));
		st(I, v, gep_bf16(I, o->out[j], idx), 16);
		if_end(I, &f);
	}
}

void proj_fwd_wg(Tmpl *T)
{
	Irb *I = &T->I;
	Wg g;
	wg_plan(T, &g, 1);
	Launch *l = proj_open(T, 1, g.smem, wg_threads(&g), g.split ? 1 : 2 * g.producer, g.tma);
	proj_lanes(T, &l->sig, &g.p);
	proj_tile(T, &g.p);
	g.src[0] = ksig_arg(T, &l->sig, "x");
	wg_maps(T, &g, &l->sig);
	FwdOut o;
	for (int j = 0; j < T->napj; j++) {
		o.out[j] = ksig_each_arg(T, &l->sig, "proj_", j);
		LLVMValueRef bp = ksig_param(T, &l->sig, T->mx->proj[T->apj[j]].bias);
		for (int i = 0; i < 8; i++)
			for (int e = 0; e < 2; e++)
				o.bias[j][i][e] = proj_bias(T, j, ld(I, I->f32, gep_f32(I, bp,
					sext64(I, iadd(I, acc_col(I, &g.p, g.p.c0, i), ci32(I, e)))), 4));
	}
	wg_body(T, &g, &l->sig, NULL, fwd_out, &o);
}

/* proj_dx's epilogue: the sums in fp32 into the output tile (rows of 256
 * bytes, 16-byte chunk c of row r at c ^ (r & 7)), then a thread a chunk
 * of 8 columns: dx's own term (bf16, from bwd_apply) read as 16 bytes,
 * added, rounded once and written as 16 bytes. The own terms are loaded
 * before the tile's first trip (dx_own): loaded in the epilogue they
 * were a global load's latency exposed once a tile. */
typedef struct { LLVMValueRef row[DX_NIT], idx[DX_NIT], own[DX_NIT]; } DxOwn;

LLVMValueRef dx_chunk(Irb *I, int obuf, LLVMValueRef r, LLVMValueRef c16)
{
	LLVMValueRef sw = LLVMBuildXor(I->b, c16, LLVMBuildAnd(I->b, r, ci32(I, 7), ""), "");
	return iadd(I, ci32(I, obuf), iadd(I, imul(I, r, ci32(I, 256)), imul(I, sw, ci32(I, 16))));
}

void dx_store_sums(Irb *I, const ProjLanes *p, int obuf, LLVMValueRef acc[32])
{
	LLVMTypeRef v2f = LLVMVectorType(I->f32, 2);
	for (int r = 0; r < 2; r++) {
		LLVMValueRef tr = acc_row(I, p, ci32(I, 0), r);
		for (int i = 0; i < 8; i++) {   /* columns 8i + 2q, + 1: chunk 2i + q / 2, bytes 8 (q & 1) */
			LLVMValueRef c16 = iadd(I, ci32(I, 2 * i), LLVMBuildLShr(I->b, p->q, ci32(I, 1), ""));
			LLVMValueRef chunk = dx_chunk(I, obuf, tr, c16);   /* sequenced: the PTX must not hang on argument order */
			LLVMValueRef at = iadd(I, chunk, imul(I, LLVMBuildAnd(I->b, p->q, ci32(I, 1), ""), ci32(I, 8)));
			LLVMValueRef v = LLVMGetUndef(v2f);
			for (int e = 0; e < 2; e++)
				v = LLVMBuildInsertElement(I->b, v, acc[4 * i + 2 * r + e], ci32(I, e), "");
			st(I, v, smem_ptr(I, at), 8);
		}
	}
}

/* a thread's rows of the tile at row0, their elements, and their own
 * terms in flight: a row past B*L reads row B*L - 1 (never written) */
static void dx_own(Tmpl *T, const Wg *g, const KSig *s, LLVMValueRef row0, void *ctx)
{
	Irb *I = &T->I;
	DxOwn *o = ctx;
	const ProjLanes *p = &g->p;
	LLVMValueRef dxd = ksig_arg(T, s, "ws:dxd");
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);
	LLVMValueRef c = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 7), "");
	for (int it = 0; it < DX_NIT; it++) {
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, tid_x(I), ci32(I, 3), ""), ci32(I, it * PROJ_THREADS / 8));
		o->row[it] = iadd(I, row0, r);
		LLVMValueRef rr = LLVMBuildSelect(I->b, ilt(I, o->row[it], p->BL), o->row[it], isub(I, p->BL, ci32(I, 1)), "");
		LLVMValueRef col = sext64(I, iadd(I, p->c0, imul(I, c, ci32(I, 8))));
		o->idx[it] = iadd(I, imul(I, sext64(I, o->row[it]), sext64(I, p->D)), col);
		o->own[it] = ld(I, v4i, gep_bf16(I, dxd, iadd(I, imul(I, sext64(I, rr), sext64(I, p->D)), col)), 16);
	}
}

/* 8 columns of dx: their own terms (4 bf16 pairs) plus their sums (2 x 4
 * fp32), rounded once, as 4 bf16 pairs */
LLVMValueRef dx_round(Irb *I, LLVMValueRef own, LLVMValueRef sum[2])
{
	LLVMValueRef v = LLVMGetUndef(LLVMVectorType(I->i32, 4));
	for (int w = 0; w < 4; w++) {
		LLVMValueRef ow = LLVMBuildExtractElement(I->b, own, ci32(I, w), "");
		LLVMValueRef lo = fadd(I, unpack_bf16_lo(I, ow), LLVMBuildExtractElement(I->b, sum[w / 2], ci32(I, 2 * (w % 2)), ""));
		LLVMValueRef hi =
		        fadd(I, unpack_bf16_hi(I, ow), LLVMBuildExtractElement(I->b, sum[w / 2], ci32(I, 2 * (w % 2) + 1), ""));
		v = LLVMBuildInsertElement(I->b, v, pack_bf16x2(I, lo, hi), ci32(I, w), "");
	}
	return v;
}

static void dx_out(Tmpl *T, const Wg *g, const KSig *s, LLVMValueRef row0, LLVMValueRef acc[][32], void *ctx)
{
	(void)row0;
	Irb *I = &T->I;
	const DxOwn *o = ctx;
	const ProjLanes *p = &g->p;
	LLVMValueRef dx = ksig_arg(T, s, "dx");
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	LLVMValueRef c = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 7), "");
	dx_store_sums(I, p, g->obuf, acc[0]);
	wg_bar(I, g, 0);
	for (int it = 0; it < DX_NIT; it++) {
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, tid_x(I), ci32(I, 3), ""), ci32(I, it * PROJ_THREADS / 8));
		IfBlk f;
		if_begin(I, &f, ilt(I, o->row[it], p->BL), "out");
		LLVMValueRef sum[2];
		for (int h = 0; h < 2; h++)
			sum[h] = ld(I, v4f, smem_ptr(I, dx_chunk(I, g->obuf, r, iadd(I, imul(I, c, ci32(I, 2)), ci32(I, h)))), 16);
		LLVMValueRef v = dx_round(I, o->own[it], sum);   /* before the address: proj_dx's PTX as it was */
		st(I, v, gep_bf16(I, dx, o->idx[it]), 16);
		if_end(I, &f);
	}
}

void proj_dx_wg(Tmpl *T)
{
	Wg g;
	wg_plan(T, &g, 0);
	Launch *l = proj_open(T, 0, g.smem, wg_threads(&g), 2 * g.producer, g.tma);
	proj_lanes(T, &l->sig, &g.p);
	proj_tile(T, &g.p);
	for (int j = 0; j < T->napj; j++)
		g.src[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
	wg_maps(T, &g, &l->sig);
	DxOwn o;
	wg_body(T, &g, &l->sig, dx_own, dx_out, &o);
}
