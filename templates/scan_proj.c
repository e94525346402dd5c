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
	LLVMValueRef xcol = imul(I, idiv(I, ln->head, ci32(I, kbh)), ci32(I, T->mx->k));
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
		LLVMValueRef all[64];
		for (int j = 0; j < T->napj; j++)
			for (int e = 0; e < 32; e++)
				all[32 * j + e] = a[j][e];
		wg_wait(I, 0, all, 32 * T->napj);
		for (int j = 0; j < T->napj; j++)
			for (int e = 0; e < 32; e++) {
				a[j][e] = all[32 * j + e];
				var_set(I, acc[j][e], a[j][e]);
			}
		if_begin(I, &f, ieq(I, kb, ci32(I, kbh - 1)), "pstore");
		store_tile(T, ln, row0, a);
		if_end(I, &f);
	}
	loop_end(I, &L);
	/* the projections stored seen by the segment copies, and the image and
	 * ring read by every wgmma before those copies overwrite them */
	bar_sync(I);
}
