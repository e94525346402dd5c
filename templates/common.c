/* Building blocks shared by the scan templates (see tmpl.h for the layout). */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Launch *tmpl_launch(Tmpl *T, int fwd, const char *kname, const char *g0, const char *g1,
                    const char *g2, int block, const char *smem)
{
	CHECK(fwd ? T->nfwd < 8 : T->nbwd < 8);
	Launch *l = fwd ? &T->fwd[T->nfwd++] : &T->bwd[T->nbwd++];
	memset(l, 0, sizeof *l);
	snprintf(l->kernel, sizeof l->kernel, "%s_%s", T->kname, kname);
	snprintf(l->grid[0], sizeof l->grid[0], "%s", g0);
	snprintf(l->grid[1], sizeof l->grid[1], "%s", g1);
	snprintf(l->grid[2], sizeof l->grid[2], "%s", g2);
	l->block = block;
	snprintf(l->smem, sizeof l->smem, "%s", smem);
	return l;
}

void tmpl_open(Tmpl *T, Launch *l)
{
	irb_kernel(&T->I, l->kernel, l->sig.ty, l->sig.n, l->block, l->minblocks);
	/* before any memory access: the runtime may launch this kernel while the
	 * one ahead of it on the stream still runs (the manifest's "early") */
	grid_dep_wait(&T->I);
	T->k.threads = l->block;
	T->k.gates_inline = gates_inline(T);
	/* A lane takes 4 adjacent channels where it can: a row's 16 channels
	 * are then 4 lanes x 8 bytes, one full 32-byte sector per store (in the
	 * mma's column order, 2q and 2q+1 of each 8, a store half-fills 8).
	 * Without projections nothing ties a slot to an mma column. With them
	 * the kernels that store rows set slots_adjacent after this (tmpl_fwd_apply,
	 * tmpl_bwd_apply) and permute the projections to match (wcol); the
	 * others keep the mma's order. */
	T->k.slots_adjacent = T->nbdproj == 0;
}

/* The zeroed workspaces of both passes -- the runtime's arena -- cleared
 * by the threads of the forward's first kernel where it uses none of them
 * (the manifest's "clears"), in place of the memset ahead of the forward:
 * a stream operation that the kernel behind it cannot start early against
 * (SAMU at L = 8192: 0.088 -> 0.086-0.087 ms). Every user of the arena
 * runs after this kernel ends (its griddepcontrol.wait). A kernel of its
 * own for it, where the first kernel uses the arena (RG-LRU's scans),
 * measured no faster than the memset. */
void tmpl_clear_args(Tmpl *T, Launch *l)
{
	l->clears = 1;
	ksig_add(T, &l->sig, "zero:base", T->I.gptr);
	ksig_add(T, &l->sig, "zero:words", T->I.i64);
}

/* after tmpl_open: 16-byte stores striding over the grid, then the last
 * 0-3 words (the arena is whole 32-bit words, its base 256-byte aligned) */
void tmpl_clear_emit(Tmpl *T, const Launch *l)
{
	Irb *I = &T->I;
	CHECK(l->clears);
	LLVMValueRef base = ksig_arg(T, &l->sig, "zero:base"), words = ksig_arg(T, &l->sig, "zero:words");
	LLVMValueRef nt = ci64(I, l->block);
	LLVMValueRef gtid = iadd(I, imul(I, sext64(I, ctaid(I, 0)), nt), sext64(I, tid_x(I)));
	LLVMValueRef gsize = imul(I, sext64(I, nctaid(I, 0)), nt);
	LLVMValueRef n16 = LLVMBuildLShr(I->b, words, ci64(I, 2), "");
	Loop L;
	loop_begin(I, &L, gtid, n16, gsize, "clr");
	st(I, LLVMConstNull(LLVMVectorType(I->i32, 4)), gep_f32(I, base, imul(I, loop_i(I, &L), ci64(I, 4))), 16);
	loop_end(I, &L);
	LLVMValueRef w = iadd(I, imul(I, n16, ci64(I, 4)), gtid);
	IfBlk f;
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntSLT, w, words, ""), "clr_tail");
	st(I, ci32(I, 0), gep_f32(I, base, w), 4);
	if_end(I, &f);
}

void ksig_add(Tmpl *T, KSig *s, const char *arg, LLVMTypeRef ty)
{
	(void)T;
	CHECK(s->n < TM_MAXARG);
	snprintf(s->arg[s->n], sizeof s->arg[0], "%s", arg);
	s->ty[s->n++] = ty;
}

int ksig_find(const KSig *s, const char *arg)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->arg[i], arg) == 0)
			return i;
	return -1;
}

LLVMValueRef ksig_arg(Tmpl *T, const KSig *s, const char *arg)
{
	int i = ksig_find(s, arg);
	CHECK(i >= 0);
	return irb_arg(&T->I, i);
}

void ksig_params(Tmpl *T, KSig *s)
{
	char a[64];
	for (int p = 0; p < T->mx->nparam; p++) {
		snprintf(a, sizeof a, "param:%s", T->mx->param[p].name);
		ksig_add(T, s, a, T->I.gptr);
	}
}

void ksig_tok(Tmpl *T, KSig *s)
{
	if (T->ntokval > 0)
		ksig_add(T, s, "ws:tok", T->I.gptr);
}

void ksig_shape(Tmpl *T, KSig *s)
{
	ksig_add(T, s, "i32:L", T->I.i32);
	ksig_add(T, s, "i32:D", T->I.i32);
}

static LLVMValueRef argv_of(Tmpl *T, const KSig *s, const char *name)
{
	int i = ksig_find(s, name);
	return i < 0 ? NULL : irb_arg(&T->I, i);
}

/* 32-bit load of a bf16 pair at element index idx64 (even), zero when invalid */
static LLVMValueRef load_pair(Tmpl *T, LLVMValueRef base, LLVMValueRef idx64, LLVMValueRef valid)
{
	Irb *I = &T->I;
	LLVMValueRef k = LLVMBuildSelect(I->b, valid, idx64, ci64(I, 0), "");
	LLVMValueRef p = gep_bf16(I, base, k);
	LLVMValueRef v = ld(I, I->i32, p, 4);
	return LLVMBuildSelect(I->b, valid, v, ci32(I, 0), "");
}

LLVMValueRef wcol(const Tmpl *T, Irb *I, LLVMValueRef w, LLVMValueRef n8, int nt)
{
	LLVMValueRef base = imul(I, w, ci32(I, 16));
	if (!T->k.slots_adjacent)
		return iadd(I, iadd(I, base, n8), ci32(I, 8 * nt));
	LLVMValueRef pair = imul(I, LLVMBuildLShr(I->b, n8, ci32(I, 1), ""), ci32(I, 4));
	return iadd(I, base, iadd(I, iadd(I, pair, LLVMBuildAnd(I->b, n8, ci32(I, 1), "")), ci32(I, 2 * nt)));
}

void lanes_init(Tmpl *T, Lanes *ln, const KSig *s, int load_weights)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	memset(ln, 0, sizeof *ln);
	ln->wmat_smem = -1;
	ln->seg_off = -1;
	ln->tid = tid_x(I);
	ln->warp = LLVMBuildLShr(I->b, ln->tid, ci32(I, 5), "warp");
	ln->lane = LLVMBuildAnd(I->b, ln->tid, ci32(I, 31), "lane");
	ln->g = LLVMBuildLShr(I->b, ln->lane, ci32(I, 2), "g");
	ln->q = LLVMBuildAnd(I->b, ln->lane, ci32(I, 3), "q");
	ln->quad = LLVMBuildLShr(I->b, ln->warp, ci32(I, 2), "quad");
	ln->w = LLVMBuildAnd(I->b, ln->warp, ci32(I, 3), "w");
	ln->tile = T->k.ticket_thb[0];   /* NULL: the block index, read where used (lane_tile) */
	ln->head = T->k.ticket_thb[1] ? T->k.ticket_thb[1] : ctaid(I, 1);
	ln->b = T->k.ticket_thb[2] ? T->k.ticket_thb[2] : ctaid(I, 2);
	ln->L = argv_of(T, s, "i32:L");
	ln->D = argv_of(T, s, "i32:D");
	ln->x = argv_of(T, s, "x");
	ln->y = argv_of(T, s, "y");
	ln->dy = argv_of(T, s, "dy");
	ln->dx = argv_of(T, s, "dx");
	ln->la_ws = argv_of(T, s, "ws:log_a");
	ln->b_ws = argv_of(T, s, "ws:b");
	ln->tok = argv_of(T, s, "ws:tok");
	char a[64];
	for (int p = 0; p < mx->nparam; p++) {
		snprintf(a, sizeof a, "param:%s", mx->param[p].name);
		ln->param[p] = argv_of(T, s, a);
	}
	/* slot column c is the accumulator's n-tile c >> 1, column 2q + (c & 1),
	 * so its channel is that column's (wcol): 16w + 8*(c>>1) + 2q + (c&1),
	 * or with slots_adjacent 16w + 4q + c; pairs (c, c+1) for even c are adjacent either way */
	for (int c = 0; c < 4; c++)
		ln->ch[c] = T->k.slots_adjacent ? iadd(I, iadd(I, imul(I, ln->w, ci32(I, 16)), imul(I, ln->q, ci32(I, 4))), ci32(I, c))
		                   : iadd(I, iadd(I, imul(I, ln->w, ci32(I, 16)), imul(I, ln->q, ci32(I, 2))),
		                          ci32(I, 8 * (c >> 1) + (c & 1)));
	LLVMValueRef hbase = imul(I, ln->head, ci32(I, 64));
	for (int p = 0; p < mx->nparam; p++) {
		if (!ln->param[p])
			continue;
		if (mx->param[p].kind == PK_CHANNEL)
			for (int c = 0; c < 4; c++)
				ln->chan[p][c] = ld(I, I->f32, gep_f32(I, ln->param[p], sext64(I, iadd(I, hbase, ln->ch[c]))), 4);
		else if (mx->param[p].kind == PK_SCALAR)
			ln->scal[p] = ld(I, I->f32, ln->param[p], 4);
	}
	/* values over parameters alone, once per kernel (slot_env), in a block
	 * every loop below comes after */
	CHECK(T->inv_node);
	size_t ninv = 8 * (size_t)mx->g.len;
	if (!T->k.inv_memo)
		T->k.inv_memo = malloc(ninv * sizeof *T->k.inv_memo);
	CHECK(T->k.inv_memo);
	memset(T->k.inv_memo, 0, ninv * sizeof *T->k.inv_memo);
	ln->hoist = irb_hoist_block(I);
	if (!load_weights)
		return;
	/* gate B fragments: b0 = (k = 16ks + 2q, 2q+1 ; column n = 16w + 8nt + g), b1 = k + 8;
	 * column n is channel wcol(n) */
	for (int j = 0; j < T->nbdproj; j++) {
		const MxProj *pj = &mx->proj[T->bdproj[j]];
		LLVMValueRef W = ln->param[pj->weight];
		CHECK(W);
		LLVMValueRef wbase = imul(I, ln->head, ci32(I, 64 * 64));
		for (int ks = 0; ks < 4; ks++)
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef n = wcol(T, I, ln->w, ln->g, nt);
				for (int r = 0; r < 2; r++) {
					LLVMValueRef k0 = iadd(I, imul(I, ln->q, ci32(I, 2)), ci32(I, 16 * ks + 8 * r));
					LLVMValueRef i0 = iadd(I, wbase, iadd(I, imul(I, k0, ci32(I, 64)), n));
					LLVMValueRef v0 = ld(I, I->f32, gep_f32(I, W, sext64(I, i0)), 4);
					LLVMValueRef v1 = ld(I, I->f32, gep_f32(I, W, sext64(I, iadd(I, i0, ci32(I, 64)))), 4);
					ln->wfrag[j][ks][nt][r] = pack_bf16x2(I, v0, v1);
				}
			}
		LLVMValueRef bias = ln->param[pj->bias];
		CHECK(bias);
		for (int c = 0; c < 4; c++)
			ln->bias[j][c] = ld(I, I->f32, gep_f32(I, bias, sext64(I, iadd(I, hbase, ln->ch[c]))), 4);
	}
}

/* W[k][j] of projection j at row k, 16-byte column chunk c: rows of 128
 * bytes with the chunk index XOR a 3-bit function of k, so that the eight
 * rows an ldmatrix matrix reads (same chunk) fall in eight different bank
 * groups: k mod 8 where rows are consecutive k; with slots_adjacent the transposed
 * projection's rows are k = 2nt + {0, 1, 4, 5, 8, 9, 12, 13} (wcol) as well,
 * and (k0, k2, k1 ^ k3) tells both sets apart */
static LLVMValueRef wmat_at(const Tmpl *T, Lanes *ln, Irb *I, int j, LLVMValueRef k, LLVMValueRef c)
{
	LLVMValueRef f = LLVMBuildAnd(I->b, k, ci32(I, 7), "");
	if (T->k.slots_adjacent) {
		LLVMValueRef k1k3 = LLVMBuildAnd(I->b, LLVMBuildXor(I->b, k, LLVMBuildLShr(I->b, k, ci32(I, 2), ""), ""), ci32(I, 2), "");
		f = LLVMBuildOr(I->b, LLVMBuildAnd(I->b, k, ci32(I, 1), ""),
		                LLVMBuildOr(I->b, LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, k, ci32(I, 1), ""), ci32(I, 2), ""),
		                            imul(I, k1k3, ci32(I, 2)), ""), "");
	}
	LLVMValueRef sw = LLVMBuildXor(I->b, c, f, "");
	return iadd(I, ci32(I, ln->wmat_smem + j * WMAT_BYTES), iadd(I, imul(I, k, ci32(I, 128)), imul(I, sw, ci32(I, 16))));
}

void wmat_stage(Tmpl *T, Lanes *ln, int off)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	ln->wmat_smem = off;
	LLVMTypeRef v4f = LLVMVectorType(I->f32, 4), v4i = LLVMVectorType(I->i32, 4);
	for (int j = 0; j < T->nbdproj; j++) {
		LLVMValueRef W = ln->param[mx->proj[T->bdproj[j]].weight];
		CHECK(W);
		for (int it = 0; it < 512 / T->k.threads; it++) {
			/* chunk e of 8 weights: row k = e / 8, column chunk e % 8 */
			LLVMValueRef e = iadd(I, ln->tid, ci32(I, it * T->k.threads));
			LLVMValueRef k = LLVMBuildLShr(I->b, e, ci32(I, 3), "");
			LLVMValueRef c = LLVMBuildAnd(I->b, e, ci32(I, 7), "");
			LLVMValueRef g = sext64(I, iadd(I, imul(I, ln->head, ci32(I, 4096)), imul(I, e, ci32(I, 8))));
			LLVMValueRef lo = ld(I, v4f, gep_f32(I, W, g), 16);
			LLVMValueRef hi = ld(I, v4f, gep_f32(I, W, iadd(I, g, ci64(I, 4))), 16);
			LLVMValueRef w = LLVMGetUndef(v4i);
			for (int p = 0; p < 4; p++) {
				LLVMValueRef src = p < 2 ? lo : hi;
				LLVMValueRef a = LLVMBuildExtractElement(I->b, src, ci32(I, (2 * p) & 3), "");
				LLVMValueRef b = LLVMBuildExtractElement(I->b, src, ci32(I, (2 * p + 1) & 3), "");
				w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, a, b), ci32(I, p), "");
			}
			if (!T->k.slots_adjacent) {
				st(I, w, smem_ptr(I, wmat_at(T, ln, I, j, k, c)), 16);
				continue;
			}
			/* channel pairs 4h + p of the 16-column group (h = c & 1): column
			 * pair 2h + (p >> 1) of n-tile p & 1 (wcol) */
			LLVMValueRef h8 = imul(I, LLVMBuildAnd(I->b, c, ci32(I, 1), ""), ci32(I, 8));
			LLVMValueRef c0 = LLVMBuildAnd(I->b, c, ci32(I, ~1), "");
			for (int nt = 0; nt < 2; nt++) {
				LLVMValueRef two = LLVMGetUndef(I->v2i32);
				for (int e = 0; e < 2; e++)
					two = LLVMBuildInsertElement(I->b, two, LLVMBuildExtractElement(I->b, w, ci32(I, nt + 2 * e), ""),
					                             ci32(I, e), "");
				LLVMValueRef at = iadd(I, wmat_at(T, ln, I, j, k, iadd(I, c0, ci32(I, nt))), h8);
				st(I, two, smem_ptr(I, at), 8);
			}
		}
	}
	bar_sync(I);
}

/* quad maps [quad][64][2] floats, the segment buffers, then the weights */
static int quad_seg_at(const Tmpl *T) { return T->quads * 64 * 8; }
static int quad_wmat_at(const Tmpl *T, int flags) { return quad_seg_at(T) + T->quads * seg_bytes(T, seg_len(T), flags); }

int quad_smem(const Tmpl *T, int flags) { return quad_wmat_at(T, flags) + wmat_bytes(T); }

void quad_lanes(Tmpl *T, Lanes *ln, const KSig *sig, int segn, int flags)
{
	lanes_init(T, ln, sig, T->k.gates_inline);
	seg_enable(T, ln, quad_seg_at(T), segn, flags);
	if (wmat_bytes(T))
		wmat_stage(T, ln, quad_wmat_at(T, flags));
}

void ldsm_lane(Irb *I, const Lanes *ln, int swap, LLVMValueRef *row, LLVMValueRef *blk)
{
	LLVMValueRef m = LLVMBuildLShr(I->b, ln->lane, ci32(I, 3), "");
	LLVMValueRef hi = LLVMBuildAnd(I->b, m, ci32(I, 1), ""), lo = LLVMBuildLShr(I->b, m, ci32(I, 1), "");
	*row = iadd(I, LLVMBuildAnd(I->b, ln->lane, ci32(I, 7), ""), imul(I, swap ? lo : hi, ci32(I, 8)));
	*blk = swap ? hi : lo;
}

/* byte offset of 16-byte block blk of row row in a staged step's rows */
static LLVMValueRef xs_at(Irb *I, const Lanes *ln, LLVMValueRef row, LLVMValueRef blk)
{
	if (!(ln->seg_flags & SEG_SWZ))
		return iadd(I, imul(I, row, ci32(I, XS_ROW)), imul(I, blk, ci32(I, 16)));
	LLVMValueRef sw = LLVMBuildXor(I->b, blk, LLVMBuildAnd(I->b, row, ci32(I, 7), ""), "");
	return iadd(I, imul(I, row, ci32(I, 128)), imul(I, sw, ci32(I, 16)));
}

LLVMValueRef xs_ldsm_at(Irb *I, const Lanes *ln, int blk0)
{
	LLVMValueRef row, blk;
	ldsm_lane(I, ln, 0, &row, &blk);
	if (!(ln->seg_flags & SEG_SWZ))
		return blk0 ? iadd(I, xs_at(I, ln, row, blk), ci32(I, 16 * blk0)) : xs_at(I, ln, row, blk);
	return xs_at(I, ln, row, iadd(I, blk, ci32(I, blk0)));
}

void wmat_gate_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2])
{
	Irb *I = &T->I;
	/* B[k][n] = W[k][n]: matrix m = (nt, r) = (m >> 1, m & 1) holds rows
	 * k = 16ks + 8r.., columns n = 16w + 8nt.., transposed into (k pairs, n) */
	LLVMValueRef r, blk, d[4];
	ldsm_lane(I, ln, 0, &r, &blk);
	LLVMValueRef k = iadd(I, r, ci32(I, 16 * ks));
	LLVMValueRef c = iadd(I, imul(I, ln->w, ci32(I, 2)), blk);
	ldsm_x4(I, d, wmat_at(T, ln, I, j, k, c), 1);
	for (int e = 0; e < 4; e++)
		b[e >> 1][e & 1] = d[e];
}

int gate_frags_hold(Tmpl *T, Lanes *ln)
{
	int was = ln->wmat_smem;
	if (T->nbdproj == 0 || was < 0)
		return was;
	for (int j = 0; j < T->nbdproj; j++)
		for (int ks = 0; ks < 4; ks++)
			wmat_gate_frags(T, ln, j, ks, ln->wfrag[j][ks]);
	ln->wmat_smem = -1;
	return was;
}

void wmat_dx_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2])
{
	Irb *I = &T->I;
	/* B[jj][k] = W[k][jj] for the warp's own k: matrix m = (nt, r) holds rows
	 * k = 16w + 8nt.. (with slots_adjacent the rows wcol(w, 0..7, nt): the output's
	 * columns then land on the slots' channels), columns jj = 16ks + 8r.. */
	LLVMValueRef r, blk, d[4];
	ldsm_lane(I, ln, 1, &r, &blk);
	LLVMValueRef k;
	if (T->k.slots_adjacent) {   /* rows 8..15 of r are n-tile 1 */
		LLVMValueRef row = wcol(T, I, ln->w, LLVMBuildAnd(I->b, r, ci32(I, 7), ""), 0);
		k = iadd(I, row, imul(I, LLVMBuildLShr(I->b, r, ci32(I, 3), ""), ci32(I, 2)));
	} else {
		k = iadd(I, r, imul(I, ln->w, ci32(I, 16)));
	}
	LLVMValueRef c = iadd(I, blk, ci32(I, 2 * ks));
	ldsm_x4(I, d, wmat_at(T, ln, I, j, k, c), 0);
	for (int e = 0; e < 4; e++)
		b[e >> 1][e & 1] = d[e];
}

LLVMValueRef in_seq(Tmpl *T, const Lanes *ln, LLVMValueRef t)
{
	return ln->full ? LLVMConstInt(T->I.i1, 1, 0) : ilt(&T->I, t, ln->L);
}

LLVMValueRef f16_overflow(Irb *I, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildOr(I->b, fgt(I, fabs_(I, a), cf32(I, F16_MAP_MAX)), fgt(I, fabs_(I, b), cf32(I, F16_MAP_MAX)), "");
}

void emit_split(Tmpl *T, Lanes *ln, LLVMValueRef in, void (*body)(void *arg), void *arg)
{
	Irb *I = &T->I;
	if (!in) {
		body(arg);
		return;
	}
	/* the second copy starts from the lanes' state the first one did (a
	 * body may leave, say, a segment marked as staged) */
	Lanes start = *ln;
	IfBlk full, part;
	if_begin(I, &full, in, "full");
	ln->full = 1;
	body(arg);
	*ln = start;
	if_end(I, &full);
	if_begin(I, &part, LLVMBuildNot(I->b, in, ""), "part");
	body(arg);
	if_end(I, &part);
}

void step_rows(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i)
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		LLVMValueRef row = iadd(I, ln->g, ci32(I, 8 * r));
		st->t[r] = iadd(I, gb, iadd(I, imul(I, row, ci32(I, T->chunk)), i));
		st->valid[r] = in_seq(T, ln, st->t[r]);
	}
}

LLVMValueRef *param_vals(Tmpl *T, Lanes *ln, int s, LLVMValueRef *pv)
{
	for (int p = 0; p < T->mx->nparam; p++)
		pv[p] = T->mx->param[p].kind == PK_CHANNEL ? ln->chan[p][slot_c(s)] : ln->scal[p];
	return pv;
}

EmitEnv slot_env(Tmpl *T, Lanes *ln, const Step *st, int s, LLVMValueRef *pv)
{
	EmitEnv e = { .x = st->x[s], .first = st->first[s], .param = param_vals(T, ln, s, pv),
	              .proj = st->proj[s], .tok = st->tok[slot_r(s)] };
	if (ln->hoist) {
		size_t n = (size_t)T->mx->g.len;
		e.inv_node = T->inv_node;
		e.inv = T->k.inv_memo + (size_t)slot_c(s) * n;
		e.inv_l2e = T->k.inv_memo + (size_t)(4 + slot_c(s)) * n;
		e.hoist = ln->hoist;
	}
	return e;
}

LLVMValueRef slot_index(Tmpl *T, Lanes *ln, Step *st, int s)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), st->t[slot_r(s)]);
	LLVMValueRef col = iadd(I, imul(I, ln->head, ci32(I, 64)), ln->ch[slot_c(s)]);
	return iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)), sext64(I, col));
}

/* the value slot (r, c) stores: v, plus acc's element for the same channel
 * (n-tile c >> 1, element 2r + (c & 1)) where given */
static LLVMValueRef slot_out(Irb *I, LLVMValueRef v[TM_SLOTS], LLVMValueRef acc[2][4], int r, int c)
{
	return acc ? fadd(I, v[r * 4 + c], acc[c >> 1][2 * r + (c & 1)]) : v[r * 4 + c];
}

void store_slots(Tmpl *T, Lanes *ln, Step *st_, LLVMValueRef out, LLVMValueRef v[TM_SLOTS], LLVMValueRef acc[2][4])
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		if (T->k.slots_adjacent) {   /* the row's four channels are adjacent: one 8-byte store */
			LLVMValueRef w = LLVMGetUndef(I->v2i32), u[4];
			for (int c = 0; c < 4; c++)
				u[c] = slot_out(I, v, acc, r, c);
			for (int e = 0; e < 2; e++)
				w = LLVMBuildInsertElement(I->b, w, pack_bf16x2(I, u[2 * e], u[2 * e + 1]), ci32(I, e), "");
			IfBlk f;
			if_begin(I, &f, st_->valid[r], "store");
			st(I, w, gep_bf16(I, out, slot_index(T, ln, st_, r * 4)), 8);
			if_end(I, &f);
			continue;
		}
		for (int nt = 0; nt < 2; nt++) {   /* the mma's order: a pair per n-tile */
			LLVMValueRef v0 = slot_out(I, v, acc, r, 2 * nt), v1 = slot_out(I, v, acc, r, 2 * nt + 1);
			IfBlk f;
			if_begin(I, &f, st_->valid[r], "store");
			st(I, pack_bf16x2(I, v0, v1), gep_bf16(I, out, slot_index(T, ln, st_, r * 4 + 2 * nt)), 4);
			if_end(I, &f);
		}
	}
}

/* index of x[b][t][head*64 + k] */
static LLVMValueRef xidx(Tmpl *T, Lanes *ln, LLVMValueRef t, LLVMValueRef k)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), t);
	return iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), k)));
}

/* byte offset of (row, col) in a staged buffer: padded rows or swizzled blocks */
static LLVMValueRef xs_off(Irb *I, const Lanes *ln, LLVMValueRef row, LLVMValueRef col)
{
	if (ln->seg_flags & SEG_SWZ)
		return iadd(I, xs_at(I, ln, row, LLVMBuildLShr(I->b, col, ci32(I, 3), "")),
		            imul(I, LLVMBuildAnd(I->b, col, ci32(I, 7), ""), ci32(I, 2)));
	return iadd(I, imul(I, row, ci32(I, XS_ROW)), imul(I, col, ci32(I, 2)));
}

static LLVMValueRef xs_pair(Tmpl *T, const Lanes *ln, LLVMValueRef base, LLVMValueRef row, LLVMValueRef col)
{
	Irb *I = &T->I;
	return ld(I, I->i32, smem_ptr(I, iadd(I, base, xs_off(I, ln, row, col))), 4);
}

/* the bf16 of the lane's four slots of a staged row, as pairs (ch[0], ch[1])
 * and (ch[2], ch[3]): with slots_adjacent they are four adjacent channels, 8 aligned
 * bytes (rows of 144 bytes, or 16-byte blocks swizzled whole), read by one
 * 8-byte load instead of two */
static void xs_slots(Tmpl *T, const Lanes *ln, LLVMValueRef base, LLVMValueRef row, LLVMValueRef pr[2])
{
	Irb *I = &T->I;
	if (!T->k.slots_adjacent) {
		for (int nt = 0; nt < 2; nt++)
			pr[nt] = xs_pair(T, ln, base, row, ln->ch[2 * nt]);
		return;
	}
	LLVMValueRef v = ld(I, LLVMVectorType(I->i32, 2), smem_ptr(I, iadd(I, base, xs_off(I, ln, row, ln->ch[0]))), 8);
	for (int nt = 0; nt < 2; nt++)
		pr[nt] = LLVMBuildExtractElement(I->b, v, ci32(I, nt), "");
}

/* per step: [x rows][dy rows][16 x nz token values], each part present by flags */
static int seg_part(const Tmpl *T, int flags, int part)
{
	int off = 0;
	if (part == SEG_X) return off;
	int buf = flags & SEG_SWZ ? 16 * 128 : XS_BUF;
	off += flags & SEG_X ? buf : 0;
	if (part == SEG_DY) return off;
	off += flags & SEG_DY ? buf : 0;
	if (part == 0) return (off + 16 * T->ntokval * 4 + 15) & ~15;   /* the whole step */
	return off;                                                  /* token values */
}

int seg_bytes(const Tmpl *T, int n, int flags) { return n * seg_part(T, flags, 0); }
int seg_len(const Tmpl *T) { return T->chunk < 8 ? T->chunk : 8; }

void seg_enable(Tmpl *T, Lanes *ln, int off, int n, int flags)
{
	ln->seg_off = off;
	ln->seg_n = n;
	ln->seg_flags = flags;
	ln->seg_step = seg_part(T, flags, 0);
}

static void quad_bar(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	if (T->k.threads == 128)
		bar_sync(I);
	else
		bar_named(I, iadd(I, ln->quad, ci32(I, 1)), 128);
}

static LLVMValueRef seg_base(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	return iadd(I, ci32(I, ln->seg_off), imul(I, ln->quad, ci32(I, ln->seg_n * ln->seg_step)));
}

void seg_stage(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i0)
{
	Irb *I = &T->I;
	int n = ln->seg_n;
	LLVMValueRef tq = LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), "");
	LLVMValueRef row = LLVMBuildLShr(I->b, tq, ci32(I, 3), "");
	LLVMValueRef c16 = LLVMBuildAnd(I->b, tq, ci32(I, 7), "");
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef xv[8], dv[8], tv[8];
	CHECK(n <= 8);
	/* token rows: thread tq < 16 * nz loads (row tq / nz, value tq % nz) */
	LLVMValueRef trow = T->ntokval ? LLVMBuildUDiv(I->b, tq, ci32(I, T->ntokval), "") : NULL;
	LLVMValueRef tz = T->ntokval ? LLVMBuildURem(I->b, tq, ci32(I, T->ntokval), "") : NULL;
	LLVMValueRef tl = T->ntokval ? ilt(I, tq, ci32(I, 16 * T->ntokval)) : NULL;
	for (int k = 0; k < n; k++) {
		LLVMValueRef t = iadd(I, gb, iadd(I, imul(I, row, ci32(I, T->chunk)), iadd(I, i0, ci32(I, k))));
		LLVMValueRef valid = in_seq(T, ln, t);
		LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), t);
		LLVMValueRef e = iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)),
		                      sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), imul(I, c16, ci32(I, 8)))));
		e = LLVMBuildSelect(I->b, valid, e, ci64(I, 0), "");
		if (ln->seg_flags & SEG_X)
			xv[k] = LLVMBuildSelect(I->b, valid, ld(I, v4, gep_bf16(I, ln->x, e), 16), LLVMConstNull(v4), "");
		if (ln->seg_flags & SEG_DY)
			dv[k] = LLVMBuildSelect(I->b, valid, ld(I, v4, gep_bf16(I, ln->dy, e), 16), LLVMConstNull(v4), "");
		if (T->ntokval) {
			LLVMValueRef tt = iadd(I, gb, iadd(I, imul(I, trow, ci32(I, T->chunk)), iadd(I, i0, ci32(I, k))));
			LLVMValueRef tvalid = land(I, tl, in_seq(T, ln, tt));
			LLVMValueRef ti = iadd(I, imul(I, sext64(I, LLVMBuildSelect(I->b, tvalid, iadd(I, imul(I, ln->b, ln->L), tt), ci32(I, 0), "")),
			                            ci64(I, T->ntokval)), sext64(I, tz));
			tv[k] = fsel(I, tvalid, ld(I, I->f32, gep_f32(I, ln->tok, ti), 4), cf32(I, 0.0));
		}
	}
	/* the previous segment's readers are done before it is overwritten */
	quad_bar(T, ln);
	LLVMValueRef base = seg_base(T, ln);
	for (int k = 0; k < n; k++) {
		LLVMValueRef sb = iadd(I, base, ci32(I, k * ln->seg_step));
		LLVMValueRef o = xs_at(I, ln, row, c16);
		if (ln->seg_flags & SEG_X)
			st(I, xv[k], smem_ptr(I, iadd(I, sb, o)), 16);
		if (ln->seg_flags & SEG_DY)
			st(I, dv[k], smem_ptr(I, iadd(I, iadd(I, sb, ci32(I, seg_part(T, ln->seg_flags, SEG_DY))), o)), 16);
		if (T->ntokval) {
			IfBlk f;
			if_begin(I, &f, tl, "tokst");
			st(I, tv[k], smem_ptr(I, iadd(I, iadd(I, sb, ci32(I, seg_part(T, ln->seg_flags, SEG_TOK))), imul(I, tq, ci32(I, 4)))), 4);
			if_end(I, &f);
		}
	}
	quad_bar(T, ln);
	ln->seg_i0 = i0;
}

/* for i in [0, C): segments of seg_n steps staged at once (one burst of
 * loads per segment); returns i inside the inner loop */
LLVMValueRef seg_loop_begin(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end)
{
	return seg_loop_begin_n(T, ln, Ls, L, gb, end, 1);
}

/* the same, n steps per trip of the inner loop (the segment a multiple of n) */
LLVMValueRef seg_loop_begin_n(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end, int n)
{
	Irb *I = &T->I;
	CHECK(ln->seg_off >= 0 && end % ln->seg_n == 0 && ln->seg_n % n == 0);
	loop_begin(I, Ls, ci32(I, 0), ci32(I, end), ci32(I, ln->seg_n), "seg");
	LLVMValueRef i0 = loop_i(I, Ls);
	if (ln->seg_keep)
		ln->seg_i0 = i0;
	else
		seg_stage(T, ln, gb, i0);
	loop_begin(I, L, ci32(I, 0), ci32(I, ln->seg_n), ci32(I, n), "i");
	L->unroll = n == 1 ? 2 : 1;
	return iadd(I, i0, loop_i(I, L));
}

void seg_loop_end(Tmpl *T, Loop *Ls, Loop *L)
{
	loop_end(&T->I, L);
	loop_end(&T->I, Ls);
}

LLVMValueRef seg_step_at(Tmpl *T, Lanes *ln, LLVMValueRef i)
{
	Irb *I = &T->I;
	return iadd(I, seg_base(T, ln), imul(I, isub(I, i, ln->seg_i0), ci32(I, ln->seg_step)));
}

void load_dy(Tmpl *T, Lanes *ln, Step *st_, LLVMValueRef dy[TM_SLOTS])
{
	Irb *I = &T->I;
	/* every kernel that reads dy stages it with the step's other inputs */
	CHECK(st_->seg && (ln->seg_flags & SEG_DY));
	LLVMValueRef base = iadd(I, st_->seg, ci32(I, seg_part(T, ln->seg_flags, SEG_DY)));
	for (int r = 0; r < 2; r++) {
		LLVMValueRef pr[2];
		xs_slots(T, ln, base, iadd(I, ln->g, ci32(I, 8 * r)), pr);
		for (int nt = 0; nt < 2; nt++) {
			int s0 = r * 4 + 2 * nt;
			dy[s0] = unpack_bf16_lo(I, pr[nt]);
			dy[s0 + 1] = unpack_bf16_hi(I, pr[nt]);
		}
	}
}

void step_inputs(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i)
{
	Irb *I = &T->I;
	step_rows(T, ln, st, gb, i);
	st->seg = NULL;
	st->xs = NULL;
	if (ln->seg_off >= 0) {
		st->seg = seg_step_at(T, ln, i);
		st->xs = ln->seg_flags & SEG_X ? st->seg : NULL;
	}
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef t = st->t[slot_r(s)];
		st->first[s] = b2f(I, ieq(I, t, ci32(I, 0)));
	}
	/* the row's per-token values: the q lanes of a row read the same words */
	if (T->ntokval > 0 && st->seg) {
		LLVMValueRef tb = iadd(I, st->seg, ci32(I, seg_part(T, ln->seg_flags, SEG_TOK)));
		for (int r = 0; r < 2; r++)
			for (int k = 0; k < T->ntokval; k++) {
				LLVMValueRef o = imul(I, iadd(I, imul(I, iadd(I, ln->g, ci32(I, 8 * r)), ci32(I, T->ntokval)), ci32(I, k)), ci32(I, 4));
				st->tok[r][k] = ld(I, I->f32, smem_ptr(I, iadd(I, tb, o)), 4);
			}
	} else if (T->ntokval > 0) {
		CHECK(ln->tok);
		for (int r = 0; r < 2; r++) {
			LLVMValueRef row = LLVMBuildSelect(I->b, st->valid[r], iadd(I, imul(I, ln->b, ln->L), st->t[r]), ci32(I, 0), "");
			LLVMValueRef base = imul(I, sext64(I, row), ci64(I, T->ntokval));
			for (int k = 0; k < T->ntokval; k++)
				st->tok[r][k] = ld(I, I->f32, gep_f32(I, ln->tok, iadd(I, base, ci64(I, k))), 4);
		}
	}
	/* the slot's own x: pairs (c, c+1) are adjacent channels */
	for (int r = 0; r < 2; r++) {
		LLVMValueRef pr[2];
		if (st->xs)
			xs_slots(T, ln, st->xs, iadd(I, ln->g, ci32(I, 8 * r)), pr);
		else
			for (int nt = 0; nt < 2; nt++)
				pr[nt] = load_pair(T, ln->x, xidx(T, ln, st->t[r], ln->ch[2 * nt]), st->valid[r]);
		for (int nt = 0; nt < 2; nt++) {
			st->x[r * 4 + 2 * nt] = unpack_bf16_lo(I, pr[nt]);
			st->x[r * 4 + 2 * nt + 1] = unpack_bf16_hi(I, pr[nt]);
		}
	}
}

/* the gates of n consecutive steps from row offset i: each projection's
 * weight fragments are read once for all n (ldmatrix is not shared across
 * steps by the compiler where shared stores fall between them) */
void step_gates_n(Tmpl *T, Lanes *ln, Step st[], int n, LLVMValueRef gb, LLVMValueRef i, int need_proj)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	CHECK(n >= 1 && n <= 2);
	for (int k = 0; k < n; k++)
		step_inputs(T, ln, &st[k], gb, iadd(I, i, ci32(I, k)));
	int fused = T->k.gates_inline || need_proj;
	if (fused && T->nbdproj > 0) {
		/* A fragments of 16 rows x 64 input channels, four k-steps */
		/* every kernel that runs the projections stages x */
		LLVMValueRef A[2][4][4];
		for (int k = 0; k < n; k++) {
			CHECK(st[k].xs);
			/* one ldmatrix per k-step: matrix m = rows 8(m&1).., columns 16ks + 8(m>>1).. */
			LLVMValueRef ro = iadd(I, st[k].xs, xs_ldsm_at(I, ln, 0));
			for (int ks = 0; ks < 4; ks++)
				ldsm_x4(I, A[k][ks], ln->seg_flags & SEG_SWZ ? iadd(I, st[k].xs, xs_ldsm_at(I, ln, 2 * ks))
				                                             : iadd(I, ro, ci32(I, 32 * ks)), 0);
		}
		for (int j = 0; j < T->nbdproj; j++) {
			LLVMValueRef wf[4][2][2];   /* [ks][nt][r] */
			for (int ks = 0; ks < 4; ks++)
				if (ln->wmat_smem >= 0)
					wmat_gate_frags(T, ln, j, ks, wf[ks]);
				else
					memcpy(wf[ks], ln->wfrag[j][ks], sizeof wf[ks]);
			for (int k = 0; k < n; k++)
				for (int nt = 0; nt < 2; nt++) {
					LLVMValueRef acc[4] = {
						ln->bias[j][2 * nt], ln->bias[j][2 * nt + 1],
						ln->bias[j][2 * nt], ln->bias[j][2 * nt + 1] };
					for (int ks = 0; ks < 4; ks++) {
						LLVMValueRef d[4];
						LLVMValueRef bfr[2] = { wf[ks][nt][0], wf[ks][nt][1] };
						mma_bf16(I, d, A[k][ks], bfr, acc);
						memcpy(acc, d, sizeof acc);
					}
					/* c0: (row g, ch 2q) c1: (g, 2q+1) c2: (g+8, 2q) c3: (g+8, 2q+1) */
					for (int e = 0; e < 4; e++) {
						int r = e >> 1, c = 2 * nt + (e & 1);
						st[k].proj[r * 4 + c][T->bdproj[j]] = acc[e];
					}
				}
		}
	}
	for (int k = 0; k < n; k++)
		for (int s = 0; s < TM_SLOTS; s++) {
			Step *sp = &st[k];
			LLVMValueRef valid = sp->valid[slot_r(s)];
			if (fused) {
				LLVMValueRef pv[MX_MAXPARAM] = { 0 };
				EmitEnv env = slot_env(T, ln, sp, s, pv);
				LLVMValueRef *memo = calloc((size_t)mx->g.len, sizeof *memo);
				CHECK(memo);
				sp->log_a[s] = emit_expr(I, &mx->g, T->e_log_a, &env, memo);
				sp->bb[s] = emit_expr(I, &mx->g, T->e_b, &env, memo);
				/* the exp m = sqrtb(1 - exp(2 log_a)) took: one ex2 */
				sp->a[s] = emit_exp(I, &mx->g, T->e_log_a, &env, memo);
				free(memo);
			} else {
				LLVMValueRef idx = LLVMBuildSelect(I->b, valid, slot_index(T, ln, sp, s), ci64(I, 0), "");
				sp->log_a[s] = ld(I, I->f32, gep_f32(I, ln->la_ws, idx), 4);
				sp->bb[s] = ld(I, I->f32, gep_f32(I, ln->b_ws, idx), 4);
				sp->a[s] = f_exp(I, sp->log_a[s]);
			}
			/* a reset cuts the carry (a*h_prev dropped); rows past L are identities */
			LLVMValueRef isfirst = LLVMBuildFCmp(I->b, LLVMRealONE, sp->first[s], cf32(I, 0.0), "");
			LLVMValueRef ae = fsel(I, isfirst, cf32(I, 0.0), sp->a[s]);
			sp->a_eff[s] = fsel(I, valid, ae, cf32(I, 1.0));
			sp->b_eff[s] = fsel(I, valid, sp->bb[s], cf32(I, 0.0));
		}
}

void step_gates(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i, int need_proj)
{
	step_gates_n(T, ln, st, 1, gb, i, need_proj);
}

/* Quad maps to shared memory [quad][64][2] at offset 0 (lanes g == 0 hold
 * each channel once), then a block barrier. */
void quad_publish(Tmpl *T, Lanes *ln, Var qA[4], Var qB[4])
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, ieq(I, ln->g, ci32(I, 0)), "publish");
	for (int c = 0; c < 4; c++) {
		LLVMValueRef off = imul(I, iadd(I, imul(I, ln->quad, ci32(I, 64)), ln->ch[c]), ci32(I, 8));
		st(I, var_get(I, qA[c]), smem_ptr(I, off), 4);
		st(I, var_get(I, qB[c]), smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
	}
	if_end(I, &f);
	bar_sync(I);
}

LLVMValueRef tile_chan(Tmpl *T, const Lanes *ln, LLVMValueRef r, LLVMValueRef n, LLVMValueRef ch)
{
	Irb *I = &T->I;
	LLVMValueRef row = iadd(I, imul(I, ln->b, n), r);
	return iadd(I, imul(I, sext64(I, row), sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), ch)));
}

void quads_tile_map(Tmpl *T, LLVMValueRef ch, LLVMValueRef *A, LLVMValueRef *B)
{
	Irb *I = &T->I;
	*A = cf32(I, 1.0);
	*B = cf32(I, 0.0);
	for (int qd = 0; qd < T->quads; qd++) {
		LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ch), ci32(I, 8));
		LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
		LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
		*B = fadd(I, fmul(I, *B, a), b);
		*A = fmul(I, *A, a);
	}
}

void maps_init(Tmpl *T, Maps *m, const char *name)
{
	Irb *I = &T->I;
	for (int s = 0; s < TM_SLOTS; s++) {
		m->A[s] = var_init(I, cf32(I, 1.0), name);
		m->B[s] = var_init(I, cf32(I, 0.0), name);
	}
}

void maps_push_fwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef b)
{
	Irb *I = &T->I;
	var_set(I, m->A[s], fmul(I, var_get(I, m->A[s]), a));
	var_set(I, m->B[s], fadd(I, fmul(I, var_get(I, m->B[s]), a), b));
}

/* Forward maps compose as (A1,B1) then (A2,B2) = (A1 A2, B1 A2 + B2).
 * Chunk k of a group lives in slot row r = k / 8 of lane g = k % 8 (same q). */
void warp_scan_fwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4])
{
	Irb *I = &T->I;
	LLVMValueRef l7 = iadd(I, ci32(I, 28), ln->q);
	LLVMValueRef g0 = ieq(I, ln->g, ci32(I, 0));
	for (int c = 0; c < 4; c++) {
		LLVMValueRef A[2], B[2];
		for (int r = 0; r < 2; r++) {
			A[r] = var_get(I, m->A[r * 4 + c]);
			B[r] = var_get(I, m->B[r * 4 + c]);
			/* inclusive scan over g within the half: shuffles by 4, 8, 16 lanes */
			for (int d = 1; d < 8; d <<= 1) {
				LLVMValueRef pA = shfl_up_f(I, A[r], 4 * d);
				LLVMValueRef pB = shfl_up_f(I, B[r], 4 * d);
				LLVMValueRef ok = ige(I, ln->g, ci32(I, d));
				LLVMValueRef nA = fmul(I, pA, A[r]);
				LLVMValueRef nB = fadd(I, fmul(I, pB, A[r]), B[r]);
				A[r] = fsel(I, ok, nA, A[r]);
				B[r] = fsel(I, ok, nB, B[r]);
			}
		}
		/* half 0's total (lane g = 7) prefixes every chunk of half 1 */
		LLVMValueRef t0A = shfl_idx_f(I, A[0], l7), t0B = shfl_idx_f(I, B[0], l7);
		LLVMValueRef B1 = fadd(I, fmul(I, t0B, A[1]), B[1]);
		LLVMValueRef A1 = fmul(I, t0A, A[1]);
		totA[c] = shfl_idx_f(I, A1, l7);
		totB[c] = shfl_idx_f(I, B1, l7);
		/* exclusive: the inclusive value of the previous chunk */
		LLVMValueRef eA0 = shfl_up_f(I, A[0], 4), eB0 = shfl_up_f(I, B[0], 4);
		LLVMValueRef eA1 = shfl_up_f(I, A1, 4), eB1 = shfl_up_f(I, B1, 4);
		var_set(I, m->A[c], fsel(I, g0, cf32(I, 1.0), eA0));
		var_set(I, m->B[c], fsel(I, g0, cf32(I, 0.0), eB0));
		var_set(I, m->A[4 + c], fsel(I, g0, t0A, eA1));
		var_set(I, m->B[4 + c], fsel(I, g0, t0B, eB1));
	}
}

/* Adjoint maps u -> M u + N compose right to left: the map of chunks k..15 is
 * F_k o F_{k+1} o ... ; (F o G) = (M_F M_G, M_F N_G + N_F). On return slot
 * (r, c) holds the map of the chunks after its own (identity for chunk 15)
 * and tot the map of the whole group. */
void warp_scan_bwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4])
{
	Irb *I = &T->I;
	LLVMValueRef l0 = ln->q;               /* lane of g = 0 */
	LLVMValueRef g7 = ieq(I, ln->g, ci32(I, 7));
	for (int c = 0; c < 4; c++) {
		LLVMValueRef A[2], B[2];
		for (int r = 0; r < 2; r++) {
			A[r] = var_get(I, m->A[r * 4 + c]);
			B[r] = var_get(I, m->B[r * 4 + c]);
			/* inclusive suffix over g within the half: S_g = F_g o S_{g+d} */
			for (int d = 1; d < 8; d <<= 1) {
				LLVMValueRef nA_ = shfl_down_f(I, A[r], 4 * d);
				LLVMValueRef nB_ = shfl_down_f(I, B[r], 4 * d);
				LLVMValueRef ok = ilt(I, ln->g, ci32(I, 8 - d));
				LLVMValueRef cA = fmul(I, A[r], nA_);
				LLVMValueRef cB = fadd(I, fmul(I, A[r], nB_), B[r]);
				A[r] = fsel(I, ok, cA, A[r]);
				B[r] = fsel(I, ok, cB, B[r]);
			}
		}
		/* half 1's total (chunk 8, lane g = 0) follows every chunk of half 0 */
		LLVMValueRef t1A = shfl_idx_f(I, A[1], l0), t1B = shfl_idx_f(I, B[1], l0);
		LLVMValueRef B0 = fadd(I, fmul(I, A[0], t1B), B[0]);
		LLVMValueRef A0 = fmul(I, A[0], t1A);
		totA[c] = shfl_idx_f(I, A0, l0);
		totB[c] = shfl_idx_f(I, B0, l0);
		/* exclusive: the inclusive suffix of the next chunk */
		LLVMValueRef xA0 = shfl_down_f(I, A0, 4), xB0 = shfl_down_f(I, B0, 4);
		LLVMValueRef xA1 = shfl_down_f(I, A[1], 4), xB1 = shfl_down_f(I, B[1], 4);
		var_set(I, m->A[c], fsel(I, g7, t1A, xA0));
		var_set(I, m->B[c], fsel(I, g7, t1B, xB0));
		var_set(I, m->A[4 + c], fsel(I, g7, cf32(I, 1.0), xA1));
		var_set(I, m->B[4 + c], fsel(I, g7, cf32(I, 0.0), xB1));
	}
}
