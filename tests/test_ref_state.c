/* The state entry points of both float64 references (ref/'s forward_state,
 * backward_state; script/reference.h's rf_forward_state, rf_backward_state)
 * against the contract of util/seqstate.h.
 *
 *   ctest -R test_ref_state      (RECUR_SOURCE_DIR names the tree; ctest sets it)
 *
 * Fresh random data each run (the seed is printed; RECUR_TEST_SEED repeats
 * a run), everything compared in float64. For RG-LRU and SAMU, each check
 * runs on both references (ref/ and the one derived from lua/arch/):
 *  1. the empty state (NULL, all zero, or asking only for outputs) gives
 *     the old calls' bits;
 *  2. ref/ and the graph's agree with h0, resets, dhT, and packed
 *     documents with h0: y, hT, the map, dx, dh0, every gradient, 1e-12;
 *  3. documents: a row with resets equals its documents run as rows of
 *     their own from zero (y, the last hT, dx, gradients summed); the
 *     cu_seqlens form equals the reset form and its documents run apart
 *     (with dhT per document; with h0 per document, dh0 too); a mark at
 *     t = 0 wins over h0; up to 1000 documents in a row;
 *  4. splitting: [0, L) equals [0, k) then [k, L) through hT -> h0 and
 *     dh0 -> dhT, at random k; one token at a time over 1000 tokens,
 *     forward and backward; part 2's map applied to part 1's hT;
 *  5. the map: hT = exp(map_loga) h0 + map_h; the map does not depend on
 *     h0; -inf and hT = map_h in a row with a reset;
 *  6. finite differences of sum(dy y) + sum(dhT hT): dh0, x and every
 *     parameter, in both forms;
 *  7. malformed states are refused, naming the offending index.
 * One line per check and "N passed, M failed" last; exit 0 when all pass,
 * 77 when the tree is not found.
 */
#include "ref.h"
#include "reference.h"
#include "rng.h"
#include "script.h"
#include "refenv.h"
#include "seqstate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "checkf.h"

#define MAXP 16
#define TOL_CROSS 1e-12 /* ref/ against the graph's: the same formulas, other operation orders */
/* ... their gradients: as tests/test_reference.c, since SAMU's scalar ones
 * (theta, bu) sum B L D terms of both signs, whose rounding, eps times
 * sum|terms|, reaches 1e-12 of |sum| in about one run in fifty */
#define TOL_CROSS_GRAD 1e-10
#define TOL_SAME 1e-14 /* one reference against itself: y, dx, hT, dh0 (the same operations) */
/* ... and its parameter gradients, summed in another grouping (per
 * document, per part, per step). SAMU's scalar ones (theta, omega, bu, bv)
 * add B L D terms of both signs: their error is eps times sum|terms|, which
 * can be far above eps |sum|. So they are judged relative to the larger of
 * |sum| and the sum of the parts' magnitudes (Out.dpabs), which leaves the
 * cancellation inside each part: measured up to 6e-14 in 100 runs. */
#define TOL_SUMS 1e-12
#define TOL_FD 1e-6 /* as tests/test_ref_fd.c: 4th-order stencil, h = 1e-3 */

static char g_lua[1100], g_tmp[1200];

static void *mem(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p) {
		fprintf(stderr, "%s:%d: out of memory for %zu bytes\n", __FILE__, __LINE__, n);
		exit(1);
	}
	return p;
}

static double *vec(size_t n)
{
	return mem(n * sizeof(double));
}

static double norm2(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i] * v[i];
	return s;
}

/* ||a - b|| / max(||b||, ||s||) (s NULL: ||b||; ||a - b|| when that is 0) */
static double relerr_scaled(const double *a, const double *b, const double *s, size_t n)
{
	double num = 0, den = 0, ds = 0;
	for (size_t i = 0; i < n; i++) {
		num += (a[i] - b[i]) * (a[i] - b[i]);
		den += b[i] * b[i];
		ds += s ? s[i] * s[i] : 0;
	}
	den = fmax(den, ds);
	double e = den > 0 ? sqrt(num / den) : sqrt(num);
	return isnan(e) ? INFINITY : e;
}

/* ||a - b|| / ||b|| over the finite elements of b (||a - b|| when b is 0);
 * an infinite b must be met by the same infinity, else INFINITY */
static double relerr(const double *a, const double *b, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (isinf(b[i]) || isinf(a[i])) {
			if (a[i] != b[i])
				return INFINITY;
			continue;
		}
		num += (a[i] - b[i]) * (a[i] - b[i]);
		den += b[i] * b[i];
	}
	double e = den > 0 ? sqrt(num / den) : sqrt(num);
	return isnan(e) ? INFINITY : e;
}

/* ---- the two references behind one call ------------------------------------ */

typedef struct {
	int B, L, D;
} Shp;

typedef struct {
	char name[32];        /* "rglru ref/" or "rglru graph" */
	const RefMixer *hand; /* ref/'s, or NULL */
	const RfMixer *gen;   /* the graph's, or NULL */
	int np;
} Ref;

static long pcount(const Ref *r, int i, Shp s)
{
	RefShape rs = {s.B, s.L, s.D, s.D / 64};
	return r->hand ? r->hand->param_count(i, &rs) : rf_param_count(r->gen, i, (RfShape){s.B, s.L, s.D});
}

static const char *pname(const Ref *r, int i)
{
	return r->hand ? r->hand->param[i] : rf_param_name(r->gen, i);
}

/* forward with st; a failure is a failed check naming it */
static int fwd(const Ref *r, Shp s, double *const *p, const double *x, double *y, const SeqState *st)
{
	char err[1024];
	RefShape rs = {s.B, s.L, s.D, s.D / 64};
	const double *const *cp = (const double *const *)p;
	int rc = r->hand ? r->hand->forward_state(&rs, cp, x, y, st, err, sizeof err)
	                 : rf_forward_state(r->gen, (RfShape){s.B, s.L, s.D}, cp, x, y, st, err, sizeof err);
	if (rc)
		check(0, "%s forward at %dx%dx%d: %s", r->name, s.B, s.L, s.D, err);
	return rc;
}

static int bwd(const Ref *r, Shp s, double *const *p, const double *x, const double *dy, double *dx, double **dp,
               const SeqState *st)
{
	char err[1024];
	RefShape rs = {s.B, s.L, s.D, s.D / 64};
	const double *const *cp = (const double *const *)p;
	int rc = r->hand ? r->hand->backward_state(&rs, cp, x, dy, dx, dp, st, err, sizeof err)
	                 : rf_backward_state(r->gen, (RfShape){s.B, s.L, s.D}, cp, x, dy, dx, dp, st, err, sizeof err);
	if (rc)
		check(0, "%s backward at %dx%dx%d: %s", r->name, s.B, s.L, s.D, err);
	return rc;
}

/* ---- a problem: parameters, inputs, a state's inputs -------------------------- */

/* Parameters that make every term matter (as tests/test_ref_fd.c draws
 * them): non-zero biases, the decay away from both ends. */
static double draw_param(const char *name, Rng *r)
{
	double z = rng_normal(r);
	if (!strcmp(name, "lam"))
		return log(expm1(0.05 + 0.35 * rng_uniform(r))); /* softplus(lam) in [0.05, 0.4] */
	if (!strcmp(name, "Wa") || !strcmp(name, "Wx"))
		return z / 8; /* 1 / sqrt(K), K = 64 */
	if (!strcmp(name, "theta"))
		return log(2.0) + 0.3 * z;
	return name[0] == 'b' ? 0.5 * z : z;
}

typedef struct {
	Shp s;
	int np;
	long pn[MAXP];
	double *p[MAXP];
	double *x, *dy;       /* [B][L][D] */
	double *h0, *dhT;     /* [max(B, L)][D]: a state per row or per document */
	unsigned char *reset; /* [B][L] */
	int *cu, ndocs;       /* [L + 1] */
} Prob;

static void prob_make(Prob *pb, const Ref *r, Shp s, Rng *rng)
{
	memset(pb, 0, sizeof *pb);
	pb->s = s;
	pb->np = r->np;
	size_t n = (size_t)s.B * s.L * s.D, ns = (size_t)(s.B > s.L ? s.B : s.L) * s.D;
	for (int i = 0; i < pb->np; i++) {
		pb->pn[i] = pcount(r, i, s);
		pb->p[i] = vec((size_t)pb->pn[i]);
		for (long e = 0; e < pb->pn[i]; e++)
			pb->p[i][e] = draw_param(pname(r, i), rng);
	}
	pb->x = vec(n);
	pb->dy = vec(n);
	for (size_t e = 0; e < n; e++) {
		pb->x[e] = bf16_round((float)rng_normal(rng));
		pb->dy[e] = rng_normal(rng);
	}
	pb->h0 = vec(ns);
	pb->dhT = vec(ns);
	for (size_t e = 0; e < ns; e++) {
		pb->h0[e] = rng_normal(rng);
		pb->dhT[e] = rng_normal(rng);
	}
	pb->reset = mem((size_t)s.B * s.L);
	pb->cu = mem(((size_t)s.L + 1) * sizeof(int));
}

static void prob_free(Prob *pb)
{
	for (int i = 0; i < pb->np; i++)
		free(pb->p[i]);
	free(pb->x);
	free(pb->dy);
	free(pb->h0);
	free(pb->dhT);
	free(pb->reset);
	free(pb->cu);
}

/* Resets in every row at rate ~0.1, and in row 0 two consecutive ones and
 * one at the last token. */
static void draw_resets(Prob *pb, Rng *r)
{
	int B = pb->s.B, L = pb->s.L;
	for (long k = 0; k < (long)B * L; k++)
		pb->reset[k] = rng_uniform(r) < 0.1;
	if (L >= 4) {
		int t = 1 + (int)(rng_uniform(r) * (L - 3));
		pb->reset[t] = pb->reset[t + 1] = 1;
	}
	pb->reset[L - 1] = 1;
}

/* The documents of row 0's resets (t = 0 starts one too), as cu_seqlens. */
static void docs_from_resets(Prob *pb)
{
	pb->ndocs = 0;
	for (int t = 0; t < pb->s.L; t++)
		if (t == 0 || pb->reset[t])
			pb->cu[pb->ndocs++] = t;
	pb->cu[pb->ndocs] = pb->s.L;
}

/* ---- one run: every output of a forward and a backward with a state ------------ */

typedef struct {
	size_t n, ns; /* B L D; states x D */
	int np;
	long pn[MAXP];
	double *y, *dx, *dp[MAXP];
	double *dpabs[MAXP]; /* where dp is a sum of parts (documents, splits, steps): the sum of their |.| */
	double *hT, *dh0, *mla, *mh;
} Out;

static void out_make(Out *o, const Prob *pb)
{
	memset(o, 0, sizeof *o);
	Shp s = pb->s;
	o->n = (size_t)s.B * s.L * s.D;
	o->ns = (size_t)(s.B > s.L ? s.B : s.L) * s.D;
	o->np = pb->np;
	o->y = vec(o->n);
	o->dx = vec(o->n);
	for (int i = 0; i < o->np; i++) {
		o->pn[i] = pb->pn[i];
		o->dp[i] = vec((size_t)pb->pn[i]);
		o->dpabs[i] = vec((size_t)pb->pn[i]);
	}
	o->hT = vec(o->ns);
	o->dh0 = vec(o->ns);
	o->mla = vec((size_t)s.B * s.D);
	o->mh = vec((size_t)s.B * s.D);
}

static void out_free(Out *o)
{
	free(o->y);
	free(o->dx);
	for (int i = 0; i < o->np; i++) {
		free(o->dp[i]);
		free(o->dpabs[i]);
	}
	free(o->hT);
	free(o->dh0);
	free(o->mla);
	free(o->mh);
}

enum { S_H0 = 1, S_RESET = 2, S_CU = 4, S_DHT = 8 };

/* The state of a run: pb's inputs picked by fl, o's outputs (the map in
 * the reset/h0 form only, the other form refuses it). */
static SeqState state_of(const Prob *pb, int fl, Out *o)
{
	SeqState st = {0};
	st.h0 = fl & S_H0 ? pb->h0 : NULL;
	st.reset = fl & S_RESET ? pb->reset : NULL;
	st.dhT = fl & S_DHT ? pb->dhT : NULL;
	if (fl & S_CU) {
		st.cu_seqlens = pb->cu;
		st.ndocs = pb->ndocs;
	} else {
		st.map_loga = o->mla;
		st.map_h = o->mh;
	}
	st.hT = o->hT;
	st.dh0 = o->dh0;
	return st;
}

static int run(const Ref *r, const Prob *pb, int fl, Out *o)
{
	SeqState st = state_of(pb, fl, o);
	return fwd(r, pb->s, pb->p, pb->x, o->y, &st) || bwd(r, pb->s, pb->p, pb->x, pb->dy, o->dx, o->dp, &st);
}

/* The worst relative error of a against b over y, dx, ns elements of hT
 * and dh0, nmap of the map (0: not compared), over its tolerance tol, and
 * of every gradient over tol_g (relative to the parts' magnitudes where
 * one of them is a sum of parts); each tensor's error in what. */
static double out_compare(const Out *a, const Out *b, size_t ns, size_t nmap, double tol, double tol_g, char *what,
                          size_t wn)
{
	const char *nm[6] = {"y", "dx", "hT", "dh0", "map_loga", "map_h"};
	const double *pa[6] = {a->y, a->dx, a->hT, a->dh0, a->mla, a->mh};
	const double *pq[6] = {b->y, b->dx, b->hT, b->dh0, b->mla, b->mh};
	size_t len[6] = {a->n, a->n, ns, ns, nmap, nmap};
	double w = 0;
	what[0] = 0;
	for (int k = 0; k < 6; k++) {
		if (!len[k])
			continue;
		double e = relerr(pa[k], pq[k], len[k]);
		snprintf(what + strlen(what), wn - strlen(what), "%s%s %.1e", k ? ", " : "", nm[k], e);
		w = fmax(w, tol > 0 ? e / tol : e > 0 ? INFINITY : 0);
	}
	for (int i = 0; i < a->np; i++) {
		size_t n = (size_t)a->pn[i];
		const double *parts = norm2(a->dpabs[i], n) > norm2(b->dpabs[i], n) ? a->dpabs[i] : b->dpabs[i];
		double e = relerr_scaled(a->dp[i], b->dp[i], parts, n);
		snprintf(what + strlen(what), wn - strlen(what), ", d#%d %.1e", i, e);
		w = fmax(w, tol_g > 0 ? e / tol_g : e > 0 ? INFINITY : 0);
	}
	return w;
}

/* ---- 1. the empty state is the old call --------------------------------------- */

static int same_bits(const double *a, const double *b, size_t n)
{
	return !memcmp(a, b, n * sizeof(double));
}

/* y, dx and every gradient the same bits in a and b */
static int out_same(const Out *a, const Out *b)
{
	int ok = same_bits(a->y, b->y, a->n) && same_bits(a->dx, b->dx, a->n);
	for (int i = 0; i < a->np; i++)
		ok &= same_bits(a->dp[i], b->dp[i], (size_t)a->pn[i]);
	return ok;
}

static void old_calls(const Ref *r, const Prob *pb, Out *o)
{
	char err[1024];
	Shp s = pb->s;
	RefShape rs = {s.B, s.L, s.D, s.D / 64};
	const double *const *cp = (const double *const *)pb->p;
	if (r->hand) {
		r->hand->forward(&rs, cp, pb->x, o->y);
		r->hand->backward(&rs, cp, pb->x, pb->dy, o->dx, o->dp);
		return;
	}
	RfShape fs = {s.B, s.L, s.D};
	if (rf_forward(r->gen, fs, cp, pb->x, o->y, err, sizeof err) ||
	    rf_backward(r->gen, fs, cp, pb->x, pb->dy, o->dx, o->dp, err, sizeof err))
		check(0, "%s: the old calls: %s", r->name, err);
}

static void test_empty(const Ref *r, Rng *rng)
{
	static const char *const how[3] = {"st NULL", "an all-zero SeqState",
	                                   "a SeqState asking only for outputs (hT, dh0, the map)"};
	Prob pb;
	prob_make(&pb, r, (Shp){2, 37, 128}, rng);
	Out old, o;
	out_make(&old, &pb);
	old_calls(r, &pb, &old);
	for (int k = 0; k < 3; k++) {
		out_make(&o, &pb);
		SeqState zero = {0}, outs = state_of(&pb, 0, &o);
		const SeqState *st = k == 0 ? NULL : k == 1 ? &zero : &outs;
		int rc = fwd(r, pb.s, pb.p, pb.x, o.y, st) || bwd(r, pb.s, pb.p, pb.x, pb.dy, o.dx, o.dp, st);
		check(!rc && out_same(&o, &old),
		      "%s at 2x37x128: the state calls with %s give the old calls' y, dx and gradients bit for bit",
		      r->name, how[k]);
		out_free(&o);
	}
	out_free(&old);
	prob_free(&pb);
}

/* ---- 2. ref/ against the graph's ---------------------------------------------- */

static void cross_case(const Ref *hand, const Ref *gen, Prob *pb, int fl, const char *what)
{
	Out a, b;
	char detail[1024];
	out_make(&a, pb);
	out_make(&b, pb);
	if (!run(hand, pb, fl, &a) && !run(gen, pb, fl, &b)) {
		size_t ns = (size_t)(fl & S_CU ? pb->ndocs : pb->s.B) * pb->s.D;
		double w = out_compare(&b, &a, ns, fl & S_CU ? 0 : (size_t)pb->s.B * pb->s.D, TOL_CROSS, TOL_CROSS_GRAD,
		                       detail, sizeof detail);
		check(w <= 1, "%s at %dx%dx%d, %s: the graph's = ref/'s to %.0e (gradients %.0e): %s", hand->name,
		      pb->s.B, pb->s.L, pb->s.D, what, TOL_CROSS, TOL_CROSS_GRAD, detail);
	}
	out_free(&a);
	out_free(&b);
}

static void test_cross(const Ref *hand, const Ref *gen, Rng *rng)
{
	Prob pb;
	prob_make(&pb, hand, (Shp){2, 53, 128}, rng);
	draw_resets(&pb, rng);
	pb.reset[53] = 1; /* row 1 marked at t = 0: the mark wins over h0 */
	cross_case(hand, gen, &pb, S_H0 | S_RESET | S_DHT,
	           "h0, dhT, resets (at t = 0 over h0, consecutive, at the last token)");
	cross_case(hand, gen, &pb, S_RESET | S_DHT, "no h0, dhT, resets");
	prob_free(&pb);
	prob_make(&pb, hand, (Shp){1, 61, 128}, rng);
	draw_resets(&pb, rng);
	docs_from_resets(&pb);
	cross_case(hand, gen, &pb, S_CU | S_H0 | S_DHT, "cu_seqlens, h0 and dhT per document");
	cross_case(hand, gen, &pb, S_CU | S_DHT, "cu_seqlens, dhT per document");
	prob_free(&pb);
}

/* ---- 3. documents ------------------------------------------------------------------ */

enum { DHT_NONE, DHT_EACH, DHT_LAST };

/* pb's documents (one row, cu_seqlens) as calls of their own, results laid
 * out as the packed call's: each from h0[i] (h0 set) or from zero, with
 * dhT[i] (DHT_EACH), dhT[0] for the last only (DHT_LAST: the reset form's
 * row), or none; gradients summed in document order. */
static int run_docs(const Ref *r, const Prob *pb, int h0, int dht, Out *cat)
{
	int D = pb->s.D, rc = 0;
	double *dp[MAXP];
	for (int k = 0; k < pb->np; k++) {
		dp[k] = vec((size_t)pb->pn[k]);
		memset(cat->dp[k], 0, (size_t)pb->pn[k] * sizeof(double));
		memset(cat->dpabs[k], 0, (size_t)pb->pn[k] * sizeof(double));
	}
	for (int i = 0; i < pb->ndocs && rc == 0; i++) {
		int t0 = pb->cu[i];
		size_t at = (size_t)t0 * D, si = (size_t)i * D;
		Shp s = {1, pb->cu[i + 1] - t0, D};
		SeqState st = {.h0 = h0 ? pb->h0 + si : NULL, .hT = cat->hT + si, .dh0 = cat->dh0 + si};
		if (dht == DHT_EACH || (dht == DHT_LAST && i == pb->ndocs - 1))
			st.dhT = pb->dhT + (dht == DHT_EACH ? si : 0);
		rc = fwd(r, s, pb->p, pb->x + at, cat->y + at, &st) ||
		        bwd(r, s, pb->p, pb->x + at, pb->dy + at, cat->dx + at, dp, &st);
		for (int k = 0; k < pb->np; k++)
			for (long e = 0; e < pb->pn[k]; e++) {
				cat->dp[k][e] += dp[k][e];
				cat->dpabs[k][e] += fabs(dp[k][e]);
			}
	}
	for (int k = 0; k < pb->np; k++)
		free(dp[k]);
	return rc;
}

/* A packed run (flags fl) against its documents run apart; ns_last: the
 * reset form's one hT is the last document's. */
static void docs_case(const Ref *r, const Prob *pb, int fl, int h0, int dht, const char *what)
{
	Out a, b;
	char detail[1024];
	out_make(&a, pb);
	out_make(&b, pb);
	if (!run(r, pb, fl, &a) && !run_docs(r, pb, h0, dht, &b)) {
		int D = pb->s.D;
		if (!(fl & S_CU)) {
			/* one state, the row's: the last document's, and dh0 is that of no document */
			memcpy(b.hT, b.hT + (size_t)(pb->ndocs - 1) * D, (size_t)D * sizeof(double));
			memset(b.dh0, 0, (size_t)D * sizeof(double));
		}
		size_t ns = (size_t)(fl & S_CU ? pb->ndocs : 1) * D;
		double w = out_compare(&a, &b, ns, 0, TOL_SAME, TOL_SUMS, detail, sizeof detail);
		check(w <= 1, "%s at 1x%dx%d, %d documents, %s = the documents run apart, to %.0e (gradients %.0e): %s",
		      r->name, pb->s.L, D, pb->ndocs, what, TOL_SAME, TOL_SUMS, detail);
	}
	out_free(&a);
	out_free(&b);
}

/* The packed form against the reset form (no dhT: the forms take it
 * differently): the same y, dx, gradients, and the last document's hT. */
static void cu_vs_reset(const Ref *r, const Prob *pb)
{
	Out a, b;
	char detail[1024];
	out_make(&a, pb);
	out_make(&b, pb);
	if (!run(r, pb, S_CU, &a) && !run(r, pb, S_RESET, &b)) {
		int D = pb->s.D;
		memcpy(a.hT, a.hT + (size_t)(pb->ndocs - 1) * D, (size_t)D * sizeof(double));
		double w = out_compare(&a, &b, (size_t)D, 0, 0, 0, detail, sizeof detail);
		check(w == 0, "%s at 1x%dx%d, %d documents: cu_seqlens = the reset form, bit for bit: %s", r->name,
		      pb->s.L, D, pb->ndocs, detail);
	}
	out_free(&a);
	out_free(&b);
}

/* A mark at t = 0 wins over h0: the run is the one without h0, dh0 is 0. */
static void mark_over_h0(const Ref *r, Rng *rng)
{
	Prob pb;
	prob_make(&pb, r, (Shp){2, 23, 128}, rng);
	draw_resets(&pb, rng);
	pb.reset[0] = pb.reset[23] = 1;
	Out a, b;
	out_make(&a, &pb);
	out_make(&b, &pb);
	if (!run(r, &pb, S_H0 | S_RESET | S_DHT, &a) && !run(r, &pb, S_RESET | S_DHT, &b)) {
		double z = 0;
		for (size_t e = 0; e < (size_t)2 * 128; e++)
			z = fmax(z, fabs(a.dh0[e]));
		check(out_same(&a, &b) && same_bits(a.hT, b.hT, 256) && z == 0,
		      "%s: a mark at t = 0 wins over h0: the run without h0, bit for bit, and dh0 = 0 (max |dh0| %g)",
		      r->name, z);
	}
	out_free(&a);
	out_free(&b);
	prob_free(&pb);
}

/* 999 boundaries drawn among 1..L-1: 1000 documents, most of one token. */
static void draw_many_docs(Prob *pb, int ndocs, Rng *rng)
{
	int L = pb->s.L, *pos = mem((size_t)L * sizeof(int));
	for (int t = 0; t < L; t++)
		pos[t] = t;
	for (int k = 1; k < ndocs; k++) { /* a partial shuffle of 1..L-1 */
		int j = k + (int)(rng_uniform(rng) * (L - k));
		int tmp = pos[k];
		pos[k] = pos[j];
		pos[j] = tmp;
	}
	memset(pb->reset, 0, (size_t)L);
	for (int k = 1; k < ndocs; k++)
		pb->reset[pos[k]] = 1;
	free(pos);
	docs_from_resets(pb);
}

static void test_docs(const Ref *r, Rng *rng)
{
	Prob pb;
	prob_make(&pb, r, (Shp){1, 50, 128}, rng);
	draw_resets(&pb, rng);
	docs_from_resets(&pb);
	docs_case(r, &pb, S_RESET | S_DHT, 0, DHT_LAST, "a row with resets and dhT");
	docs_case(r, &pb, S_CU | S_DHT, 0, DHT_EACH, "cu_seqlens with dhT per document");
	docs_case(r, &pb, S_CU | S_H0 | S_DHT, 1, DHT_EACH, "cu_seqlens with h0 and dhT per document");
	cu_vs_reset(r, &pb);
	prob_free(&pb);
	mark_over_h0(r, rng);
	prob_make(&pb, r, (Shp){1, 1100, 64}, rng);
	draw_many_docs(&pb, 1000, rng);
	docs_case(r, &pb, S_CU | S_H0 | S_DHT, 1, DHT_EACH, "cu_seqlens with h0 and dhT per document");
	cu_vs_reset(r, &pb);
	prob_free(&pb);
}

/* ---- 4. splitting a sequence ---------------------------------------------------- */

/* tokens [t0, t0 + len) of every row of src [B][L][w] into dst [B][len][w], or back (back set) */
static void slice(void *dst, const void *src, int B, int L, int len, int t0, size_t w, int back)
{
	for (int b = 0; b < B; b++) {
		size_t full = ((size_t)b * L + t0) * w, part = (size_t)b * len * w;
		if (back)
			memcpy((char *)dst + full, (const char *)src + part, (size_t)len * w);
		else
			memcpy((char *)dst + part, (const char *)src + full, (size_t)len * w);
	}
}

/* One part of a split: its tokens of x, dy and the marks, its outputs. */
typedef struct {
	Shp s;
	double *x, *dy, *y, *dx, *dp[MAXP], *hT, *dh0, *mla, *mh;
	unsigned char *reset;
} Part;

static void part_make(Part *q, const Prob *pb, int t0, int len)
{
	Shp s = pb->s;
	size_t n = (size_t)s.B * len * s.D, w = (size_t)s.D * sizeof(double), ns = (size_t)s.B * s.D;
	q->s = (Shp){s.B, len, s.D};
	q->x = vec(n), q->dy = vec(n), q->y = vec(n), q->dx = vec(n);
	q->hT = vec(ns), q->dh0 = vec(ns), q->mla = vec(ns), q->mh = vec(ns);
	q->reset = mem((size_t)s.B * len);
	slice(q->x, pb->x, s.B, s.L, len, t0, w, 0);
	slice(q->dy, pb->dy, s.B, s.L, len, t0, w, 0);
	slice(q->reset, pb->reset, s.B, s.L, len, t0, 1, 0);
	for (int k = 0; k < pb->np; k++)
		q->dp[k] = vec((size_t)pb->pn[k]);
}

static void part_free(Part *q, int np)
{
	free(q->x), free(q->dy), free(q->y), free(q->dx);
	free(q->hT), free(q->dh0), free(q->mla), free(q->mh), free(q->reset);
	for (int k = 0; k < np; k++)
		free(q->dp[k]);
}

static int part_fwd(const Ref *r, const Prob *pb, Part *q, const double *h0)
{
	SeqState st = {.h0 = h0, .reset = q->reset, .hT = q->hT, .map_loga = q->mla, .map_h = q->mh};
	return fwd(r, q->s, pb->p, q->x, q->y, &st);
}

static int part_bwd(const Ref *r, const Prob *pb, Part *q, const double *h0, const double *dhT)
{
	SeqState st = {.h0 = h0, .reset = q->reset, .dhT = dhT, .dh0 = q->dh0};
	return bwd(r, q->s, pb->p, q->x, q->dy, q->dx, q->dp, &st);
}

/* exp(map_loga) h_in + map_h of a part, against its hT */
static double map_apply_err(const Part *q, const double *h_in)
{
	size_t ns = (size_t)q->s.B * q->s.D;
	double *h = vec(ns);
	for (size_t e = 0; e < ns; e++)
		h[e] = exp(q->mla[e]) * h_in[e] + q->mh[e];
	double w = relerr(h, q->hT, ns);
	free(h);
	return w;
}

/* [0, L) against [0, k) then [k, L): the state passed forward as hT -> h0
 * and back as dh0 -> dhT; part 2's map applied to part 1's hT. */
static void split_case(const Ref *r, const Prob *pb, const Out *W, int k)
{
	Shp s = pb->s;
	Part a, b;
	part_make(&a, pb, 0, k);
	part_make(&b, pb, k, s.L - k);
	Out cat;
	out_make(&cat, pb);
	char detail[1024];
	size_t w = (size_t)s.D * sizeof(double);
	if (!part_fwd(r, pb, &a, pb->h0) && !part_fwd(r, pb, &b, a.hT) && !part_bwd(r, pb, &b, a.hT, pb->dhT) &&
	    !part_bwd(r, pb, &a, pb->h0, b.dh0)) {
		slice(cat.y, a.y, s.B, s.L, k, 0, w, 1), slice(cat.y, b.y, s.B, s.L, s.L - k, k, w, 1);
		slice(cat.dx, a.dx, s.B, s.L, k, 0, w, 1), slice(cat.dx, b.dx, s.B, s.L, s.L - k, k, w, 1);
		memcpy(cat.hT, b.hT, (size_t)s.B * w);
		memcpy(cat.dh0, a.dh0, (size_t)s.B * w);
		for (int i = 0; i < pb->np; i++)
			for (long e = 0; e < pb->pn[i]; e++) {
				cat.dp[i][e] = a.dp[i][e] + b.dp[i][e];
				cat.dpabs[i][e] = fabs(a.dp[i][e]) + fabs(b.dp[i][e]);
			}
		double e = out_compare(&cat, W, (size_t)s.B * s.D, 0, TOL_SAME, TOL_SUMS, detail, sizeof detail);
		check(e <= 1,
		      "%s at %dx%dx%d split at %d: = the whole, forward and backward, to %.0e (gradients %.0e): %s",
		      r->name, s.B, s.L, s.D, k, TOL_SAME, TOL_SUMS, detail);
		e = map_apply_err(&b, a.hT);
		check(e <= TOL_CROSS, "%s split at %d: part 2's map applied to part 1's hT gives its hT (%.1e)",
		      r->name, k, e);
	}
	part_free(&a, pb->np);
	part_free(&b, pb->np);
	out_free(&cat);
}

/* One token at a time over the whole row (B = 1), forward then backward,
 * each step's state the previous one's. */
static void step_case(const Ref *r, const Prob *pb, const Out *W)
{
	int L = pb->s.L, D = pb->s.D, rc = 0;
	double *hs = vec((size_t)(L + 1) * D), *dh0 = vec((size_t)D), *dhT = vec((size_t)D), *dp[MAXP];
	Out o;
	out_make(&o, pb);
	for (int k = 0; k < pb->np; k++)
		dp[k] = vec((size_t)pb->pn[k]);
	memcpy(hs, pb->h0, (size_t)D * sizeof(double));
	for (int t = 0; t < L && !rc; t++) {
		SeqState st = {.h0 = hs + (size_t)t * D, .reset = pb->reset + t, .hT = hs + (size_t)(t + 1) * D};
		rc = fwd(r, (Shp){1, 1, D}, pb->p, pb->x + (size_t)t * D, o.y + (size_t)t * D, &st);
	}
	memcpy(dhT, pb->dhT, (size_t)D * sizeof(double));
	for (int t = L - 1; t >= 0 && !rc; t--) {
		SeqState st = {.h0 = hs + (size_t)t * D, .reset = pb->reset + t, .dhT = dhT, .dh0 = dh0};
		size_t at = (size_t)t * D;
		rc = bwd(r, (Shp){1, 1, D}, pb->p, pb->x + at, pb->dy + at, o.dx + at, dp, &st);
		for (int k = 0; k < pb->np; k++)
			for (long e = 0; e < pb->pn[k]; e++) {
				o.dp[k][e] += dp[k][e];
				o.dpabs[k][e] += fabs(dp[k][e]);
			}
		memcpy(dhT, dh0, (size_t)D * sizeof(double));
	}
	if (!rc) {
		char detail[1024];
		memcpy(o.hT, hs + (size_t)L * D, (size_t)D * sizeof(double));
		memcpy(o.dh0, dh0, (size_t)D * sizeof(double));
		double e = out_compare(&o, W, (size_t)D, 0, TOL_SAME, TOL_SUMS, detail, sizeof detail);
		check(e <= 1,
		      "%s: %d steps of one token (h0 <- hT, dhT <- dh0) = the whole row, to %.0e (gradients %.0e): %s",
		      r->name, L, TOL_SAME, TOL_SUMS, detail);
	}
	for (int k = 0; k < pb->np; k++)
		free(dp[k]);
	free(hs), free(dh0), free(dhT);
	out_free(&o);
}

static void test_split(const Ref *r, Rng *rng)
{
	Prob pb;
	Out W;
	prob_make(&pb, r, (Shp){2, 41, 128}, rng);
	draw_resets(&pb, rng);
	out_make(&W, &pb);
	if (!run(r, &pb, S_H0 | S_RESET | S_DHT, &W)) {
		int ks[4] = {1, 0, 0, 40};
		ks[1] = 2 + (int)(rng_uniform(rng) * 37), ks[2] = 2 + (int)(rng_uniform(rng) * 37);
		for (int i = 0; i < 4; i++)
			split_case(r, &pb, &W, ks[i]);
	}
	out_free(&W);
	prob_free(&pb);
	prob_make(&pb, r, (Shp){1, 1000, 64}, rng);
	for (int t = 0; t < 1000; t++)
		pb.reset[t] = rng_uniform(rng) < 0.1;
	out_make(&W, &pb);
	if (!run(r, &pb, S_H0 | S_RESET | S_DHT, &W))
		step_case(r, &pb, &W);
	out_free(&W);
	prob_free(&pb);
}

/* ---- 5. the row's map ------------------------------------------------------------ */

static void test_map(const Ref *r, Rng *rng)
{
	Prob pb;
	prob_make(&pb, r, (Shp){2, 29, 128}, rng);
	size_t ns = (size_t)2 * 128;
	Out a, b;
	out_make(&a, &pb);
	out_make(&b, &pb);
	SeqState sa = state_of(&pb, S_H0, &a), sb = state_of(&pb, 0, &b);
	if (!fwd(r, pb.s, pb.p, pb.x, a.y, &sa) && !fwd(r, pb.s, pb.p, pb.x, b.y, &sb)) {
		Part q = {.s = pb.s, .hT = a.hT, .mla = a.mla, .mh = a.mh};
		double e = map_apply_err(&q, pb.h0);
		check(e <= TOL_CROSS, "%s at 2x29x128: hT = exp(map_loga) h0 + map_h for random h0 (%.1e)", r->name, e);
		check(same_bits(a.mla, b.mla, ns) && same_bits(a.mh, b.mh, ns),
		      "%s: the map is the same bits with h0 and without (it is of continuation)", r->name);
	}
	memset(pb.h0, 0, ns * sizeof(double));
	if (!fwd(r, pb.s, pb.p, pb.x, a.y, &sa))
		check(same_bits(a.hT, a.mh, ns), "%s: map_h is hT from h0 = 0, bit for bit", r->name);
	for (size_t e = 0; e < ns; e++)
		pb.h0[e] = rng_normal(rng);
	draw_resets(&pb, rng);
	memset(pb.reset + 29, 0, 29); /* row 1 without resets */
	pb.reset[0] = 0;
	sa = state_of(&pb, S_H0 | S_RESET, &a);
	if (!fwd(r, pb.s, pb.p, pb.x, a.y, &sa)) {
		int inf = 1;
		for (int c = 0; c < 128; c++)
			inf &= a.mla[c] == -INFINITY && isfinite(a.mla[128 + c]);
		Part q = {.s = {1, 29, 128}, .hT = a.hT + 128, .mla = a.mla + 128, .mh = a.mh + 128};
		double e = map_apply_err(&q, pb.h0 + 128);
		check(inf && same_bits(a.hT, a.mh, 128) && e <= TOL_CROSS,
		      "%s: a row with resets has map_loga -inf and hT = map_h bit for bit; the row without "
		      "composes (%.1e)",
		      r->name, e);
	}
	out_free(&a);
	out_free(&b);
	prob_free(&pb);
}

/* ---- 6. finite differences with a state ---------------------------------------------- */

/* f = sum(dy y) + sum(dhT hT) at the current inputs, the state st's */
static double objective(const Ref *r, const Prob *pb, const SeqState *st, Out *o, size_t ns)
{
	if (fwd(r, pb->s, pb->p, pb->x, o->y, st))
		return NAN;
	double f = 0;
	for (size_t e = 0; e < o->n; e++)
		f += pb->dy[e] * o->y[e];
	for (size_t e = 0; e < ns; e++)
		f += pb->dhT[e] * o->hT[e];
	return f;
}

/* The analytic g of the array v (which pb or st reads) against the 4th-order
 * central difference at the elements idx[0..m): the relative error. */
static double fd_error(const Ref *r, const Prob *pb, const SeqState *st, Out *o, size_t ns, double *v, const double *g,
                       const long *idx, int m)
{
	static const double off[4] = {2, 1, -1, -2};
	double num = 0, den = 0;
	for (int k = 0; k < m; k++) {
		double keep = v[idx[k]], h = 1e-3 * fmax(1.0, fabs(keep)), f[4];
		for (int q = 0; q < 4; q++) {
			v[idx[k]] = keep + off[q] * h;
			f[q] = objective(r, pb, st, o, ns);
		}
		v[idx[k]] = keep;
		double fd = (8 * (f[1] - f[2]) - (f[0] - f[3])) / (12 * h), an = g[idx[k]];
		num += (fd - an) * (fd - an);
		den += an * an;
	}
	return den > 0 ? sqrt(num / den) : isnan(num) ? INFINITY : sqrt(num);
}

/* All of a tensor of up to 256 elements; else 24 random ones after the must list. */
static int fd_pick(long n, const long *must, int nmust, Rng *rng, long *idx)
{
	int m = 0;
	if (n <= 256) {
		for (long k = 0; k < n; k++)
			idx[m++] = k;
		return m;
	}
	for (int k = 0; k < nmust; k++)
		idx[m++] = must[k];
	while (m < nmust + 24)
		idx[m++] = (long)(rng_uniform(rng) * n) % n;
	return m;
}

/* x's elements that matter most: the first token of each sequence, each
 * reset token, the last token, one channel each */
static int fd_must_x(const Prob *pb, int fl, long *must)
{
	int m = 0, L = pb->s.L, D = pb->s.D;
	for (int b = 0; b < pb->s.B; b++)
		for (int t = 0; t < L && m < 64; t++) {
			long k = (long)b * L + t;
			int doc0 = fl & S_CU ? t == pb->cu[0] : t == 0;
			for (int i = 0; fl & S_CU && i < pb->ndocs; i++)
				doc0 |= t == pb->cu[i];
			if (doc0 || t == L - 1 || (fl & S_RESET && pb->reset[k]))
				must[m++] = k * D + (t * 7) % D;
		}
	return m;
}

static void fd_case(const Ref *r, Prob *pb, int fl, Rng *rng)
{
	Out an, o;
	out_make(&an, pb);
	out_make(&o, pb);
	if (run(r, pb, fl, &an)) {
		out_free(&an), out_free(&o);
		return;
	}
	SeqState st = state_of(pb, fl, &o);
	st.dh0 = NULL;
	size_t ns = (size_t)(fl & S_CU ? pb->ndocs : pb->s.B) * pb->s.D;
	long *idx = mem(((size_t)ns + 128) * sizeof(long)), must[64];
	double worst = 0;
	char what[512] = "";
	int m = fd_pick((long)ns, NULL, 0, rng, idx);
	double e = fd_error(r, pb, &st, &o, ns, pb->h0, an.dh0, idx, m);
	snprintf(what, sizeof what, "dh0 %.1e (%d)", e, m);
	worst = e;
	m = fd_pick((long)an.n, must, fd_must_x(pb, fl, must), rng, idx);
	e = fd_error(r, pb, &st, &o, ns, pb->x, an.dx, idx, m);
	snprintf(what + strlen(what), sizeof what - strlen(what), ", dx %.1e (%d)", e, m);
	worst = fmax(worst, e);
	for (int i = 0; i < pb->np; i++) {
		m = fd_pick(pb->pn[i], (long[]){0, pb->pn[i] - 1}, 2, rng, idx);
		e = fd_error(r, pb, &st, &o, ns, pb->p[i], an.dp[i], idx, m);
		snprintf(what + strlen(what), sizeof what - strlen(what), ", d%s %.1e", pname(r, i), e);
		worst = fmax(worst, e);
	}
	check(worst <= TOL_FD,
	      "%s at %dx%dx%d, %s: dh0, dx and every gradient = finite differences of sum(dy y) + sum(dhT hT), "
	      "to %.0e: %s",
	      r->name, pb->s.B, pb->s.L, pb->s.D, fl & S_CU ? "cu_seqlens with h0 and dhT" : "h0, resets, dhT", TOL_FD,
	      what);
	free(idx);
	out_free(&an);
	out_free(&o);
}

static void test_fd(const Ref *r, Rng *rng)
{
	Prob pb;
	prob_make(&pb, r, (Shp){2, 9, 64}, rng);
	draw_resets(&pb, rng);
	pb.reset[0] = pb.reset[9] = 0; /* both rows continue from h0 */
	fd_case(r, &pb, S_H0 | S_RESET | S_DHT, rng);
	prob_free(&pb);
	prob_make(&pb, r, (Shp){1, 13, 64}, rng);
	draw_resets(&pb, rng);
	docs_from_resets(&pb);
	fd_case(r, &pb, S_CU | S_H0 | S_DHT, rng);
	prob_free(&pb);
}

/* ---- 7. malformed states --------------------------------------------------------- */

typedef struct {
	const char *what;
	int B, L;
	int cu[6], ndocs, use_cu, mark, map; /* mark: reset[1][3] = mark; map: ask for the map */
	const char *want;
} Bad;

static const Bad BAD[] = {
        {"non-increasing cu_seqlens", 1, 10, {0, 5, 5, 10}, 3, 1, 0, 0, "cu_seqlens[2] = 5 is not above cu_seqlens[1]"},
        {"decreasing cu_seqlens", 1, 10, {0, 6, 4, 10}, 3, 1, 0, 0, "cu_seqlens[2] = 4 is not above"},
        {"cu_seqlens[0] != 0", 1, 10, {1, 5, 10}, 2, 1, 0, 0, "cu_seqlens[0] is 1"},
        {"cu_seqlens[n] != L", 1, 10, {0, 5, 9}, 2, 1, 0, 0, "cu_seqlens[2] = 9: the last offset must be L = 10"},
        {"cu_seqlens with B > 1", 2, 10, {0, 5, 10}, 2, 1, 0, 0, "B is 2"},
        {"more documents than tokens", 1, 2, {0, 1, 2, 3}, 3, 1, 0, 0, "ndocs 3"},
        {"cu_seqlens with the map", 1, 10, {0, 5, 10}, 2, 1, 0, 1, "the row's map"},
        {"ndocs without cu_seqlens", 1, 10, {0}, 2, 0, 0, 0, "ndocs 2 without cu_seqlens"},
        {"a reset mark of 2", 2, 10, {0}, 0, 0, 2, 0, "reset[1][3] = 2"},
};

static SeqState bad_state(const Bad *c, unsigned char *reset, double *map)
{
	SeqState st = {0};
	if (c->use_cu)
		st.cu_seqlens = c->cu;
	st.ndocs = c->ndocs;
	if (c->mark) {
		memset(reset, 0, (size_t)c->B * c->L);
		reset[c->L + 3] = (unsigned char)c->mark;
		st.reset = reset;
	}
	if (c->map)
		st.map_loga = map;
	return st;
}

static void test_refusals(const Ref *const *refs, int nref)
{
	unsigned char reset[64];
	double *map = vec(64 * 2), *buf = vec((size_t)2 * 10 * 64 * 2), *dp[MAXP];
	for (int k = 0; k < MAXP; k++)
		dp[k] = vec(64 * 64);
	char err[1024];
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
		const Bad *c = &BAD[i];
		SeqState st = bad_state(c, reset, map);
		err[0] = 0;
		int rc = seqstate_check(&st, c->B, c->L, 64, err, sizeof err);
		check(rc == -1 && strstr(err, c->want), "seqstate_check refuses %s: \"%s\"", c->what, err);
		for (int k = 0; k < nref; k++) {
			err[0] = 0;
			RefShape rs = {c->B, c->L, 64, 1};
			const double *const *cp = (const double *const *)dp;
			int f = refs[k]->hand ? refs[k]->hand->forward_state(&rs, cp, buf, buf, &st, err, sizeof err)
			                      : rf_forward_state(refs[k]->gen, (RfShape){c->B, c->L, 64}, cp, buf, buf,
			                                         &st, err, sizeof err);
			int okf = f == -1 && strstr(err, c->want);
			int b = refs[k]->hand
			        ? refs[k]->hand->backward_state(&rs, cp, buf, buf, buf, dp, &st, err, sizeof err)
			        : rf_backward_state(refs[k]->gen, (RfShape){c->B, c->L, 64}, cp, buf, buf, buf, dp, &st,
			                            err, sizeof err);
			check(okf && b == -1 && strstr(err, c->want), "%s refuses %s, forward and backward: \"%s\"",
			      refs[k]->name, c->what, err);
		}
	}
	SeqState good = {.cu_seqlens = (const int[]){0, 1, 2, 10}, .ndocs = 3};
	check(seqstate_check(&good, 1, 10, 64, err, sizeof err) == 0 &&
	              seqstate_check(NULL, 2, 10, 64, err, sizeof err) == 0,
	      "seqstate_check accepts well-formed cu_seqlens and the empty state");
	for (int k = 0; k < MAXP; k++)
		free(dp[k]);
	free(map), free(buf);
}

/* ---- the mixers ---------------------------------------------------------------------- */

/* The first mixer of a one-variant grid of arch/NAME.lua (written into
 * the scratch folder), its reference derived from its graph. */
static RfMixer *open_arch(const char *name)
{
	char path[1400], err[2048];
	snprintf(path, sizeof path, "%s/%s_grid.lua", g_tmp, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		check(0, "write %s", path);
		return NULL;
	}
	fprintf(f,
	        "local R = require \"recur\"\nreturn R.variants { mixer = require \"arch.%s\", chunk = { 16 }, "
	        "prefix = { 32 } }\n",
	        name);
	fclose(f);
	VariantSet *sets = NULL;
	int n = 0;
	RfMixer *gen = NULL;
	int rc = script_run(path, g_lua, &sets, &n, err, sizeof err);
	unlink(path);
	if (rc == 0)
		rc = rf_open(&sets[0].mixer, &gen, err, sizeof err);
	if (n)
		script_free(sets, n);
	if (rc)
		check(0, "the graph's reference of arch/%s.lua opens: %s", name, err);
	return rc ? NULL : gen;
}

static void test_mixer(const char *name, Rng *rng)
{
	RfMixer *gen = open_arch(name);
	const RefMixer *hand = ref_find(name);
	if (!gen || !hand || hand->nparam != rf_nparam(gen) || hand->nparam > MAXP) {
		check(0, "%s: both references, with the same parameters", name);
		rf_close(gen);
		return;
	}
	Ref refs[2] = {{"", hand, NULL, hand->nparam}, {"", NULL, gen, hand->nparam}};
	snprintf(refs[0].name, sizeof refs[0].name, "%s ref/", name);
	snprintf(refs[1].name, sizeof refs[1].name, "%s graph", name);
	for (int k = 0; k < 2; k++) {
		clock_t t0 = clock();
		test_empty(&refs[k], rng);
		test_docs(&refs[k], rng);
		test_split(&refs[k], rng);
		test_map(&refs[k], rng);
		test_fd(&refs[k], rng);
		printf("     (%s: %.2f s of CPU)\n", refs[k].name, (double)(clock() - t0) / CLOCKS_PER_SEC);
	}
	test_cross(&refs[0], &refs[1], rng);
	const Ref *both[2] = {&refs[0], &refs[1]};
	test_refusals(both, 2);
	rf_close(gen);
}

int main(void)
{
	uint64_t seed;
	int rc = refenv_open("recur_test_ref_state", g_lua, sizeof g_lua, g_tmp, sizeof g_tmp, &seed);
	if (rc)
		return rc;
	Rng r;
	rng_seed(&r, seed);
	test_mixer("rglru", &r);
	test_mixer("samu", &r);
	rmdir(g_tmp);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
