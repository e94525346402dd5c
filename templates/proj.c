/* Projections apart: the block-diagonal projections of heads of any K (16
 * to 256 in steps of 16) as kernels of their own, on tensor cores, for
 * the variants whose scans read them from memory (Variant.apart).
 *
 *   proj_fwd  P_j = x W_j + bias_j for every projection j, rounded to
 *             bf16 into ws:proj_W (saved for the backward's scans: half
 *             the bytes of fp32 written once and read twice; the added
 *             error is bench/proj_rounding.py's)
 *   proj_dx   dx = dx's own term (ws:dxd, bf16, from bwd_apply) + sum_j
 *             dP_j W_j^T, dP_j the adjoints bwd_apply left in ws:dproj_W
 *   proj_dw   dW_j = x^T dP_j per slab of rows into ws:part_W; param_reduce
 *             sums the slabs in order, so every run gives the same bits
 *
 * A block is 4 warps. proj_fwd and proj_dx compute a tile of 64 rows by NC
 * columns (NC = gcd(K, 64): a tile never straddles two heads), warp w its
 * rows 16w..16w+15, the contraction over the head's K in K/16 mma steps;
 * the block's slice of the weights is staged once as bf16 and the blocks
 * stride over row tiles. The column tiles are the grid's x, so the blocks
 * reading one row tile of x run together and share it through L2.
 * Operands are bf16 with fp32 accumulation, as in the fused scans. */
#include "proj.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }
int proj_nc(const Tmpl *T) { return gcd(T->mx->k, 64); }

/* shared row strides: 16 bytes past a multiple of 128, so the eight rows an
 * ldmatrix matrix reads fall in eight different bank groups */
static int b_stride(const Tmpl *T) { return proj_nc(T) * 2 + 16; }
static int b_bytes(const Tmpl *T) { return T->mx->k * b_stride(T); }   /* one projection's weight slice */
/* proj_fwd's biases of the tile's columns, fp32 [projection][NC], staged
 * beside the weights: read from shared memory each tile, not held in 32
 * registers across the loop beside the 64 accumulators (at 255 registers
 * ptxas spilled 24 bytes on sm_86 and sm_89 holding them; loads from
 * global memory would be hoisted out of the loop by LLVM, read-only) */
static int bias_bytes(const Tmpl *T) { return T->napj * proj_nc(T) * 4; }
/* proj_fwd's and proj_dx's A tile: the contraction columns staged at once,
 * the head's K, or half of them where K and the weight slices would
 * overflow a block's shared memory on the target (K = 256 on sm_86 and
 * sm_89: 107520 bytes of 101376), at a barrier pair more a tile */
static int a_cols(const Tmpl *T)
{
	int K = T->mx->k;
	if (PROJ_ROWS * (K * 2 + 16) + T->napj * b_bytes(T) + bias_bytes(T) <= smem_blk_max(T))
		return K;
	CHECK(K % 32 == 0);   /* halves of whole mma k-steps: tmpl_check_smem reports the rest */
	return K / 2;
}
static int a_stride(const Tmpl *T) { return a_cols(T) * 2 + 16; }
static int a_bytes(const Tmpl *T) { return PROJ_ROWS * a_stride(T); }
/* the first column of head hp's piece from contraction column k0 */
static LLVMValueRef a_col0(Tmpl *T, LLVMValueRef hp, int k0)
{
	LLVMValueRef c = imul(&T->I, hp, ci32(&T->I, T->mx->k));
	return k0 ? iadd(&T->I, c, ci32(&T->I, k0)) : c;
}

LLVMValueRef proj_pack(Tmpl *T, int j, LLVMValueRef v0, LLVMValueRef v1)
{
	Irb *I = &T->I;
	if (T->pj_sig[T->apj[j]])
		return pack_f16x2(I, emit_sigmoid(I, v0), emit_sigmoid(I, v1));
	return pack_bf16x2(I, v0, v1);
}

/* sigmoid(a + b) = 0.5 + 0.5 tanh((a + b) / 2), and (a + b) / 2 rounds
 * to fma(a, 0.5, b / 2) exactly: scaling by 2^-1 commutes with rounding
 * (outside fp32's subnormals, which flush to zero either way), so the
 * stored sigmoids are proj_pack's bit for bit with one multiply a value
 * fewer, where the bias is halved once as it is loaded */
LLVMValueRef proj_bias(Tmpl *T, int j, LLVMValueRef b)
{
	return T->pj_sig[T->apj[j]] ? fmul(&T->I, b, cf32(&T->I, 0.5)) : b;
}

LLVMValueRef proj_pack_biased(Tmpl *T, int j, LLVMValueRef a0, LLVMValueRef b0, LLVMValueRef a1, LLVMValueRef b1)
{
	Irb *I = &T->I;
	if (!T->pj_sig[T->apj[j]])
		return proj_pack(T, j, fadd(I, a0, b0), fadd(I, a1, b1));
	LLVMValueRef h = cf32(I, 0.5);
	return pack_f16x2(I, emit_sigmoid_half(I, fadd(I, fmul(I, a0, h), b0)),
	                  emit_sigmoid_half(I, fadd(I, fmul(I, a1, h), b1)));
}

int proj_dw_tiles(const Tmpl *T) { return (T->mx->k / proj_nc(T)) * ((T->mx->k + 63) / 64 / proj_dw_kt(T)); }

/* the lane's ldmatrix row offset for an A fragment at k-step ks of the
 * warp's 16 rows in a tile stored [row][k] at base: matrix m = lane / 8
 * covers rows 8(m & 1).. and k block m >> 1, the mma's a0..a3 */
static LLVMValueRef a_frag_at(Irb *I, int base, int stride, LLVMValueRef w, LLVMValueRef lane, int ks)
{
	LLVMValueRef row = iadd(I, imul(I, w, ci32(I, 16)), LLVMBuildAnd(I->b, lane, ci32(I, 15), ""));
	LLVMValueRef col = iadd(I, ci32(I, 16 * ks), imul(I, LLVMBuildLShr(I->b, lane, ci32(I, 4), ""), ci32(I, 8)));
	return iadd(I, ci32(I, base), iadd(I, imul(I, row, ci32(I, stride)), imul(I, col, ci32(I, 2))));
}

/* the lane's ldmatrix.trans row offset for the B fragments of n-tiles nt and
 * nt + 1 at contraction rows k0..k0+15 of a matrix stored [k][n] at base:
 * matrices (k0.., nt) (k0+8.., nt) (k0.., nt+1) (k0+8.., nt+1) = b0 b1 of each */
static LLVMValueRef b_frag_at(Irb *I, LLVMValueRef base, int stride, LLVMValueRef lane, int k0, int nt)
{
	LLVMValueRef row = iadd(I, ci32(I, k0), LLVMBuildAnd(I->b, lane, ci32(I, 15), ""));
	LLVMValueRef col = iadd(I, ci32(I, 8 * nt), imul(I, LLVMBuildLShr(I->b, lane, ci32(I, 4), ""), ci32(I, 8)));
	return iadd(I, base, iadd(I, imul(I, row, ci32(I, stride)), imul(I, col, ci32(I, 2))));
}

/* acc[nt] += A x B for the n-tiles of NC columns, B stored [k][n] at boff */
static void mma_row(Irb *I, LLVMValueRef acc[][4], LLVMValueRef A[4], LLVMValueRef boff, int bstride, LLVMValueRef lane,
                    int ks, int nc)
{
	for (int nt = 0; nt < nc / 8; nt += 2) {
		LLVMValueRef b[4];
		ldsm_x4(I, b, b_frag_at(I, boff, bstride, lane, 16 * ks, nt), 1);
		for (int h = 0; h < 2; h++) {
			LLVMValueRef bf[2] = { b[2 * h], b[2 * h + 1] }, d[4];
			mma_bf16(I, d, A, bf, acc[nt + h]);
			for (int e = 0; e < 4; e++)
				acc[nt + h][e] = d[e];
		}
	}
}

/* a tile of PROJ_ROWS rows from row0, width bf16 from column col0 of a
 * [B*L][D] tensor, staged [row][k] at base: 16-byte loads, zeros for rows
 * past BL and for columns from cw on (NULL: none; a k tile's end inside
 * the head, so that no row reads past its head or the width). how:
 * ROWS_LOADS through registers; ROWS_ASYNC by cp.async, straight to shared
 * memory, then waited for (in proj_dx, whose rows are staged once a
 * projection between its weights', ptxas then spills 52 bytes at 255
 * registers: it keeps the loads); ROWS_ASYNC_ISSUE the copies alone, the
 * caller committing and waiting (proj_dw's double buffer) */
enum { ROWS_LOADS, ROWS_ASYNC, ROWS_ASYNC_ISSUE };   /* stage_rows: how */

static void stage_rows(Tmpl *T, LLVMValueRef src, LLVMValueRef row0, LLVMValueRef BL, LLVMValueRef D,
                       LLVMValueRef col0, LLVMValueRef base, int width, int stride, LLVMValueRef cw, int how)
{
	Irb *I = &T->I;
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);
	int per = width / 8, n = PROJ_ROWS * per;   /* 16-byte chunks per row, per tile */
	for (int it = 0; it < (n + PROJ_THREADS - 1) / PROJ_THREADS; it++) {
		LLVMValueRef e = iadd(I, tid_x(I), ci32(I, it * PROJ_THREADS));
		LLVMValueRef r = idiv(I, e, ci32(I, per)), c = isub(I, e, imul(I, r, ci32(I, per)));
		LLVMValueRef row = iadd(I, row0, r);
		LLVMValueRef ok = land(I, ilt(I, e, ci32(I, n)), ilt(I, row, BL));
		if (cw)
			ok = land(I, ok, ilt(I, imul(I, c, ci32(I, 8)), cw));
		if (how != ROWS_LOADS) {   /* a row outside reads nothing and lands as zeros */
			LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, iadd(I, col0, imul(I, c, ci32(I, 8)))));
			IfBlk g;
			if_begin(I, &g, ilt(I, e, ci32(I, n)), "rows_st");
			cp_async16(I, iadd(I, base, iadd(I, imul(I, r, ci32(I, stride)), imul(I, c, ci32(I, 16)))),
			           gep_bf16(I, src, LLVMBuildSelect(I->b, ok, idx, ci64(I, 0), "")),
			           LLVMBuildSelect(I->b, ok, ci32(I, 16), ci32(I, 0), ""));
			if_end(I, &g);
			continue;
		}
		Var v = var_init(I, LLVMConstNull(v4i), "rows");
		IfBlk f;
		if_begin(I, &f, ok, "rows_in");
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, iadd(I, col0, imul(I, c, ci32(I, 8)))));
		var_set(I, v, ld(I, v4i, gep_bf16(I, src, idx), 16));
		if_end(I, &f);
		IfBlk g;
		if_begin(I, &g, ilt(I, e, ci32(I, n)), "rows_st");
		st(I, var_get(I, v), smem_ptr(I, iadd(I, base, iadd(I, imul(I, r, ci32(I, stride)), imul(I, c, ci32(I, 16))))), 16);
		if_end(I, &g);
	}
	if (how == ROWS_ASYNC)
		cp_async_wait_all(I);   /* the caller's barrier makes every thread's rows visible */
}

/* The block's weight slice of projection j as bf16 [k][n] at base: rows k
 * over the head's K inputs and columns n over the tile's NC outputs
 * (transpose = 0: W[hp][k][n0 + n], the forward's B), or rows over the K
 * outputs and columns over NC inputs (transpose = 1: W[hp][n0 + n][k], dx's) */
static void stage_weights(Tmpl *T, LLVMValueRef W, LLVMValueRef hp, LLVMValueRef n0, int base, int transpose,
                          float scale)
{
	Irb *I = &T->I;
	CHECK(scale == 1.0f || !transpose);
	int K = T->mx->k, nc = proj_nc(T), stride = b_stride(T);
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	int n = K * nc / 4;   /* float4 loads */
	LLVMValueRef hbase = imul(I, hp, ci32(I, K * K));
	for (int it = 0; it < (n + PROJ_THREADS - 1) / PROJ_THREADS; it++) {
		LLVMValueRef e = iadd(I, tid_x(I), ci32(I, it * PROJ_THREADS));
		IfBlk f;
		if_begin(I, &f, ilt(I, e, ci32(I, n)), "w_in");
		if (!transpose) {   /* 4 adjacent columns of row k */
			LLVMValueRef k = idiv(I, e, ci32(I, nc / 4)), c4 = imul(I, isub(I, e, imul(I, k, ci32(I, nc / 4))), ci32(I, 4));
			LLVMValueRef g = iadd(I, hbase, iadd(I, imul(I, k, ci32(I, K)), iadd(I, n0, c4)));
			LLVMValueRef v = ld(I, v4f, gep_f32(I, W, sext64(I, g)), 16);
			if (scale != 1.0f) {
				LLVMValueRef sc[4] = { cf32(I, scale), cf32(I, scale), cf32(I, scale), cf32(I, scale) };
				v = fmul(I, v, LLVMConstVector(sc, 4));
			}
			LLVMValueRef w = pack_bf16x4(I, v);
			st(I, w, smem_ptr(I, iadd(I, ci32(I, base), iadd(I, imul(I, k, ci32(I, stride)), imul(I, c4, ci32(I, 2))))), 8);
		} else {            /* W row n0 + c: 4 adjacent outputs k, one column of 4 rows here */
			LLVMValueRef c = idiv(I, e, ci32(I, K / 4)), k4 = imul(I, isub(I, e, imul(I, c, ci32(I, K / 4))), ci32(I, 4));
			LLVMValueRef g = iadd(I, hbase, iadd(I, imul(I, iadd(I, n0, c), ci32(I, K)), k4));
			LLVMValueRef v = ld(I, v4f, gep_f32(I, W, sext64(I, g)), 16);
			for (int p = 0; p < 4; p++) {
				LLVMValueRef h = f32_to_bf16(I, LLVMBuildExtractElement(I->b, v, ci32(I, p), ""));
				LLVMValueRef at = iadd(I, ci32(I, base), iadd(I, imul(I, iadd(I, k4, ci32(I, p)), ci32(I, stride)),
				                                             imul(I, c, ci32(I, 2))));
				st(I, h, smem_ptr(I, at), 2);
			}
		}
		if_end(I, &f);
	}
}

LLVMValueRef pack_bf16x4(Irb *I, LLVMValueRef v)
{
	LLVMValueRef w = LLVMGetUndef(I->v2i32);
	for (int p = 0; p < 2; p++)
		w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, LLVMBuildExtractElement(I->b, v, ci32(I, 2 * p), ""),
		                                                 LLVMBuildExtractElement(I->b, v, ci32(I, 2 * p + 1), "")),
		                           ci32(I, p), "");
	return w;
}

/* one argument per projection apart: "ws:PREFIX" and the weight's name */
void ksig_each(Tmpl *T, KSig *s, const char *prefix)
{
	char a[64];
	for (int j = 0; j < T->napj; j++) {
		snprintf(a, sizeof a, "ws:%s%s", prefix, apj_weight(T, j));
		ksig_add(T, s, a, T->I.gptr);
	}
}

LLVMValueRef ksig_each_arg(Tmpl *T, const KSig *s, const char *prefix, int j)
{
	char a[64];
	snprintf(a, sizeof a, "ws:%s%s", prefix, apj_weight(T, j));
	return ksig_arg(T, s, a);
}

/* the NX column tiles by GY blocks striding over row tiles (templates/plan.c
 * sizes GY) */
Launch *proj_open(Tmpl *T, int fwd, int smem, int threads, int minblocks, int maps)
{
	Irb *I = &T->I;
	char sm[16];
	snprintf(sm, sizeof sm, "%d", smem);
	Launch *l = tmpl_launch(T, fwd, fwd ? "proj_fwd" : "proj_dx", "NX", fwd && proj_fwd_split(T) ? "GF" : "GY", "1",
	                        threads, sm);
	l->minblocks = minblocks;
	launch_flops(l, proj_flops(T));
	ksig_add(T, &l->sig, fwd ? "x" : "dx", I->gptr);
	ksig_params(T, &l->sig);
	ksig_each(T, &l->sig, fwd ? "proj_" : "dproj_");
	if (!fwd)
		ksig_add(T, &l->sig, "ws:dxd", I->gptr);
	ksig_add(T, &l->sig, "i32:B*L", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	for (int j = 0; maps && j < (fwd ? 1 : T->napj); j++) {
		char a[64];
		proj_map_arg(T, fwd, j, a, sizeof a);
		ksig_add(T, &l->sig, a, I->ptr);
	}
	tmpl_open(T, l);
	return l;
}

void proj_map_arg(const Tmpl *T, int fwd, int j, char *a, size_t n)
{
	if (fwd)
		snprintf(a, n, "tmaprows:x:64x64");
	else
		snprintf(a, n, "tmaprows:ws:dproj_%s:64x64", apj_weight(T, j));
}

void proj_dw_map_arg(const Tmpl *T, int i, char *a, size_t n)
{
	proj_map_arg(T, i == 0, i ? i - 1 : 0, a, n);
}

Launch *proj_dw_open(Tmpl *T, int smem, int threads, int minblocks)
{
	Irb *I = &T->I;
	char g0[16], sm[16];
	snprintf(g0, sizeof g0, "%d", proj_dw_tiles(T));
	snprintf(sm, sizeof sm, "%d", smem);
	Launch *l = tmpl_launch(T, 0, "proj_dw", g0, "H", "GW", threads, sm);
	l->minblocks = minblocks;
	launch_flops(l, proj_flops(T));
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_each(T, &l->sig, "dproj_");
	ksig_each(T, &l->sig, "part_");
	ksig_add(T, &l->sig, "i32:B*L", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	tmpl_open(T, l);
	return l;
}

void proj_tile(Tmpl *T, ProjLanes *p)
{
	Irb *I = &T->I;
	p->c0 = imul(I, ctaid(I, 0), ci32(I, proj_nc(T)));
	p->hp = idiv(I, p->c0, ci32(I, T->mx->k));
	p->n0 = isub(I, p->c0, imul(I, p->hp, ci32(I, T->mx->k)));
}

void proj_lanes(Tmpl *T, const KSig *s, ProjLanes *p)
{
	Irb *I = &T->I;
	p->BL = ksig_arg(T, s, "i32:B*L");
	p->D = ksig_arg(T, s, "i32:D");
	p->lane = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 31), "");
	p->w = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 5), "");
	p->g = LLVMBuildLShr(I->b, p->lane, ci32(I, 2), "");
	p->q = LLVMBuildAnd(I->b, p->lane, ci32(I, 3), "");
	p->c0 = p->hp = p->n0 = NULL;
}

/* the output row of accumulator row r (g, or g + 8) of the warp's 16 in the tile at row0 */
static LLVMValueRef out_row(Irb *I, const ProjLanes *p, LLVMValueRef row0, int r)
{
	return iadd(I, row0, iadd(I, imul(I, p->w, ci32(I, 16)), iadd(I, p->g, ci32(I, 8 * r))));
}

/* column 2q of n-tile nt from column base */
static LLVMValueRef out_col(Irb *I, const ProjLanes *p, LLVMValueRef base, int nt)
{
	return iadd(I, base, iadd(I, ci32(I, 8 * nt), imul(I, p->q, ci32(I, 2))));
}

/* proj_fwd on mma.sync: where only projection j's sigmoid is read
 * (pj_sig), its staged weights and the biases that start its accumulators
 * are halved (exactly, in bf16 and fp32 alike), so the accumulators end at
 * (x W + b) / 2, the sigmoid's tanh argument as proj_pack rounds it, bit
 * for bit, with no multiply a value */
static float fwd_scale(const Tmpl *T, int j) { return T->pj_sig[T->apj[j]] ? 0.5f : 1.0f; }

static LLVMValueRef fwd_pack(Tmpl *T, int j, LLVMValueRef a0, LLVMValueRef a1)
{
	Irb *I = &T->I;
	if (!T->pj_sig[T->apj[j]])
		return proj_pack(T, j, a0, a1);
	return pack_f16x2(I, emit_sigmoid_half(I, a0), emit_sigmoid_half(I, a1));
}

void tmpl_proj_fwd(Tmpl *T)
{
	if (proj_wgmma(T)) {
		proj_fwd_wg(T);
		return;
	}
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	int K = mx->k, nc = proj_nc(T), na = T->napj, kc = a_cols(T);
	int boff = a_bytes(T), biasoff = boff + na * b_bytes(T);
	Launch *l = proj_open(T, 1, biasoff + bias_bytes(T), PROJ_THREADS, 0, 0);
	ProjLanes p;
	proj_lanes(T, &l->sig, &p);
	proj_tile(T, &p);
	LLVMValueRef x = ksig_arg(T, &l->sig, "x"), BL = p.BL, D = p.D, lane = p.lane, w = p.w, hp = p.hp;
	LLVMValueRef out[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		const MxProj *pj = &mx->proj[T->apj[j]];
		LLVMValueRef W = ksig_param(T, &l->sig, pj->weight);
		stage_weights(T, W, hp, p.n0, boff + j * b_bytes(T), 0, fwd_scale(T, j));
		out[j] = ksig_each_arg(T, &l->sig, "proj_", j);
		IfBlk f;   /* thread t < NC: column t's bias of projection j */
		if_begin(I, &f, ilt(I, tid_x(I), ci32(I, nc)), "bias_in");
		LLVMValueRef b = ld(I, I->f32, gep_f32(I, ksig_param(T, &l->sig, pj->bias), sext64(I, iadd(I, p.c0, tid_x(I)))), 4);
		b = proj_bias(T, j, b);
		st(I, b, smem_ptr(I, iadd(I, ci32(I, biasoff + j * nc * 4), imul(I, tid_x(I), ci32(I, 4)))), 4);
		if_end(I, &f);
	}
	LLVMValueRef ntile = idiv(I, iadd(I, BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	Loop L;
	loop_begin(I, &L, ctaid(I, 1), ntile, nctaid(I, 1), "rt");
	LLVMValueRef row0 = imul(I, loop_i(I, &L), ci32(I, PROJ_ROWS));
	LLVMValueRef acc[MX_MAXPROJ][8][4];
	for (int k0 = 0; k0 < K; k0 += kc) {   /* the contraction in pieces of kc columns (a_cols) */
		bar_sync(I);   /* the weights and biases staged, or the last piece's rows read */
		for (int j = 0; j < na && k0 == 0; j++)   /* the biases start the accumulators: c0 c1, and c2 c3 */
			for (int nt = 0; nt < nc / 8; nt++) {
				LLVMValueRef at = iadd(I, ci32(I, biasoff + j * nc * 4), imul(I, out_col(I, &p, ci32(I, 0), nt), ci32(I, 4)));
				LLVMValueRef b = ld(I, LLVMVectorType(I->f32, 2), smem_ptr(I, at), 8);
				for (int e = 0; e < 4; e++)
					acc[j][nt][e] = LLVMBuildExtractElement(I->b, b, ci32(I, e & 1), "");
			}
		stage_rows(T, x, row0, BL, D, a_col0(T, hp, k0), ci32(I, 0), kc, a_stride(T), NULL, ROWS_ASYNC);
		bar_sync(I);
		for (int ks = 0; ks < kc / 16; ks++) {
			LLVMValueRef A[4];
			ldsm_x4(I, A, a_frag_at(I, 0, a_stride(T), w, lane, ks), 0);
			for (int j = 0; j < na; j++)
				mma_row(I, acc[j], A, ci32(I, boff + j * b_bytes(T)), b_stride(T), lane, k0 / 16 + ks, nc);
		}
	}
	/* c0 c1: row g, columns 2q, 2q+1 of the n-tile (one bf16 pair); c2 c3: row g + 8 */
	for (int r = 0; r < 2; r++) {
		LLVMValueRef row = out_row(I, &p, row0, r);
		IfBlk f;
		if_begin(I, &f, ilt(I, row, BL), "out");
		for (int j = 0; j < na; j++)
			for (int nt = 0; nt < nc / 8; nt++) {
				LLVMValueRef col = out_col(I, &p, p.c0, nt);
				LLVMValueRef v = fwd_pack(T, j, acc[j][nt][2 * r], acc[j][nt][2 * r + 1]);
				st(I, v, gep_bf16(I, out[j], iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, col))), 4);
			}
		if_end(I, &f);
	}
	loop_end(I, &L);
	irb_ret(I);
}

/* recompute: the backward's first launch (after docs_prep's) is the
 * forward's proj_fwd again, the same kernel on the same x and weights, so
 * the scans read the bits the forward's read; the projections' workspaces
 * live inside each pass ("each"), and nothing of them is kept between. */
void proj_fwd_again(Tmpl *T)
{
	char want[sizeof T->fwd[0].kernel];
	snprintf(want, sizeof want, "%s_proj_fwd", T->kname);
	CHECK(T->nbwd < 8);
	for (int i = 0; i < T->nfwd; i++)
		if (!strcmp(T->fwd[i].kernel, want)) {
			T->bwd[T->nbwd++] = T->fwd[i];
			return;
		}
	CHECK(!"proj_fwd_again before tmpl_proj_fwd");
}

void tmpl_proj_dx(Tmpl *T)
{
	if (proj_wgmma(T)) {
		proj_dx_wg(T);
		return;
	}
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	int K = mx->k, nc = proj_nc(T), na = T->napj, kc = a_cols(T);
	int boff = a_bytes(T);
	Launch *l = proj_open(T, 0, boff + na * b_bytes(T), PROJ_THREADS, 0, 0);
	LLVMValueRef dx = ksig_arg(T, &l->sig, "dx"), dxd = ksig_arg(T, &l->sig, "ws:dxd");
	ProjLanes p;
	proj_lanes(T, &l->sig, &p);
	proj_tile(T, &p);
	LLVMValueRef BL = p.BL, D = p.D, lane = p.lane, w = p.w, hp = p.hp;
	LLVMValueRef dp[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		LLVMValueRef W = ksig_param(T, &l->sig, mx->proj[T->apj[j]].weight);
		stage_weights(T, W, hp, p.n0, boff + j * b_bytes(T), 1, 1.0f);
		dp[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
	}
	LLVMValueRef ntile = idiv(I, iadd(I, BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	Loop L;
	loop_begin(I, &L, ctaid(I, 1), ntile, nctaid(I, 1), "rt");
	LLVMValueRef row0 = imul(I, loop_i(I, &L), ci32(I, PROJ_ROWS));
	LLVMValueRef acc[8][4];
	for (int nt = 0; nt < nc / 8; nt++)
		for (int e = 0; e < 4; e++)
			acc[nt][e] = cf32(I, 0.0);
	/* the projections one after another through one tile of adjoint rows */
	for (int j = 0; j < na; j++)
		for (int k0 = 0; k0 < K; k0 += kc) {   /* in pieces of kc columns (a_cols) */
			bar_sync(I);   /* the weights staged, or the last rows read */
			stage_rows(T, dp[j], row0, BL, D, a_col0(T, hp, k0), ci32(I, 0), kc, a_stride(T), NULL, ROWS_LOADS);
			bar_sync(I);
			for (int ks = 0; ks < kc / 16; ks++) {
				LLVMValueRef A[4];
				ldsm_x4(I, A, a_frag_at(I, 0, a_stride(T), w, lane, ks), 0);
				mma_row(I, acc, A, ci32(I, boff + j * b_bytes(T)), b_stride(T), lane, k0 / 16 + ks, nc);
			}
		}
	for (int r = 0; r < 2; r++) {
		LLVMValueRef row = out_row(I, &p, row0, r);
		IfBlk f;
		if_begin(I, &f, ilt(I, row, BL), "out");
		for (int nt = 0; nt < nc / 8; nt++) {
			LLVMValueRef col = out_col(I, &p, p.c0, nt);
			LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, col));
			LLVMValueRef own = ld(I, I->i32, gep_bf16(I, dxd, idx), 4);
			LLVMValueRef v0 = fadd(I, unpack_bf16_lo(I, own), acc[nt][2 * r]);
			LLVMValueRef v1 = fadd(I, unpack_bf16_hi(I, own), acc[nt][2 * r + 1]);
			st(I, pack_bf16x2(I, v0, v1), gep_bf16(I, dx, idx), 4);
		}
		if_end(I, &f);
	}
	loop_end(I, &L);
	irb_ret(I);
}

/* dW_j[hp][k][m] = sum over the slab's rows of x[row][hp K + k] dP_j[row][hp K + m]:
 * a block per (k tile of 64, m tile of NC) of head hp and slab, warp w the
 * rows k = 16w.. of its k tile (idle past K), x^T as the mma's A (ldmatrix
 * .trans of the staged [row][k]), the adjoints as B ([row][m], the
 * contraction over rows) */
/* proj_dw's row tile in shared memory: x's 64 columns (rows of DW_XS
 * bytes), then each adjoint's NC (b_stride) */
#define DW_XS (64 * 2 + 16)
/* adjoint j's rows in the buffer (j = napj: the buffer's size) */
static int dw_adj(const Tmpl *T, int j) { return PROJ_ROWS * DW_XS + j * PROJ_ROWS * b_stride(T); }
static int dw_buf(const Tmpl *T) { return dw_adj(T, T->napj); }

/* the copies of row tile t (when t < t1) into the buffer at base, then a
 * commit: a group, empty past the slab, for every trip to wait on */
static void dw_stage(Tmpl *T, LLVMValueRef x, LLVMValueRef dp[], LLVMValueRef t, LLVMValueRef t1, LLVMValueRef BL,
                     LLVMValueRef D, LLVMValueRef xcol, LLVMValueRef dcol, LLVMValueRef kw, LLVMValueRef base)
{
	Irb *I = &T->I;
	int K = T->mx->k, nc = proj_nc(T);
	LLVMValueRef row0 = imul(I, t, ci32(I, PROJ_ROWS));
	IfBlk f;
	if_begin(I, &f, ilt(I, t, t1), "dw_copy");
	/* x's columns past the k tile's width are zeros, never read (warps past it idle) */
	stage_rows(T, x, row0, BL, D, xcol, base, K < 64 ? K : 64, DW_XS, kw, ROWS_ASYNC_ISSUE);
	for (int j = 0; j < T->napj; j++)
		stage_rows(T, dp[j], row0, BL, D, dcol, iadd(I, base, ci32(I, dw_adj(T, j))), nc, b_stride(T), NULL,
		           ROWS_ASYNC_ISSUE);
	if_end(I, &f);
	cp_async_commit(I);
}

void tmpl_proj_dw(Tmpl *T)
{
	if (proj_wgmma(T)) {
		proj_dw_wg(T);
		return;
	}
	Irb *I = &T->I;
	int K = T->mx->k, nc = proj_nc(T), na = T->napj, nmt = K / nc;
	int ds = b_stride(T);   /* an adjoint's row stride (x's: DW_XS) */
	/* 161 registers at K = 256 (174 free): the 396 slots plan_proj_grids counts */
	Launch *l = proj_dw_open(T, 2 * dw_buf(T), PROJ_THREADS, 3);
	ProjLanes p;
	proj_lanes(T, &l->sig, &p);   /* its tile: kt and m0 below */
	LLVMValueRef x = ksig_arg(T, &l->sig, "x"), BL = p.BL, D = p.D, lane = p.lane, w = p.w;
	LLVMValueRef kt = idiv(I, ctaid(I, 0), ci32(I, nmt));
	LLVMValueRef m0 = imul(I, isub(I, ctaid(I, 0), imul(I, kt, ci32(I, nmt))), ci32(I, nc));
	LLVMValueRef hp = ctaid(I, 1), slab = ctaid(I, 2), GW = nctaid(I, 2);
	LLVMValueRef k0 = imul(I, kt, ci32(I, 64));
	/* the k tile's width: 64, or what is left of K (a multiple of 16) */
	LLVMValueRef kw = isub(I, ci32(I, K), k0);
	kw = LLVMBuildSelect(I->b, ilt(I, kw, ci32(I, 64)), kw, ci32(I, 64), "");
	LLVMValueRef mine = ilt(I, imul(I, w, ci32(I, 16)), kw);
	/* the slab's rows: whole tiles of 64, slab after slab */
	LLVMValueRef ntile = idiv(I, iadd(I, BL, ci32(I, PROJ_ROWS - 1)), ci32(I, PROJ_ROWS));
	LLVMValueRef per = idiv(I, iadd(I, ntile, isub(I, GW, ci32(I, 1))), GW);
	LLVMValueRef t1 = imul(I, iadd(I, slab, ci32(I, 1)), per);
	t1 = LLVMBuildSelect(I->b, ilt(I, t1, ntile), t1, ntile, "");
	LLVMValueRef dp[MX_MAXPROJ], part[MX_MAXPROJ];
	for (int j = 0; j < na; j++) {
		dp[j] = ksig_each_arg(T, &l->sig, "dproj_", j);
		part[j] = ksig_each_arg(T, &l->sig, "part_", j);
	}
	Var acc[MX_MAXPROJ][8][4];
	for (int j = 0; j < na; j++)
		for (int nt = 0; nt < nc / 8; nt++)
			for (int e = 0; e < 4; e++)
				acc[j][nt][e] = var_init(I, cf32(I, 0.0), "dw");
	/* two buffers of a row tile (x's 64 columns, then each adjoint's NC):
	 * the next tile's copies in flight while this one is multiplied */
	LLVMValueRef tstart = imul(I, slab, per);
	LLVMValueRef dcol = iadd(I, imul(I, hp, ci32(I, K)), m0);   /* (built first: the PTX as measured) */
	LLVMValueRef xcol = iadd(I, imul(I, hp, ci32(I, K)), k0);
	dw_stage(T, x, dp, tstart, t1, BL, D, xcol, dcol, kw, ci32(I, 0));
	Var par = var_init(I, ci32(I, 0), "buf");
	Loop L;
	loop_begin(I, &L, tstart, t1, ci32(I, 1), "rt");
	LLVMValueRef k = var_get(I, par);
	LLVMValueRef base = imul(I, k, ci32(I, dw_buf(T))), nbase = imul(I, isub(I, ci32(I, 1), k), ci32(I, dw_buf(T)));
	dw_stage(T, x, dp, iadd(I, loop_i(I, &L), ci32(I, 1)), t1, BL, D, xcol, dcol, kw, nbase);
	cp_async_wait(I, 1);   /* this tile's copies (the next tile's may still fly) */
	bar_sync(I);
	IfBlk f;
	if_begin(I, &f, mine, "dw_w");
	for (int rs = 0; rs < PROJ_ROWS / 16; rs++) {
		/* A = x^T: matrix m reads rows 16rs + 8(m >> 1).., k block m & 1 of the staged x */
		LLVMValueRef m = LLVMBuildLShr(I->b, lane, ci32(I, 3), "");
		LLVMValueRef srow = iadd(I, ci32(I, 16 * rs), iadd(I, imul(I, LLVMBuildLShr(I->b, m, ci32(I, 1), ""), ci32(I, 8)),
		                                                  LLVMBuildAnd(I->b, lane, ci32(I, 7), "")));
		LLVMValueRef scol = iadd(I, imul(I, w, ci32(I, 16)), imul(I, LLVMBuildAnd(I->b, m, ci32(I, 1), ""), ci32(I, 8)));
		LLVMValueRef A[4];
		ldsm_x4(I, A, iadd(I, base, iadd(I, imul(I, srow, ci32(I, DW_XS)), imul(I, scol, ci32(I, 2)))), 1);
		for (int j = 0; j < na; j++) {
			LLVMValueRef c[8][4];
			for (int nt = 0; nt < nc / 8; nt++)
				for (int e = 0; e < 4; e++)
					c[nt][e] = var_get(I, acc[j][nt][e]);
			mma_row(I, c, A, iadd(I, base, ci32(I, dw_adj(T, j))), ds, lane, rs, nc);
			for (int nt = 0; nt < nc / 8; nt++)
				for (int e = 0; e < 4; e++)
					var_set(I, acc[j][nt][e], c[nt][e]);
		}
	}
	if_end(I, &f);
	bar_sync(I);   /* this tile read: the trip after next copies into its buffer */
	var_set(I, par, isub(I, ci32(I, 1), k));
	loop_end(I, &L);
	/* slab's partial: [GW][H][K][K], c0 c1 at k = 16w + g, c2 c3 at + 8 */
	IfBlk o;
	if_begin(I, &o, mine, "dw_out");
	LLVMTypeRef v2f = LLVMVectorType(I->f32, 2);
	for (int j = 0; j < na; j++)
		for (int r = 0; r < 2; r++) {
			LLVMValueRef k = out_row(I, &p, k0, r);
			LLVMValueRef rowk = iadd(I, imul(I, iadd(I, imul(I, slab, idiv(I, D, ci32(I, K))), hp), ci32(I, K)), k);
			for (int nt = 0; nt < nc / 8; nt++) {
				LLVMValueRef col = out_col(I, &p, m0, nt);
				LLVMValueRef v = LLVMGetUndef(v2f);
				for (int e = 0; e < 2; e++)
					v = LLVMBuildInsertElement(I->b, v, var_get(I, acc[j][nt][2 * r + e]), ci32(I, e), "");
				LLVMValueRef idx = iadd(I, imul(I, sext64(I, rowk), ci64(I, K)), sext64(I, col));
				st(I, v, gep_f32(I, part[j], idx), 8);
			}
		}
	if_end(I, &o);
	irb_ret(I);
}
