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
 *
 * The reference (a Judge): ref/'s, written by hand from the spec, where the
 * mixer has one ("spec" in each row); else the one derived from the
 * mixer's own graph, which gen writes into the manifest ("graph";
 * script/reference.h), so a mixer a script adds is verified with no C.
 * Golden cases are judged by their files ("golden").
 *
 * A decode step ("scan": "decode": a forward only, on a pool of states) is
 * checked by steps instead, by verify_step.c (its note in verify_step.h,
 * which also holds the types both halves share); --step T checks only
 * those, T tokens per call.
 *
 * What the command line asks for is settled before the driver opens: every
 * --mixer and --variant must exist, every buffer size is computed in
 * checked arithmetic, and a run in which nothing would be checked (every
 * shape illegal for every chosen variant, no golden case of a chosen
 * mixer) is an error, never "0 passed, 0 failed".
 */
#include "cli.h"
#include "docmarks.h"
#include "graphtext.h"
#include "harness.h"
#include "mfinfo.h"
#include "npy.h"
#include "pinit.h"
#include "recur.h"
#include "ref.h"
#include "reference.h"
#include "rng.h"
#include "verify_step.h"
#include "vmath.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Median forward and backward ms over n runs (warm, no L2 flush: a quick
 * look only; recur bench measures under the protocol). */
static int time_variant(Ctx *cx, recur_variant *rv, recur_shape s, const recur_io *io, int n, float *fwd, float *bwd,
                        char *err, size_t en)
{
	CUevent e[3] = {0}; /* NULL: nothing to destroy when a create fails */
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

/* ---- the judges ------------------------------------------------------------ */

/* A JSON array of strings as a malloc'd array of its strings (owned by a): NULL when it is not one. */
static const char **json_lines(const json_t *a, int *n)
{
	*n = json_is_array(a) ? (int)json_array_size(a) : -1;
	const char **l = *n >= 0 && *n < (1 << 22) ? calloc((size_t)*n + 1, sizeof *l) : NULL;
	for (int i = 0; l && i < *n; i++)
		if (!(l[i] = json_string_value(json_array_get(a, (size_t)i)))) {
			free(l);
			return NULL;
		}
	return l;
}

static int json_root(const json_t *g, const char *key, int *out)
{
	const json_t *v = json_object_get(g, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 22))
		return -1;
	*out = (int)json_integer_value(v);
	return 0;
}

/* mixers.NAME.graph of the manifest into mx (script/graphtext.h). */
static int graph_text(const MfInfo *mi, const char *mixer, Mixer *mx, char *err, size_t n)
{
	const json_t *mo = json_object_get(json_object_get(mi->root, "mixers"), mixer);
	const json_t *g = json_object_get(mo, "graph"), *k = json_object_get(mo, "k");
	if (!g) {
		snprintf(err, n,
		         "%s: mixer %s has no float64 reference: no hand-written one in ref/, and the manifest "
		         "holds no graph to derive one from (regenerate the folder with this recur gen)",
		         mi->path, mixer);
		return -1;
	}
	if (json_string_value(json_object_get(g, "error"))) {
		snprintf(err, n, "%s: mixer %s: gen could not write its graph: %s", mi->path, mixer,
		         json_string_value(json_object_get(g, "error")));
		return -1;
	}
	GraphText t = {0};
	t.node = json_lines(json_object_get(g, "nodes"), &t.nnode);
	t.param = json_lines(json_object_get(g, "params"), &t.nparam);
	t.proj = json_lines(json_object_get(g, "projections"), &t.nproj);
	int rc = -1;
	memset(mx, 0, sizeof *mx);
	snprintf(mx->name, sizeof mx->name, "%s", mixer);
	mx->k = json_is_integer(k) && json_integer_value(k) > 0 && json_integer_value(k) < (1 << 20)
	        ? (int)json_integer_value(k)
	        : 0;
	if (!t.node || !t.param || !t.proj || json_root(g, "log_a", &t.log_a) || json_root(g, "b", &t.b) ||
	    json_root(g, "y", &t.y) || !mx->k)
		snprintf(err, n,
		         "%s: mixer %s: \"k\" or the graph's \"nodes\", \"params\", \"projections\", \"log_a\", "
		         "\"b\", \"y\" missing or of the wrong type",
		         mi->path, mixer);
	else if (gt_read(&t, mx, err, n) != 0)
		snprintf(err + strlen(err), n - strlen(err), " (%s, mixer %s)", mi->path, mixer);
	else
		rc = 0;
	free((void *)t.node);
	free((void *)t.param);
	free((void *)t.proj);
	return rc;
}

static int judge_nparam(const Judge *j)
{
	return j->hand ? j->hand->nparam : rf_nparam(j->graph);
}

static const char *judge_pname(const Judge *j, int i)
{
	return j->hand ? j->hand->param[i] : rf_param_name(j->graph, i);
}

/* The judge of variant v's mixer: its parameters must be the manifest's, in order. */
int judge_open(Ctx *cx, int v, Judge *j, char *err, size_t n)
{
	const char *mn = recur_manifest_variant_mixer(cx->m, v);
	memset(j, 0, sizeof *j);
	j->hand = ref_find(mn);
	j->label = j->hand ? "spec" : "graph";
	j->k = mf_mixer_k(&cx->mi, mn);   /* ref/'s heads are as wide as the mixer's */
	if (!j->hand) {
		Mixer mx;
		if (graph_text(&cx->mi, mn, &mx, err, n) != 0)
			return -1;
		int rc = rf_open(&mx, &j->graph, err, n);
		for (int p = 0; p < mx.nparam && p < MAXP; p++)
			j->bf16w[p] = mx.param[p].kind == PK_BLOCKDIAG;
		ex_free(&mx.g);
		if (rc != 0)
			return -1;
	}
	int np = recur_param_count(cx->m, v);
	if (np != judge_nparam(j) || np > MAXP) {
		snprintf(err, n, "mixer %s: the manifest declares %d parameters, the %s reference %d (at most %d)", mn,
		         np, j->label, judge_nparam(j), MAXP);
		return -1;
	}
	for (int p = 0; p < np; p++)
		if (strcmp(recur_param_name(cx->m, v, p), judge_pname(j, p)) != 0) {
			snprintf(err, n, "mixer %s: parameter %d is %s in the manifest but %s in the %s reference", mn,
			         p, recur_param_name(cx->m, v, p), judge_pname(j, p), j->label);
			return -1;
		}
	return 0;
}

void judge_close(Judge *j)
{
	rf_close(j->graph);
	memset(j, 0, sizeof *j);
}

/* The reference's own condition on a shape (ref/'s heads are the mixer's k wide). */
static int judge_shape(const Judge *j, recur_shape s, char *err, size_t n)
{
	if (j->graph)
		return rf_check_shape(j->graph, (RfShape){s.B, s.L, s.D}, err, n);
	if (s.D % j->k == 0)
		return 0;
	snprintf(err, n, "shape %dx%dx%d: the %s reference has heads of %d channels", s.B, s.L, s.D, j->hand->name,
	         j->k);
	return -1;
}

/* The reference's forward and backward on c's inputs. */
int judge_run(const Judge *j, Case *c, char *err, size_t n)
{
	const double *const *p = (const double *const *)c->p;
	recur_shape s = c->s;
	if (j->graph) {
		RfShape rs = {s.B, s.L, s.D};
		double *w[MAXP] = {0};
		const double *pr[MAXP];
		int rc = 0;
		for (int k = 0; k < c->np; k++) {
			pr[k] = p[k];
			if (!j->bf16w[k])
				continue;
			if (!(w[k] = malloc((size_t)c->pn[k] * sizeof(double)))) {
				snprintf(err, n, "out of host memory for the bf16 copy of %s", c->pname[k]);
				rc = -1;
				break;
			}
			for (long e = 0; e < c->pn[k]; e++)
				w[k][e] = bf16_round((float)p[k][e]);
			pr[k] = w[k];
		}
		SeqState st = {.reset = c->reset, .h0 = c->h0, .hT = c->hT, .dhT = c->dhT, .dh0 = c->dh0,
		               .cu_seqlens = c->cu, .ndocs = c->ndocs, .map_loga = c->mla, .map_h = c->mh};
		if (rc == 0)
			rc = rf_forward_state(j->graph, rs, pr, c->x, c->y, &st, err, n) ||
			                     rf_backward_state(j->graph, rs, pr, c->x, c->dy, c->dx, c->dp, &st, err, n)
			             ? -1
			             : 0;
		for (int k = 0; k < c->np; k++)
			free(w[k]);
		return rc;
	}
	RefShape rs = {s.B, s.L, s.D, s.D / j->k};
	SeqState st = {.reset = c->reset, .h0 = c->h0, .hT = c->hT, .dhT = c->dhT, .dh0 = c->dh0,
	               .cu_seqlens = c->cu, .ndocs = c->ndocs, .map_loga = c->mla, .map_h = c->mh};
	return j->hand->forward_state(&rs, p, c->x, c->y, &st, err, n) ||
	               j->hand->backward_state(&rs, p, c->x, c->dy, c->dx, c->dp, &st, err, n)
	       ? -1
	       : 0;
}

/* ---- the cases ----------------------------------------------------------------- */

void case_free(Case *c)
{
	free(c->x);
	free(c->dy);
	free(c->y);
	free(c->dx);
	free(c->xb);
	free(c->dyb);
	free(c->reset);
	free(c->cu);
	free(c->h0);
	free(c->dhT);
	free(c->hT);
	free(c->dh0);
	free(c->mla);
	free(c->mh);
	for (int i = 0; i < c->np; i++) {
		free(c->p[i]);
		free(c->dp[i]);
	}
	memset(c, 0, sizeof *c);
}

/* x, dy, y, dx of c's shape, in doubles: sized in checked arithmetic. */
static int case_tensors(Case *c, char *err, size_t n)
{
	size_t bytes;
	if (recur_tensor_bytes(c->s, sizeof(double), &bytes, err, n) != 0)
		return -1;
	c->x = malloc(bytes);
	c->dy = malloc(bytes);
	c->y = malloc(bytes);
	c->dx = malloc(bytes);
	if (c->x && c->dy && c->y && c->dx)
		return 0;
	snprintf(err, n, "shape %dx%dx%d: out of host memory for 4 float64 tensors of %zu bytes", c->s.B, c->s.L,
	         c->s.D, bytes);
	return -1;
}

/* Parameters of variant v at c's shape, the script's initialisation rounded
 * to fp32 as the GPU holds them, and room for their gradients. */
static int case_params(Ctx *cx, int v, Case *c, Rng *r, char *err, size_t n)
{
	c->np = recur_param_count(cx->m, v);
	for (int p = 0; p < c->np; p++) {
		c->pname[p] = recur_param_name(cx->m, v, p);
		if ((c->pn[p] = recur_param_elems(cx->m, v, p, c->s, err, n)) < 0)
			return -1;
		c->p[p] = malloc(((size_t)c->pn[p] + 1) * sizeof(double));
		c->dp[p] = malloc(((size_t)c->pn[p] + 1) * sizeof(double));
		if (!c->p[p] || !c->dp[p]) {
			snprintf(err, n, "out of host memory for parameter %s (%ld elements)", c->pname[p], c->pn[p]);
			return -1;
		}
		double a, b;
		const char *kind = recur_param_init(cx->m, v, p, c->s, &a, &b);
		for (long i = 0; i < c->pn[p]; i++)
			c->p[p][i] = (float)pinit_value(kind, a, b, r);
	}
	return 0;
}

/* Reset marks: --docs N documents per row, else at rate cx->resets and
 * where kernels split the sequence (docmarks.h: resetmarks_row) */
static int case_marks(Ctx *cx, Case *c, Rng *r, char *err, size_t n)
{
	size_t L = (size_t)c->s.L, nt = (size_t)c->s.B * L;
	size_t *cand = cx->docs ? malloc(L * sizeof *cand) : NULL;
	if (!(c->reset = malloc(nt)) || (cx->docs && !cand)) {
		free(cand);
		snprintf(err, n, "out of host memory for %zu reset marks", nt);
		return -1;
	}
	if (cx->docs) {
		c->docs = cx->docs < c->s.L ? cx->docs : c->s.L;
		for (int b = 0; b < c->s.B; b++)
			docmarks_row(c->reset + (size_t)b * L, L, c->docs, r, cand);
		free(cand);
		return 0;
	}
	for (int b = 0; b < c->s.B; b++)
		resetmarks_row(c->reset + (size_t)b * L, L, cx->resets, r);
	return 0;
}

/* hT's adjoint dhT ~ N(0, 1) and room for the reference's hT, and with
 * h0 nonzero initial states h0 ~ N(0, 1) and room for dh0 and, in the
 * reset/h0 form, the row's map (checked on variants that take it): c->ns
 * each. */
static int case_states(Case *c, int with_h0, Rng *r, char *err, size_t n)
{
	size_t ns = c->ns;
	double **t[6] = {&c->dhT, &c->hT, &c->h0, &c->dh0, &c->mla, &c->mh};
	for (int k = 0; k < (with_h0 ? (c->cu ? 4 : 6) : 2); k++)
		if (!(*t[k] = malloc(ns * sizeof(double)))) {
			snprintf(err, n, "out of host memory for %zu state elements", ns);
			return -1;
		}
	for (size_t i = 0; with_h0 && i < ns; i++)
		c->h0[i] = rng_normal(r);
	for (size_t i = 0; i < ns; i++)
		c->dhT[i] = rng_normal(r);
	return 0;
}

/* --packed: the row's document starts (case_marks) as cu_seqlens, the
 * form fla and flash-attn take; the marks themselves go */
static int case_packed(Case *c, char *err, size_t n)
{
	if (c->s.B != 1) {
		snprintf(err, n, "--packed packs the documents into one row: shape %dx%dx%d has B = %d, give B = 1",
		         c->s.B, c->s.L, c->s.D, c->s.B);
		return -1;
	}
	if (!(c->cu = malloc(((size_t)c->s.L + 1) * sizeof *c->cu))) {
		snprintf(err, n, "out of host memory for %d document offsets", c->s.L + 1);
		return -1;
	}
	c->ndocs = docmarks_offsets(c->reset, c->s.L, c->cu);
	free(c->reset);
	c->reset = NULL;
	return 0;
}

/* Random inputs and the script's initial parameters, rounded to what the
 * GPU holds (bf16 tensors, fp32 parameters), then the reference. */
int case_random(Ctx *cx, int v, const Judge *jd, recur_shape s, uint64_t seed, Case *c, char *err, size_t n)
{
	memset(c, 0, sizeof *c);
	c->s = s;
	c->ref = jd->label;
	if (judge_shape(jd, s, err, n) || case_tensors(c, err, n))
		return -1;
	Rng r;
	rng_seed(&r, seed);
	size_t ne = (size_t)s.B * s.L * s.D; /* case_tensors checked it */
	for (size_t i = 0; i < ne; i++)
		c->x[i] = bf16_round((float)(cx->xscale * rng_normal(&r)));
	for (size_t i = 0; i < ne; i++)
		c->dy[i] = bf16_round((float)rng_normal(&r));
	if (case_params(cx, v, c, &r, err, n) || ((cx->resets > 0 || cx->docs) && case_marks(cx, c, &r, err, n)) ||
	    (cx->packed && case_packed(c, err, n)))
		return -1;
	c->ns = (size_t)(c->cu ? c->ndocs : s.B) * (size_t)s.D;
	if ((cx->states || cx->packed) && case_states(c, cx->states, &r, err, n))
		return -1;
	RfShape rs = {s.B, s.L, s.D};
	for (int p = 0; p < c->np && jd->graph; p++)
		if (rf_param_count(jd->graph, p, rs) != c->pn[p]) {
			snprintf(err, n,
			         "parameter %s: %ld elements in the manifest at %dx%dx%d, %ld in the graph's reference",
			         c->pname[p], c->pn[p], s.B, s.L, s.D, rf_param_count(jd->graph, p, rs));
			return -1;
		}
	return judge_run(jd, c, err, n);
}

/* A golden case: inputs and expected outputs from the independent
 * implementation, every file's shape checked against the folder's B, L, D
 * and the manifest's parameter dims (of variant v) before use. */
static int case_golden(Ctx *cx, int v, const char *dir, Case *c, char *err, size_t n)
{
	memset(c, 0, sizeof *c);
	c->ref = "golden";
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	int B, L, D;
	char name[64], path[4096];
	if (sscanf(base, "%63[a-z]_B%d_L%d_D%d", name, &B, &L, &D) != 4 || B < 1 || L < 1 || D < 1) {
		snprintf(err, n, "%s: golden folder names look like rglru_B2_L37_D128", dir);
		return -1;
	}
	c->s = (recur_shape){B, L, D};
	size_t bytes;
	if (recur_tensor_bytes(c->s, sizeof(double), &bytes, err, n))
		return -1;
	long bld[3] = {B, L, D};
	struct {
		const char *f;
		double **dst;
	} t[] = {{"x", &c->x}, {"dy", &c->dy}, {"y", &c->y}, {"dx", &c->dx}};
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s.npy", dir, t[i].f);
		if (npy_read_shaped(path, t[i].dst, bld, 3, "(B, L, D)", err, n) != 0)
			return -1;
	}
	c->np = recur_param_count(cx->m, v);
	if (c->np < 0 || c->np > MAXP) {
		snprintf(err, n, "%s: the manifest's mixer has %d parameters (at most %d)", dir, c->np, MAXP);
		c->np = 0;
		return -1;
	}
	for (int p = 0; p < c->np; p++) {
		long dims[RECUR_MAXDIM];
		int nd = recur_param_dims(cx->m, v, p, c->s, dims);
		c->pname[p] = recur_param_name(cx->m, v, p);
		if (nd < 0 || (c->pn[p] = recur_param_elems(cx->m, v, p, c->s, err, n)) < 0) {
			snprintf(err, n, "%s: the dims of parameter %s at %dx%dx%d", dir, c->pname[p], B, L, D);
			return -1;
		}
		snprintf(path, sizeof path, "%s/%s.npy", dir, c->pname[p]);
		if (npy_read_shaped(path, &c->p[p], dims, nd, "the parameter in the manifest", err, n) != 0)
			return -1;
		snprintf(path, sizeof path, "%s/d%s.npy", dir, c->pname[p]);
		if (npy_read_shaped(path, &c->dp[p], dims, nd, "the parameter in the manifest", err, n) != 0)
			return -1;
	}
	return 0;
}

static int dump_case(const char *dir, const Case *c, const float *y, const float *dx, float *const *dp,
                     recur_manifest *m, int v, char *err, size_t n)
{
	mkdir(dir, 0755);
	size_t bytes;
	if (recur_tensor_bytes(c->s, sizeof(float), &bytes, err, n))
		return -1;
	size_t ne = bytes / sizeof(float);
	long shp[3] = {c->s.B, c->s.L, c->s.D};
	float *t = malloc(bytes);
	char path[4096];
	int rc = 0;
	if (!t) {
		snprintf(err, n, "%s: out of host memory for %zu elements", dir, ne);
		return -1;
	}
	const double *src[2] = {c->x, c->dy};
	const char *nm[2] = {"x", "dy"};
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
		long dims[RECUR_MAXDIM];
		int nd = recur_param_dims(m, v, p, c->s, dims);
		float *pv = malloc(((size_t)c->pn[p] + 1) * sizeof(float));
		if (!pv || nd < 0) {
			free(pv);
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

/* ---- one variant on one case ------------------------------------------------- */

#define TRY(call)                                                                                                      \
	do {                                                                                                           \
		if ((call) != 0)                                                                                       \
			return -1;                                                                                     \
	} while (0)

/* A variant's run: its device buffers and what came back to the host. */
typedef struct {
	recur_variant *rv;
	size_t ne;
	CUdeviceptr x, dy, y, dx, p[MAXP], g[MAXP], reset, h0, hT, dhT, dh0, cu;
	recur_seqstate st;
	float *hT_h, *dh0_h;        /* hT and dh0 as they came back (--h0, --packed) */
	int map;                    /* the variant takes the row's map: checked with --h0 */
	CUdeviceptr mla, mh;        /* then its buffers */
	uint16_t *hb;
	float *y_h, *dx_h, *g_h[MAXP], *g2;
	recur_io io;
} Run;

/* What the run is judged on. */
typedef struct {
	double e[2 + MAXP]; /* relative errors: y, dx, each gradient */
	double e_hT, e_dh0; /* of hT (--h0, --packed) and dh0 (--h0) */
	double e_mla, e_mh; /* of the row's map (--h0 on a variant taking it) */
	int map;            /* the map was checked */
	VmLocal lc[2];      /* per row and channel: y, dx */
	int bad, det;       /* non-finite elements; same gradient bits twice */
} Outcome;

static void run_free(Ctx *cx, Run *R)
{
	CUdeviceptr d[12] = {R->x, R->dy, R->y, R->dx, R->reset, R->h0, R->hT, R->dhT, R->dh0, R->cu, R->mla, R->mh};
	free(R->hT_h);
	free(R->dh0_h);
	for (int k = 0; k < 12; k++)
		if (d[k])
			recur_free(cx->rt, d[k]);
	for (int p = 0; p < MAXP; p++) {
		if (R->p[p])
			recur_free(cx->rt, R->p[p]);
		if (R->g[p])
			recur_free(cx->rt, R->g[p]);
		free(R->g_h[p]);
	}
	free(R->g2);
	free(R->hb);
	free(R->y_h);
	free(R->dx_h);
	if (R->rv)
		recur_variant_free(R->rv);
}

/* x and dy as bf16 bits: the same for every variant of the case, made once. */
static int case_bf16(Case *c, size_t ne, char *err, size_t n)
{
	if (c->xb)
		return 0;
	c->xb = malloc(ne * 2);
	c->dyb = malloc(ne * 2);
	if (!c->xb || !c->dyb) {
		free(c->xb);
		free(c->dyb);
		c->xb = c->dyb = NULL;
		snprintf(err, n, "out of host memory for x and dy as bf16");
		return -1;
	}
	vm_to_bf16(c->x, c->xb, ne);
	vm_to_bf16(c->dy, c->dyb, ne);
	return 0;
}

/* Each parameter uploaded as fp32, each gradient poisoned with NaN. */
static int run_params(Ctx *cx, const Case *c, Run *R, char *err, size_t n)
{
	for (int p = 0; p < c->np; p++) {
		size_t bytes = (size_t)c->pn[p] * 4;
		if (!(R->g_h[p] = malloc(bytes + 4))) {
			snprintf(err, n, "out of host memory for the gradient of %s", c->pname[p]);
			return -1;
		}
		TRY(recur_alloc(cx->rt, bytes, &R->p[p], err, n));
		TRY(recur_alloc(cx->rt, bytes, &R->g[p], err, n));
		for (long i = 0; i < c->pn[p]; i++)
			R->g_h[p][i] = (float)c->p[p][i]; /* staging: overwritten by the gradient later */
		TRY(recur_memcpy_htod(cx->rt, R->p[p], R->g_h[p], bytes, err, n));
		TRY(recur_memset_u8(cx->rt, R->g[p], 0xff, bytes, err, n)); /* NaN poison */
	}
	long pmax = 1;
	for (int p = 0; p < c->np; p++)
		pmax = c->pn[p] > pmax ? c->pn[p] : pmax;
	if (!(R->g2 = malloc((size_t)pmax * sizeof(float)))) {
		snprintf(err, n, "out of host memory for %ld parameter elements", pmax);
		return -1;
	}
	return 0;
}

/* dhT (and h0) uploaded as fp32, hT (and dh0) poisoned with NaN, all in the call's state. */
static int run_states(Ctx *cx, const Case *c, Run *R, char *err, size_t n)
{
	size_t ns = c->ns;
	int with_h0 = c->h0 != NULL;
	if (!(R->hT_h = malloc(ns * sizeof(float))) || !(R->dh0_h = malloc(ns * sizeof(float)))) {
		snprintf(err, n, "out of host memory for %zu state elements", ns);
		return -1;
	}
	CUdeviceptr *d[4] = {&R->dhT, &R->hT, &R->h0, &R->dh0};
	for (int k = 0; k < (with_h0 ? 4 : 2); k++)
		TRY(recur_alloc(cx->rt, ns * 4, d[k], err, n));
	const double *in[2] = {c->dhT, c->h0};
	CUdeviceptr to[2] = {R->dhT, R->h0};
	for (int k = 0; k < (with_h0 ? 2 : 1); k++) {
		for (size_t i = 0; i < ns; i++)
			R->hT_h[i] = (float)in[k][i];   /* staging */
		TRY(recur_memcpy_htod(cx->rt, to[k], R->hT_h, ns * 4, err, n));
	}
	TRY(recur_memset_u8(cx->rt, R->hT, 0xff, ns * 4, err, n));
	if (with_h0)
		TRY(recur_memset_u8(cx->rt, R->dh0, 0xff, ns * 4, err, n));
	R->st.h0 = R->h0;
	R->st.dhT = R->dhT;
	R->st.hT = R->hT;
	R->st.dh0 = R->dh0;
	R->io.state = &R->st;
	if (c->mla && R->map) {   /* poisoned too */
		TRY(recur_alloc(cx->rt, ns * 4, &R->mla, err, n));
		TRY(recur_alloc(cx->rt, ns * 4, &R->mh, err, n));
		TRY(recur_memset_u8(cx->rt, R->mla, 0xff, ns * 4, err, n));
		TRY(recur_memset_u8(cx->rt, R->mh, 0xff, ns * 4, err, n));
		R->st.map_loga = R->mla;
		R->st.map_h = R->mh;
	}
	return 0;
}

/* The variant loaded, the device buffers made, the inputs uploaded and the outputs poisoned. */
static int run_setup(Ctx *cx, const char *vname, Case *c, Run *R, char *err, size_t n)
{
	size_t bytes;
	TRY(recur_tensor_bytes(c->s, 2, &bytes, err, n));
	R->ne = bytes / 2;
	R->hb = malloc(bytes);
	R->y_h = malloc(R->ne * sizeof(float));
	R->dx_h = malloc(R->ne * sizeof(float));
	if (!R->hb || !R->y_h || !R->dx_h) {
		snprintf(err, n, "out of host memory for y and dx (%zu elements)", R->ne);
		return -1;
	}
	TRY(case_bf16(c, R->ne, err, n));
	TRY(recur_variant_load(cx->rt, cx->m, vname, &R->rv, err, n));
	CUdeviceptr *d[4] = {&R->x, &R->dy, &R->y, &R->dx};
	for (int k = 0; k < 4; k++)
		TRY(recur_alloc(cx->rt, bytes, d[k], err, n));
	TRY(recur_memcpy_htod(cx->rt, R->x, c->xb, bytes, err, n));
	TRY(recur_memcpy_htod(cx->rt, R->dy, c->dyb, bytes, err, n));
	TRY(run_params(cx, c, R, err, n));
	/* 0xffff is a bf16 NaN: an element the kernels never wrote shows up */
	TRY(recur_memset_u8(cx->rt, R->y, 0xff, bytes, err, n));
	TRY(recur_memset_u8(cx->rt, R->dx, 0xff, bytes, err, n));
	R->io = (recur_io){.x = R->x, .y = R->y, .dy = R->dy, .dx = R->dx, .params = R->p, .grads = R->g};
	if (c->reset) {
		size_t nt = (size_t)c->s.B * (size_t)c->s.L;
		TRY(recur_alloc(cx->rt, nt, &R->reset, err, n));
		TRY(recur_memcpy_htod(cx->rt, R->reset, c->reset, nt, err, n));
		R->st.reset = R->reset;
		R->io.state = &R->st;
	}
	if (c->cu) {   /* the documents' offsets, int32 as the kernels read them */
		size_t nb = ((size_t)c->ndocs + 1) * sizeof *c->cu;
		TRY(recur_alloc(cx->rt, nb, &R->cu, err, n));
		TRY(recur_memcpy_htod(cx->rt, R->cu, c->cu, nb, err, n));
		R->st.cu_seqlens = R->cu;
		R->st.ndocs = c->ndocs;
		R->io.state = &R->st;
	}
	if (c->hT)
		TRY(run_states(cx, c, R, err, n));
	return 0;
}

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

/* A second forward + backward must give the same gradient bits. */
static int run_again(Ctx *cx, const Case *c, Run *R, Outcome *o, char *err, size_t n)
{
	for (int p = 0; p < c->np; p++)
		TRY(recur_memset_u8(cx->rt, R->g[p], 0xff, (size_t)c->pn[p] * 4, err, n));
	TRY(recur_forward(R->rv, c->s, &R->io, 0, err, n));
	TRY(recur_backward(R->rv, c->s, &R->io, 0, err, n));
	TRY(recur_sync(cx->rt, err, n));
	o->det = 1;
	for (int p = 0; p < c->np; p++) {
		TRY(recur_memcpy_dtoh(cx->rt, R->g2, R->g[p], (size_t)c->pn[p] * 4, err, n));
		o->det &= memcmp(R->g2, R->g_h[p], (size_t)c->pn[p] * 4) == 0;
	}
	return 0;
}

/* The checked run and its errors against the case. */
static int run_check(Ctx *cx, const Case *c, Run *R, Outcome *o, char *err, size_t n)
{
	size_t ne = R->ne;
	memset(o, 0, sizeof *o);
	TRY(first_pair(cx, R->rv, c->s, &R->io, err, n));
	TRY(recur_sync(cx->rt, err, n));
	TRY(recur_memcpy_dtoh(cx->rt, R->hb, R->y, ne * 2, err, n));
	vm_from_bf16(R->hb, R->y_h, ne);
	TRY(recur_memcpy_dtoh(cx->rt, R->hb, R->dx, ne * 2, err, n));
	vm_from_bf16(R->hb, R->dx_h, ne);
	o->e[0] = vm_relerr(R->y_h, c->y, ne, &o->bad);
	o->e[1] = vm_relerr(R->dx_h, c->dx, ne, &o->bad);
	size_t rows = (size_t)c->s.B * c->s.L;
	if (vm_local(R->y_h, c->y, rows, (size_t)c->s.D, &o->lc[0]) ||
	    vm_local(R->dx_h, c->dx, rows, (size_t)c->s.D, &o->lc[1])) {
		snprintf(err, n, "out of host memory for the per-row errors");
		return -1;
	}
	for (int p = 0; p < c->np; p++) {
		TRY(recur_memcpy_dtoh(cx->rt, R->g_h[p], R->g[p], (size_t)c->pn[p] * 4, err, n));
		o->e[2 + p] = vm_relerr(R->g_h[p], c->dp[p], (size_t)c->pn[p], &o->bad);
	}
	if (c->hT) {
		size_t ns = c->ns;
		TRY(recur_memcpy_dtoh(cx->rt, R->hT_h, R->hT, ns * 4, err, n));
		o->e_hT = vm_relerr(R->hT_h, c->hT, ns, &o->bad);
	}
	if (R->mla) {   /* through hT_h, whose hT is judged already */
		size_t ns = c->ns;
		o->map = 1;
		TRY(recur_memcpy_dtoh(cx->rt, R->hT_h, R->mla, ns * 4, err, n));
		o->e_mla = vm_relerr_loga(R->hT_h, c->mla, ns, &o->bad);
		TRY(recur_memcpy_dtoh(cx->rt, R->hT_h, R->mh, ns * 4, err, n));
		o->e_mh = vm_relerr(R->hT_h, c->mh, ns, &o->bad);
	}
	if (c->h0) {
		size_t ns = c->ns;
		TRY(recur_memcpy_dtoh(cx->rt, R->dh0_h, R->dh0, ns * 4, err, n));
		o->e_dh0 = vm_relerr(R->dh0_h, c->dh0, ns, &o->bad);
	}
	return run_again(cx, c, R, o, err, n);
}

/* The worst per-row or per-channel error of y and dx: *t the tensor (1: dx),
 * *col whether a channel (else a token row). */
static double worst_local(const Outcome *o, int *t, int *col)
{
	double loc = 0;
	*t = *col = 0;
	for (int k = 0; k < 2; k++)
		for (int rc = 0; rc < 2; rc++) {
			double w = rc ? o->lc[k].col : o->lc[k].row;
			if (!(w <= loc) && !isnan(loc)) { /* a NaN wins, and stays */
				loc = w;
				*t = k;
				*col = rc;
			}
		}
	return loc;
}

/* After a pass: warm medians, then one profiled forward and backward (where the time goes). */
static void print_times(Ctx *cx, const Case *c, Run *R)
{
	char err[1024];
	float tf, tb;
	if (time_variant(cx, R->rv, c->s, &R->io, cx->time_reps, &tf, &tb, err, sizeof err) == 0)
		printf(" | fwd %.3f ms bwd %.3f ms", tf, tb);
	else
		printf(" | timing failed: %s", err);
	const char *kn[16];
	float km[16];
	recur_set_profiling(R->rv, 1);
	for (int pass = 0; pass < 2; pass++) {
		int nk = 0;
		if ((pass == 0 ? recur_forward(R->rv, c->s, &R->io, 0, err, sizeof err)
		               : recur_backward(R->rv, c->s, &R->io, 0, err, sizeof err)) == 0)
			nk = recur_variant_last_times(R->rv, kn, km, 16);
		for (int k = 0; k < nk; k++)
			printf(" %s %.3f", kn[k], km[k]);
	}
	recur_set_profiling(R->rv, 0);
}

/* which code ran: the cubin, or the PTX through the driver's JIT */
void verify_print_code(recur_variant *rv)
{
	const char *code = recur_variant_module(rv);
	int cubin = strncmp(code, "cubin ", 6) == 0;
	const char *tg = cubin ? code + 6 : strncmp(code, "PTX for ", 8) == 0 ? code + 8 : "";
	printf(" code %s%s%.*s", cubin ? "cubin" : "ptx", *tg ? " " : "", (int)strcspn(tg, " ,"), tg);
}

/* One table row: the verdict, which reference judged it, every error. */
static int print_row(Ctx *cx, const char *vname, const Case *c, const Outcome *o, Run *R)
{
	int ok = o->bad == 0 && o->det, lt, lcol;
	for (int k = 0; k < 2 + c->np; k++)
		ok &= o->e[k] <= TOL;
	if (c->hT)
		ok &= o->e_hT <= TOL;
	if (c->h0)
		ok &= o->e_dh0 <= TOL;
	if (o->map)
		ok &= o->e_mla <= TOL && o->e_mh <= TOL;
	double loc = worst_local(o, &lt, &lcol);
	ok &= loc <= LOCAL_TOL;
	char shp[48];
	snprintf(shp, sizeof shp, "%dx%dx%d", c->s.B, c->s.L, c->s.D);
	printf("%-48s %-15s %s ref %-6s", vname, shp, ok ? "PASS" : "FAIL", c->ref);
	if (c->cu)
		printf(" packed %d docs", c->ndocs);
	else if (c->reset && c->docs)
		printf(" docs %d", c->docs);
	else if (c->reset)
		printf(" resets %g", cx->resets);
	if (c->h0)
		printf(" h0 hT %.1e dh0 %.1e", o->e_hT, o->e_dh0);
	else if (c->hT)
		printf(" hT %.1e", o->e_hT);
	if (o->map)
		printf(" map_loga %.1e map_h %.1e", o->e_mla, o->e_mh);
	printf(" y %.1e dx %.1e", o->e[0], o->e[1]);
	for (int p = 0; p < c->np; p++)
		printf(" d%s %.1e", c->pname[p], o->e[2 + p]);
	printf(" local %.1e", loc);
	verify_print_code(R->rv);
	const char *code = recur_variant_module(R->rv);
	if (!(loc <= LOCAL_TOL)) {
		size_t L = (size_t)c->s.L;
		if (lcol)
			printf(" (%s channel %zu)", lt ? "dx" : "y", o->lc[lt].at_col);
		else
			printf(" (%s b %zu t %zu)", lt ? "dx" : "y", o->lc[lt].at_row / L, o->lc[lt].at_row % L);
	}
	if (o->bad)
		printf(" nonfinite %d", o->bad);
	if (!o->det)
		printf(" nondeterministic");
	if (ok && cx->time_reps > 0)
		print_times(cx, c, R);
	if (strncmp(code, "PTX", 3) == 0 && !strstr(code, "no cubin"))
		printf("\n    code: %s", code);   /* a cubin was there and not taken: why */
	putchar('\n');
	fflush(stdout);
	return ok;
}

/* Runs variant v on case c; prints one table row. */
static void run_variant(Ctx *cx, int v, Case *c)
{
	char err[8192] = "";
	const char *vname = recur_manifest_variant_name(cx->m, v);
	Run R = {.map = mf_takes(cx->m, v, "map_loga")};
	Outcome o;
	int fits = run_setup(cx, vname, c, &R, err, sizeof err) ? -1 : recur_variant_fits(R.rv, c->s, err, sizeof err);
	if (fits == 1) {   /* a grid whose blocks wait on each other, larger than this GPU holds: not its failure */
		printf("%-48s %dx%dx%d skip: not on this GPU: %s\n", vname, c->s.B, c->s.L, c->s.D, err);
		fflush(stdout);
		run_free(cx, &R);
		return;
	}
	if (fits != 0 || run_check(cx, c, &R, &o, err, sizeof err)) {
		printf("%-48s %dx%dx%d FAIL ref %s %s\n", vname, c->s.B, c->s.L, c->s.D, c->ref, err);
		fflush(stdout);
		cx->fails++;
		run_free(cx, &R);
		return;
	}
	print_row(cx, vname, c, &o, &R) ? cx->passes++ : cx->fails++;
	if (cx->dump) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s.%s.B%dxL%dxD%d", cx->dump, recur_manifest_variant_mixer(cx->m, v),
		         vname, c->s.B, c->s.L, c->s.D);
		mkdir(cx->dump, 0755);
		if (dump_case(dir, c, R.y_h, R.dx_h, R.g_h, cx->m, v, err, sizeof err) != 0)
			fprintf(stderr, "recur verify: --dump: %s\n", err);
	}
	run_free(cx, &R);
}

/* ---- the command line ------------------------------------------------------------ */

#define MAXMIX 8
#define MAXNAMES 256

enum { V_DIR, V_VARIANT, V_MIXER, V_SHAPE, V_SEED, V_GOLDENS, V_DUMP, V_TIME, V_XSCALE, V_GRAPH, V_RESETS, V_DOCS, V_H0,
       V_PACKED, V_STEP };

static const CliOpt OPTS[] = {
        [V_DIR] = CLI_OPT_DIR,
        [V_VARIANT] = {"--variant", "NAME", NULL, "check this variant (default: every variant of the chosen mixers)",
                       1},
        [V_MIXER] = {"--mixer", "NAME", NULL, "check this mixer's variants (default: every mixer)", 1},
        [V_SHAPE] = {"--shape", "BxLxD", "3x1000x1024,1x8192x1024", "check at this shape; BxLxD,... gives several", 1},
        [V_SEED] = CLI_OPT_SEED,
        [V_GOLDENS] = {"--goldens", "DIR", NULL, "check the golden cases in DIR instead of random inputs", 0},
        [V_DUMP] = {"--dump", "DIR", NULL, "write x, dy, y, dx, every parameter and gradient as .npy", 0},
        [V_TIME] = {"--time", "N", NULL, "after a pass, warm forward/backward medians of N runs and per-kernel times",
                    0},
        [V_XSCALE] = {"--x-scale", "S", "1", "draw x with standard deviation S (large activations)", 0},
        [V_GRAPH] = {"--graph", NULL, NULL, "run the checked forward+backward as one CUDA graph replayed twice", 0},
        [V_RESETS] = {"--resets", "P", NULL, "mark documents starting at random tokens at rate P, and at the "
                      "128-token edges of the first 2048 tokens of every 4096, t = 1, 2 and L-1; checks the "
                      "variants that take reset marks", 0},
        [V_DOCS] = {"--docs", "N", NULL, "pack N documents of random lengths into each row (one of a token at the "
                    "row's end, two of a token together, the others over tiles), their starts marked; checks the "
                    "variants that take reset marks", 0},
        [V_H0] = {"--h0", NULL, NULL, "start each row from a random h0, join a random dhT, check hT and dh0, "
                  "and the row's map (map_loga, map_h) on variants taking it; checks the variants that take states", 0},
        [V_PACKED] = {"--packed", NULL, NULL, "with --docs at B = 1: pass the documents as cu_seqlens (fla's and "
                      "flash-attn's form), a state each: hT and a random dhT always, h0 and dh0 with --h0; checks "
                      "the variants that take cu_seqlens (docs = { true })", 0},
        [V_STEP] = {"--step", "T", NULL, "check only the decode steps (scan decode), T tokens per call, 1..4096, "
                    "against the forward's reference over the same tokens (without --step: T = 1 and T = 16)", 0},
};

const CliCmd cli_verify_cmd = {
        "verify", NULL, "run variants on the GPU against the float64 reference", OPTS, CLI_NOPTS(OPTS), cli_verify,
};

/* The command line: what to check; how is in cx (dump, time, graph, x scale). */
typedef struct {
	const char *dir, *goldens;
	const char *mixer[MAXMIX]; /* --mixer: none means every mixer */
	int nmixer;
	const char *names[MAXNAMES]; /* --variant: none means every variant of those mixers */
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
	case V_DIR:
		return cli_parse_path(v, &a->dir, err, n);
	case V_GOLDENS:
		return cli_parse_path(v, &a->goldens, err, n);
	case V_DUMP:
		return cli_parse_path(v, &a->cx->dump, err, n);
	case V_GRAPH:
		a->cx->graph = 1;
		return 0;
	case V_H0:
		a->cx->states = 1;
		return 0;
	case V_PACKED:
		a->cx->packed = 1;
		return 0;
	case V_STEP:
		if (cli_parse_int(v, 1, VSTEP_MAX, &a->cx->step, err, n) == 0)
			return 0;
		snprintf(err, n, "want a number of tokens per call in 1..%d", VSTEP_MAX);
		return -1;
	case V_DOCS:
		if (cli_parse_int(v, 1, VDOCS_MAX, &a->cx->docs, err, n) == 0)
			return 0;
		snprintf(err, n, "want a number of documents per row in 1..%d", VDOCS_MAX);
		return -1;
	case V_RESETS:
		if (cli_parse_positive(v, 0.0, 1.0, &a->cx->resets, err, n) == 0)
			return 0;
		snprintf(err, n, "want a rate in (0, 1]");
		return -1;
	case V_SHAPE:
		return harness_add_shapes(v, a->sh, &a->nsh, H_MAXSHAPES, err, n);
	case V_VARIANT:
		return cli_add_value(a->names, &a->nnames, MAXNAMES, v, err, n);
	case V_MIXER:
		return cli_add_value(a->mixer, &a->nmixer, MAXMIX, v, err, n);
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

/* with --resets, --h0: only the variants whose kernels take what they give */
static int takes_asked(const VerifyArgs *a, recur_manifest *m, int v)
{
	if (a->cx->packed)
		return mf_takes(m, v, "cu_seqlens");
	return ((a->cx->resets <= 0 && !a->cx->docs) || mf_takes(m, v, "reset")) && (!a->cx->states || mf_takes(m, v, "h0"));
}

/* what a variant that takes_asked refuses lacks, and the grid option that gives it */
static void lacks(const VerifyArgs *a, recur_manifest *m, int v, const char **what, const char **option)
{
	if (a->cx->packed) {
		*what = "cu_seqlens (--packed)";
		*option = "docs = { true }";
	} else if (a->cx->states && !mf_takes(m, v, "h0")) {
		*what = "initial state (--h0)";
		*option = "states = { true }";
	} else {
		*what = "reset marks (--resets, --docs)";
		*option = "resets = { true }";
	}
}

static int chosen(const VerifyArgs *a, recur_manifest *m, int v)
{
	if (!mixer_chosen(a, recur_manifest_variant_mixer(m, v)))
		return 0;
	if (!takes_asked(a, m, v))
		return 0;
	if (a->nnames == 0)
		return 1;
	for (int i = 0; i < a->nnames; i++)
		if (!strcmp(a->names[i], recur_manifest_variant_name(m, v)))
			return 1;
	return 0;
}

/* A decode step ("scan": "decode"): checked by steps (verify_step.c), never by forward+backward. */
static int is_decode(const VerifyArgs *a, recur_manifest *m, int v)
{
	return mf_decode(m, v);
}

/* checked by forward+backward: chosen, no decode step, and no --step */
static int ordinary(const VerifyArgs *a, recur_manifest *m, int v)
{
	return !a->cx->step && !is_decode(a, m, v) && chosen(a, m, v);
}

/* checked by steps: a chosen decode step (not with --goldens: those cases are forward+backward) */
static int stepped(const VerifyArgs *a, recur_manifest *m, int v)
{
	return !a->goldens && is_decode(a, m, v) && chosen(a, m, v);
}

/* Every --mixer must be a mixer of the manifest and every --variant exist
 * and be of a chosen mixer: a name that would match nothing is refused,
 * never silently left out. */
static int check_names(const VerifyArgs *a, recur_manifest *m)
{
	int nv = recur_manifest_nvariants(m);
	if (a->cx->step && a->goldens) {
		fprintf(stderr, "recur verify: --step checks decode steps by random cases; the golden cases (--goldens) are "
		        "forward+backward: give one or the other\n");
		return -1;
	}
	if (a->cx->step && (a->cx->resets > 0 || a->cx->docs)) {
		fprintf(stderr, "recur verify: --step checks decode steps, and they take no reset marks (--resets, --docs)\n");
		return -1;
	}
	if (a->cx->resets > 0 && a->cx->docs) {
		fprintf(stderr, "recur verify: --resets and --docs both mark document starts: give one or the other\n");
		return -1;
	}
	if (a->cx->packed && !a->cx->docs) {
		fprintf(stderr, "recur verify: --packed passes --docs N's documents as cu_seqlens: give --docs N too\n");
		return -1;
	}
	if (a->cx->packed && a->cx->step) {
		fprintf(stderr, "recur verify: --step checks decode steps, and they take no cu_seqlens (--packed)\n");
		return -1;
	}
	for (int k = 0; a->cx->packed && k < a->nsh; k++)
		if (a->sh[k].B != 1) {
			fprintf(stderr, "recur verify: --packed packs the documents into one row: shape %dx%dx%d has B = %d; "
			        "give only shapes with B = 1 (--shape 1xLxD: the default shapes include 3x1000x1024)\n",
			        a->sh[k].B, a->sh[k].L, a->sh[k].D, a->sh[k].B);
			return -1;
		}
	for (int i = 0; i < a->nmixer; i++) {
		int found = 0;
		for (int v = 0; v < nv && !found; v++)
			found = !strcmp(recur_manifest_variant_mixer(m, v), a->mixer[i]);
		if (!found) {
			fprintf(stderr,
			        "recur verify: no variant of mixer %s in %s/manifest.json (see recur list --dir %s)\n",
			        a->mixer[i], a->dir, a->dir);
			return -1;
		}
	}
	for (int i = 0; i < a->nnames; i++) {
		int v = recur_manifest_find(m, a->names[i]);
		if (v < 0) {
			fprintf(stderr, "recur verify: no variant %s in %s/manifest.json (see recur list --dir %s)\n",
			        a->names[i], a->dir, a->dir);
			return -1;
		}
		const char *mn = recur_manifest_variant_mixer(m, v);
		if (!mixer_chosen(a, mn)) {
			fprintf(stderr,
			        "recur verify: variant %s is of mixer %s, which no --mixer names: it would not run\n",
			        a->names[i], mn);
			return -1;
		}
		if (a->cx->step && !is_decode(a, m, v)) {
			fprintf(stderr, "recur verify: --step %d checks decode steps only (scan decode), and variant %s is not "
			        "one: verify it without --step\n", a->cx->step, a->names[i]);
			return -1;
		}
		if (a->goldens && is_decode(a, m, v)) {
			fprintf(stderr, "recur verify: variant %s is a decode step (scan decode); the golden cases (--goldens) are "
			        "forward+backward: verify it without --goldens (random cases, by steps)\n", a->names[i]);
			return -1;
		}
		if (!takes_asked(a, m, v)) {
			const char *what, *option;
			lacks(a, m, v, &what, &option);
			fprintf(stderr, "recur verify: variant %s takes no %s (a grid with %s makes variants that do)\n",
			        a->names[i], what, option);
			return -1;
		}
	}
	int any = 0, anystep = 0;
	for (int v = 0; v < nv; v++)
		if (mixer_chosen(a, recur_manifest_variant_mixer(m, v)) && takes_asked(a, m, v))
			*(is_decode(a, m, v) ? &anystep : &any) = 1;
	if (a->cx->step && !anystep) {
		fprintf(stderr, "recur verify: --step %d: no decode step variant (scan decode) of the chosen mixers in %s "
		        "(R.decode in a script makes one; recur list shows them)\n", a->cx->step, a->dir);
		return -1;
	}
	if (a->goldens && !any && anystep) {
		fprintf(stderr, "recur verify: --goldens: the chosen variants are decode steps, which the golden cases "
		        "(forward+backward) do not check: verify them without --goldens\n");
		return -1;
	}
	if (!any && !anystep) {
		fprintf(stderr, "recur verify: no variant of the chosen mixers in %s takes what --resets / --docs / --h0 / "
		        "--packed give (grids with resets = { true } and states = { true }, or docs = { true }, make variants "
		        "that do)\n", a->dir);
		return -1;
	}
	return 0;
}

/* ---- what runs: golden cases, or one random case per (mixer, shape) -------------- */

static const char *const GOLDEN_CASES[] = {"rglru_B2_L37_D128", "rglru_B1_L300_D64", "samu_B2_L37_D128",
                                           "samu_B1_L300_D64"};
#define NGOLDEN ((int)(sizeof GOLDEN_CASES / sizeof *GOLDEN_CASES))

/* The first chosen variant of the golden case k's mixer, or -1. */
static int golden_variant(const VerifyArgs *a, recur_manifest *m, int k)
{
	char mname[16];
	sscanf(GOLDEN_CASES[k], "%15[a-z]", mname);
	for (int v = 0; v < recur_manifest_nvariants(m); v++)
		if (ordinary(a, m, v) && !strcmp(recur_manifest_variant_mixer(m, v), mname))
			return v;
	return -1;
}

/* The golden cases of every chosen mixer, each against its chosen variants. */
static void run_goldens(const VerifyArgs *a, Ctx *cx)
{
	int nv = recur_manifest_nvariants(cx->m);
	char err[8192];
	for (int k = 0; k < NGOLDEN; k++) {
		int v0 = golden_variant(a, cx->m, k);
		if (v0 < 0)
			continue;
		const char *mname = recur_manifest_variant_mixer(cx->m, v0);
		char cd[4096];
		snprintf(cd, sizeof cd, "%s/%s", a->goldens, GOLDEN_CASES[k]);
		Case c;
		if (case_golden(cx, v0, cd, &c, err, sizeof err) != 0) {
			fprintf(stderr, "recur verify: %s\n", err);
			case_free(&c);
			cx->fails++;
			continue;
		}
		for (int v = v0; v < nv; v++) {
			if (!ordinary(a, cx->m, v) || strcmp(recur_manifest_variant_mixer(cx->m, v), mname))
				continue;
			char why[512];
			if (recur_check_shape(cx->m, v, c.s, why, sizeof why) != 0) {
				printf("%-48s %s: not legal: %s\n", recur_manifest_variant_name(cx->m, v),
				       GOLDEN_CASES[k], why);
				continue;
			}
			run_variant(cx, v, &c);
		}
		case_free(&c);
	}
}

typedef struct {
	Ctx *cx;
	int v0;
	recur_shape s;
	uint64_t seed;
	Judge judge;
	Case c;
	int rc;
	char err[1024];
} Job;

static void *job_run(void *arg)
{
	Job *j = arg;
	if (j->rc == 0) /* its judge opened */
		j->rc = case_random(j->cx, j->v0, &j->judge, j->s, j->seed, &j->c, j->err, sizeof j->err);
	return NULL;
}

/* Whether any chosen variant of v0's mixer runs at shape s. */
static int any_legal(const VerifyArgs *a, recur_manifest *m, int v0, recur_shape s)
{
	const char *mn = recur_manifest_variant_mixer(m, v0);
	char why[512];
	for (int v = v0; v < recur_manifest_nvariants(m); v++)
		if (ordinary(a, m, v) && !strcmp(recur_manifest_variant_mixer(m, v), mn) &&
		    recur_check_shape(m, v, s, why, sizeof why) == 0)
			return 1;
	return 0;
}

/* v0 is the first chosen variant of its mixer. */
static int first_of_mixer(const VerifyArgs *a, recur_manifest *m, int v0)
{
	if (!ordinary(a, m, v0))
		return 0;
	for (int v = 0; v < v0; v++)
		if (ordinary(a, m, v) && !strcmp(recur_manifest_variant_mixer(m, v), recur_manifest_variant_mixer(m, v0)))
			return 0;
	return 1;
}

/* One job per (shape, mixer) at which some chosen variant is legal (a
 * reference nobody reads is not computed); a shape at which none is says
 * so. Returns the count. */
static int plan_jobs(const VerifyArgs *a, Ctx *cx, Job *jobs)
{
	int nv = recur_manifest_nvariants(cx->m), nj = 0;
	for (int k = 0; k < a->nsh; k++) {
		recur_shape s = a->sh[k];
		for (int v0 = 0; v0 < nv; v0++) {
			if (!first_of_mixer(a, cx->m, v0))
				continue;
			if (!any_legal(a, cx->m, v0, s)) {
				printf("%s at %dx%dx%d: no chosen variant is legal (recur list --dir %s --shape "
				       "%dx%dx%d says why)\n",
				       recur_manifest_variant_mixer(cx->m, v0), s.B, s.L, s.D, a->dir, s.B, s.L, s.D);
				continue;
			}
			jobs[nj++] = (Job){.cx = cx, .v0 = v0, .s = s, .seed = a->seed + (uint64_t)k * 7919};
		}
	}
	return nj;
}

/* The references: each job's judge (reading the manifest, here in order),
 * then the cases, concurrently (they are independent). */
static void compute_refs(Ctx *cx, Job *jobs, int nj)
{
	for (int j = 0; j < nj; j++)
		jobs[j].rc = judge_open(cx, jobs[j].v0, &jobs[j].judge, jobs[j].err, sizeof jobs[j].err);
	fprintf(stderr, "computing %d float64 references ...\n", nj);
	pthread_t *th = calloc((size_t)nj + 1, sizeof *th);
	int *started = calloc((size_t)nj + 1, sizeof *started);
	for (int j = 0; j < nj; j++)
		started[j] = th && started && pthread_create(&th[j], NULL, job_run, &jobs[j]) == 0;
	for (int j = 0; j < nj; j++) {
		if (started && started[j])
			pthread_join(th[j], NULL);
		else
			job_run(&jobs[j]);
	}
	free(th);
	free(started);
}

/* Random cases: one reference per (mixer, shape), shared by all its variants. */
static void run_random(const VerifyArgs *a, Ctx *cx, Job *jobs, int nj)
{
	int nv = recur_manifest_nvariants(cx->m);
	compute_refs(cx, jobs, nj);
	for (int j = 0; j < nj; j++) {
		Job *jb = &jobs[j];
		const char *mn = recur_manifest_variant_mixer(cx->m, jb->v0);
		if (jb->rc != 0) {
			fprintf(stderr, "recur verify: mixer %s at %dx%dx%d, its float64 reference: %s\n", mn, jb->s.B,
			        jb->s.L, jb->s.D, jb->err);
			case_free(&jb->c);
			cx->fails++;
			continue;
		}
		for (int v = jb->v0; v < nv; v++) {
			if (!ordinary(a, cx->m, v) || strcmp(recur_manifest_variant_mixer(cx->m, v), mn))
				continue;
			char why[512];
			if (recur_check_shape(cx->m, v, jb->s, why, sizeof why) != 0) {
				printf("%-48s %dx%dx%d skip: %s\n", recur_manifest_variant_name(cx->m, v), jb->s.B,
				       jb->s.L, jb->s.D, why);
				continue;
			}
			run_variant(cx, v, &jb->c);
		}
		case_free(&jb->c);
	}
}

/* What will run, settled before the driver: the jobs of a random run (in
 * *jobs, malloc'd), or the golden cases of the chosen mixers. 0, or -1
 * after saying why nothing would be checked. */
static int plan(const VerifyArgs *a, Ctx *cx, Job **jobs, int *nj, VStep **vs)
{
	int nv = recur_manifest_nvariants(cx->m);
	*jobs = NULL;
	*nj = 0;
	*vs = NULL;
	if (a->goldens) {
		for (int v = 0; v < nv; v++)
			if (chosen(a, cx->m, v) && is_decode(a, cx->m, v))
				printf("%s.%-42s skip: a decode step (scan decode); the golden cases are forward+backward "
				       "(verify without --goldens checks it by steps)\n", recur_manifest_variant_mixer(cx->m, v),
				       recur_manifest_variant_name(cx->m, v));
		for (int k = 0; k < NGOLDEN; k++)
			if (golden_variant(a, cx->m, k) >= 0)
				return 0;
		fprintf(stderr,
		        "recur verify: --goldens: the golden cases are of rglru and samu, and no chosen variant is "
		        "of either: nothing to check\n");
		return -1;
	}
	*jobs = calloc((size_t)a->nsh * (size_t)recur_manifest_nvariants(cx->m) + 1, sizeof **jobs);
	if (!*jobs) {
		fprintf(stderr, "recur verify: out of host memory planning the run\n");
		return -1;
	}
	*nj = plan_jobs(a, cx, *jobs);
	/* the decode steps, by steps (verify_step.c) */
	unsigned char *want = calloc((size_t)nv + 1, 1);
	int ns = -1;
	if (want) {
		for (int v = 0; v < nv; v++)
			want[v] = (unsigned char)stepped(a, cx->m, v);
		ns = vstep_plan(cx, want, a->sh, a->nsh, a->seed, vs);
		free(want);
	} else
		fprintf(stderr, "recur verify: out of host memory planning the run\n");
	if (ns < 0) {
		free(*jobs);
		*jobs = NULL;
		*nj = 0;
		return -1;
	}
	if (*nj > 0 || ns > 0)
		return 0;
	fprintf(stderr, "recur verify: no chosen variant is legal at any shape given: nothing to check\n");
	free(*jobs);
	*jobs = NULL;
	return -1;
}

static void jobs_free(Job *jobs, int nj)
{
	for (int j = 0; j < nj; j++)
		judge_close(&jobs[j].judge);
	free(jobs);
}

/* The manifest, its JSON and the names the command line gives: 0, or -1 after a message. */
static int open_manifest(VerifyArgs *a, Ctx *cx)
{
	char err[8192];
	if (recur_manifest_load(a->dir, &cx->m, err, sizeof err) != 0 || mf_for_device(cx->m, err, sizeof err) != 0) {
		fprintf(stderr, "recur verify: %s\n", err);
		return -1;
	}
	if (mf_open(&cx->mi, cx->m, err, sizeof err) != 0) {
		fprintf(stderr, "recur verify: %s\n", err);
		return -1;
	}
	return check_names(a, cx->m);
}

static int verify_run(VerifyArgs *a, Ctx *cx, Job *jobs, int nj, VStep *vs)
{
	char err[8192];
	if (recur_rt_open(&cx->rt, 0, err, sizeof err) != 0) {
		fprintf(stderr, "recur verify: %s\n", err);
		return 1;
	}
	char gpu[256] = "?";
	recur_rt_device_name(cx->rt, gpu, sizeof gpu);
	printf("verify on %s, tolerance %.0e (||out - ref|| / ||ref||), y and dx per token row and channel "
	       "%.0e (local)%s; ref spec: ref/'s, written from the spec; ref graph: derived from the mixer's graph, its "
	       "block-diagonal weights rounded to bf16 as the kernels' tensor-core operands are\n",
	       gpu, TOL, LOCAL_TOL, cx->graph ? "; forward+backward through a CUDA graph" : "");
	if (vs)
		printf("decode steps: each shape's B rows in calls of T tokens plus a padding row (index -1), their states "
		       "in a pool of B + %d slots at a random permutation; h0: from h0, updated in place; reset: no h0 in the "
		       "first call, then h0 and hT apart; y and the final slots (hT) against the reference's forward over the "
		       "same tokens; the padding row's y, the unused slots and guards must stay as they were\n", VSTEP_SPARE);
	if (a->goldens)
		run_goldens(a, cx);
	else {
		if (nj > 0)
			run_random(a, cx, jobs, nj);
		vstep_run(cx, vs);
	}
	printf("%d passed, %d failed\n", cx->passes, cx->fails);
	recur_rt_close(cx->rt);
	return cx->fails || cx->passes == 0 ? 1 : 0;
}

int cli_verify(int argc, char **argv)
{
	Ctx cx = {0};
	VerifyArgs a = {.cx = &cx};
	int prc = cli_parse(&cli_verify_cmd, argc, argv, set, &a);
	if (prc)
		return prc > 0 ? 0 : 2;
	Job *jobs = NULL;
	VStep *vs = NULL;
	int nj = 0, rc = 1;
	if (open_manifest(&a, &cx) == 0 && plan(&a, &cx, &jobs, &nj, &vs) == 0)
		rc = verify_run(&a, &cx, jobs, nj, vs);
	jobs_free(jobs, nj);
	vstep_free(vs);
	mf_close(&cx.mi);
	if (cx.m)
		recur_manifest_free(cx.m);
	return rc;
}
