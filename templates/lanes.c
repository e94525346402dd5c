/* A thread's place in the kernel (Lanes): its warp, quad and slots, the
 * arguments and parameters it reads, and the helpers that fold code on
 * whether a step lies inside the sequence. */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static LLVMValueRef argv_of(Tmpl *T, const KSig *s, const char *name)
{
	int i = ksig_find(s, name);
	return i < 0 ? NULL : irb_arg(&T->I, i);
}

LLVMValueRef wcol(const Tmpl *T, Irb *I, LLVMValueRef w, LLVMValueRef n8, int nt)
{
	LLVMValueRef base = imul(I, w, ci32(I, 16));
	if (!T->k.slots_adjacent)
		return iadd(I, iadd(I, base, n8), ci32(I, 8 * nt));
	LLVMValueRef pair = imul(I, LLVMBuildLShr(I->b, n8, ci32(I, 1), ""), ci32(I, 4));
	return iadd(I, base, iadd(I, iadd(I, pair, LLVMBuildAnd(I->b, n8, ci32(I, 1), "")), ci32(I, 2 * nt)));
}

void lanes_bind(Tmpl *T, Lanes *ln, const KSig *s)
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
	for (int j = 0; j < T->napj; j++) {
		char a[64];
		snprintf(a, sizeof a, "ws:proj_%s", apj_weight(T, j));
		ln->pws[j] = argv_of(T, s, a);
	}
	ln->reset = argv_of(T, s, "state:reset");
	ln->h0 = argv_of(T, s, "state:h0");
	ln->dcode = argv_of(T, s, "ws:dcode");
	ln->hT = argv_of(T, s, "state:hT");
	ln->dhT = argv_of(T, s, "state:dhT");
	ln->dh0 = argv_of(T, s, "state:dh0");
	if (ln->reset) {   /* the row's marks: a null pointer stays unread (reset_mark) */
		LLVMValueRef at = imul(I, sext64(I, ln->b), sext64(I, ln->L));
		ln->reset_row = LLVMBuildGEP2(I->b, I->i8, ln->reset, &at, 1, "reset_row");
	}
	char a[64];
	for (int p = 0; p < mx->nparam; p++) {
		snprintf(a, sizeof a, "param:%s", mx->param[p].name);
		ln->param[p] = argv_of(T, s, a);
	}
}

void lanes_init(Tmpl *T, Lanes *ln, const KSig *s, int load_weights)
{
	Irb *I = &T->I;
	const Mixer *mx = T->mx;
	lanes_bind(T, ln, s);
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
					if (T->k.gates_half) {   /* exact: bf16 rounds the half to the rounding's half */
						v0 = fmul(I, v0, cf32(I, 0.5));
						v1 = fmul(I, v1, cf32(I, 0.5));
					}
					ln->wfrag[j][ks][nt][r] = pack_bf16x2(I, v0, v1);
				}
			}
		lanes_bias(T, ln, j, hbase);
	}
}

void lanes_bias(Tmpl *T, Lanes *ln, int j, LLVMValueRef hbase)
{
	Irb *I = &T->I;
	LLVMValueRef bias = ln->param[T->mx->proj[T->bdproj[j]].bias];
	CHECK(bias);
	for (int c = 0; c < 4; c++)
		ln->bias[j][c] = ld(I, I->f32, gep_f32(I, bias, sext64(I, iadd(I, hbase, ln->ch[c]))), 4);
}

LLVMValueRef in_seq(Tmpl *T, const Lanes *ln, LLVMValueRef t)
{
	return ln->full ? LLVMConstInt(T->I.i1, 1, 0) : ilt(&T->I, t, ln->L);
}

LLVMValueRef f16_overflow(Irb *I, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildOr(I->b, fgt(I, fabs_(I, a), cf32(I, F16_MAP_MAX)), fgt(I, fabs_(I, b), cf32(I, F16_MAP_MAX)), "");
}

/* body under `cond` as a copy for blocks wholly inside the sequence, built
 * with the Kern flags given (docs_quiet: without the states' accesses,
 * marks_quiet: without the reset marks); the lanes' state is then put back
 * to `start`, where the next copy starts (a body may leave, say, a segment
 * marked as staged) */
static void full_copy(Tmpl *T, Lanes *ln, const Lanes *start, LLVMValueRef cond, const char *name, int docs_quiet,
                      int marks_quiet, void (*body)(void *arg), void *arg)
{
	Irb *I = &T->I;
	IfBlk f;
	if_begin(I, &f, cond, name);
	ln->full = 1;
	int dq = T->k.docs_quiet, mq = T->k.marks_quiet;
	T->k.docs_quiet = dq || docs_quiet;
	T->k.marks_quiet = mq || marks_quiet;
	body(arg);
	T->k.docs_quiet = dq;
	T->k.marks_quiet = mq;
	*ln = *start;
	if_end(I, &f);
}

/* body as it is, under cond */
static void rest_copy(Tmpl *T, LLVMValueRef cond, const char *name, void (*body)(void *arg), void *arg)
{
	IfBlk r;
	if_begin(&T->I, &r, cond, name);
	body(arg);
	if_end(&T->I, &r);
}

void emit_split(Tmpl *T, Lanes *ln, LLVMValueRef in, void (*body)(void *arg), void *arg)
{
	if (!in) {
		body(arg);
		return;
	}
	Lanes start = *ln;
	full_copy(T, ln, &start, in, "full", 0, 0, body, arg);
	rest_copy(T, LLVMBuildNot(T->I.b, in, ""), "part", body, arg);
}

void emit_split_docs(Tmpl *T, Lanes *ln, LLVMValueRef in, LLVMValueRef t0, int ntok, int three,
                     void (*body)(void *arg), void *arg)
{
	Irb *I = &T->I;
	int docs = T->v->docs != 0;
	if (!in || !(docs || (T->v->resets && three))) {
		emit_split(T, ln, in, body, arg);
		return;
	}
	/* a reset, a start or an end is a few tokens in thousands: most copies
	 * run a step with no test per step of what they do not hold */
	LLVMValueRef held = tile_holds(T, ln, t0, ntok, docs ? DOC_START | DOC_END : 1);
	Lanes start = *ln;
	LLVMValueRef quiet = land(I, in, LLVMBuildNot(I->b, held, ""));
	full_copy(T, ln, &start, quiet, docs ? "quiet" : "plain", docs, !docs, body, arg);
	if (!three) {
		rest_copy(T, LLVMBuildNot(I->b, quiet, ""), "events", body, arg);
		return;
	}
	/* and the tiles that hold them a full copy of their own: a block's
	 * tiles are a fixed share of the row, and the block with the most
	 * marks sets the kernel's time */
	full_copy(T, ln, &start, land(I, in, held), "marked", 0, 0, body, arg);
	rest_copy(T, LLVMBuildNot(I->b, in, ""), "part", body, arg);
}
