/* The expression graph's reverse mode against finite differences.
 *
 *   ctest -R test_autodiff      (or ./build/tests/test_autodiff)
 *
 * 1. every elementary op, at several points (negative ones included), with
 *    a seed that is not 1: ex_grad evaluated by ex_eval vs a five-point
 *    central difference of ex_eval;
 * 2. the RG-LRU and SAMU cells (log_a, b, y from leaves, as in
 *    spec/architectures.md) with EX_SEED adjoints, at reset and non-reset
 *    positions: the gradient wrt every leaf;
 * 3. hash-consing and folding (a*b == b*a, x+0 == x, ...), the bounded
 *    derivative of sqrtb near 0, the interpreter's stable softplus;
 * 4. ex_sigmoid_only: which projections a cell and its gradients read
 *    only through sigmoid (RG-LRU's both, SAMU's v), and graphs that read
 *    one raw.
 * One line per check; exit 0 when all pass.
 */
#include "expr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "checkf.h"

/* Leaf values, addressable by (op, idx) so that one can be perturbed. */
typedef struct {
	double x, h, first;
	double param[8], proj[8], seed[4];
} Vals;

typedef struct { ExOp op; int idx; const char *name; } Leaf;

static double *slot(Vals *v, Leaf l)
{
	switch (l.op) {
	case EX_X: return &v->x;
	case EX_H: return &v->h;
	case EX_FIRST: return &v->first;
	case EX_PARAM: return &v->param[l.idx];
	case EX_PROJ: return &v->proj[l.idx];
	default: return &v->seed[l.idx];
	}
}

static double eval(const ExGraph *g, int node, const Vals *v)
{
	ExEnv env = { v->x, v->h, v->first, v->param, v->proj, v->seed, NULL };
	return ex_eval(g, node, &env);
}

/* sum_j seed_j * out_j, the scalar whose gradient ex_grad builds */
static double objective(const ExGraph *g, int nout, const int *outs, const int *seeds, const Vals *v)
{
	double s = 0;
	for (int j = 0; j < nout; j++) s += eval(g, seeds[j], v) * eval(g, outs[j], v);
	return s;
}

/* Five-point central difference: O(h^4), so h can stay large enough that
 * rounding does not dominate. */
static double fd(const ExGraph *g, int nout, const int *outs, const int *seeds, Vals v, Leaf l)
{
	double *p = slot(&v, l), x0 = *p, h = 1e-4 * fmax(1.0, fabs(x0)), f[4];
	const double off[4] = { -2, -1, 1, 2 };
	for (int i = 0; i < 4; i++) {
		*p = x0 + off[i] * h;
		f[i] = objective(g, nout, outs, seeds, &v);
	}
	return (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h);
}

static int close_rel(double got, double want, double tol)
{
	return fabs(got - want) <= tol * fmax(1e-3, fabs(want));
}

/* Gradient of outs wrt leaves at v vs finite differences; leaves that are
 * not differentiable (a where condition) must get a constant 0 node. */
static void check_grads(ExGraph *g, const char *what, int nout, const int *outs, const int *seeds,
                        int nleaf, const Leaf *leaves, const Vals *v, double tol)
{
	int ids[16] = { 0 }, grads[16] = { 0 };
	for (int i = 0; i < nleaf; i++) ids[i] = ex_leaf(g, leaves[i].op, leaves[i].idx);
	ex_grad(g, nout, outs, seeds, nleaf, ids, grads);
	for (int i = 0; i < nleaf; i++) {
		if (leaves[i].op == EX_FIRST) {
			check(g->n[grads[i]].op == EX_CONST && g->n[grads[i]].k == 0,
			      "%s: d/d%s is the constant 0 (a where condition)", what, leaves[i].name);
			continue;
		}
		double got = eval(g, grads[i], v), want = fd(g, nout, outs, seeds, *v, leaves[i]);
		check(close_rel(got, want, tol) && isfinite(got), "%s: d/d%s = %.12g, fd %.12g", what,
		      leaves[i].name, got, want);
	}
}

/* ---- 1. elementary ops ------------------------------------------------- */

static void test_unary(void)
{
	static const struct { ExOp op; int positive; } ops[] = {
		{ EX_NEG, 0 }, { EX_EXP, 0 }, { EX_LOG, 1 }, { EX_SIGMOID, 0 }, { EX_SOFTPLUS, 0 },
		{ EX_SQRT, 1 }, { EX_SQRTB, 1 }, { EX_TANH, 0 }, { EX_RECIP, 0 }, { EX_RSQRT, 1 },
	};
	static const double any[] = { -2.3, -0.7, 0.4, 1.9 }, pos[] = { 0.3, 1.1, 2.7 };
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
		const double *pts = ops[o].positive ? pos : any;
		int npts = ops[o].positive ? 3 : 4;
		for (int p = 0; p < npts; p++) {
			ExGraph g;
			ex_init(&g);
			int x = ex_leaf(&g, EX_X, 0);
			int out = ex_un(&g, ops[o].op, x), seed = ex_leaf(&g, EX_SEED, 0);
			Vals v = { .x = pts[p], .seed = { 1.7 } };
			Leaf l = { EX_X, 0, "x" };
			char what[64];
			snprintf(what, sizeof what, "%s(%g)", ex_opname(ops[o].op), pts[p]);
			check_grads(&g, what, 1, &out, &seed, 1, &l, &v, 1e-6);
			ex_free(&g);
		}
	}
}

static void test_binary(void)
{
	static const ExOp ops[] = { EX_ADD, EX_SUB, EX_MUL, EX_DIV, EX_MIN, EX_MAX, EX_GT };
	static const double pts[][2] = { { 0.7, -1.3 }, { -2.1, 0.4 }, { 1.5, 2.5 }, { -0.6, -1.8 } };
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
		for (int p = 0; p < 4; p++) {
			ExGraph g;
			ex_init(&g);
			int a = ex_leaf(&g, EX_PARAM, 0), b = ex_leaf(&g, EX_PARAM, 1);
			int out = ex_bin(&g, ops[o], a, b), seed = ex_leaf(&g, EX_SEED, 0);
			Vals v = { .param = { pts[p][0], pts[p][1] }, .seed = { -0.9 } };
			Leaf l[2] = { { EX_PARAM, 0, "a" }, { EX_PARAM, 1, "b" } };
			char what[64];
			snprintf(what, sizeof what, "%s(%g, %g)", ex_opname(ops[o]), pts[p][0], pts[p][1]);
			check_grads(&g, what, 1, &out, &seed, 2, l, &v, 1e-6);
			ex_free(&g);
		}
	}
	/* one operand used twice: both contributions must add up */
	static const ExOp self[] = { EX_MUL, EX_DIV, EX_ADD };
	for (size_t o = 0; o < 3; o++) {
		ExGraph g;
		ex_init(&g);
		int x = ex_leaf(&g, EX_X, 0), sx = ex_un(&g, EX_SIGMOID, x);
		int out = ex_bin(&g, self[o], ex_bin(&g, self[o], sx, x), x), seed = ex_leaf(&g, EX_SEED, 0);
		Vals v = { .x = -0.8, .seed = { 1.3 } };
		Leaf l = { EX_X, 0, "x" };
		char what[64];
		snprintf(what, sizeof what, "%s(%s(sigmoid(x), x), x)", ex_opname(self[o]), ex_opname(self[o]));
		check_grads(&g, what, 1, &out, &seed, 1, &l, &v, 1e-6);
		ex_free(&g);
	}
}

static void test_where(void)
{
	for (int c = 0; c < 2; c++) {
		ExGraph g;
		ex_init(&g);
		int cond = ex_leaf(&g, EX_FIRST, 0), a = ex_leaf(&g, EX_PARAM, 0), b = ex_leaf(&g, EX_PARAM, 1);
		int out = ex_where(&g, cond, ex_un(&g, EX_EXP, a), ex_bin(&g, EX_MUL, a, b));
		int seed = ex_leaf(&g, EX_SEED, 0);
		Vals v = { .first = c, .param = { -0.4, 2.2 }, .seed = { 0.6 } };
		Leaf l[3] = { { EX_FIRST, 0, "cond" }, { EX_PARAM, 0, "a" }, { EX_PARAM, 1, "b" } };
		char what[64];
		snprintf(what, sizeof what, "where(%d, exp(a), a*b)", c);
		check_grads(&g, what, 1, &out, &seed, 3, l, &v, 1e-6);
		ex_free(&g);
	}
}

/* ---- 2. the two cells -------------------------------------------------- */

/* log_a, b, y of RG-LRU: pa = proj 0, px = proj 1, lam = param 4 */
static void build_rglru(ExGraph *g, int out[3])
{
	int x = ex_leaf(g, EX_X, 0), first = ex_leaf(g, EX_FIRST, 0);
	int pa = ex_leaf(g, EX_PROJ, 0), px = ex_leaf(g, EX_PROJ, 1), lam = ex_leaf(g, EX_PARAM, 4);
	int r = ex_un(g, EX_SIGMOID, pa), i = ex_un(g, EX_SIGMOID, px);
	int log_a = ex_bin(g, EX_MUL, ex_bin(g, EX_MUL, ex_const(g, -8), r), ex_un(g, EX_SOFTPLUS, lam));
	int e2 = ex_un(g, EX_EXP, ex_bin(g, EX_MUL, ex_const(g, 2), log_a));
	int m = ex_where(g, first, ex_const(g, 1), ex_un(g, EX_SQRTB, ex_bin(g, EX_SUB, ex_const(g, 1), e2)));
	out[0] = log_a;
	out[1] = ex_bin(g, EX_MUL, ex_bin(g, EX_MUL, m, i), x);
	out[2] = ex_leaf(g, EX_H, 0);
}

/* log_a, b, y of SAMU: u = proj 0, v = proj 1; lam, theta, omega = params 2, 5, 6 */
static void build_samu(ExGraph *g, int out[3])
{
	int x = ex_leaf(g, EX_X, 0), h = ex_leaf(g, EX_H, 0), first = ex_leaf(g, EX_FIRST, 0);
	int u = ex_leaf(g, EX_PROJ, 0), v = ex_leaf(g, EX_PROJ, 1);
	int lam = ex_leaf(g, EX_PARAM, 2), theta = ex_leaf(g, EX_PARAM, 5), omega = ex_leaf(g, EX_PARAM, 6);
	int s = ex_un(g, EX_SOFTPLUS, u), gate = ex_un(g, EX_SIGMOID, v);
	int log_a = ex_bin(g, EX_MUL, ex_bin(g, EX_MUL, ex_un(g, EX_NEG, ex_un(g, EX_EXP, theta)), s),
	                   ex_un(g, EX_SOFTPLUS, lam));
	int e2 = ex_un(g, EX_EXP, ex_bin(g, EX_MUL, ex_const(g, 2), log_a));
	int m = ex_where(g, first, ex_const(g, 1), ex_un(g, EX_SQRTB, ex_bin(g, EX_SUB, ex_const(g, 1), e2)));
	out[0] = log_a;
	out[1] = ex_bin(g, EX_MUL, ex_bin(g, EX_MUL, m, gate), x);
	out[2] = ex_bin(g, EX_ADD, h, ex_bin(g, EX_MUL, omega, x));
}

static double urand(unsigned long long *s, double lo, double hi)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

/* lam as initialised: log(exp(-0.5 log u) - 1), u ~ U[0.81, 0.998] */
static double lam_init(unsigned long long *s)
{
	return log(exp(-0.5 * log(urand(s, 0.81, 0.998))) - 1);
}

/* leaves of a cell, with 1 - a^2 kept away from 0, where the bounded
 * derivative of sqrtb (deliberately) differs from the true one */
static Vals draw(const ExGraph *g, int log_a, void (*fill)(Vals *, unsigned long long *), unsigned long long *rng,
                 int first)
{
	Vals v = { 0 };
	do {
		fill(&v, rng);
		v.first = first;
		for (int j = 0; j < 3; j++) v.seed[j] = urand(rng, -1.5, 1.5);
	} while (1 - exp(2 * eval(g, log_a, &v)) < 0.02);
	return v;
}

static void test_cell(const char *name, void (*build)(ExGraph *, int *), const Leaf *leaves, int nleaf,
                      void (*fill)(Vals *, unsigned long long *))
{
	unsigned long long rng = 12345;
	for (int trial = 0; trial < 4; trial++) {
		ExGraph g;
		ex_init(&g);
		int out[3], seeds[3];
		build(&g, out);
		for (int j = 0; j < 3; j++) seeds[j] = ex_leaf(&g, EX_SEED, j);
		Vals v = draw(&g, out[0], fill, &rng, trial % 2);
		char what[64];
		snprintf(what, sizeof what, "%s cell (first=%d, trial %d)", name, trial % 2, trial);
		check_grads(&g, what, 3, out, seeds, nleaf, leaves, &v, 1e-6);
		ex_free(&g);
	}
}

static void fill_rglru(Vals *v, unsigned long long *s)
{
	v->x = urand(s, -2, 2);
	v->h = urand(s, -2, 2);
	for (int i = 0; i < 5; i++) v->param[i] = urand(s, -1, 1);
	v->param[4] = lam_init(s);
	v->proj[0] = urand(s, -2, 2);
	v->proj[1] = urand(s, -2, 2);
}

static void fill_samu(Vals *v, unsigned long long *s)
{
	v->x = urand(s, -2, 2);
	v->h = urand(s, -2, 2);
	for (int i = 0; i < 7; i++) v->param[i] = urand(s, -1, 1);
	v->param[2] = lam_init(s);
	v->param[5] = log(8) + urand(s, -0.3, 0.3);
	v->param[6] = urand(s, 0.2, 0.8);
	v->proj[0] = urand(s, -2, 2);
	v->proj[1] = urand(s, -2, 2);
}

/* ---- 3. structure ------------------------------------------------------ */

static void test_structure(void)
{
	ExGraph g;
	ex_init(&g);
	int x = ex_leaf(&g, EX_X, 0), p = ex_leaf(&g, EX_PARAM, 0), q = ex_leaf(&g, EX_PARAM, 1);
	int zero = ex_const(&g, 0), one = ex_const(&g, 1);

	int e1 = ex_un(&g, EX_EXP, ex_bin(&g, EX_MUL, x, p));
	int n = g.len;
	int e2 = ex_un(&g, EX_EXP, ex_bin(&g, EX_MUL, x, p));
	check(e1 == e2 && g.len == n, "the same expression built twice is one node (%d == %d, no new nodes)", e1, e2);
	check(ex_bin(&g, EX_MUL, x, p) == ex_bin(&g, EX_MUL, p, x), "a*b == b*a");
	check(ex_bin(&g, EX_ADD, x, p) == ex_bin(&g, EX_ADD, p, x), "a+b == b+a");
	check(ex_bin(&g, EX_MAX, q, p) == ex_bin(&g, EX_MAX, p, q), "max(a,b) == max(b,a)");
	check(ex_bin(&g, EX_SUB, x, p) != ex_bin(&g, EX_SUB, p, x), "a-b != b-a");
	check(ex_leaf(&g, EX_PARAM, 0) == p && ex_leaf(&g, EX_PARAM, 1) != p, "leaves are keyed by kind and index");
	check(ex_const(&g, -0.0) == zero, "-0 and 0 are one constant");

	int five = ex_bin(&g, EX_ADD, ex_const(&g, 2), ex_const(&g, 3));
	check(g.n[five].op == EX_CONST && g.n[five].k == 5, "2 + 3 folds to 5");
	int ex0 = ex_un(&g, EX_EXP, zero);
	check(ex0 == one, "exp(0) folds to 1");
	check(ex_bin(&g, EX_ADD, x, zero) == x && ex_bin(&g, EX_ADD, zero, x) == x, "x + 0 == 0 + x == x");
	check(ex_bin(&g, EX_MUL, x, one) == x && ex_bin(&g, EX_MUL, one, x) == x, "x * 1 == x");
	check(ex_bin(&g, EX_MUL, x, zero) == zero, "x * 0 == 0");
	check(ex_bin(&g, EX_SUB, x, zero) == x, "x - 0 == x");
	check(ex_bin(&g, EX_SUB, zero, x) == ex_un(&g, EX_NEG, x), "0 - x == -x");
	check(ex_bin(&g, EX_SUB, x, x) == zero, "x - x == 0");
	check(ex_un(&g, EX_NEG, ex_un(&g, EX_NEG, x)) == x, "-(-x) == x");
	check(ex_bin(&g, EX_DIV, x, one) == x, "x / 1 == x");
	check(ex_bin(&g, EX_MUL, x, ex_const(&g, -1)) == ex_un(&g, EX_NEG, x), "x * -1 == -x");
	check(ex_where(&g, one, x, p) == x && ex_where(&g, zero, x, p) == p, "where with a constant condition folds");
	check(ex_where(&g, q, x, x) == x, "where(c, x, x) == x");
	int lg = ex_un(&g, EX_LOG, ex_const(&g, -1));
	check(g.n[lg].op == EX_LOG, "log(-1) is not folded into a NaN constant");
	check(ex_un(&g, EX_EXP, -1) == -1 && ex_bin(&g, EX_ADD, x, g.len + 5) == -1 && ex_un(&g, EX_ADD, x) == -1,
	      "invalid operands or arity give -1");

	char buf[256];
	ex_print(&g, ex_bin(&g, EX_ADD, ex_un(&g, EX_SIGMOID, p), ex_bin(&g, EX_MUL, x, ex_const(&g, 2))), buf, sizeof buf);
	check(strstr(buf, "sigmoid(param0)") && strstr(buf, "x * 2"), "ex_print: %s", buf);
	ex_print(&g, e1, buf, 6);
	check(strlen(buf) == 5, "ex_print truncates: '%s'", buf);
	check(ex_depends(&g, e1, EX_PARAM, 0) && !ex_depends(&g, e1, EX_PARAM, 1) && ex_depends(&g, e1, EX_PARAM, -1) &&
	      !ex_depends(&g, e1, EX_H, -1), "ex_depends");

	/* stable softplus in the interpreter */
	Vals v = { .param = { 800, -800 } };
	double sp = eval(&g, ex_un(&g, EX_SOFTPLUS, p), &v), sn = eval(&g, ex_un(&g, EX_SOFTPLUS, q), &v);
	check(sp == 800 && sn >= 0 && sn < 1e-300, "softplus(800) = %g, softplus(-800) = %g", sp, sn);

	/* an output that does not depend on a leaf: constant 0 gradient */
	int seed = ex_leaf(&g, EX_SEED, 0), leaf = q, gq;
	ex_grad(&g, 1, &e1, &seed, 1, &leaf, &gq);
	check(gq == zero, "gradient wrt an unused leaf is the constant 0");
	/* derivatives reuse forward nodes: d exp(x*p)/dx = seed * exp(x*p) * p */
	int gx;
	leaf = x;
	ex_grad(&g, 1, &e1, &seed, 1, &leaf, &gx);
	check(ex_depends(&g, gx, EX_SEED, 0) && (g.n[gx].a == e1 || g.n[gx].b == e1 ||
	      g.n[g.n[gx].a].a == e1 || g.n[g.n[gx].a].b == e1 || g.n[g.n[gx].b].a == e1 || g.n[g.n[gx].b].b == e1),
	      "the gradient of exp(x*p) reuses the exp node");
	ex_free(&g);
}

/* ---- 3. grouping of lane-invariant factors ------------------------------ */

/* per-element exp nodes (not lane-invariant) reachable from node, counted
 * once each (mark: g->len flags) */
static int count_exp(const ExGraph *g, const unsigned char *inv, int node, char *mark)
{
	if (node < 0 || mark[node])
		return 0;
	mark[node] = 1;
	const ExNode *n = &g->n[node];
	return (n->op == EX_EXP && !inv[node]) + count_exp(g, inv, n->a, mark) + count_exp(g, inv, n->b, mark) +
	       count_exp(g, inv, n->c, mark);
}

/* the grouped cell: log_a is (varying) * (one invariant node), the cell
 * holds one exp, of the root log_a (exp(2 log_a) under m is its square, so
 * a kernel's gates and their adjoints take one ex2 per element), the values
 * are the same and the gradients of the rewritten graph still match finite
 * differences */
static void test_group(const char *name, void (*build)(ExGraph *, int *), const Leaf *leaves, int nleaf,
                       void (*fill)(Vals *, unsigned long long *))
{
	unsigned long long rng = 777;
	ExGraph g;
	ex_init(&g);
	int out[3], grp[3], seeds[3];
	build(&g, out);
	memcpy(grp, out, sizeof grp);
	ex_group_invariant(&g, grp, 3);
	unsigned char *inv = ex_invariants(&g);
	const ExNode *la = &g.n[grp[0]];
	int ok = la->op == EX_MUL && inv[la->a] != inv[la->b];
	int var = ok ? (inv[la->a] ? la->b : la->a) : -1;
	check(ok && g.n[var].op != EX_MUL, "%s: log_a = (one varying factor) * (one invariant node) (varying op %s)", name,
	      var >= 0 ? ex_opname(g.n[var].op) : "-");
	int n0 = g.len;
	char *mark = calloc((size_t)n0, 1);
	if (!mark) { fprintf(stderr, "out of memory\n"); exit(1); }
	int nexp = 0;
	for (int j = 0; j < 3; j++)
		nexp += count_exp(&g, inv, grp[j], mark);
	int ea = ex_un(&g, EX_EXP, grp[0]);   /* interned: the cell's own node when it has it */
	int has_a = ea >= 0 && ea < n0 && mark[ea];
	free(mark);
	check(nexp == 1 && has_a, "%s: one per-element exp in the grouped cell, exp(log_a) (%d such exp nodes, exp(log_a) %s)", name,
	      nexp, has_a ? "among them" : "missing");
	for (int j = 0; j < 3; j++) seeds[j] = ex_leaf(&g, EX_SEED, j);
	for (int trial = 0; trial < 4; trial++) {
		Vals v = draw(&g, out[0], fill, &rng, trial % 2);
		double worst = 0;
		for (int j = 0; j < 3; j++) {
			double a = eval(&g, out[j], &v), b = eval(&g, grp[j], &v);
			worst = fmax(worst, fabs(a - b) / fmax(1e-300, fabs(a)));
		}
		check(worst < 1e-14, "%s: grouped roots equal the originals (max rel err %.1e)", name, worst);
		char what[64];
		snprintf(what, sizeof what, "%s grouped (first=%d)", name, trial % 2);
		check_grads(&g, what, 3, grp, seeds, nleaf, leaves, &v, 1e-6);
	}
	free(inv);
	ex_free(&g);
}

/* exp(2u) and exp(u * 2) are built as exp(u) * exp(u), with the value and
 * derivative of exp(2u); exp(3u) stays an exp */
static void test_exp_square(void)
{
	ExGraph g;
	ex_init(&g);
	int u = ex_leaf(&g, EX_PARAM, 0), two = ex_const(&g, 2), e = ex_un(&g, EX_EXP, u);
	int ab[2] = { ex_un(&g, EX_EXP, ex_bin(&g, EX_MUL, two, u)), ex_un(&g, EX_EXP, ex_bin(&g, EX_MUL, u, two)) };
	for (int k = 0; k < 2; k++) {
		const ExNode *n = &g.n[ab[k]];
		check(n->op == EX_MUL && n->a == e && n->b == e, "exp(2u) form %d is exp(u) * exp(u) (op %s)", k, ex_opname(n->op));
	}
	check(ab[0] == ab[1], "exp(2u) and exp(u * 2) are one node");
	int three = ex_un(&g, EX_EXP, ex_bin(&g, EX_MUL, ex_const(&g, 3), u));
	check(g.n[three].op == EX_EXP, "exp(3u) stays an exp (op %s)", ex_opname(g.n[three].op));
	int seed = ex_leaf(&g, EX_SEED, 0), gu;
	ex_grad(&g, 1, &ab[0], &seed, 1, &u, &gu);
	static const double us[] = { -3.0, -0.25, 0.0, 0.7 };
	for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
		Vals v = { .param = { us[i] }, .seed = { 1 } };
		double val = eval(&g, ab[0], &v), d = eval(&g, gu, &v);
		check(fabs(val - exp(2 * us[i])) <= 1e-15 * exp(2 * us[i]) && fabs(d - 2 * exp(2 * us[i])) <= 1e-15 * exp(2 * us[i]),
		      "exp(2u) at u=%g: value %.17g (want %.17g), d/du %.17g (want %.17g)", us[i], val, exp(2 * us[i]), d,
		      2 * exp(2 * us[i]));
	}
	ex_free(&g);
}

static void test_sqrtb(void)
{
	static const double zs[] = { 0.0, 1e-12, 1e-9, 2e-7, 1e-4, 0.25, 3.0 };
	for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
		ExGraph g;
		ex_init(&g);
		int z = ex_leaf(&g, EX_PARAM, 0), out = ex_un(&g, EX_SQRTB, z), seed = ex_leaf(&g, EX_SEED, 0), gz;
		ex_grad(&g, 1, &out, &seed, 1, &z, &gz);
		Vals v = { .param = { zs[i] }, .seed = { 1 } };
		double got = eval(&g, gz, &v), want = 1 / sqrt(fmax(4 * zs[i], 1e-6));
		check(fabs(got - want) <= 1e-12 * want && got <= 1000,
		      "d sqrtb(z)/dz at z=%g is the bounded 1/sqrt(max(4z,1e-6)) = %g (got %g)", zs[i], want, got);
		ex_free(&g);
	}
	ExGraph g;
	ex_init(&g);
	int z = ex_leaf(&g, EX_PARAM, 0), out = ex_un(&g, EX_SQRTB_GRAD, z), seed = ex_leaf(&g, EX_SEED, 0), gz;
	ex_grad(&g, 1, &out, &seed, 1, &z, &gz);
	check(g.n[gz].op == EX_CONST && g.n[gz].k == 0, "sqrtb_grad is treated as constant (no second derivatives)");
	ex_free(&g);
}

/* ex_sigmoid_only over a cell's outputs and its gradients wrt every
 * leaf (what the kernels evaluate), and over small graphs that read a
 * projection raw */
static void sigmoid_only_cell(const char *name, void (*build)(ExGraph *, int *), const Leaf *leaves, int nleaf,
                              const int want[2])
{
	ExGraph g;
	ex_init(&g);
	int roots[3 + 16], lv[16], seeds[3];
	build(&g, roots);
	for (int k = 0; k < 3; k++)
		seeds[k] = ex_leaf(&g, EX_SEED, k);
	for (int i = 0; i < nleaf; i++)
		lv[i] = ex_leaf(&g, leaves[i].op, leaves[i].idx);
	ex_grad(&g, 3, roots, seeds, nleaf, lv, roots + 3);
	for (int j = 0; j < 2; j++) {
		int got = ex_sigmoid_only(&g, roots, 3 + nleaf, j);
		check(got == want[j], "%s: projection %d read only through sigmoid: %d (want %d)", name, j, got, want[j]);
	}
	ex_free(&g);
}

static void test_sigmoid_only(void)
{
	static const Leaf rl[] = { { EX_X, 0, "x" }, { EX_H, 0, "h" }, { EX_FIRST, 0, "first" }, { EX_PARAM, 4, "lam" },
		                   { EX_PROJ, 0, "pa" }, { EX_PROJ, 1, "px" } };
	static const Leaf sl[] = { { EX_X, 0, "x" }, { EX_H, 0, "h" }, { EX_FIRST, 0, "first" }, { EX_PARAM, 2, "lam" },
		                   { EX_PARAM, 5, "theta" }, { EX_PARAM, 6, "omega" }, { EX_PROJ, 0, "u" },
		                   { EX_PROJ, 1, "v" } };
	sigmoid_only_cell("rglru", build_rglru, rl, 6, (const int[2]){ 1, 1 });
	/* SAMU's u goes through softplus (whose derivative is sigmoid(u)): raw */
	sigmoid_only_cell("samu", build_samu, sl, 8, (const int[2]){ 0, 1 });
	ExGraph g;
	ex_init(&g);
	int x = ex_leaf(&g, EX_X, 0), p = ex_leaf(&g, EX_PROJ, 0), s = ex_un(&g, EX_SIGMOID, p);
	int only = ex_bin(&g, EX_MUL, s, x), raw = ex_bin(&g, EX_ADD, only, p), as_b = ex_bin(&g, EX_MUL, x, p);
	check(ex_sigmoid_only(&g, &only, 1, 0), "sigmoid(p) * x reads p through sigmoid");
	check(!ex_sigmoid_only(&g, &raw, 1, 0), "sigmoid(p) * x + p reads p raw");
	check(!ex_sigmoid_only(&g, &as_b, 1, 0), "x * p reads p raw");
	check(!ex_sigmoid_only(&g, &p, 1, 0), "p as a root is read raw");
	check(!ex_sigmoid_only(&g, &x, 1, 0), "x does not read p at all");
	check(!ex_sigmoid_only(&g, &only, 1, 1), "nor projection 1");
	ex_free(&g);
}

/* varying products by a constant, and sums of a node with itself (a product
 * by 2), among the nodes reachable from node (mark: g->len flags): each one
 * an instruction a kernel spends per element */
static int count_const_products(const ExGraph *g, const unsigned char *inv, int node, char *mark)
{
	if (node < 0 || mark[node])
		return 0;
	mark[node] = 1;
	const ExNode *n = &g->n[node];
	int here = !inv[node] && ((n->op == EX_MUL && (g->n[n->a].op == EX_CONST || g->n[n->b].op == EX_CONST)) ||
	                          (n->op == EX_ADD && n->a == n->b));
	return here + count_const_products(g, inv, n->a, mark) + count_const_products(g, inv, n->b, mark) +
	       count_const_products(g, inv, n->c, mark);
}

/* The adjoints as the kernels derive them (tmpl_derive: the forward grouped,
 * differentiated, the adjoints grouped) hold none of those: the 2 of d(a^2)
 * = 2 a da, the sign of 1 - a^2 and the 0.5 of sqrtb's derivative meet in
 * one product and cancel */
static void test_adjoint_constants(const char *name, void (*build)(ExGraph *, int *), const Leaf *leaves, int nleaf)
{
	ExGraph g;
	ex_init(&g);
	int out[3], seeds[3], ids[8], grads[8];
	build(&g, out);
	ex_group_invariant(&g, out, 3);
	for (int j = 0; j < 3; j++)
		seeds[j] = ex_leaf(&g, EX_SEED, j);
	for (int k = 0; k < nleaf; k++)
		ids[k] = ex_leaf(&g, leaves[k].op, leaves[k].idx);
	ex_grad(&g, 3, out, seeds, nleaf, ids, grads);
	ex_group_invariant(&g, grads, nleaf);
	unsigned char *inv = ex_invariants(&g);
	char *mark = calloc((size_t)g.len, 1);
	if (!inv || !mark) { fprintf(stderr, "out of memory\n"); exit(1); }
	int n = 0;
	for (int k = 0; k < nleaf; k++)
		n += count_const_products(&g, inv, grads[k], mark);
	check(n == 0, "%s: the adjoints hold no per-element product by a constant, nor x + x (%d)", name, n);
	free(mark);
	free(inv);
	ex_free(&g);
}

int main(void)
{
	test_unary();
	test_binary();
	test_where();
	static const Leaf rl[] = {
		{ EX_X, 0, "x" }, { EX_H, 0, "h" }, { EX_FIRST, 0, "first" }, { EX_PARAM, 4, "lam" },
		{ EX_PROJ, 0, "pa" }, { EX_PROJ, 1, "px" },
	};
	test_cell("rglru", build_rglru, rl, 6, fill_rglru);
	static const Leaf sl[] = {
		{ EX_X, 0, "x" }, { EX_H, 0, "h" }, { EX_FIRST, 0, "first" }, { EX_PARAM, 2, "lam" },
		{ EX_PARAM, 5, "theta" }, { EX_PARAM, 6, "omega" }, { EX_PROJ, 0, "u" }, { EX_PROJ, 1, "v" },
	};
	test_cell("samu", build_samu, sl, 8, fill_samu);
	test_exp_square();
	test_group("rglru", build_rglru, rl, 6, fill_rglru);
	test_group("samu", build_samu, sl, 8, fill_samu);
	test_adjoint_constants("rglru", build_rglru, rl, 6);
	test_adjoint_constants("samu", build_samu, sl, 8);
	test_structure();
	test_sqrtb();
	test_sigmoid_only();
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
