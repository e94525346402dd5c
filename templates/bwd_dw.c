/* bwd_apply's weight gradients: dW = x^T dproj on tensor cores once per
 * segment into accumulators in shared memory, added across the blocks of
 * a thread-block cluster through distributed shared memory in rank order,
 * and pairs of clusters into one slot in global memory. */
#include "bwd.h"

/* word e of this thread's dW^T accumulator fragment of projection j, tile kt */
LLVMValueRef dw_acc(Bwd *bw, int j, int kt, int e)
{
	Irb *I = &bw->T->I;
	return iadd(I, ci32(I, bw->sm.dW + (j * 8 + kt) * 128 * 16 + e * 4), imul(I, bw->ln->tid, ci32(I, 16)));
}

/* dproj of step si, projection j, warp w: 16 rows t of 32 bytes (the warp's
 * 16 j), the two 16-byte halves swapped on rows 4..7 and 12..15 so that
 * ldmatrix rows and the fragment stores hit distinct banks */
LLVMValueRef dpa_at(Bwd *bw, LLVMValueRef si, int j, LLVMValueRef w, LLVMValueRef t, LLVMValueRef half)
{
	Irb *I = &bw->T->I;
	LLVMValueRef blk = iadd(I, imul(I, iadd(I, imul(I, si, ci32(I, bw->T->nbdproj)), ci32(I, j)), ci32(I, 4)), w);
	LLVMValueRef sw = LLVMBuildXor(I->b, half, LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, t, ci32(I, 2), ""), ci32(I, 1), ""), "");
	return iadd(I, ci32(I, bw->sm.dpa), iadd(I, imul(I, blk, ci32(I, 512)), iadd(I, imul(I, t, ci32(I, 32)), imul(I, sw, ci32(I, 16)))));
}

/* After the reverse sweep of the segment at s0: dW^T[j][k] += sum_t
 * dproj[t][j] x[t][k] over its S steps, for the warp's own 16 j. The
 * accumulators live in shared memory; touching them once per segment
 * instead of once per step keeps this pass cheap. A = dproj^T of the warp
 * (ldmatrix.trans of its own buffers), B = x rows of the staged segment
 * (ldmatrix.trans, two 8-column tiles per load; rows past L are zero). */
void dw_segment(Bwd *bw, int s0)
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
/* The weight-gradient partials without clusters (a portable target): each
 * block writes its own accumulator tiles to its own slot, (block x, b,
 * head); param_reduce adds the G slots in order, so the bits still do not
 * depend on timing. Each thread writes the words at its own tid, as
 * dw_tile_sum reads them. */
static void dw_block_write(Bwd *bw, const KSig *sig, LLVMValueRef Bn, LLVMValueRef H)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	Mixer *mx = (Mixer *)T->mx;
	/* no barrier: a thread reads only the words dw_segment's stores of its
	 * own fragments wrote */
	LLVMValueRef slot = iadd(I, imul(I, ctaid(I, 0), Bn), ln->b);
	LLVMValueRef base = imul(I, iadd(I, imul(I, slot, H), ln->head), ci32(I, 4096));
	LLVMValueRef out[MX_MAXPROJ];
	char a[64];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[T->bdproj[j]].weight].name);
		out[j] = ksig_arg(T, sig, a);
	}
	LLVMTypeRef v4 = LLVMVectorType(I->f32, 4);
	for (int jk = 0; jk < T->nbdproj * 8; jk++) {
		LLVMValueRef at[4];
		LLVMValueRef v = ld(I, v4, smem_ptr(I, iadd(I, dw_acc(bw, 0, 0, 0), ci32(I, jk * 128 * 16))), 16);
		dw_tile_at(bw, out, ci32(I, jk), base, at);
		for (int e = 0; e < 4; e++)
			st(I, LLVMBuildExtractElement(I->b, v, ci32(I, e), ""), at[e], 4);
	}
}

void dw_cluster_write(Bwd *bw, const KSig *sig, LLVMValueRef Bn, LLVMValueRef H)
{
	Tmpl *T = bw->T;
	Irb *I = &T->I;
	Lanes *ln = bw->ln;
	Mixer *mx = (Mixer *)T->mx;
	if (T->portable) {
		dw_block_write(bw, sig, Bn, H);
		return;
	}
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
