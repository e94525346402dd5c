/* Template setup: geometry of a variant, what the templates can build, the
 * derivative graph, and the kernels in plan order.
 *
 *   recur gen lua/variants/all.lua -o out/ptx      generate every variant
 *   recur verify --dir out/ptx                     check each on the GPU
 */
#include "tmpl.h"
#include "bwd.h"
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
		if (mx->proj[j].kind == PJ_BLOCKDIAG && v->apart)
			T->apj[T->napj++] = j;
		else if (mx->proj[j].kind == PJ_BLOCKDIAG)
			T->bdproj[T->nbdproj++] = j;
		else
			T->tokproj[T->ntokproj++] = j;
	/* backward segment: h of S steps kept in shared memory, and the steps'
	 * inputs staged at once; with projections the weights, dproj of every
	 * step and the dW accumulators take the room of longer segments */
	int smax = T->nbdproj ? 4 : 8;
	T->seg = T->chunk < smax ? T->chunk : smax;
	snprintf(T->kname, sizeof T->kname, "%s", mx->name);
	T->smem_sm = target_smem_sm("sm_90");
}

void tmpl_target(Tmpl *T, const char *sm)
{
	T->portable = !target_clusters(sm);
	T->wgmma = target_wgmma(sm);
	T->smem_sm = target_smem_sm(sm);
}

/* bwd_apply's shared memory, the most any kernel takes: it grows by 32 KB
 * per block-diagonal projection, where the reduce and apply kernels grow
 * by their 8 KB of weights */
static int bwd_apply_smem(const Tmpl *T)
{
	PartMap pm;
	part_map(T, &pm);
	return bwd_smem(T, &pm).total;
}

/* What these templates can build: heads of 64 channels, token projections
 * in a pass of their own, the output in the scan kernel, an output affine
 * in h. A located message otherwise. */
int tmpl_check(const Tmpl *T, int derived, char *err, size_t errlen)
{
	const Mixer *mx = T->mx;
	if (T->v->decode && (mx->k % 16 != 0 || mx->k < 16 || mx->k > 256)) {
		snprintf(err, errlen, "%s:%d: variant %s: mixer %s has heads of %d channels; the decode step takes a "
		         "multiple of 16 from 16 to 256", T->v->file, T->v->line, T->v->name, mx->name, mx->k);
		return -1;
	}
	if (T->v->mma && (mx->k % 64 != 0 || T->nbdproj == 0)) {
		snprintf(err, errlen, "%s:%d: variant %s: the decode step on tensor cores (mma) takes heads of a multiple "
		         "of 64 channels and block-diagonal projections; mixer %s has heads of %d and %d such projections", T->v->file,
		         T->v->line, T->v->name, mx->name, mx->k, T->nbdproj);
		return -1;
	}
	if (T->v->rows && (!T->v->decode || T->nbdproj > 0)) {
		snprintf(err, errlen, "%s:%d: variant %s: the decode step of one kernel a row (rows) runs a row's whole "
		         "width in a block, which cannot hold every head's block-diagonal weights; mixer %s has %d such "
		         "projections", T->v->file, T->v->line, T->v->name, mx->name, T->nbdproj);
		return -1;
	}
	if (!T->v->decode && !T->v->apart && mx->k != 64) {
		snprintf(err, errlen, "%s:%d: variant %s: mixer %s has heads of %d channels; the scan kernels run the "
		         "projections of heads of 64, others apart (apart = true)", T->v->file, T->v->line, T->v->name,
		         mx->name, mx->k);
		return -1;
	}
	if (T->v->apart && (mx->k % 16 != 0 || mx->k < 16 || mx->k > 256)) {
		snprintf(err, errlen, "%s:%d: variant %s: mixer %s has heads of %d channels; projections apart take a "
		         "multiple of 16 from 16 to 256", T->v->file, T->v->line, T->v->name, mx->name, mx->k);
		return -1;
	}
	if (T->v->scan_proj && !scan_proj_ok(T)) {
		snprintf(err, errlen, "%s:%d: variant %s: scan_proj (the forward's projections inside fwd_scan, on sm_90a's "
		         "wgmma) takes heads of a multiple of 64 channels (mixer %s has %d), one or two block-diagonal "
		         "projections apart (%d), a lookback or onepass scan, prefix 32 and chunk 8", T->v->file, T->v->line,
		         T->v->name, mx->name, mx->k, T->napj);
		return -1;
	}
	if (T->v->proj_ahead && !scan_proj_ahead_ok(T)) {
		snprintf(err, errlen, "%s:%d: variant %s: proj_ahead (scan_proj's fwd_scan in resident blocks with a "
		         "producer warpgroup) takes heads of a multiple of 64 channels from 128 (mixer %s has %d), copying two "
		         "or more blocks of a head's contraction ahead, and no docs or map", T->v->file, T->v->line, T->v->name,
		         mx->name, mx->k);
		return -1;
	}
	if (!derived && T->ntokproj > 0 && T->v->fused) {
		snprintf(err, errlen, "%s:%d: variant %s: the per-token projection %s reduces over the whole width, which a scan "
		         "block (one head) does not see; these templates compute it in a separate fp32 pass (fused = false)",
		         T->v->file, T->v->line, T->v->name, mx->proj[T->tokproj[0]].name);
		return -1;
	}
	if (!derived && !T->v->fused_output && mx->y != ex_leaf(&T->mx->g, EX_H, 0)) {
		snprintf(err, errlen, "%s:%d: variant %s: fused_output = false (the output in a pass of its own) is not "
		         "offered by these templates; they apply the output in the scan kernel", T->v->file, T->v->line, T->v->name);
		return -1;
	}
	if (derived && T->tok_over > 0) {
		snprintf(err, errlen, "%s:%d: variant %s: mixer %s has %d per-token values%s; the token stage holds at most %d "
		         "(with shared_sfu = false only the token projections are)", T->v->file, T->v->line, T->v->name, mx->name,
		         TM_MAXZ + T->tok_over, T->v->shared_sfu ? " with shared_sfu (token-only subexpressions)" : "", TM_MAXZ);
		return -1;
	}
	if (derived && !T->v->decode && bwd_apply_smem(T) > smem_blk_max(T)) {
		snprintf(err, errlen, "%s:%d: variant %s: bwd_apply of mixer %s needs %d bytes of shared memory, more than a "
		         "block may take on this target (%d): each of its %d block-diagonal projections takes 32 KB (weights, "
		         "adjoints, weight-gradient accumulators)", T->v->file, T->v->line, T->v->name, mx->name,
		         bwd_apply_smem(T), smem_blk_max(T), T->nbdproj);
		return -1;
	}
	if (derived && ex_depends(&mx->g, T->g_h, EX_H, -1)) {
		if (mx->out_line > 0)   /* at the m:output line that wrote it */
			snprintf(err, errlen, "%s:%d: mixer %s: the output must be affine in h: dy/dh may not depend on h "
			         "(variant %s, %s:%d)", mx->script, mx->out_line, mx->name, T->v->name, T->v->file, T->v->line);
		else
			snprintf(err, errlen, "%s:%d: variant %s: the output of mixer %s (%s) must be affine in h: dy/dh may "
			         "not depend on h", T->v->file, T->v->line, T->v->name, mx->name, mx->script);
		return -1;
	}
	return 0;
}

/* Which leaves a node depends on: bit 0 a token projection, bit 1 anything
 * per element (x, h, the reset flag, a channel parameter, a block-diagonal
 * projection). Scalar parameters and constants set neither. */
enum { DEP_TOK = 1, DEP_ELEM = 2 };

/* The dependence of a leaf (DEP_TOK, DEP_ELEM or 0). */
static int dep_leaf(const Tmpl *T, const ExNode *n)
{
	switch (n->op) {
	case EX_X: case EX_H: case EX_FIRST: return DEP_ELEM;
	case EX_PARAM: return T->mx->param[n->idx].kind == PK_SCALAR ? 0 : DEP_ELEM;
	case EX_PROJ: return T->mx->proj[n->idx].kind == PJ_TOKEN ? DEP_TOK : DEP_ELEM;
	default: return 0;   /* constants */
	}
}

/* memo[node]: the union of its leaves' dependences. Operands have smaller
 * ids than their users, so one pass upwards over the nodes node reaches
 * fills it without recursion (a script may nest expressions thousands
 * deep). */
static int deps(const Tmpl *T, const ExGraph *g, int node, signed char *memo)
{
	if (memo[node] >= 0)
		return memo[node];
	char *reach = calloc((size_t)node + 1, 1);
	CHECK(reach);
	reach[node] = 1;
	for (int id = node; id >= 0; id--) {
		if (!reach[id] || memo[id] >= 0)
			continue;   /* a known node's operands are known too */
		const ExNode *n = &g->n[id];
		if (n->a >= 0) reach[n->a] = 1;
		if (n->b >= 0) reach[n->b] = 1;
		if (n->c >= 0) reach[n->c] = 1;
	}
	for (int id = 0; id <= node; id++) {
		if (!reach[id] || memo[id] >= 0)
			continue;
		const ExNode *n = &g->n[id];
		int d = dep_leaf(T, n);
		if (n->a >= 0) d |= memo[n->a];
		if (n->b >= 0) d |= memo[n->b];
		if (n->c >= 0) d |= memo[n->c];
		memo[id] = (signed char)d;
	}
	free(reach);
	return memo[node];
}

static int tok_leaf(Tmpl *T, ExGraph *g, int node)
{
	for (int k = 0; k < T->ntokval; k++)
		if (T->tokval[k] == node)
			return ex_leaf(g, EX_TOK, k);
	if (T->ntokval == TM_MAXZ) {
		/* a script can ask for more: counted, refused by tmpl_check after
		 * the derivation, which a stand-in leaf lets finish */
		T->tok_over++;
		return ex_leaf(g, EX_TOK, TM_MAXZ - 1);
	}
	T->tokval[T->ntokval] = node;
	return ex_leaf(g, EX_TOK, T->ntokval++);
}

/* One node of split's walk: its operands' copies are made first (next
 * counts them), then its own. */
typedef struct {
	int node, next, r[3];
} SplitFrame;

/* the element-stage copy of node: token-only parts become EX_TOK leaves.
 * The walk keeps its stack on the heap (graphs can be thousands deep) and
 * builds the nodes in the order of the recursive definition: a node's
 * copy is a token leaf, or the rebuild of its operands' copies, made
 * left to right. */
static int split(Tmpl *T, ExGraph *g, int node, signed char *dep, int *memo)
{
	if (memo[node] >= 0)
		return memo[node];
	size_t cap = 64, n = 0;
	SplitFrame *st = malloc(cap * sizeof *st);
	CHECK(st);
	st[n++] = (SplitFrame){ .node = node, .next = 0, .r = { -1, -1, -1 } };
	while (n) {
		SplitFrame *f = &st[n - 1];
		ExNode x = g->n[f->node];   /* a copy: building nodes may move g->n */
		int ops[3] = { x.a, x.b, x.c };
		if (f->next == 0 && deps(T, g, f->node, dep) == DEP_TOK && (T->v->shared_sfu || x.op == EX_PROJ)) {
			memo[f->node] = tok_leaf(T, g, f->node);
		} else if (f->next < 3) {
			int o = ops[f->next];
			if (o < 0 || memo[o] >= 0) {
				f->r[f->next++] = o < 0 ? -1 : memo[o];
			} else {
				if (n == cap) {
					cap *= 2;
					SplitFrame *s2 = realloc(st, cap * sizeof *st);
					CHECK(s2);
					st = s2;
				}
				st[n++] = (SplitFrame){ .node = o, .next = 0, .r = { -1, -1, -1 } };
			}
			continue;
		} else {
			int r = ex_rebuild(g, f->node, f->r[0], f->r[1], f->r[2]);
			CHECK(r >= 0);
			memo[f->node] = r;
		}
		/* f is done: its copy goes to its parent */
		int done = f->node;
		n--;
		if (n)
			st[n - 1].r[st[n - 1].next++] = memo[done];
	}
	free(st);
	return memo[node];
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

/* Which projections apart the kernels read only through sigmoid,
 * over the forward's roots and every adjoint the backward evaluates */
static void pj_sig_derive(Tmpl *T, const int fr[3], const int *grads, int ng)
{
	int roots[3 + 2 + MX_MAXPROJ + MX_MAXPARAM + TM_MAXZ], n = 0;
	CHECK(ng >= 0 && 3 + ng <= (int)(sizeof roots / sizeof *roots));
	for (int k = 0; k < 3; k++)
		roots[n++] = fr[k];
	for (int k = 0; k < ng; k++)
		roots[n++] = grads[k];
	for (int j = 0; j < T->napj; j++)
		T->pj_sig[T->apj[j]] = ex_sigmoid_only(&T->mx->g, roots, n, T->apj[j]);
	T->bd_sig_all = T->nbdproj > 0;
	for (int j = 0; j < T->nbdproj; j++) {
		T->bd_sig[T->bdproj[j]] = ex_sigmoid_only(&T->mx->g, roots, n, T->bdproj[j]);
		T->bd_sig_all &= T->bd_sig[T->bdproj[j]];
	}
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
	pj_sig_derive(T, fr, grads, n);
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

void tmpl_build(Tmpl *T, LLVMContextRef ctx, const char *name)
{
	irb_init(&T->I, ctx, name);
	/* tmpl_derive ran before: it grows the mixer's graph, which from here
	 * on is only read (variants build concurrently) */
	CHECK(T->derived);
	if (T->v->rows) {   /* forward only: one kernel, the token stage inside */
		tmpl_decode_rows_plan(T);
		tmpl_decode_rows(T);
		irb_dispose(&T->I);
		return;
	}
	if (T->v->decode) {   /* forward only: the token stage, then the step */
		tmpl_decode_plan(T);
		if (T->ntokval > 0)
			tmpl_tok_step(T);
		if (T->v->mma)
			tmpl_decode_mma(T);
		else
			tmpl_decode(T);
		irb_dispose(&T->I);
		return;
	}
	tmpl_plan(T);

	if (T->ntokval > 0)
		tmpl_tok_fwd(T);   /* it clears the arena, so it comes first; the token stage sees no resets */
	if (T->v->docs)
		tmpl_docs_prep(T);   /* the marks and codes every later kernel reads */
	if (scan_proj_on(T))
		tmpl_proj_wimg(T);   /* fwd_scan projects its rows itself */
	else if (T->napj > 0)
		tmpl_proj_fwd(T);

	if (!gates_inline(T))
		tmpl_fwd_gates(T);
	if (!T->v->lookback) {
		tmpl_fwd_reduce(T);
		tmpl_carry(T, 0);
	}
	tmpl_fwd_apply(T);
	if (T->v->map)
		tmpl_map_finish(T);
	if (T->v->docs)
		docs_prep_again(T);
	if (T->v->recompute)
		proj_fwd_again(T);
	if (!T->v->onepass) {
		tmpl_bwd_reduce(T);
		tmpl_carry(T, 1);
	}
	tmpl_bwd_apply(T);
	if (proj_dxdw_on(T)) {
		proj_dxdw_wg(T);
	} else if (T->napj > 0) {
		tmpl_proj_dx(T);
		tmpl_proj_dw(T);
	}
	if (T->ntokval > 0 && !tok_fused(T)) {
		tmpl_tok_bwd(T);
		tmpl_tok_dx(T);
	}
	tmpl_param_reduce(T);
	irb_dispose(&T->I);
}

/* A launch's shared memory is a number of bytes (tmpl_launch's callers
 * print it); an expression would be the runtime's to check per shape */
int tmpl_check_smem(const Tmpl *T, const char *sm, char *err, size_t errlen)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < (pass ? T->nbwd : T->nfwd); i++) {
			const Launch *l = pass ? &T->bwd[i] : &T->fwd[i];
			char *end;
			long n = strtol(l->smem, &end, 10);
			if (*end || n <= smem_blk_max(T))
				continue;
			snprintf(err, errlen, "%s:%d: variant %s: kernel %s takes %ld bytes of shared memory a block, more than "
			         "the %d a block may take on %s (%d KB an SM)", T->v->file, T->v->line, T->v->name, l->kernel, n,
			         smem_blk_max(T), sm, T->smem_sm / 1024);
			return -1;
		}
	return 0;
}
