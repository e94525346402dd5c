/* The token stage of a one-pass backward, inside bwd_apply.
 *
 * A mixer whose controller reduces over a token's whole width (SAMU) needs
 * the adjoints of a token's per-token values summed over every head before
 * the projections' share of dx can be added. Behind the hierarchical
 * backward two more passes do that (tok_bwd, tok_dx), reading x and dx and
 * writing dx once more: 6 bytes per element, 0.24 ms at 1x131072x1024.
 * In the one-pass backward the blocks of every head run the same groups in
 * the same trip, all resident at once, so a block finishes its previous
 * group itself, one trip later (once it has published its pass A map, or
 * at the start of the trip: tok_tail_mid in bwd_tok.c): by then every
 * head has published that group's partials, and the group's x and dx rows
 * are still in L2. The partials are look-back words (never 0
 * once stored, the workspace zeroed before the launch): no flag, no fence;
 * a reader adds a token's H partials in an order fixed by the shape, so
 * every run gives the same bits. A block's waits point to the blocks
 * before it in its own trip (the maps) or to the trip before (these
 * partials), never later, so they cannot close a cycle.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdlib.h>

/* shared memory: the group's projection adjoints [16 C][ntp] floats,
 * each thread's weight-gradient sums [ntp * 8][128 threads], and the head's
 * scaled weights [ntp][64] (read there, not kept in registers: hoisted out
 * of the trip loop, they would be live across the whole backward step) */
static int dp_bytes(const Tmpl *T) { return 16 * T->chunk * T->ntokproj * 4; }
static int w_off(const Tmpl *T, int off) { return off + dp_bytes(T) + T->ntokproj * 8 * 128 * 4; }
int tok_tail_bytes(const Tmpl *T) { return dp_bytes(T) + T->ntokproj * 8 * 128 * 4 + T->ntokproj * 64 * 4; }

static LLVMValueRef acc_at(Tmpl *T, Lanes *ln, int off, int j, int e)
{
	Irb *I = &T->I;
	return smem_ptr(I, iadd(I, ci32(I, off + dp_bytes(T) + (j * 8 + e) * 128 * 4), imul(I, ln->tid, ci32(I, 4))));
}

/* projection j's adjoint of the group's token tl */
static LLVMValueRef dp_at(Tmpl *T, int off, LLVMValueRef tl, int j)
{
	Irb *I = &T->I;
	return smem_ptr(I, iadd(I, ci32(I, off), imul(I, iadd(I, imul(I, tl, ci32(I, T->ntokproj)), ci32(I, j)), ci32(I, 4))));
}

/* (the first group's tail comes after barriers) */
void tok_tail_init(Tmpl *T, Lanes *ln, int off)
{
	Irb *I = &T->I;
	for (int j = 0; j < T->ntokproj; j++)
		for (int e = 0; e < 8; e++)
			st(I, cf32(I, 0.0), acc_at(T, ln, off, j, e), 4);
	IfBlk f;
	if_begin(I, &f, ilt(I, ln->tid, ci32(I, 64)), "tt_w");
	LLVMValueRef c = iadd(I, imul(I, ln->head, ci32(I, 64)), ln->tid);
	for (int j = 0; j < T->ntokproj; j++) {
		LLVMValueRef w = ld(I, I->f32, gep_f32(I, ln->param[T->mx->proj[T->tokproj[j]].weight], sext64(I, c)), 4);
		LLVMValueRef o = iadd(I, ci32(I, w_off(T, off) + j * 64 * 4), imul(I, ln->tid, ci32(I, 4)));
		st(I, fmul(I, tok_proj_scale(T, j, ln->D), w), smem_ptr(I, o), 4);
	}
	if_end(I, &f);
}

LLVMValueRef tok_part_index(Tmpl *T, Lanes *ln, LLVMValueRef NG, LLVMValueRef gi, LLVMValueRef tl,
                            LLVMValueRef h, LLVMValueRef k)
{
	Irb *I = &T->I;
	LLVMValueRef H = LLVMBuildLShr(I->b, ln->D, ci32(I, 6), "");
	LLVMValueRef g = iadd(I, imul(I, sext64(I, ln->b), sext64(I, NG)), sext64(I, gi));
	LLVMValueRef r = iadd(I, imul(I, iadd(I, imul(I, g, ci64(I, T->ntokval)), sext64(I, k)), sext64(I, H)), sext64(I, h));
	return iadd(I, imul(I, r, ci64(I, 16 * T->chunk)), sext64(I, tl));
}

/* Lane geometry of the partials' read: the group's tokens in quads (one
 * 16-byte word per quad, head and z), np lanes per quad, each over every
 * np-th head, the quads of a round spread over the block's 128 threads:
 * every word a lane reads in flight at once, one round trip for H <= 4 np. */
typedef struct { int nq, nqr, np, ql; } TokGeo;

static TokGeo tok_geo(const Tmpl *T)
{
	TokGeo g;
	g.nq = 16 * T->chunk / 4;
	g.nqr = g.nq < 128 ? g.nq : 128;
	g.np = 128 / g.nqr;
	g.ql = 32 / g.np;
	return g;
}

/* The 4 tokens of quad qd (from token gb): each one's adjoints of the token values,
 * the H heads' partials added (each lane its heads in order, then the np
 * lanes in a fixed tree, every lane of the quad with the same bits), once
 * every word of a token inside the sequence has arrived. */
static void tok_quad_sums(Tmpl *T, Lanes *ln, LLVMValueRef dtokp, LLVMValueRef NG, LLVMValueRef gb,
                          LLVMValueRef qd, LLVMValueRef part, LLVMValueRef dz[TM_MAXZ][4])
{
	Irb *I = &T->I;
	TokGeo G = tok_geo(T);
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef H = LLVMBuildLShr(I->b, ln->D, ci32(I, 6), "");
	LLVMValueRef gi = idiv(I, gb, ci32(I, 16 * T->chunk)), tl = imul(I, qd, ci32(I, 4));
	LLVMValueRef in[4];
	for (int i = 0; i < 4; i++)
		in[i] = ilt(I, iadd(I, gb, iadd(I, tl, ci32(I, i))), ln->L);
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "tt_spin");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "tt_done");
	Var s[TM_MAXZ][4], ok = var_new(I, I->i1, "tt_ok");
	for (int k = 0; k < T->ntokval; k++)
		for (int i = 0; i < 4; i++)
			s[k][i] = var_new(I, I->f32, "tt_dz");
	LLVMBuildBr(I->b, spin);
	LLVMPositionBuilderAtEnd(I->b, spin);
	var_set(I, ok, LLVMConstInt(I->i1, 1, 0));
	for (int k = 0; k < T->ntokval; k++)
		for (int i = 0; i < 4; i++)
			var_set(I, s[k][i], cf32(I, 0.0));
	Loop Lh;
	loop_begin(I, &Lh, part, H, ci32(I, G.np), "th");
	Lh.unroll = 4;
	LLVMValueRef h = loop_i(I, &Lh);
	for (int k = 0; k < T->ntokval; k++) {
		LLVMValueRef w = ld_volatile(I, v4, gep_f32(I, dtokp, tok_part_index(T, ln, NG, gi, tl, h, ci32(I, k))), 16);
		for (int i = 0; i < 4; i++) {
			LLVMValueRef e = LLVMBuildExtractElement(I->b, w, ci32(I, i), "");
			LLVMValueRef got = LLVMBuildOr(I->b, LLVMBuildNot(I->b, in[i], ""), LLVMBuildICmp(I->b, LLVMIntNE, e, ci32(I, 0), ""), "");
			var_set(I, ok, land(I, var_get(I, ok), got));
			var_set(I, s[k][i], fadd(I, var_get(I, s[k][i]), fsel(I, in[i], lb_dec(I, e), cf32(I, 0.0))));
		}
	}
	loop_end(I, &Lh);
	LLVMBuildCondBr(I->b, var_get(I, ok), done, spin);
	LLVMPositionBuilderAtEnd(I->b, done);
	for (int k = 0; k < T->ntokval; k++)
		for (int i = 0; i < 4; i++) {
			LLVMValueRef v = var_get(I, s[k][i]);
			for (int d = G.ql; d < 32; d <<= 1)
				v = fadd(I, v, shfl_xor_f(I, v, d));
			dz[k][i] = v;
		}
}

/* The group at gb: its tokens' projection adjoints into shared memory,
 * then dx and the weight sums (8 channels and C rows per thread, 16-byte
 * accesses). Every load that does not wait on the partials is issued
 * before them. A whole-block call: both halves pass a block barrier. */
void tok_tail_group(Tmpl *T, Lanes *ln, const KSig *sig, int off, LLVMValueRef NG, LLVMValueRef gb, Var sacc[])
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	TokGeo G = tok_geo(T);
	int full = ln->full;
	CHECK(G.nq % G.nqr == 0 && 4 % G.np == 0 && T->chunk % 4 == 0);
	ln->full = 0;   /* the group may be the sequence's last, whatever the caller's copy covers */
	LLVMValueRef dtokp = ksig_arg(T, sig, "ws:dtokp"), tproj = ksig_arg(T, sig, "ws:tproj");
	LLVMValueRef head0 = ieq(I, ln->head, ci32(I, 0));
	LLVMValueRef part = LLVMBuildUDiv(I->b, ln->lane, ci32(I, G.ql), "");
	LLVMValueRef qi = LLVMBuildURem(I->b, ln->lane, ci32(I, G.ql), "");

	LLVMValueRef c8 = LLVMBuildAnd(I->b, ln->tid, ci32(I, 7), ""), rl = LLVMBuildLShr(I->b, ln->tid, ci32(I, 3), "");
	LLVMValueRef ch = iadd(I, imul(I, ln->head, ci32(I, 64)), imul(I, c8, ci32(I, 8)));
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4);

	for (int r = 0; r < G.nq / G.nqr; r++) {
		LLVMValueRef qd = iadd(I, iadd(I, imul(I, ln->warp, ci32(I, G.ql)), qi), ci32(I, r * G.nqr));
		/* this lane's tokens of the quad: i = part + np ii */
		int nt = 4 / G.np;
		LLVMValueRef tl[4], t[4], valid[4], pv[4][MX_MAXPROJ] = { { 0 } };
		for (int ii = 0; ii < nt; ii++) {
			tl[ii] = iadd(I, imul(I, qd, ci32(I, 4)), iadd(I, part, ci32(I, G.np * ii)));
			t[ii] = iadd(I, gb, tl[ii]);
			valid[ii] = ilt(I, t[ii], ln->L);
			LLVMValueRef row = sext64(I, iadd(I, imul(I, ln->b, ln->L), LLVMBuildSelect(I->b, valid[ii], t[ii], gb, "")));
			for (int j = 0; j < T->ntokproj; j++)
				pv[ii][T->tokproj[j]] = ld(I, I->f32, gep_f32(I, tproj, iadd(I, imul(I, row, ci64(I, T->ntokproj)), ci64(I, j))), 4);
		}
		LLVMValueRef dz[TM_MAXZ][4];
		tok_quad_sums(T, ln, dtokp, NG, gb, qd, part, dz);
		for (int ii = 0; ii < nt; ii++) {
			LLVMValueRef ti = iadd(I, part, ci32(I, G.np * ii));   /* the token within the quad */
			LLVMValueRef seeds[3 + TM_MAXZ] = { cf32(I, 0.0), cf32(I, 0.0), cf32(I, 0.0) };
			for (int k = 0; k < T->ntokval; k++) {
				LLVMValueRef v = dz[k][3];
				for (int i = 2; i >= 0; i--)
					v = fsel(I, ieq(I, ti, ci32(I, i)), dz[k][i], v);
				seeds[3 + k] = v;
			}
			EmitEnv env = { .param = ln->scal, .proj = pv[ii], .seed = seeds, .precise = 1 };
			LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
			CHECK(memo);
			LLVMValueRef d[MX_MAXPROJ];
			for (int j = 0; j < T->ntokproj; j++)
				d[j] = fsel(I, valid[ii], emit_expr(I, &mx->g, T->tg_proj[j], &env, memo), cf32(I, 0.0));
			/* the scalar gradients once per token: in head 0's blocks */
			LLVMValueRef on = land(I, valid[ii], head0);
			for (int p = 0; p < mx->nparam; p++) {
				if (mx->param[p].kind != PK_SCALAR)
					continue;
				const ExNode *gn = &mx->g.n[T->tg_param[p]];
				LLVMValueRef g = gn->op == EX_CONST && gn->k == 0.0 ? NULL : emit_expr(I, &mx->g, T->tg_param[p], &env, memo);
				for (int j = 0; j < T->ntokproj; j++)   /* a token projection's bias collects its adjoint */
					if (mx->proj[T->tokproj[j]].bias == p)
						g = g ? fadd(I, g, d[j]) : d[j];
				if (g)
					var_set(I, sacc[p], fadd(I, var_get(I, sacc[p]), fsel(I, on, g, cf32(I, 0.0))));
			}
			free(memo);
			for (int j = 0; j < T->ntokproj; j++)
				st(I, d[j], dp_at(T, off, tl[ii], j), 4);
		}
	}
	bar_sync(I);

	LLVMValueRef acc[MX_MAXPROJ][8], w[MX_MAXPROJ][8];
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	for (int j = 0; j < T->ntokproj; j++)
		for (int e = 0; e < 8; e++)
			acc[j][e] = ld(I, I->f32, acc_at(T, ln, off, j, e), 4);
	for (int j = 0; j < T->ntokproj; j++)
		for (int h = 0; h < 2; h++) {
			LLVMValueRef o = iadd(I, ci32(I, w_off(T, off) + j * 64 * 4 + 16 * h), imul(I, c8, ci32(I, 32)));
			LLVMValueRef v = ld(I, v4f, smem_ptr(I, o), 16);
			for (int e = 0; e < 4; e++)
				w[j][4 * h + e] = LLVMBuildExtractElement(I->b, v, ci32(I, e), "");
		}
	/* C rows per thread, 4 in flight at once: the loads of x and dx
	 * (rows past L read the group's first row, never written) */
	enum { BATCH = 4 };
	for (int m0 = 0; m0 < T->chunk; m0 += BATCH) {
		LLVMValueRef valid[BATCH], idx[BATCH], xv[BATCH][8], dv[BATCH][8];
		for (int m = 0; m < BATCH; m++) {
			LLVMValueRef t = iadd(I, gb, iadd(I, rl, ci32(I, 16 * (m0 + m))));
			valid[m] = ilt(I, t, ln->L);
			t = LLVMBuildSelect(I->b, valid[m], t, gb, "");
			idx[m] = iadd(I, imul(I, sext64(I, iadd(I, imul(I, ln->b, ln->L), t)), sext64(I, ln->D)), sext64(I, ch));
			tok_unpack8(I, ld(I, v4i, gep_bf16(I, ln->x, idx[m]), 16), xv[m]);
			tok_unpack8(I, ld(I, v4i, gep_bf16(I, ln->dx, idx[m]), 16), dv[m]);
		}
		for (int m = 0; m < BATCH; m++) {
			LLVMValueRef tl = iadd(I, rl, ci32(I, 16 * (m0 + m)));
			for (int j = 0; j < T->ntokproj; j++) {
				/* a row past L holds 0 */
				LLVMValueRef d = ld(I, I->f32, dp_at(T, off, tl, j), 4);
				for (int e = 0; e < 8; e++) {
					dv[m][e] = fadd(I, dv[m][e], fmul(I, w[j][e], d));
					acc[j][e] = fadd(I, acc[j][e], fmul(I, d, xv[m][e]));
				}
			}
			IfBlk f;
			if_begin(I, &f, valid[m], "tt_st");
			st(I, tok_pack8(I, dv[m]), gep_bf16(I, ln->dx, idx[m]), 16);
			if_end(I, &f);
		}
	}
	for (int j = 0; j < T->ntokproj; j++)
		for (int e = 0; e < 8; e++)
			st(I, acc[j][e], acc_at(T, ln, off, j, e), 4);
	ln->full = full;
}

/* the 16 row lanes of each channel in order, one weight partial per channel */
void tok_tail_flush(Tmpl *T, Lanes *ln, const KSig *sig, int off, LLVMValueRef slot)
{
	Irb *I = &T->I;
	LLVMValueRef out = ksig_arg(T, sig, "ws:part_tchan");
	bar_sync(I);
	IfBlk f;
	if_begin(I, &f, ilt(I, ln->tid, ci32(I, 64)), "tt_flush");
	LLVMValueRef c8 = LLVMBuildLShr(I->b, ln->tid, ci32(I, 3), ""), e = LLVMBuildAnd(I->b, ln->tid, ci32(I, 7), "");
	for (int j = 0; j < T->ntokproj; j++) {
		LLVMValueRef s = cf32(I, 0.0);
		for (int r = 0; r < 16; r++) {
			LLVMValueRef th = iadd(I, ci32(I, r * 8), c8);
			LLVMValueRef o = iadd(I, ci32(I, off + dp_bytes(T) + j * 8 * 128 * 4),
			                      imul(I, iadd(I, imul(I, e, ci32(I, 128)), th), ci32(I, 4)));
			s = fadd(I, s, ld(I, I->f32, smem_ptr(I, o), 4));
		}
		s = fmul(I, s, tok_proj_scale(T, j, ln->D));
		LLVMValueRef row = iadd(I, imul(I, slot, ci32(I, T->ntokproj)), ci32(I, j));
		LLVMValueRef o = iadd(I, imul(I, sext64(I, row), sext64(I, ln->D)), sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), ln->tid)));
		st(I, s, gep_f32(I, out, o), 4);
	}
	if_end(I, &f);
}
