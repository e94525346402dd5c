/* The decode step in one kernel (R.decode's rows = true), for mixers
 * without block-diagonal projections.
 *
 * The plain step (decode.c) gives a block one head, and a token stage --
 * sums over the whole width -- a kernel of its own ahead of it: two
 * launches, and x read twice. Without block-diagonal projections nothing
 * ties a block to a head, so here a block owns one row over its whole
 * width: 256 threads, the row's 8-channel chunk q at thread q % 256 (up to
 * DR_CHUNKS a thread: D <= 8192), its states in its own slots of shared
 * memory for all the call's tokens. Per token:
 *   1. each thread takes its chunks of x (copied in while the token before
 *      was stepped) and adds w_j[c] x[c] over them, channel by channel;
 *      the warp adds its lanes' sums (butterfly), and every thread the
 *      block's 8 warp sums in warp order through shared memory: each token
 *      projection, the same bits in every thread and on every run;
 *   2. every thread makes the token values from them (the mixer's
 *      per-token expressions, evaluated precisely as the token pass does);
 *   3. the element stage on each of its channels: the state's step and y,
 *      stored 16 bytes a chunk.
 * The warp sums alternate between two shared buffers by token parity, so a
 * token needs one barrier: a thread writes token t + 2's sums after the
 * barrier of token t + 1, which every thread passes after reading token t's.
 *
 * States as in decode.c: the row's slot is index[b] (no index: b); a
 * negative slot makes the row padding, and its block does nothing. The
 * state comes from h0[slot] (no h0: zero, and the first token is a reset)
 * and goes to hT[slot] after the last token; a thread reads its states
 * before it writes any and no two threads share one, so hT may be h0.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>

#define DR_THREADS 256
#define DR_WARPS (DR_THREADS / 32)
#define DR_CHUNKS 4                               /* 8-channel chunks a thread, at most */
#define DR_WIDTH (DR_THREADS * 8 * DR_CHUNKS)     /* the widest row: 8192 */
/* blocks an SM holds (registers: 128 a thread, no spill with the states in
 * shared memory): at B = 256 every row's block in one wave of the H100's
 * or H200's 132 SMs, where one a SM takes two. Shared memory (64 KB a
 * block) lets sm_86 and sm_89 hold one. */
#define DR_MINBLOCKS 2

/* Shared memory, 64 KB. Each thread's x chunks of two tokens, [2]
 * [DR_CHUNKS][DR_THREADS] x 16 bytes: token t + 1's copied in (cp.async)
 * while token t is stepped, so a token after the first waits for no load
 * of x, and read again after the token's barrier rather than held across
 * it. Then the row's states, fp32 [DR_CHUNKS][2][DR_THREADS][4], kept over
 * the call's tokens; a warp's 16-byte access is 512 consecutive bytes.
 * Then the warp sums' two buffers, fp32 [2][DR_WARPS][ntokproj]. A thread
 * reads only its own x and state slots. (x and the 32 states held in
 * registers took the thread past 128.) */
#define DR_XS_BYTES (2 * DR_CHUNKS * DR_THREADS * 16)
#define DR_HS_BYTES (DR_CHUNKS * 2 * DR_THREADS * 16)
static int dr_smem(const Tmpl *T)
{
	return DR_XS_BYTES + DR_HS_BYTES + 2 * DR_WARPS * (T->ntokproj > 0 ? T->ntokproj : 1) * 4;
}

/* the plan: a block per row, no workspace (nothing leaves the kernel but
 * y and the states) */
void tmpl_decode_rows_plan(Tmpl *T)
{
	int K = T->mx->k;
	T->nvar = T->nws = 0;
	snprintf(T->rule_text[0], sizeof T->rule_text[0], "D%%%d==0", K);
	snprintf(T->rule_text[1], sizeof T->rule_text[1], "the width must be a multiple of %d: the kernels work on "
	         "heads of %d channels", K, K);
	T->rule[0] = (ShapeRule){ T->rule_text[0], T->rule_text[1] };
	T->rule[1] = (ShapeRule){ "D<=8192", "a block holds a row's whole width, 32 channels a thread: the plain "
	                                     "decode step (R.decode without rows) takes wider rows" };
	T->nrule = 2;
	CHECK(DR_WIDTH == 8192);
}

/* A thread's view of its row: the chunks it owns and their states. */
typedef struct {
	LLVMValueRef b, slot, L, D, x, y, h0, hT, first0;
	LLVMValueRef live[DR_CHUNKS];   /* the chunk is inside the width */
	LLVMValueRef c[DR_CHUNKS];      /* its first channel (0 where not live), i32 */
} Row;

/* 8 fp32 as two 16-byte accesses, values 0-3 at p[0] and 4-7 at p[1]
 * (global or shared) */
static void dr_ld8(Irb *I, LLVMValueRef p[2], LLVMValueRef out[8])
{
	for (int h = 0; h < 2; h++) {
		LLVMValueRef v = ld(I, LLVMVectorType(I->f32, 4), p[h], 16);
		for (int e = 0; e < 4; e++)
			out[4 * h + e] = LLVMBuildExtractElement(I->b, v, ci32(I, e), "");
	}
}

static void dr_st8(Irb *I, LLVMValueRef p[2], LLVMValueRef v[8])
{
	for (int h = 0; h < 2; h++) {
		LLVMValueRef q = LLVMGetUndef(LLVMVectorType(I->f32, 4));
		for (int e = 0; e < 4; e++)
			q = LLVMBuildInsertElement(I->b, q, v[4 * h + e], ci32(I, e), "");
		st(I, q, p[h], 16);
	}
}

/* p[idx] and p[idx + 4] in global memory */
static void dr_global8(Irb *I, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef at[2])
{
	for (int h = 0; h < 2; h++)
		at[h] = gep_f32(I, p, iadd(I, idx, ci64(I, 4 * h)));
}

/* the thread's states of chunk i in shared memory, both halves */
static void dr_hs(Irb *I, int i, LLVMValueRef at[2])
{
	for (int h = 0; h < 2; h++)
		at[h] = smem_ptr(I, iadd(I, ci32(I, DR_XS_BYTES),
		                         imul(I, iadd(I, tid_x(I), ci32(I, (2 * i + h) * DR_THREADS)), ci32(I, 16))));
}

static void dr_hs_get(Irb *I, int i, LLVMValueRef out[8])
{
	LLVMValueRef at[2];
	dr_hs(I, i, at);
	dr_ld8(I, at, out);
}

static void dr_hs_put(Irb *I, int i, LLVMValueRef v[8])
{
	LLVMValueRef at[2];
	dr_hs(I, i, at);
	dr_st8(I, at, v);
}

/* element (b, t, 0) of the row's token t in [B][L][D], i64 */
static LLVMValueRef dr_token_at(Irb *I, const Row *r, LLVMValueRef t)
{
	return imul(I, iadd(I, imul(I, sext64(I, r->b), sext64(I, r->L)), sext64(I, t)), sext64(I, r->D));
}

/* slot * D + c of chunk i, i64 */
static LLVMValueRef dr_sidx(Irb *I, const Row *r, int i)
{
	return iadd(I, imul(I, sext64(I, r->slot), sext64(I, r->D)), sext64(I, r->c[i]));
}

/* the row's states at the thread's chunks, h0[slot] or zero, into its
 * shared slots */
static void dr_states_in(Tmpl *T, const Row *r)
{
	Irb *I = &T->I;
	LLVMValueRef given = state_given(I, r->h0);
	for (int i = 0; i < DR_CHUNKS; i++) {
		IfBlk f;
		if_begin(I, &f, r->live[i], "h_in");
		Var h[8];
		for (int e = 0; e < 8; e++)
			h[e] = var_init(I, cf32(I, 0.0), "h");
		IfBlk g;
		if_begin(I, &g, given, "h0");
		LLVMValueRef v[8], at[2];
		dr_global8(I, r->h0, dr_sidx(I, r, i), at);
		dr_ld8(I, at, v);
		for (int e = 0; e < 8; e++)
			var_set(I, h[e], v[e]);
		if_end(I, &g);
		LLVMValueRef hv[8];
		for (int e = 0; e < 8; e++)
			hv[e] = var_get(I, h[e]);
		dr_hs_put(I, i, hv);
		if_end(I, &f);
	}
}

/* the thread's slot for chunk i of token t's x in shared memory */
static LLVMValueRef dr_xs(Irb *I, LLVMValueRef t, int i)
{
	LLVMValueRef half = imul(I, LLVMBuildAnd(I->b, t, ci32(I, 1), ""), ci32(I, DR_XS_BYTES / 2));
	return iadd(I, half, imul(I, iadd(I, tid_x(I), ci32(I, DR_THREADS * i)), ci32(I, 16)));
}

/* token t's x into the thread's slots (zeros past the width), one group
 * of copies; where t = L the group is empty */
static void dr_fetch_x(Tmpl *T, const Row *r, LLVMValueRef t)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, ilt(I, t, r->L), "x_next");
	LLVMValueRef base = gep_bf16(I, r->x, dr_token_at(I, r, t));
	for (int i = 0; i < DR_CHUNKS; i++) {
		LLVMValueRef n = LLVMBuildSelect(I->b, r->live[i], ci32(I, 16), ci32(I, 0), "");
		cp_async16(I, dr_xs(I, t, i), gep_bf16(I, base, sext64(I, r->c[i])), n);
	}
	if_end(I, &f);
	cp_async_commit(I);
}

/* chunk i of token t's x, 8 values, from the thread's slot */
static void dr_xs_get(Irb *I, LLVMValueRef t, int i, LLVMValueRef out[8])
{
	tok_unpack8(I, ld(I, LLVMVectorType(I->i32, 4), smem_ptr(I, dr_xs(I, t, i)), 16), out);
}

/* 1 and 2: the token projections summed over the row (thread, warp, then
 * the block's warps in order) and the token values made from them */
static void dr_token_stage(Tmpl *T, const KSig *s, const Row *r, LLVMValueRef t, LLVMValueRef xv[DR_CHUNKS][8],
                           const LLVMValueRef *scal, LLVMValueRef tok[TM_MAXZ])
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	LLVMValueRef lane = LLVMBuildAnd(I->b, tid_x(I), ci32(I, 31), "lane");
	LLVMValueRef warp = LLVMBuildLShr(I->b, tid_x(I), ci32(I, 5), "warp");
	LLVMValueRef buf = iadd(I, ci32(I, DR_XS_BYTES + DR_HS_BYTES), imul(I, LLVMBuildAnd(I->b, t, ci32(I, 1), ""),
	                                                      ci32(I, DR_WARPS * T->ntokproj * 4)));
	for (int j = 0; j < T->ntokproj; j++) {
		LLVMValueRef w = ksig_param(T, s, mx->proj[T->tokproj[j]].weight);
		LLVMValueRef acc = cf32(I, 0.0);
		for (int i = 0; i < DR_CHUNKS; i++) {
			LLVMValueRef wv[8];
			tok_w8(I, w, r->c[i], r->live[i], wv);   /* x is zero past the width too */
			for (int e = 0; e < 8; e++)
				acc = fadd(I, acc, fmul(I, wv[e], xv[i][e]));
		}
		for (int m = 16; m >= 1; m >>= 1)   /* butterfly: every lane holds the warp's sum */
			acc = fadd(I, acc, shfl_xor_f(I, acc, m));
		IfBlk f;
		if_begin(I, &f, ieq(I, lane, ci32(I, 0)), "wsum");
		st(I, acc, smem_ptr(I, iadd(I, buf, imul(I, iadd(I, imul(I, warp, ci32(I, T->ntokproj)), ci32(I, j)),
		                                          ci32(I, 4)))), 4);
		if_end(I, &f);
	}
	LLVMValueRef pv[MX_MAXPROJ] = { 0 };
	if (T->ntokproj > 0) {
		bar_sync(I);
		for (int j = 0; j < T->ntokproj; j++) {
			LLVMValueRef sum = cf32(I, 0.0);
			for (int wp = 0; wp < DR_WARPS; wp++)
				sum = fadd(I, sum, ld(I, I->f32, smem_ptr(I, iadd(I, buf, ci32(I, (wp * T->ntokproj + j) * 4))), 4));
			pv[T->tokproj[j]] = fadd(I, scal[mx->proj[T->tokproj[j]].bias], fmul(I, tok_proj_scale(T, j, r->D), sum));
		}
	}
	EmitEnv env = { .param = scal, .proj = pv, .precise = 1 };
	LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
	CHECK(memo);
	for (int z = 0; z < T->ntokval; z++)
		tok[z] = emit_expr(I, &mx->g, T->tokval[z], &env, memo);
	free(memo);
}

/* 3: the element stage of token t on chunk i: the states' steps, y stored */
static void dr_elements(Tmpl *T, const KSig *s, const Row *r, LLVMValueRef t, int i, LLVMValueRef xv[8],
                        const LLVMValueRef *scal, LLVMValueRef tok[TM_MAXZ])
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	IfBlk f;
	if_begin(I, &f, r->live[i], "chunk");
	LLVMValueRef pc[MX_MAXPARAM][8] = { { 0 } };   /* the channel parameters at the chunk's 8 channels */
	for (int p = 0; p < mx->nparam; p++)
		if (mx->param[p].kind == PK_CHANNEL) {
			LLVMValueRef at[2];
			dr_global8(I, ksig_param(T, s, p), sext64(I, r->c[i]), at);
			dr_ld8(I, at, pc[p]);
		}
	LLVMValueRef first = fsel(I, ieq(I, t, ci32(I, 0)), r->first0, cf32(I, 0.0));
	LLVMValueRef hv[8], yv[8];
	dr_hs_get(I, i, hv);
	for (int e = 0; e < 8; e++) {
		LLVMValueRef pv[MX_MAXPARAM] = { 0 };
		for (int p = 0; p < mx->nparam; p++)
			pv[p] = mx->param[p].kind == PK_CHANNEL ? pc[p][e] : scal[p];
		LLVMValueRef none[MX_MAXPROJ] = { 0 };
		EmitEnv env = { .x = xv[e], .first = first, .param = pv, .proj = none, .tok = tok };
		Var h = var_init(I, hv[e], "h");
		yv[e] = decode_advance(T, &env, h);
		hv[e] = var_get(I, h);
	}
	dr_hs_put(I, i, hv);
	st(I, tok_pack8(I, yv), gep_bf16(I, r->y, iadd(I, dr_token_at(I, r, t), sext64(I, r->c[i]))), 16);
	if_end(I, &f);
}

void tmpl_decode_rows(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	CHECK(T->nbdproj == 0 && T->v->rows);
	char smem[16];
	snprintf(smem, sizeof smem, "%d", dr_smem(T));
	const KSig *s = &tmpl_decode_open(T, "decode_rows", "B", "1", "1", DR_THREADS, smem, DR_MINBLOCKS)->sig;

	Row r = { .b = ctaid(I, 0) };
	r.L = ksig_arg(T, s, "i32:L");
	r.D = ksig_arg(T, s, "i32:D");
	r.x = ksig_arg(T, s, "x");
	r.y = ksig_arg(T, s, "y");
	r.h0 = ksig_arg(T, s, "state:h0");
	r.hT = ksig_arg(T, s, "state:hT");
	r.first0 = b2f(I, LLVMBuildNot(I->b, state_given(I, r.h0), ""));
	LLVMValueRef index = ksig_arg(T, s, "state:index");
	r.slot = decode_slot(I, index, state_given(I, index), r.b, LLVMConstInt(I->i1, 1, 0));
	/* the test is the block's own: a padding row's block meets no barrier */
	IfBlk fr;
	if_begin(I, &fr, ige(I, r.slot, ci32(I, 0)), "row");
	LLVMValueRef nc = LLVMBuildLShr(I->b, r.D, ci32(I, 3), "");
	for (int i = 0; i < DR_CHUNKS; i++) {
		LLVMValueRef q = iadd(I, tid_x(I), ci32(I, DR_THREADS * i));
		r.live[i] = ilt(I, q, nc);
		r.c[i] = imul(I, LLVMBuildSelect(I->b, r.live[i], q, ci32(I, 0), ""), ci32(I, 8));
	}
	dr_states_in(T, &r);
	LLVMValueRef scal[MX_MAXPARAM] = { 0 };
	for (int p = 0; p < mx->nparam; p++)
		if (mx->param[p].kind == PK_SCALAR)
			scal[p] = ld(I, I->f32, ksig_param(T, s, p), 4);
	dr_fetch_x(T, &r, ci32(I, 0));
	Loop Lt;
	loop_begin(I, &Lt, ci32(I, 0), r.L, ci32(I, 1), "t");
	LLVMValueRef t = loop_i(I, &Lt);
	/* token t + 1's x on its way; token t's (the group before) landed */
	dr_fetch_x(T, &r, iadd(I, t, ci32(I, 1)));
	cp_async_wait(I, 1);
	LLVMValueRef xv[DR_CHUNKS][8];
	for (int i = 0; i < DR_CHUNKS; i++)
		dr_xs_get(I, t, i, xv[i]);
	LLVMValueRef tok[TM_MAXZ] = { 0 };
	dr_token_stage(T, s, &r, t, xv, scal, tok);
	for (int i = 0; i < DR_CHUNKS; i++) {
		dr_xs_get(I, t, i, xv[i]);
		dr_elements(T, s, &r, t, i, xv[i], scal, tok);
	}
	loop_end(I, &Lt);
	for (int i = 0; i < DR_CHUNKS; i++) {
		IfBlk f;
		if_begin(I, &f, land(I, state_given(I, r.hT), r.live[i]), "h_out");
		LLVMValueRef hv[8], at[2];
		dr_hs_get(I, i, hv);
		dr_global8(I, r.hT, dr_sidx(I, &r, i), at);
		dr_st8(I, at, hv);
		if_end(I, &f);
	}
	if_end(I, &fr);
	irb_ret(I);
}
