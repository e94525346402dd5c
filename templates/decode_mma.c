/* The decode step on tensor cores (R.decode { mma = true }): the plain
 * step's contract (decode.c), its block-diagonal projections as bf16 mma
 * with fp32 accumulation, the scans' own layout with batch rows where the
 * scans put chunks.
 *
 * A block is one quad (4 warps, 128 threads) over 64 channels, one head of
 * 64 or a 64-column slice of a head of K = 128 or 256 (any multiple of 64),
 * and DM_GROUPS groups of 16 rows: grid (1, D/64, cdiv(B, 16 DM_GROUPS)),
 * so that lanes_init finds the slice at ctaid.y (its channels' parameters
 * at 64 ctaid.y + ch). Warp w owns channels 16w .. 16w+15; at each token,
 * for each group, it multiplies the group's 16 x rows (the A fragments:
 * bf16 pairs, rows g and g+8) by its head's weight
 * columns, so lane (g, q) holds rows g and g + 8 at its 4 channels: 8
 * slots, each with its fp32 state in a register for all the call's
 * tokens. The element stage is the mixer's own expressions per slot, as in
 * the scans (lane-invariant nodes hoisted per channel).
 *
 * K = 64: the B fragments (4 k-steps) are held in registers for the whole
 * call (lanes_init), the A fragments read from x. Wider heads take K/16
 * k-steps, too many fragments to hold (128 registers at K = 256): the
 * block stages its slice of the weights in shared memory once (bf16, K
 * rows of its 64 columns per projection) and at each token its 64 rows of
 * x at the head's K inputs; then two groups at a time walk the k-steps,
 * both fragments read from shared memory. Each of a head's K/64 blocks
 * reads the head's x rows: 4x x's bytes from L2 at K = 256.
 *
 * The weights are rounded to bf16 as the scans' projections round them;
 * x is bf16 already. States, index and padding rows as in decode.c.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>

#define DM_GROUPS 4   /* groups of 16 rows per block */
#define DM_WALK 2     /* K > 64: groups sharing a walk over the head's k-steps */

/* A group's rows and states: row r of the group is g + 8r. */
typedef struct {
	LLVMValueRef live;                   /* the group's first row is below B: the same in the whole block */
	LLVMValueRef row[2], ok[2], in[2];   /* b, live (in and slot >= 0), b < B */
	LLVMValueRef sidx[2];                /* slot * D + head * 64, i64 */
	Var h[TM_SLOTS];
} DmGroup;

/* element index of row b's token t, column col of the block's 64 channels, in [B][L][D] (i64) */
static LLVMValueRef dm_xidx(Tmpl *T, const Lanes *ln, LLVMValueRef b, LLVMValueRef t, LLVMValueRef col)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, sext64(I, b), sext64(I, ln->L)), sext64(I, t));   /* in 64 bits */
	return iadd(I, imul(I, rowi, sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), col)));
}

/* the head of K channels the block's slice belongs to, and the slice's first column in it */
static void dm_head_of(Tmpl *T, const Lanes *ln, LLVMValueRef *head, LLVMValueRef *col0)
{
	Irb *I = &T->I;
	int per = T->mx->k / 64;
	*head = LLVMBuildUDiv(I->b, ln->head, ci32(I, per), "khead");
	*col0 = imul(I, LLVMBuildURem(I->b, ln->head, ci32(I, per), ""), ci32(I, 64));
}

/* the group's rows, slots and states (h0 at the slot, or 0) */
static void dm_group_init(Tmpl *T, Lanes *ln, const KSig *s, int gi, DmGroup *G)
{
	Irb *I = &T->I;
	LLVMValueRef B = ksig_arg(T, s, "i32:B"), index = ksig_arg(T, s, "state:index");
	LLVMValueRef has_index = state_given(I, index);
	LLVMValueRef b0 = iadd(I, imul(I, ln->b, ci32(I, 16 * DM_GROUPS)), ci32(I, 16 * gi));
	G->live = ilt(I, b0, B);
	for (int r = 0; r < 2; r++) {
		LLVMValueRef b = iadd(I, b0, iadd(I, ln->g, ci32(I, 8 * r)));
		LLVMValueRef in = ilt(I, b, B);
		LLVMValueRef sl = decode_slot(I, index, has_index, b, in);
		G->row[r] = b;
		G->in[r] = in;
		G->ok[r] = land(I, in, ige(I, sl, ci32(I, 0)));
		G->sidx[r] = iadd(I, imul(I, sext64(I, sl), sext64(I, ln->D)), sext64(I, imul(I, ln->head, ci32(I, 64))));
	}
	for (int sl = 0; sl < TM_SLOTS; sl++) {
		int r = slot_r(sl), c = slot_c(sl);
		LLVMValueRef at = iadd(I, G->sidx[r], sext64(I, ln->ch[c]));
		G->h[sl] = var_init(I, state_load(I, ln->h0, at, G->ok[r]), "h");
	}
}

/* the group's A fragments at token t, read straight from x (rows past B
 * read nothing and count as 0) */
static void dm_load_a(Tmpl *T, Lanes *ln, const DmGroup *G, LLVMValueRef t, LLVMValueRef a[4][4])
{
	Irb *I = &T->I;
	for (int ks = 0; ks < 4; ks++)
		for (int e = 0; e < 4; e++) {
			int r = e & 1, hi = e >> 1;   /* a0: row g, k 2q; a1: row g+8; a2, a3: k + 8 */
			LLVMValueRef col = iadd(I, imul(I, ln->q, ci32(I, 2)), ci32(I, 16 * ks + 8 * hi));
			LLVMValueRef b = LLVMBuildSelect(I->b, G->in[r], G->row[r], ci32(I, 0), "");
			Var v = var_init(I, ci32(I, 0), "xa");
			IfBlk f;
			if_begin(I, &f, G->in[r], "a_in");
			LLVMValueRef p = gep_bf16(I, ln->x, dm_xidx(T, ln, b, t, col));
			var_set(I, v, ld(I, I->i32, p, 4));
			if_end(I, &f);
			a[ks][e] = var_get(I, v);
		}
}

/* the group's projections: acc[j][nt][e] of block-diagonal projection j */
static void dm_project(Tmpl *T, Lanes *ln, LLVMValueRef a[4][4], LLVMValueRef acc[MX_MAXPROJ][2][4])
{
	Irb *I = &T->I;
	for (int j = 0; j < T->nbdproj; j++)
		for (int nt = 0; nt < 2; nt++) {
			LLVMValueRef d[4] = { cf32(I, 0.0), cf32(I, 0.0), cf32(I, 0.0), cf32(I, 0.0) };
			for (int ks = 0; ks < 4; ks++)
				mma_bf16(I, d, a[ks], ln->wfrag[j][ks][nt], d);
			for (int e = 0; e < 4; e++)
				acc[j][nt][e] = d[e];
		}
}

/* the group's token t: per slot the element stage, the state's step, y */
static void dm_elements(Tmpl *T, Lanes *ln, const KSig *s, DmGroup *G, LLVMValueRef t,
                        LLVMValueRef acc[MX_MAXPROJ][2][4], LLVMValueRef first0)
{
	Irb *I = &T->I;
	Mixer *mx = T->mx;
	LLVMValueRef tok = T->ntokval > 0 ? ksig_arg(T, s, "ws:tok") : NULL;
	LLVMValueRef first = fsel(I, ieq(I, t, ci32(I, 0)), first0, cf32(I, 0.0));
	size_t n = (size_t)mx->g.len;
	for (int r = 0; r < 2; r++) {
		IfBlk f;
		if_begin(I, &f, G->ok[r], "row");
		LLVMValueRef tokrow = iadd(I, imul(I, sext64(I, G->row[r]), sext64(I, ln->L)), sext64(I, t));
		LLVMValueRef tv[TM_MAXZ] = { 0 };
		for (int z = 0; z < T->ntokval; z++)
			tv[z] = ld(I, I->f32, gep_f32(I, tok, iadd(I, imul(I, tokrow, ci64(I, T->ntokval)), ci64(I, z))), 4);
		LLVMValueRef yv[4];
		for (int pr = 0; pr < 2; pr++) {   /* channels c = 2pr, 2pr + 1: adjacent, one bf16 pair of x and of y */
			LLVMValueRef xp = ld(I, I->i32, gep_bf16(I, ln->x, dm_xidx(T, ln, G->row[r], t, ln->ch[2 * pr])), 4);
			for (int h = 0; h < 2; h++) {
				int c = 2 * pr + h, sl = 4 * r + c;
				LLVMValueRef pv[MX_MAXPARAM], proj[MX_MAXPROJ] = { 0 };
				for (int p = 0; p < mx->nparam; p++)
					pv[p] = mx->param[p].kind == PK_CHANNEL ? ln->chan[p][c] : ln->scal[p];
				for (int j = 0; j < T->nbdproj; j++)
					proj[T->bdproj[j]] = fadd(I, acc[j][c >> 1][2 * r + (c & 1)], ln->bias[j][c]);
				EmitEnv env = { .x = h ? unpack_bf16_hi(I, xp) : unpack_bf16_lo(I, xp), .first = first,
				                .param = pv, .proj = proj, .tok = tv, .inv_node = T->inv_node,
				                .inv = T->k.inv_memo + (size_t)c * n, .inv_l2e = T->k.inv_memo + (size_t)(4 + c) * n,
				                .hoist = ln->hoist };
				yv[c] = decode_advance(T, &env, G->h[sl]);
			}
		}
		for (int pr = 0; pr < 2; pr++)
			st(I, pack_bf16x2(I, yv[2 * pr], yv[2 * pr + 1]),
			   gep_bf16(I, ln->y, dm_xidx(T, ln, G->row[r], t, ln->ch[2 * pr])), 4);
		if_end(I, &f);
	}
}

/* K = 64: each group's A fragments by the B fragments held since
 * lanes_init; the next group's loads go ahead of this group's work. The step is
 * latency-bound (the H200 at B = 256 was 2.83x its floor), and each
 * group's loads waited on the group before it. (All groups' at once: 64
 * registers more, and ptxas spills.) */
static void dm_token64(Tmpl *T, Lanes *ln, const KSig *s, DmGroup G[DM_GROUPS], LLVMValueRef t, LLVMValueRef first0)
{
	Irb *I = &T->I;
	LLVMValueRef a[DM_GROUPS][4][4];
	dm_load_a(T, ln, &G[0], t, a[0]);
	for (int gi = 0; gi < DM_GROUPS; gi++) {
		if (gi + 1 < DM_GROUPS)
			dm_load_a(T, ln, &G[gi + 1], t, a[gi + 1]);
		/* a group wholly past B does nothing: a test the same in the whole block, so every lane of a
		 * warp meets the mma.sync of a live group (and the kernel has no barrier) */
		IfBlk f;
		if_begin(I, &f, G[gi].live, "group");
		LLVMValueRef acc[MX_MAXPROJ][2][4];
		dm_project(T, ln, a[gi], acc);
		dm_elements(T, ln, s, &G[gi], t, acc, first0);
		if_end(I, &f);
	}
}

/* K > 64: shared memory, in 32-bit words, unpadded (96 KB at K = 256: the
 * most an sm_86 or sm_89 block may take is 99). The block's slice of each
 * projection's weights as bf16 pairs of rows (2kp, 2kp + 1) of its 64
 * columns, staged once per call: word kp * 64 + (n ^ 8 (kp & 3)), so that
 * the four kp of a B fragment's load (q) fall on four sets of 8 banks.
 * Then the block's 64 rows of x at the head's K inputs, staged per token:
 * word row * K/2 + (kw ^ 4 (row & 7)), so that an A fragment's 8 rows (g)
 * fall on eight sets of 4 banks; the swizzle keeps 16-byte pieces whole. */
static int dm_xs_off(const Tmpl *T) { return T->nbdproj * (T->mx->k / 2) * 64 * 4; }
static int dm_smem(const Tmpl *T) { return dm_xs_off(T) + 16 * DM_GROUPS * (T->mx->k / 2) * 4; }

/* byte offsets of weight word (j, kp, n) and of x word (row, kw) */
static LLVMValueRef dm_wword(Tmpl *T, int j, LLVMValueRef kp, LLVMValueRef n)
{
	Irb *I = &T->I;
	LLVMValueRef sw = LLVMBuildXor(I->b, n, LLVMBuildShl(I->b, LLVMBuildAnd(I->b, kp, ci32(I, 3), ""), ci32(I, 3), ""), "");
	LLVMValueRef word = iadd(I, imul(I, iadd(I, ci32(I, j * (T->mx->k / 2)), kp), ci32(I, 64)), sw);
	return imul(I, word, ci32(I, 4));
}
static LLVMValueRef dm_xword(Tmpl *T, LLVMValueRef row, LLVMValueRef kw)
{
	Irb *I = &T->I;
	LLVMValueRef sw = LLVMBuildXor(I->b, kw, LLVMBuildShl(I->b, LLVMBuildAnd(I->b, row, ci32(I, 7), ""), ci32(I, 2), ""), "");
	LLVMValueRef word = iadd(I, imul(I, row, ci32(I, T->mx->k / 2)), sw);
	return iadd(I, ci32(I, dm_xs_off(T)), imul(I, word, ci32(I, 4)));
}

/* the slice's weights into shared memory (fp32 read, bf16 pairs kept, as
 * lanes_init rounds them), every load independent: the call's one pass
 * over them is bandwidth, not latency */
static void dm_stage_w(Tmpl *T, Lanes *ln, LLVMValueRef khead, LLVMValueRef col0)
{
	Irb *I = &T->I;
	int K = T->mx->k, per = (K / 2) * 64;
	LLVMValueRef wbase = imul(I, khead, ci32(I, K * K));
	for (int j = 0; j < T->nbdproj; j++) {
		LLVMValueRef W = ln->param[T->mx->proj[T->bdproj[j]].weight];
		Loop L;
		loop_begin(I, &L, ln->tid, ci32(I, per), ci32(I, 128), "wstage");
		L.unroll = 8;
		LLVMValueRef e = loop_i(I, &L);
		LLVMValueRef kp = LLVMBuildLShr(I->b, e, ci32(I, 6), ""), n = LLVMBuildAnd(I->b, e, ci32(I, 63), "");
		LLVMValueRef i0 = iadd(I, wbase, iadd(I, imul(I, kp, ci32(I, 2 * K)), iadd(I, col0, n)));
		LLVMValueRef v0 = ld(I, I->f32, gep_f32(I, W, sext64(I, i0)), 4);
		LLVMValueRef v1 = ld(I, I->f32, gep_f32(I, W, sext64(I, iadd(I, i0, ci32(I, K)))), 4);
		st(I, pack_bf16x2(I, v0, v1), smem_ptr(I, dm_wword(T, j, kp, n)), 4);
		loop_end(I, &L);
	}
}

/* the block's 64 rows of x at token t, the head's K inputs, into shared
 * memory in 16-byte pieces (rows past B: zeros) */
static void dm_stage_x(Tmpl *T, Lanes *ln, const KSig *s, LLVMValueRef t, LLVMValueRef khead)
{
	Irb *I = &T->I;
	int K = T->mx->k, per = K / 8;   /* 16-byte pieces of a row */
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef B = ksig_arg(T, s, "i32:B");
	LLVMValueRef b0 = imul(I, ln->b, ci32(I, 16 * DM_GROUPS));
	Loop L;
	loop_begin(I, &L, ln->tid, ci32(I, 16 * DM_GROUPS * per), ci32(I, 128), "xstage");
	L.unroll = 4;
	LLVMValueRef e = loop_i(I, &L);
	LLVMValueRef row = LLVMBuildUDiv(I->b, e, ci32(I, per), ""), c8 = LLVMBuildURem(I->b, e, ci32(I, per), "");
	LLVMValueRef b = iadd(I, b0, row);
	Var v = var_init(I, LLVMConstNull(v4), "xv");
	IfBlk f;
	if_begin(I, &f, ilt(I, b, B), "x_in");
	LLVMValueRef rowi = iadd(I, imul(I, sext64(I, b), sext64(I, ln->L)), sext64(I, t));
	LLVMValueRef at = iadd(I, imul(I, rowi, sext64(I, ln->D)),
	                       sext64(I, iadd(I, imul(I, khead, ci32(I, K)), imul(I, c8, ci32(I, 8)))));
	var_set(I, v, ld(I, v4, gep_bf16(I, ln->x, at), 16));
	if_end(I, &f);
	st(I, var_get(I, v), smem_ptr(I, dm_xword(T, row, imul(I, c8, ci32(I, 4)))), 16);
	loop_end(I, &L);
}

/* K > 64: per DM_WALK groups, the head's K/16 k-steps once, A and B
 * fragments from shared memory (dm_stage_w, dm_stage_x), the groups
 * sharing each step's B fragments; then each live group's element stage.
 * Two groups a walk (209 registers for RG-LRU at K = 256): four would read
 * each B fragment once rather than twice, at 255 registers, the cap (no
 * spill for RG-LRU; with the fragments read from global memory instead,
 * 400 bytes), and an SM holds two blocks either way (96 KB each). Which is
 * faster awaits a GPU.
 * A group past B multiplies zeros: no branch splits the walk, and every
 * lane meets every mma.sync. */
static void dm_walk_wide(Tmpl *T, Lanes *ln, const KSig *s, DmGroup *G, int g0, LLVMValueRef t, LLVMValueRef first0)
{
	Irb *I = &T->I;
	int K = T->mx->k;
	Var acc[DM_WALK][MX_MAXPROJ][2][4];
	for (int gi = 0; gi < DM_WALK; gi++)
		for (int j = 0; j < T->nbdproj; j++)
			for (int nt = 0; nt < 2; nt++)
				for (int e = 0; e < 4; e++)
					acc[gi][j][nt][e] = var_init(I, cf32(I, 0.0), "acc");
	Loop Lk;
	loop_begin(I, &Lk, ci32(I, 0), ci32(I, K / 2), ci32(I, 8), "ks");
	Lk.unroll = 2;
	LLVMValueRef k8 = loop_i(I, &Lk);   /* the k-step's first pair of inputs */
	LLVMValueRef b[MX_MAXPROJ][2][2];
	for (int j = 0; j < T->nbdproj; j++)
		for (int nt = 0; nt < 2; nt++) {
			LLVMValueRef n = wcol(T, I, ln->w, ln->g, nt);
			for (int r = 0; r < 2; r++) {
				LLVMValueRef kp = iadd(I, iadd(I, k8, ln->q), ci32(I, 4 * r));
				b[j][nt][r] = ld(I, I->i32, smem_ptr(I, dm_wword(T, j, kp, n)), 4);
			}
		}
	for (int gi = 0; gi < DM_WALK; gi++) {
		LLVMValueRef a[4];
		for (int e = 0; e < 4; e++) {   /* a0: row g, k 2q; a1: row g+8; a2, a3: k + 8 */
			int r = e & 1, hi = e >> 1;
			LLVMValueRef row = iadd(I, ln->g, ci32(I, 16 * (g0 + gi) + 8 * r));
			LLVMValueRef kw = iadd(I, iadd(I, k8, ln->q), ci32(I, 4 * hi));
			a[e] = ld(I, I->i32, smem_ptr(I, dm_xword(T, row, kw)), 4);
		}
		for (int j = 0; j < T->nbdproj; j++)
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef c[4], d[4];
				for (int e = 0; e < 4; e++)
					c[e] = var_get(I, acc[gi][j][nt][e]);
				mma_bf16(I, d, a, b[j][nt], c);
				for (int e = 0; e < 4; e++)
					var_set(I, acc[gi][j][nt][e], d[e]);
			}
	}
	loop_end(I, &Lk);
	for (int gi = 0; gi < DM_WALK; gi++) {
		LLVMValueRef sum[MX_MAXPROJ][2][4];
		for (int j = 0; j < T->nbdproj; j++)
			for (int nt = 0; nt < 2; nt++)
				for (int e = 0; e < 4; e++)
					sum[j][nt][e] = var_get(I, acc[gi][j][nt][e]);
		IfBlk f;
		if_begin(I, &f, G[g0 + gi].live, "group");
		dm_elements(T, ln, s, &G[g0 + gi], t, sum, first0);
		if_end(I, &f);
	}
}

void tmpl_decode_mma(Tmpl *T)
{
	Irb *I = &T->I;
	int K = T->mx->k;
	CHECK(K % 64 == 0 && K <= 256 && T->nbdproj > 0);
	char rows[32], smem[16];
	snprintf(rows, sizeof rows, "cdiv(B,%d)", 16 * DM_GROUPS);
	snprintf(smem, sizeof smem, "%d", K == 64 ? 0 : dm_smem(T));
	/* a block per 64 channels: D/64, which is H at K = 64 */
	Launch *l = tmpl_decode_open(T, "decode_mma", "1", K == 64 ? "H" : "D/64", rows, 128, smem, 0);
	launch_flops(l, proj_flops(T));
	const KSig *s = &l->sig;
	T->k.slots_adjacent = 0;   /* the slots in the mma's column order: lanes_init's ch, wcol */
	Lanes ln;
	/* the slice ctaid.y, row block ctaid.z, channel parameters; at K = 64 the weight fragments */
	lanes_init(T, &ln, s, K == 64);
	LLVMValueRef khead = NULL, col0 = NULL;
	if (K > 64) {
		for (int j = 0; j < T->nbdproj; j++)   /* lanes_init loads them with the fragments it holds */
			lanes_bias(T, &ln, j, imul(I, ln.head, ci32(I, 64)));
		dm_head_of(T, &ln, &khead, &col0);
		dm_stage_w(T, &ln, khead, col0);
	}
	LLVMValueRef hT = ksig_arg(T, s, "state:hT");
	LLVMValueRef first0 = b2f(I, LLVMBuildNot(I->b, state_given(I, ln.h0), ""));
	DmGroup G[DM_GROUPS];
	for (int gi = 0; gi < DM_GROUPS; gi++)
		dm_group_init(T, &ln, s, gi, &G[gi]);
	Loop Lt;
	loop_begin(I, &Lt, ci32(I, 0), ln.L, ci32(I, 1), "t");
	LLVMValueRef t = loop_i(I, &Lt);
	if (K == 64) {
		dm_token64(T, &ln, s, G, t, first0);
	} else {
		bar_sync(I);   /* the weights staged; the last token's x read by every warp */
		dm_stage_x(T, &ln, s, t, khead);
		bar_sync(I);
		for (int gi = 0; gi < DM_GROUPS; gi += DM_WALK)
			dm_walk_wide(T, &ln, s, G, gi, t, first0);
	}
	loop_end(I, &Lt);
	for (int gi = 0; gi < DM_GROUPS; gi++)
		for (int sl = 0; sl < TM_SLOTS; sl++) {
			int r = slot_r(sl), c = slot_c(sl);
			LLVMValueRef at = iadd(I, G[gi].sidx[r], sext64(I, ln.ch[c]));
			state_store(I, hT, at, G[gi].ok[r], var_get(I, G[gi].h[sl]));
		}
	irb_ret(I);
}
