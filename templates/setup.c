/* Template setup: geometry of a variant, the derivative graph, the plan.
 *
 *   recur gen lua/variants/all.lua -o out/ptx      generate every variant
 *   recur verify --dir out/ptx                     check each on the GPU
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tmpl_setup(Tmpl *T, Mixer *mx, const Variant *v)
{
	memset(T, 0, sizeof *T);
	T->mx = mx;
	T->v = v;
	T->chunk = v->chunk;
	T->prefix = v->prefix;
	/* at most 2 quads (256 threads) per block, so a lane may use up to 255
	 * registers for its weight fragments, accumulators and maps without
	 * spilling; larger prefixes compose several groups per quad in order */
	T->quads = T->prefix / 16 < 2 ? T->prefix / 16 : 2;
	T->quad_groups = T->prefix / (16 * T->quads);
	CHECK(T->prefix == 16 * T->quads * T->quad_groups);
	for (int j = 0; j < mx->nproj; j++)
		if (mx->proj[j].kind == PJ_BLOCKDIAG)
			T->bdproj[T->nbdproj++] = j;
		else
			T->tokproj[T->ntokproj++] = j;
	/* backward segment: h of S steps kept in shared memory, and the steps'
	 * inputs staged at once; with projections the weights, dproj of every
	 * step and the dW accumulators take the room of longer segments */
	int smax = T->nbdproj ? 4 : 8;
	T->seg = T->chunk < smax ? T->chunk : smax;
	snprintf(T->kname, sizeof T->kname, "%s", mx->name);
}

/* Which leaves a node depends on: bit 0 a token projection, bit 1 anything
 * per element (x, h, the reset flag, a channel parameter, a block-diagonal
 * projection). Scalar parameters and constants set neither. */
enum { DEP_TOK = 1, DEP_ELEM = 2 };

static int deps(const Tmpl *T, const ExGraph *g, int node, signed char *memo)
{
	if (memo[node] >= 0)
		return memo[node];
	const ExNode *n = &g->n[node];
	int d = 0;
	switch (n->op) {
	case EX_CONST: break;
	case EX_X: case EX_H: case EX_FIRST: d = DEP_ELEM; break;
	case EX_PARAM: d = T->mx->param[n->idx].kind == PK_SCALAR ? 0 : DEP_ELEM; break;
	case EX_PROJ: d = T->mx->proj[n->idx].kind == PJ_TOKEN ? DEP_TOK : DEP_ELEM; break;
	default:
		if (n->a >= 0) d |= deps(T, g, n->a, memo);
		if (n->b >= 0) d |= deps(T, g, n->b, memo);
		if (n->c >= 0) d |= deps(T, g, n->c, memo);
	}
	memo[node] = (signed char)d;
	return d;
}

static int tok_leaf(Tmpl *T, ExGraph *g, int node)
{
	for (int k = 0; k < T->ntokval; k++)
		if (T->tokval[k] == node)
			return ex_leaf(g, EX_TOK, k);
	if (T->ntokval == TM_MAXZ)
		DIE("mixer %s: more than %d per-token values", T->mx->name, TM_MAXZ);
	T->tokval[T->ntokval] = node;
	return ex_leaf(g, EX_TOK, T->ntokval++);
}

/* the element-stage copy of node: token-only parts become EX_TOK leaves */
static int split(Tmpl *T, ExGraph *g, int node, signed char *dep, int *memo)
{
	if (memo[node] >= 0)
		return memo[node];
	int d = deps(T, g, node, dep);
	ExNode n = g->n[node];
	int r;
	if (d == DEP_TOK && (T->v->shared_sfu || n.op == EX_PROJ)) {
		r = tok_leaf(T, g, node);
	} else {
		int a = n.a >= 0 ? split(T, g, n.a, dep, memo) : -1;
		int b = n.b >= 0 ? split(T, g, n.b, dep, memo) : -1;
		int c = n.c >= 0 ? split(T, g, n.c, dep, memo) : -1;
		r = ex_rebuild(g, node, a, b, c);
		CHECK(r >= 0);
	}
	memo[node] = r;
	return r;
}

static void split_stages(Tmpl *T, ExGraph *g)
{
	int len = g->len;
	signed char *dep = malloc((size_t)len);
	int *memo = malloc((size_t)len * sizeof *memo);
	CHECK(dep && memo);
	memset(dep, -1, (size_t)len);
	for (int i = 0; i < len; i++)
		memo[i] = -1;
	/* split only nodes that existed before (new nodes are appended past len) */
	T->e_log_a = split(T, g, T->mx->log_a, dep, memo);
	T->e_b = split(T, g, T->mx->b, dep, memo);
	T->e_y = split(T, g, T->mx->y, dep, memo);
	free(dep);
	free(memo);
}

/* The adjoints the backward needs, derived once per variant from the
 * mixer's own expressions: seeds are d(loss)/d(log_a), d(loss)/d(b) at the
 * recurrence and d(loss)/d(y) at the output; the token stage's seeds are
 * the adjoints of its values tokval[k], summed over the channels of a token. */
void tmpl_derive(Tmpl *T)
{
	const Mixer *mx = T->mx;
	ExGraph *g = &T->mx->g;
	T->derived = 1;
	split_stages(T, g);
	/* -C * r * softplus(lam) as r * (-C * softplus(lam)): the kernels
	 * compute the second factor once per lane (before the derivative, so
	 * the adjoints are grouped the same way) */
	int fr[3] = { T->e_log_a, T->e_b, T->e_y };
	ex_group_invariant(g, fr, 3);
	T->e_log_a = fr[0];
	T->e_b = fr[1];
	T->e_y = fr[2];
	int leaves[2 + MX_MAXPROJ + MX_MAXPARAM + TM_MAXZ], grads[2 + MX_MAXPROJ + MX_MAXPARAM + TM_MAXZ];
	int n = 0;
	leaves[n++] = ex_leaf(g, EX_X, 0);
	leaves[n++] = ex_leaf(g, EX_H, 0);
	for (int j = 0; j < mx->nproj; j++)
		leaves[n++] = ex_leaf(g, EX_PROJ, j);
	for (int p = 0; p < mx->nparam; p++)
		leaves[n++] = ex_leaf(g, EX_PARAM, p);
	for (int k = 0; k < T->ntokval; k++)
		leaves[n++] = ex_leaf(g, EX_TOK, k);
	for (int k = 0; k < 3; k++)
		T->seed[k] = ex_leaf(g, EX_SEED, k);
	int outs[3] = { T->e_log_a, T->e_b, T->e_y };
	ex_grad(g, 3, outs, T->seed, n, leaves, grads);
	ex_group_invariant(g, grads, n);   /* the adjoints grouped as the forward is */
	n = 0;
	T->g_x = grads[n++];
	T->g_h = grads[n++];
	for (int j = 0; j < mx->nproj; j++)
		T->g_proj[j] = grads[n++];
	for (int p = 0; p < mx->nparam; p++)
		T->g_param[p] = grads[n++];
	for (int k = 0; k < T->ntokval; k++)
		T->g_tok[k] = grads[n++];
	if (T->ntokval == 0) {
		T->inv_node = ex_invariants(g);
		return;
	}
	/* token stage: tokval[k] over the token projections and scalar parameters */
	int tseed[TM_MAXZ];
	n = 0;
	for (int j = 0; j < T->ntokproj; j++)
		leaves[n++] = ex_leaf(g, EX_PROJ, T->tokproj[j]);
	for (int p = 0; p < mx->nparam; p++)
		leaves[n++] = ex_leaf(g, EX_PARAM, p);
	for (int k = 0; k < T->ntokval; k++)
		tseed[k] = ex_leaf(g, EX_SEED, 3 + k);
	ex_grad(g, T->ntokval, T->tokval, tseed, n, leaves, grads);
	n = 0;
	for (int j = 0; j < T->ntokproj; j++)
		T->tg_proj[j] = grads[n++];
	for (int p = 0; p < mx->nparam; p++)
		T->tg_param[p] = grads[n++];
	T->inv_node = ex_invariants(g);
}

void tmpl_free(Tmpl *T)
{
	if (!T)
		return;
	free(T->inv_node);
	free(T->k.inv_memo);
	free(T);
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

void tmpl_launch_bytes(const Tmpl *T, const Launch *l, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (int k = 0; k < l->sig.n; k++) {
		const char *a = l->sig.arg[k], *term = NULL;
		if (!strcmp(a, l->bytes_unread))
			continue;
		if (!strcmp(a, "x") || !strcmp(a, "y") || !strcmp(a, "dy") || !strcmp(a, "dx"))
			term = "B*L*D*2";
		else if (!strncmp(a, "ws:", 3))
			for (int w = 0; w < T->nws; w++)
				if (!strcmp(T->ws[w].name, a + 3))
					term = T->ws[w].bytes;
		if (term && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s(%s)", at ? "+" : "", term);
	}
	if (l->bytes_extra[0] && at < n)
		at += (size_t)snprintf(buf + at, n - at, "%s(%s)", at ? "+" : "", l->bytes_extra);
	CHECK(at < n);
	if (!at)
		snprintf(buf, n, "0");
}

void tmpl_build(Tmpl *T, LLVMContextRef ctx, LLVMModuleRef mod)
{
	irb_init(&T->I, ctx, mod);
	/* tmpl_derive ran before: it grows the mixer's graph, which from here
	 * on is only read (variants build concurrently) */
	CHECK(T->derived);
	/* the look-back's words announce themselves by being non-zero */
	int lb = T->v->lookback;
	add_ws(T, "aggA", "B*NT*D*4", "forward", lb);
	add_ws(T, "aggB", "B*NT*D*4", "forward", lb);
	if (lb) {
		add_ws(T, "hend", "B*NT*D*4", "forward", 1);
		add_ws(T, "ticket", "16", "forward", 1);
	} else {
		add_ws(T, "carry", "B*NT*D*4", "forward", 0);
	}
	add_ws(T, "ckpt", "B*NG*D*4", "saved", 0);
	if (!gates_inline(T)) {
		add_ws(T, "log_a", "B*L*D*4", "saved", 0);
		add_ws(T, "b", "B*L*D*4", "saved", 0);
	}
	if (T->v->onepass) {
		/* bwd_apply's look-back: one adjoint map per group */
		add_ws(T, "baggA", "B*NG*D*4", "backward", 1);
		add_ws(T, "baggB", "B*NG*D*4", "backward", 1);
	} else {
		add_ws(T, "baggA", "B*NT*D*4", "backward", 0);
		add_ws(T, "baggB", "B*NT*D*4", "backward", 0);
		add_ws(T, "ucarry", "B*NT*D*4", "backward", 0);
	}
	char buf[96];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(buf, sizeof buf, "part_%s", T->mx->param[T->mx->proj[T->bdproj[j]].weight].name);
		add_ws(T, buf, "GP*B*H*4096*4", "backward", 0);   /* one slot per pair of clusters */
	}
	if (T->nbdproj > 0) {
		/* per slot and block rank: the pair's arrival count and flag */
		snprintf(buf, sizeof buf, "GP*B*H*%d", 8 * BWD_CLUSTER);
		add_ws(T, "dwsync", buf, "backward", 1);
	}
	add_ws(T, "part_chan", "G*B*NCP*D*4", "backward", 0);
	add_ws(T, "part_scal", "G*B*H*NSP*4", "backward", 0);
	if (T->ntokval > 0) {
		snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokval);
		add_ws(T, "tok", buf, "saved", 0);
		snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokproj);
		add_ws(T, "tproj", buf, "saved", 0);
		if (tok_fused(T)) {
			/* look-back words of every group's tokens, [B][NG][nz][H][16 C] */
			snprintf(buf, sizeof buf, "B*NG*H*%d", 16 * T->chunk * 4 * T->ntokval);
			add_ws(T, "dtokp", buf, "backward", 1);
			snprintf(buf, sizeof buf, "G*B*D*%d", 4 * T->ntokproj);
			add_ws(T, "part_tchan", buf, "backward", 0);
		} else {
			snprintf(buf, sizeof buf, "B*L*H*%d", 4 * T->ntokval);
			add_ws(T, "dtokp", buf, "backward", 0);
			snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokproj);
			add_ws(T, "dtok", buf, "backward", 0);
			add_ws(T, "part_tscal", "NTB*8*NSP*4", "backward", 0);
			snprintf(buf, sizeof buf, "NXB*D*%d", 4 * T->ntokproj);
			add_ws(T, "part_tchan", buf, "backward", 0);
		}
	}

	if (T->ntokval > 0)
		tmpl_tok_fwd(T);   /* it clears the arena */

	if (!gates_inline(T))
		tmpl_fwd_gates(T);
	if (!T->v->lookback) {
		tmpl_fwd_reduce(T);
		tmpl_carry(T, 0);
	}
	tmpl_fwd_apply(T);
	if (!T->v->onepass) {
		tmpl_bwd_reduce(T);
		tmpl_carry(T, 1);
	}
	tmpl_bwd_apply(T);
	if (T->ntokval > 0 && !tok_fused(T)) {
		tmpl_tok_bwd(T);
		tmpl_tok_dx(T);
	}
	tmpl_param_reduce(T);
	irb_dispose(&T->I);
}
