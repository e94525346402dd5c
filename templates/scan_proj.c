/* The forward's projections inside fwd_scan (Variant.scan_proj, sm_90a):
 * each quad, a warpgroup, multiplies its own 128 rows of x's whole head
 * rows by its 64-column slice of every projection's weights on wgmma,
 * before its first sweep, where proj_fwd ran as a kernel of its own.
 *
 * What it saves: proj_fwd read x (2 bytes an element) and wrote the
 * projections (4), which fwd_scan read back (4); here fwd_scan writes
 * them once for the backward and reads them back from L2, just written,
 * and x's head rows come through L2 to the head's slices as they did to
 * proj_fwd's column tiles: 14 bytes an element of memory for the forward
 * become 8 (bench/ROOFLINE.md, "Where the bytes go in a split-head form").
 *
 * The weights are bf16 images of the swizzled wgmma blocks, made once a
 * forward by proj_wimg (a slice's napj x K/64 blocks, [n][k], the layout
 * proj_fwd stages; ws:wimg), so that a block copies its slice's 64 KB (K
 * = 256) by cp.async instead of converting 128 KB of fp32 per tile. The
 * image and a ring of x's blocks (two a quad) live in the quads' segment
 * buffers, free before the first sweep stages its rows: no shared memory
 * of their own, so two blocks still share an SM. Each quad's trips are
 * its two 64-row tiles times the head's K/64 contraction blocks; a trip
 * copies the next one's block while its wgmma run. The projections, with
 * their biases, rounded to bf16 as proj_fwd rounds them (the same wgmma,
 * the same order: the same bits), go straight to ws:proj_W; a block
 * barrier then makes them visible to the segment copies that stage them
 * for the sweeps, as they staged proj_fwd's. */
#include "proj_wg.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

/* a 64-channel slice's image: napj x K/64 blocks */
static int wimg_blocks(const Tmpl *T) { return T->napj * (T->mx->k / 64); }

int scan_proj_ok(const Tmpl *T)
{
	return T->mx->k % 64 == 0 && T->napj >= 1 && T->napj <= 2 && T->v->lookback && T->quads == 2 &&
	       T->quad_groups == 1 && T->chunk == 8;
}

int scan_proj_on(const Tmpl *T) { return T->v->scan_proj && T->wgmma; }

int scan_proj_fits(const Tmpl *T, int seg_buf_bytes)
{
	return (wimg_blocks(T) + 2 * T->quads) * WG_BLOCK <= seg_buf_bytes;
}

/* proj_wimg: a block a 64-channel slice (the scans' heads, HS of them),
 * a thread a 16-byte chunk of its image at a time: row n of block (j, kb)
 * holds W_j[hp][64 kb + k][n0 + n] for k = 0..63, chunk c at c ^ (n & 7) */
void tmpl_proj_wimg(Tmpl *T)
{
	Irb *I = &T->I;
	int K = T->mx->k, kbh = K / 64, nch = wimg_blocks(T) * WG_BLOCK / 16, threads = 256;
	Launch *l = tmpl_launch(T, 1, "proj_wimg", "HS", "1", "1", threads, "0");
	ksig_params(T, &l->sig);
	ksig_add(T, &l->sig, "ws:wimg", I->gptr);
	tmpl_open(T, l);
	LLVMValueRef img = ksig_arg(T, &l->sig, "ws:wimg");
	LLVMValueRef s = ctaid(I, 0);
	LLVMValueRef hp = idiv(I, s, ci32(I, kbh)), n0 = imul(I, isub(I, s, imul(I, hp, ci32(I, kbh))), ci32(I, 64));
	LLVMValueRef hbase = imul(I, hp, ci32(I, K * K));
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);
	Loop L;
	loop_begin(I, &L, tid_x(I), ci32(I, nch), ci32(I, threads), "wimg");
	{
		LLVMValueRef e = loop_i(I, &L);
		LLVMValueRef blk = LLVMBuildLShr(I->b, e, ci32(I, 9), "");   /* 512 chunks a block */
		LLVMValueRef n = LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, e, ci32(I, 3), ""), ci32(I, 63), "");
		LLVMValueRef c = LLVMBuildXor(I->b, LLVMBuildAnd(I->b, e, ci32(I, 7), ""), LLVMBuildAnd(I->b, n, ci32(I, 7), ""), "");
		LLVMValueRef j = idiv(I, blk, ci32(I, kbh)), kb = isub(I, blk, imul(I, j, ci32(I, kbh)));
		LLVMValueRef k0 = iadd(I, imul(I, kb, ci32(I, 64)), imul(I, c, ci32(I, 8)));
		/* the projection's weight: a select over at most two, by j */
		LLVMValueRef W = ksig_param(T, &l->sig, T->mx->proj[T->apj[0]].weight);
		if (T->napj > 1)
			W = LLVMBuildSelect(I->b, ieq(I, j, ci32(I, 1)), ksig_param(T, &l->sig, T->mx->proj[T->apj[1]].weight), W, "");
		LLVMValueRef v = LLVMGetUndef(v4i);
		for (int p = 0; p < 4; p++) {
			LLVMValueRef f[2];
			for (int h = 0; h < 2; h++) {
				LLVMValueRef k = iadd(I, k0, ci32(I, 2 * p + h));
				LLVMValueRef gi = iadd(I, hbase, iadd(I, imul(I, k, ci32(I, K)), iadd(I, n0, n)));
				f[h] = ld(I, I->f32, gep_f32(I, W, sext64(I, gi)), 4);
			}
			v = LLVMBuildInsertElement(I->b, v, pack_bf16x2(I, f[0], f[1]), ci32(I, p), "");
		}
		LLVMValueRef at = iadd(I, imul(I, sext64(I, s), ci64(I, (long long)wimg_blocks(T) * WG_BLOCK / 2)),
		                       sext64(I, imul(I, e, ci32(I, 8))));
		st(I, v, gep_bf16(I, img, at), 16);
	}
	loop_end(I, &L);
	irb_ret(I);
}

/* the copies of the quad's 64 rows from row0, x's columns col0 .. col0 +
 * 63 (contraction block kb of the head) into its swizzled block at base
 * (the quad's own): 4 chunks a thread of the quad's 128; rows past the
 * sequence land as zeros. proj_wg_ring.c's copy_block with its row bound
 * generalized did the same, but testing b L + t against b L + L instead of
 * t against L cost fwd_scan 8 bytes of spill at 128 registers */
static void x_block(Tmpl *T, Lanes *ln, LLVMValueRef row0, LLVMValueRef col0, LLVMValueRef base)
{
	Irb *I = &T->I;
	LLVMValueRef tq = LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), "");
	LLVMValueRef c = LLVMBuildAnd(I->b, tq, ci32(I, 7), "");
	LLVMValueRef col = sext64(I, iadd(I, col0, imul(I, c, ci32(I, 8))));
	for (int it = 0; it < 4; it++) {
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, tq, ci32(I, 3), ""), ci32(I, 16 * it));
		LLVMValueRef t = iadd(I, row0, r);
		LLVMValueRef ok = in_seq(T, ln, t);
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, iadd(I, imul(I, ln->b, ln->L), t)), sext64(I, ln->D)), col);
		cp_async16(I, iadd(I, base, wg_swz(I, r, imul(I, c, ci32(I, 8)))),
		           gep_bf16(I, ln->x, LLVMBuildSelect(I->b, ok, idx, ci64(I, 0), "")),
		           LLVMBuildSelect(I->b, ok, ci32(I, 16), ci32(I, 0), ""));
	}
}

/* Every 128-byte line of the quad's 128 rows of x's head columns asked of
 * L2 at once (K / 8 lines a thread of the quad's 128): the ring holds one
 * trip ahead, so each trip's copies would otherwise wait on memory */
static void x_prefetch(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef xcol)
{
	Irb *I = &T->I;
	int lines = T->mx->k / 64;   /* 128-byte lines of a row's head columns */
	LLVMValueRef tq = LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), "");
	for (int it = 0; it < lines; it++) {
		LLVMValueRef t = iadd(I, gb, tq);
		LLVMValueRef ok = in_seq(T, ln, t);
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, iadd(I, imul(I, ln->b, ln->L), t)), sext64(I, ln->D)),
		                        sext64(I, iadd(I, xcol, ci32(I, 64 * it))));
		IfBlk f;
		if_begin(I, &f, ok, "xpf");
		prefetch_l2(I, gep_bf16(I, ln->x, idx));
		if_end(I, &f);
	}
}

/* the 64 rows' projections from row0 with their biases, bf16, to
 * ws:proj_W: the accumulator pairs (rows 16 w + g (+ 8), columns 8 i + 2 q
 * (+ 1)) as 4-byte stores, rows inside the sequence */
static void store_tile(Tmpl *T, Lanes *ln, LLVMValueRef row0, LLVMValueRef acc[][32])
{
	Irb *I = &T->I;
	LLVMValueRef c0 = iadd(I, imul(I, ln->head, ci32(I, 64)), imul(I, ln->q, ci32(I, 2)));
	for (int r = 0; r < 2; r++) {
		LLVMValueRef t = iadd(I, row0, iadd(I, imul(I, ln->w, ci32(I, 16)), iadd(I, ln->g, ci32(I, 8 * r))));
		LLVMValueRef row = iadd(I, imul(I, sext64(I, iadd(I, imul(I, ln->b, ln->L), t)), sext64(I, ln->D)), sext64(I, c0));
		IfBlk f;
		if_begin(I, &f, in_seq(T, ln, t), "pj_out");
		for (int j = 0; j < T->napj; j++) {
			/* the biases loaded where they are added (cached): held for
			 * both rows they were 32 registers beside the accumulators */
			LLVMValueRef bp = gep_f32(I, ln->param[T->mx->proj[T->apj[j]].bias], sext64(I, c0));
			for (int i = 0; i < 8; i++) {
				LLVMValueRef b0 = ld(I, I->f32, gep_f32(I, bp, ci64(I, 8 * i)), 4);
				LLVMValueRef b1 = ld(I, I->f32, gep_f32(I, bp, ci64(I, 8 * i + 1)), 4);
				LLVMValueRef v = proj_pack(T, j, fadd(I, acc[j][4 * i + 2 * r], b0), fadd(I, acc[j][4 * i + 2 * r + 1], b1));
				st(I, v, gep_bf16(I, ln->pws[j], iadd(I, row, ci64(I, 8 * i))), 4);
			}
		}
		if_end(I, &f);
	}
}

/* x's first column of the projections' head that holds the lanes' 64 channels */
static LLVMValueRef x_head_col(Tmpl *T, const Lanes *ln)
{
	Irb *I = &T->I;
	return imul(I, idiv(I, ln->head, ci32(I, T->mx->k / 64)), ci32(I, T->mx->k));
}

/* the first row of the lanes' tile of chunk x prefix steps */
static LLVMValueRef tile_row0(Tmpl *T, const Lanes *ln)
{
	return imul(&T->I, ln->tile, ci32(&T->I, T->chunk * T->prefix));
}

/* trip n's rows (the quad's tile n / kbh) and x's columns (block n % kbh) */
static void trip_at(Tmpl *T, LLVMValueRef gb, LLVMValueRef xcol, LLVMValueRef n, LLVMValueRef *row0, LLVMValueRef *col0,
                    LLVMValueRef *kb)
{
	Irb *I = &T->I;
	int kbh = T->mx->k / 64;
	LLVMValueRef mt = idiv(I, n, ci32(I, kbh));
	*kb = isub(I, n, imul(I, mt, ci32(I, kbh)));
	*row0 = iadd(I, gb, imul(I, mt, ci32(I, 64)));
	*col0 = iadd(I, xcol, imul(I, *kb, ci32(I, 64)));
}

/* A trip's multiplies, waited for: the accumulators acc (their values
 * into a) plus the 64 rows of x's block at abuf times contraction block kb
 * of each projection's image at wbase, 4 k-steps of 16; the first step adds
 * to them only where more (a row tile's first trip starts from zero) */
static void trip_mma(Tmpl *T, Var acc[][32], LLVMValueRef a[][32], LLVMValueRef abuf, int wbase, LLVMValueRef kb,
                     LLVMValueRef more)
{
	Irb *I = &T->I;
	int kbh = T->mx->k / 64;
	for (int j = 0; j < T->napj; j++)
		for (int e = 0; e < 32; e++)
			a[j][e] = var_get(I, acc[j][e]);
	wg_fence(I);
	for (int ks = 0; ks < 4; ks++)
		for (int j = 0; j < T->napj; j++) {
			LLVMValueRef wb = iadd(I, ci32(I, wbase), imul(I, iadd(I, kb, ci32(I, j * kbh)), ci32(I, WG_BLOCK)));
			LLVMValueRef acc_on = ks > 0 ? LLVMConstInt(I->i1, 1, 0) : more;
			wg_mma64_if(I, a[j], wg_desc(I, abuf, 2 * 16 * ks), wg_desc(I, wb, 2 * 16 * ks), acc_on, 0);
		}
	wg_commit(I);
	wg_wait_acc(I, a, T->napj);
	for (int j = 0; j < T->napj; j++)
		for (int e = 0; e < 32; e++)
			var_set(I, acc[j][e], a[j][e]);
}

void scan_project(Tmpl *T, Lanes *ln, LLVMValueRef gb)
{
	Irb *I = &T->I;
	int kbh = T->mx->k / 64, nb = wimg_blocks(T), ntrip = 2 * kbh;
	int wbase = ln->seg_off, ring = wbase + nb * WG_BLOCK;
	CHECK(scan_proj_on(T) && scan_proj_ok(T) && ln->wimg && ln->seg_off % 1024 == 0 && T->k.threads == 128 * T->quads);
	CHECK(scan_proj_fits(T, T->quads * ln->seg_n * ln->seg_step));
	/* the slice's image, by every thread of the block */
	LLVMValueRef src0 = imul(I, sext64(I, ln->head), ci64(I, (long long)nb * WG_BLOCK / 2));
	int per = nb * WG_BLOCK / 16 / T->k.threads;
	CHECK(per * T->k.threads * 16 == nb * WG_BLOCK);
	for (int it = 0; it < per; it++) {
		LLVMValueRef e = iadd(I, ln->tid, ci32(I, it * T->k.threads));
		cp_async16(I, iadd(I, ci32(I, wbase), imul(I, e, ci32(I, 16))),
		           gep_bf16(I, ln->wimg, iadd(I, src0, sext64(I, imul(I, e, ci32(I, 8))))), ci32(I, 16));
	}
	/* the quad's two buffers of the ring; x's head columns */
	LLVMValueRef qring = iadd(I, ci32(I, ring), imul(I, ln->quad, ci32(I, 2 * WG_BLOCK)));
	LLVMValueRef xcol = x_head_col(T, ln);
	x_prefetch(T, ln, gb, xcol);
	LLVMValueRef row0, col0, kb;
	trip_at(T, gb, xcol, ci32(I, 0), &row0, &col0, &kb);
	x_block(T, ln, row0, col0, qring);
	cp_async_commit(I);
	/* the trips as a loop, not unrolled: unrolled, the descriptors of
	 * every trip were live beside the 64 accumulators */
	Var acc[2][32];
	for (int j = 0; j < T->napj; j++)
		for (int e = 0; e < 32; e++)
			acc[j][e] = var_init(I, cf32(I, 0.0), "pacc");
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, ntrip), ci32(I, 1), "ptrip");
	{
		LLVMValueRef n = loop_i(I, &L);
		trip_at(T, gb, xcol, n, &row0, &col0, &kb);
		/* trip n's block (and at n = 0 the image) landed in every thread,
		 * and every thread past trip n - 1's wgmma: its buffer is refilled */
		cp_async_wait_all(I);
		fence_proxy_async(I);
		bar_sync(I);
		LLVMValueRef n1 = iadd(I, n, ci32(I, 1));
		IfBlk f;
		if_begin(I, &f, ilt(I, n1, ci32(I, ntrip)), "pnext");
		LLVMValueRef r1, c1, k1;
		trip_at(T, gb, xcol, n1, &r1, &c1, &k1);
		x_block(T, ln, r1, c1, iadd(I, qring, imul(I, LLVMBuildAnd(I->b, n1, ci32(I, 1), ""), ci32(I, WG_BLOCK))));
		cp_async_commit(I);
		if_end(I, &f);
		LLVMValueRef abuf = iadd(I, qring, imul(I, LLVMBuildAnd(I->b, n, ci32(I, 1), ""), ci32(I, WG_BLOCK)));
		LLVMValueRef more = LLVMBuildICmp(I->b, LLVMIntNE, kb, ci32(I, 0), "");
		LLVMValueRef a[2][32];
		trip_mma(T, acc, a, abuf, wbase, kb, more);
		if_begin(I, &f, ieq(I, kb, ci32(I, kbh - 1)), "pstore");
		store_tile(T, ln, row0, a);
		if_end(I, &f);
	}
	loop_end(I, &L);
	/* the projections stored seen by the segment copies, and the image and
	 * ring read by every wgmma before those copies overwrite them */
	bar_sync(I);
}

/* The persistent form (Variant.proj_ahead): fwd_scan's blocks stay resident and take
 * tile after tile by ticket, and a third warpgroup of the block projects
 * the tile its quads sweep next while they sweep this one, so that the
 * projections' loads and tensor work overlap the sweeps instead of
 * preceding them (the form above measured the forward +11 to +19% against
 * proj_fwd apart, its trips waiting with nothing of the block to hide
 * them). Its image and ring are its own shared memory, after the quads':
 * one block an SM, whose two quads swept at 77% of the copy rate where two
 * blocks' four reach 94% (bench/experiments/2026-12-07-fwd-one-block).
 * Measured on an H100 (bench/experiments/2026-12-07-scanproj-ahead and
 * -scanproj-tma, 1x131072x4096): correct, slower: fwd_scan 3.07 ms with
 * its copies by TMA (3.6 by cp.async) against proj_fwd's 1.51 and its
 * twin's 1.48. The producer paces it, about 12.4 us a tile of 256 rows
 * against the quads' 7.5, and not by its trips: without them fwd_scan
 * still took 2.6 ms (the row tiles' epilogues, each waiting for its
 * biases from global memory, and each tile's wait for its stores before
 * it is posted). */
int scan_proj_ahead_ok(const Tmpl *T) { return scan_proj_ok(T) && T->mx->k >= 128 && !T->v->docs && !T->v->map; }

int scan_proj_ahead(const Tmpl *T) { return T->v->proj_ahead && scan_proj_on(T); }

/* trips a copy runs ahead: fewer than the head's contraction blocks, so
 * that the next tile's image block is copied past its last use here */
static int sp_ahead_n(const Tmpl *T)
{
	int kbh = T->mx->k / 64;
	return SP_AHEAD_N < kbh ? SP_AHEAD_N : kbh - 1;
}

void sp_layout(const Tmpl *T, int sweep_bytes, SpAhead *a)
{
	int at = (sweep_bytes + 1023) & ~1023;
	a->img = at;
	at += wimg_blocks(T) * WG_BLOCK;
	a->ring = at;
	at += SP_STAGES * WG_BLOCK;
	a->obuf = at;   /* a row tile's output, a block a projection */
	at += T->napj * WG_BLOCK;
	a->tick = at;   /* the two slots' tickets, then the draw's */
	at += 16;
	a->full = at;   /* full[2] (the producer's 128 arrive), then empty[2] (the quads' 128 * quads) */
	at += 16;
	a->empty = at;
	at += 16;
	a->xfull = at;
	at += 8 * SP_STAGES;
	a->bytes = at;
}

void sp_pmap_arg(const Tmpl *T, int j, char *a, size_t n)
{
	snprintf(a, n, "tmap:ws:proj_%s:64x64", apj_weight(T, j));
}

void sp_ticket(Tmpl *T, LLVMValueRef t, LLVMValueRef HS, LLVMValueRef B)
{
	Irb *I = &T->I;
	LLVMValueRef HB = imul(I, HS, B), r = LLVMBuildURem(I->b, t, HB, "");
	T->k.ticket_thb[0] = LLVMBuildUDiv(I->b, t, HB, "sp_tile");
	T->k.ticket_thb[1] = LLVMBuildURem(I->b, r, HS, "sp_head");
	T->k.ticket_thb[2] = LLVMBuildUDiv(I->b, r, HS, "sp_b");
}

/* the producer's lanes: lanes_bind's (tile, head and b from the ticket) and
 * the weights' image; what x_block, x_prefetch and sp_store read */
static void prod_lanes(Tmpl *T, const KSig *sig, Lanes *ln)
{
	CHECK(T->k.ticket_thb[1] && T->k.ticket_thb[2]);
	lanes_bind(T, ln, sig);
	ln->wimg = ksig_arg(T, sig, "ws:wimg");
	ln->xmap = ksig_arg(T, sig, SP_XMAP);
	for (int j = 0; j < T->napj; j++) {
		char a[64];
		sp_pmap_arg(T, j, a, sizeof a);
		ln->pmap[j] = ksig_arg(T, sig, a);
	}
}

/* a row tile's projections with their biases to ws:proj_W through the
 * output tile at obuf (block j a projection, in the 128-byte swizzle: a
 * warp's 4-byte pairs fall in 32 banks), then by TMA (its first thread's
 * bulk group; rows past the sequence not written). The threads' own
 * stores, 16 bytes a thread from the same tile, cost the producer about a
 * fifth of its time, and from the accumulators' pairs half
 * (bench/experiments/2026-12-07-scanproj-ahead). obuf is free: the
 * group before it was read before the trip's barrier (sp_project_tile) */
static void sp_store(Tmpl *T, Lanes *ln, LLVMValueRef row0, LLVMValueRef acc[][32], int obuf, LLVMValueRef pbar)
{
	Irb *I = &T->I;
	/* a projection's biases of the lane's columns asked at once (held over
	 * the trips beside the accumulators, or both projections' here, ptxas
	 * spilled 104 and 16 bytes) */
	for (int j = 0; j < T->napj; j++) {
		LLVMValueRef bias[8][2];
		LLVMValueRef bp = ln->param[T->mx->proj[T->apj[j]].bias];
		for (int i = 0; i < 8; i++)
			for (int e = 0; e < 2; e++) {
				LLVMValueRef col = iadd(I, imul(I, ln->head, ci32(I, 64)), iadd(I, ci32(I, 8 * i + e),
				                                                                 imul(I, ln->q, ci32(I, 2))));
				bias[i][e] = proj_bias(T, j, ld(I, I->f32, gep_f32(I, bp, sext64(I, col)), 4));
			}
		for (int r = 0; r < 2; r++) {
			LLVMValueRef tr = iadd(I, imul(I, ln->w, ci32(I, 16)), iadd(I, ln->g, ci32(I, 8 * r)));
			for (int i = 0; i < 8; i++) {
				LLVMValueRef v = proj_pack_biased(T, j, acc[j][4 * i + 2 * r], bias[i][0],
				                                  acc[j][4 * i + 2 * r + 1], bias[i][1]);
				LLVMValueRef col = iadd(I, ci32(I, 8 * i), imul(I, ln->q, ci32(I, 2)));
				st(I, v, smem_ptr(I, iadd(I, ci32(I, obuf + j * WG_BLOCK), wg_swz(I, tr, col))), 4);
			}
		}
	}
	fence_proxy_async(I);   /* the tile's shared stores seen by the TMA's reads */
	bar_named(I, pbar, 128);
	IfBlk f;
	if_begin(I, &f, ieq(I, LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), ""), ci32(I, 0)), "sp_out");
	LLVMValueRef at[3] = { imul(I, ln->head, ci32(I, 64)), row0, ln->b };
	for (int j = 0; j < T->napj; j++)
		tma_store3(I, ln->pmap[j], at, ci32(I, obuf + j * WG_BLOCK));
	bulk_commit(I);
	if_end(I, &f);
}

/* The producer's copies for trip m of a tile (m a constant or not), by
 * its first thread: x's block by TMA (rows past the sequence as zeros),
 * and in the tile's first row tile the image's blocks kb of both
 * projections, into ring slot m % SP_STAGES (a tile's trips are a multiple
 * of it, so the slots run on across tiles) and the image, all completing
 * on the slot's mbarrier. An image block is loaded sp_ahead_n trips before
 * its first use, past its last use in the tile before (trip 12 + kb there
 * at 4 row tiles, before the copy's trip 16 - sp_ahead_n + kb: that trip's
 * barrier follows its wgmma) */
static void sp_copy(Tmpl *T, Lanes *ln, const SpAhead *a, LLVMValueRef m)
{
	Irb *I = &T->I;
	int kbh = T->mx->k / 64, nb = wimg_blocks(T);
	LLVMValueRef gb = tile_row0(T, ln), xcol = x_head_col(T, ln);
	LLVMValueRef row0, col0, kb;
	trip_at(T, gb, xcol, m, &row0, &col0, &kb);
	LLVMValueRef slot = LLVMBuildURem(I->b, m, ci32(I, SP_STAGES), "");
	LLVMValueRef bar = sp_slot(I, a->xfull, slot, 8), img = ilt(I, m, ci32(I, kbh));
	IfBlk f, g;
	if_begin(I, &f, ieq(I, LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), ""), ci32(I, 0)), "sp_copy");
	mbar_arrive_tx(I, bar, LLVMBuildSelect(I->b, img, ci32(I, (1 + T->napj) * WG_BLOCK), ci32(I, WG_BLOCK), ""));
	LLVMValueRef at[3] = { col0, row0, ln->b };
	tma_load3(I, iadd(I, ci32(I, a->ring), imul(I, slot, ci32(I, WG_BLOCK))), ln->xmap, at, bar);
	if_begin(I, &g, img, "sp_img");
	LLVMValueRef src0 = imul(I, sext64(I, ln->head), ci64(I, (long long)nb * WG_BLOCK / 2));
	for (int j = 0; j < T->napj; j++) {
		LLVMValueRef blk = iadd(I, kb, ci32(I, j * kbh));
		LLVMValueRef src = iadd(I, src0, sext64(I, imul(I, blk, ci32(I, WG_BLOCK / 2))));
		bulk_load(I, sp_slot(I, a->img, blk, WG_BLOCK), gep_bf16(I, ln->wimg, src), ci32(I, WG_BLOCK), bar);
	}
	if_end(I, &g);
	if_end(I, &f);
}

/* One tile's projections by the producer warpgroup: its row tiles of 64
 * times the head's K/64 contraction blocks, each trip's copies issued
 * sp_ahead_n trips ahead, into the next tile's first trips at the end
 * (nxt, where more is true); trip0: the block's trips before this tile's */
static void sp_project_tile(Tmpl *T, Lanes *ln, Lanes *nxt, LLVMValueRef more, const SpAhead *a, LLVMValueRef pbar,
                            LLVMValueRef trip0)
{
	Irb *I = &T->I;
	int kbh = T->mx->k / 64, nrt = T->chunk * T->prefix / 64, ntrip = nrt * kbh;
	int ahead = sp_ahead_n(T);
	CHECK(nrt * 64 == T->chunk * T->prefix && ahead >= 1 && ahead < SP_STAGES && ntrip % SP_STAGES == 0 && nrt > 1);
	LLVMValueRef gb = tile_row0(T, ln), xcol = x_head_col(T, ln);
	Var acc[2][32];
	for (int j = 0; j < T->napj; j++)
		for (int e = 0; e < 32; e++)
			acc[j][e] = var_init(I, cf32(I, 0.0), "pacc");
	LLVMValueRef row0, col0, kb;
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, ntrip), ci32(I, 1), "sptrip");
	{
		LLVMValueRef n = loop_i(I, &L);
		trip_at(T, gb, xcol, n, &row0, &col0, &kb);
		/* trip n's blocks landed (the slot's phase: its uses since the
		 * kernel began, trip0 + n the block's trips), and every thread past
		 * trip n - 1's wgmma, whose buffer the copy below refills */
		LLVMValueRef use = LLVMBuildUDiv(I->b, iadd(I, trip0, n), ci32(I, SP_STAGES), "");
		mbar_wait(I, sp_slot(I, a->xfull, LLVMBuildURem(I->b, n, ci32(I, SP_STAGES), ""), 8),
		          LLVMBuildAnd(I->b, use, ci32(I, 1), ""));
		bulk_wait(I, 0, 1);   /* the last row tile's output read from obuf (its first thread's group) */
		bar_named(I, pbar, 128);
		LLVMValueRef na = iadd(I, n, ci32(I, ahead));
		IfBlk f, g;
		if_begin(I, &f, ilt(I, na, ci32(I, ntrip)), "sp_ahead");
		sp_copy(T, ln, a, na);
		if_end(I, &f);
		if_begin(I, &g, land(I, more, ige(I, na, ci32(I, ntrip))), "sp_ahead_next");
		sp_copy(T, nxt, a, isub(I, na, ci32(I, ntrip)));
		if_end(I, &g);
		LLVMValueRef abuf = iadd(I, ci32(I, a->ring), imul(I, LLVMBuildURem(I->b, n, ci32(I, SP_STAGES), ""),
		                                                  ci32(I, WG_BLOCK)));
		LLVMValueRef more = LLVMBuildICmp(I->b, LLVMIntNE, kb, ci32(I, 0), "");
		/* waited for within the trip: left in flight (wait 1, the ring's
		 * copies 2 trips ahead) it took 3.26-3.31 ms against 3.07-3.09 at
		 * 1x131072x4096 on an H100 (bench/experiments/2026-12-07-scanproj-tma) */
		LLVMValueRef av[2][32];
		trip_mma(T, acc, av, abuf, a->img, kb, more);
		if_begin(I, &f, ieq(I, kb, ci32(I, kbh - 1)), "spstore");
		sp_store(T, ln, row0, av, a->obuf, pbar);
		if_end(I, &f);
	}
	loop_end(I, &L);
}

/* a ticket drawn for the producer warpgroup, through the shared word at
 * off (a draw's word is written again only after barriers every thread
 * of the warpgroup has passed since it read it) */
static LLVMValueRef sp_draw(Tmpl *T, LLVMValueRef ticket, LLVMValueRef first, LLVMValueRef pbar, int off)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, first, "sp_draw");
	st(I, atom_add_u32(I, ticket, ci32(I, 1)), smem_ptr(I, ci32(I, off)), 4);
	if_end(I, &f);
	bar_named(I, pbar, 128);
	return ld(I, I->i32, smem_ptr(I, ci32(I, off)), 4);
}

/* ticket t's x rows asked of L2, a tile before they are copied */
static void sp_prefetch(Tmpl *T, const KSig *sig, LLVMValueRef t, LLVMValueRef HS, LLVMValueRef B, LLVMValueRef total)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntULT, t, total, ""), "sp_pf");
	sp_ticket(T, t, HS, B);
	Lanes ln;
	prod_lanes(T, sig, &ln);
	int steps = T->chunk * T->prefix;
	LLVMValueRef gb = tile_row0(T, &ln), xcol = x_head_col(T, &ln);
	for (int r = 0; r < steps; r += 128)
		x_prefetch(T, &ln, iadd(I, gb, ci32(I, r)), xcol);
	if_end(I, &f);
}

void scan_proj_producer(Tmpl *T, const KSig *sig, const SpAhead *a, LLVMValueRef HS, LLVMValueRef B,
                        LLVMValueRef total)
{
	Irb *I = &T->I;
	LLVMValueRef pbar = ci32(I, SP_BAR_PRODUCER), tid = tid_x(I);
	LLVMValueRef first = ieq(I, LLVMBuildAnd(I->b, tid, ci32(I, 127), ""), ci32(I, 0));
	LLVMValueRef ticket = ksig_arg(T, sig, "ws:ticket");
	CHECK(T->chunk * T->prefix % 128 == 0);
	/* the block's first tile: its rows prefetched, its first trips' copies
	 * issued; then at each tile the next one's ticket drawn and its rows
	 * prefetched before this one's trips, which issue its first copies */
	LLVMValueRef t0 = sp_draw(T, ticket, first, pbar, a->tick + 12);
	sp_prefetch(T, sig, t0, HS, B, total);
	IfBlk f;
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntULT, t0, total, ""), "sp_first");
	sp_ticket(T, t0, HS, B);
	Lanes l0;
	prod_lanes(T, sig, &l0);
	for (int m = 0; m < sp_ahead_n(T); m++)
		sp_copy(T, &l0, a, ci32(I, m));
	if_end(I, &f);
	Var k = var_init(I, ci32(I, 0), "sp_k"), cur = var_init(I, t0, "sp_cur");
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "sp_prod");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "sp_prod_done");
	LLVMBuildBr(I->b, head);
	LLVMPositionBuilderAtEnd(I->b, head);
	LLVMValueRef t = var_get(I, cur), kk = var_get(I, k);
	LLVMValueRef valid = LLVMBuildICmp(I->b, LLVMIntULT, t, total, "");
	if_begin(I, &f, valid, "sp_tile");
	LLVMValueRef nx = sp_draw(T, ticket, first, pbar, a->tick + 8);
	sp_prefetch(T, sig, nx, HS, B, total);
	var_set(I, cur, nx);
	LLVMValueRef more = LLVMBuildICmp(I->b, LLVMIntULT, nx, total, "");
	/* the next tile's coordinates (a ticket past the last decodes to a tile
	 * past NT, never copied from: more is false) */
	sp_ticket(T, nx, HS, B);
	Lanes ln_next;
	prod_lanes(T, sig, &ln_next);
	sp_ticket(T, t, HS, B);
	Lanes ln;
	prod_lanes(T, sig, &ln);
	int ntrip = T->chunk * T->prefix / 64 * (T->mx->k / 64);
	sp_project_tile(T, &ln, &ln_next, more, a, pbar, imul(I, kk, ci32(I, ntrip)));
	if_end(I, &f);
	/* the tile's projections written (the first thread's stores by TMA,
	 * then ordered before its arrival); the slot's previous tile swept (from
	 * its second use), the ticket in it, and the tile's projections released
	 * to the quads with the arrival */
	bulk_wait(I, 0, 0);
	fence_proxy_async_global(I);
	LLVMValueRef s = LLVMBuildAnd(I->b, kk, ci32(I, 1), "");
	LLVMValueRef u = LLVMBuildLShr(I->b, kk, ci32(I, 1), "");
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntUGE, kk, ci32(I, 2), ""), "sp_empty");
	mbar_wait(I, sp_slot(I, a->empty, s, 8), LLVMBuildAnd(I->b, isub(I, u, ci32(I, 1)), ci32(I, 1), ""));
	if_end(I, &f);
	if_begin(I, &f, first, "sp_post");
	st(I, t, smem_ptr(I, sp_slot(I, a->tick, s, 4)), 4);
	if_end(I, &f);
	mbar_arrive(I, sp_slot(I, a->full, s, 8));
	var_set(I, k, iadd(I, kk, ci32(I, 1)));
	LLVMBuildCondBr(I->b, valid, head, done);
	LLVMPositionBuilderAtEnd(I->b, done);
	memset(T->k.ticket_thb, 0, sizeof T->k.ticket_thb);
}
