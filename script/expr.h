/* Expression graph of a mixer's per-element math, with reverse-mode autodiff.
 *
 * A mixer script builds log_a, b and y as a DAG of scalar nodes over a few
 * kinds of leaves (the input element x, the state h, the reset flag, parameter
 * elements, projection outputs, adjoint seeds). Nodes are hash-consed, so the
 * same subexpression built twice is one node, and constants are folded; the
 * derivative graph built by ex_grad therefore shares work with the forward
 * graph, and the kernels emitted from it compute every shared value once.
 *
 * Node ids are plain ints into ExGraph.n; they stay valid while the graph
 * grows (the array is reallocated, ids are not pointers).
 */
#ifndef RECUR_EXPR_H
#define RECUR_EXPR_H

#include <stddef.h>

typedef enum {
	/* leaves */
	EX_CONST,   /* k */
	EX_X,       /* the input element x[b,t,c] as fp32 */
	EX_H,       /* the state h[b,t,c] (only meaningful in the output expression y) */
	EX_FIRST,   /* 1 at the first token of a sequence, else 0 */
	EX_PARAM,   /* element of parameter idx for this channel (or the scalar) */
	EX_PROJ,    /* output of projection idx for this element (or token) */
	EX_SEED,    /* adjoint seed idx, supplied by the template in the backward */
	EX_TOK,     /* per-token value idx, computed once per token by the templates'
	               controller pass (never built by a script) */
	/* unary */
	EX_NEG, EX_EXP, EX_LOG, EX_SIGMOID, EX_SOFTPLUS, EX_SQRT,
	EX_SQRTB,      /* sqrt whose derivative is bounded: d/dz = 1/sqrt(max(4z, 1e-6)) */
	EX_SQRTB_GRAD, /* 1/sqrt(max(z, 2.5e-7)): twice the derivative above, a node of its own */
	EX_TANH, EX_RECIP, EX_RSQRT,
	/* binary */
	EX_ADD, EX_SUB, EX_MUL, EX_DIV, EX_MIN, EX_MAX,
	EX_GT,         /* 1 if a > b else 0 (derivative 0) */
	/* ternary */
	EX_WHERE,      /* a != 0 ? b : c (derivative flows to b or c) */
	EX_NOPS
} ExOp;

typedef struct {
	ExOp op;
	int a, b, c;   /* operand node ids, -1 when absent */
	int idx;       /* leaf index for EX_PARAM / EX_PROJ / EX_SEED */
	double k;      /* value of EX_CONST */
} ExNode;

typedef struct {
	ExNode *n;
	int len, cap;
	int *hash;     /* open-addressing table of node ids, -1 = empty */
	int hcap;
} ExGraph;

/* Values of the leaves for ex_eval. Arrays are indexed by the leaf idx. */
typedef struct {
	double x, h, first;
	const double *param;
	const double *proj;
	const double *seed;
	const double *tok;
} ExEnv;

void ex_init(ExGraph *g);
void ex_free(ExGraph *g);
int ex_copy(ExGraph *dst, const ExGraph *src);   /* a deep copy; -1 out of memory (dst left empty) */

int ex_const(ExGraph *g, double k);
int ex_leaf(ExGraph *g, ExOp op, int idx);   /* EX_X, EX_H, EX_FIRST (idx 0), EX_PARAM, EX_PROJ, EX_SEED, EX_TOK */
int ex_un(ExGraph *g, ExOp op, int a);
int ex_bin(ExGraph *g, ExOp op, int a, int b);
int ex_where(ExGraph *g, int cond, int a, int b);
/* node with its operands replaced by a, b, c (a leaf or constant: itself) */
int ex_rebuild(ExGraph *g, int node, int a, int b, int c);

/* Reverse mode. For outputs outs[0..nout) with adjoint expressions
 * seeds[0..nout) (any nodes, usually EX_SEED leaves), writes into grads[i]
 * the node of d(sum_j seed_j * out_j)/d(leaf_i) for each leaves[i]
 * (a constant 0 node when the output does not depend on it). */
void ex_grad(ExGraph *g, int nout, const int *outs, const int *seeds,
             int nleaf, const int *leaves, int *grads);

double ex_eval(const ExGraph *g, int node, const ExEnv *env);

/* 1 when node depends on a leaf of kind op (any idx when idx < 0). */
int ex_depends(const ExGraph *g, int node, ExOp op, int idx);
/* 1 when projection idx reaches roots[0..n) and every node they reach
 * that reads it reads it as sigmoid's operand: the values sigmoid(proj)
 * are then all the roots need of it (their derivatives too, s (1 - s)). */
int ex_sigmoid_only(const ExGraph *g, const int *roots, int n, int idx);

/* 1 for each node over constants and parameters only (g->len entries,
 * malloc'd): the same value at every element of a channel, so a kernel
 * computes it once per lane. */
unsigned char *ex_invariants(const ExGraph *g);
/* Rewrites roots[0..n) in place so that each product groups its invariant
 * factors: a product tree over factors f_i (through the products nothing
 * else uses) becomes (product of the varying f_i) * (product of the
 * invariant f_i), whose second factor is one value per lane. -C * r *
 * softplus(lam) becomes r * (-C * softplus(lam)): one multiply per element
 * and, under exp, one ex2 of r times a hoisted constant (emit_exp). */
void ex_group_invariant(ExGraph *g, int *roots, int n);

const char *ex_opname(ExOp op);
/* Writes a readable infix form of node into buf (truncated to n). */
void ex_print(const ExGraph *g, int node, char *buf, size_t n);

#endif
