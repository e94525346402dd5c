/* A mixer and its variant grid, as a script declares them.
 *
 * This is the whole interface between the Lua side (script/script.c) and the
 * kernel templates: the templates see parameters, projections and three
 * expression roots, never a mixer's name.
 */
#ifndef RECUR_MIXER_H
#define RECUR_MIXER_H

#include <stdbool.h>
#include "expr.h"

#define MX_NAME 48
#define MX_MAXPARAM 16
#define MX_MAXPROJ 8
#define MX_MAXVAR 64
#define MX_MAXRULE 8
/* Nodes of a mixer's three expressions together (log_a, b and y): every
 * node is evaluated per element in several kernels, and LLVM's time grows
 * faster than linearly with them (about 15 s per variant at 2000); the
 * shipped mixers have under 30. */
#define MX_MAXNODES 1024
#define MX_PATH 4096   /* a script's path, as given */

typedef enum {
	PK_CHANNEL,    /* [D] fp32, one value per channel */
	PK_BLOCKDIAG,  /* [H][K][K] fp32, weight of a block-diagonal projection, [h][in][out] */
	PK_SCALAR      /* one fp32 value */
} ParamKind;

typedef enum {
	INIT_ZEROS,
	INIT_CONST,    /* a */
	INIT_NORMAL,   /* std = a, or 1/sqrt(K) when a_is_rsqrt_k */
	INIT_DECAY     /* lam = log(exp(-0.5*log(u)) - 1), u ~ U[a, b] (RecurrentGemma's a_param) */
} InitKind;

typedef struct {
	char name[MX_NAME];
	ParamKind kind;
	InitKind init;
	double a, b;
	bool a_is_rsqrt_k;
	int line;          /* script line that declared it, for messages */
} MxParam;

typedef enum {
	PJ_BLOCKDIAG,  /* p[t, h*K+j] = sum_i x[t, h*K+i] W[h][i][j] + bias[h*K+j] */
	PJ_TOKEN       /* p[t] = bias + scale * sum_c w[c] x[t,c]   (per token; scale = 1/sqrt(D) when scale_rsqrt_d) */
} ProjKind;

typedef struct {
	char name[MX_NAME];
	ProjKind kind;
	int weight, bias;  /* parameter indices */
	bool scale_rsqrt_d;
	int line;
} MxProj;

typedef struct {
	char name[MX_NAME];
	int k;                         /* channels per head (64) */
	MxParam param[MX_MAXPARAM];
	int nparam;
	MxProj proj[MX_MAXPROJ];
	int nproj;
	ExGraph g;
	int log_a, b, y;               /* expression roots */
	char controller[MX_NAME];      /* "" for none (written as JSON null) */
	char dyn_per_token[MX_NAME];   /* dynamic control values per token, as a shape expression ("2*D", "2") */
	char script[MX_PATH];          /* file that declared it */
	int line;                      /* its line of R.mixer */
	int rec_line, out_line;        /* its lines of m:recurrence and m:output, for messages */
} Mixer;

/* One point of the variant grid. */
typedef struct {
	char name[128];
	int chunk, prefix;
	bool fused;            /* gates computed inside the scan kernels */
	bool shared_sfu, fused_output, fused_write;
	bool resets;           /* the kernels take per-token reset marks (state:reset, util/seqstate.h) */
	bool states;           /* and initial and final states (state:h0, hT, dhT, dh0) */
	bool map;              /* and the row's map (state:map_loga, map_h; util/seqstate.h): states true */
	bool docs;             /* packed documents with a state each (cu_seqlens, util/seqstate.h): every
	                        * sequence start and end handled per token (templates/docs.c); its marks
	                        * (resets true) come from the kernel docs_prep, states false */
	bool materialized;     /* writes a [B,L,D] tensor of a or b to memory */
	bool lookback;         /* forward carries across tiles by look-back in one kernel (scan "lookback", "onepass") */
	bool onepass;          /* and the backward across groups in bwd_apply alone (scan "onepass") */
	bool decode;           /* a decode step (scan "decode", R.decode): a forward only, which advances
	                        * states in place by the call's tokens (state:h0, hT, index) */
	bool mma;              /* a decode step whose projections run on tensor cores (R.decode's mma) */
	bool rows;             /* a decode step of one kernel, a block per row over the whole width, the
	                        * token stage inside it (R.decode's rows; templates/decode_rows.c) */
	bool apart;            /* the block-diagonal projections run in kernels of their own, stored for the
	                        * scans (templates/proj.c): heads of K != 64 channels, or asked for */
	bool scan_proj;        /* apart, but the forward's projections inside fwd_scan on wgmma (sm_90a;
	                        * templates/scan_proj.c): no proj_fwd */
	bool proj_ahead;       /* scan_proj's fwd_scan in resident blocks, a producer warpgroup projecting
	                        * the tile the quads sweep next (templates/scan_proj.c) */
	bool recompute;        /* apart, but the forward keeps no projection for the backward: the
	                        * backward runs proj_fwd again first (workspace life "each") */
	char controller[MX_NAME];
	char file[MX_PATH];    /* script file and line of the grid declaration */
	int line;
} Variant;

/* A shape rule: the runtime refuses a shape for which expr (in the shape
 * language of util/shapex.h, over B, L, D, K and H) evaluates to 0, with
 * message. */
typedef struct {
	char expr[128];
	char message[160];
} Rule;

typedef struct {
	Mixer mixer;
	Variant var[MX_MAXVAR];
	int nvar;
	Rule rule[MX_MAXRULE];
	int nrule;
} VariantSet;

#endif
