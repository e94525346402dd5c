/* recur verify of the decode steps: a decode variant's calls, T tokens
 * each, against the float64 reference's forward over the same tokens.
 * What is run and compared: verify_step.h's note.
 */
#include "verify_step.h"
#include "rng.h"
#include "vmath.h"
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VS_ALIGN 16 /* each call's x and y block: the runtime's own requirement, no more */
#define VS_MAXSTEPS 2

/* The float64 reference of one (mixer, shape): from h0 (c) and from a reset. */
typedef struct {
	int v0; /* a wanted decode variant of the mixer: its judge and parameters */
	recur_shape s;
	uint64_t seed;
	Judge judge;
	Case c;             /* x, parameters, h0; y and hT from h0 */
	double *y_r, *hT_r; /* y and hT from a reset (no h0) */
	int rc;
	char err[1024];
	Ctx cx; /* case_random's view: states on, no marks */
} VJob;

typedef struct {
	int v, job, T;
} VCheck;

struct VStep {
	VJob *job;
	int nj;
	VCheck *chk;
	int nc;
};

/* ---- the plan ------------------------------------------------------------------ */

/* 0 when variant v runs every call of the check at s with step T; else -1 and why. */
static int step_legal(const recur_manifest *m, int v, recur_shape s, int T, char *why, size_t n)
{
	int nc, tl, t = mf_step_calls(s, T, &nc, &tl);
	if (s.B > INT_MAX - VSTEP_SPARE) {
		snprintf(why, n, "B + %d slots of the pool do not fit an int", VSTEP_SPARE);
		return -1;
	}
	char w[512];
	recur_shape c = {s.B + 1, t, s.D};
	if (recur_check_shape(m, v, c, w, sizeof w) != 0) {
		snprintf(why, n, "its calls of %dx%dx%d: %s", c.B, c.L, c.D, w);
		return -1;
	}
	c.L = tl;
	if (tl != t && recur_check_shape(m, v, c, w, sizeof w) != 0) {
		snprintf(why, n, "its last call, %dx%dx%d: %s", c.B, c.L, c.D, w);
		return -1;
	}
	return 0;
}

static const char *mixer_of(const Ctx *cx, int v)
{
	return recur_manifest_variant_mixer(cx->m, v);
}

int vstep_plan(Ctx *cx, const unsigned char *want, const recur_shape *sh, int nsh, uint64_t seed, VStep **out)
{
	int nv = recur_manifest_nvariants(cx->m);
	int steps[VS_MAXSTEPS], ns = 0;
	if (cx->step > 0)
		steps[ns++] = cx->step;
	else {
		steps[ns++] = VSTEP_DEFAULT_1;
		steps[ns++] = VSTEP_DEFAULT_2;
	}
	*out = NULL;
	VStep *p = calloc(1, sizeof *p);
	if (p) {
		p->job = calloc((size_t)nsh * (size_t)nv + 1, sizeof *p->job);
		p->chk = calloc((size_t)nsh * (size_t)nv * ns + 1, sizeof *p->chk);
	}
	if (!p || !p->job || !p->chk) {
		fprintf(stderr, "recur verify: out of host memory planning the step checks\n");
		vstep_free(p);
		return -1;
	}
	for (int k = 0; k < nsh; k++) {
		recur_shape s = sh[k];
		for (int v0 = 0; v0 < nv; v0++) {
			if (!want[v0])
				continue;
			int first = 1;
			for (int u = 0; u < v0 && first; u++)
				first = !(want[u] && !strcmp(mixer_of(cx, u), mixer_of(cx, v0)));
			if (!first)
				continue;
			int before = p->nc;
			for (int v = v0; v < nv; v++) {
				if (!want[v] || strcmp(mixer_of(cx, v), mixer_of(cx, v0)))
					continue;
				for (int i = 0; i < ns; i++) {
					char why[1200];
					if (step_legal(cx->m, v, s, steps[i], why, sizeof why) != 0) {
						printf("%s.%-42s %dx%dx%d step %d skip: %s\n", mixer_of(cx, v),
						       recur_manifest_variant_name(cx->m, v), s.B, s.L, s.D, steps[i],
						       why);
						continue;
					}
					p->chk[p->nc++] = (VCheck){.v = v, .job = p->nj, .T = steps[i]};
				}
			}
			if (p->nc == before) {
				const char *dir = recur_manifest_info(cx->m, "dir");
				printf("%s at %dx%dx%d: no chosen decode step variant is legal at its calls (recur "
				       "list --dir %s "
				       "--shape %dx%dx%d says why)\n",
				       mixer_of(cx, v0), s.B, s.L, s.D, dir ? dir : "DIR", s.B + 1,
				       steps[0] < s.L ? steps[0] : s.L, s.D);
				continue;
			}
			VJob *j = &p->job[p->nj++];
			j->v0 = v0;
			j->s = s;
			j->seed = seed + (uint64_t)k * 7919; /* the ordinary check's case at this shape */
		}
	}
	if (p->nc == 0) {
		vstep_free(p);
		return 0;
	}
	*out = p;
	return p->nc;
}

void vstep_free(VStep *p)
{
	if (!p)
		return;
	for (int j = 0; j < p->nj; j++) {
		case_free(&p->job[j].c);
		judge_close(&p->job[j].judge);
		free(p->job[j].y_r);
		free(p->job[j].hT_r);
	}
	free(p->job);
	free(p->chk);
	free(p);
}

/* ---- the references ------------------------------------------------------------- */

static void *job_run(void *arg)
{
	VJob *j = arg;
	if (j->rc != 0) /* its judge did not open */
		return NULL;
	j->rc = case_random(&j->cx, j->v0, &j->judge, j->s, j->seed, &j->c, j->err, sizeof j->err);
	if (j->rc != 0)
		return NULL;
	/* from a reset: the same x and parameters, no h0 (each row's t = 0 a reset) */
	size_t ne = (size_t)j->s.B * (size_t)j->s.L * (size_t)j->s.D, ns = (size_t)j->s.B * (size_t)j->s.D;
	j->y_r = malloc(ne * sizeof(double));
	j->hT_r = malloc(ns * sizeof(double));
	if (!j->y_r || !j->hT_r) {
		snprintf(j->err, sizeof j->err, "out of host memory for the reference from a reset");
		j->rc = -1;
		return NULL;
	}
	Case r = j->c; /* shallow: dx, dp and dh0 are written over, and not read */
	r.h0 = NULL;
	r.y = j->y_r;
	r.hT = j->hT_r;
	j->rc = judge_run(&j->judge, &r, j->err, sizeof j->err);
	return NULL;
}

static void compute_refs(Ctx *cx, VStep *p)
{
	for (int j = 0; j < p->nj; j++) {
		VJob *jb = &p->job[j];
		jb->cx = *cx;
		jb->cx.states = 1; /* h0 (and dhT, which the reference's backward reads) */
		jb->cx.resets = 0;
		jb->rc = judge_open(cx, jb->v0, &jb->judge, jb->err, sizeof jb->err);
	}
	fprintf(stderr, "computing %d float64 references for the decode steps (from h0 and from a reset) ...\n", p->nj);
	pthread_t *th = calloc((size_t)p->nj + 1, sizeof *th);
	int *started = calloc((size_t)p->nj + 1, sizeof *started);
	for (int j = 0; j < p->nj; j++)
		started[j] = th && started && pthread_create(&th[j], NULL, job_run, &p->job[j]) == 0;
	for (int j = 0; j < p->nj; j++) {
		if (started && started[j])
			pthread_join(th[j], NULL);
		else
			job_run(&p->job[j]);
	}
	free(th);
	free(started);
}

/* ---- one check: a decode variant, a case, a step ---------------------------------- */

/* A check's buffers, made once for both runs (h0, reset). */
typedef struct {
	recur_shape s; /* the case: B, L, D */
	int T, t, tlast, ncalls, pad, S;
	int *idx;                       /* [B + 1]: slot of each call row, -1 for the padding row */
	size_t *off;                    /* [ncalls]: byte offset of call k's block in X and Y */
	size_t xy_bytes;                /* of X and of Y */
	size_t slot, guard, pool_bytes; /* a slot's bytes; guard slots' bytes before and after; all */
	CUdeviceptr X, Y, P, Q, idx_d, p[MAXP];
	uint16_t *xy_h;    /* X's host image, then Y read back */
	float *pool0[2];   /* P's and Q's images as uploaded */
	float *pool_h;     /* a pool read back */
	float *y_h, *hT_h; /* y [B][L][D] and the final slots [B][D] gathered */
	recur_variant *rv;
	Rng r;
} SRun;

typedef struct {
	double e_y, e_hT;
	VmLocal lc;
	int bad;             /* non-finite y and hT */
	size_t pad_written;  /* elements of the padding row's y that are not the poison */
	size_t pool_changed; /* floats of unused slots and guards not bit-identical */
} SOut;

/* err, holding a runtime message, prefixed with what was being done. */
static int sfail(char *err, size_t n, const char *what)
{
	char t[4096];
	snprintf(t, sizeof t, "%s: %s", what, err);
	snprintf(err, n, "%s", t);
	return -1;
}

#define ST(call, what)                                                                                                 \
	do {                                                                                                           \
		if ((call) != 0)                                                                                       \
			return sfail(err, n, what);                                                                    \
	} while (0)

static void srun_free(Ctx *cx, SRun *R)
{
	CUdeviceptr d[5] = {R->X, R->Y, R->P, R->Q, R->idx_d};
	for (int k = 0; k < 5; k++)
		if (d[k])
			recur_free(cx->rt, d[k]);
	for (int p = 0; p < MAXP; p++)
		if (R->p[p])
			recur_free(cx->rt, R->p[p]);
	free(R->idx);
	free(R->off);
	free(R->xy_h);
	free(R->pool0[0]);
	free(R->pool0[1]);
	free(R->pool_h);
	free(R->y_h);
	free(R->hT_h);
	if (R->rv)
		recur_variant_free(R->rv);
	memset(R, 0, sizeof *R);
}

/* The layout: the calls' blocks, the padding row, the slots; host memory. */
static int srun_layout(const Case *c, int T, uint64_t seed, SRun *R, char *err, size_t n)
{
	recur_shape s = c->s;
	R->s = s;
	R->T = T;
	R->t = mf_step_calls(s, T, &R->ncalls, &R->tlast);
	R->S = s.B + VSTEP_SPARE;
	rng_seed(&R->r, seed ^ 0x73746570ull ^ ((uint64_t)T << 32));
	R->pad = (int)(rng_next(&R->r) % (uint64_t)(s.B + 1));
	size_t bytes, ne = (size_t)s.B * (size_t)s.L * (size_t)s.D;
	if (recur_tensor_bytes((recur_shape){s.B + 1, s.L, s.D}, 2, &bytes, err, n) != 0)
		return -1;
	R->xy_bytes = bytes + (size_t)R->ncalls * VS_ALIGN;
	R->slot = (size_t)s.D * 4;
	R->guard = (R->slot + 255) / 256 * 256; /* at least a slot, keeping the pool 256-byte aligned */
	R->pool_bytes = 2 * R->guard + (size_t)R->S * R->slot;
	R->idx = malloc((size_t)(s.B + 1) * sizeof *R->idx);
	R->off = malloc((size_t)R->ncalls * sizeof *R->off);
	R->xy_h = malloc(R->xy_bytes);
	R->pool0[0] = malloc(R->pool_bytes);
	R->pool0[1] = malloc(R->pool_bytes);
	R->pool_h = malloc(R->pool_bytes);
	R->y_h = malloc(ne * sizeof(float));
	R->hT_h = malloc((size_t)s.B * (size_t)s.D * sizeof(float));
	int *perm = malloc((size_t)R->S * sizeof *perm);
	if (!R->idx || !R->off || !R->xy_h || !R->pool0[0] || !R->pool0[1] || !R->pool_h || !R->y_h || !R->hT_h ||
	    !perm) {
		free(perm);
		snprintf(err, n, "out of host memory for the step check's %zu-byte x and y images", R->xy_bytes);
		return -1;
	}
	/* each row's slot: a random permutation of the S slots, the first B taken */
	for (int i = 0; i < R->S; i++)
		perm[i] = i;
	for (int i = R->S - 1; i > 0; i--) {
		int k = (int)(rng_next(&R->r) % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[k];
		perm[k] = t;
	}
	for (int r = 0, b = 0; r <= s.B; r++)
		R->idx[r] = r == R->pad ? -1 : perm[b++];
	free(perm);
	size_t at = 0;
	for (int k = 0; k < R->ncalls; k++) {
		int tk = k + 1 < R->ncalls ? R->t : R->tlast;
		R->off[k] = at;
		at += ((size_t)(s.B + 1) * (size_t)tk * (size_t)s.D * 2 + VS_ALIGN - 1) / VS_ALIGN * VS_ALIGN;
	}
	/* x's image: row b's tokens of each call, the padding row random */
	memset(R->xy_h, 0, R->xy_bytes);
	uint16_t *row = malloc((size_t)s.D * 2);
	if (!row) {
		snprintf(err, n, "out of host memory");
		return -1;
	}
	for (int k = 0; k < R->ncalls; k++) {
		int tk = k + 1 < R->ncalls ? R->t : R->tlast;
		uint16_t *blk = (uint16_t *)((char *)R->xy_h + R->off[k]);
		for (int r = 0, b = 0; r <= s.B; r++) {
			for (int j = 0; j < tk; j++) {
				uint16_t *dst = blk + ((size_t)r * tk + j) * (size_t)s.D;
				if (r == R->pad) {
					for (int d = 0; d < s.D; d++)
						dst[d] = bf16_bits((float)rng_normal(&R->r));
					continue;
				}
				size_t src = ((size_t)b * s.L + (size_t)k * R->t + j) * (size_t)s.D;
				vm_to_bf16(c->x + src, row, (size_t)s.D);
				memcpy(dst, row, (size_t)s.D * 2);
			}
			if (r != R->pad)
				b++;
		}
	}
	free(row);
	return 0;
}

/* The variant loaded, x's blocks, the parameters and the index on the device. */
static int srun_setup(Ctx *cx, int v, const Case *c, int T, uint64_t seed, SRun *R, char *err, size_t n)
{
	const char *vname = recur_manifest_variant_name(cx->m, v);
	if (srun_layout(c, T, seed, R, err, n) != 0)
		return -1;
	ST(recur_variant_load(cx->rt, cx->m, vname, &R->rv, err, n), "loading the variant");
	ST(recur_alloc(cx->rt, R->xy_bytes, &R->X, err, n), "allocating the calls' x blocks");
	ST(recur_alloc(cx->rt, R->xy_bytes, &R->Y, err, n), "allocating the calls' y blocks");
	ST(recur_alloc(cx->rt, R->pool_bytes, &R->P, err, n), "allocating pool P");
	ST(recur_alloc(cx->rt, R->pool_bytes, &R->Q, err, n), "allocating pool Q");
	ST(recur_alloc(cx->rt, (size_t)(c->s.B + 1) * 4, &R->idx_d, err, n), "allocating the index");
	ST(recur_memcpy_htod(cx->rt, R->X, R->xy_h, R->xy_bytes, err, n), "uploading the calls' x blocks");
	ST(recur_memcpy_htod(cx->rt, R->idx_d, R->idx, (size_t)(c->s.B + 1) * 4, err, n), "uploading the index");
	for (int p = 0; p < c->np; p++) {
		size_t bytes = (size_t)c->pn[p] * 4;
		float *f = malloc(bytes + 4);
		if (!f) {
			snprintf(err, n, "out of host memory for parameter %s", c->pname[p]);
			return -1;
		}
		for (long i = 0; i < c->pn[p]; i++)
			f[i] = (float)c->p[p][i];
		char what[160];
		snprintf(what, sizeof what, "parameter %s (%zu bytes)", c->pname[p], bytes);
		int rc = recur_alloc(cx->rt, bytes, &R->p[p], err, n) ||
		        recur_memcpy_htod(cx->rt, R->p[p], f, bytes, err, n);
		free(f);
		if (rc)
			return sfail(err, n, what);
	}
	return 0;
}

static int slot_used(const SRun *R, int slot)
{
	for (int r = 0; r <= R->s.B; r++)
		if (R->idx[r] == slot)
			return 1;
	return 0;
}

/* Random values in every slot and guard; with h0, each row's slot holds its h0. */
static void pool_image(SRun *R, float *img, const double *h0)
{
	size_t nf = R->pool_bytes / 4, D = (size_t)R->s.D;
	for (size_t i = 0; i < nf; i++)
		img[i] = (float)rng_normal(&R->r);
	float *slots = img + R->guard / 4;
	for (int r = 0, b = 0; h0 && r <= R->s.B; r++) {
		if (R->idx[r] < 0)
			continue;
		for (size_t d = 0; d < D; d++)
			slots[(size_t)R->idx[r] * D + d] = (float)h0[(size_t)b * D + d];
		b++;
	}
}

/* Floats of the unused slots and guards of pool (read back) unlike its image. */
static size_t pool_changes(const SRun *R, const float *now, const float *img)
{
	size_t nf = R->pool_bytes / 4, g = R->guard / 4, D = (size_t)R->s.D, changed = 0;
	for (size_t i = 0; i < nf; i++) {
		if (i >= g && i < g + (size_t)R->S * D && slot_used(R, (int)((i - g) / D)))
			continue;
		changed += memcmp(&now[i], &img[i], 4) != 0;
	}
	return changed;
}

/* One run: the calls, one synchronisation, then what came back against the
 * reference (y_ref, hT_ref). from_h0: the pool holds h0 and every call
 * updates it in place; else the first call gives no h0 and the calls
 * alternate between pools P and Q. */
static int srun_go(Ctx *cx, SRun *R, const Case *c, int from_h0, const double *y_ref, const double *hT_ref, SOut *o,
                   char *err, size_t n)
{
	memset(o, 0, sizeof *o);
	recur_shape s = R->s;
	size_t D = (size_t)s.D;
	pool_image(R, R->pool0[0], from_h0 ? c->h0 : NULL);
	pool_image(R, R->pool0[1], NULL);
	ST(recur_memcpy_htod(cx->rt, R->P, R->pool0[0], R->pool_bytes, err, n), "uploading pool P");
	ST(recur_memcpy_htod(cx->rt, R->Q, R->pool0[1], R->pool_bytes, err, n), "uploading pool Q");
	/* 0xffff is a bf16 NaN: a y the kernel never wrote shows up, the padding row's must stay so */
	ST(recur_memset_u8(cx->rt, R->Y, 0xff, R->xy_bytes, err, n), "poisoning the calls' y blocks");
	CUdeviceptr P = R->P + R->guard, Q = R->Q + R->guard;
	int last = 0; /* the pool the last call wrote: 0 = P, 1 = Q */
	for (int k = 0; k < R->ncalls; k++) {
		int tk = k + 1 < R->ncalls ? R->t : R->tlast;
		recur_seqstate st = {0};
		st.index = R->idx_d;
		if (from_h0)
			st.h0 = st.hT = P;
		else {
			st.h0 = k == 0 ? 0 : k % 2 ? P : Q;
			st.hT = k % 2 ? Q : P;
			last = k % 2;
		}
		recur_io io = {.x = R->X + R->off[k], .y = R->Y + R->off[k], .params = R->p, .state = &st};
		if (recur_forward(R->rv, (recur_shape){s.B + 1, tk, s.D}, &io, 0, err, n) != 0) {
			char what[200];
			snprintf(what, sizeof what, "call %d of %d (tokens %lld..%lld, shape %dx%dx%d): recur_forward",
			         k + 1, R->ncalls, (long long)k * R->t, (long long)k * R->t + tk - 1, s.B + 1, tk, s.D);
			return sfail(err, n, what);
		}
	}
	char what[160];
	snprintf(what, sizeof what, "synchronising after the %d calls (a fault in one of them)", R->ncalls);
	ST(recur_sync(cx->rt, err, n), what);
	ST(recur_memcpy_dtoh(cx->rt, R->xy_h, R->Y, R->xy_bytes, err, n), "copying the calls' y back");
	/* y: each call's rows to [B][L][D]; the padding row must still be poison */
	for (int k = 0; k < R->ncalls; k++) {
		int tk = k + 1 < R->ncalls ? R->t : R->tlast;
		const uint16_t *blk = (const uint16_t *)((const char *)R->xy_h + R->off[k]);
		for (int r = 0, b = 0; r <= s.B; r++) {
			const uint16_t *src = blk + (size_t)r * tk * D;
			if (r == R->pad) {
				for (size_t i = 0; i < (size_t)tk * D; i++)
					o->pad_written += src[i] != 0xffff;
				continue;
			}
			vm_from_bf16(src, R->y_h + ((size_t)b * s.L + (size_t)k * R->t) * D, (size_t)tk * D);
			b++;
		}
	}
	size_t ne = (size_t)s.B * (size_t)s.L * D;
	o->e_y = vm_relerr(R->y_h, y_ref, ne, &o->bad);
	if (vm_local(R->y_h, y_ref, (size_t)s.B * (size_t)s.L, D, &o->lc) != 0) {
		snprintf(err, n, "out of host memory for the per-row errors");
		return -1;
	}
	/* the pools: every row's final slot against hT, the rest untouched */
	for (int q = 0; q < 2; q++) {
		ST(recur_memcpy_dtoh(cx->rt, R->pool_h, q ? R->Q : R->P, R->pool_bytes, err, n),
		   q ? "copying pool Q back" : "copying pool P back");
		o->pool_changed += pool_changes(R, R->pool_h, R->pool0[q]);
		if (q != last)
			continue;
		const float *slots = R->pool_h + R->guard / 4;
		for (int r = 0, b = 0; r <= s.B; r++) {
			if (R->idx[r] < 0)
				continue;
			memcpy(R->hT_h + (size_t)b * D, slots + (size_t)R->idx[r] * D, D * 4);
			b++;
		}
	}
	o->e_hT = vm_relerr(R->hT_h, hT_ref, (size_t)s.B * D, &o->bad);
	return 0;
}

/* One table row, as the ordinary check's: the verdict and every error. */
static int print_row(Ctx *cx, int v, const Case *c, const SRun *R, int from_h0, const SOut *o)
{
	int ok = o->bad == 0 && o->e_y <= TOL && o->e_hT <= TOL && o->pad_written == 0 && o->pool_changed == 0;
	double loc = o->lc.row; /* the worse of the rows' and the channels', a NaN winning */
	int lcol = 0;
	if (!(o->lc.col <= loc) && !isnan(loc)) {
		loc = o->lc.col;
		lcol = 1;
	}
	ok &= loc <= LOCAL_TOL;
	char name[160], shp[48];
	snprintf(name, sizeof name, "%s.%s", recur_manifest_variant_mixer(cx->m, v),
	         recur_manifest_variant_name(cx->m, v));
	snprintf(shp, sizeof shp, "%dx%dx%d", c->s.B, c->s.L, c->s.D);
	printf("%-48s %-15s %s ref %-6s step %d %-5s calls %d hT %.1e y %.1e local %.1e", name, shp,
	       ok ? "PASS" : "FAIL", c->ref, R->T, from_h0 ? "h0" : "reset", R->ncalls, o->e_hT, o->e_y, loc);
	verify_print_code(R->rv);
	if (!(loc <= LOCAL_TOL)) {
		size_t L = (size_t)c->s.L;
		if (lcol)
			printf(" (y channel %zu)", o->lc.at_col);
		else
			printf(" (y b %zu t %zu)", o->lc.at_row / L, o->lc.at_row % L);
	}
	if (o->bad)
		printf(" nonfinite %d", o->bad);
	if (o->pad_written)
		printf(" padding row's y written %zu", o->pad_written);
	if (o->pool_changed)
		printf(" unused slots or guards changed %zu", o->pool_changed);
	putchar('\n');
	fflush(stdout);
	return ok;
}

/* Variant v on job j's case at step T: both runs, two rows. */
static void check_one(Ctx *cx, const VCheck *k, VJob *j)
{
	char err[8192] = "";
	SRun R = {0};
	char name[160];
	snprintf(name, sizeof name, "%s.%s", recur_manifest_variant_mixer(cx->m, k->v),
	         recur_manifest_variant_name(cx->m, k->v));
	if (srun_setup(cx, k->v, &j->c, k->T, j->seed, &R, err, sizeof err) != 0) {
		printf("%-48s %dx%dx%d FAIL ref %s step %d %s\n", name, j->s.B, j->s.L, j->s.D, j->c.ref, k->T, err);
		fflush(stdout);
		cx->fails += 2;
		srun_free(cx, &R);
		return;
	}
	for (int from_h0 = 1; from_h0 >= 0; from_h0--) {
		SOut o;
		const double *y = from_h0 ? j->c.y : j->y_r, *hT = from_h0 ? j->c.hT : j->hT_r;
		if (srun_go(cx, &R, &j->c, from_h0, y, hT, &o, err, sizeof err) != 0) {
			printf("%-48s %dx%dx%d FAIL ref %s step %d %s %s\n", name, j->s.B, j->s.L, j->s.D, j->c.ref,
			       k->T, from_h0 ? "h0" : "reset", err);
			fflush(stdout);
			cx->fails++;
			continue;
		}
		print_row(cx, k->v, &j->c, &R, from_h0, &o) ? cx->passes++ : cx->fails++;
	}
	srun_free(cx, &R);
}

void vstep_run(Ctx *cx, VStep *p)
{
	if (!p)
		return;
	if (cx->graph || cx->time_reps > 0 || cx->dump)
		printf("decode steps: --graph, --time and --dump apply to forward+backward variants; the step check "
		       "makes plain calls (recur bench --step T times them, through a graph too)\n");
	compute_refs(cx, p);
	for (int j = 0; j < p->nj; j++) {
		VJob *jb = &p->job[j];
		if (jb->rc != 0) {
			fprintf(stderr,
			        "recur verify: mixer %s at %dx%dx%d, the float64 reference of its decode steps: %s\n",
			        mixer_of(cx, jb->v0), jb->s.B, jb->s.L, jb->s.D, jb->err);
			cx->fails++;
			continue;
		}
		for (int k = 0; k < p->nc; k++)
			if (p->chk[k].job == j)
				check_one(cx, &p->chk[k], jb);
		/* the references are done with: free them before the next shape's runs */
		case_free(&jb->c);
		free(jb->y_r);
		free(jb->hT_r);
		jb->y_r = jb->hT_r = NULL;
	}
}
