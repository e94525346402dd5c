/* Template setup: geometry of a variant, the derivative graph, the plan.
 *
 *   recur gen lua/variants/all.lua -o out/ptx      generate every variant
 *   recur verify --dir out/ptx                     check each on the GPU
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

void tmpl_setup(Tmpl *T, Mixer *mx, const Variant *v)
{
	memset(T, 0, sizeof *T);
	T->mx = mx;
	T->v = v;
	T->C = v->chunk;
	T->P = v->prefix;
	/* at most 2 quads (256 threads) per block, so a lane may use up to 255
	 * registers for its weight fragments, accumulators and maps without
	 * spilling; larger prefixes compose several groups per quad in order */
	T->TW = T->P / 16 < 2 ? T->P / 16 : 2;
	T->GQ = T->P / (16 * T->TW);
	T->S = T->C < 8 ? T->C : 8;   /* backward segment: h of S steps kept in shared memory */
	CHECK(T->P == 16 * T->TW * T->GQ);
	for (int j = 0; j < mx->nproj; j++)
		if (mx->proj[j].kind == PJ_BLOCKDIAG)
			T->bd[T->nbd++] = j;
	snprintf(T->prefix, sizeof T->prefix, "%s", mx->name);
}

/* The adjoints the backward needs, derived once per variant from the
 * mixer's own expressions: seeds are d(loss)/d(log_a), d(loss)/d(b) at the
 * recurrence and d(loss)/d(y) at the output. */
static void derive(Tmpl *T, ExGraph *g)
{
	const Mixer *mx = T->mx;
	int leaves[2 + MX_MAXPROJ + MX_MAXPARAM], grads[2 + MX_MAXPROJ + MX_MAXPARAM];
	int n = 0;
	leaves[n++] = ex_leaf(g, EX_X, 0);
	leaves[n++] = ex_leaf(g, EX_H, 0);
	for (int j = 0; j < mx->nproj; j++)
		leaves[n++] = ex_leaf(g, EX_PROJ, j);
	for (int p = 0; p < mx->nparam; p++)
		leaves[n++] = ex_leaf(g, EX_PARAM, p);
	for (int k = 0; k < 3; k++)
		T->seed[k] = ex_leaf(g, EX_SEED, k);
	int outs[3] = { mx->log_a, mx->b, mx->y };
	ex_grad(g, 3, outs, T->seed, n, leaves, grads);
	n = 0;
	T->g_x = grads[n++];
	T->g_h = grads[n++];
	for (int j = 0; j < mx->nproj; j++)
		T->g_proj[j] = grads[n++];
	for (int p = 0; p < mx->nparam; p++)
		T->g_param[p] = grads[n++];
}

static void add_ws(Tmpl *T, const char *name, const char *bytes, const char *life, int zero)
{
	CHECK(T->nws < 16);
	Workspace *w = &T->ws[T->nws++];
	snprintf(w->name, sizeof w->name, "%s", name);
	snprintf(w->bytes, sizeof w->bytes, "%s", bytes);
	w->life = life;
	w->zero = zero;
}

void tmpl_build(Tmpl *T, LLVMContextRef ctx, LLVMModuleRef mod)
{
	irb_init(&T->I, ctx, mod);
	/* the derivative graph grows the mixer's graph: work on the caller's copy */
	derive(T, &T->mx->g);
	add_ws(T, "aggA", "B*NT*D*4", "forward", 0);
	add_ws(T, "aggB", "B*NT*D*4", "forward", 0);
	add_ws(T, "carry", "B*NT*D*4", "forward", 0);
	add_ws(T, "ckpt", "B*NG*D*4", "saved", 0);
	if (!T->v->fused) {
		add_ws(T, "log_a", "B*L*D*4", "saved", 0);
		add_ws(T, "b", "B*L*D*4", "saved", 0);
	}
	add_ws(T, "baggA", "B*NT*D*4", "backward", 0);
	add_ws(T, "baggB", "B*NT*D*4", "backward", 0);
	add_ws(T, "ucarry", "B*NT*D*4", "backward", 0);
	char buf[96];
	for (int j = 0; j < T->nbd; j++) {
		snprintf(buf, sizeof buf, "part_%s", T->mx->param[T->mx->proj[T->bd[j]].weight].name);
		add_ws(T, buf, "G*B*H*4096*4", "backward", 0);
	}
	add_ws(T, "part_chan", "G*B*NCP*D*4", "backward", 0);
	add_ws(T, "part_scal", "G*B*H*NSP*4", "backward", 0);

	if (!T->v->fused)
		tmpl_fwd_gates(T);
	tmpl_fwd_reduce(T);
	tmpl_carry(T, 0);
	tmpl_fwd_apply(T);
	tmpl_bwd_reduce(T);
	tmpl_carry(T, 1);
	tmpl_bwd_apply(T);
	tmpl_param_reduce(T);
	irb_dispose(&T->I);
}
