/* recur verify: every chosen variant on the GPU against the float64 reference.
 *
 * Per mixer and shape: fresh random inputs and parameters (the script's
 * initialisation), one float64 reference forward+backward, then for each
 * variant legal at that shape: outputs poisoned with NaN, forward, backward,
 * ||out - ref|| / ||ref|| for y, dx and every parameter gradient, a check
 * that nothing is NaN/Inf (so every element was written), and a second
 * backward whose parameter gradients must match the first bit for bit.
 * Beyond the spec's whole-tensor norm, y and dx must hold it per token row
 * and per channel within LOCAL_TOL (vm_local): a wrong value confined to a
 * few steps of one chunk moves the whole tensor's norm by less than the
 * rounding does. With --graph the checked forward+backward is one
 * recur_graph replayed twice, and the second pass's calls must give its
 * gradient bits.
 */
#include "cli.h"
#include "harness.h"
#include "pinit.h"
#include "npy.h"
#include "recur.h"
#include "ref.h"
#include "rng.h"
#include <math.h>
#include "vmath.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOL 1e-2
#define LOCAL_TOL 1e-1   /* bf16 rounding: about 4e-3 per row */
#define MAXP 16

typedef struct {
	recur_shape s;
	int np;
	long pn[MAXP];
	double *x, *dy, *p[MAXP];            /* inputs (bf16 / fp32 values) */
	double *y, *dx, *dp[MAXP];           /* reference outputs */
	uint16_t *xb, *dyb;                  /* x and dy as the device holds them (bf16), made once */
	const char *pname[MAXP];
} Case;

typedef struct {
	recur_rt *rt;
	recur_manifest *m;
	const char *dump;
	int fails, passes;
	int time_reps;      /* > 0: time forward and backward after a pass */
	int graph;          /* the checked forward+backward through a graph */
	double xscale;      /* x ~ N(0, xscale^2): large activations reach the kernels' overflow guards */
} Ctx;

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Median forward and backward ms over n runs (warm, no L2 flush: a quick
 * look only; recur bench measures under the protocol). */
static int time_variant(Ctx *cx, recur_variant *rv, recur_shape s, const recur_io *io, int n,
                        float *fwd, float *bwd, char *err, size_t en)
{
	CUevent e[3] = { 0 };   /* NULL: nothing to destroy when a create fails */
	float *tf = calloc((size_t)n, sizeof(float)), *tb = calloc((size_t)n, sizeof(float));
	int rc = -1;
	if (!tf || !tb) {
		snprintf(err, en, "out of host memory for %d timings", n);
		goto out;
	}
	for (int k = 0; k < 3; k++)
		if (recur_event_create(cx->rt, &e[k], err, en) != 0)
			goto out;
	for (int r = 0; r < n; r++) {
		if (recur_event_record(cx->rt, e[0], 0, err, en) || recur_forward(rv, s, io, 0, err, en) ||
		    recur_event_record(cx->rt, e[1], 0, err, en) || recur_backward(rv, s, io, 0, err, en) ||
		    recur_event_record(cx->rt, e[2], 0, err, en) || recur_sync(cx->rt, err, en) ||
		    recur_event_elapsed_ms(cx->rt, e[0], e[1], &tf[r], err, en) ||
		    recur_event_elapsed_ms(cx->rt, e[1], e[2], &tb[r], err, en))
			goto out;
	}
	qsort(tf, (size_t)n, sizeof(float), cmp_float);
	qsort(tb, (size_t)n, sizeof(float), cmp_float);
	*fwd = tf[n / 2];
	*bwd = tb[n / 2];
	rc = 0;
out:
	for (int k = 0; k < 3; k++)
		recur_event_destroy(cx->rt, e[k]);
	free(tf);
	free(tb);
	return rc;
}

static void case_free(Case *c)
{
	free(c->x); free(c->dy); free(c->y); free(c->dx);
	free(c->xb); free(c->dyb);
	for (int i = 0; i < c->np; i++) {
		free(c->p[i]);
		free(c->dp[i]);
	}
	memset(c, 0, sizeof *c);
}

/* Random inputs and the script's initial parameters, rounded to what the
 * GPU holds (bf16 tensors, fp32 parameters), then the reference. */
static int case_random(Ctx *cx, int v, recur_shape s, uint64_t seed, Case *c, char *err, size_t n)
{
	const RefMixer *rm = ref_find(recur_manifest_variant_mixer(cx->m, v));
	if (!rm) {
		snprintf(err, n, "no float64 reference for mixer %s", recur_manifest_variant_mixer(cx->m, v));
		return -1;
	}
	memset(c, 0, sizeof *c);
	c->s = s;
	c->np = recur_param_count(cx->m, v);
	if (c->np != rm->nparam) {
		snprintf(err, n, "mixer %s: the script declares %d parameters, the reference %d",
		         rm->name, c->np, rm->nparam);
		return -1;
	}
	Rng r;
	rng_seed(&r, seed);
	size_t ne = (size_t)s.B * s.L * s.D;
	c->x = malloc(ne * sizeof(double));
	c->dy = malloc(ne * sizeof(double));
	c->y = malloc(ne * sizeof(double));
	c->dx = malloc(ne * sizeof(double));
	if (!c->x || !c->dy || !c->y || !c->dx) {
		snprintf(err, n, "out of host memory for %zu elements", ne);
		return -1;
	}
	for (size_t i = 0; i < ne; i++)
		c->x[i] = bf16_round((float)(cx->xscale * rng_normal(&r)));
	for (size_t i = 0; i < ne; i++)
		c->dy[i] = bf16_round((float)rng_normal(&r));
	RefShape rs = { s.B, s.L, s.D, s.D / 64 };
	for (int p = 0; p < c->np; p++) {
		c->pname[p] = recur_param_name(cx->m, v, p);
		if (strcmp(c->pname[p], rm->param[p]) != 0) {
			snprintf(err, n, "mixer %s: parameter %d is %s in the script but %s in the reference",
			         rm->name, p, c->pname[p], rm->param[p]);
			return -1;
		}
		c->pn[p] = rm->param_count(p, &rs);
		c->p[p] = malloc((size_t)c->pn[p] * sizeof(double));
		c->dp[p] = malloc((size_t)c->pn[p] * sizeof(double));
		if (!c->p[p] || !c->dp[p]) {
			snprintf(err, n, "mixer %s: out of host memory for parameter %s (%ld elements)", rm->name,
			         c->pname[p], c->pn[p]);
			return -1;
		}
		double a, b;
		const char *kind = recur_param_init(cx->m, v, p, s, &a, &b);
		for (long i = 0; i < c->pn[p]; i++)
			c->p[p][i] = (float)pinit_value(kind, a, b, &r);
	}
	rm->forward(&rs, (const double *const *)c->p, c->x, c->y);
	rm->backward(&rs, (const double *const *)c->p, c->x, c->dy, c->dx, c->dp);
	return 0;
}

/* A golden case: inputs and expected outputs from the independent implementation. */
static int case_golden(const char *dir, const RefMixer *rm, Case *c, char *err, size_t n)
{
	memset(c, 0, sizeof *c);
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	int B, L, D;
	char name[64];
	if (sscanf(base, "%63[a-z]_B%d_L%d_D%d", name, &B, &L, &D) != 4) {
		snprintf(err, n, "%s: golden folder names look like rglru_B2_L37_D128", dir);
		return -1;
	}
	c->s = (recur_shape){ B, L, D };
	c->np = rm->nparam;
	char path[4096];
	long shp[NPY_MAXDIM];
	int nd;
	struct { const char *f; double **dst; } t[] = { { "x", &c->x }, { "dy", &c->dy }, { "y", &c->y }, { "dx", &c->dx } };
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s.npy", dir, t[i].f);
		if (npy_read(path, t[i].dst, shp, &nd, err, n) != 0)
			return -1;
	}
	for (int p = 0; p < c->np; p++) {
		c->pname[p] = rm->param[p];
		snprintf(path, sizeof path, "%s/%s.npy", dir, rm->param[p]);
		if (npy_read(path, &c->p[p], shp, &nd, err, n) != 0)
			return -1;
		c->pn[p] = 1;
		for (int k = 0; k < nd; k++)
			c->pn[p] *= shp[k];
		snprintf(path, sizeof path, "%s/d%s.npy", dir, rm->param[p]);
		if (npy_read(path, &c->dp[p], shp, &nd, err, n) != 0)
			return -1;
	}
	return 0;
}

static int dump_case(const char *dir, const Case *c, const float *y, const float *dx, float *const *dp,
                     recur_manifest *m, int v, char *err, size_t n)
{
	mkdir(dir, 0755);
	size_t ne = (size_t)c->s.B * c->s.L * c->s.D;
	long shp[3] = { c->s.B, c->s.L, c->s.D };
	float *t = malloc(ne * sizeof(float));
	char path[4096];
	int rc = 0;
	if (!t) {
		snprintf(err, n, "%s: out of host memory for %zu elements", dir, ne);
		return -1;
	}
	const double *src[2] = { c->x, c->dy };
	const char *nm[2] = { "x", "dy" };
	for (int k = 0; k < 2 && rc == 0; k++) {
		for (size_t i = 0; i < ne; i++)
			t[i] = (float)src[k][i];
		snprintf(path, sizeof path, "%s/%s.npy", dir, nm[k]);
		rc = npy_write_f32(path, t, shp, 3, err, n);
	}
	free(t);
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/y.npy", dir);
		rc = npy_write_f32(path, y, shp, 3, err, n);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/dx.npy", dir);
		rc = npy_write_f32(path, dx, shp, 3, err, n);
	}
	for (int p = 0; p < c->np && rc == 0; p++) {
		long dims[8];
		int nd = recur_param_dims(m, v, p, c->s, dims);
		float *pv = malloc((size_t)c->pn[p] * sizeof(float));
		if (!pv) {
			snprintf(err, n, "%s: out of host memory for parameter %s", dir, c->pname[p]);
			return -1;
		}
		for (long i = 0; i < c->pn[p]; i++)
			pv[i] = (float)c->p[p][i];
		snprintf(path, sizeof path, "%s/%s.npy", dir, c->pname[p]);
		rc = npy_write_f32(path, pv, dims, nd, err, n);
		free(pv);
		if (rc == 0) {
			snprintf(path, sizeof path, "%s/d%s.npy", dir, c->pname[p]);
			rc = npy_write_f32(path, dp[p], dims, nd, err, n);
		}
	}
	return rc;
}

#define TRY(call) do { if ((call) != 0) goto fail; } while (0)

/* Runs variant v on case c; prints one table row. */
/* The forward+backward whose outputs are checked: the calls, or with
 * --graph one recur_graph replayed twice (the second replay on the
 * workspaces the first left); the determinism pass after it makes the
 * calls, so the graph's gradient bits must equal theirs. */
static int first_pair(Ctx *cx, recur_variant *rv, recur_shape s, const recur_io *io, char *err, size_t n)
{
	if (!cx->graph)
		return recur_forward(rv, s, io, 0, err, n) || recur_backward(rv, s, io, 0, err, n) ? -1 : 0;
	recur_graph *g = NULL;
	int rc = recur_graph_create(rv, s, io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, n) ||
	         recur_graph_launch(g, 0, err, n) || recur_graph_launch(g, 0, err, n) || recur_sync(cx->rt, err, n);
	recur_graph_free(g);
	return rc ? -1 : 0;
}

static void run_variant(Ctx *cx, int v, Case *c)
{
	char err[8192] = "";
	const char *vname = recur_manifest_variant_name(cx->m, v);
	recur_shape s = c->s;
	size_t ne = (size_t)s.B * s.L * s.D;
	recur_variant *rv = NULL;
	CUdeviceptr dxp = 0, dyp = 0, dyy = 0, ddx = 0, dp[MAXP] = { 0 }, dg[MAXP] = { 0 };
	uint16_t *hb = malloc(ne * 2);
	float *y = malloc(ne * sizeof(float)), *dx = malloc(ne * sizeof(float));
	float *g[MAXP] = { 0 }, *g2 = NULL, *tmp = NULL;
	double e[2 + MAXP];
	int bad = 0, det = 1;
	if (!hb || !y || !dx) {
		snprintf(err, sizeof err, "out of host memory");
		goto fail;
	}
	TRY(recur_variant_load(cx->rt, cx->m, vname, &rv, err, sizeof err));
	TRY(recur_alloc(cx->rt, ne * 2, &dxp, err, sizeof err));
	TRY(recur_alloc(cx->rt, ne * 2, &dyp, err, sizeof err));
	TRY(recur_alloc(cx->rt, ne * 2, &dyy, err, sizeof err));
	TRY(recur_alloc(cx->rt, ne * 2, &ddx, err, sizeof err));
	if (!c->xb) {
		/* the same for every variant of the case: converted once */
		c->xb = malloc(ne * 2);
		c->dyb = malloc(ne * 2);
		if (!c->xb || !c->dyb) {
			free(c->xb); free(c->dyb);
			c->xb = c->dyb = NULL;
			snprintf(err, sizeof err, "out of host memory");
			goto fail;
		}
		vm_to_bf16(c->x, c->xb, ne);
		vm_to_bf16(c->dy, c->dyb, ne);
	}
	TRY(recur_memcpy_htod(cx->rt, dxp, c->xb, ne * 2, err, sizeof err));
	TRY(recur_memcpy_htod(cx->rt, dyp, c->dyb, ne * 2, err, sizeof err));
	long pmax = 1;
	for (int p = 0; p < c->np; p++)
		pmax = c->pn[p] > pmax ? c->pn[p] : pmax;
	tmp = malloc((size_t)pmax * sizeof(float));
	g2 = malloc((size_t)pmax * sizeof(float));
	if (!tmp || !g2) {
		snprintf(err, sizeof err, "out of host memory for %ld parameter elements", pmax);
		goto fail;
	}
	for (int p = 0; p < c->np; p++) {
		size_t bytes = (size_t)c->pn[p] * 4;
		if (!(g[p] = malloc(bytes))) {
			snprintf(err, sizeof err, "out of host memory for the gradient of %s", c->pname[p]);
			goto fail;
		}
		TRY(recur_alloc(cx->rt, bytes, &dp[p], err, sizeof err));
		TRY(recur_alloc(cx->rt, bytes, &dg[p], err, sizeof err));
		for (long i = 0; i < c->pn[p]; i++)
			tmp[i] = (float)c->p[p][i];
		TRY(recur_memcpy_htod(cx->rt, dp[p], tmp, bytes, err, sizeof err));
		TRY(recur_memset_u8(cx->rt, dg[p], 0xff, bytes, err, sizeof err));   /* NaN poison */
	}
	/* 0xffff is a bf16 NaN: an element the kernels never wrote shows up */
	TRY(recur_memset_u8(cx->rt, dyy, 0xff, ne * 2, err, sizeof err));
	TRY(recur_memset_u8(cx->rt, ddx, 0xff, ne * 2, err, sizeof err));
	recur_io io = { .x = dxp, .y = dyy, .dy = dyp, .dx = ddx, .params = dp, .grads = dg };
	TRY(first_pair(cx, rv, s, &io, err, sizeof err));
	TRY(recur_sync(cx->rt, err, sizeof err));
	TRY(recur_memcpy_dtoh(cx->rt, hb, dyy, ne * 2, err, sizeof err));
	vm_from_bf16(hb, y, ne);
	TRY(recur_memcpy_dtoh(cx->rt, hb, ddx, ne * 2, err, sizeof err));
	vm_from_bf16(hb, dx, ne);
	e[0] = vm_relerr(y, c->y, ne, &bad);
	e[1] = vm_relerr(dx, c->dx, ne, &bad);
	VmLocal lc[2];
	if (vm_local(y, c->y, (size_t)s.B * s.L, (size_t)s.D, &lc[0]) ||
	    vm_local(dx, c->dx, (size_t)s.B * s.L, (size_t)s.D, &lc[1])) {
		snprintf(err, sizeof err, "out of host memory for the per-row errors");
		goto fail;
	}
	for (int p = 0; p < c->np; p++) {
		TRY(recur_memcpy_dtoh(cx->rt, g[p], dg[p], (size_t)c->pn[p] * 4, err, sizeof err));
		e[2 + p] = vm_relerr(g[p], c->dp[p], (size_t)c->pn[p], &bad);
	}
	/* determinism: a second forward + backward gives the same gradient bits */
	for (int p = 0; p < c->np; p++)
		TRY(recur_memset_u8(cx->rt, dg[p], 0xff, (size_t)c->pn[p] * 4, err, sizeof err));
	TRY(recur_forward(rv, s, &io, 0, err, sizeof err));
	TRY(recur_backward(rv, s, &io, 0, err, sizeof err));
	TRY(recur_sync(cx->rt, err, sizeof err));
	for (int p = 0; p < c->np; p++) {
		TRY(recur_memcpy_dtoh(cx->rt, g2, dg[p], (size_t)c->pn[p] * 4, err, sizeof err));
		det &= memcmp(g2, g[p], (size_t)c->pn[p] * 4) == 0;
	}
	{
		int ok = bad == 0 && det;
		for (int k = 0; k < 2 + c->np; k++)
			ok &= e[k] <= TOL;
		double loc = 0;
		int lt = 0, lcol = 0;   /* the worst: tensor, column or row */
		for (int t = 0; t < 2; t++)
			for (int rc = 0; rc < 2; rc++) {
				double w = rc ? lc[t].col : lc[t].row;
				if (!(w <= loc) && !isnan(loc)) {   /* a NaN wins, and stays */
					loc = w;
					lt = t;
					lcol = rc;
				}
			}
		ok &= loc <= LOCAL_TOL;
		char shp[48];
		snprintf(shp, sizeof shp, "%dx%dx%d", s.B, s.L, s.D);
		printf("%-48s %-15s %s y %.1e dx %.1e", vname, shp, ok ? "PASS" : "FAIL", e[0], e[1]);
		for (int p = 0; p < c->np; p++)
			printf(" d%s %.1e", c->pname[p], e[2 + p]);
		printf(" local %.1e", loc);
		if (!(loc <= LOCAL_TOL)) {
			if (lcol)
				printf(" (%s channel %zu)", lt ? "dx" : "y", lc[lt].at_col);
			else
				printf(" (%s b %zu t %zu)", lt ? "dx" : "y", lc[lt].at_row / (size_t)s.L,
				       lc[lt].at_row % (size_t)s.L);
		}
		if (bad)
			printf(" nonfinite %d", bad);
		if (!det)
			printf(" nondeterministic");
		if (ok && cx->time_reps > 0) {
			float tf, tb;
			if (time_variant(cx, rv, s, &io, cx->time_reps, &tf, &tb, err, sizeof err) == 0)
				printf(" | fwd %.3f ms bwd %.3f ms", tf, tb);
			else
				printf(" | timing failed: %s", err);
			/* one more profiled forward and backward: where the time goes */
			const char *kn[16];
			float km[16];
			recur_set_profiling(rv, 1);
			for (int pass = 0; pass < 2; pass++) {
				int nk = 0;
				if ((pass == 0 ? recur_forward(rv, s, &io, 0, err, sizeof err)
				               : recur_backward(rv, s, &io, 0, err, sizeof err)) == 0)
					nk = recur_variant_last_times(rv, kn, km, 16);
				for (int k = 0; k < nk; k++)
					printf(" %s %.3f", kn[k], km[k]);
			}
			recur_set_profiling(rv, 0);
		}
		putchar('\n');
		fflush(stdout);
		ok ? cx->passes++ : cx->fails++;
		if (cx->dump) {
			char dir[4096];
			snprintf(dir, sizeof dir, "%s/%s.%s.B%dxL%dxD%d", cx->dump, recur_manifest_variant_mixer(cx->m, v), vname, s.B, s.L, s.D);
			mkdir(cx->dump, 0755);
			if (dump_case(dir, c, y, dx, g, cx->m, v, err, sizeof err) != 0)
				fprintf(stderr, "recur verify: --dump: %s\n", err);
		}
	}
	goto done;
fail:
	printf("%-48s %dx%dx%d FAIL %s\n", vname, s.B, s.L, s.D, err);
	fflush(stdout);
	cx->fails++;
done:
	if (dxp) recur_free(cx->rt, dxp);
	if (dyp) recur_free(cx->rt, dyp);
	if (dyy) recur_free(cx->rt, dyy);
	if (ddx) recur_free(cx->rt, ddx);
	for (int p = 0; p < MAXP; p++) {
		if (dp[p]) recur_free(cx->rt, dp[p]);
		if (dg[p]) recur_free(cx->rt, dg[p]);
		free(g[p]);
	}
	free(g2);
	free(tmp);
	free(hb);
	free(y);
	free(dx);
	if (rv)
		recur_variant_free(rv);
}

typedef struct {
	Ctx *cx;
	int v0;
	recur_shape s;
	uint64_t seed;
	Case c;
	int rc;
	char err[1024];
} Job;

static void *job_run(void *arg)
{
	Job *j = arg;
	j->rc = case_random(j->cx, j->v0, j->s, j->seed, &j->c, j->err, sizeof j->err);
	return NULL;
}

#define MAXMIX 8
#define MAXNAMES 256

enum { V_DIR, V_VARIANT, V_MIXER, V_SHAPE, V_SEED, V_GOLDENS, V_DUMP, V_TIME, V_XSCALE, V_GRAPH };

static const CliOpt OPTS[] = {
	[V_DIR] = CLI_OPT_DIR,
	[V_VARIANT] = { "--variant", "NAME", NULL, "check this variant (default: every variant of the chosen mixers)", 1 },
	[V_MIXER] = { "--mixer", "NAME", NULL, "check this mixer's variants (default: every mixer)", 1 },
	[V_SHAPE] = { "--shape", "BxLxD", "3x1000x1024,1x8192x1024", "check at this shape; BxLxD,... gives several", 1 },
	[V_SEED] = CLI_OPT_SEED,
	[V_GOLDENS] = { "--goldens", "DIR", NULL, "check the golden cases in DIR instead of random inputs", 0 },
	[V_DUMP] = { "--dump", "DIR", NULL, "write x, dy, y, dx, every parameter and gradient as .npy", 0 },
	[V_TIME] = { "--time", "N", NULL, "after a pass, warm forward/backward medians of N runs and per-kernel times",
	             0 },
	[V_XSCALE] = { "--x-scale", "S", "1", "draw x with standard deviation S (large activations)", 0 },
	[V_GRAPH] = { "--graph", NULL, NULL, "run the checked forward+backward as one CUDA graph replayed twice", 0 },
};

const CliCmd cli_verify_cmd = {
	"verify", NULL, "run variants on the GPU against the float64 reference",
	OPTS, CLI_NOPTS(OPTS), cli_verify,
};

/* The command line: what to check; how is in cx (dump, time, graph, x scale). */
typedef struct {
	const char *dir, *goldens;
	const char *mixer[MAXMIX];    /* --mixer: none means every mixer */
	int nmixer;
	const char *names[MAXNAMES];  /* --variant: none means every variant of those mixers */
	int nnames;
	recur_shape sh[H_MAXSHAPES];
	int nsh;
	uint64_t seed;
	Ctx *cx;
} VerifyArgs;

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	VerifyArgs *a = ctx;
	switch (opt) {
	case V_DIR: a->dir = v; return 0;
	case V_GOLDENS: a->goldens = v; return 0;
	case V_DUMP: a->cx->dump = v; return 0;
	case V_GRAPH: a->cx->graph = 1; return 0;
	case V_SHAPE: return harness_add_shapes(v, a->sh, &a->nsh, H_MAXSHAPES, err, n);
	case V_VARIANT: return cli_add_value(a->names, &a->nnames, MAXNAMES, v, err, n);
	case V_MIXER: return cli_add_value(a->mixer, &a->nmixer, MAXMIX, v, err, n);
	case V_SEED:
		return cli_parse_seed(v, &a->seed, err, n);
	case V_TIME:
		if (cli_parse_int(v, 1, 100000, &a->cx->time_reps, err, n) == 0)
			return 0;
		snprintf(err, n, "want a number of repetitions in 1..100000");
		return -1;
	case V_XSCALE:
		if (cli_parse_positive(v, 0.0, 1e30, &a->cx->xscale, err, n) == 0)
			return 0;
		snprintf(err, n, "want a positive number up to 1e30");
		return -1;
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

static int mixer_chosen(const VerifyArgs *a, const char *mixer)
{
	return cli_mixer_wanted(a->mixer, a->nmixer, mixer);
}

static int chosen(const VerifyArgs *a, recur_manifest *m, int v)
{
	if (!mixer_chosen(a, recur_manifest_variant_mixer(m, v)))
		return 0;
	if (a->nnames == 0)
		return 1;
	for (int i = 0; i < a->nnames; i++)
		if (!strcmp(a->names[i], recur_manifest_variant_name(m, v)))
			return 1;
	return 0;
}

/* Every --variant must exist and be of a chosen mixer: one that would not
 * run is refused, never silently left out. */
static int check_names(const VerifyArgs *a, recur_manifest *m)
{
	for (int i = 0; i < a->nnames; i++) {
		int v = recur_manifest_find(m, a->names[i]);
		if (v < 0) {
			fprintf(stderr, "recur verify: no variant %s in %s/manifest.json (see recur list --dir %s)\n",
			        a->names[i], a->dir, a->dir);
			return -1;
		}
		const char *mn = recur_manifest_variant_mixer(m, v);
		if (!mixer_chosen(a, mn)) {
			fprintf(stderr, "recur verify: variant %s is of mixer %s, which no --mixer names: it would not run\n",
			        a->names[i], mn);
			return -1;
		}
	}
	return 0;
}

/* The golden cases of every chosen mixer, each against its chosen variants. */
static void run_goldens(const VerifyArgs *a, Ctx *cx)
{
	static const char *const cases[] = { "rglru_B2_L37_D128", "rglru_B1_L300_D64", "samu_B2_L37_D128", "samu_B1_L300_D64" };
	int nv = recur_manifest_nvariants(cx->m);
	char err[8192];
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char cd[4096];
		snprintf(cd, sizeof cd, "%s/%s", a->goldens, cases[k]);
		char mname[16];
		sscanf(cases[k], "%15[a-z]", mname);
		const RefMixer *rm = ref_find(mname);
		Case c;
		int any = 0;
		for (int v = 0; v < nv; v++)
			any |= chosen(a, cx->m, v) && !strcmp(recur_manifest_variant_mixer(cx->m, v), mname);
		if (!any || !rm)
			continue;
		if (case_golden(cd, rm, &c, err, sizeof err) != 0) {
			fprintf(stderr, "recur verify: %s\n", err);
			case_free(&c);
			cx->fails++;
			continue;
		}
		for (int v = 0; v < nv; v++) {
			if (!chosen(a, cx->m, v) || strcmp(recur_manifest_variant_mixer(cx->m, v), mname))
				continue;
			char why[512];
			if (recur_check_shape(cx->m, v, c.s, why, sizeof why) != 0) {
				printf("%-48s %s: not legal: %s\n", recur_manifest_variant_name(cx->m, v), cases[k], why);
				continue;
			}
			run_variant(cx, v, &c);
		}
		case_free(&c);
	}
}

/* Random cases: one reference per (mixer, shape), shared by all its
 * variants; the references are independent, so they are computed
 * concurrently. */
static void run_random(const VerifyArgs *a, Ctx *cx)
{
	int nv = recur_manifest_nvariants(cx->m);
	Job jobs[64];
	int nj = 0;
	for (int k = 0; k < a->nsh; k++) {
		const char *done_mixers[16];
		int ndone = 0;
		for (int v0 = 0; v0 < nv && nj < 64; v0++) {
			if (!chosen(a, cx->m, v0))
				continue;
			const char *mn = recur_manifest_variant_mixer(cx->m, v0);
			int seen = 0;
			for (int d = 0; d < ndone; d++)
				seen |= !strcmp(done_mixers[d], mn);
			if (seen || ndone == 16)
				continue;
			done_mixers[ndone++] = mn;
			jobs[nj++] = (Job){ .cx = cx, .v0 = v0, .s = a->sh[k], .seed = a->seed + (uint64_t)k * 7919 };
		}
	}
	fprintf(stderr, "computing %d float64 references ...\n", nj);
	pthread_t th[64];
	int started[64] = { 0 };
	for (int j = 0; j < nj; j++)
		started[j] = pthread_create(&th[j], NULL, job_run, &jobs[j]) == 0;
	for (int j = 0; j < nj; j++) {
		if (started[j])
			pthread_join(th[j], NULL);
		else
			job_run(&jobs[j]);
	}
	for (int j = 0; j < nj; j++) {
		Job *jb = &jobs[j];
		const char *mn = recur_manifest_variant_mixer(cx->m, jb->v0);
		if (jb->rc != 0) {
			fprintf(stderr, "recur verify: %s\n", jb->err);
			case_free(&jb->c);
			cx->fails++;
			continue;
		}
		for (int v = jb->v0; v < nv; v++) {
			if (!chosen(a, cx->m, v) || strcmp(recur_manifest_variant_mixer(cx->m, v), mn))
				continue;
			char why[512];
			if (recur_check_shape(cx->m, v, jb->s, why, sizeof why) != 0) {
				printf("%-48s %dx%dx%d skip: %s\n", recur_manifest_variant_name(cx->m, v), jb->s.B, jb->s.L,
				       jb->s.D, why);
				continue;
			}
			run_variant(cx, v, &jb->c);
		}
		case_free(&jb->c);
	}
}

int cli_verify(int argc, char **argv)
{
	Ctx cx = { 0 };
	VerifyArgs a = { .cx = &cx };
	int prc = cli_parse(&cli_verify_cmd, argc, argv, set, &a);
	if (prc)
		return prc > 0 ? 0 : 2;
	char err[8192];
	if (recur_manifest_load(a.dir, &cx.m, err, sizeof err) != 0) {
		fprintf(stderr, "recur verify: %s\n", err);
		return 1;
	}
	if (check_names(&a, cx.m) != 0) {
		recur_manifest_free(cx.m);
		return 1;
	}
	if (recur_rt_open(&cx.rt, 0, err, sizeof err) != 0) {
		fprintf(stderr, "recur verify: %s\n", err);
		recur_manifest_free(cx.m);
		return 1;
	}
	char gpu[256] = "?";
	recur_rt_device_name(cx.rt, gpu, sizeof gpu);
	printf("verify on %s, tolerance %.0e (||out - ref|| / ||ref||), y and dx per token row and channel "
	       "%.0e (local)%s\n", gpu, TOL, LOCAL_TOL, cx.graph ? "; forward+backward through a CUDA graph" : "");
	if (a.goldens)
		run_goldens(&a, &cx);
	else
		run_random(&a, &cx);
	printf("%d passed, %d failed\n", cx.passes, cx.fails);
	recur_rt_close(cx.rt);
	recur_manifest_free(cx.m);
	return cx.fails ? 1 : 0;
}
