/* param_reduce: the per-block partials of every parameter gradient summed
 * in a fixed order, so every run gives the same bits. */
#include "tmpl.h"
#include "diag.h"
#include <string.h>

void part_map(const Tmpl *T, PartMap *pm)
{
	memset(pm, 0, sizeof *pm);
	for (int p = 0; p < T->mx->nparam; p++) {
		pm->cidx[p] = pm->sidx[p] = -1;
		if (T->mx->param[p].kind == PK_CHANNEL)
			pm->cidx[p] = pm->nchan++;
		else if (T->mx->param[p].kind == PK_SCALAR)
			pm->sidx[p] = pm->nscal++;
	}
}

/* param_reduce sums the per-block partials of every parameter gradient in
 * a fixed order: each parameter has its range of blocks (pr_kind), whose
 * threads cover its elements. */
/* A scalar's partials (every block and head of bwd_apply, every warp of
 * tok_bwd) summed by the 256 threads of its one block (mine): strided
 * sums, then a tree in shared memory -- an order fixed by the shape. */
static void scalar_reduce(Tmpl *T, const KSig *sig, const PartMap *pm, int p, LLVMValueRef mine, LLVMValueRef out,
                          LLVMValueRef nslot)
{
	Irb *I = &T->I;
	LLVMValueRef tid = tid_x(I);
	IfBlk f;
	if_begin(I, &f, mine, "scal");
	Var acc = var_init(I, cf32(I, 0.0), "acc");
	for (int src = 0; src < 1 + (T->ntokval > 0 && !tok_fused(T)); src++) {
		LLVMValueRef base = ksig_arg(T, sig, src ? "ws:part_tscal" : "ws:part_scal");
		LLVMValueRef n = src ? ksig_arg(T, sig, "i32:NTB*8") : nslot;
		Loop L;
		loop_begin(I, &L, tid, n, ci32(I, 256), "s");
		LLVMValueRef k = iadd(I, imul(I, sext64(I, loop_i(I, &L)), ci64(I, pm->nscal)), ci64(I, pm->sidx[p]));
		var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, base, k), 4)));
		loop_end(I, &L);
	}
	LLVMValueRef me = smem_ptr(I, imul(I, tid, ci32(I, 4)));
	st(I, var_get(I, acc), me, 4);
	bar_sync(I);
	for (int w = 128; w >= 1; w >>= 1) {
		IfBlk g;
		if_begin(I, &g, ilt(I, tid, ci32(I, w)), "tree");
		LLVMValueRef o = ld(I, I->f32, smem_ptr(I, imul(I, iadd(I, tid, ci32(I, w)), ci32(I, 4))), 4);
		st(I, fadd(I, ld(I, I->f32, me, 4), o), me, 4);
		if_end(I, &g);
		bar_sync(I);
	}
	IfBlk g;
	if_begin(I, &g, ieq(I, tid, ci32(I, 0)), "out");
	st(I, ld(I, I->f32, me, 4), out, 4);
	if_end(I, &g);
	if_end(I, &f);
}

/* the blocks of parameter p's range in param_reduce's grid: a scalar's
 * one, a channel vector's one per 256 channels, a weight's one per 256 of
 * its 64 D entries; a weight no projection uses has no gradient path and
 * no partials, but a range of a weight's size all the same, which writes
 * its gradient's zeros (PR_ZERO) */
enum { PR_ZERO, PR_SCALAR, PR_CHANNEL, PR_WEIGHT };
static int pr_kind(const Tmpl *T, int p)
{
	const Mixer *mx = T->mx;
	if (mx->param[p].kind == PK_SCALAR)
		return PR_SCALAR;
	if (mx->param[p].kind != PK_BLOCKDIAG)
		return PR_CHANNEL;
	for (int k = 0; k < bd_count(T); k++)
		if (mx->proj[bd_proj(T, k)].weight == p)
			return PR_WEIGHT;
	return PR_ZERO;
}

/* a weight's values: H blocks of 64 x 64, or D K where the projections run apart */
static LLVMValueRef weight_values(Tmpl *T, LLVMValueRef H, LLVMValueRef D)
{
	Irb *I = &T->I;
	return T->napj ? imul(I, D, ci32(I, T->mx->k)) : imul(I, H, ci32(I, 4096));
}

void tmpl_param_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	Mixer *mx = (Mixer *)T->mx;
	PartMap pm;
	part_map(T, &pm);
	/* one 1-D grid of the parameters' block ranges in mixer order: a grid
	 * of 256 blocks per parameter, most of them idle, cost its launch a
	 * few microseconds */
	int cnt[4] = { 0 };
	for (int p = 0; p < mx->nparam; p++)
		cnt[pr_kind(T, p)]++;
	if (mx->nparam == 0)
		return;   /* no gradient to sum: a launch of no blocks could not run */
	/* a weight is [D/K][K][K]: D K values (K = 64 but where the projections run apart) */
	int kw = T->napj ? mx->k : 64;
	char g0[64];
	snprintf(g0, sizeof g0, "%d*cdiv(D*%d,256)+%d*cdiv(D,256)+%d", cnt[PR_WEIGHT] + cnt[PR_ZERO], kw, cnt[PR_CHANNEL],
	         cnt[PR_SCALAR]);
	Launch *l = tmpl_launch(T, 0, "param_reduce", g0, "1", "1", 256, "1024");
	char a[64];
	for (int p = 0; p < mx->nparam; p++) {
		snprintf(a, sizeof a, "grad:%s", mx->param[p].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	for (int j = 0; j < bd_count(T); j++) {
		snprintf(a, sizeof a, "ws:part_%s", mx->param[mx->proj[bd_proj(T, j)].weight].name);
		ksig_add(T, &l->sig, a, I->gptr);
	}
	ksig_add(T, &l->sig, "ws:part_chan", I->gptr);
	ksig_add(T, &l->sig, "ws:part_scal", I->gptr);
	if (T->ntokval > 0)
		ksig_add(T, &l->sig, "ws:part_tchan", I->gptr);
	if (T->ntokval > 0 && !tok_fused(T)) {
		ksig_add(T, &l->sig, "ws:part_tscal", I->gptr);
		ksig_add(T, &l->sig, "i32:NXB", I->i32);
		ksig_add(T, &l->sig, "i32:NTB*8", I->i32);
	}
	ksig_add(T, &l->sig, "i32:G", I->i32);
	if (T->nbdproj > 0)
		ksig_add(T, &l->sig, "i32:GP", I->i32);   /* weight partials: one slot per pair of bwd_apply clusters */
	if (T->napj > 0)
		ksig_add(T, &l->sig, "i32:GW", I->i32);   /* or one per slab of proj_dw's rows */
	ksig_add(T, &l->sig, "i32:B", I->i32);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	tmpl_open(T, l);
	LLVMValueRef G = ksig_arg(T, &l->sig, "i32:G");
	LLVMValueRef Bn = ksig_arg(T, &l->sig, "i32:B");
	LLVMValueRef D = ksig_arg(T, &l->sig, "i32:D");
	LLVMValueRef H = idiv(I, D, ci32(I, 64));
	LLVMValueRef nslot = imul(I, G, Bn);
	LLVMValueRef nbc = idiv(I, iadd(I, D, ci32(I, 255)), ci32(I, 256));
	LLVMValueRef nbw = idiv(I, iadd(I, imul(I, D, ci32(I, kw)), ci32(I, 255)), ci32(I, 256));
	LLVMValueRef nb[4] = { nbw, ci32(I, 1), nbc, nbw };   /* by kind: PR_ZERO's is a weight's */
	LLVMValueRef first = ci32(I, 0);   /* the range's first block */
	for (int p = 0; p < mx->nparam; p++) {
		int kind = pr_kind(T, p);
		LLVMValueRef rb = isub(I, ctaid(I, 0), first);   /* the block within the range */
		LLVMValueRef mine = land(I, ige(I, rb, ci32(I, 0)), ilt(I, rb, nb[kind]));
		LLVMValueRef e = iadd(I, imul(I, rb, ci32(I, 256)), tid_x(I));
		first = iadd(I, first, nb[kind]);
		LLVMValueRef out = ksig_arg(T, &l->sig, (snprintf(a, sizeof a, "grad:%s", mx->param[p].name), a));
		if (kind == PR_ZERO) {
			IfBlk z;
			if_begin(I, &z, land(I, mine, ilt(I, e, weight_values(T, H, D))), "zero");
			st(I, cf32(I, 0.0), gep_f32(I, out, sext64(I, e)), 4);
			if_end(I, &z);
			continue;
		}
		if (kind == PR_SCALAR) {
			scalar_reduce(T, &l->sig, &pm, p, mine, out, imul(I, nslot, H));
			continue;
		}
		LLVMValueRef src = NULL, n = NULL, stride = NULL, off = NULL, ns = nslot;
		if (kind == PR_WEIGHT) {
			snprintf(a, sizeof a, "ws:part_%s", mx->param[p].name);
			src = ksig_arg(T, &l->sig, a);
			n = weight_values(T, H, D);
			stride = n;
			off = ci32(I, 0);
			ns = T->napj ? ksig_arg(T, &l->sig, "i32:GW") : imul(I, ksig_arg(T, &l->sig, "i32:GP"), Bn);
		} else {
			src = ksig_arg(T, &l->sig, "ws:part_chan");
			n = D;
			stride = imul(I, D, ci32(I, pm.nchan));
			off = imul(I, D, ci32(I, pm.cidx[p]));
		}
		IfBlk f;
		if_begin(I, &f, land(I, mine, ilt(I, e, n)), "p");
		Var acc = var_init(I, cf32(I, 0.0), "acc");
		Loop L;
		loop_begin(I, &L, ci32(I, 0), ns, ci32(I, 1), "s");
		LLVMValueRef sbase = iadd(I, imul(I, sext64(I, loop_i(I, &L)), sext64(I, stride)), sext64(I, off));
		var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, src, iadd(I, sbase, sext64(I, e))), 4)));
		loop_end(I, &L);
		if (T->ntokval > 0) {
			/* a token projection's weight: tok_dx's partials, or bwd_apply's
			 * (tok_tail_flush: a slot per block, as part_chan) */
			int j = -1;
			for (int k = 0; k < T->ntokproj; k++)
				if (mx->proj[T->tokproj[k]].weight == p)
					j = k;
			if (mx->param[p].kind == PK_CHANNEL && j >= 0) {
				LLVMValueRef tsrc = ksig_arg(T, &l->sig, "ws:part_tchan");
				Loop Lq;
				loop_begin(I, &Lq, ci32(I, 0), tok_fused(T) ? nslot : ksig_arg(T, &l->sig, "i32:NXB"), ci32(I, 1), "ts");
				LLVMValueRef row = iadd(I, imul(I, loop_i(I, &Lq), ci32(I, T->ntokproj)), ci32(I, j));
				LLVMValueRef k = iadd(I, imul(I, sext64(I, row), sext64(I, D)), sext64(I, e));
				var_set(I, acc, fadd(I, var_get(I, acc), ld(I, I->f32, gep_f32(I, tsrc, k), 4)));
				loop_end(I, &Lq);
			}
		}
		st(I, var_get(I, acc), gep_f32(I, out, sext64(I, e)), 4);
		if_end(I, &f);
	}
	irb_ret(I);
}
