/* Lowering a mixer's expression graph to fp32 LLVM IR. */
#ifndef RECUR_EMIT_EXPR_H
#define RECUR_EMIT_EXPR_H
#include "expr.h"
#include "irb.h"

/* Leaf values at one evaluation site (one element, or one token). Missing
 * leaves (NULL) that an expression needs are an internal error. */
typedef struct {
	LLVMValueRef x, h, first;
	LLVMValueRef *param;   /* indexed by parameter idx */
	LLVMValueRef *proj;    /* indexed by projection idx */
	LLVMValueRef *seed;    /* indexed by seed idx */
	LLVMValueRef *tok;     /* indexed by per-token value idx */
	int precise;           /* a per-token site: sigmoid and tanh without the one-op approximation */
} EmitEnv;

/* memo: g->len entries, zeroed by the caller for each evaluation site, so a
 * node shared by several roots is computed once per site. */
LLVMValueRef emit_expr(Irb *I, const ExGraph *g, int node, const EmitEnv *env, LLVMValueRef *memo);

#endif
