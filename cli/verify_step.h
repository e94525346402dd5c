/* recur verify's two halves: verify.c checks the forward+backward variants,
 * verify_step.c the decode steps ("scan": "decode", mfinfo.h's mf_decode).
 * This header is what they share: the tolerances, the float64 reference
 * (a Judge), one random case and the context of the run, declared once so
 * that the step check judges by exactly the ordinary check's machinery.
 *
 * THE STEP CHECK (verify_step.c). At each verify shape B x L x D and each
 * step T (--step T; without it T = 1 and T = 16), the case of the ordinary
 * `verify --h0` at that shape and seed (x, the script's parameters, a
 * random h0 [B][D]) runs through the decode variant in ceil(L / T) calls,
 * the last one L - (ceil(L/T) - 1) T tokens when T does not divide L:
 *   - each call is of shape {B + 1, T_k, D}: the B rows' tokens of that
 *     call, plus ONE padding row (index -1) at a random place, whose y must
 *     stay as it was poisoned (NaN bits); a state written through its
 *     slot -1 would land in the guard before the pool;
 *   - x and y of every call are their own contiguous [B + 1][T_k][D]
 *     blocks of one device buffer (uploaded once; y poisoned once), so the
 *     calls are back-to-back forwards, no copy or synchronisation between
 *     them, one synchronisation at the end;
 *   - the states are a pool of S = B + 3 slots fp32 [S][D] between guard
 *     slots, row b's slot index[b] a random permutation; every byte of the
 *     unused slots and of the guards must stay bit-identical;
 *   - run "h0": the pool's slots hold h0 and every call updates it in
 *     place (h0 = hT = the pool, the normal call);
 *   - run "reset": the first call gives no h0 (rows start with a reset)
 *     and hT = pool P, later calls alternate between two pools (h0 = P,
 *     hT = Q, then h0 = Q, hT = P, ...): h0 and hT apart.
 * Judged against the float64 reference's forward over all L tokens with
 * that h0 (run "h0") or none (run "reset"), y [B][L][D] and the final slots
 * against its hT, with the ordinary check's tolerances: ||out - ref|| /
 * ||ref|| <= TOL for y and hT, y per token row and channel within
 * LOCAL_TOL, nothing non-finite.
 */
#ifndef RECUR_VERIFY_STEP_H
#define RECUR_VERIFY_STEP_H

#include "mfinfo.h"
#include "recur.h"
#include "ref.h"
#include "reference.h"
#include <stdint.h>

#define TOL 1e-2
#define LOCAL_TOL 1e-1 /* bf16 rounding: about 4e-3 per row */
#define MAXP 16

/* The default steps of a decode variant's check (no --step), and the limit of --step. */
#define VSTEP_DEFAULT_1 1
#define VSTEP_DEFAULT_2 16
#define VSTEP_MAX 4096
/* The most documents per row --docs takes. */
#define VDOCS_MAX 1000000
/* Slots of the pool no row uses: S = B + VSTEP_SPARE. */
#define VSTEP_SPARE 3

/* The float64 reference of one mixer (verify.c's note). */
typedef struct {
	const RefMixer *hand; /* ref/: written by hand from the spec */
	RfMixer *graph;       /* else: derived from the manifest's graph of the mixer */
	const char *label;    /* "spec" | "graph": the column that says which judged a row */
	int k;                /* channels per head of the mixer (the manifest's "k") */
	/* graph: the parameters that are block-diagonal projection weights,
	 * which the kernels multiply as bf16 tensor-core operands (the spec's
	 * "projections of x use bf16 operands"): the reference takes them
	 * rounded so, or a sum over every token that cancels to a small value
	 * (a scalar bias's gradient) differs by that rounding times its
	 * cancellation: dbC of the Mamba-2 example at 1x64x64 by 3.3e-2, all of
	 * it the bf16 weights (bench/experiments/2026-12-05-mamba2-bias) */
	unsigned char bf16w[MAXP];
} Judge;

typedef struct {
	recur_shape s;
	const char *ref; /* which reference: "spec", "graph" or "golden" */
	int np;
	long pn[MAXP];
	double *x, *dy, *p[MAXP];  /* inputs (bf16 / fp32 values) */
	double *y, *dx, *dp[MAXP]; /* reference outputs */
	uint16_t *xb, *dyb;        /* x and dy as the device holds them (bf16), made once */
	unsigned char *reset;      /* reset marks [B][L] (--resets, --docs), or NULL */
	int docs;                  /* documents per row (--docs, at most L), or 0 */
	int32_t *cu;               /* --packed: the documents as cu_seqlens [ndocs + 1] over one row (reset NULL) */
	int ndocs;
	size_t ns;                 /* elements of each state: B*D, or ndocs*D with --packed */
	double *h0, *dhT;          /* initial states (--h0) and hT's adjoint [ns], or NULL */
	double *hT, *dh0;          /* their reference outputs (hT with --h0 or --packed, dh0 with --h0) */
	double *mla, *mh;          /* the row's map, reference (--h0, not --packed): map_loga, map_h [ns] */
	const char *pname[MAXP];
} Case;

typedef struct {
	recur_rt *rt;
	recur_manifest *m;
	MfInfo mi; /* the manifest as JSON: the mixers' graphs */
	const char *dump;
	int fails, passes;
	int time_reps; /* > 0: time forward and backward after a pass */
	int graph;     /* the checked forward+backward through a graph */
	double xscale; /* x ~ N(0, xscale^2): large activations reach the kernels' overflow guards */
	double resets; /* > 0: reset marks at this rate, and at the edges (case_marks); only variants taking them */
	int docs;      /* > 0: that many documents per row instead (case_marks) */
	int states;    /* random h0 and dhT, hT and dh0 checked (case_states); only variants taking them */
	int packed;    /* with docs: the documents as cu_seqlens over a row of B = 1, a state each (hT and dhT
	                * always); only variants taking cu_seqlens (docs = { true }) */
	int step;      /* --step T: only the decode variants, T tokens per call; 0: not given */
} Ctx;

/* ---- verify.c's, for verify_step.c ---- */
/* The judge of variant v's mixer: its parameters must be the manifest's, in order. */
int judge_open(Ctx *cx, int v, Judge *j, char *err, size_t n);
void judge_close(Judge *j);
/* The reference's forward and backward on c's inputs (c->h0 NULL: each row
 * starts with a reset; c->hT, when not NULL, receives the final states). */
int judge_run(const Judge *j, Case *c, char *err, size_t n);
/* Random inputs and the script's initial parameters at shape s (drawn from
 * seed: the same x, parameters and h0 for the same seed and cx->xscale,
 * cx->resets, cx->states), then the reference. */
int case_random(Ctx *cx, int v, const Judge *jd, recur_shape s, uint64_t seed, Case *c, char *err, size_t n);
void case_free(Case *c);
/* " code cubin sm_90" | " code ptx sm_90": which code of variant rv ran (a row's column). */
void verify_print_code(recur_variant *rv);

/* ---- verify_step.c's, for verify.c ---- */
typedef struct VStep VStep;
/* The step checks of the decode variants with want[v] set, at each shape
 * of sh, with cx->step's T (or both defaults), the references drawn from
 * seed + k * 7919 for shape k (the ordinary check's seeds). A (mixer,
 * shape) at which no wanted variant is legal prints why. *out gets the
 * plan (NULL when nothing runs); returns the number of checks planned, or
 * -1 after a message (out of host memory). No GPU needed. */
int vstep_plan(Ctx *cx, const unsigned char *want, const recur_shape *sh, int nsh, uint64_t seed, VStep **out);
/* Computes the references (one per mixer and shape, concurrently) and
 * runs every planned check on cx->rt: one printed row each, counted in
 * cx->passes / cx->fails. */
void vstep_run(Ctx *cx, VStep *p);
void vstep_free(VStep *p);

#endif
