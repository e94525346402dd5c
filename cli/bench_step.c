/* recur bench --step T: the decode steps, timed per call (see bench_step.h). */
#include "bench_step.h"
#include "args.h"
#include "calfile.h"
#include "harness.h"
#include "results.h"
#include "rng.h"
#include "stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BS_MAXV 64
#define BS_MAXREG (RES_MAXROUNDS * RES_MAXSAMPLES)

/* One (variant, shape): its buffers and what was measured beyond the row. */
typedef struct {
	int vi;
	recur_shape s;        /* B, L, D of the region */
	int t, tlast, ncalls; /* tokens of a call, of the last call; calls per region */
	recur_variant *v;
	HBufs b; /* x, y (and dy, gradients: unused) at the call's shape; b.h0 the pool */
	CUdeviceptr idx;
	ResRow *row;
	double cold[BS_MAXREG];    /* ms of one call after a flush */
	double host_us[BS_MAXREG]; /* host time to enqueue a call, per region */
	double graph_host_us, graph_wall_us, graph_gpu_us;
	int graph_nodes;
	double bytes, floor_ms; /* a full call's compulsory bytes, over the copy bandwidth */
	long long param_bytes, state_bytes;
} SB;

typedef struct {
	const BenchStepOpts *o;
	recur_manifest *m;
	const MfInfo *mi;
	recur_rt *rt;
	Harness h;
	ResEnv env;
	ResFloor floor;
	recur_shape sh[H_MAXSHAPES];
	int nsh;
	int sel[BS_MAXV];
	int nsel;
	ResRow *rows;
	SB *sb;
	int nrows;
} BS;

/* err, holding a message, prefixed with the context. */
static int bfail(char *err, size_t n, const char *ctx, const char *what)
{
	char t[4096];
	snprintf(t, sizeof t, "%s: %s: %s", ctx, what, err);
	snprintf(err, n, "%s", t);
	return -1;
}

static double host_now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static double median_of(const double *x, int n)
{
	Stats s;
	return n > 0 && stats_compute(x, n, &s) == 0 ? s.median : 0;
}

/* ---- what runs ------------------------------------------------------------------- */

static const char *vname(const BS *bs, int vi)
{
	return recur_manifest_variant_name(bs->m, vi);
}

/* The decode steps to time: every --variant (each one a decode step), else
 * every decode step of the chosen mixers; every --mixer must have one. */
static int select_variants(BS *bs, char *err, size_t n)
{
	const BenchStepOpts *o = bs->o;
	int nv = recur_manifest_nvariants(bs->m);
	const char *path = recur_manifest_info(bs->m, "path");
	for (int i = 0; i < o->nvariants; i++) {
		/* a name is listed once per target of a several-target folder */
		int named = 0, taken = 0;
		for (int vi = 0; vi < nv; vi++) {
			if (strcmp(vname(bs, vi), o->variants[i]))
				continue;
			named++;
			if (!mf_decode(bs->m, vi)) {
				snprintf(err, n,
				         "--step %d times decode steps (scan decode), and variant %s is not one: bench "
				         "it "
				         "without --step",
				         o->step, o->variants[i]);
				return -1;
			}
			if (!cli_mixer_wanted(o->mixers, o->nmixers, recur_manifest_variant_mixer(bs->m, vi)))
				continue;
			if (bs->nsel == BS_MAXV) {
				snprintf(err, n, "more than %d decode steps to time", BS_MAXV);
				return -1;
			}
			int dup = 0;
			for (int k = 0; k < bs->nsel; k++)
				dup |= bs->sel[k] == vi;
			if (!dup)
				bs->sel[bs->nsel++] = vi;
			taken++;
		}
		if (!named) {
			snprintf(err, n, "--variant %s: no such variant in %s (see recur list --dir %s)",
			         o->variants[i], path, o->dir);
			return -1;
		}
		if (!taken) {
			snprintf(err, n, "--variant %s belongs to mixers that --mixer leaves out", o->variants[i]);
			return -1;
		}
	}
	for (int k = 0; k < o->nmixers; k++) {
		int found = 0;
		for (int vi = 0; vi < nv && !found; vi++)
			found = !strcmp(recur_manifest_variant_mixer(bs->m, vi), o->mixers[k]) &&
			        mf_decode(bs->m, vi);
		if (!found) {
			snprintf(err, n,
			         "--mixer %s: %s has no decode step (scan decode) of that mixer (R.decode in a script "
			         "makes one; recur list shows them)",
			         o->mixers[k], path);
			return -1;
		}
	}
	for (int vi = 0; o->nvariants == 0 && vi < nv; vi++) {
		if (!mf_decode(bs->m, vi) ||
		    !cli_mixer_wanted(o->mixers, o->nmixers, recur_manifest_variant_mixer(bs->m, vi)))
			continue;
		if (bs->nsel == BS_MAXV) {
			snprintf(err, n, "more than %d decode steps to time", BS_MAXV);
			return -1;
		}
		bs->sel[bs->nsel++] = vi;
	}
	if (bs->nsel == 0) {
		snprintf(err, n,
		         "--step %d: no decode step variant (scan decode) of the chosen mixers in %s (R.decode in a "
		         "script makes one; recur list shows them)",
		         o->step, path);
		return -1;
	}
	return 0;
}

/* Every (variant, shape) must be legal at its calls: all refusals at once. */
static int check_shapes(BS *bs, char *err, size_t n)
{
	size_t used = 0;
	int bad = 0;
	err[0] = 0;
	for (int k = 0; k < bs->nsh; k++)
		for (int i = 0; i < bs->nsel; i++) {
			recur_shape s = bs->sh[k];
			int tl, nc, t = mf_step_calls(s, bs->o->step, &nc, &tl);
			char why[512];
			recur_shape c = {s.B, t, s.D};
			int rc = recur_check_shape(bs->m, bs->sel[i], c, why, sizeof why);
			if (rc == 0 && tl != t) {
				c.L = tl;
				rc = recur_check_shape(bs->m, bs->sel[i], c, why, sizeof why);
			}
			if (rc != 0) {
				bad++;
				if (used < n)
					used += snprintf(err + used, n - used,
					                 "%sdecode step %s (%s) cannot run its calls of %dx%dx%d "
					                 "at %dx%dx%d: %s",
					                 used ? "\n  " : "", vname(bs, bs->sel[i]),
					                 recur_manifest_variant_mixer(bs->m, bs->sel[i]), c.B, c.L, c.D,
					                 s.B, s.L, s.D, why);
			}
		}
	return bad ? -1 : 0;
}

/* ---- one (variant, shape) ---------------------------------------------------------- */

/* The calls of one region, back to back on the default stream. */
static int region(SB *x, char *err, size_t n)
{
	recur_io io = hbufs_io(&x->b);
	for (int k = 0; k < x->ncalls; k++) {
		int tk = k + 1 < x->ncalls ? x->t : x->tlast;
		if (recur_forward(x->v, (recur_shape){x->s.B, tk, x->s.D}, &io, 0, err, n) != 0) {
			char what[160];
			snprintf(what, sizeof what, "call %d of %d (%dx%dx%d): recur_forward", k + 1, x->ncalls, x->s.B,
			         tk, x->s.D);
			return bfail(err, n, x->b.what, what);
		}
	}
	return 0;
}

/* The pool (random states) and the index (a random permutation of its B slots). */
static int make_state(BS *bs, SB *x, uint64_t seed, char *err, size_t n)
{
	size_t B = (size_t)x->s.B, D = (size_t)x->s.D;
	float *pool = malloc(B * D * 4);
	int *idx = malloc(B * sizeof *idx);
	if (!pool || !idx) {
		free(pool);
		free(idx);
		snprintf(err, n, "%s: out of host memory for the pool of states", x->b.what);
		return -1;
	}
	Rng r;
	rng_seed(&r, seed);
	for (size_t i = 0; i < B * D; i++)
		pool[i] = (float)rng_normal(&r);
	for (size_t i = 0; i < B; i++)
		idx[i] = (int)i;
	for (size_t i = B; i-- > 1;) {
		size_t k = (size_t)(rng_next(&r) % (uint64_t)(i + 1));
		int t = idx[i];
		idx[i] = idx[k];
		idx[k] = t;
	}
	int rc = recur_alloc(bs->rt, B * D * 4, &x->b.h0, err, n) ||
	        recur_memcpy_htod(bs->rt, x->b.h0, pool, B * D * 4, err, n) ||
	        recur_alloc(bs->rt, B * 4, &x->idx, err, n) || recur_memcpy_htod(bs->rt, x->idx, idx, B * 4, err, n);
	free(pool);
	free(idx);
	if (rc)
		return bfail(err, n, x->b.what, "uploading the pool of states and the index");
	/* h0 = hT: the pool updated in place, the usual call (hbufs_free frees b.h0) */
	x->b.st.h0 = x->b.st.hT = x->b.h0;
	x->b.st.index = x->idx;
	x->state_bytes = (long long)(B * D * 4 + B * 4);
	return 0;
}

/* y and the pool hold only finite values after a region. 0, 1 with why, -1 on a failing call. */
static int finite(BS *bs, SB *x, char *why, size_t n)
{
	size_t ny = (size_t)x->s.B * (size_t)x->t * (size_t)x->s.D, np = (size_t)x->s.B * (size_t)x->s.D;
	uint16_t *y = malloc(ny * 2);
	float *p = malloc(np * 4);
	int rc = 0;
	if (!y || !p) {
		snprintf(why, n, "%s: out of host memory checking the outputs", x->b.what);
		rc = -1;
	} else if (recur_memcpy_dtoh(bs->rt, y, x->b.y, ny * 2, why, n) ||
	           recur_memcpy_dtoh(bs->rt, p, x->b.h0, np * 4, why, n))
		rc = bfail(why, n, x->b.what, "copying y and the pool back");
	else {
		size_t bad = 0, badp = 0;
		for (size_t i = 0; i < ny; i++)
			bad += (y[i] & 0x7f80) == 0x7f80;
		for (size_t i = 0; i < np; i++)
			badp += !isfinite(p[i]);
		if (bad || badp) {
			snprintf(why, n, "%s: %zu non-finite values of y and %zu of the pool after %d calls", x->b.what,
			         bad, badp, x->ncalls);
			rc = 1;
		}
	}
	free(y);
	free(p);
	return rc;
}

/* Load, buffers, a first region checked, the memory window. */
static int prepare(BS *bs, SB *x, int si, char *err, size_t n)
{
	const BenchStepOpts *o = bs->o;
	const char *name = vname(bs, x->vi), *mixer = recur_manifest_variant_mixer(bs->m, x->vi);
	recur_shape call = {x->s.B, x->t, x->s.D};
	fprintf(stderr, "bench: %s %s %dx%dx%d step %d: loading, uploading inputs\n", mixer, name, x->s.B, x->s.L,
	        x->s.D, o->step);
	if (recur_variant_load(bs->rt, bs->m, name, &x->v, err, n)) {
		char ctx[200];
		snprintf(ctx, sizeof ctx, "%s %s", mixer, name);
		return bfail(err, n, ctx, "recur_variant_load");
	}
	uint64_t seed = o->seed + (uint64_t)si * 7919;
	if (hbufs_inputs(&bs->h, bs->m, x->vi, call, seed, &x->b, err, n))
		return -1;
	snprintf(x->b.what, sizeof x->b.what, "%s %s %dx%dx%d step %d", mixer, name, x->s.B, x->s.L, x->s.D, o->step);
	if (make_state(bs, x, seed + 1, err, n))
		return -1;
	x->param_bytes = 4 * x->b.parameters;
	size_t ybytes = (size_t)x->s.B * (size_t)x->t * (size_t)x->s.D * 2;
	/* the memory window: y and the workspaces of a call (as bench's y, dx and workspaces) */
	if (recur_variant_trim(x->v, err, n))
		return bfail(err, n, x->b.what, "recur_variant_trim");
	size_t before = recur_mem_current(bs->rt);
	recur_mem_reset_peak(bs->rt);
	if (recur_alloc(bs->rt, ybytes, &x->b.y, err, n))
		return bfail(err, n, x->b.what, "allocating y");
	if (region(x, err, n))
		return -1;
	if (recur_sync(bs->rt, err, n))
		return bfail(err, n, x->b.what, "synchronising after the first calls");
	long long delta = (long long)(recur_mem_peak(bs->rt) - before);
	char why[1024];
	int fin = finite(bs, x, why, sizeof why);
	if (fin) {
		snprintf(err, n, fin > 0 ? "%s: run recur verify --dir %s --variant %s --step %d" : "%s", why, o->dir,
		         name, o->step);
		return -1;
	}
	ResRow *r = x->row;
	r->shape = x->s;
	snprintf(r->architecture, sizeof r->architecture, "%s", mixer);
	snprintf(r->backend, sizeof r->backend, "%s", name);
	const char *c = mf_controller(bs->mi, name);
	snprintf(r->controller, sizeof r->controller, "%s", c ? c : "");
	r->nrounds = o->rounds;
	r->nsamples = o->samples;
	/* x, the parameters, the pool and the index (hbufs_inputs' dy and gradients are not the call's) */
	r->baseline_allocated = (long long)ybytes + x->param_bytes + x->state_bytes;
	r->peak_allocated = r->baseline_allocated + delta;
	r->baseline_reserved = r->baseline_allocated;
	r->peak_reserved = r->peak_allocated;
	r->parameters = x->b.parameters;
	if (mf_dyn_per_token(bs->mi, mixer, x->s, &r->dyn_per_token, err, n))
		return -1;
	int mat = mf_materialized(bs->mi, name, err, n);
	if (mat < 0)
		return -1;
	r->materialized = mat;
	snprintf(r->variant_source, sizeof r->variant_source, "%s",
	         o->nvariants ? "--variant" : "every decode step of the mixer");
	snprintf(r->notes[r->nnotes++], sizeof r->notes[0],
	         "decode step, forward only: \"forward\" is the GPU time per "
	         "call of %d token%s (a region of %d calls back to back, over %d); \"step\" holds the rest",
	         x->t, x->t == 1 ? "" : "s", x->ncalls, x->ncalls);
	return 0;
}

/* The rounds: per sample a flushed region of ncalls calls, and a flushed single call. */
static int time_calls(BS *bs, SB *x, char *err, size_t n)
{
	const BenchStepOpts *o = bs->o;
	Harness *h = &bs->h;
	for (int w = 0; w < o->warmup; w++)
		if (region(x, err, n))
			return -1;
	int k = 0;
	for (int r = 0; r < o->rounds; r++)
		for (int i = 0; i < o->samples; i++, k++) {
			float ms = 0, one = 0;
			if (harness_flush(h, err, n) || recur_event_record(bs->rt, h->ev[0], 0, err, n))
				return bfail(err, n, x->b.what, "flushing the L2 and recording the start event");
			double t0 = host_now_us();
			if (region(x, err, n))
				return -1;
			x->host_us[k] = (host_now_us() - t0) / x->ncalls;
			if (recur_event_record(bs->rt, h->ev[1], 0, err, n) ||
			    recur_event_elapsed_ms(bs->rt, h->ev[0], h->ev[1], &ms, err, n))
				return bfail(err, n, x->b.what, "timing a region of calls");
			x->row->fwd[r][i] = ms / x->ncalls;
			/* one call alone after a flush: every byte from DRAM */
			recur_io io = hbufs_io(&x->b);
			if (harness_flush(h, err, n) || recur_event_record(bs->rt, h->ev[0], 0, err, n) ||
			    recur_forward(x->v, (recur_shape){x->s.B, x->t, x->s.D}, &io, 0, err, n) ||
			    recur_event_record(bs->rt, h->ev[1], 0, err, n) ||
			    recur_event_elapsed_ms(bs->rt, h->ev[0], h->ev[1], &one, err, n))
				return bfail(err, n, x->b.what, "timing one call after an L2 flush");
			x->cold[k] = one;
		}
	fprintf(stderr, "bench: %s: %d regions of %d calls timed\n", x->b.what, k, x->ncalls);
	return 0;
}

/* The forward as one CUDA graph, replayed ncalls times (at least 20). */
static int time_graph(BS *bs, SB *x, char *err, size_t n)
{
	recur_io io = hbufs_io(&x->b);
	recur_graph *g = NULL;
	CUevent e0 = NULL, e1 = NULL;
	int reps = x->ncalls < 20 ? 20 : x->ncalls;
	float ms = 0;
	int rc = recur_graph_create(x->v, (recur_shape){x->s.B, x->t, x->s.D}, &io, RECUR_GRAPH_FORWARD, &g, err, n);
	if (rc)
		return bfail(err, n, x->b.what, "recur_graph_create of the forward");
	rc = recur_graph_launch(g, 0, err, n) || recur_sync(bs->rt, err, n) ||
	        recur_event_create(bs->rt, &e0, err, n) || recur_event_create(bs->rt, &e1, err, n) ||
	        recur_event_record(bs->rt, e0, 0, err, n);
	double t0 = host_now_us(), t1 = t0;
	for (int i = 0; !rc && i < reps; i++)
		rc = recur_graph_launch(g, 0, err, n);
	t1 = host_now_us();
	rc = rc || recur_event_record(bs->rt, e1, 0, err, n) || recur_sync(bs->rt, err, n) ||
	        recur_event_elapsed_ms(bs->rt, e0, e1, &ms, err, n);
	double t2 = host_now_us();
	if (!rc) {
		x->graph_host_us = (t1 - t0) / reps;
		x->graph_wall_us = (t2 - t0) / reps;
		x->graph_gpu_us = ms * 1e3 / reps;
		x->graph_nodes = recur_graph_nodes(g);
	}
	recur_event_destroy(bs->rt, e0);
	recur_event_destroy(bs->rt, e1);
	recur_graph_free(g);
	return rc ? bfail(err, n, x->b.what, "replaying the forward's graph") : 0;
}

/* --profile: the launches of one call, as bench's per-kernel table. */
static int profile(BS *bs, SB *x, char *err, size_t n)
{
	recur_io io = hbufs_io(&x->b);
	recur_set_profiling(x->v, 1);
	int rc = harness_flush(&bs->h, err, n) ||
	        recur_forward(x->v, (recur_shape){x->s.B, x->t, x->s.D}, &io, 0, err, n);
	recur_launch_info li;
	ResRow *r = x->row;
	if (!rc)
		printf("profile %s %s %dx%dx%d (one call)\n", r->architecture, r->backend, x->s.B, x->t, x->s.D);
	r->nprof[0] = r->nprof[1] = 0;
	for (int i = 0; !rc && i < RES_MAXPROF && recur_variant_last_launch(x->v, i, &li) == 0; i++) {
		ResKernel *K = &r->prof[0][r->nprof[0]++];
		harness_kernel(x->v, &li, K);
		recur_shape s = { x->s.B, x->t, x->s.D };
		rc = recur_launch_bytes(bs->m, x->vi, 0, i, s, &K->bytes, err, n) ||
		     recur_launch_flops(bs->m, x->vi, 0, i, s, &K->flops, err, n);
		char tf[32] = "";
		if (!rc && K->flops > 0 && K->ms > 0)
			snprintf(tf, sizeof tf, " %.1f TFLOP/s", K->flops / K->ms * 1e-9);
		if (!rc)
			printf("  %-32s %9.4f ms grid %ux%ux%u block %d smem %u regs %d local %d blk/SM %d %s%.3f MB%s\n",
			       K->kernel, K->ms, K->grid[0], K->grid[1], K->grid[2], K->block, K->dyn_smem,
			       K->registers, K->local_bytes, K->blocks_per_sm, K->bytes > 0 ? "declared " : "",
			       K->bytes * 1e-6, tf);
	}
	recur_set_profiling(x->v, 0);
	if (rc)
		return bfail(err, n, x->b.what, "profiling one call");
	r->has_profile = 1;
	return 0;
}

static void release(BS *bs, SB *x)
{
	hbufs_free(&bs->h, &x->b);
	if (x->idx)
		recur_free(bs->rt, x->idx);
	x->idx = 0;
	recur_variant_free(x->v);
	x->v = NULL;
}

static void line(FILE *f, const SB *x)
{
	const ResRow *r = x->row;
	int n = r->nrounds * r->nsamples;
	double a[BS_MAXREG];
	for (int k = 0; k < r->nrounds; k++)
		for (int i = 0; i < r->nsamples; i++)
			a[k * r->nsamples + i] = r->fwd[k][i];
	double call = median_of(a, n) * 1e3, cold = median_of(x->cold, n) * 1e3, fl = x->floor_ms * 1e3;
	char shs[64];
	snprintf(shs, sizeof shs, "%dx%dx%d", r->shape.B, r->shape.L, r->shape.D);
	fprintf(f, "%-7s %-16s %5d %-12s %9.2f %9.2f %9.2f %6.2f %6.2f %9.2f %9.2f %9.2f %8.3f\n", r->architecture, shs,
	        x->t, r->backend, call, cold, fl, fl > 0 ? call / fl : 0, fl > 0 ? cold / fl : 0, x->graph_host_us,
	        x->graph_wall_us, median_of(x->host_us, n), x->bytes * 1e-6);
}

static void header(FILE *f)
{
	fprintf(f, "%-7s %-16s %5s %-12s %9s %9s %9s %6s %6s %9s %9s %9s %8s\n", "mixer", "shape", "step", "variant",
	        "call us", "cold us", "floor us", "x fl", "cold x", "graph h", "graph us", "call h", "MB/call");
}

static int run_one(BS *bs, SB *x, int si, char *err, size_t n)
{
	if (prepare(bs, x, si, err, n) || time_calls(bs, x, err, n) || time_graph(bs, x, err, n) ||
	    (bs->o->profile && profile(bs, x, err, n)))
		return -1;
	/* the floor: the state read and written, x and y, the parameters, of a full call */
	double B = x->s.B, D = x->s.D, T = x->t;
	x->bytes = 2 * B * D * 4 + 2 * B * T * D * 2 + (double)x->param_bytes;
	x->floor_ms = bs->floor.gb_per_s > 0 ? x->bytes / (bs->floor.gb_per_s * 1e9) * 1e3 : 0;
	line(stderr, x);
	release(bs, x);
	return 0;
}

/* ---- the results ------------------------------------------------------------------ */

static json_t *step_json(const BS *bs, const SB *x)
{
	int n = x->row->nrounds * x->row->nsamples;
	json_t *o = json_object();
	json_object_set_new(o, "tokens_per_call", json_integer(x->t));
	json_object_set_new(o, "calls_per_region", json_integer(x->ncalls));
	json_object_set_new(o, "last_call_tokens", json_integer(x->tlast));
	json_object_set_new(o, "pool_slots", json_integer(x->s.B));
	json_object_set_new(o, "state",
	                    json_string("h0 = hT (the pool, updated in place), index a random permutation"));
	json_object_set_new(o, "cold_call", results_stats(x->cold, n));
	json_object_set_new(o, "host_us_per_call", json_real(median_of(x->host_us, n)));
	json_t *g = json_object();
	json_object_set_new(g, "nodes", json_integer(x->graph_nodes));
	json_object_set_new(g, "host_us_per_replay", json_real(x->graph_host_us));
	json_object_set_new(g, "wall_us_per_replay", json_real(x->graph_wall_us));
	json_object_set_new(g, "gpu_us_per_replay", json_real(x->graph_gpu_us));
	json_object_set_new(o, "graph", g);
	json_t *f = json_object();
	json_object_set_new(f, "bytes_per_call", json_real(x->bytes));
	json_object_set_new(f, "state_bytes", json_real(2.0 * x->s.B * x->s.D * 4));
	json_object_set_new(f, "x_y_bytes", json_real(2.0 * x->s.B * x->t * x->s.D * 2));
	json_object_set_new(f, "parameter_bytes", json_integer(x->param_bytes));
	if (bs->floor.gb_per_s > 0) {
		json_object_set_new(f, "method", json_string(bs->floor.method));
		json_object_set_new(f, bs->floor.key, json_real(bs->floor.gb_per_s));
		json_object_set_new(f, "ms_per_call", json_real(x->floor_ms));
	}
	json_object_set_new(o, "floor", f);
	return o;
}

/* The seed's schema, as bench writes it, made a decode step's: per-call
 * times in "forward", no backward, the floor and the rest in "step". */
static json_t *doc(BS *bs)
{
	const BenchStepOpts *o = bs->o;
	ResProtocol p = {.rounds = o->rounds,
	                 .samples = o->samples,
	                 .warmup = o->warmup,
	                 .flush_bytes = (long long)bs->h.flush_bytes};
	snprintf(p.resets, sizeof p.resets,
	         "decode steps: every call gives h0 = hT, a pool of B states updated in place, "
	         "and index, a random permutation of its slots");
	snprintf(p.baseline_policy, sizeof p.baseline_policy, "decode step variants (scan decode), %d-token calls",
	         o->step);
	snprintf(p.samu_policy, sizeof p.samu_policy, "decode step variants (scan decode), %d-token calls", o->step);
	json_t *d = results_doc(&bs->env, &p, bs->rows, bs->nrows);
	json_t *pr = json_object_get(d, "protocol");
	json_object_set_new(pr, "scope",
	                    json_string("decode step: the forward only, advancing a pool of states by the "
	                                "call's tokens"));
	json_object_set_new(pr, "input_gradient", json_false());
	json_object_set_new(pr, "order", json_string("each (variant, shape) alone, in turn"));
	json_object_set_new(pr, "step", json_integer(o->step));
	json_object_set_new(pr, "timer",
	                    json_string("CUDA events on one stream around the ceil(L/T) calls of a region, "
	                                "L2 flushed before each region; forward = region / calls; "
	                                "step.cold_call: one call after a flush"));
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(d, "rows"), i, row)
	{
		json_object_set_new(row, "backward", json_null());
		json_object_set_new(row, "forward_backward", json_null());
		size_t k;
		json_t *ro;
		json_array_foreach(json_object_get(row, "rounds"), k, ro)
		{
			json_object_del(ro, "backward_ms");
			json_object_del(ro, "forward_backward_ms");
		}
		json_object_set_new(row, "step", step_json(bs, &bs->sb[i]));
	}
	return d;
}

/* ---- the command ------------------------------------------------------------------ */

static int main_step(BS *bs, char *err, size_t n)
{
	const BenchStepOpts *o = bs->o;
	if (o->resets > 0) {
		snprintf(err, n, "--step %d: decode steps take no reset marks (--resets)", o->step);
		return -1;
	}
	if (o->nsh > 0) {
		bs->nsh = o->nsh;
		memcpy(bs->sh, o->sh, (size_t)o->nsh * sizeof *bs->sh);
	} else if ((bs->nsh = harness_parse_shapes(BENCH_STEP_SHAPES, bs->sh, H_MAXSHAPES, err, n)) < 0)
		return -1;
	if (select_variants(bs, err, n) || check_shapes(bs, err, n))
		return -1;
	const char *manifest = recur_manifest_info(bs->m, "path");
	if (cli_out_not_input(o->out, "results file (--out)", &manifest, 1, err, n) ||
	    results_out_folder(o->out, "results file", err, n))
		return -1;
	if (recur_rt_open(&bs->rt, 0, err, n))
		return -1;
	harness_env(bs->rt, bs->m, &bs->env);
	if (harness_open(&bs->h, bs->rt, H_FLUSH_BYTES, err, n) || harness_bandwidth(&bs->h, &bs->floor, err, n))
		return -1;
	fprintf(stderr, "bench: %s, driver %s; %s %.0f GB/s (%s); decode steps, %d-token calls\n", bs->env.gpu,
	        bs->env.driver, bs->floor.key, bs->floor.gb_per_s, bs->floor.method, o->step);
	int nr = bs->nsh * bs->nsel;
	bs->rows = calloc((size_t)nr, sizeof *bs->rows);
	bs->sb = calloc((size_t)nr, sizeof *bs->sb);
	if (!bs->rows || !bs->sb) {
		snprintf(err, n, "out of host memory for %d rows", nr);
		return -1;
	}
	for (int s = 0; s < bs->nsh; s++)
		for (int i = 0; i < bs->nsel; i++) {
			SB *x = &bs->sb[bs->nrows];
			x->row = &bs->rows[bs->nrows++];
			x->vi = bs->sel[i];
			x->s = bs->sh[s];
			x->t = mf_step_calls(x->s, o->step, &x->ncalls, &x->tlast);
			if (run_one(bs, x, s, err, n))
				return -1;
		}
	json_t *d = doc(bs);
	int rc = results_write_atomic(o->out, d, err, n);
	json_decref(d);
	if (rc)
		return -1;
	printf("%s, driver %s, CUDA %d.%d, %s; %s %.0f GB/s; decode steps, %d-token calls\n", bs->env.gpu,
	       bs->env.driver, bs->env.cuda_api / 1000, bs->env.cuda_api % 1000 / 10, bs->env.generator, bs->floor.key,
	       bs->floor.gb_per_s, o->step);
	header(stdout);
	for (int i = 0; i < bs->nrows; i++)
		line(stdout, &bs->sb[i]);
	printf("(call: GPU time per call, the median of regions of L/T calls back to back after an L2 flush; cold: one "
	       "call after a flush; floor: state read + write fp32, x and y bf16 and the parameters of one call over "
	       "the "
	       "copy bandwidth; x fl: call / floor; graph h: host us to enqueue one replay of the forward's graph, "
	       "graph us: wall us per replay of L/T replays and a synchronisation; call h: host us to enqueue one "
	       "recur_forward)\n");
	printf("wrote %s\n", o->out);
	return 0;
}

int bench_step_run(const BenchStepOpts *o, recur_manifest *m, const MfInfo *mi, char *err, size_t n)
{
	BS bs = {.o = o, .m = m, .mi = mi};
	int rc = main_step(&bs, err, n);
	for (int i = 0; bs.sb && i < bs.nrows; i++)
		if (bs.sb[i].v || bs.sb[i].b.x)
			release(&bs, &bs.sb[i]);
	harness_close(&bs.h);
	free(bs.rows);
	free(bs.sb);
	if (bs.rt)
		recur_rt_close(bs.rt);
	return rc;
}
