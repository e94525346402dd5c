/* Token-stage kernels, for mixers with per-token projections
 * (p[t] = bias + scale * sum_c w[c] x[t,c], reducing over the whole width).
 *
 * The scan kernels work on one head of 64 channels, so a value that needs
 * every channel of a token cannot be made inside them; it is made by passes
 * over whole tokens instead:
 *   tok_fwd  (forward, first) one warp per 4 tokens: the projections in fp32
 *            from 16-byte loads of x, then the token stage's values z
 *            (with shared_sfu: softplus(u), sigmoid(v), ... once per token);
 *            a decode step's runs one warp per token, its loads batched
 *   tok_bwd  (backward, after bwd_apply) one warp per token: the adjoints of
 *            the token values summed over the H per-head partials of bwd_apply in a
 *            fixed order, the token stage's derivative, the projections'
 *            adjoints dp[t] and fixed-slot partials of scalar gradients
 *   tok_dx   dx += sum_j scale_j w_j[c] dp_j[t] (dx of bwd_apply held the
 *            direct term), and fixed-slot partials of scale_j sum_t dp_j x
 * Every sum runs in an order fixed by the shape alone: the same bits on
 * every run.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKS_PER_WARP 4

LLVMValueRef tok_proj_scale(Tmpl *T, int j, LLVMValueRef D)
{
	Irb *I = &T->I;
	if (!T->mx->proj[T->tokproj[j]].scale_rsqrt_d)
		return cf32(I, 1.0);
	return fdiv(I, cf32(I, 1.0), f_sqrt(I, LLVMBuildSIToFP(I->b, D, I->f32, "")));
}

/* the token count and width close every token kernel's arguments */
static void open_tok(Tmpl *T, Launch *l, LLVMValueRef *BL, LLVMValueRef *D)
{
	ksig_add(T, &l->sig, "i32:B*L", T->I.i32);
	ksig_add(T, &l->sig, "i32:D", T->I.i32);
	tmpl_open(T, l);
	*BL = ksig_arg(T, &l->sig, "i32:B*L");
	*D = ksig_arg(T, &l->sig, "i32:D");
}

void tok_unpack8(Irb *I, LLVMValueRef v4, LLVMValueRef out[8])
{
	for (int e = 0; e < 4; e++) {
		LLVMValueRef w = LLVMBuildExtractElement(I->b, v4, ci32(I, e), "");
		out[2 * e] = unpack_bf16_lo(I, w);
		out[2 * e + 1] = unpack_bf16_hi(I, w);
	}
}

LLVMValueRef tok_pack8(Irb *I, LLVMValueRef in[8])
{
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef v = LLVMGetUndef(v4);
	for (int e = 0; e < 4; e++)
		v = LLVMBuildInsertElement(I->b, v, pack_bf16x2(I, in[2 * e], in[2 * e + 1]), ci32(I, e), "");
	return v;
}

void tok_w8(Irb *I, LLVMValueRef w, LLVMValueRef c, LLVMValueRef ok, LLVMValueRef out[8])
{
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	for (int h = 0; h < 2; h++) {
		LLVMValueRef v = ld(I, v4f, gep_f32(I, w, sext64(I, iadd(I, c, ci32(I, 4 * h)))), 16);
		if (ok)   /* a weight of chunk 0 times a zero could still be a NaN */
			v = LLVMBuildSelect(I->b, ok, v, LLVMConstNull(v4f), "");
		for (int e = 0; e < 4; e++)
			out[4 * h + e] = LLVMBuildExtractElement(I->b, v, ci32(I, e), "");
	}
}

/* One 8-channel chunk c of the tokens' rows into their sums: acc[j][k] +=
 * w_j[c..c+7] . x[row k][c..c+7], the chunk's products added in channel
 * order. ok (NULL: always) masks a chunk past the width: its values are read
 * at chunk 0 and replaced by zeros, so the sums keep their values. */
static void tok_chunk(Tmpl *T, const Launch *l, LLVMValueRef x, LLVMValueRef c, LLVMValueRef ok,
                      int tpw, const LLVMValueRef *row, const LLVMValueRef *valid, Var acc[][TOKS_PER_WARP])
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);
	LLVMValueRef xv[TOKS_PER_WARP][8];
	for (int k = 0; k < tpw; k++) {
		LLVMValueRef v = ld(I, v4i, gep_bf16(I, x, iadd(I, row[k], sext64(I, c))), 16);
		LLVMValueRef in = ok ? land(I, valid[k], ok) : valid[k];
		tok_unpack8(I, LLVMBuildSelect(I->b, in, v, LLVMConstNull(v4i), ""), xv[k]);
	}
	for (int j = 0; j < T->ntokproj; j++) {
		LLVMValueRef wv[8];
		tok_w8(I, ksig_param(T, &l->sig, mx->proj[T->tokproj[j]].weight), c, ok, wv);
		for (int k = 0; k < tpw; k++) {
			LLVMValueRef s = var_get(I, acc[j][k]);
			for (int e = 0; e < 8; e++)
				s = fadd(I, s, fmul(I, wv[e], xv[k][e]));
			var_set(I, acc[j][k], s);
		}
	}
}

/* The token pass: tpw tokens a warp, a lane walking the width's 8-channel
 * chunks lane, lane + 32, ... in turn. walk 0: a loop LLVM unrolls by 2 --
 * the scans' pass, thousands of tokens, each weight load shared by 4 of them.
 * walk n > 0: n chunks a trip, the last trip's masked, so a lane has n
 * loads in flight -- the decode step's, with one to a few hundred tokens,
 * where each dependent trip costs a memory latency. Either way a token's sum
 * adds the same products in the same order: the step's token values are the
 * forward's. */
static void tok_fwd_emit(Tmpl *T, int tpw, int walk)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	CHECK(tpw >= 1 && tpw <= TOKS_PER_WARP);
	char grid[64];
	snprintf(grid, sizeof grid, "cdiv(B*L,%d)", 8 * tpw);
	Launch *l = tmpl_launch(T, 1, "tok_fwd", grid, "1", "1", 256, "0");
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_params(T, &l->sig);
	ksig_add(T, &l->sig, "ws:tok", I->gptr);
	ksig_add(T, &l->sig, "ws:tproj", I->gptr);
	tmpl_clear_args(T, l);   /* the forward's first kernel, and it uses none of the arena */
	LLVMValueRef BL, D;
	open_tok(T, l, &BL, &D);
	tmpl_clear_emit(T, l);
	LLVMValueRef x = ksig_arg(T, &l->sig, "x");
	LLVMValueRef tid = tid_x(I);
	LLVMValueRef lane = LLVMBuildAnd(I->b, tid, ci32(I, 31), "lane");
	LLVMValueRef warp = LLVMBuildLShr(I->b, tid, ci32(I, 5), "warp");
	LLVMValueRef t0 = imul(I, iadd(I, imul(I, ctaid(I, 0), ci32(I, 8)), warp), ci32(I, tpw));
	LLVMValueRef valid[TOKS_PER_WARP], row[TOKS_PER_WARP];
	for (int k = 0; k < tpw; k++) {
		LLVMValueRef t = iadd(I, t0, ci32(I, k));
		valid[k] = ilt(I, t, BL);
		row[k] = imul(I, sext64(I, LLVMBuildSelect(I->b, valid[k], t, ci32(I, 0), "")), sext64(I, D));
	}
	Var acc[MX_MAXPROJ][TOKS_PER_WARP];
	for (int j = 0; j < T->ntokproj; j++)
		for (int k = 0; k < tpw; k++)
			acc[j][k] = var_init(I, cf32(I, 0.0), "acc");
	LLVMValueRef nc = LLVMBuildLShr(I->b, D, ci32(I, 3), "");
	Loop L;
	loop_begin(I, &L, lane, nc, ci32(I, 32 * (walk > 0 ? walk : 1)), "c8");
	if (walk == 0) {
		L.unroll = 2;
		tok_chunk(T, l, x, imul(I, loop_i(I, &L), ci32(I, 8)), NULL, tpw, row, valid, acc);
	} else {
		for (int u = 0; u < walk; u++) {
			LLVMValueRef c8 = iadd(I, loop_i(I, &L), ci32(I, 32 * u));
			LLVMValueRef ok = ilt(I, c8, nc);
			LLVMValueRef c = imul(I, LLVMBuildSelect(I->b, ok, c8, ci32(I, 0), ""), ci32(I, 8));
			tok_chunk(T, l, x, c, ok, tpw, row, valid, acc);
		}
	}
	loop_end(I, &L);
	LLVMValueRef scal[MX_MAXPARAM] = { 0 };
	for (int p = 0; p < mx->nparam; p++)
		if (mx->param[p].kind == PK_SCALAR)
			scal[p] = ld(I, I->f32, ksig_param(T, &l->sig, p), 4);
	LLVMValueRef tokp = ksig_arg(T, &l->sig, "ws:tok"), tproj = ksig_arg(T, &l->sig, "ws:tproj");
	for (int k = 0; k < tpw; k++) {
		LLVMValueRef pv[MX_MAXPROJ] = { 0 };
		for (int j = 0; j < T->ntokproj; j++) {
			LLVMValueRef s = var_get(I, acc[j][k]);
			for (int m = 16; m >= 1; m >>= 1)   /* butterfly: every lane holds the same sum */
				s = fadd(I, s, shfl_xor_f(I, s, m));
			pv[T->tokproj[j]] = fadd(I, scal[mx->proj[T->tokproj[j]].bias], fmul(I, tok_proj_scale(T, j, D), s));
		}
		IfBlk f;
		if_begin(I, &f, land(I, valid[k], ieq(I, lane, ci32(I, k))), "tokst");
		EmitEnv env = { .param = scal, .proj = pv, .precise = 1 };
		LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
		CHECK(memo);
		LLVMValueRef t = sext64(I, iadd(I, t0, ci32(I, k)));
		for (int z = 0; z < T->ntokval; z++)
			st(I, emit_expr(I, &mx->g, T->tokval[z], &env, memo), gep_f32(I, tokp, iadd(I, imul(I, t, ci64(I, T->ntokval)), ci64(I, z))), 4);
		for (int j = 0; j < T->ntokproj; j++)
			st(I, pv[T->tokproj[j]], gep_f32(I, tproj, iadd(I, imul(I, t, ci64(I, T->ntokproj)), ci64(I, j))), 4);
		free(memo);
		if_end(I, &f);
	}
	irb_ret(I);
}

void tmpl_tok_fwd(Tmpl *T)
{
	tok_fwd_emit(T, TOKS_PER_WARP, 0);
}

/* 8 chunks a trip: at D = 1024 a lane's 4 in one trip, at 4096 its 16 in two */
void tmpl_tok_step(Tmpl *T)
{
	tok_fwd_emit(T, 1, 8);
}

void tmpl_tok_bwd(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	Launch *l = tmpl_launch(T, 0, "tok_bwd", "NTB", "1", "1", 256, "0");
	ksig_params(T, &l->sig);
	ksig_add(T, &l->sig, "ws:tproj", I->gptr);
	ksig_add(T, &l->sig, "ws:dtokp", I->gptr);
	ksig_add(T, &l->sig, "ws:dtok", I->gptr);
	ksig_add(T, &l->sig, "ws:part_tscal", I->gptr);
	LLVMValueRef BL, D;
	open_tok(T, l, &BL, &D);
	LLVMValueRef tid = tid_x(I);
	LLVMValueRef lane = LLVMBuildAnd(I->b, tid, ci32(I, 31), "lane");
	LLVMValueRef gw = iadd(I, imul(I, ctaid(I, 0), ci32(I, 8)), LLVMBuildLShr(I->b, tid, ci32(I, 5), ""));
	LLVMValueRef nw = imul(I, nctaid(I, 0), ci32(I, 8));
	LLVMValueRef scal[MX_MAXPARAM] = { 0 };
	int nsp = 0, sidx[MX_MAXPARAM];
	for (int p = 0; p < mx->nparam; p++) {
		sidx[p] = -1;
		if (mx->param[p].kind == PK_SCALAR) {
			scal[p] = ld(I, I->f32, ksig_param(T, &l->sig, p), 4);
			sidx[p] = nsp++;
		}
	}
	Var sacc[MX_MAXPARAM];
	for (int p = 0; p < mx->nparam; p++)
		if (sidx[p] >= 0)
			sacc[p] = var_init(I, cf32(I, 0.0), "sacc");
	LLVMValueRef dtokp = ksig_arg(T, &l->sig, "ws:dtokp"), dtok = ksig_arg(T, &l->sig, "ws:dtok");
	LLVMValueRef tproj = ksig_arg(T, &l->sig, "ws:tproj");
	/* a token's partials are contiguous: [H][nz] */
	LLVMValueRef per = imul(I, LLVMBuildLShr(I->b, D, ci32(I, 6), ""), ci32(I, T->ntokval));
	Loop Lt;
	loop_begin(I, &Lt, gw, BL, nw, "t");
	LLVMValueRef t = loop_i(I, &Lt);
	Var acc[TM_MAXZ];
	for (int k = 0; k < T->ntokval; k++)
		acc[k] = var_init(I, cf32(I, 0.0), "dz");
	Loop Le;
	loop_begin(I, &Le, lane, per, ci32(I, 32), "e");
	Le.unroll = 2;
	LLVMValueRef e = loop_i(I, &Le);
	LLVMValueRef v = ld(I, I->f32, gep_f32(I, dtokp, iadd(I, imul(I, sext64(I, t), sext64(I, per)), sext64(I, e))), 4);
	LLVMValueRef kz = LLVMBuildSRem(I->b, e, ci32(I, T->ntokval), "");
	for (int k = 0; k < T->ntokval; k++)
		var_set(I, acc[k], fadd(I, var_get(I, acc[k]), fsel(I, ieq(I, kz, ci32(I, k)), v, cf32(I, 0.0))));
	loop_end(I, &Le);
	LLVMValueRef seeds[3 + TM_MAXZ] = { cf32(I, 0.0), cf32(I, 0.0), cf32(I, 0.0) };
	for (int k = 0; k < T->ntokval; k++) {
		LLVMValueRef s = var_get(I, acc[k]);
		for (int m = 16; m >= 1; m >>= 1)
			s = fadd(I, s, shfl_xor_f(I, s, m));
		seeds[3 + k] = s;
	}
	LLVMValueRef pv[MX_MAXPROJ] = { 0 };
	for (int j = 0; j < T->ntokproj; j++)
		pv[T->tokproj[j]] = ld(I, I->f32, gep_f32(I, tproj, iadd(I, imul(I, sext64(I, t), ci64(I, T->ntokproj)), ci64(I, j))), 4);
	EmitEnv env = { .param = scal, .proj = pv, .seed = seeds, .precise = 1 };
	LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
	CHECK(memo);
	/* every lane holds the same values; lane 0 stores */
	LLVMValueRef dp[MX_MAXPROJ];
	for (int j = 0; j < T->ntokproj; j++)
		dp[j] = emit_expr(I, &mx->g, T->tg_proj[j], &env, memo);
	for (int p = 0; p < mx->nparam; p++) {
		if (sidx[p] < 0)
			continue;
		LLVMValueRef g = emit_expr(I, &mx->g, T->tg_param[p], &env, memo);
		for (int j = 0; j < T->ntokproj; j++)   /* a token projection's bias collects its adjoint */
			if (mx->proj[T->tokproj[j]].bias == p)
				g = fadd(I, g, dp[j]);
		var_set(I, sacc[p], fadd(I, var_get(I, sacc[p]), g));
	}
	IfBlk f;
	if_begin(I, &f, ieq(I, lane, ci32(I, 0)), "st");
	for (int j = 0; j < T->ntokproj; j++)
		st(I, dp[j], gep_f32(I, dtok, iadd(I, imul(I, sext64(I, t), ci64(I, T->ntokproj)), ci64(I, j))), 4);
	if_end(I, &f);
	free(memo);
	loop_end(I, &Lt);
	IfBlk f2;
	if_begin(I, &f2, ieq(I, lane, ci32(I, 0)), "part");
	LLVMValueRef ps = ksig_arg(T, &l->sig, "ws:part_tscal");
	for (int p = 0; p < mx->nparam; p++)
		if (sidx[p] >= 0)
			st(I, var_get(I, sacc[p]), gep_f32(I, ps, sext64(I, iadd(I, imul(I, gw, ci32(I, nsp)), ci32(I, sidx[p])))), 4);
	if_end(I, &f2);
	irb_ret(I);
}

#define TOKDX_ROWS 4

void tmpl_tok_dx(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	char sm[32];
	snprintf(sm, sizeof sm, "%d", 32 * 64 * T->ntokproj * 4);
	Launch *l = tmpl_launch(T, 0, "tok_dx", "NXB", "H", "1", 256, sm);
	snprintf(l->bytes_extra, sizeof l->bytes_extra, "B*L*D*2");   /* dx is read as well as written */
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dx", I->gptr);
	ksig_params(T, &l->sig);
	ksig_add(T, &l->sig, "ws:dtok", I->gptr);
	ksig_add(T, &l->sig, "ws:part_tchan", I->gptr);
	LLVMValueRef BL, D;
	open_tok(T, l, &BL, &D);
	LLVMValueRef x = ksig_arg(T, &l->sig, "x"), dx = ksig_arg(T, &l->sig, "dx"), dtok = ksig_arg(T, &l->sig, "ws:dtok");
	LLVMValueRef tid = tid_x(I);
	LLVMValueRef c8 = LLVMBuildAnd(I->b, tid, ci32(I, 7), "");
	LLVMValueRef rl = LLVMBuildLShr(I->b, tid, ci32(I, 3), "");
	LLVMValueRef col = iadd(I, imul(I, ctaid(I, 1), ci32(I, 64)), imul(I, c8, ci32(I, 8)));
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4), v4f = LLVMVectorType(I->f32, 4);
	LLVMValueRef w[MX_MAXPROJ][8];
	Var acc[MX_MAXPROJ][8];
	for (int j = 0; j < T->ntokproj; j++) {
		LLVMValueRef wp = ksig_param(T, &l->sig, mx->proj[T->tokproj[j]].weight);
		LLVMValueRef sc = tok_proj_scale(T, j, D);
		for (int h = 0; h < 2; h++) {
			LLVMValueRef v = ld(I, v4f, gep_f32(I, wp, sext64(I, iadd(I, col, ci32(I, 4 * h)))), 16);
			for (int e = 0; e < 4; e++)
				w[j][4 * h + e] = fmul(I, sc, LLVMBuildExtractElement(I->b, v, ci32(I, e), ""));
		}
		for (int e = 0; e < 8; e++)
			acc[j][e] = var_init(I, cf32(I, 0.0), "dw");
	}
	/* TOKDX_ROWS rows per trip, every load issued before the first store:
	 * dx is read and written through one pointer, so the compiler cannot
	 * move a later row's loads above an earlier row's store, and one row
	 * in flight per thread leaves the memory system a quarter idle */
	LLVMValueRef stride = imul(I, nctaid(I, 0), ci32(I, 32));
	Loop L;
	loop_begin(I, &L, iadd(I, imul(I, ctaid(I, 0), ci32(I, 32)), rl), BL, imul(I, stride, ci32(I, TOKDX_ROWS)), "t");
	L.unroll = 0;
	LLVMValueRef t0 = loop_i(I, &L);
	LLVMValueRef valid[TOKDX_ROWS], idx[TOKDX_ROWS], xv[TOKDX_ROWS][8], dv[TOKDX_ROWS][8], dp[TOKDX_ROWS][MX_MAXPROJ];
	for (int k = 0; k < TOKDX_ROWS; k++) {
		LLVMValueRef t = iadd(I, t0, imul(I, stride, ci32(I, k)));
		valid[k] = ilt(I, t, BL);
		t = LLVMBuildSelect(I->b, valid[k], t, ci32(I, 0), "");   /* row 0 stands in: read, never written */
		idx[k] = iadd(I, imul(I, sext64(I, t), sext64(I, D)), sext64(I, col));
		tok_unpack8(I, ld(I, v4i, gep_bf16(I, x, idx[k]), 16), xv[k]);
		tok_unpack8(I, ld(I, v4i, gep_bf16(I, dx, idx[k]), 16), dv[k]);
		for (int j = 0; j < T->ntokproj; j++)
			dp[k][j] = ld(I, I->f32, gep_f32(I, dtok, iadd(I, imul(I, sext64(I, t), ci64(I, T->ntokproj)), ci64(I, j))), 4);
	}
	for (int k = 0; k < TOKDX_ROWS; k++) {
		for (int j = 0; j < T->ntokproj; j++) {
			LLVMValueRef d = fsel(I, valid[k], dp[k][j], cf32(I, 0.0));
			for (int e = 0; e < 8; e++) {
				dv[k][e] = fadd(I, dv[k][e], fmul(I, w[j][e], d));
				var_set(I, acc[j][e], fadd(I, var_get(I, acc[j][e]), fmul(I, d, xv[k][e])));
			}
		}
	}
	for (int k = 0; k < TOKDX_ROWS; k++) {
		IfBlk f;
		if_begin(I, &f, valid[k], "st");
		st(I, tok_pack8(I, dv[k]), gep_bf16(I, dx, idx[k]), 16);
		if_end(I, &f);
	}
	loop_end(I, &L);
	/* the 32 row lanes of each channel summed in order through shared memory */
	for (int j = 0; j < T->ntokproj; j++)
		for (int e = 0; e < 8; e++) {
			LLVMValueRef o = imul(I, iadd(I, imul(I, iadd(I, imul(I, rl, ci32(I, T->ntokproj)), ci32(I, j)), ci32(I, 64)),
			                               iadd(I, imul(I, c8, ci32(I, 8)), ci32(I, e))), ci32(I, 4));
			st(I, var_get(I, acc[j][e]), smem_ptr(I, o), 4);
		}
	bar_sync(I);
	LLVMValueRef out = ksig_arg(T, &l->sig, "ws:part_tchan");
	for (int j = 0; j < T->ntokproj; j++) {
		IfBlk f;
		if_begin(I, &f, ilt(I, tid, ci32(I, 64)), "red");
		LLVMValueRef s = cf32(I, 0.0);
		for (int r = 0; r < 32; r++)
			s = fadd(I, s, ld(I, I->f32, smem_ptr(I, imul(I, iadd(I, ci32(I, (r * T->ntokproj + j) * 64), tid), ci32(I, 4))), 4));
		s = fmul(I, s, tok_proj_scale(T, j, D));
		/* [NXB][ntp][D] */
		LLVMValueRef row = iadd(I, imul(I, ctaid(I, 0), ci32(I, T->ntokproj)), ci32(I, j));
		LLVMValueRef o = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, iadd(I, imul(I, ctaid(I, 1), ci32(I, 64)), tid)));
		st(I, s, gep_f32(I, out, o), 4);
		if_end(I, &f);
	}
	irb_ret(I);
}
