/* The float64 reference derived from a mixer's graph (script/reference.h)
 * against the hand-written ones of ref/, and its graph's trip through the
 * manifest's text (script/graphtext.h).
 *
 *   ctest -R test_reference      (RECUR_SOURCE_DIR names the tree; ctest sets it)
 *
 * 1. lua/arch/rglru.lua and lua/arch/samu.lua: y, dx and every parameter
 *    gradient of the derived reference equal ref/'s to 1e-10 relative, at
 *    random shapes with B > 1 and L no multiple of 16, on fresh random data
 *    (the seed is printed; RECUR_TEST_SEED repeats a run). A control: the
 *    same comparison after one parameter element moved must fail.
 *    RG-LRU's lines with heads of 128, 176 and 256 channels
 *    (tests/grids/apart.lua) agree with ref/'s RG-LRU at H = D / K
 *    likewise: both references hold for the widths the decode step takes.
 * 2. a mixer using every function of the DSL: the reference's evaluator
 *    gives ex_eval's value at every node, and its graph, written as text and
 *    read back, gives the same forward and backward.
 * 3. damaged graph text and impossible shapes are refused with a message
 *    naming the line or the shape.
 * One line per check and "N passed, M failed" last; exit 0 when all pass,
 * 77 when the tree is not found.
 */
#include "graphtext.h"
#include "ref.h"
#include "reference.h"
#include "rng.h"
#include "script.h"
#include "refenv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "checkf.h"

#define TOL 1e-10

static char g_lua[1100], g_tmp[1200];

static double *vec(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof(double));
	if (!p) {
		fprintf(stderr, "%s:%d: out of memory for %zu doubles\n", __FILE__, __LINE__, n);
		exit(1);
	}
	return p;
}

/* ||a - b|| / ||b|| (||a - b|| when b is 0) */
static double relerr(const double *a, const double *b, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		num += (a[i] - b[i]) * (a[i] - b[i]);
		den += b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The first mixer of a script's first set, its graph a copy of its own. */
static int load_mixer(const char *path, Mixer *mx)
{
	VariantSet *sets = NULL;
	int n = 0;
	char err[2048];
	if (script_run(path, g_lua, &sets, &n, err, sizeof err) != 0) {
		check(0, "script %s runs: %s", path, err);
		return -1;
	}
	*mx = sets[0].mixer;
	int rc = ex_copy(&mx->g, &sets[0].mixer.g);
	script_free(sets, n);
	return rc;
}

/* A one-variant grid of arch/NAME.lua, written into the scratch folder. */
static int load_arch(const char *name, Mixer *mx)
{
	char path[1400];
	snprintf(path, sizeof path, "%s/%s_grid.lua", g_tmp, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		check(0, "write %s", path);
		return -1;
	}
	fprintf(f,
	        "local R = require \"recur\"\nreturn R.variants { mixer = require \"arch.%s\", chunk = { 16 }, "
	        "prefix = { 32 } }\n",
	        name);
	fclose(f);
	int rc = load_mixer(path, mx);
	unlink(path);
	return rc;
}

/* Parameters that make every term matter (as tests/test_ref_fd.c draws
 * them): non-zero biases, the decay away from both ends. */
static double draw_param(const char *name, int K, Rng *r)
{
	double z = rng_normal(r);
	if (!strcmp(name, "lam"))
		return log(expm1(0.05 + 0.35 * rng_uniform(r))); /* softplus(lam) in [0.05, 0.4] */
	if (!strcmp(name, "Wa") || !strcmp(name, "Wx"))
		return z / sqrt(K);
	if (!strcmp(name, "theta"))
		return log(2.0) + 0.3 * z;
	return name[0] == 'b' ? 0.5 * z : z;
}

/* One case's tensors, for both references. */
typedef struct {
	RfShape s;
	int K;   /* channels per head */
	int np;
	long pn[MX_MAXPARAM];
	double *p[MX_MAXPARAM], *x, *dy;
	double *y[2], *dx[2], *dp[2][MX_MAXPARAM]; /* [0] derived, [1] hand-written */
} Case;

static void case_make(Case *c, const RfMixer *gen, RfShape s, int K, Rng *r)
{
	memset(c, 0, sizeof *c);
	c->s = s;
	c->K = K;
	c->np = rf_nparam(gen);
	size_t n = (size_t)s.B * s.L * s.D;
	c->x = vec(n);
	c->dy = vec(n);
	for (size_t e = 0; e < n; e++) {
		c->x[e] = bf16_round((float)rng_normal(r));
		c->dy[e] = rng_normal(r);
	}
	for (int k = 0; k < 2; k++) {
		c->y[k] = vec(n);
		c->dx[k] = vec(n);
	}
	for (int i = 0; i < c->np; i++) {
		c->pn[i] = rf_param_count(gen, i, s);
		c->p[i] = vec((size_t)c->pn[i]);
		for (long e = 0; e < c->pn[i]; e++)
			c->p[i][e] = draw_param(rf_param_name(gen, i), K, r);
		for (int k = 0; k < 2; k++)
			c->dp[k][i] = vec((size_t)c->pn[i]);
	}
}

static void case_free(Case *c)
{
	free(c->x);
	free(c->dy);
	for (int k = 0; k < 2; k++) {
		free(c->y[k]);
		free(c->dx[k]);
		for (int i = 0; i < c->np; i++)
			free(c->dp[k][i]);
	}
	for (int i = 0; i < c->np; i++)
		free(c->p[i]);
}

/* Both references on c; the worst relative error over y, dx and every
 * gradient, and which tensor it was. */
static double case_compare(Case *c, const RfMixer *gen, const RefMixer *hand, char *worst, size_t wn)
{
	char err[1024];
	RefShape hs = {c->s.B, c->s.L, c->s.D, c->s.D / c->K};
	const double *const *p = (const double *const *)c->p;
	if (rf_forward(gen, c->s, p, c->x, c->y[0], err, sizeof err) ||
	    rf_backward(gen, c->s, p, c->x, c->dy, c->dx[0], c->dp[0], err, sizeof err)) {
		snprintf(worst, wn, "%s", err);
		return INFINITY;
	}
	hand->forward(&hs, p, c->x, c->y[1]);
	hand->backward(&hs, p, c->x, c->dy, c->dx[1], c->dp[1]);
	size_t n = (size_t)c->s.B * c->s.L * c->s.D;
	double e = relerr(c->y[0], c->y[1], n), w = e;
	snprintf(worst, wn, "y %.1e", e);
	e = relerr(c->dx[0], c->dx[1], n);
	snprintf(worst + strlen(worst), wn - strlen(worst), ", dx %.1e", e);
	w = fmax(w, e);
	for (int i = 0; i < c->np; i++) {
		e = relerr(c->dp[0][i], c->dp[1][i], (size_t)c->pn[i]);
		snprintf(worst + strlen(worst), wn - strlen(worst), ", d%s %.1e", rf_param_name(gen, i), e);
		w = isnan(e) ? e : fmax(w, e);
	}
	return w;
}

/* B in 1..3 (2 at least once), L no multiple of 16, D 64..256. */
static RfShape draw_shape(Rng *r, int k)
{
	RfShape s = {k == 0 ? 2 : 1 + (int)(3 * rng_uniform(r)), 17 + (int)(60 * rng_uniform(r)),
	             64 * (1 + (int)(4 * rng_uniform(r)))};
	if (s.L % 16 == 0)
		s.L++;
	return s;
}

/* ---- 1. the derived reference against ref/ -------------------------------- */

static void test_against_hand(const char *name, Rng *r)
{
	Mixer mx;
	if (load_arch(name, &mx))
		return;
	RfMixer *gen = NULL;
	char err[1024], what[1024];
	int rc = rf_open(&mx, &gen, err, sizeof err);
	ex_free(&mx.g);
	const RefMixer *hand = ref_find(name);
	check(rc == 0 && hand && hand->nparam == rf_nparam(gen),
	      "%s: the derived reference opens, %d parameters as "
	      "ref/'s (%s)",
	      name, gen ? rf_nparam(gen) : -1, rc ? err : "ok");
	if (rc || !hand || hand->nparam != rf_nparam(gen)) {
		rf_close(gen);
		return;
	}
	for (int i = 0; i < hand->nparam; i++)
		check(!strcmp(hand->param[i], rf_param_name(gen, i)), "%s: parameter %d is %s in both", name, i,
		      hand->param[i]);
	for (int k = 0; k < 3; k++) {
		Case c;
		case_make(&c, gen, draw_shape(r, k), 64, r);
		double w = case_compare(&c, gen, hand, what, sizeof what);
		check(w <= TOL, "%s at %dx%dx%d: derived = ref/ to %.0e: %s", name, c.s.B, c.s.L, c.s.D, TOL, what);
		if (k == 0) {
			/* the control: one element of the last parameter moved in
			 * what the derived reference sees must show */
			c.p[c.np - 1][0] += 1e-3;
			double *keep = c.p[c.np - 1];
			RefShape hs = {c.s.B, c.s.L, c.s.D, c.s.D / c.K};
			w = case_compare(&c, gen, hand, what, sizeof what); /* both see it: still equal */
			check(w <= TOL, "%s: a moved parameter, seen by both, still agrees: %s", name, what);
			keep[0] -= 1e-3;
			hand->backward(&hs, (const double *const *)c.p, c.x, c.dy, c.dx[1], c.dp[1]);
			hand->forward(&hs, (const double *const *)c.p, c.x, c.y[1]);
			size_t n = (size_t)c.s.B * c.s.L * c.s.D;
			double e = fmax(relerr(c.y[0], c.y[1], n), relerr(c.dx[0], c.dx[1], n));
			check(e > 1e3 * TOL,
			      "%s: the comparison can fail: %s moved by 1e-3 in one reference only gives "
			      "%.1e",
			      name, rf_param_name(gen, c.np - 1), e);
		}
		case_free(&c);
	}
	rf_close(gen);
}

/* RG-LRU with heads of K channels (the decode step's and the projections
 * apart's other widths): the reference derived from its graph against
 * ref/'s at H = D / K. */
static void test_heads(Rng *r)
{
	char path[1400], env[16];
	snprintf(path, sizeof path, "%.1100s/../tests/grids/apart.lua", g_lua);
	static const int ks[] = { 128, 176, 256 };
	const RefMixer *hand = ref_find("rglru");
	for (int i = 0; i < 3; i++) {
		snprintf(env, sizeof env, "%d", ks[i]);
		setenv("APART_K", env, 1);   /* the script's grid of this K (apart.lua) */
		Mixer mx;
		int rc = load_mixer(path, &mx);
		unsetenv("APART_K");
		if (rc)
			return;
		RfMixer *gen = NULL;
		char err[1024], what[1024];
		check(mx.k == ks[i], "apart.lua with APART_K=%d: a mixer of heads of %d channels", ks[i], mx.k);
		rc = rf_open(&mx, &gen, err, sizeof err);
		ex_free(&mx.g);
		check(rc == 0 && hand && rf_nparam(gen) == hand->nparam, "K = %d: the derived reference opens (%s)", ks[i],
		      rc ? err : "ok");
		if (rc || !hand || rf_nparam(gen) != hand->nparam) {
			rf_close(gen);
			continue;
		}
		RfShape s = { 2, 19 + (int)(20 * rng_uniform(r)), 2 * ks[i] };
		Case c;
		case_make(&c, gen, s, ks[i], r);
		double w = case_compare(&c, gen, hand, what, sizeof what);
		check(w <= TOL, "rglru with heads of %d at %dx%dx%d (%d heads): derived = ref/ to %.0e: %s", ks[i], s.B,
		      s.L, s.D, s.D / ks[i], TOL, what);
		case_free(&c);
		rf_close(gen);
	}
}

/* ---- 2. every function, the evaluator and the text round trip -------------- */

static const char ALLOPS[] = "local R = require \"recur\"\n"
                             "local m = R.mixer(\"allops\", { k = 64 })\n"
                             "local w = m:param(\"w\", \"channel\", R.normal(1))\n"
                             "local c = m:param(\"c\", \"scalar\", R.const(0.3))\n"
                             "local W = m:param(\"W\", \"blockdiag\", R.normal_rsqrt_k())\n"
                             "local bb = m:param(\"bb\", \"channel\", R.zeros())\n"
                             "local p = m:project(\"p\", W, bb)\n"
                             "local u = m:token_project(\"u\", w, c, { scale = \"rsqrt_d\" })\n"
                             "local v = m:token_project(\"v\", bb, c)\n"
                             "local x, h, first = m.x, m.h, m.first\n"
                             "local g = R.sigmoid(p) * R.tanh(u) + R.max(x, c) - R.min(x, w) + R.lt(v, x)\n"
                             "local log_a = -R.softplus(p + w) * R.exp(-R.sqrt(R.sqrtb(c * c + 1)))\n"
                             "local b = R.where(first, x, R.sqrtb(1 - R.exp(2 * log_a)) * g)\n"
                             "  + R.gt(x, 0) * R.log(1 + x * x) / (2 + R.rsqrt(1 + u * u)) * R.recip(3 + w * w)\n"
                             "m:recurrence { log_a = log_a, b = b }\n"
                             "m:output(h * R.sigmoid(u) + x * c / (1 + v * v))\n"
                             "return R.variants { mixer = m, chunk = { 16 }, prefix = { 32 } }\n";

static void test_selfcheck(const RfMixer *gen, const Mixer *mx, Rng *r)
{
	double worst = 0;
	for (int k = 0; k < 200; k++) {
		double param[MX_MAXPARAM], proj[MX_MAXPROJ], seed[3];
		/* one point in 8 near -12: softplus(p + w) ~ 1e-10, so 1 - exp(2 log_a)
		 * falls under the bound of sqrtb's derivative (sqrtb_grad's clamp) */
		double at = k % 8 == 1 ? -12 : 0, sd = k % 8 == 1 ? 0.1 : 2;
		for (int i = 0; i < mx->nparam; i++)
			param[i] = at + sd * rng_normal(r);
		for (int j = 0; j < mx->nproj; j++)
			proj[j] = at + sd * rng_normal(r);
		for (int i = 0; i < 3; i++)
			seed[i] = rng_normal(r);
		double d = rf_selfcheck(gen, 2 * rng_normal(r), rng_normal(r), k % 4 == 0, param, proj, seed);
		worst = d > worst || isnan(d) ? d : worst;
	}
	check(worst <= 1e-15,
	      "allops: the reference's evaluator gives ex_eval's value at every node of every tape, "
	      "200 random points (worst %.1e)",
	      worst);
}

/* mx written as text, read back and opened: the same results on one case. */
static void test_roundtrip(const RfMixer *gen, const Mixer *mx, Rng *r)
{
	GraphText t;
	Mixer back = *mx;
	RfMixer *gen2 = NULL;
	char err[1024];
	int rc = gt_write(mx, &t, err, sizeof err);
	if (rc == 0)
		rc = gt_read(&t, &back, err, sizeof err);
	check(rc == 0 && back.nparam == mx->nparam && back.nproj == mx->nproj,
	      "allops: graph written as %d lines and read back (%s)", rc ? -1 : t.nnode, rc ? err : "ok");
	if (rc == 0)
		rc = rf_open(&back, &gen2, err, sizeof err);
	if (rc == 0) {
		Case c, c2;
		RfShape s = draw_shape(r, 0);
		case_make(&c, gen, s, 64, r);
		case_make(&c2, gen, s, 64, r); /* only its outputs are used */
		const double *const *p = (const double *const *)c.p;
		rf_backward(gen, s, p, c.x, c.dy, c.dx[0], c.dp[0], err, sizeof err);
		rf_forward(gen, s, p, c.x, c.y[0], err, sizeof err);
		rf_backward(gen2, s, p, c.x, c.dy, c2.dx[0], c2.dp[0], err, sizeof err);
		rf_forward(gen2, s, p, c.x, c2.y[0], err, sizeof err);
		size_t n = (size_t)s.B * s.L * s.D;
		double w = fmax(relerr(c2.y[0], c.y[0], n), relerr(c2.dx[0], c.dx[0], n));
		for (int i = 0; i < c.np; i++)
			w = fmax(w, relerr(c2.dp[0][i], c.dp[0][i], (size_t)c.pn[i]));
		check(w <= 1e-14 && isfinite(c.y[0][n - 1]),
		      "allops at %dx%dx%d: the graph read back gives the same y, "
		      "dx and gradients (worst %.1e)",
		      s.B, s.L, s.D, w);
		case_free(&c);
		case_free(&c2);
	} else {
		check(0, "allops: the graph read back opens: %s", err);
	}
	rf_close(gen2);
	if (back.g.n != mx->g.n)
		ex_free(&back.g);
	gt_free(&t);
}

static void test_allops(Rng *r)
{
	char path[1400];
	snprintf(path, sizeof path, "%s/allops.lua", g_tmp);
	FILE *f = fopen(path, "w");
	if (!f || fputs(ALLOPS, f) < 0) {
		check(0, "write %s", path);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	Mixer mx;
	int rc = load_mixer(path, &mx);
	unlink(path);
	if (rc)
		return;
	RfMixer *gen = NULL;
	char err[1024];
	rc = rf_open(&mx, &gen, err, sizeof err);
	check(rc == 0, "allops: the derived reference opens (%s)", rc ? err : "ok");
	if (rc == 0) {
		test_selfcheck(gen, &mx, r);
		test_roundtrip(gen, &mx, r);
	}
	rf_close(gen);
	ex_free(&mx.g);
}

/* ---- 3. refusals ------------------------------------------------------------- */

static void refused(const char *what, const char **node, int nnode, int log_a, const char *want)
{
	const char *params[] = {"w channel", "W blockdiag", "c scalar"};
	const char *projs[] = {"p blockdiag 1 0"};
	GraphText t = {node, nnode, log_a, 0, 0, params, 3, projs, 1};
	Mixer mx;
	memset(&mx, 0, sizeof mx);
	char err[1024] = "";
	int rc = gt_read(&t, &mx, err, sizeof err);
	check(rc != 0 && strstr(err, want), "graph text with %s is refused: \"%s\"", what, err);
	if (rc == 0)
		ex_free(&mx.g);
}

static void test_refusals(void)
{
	const char *fwd[] = {"x", "exp 2", "mul 0 0"};
	refused("an operand not yet defined", fwd, 3, 2, "line 1 \"exp 2\": operand 2 is not an earlier line");
	const char *op[] = {"x", "frobnicate 0"};
	refused("an unknown node kind", op, 2, 1, "line 1 \"frobnicate 0\": an unknown node kind");
	const char *wl[] = {"param 1"};
	refused("a block-diagonal weight as a leaf", wl, 1, 0, "block-diagonal weight");
	const char *pr[] = {"param 7"};
	refused("a parameter out of range", pr, 1, 0, "want \"param I\" with I below 3");
	const char *hh[] = {"h", "exp 0"};
	refused("log_a reading h", hh, 2, 1, "depends on h");
	const char *k[] = {"const inf"};
	refused("an infinite constant", k, 1, 0, "finite");
	const char *ar[] = {"x", "add 0"};
	refused("a missing operand", ar, 2, 1, "add takes 2 operands");
	const char *rt[] = {"x"};
	refused("a root past the end", rt, 1, 5, "root 5 is not a line");

	const char *params[] = {"w channel", "c scalar"};
	const char *projs[] = {"p blockdiag 0 1"};
	const char *node[] = {"x"};
	GraphText t = {node, 1, 0, 0, 0, params, 2, projs, 1};
	Mixer mx;
	char err[1024] = "";
	int rc = gt_read(&t, &mx, err, sizeof err);
	check(rc != 0 && strstr(err, "a blockdiag projection takes a blockdiag weight and a channel bias"),
	      "a projection over the wrong kinds of parameter is refused: \"%s\"", err);
}

static void test_shapes(Rng *r)
{
	Mixer mx;
	if (load_arch("rglru", &mx))
		return;
	RfMixer *gen = NULL;
	char err[1024] = "";
	if (rf_open(&mx, &gen, err, sizeof err) == 0) {
		int rc = rf_check_shape(gen, (RfShape){2, 37, 96}, err, sizeof err);
		check(rc != 0 && strstr(err, "shape 2x37x96") && strstr(err, "no multiple of 64"),
		      "a width that is no multiple of the heads is refused: \"%s\"", err);
		rc = rf_check_shape(gen, (RfShape){2147483647, 2147483647, 2147483584}, err, sizeof err);
		check(rc != 0 && strstr(err, "would not fit"), "a shape whose buffers overflow is refused: \"%s\"",
		      err);
		Case c;
		case_make(&c, gen, (RfShape){1, 3, 64}, 64, r);
		rc = rf_forward(gen, (RfShape){0, 3, 64}, (const double *const *)c.p, c.x, c.y[0], err, sizeof err);
		check(rc != 0 && strstr(err, "at least 1"), "B = 0 is refused by the forward: \"%s\"", err);
		case_free(&c);
	}
	rf_close(gen);
	ex_free(&mx.g);
}

int main(void)
{
	uint64_t seed;
	int rc = refenv_open("recur_test_reference", g_lua, sizeof g_lua, g_tmp, sizeof g_tmp, &seed);
	if (rc)
		return rc;
	Rng r;
	rng_seed(&r, seed);
	test_against_hand("rglru", &r);
	test_against_hand("samu", &r);
	test_heads(&r);
	test_allops(&r);
	test_refusals();
	test_shapes(&r);
	rmdir(g_tmp);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
