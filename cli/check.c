/* recur check: the float64 reference a script's mixer gets from its graph
 * (script/reference.h), its backward held to central finite differences of
 * its own forward. CPU only, small shapes, seconds.
 *
 * The reference's derivatives are the generator's own (ex_grad), so they
 * cannot vouch for themselves: this is the independent check of them, for
 * any mixer a script can write. The objective is f = sum(dy * y) for a
 * random dy, whose gradient is exactly what the backward returns, for x
 * and every parameter. Per tensor: a sample of elements (the first and
 * last token of each sequence among them) and one random direction over
 * the whole tensor, each by the fourth-order central stencil
 *
 *     D(h) = (8 (f(v+h) - f(v-h)) - (f(v+2h) - f(v-2h))) / (12 h),  h = 1e-3 max(1, |v|)
 *
 * and its tolerance from the two errors such a difference has:
 *   truncation  O(h^4), estimated from the same stencil at 2h, which has
 *               16 times the truncation: |D(2h) - D(h)| / 15;
 *   rounding    each f is a sum of B L D terms, each the end of about
 *               nodes + L operations: |error of f| <= eps_f =
 *               2^-53 sum|dy y| (nodes + L + sqrt(B L D)), and the stencil
 *               multiplies it by (16 + 2) / 12 / h = 1.5 / h.
 * An element passes when |D(h) - analytic| <= 10 (truncation + rounding):
 * ten times what a right derivative can miss by. Where the forward is not
 * smooth within 4h (a where, min, max or gt switching), the truncation
 * estimate grows with it, and the check says less there, as it should.
 *
 * Each shape is checked twice: as a plain call, then with a sequence's
 * state (util/seqstate.h): a random h0 and dhT, resets at rate 0.1 with
 * two consecutive ones and one at the last token of the first row, and in
 * the last row (B > 1) a mark at t = 0, where it wins over h0. There f
 * adds sum(dhT * hT), and the table gains h0's row, the check of dh0; x's
 * sample adds a token at each reset.
 */
#include "cli.h"
#include "harness.h"
#include "pinit.h"
#include "reference.h"
#include "rng.h"
#include "script.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK_MAXELEMS (1 << 20) /* B L D: check runs at small shapes */
#define CK_MAXMIX 16
#define CK_STEP 1e-3
#define CK_SAFETY 10.0
#define CK_NUDGE 0.1 /* parameters: the script's init plus N(0, 0.1^2) */
#define CK_RESET_RATE 0.1
#define CK_MAXMUST 8 /* x's elements at reset tokens, in the state case */

static int cli_check(int argc, char **argv);

enum { C_SHAPE, C_MIXER, C_SEED, C_ELEMENTS, C_LUA };

static const CliOpt OPTS[] = {
        [C_SHAPE] = {"--shape", "BxLxD", NULL, "check at this shape; BxLxD,... gives several (default: 2x37xK,1x19x2K "
                     "for heads of K channels: 2x37x64,1x19x128 at 64)", 1},
        [C_MIXER] = {"--mixer", "NAME", NULL, "check this mixer (default: every mixer of SCRIPT)", 1},
        [C_SEED] = CLI_OPT_SEED,
        [C_ELEMENTS] = {"--elements", "N", "24", "elements of each tensor checked one by one, 1..4096", 0},
        [C_LUA] = {"--lua", "DIR", NULL,
                   "folder of recur.lua (default: $RECUR_LUA, else the source tree's lua/, "
                   "else ./lua)",
                   0},
};

const CliCmd cli_check_cmd = {
        "check",
        "[SCRIPT]",
        "each mixer's float64 reference against finite differences of its own forward (CPU, seconds)",
        OPTS,
        CLI_NOPTS(OPTS),
        cli_check,
};

typedef struct {
	const char *script, *lua;
	const char *mixer[CK_MAXMIX];
	int nmixer;
	recur_shape sh[H_MAXSHAPES];
	int nsh;
	uint64_t seed;
	int elements;
} CheckArgs;

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	CheckArgs *a = ctx;
	switch (opt) {
	case CLI_OPERAND:
		if (a->script) {
			snprintf(err, n, "unexpected argument %s: one SCRIPT only (%s given first)", v, a->script);
			return -1;
		}
		return cli_parse_path(v, &a->script, err, n);
	case C_SHAPE:
		return harness_add_shapes(v, a->sh, &a->nsh, H_MAXSHAPES, err, n);
	case C_MIXER:
		return cli_add_value(a->mixer, &a->nmixer, CK_MAXMIX, v, err, n);
	case C_SEED:
		return cli_parse_seed(v, &a->seed, err, n);
	case C_ELEMENTS:
		return cli_parse_int(v, 1, 4096, &a->elements, err, n);
	case C_LUA:
		return cli_parse_path(v, &a->lua, err, n);
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

/* ---- one mixer at one shape ------------------------------------------------ */

/* x, dy, the parameters and what the reference makes of them. */
typedef struct {
	const RfMixer *r;
	const Mixer *mx;
	RfShape s;
	size_t n; /* B L D */
	int np;
	long pn[MX_MAXPARAM];
	double *p[MX_MAXPARAM], *dp[MX_MAXPARAM];
	double *x, *dy, *dx, *y;
	double eps_f; /* the rounding error bound of one f */
	/* the state case: h0, dhT and the resets in, hT and dh0 out ([B][D], [B][L]) */
	int state, nreset;
	double *h0, *dhT, *hT, *dh0;
	unsigned char *reset;
	SeqState st;
	long must[CK_MAXMUST]; /* x's elements at reset tokens, checked first */
	int nmust;
	char err[1024];
} Ck;

static void ck_free(Ck *c)
{
	free(c->x);
	free(c->dy);
	free(c->dx);
	free(c->y);
	free(c->h0);
	free(c->dhT);
	free(c->hT);
	free(c->dh0);
	free(c->reset);
	for (int i = 0; i < c->np; i++) {
		free(c->p[i]);
		free(c->dp[i]);
	}
}

static double *ck_vec(Ck *c, size_t n)
{
	double *v = calloc(n ? n : 1, sizeof(double));
	if (!v)
		snprintf(c->err, sizeof c->err, "out of memory for %zu doubles", n);
	return v;
}

/* f = sum(dy * y) (+ sum(dhT * hT) with a state) at the current x, h0 and
 * parameters; NaN when the forward fails. */
static double ck_f(Ck *c)
{
	const double *const *p = (const double *const *)c->p;
	if (rf_forward_state(c->r, c->s, p, c->x, c->y, c->state ? &c->st : NULL, c->err, sizeof c->err))
		return NAN;
	double f = 0;
	for (size_t e = 0; e < c->n; e++)
		f += c->dy[e] * c->y[e];
	for (size_t e = 0; c->state && e < (size_t)c->s.B * c->s.D; e++)
		f += c->dhT[e] * c->hT[e];
	return f;
}

static const char *const init_name[] = {
        [INIT_ZEROS] = "zeros", [INIT_CONST] = "const", [INIT_NORMAL] = "normal", [INIT_DECAY] = "decay"};

/* The script's initialisation, nudged so that zero biases do not hide terms. */
static void ck_params(Ck *c, Rng *r)
{
	for (int i = 0; i < c->np; i++) {
		const MxParam *pr = &c->mx->param[i];
		double a = pr->init == INIT_NORMAL && pr->a_is_rsqrt_k ? 1 / sqrt((double)c->mx->k) : pr->a;
		for (long e = 0; e < c->pn[i]; e++)
			c->p[i][e] = pinit_value(init_name[pr->init], a, pr->b, r) + CK_NUDGE * rng_normal(r);
	}
}

/* Marks at CK_RESET_RATE; in row 0 two consecutive ones and one at the
 * last token, never at t = 0 (that row continues from h0); in the last row
 * of several one at t = 0, where the mark wins over h0. x's sample gets a
 * token at each, up to CK_MAXMUST. */
static void ck_resets(Ck *c, Rng *r)
{
	int B = c->s.B, L = c->s.L, D = c->s.D;
	for (long k = 0; k < (long)B * L; k++)
		c->reset[k] = rng_uniform(r) < CK_RESET_RATE;
	c->reset[0] = 0;
	if (L >= 4) {
		int t = 1 + (int)(rng_uniform(r) * (L - 3));
		c->reset[t] = c->reset[t + 1] = 1;
	}
	c->reset[L - 1] = L > 1;
	if (B > 1)
		c->reset[(long)(B - 1) * L] = 1;
	for (long k = 0; k < (long)B * L; k++) {
		c->nreset += c->reset[k];
		if (c->reset[k] && c->nmust < CK_MAXMUST)
			c->must[c->nmust++] = k * D + (k * 7) % D;
	}
}

/* The state case's inputs and outputs, drawn after the plain case's. */
static int ck_state(Ck *c, Rng *r)
{
	size_t ns = (size_t)c->s.B * c->s.D;
	c->state = 1;
	if (!(c->h0 = ck_vec(c, ns)) || !(c->dhT = ck_vec(c, ns)) || !(c->hT = ck_vec(c, ns)) ||
	    !(c->dh0 = ck_vec(c, ns)))
		return -1;
	if (!(c->reset = calloc((size_t)c->s.B * c->s.L, 1))) {
		snprintf(c->err, sizeof c->err, "out of memory for %d x %d reset marks", c->s.B, c->s.L);
		return -1;
	}
	for (size_t e = 0; e < ns; e++) {
		c->h0[e] = rng_normal(r);
		c->dhT[e] = rng_normal(r);
	}
	ck_resets(c, r);
	c->st = (SeqState){.h0 = c->h0, .reset = c->reset, .hT = c->hT, .dhT = c->dhT, .dh0 = c->dh0};
	return 0;
}

static int ck_make(Ck *c, const RfMixer *r, const Mixer *mx, RfShape s, uint64_t seed, int state)
{
	memset(c, 0, sizeof *c);
	c->r = r;
	c->mx = mx;
	c->s = s;
	c->n = (size_t)s.B * s.L * s.D;
	c->np = rf_nparam(r);
	if (!(c->x = ck_vec(c, c->n)) || !(c->dy = ck_vec(c, c->n)) || !(c->dx = ck_vec(c, c->n)) ||
	    !(c->y = ck_vec(c, c->n)))
		return -1;
	for (int i = 0; i < c->np; i++) {
		c->pn[i] = rf_param_count(r, i, s);
		if (!(c->p[i] = ck_vec(c, (size_t)c->pn[i])) || !(c->dp[i] = ck_vec(c, (size_t)c->pn[i])))
			return -1;
	}
	Rng rng;
	rng_seed(&rng, seed);
	for (size_t e = 0; e < c->n; e++) {
		c->x[e] = rng_normal(&rng);
		c->dy[e] = rng_normal(&rng);
	}
	ck_params(c, &rng);
	if (state && ck_state(c, &rng))
		return -1;
	double f1 = 0;
	if (isnan(ck_f(c)))
		return -1;
	for (size_t e = 0; e < c->n; e++)
		f1 += fabs(c->dy[e] * c->y[e]);
	for (size_t e = 0; state && e < (size_t)s.B * s.D; e++)
		f1 += fabs(c->dhT[e] * c->hT[e]);
	c->eps_f = ldexp(f1, -53) * (mx->g.len + s.L + sqrt((double)c->n));
	return rf_backward_state(r, s, (const double *const *)c->p, c->x, c->dy, c->dx, c->dp, state ? &c->st : NULL,
	                         c->err, sizeof c->err);
}

/* The stencil at step h along dir (NULL: the element at), and the same at 2h. */
static void ck_stencil(Ck *c, double *v, long at, const double *dir, long len, double h, double *d1, double *d2)
{
	static const double off[4] = {1, -1, 2, -2};
	double f[2][4], keep = at >= 0 ? v[at] : 0;
	for (int s = 0; s < 2; s++)
		for (int q = 0; q < 4; q++) {
			double step = off[q] * h * (s + 1);
			if (dir)
				for (long e = 0; e < len; e++)
					v[e] += step * dir[e];
			else
				v[at] = keep + step;
			f[s][q] = ck_f(c);
			if (dir)
				for (long e = 0; e < len; e++)
					v[e] -= step * dir[e];
			else
				v[at] = keep;
		}
	double *d[2] = {d1, d2};
	for (int s = 0; s < 2; s++)
		*d[s] = (8 * (f[s][0] - f[s][1]) - (f[s][2] - f[s][3])) / (12 * h * (s + 1));
}

/* One tensor's result. */
typedef struct {
	int count;
	double maxerr, num, den, maxtol, ratio; /* ratio: the worst error / tolerance */
} CkRow;

static void ck_judge(Ck *c, CkRow *row, double fd, double fd2, double an, double h)
{
	double err = fabs(fd - an);
	double tol = CK_SAFETY * (fabs(fd2 - fd) / 15 + 1.5 * c->eps_f / h);
	double q = err / tol;
	row->count++;
	row->maxerr = err > row->maxerr || isnan(err) ? err : row->maxerr;
	row->num += (fd - an) * (fd - an);
	row->den += an * an;
	row->maxtol = tol > row->maxtol ? tol : row->maxtol;
	row->ratio = q > row->ratio || isnan(q) ? q : row->ratio;
}

/* Which elements of a tensor of len (x: [B][L][D]) are checked one by one. */
static long ck_pick(const Ck *c, int is_x, long len, int k, Rng *r)
{
	long L = c->s.L, D = c->s.D;
	if (!is_x && k < 2)
		return k ? len - 1 : 0; /* a parameter's first and last element, then random ones */
	if (is_x && k < 2 * c->s.B) {
		long b = k / 2; /* each sequence's first element and last token's last channel */
		return k % 2 ? (b * L + L - 1) * D + D - 1 : b * L * D;
	}
	if (is_x && k < 2 * c->s.B + c->nmust)
		return c->must[k - 2 * c->s.B]; /* a token at each reset */
	return (long)(rng_uniform(r) * (double)len) % len;
}

static void ck_tensor(Ck *c, double *v, const double *g, long len, int is_x, int elements, Rng *r, CkRow *row)
{
	memset(row, 0, sizeof *row);
	int all = !is_x && len <= elements, m = all ? (int)len : elements;
	for (int k = 0; k < m; k++) {
		long at = all ? k : ck_pick(c, is_x, len, k, r);
		double h = CK_STEP * fmax(1.0, fabs(v[at])), d1, d2;
		ck_stencil(c, v, at, NULL, len, h, &d1, &d2);
		ck_judge(c, row, d1, d2, g[at], h);
	}
	/* one random direction over every element, the analytic <g, dir> */
	double *dir = malloc((size_t)len * sizeof *dir), an = 0, vmax = 1;
	if (!dir) {
		row->ratio = NAN;
		return;
	}
	for (long e = 0; e < len; e++) {
		dir[e] = rng_normal(r) / sqrt((double)len);
		an += g[e] * dir[e];
		vmax = fmax(vmax, fabs(v[e]));
	}
	double h = CK_STEP * vmax, d1, d2;
	ck_stencil(c, v, -1, dir, len, h, &d1, &d2);
	ck_judge(c, row, d1, d2, an, h);
	free(dir);
}

static int ck_print(const char *name, const CkRow *row)
{
	int ok = row->ratio <= 1;
	double rel = row->den > 0 ? sqrt(row->num / row->den) : sqrt(row->num);
	printf("  %-12s %6d %12.2e %12.2e %12.2e %10.2g  %s%s\n", name, row->count, row->maxerr, rel, row->maxtol,
	       row->ratio, ok ? "PASS" : "FAIL", row->den > 0 ? "" : " (zero gradient)");
	return ok;
}

/* The table of one mixer at one shape, plain or with a state; the
 * tensors that failed, or -1 when the case could not be made. */
static int ck_case(const RfMixer *r, const Mixer *mx, RfShape s, uint64_t seed, int elements, int state)
{
	char err[1024];
	if (rf_check_shape(r, s, err, sizeof err)) {
		printf("%s at %dx%dx%d: %s\n", mx->name, s.B, s.L, s.D, err);
		return -1;
	}
	if ((long long)s.B * s.L * s.D > CK_MAXELEMS) {
		printf("%s at %dx%dx%d: more than %d elements; check runs at small shapes (finite differences "
		       "take a forward per point)\n",
		       mx->name, s.B, s.L, s.D, CK_MAXELEMS);
		return -1;
	}
	Ck c;
	Rng rng;
	rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ULL);
	int bad = 0;
	if (ck_make(&c, r, mx, s, seed, state) != 0) {
		printf("%s at %dx%dx%d%s: %s\n", mx->name, s.B, s.L, s.D, state ? " with a state" : "", c.err);
		ck_free(&c);
		return -1;
	}
	char with[64] = "";
	if (state)
		snprintf(with, sizeof with, " with h0, dhT and %d reset%s", c.nreset, c.nreset == 1 ? "" : "s");
	printf("%s at %dx%dx%d%s, seed %llu: rounding bound of f %.1e\n", mx->name, s.B, s.L, s.D, with,
	       (unsigned long long)seed, c.eps_f);
	printf("  %-12s %6s %12s %12s %12s %10s  %s\n", "tensor", "points", "max |fd-an|", "rel err", "max tol",
	       "err/tol", "result");
	CkRow row;
	ck_tensor(&c, c.x, c.dx, (long)c.n, 1, elements, &rng, &row);
	bad += !ck_print("x", &row);
	for (int i = 0; i < c.np; i++) {
		ck_tensor(&c, c.p[i], c.dp[i], c.pn[i], 0, elements, &rng, &row);
		bad += !ck_print(rf_param_name(r, i), &row);
	}
	if (state) {
		ck_tensor(&c, c.h0, c.dh0, (long)s.B * s.D, 0, elements, &rng, &row);
		bad += !ck_print("h0", &row);
	}
	ck_free(&c);
	return bad;
}

/* ---- the command -------------------------------------------------------------- */

static void ck_explain(int elements)
{
	printf("f = sum(dy * y) over random x, dy and the script's parameters (nudged by N(0, %g^2)).\n"
	       "Per tensor: %d elements (among x's, each sequence's first and last token) and one random\n"
	       "direction over all of it, each by the 4th-order central difference D(h), h = %g max(1, |v|).\n"
	       "tol = %g x (truncation + rounding): truncation |D(2h) - D(h)| / 15 (the error is O(h^4)),\n"
	       "rounding 1.5 eps_f / h, eps_f = 2^-53 sum|dy y| (graph nodes + L + sqrt(B L D)) bounding the\n"
	       "error of one f. err/tol above 1 fails.\n"
	       "Each shape again with a state: random h0 and dhT, f + sum(dhT * hT), resets at rate %g (two\n"
	       "consecutive and one at the last token in the first row, a mark at t = 0 over h0 in the last\n"
	       "row of several; x's sample adds a token at each), and h0's row checks dh0.\n\n",
	       CK_NUDGE, elements, CK_STEP, CK_SAFETY, CK_RESET_RATE);
}

/* Every mixer of sets chosen by --mixer, once each (a script may hold
 * several sets of one mixer): the tensors that failed, cases that could
 * not run counted as one failure each. */
static int ck_all(const CheckArgs *a, const VariantSet *sets, int nsets, int *checked)
{
	int fails = 0;
	*checked = 0;
	for (int si = 0; si < nsets; si++) {
		const Mixer *mx = &sets[si].mixer;
		int seen = 0;
		for (int k = 0; k < si; k++)
			seen |= !strcmp(sets[k].mixer.name, mx->name);
		if (seen || !cli_mixer_wanted(a->mixer, a->nmixer, mx->name))
			continue;
		RfMixer *r = NULL;
		char err[1024];
		(*checked)++;
		if (rf_open(mx, &r, err, sizeof err)) {
			printf("%s: %s\n", mx->name, err);
			fails++;
			continue;
		}
		/* without --shape: one and two heads, whatever their width */
		recur_shape dflt[2] = { { 2, 37, mx->k }, { 1, 19, 2 * mx->k } };
		const recur_shape *sh = a->nsh ? a->sh : dflt;
		for (int k = 0; k < (a->nsh ? a->nsh : 2); k++)
			for (int state = 0; state < 2; state++) {
				int bad = ck_case(r, mx, (RfShape){sh[k].B, sh[k].L, sh[k].D},
				                  a->seed + 7919u * k, a->elements, state);
				fails += bad < 0 ? 1 : bad;
				putchar('\n');
				if (bad < 0)
					break; /* the shape itself is refused: once is enough */
			}
		rf_close(r);
	}
	return fails;
}

/* Every --mixer must name a mixer of the script: one that matches nothing is refused. */
static int ck_names(const CheckArgs *a, const VariantSet *sets, int nsets)
{
	for (int i = 0; i < a->nmixer; i++) {
		int found = 0;
		for (int si = 0; si < nsets; si++)
			found |= !strcmp(sets[si].mixer.name, a->mixer[i]);
		if (!found) {
			fprintf(stderr, "recur check: no mixer %s in %s (its mixers:", a->mixer[i], a->script);
			for (int si = 0; si < nsets; si++)
				fprintf(stderr, " %s", sets[si].mixer.name);
			fputs(")\n", stderr);
			return -1;
		}
	}
	return 0;
}

static int cli_check(int argc, char **argv)
{
	CheckArgs a = {0};
	int prc = cli_parse(&cli_check_cmd, argc, argv, set, &a);
	if (prc)
		return prc > 0 ? 0 : 2;
	char def[4096], err[4096];
	if (!a.lua)
		a.lua = cli_lua_root();
	if (!a.script) {
		snprintf(def, sizeof def, "%s/variants/all.lua", a.lua);
		a.script = def;
	}
	VariantSet *sets = NULL;
	int nsets = 0;
	if (script_run(a.script, a.lua, &sets, &nsets, err, sizeof err) != 0) {
		fprintf(stderr, "recur check: %s\n", err);
		return 1;
	}
	if (ck_names(&a, sets, nsets)) {
		script_free(sets, nsets);
		return 1;
	}
	ck_explain(a.elements);
	int checked, fails = ck_all(&a, sets, nsets, &checked);
	script_free(sets, nsets);
	int nsh = a.nsh ? a.nsh : 2;
	printf("%d mixer%s at %d shape%s: %s (%d failed)\n", checked, checked == 1 ? "" : "s", nsh, nsh == 1 ? "" : "s",
	       fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
