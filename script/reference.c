/* The float64 reference of any mixer, from its graph (see reference.h).
 *
 * rf_open derives, once, the adjoint of every leaf and cuts the graph into
 * four tapes (the node ids each result needs, in id order, which is a
 * topological order): log_a and b; y; dy/dh; every leaf's adjoint. Each
 * element then runs a tape over one array of node values, so the cost per
 * element is a few dozen arithmetic operations and no allocation.
 *
 * One sequence at a time: the token projections first (they read the
 * whole token), then the heads in parallel (block-diagonal projections,
 * gates and scan are per head and per channel). The backward recomputes the
 * sequence's forward, walks t downwards per head, and sums what crosses
 * heads (token-projection adjoints, scalar-parameter gradients) per head,
 * then in head order.
 *
 * The state (util/seqstate.h) enters through one row's reading of it, token
 * by token (RfSeq's first, start, end): `first` is the graph's leaf, start
 * says where h_prev comes from h0 and dh0 is owed, end where hT is taken
 * and dhT joins the adjoint. With the empty state this is the reading
 * rf_forward always had (first at t = 0, h_prev 0 there, the chain cut at
 * the end), in the same operations.
 */
#include "reference.h"
#include "par.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SEED_LA, SEED_B, SEED_Y, NSEED };

typedef struct {
	int *id; /* node ids, ascending */
	int n;
} RfTape;

struct RfMixer {
	Mixer mx;                 /* a copy; its graph also holds the derivative nodes */
	RfTape fwd, out, dh, bwd; /* log_a and b; y; d(seed_y y)/dh; every adjoint below */
	int g_x, g_h;             /* adjoint nodes of x and h */
	int g_proj[MX_MAXPROJ];
	int g_param[MX_MAXPARAM]; /* -1 for a block-diagonal weight (never a leaf) */
	int plane[MX_MAXPROJ];    /* a block-diagonal projection's plane in RfSeq.pblk, else -1 */
	int nplane;
};

static int rf_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the evaluator ------------------------------------------------------ */

/* The meaning of each op: ex_eval's (script/expr.c), as rf_selfcheck and
 * tests/test_reference.c hold it. */
static double rf_apply(ExOp op, double x, double y, double z)
{
	switch (op) {
	case EX_NEG:
		return -x;
	case EX_EXP:
		return exp(x);
	case EX_LOG:
		return log(x);
	case EX_SIGMOID:
		return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
	case EX_SOFTPLUS:
		return log1p(exp(-fabs(x))) + fmax(x, 0.0);
	case EX_SQRT:
	case EX_SQRTB:
		return sqrt(x);
	case EX_SQRTB_GRAD:
		return 1.0 / sqrt(fmax(x, 2.5e-7));
	case EX_TANH:
		return tanh(x);
	case EX_RECIP:
		return 1.0 / x;
	case EX_RSQRT:
		return 1.0 / sqrt(x);
	case EX_ADD:
		return x + y;
	case EX_SUB:
		return x - y;
	case EX_MUL:
		return x * y;
	case EX_DIV:
		return x / y;
	case EX_MIN:
		return fmin(x, y);
	case EX_MAX:
		return fmax(x, y);
	case EX_GT:
		return x > y ? 1.0 : 0.0;
	case EX_WHERE:
		return x != 0.0 ? y : z;
	default:
		return NAN;
	}
}

/* The leaves of one element. */
typedef struct {
	double x, h, first;
	const double *param; /* this channel's value of each parameter */
	const double *proj;  /* this element's value of each projection */
	double seed[NSEED];
} RfEnv;

static void rf_run(const ExGraph *g, const RfTape *tp, const RfEnv *e, double *v)
{
	for (int k = 0; k < tp->n; k++) {
		int id = tp->id[k];
		const ExNode *nd = &g->n[id];
		switch (nd->op) {
		case EX_CONST:
			v[id] = nd->k;
			break;
		case EX_X:
			v[id] = e->x;
			break;
		case EX_H:
			v[id] = e->h;
			break;
		case EX_FIRST:
			v[id] = e->first;
			break;
		case EX_PARAM:
			v[id] = e->param[nd->idx];
			break;
		case EX_PROJ:
			v[id] = e->proj[nd->idx];
			break;
		case EX_SEED:
			v[id] = e->seed[nd->idx];
			break;
		default:
			v[id] = rf_apply(nd->op, v[nd->a], nd->b >= 0 ? v[nd->b] : 0, nd->c >= 0 ? v[nd->c] : 0);
		}
	}
}

/* ---- opening: checks, derivatives, tapes -------------------------------- */

/* The tape of the nodes roots[0..n) reach; -1 out of memory. */
static int rf_tape(const ExGraph *g, const int *roots, int n, RfTape *tp)
{
	char *mark = calloc((size_t)g->len + 1, 1);
	tp->id = malloc(((size_t)g->len + 1) * sizeof *tp->id);
	tp->n = 0;
	if (!mark || !tp->id) {
		free(mark);
		return -1;
	}
	for (int i = 0; i < n; i++)
		mark[roots[i]] = 1;
	for (int id = g->len - 1; id >= 0; id--) {
		const ExNode *nd = &g->n[id];
		if (!mark[id])
			continue;
		if (nd->a >= 0)
			mark[nd->a] = 1;
		if (nd->b >= 0)
			mark[nd->b] = 1;
		if (nd->c >= 0)
			mark[nd->c] = 1;
	}
	for (int id = 0; id < g->len; id++)
		if (mark[id])
			tp->id[tp->n++] = id;
	free(mark);
	return 0;
}

/* What the reference relies on and a Mixer from elsewhere (a manifest) might break. */
static int rf_check_mixer(const Mixer *mx, char *err, size_t n)
{
	const ExGraph *g = &mx->g;
	if (mx->k < 1 || mx->nparam < 0 || mx->nparam > MX_MAXPARAM || mx->nproj < 0 || mx->nproj > MX_MAXPROJ)
		return rf_fail(err, n, "mixer %s: k %d, %d parameters, %d projections", mx->name, mx->k, mx->nparam,
		               mx->nproj);
	if (mx->log_a < 0 || mx->log_a >= g->len || mx->b < 0 || mx->b >= g->len || mx->y < 0 || mx->y >= g->len)
		return rf_fail(err, n, "mixer %s: a root is not a node of its graph", mx->name);
	for (int j = 0; j < mx->nproj; j++) {
		const MxProj *p = &mx->proj[j];
		if (p->weight < 0 || p->weight >= mx->nparam || p->bias < 0 || p->bias >= mx->nparam)
			return rf_fail(err, n, "mixer %s: projection %s names no parameter", mx->name, p->name);
	}
	for (int id = 0; id < g->len; id++) {
		const ExNode *nd = &g->n[id];
		int bad = nd->op == EX_SEED || nd->op == EX_TOK ||
		        (nd->op == EX_PARAM && (nd->idx >= mx->nparam || mx->param[nd->idx].kind == PK_BLOCKDIAG)) ||
		        (nd->op == EX_PROJ && nd->idx >= mx->nproj);
		if (bad)
			return rf_fail(err, n, "mixer %s: graph node %d (%s %d) is no leaf of a script", mx->name, id,
			               ex_opname(nd->op), nd->idx);
	}
	if (ex_depends(g, mx->log_a, EX_H, -1) || ex_depends(g, mx->b, EX_H, -1))
		return rf_fail(err, n, "mixer %s: log_a or b depends on h: the recurrence is not linear", mx->name);
	return 0;
}

/* The adjoint of every leaf, seeded with the adjoints of log_a, b and y. */
static void rf_derive(RfMixer *r)
{
	Mixer *mx = &r->mx;
	ExGraph *g = &mx->g;
	int leaves[2 + MX_MAXPROJ + MX_MAXPARAM], grads[2 + MX_MAXPROJ + MX_MAXPARAM], nl = 0;
	leaves[nl++] = ex_leaf(g, EX_X, 0);
	leaves[nl++] = ex_leaf(g, EX_H, 0);
	for (int j = 0; j < mx->nproj; j++)
		leaves[nl++] = ex_leaf(g, EX_PROJ, j);
	for (int i = 0; i < mx->nparam; i++)
		if (mx->param[i].kind != PK_BLOCKDIAG)
			leaves[nl++] = ex_leaf(g, EX_PARAM, i);
	int outs[NSEED] = {mx->log_a, mx->b, mx->y}, seeds[NSEED];
	for (int k = 0; k < NSEED; k++)
		seeds[k] = ex_leaf(g, EX_SEED, k);
	ex_grad(g, NSEED, outs, seeds, nl, leaves, grads);
	nl = 0;
	r->g_x = grads[nl++];
	r->g_h = grads[nl++];
	for (int j = 0; j < mx->nproj; j++)
		r->g_proj[j] = grads[nl++];
	for (int i = 0; i < mx->nparam; i++)
		r->g_param[i] = mx->param[i].kind != PK_BLOCKDIAG ? grads[nl++] : -1;
}

static int rf_tapes(RfMixer *r)
{
	const Mixer *mx = &r->mx;
	int fwd[2] = {mx->log_a, mx->b}, bwd[1 + MX_MAXPROJ + MX_MAXPARAM], nb = 0;
	bwd[nb++] = r->g_x;
	for (int j = 0; j < mx->nproj; j++)
		bwd[nb++] = r->g_proj[j];
	for (int i = 0; i < mx->nparam; i++)
		if (r->g_param[i] >= 0)
			bwd[nb++] = r->g_param[i];
	return rf_tape(&mx->g, fwd, 2, &r->fwd) || rf_tape(&mx->g, &mx->y, 1, &r->out) ||
	                rf_tape(&mx->g, &r->g_h, 1, &r->dh) || rf_tape(&mx->g, bwd, nb, &r->bwd)
	        ? -1
	        : 0;
}

int rf_open(const Mixer *mx, RfMixer **out, char *err, size_t errlen)
{
	*out = NULL;
	if (rf_check_mixer(mx, err, errlen))
		return -1;
	RfMixer *r = calloc(1, sizeof *r);
	if (!r)
		return rf_fail(err, errlen, "mixer %s: out of memory", mx->name);
	r->mx = *mx;
	if (ex_copy(&r->mx.g, &mx->g)) {
		free(r);
		return rf_fail(err, errlen, "mixer %s: out of memory copying its graph", mx->name);
	}
	for (int j = 0; j < mx->nproj; j++)
		r->plane[j] = mx->proj[j].kind == PJ_BLOCKDIAG ? r->nplane++ : -1;
	rf_derive(r);
	if (rf_tapes(r)) {
		rf_close(r);
		return rf_fail(err, errlen, "mixer %s: out of memory for its tapes", mx->name);
	}
	*out = r;
	return 0;
}

void rf_close(RfMixer *r)
{
	if (!r)
		return;
	RfTape *t[4] = {&r->fwd, &r->out, &r->dh, &r->bwd};
	for (int k = 0; k < 4; k++)
		free(t[k]->id);
	ex_free(&r->mx.g);
	free(r);
}

int rf_nparam(const RfMixer *r)
{
	return r->mx.nparam;
}

const char *rf_param_name(const RfMixer *r, int i)
{
	return i >= 0 && i < r->mx.nparam ? r->mx.param[i].name : NULL;
}

long rf_param_count(const RfMixer *r, int i, RfShape s)
{
	switch (r->mx.param[i].kind) {
	case PK_CHANNEL:
		return s.D;
	case PK_BLOCKDIAG:
		return (long)s.D * r->mx.k; /* H K K with H = D / K */
	default:
		return 1;
	}
}

/* ---- sizes --------------------------------------------------------------- */

/* a * b + c in size_t, or SIZE_MAX when it would wrap (no buffer has that size) */
static size_t rf_madd(size_t a, size_t b, size_t c)
{
	if (c == SIZE_MAX || (a && b > (SIZE_MAX - 1) / a))
		return SIZE_MAX;
	size_t ab = a * b;
	return ab > SIZE_MAX - 1 - c ? SIZE_MAX : ab + c;
}

/* doubles of one head's scratch: node values, parameter and projection
 * values, dh and the block-diagonal projections' adjoints of one step */
static size_t rf_scratch(const RfMixer *r)
{
	const Mixer *mx = &r->mx;
	return (size_t)mx->g.len + (size_t)mx->nparam + (size_t)mx->nproj + (size_t)mx->k * (1 + (size_t)r->nplane);
}

int rf_check_shape(const RfMixer *r, RfShape s, char *err, size_t errlen)
{
	const Mixer *mx = &r->mx;
	if (s.B < 1 || s.L < 1 || s.D < 1)
		return rf_fail(err, errlen, "shape %dx%dx%d: B, L and D must be at least 1", s.B, s.L, s.D);
	if (s.D % mx->k)
		return rf_fail(err, errlen,
		               "shape %dx%dx%d: mixer %s has heads of %d channels, and %d is no multiple of %d", s.B,
		               s.L, s.D, mx->name, mx->k, s.D, mx->k);
	/* every buffer of rf_seq_alloc and the caller's [B][L][D], in doubles */
	size_t ld = rf_madd((size_t)s.L, (size_t)s.D, 0), H = (size_t)(s.D / mx->k);
	size_t total = rf_madd(ld, (size_t)s.B, 0);
	total = rf_madd(ld, 2 + (size_t)r->nplane, total);
	total = rf_madd(H, rf_madd((size_t)mx->nproj, (size_t)s.L, (size_t)mx->nparam), total);
	total = rf_madd(H, rf_scratch(r), total);
	total = rf_madd((size_t)s.L, 2, total); /* the row's reading of the state: 9 bytes a token */
	if (total == SIZE_MAX || total > SIZE_MAX / sizeof(double))
		return rf_fail(err, errlen, "shape %dx%dx%d: mixer %s's float64 buffers would not fit in memory", s.B,
		               s.L, s.D, mx->name);
	return 0;
}

/* ---- one sequence ---------------------------------------------------------- */

typedef struct {
	const RfMixer *r;
	RfShape s;
	int K, H;
	const double *const *p;
	double *const *dp;
	const double *x, *dy; /* this sequence: [L][D] */
	double *y, *dx;       /* this sequence, y NULL in the backward */
	double *h, *la;       /* [L][D]: the state and log_a */
	double *pblk;         /* [nplane][L][D]: block-diagonal projections */
	double *ptok;         /* [nproj][L]: token projections (the planes of the others unused) */
	double *dtok;         /* [H][nproj][L]: per head, the adjoints of the token projections */
	double *dscal;        /* [H][nparam]: per head, the gradients of scalar parameters */
	double *scratch;      /* [H][rf_scratch] */
	const SeqState *st;   /* never NULL: the caller's or an empty one */
	int b;                /* this row */
	unsigned char *first; /* [L]: 1 at a reset (the graph's first) */
	int *start;           /* [L]: the state (row of h0, dh0) continued from at t without a reset, else -1 */
	int *end;             /* [L]: the state (row of hT, dhT) whose last token is t, else -1 */
	int first0;           /* first at t = 0 under continuation (a mark only): the row's map */
} RfSeq;

static void rf_seq_free(RfSeq *q)
{
	free(q->h);
	free(q->la);
	free(q->pblk);
	free(q->ptok);
	free(q->dtok);
	free(q->dscal);
	free(q->scratch);
	free(q->first);
	free(q->start);
	free(q->end);
}

/* sizes were checked by rf_check_shape */
static int rf_seq_alloc(RfSeq *q, const RfMixer *r, RfShape s, char *err, size_t n)
{
	const Mixer *mx = &r->mx;
	size_t ld = (size_t)s.L * s.D, H = (size_t)(s.D / mx->k);
	memset(q, 0, sizeof *q);
	q->r = r;
	q->s = s;
	q->K = mx->k;
	q->H = (int)H;
	q->h = malloc(ld * sizeof(double));
	q->la = malloc(ld * sizeof(double));
	q->pblk = malloc((ld * r->nplane + 1) * sizeof(double));
	q->ptok = calloc((size_t)mx->nproj * s.L + 1, sizeof(double));
	q->dtok = calloc(H * mx->nproj * s.L + 1, sizeof(double));
	q->dscal = calloc(H * mx->nparam + 1, sizeof(double));
	q->scratch = malloc(H * rf_scratch(r) * sizeof(double));
	q->first = malloc((size_t)s.L);
	q->start = malloc((size_t)s.L * sizeof *q->start);
	q->end = malloc((size_t)s.L * sizeof *q->end);
	if (q->h && q->la && q->pblk && q->ptok && q->dtok && q->dscal && q->scratch && q->first && q->start && q->end)
		return 0;
	rf_seq_free(q);
	return rf_fail(err, n, "shape %dx%dx%d: out of memory for mixer %s's float64 reference", s.B, s.L, s.D,
	               mx->name);
}

/* Token projections of tokens [blk*64, blk*64+64): p[t] = bias + scale * sum_c w[c] x[t,c]. */
static void rf_token_block(void *ctx, int blk)
{
	RfSeq *q = ctx;
	const Mixer *mx = &q->r->mx;
	int L = q->s.L, D = q->s.D;
	for (int j = 0; j < mx->nproj; j++) {
		const MxProj *pj = &mx->proj[j];
		if (pj->kind != PJ_TOKEN)
			continue;
		const double *w = q->p[pj->weight];
		double scale = pj->scale_rsqrt_d ? 1 / sqrt((double)D) : 1.0;
		for (int t = blk * 64; t < L && t < (blk + 1) * 64; t++) {
			const double *xt = q->x + (size_t)t * D;
			double u = 0;
			for (int c = 0; c < D; c++)
				u += w[c] * xt[c];
			q->ptok[(size_t)j * L + t] = q->p[pj->bias][0] + scale * u;
		}
	}
}

/* Block-diagonal projections of head hd at token t into their planes. */
static void rf_project(RfSeq *q, int hd, int t)
{
	const Mixer *mx = &q->r->mx;
	int K = q->K, D = q->s.D;
	size_t row = (size_t)t * D;
	const double *xt = q->x + row + (size_t)hd * K;
	for (int j = 0; j < mx->nproj; j++) {
		if (q->r->plane[j] < 0)
			continue;
		const double *W = q->p[mx->proj[j].weight] + (size_t)hd * K * K, *bias = q->p[mx->proj[j].bias];
		double *out = q->pblk + (size_t)q->r->plane[j] * q->s.L * D + row + (size_t)hd * K;
		/* row by row of W: each column's sum adds the same terms in the same
		 * order as a dot product would, and the inner loop runs along W's
		 * contiguous row (vectorised; 4x faster at K = 256 than a column's
		 * dot product, a chain of dependent adds) */
		for (int k = 0; k < K; k++)
			out[k] = bias[hd * K + k];
		for (int i = 0; i < K; i++) {
			const double *Wi = W + (size_t)i * K;
			double xi = xt[i];
			for (int k = 0; k < K; k++)
				out[k] += xi * Wi[k];
		}
	}
}

/* The leaves at (t, c) other than h and the seeds. */
static void rf_env(const RfSeq *q, int t, int c, double *pc, double *pj, RfEnv *e)
{
	const Mixer *mx = &q->r->mx;
	size_t e_at = (size_t)t * q->s.D + c;
	for (int i = 0; i < mx->nparam; i++)
		pc[i] = mx->param[i].kind == PK_CHANNEL  ? q->p[i][c]
		        : mx->param[i].kind == PK_SCALAR ? q->p[i][0]
		                                         : NAN;
	for (int j = 0; j < mx->nproj; j++)
		pj[j] = q->r->plane[j] >= 0 ? q->pblk[(size_t)q->r->plane[j] * q->s.L * q->s.D + e_at]
		                            : q->ptok[(size_t)j * q->s.L + t];
	memset(e, 0, sizeof *e);
	e->x = q->x[e_at];
	e->first = q->first[t];
	e->param = pc;
	e->proj = pj;
}

static double *rf_head_scratch(const RfSeq *q, int hd)
{
	return q->scratch + (size_t)hd * rf_scratch(q->r);
}

/* h before (t, c): 0 at a reset, h0 where a sequence continues from it,
 * else h at t - 1. */
static double rf_hprev(const RfSeq *q, int t, int c)
{
	if (q->first[t])
		return 0.0;
	if (q->start[t] >= 0)
		return q->st->h0[(size_t)q->start[t] * q->s.D + c];
	return q->h[(size_t)t * q->s.D + c - q->s.D];
}

/* The forward of head hd: projections, gates, the scan and (when q->y) y. */
static void rf_forward_head(void *ctx, int hd)
{
	RfSeq *q = ctx;
	const RfMixer *r = q->r;
	const ExGraph *g = &r->mx.g;
	double *v = rf_head_scratch(q, hd), *pc = v + g->len, *pj = pc + r->mx.nparam;
	int D = q->s.D;
	for (int t = 0; t < q->s.L; t++) {
		rf_project(q, hd, t);
		for (int c = hd * q->K; c < (hd + 1) * q->K; c++) {
			size_t at = (size_t)t * D + c;
			RfEnv e;
			rf_env(q, t, c, pc, pj, &e);
			rf_run(g, &r->fwd, &e, v);
			double la = v[r->mx.log_a], hprev = rf_hprev(q, t, c);
			q->la[at] = la;
			q->h[at] = exp(la) * hprev + v[r->mx.b];
			if (q->y) {
				e.h = q->h[at];
				rf_run(g, &r->out, &e, v);
				q->y[at] = v[r->mx.y];
			}
		}
	}
}

static void rf_seq_forward(RfSeq *q)
{
	par_run((q->s.L + 63) / 64, rf_token_block, q);
	par_run(q->H, rf_forward_head, q);
}

/* What the state's adjoint at (t, c) receives from after t: a[t+1] dh[t+1]
 * along the chain (dh_next), cut where t + 1 starts a sequence (a reset or
 * h0) or the row ends; dhT at a sequence's last token; else 0. */
static double rf_carry(const RfSeq *q, int t, int c, double dh_next)
{
	size_t at = (size_t)t * q->s.D + c;
	if (t + 1 < q->s.L && !q->first[t + 1] && q->start[t + 1] < 0)
		return exp(q->la[at + q->s.D]) * dh_next;
	if (q->end[t] >= 0 && q->st->dhT)
		return q->st->dhT[(size_t)q->end[t] * q->s.D + c];
	return 0.0;
}

/* The adjoints at (t, c) of head hd, the state's adjoint carried in *dh:
 * dx, the projections' (block-diagonal ones into dP[plane]), the parameters'. */
static void rf_back_element(RfSeq *q, int hd, int t, int c, double *v, double *dh, double *dP)
{
	const RfMixer *r = q->r;
	const Mixer *mx = &r->mx;
	const ExGraph *g = &mx->g;
	double *pc = v + g->len, *pj = pc + mx->nparam;
	int D = q->s.D, L = q->s.L, k = c - hd * q->K;
	size_t at = (size_t)t * D + c;
	RfEnv e;
	rf_env(q, t, c, pc, pj, &e);
	e.h = q->h[at];
	e.seed[SEED_Y] = q->dy[at];
	rf_run(g, &r->dh, &e, v);
	*dh = v[r->g_h] + rf_carry(q, t, c, *dh);
	e.seed[SEED_B] = *dh;
	e.seed[SEED_LA] = !q->first[t] ? *dh * exp(q->la[at]) * rf_hprev(q, t, c) : 0.0;
	if (q->start[t] >= 0 && q->st->dh0)
		q->st->dh0[(size_t)q->start[t] * D + c] = exp(q->la[at]) * *dh;
	rf_run(g, &r->bwd, &e, v);
	q->dx[at] = v[r->g_x];
	for (int j = 0; j < mx->nproj; j++) {
		if (r->plane[j] >= 0)
			dP[(size_t)r->plane[j] * q->K + k] = v[r->g_proj[j]];
		else
			q->dtok[((size_t)hd * mx->nproj + j) * L + t] += v[r->g_proj[j]];
	}
	for (int i = 0; i < mx->nparam; i++) {
		if (mx->param[i].kind == PK_CHANNEL)
			q->dp[i][c] += v[r->g_param[i]];
		else if (mx->param[i].kind == PK_SCALAR)
			q->dscal[(size_t)hd * mx->nparam + i] += v[r->g_param[i]];
	}
}

/* The block-diagonal projections of head hd at token t, backwards: their
 * adjoints dP into the bias, the weight and dx. */
static void rf_project_back(RfSeq *q, int hd, int t, const double *dP)
{
	const Mixer *mx = &q->r->mx;
	int K = q->K;
	size_t row = (size_t)t * q->s.D + (size_t)hd * K;
	for (int j = 0; j < mx->nproj; j++) {
		if (q->r->plane[j] < 0)
			continue;
		const double *d = dP + (size_t)q->r->plane[j] * K;
		const double *W = q->p[mx->proj[j].weight] + (size_t)hd * K * K;
		double *dW = q->dp[mx->proj[j].weight] + (size_t)hd * K * K, *db = q->dp[mx->proj[j].bias];
		for (int k = 0; k < K; k++)
			db[hd * K + k] += d[k];
		for (int i = 0; i < K; i++) {
			double xi = q->x[row + i];
			for (int k = 0; k < K; k++)
				dW[(size_t)i * K + k] += xi * d[k];
		}
		/* dx's share of row i: sum_k W[i][k] d[k] in the order of k, 8 rows'
		 * sums at once (independent adds, not one chain) */
		enum { ROWS = 8 };
		for (int i0 = 0; i0 < K; i0 += ROWS) {
			int n = K - i0 < ROWS ? K - i0 : ROWS;
			const double *Wi = W + (size_t)i0 * K;
			double acc[ROWS] = { 0 };
			for (int k = 0; k < K; k++)
				for (int r = 0; r < n; r++)
					acc[r] += Wi[(size_t)r * K + k] * d[k];
			for (int r = 0; r < n; r++)
				q->dx[row + i0 + r] += acc[r];
		}
	}
}

static void rf_backward_head(void *ctx, int hd)
{
	RfSeq *q = ctx;
	const RfMixer *r = q->r;
	double *v = rf_head_scratch(q, hd);
	double *dh = v + r->mx.g.len + r->mx.nparam + r->mx.nproj, *dP = dh + q->K;
	for (int t = q->s.L - 1; t >= 0; t--) {
		for (int c = hd * q->K; c < (hd + 1) * q->K; c++)
			rf_back_element(q, hd, t, c, v, &dh[c - hd * q->K], dP);
		rf_project_back(q, hd, t, dP);
	}
}

/* Channels [blk*K, blk*K+K) of the token projections, backwards: dx and the weights. */
static void rf_token_back_block(void *ctx, int blk)
{
	RfSeq *q = ctx;
	const Mixer *mx = &q->r->mx;
	int L = q->s.L, D = q->s.D;
	for (int j = 0; j < mx->nproj; j++) {
		const MxProj *pj = &mx->proj[j];
		if (pj->kind != PJ_TOKEN)
			continue;
		const double *w = q->p[pj->weight], *d = q->dtok + (size_t)j * L; /* head 0's plane holds the sums */
		double *dw = q->dp[pj->weight], scale = pj->scale_rsqrt_d ? 1 / sqrt((double)D) : 1.0;
		for (int t = 0; t < L; t++)
			for (int c = blk * q->K; c < (blk + 1) * q->K; c++) {
				q->dx[(size_t)t * D + c] += scale * w[c] * d[t];
				dw[c] += scale * d[t] * q->x[(size_t)t * D + c];
			}
	}
}

/* What crosses heads, summed in head order: scalar gradients and the token
 * projections' adjoints (into head 0's plane), then their backward. */
static void rf_seq_gather(RfSeq *q)
{
	const Mixer *mx = &q->r->mx;
	size_t L = (size_t)q->s.L, np = (size_t)mx->nproj;
	for (int i = 0; i < mx->nparam; i++)
		for (int hd = 0; hd < q->H; hd++)
			if (mx->param[i].kind == PK_SCALAR)
				q->dp[i][0] += q->dscal[(size_t)hd * mx->nparam + i];
	for (size_t j = 0; j < np; j++) {
		if (mx->proj[j].kind != PJ_TOKEN)
			continue;
		for (int hd = 1; hd < q->H; hd++)
			for (size_t t = 0; t < L; t++)
				q->dtok[j * L + t] += q->dtok[((size_t)hd * np + j) * L + t];
		for (size_t t = 0; t < L; t++)
			q->dp[mx->proj[j].bias][0] += q->dtok[j * L + t];
	}
	par_run(q->H, rf_token_back_block, q);
	memset(q->dscal, 0, (size_t)q->H * mx->nparam * sizeof(double));
	memset(q->dtok, 0, (size_t)q->H * np * L * sizeof(double));
}

/* ---- the state ----------------------------------------------------------------- */

/* The cu_seqlens form (one row): document i is state i; its first token
 * is a reset without h0, else it continues from h0[i]. */
static void rf_read_docs(RfSeq *q)
{
	const SeqState *st = q->st;
	for (int i = 0; i < st->ndocs; i++) {
		int t0 = st->cu_seqlens[i];
		if (st->h0)
			q->start[t0] = i;
		else
			q->first[t0] = 1;
		q->end[st->cu_seqlens[i + 1] - 1] = i;
	}
	q->first0 = 0; /* no map in this form */
}

/* The reset/h0 form: row b is state b; its marks are resets; t = 0 is one
 * too without h0 (a mark there wins over h0). */
static void rf_read_row(RfSeq *q, int b)
{
	const SeqState *st = q->st;
	int L = q->s.L;
	if (st->reset)
		memcpy(q->first, st->reset + (size_t)b * L, (size_t)L);
	q->first0 = q->first[0];
	if (!st->h0)
		q->first[0] = 1;
	else if (!q->first[0])
		q->start[0] = b;
	q->end[L - 1] = b;
}

/* Row b's reading of the state, token by token. */
static void rf_read_state(RfSeq *q, int b)
{
	q->b = b;
	memset(q->first, 0, (size_t)q->s.L);
	for (int t = 0; t < q->s.L; t++)
		q->start[t] = q->end[t] = -1;
	if (q->st->cu_seqlens)
		rf_read_docs(q);
	else
		rf_read_row(q, b);
}

/* hT of every state whose last token is in this row. */
static void rf_seq_final(const RfSeq *q)
{
	size_t D = (size_t)q->s.D;
	for (int t = 0; t < q->s.L; t++)
		if (q->end[t] >= 0)
			memcpy(q->st->hT + (size_t)q->end[t] * D, q->h + (size_t)t * D, D * sizeof(double));
}

/* The row's map on head hd (seqstate.h): log_a and b again from the
 * graph, with first only where marked, log_a summed in token order and
 * the scan run from h_in = 0, each step as the forward's. */
static void rf_map_head(void *ctx, int hd)
{
	RfSeq *q = ctx;
	const RfMixer *r = q->r;
	const ExGraph *g = &r->mx.g;
	double *v = rf_head_scratch(q, hd), *pc = v + g->len, *pj = pc + r->mx.nparam;
	size_t row = (size_t)q->b * q->s.D;
	for (int c = hd * q->K; c < (hd + 1) * q->K; c++) {
		double sum = 0, h = 0;
		for (int t = 0; t < q->s.L; t++) {
			RfEnv e;
			rf_env(q, t, c, pc, pj, &e);
			e.first = t ? q->first[t] : q->first0;
			rf_run(g, &r->fwd, &e, v);
			double la = v[r->mx.log_a];
			sum = e.first != 0.0 ? -INFINITY : sum + la;
			h = exp(la) * (e.first != 0.0 ? 0.0 : h) + v[r->mx.b];
		}
		if (q->st->map_loga)
			q->st->map_loga[row + c] = sum;
		if (q->st->map_h)
			q->st->map_h[row + c] = h;
	}
}

/* ---- the calls --------------------------------------------------------------- */

/* The shape and the state checked, the buffers of one row allocated. */
static int rf_begin(const RfMixer *r, RfShape s, const SeqState *st, RfSeq *q, char *err, size_t errlen)
{
	static const SeqState none;
	if (rf_check_shape(r, s, err, errlen))
		return -1;
	if (seqstate_check(st, s.B, s.L, s.D, err, errlen)) {
		char why[512];
		snprintf(why, sizeof why, "%s", err);
		return rf_fail(err, errlen, "mixer %s at %dx%dx%d: %s", r->mx.name, s.B, s.L, s.D, why);
	}
	if (rf_seq_alloc(q, r, s, err, errlen))
		return -1;
	q->st = st ? st : &none;
	return 0;
}

int rf_forward_state(const RfMixer *r, RfShape s, const double *const *p, const double *x, double *y,
                     const SeqState *st, char *err, size_t errlen)
{
	RfSeq q;
	if (rf_begin(r, s, st, &q, err, errlen))
		return -1;
	q.p = p;
	size_t n = (size_t)s.L * s.D;
	for (int b = 0; b < s.B; b++) {
		q.x = x + b * n;
		q.y = y + b * n;
		rf_read_state(&q, b);
		rf_seq_forward(&q);
		if (q.st->hT)
			rf_seq_final(&q);
		if (q.st->map_loga || q.st->map_h)
			par_run(q.H, rf_map_head, &q);
	}
	rf_seq_free(&q);
	return 0;
}

int rf_forward(const RfMixer *r, RfShape s, const double *const *p, const double *x, double *y, char *err,
               size_t errlen)
{
	return rf_forward_state(r, s, p, x, y, NULL, err, errlen);
}

int rf_backward_state(const RfMixer *r, RfShape s, const double *const *p, const double *x, const double *dy,
                      double *dx, double *const *dp, const SeqState *st, char *err, size_t errlen)
{
	RfSeq q;
	if (rf_begin(r, s, st, &q, err, errlen))
		return -1;
	for (int i = 0; i < r->mx.nparam; i++)
		memset(dp[i], 0, (size_t)rf_param_count(r, i, s) * sizeof(double));
	if (q.st->dh0)
		memset(q.st->dh0, 0, (size_t)seqstate_nstates(st, s.B) * s.D * sizeof(double));
	q.p = p;
	q.dp = dp;
	size_t n = (size_t)s.L * s.D;
	for (int b = 0; b < s.B; b++) {
		q.x = x + b * n;
		q.dy = dy + b * n;
		q.dx = dx + b * n;
		q.y = NULL;
		rf_read_state(&q, b);
		rf_seq_forward(&q);
		par_run(q.H, rf_backward_head, &q);
		rf_seq_gather(&q);
	}
	rf_seq_free(&q);
	return 0;
}

int rf_backward(const RfMixer *r, RfShape s, const double *const *p, const double *x, const double *dy, double *dx,
                double *const *dp, char *err, size_t errlen)
{
	return rf_backward_state(r, s, p, x, dy, dx, dp, NULL, err, errlen);
}

/* ---- the evaluator against ex_eval ------------------------------------------- */

static double rf_reldiff(double a, double b)
{
	if (a == b || (isnan(a) && isnan(b)))
		return 0;
	return fabs(a - b) / fmax(fabs(b), 1e-300);
}

double rf_selfcheck(const RfMixer *r, double x, double h, double first, const double *param, const double *proj,
                    const double *seed)
{
	const Mixer *mx = &r->mx;
	const ExGraph *g = &mx->g;
	RfEnv e = {x, h, first, param, proj, {seed[0], seed[1], seed[2]}};
	ExEnv ee = {x, h, first, param, proj, seed, NULL};
	double *v = malloc(((size_t)g->len + 1) * sizeof *v), worst = 0;
	if (!v)
		return INFINITY;
	const RfTape *tp[4] = {&r->fwd, &r->out, &r->dh, &r->bwd};
	for (int k = 0; k < 4; k++) {
		rf_run(g, tp[k], &e, v);
		/* every node the tape evaluated, the roots among them */
		for (int i = 0; i < tp[k]->n; i++) {
			int id = tp[k]->id[i];
			double d = rf_reldiff(v[id], ex_eval(g, id, &ee));
			worst = d > worst || isnan(d) ? d : worst;
		}
	}
	free(v);
	return worst;
}
