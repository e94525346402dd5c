/* The decode step on tensor cores (R.decode { mma = true }): the plain
 * step's contract (decode.c), its block-diagonal projections as bf16 mma
 * with fp32 accumulation, the scans' own layout with batch rows where the
 * scans put chunks.
 *
 * A block is one quad (4 warps, 128 threads) over one head of 64 channels
 * and DM_GROUPS groups of 16 rows: grid (1, H, cdiv(B, 16 DM_GROUPS)), so
 * that lanes_init finds the head at ctaid.y. Warp w owns channels 16w ..
 * 16w+15; at each token, for each group, it multiplies the group's 16 x
 * rows (the A fragments, read straight from x: bf16 pairs, rows g and g+8)
 * by the head's weight columns (B fragments held in registers for the
 * whole call, lanes_init), so lane (g, q) holds rows g and g + 8 at its 4
 * channels: 8 slots, each with its fp32 state in a register for all the
 * call's tokens. The element stage is the mixer's own expressions per
 * slot, as in the scans (lane-invariant nodes hoisted per channel).
 *
 * The weights are rounded to bf16 as the scans' projections round them;
 * x is bf16 already. States, index and padding rows as in decode.c.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>

#define DM_GROUPS 4   /* groups of 16 rows per block */

/* A group's rows and states: row r of the group is g + 8r. */
typedef struct {
	LLVMValueRef live;                   /* the group's first row is below B: the same in the whole block */
	LLVMValueRef row[2], ok[2], in[2];   /* b, live (in and slot >= 0), b < B */
	LLVMValueRef sidx[2];                /* slot * D + head * 64, i64 */
	Var h[TM_SLOTS];
} DmGroup;

/* element index of row b's token t, column col of the head, in [B][L][D] (i64) */
static LLVMValueRef dm_xidx(Tmpl *T, const Lanes *ln, LLVMValueRef b, LLVMValueRef t, LLVMValueRef col)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, sext64(I, b), sext64(I, ln->L)), sext64(I, t));   /* in 64 bits */
	return iadd(I, imul(I, rowi, sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), col)));
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

void tmpl_decode_mma(Tmpl *T)
{
	Irb *I = &T->I;
	CHECK(T->mx->k == 64 && T->nbdproj > 0);
	char rows[32];
	snprintf(rows, sizeof rows, "cdiv(B,%d)", 16 * DM_GROUPS);
	Launch *l = tmpl_decode_open(T, "decode_mma", "1", "H", rows, 128, "0");
	launch_flops(l, proj_flops(T));
	const KSig *s = &l->sig;
	T->k.slots_adjacent = 0;   /* the slots in the mma's column order: lanes_init's ch, wcol */
	Lanes ln;
	lanes_init(T, &ln, s, 1);   /* head ctaid.y, row block ctaid.z, weight fragments, channel parameters */
	LLVMValueRef hT = ksig_arg(T, s, "state:hT");
	LLVMValueRef first0 = b2f(I, LLVMBuildNot(I->b, state_given(I, ln.h0), ""));
	DmGroup G[DM_GROUPS];
	for (int gi = 0; gi < DM_GROUPS; gi++)
		dm_group_init(T, &ln, s, gi, &G[gi]);
	Loop Lt;
	loop_begin(I, &Lt, ci32(I, 0), ln.L, ci32(I, 1), "t");
	LLVMValueRef t = loop_i(I, &Lt);
	/* the next group's x loaded before this group's work: the step is
	 * latency-bound (the H200 at B = 256 was 2.83x its floor), and each
	 * group's loads waited on the group before it. (All groups' at once:
	 * 64 registers more, and ptxas spills.) */
	LLVMValueRef a[DM_GROUPS][4][4];
	dm_load_a(T, &ln, &G[0], t, a[0]);
	for (int gi = 0; gi < DM_GROUPS; gi++) {
		if (gi + 1 < DM_GROUPS)
			dm_load_a(T, &ln, &G[gi + 1], t, a[gi + 1]);
		/* a group wholly past B does nothing: a test the same in the whole block, so every lane of a
		 * warp meets the mma.sync of a live group (and the kernel has no barrier) */
		IfBlk f;
		if_begin(I, &f, G[gi].live, "group");
		LLVMValueRef acc[MX_MAXPROJ][2][4];
		dm_project(T, &ln, a[gi], acc);
		dm_elements(T, &ln, s, &G[gi], t, acc, first0);
		if_end(I, &f);
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
