/* Lowering a mixer's expression graph to fp32 LLVM IR. */
#ifndef RECUR_EMIT_EXPR_H
#define RECUR_EMIT_EXPR_H
#include "expr.h"
#include "irb.h"

/* Leaf values at one evaluation site (one element, or one token). Missing
 * leaves (NULL) that an expression needs are an internal error. */
typedef struct {
	LLVMValueRef x, h, first;
	LLVMValueRef const *param;   /* indexed by parameter idx */
	LLVMValueRef const *proj;    /* indexed by projection idx */
	const unsigned char *proj_sig;   /* where nonzero, proj[idx] holds sigmoid(proj) (proj_pack), or NULL */
	const unsigned char *proj_half;  /* where nonzero, proj[idx] holds proj / 2, read only through sigmoid */
	LLVMValueRef const *seed;    /* indexed by seed idx */
	LLVMValueRef const *tok;     /* indexed by per-token value idx */
	int precise;           /* a per-token site: sigmoid and tanh without the one-op approximation */
	/* Lane-invariant nodes (over parameters and constants only; inv_node[id]
	 * != 0) are emitted once, at the end of hoist (irb_hoist_block), into
	 * inv (g->len entries, zeroed once per kernel and site channel), and
	 * inv_l2e caches their products with log2(e) for exp (emit_exp). All
	 * NULL: every node is emitted at the site. */
	const unsigned char *inv_node;
	LLVMValueRef *inv, *inv_l2e;
	LLVMBasicBlockRef hoist;
} EmitEnv;

/* the sigmoid of the element math (tanh.approx): what proj_fwd applies to
 * a projection it stores as sigmoid(P) */
LLVMValueRef emit_sigmoid(Irb *I, LLVMValueRef z);
/* the same sigmoid of 2 zh: for a caller that has z / 2 for free (exact:
 * halving is, so the result is emit_sigmoid's of 2 zh bit for bit) */
LLVMValueRef emit_sigmoid_half(Irb *I, LLVMValueRef zh);

/* memo: g->len entries, zeroed by the caller for each evaluation site, so a
 * node shared by several roots is computed once per site. */
LLVMValueRef emit_expr(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo);
/* exp of node's value: ex2(v * (k log2 e)) with k log2 e hoisted when node
 * is v * k for a lane-invariant k, else ex2(value * log2 e). Sites that ask
 * for the same exp get the same instructions (one ex2 after CSE). */
LLVMValueRef emit_exp(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo);

#endif
