/* The decode step (R.decode, scan "decode"): a forward only, which
 * advances a pool of states by the call's L tokens and writes their y --
 * what sampling runs once per generated token.
 *
 * The scans' geometry (16 chunks per warp, time as the mma's M) needs
 * hundreds of tokens to fill a block; a step has one to a few dozen, and
 * its parallelism is the batch. So one thread owns one channel of one
 * head for DEC_RPT rows (sequences), and walks the tokens in order:
 *   grid (H, cdiv(B, rows)), K channels x 256 / K row lanes (one at K >
 *   128); row lane l holds rows l, l + lanes, ... of the block's.
 * Heads of any K that is a multiple of 16 up to 256 (RecurrentGemma's 256
 * among them). The head's block-diagonal weights are staged in shared
 * memory once where they fit (fp32 [i][j]: a warp reads 32 consecutive
 * columns, no bank conflict), else read from memory; every token's x rows
 * are staged; the projections are fp32 dot products, the
 * element stage the mixer's own expressions (emit_expr), the lane-invariant
 * ones hoisted out of the token loop. A token stage (per-token projections
 * over the whole width) is a token pass ahead of this kernel (tmpl_tok_step:
 * the scans' tok_fwd, a warp per token).
 *
 * States: row b's slot is index[b] (no index: b); a negative slot makes the
 * row padding: its state is neither read nor written, nor its y
 * (its x is read with its block's rows). The state comes from
 * h0[slot] (no h0: zero, and the row's first token is a reset as at t = 0
 * of a forward) and goes to hT[slot] after the last token (no hT: nowhere).
 * Each thread reads its states before it writes any, and no two threads
 * share an element, so hT may be h0: the update in place the runtime
 * allows for this kernel alone (h0 and hT lose noalias).
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>

#define DEC_RPT 8                /* rows per thread */
#define DEC_THREADS 256          /* threads per block, at most */
/* the most shared memory the staged weights may take: with the staged x
 * (8 KB at K = 64) a block stays within sm_86's and sm_89's 99 KB */
#define DEC_W_SMEM (88 * 1024)

/* A head of K channels: DEC_THREADS / K row lanes (at least one), each of
 * DEC_RPT rows; the weights staged where they fit (K = 64: 16 KB per
 * projection), else read from memory, where every row lane and every
 * block of the head reads the same lines (L1, L2). */
typedef struct {
	int K, lanes, rows, threads;
	int w_smem;       /* the weights are in shared memory */
	int w_bytes;      /* one projection's, fp32 [K][K] */
	int xs_off;       /* the staged x rows, fp32 [rows][K] */
	int smem;
} DecGeo;

static DecGeo dec_geo(const Tmpl *T)
{
	DecGeo g = { .K = T->mx->k };
	g.lanes = DEC_THREADS / g.K > 0 ? DEC_THREADS / g.K : 1;
	g.rows = g.lanes * DEC_RPT;
	g.threads = g.lanes * g.K;
	g.w_bytes = g.K * g.K * 4;
	g.w_smem = T->nbdproj * g.w_bytes <= DEC_W_SMEM;
	g.xs_off = g.w_smem ? T->nbdproj * g.w_bytes : 0;
	g.smem = g.xs_off + g.rows * g.K * 4;
	return g;
}

/* the plan of a decode variant: the head, the blocks over the batch, and
 * the token stage's workspaces (forward-only: nothing is saved) */
void tmpl_decode_plan(Tmpl *T)
{
	DecGeo g = dec_geo(T);
	T->nvar = T->nws = 0;
	snprintf(T->var[0].name, sizeof T->var[0].name, "K");
	snprintf(T->var[0].expr, sizeof T->var[0].expr, "%d", g.K);
	snprintf(T->var[1].name, sizeof T->var[1].name, "H");
	snprintf(T->var[1].expr, sizeof T->var[1].expr, "D/K");
	snprintf(T->var[2].name, sizeof T->var[2].name, "NDB");
	snprintf(T->var[2].expr, sizeof T->var[2].expr, "cdiv(B,%d)", g.rows);
	T->nvar = 3;
	snprintf(T->rule_text[0], sizeof T->rule_text[0], "D%%%d==0", g.K);
	snprintf(T->rule_text[1], sizeof T->rule_text[1], "the width must be a multiple of %d: the kernels work on "
	         "heads of %d channels", g.K, g.K);
	T->rule[0] = (ShapeRule){ T->rule_text[0], T->rule_text[1] };
	T->nrule = 1;
	if (T->ntokval > 0) {
		Workspace *w = &T->ws[T->nws++];
		snprintf(w->name, sizeof w->name, "tok");
		snprintf(w->bytes, sizeof w->bytes, "B*L*%d", 4 * T->ntokval);
		w->life = "forward";
		w = &T->ws[T->nws++];
		snprintf(w->name, sizeof w->name, "tproj");
		snprintf(w->bytes, sizeof w->bytes, "B*L*%d", 4 * T->ntokproj);
		w->life = "forward";
	}
}

/* The kernel's loaded values: a thread's channel, its rows and their states. */
typedef struct {
	DecGeo g;
	LLVMValueRef c, rl, ch, B, L, D;
	LLVMValueRef row[DEC_RPT], ok[DEC_RPT], sidx[DEC_RPT];   /* b, the row is live, slot * D + ch (i64) */
	LLVMValueRef pv[MX_MAXPARAM];                            /* parameters as the thread's channel sees them */
	LLVMValueRef bias[MX_MAXPROJ];                           /* block-diagonal projections' bias at ch */
	LLVMValueRef w[MX_MAXPROJ];                              /* their weights in memory, at the head's block */
	LLVMValueRef x, y, tok, h0, hT;
	LLVMValueRef first0;                                     /* 1.0 where the rows start with a reset (no h0) */
	Var h[DEC_RPT];
} Dec;

LLVMValueRef decode_slot(Irb *I, LLVMValueRef index, LLVMValueRef has_index, LLVMValueRef b, LLVMValueRef in)
{
	Var slot = var_init(I, b, "slot");
	IfBlk f;
	if_begin(I, &f, land(I, in, has_index), "slot_in");
	var_set(I, slot, ld(I, I->i32, LLVMBuildGEP2(I->b, I->i32, index, (LLVMValueRef[]){ sext64(I, b) }, 1, ""), 4));
	if_end(I, &f);
	return var_get(I, slot);
}

/* the head's weights of every block-diagonal projection into shared
 * memory, as fp32 [j][i][K], 16 bytes per thread and trip */
static void dec_stage_weights(Tmpl *T, const Dec *d, LLVMValueRef tid)
{
	Irb *I = &T->I;
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4);
	int n4 = d->g.K * d->g.K / 4;
	for (int j = 0; j < T->nbdproj; j++) {
		Loop L;
		loop_begin(I, &L, tid, ci32(I, n4), ci32(I, d->g.threads), "w4");
		LLVMValueRef e = loop_i(I, &L);
		LLVMValueRef v = ld(I, v4f, gep_f32(I, d->w[j], sext64(I, imul(I, e, ci32(I, 4)))), 16);
		st(I, v, smem_ptr(I, iadd(I, ci32(I, j * d->g.w_bytes), imul(I, e, ci32(I, 16)))), 16);
		loop_end(I, &L);
	}
}

/* the thread's channel, rows, slots and states, and the parameters at its channel */
static void dec_init(Tmpl *T, Dec *d, const KSig *s, LLVMValueRef tid)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	int K = d->g.K;
	d->c = LLVMBuildURem(I->b, tid, ci32(I, K), "c");
	d->rl = LLVMBuildUDiv(I->b, tid, ci32(I, K), "rl");
	d->B = ksig_arg(T, s, "i32:B");
	d->L = ksig_arg(T, s, "i32:L");
	d->D = ksig_arg(T, s, "i32:D");
	d->ch = iadd(I, imul(I, ctaid(I, 0), ci32(I, K)), d->c);
	d->x = ksig_arg(T, s, "x");
	d->y = ksig_arg(T, s, "y");
	d->tok = T->ntokval > 0 ? ksig_arg(T, s, "ws:tok") : NULL;
	d->h0 = ksig_arg(T, s, "state:h0");
	d->hT = ksig_arg(T, s, "state:hT");
	for (int j = 0; j < T->nbdproj; j++)
		d->w[j] = gep_f32(I, ksig_param(T, s, mx->proj[T->bdproj[j]].weight),
		                  imul(I, sext64(I, ctaid(I, 0)), ci64(I, (int64_t)K * K)));
	LLVMValueRef index = ksig_arg(T, s, "state:index");
	d->first0 = b2f(I, LLVMBuildNot(I->b, state_given(I, d->h0), ""));
	LLVMValueRef has_index = state_given(I, index);
	LLVMValueRef b0 = imul(I, ctaid(I, 1), ci32(I, d->g.rows));
	for (int k = 0; k < DEC_RPT; k++) {
		LLVMValueRef b = iadd(I, b0, iadd(I, d->rl, ci32(I, d->g.lanes * k)));
		LLVMValueRef in = ilt(I, b, d->B);
		LLVMValueRef sl = decode_slot(I, index, has_index, b, in);
		d->row[k] = b;
		d->ok[k] = land(I, in, ige(I, sl, ci32(I, 0)));
		d->sidx[k] = iadd(I, imul(I, sext64(I, sl), sext64(I, d->D)), sext64(I, d->ch));
		d->h[k] = var_init(I, state_load(I, d->h0, d->sidx[k], d->ok[k]), "h");
	}
	for (int p = 0; p < mx->nparam; p++) {
		d->pv[p] = NULL;
		if (mx->param[p].kind == PK_CHANNEL)
			d->pv[p] = ld(I, I->f32, gep_f32(I, ksig_param(T, s, p), sext64(I, d->ch)), 4);
		else if (mx->param[p].kind == PK_SCALAR)
			d->pv[p] = ld(I, I->f32, ksig_param(T, s, p), 4);
	}
	for (int j = 0; j < T->nbdproj; j++)
		d->bias[j] = d->pv[mx->proj[T->bdproj[j]].bias];
}

/* token t's x rows of the block into shared memory as fp32 [row][K]:
 * 16-byte loads of 8 channels, striding over the block; rows past B read
 * nothing and hold 0 */
static void dec_stage_x(Tmpl *T, const Dec *d, LLVMValueRef tid, LLVMValueRef t)
{
	Irb *I = &T->I;
	int K = d->g.K;
	LLVMTypeRef v4i = LLVMVectorType(I->i32, 4), v4f = LLVMVectorType(I->f32, 4);
	Loop Lu;
	loop_begin(I, &Lu, tid, ci32(I, d->g.rows * K / 8), ci32(I, d->g.threads), "x8");
	LLVMValueRef u = loop_i(I, &Lu);
	LLVMValueRef r = LLVMBuildUDiv(I->b, u, ci32(I, K / 8), ""), blk = LLVMBuildURem(I->b, u, ci32(I, K / 8), "");
	LLVMValueRef b = iadd(I, imul(I, ctaid(I, 1), ci32(I, d->g.rows)), r);
	LLVMValueRef in = ilt(I, b, d->B);
	LLVMValueRef rowi = iadd(I, imul(I, sext64(I, LLVMBuildSelect(I->b, in, b, ci32(I, 0), "")), sext64(I, d->L)),
	                         sext64(I, t));   /* b * L + t in 64 bits */
	LLVMValueRef col = iadd(I, imul(I, ctaid(I, 0), ci32(I, K)), imul(I, blk, ci32(I, 8)));
	Var v = var_init(I, LLVMConstNull(v4i), "xv");
	IfBlk f;
	if_begin(I, &f, in, "x_in");
	var_set(I, v, ld(I, v4i, gep_bf16(I, d->x, iadd(I, imul(I, rowi, sext64(I, d->D)), sext64(I, col))), 16));
	if_end(I, &f);
	LLVMValueRef e[8];
	tok_unpack8(I, var_get(I, v), e);
	LLVMValueRef off = imul(I, iadd(I, imul(I, r, ci32(I, K)), imul(I, blk, ci32(I, 8))), ci32(I, 4));
	off = iadd(I, off, ci32(I, d->g.xs_off));
	for (int h = 0; h < 2; h++) {
		LLVMValueRef q = LLVMGetUndef(v4f);
		for (int k = 0; k < 4; k++)
			q = LLVMBuildInsertElement(I->b, q, e[4 * h + k], ci32(I, k), "");
		st(I, q, smem_ptr(I, iadd(I, off, ci32(I, 16 * h))), 16);
	}
	loop_end(I, &Lu);
}

/* x of the thread's k-th row, channel i, from the staged token */
static LLVMValueRef dec_xs(Tmpl *T, const Dec *d, int k, LLVMValueRef i)
{
	Irb *I = &T->I;
	LLVMValueRef r = iadd(I, d->rl, ci32(I, d->g.lanes * k));
	LLVMValueRef off = imul(I, iadd(I, imul(I, r, ci32(I, d->g.K)), i), ci32(I, 4));
	return ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, d->g.xs_off))), 4);
}

/* W_j[i][c] of the head: from shared memory where staged, else from memory */
static LLVMValueRef dec_w(Tmpl *T, const Dec *d, int j, LLVMValueRef i)
{
	Irb *I = &T->I;
	LLVMValueRef e = iadd(I, imul(I, i, ci32(I, d->g.K)), d->c);
	if (d->g.w_smem)
		return ld(I, I->f32, smem_ptr(I, iadd(I, ci32(I, j * d->g.w_bytes), imul(I, e, ci32(I, 4)))), 4);
	return ld(I, I->f32, gep_f32(I, d->w[j], sext64(I, e)), 4);
}

/* the block-diagonal projections of the thread's rows at its channel:
 * acc[j][k] = sum_i x[k][i] W_j[i][c], in order of i */
static void dec_project(Tmpl *T, const Dec *d, Var acc[MX_MAXPROJ][DEC_RPT], int nk)
{
	Irb *I = &T->I;
	for (int j = 0; j < T->nbdproj; j++)
		for (int k = 0; k < nk; k++)
			acc[j][k] = var_init(I, cf32(I, 0.0), "acc");
	Loop L;
	loop_begin(I, &L, ci32(I, 0), ci32(I, d->g.K), ci32(I, 1), "i");
	L.unroll = 4;
	LLVMValueRef i = loop_i(I, &L);
	LLVMValueRef w[MX_MAXPROJ];
	for (int j = 0; j < T->nbdproj; j++)
		w[j] = dec_w(T, d, j, i);
	for (int k = 0; k < nk; k++) {
		LLVMValueRef xv = dec_xs(T, d, k, i);
		for (int j = 0; j < T->nbdproj; j++)
			var_set(I, acc[j][k], fadd(I, var_get(I, acc[j][k]), fmul(I, xv, w[j])));
	}
	loop_end(I, &L);
}

LLVMValueRef decode_advance(Tmpl *T, EmitEnv *env, Var h)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
	CHECK(memo);
	LLVMValueRef a = emit_exp(I, &mx->g, T->e_log_a, env, memo);
	LLVMValueRef bb = emit_expr(I, &mx->g, T->e_b, env, memo);
	/* at a reset the state before is dropped, as in the scans */
	LLVMValueRef hn = fsel(I, fgt(I, env->first, cf32(I, 0.0)), bb, fadd(I, fmul(I, a, var_get(I, h)), bb));
	var_set(I, h, hn);
	env->h = hn;
	LLVMValueRef y = emit_expr(I, &mx->g, T->e_y, env, memo);
	free(memo);
	return y;
}

/* token t of row k: the element stage, the state's step, y */
static void dec_element(Tmpl *T, Dec *d, int k, LLVMValueRef t, Var acc[MX_MAXPROJ][DEC_RPT], EmitEnv base)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, d->ok[k], "row");
	LLVMValueRef tokrow = iadd(I, imul(I, sext64(I, d->row[k]), sext64(I, d->L)), sext64(I, t));
	LLVMValueRef proj[MX_MAXPROJ] = { 0 }, tok[TM_MAXZ] = { 0 };
	for (int j = 0; j < T->nbdproj; j++)
		proj[T->bdproj[j]] = fadd(I, var_get(I, acc[j][k]), d->bias[j]);
	for (int z = 0; z < T->ntokval; z++)
		tok[z] = ld(I, I->f32, gep_f32(I, d->tok, iadd(I, imul(I, tokrow, ci64(I, T->ntokval)), ci64(I, z))), 4);
	LLVMValueRef first = fsel(I, ieq(I, t, ci32(I, 0)), d->first0, cf32(I, 0.0));
	EmitEnv env = base;
	env.x = dec_xs(T, d, k, d->c);
	env.first = first;
	env.proj = proj;
	env.tok = tok;
	LLVMValueRef yv = decode_advance(T, &env, d->h[k]);
	LLVMValueRef yi = iadd(I, imul(I, tokrow, sext64(I, d->D)), sext64(I, d->ch));
	st(I, f32_to_bf16(I, yv), gep_bf16(I, d->y, yi), 2);
	if_end(I, &f);
}

/* the call's tokens in order, on the thread's first nk rows */
static void dec_tokens(Tmpl *T, Dec *d, LLVMValueRef tid, EmitEnv base, int nk)
{
	Irb *I = &T->I;
	Loop Lt;
	loop_begin(I, &Lt, ci32(I, 0), d->L, ci32(I, 1), "t");
	LLVMValueRef t = loop_i(I, &Lt);
	bar_sync(I);   /* the weights staged; the last token's x read by every thread */
	dec_stage_x(T, d, tid, t);
	bar_sync(I);
	Var acc[MX_MAXPROJ][DEC_RPT];
	dec_project(T, d, acc, nk);
	for (int k = 0; k < nk; k++)
		dec_element(T, d, k, t, acc, base);
	loop_end(I, &Lt);
}

Launch *tmpl_decode_open(Tmpl *T, const char *kname, const char *g0, const char *g1, const char *g2, int block,
                         const char *smem, int minblocks)
{
	Irb *I = &T->I;
	Launch *l = tmpl_launch(T, 1, kname, g0, g1, g2, block, smem);
	l->minblocks = minblocks;
	KSig *s = &l->sig;
	ksig_add(T, s, "x", I->gptr);
	ksig_add(T, s, "y", I->gptr);
	ksig_params(T, s);
	if (!T->v->rows)   /* the token pass's values; a step of one kernel makes its own */
		ksig_tok(T, s);
	ksig_add(T, s, "state:h0", I->gptr);
	ksig_add(T, s, "state:hT", I->gptr);
	ksig_add(T, s, "state:index", I->gptr);
	ksig_add(T, s, "i32:B", I->i32);
	ksig_add(T, s, "i32:L", I->i32);
	ksig_add(T, s, "i32:D", I->i32);
	/* the bytes: x, y and the token values once, the states read and written (the parameters aside) */
	snprintf(l->bytes_extra, sizeof l->bytes_extra, "B*D*8");
	tmpl_open(T, l);
	irb_may_alias(I, ksig_find(s, "state:h0"));
	irb_may_alias(I, ksig_find(s, "state:hT"));
	return l;
}

void tmpl_decode(Tmpl *T)
{
	Irb *I = &T->I;
	Dec d = { .g = dec_geo(T) };
	char smem[16];
	snprintf(smem, sizeof smem, "%d", d.g.smem);
	const KSig *s = &tmpl_decode_open(T, "decode", "H", "NDB", "1", d.g.threads, smem, 0)->sig;
	LLVMValueRef tid = tid_x(I);
	dec_init(T, &d, s, tid);
	if (d.g.w_smem)
		dec_stage_weights(T, &d, tid);
	/* lane-invariant nodes (parameters and constants only) once per thread, before the tokens */
	size_t n = (size_t)T->mx->g.len;
	LLVMValueRef *inv = calloc(2 * n, sizeof *inv);
	CHECK(inv);
	EmitEnv base = { .param = d.pv, .inv_node = T->inv_node, .inv = inv, .inv_l2e = inv + n };
	base.hoist = irb_hoist_block(I);
	/* a block whose live rows fit one per thread (B - b0 <= lanes: the
	 * single request of B = 1, say) runs the tokens on its first row alone,
	 * a fraction of the multiply-adds; the test is the same in the whole
	 * block, so both copies meet the barriers alike */
	LLVMValueRef left = isub(I, d.B, imul(I, ctaid(I, 1), ci32(I, d.g.rows)));
	LLVMValueRef few = LLVMBuildICmp(I->b, LLVMIntSLE, left, ci32(I, d.g.lanes), "few");
	IfBlk f1, f8;
	if_begin(I, &f1, few, "one_row");
	dec_tokens(T, &d, tid, base, 1);
	if_end(I, &f1);
	if_begin(I, &f8, LLVMBuildNot(I->b, few, ""), "rows");
	dec_tokens(T, &d, tid, base, DEC_RPT);
	if_end(I, &f8);
	for (int k = 0; k < DEC_RPT; k++)
		state_store(I, d.hT, d.sidx[k], d.ok[k], var_get(I, d.h[k]));
	free(inv);
	irb_ret(I);
}
