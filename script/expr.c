/* Expression graph: hash-consing, constant folding, reverse-mode autodiff,
 * a float64 interpreter and a printer (see expr.h).
 *
 * Every constructor goes through ex_intern, which looks the node up in an
 * open-addressing table keyed on (op, a, b, c, idx, bits of k) before
 * appending it. Operands always exist before the node that uses them, so
 * node ids are a topological order: ex_grad walks ids downwards, ex_eval
 * upwards, and neither needs a sort.
 *
 * Simplifications assume finite values (x*0 = 0, x-x = 0, 0/x = 0): every
 * value a mixer computes is finite, and the kernels would be wrong anyway
 * if one were not.
 */
#include "expr.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken invariant (out of memory): stop with the C file and line. */
#define EX_DIE(what) ex_die(what, __FILE__, __LINE__)

static void ex_die(const char *what, const char *file, int line)
{
	fprintf(stderr, "recur: internal error: %s (%s:%d)\n", what, file, line);
	abort();
}

static const char *const ex_names[EX_NOPS] = {
	[EX_CONST] = "const", [EX_X] = "x", [EX_H] = "h", [EX_FIRST] = "first",
	[EX_PARAM] = "param", [EX_PROJ] = "proj", [EX_SEED] = "seed", [EX_TOK] = "tok",
	[EX_NEG] = "neg", [EX_EXP] = "exp", [EX_LOG] = "log", [EX_SIGMOID] = "sigmoid",
	[EX_SOFTPLUS] = "softplus", [EX_SQRT] = "sqrt", [EX_SQRTB] = "sqrtb",
	[EX_SQRTB_GRAD] = "sqrtb_grad", [EX_TANH] = "tanh", [EX_RECIP] = "recip",
	[EX_RSQRT] = "rsqrt",
	[EX_ADD] = "add", [EX_SUB] = "sub", [EX_MUL] = "mul", [EX_DIV] = "div",
	[EX_MIN] = "min", [EX_MAX] = "max", [EX_GT] = "gt",
	[EX_WHERE] = "where",
};

const char *ex_opname(ExOp op)
{
	return (op >= 0 && op < EX_NOPS && ex_names[op]) ? ex_names[op] : "?";
}

/* Number of operands of op (0 for leaves). */
static int ex_arity(ExOp op)
{
	if (op <= EX_TOK) return 0;
	if (op <= EX_RSQRT) return 1;
	if (op <= EX_GT) return 2;
	return 3;
}

/* ---- storage and hash-consing ------------------------------------------ */

void ex_init(ExGraph *g)
{
	memset(g, 0, sizeof *g);
}

void ex_free(ExGraph *g)
{
	free(g->n);
	free(g->hash);
	memset(g, 0, sizeof *g);
}

int ex_copy(ExGraph *dst, const ExGraph *src)
{
	ex_init(dst);
	if (!src->len)
		return 0;
	dst->n = malloc((size_t)src->cap * sizeof *dst->n);
	dst->hash = malloc((size_t)src->hcap * sizeof *dst->hash);
	if (!dst->n || !dst->hash) {
		ex_free(dst);
		return -1;
	}
	memcpy(dst->n, src->n, (size_t)src->len * sizeof *dst->n);
	memcpy(dst->hash, src->hash, (size_t)src->hcap * sizeof *dst->hash);
	dst->len = src->len;
	dst->cap = src->cap;
	dst->hcap = src->hcap;
	return 0;
}

static uint64_t ex_hash(const ExNode *n)
{
	uint64_t kb;
	memcpy(&kb, &n->k, sizeof kb);
	uint64_t v[6] = { (uint64_t)n->op, (uint32_t)n->a, (uint32_t)n->b,
	                  (uint32_t)n->c, (uint32_t)n->idx, kb };
	uint64_t h = 0x243f6a8885a308d3ULL;
	for (int i = 0; i < 6; i++) {
		/* splitmix64 finaliser per word: cheap and well mixed */
		h ^= v[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
		h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 27; h *= 0x94d049bb133111ebULL;
		h ^= h >> 31;
	}
	return h;
}

static int ex_same(const ExNode *x, const ExNode *y)
{
	return x->op == y->op && x->a == y->a && x->b == y->b && x->c == y->c &&
	       x->idx == y->idx && memcmp(&x->k, &y->k, sizeof x->k) == 0;
}

static void ex_rehash(ExGraph *g, int hcap)
{
	int *h = malloc((size_t)hcap * sizeof *h);
	if (!h) EX_DIE("out of memory");
	memset(h, 0xff, (size_t)hcap * sizeof *h);   /* all -1 */
	for (int id = 0; id < g->len; id++) {
		size_t i = ex_hash(&g->n[id]) & (size_t)(hcap - 1);
		while (h[i] >= 0) i = (i + 1) & (size_t)(hcap - 1);
		h[i] = id;
	}
	free(g->hash);
	g->hash = h;
	g->hcap = hcap;
}

/* The id of the node equal to nd, appending it when new. */
static int ex_intern(ExGraph *g, ExNode nd)
{
	if (2 * (g->len + 1) > g->hcap) ex_rehash(g, g->hcap ? 2 * g->hcap : 256);
	size_t mask = (size_t)g->hcap - 1;
	size_t i = ex_hash(&nd) & mask;
	for (; g->hash[i] >= 0; i = (i + 1) & mask)
		if (ex_same(&g->n[g->hash[i]], &nd)) return g->hash[i];
	if (g->len == g->cap) {
		int cap = g->cap ? 2 * g->cap : 256;
		ExNode *n = realloc(g->n, (size_t)cap * sizeof *n);
		if (!n) EX_DIE("out of memory");
		g->n = n;
		g->cap = cap;
	}
	g->n[g->len] = nd;
	g->hash[i] = g->len;
	return g->len++;
}

static ExNode ex_node(ExOp op, int a, int b, int c, int idx, double k)
{
	ExNode nd;
	memset(&nd, 0, sizeof nd);   /* padding too: nodes are compared field-wise, hashed by value */
	nd.op = op; nd.a = a; nd.b = b; nd.c = c; nd.idx = idx; nd.k = k;
	return nd;
}

/* ---- scalar semantics, shared by folding and evaluation ---------------- */

static double ex_sigmoid(double z)
{
	if (z >= 0) return 1.0 / (1.0 + exp(-z));
	double e = exp(z);
	return e / (1.0 + e);
}

static double ex_apply(ExOp op, double x, double y, double z)
{
	switch (op) {
	case EX_NEG: return -x;
	case EX_EXP: return exp(x);
	case EX_LOG: return log(x);
	case EX_SIGMOID: return ex_sigmoid(x);
	case EX_SOFTPLUS: return log1p(exp(-fabs(x))) + fmax(x, 0.0);   /* no overflow for large x */
	case EX_SQRT: case EX_SQRTB: return sqrt(x);
	case EX_SQRTB_GRAD: return 1.0 / sqrt(fmax(x, 2.5e-7));
	case EX_TANH: return tanh(x);
	case EX_RECIP: return 1.0 / x;
	case EX_RSQRT: return 1.0 / sqrt(x);
	case EX_ADD: return x + y;
	case EX_SUB: return x - y;
	case EX_MUL: return x * y;
	case EX_DIV: return x / y;
	case EX_MIN: return fmin(x, y);
	case EX_MAX: return fmax(x, y);
	case EX_GT: return x > y ? 1.0 : 0.0;
	case EX_WHERE: return x != 0.0 ? y : z;
	default: return NAN;
	}
}

/* ---- constructors ------------------------------------------------------ */

static int ex_valid(const ExGraph *g, int id) { return id >= 0 && id < g->len; }
static int ex_isconst(const ExGraph *g, int id, double k)
{
	return g->n[id].op == EX_CONST && g->n[id].k == k;
}

int ex_const(ExGraph *g, double k)
{
	if (k == 0.0) k = 0.0;   /* -0 and +0 are one node */
	if (isnan(k)) k = NAN;   /* one NaN bit pattern */
	return ex_intern(g, ex_node(EX_CONST, -1, -1, -1, 0, k));
}

int ex_leaf(ExGraph *g, ExOp op, int idx)
{
	if (op == EX_X || op == EX_H || op == EX_FIRST) idx = 0;
	else if (op != EX_PARAM && op != EX_PROJ && op != EX_SEED && op != EX_TOK) return -1;
	if (idx < 0) return -1;
	return ex_intern(g, ex_node(op, -1, -1, -1, idx, 0.0));
}

/* Folds when the result is finite; a non-finite constant stays a node so
 * that the mistake is visible in the graph rather than baked in. */
static int ex_fold(ExGraph *g, ExOp op, double x, double y, double z)
{
	double v = ex_apply(op, x, y, z);
	return isfinite(v) ? ex_const(g, v) : -1;
}

/* u when node a is 2 * u (or u * 2), else -1 */
static int ex_twice(const ExGraph *g, int a)
{
	const ExNode *n = &g->n[a];
	if (n->op != EX_MUL) return -1;
	if (ex_isconst(g, n->a, 2)) return n->b;
	if (ex_isconst(g, n->b, 2)) return n->a;
	return -1;
}

int ex_un(ExGraph *g, ExOp op, int a)
{
	if (ex_arity(op) != 1 || !ex_valid(g, a)) return -1;
	const ExNode na = g->n[a];
	if (na.op == EX_CONST) {
		int f = ex_fold(g, op, na.k, 0, 0);
		if (f >= 0) return f;
	}
	if (op == EX_NEG && na.op == EX_NEG) return na.a;
	/* exp(2u) = exp(u)^2: the recurrences ask for a^2 as exp(2 log_a) where
	 * a = exp(log_a) is a node already; built as a square, every kernel and
	 * every derivative of it shares a's one special-function op (grouping
	 * invariant factors would otherwise fold the 2 into a second exp) */
	if (op == EX_EXP && ex_twice(g, a) >= 0) {
		/* exp(2^n u) as n squares of exp(u): the chain of doublings is
		 * walked here, not recursed into (a script can nest thousands) */
		int n = 0, u = a;
		for (; ex_twice(g, u) >= 0; n++) u = ex_twice(g, u);
		int e = ex_un(g, EX_EXP, u);
		for (int i = 0; i < n; i++) e = ex_bin(g, EX_MUL, e, e);
		return e;
	}
	return ex_intern(g, ex_node(op, a, -1, -1, 0, 0.0));
}

static int ex_commutes(ExOp op)
{
	return op == EX_ADD || op == EX_MUL || op == EX_MIN || op == EX_MAX;
}

int ex_bin(ExGraph *g, ExOp op, int a, int b)
{
	if (ex_arity(op) != 2 || !ex_valid(g, a) || !ex_valid(g, b)) return -1;
	if (g->n[a].op == EX_CONST && g->n[b].op == EX_CONST) {
		int f = ex_fold(g, op, g->n[a].k, g->n[b].k, 0);
		if (f >= 0) return f;
	}
	if (ex_commutes(op) && a > b) { int t = a; a = b; b = t; }   /* a*b and b*a: one node */
	const ExNode na = g->n[a], nb = g->n[b];
	switch (op) {
	case EX_ADD:
		if (ex_isconst(g, a, 0)) return b;
		if (ex_isconst(g, b, 0)) return a;
		if (a == b) return ex_bin(g, EX_MUL, a, ex_const(g, 2));   /* a product rule's two equal terms */
		if (nb.op == EX_NEG) return ex_bin(g, EX_SUB, a, nb.a);
		if (na.op == EX_NEG) return ex_bin(g, EX_SUB, b, na.a);
		break;
	case EX_SUB:
		if (ex_isconst(g, b, 0)) return a;
		if (ex_isconst(g, a, 0)) return ex_un(g, EX_NEG, b);
		if (a == b) return ex_const(g, 0);
		if (nb.op == EX_NEG) return ex_bin(g, EX_ADD, a, nb.a);
		break;
	case EX_MUL:
		if (ex_isconst(g, a, 0) || ex_isconst(g, b, 0)) return ex_const(g, 0);
		if (ex_isconst(g, a, 1)) return b;
		if (ex_isconst(g, b, 1)) return a;
		if (ex_isconst(g, a, -1)) return ex_un(g, EX_NEG, b);
		if (ex_isconst(g, b, -1)) return ex_un(g, EX_NEG, a);
		break;
	case EX_DIV:
		if (ex_isconst(g, b, 1)) return a;
		if (ex_isconst(g, b, -1)) return ex_un(g, EX_NEG, a);
		if (ex_isconst(g, a, 0)) return ex_const(g, 0);
		break;
	case EX_MIN: case EX_MAX:
		if (a == b) return a;
		break;
	case EX_GT:
		if (a == b) return ex_const(g, 0);
		break;
	default:
		break;
	}
	return ex_intern(g, ex_node(op, a, b, -1, 0, 0.0));
}

int ex_where(ExGraph *g, int cond, int a, int b)
{
	if (!ex_valid(g, cond) || !ex_valid(g, a) || !ex_valid(g, b)) return -1;
	if (g->n[cond].op == EX_CONST) return g->n[cond].k != 0.0 ? a : b;
	if (a == b) return a;
	return ex_intern(g, ex_node(EX_WHERE, cond, a, b, 0, 0.0));
}

int ex_rebuild(ExGraph *g, int node, int a, int b, int c)
{
	if (!ex_valid(g, node)) return -1;
	ExOp op = g->n[node].op;
	switch (ex_arity(op)) {
	case 0: return node;
	case 1: return ex_un(g, op, a);
	case 2: return ex_bin(g, op, a, b);
	default: return ex_where(g, a, b, c);
	}
}

/* ---- reverse mode ------------------------------------------------------ */

/* adj[id] += v, where -1 stands for a zero adjoint not built yet. */
static void ex_acc(ExGraph *g, int *adj, int id, int v)
{
	adj[id] = adj[id] < 0 ? v : ex_bin(g, EX_ADD, adj[id], v);
}

/* Adds the contributions of node id, with adjoint d, to its operands.
 * need[] says which operands lead to a requested leaf: the others get no
 * adjoint, so no derivative nodes are built that nobody reads. */
static void ex_backprop(ExGraph *g, int *adj, const char *need, int id, int d)
{
	const ExNode nd = g->n[id];   /* a copy: building nodes may move g->n */
	int a = nd.a, b = nd.b, c = nd.c, v = id;
	int na = a >= 0 && need[a], nb = b >= 0 && need[b];
	int zero = ex_const(g, 0), one = ex_const(g, 1);
	int t;
	switch (nd.op) {
	case EX_NEG: if (na) ex_acc(g, adj, a, ex_un(g, EX_NEG, d)); break;
	case EX_EXP: if (na) ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, v)); break;
	case EX_LOG: if (na) ex_acc(g, adj, a, ex_bin(g, EX_DIV, d, a)); break;
	case EX_SIGMOID:   /* s (1 - s) (as s - s^2, one fma, HGRN's bwd_apply spilled 16-40 bytes) */
		if (na) {
			t = ex_bin(g, EX_MUL, v, ex_bin(g, EX_SUB, one, v));
			ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, t));
		}
		break;
	case EX_SOFTPLUS:  /* sigmoid */
		if (na) ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, ex_un(g, EX_SIGMOID, a)));
		break;
	case EX_SQRT:      /* 0.5 / sqrt */
		if (na) ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, ex_bin(g, EX_DIV, ex_const(g, 0.5), v)));
		break;
	case EX_SQRTB:     /* the bounded derivative, 0.5 sqrtb_grad: the 0.5 joins a product's
	                    * constants (1 - a^2's 2 a cancels it), the node is one rsqrt */
		if (na) {
			t = ex_bin(g, EX_MUL, ex_const(g, 0.5), ex_un(g, EX_SQRTB_GRAD, a));
			ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, t));
		}
		break;
	case EX_SQRTB_GRAD:
		/* Treated as constant: it only appears inside first derivatives,
		 * and nothing here takes second derivatives. */
		break;
	case EX_TANH:      /* 1 - t^2 */
		if (na) {
			t = ex_bin(g, EX_SUB, one, ex_bin(g, EX_MUL, v, v));
			ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, t));
		}
		break;
	case EX_RECIP:     /* -1/x^2 = -recip^2 */
		if (na) ex_acc(g, adj, a, ex_un(g, EX_NEG, ex_bin(g, EX_MUL, d, ex_bin(g, EX_MUL, v, v))));
		break;
	case EX_RSQRT:     /* -0.5 rsqrt^3 */
		if (na) {
			t = ex_bin(g, EX_MUL, ex_const(g, -0.5), ex_bin(g, EX_MUL, v, ex_bin(g, EX_MUL, v, v)));
			ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, t));
		}
		break;
	case EX_ADD:
		if (na) ex_acc(g, adj, a, d);
		if (nb) ex_acc(g, adj, b, d);
		break;
	case EX_SUB:
		if (na) ex_acc(g, adj, a, d);
		if (nb) ex_acc(g, adj, b, ex_un(g, EX_NEG, d));
		break;
	case EX_MUL:
		if (na) ex_acc(g, adj, a, ex_bin(g, EX_MUL, d, b));
		if (nb) ex_acc(g, adj, b, ex_bin(g, EX_MUL, d, a));
		break;
	case EX_DIV:       /* d(a/b)/db = -(a/b)/b */
		if (na) ex_acc(g, adj, a, ex_bin(g, EX_DIV, d, b));
		if (nb) ex_acc(g, adj, b, ex_un(g, EX_NEG, ex_bin(g, EX_DIV, ex_bin(g, EX_MUL, d, v), b)));
		break;
	case EX_MIN: case EX_MAX: {
		/* the operand that was selected gets the adjoint; ties go to a for
		 * min, to b for max, matching which one fmin/fmax-by-GT picks */
		int gt = ex_bin(g, EX_GT, a, b);
		int to_a = nd.op == EX_MAX ? ex_where(g, gt, d, zero) : ex_where(g, gt, zero, d);
		int to_b = nd.op == EX_MAX ? ex_where(g, gt, zero, d) : ex_where(g, gt, d, zero);
		if (na) ex_acc(g, adj, a, to_a);
		if (nb) ex_acc(g, adj, b, to_b);
		break;
	}
	case EX_GT:
		break;         /* piecewise constant */
	case EX_WHERE:     /* the condition gets nothing */
		if (nb) ex_acc(g, adj, b, ex_where(g, a, d, zero));
		if (c >= 0 && need[c]) ex_acc(g, adj, c, ex_where(g, a, zero, d));
		break;
	default:
		break;         /* leaves */
	}
}

void ex_grad(ExGraph *g, int nout, const int *outs, const int *seeds,
             int nleaf, const int *leaves, int *grads)
{
	int n0 = g->len;   /* nodes built below have larger ids and are never visited */
	char *need = calloc((size_t)n0 + 1, 1);
	int *adj = malloc(((size_t)n0 + 1) * sizeof *adj);
	if (!need || !adj) EX_DIE("out of memory");
	for (int i = 0; i < n0; i++) adj[i] = -1;

	for (int i = 0; i < nleaf; i++)
		if (leaves[i] >= 0 && leaves[i] < n0) need[leaves[i]] = 1;
	for (int id = 0; id < n0; id++) {
		const ExNode *nd = &g->n[id];
		if ((nd->a >= 0 && need[nd->a]) || (nd->b >= 0 && need[nd->b]) ||
		    (nd->c >= 0 && need[nd->c]))
			need[id] = 1;
	}
	for (int j = 0; j < nout; j++)
		if (outs[j] >= 0 && outs[j] < n0 && need[outs[j]] && seeds[j] >= 0)
			ex_acc(g, adj, outs[j], seeds[j]);
	/* ids are a topological order: every user of a node has a larger id,
	 * so a node's adjoint is complete when the walk reaches it */
	for (int id = n0 - 1; id >= 0; id--)
		if (adj[id] >= 0) ex_backprop(g, adj, need, id, adj[id]);

	for (int i = 0; i < nleaf; i++) {
		int l = leaves[i];
		grads[i] = (l >= 0 && l < n0 && adj[l] >= 0) ? adj[l] : ex_const(g, 0);
	}
	free(need);
	free(adj);
}

/* ---- evaluation and queries -------------------------------------------- */

/* Whether id is one of roots[0..n). */
static int roots_has(const int *roots, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (roots[i] == id) return 1;
	return 0;
}

/* Marks the nodes reachable from node (mark has node+1 entries). */
static void ex_reach(const ExGraph *g, int node, char *mark)
{
	mark[node] = 1;
	for (int id = node; id >= 0; id--) {   /* operands have smaller ids */
		if (!mark[id]) continue;
		const ExNode *nd = &g->n[id];
		if (nd->a >= 0) mark[nd->a] = 1;
		if (nd->b >= 0) mark[nd->b] = 1;
		if (nd->c >= 0) mark[nd->c] = 1;
	}
}

static double ex_leafval(const double *arr, int idx)
{
	return arr ? arr[idx] : NAN;
}

double ex_eval(const ExGraph *g, int node, const ExEnv *env)
{
	if (!ex_valid(g, node)) return NAN;
	char *mark = calloc((size_t)node + 1, 1);
	double *val = malloc(((size_t)node + 1) * sizeof *val);
	if (!mark || !val) EX_DIE("out of memory");
	ex_reach(g, node, mark);
	for (int id = 0; id <= node; id++) {
		if (!mark[id]) continue;
		const ExNode *nd = &g->n[id];
		switch (nd->op) {
		case EX_CONST: val[id] = nd->k; break;
		case EX_X: val[id] = env->x; break;
		case EX_H: val[id] = env->h; break;
		case EX_FIRST: val[id] = env->first; break;
		case EX_PARAM: val[id] = ex_leafval(env->param, nd->idx); break;
		case EX_PROJ: val[id] = ex_leafval(env->proj, nd->idx); break;
		case EX_SEED: val[id] = ex_leafval(env->seed, nd->idx); break;
		case EX_TOK: val[id] = ex_leafval(env->tok, nd->idx); break;
		default:
			val[id] = ex_apply(nd->op, val[nd->a], nd->b >= 0 ? val[nd->b] : 0,
			                   nd->c >= 0 ? val[nd->c] : 0);
		}
	}
	double r = val[node];
	free(mark);
	free(val);
	return r;
}

int ex_depends(const ExGraph *g, int node, ExOp op, int idx)
{
	if (!ex_valid(g, node)) return 0;
	char *mark = calloc((size_t)node + 1, 1);
	if (!mark) EX_DIE("out of memory");
	ex_reach(g, node, mark);
	int found = 0;
	for (int id = 0; id <= node && !found; id++)
		if (mark[id] && g->n[id].op == op && (idx < 0 || g->n[id].idx == idx)) found = 1;
	free(mark);
	return found;
}

int ex_sigmoid_only(const ExGraph *g, const int *roots, int n, int idx)
{
	char *mark = calloc((size_t)g->len + 1, 1);
	if (!mark) EX_DIE("out of memory");
	for (int i = 0; i < n; i++)
		if (ex_valid(g, roots[i])) ex_reach(g, roots[i], mark);
	int uses = 0, other = 0;
	for (int id = 0; id < g->len; id++) {
		if (!mark[id]) continue;
		const ExNode *nd = &g->n[id];
		int ops[3] = { nd->a, nd->b, nd->c };
		for (int k = 0; k < 3; k++) {
			if (ops[k] < 0 || g->n[ops[k]].op != EX_PROJ || g->n[ops[k]].idx != idx) continue;
			if (nd->op == EX_SIGMOID && k == 0) uses++;
			else other++;
		}
		if (nd->op == EX_PROJ && nd->idx == idx && roots_has(roots, n, id)) other++;   /* a root that is the leaf itself */
	}
	free(mark);
	return uses > 0 && other == 0;
}

/* ---- lane-invariant products ------------------------------------------- */

unsigned char *ex_invariants(const ExGraph *g)
{
	unsigned char *inv = calloc((size_t)g->len + 1, 1);
	if (!inv) EX_DIE("out of memory");
	/* operands come before their users: one pass in id order */
	for (int id = 0; id < g->len; id++) {
		const ExNode *n = &g->n[id];
		if (ex_arity(n->op) == 0)
			inv[id] = n->op == EX_CONST || n->op == EX_PARAM;
		else
			inv[id] = (n->a < 0 || inv[n->a]) && (n->b < 0 || inv[n->b]) && (n->c < 0 || inv[n->c]);
	}
	return inv;
}

/* The rewrite below walks product trees of any depth and width (a product
 * of 40000 factors, a chain of 40000 nested functions are scripts a user
 * can write), so it keeps its own stack on the heap instead of recursing,
 * and its factor lists grow as needed. It builds exactly the nodes, in
 * exactly the order, of the recursive definition written in the comments:
 * node ids, and so the kernels, do not depend on how the walk is done. */

/* A growable array of ints. */
typedef struct {
	int *v;
	size_t n, cap;
} GrpInts;

static void grp_reserve(GrpInts *a, size_t n)
{
	if (n <= a->cap) return;
	size_t cap = a->cap ? a->cap : 64;
	while (cap < n) {
		if (cap > SIZE_MAX / 2 / sizeof *a->v) EX_DIE("out of memory");
		cap *= 2;
	}
	int *v = realloc(a->v, cap * sizeof *v);
	if (!v) EX_DIE("out of memory");
	a->v = v;
	a->cap = cap;
}

static void grp_push(GrpInts *a, int x)
{
	grp_reserve(a, a->n + 1);
	a->v[a->n++] = x;
}

/* One node being rewritten: its children (kids[base .. base+n)) are
 * rewritten first, their results go to kids[base+n .. base+2n). A product
 * has two phases: first its factors; then, when they are all invariant or
 * all varying, its two operands (phase 2). */
typedef struct {
	int id, phase;
	size_t base, n, next;
} GrpFrame;

typedef struct {
	ExGraph *g;
	int *uses, *memo;   /* of the nodes before the rewrite: only these are rewritten */
	unsigned char *inv; /* invariance of every node, new ones included (grp_inv) */
	int ninv;           /* entries of inv computed: ids below ninv */
	int minus1;         /* the constant -1, a factor for each sign a product holds */
	size_t invcap;
	GrpInts kids;       /* the frames' children and results, a stack */
	GrpFrame *fr;
	size_t nfr, frcap;
} ExGroup;

/* Invariance of any node, new ones included. New nodes are built from
 * older ones, so one pass in id order over the ids not seen yet keeps the
 * array complete (the recursive definition, without the recursion). */
static int grp_inv(ExGroup *x, int id)
{
	if (id >= x->ninv) {
		size_t need = (size_t)x->g->len;
		if (need > x->invcap) {
			size_t cap = x->invcap * 2 > need ? x->invcap * 2 : need;
			unsigned char *inv = realloc(x->inv, cap);
			if (!inv) EX_DIE("out of memory");
			x->inv = inv;
			x->invcap = cap;
		}
		for (int i = x->ninv; i < x->g->len; i++) {
			const ExNode *n = &x->g->n[i];
			if (ex_arity(n->op) == 0)
				x->inv[i] = n->op == EX_CONST || n->op == EX_PARAM;
			else
				x->inv[i] = (n->a < 0 || x->inv[n->a]) && (n->b < 0 || x->inv[n->b]) &&
				            (n->c < 0 || x->inv[n->c]);
		}
		x->ninv = x->g->len;
	}
	return x->inv[id];
}

/* A product folds into its user when that user is its only one. */
static int grp_folds(const ExGroup *x, int id)
{
	return x->g->n[id].op == EX_MUL && x->uses[id] == 1;
}

/* Appends the factors of product id, left to right, through the products
 * only it uses (recursively: factors(a) then factors(b)), and through the
 * negations only it uses: -u is the factors -1, then u's. The signs then
 * join the product's constants: the derivative of 1 - a*a carries
 * -(d * sqrtb_grad * 0.5) into 2 * a * (...), whose 2, -1 and 0.5 are one
 * -1, no instruction. */
static void grp_factors(ExGroup *x, int id, GrpInts *out)
{
	GrpInts st = { 0 };
	grp_push(&st, x->g->n[id].b);
	grp_push(&st, x->g->n[id].a);
	while (st.n) {
		int o = st.v[--st.n];
		if (grp_folds(x, o)) {
			grp_push(&st, x->g->n[o].b);
			grp_push(&st, x->g->n[o].a);
		} else if (x->g->n[o].op == EX_NEG && x->uses[o] == 1) {
			grp_push(out, x->minus1);
			grp_push(&st, x->g->n[o].a);
		} else {
			grp_push(out, o);
		}
	}
	free(st.v);
}

/* Opens a frame for id in the given phase, with its children on the stack:
 * phase 1 of a product: its factors; phase 2: its operands; any other
 * node: its operands a, b, c (-1 where absent). */
static void grp_open(ExGroup *x, int id, int phase)
{
	if (x->nfr == x->frcap) {
		size_t cap = x->frcap ? 2 * x->frcap : 64;
		GrpFrame *fr = realloc(x->fr, cap * sizeof *fr);
		if (!fr) EX_DIE("out of memory");
		x->fr = fr;
		x->frcap = cap;
	}
	const ExNode n = x->g->n[id];
	size_t base = x->kids.n;
	if (n.op == EX_MUL && phase == 1) {
		grp_factors(x, id, &x->kids);
	} else if (ex_arity(n.op) > 0) {
		grp_push(&x->kids, n.a);
		grp_push(&x->kids, n.b);
		grp_push(&x->kids, n.c);
	}
	size_t nk = x->kids.n - base;
	grp_reserve(&x->kids, base + 2 * nk);
	x->kids.n = base + 2 * nk;
	x->fr[x->nfr++] = (GrpFrame){ .id = id, .phase = phase, .base = base, .n = nk, .next = 0 };
}

static int grp_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Product of factors f[0..nf) when some are invariant and some are not:
 * (product of the varying ones, in order) * (product of the invariant ones
 * in id order: equal groups are one node). -1 when they are not mixed. */
static int grp_regroup(ExGroup *x, int *f, size_t nf)
{
	size_t nv = 0, nk = 0;
	for (size_t i = 0; i < nf; i++)
		if (grp_inv(x, f[i])) nk++; else nv++;
	if (nv == 0 || nk == 0)
		return -1;
	int v = -1, k = -1;
	for (size_t i = 0; i < nf; i++) {
		if (grp_inv(x, f[i])) continue;
		v = v < 0 ? f[i] : ex_bin(x->g, EX_MUL, v, f[i]);
	}
	/* the invariant factors gathered and sorted: the same sequence of
	 * products as taking the lowest id left, one at a time */
	size_t j = 0;
	for (size_t i = 0; i < nf; i++)
		if (grp_inv(x, f[i])) f[j++] = f[i];
	qsort(f, j, sizeof *f, grp_cmp_int);
	for (size_t i = 0; i < j; i++)
		k = k < 0 ? f[i] : ex_bin(x->g, EX_MUL, k, f[i]);
	return ex_bin(x->g, EX_MUL, v, k);
}

/* The frame on top has all its children rewritten: its own result, or -1
 * when it goes on to phase 2 (then the frame was reopened). */
static int grp_close(ExGroup *x)
{
	GrpFrame F = x->fr[x->nfr - 1];
	int *res = x->kids.v + F.base + F.n;
	const ExNode n = x->g->n[F.id];
	int r;
	if (n.op == EX_MUL && F.phase == 1) {
		r = grp_regroup(x, res, F.n);
		if (r < 0) {
			/* not mixed: (rewrite of a) * (rewrite of b); a product it
			 * folds is not mixed either (its factors are some of these),
			 * so it starts at its own phase 2 */
			x->nfr--;
			x->kids.n = F.base;
			grp_open(x, F.id, 2);
			return -1;
		}
	} else if (n.op == EX_MUL) {
		r = ex_bin(x->g, EX_MUL, res[0], res[1]);
	} else {
		r = ex_arity(n.op) == 0 ? F.id : ex_rebuild(x->g, F.id, res[0], res[1], res[2]);
	}
	if (r < 0) EX_DIE("out of memory");
	x->nfr--;
	x->kids.n = F.base;
	return r;
}

/* The rewrite of root: every node reached is rewritten once (memo), its
 * children before itself, left to right. */
static int grp_rewrite(ExGroup *x, int root)
{
	if (x->memo[root] >= 0) return x->memo[root];
	grp_open(x, root, 1);
	while (x->nfr) {
		GrpFrame *F = &x->fr[x->nfr - 1];
		if (F->next < F->n) {
			size_t i = F->next;
			int c = x->kids.v[F->base + i];
			if (c < 0 || x->memo[c] >= 0) {
				x->kids.v[F->base + F->n + i] = c < 0 ? -1 : x->memo[c];
				F->next++;
			} else {
				/* a product folded into a phase-2 parent skips its phase 1 */
				int phase = F->phase == 2 && grp_folds(x, c) ? 2 : 1;
				grp_open(x, c, phase);
			}
			continue;
		}
		int id = F->id;
		int r = grp_close(x);
		if (r < 0) continue;
		x->memo[id] = r;
		if (x->nfr) {
			GrpFrame *P = &x->fr[x->nfr - 1];
			x->kids.v[P->base + P->n + P->next] = r;
			P->next++;
		}
	}
	return x->memo[root];
}

void ex_group_invariant(ExGraph *g, int *roots, int n)
{
	ExGroup x = { .g = g };
	x.minus1 = ex_const(g, -1);   /* before the arrays are sized: a node they cover */
	x.uses = calloc((size_t)g->len + 1, sizeof *x.uses);
	x.memo = malloc(((size_t)g->len + 1) * sizeof *x.memo);
	char *mark = calloc((size_t)g->len + 1, 1);
	if (!x.uses || !x.memo || !mark) EX_DIE("out of memory");
	x.inv = ex_invariants(g);
	x.ninv = g->len;
	x.invcap = (size_t)g->len + 1;
	for (int i = 0; i < n; i++)
		if (ex_valid(g, roots[i])) ex_reach(g, roots[i], mark);
	for (int id = 0; id < g->len; id++) {
		x.memo[id] = -1;
		if (!mark[id]) continue;
		const ExNode *nd = &g->n[id];
		int ops[3] = { nd->a, nd->b, nd->c };
		for (int k = 0; k < 3; k++)
			if (ops[k] >= 0) x.uses[ops[k]]++;
	}
	/* a root is used by whoever asked for it: never folded into a user */
	for (int i = 0; i < n; i++)
		if (ex_valid(g, roots[i])) x.uses[roots[i]]++;
	for (int i = 0; i < n; i++)
		if (ex_valid(g, roots[i])) roots[i] = grp_rewrite(&x, roots[i]);
	free(x.uses);
	free(x.memo);
	free(x.inv);
	free(x.kids.v);
	free(x.fr);
	free(mark);
}

/* ---- printing ---------------------------------------------------------- */

typedef struct {
	char *buf;
	size_t n, pos;   /* pos < n always; the buffer is kept NUL-terminated */
} ExOut;

static void ex_puts(ExOut *o, const char *s)
{
	while (*s && o->pos + 1 < o->n) o->buf[o->pos++] = *s++;
	o->buf[o->pos] = 0;
}

static int ex_full(const ExOut *o) { return o->pos + 1 >= o->n; }

/* Nesting printed before the rest of a subexpression becomes "...": the
 * printer recurses, and a chain of thousands of nested calls is a script
 * a user can write. */
#define EX_PRINT_DEPTH 200

static void ex_pr(const ExGraph *g, int id, ExOut *o, int depth)
{
	if (ex_full(o)) return;   /* stops the walk too: a shared DAG printed as a tree can be huge */
	if (depth > EX_PRINT_DEPTH) {
		ex_puts(o, "...");
		return;
	}
	const ExNode *nd = &g->n[id];
	char tmp[64];
	static const char *const infix[EX_NOPS] = {
		[EX_ADD] = " + ", [EX_SUB] = " - ", [EX_MUL] = " * ", [EX_DIV] = " / ", [EX_GT] = " > ",
	};
	switch (ex_arity(nd->op)) {
	case 0:
		if (nd->op == EX_CONST) snprintf(tmp, sizeof tmp, "%.9g", nd->k);
		else if (nd->op == EX_X || nd->op == EX_H || nd->op == EX_FIRST)
			snprintf(tmp, sizeof tmp, "%s", ex_opname(nd->op));
		else snprintf(tmp, sizeof tmp, "%s%d", ex_opname(nd->op), nd->idx);
		ex_puts(o, tmp);
		return;
	case 1:
		ex_puts(o, nd->op == EX_NEG ? "-(" : ex_opname(nd->op));
		if (nd->op != EX_NEG) ex_puts(o, "(");
		ex_pr(g, nd->a, o, depth + 1);
		ex_puts(o, ")");
		return;
	case 2:
		if (infix[nd->op]) {
			ex_puts(o, "(");
			ex_pr(g, nd->a, o, depth + 1);
			ex_puts(o, infix[nd->op]);
			ex_pr(g, nd->b, o, depth + 1);
			ex_puts(o, ")");
		} else {
			ex_puts(o, ex_opname(nd->op));
			ex_puts(o, "(");
			ex_pr(g, nd->a, o, depth + 1);
			ex_puts(o, ", ");
			ex_pr(g, nd->b, o, depth + 1);
			ex_puts(o, ")");
		}
		return;
	default:
		ex_puts(o, "where(");
		ex_pr(g, nd->a, o, depth + 1);
		ex_puts(o, ", ");
		ex_pr(g, nd->b, o, depth + 1);
		ex_puts(o, ", ");
		ex_pr(g, nd->c, o, depth + 1);
		ex_puts(o, ")");
	}
}

void ex_print(const ExGraph *g, int node, char *buf, size_t n)
{
	if (!n) return;
	ExOut o = { buf, n, 0 };
	buf[0] = 0;
	if (!ex_valid(g, node)) { ex_puts(&o, "<invalid>"); return; }
	ex_pr(g, node, &o, 0);
}
