/* The token-stage split against the whole-graph derivative.
 *
 *   ctest -R test_gen_split      (RECUR_SOURCE_DIR names the tree; ctest sets it)
 *
 * The kernels of a mixer with per-token projections never evaluate the
 * mixer's expressions whole: the controller pass computes the per-token
 * values z (with shared_sfu: softplus(u), sigmoid(v), ...; without: u and v
 * themselves), the scan kernels evaluate the element stage over them, the
 * backward sums the element adjoints of the z over channels and the token
 * pass carries them back to the projections. For every variant of
 * lua/variants/samu.lua and lua/variants/rglru.lua, at random points (reset
 * and not), this checks with ex_eval that
 *   - the element stage over the z gives the mixer's log_a, b and y,
 *   - d/du, d/dv and every parameter gradient composed through the split
 *     (element stage, then token stage, the two parts of a scalar summed)
 *     equal those of the whole graph, and dx's element part is unchanged,
 *   - shared_sfu moves the special functions into the token stage (two
 *     values, neither a bare projection) and its absence does not,
 *   - log_a's lane-invariant factors are grouped into one node
 *     (ex_group_invariant), for RG-LRU as well, whose values and gradients
 *     are checked the same way.
 */
#include "script.h"
#include "tmpl.h"
#include "check.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static double urand(unsigned long long *s, double lo, double hi)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

static double relerr(double a, double b) { return fabs(a - b) / fmax(1e-12, fmax(fabs(a), fabs(b))); }

static void check_variant(VariantSet *vs, int vi)
{
	Mixer *m = &vs->mixer;   /* derivation appends nodes; the roots stay valid */
	const Variant *v = &vs->var[vi];
	Tmpl *T = calloc(1, sizeof *T);
	if (!T) { perror("calloc"); exit(1); }
	tmpl_setup(T, m, v);
	tmpl_derive(T);
	ExGraph *g = &m->g;
	const Mixer mx = *m;   /* for reading: names, counts and roots */
	char what[200];
	snprintf(what, sizeof what, "%s %s", mx.name, v->name);

	/* whole-graph reference: leaves x, every projection, every parameter */
	int leaves[1 + MX_MAXPROJ + MX_MAXPARAM], full[1 + MX_MAXPROJ + MX_MAXPARAM], seeds[3];
	int n = 0;
	leaves[n++] = ex_leaf(g, EX_X, 0);
	for (int j = 0; j < mx.nproj; j++)
		leaves[n++] = ex_leaf(g, EX_PROJ, j);
	for (int p = 0; p < mx.nparam; p++)
		leaves[n++] = ex_leaf(g, EX_PARAM, p);
	for (int k = 0; k < 3; k++)
		seeds[k] = ex_leaf(g, EX_SEED, k);
	int outs[3] = { mx.log_a, mx.b, mx.y };
	ex_grad(g, 3, outs, seeds, n, leaves, full);
	/* (mx's copy of the graph header may be stale now; only g is used below) */

	/* grouping: log_a is (varying) * (one invariant factor), -C * softplus(lam)
	 * for RG-LRU and -exp(theta) * softplus(lam) for SAMU */
	const ExNode *la = &g->n[T->e_log_a];
	int grouped = la->op == EX_MUL && T->inv_node[la->a] != T->inv_node[la->b];
	int var = grouped ? (T->inv_node[la->a] ? la->b : la->a) : -1;
	check(grouped && g->n[var].op != EX_MUL, what, "log_a = (one varying factor) * (its invariant factors as one node) (varying op %s)",
	      var >= 0 ? ex_opname(g->n[var].op) : "-");
	if (T->ntokproj == 0)
		check(T->ntokval == 0, what, "no token projection: no token stage (%d values)", T->ntokval);
	int bare = 0;
	for (int k = 0; k < T->ntokval; k++)
		bare += g->n[T->tokval[k]].op == EX_PROJ;
	if (T->ntokproj == 0)
		;
	else if (v->shared_sfu)
		check(T->ntokval == 2 && bare == 0, what, "shared_sfu: %d token values, %d bare projections (want 2, 0)", T->ntokval, bare);
	else
		check(T->ntokval == T->ntokproj && bare == T->ntokval, what, "per element: the token values are the %d projections (got %d, %d bare)",
		      T->ntokproj, T->ntokval, bare);

	unsigned long long rng = 0x5eed0000ULL + (unsigned long long)vi;
	double worst_fwd = 0, worst_grad = 0;
	for (int trial = 0; trial < 40; trial++) {
		double param[MX_MAXPARAM], proj[MX_MAXPROJ], seed[3 + TM_MAXZ] = { 0 }, tok[TM_MAXZ], gtok[TM_MAXZ];
		for (int p = 0; p < mx.nparam; p++)
			param[p] = urand(&rng, -1.5, 1.5);
		for (int j = 0; j < mx.nproj; j++)
			proj[j] = urand(&rng, -3, 3);
		for (int k = 0; k < 3; k++)
			seed[k] = urand(&rng, -2, 2);
		double x = urand(&rng, -2, 2), h = urand(&rng, -2, 2), first = trial % 4 == 0;
		ExEnv whole = { x, h, first, param, proj, seed, NULL };
		ExEnv token = { 0, 0, 0, param, proj, NULL, NULL };
		for (int k = 0; k < T->ntokval; k++)
			tok[k] = ex_eval(g, T->tokval[k], &token);
		ExEnv elem = { x, h, first, param, NULL, seed, tok };
		int roots[3][2] = { { mx.log_a, T->e_log_a }, { mx.b, T->e_b }, { mx.y, T->e_y } };
		for (int r = 0; r < 3; r++)
			worst_fwd = fmax(worst_fwd, relerr(ex_eval(g, roots[r][0], &whole), ex_eval(g, roots[r][1], &elem)));
		for (int k = 0; k < T->ntokval; k++)
			gtok[k] = ex_eval(g, T->g_tok[k], &elem);
		for (int k = 0; k < T->ntokval; k++)
			seed[3 + k] = gtok[k];
		ExEnv back = { 0, 0, 0, param, proj, seed, NULL };
		n = 0;
		worst_grad = fmax(worst_grad, relerr(ex_eval(g, full[n++], &whole), ex_eval(g, T->g_x, &elem)));
		for (int j = 0; j < mx.nproj; j++, n++) {
			int t = -1;
			for (int q = 0; q < T->ntokproj; q++)
				if (T->tokproj[q] == j)
					t = q;
			if (t >= 0)
				worst_grad = fmax(worst_grad, relerr(ex_eval(g, full[n], &whole), ex_eval(g, T->tg_proj[t], &back)));
		}
		for (int p = 0; p < mx.nparam; p++, n++) {
			double split = ex_eval(g, T->g_param[p], &elem) + (T->ntokval ? ex_eval(g, T->tg_param[p], &back) : 0.0);
			worst_grad = fmax(worst_grad, relerr(ex_eval(g, full[n], &whole), split));
		}
	}
	check(worst_fwd < 1e-12, what, "element stage over the token values = log_a, b, y (max rel err %.1e)", worst_fwd);
	check(worst_grad < 1e-10, what, "dx, d/du, d/dv and every parameter gradient through the split (max rel err %.1e)", worst_grad);
	tmpl_free(T);
}

int main(void)
{
	const char *root = getenv("RECUR_SOURCE_DIR");
	if (!root || !*root)
		root = RECUR_SOURCE_DIR;
	char lua[1100], path[1200];
	snprintf(lua, sizeof lua, "%s/lua", root);
	snprintf(path, sizeof path, "%s/recur.lua", lua);
	if (access(path, R_OK) != 0) {
		printf("skipped: %s not found (set RECUR_SOURCE_DIR to the source tree)\n", path);
		return 77;
	}
	static const char *const grids[] = { "variants/samu.lua", "variants/rglru.lua" };
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", lua, grids[i]);
		VariantSet *sets = NULL;
		int nsets = 0;
		char err[1024];
		int rc = script_run(path, lua, &sets, &nsets, err, sizeof err);
		check(rc == 0, grids[i], "%s", rc ? err : "runs");
		if (rc)
			continue;
		for (int s = 0; s < nsets; s++)
			for (int v = 0; v < sets[s].nvar; v++)
				check_variant(&sets[s], v);
		script_free(sets, nsets);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
