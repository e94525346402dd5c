/* Lowering a mixer's expression graph to fp32 LLVM IR (see emit_expr.h).
 *
 * Special functions use the SFU approximations (ex2, lg2, rcp, sqrt, rsqrt):
 * their relative errors (~1e-7) are far below the bf16 rounding of every
 * kernel output (~4e-3), so the fast path costs no accuracy that matters.
 * Per element, sigmoid and tanh take tanh.approx (one op, ~2.5e-4); per
 * token they are computed to ~1e-7 (see sigmoid_precise). */
#include "emit_expr.h"
#include "diag.h"
#include <string.h>

/* sigmoid(2 zh) = 0.5 + 0.5 tanh(zh): one SFU op */
LLVMValueRef emit_sigmoid_half(Irb *I, LLVMValueRef zh)
{
	LLVMValueRef t = f_tanh(I, zh);
	return fadd(I, cf32(I, 0.5), fmul(I, cf32(I, 0.5), t));
}

/* sigmoid(z) = 0.5 + 0.5 tanh(z / 2): one SFU op; absolute error ~2.5e-4 */
static LLVMValueRef sigmoid(Irb *I, LLVMValueRef z) { return emit_sigmoid_half(I, fmul(I, z, cf32(I, 0.5))); }

LLVMValueRef emit_sigmoid(Irb *I, LLVMValueRef z) { return sigmoid(I, z); }

/* sigmoid and tanh from exp(-|z|) and a division: relative error ~1e-7
 * for two ops and a divide. Per-token values need it: a token's error is
 * shared by all its elements, and sums over tokens (a bias gradient) can
 * cancel down to where an error of 2.5e-4 per token shows. */
static LLVMValueRef sigmoid_precise(Irb *I, LLVMValueRef z)
{
	LLVMValueRef e = f_exp(I, fneg(I, fabs_(I, z)));
	LLVMValueRef r = fdiv(I, cf32(I, 1.0), fadd(I, cf32(I, 1.0), e));
	return fsel(I, fgt(I, cf32(I, 0.0), z), fmul(I, e, r), r);
}

static LLVMValueRef tanh_precise(Irb *I, LLVMValueRef z)
{
	/* tanh(z) = 2 sigmoid(2z) - 1, and for |z| < 2^-4 its series to z^5 */
	LLVMValueRef big = fsub(I, fmul(I, cf32(I, 2.0), sigmoid_precise(I, fmul(I, z, cf32(I, 2.0)))), cf32(I, 1.0));
	LLVMValueRef z2 = fmul(I, z, z);
	LLVMValueRef poly = fmul(I, z, fadd(I, cf32(I, 1.0), fmul(I, z2, fadd(I, cf32(I, -1.0 / 3.0), fmul(I, z2, cf32(I, 2.0 / 15.0))))));
	return fsel(I, fgt(I, cf32(I, 0.0625), fabs_(I, z)), poly, big);
}

/* a value per token (or per channel): no element leaf below it */
static int token_level(const ExGraph *g, int node)
{
	static const ExOp elem[] = { EX_X, EX_H, EX_FIRST, EX_PROJ, EX_SEED };
	for (size_t k = 0; k < sizeof elem / sizeof elem[0]; k++)
		if (ex_depends(g, node, elem[k], -1))
			return 0;
	return 1;
}

/* softplus(z) = max(z, 0) + log(1 + exp(-|z|)): never overflows */
static LLVMValueRef softplus(Irb *I, LLVMValueRef z)
{
	LLVMValueRef e = f_exp(I, fneg(I, fabs_(I, z)));
	return fadd(I, fmaxf_(I, z, cf32(I, 0.0)), f_log(I, fadd(I, cf32(I, 1.0), e)));
}

static LLVMValueRef leaf(Irb *I, LLVMValueRef v, const char *what, int idx)
{
	if (!v)
		DIE("expression needs leaf %s[%d] that the template did not provide", what, idx);
	(void)I;
	return v;
}

/* the builder to the end of the hoist block; returns where to come back */
static LLVMBasicBlockRef hoist_enter(Irb *I, const EmitEnv *env)
{
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(I->b);
	LLVMPositionBuilderBefore(I->b, LLVMGetBasicBlockTerminator(env->hoist));
	return cur;
}

/* node (lane-invariant) emitted once in the hoist block, cached in env->inv */
static LLVMValueRef hoisted(Irb *I, const ExGraph *g, int node, const EmitEnv *env)
{
	if (!env->inv[node]) {
		LLVMBasicBlockRef back = hoist_enter(I, env);
		EmitEnv e = *env;
		e.inv = NULL;   /* below here every node is invariant: env->inv is the memo */
		emit_expr(I, g, node, &e, env->inv);
		LLVMPositionBuilderAtEnd(I->b, back);
	}
	return env->inv[node];
}

LLVMValueRef emit_exp(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo)
{
	const ExNode *n = &g->n[node];
	if (env->inv_node && n->op == EX_MUL && env->inv_node[n->a] != env->inv_node[n->b]) {
		int k = env->inv_node[n->a] ? n->a : n->b, v = k == n->a ? n->b : n->a;
		LLVMValueRef kl;
		if (env->inv) {
			if (!env->inv_l2e[k]) {
				LLVMValueRef kv = hoisted(I, g, k, env);
				LLVMBasicBlockRef back = hoist_enter(I, env);
				env->inv_l2e[k] = fmul(I, kv, cf32(I, 1.4426950408889634));
				LLVMPositionBuilderAtEnd(I->b, back);
			}
			kl = env->inv_l2e[k];
		} else {
			kl = fmul(I, emit_expr(I, g, k, env, memo), cf32(I, 1.4426950408889634));
		}
		return f_exp2(I, fmul(I, emit_expr(I, g, v, env, memo), kl));
	}
	return f_exp(I, emit_expr(I, g, node, env, memo));
}

/* The instructions of node itself, its operands emitted (in memo). */
static LLVMValueRef emit_node(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo)
{
	const ExNode *n = &g->n[node];
	LLVMValueRef a = n->a >= 0 ? memo[n->a] : NULL;
	LLVMValueRef b = n->b >= 0 ? memo[n->b] : NULL;
	LLVMValueRef c = n->c >= 0 ? memo[n->c] : NULL;
	LLVMValueRef r = NULL;
	switch (n->op) {
	case EX_CONST: r = cf32(I, n->k); break;
	case EX_X: r = leaf(I, env->x, "x", 0); break;
	case EX_H: r = leaf(I, env->h, "h", 0); break;
	case EX_FIRST: r = leaf(I, env->first, "first", 0); break;
	case EX_PARAM: r = leaf(I, env->param ? env->param[n->idx] : NULL, "param", n->idx); break;
	case EX_PROJ: r = leaf(I, env->proj ? env->proj[n->idx] : NULL, "proj", n->idx); break;
	case EX_SEED: r = leaf(I, env->seed ? env->seed[n->idx] : NULL, "seed", n->idx); break;
	case EX_TOK: r = leaf(I, env->tok ? env->tok[n->idx] : NULL, "tok", n->idx); break;
	case EX_NEG: r = fneg(I, a); break;
	case EX_EXP: r = emit_exp(I, g, n->a, env, memo); break;   /* its operands are in memo: no deep walk */
	case EX_LOG: r = f_log(I, a); break;
	case EX_SIGMOID:
		if (env->proj_sig && g->n[n->a].op == EX_PROJ && env->proj_sig[g->n[n->a].idx])
			r = a;   /* the value stored is the sigmoid's (Tmpl.pj_sig) */
		else if (env->proj_half && g->n[n->a].op == EX_PROJ && env->proj_half[g->n[n->a].idx])
			r = emit_sigmoid_half(I, a);   /* the value is z / 2 (Kern.gates_half) */
		else
			r = env->precise || token_level(g, n->a) ? sigmoid_precise(I, a) : sigmoid(I, a);
		break;
	case EX_SOFTPLUS: r = softplus(I, a); break;
	case EX_SQRT:
	case EX_SQRTB: r = f_sqrt(I, fmaxf_(I, a, cf32(I, 0.0))); break;
	case EX_SQRTB_GRAD: r = f_rsqrt(I, fmaxf_(I, a, cf32(I, 2.5e-7))); break;
	case EX_TANH: r = env->precise || token_level(g, n->a) ? tanh_precise(I, a) : f_tanh(I, a); break;
	case EX_RECIP: r = f_rcp(I, a); break;
	case EX_RSQRT: r = f_rsqrt(I, a); break;
	case EX_ADD: r = fadd(I, a, b); break;
	case EX_SUB: r = fsub(I, a, b); break;
	case EX_MUL: r = fmul(I, a, b); break;
	case EX_DIV: r = fdiv(I, a, b); break;
	case EX_MIN: r = fminf_(I, a, b); break;
	case EX_MAX: r = fmaxf_(I, a, b); break;
	case EX_GT: r = b2f(I, fgt(I, a, b)); break;
	case EX_WHERE: r = fsel(I, LLVMBuildFCmp(I->b, LLVMRealUNE, a, cf32(I, 0.0), ""), b, c); break;
	default: DIE("cannot emit op %d", (int)n->op);
	}
	return r;
}

/* Whether node needs no walk below it: emitted already, or lane-invariant
 * and so emitted now, once, in the hoist block. */
static int emit_known(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo)
{
	if (memo[node])
		return 1;
	if (env->inv && env->inv_node[node]) {
		memo[node] = hoisted(I, g, node, env);
		return 1;
	}
	return 0;
}

/* A walk with its stack on the heap (graphs can nest thousands deep) that
 * emits what the recursive definition would, in its order: a node's
 * operands a, b, c, each unless known, then the node. */
typedef struct {
	int node, next;
} EmitFrame;

LLVMValueRef emit_expr(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo)
{
	if (emit_known(I, g, node, env, memo))
		return memo[node];
	EmitFrame local[64], *st = local;
	size_t cap = sizeof local / sizeof *local, n = 0;
	st[n++] = (EmitFrame){ node, 0 };
	while (n) {
		EmitFrame *f = &st[n - 1];
		const ExNode *x = &g->n[f->node];
		if (f->next < 3) {
			int o = f->next == 0 ? x->a : f->next == 1 ? x->b : x->c;
			f->next++;
			if (o < 0 || emit_known(I, g, o, env, memo))
				continue;
			if (n == cap) {
				EmitFrame *s2 = malloc(2 * cap * sizeof *s2);
				CHECK(s2);
				memcpy(s2, st, cap * sizeof *st);
				if (st != local)
					free(st);
				st = s2;
				cap *= 2;
			}
			st[n++] = (EmitFrame){ o, 0 };
			continue;
		}
		memo[f->node] = emit_node(I, g, f->node, env, memo);
		n--;
	}
	if (st != local)
		free(st);
	return memo[node];
}
