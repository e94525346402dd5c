/* Kernel templates: shared geometry and building blocks.
 *
 * Every variant's scan kernels work on a head (64 channels of one sequence;
 * with the projections apart, proj.c, 64 channels of a wider head) and a
 * time tile of T = chunk * prefix steps. A block holds TW "quads" of 4 warps;
 * warp w of a quad owns channels 16w..16w+15 of the head. Projections run on
 * tensor cores with time as the M dimension: at step i a warp multiplies 16
 * rows of x (one per chunk) by the head's weight block, so lane (g, q) of the
 * mma accumulator holds rows g and g+8 for channels 2q, 2q+1 (+8): eight
 * "slots" (row r in {0,1} x channel c in {0..3}) per lane. Row r*8+g is
 * chunk r*8+g of the group, and step i is its i-th timestep, so each slot
 * scans `chunk` consecutive timesteps sequentially -- the mma layout and the
 * sequential scan agree, with no transposition through shared memory.
 *
 * Levels of the hierarchical scan:
 *   lane:   a slot folds its chunk of C steps into an affine map (A, B);
 *   warp:   16 chunks of a group are combined with shuffles (8 lanes x 2 rows);
 *   block:  groups of a quad compose in order; quads combine through shared
 *           memory, so the P = 16 * groups * quads chunks of a tile form one prefix;
 *   grid:   tiles are combined by a carry kernel over per-tile aggregates.
 * The backward runs the same machinery in reverse time on the maps
 * u -> a*(g + u) of the adjoint, recomputing h inside each chunk from
 * per-group checkpoints written by the forward.
 *
 * The inputs a step reads (x rows, dy rows, per-token values) are staged in
 * shared memory a segment of up to 8 steps at a time, one burst of 16-byte
 * loads per thread (seg_stage), so a chunk waits on memory once per segment.
 *
 * Mixers with per-token projections (reductions over the whole width) get a
 * token stage (token.c): a controller pass before the scan, and after the
 * backward scan a pass that sums the per-token adjoints the scan kernels
 * left per head and adds the projections' share of dx.
 */
#ifndef RECUR_TMPL_H
#define RECUR_TMPL_H

#include "irb.h"
#include "mixer.h"
#include "emit_expr.h"
#include "target.h"

#define TM_MAXARG 48
#define TM_SLOTS 8
#define TM_MAXZ 8       /* per-token values of a mixer */

/* A kernel signature: LLVM parameter types beside the manifest's arg strings. */
typedef struct {
	LLVMTypeRef ty[TM_MAXARG];
	char arg[TM_MAXARG][64];
	int n;
} KSig;

/* One kernel launch as the manifest describes it. */
typedef struct {
	char kernel[96];
	char grid[3][64];
	int block;
	int minblocks;        /* blocks per SM ptxas must fit (registers), 0 = 1 */
	char smem[64];
	char cluster[16];     /* blocks per thread-block cluster along x, a shape expression ("" = none) */
	char bytes_extra[64]; /* bytes beyond one touch of each tensor and workspace argument ("" = none) */
	char bytes_unread[16];/* an argument of the signature the kernel never touches ("" = none) */
	char flops[48];       /* tensor-core FLOP of its math ("" = none): launch_flops */
	int resident;         /* its blocks wait on each other: all must be resident at once where grid x > 1 */
	int clears;           /* it clears the arena of zeroed workspaces (tmpl_clear_args): the forward's first */
	int early;            /* it waits for the kernel ahead of it itself (tmpl_open's grid_dep_wait), so
	                       * the runtime may launch it while that one still runs */
	KSig sig;
} Launch;

/* A shape variable: a name the plan's expressions use, and its expression
 * in B, L, D and the variables before it. */
typedef struct {
	char name[8];
	char expr[2048];
} ShapeVar;

/* A rule every shape must meet, with the message that says why. */
typedef struct {
	const char *expr;
	const char *message;
} ShapeRule;

#define TM_MAXVAR 24
#define TM_MAXRULE 4

typedef struct {
	char name[112];
	char bytes[96];
	const char *life;     /* "forward", "saved", "backward", or "each" (made and used inside each pass) */
	int zero;
} Workspace;

/* The state of the one kernel being built: set by tmpl_open (and by the
 * kernel itself after it), read by the building blocks, reset by the next
 * kernel's tmpl_open. Nothing here outlives its kernel. */
typedef struct {
	int threads;              /* block size */
	int gates_inline;         /* it computes the gates (bwd_apply always: it needs the projections' adjoints) */
	int proj_inline;          /* it runs the block-diagonal projections on tensor cores: where it computes
	                           * the gates, and where it reads them from memory (unfused: only log_a and
	                           * b are materialised) but evaluates beside them an output or a dy/dh that
	                           * reads a projection (kern_proj) */
	int slots_adjacent;       /* lane q's slots are channels 4q .. 4q+3 of its warp's 16 (ln->ch), the
	                           * projections' columns permuted to match */
	LLVMValueRef ticket_thb[3]; /* tile, head, b from a ticket (lb_ticket), else NULL */
	LLVMValueRef grid_nt;     /* the tiles NT of a persistent kernel, whose grid is not its tiles
	                           * (kern_nt; NULL: nctaid.x) */
	LLVMValueRef *inv_memo;   /* 8 x graph length: the hoisted lane-invariant values (lanes_init) */
	int docs_quiet;           /* docs: the code being emitted covers tokens with no start or end
	                           * (emit_split_docs): no state is read or written */
	int marks_quiet;          /* resets: the code being emitted covers tokens with no reset mark
	                           * (emit_split_docs): none is read or staged */
	int gates_half;           /* the gates' weight fragments held in registers are halved, and the
	                           * biases that start their accumulators: the projections end at z / 2,
	                           * the sigmoid's tanh argument (where bd_sig_all; fwd_scan, bwd_apply) */
} Kern;

/* One variant's templates: its configuration and geometry (tmpl_setup), the
 * stage split and derivatives (tmpl_derive), the plan the kernels declare
 * (launches, workspaces), and the kernel being built. */
typedef struct {
	Mixer *mx;            /* the caller's copy: derivation adds nodes to its graph */
	const Variant *v;
	Irb I;
	/* geometry: a block holds `quads` quads of 4 warps, each composing
	 * `quad_groups` groups of 16 chunks of `chunk` steps: a tile of
	 * chunk * prefix steps. The backward walks a chunk in segments of `seg`
	 * steps. */
	int chunk, prefix, quads, quad_groups, seg;
	/* the target has no thread-block clusters, distributed shared memory
	 * or programmatic dependent launch (sm_80, sm_86, sm_89): bwd_apply's
	 * blocks each write their own weight-gradient slot, and no kernel is
	 * launched early. Set by the caller after tmpl_setup. */
	int portable;
	/* the target is sm_90a: the projections apart may run on wgmma
	 * (proj_wg.c). Set by the caller after tmpl_setup. */
	int wgmma;
	/* the target's shared memory an SM, bytes (target_smem_sm; sm_90's
	 * unless the caller sets another after tmpl_setup): what the kernels'
	 * layouts are sized by (smem_blk_max, smem_2blk) */
	int smem_sm;
	int nbdproj;                /* block-diagonal projections the scan kernels run (none where apart) */
	int bdproj[MX_MAXPROJ];     /* their projection indices */
	/* Projections apart (Variant.apart, proj.c): the block-diagonal
	 * projections, run by kernels of their own into fp32 workspaces the
	 * scans read, their adjoints stored by bwd_apply and taken back to dx
	 * and dW by kernels of their own. The scans then see them as inputs,
	 * as a mixer without projections sees x: nbdproj is 0. */
	int napj;
	int apj[MX_MAXPROJ];        /* their projection indices */
	/* Token stage (mixers with per-token projections): the values tokval[k]
	 * of the token stage (nodes over token projections and scalar
	 * parameters) are computed once per token by the controller pass; the
	 * element stage sees them as EX_TOK leaves. With shared_sfu they are the
	 * largest token-only subexpressions (softplus(u), sigmoid(v), ...),
	 * otherwise the raw projections, and every element recomputes the
	 * special functions. */
	int ntokproj, tokproj[MX_MAXPROJ];  /* token projections */
	int ntokval, tokval[TM_MAXZ];
	int tok_over;             /* token values the split wanted beyond TM_MAXZ (tmpl_check refuses them) */
	int e_log_a, e_b, e_y;    /* element-stage roots */
	int g_tok[TM_MAXZ];       /* element adjoints of the token values */
	int tg_proj[MX_MAXPROJ];  /* token stage: adjoint of projection tokproj[j] for seeds EX_SEED(3 + k) on tokval[k] */
	int tg_param[MX_MAXPARAM];
	/* derivative graph: adjoints of leaves for seeds (dlog_a, db, dy) */
	int seed[3];
	int g_x, g_h;
	int g_proj[MX_MAXPROJ];
	/* a projection apart that the element math reads only through sigmoid:
	 * proj_fwd stores sigmoid(P) as fp16 (no exp or division per step in
	 * the scans, and 1.7-3.1x less rounding than bf16 P), the scans read it
	 * as the sigmoid's value (indexed by projection idx; 0 for the others) */
	unsigned char pj_sig[MX_MAXPROJ];
	/* the same of a block-diagonal projection the scans run (bdproj), and
	 * whether every one of them is so: their gates may then take z / 2
	 * from halved weights (Kern.gates_half) */
	unsigned char bd_sig[MX_MAXPROJ];
	int bd_sig_all;
	int g_param[MX_MAXPARAM];
	int derived;              /* tmpl_derive has run */
	unsigned char *inv_node;  /* lane-invariant nodes of the graph (ex_invariants), set by tmpl_derive */
	/* plan */
	Launch fwd[8], bwd[8];
	int nfwd, nbwd;
	Workspace ws[32];         /* at most 10 of the scan, 1 per block-diagonal projection (8), 3 of the
	                           * partials, 6 of the token stage */
	int nws;
	ShapeVar var[TM_MAXVAR];
	int nvar;
	ShapeRule rule[TM_MAXRULE];
	int nrule;
	char rule_text[2][128];   /* a rule's expression and message where they depend on the mixer */
	char kname[64];           /* kernel name prefix: the mixer's name */
	Kern k;                   /* the kernel being built */
} Tmpl;

/* Per-kernel lane geometry and loaded parameters. */
typedef struct {
	LLVMValueRef tid, warp, lane, g, q, quad, w;
	LLVMValueRef tile, b, head, L, D;         /* the block's time tile (lane_tile), sequence and head */
	LLVMValueRef x, y, dy, dx;                 /* tensors (global ptrs), NULL if not an arg */
	LLVMValueRef param[MX_MAXPARAM];           /* global ptrs */
	LLVMValueRef chan[MX_MAXPARAM][4];         /* per-channel params for the lane's 4 channels */
	LLVMValueRef scal[MX_MAXPARAM];            /* scalar params */
	LLVMValueRef wfrag[MX_MAXPROJ][4][2][2];   /* gate mma B fragments [proj][ks][nt][reg] */
	LLVMValueRef bias[MX_MAXPROJ][4];          /* bias per lane channel */
	LLVMValueRef ch[4];                        /* channel within the head for c = 0..3 */
	LLVMValueRef la_ws, b_ws;                  /* materialised log_a / b (unfused) */
	LLVMValueRef pws[MX_MAXPROJ];              /* the projections apart, bf16 [B][L][D] (T->apj order) */
	LLVMValueRef wimg;                         /* scan_proj: the weights' bf16 image (ws:wimg), or NULL */
	LLVMValueRef xmap;                         /* proj_ahead's producer: x's tensor map (SP_XMAP) */
	LLVMValueRef pmap[MX_MAXPROJ];             /* and the projections' (sp_pmap_arg) */
	LLVMValueRef tok;                          /* per-token values [B*L][nz] */
	LLVMValueRef reset, reset_row;             /* reset marks u8 [B][L] (state:reset) and row b's, or NULL */
	LLVMValueRef h0;                           /* initial states fp32 [B][D] (state:h0), or NULL */
	LLVMValueRef dcode;                        /* docs: each token's code i32 [B][L] (ws:dcode, docs.c) */
	LLVMValueRef hT, dhT, dh0;                 /* docs: the states a sequence's end and start store and read */
	int wmat_smem;                             /* >= 0: weights are read from shared memory (wmat_stage) here */
	int seg_off;                               /* >= 0: segment staging (seg_stage) at this offset */
	int seg_n, seg_flags, seg_step;            /* steps per segment, what is staged (SEG_*), bytes per step */
	LLVMValueRef seg_i0;                       /* first step of the staged segment */
	int seg_keep;                              /* the buffer already holds the next segment: do not stage */
	int keep_staged;                           /* fwd: kept step maps in the staged projections' bytes (pj_keep_at) */
	int full;                                  /* the code being emitted covers steps inside the sequence only (in_seq) */
	LLVMBasicBlockRef hoist;                   /* lane-invariant values are emitted here (slot_env) */
	/* the projections apart loaded a step ahead (pj_ahead_begin): a step
	 * takes these and loads the next one's, dir steps on */
	struct { int on, dir; Var v[MX_MAXPROJ][2][2]; } pja;   /* [j][row][pair] */
} Lanes;

/* Values of one gate step for the 8 slots. */
typedef struct {
	LLVMValueRef t[2];          /* timestep of row r */
	LLVMValueRef valid[2];      /* t < L */
	LLVMValueRef x[TM_SLOTS];
	LLVMValueRef first[TM_SLOTS];   /* 1.0 at t = 0: with the marks, read step_first / step_isfirst */
	LLVMValueRef mark[2];           /* i1: the caller marks row r's token a reset (step_marks), or NULL */
	int marked;                     /* the marks are loaded, or the variant takes none */
	LLVMValueRef proj[TM_SLOTS][MX_MAXPROJ];
	int proj_half;              /* proj holds z / 2 of every bd_sig projection (Kern.gates_half) */
	LLVMValueRef log_a[TM_SLOTS], bb[TM_SLOTS], a[TM_SLOTS];
	LLVMValueRef a_eff[TM_SLOTS], b_eff[TM_SLOTS];   /* identity when invalid, a=0 at a reset */
	LLVMValueRef xs;            /* staged x tile of this step (shared byte offset), when staged */
	LLVMValueRef tok[2][TM_MAXZ];   /* per-token values of row r */
	LLVMValueRef seg;           /* the step's staged segment entry, when staged */
	LLVMValueRef code[2];       /* docs: row r's token code (docs.c), 0 past L; with the marks (step_marks) */
	LLVMValueRef dhT_in[TM_SLOTS];   /* docs: dhT[doc] at an end, else 0; fetched at the first eval_gy */
} Step;

/* A staged step's 16 rows x 64 bf16 (x or dy). Rows are padded to 144
 * bytes so that the eight rows an ldmatrix or a fragment load reads hit
 * distinct banks; with SEG_SWZ they are 128 bytes with their 16-byte
 * blocks swizzled instead (block b of row r at b ^ (r & 7)): the same
 * banks without the padding, for bwd_apply whose second block per SM is
 * short of shared memory (the address math costs registers elsewhere) */
#define XS_ROW 144
#define XS_BUF (16 * XS_ROW)

/* Segment staging: every input a step reads from memory (x rows, dy rows,
 * per-token values) for n consecutive steps is loaded by one burst of
 * independent loads per thread, then read from shared memory: one memory
 * latency per n steps instead of one per step. Per quad, per step: x rows,
 * [dy rows], [the projections apart: napj x 16 rows, copied by cp.async,
 * no registers], [16 x nz floats], [16 reset marks, one byte per row]. */
enum { SEG_X = 1, SEG_DY = 2, SEG_TOK = 4, SEG_SWZ = 8, SEG_MARK = 16, SEG_PJ = 32 };
/* (token values are staged whenever the mixer has them, reset marks
 * whenever the variant takes them) */
/* whether a kernel stages the projections apart (SEG_PJ): on sm_90, whose
 * SMs hold two blocks of the larger buffers (Ampere and Ada load them a
 * step at a time, or a step ahead) */
int seg_pj(const Tmpl *T);
/* byte offset of a part (SEG_X, SEG_DY, SEG_PJ, 0 = the whole step,
 * SEG_TOK token values, SEG_MARK reset marks) in a staged step of these
 * flags */
int seg_part(const Tmpl *T, int flags, int part);
int seg_bytes(const Tmpl *T, int n, int flags);   /* per quad */
/* a staged row's reset mark: its bytes (a docs variant's token code, 4) and
 * the byte offset of row `row`'s in the staged step at seg */
int seg_mark_size(const Tmpl *T);
LLVMValueRef seg_mark_at(Tmpl *T, const Lanes *ln, LLVMValueRef seg, LLVMValueRef row);
int seg_len(const Tmpl *T);                       /* steps per segment: min(C, 8) */
void seg_enable(Tmpl *T, Lanes *ln, int off, int n, int flags);
/* for i in [0, end) of the group at gb, segment by segment (staging must be
 * on): returns i inside the inner loop; the caller's body goes between
 * begin and end */
LLVMValueRef seg_loop_begin(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end);
LLVMValueRef seg_loop_begin_n(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end, int n);
void seg_loop_end(Tmpl *T, Loop *Ls, Loop *L);
/* stages steps i0 .. i0+n-1 of the group starting at row gb (quad barriers on both sides) */
void seg_stage(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i0);
/* shared byte offset of step i's staged entry (x rows first) */
LLVMValueRef seg_step_at(Tmpl *T, Lanes *ln, LLVMValueRef i);
/* byte offset of 16-byte block blk of a staged row */
LLVMValueRef xs_at(Irb *I, const Lanes *ln, LLVMValueRef row, LLVMValueRef blk);
/* element index of x[b][t][head*64 + k] */
LLVMValueRef xidx(Tmpl *T, Lanes *ln, LLVMValueRef t, LLVMValueRef k);
/* the bf16 of the lane's four slots of a staged row, as two pairs */
void xs_slots(Tmpl *T, const Lanes *ln, LLVMValueRef base, LLVMValueRef row, LLVMValueRef pr[2]);
/* dy of the 8 slots, from the staged segment (staged with SEG_DY) */
void load_dy(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef dy[TM_SLOTS]);
/* shared byte offset of projection j's rows in a step staged with SEG_PJ */
LLVMValueRef pj_staged_at(Tmpl *T, const Lanes *ln, const Step *st, int j);
/* where the thread keeps a 4-byte word for slot s of staged step k, once
 * the step has read its projections: in the 8 bytes of each of two
 * projections' two rows that this thread alone reads (napj >= 2, slots on
 * adjacent channels) */
LLVMValueRef pj_keep_at(Tmpl *T, Lanes *ln, LLVMValueRef k, int s);

/* an affine map per slot: h -> A h + B (forward) or u -> A u + B (adjoint) */
typedef struct { Var A[TM_SLOTS], B[TM_SLOTS]; } Maps;

/* a new launch of the forward (fwd = 1) or backward plan, and its kernel opened for building */
Launch *tmpl_launch(Tmpl *T, int fwd, const char *kname, const char *g0, const char *g1,
                    const char *g2, int block, const char *smem);
void tmpl_open(Tmpl *T, Launch *l);
/* the launch's tensor-core FLOP: per_elem per element of [B][L][D] (each
 * product of the model's projections the kernel computes, once; 2 per
 * multiply-add; sweeps that compute them again are not counted) */
void launch_flops(Launch *l, int per_elem);

void tmpl_clear_args(Tmpl *T, Launch *l);
void tmpl_clear_emit(Tmpl *T, const Launch *l);
void ksig_add(Tmpl *T, KSig *s, const char *arg, LLVMTypeRef ty);
/* standard argument list helpers */
void ksig_params(Tmpl *T, KSig *s);          /* every parameter, in mixer order */
void ksig_shape(Tmpl *T, KSig *s);           /* i32:L i32:D */
int ksig_find(const KSig *s, const char *arg);
/* a TMA map arg's tensor ("tmap:T:BOX", "tmaprows:T:BOX": T, up to its
 * last colon), or NULL for any other arg */
const char *ksig_map_tensor(const char *arg);
LLVMValueRef ksig_arg(Tmpl *T, const KSig *s, const char *arg);   /* the kernel's argument; it must be there */
LLVMValueRef ksig_param(Tmpl *T, const KSig *s, int p);           /* parameter p's (ksig_params) */

/* The most shared memory one block may take on the target (opted in),
 * and the most it may take and still let a second share its SM: on sm_90
 * 227 and 113 KB, on sm_80 163 and 81, on sm_86 and sm_89 99 and 49 */
static inline int smem_blk_max(const Tmpl *T) { return T->smem_sm - TARGET_SMEM_RESERVED; }
static inline int smem_2blk(const Tmpl *T) { return T->smem_sm / 2 - TARGET_SMEM_RESERVED; }
/* some projection apart is stored as its sigmoid (Tmpl.pj_sig) */
static inline int pj_sig_any(const Tmpl *T)
{
	for (int j = 0; j < T->napj; j++)
		if (T->pj_sig[T->apj[j]])
			return 1;
	return 0;
}
/* Where no layout lets two blocks share the target's SM, the most one may
 * take: the target's limit, but no more than two blocks share an sm_90 SM
 * with (113 KB), since the portable PTX runs on Hopper too (through the
 * JIT), where a look-back kernel at one block an SM has half the resident
 * blocks its grid needs (RG-LRU's one-pass bwd_apply at 141 KB: 132 of
 * 256 at 1x8192x1024 on an H100) */
static inline int smem_1blk(const Tmpl *T)
{
	int hopper = target_smem_sm("sm_90") / 2 - TARGET_SMEM_RESERVED;
	return smem_blk_max(T) < hopper ? smem_blk_max(T) : hopper;
}

/* The reduce and apply kernels' shared memory: the quads' maps
 * [quad][64][2] floats, segment buffers of seg_len steps staging flags, and
 * the weights when the kernel runs the projections, proj (their 32
 * registers of B fragments freed let two blocks share an SM). quad_lanes
 * sets a kernel up on it: lanes, segment staging of segn steps, the
 * weights staged where T->k.proj_inline. */
int quad_smem(const Tmpl *T, int flags, int proj);
void quad_lanes(Tmpl *T, Lanes *ln, const KSig *sig, int segn, int flags);
/* whether a reduce or apply kernel that evaluates node beside the gates
 * runs the block-diagonal projections: always where it computes the gates,
 * else where node reads a projection (an unfused variant's output gated by
 * one, say); quad_smem's proj, T->k.proj_inline after tmpl_open */
int kern_proj(const Tmpl *T, int node);

/* ldmatrix .x4 over a 16 x 16 tile of 16-bit values: this lane's row
 * address is row (0..15) and 16-byte column block blk (0, 1). Matrix m =
 * lane / 8 covers rows 8(m&1).. and block m>>1, the order of an mma A
 * fragment; swap: rows 8(m>>1).., block m&1. */
void ldsm_lane(Irb *I, const Lanes *ln, int swap, LLVMValueRef *row, LLVMValueRef *blk);
/* the lane's ldmatrix offset in a staged step's rows for the 16 x 16 tile
 * starting at 16-byte block blk0 (columns 8 blk0 ..) */
LLVMValueRef xs_ldsm_at(Irb *I, const Lanes *ln, int blk0);

/* The weights of the block-diagonal projections as bf16 matrices W[k][j]
 * in shared memory (WMAT_BYTES each, swizzled), read as mma B fragments by
 * ldmatrix: the gate's (B = W) and dx's (B = W^T) from one copy. For kernels
 * that lack the registers to hold fragments; ends with a block barrier. */
#define WMAT_BYTES (64 * 128)
void wmat_stage(Tmpl *T, Lanes *ln, int off);
void wmat_gate_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2]);  /* [nt][r] */
void wmat_dx_frags(Tmpl *T, Lanes *ln, int j, int ks, LLVMValueRef b[2][2]);    /* [nt][r], own 16 k */
/* The gates' weight fragments (16 registers per projection) read from
 * shared memory once and held in registers (ln->wfrag) over a sweep that
 * would otherwise re-read them at every step in every warp; returns what
 * ln->wmat_smem was, for the caller to put back after the sweep. */
int gate_frags_hold(Tmpl *T, Lanes *ln);
/* a thread's place (tid, warp, lane, g, q, quad, w; tile, head and b from
 * T->k.ticket_thb or the block index) and the kernel's arguments by name,
 * nothing loaded */
void lanes_bind(Tmpl *T, Lanes *ln, const KSig *s);
/* lanes_bind, then the lanes' channels, parameters and weight fragments for the kernel being built */
void lanes_init(Tmpl *T, Lanes *ln, const KSig *s, int load_weights);
/* ln->bias[j]: block-diagonal projection j's bias at the lanes' channels
 * hbase + ch (lanes_init's, with the weights) */
void lanes_bias(Tmpl *T, Lanes *ln, int j, LLVMValueRef hbase);
/* the channel of a projection's mma column 16w + 8nt + n8: itself, or with
 * T->k.slots_adjacent the one that puts columns 2q, 2q+1 of both n-tiles on channels
 * 4q .. 4q+3 (ln->ch): the weights' columns are permuted to match */
LLVMValueRef wcol(const Tmpl *T, Irb *I, LLVMValueRef w, LLVMValueRef n8, int nt);
/* token t of the sequence is inside it (t < L); true without a test where
 * ln->full says the code covers no step past the end */
LLVMValueRef in_seq(Tmpl *T, const Lanes *ln, LLVMValueRef t);
/* either of two values past fp16's range (above F16_MAP_MAX: fp16 rounds
 * from 65520 up to infinity), where 16-bit maps fall back */
#define F16_MAP_MAX 6.0e4
LLVMValueRef f16_overflow(Irb *I, LLVMValueRef a, LLVMValueRef b);
/* body emitted twice: under `in` with ln->full set, so that every in_seq
 * test folds away (a block's work wholly inside the sequence runs its own
 * copy of the code), and under !in as it is, from the same lanes' state;
 * once, as it is, where `in` is NULL (the copy would spill) */
void emit_split(Tmpl *T, Lanes *ln, LLVMValueRef in, void (*body)(void *arg), void *arg);
/* emit_split, but the full copy taken only where tokens t0 .. t0 + ntok - 1
 * of the row hold nothing it does not handle: for a docs variant, no start
 * or end, and built without the states' accesses (Kern.docs_quiet); for a
 * resets variant where `three` is asked, no reset mark, and built without
 * reading marks (Kern.marks_quiet: the plain variant's step). With `three`
 * the tiles inside the sequence that do hold them take a second full copy,
 * built as it is, and the sequence's edge the last; without, a docs
 * variant's second copy takes both. (A docs variant's copy for tiles
 * without marks as well lost 1-3% on the H100: bench/experiments/
 * 2026-12-05-marks-plain-copy.) */
void emit_split_docs(Tmpl *T, Lanes *ln, LLVMValueRef in, LLVMValueRef t0, int ntok, int three,
                     void (*body)(void *arg), void *arg);
/* timestep of row r at step i of the group starting at row gb */
void step_rows(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i);
/* a step's inputs without its gates: rows, reset flags, x and token values (staged or loaded) */
void step_inputs(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i);
/* the caller's reset marks of the step (where the variant takes them), then
 * whether slot s is a reset: as i1, and as the mixer's `first` (1.0 / 0.0) */
void step_marks(Tmpl *T, Lanes *ln, Step *st);
/* a caller's optional state (state:h0, hT, ...): p[idx] where p is not
 * null and ok, else 0; and p[idx] = v where p is not null and ok */
LLVMValueRef state_load(Irb *I, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef ok);
LLVMValueRef state_given(Irb *I, LLVMValueRef p);   /* i1: the optional pointer p is not null */
void state_store(Irb *I, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef ok, LLVMValueRef v);
/* reset[b][t] as i32 0 / 1 where ok (a row inside the sequence), else 0: one predicated load */
LLVMValueRef reset_mark_at(Tmpl *T, const Lanes *ln, LLVMValueRef t, LLVMValueRef ok);
LLVMValueRef step_isfirst(Tmpl *T, const Step *st, int s);
LLVMValueRef step_first(Tmpl *T, const Step *st, int s);
/* gate step: step_inputs, then projections (mma) and log_a, b for each slot; fused or loaded */
void step_gates(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef gb, LLVMValueRef i, int need_proj);
void step_gates_n(Tmpl *T, Lanes *ln, Step st[], int n, LLVMValueRef gb, LLVMValueRef i, int need_proj);
/* A sweep over steps i, i + dir, ... of the group at gb, a step a trip:
 * each step's projections apart come from loads issued during the step
 * before it, so a step waits on memory only where its math took less
 * time than a load (40% of bwd_apply's stall samples were on these loads
 * with them issued where used), and each step hints the lines PJ_L2_AHEAD
 * steps further into L2. Ended by pj_ahead_end after the loop; a no-op
 * without projections apart. */
void pj_ahead_begin(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i, int dir);
void pj_ahead_end(Lanes *ln);
/* The projections apart as a step reads them (apart_step.c), bf16 pairs:
 * row r's four slots of projection j loaded here, or (in a sweep begun by
 * pj_ahead_begin) every row's of every projection, [j][row][pair], from
 * the loads ahead, the next step's issued */
void pj_load(Tmpl *T, Lanes *ln, const Step *st, int j, int r, LLVMValueRef pr[2]);
void pj_ahead_step(Tmpl *T, Lanes *ln, const Step *st, LLVMValueRef pj[][2][2]);
/* 32-bit load of a bf16 pair at element index idx64 (even), zero when invalid */
LLVMValueRef load_pair(Tmpl *T, LLVMValueRef base, LLVMValueRef idx64, LLVMValueRef valid);
/* gy = dy * dy/dh of slot s at h = hnew, from the derived graph with seeds (0, 0, dy) */
LLVMValueRef eval_gy(Tmpl *T, Lanes *ln, Step *st, int s, LLVMValueRef hnew, LLVMValueRef dy);
/* the parameters as slot s sees them (its channel's value, or the scalar), into pv */
LLVMValueRef *param_vals(Tmpl *T, Lanes *ln, int s, LLVMValueRef *pv);
/* the leaves of slot s at step st (x, the reset flag, parameters, projections,
 * per-token values; h and seeds are the caller's) and the lane's hoisting */
EmitEnv slot_env(Tmpl *T, Lanes *ln, const Step *st, int s, LLVMValueRef *pv);
/* element index (i64) of row r and channel ch of the lane's head in a
 * per-channel array [B][n][D]: tile maps and carries (n = NT), checkpoints (n = NG) */
LLVMValueRef tile_chan(Tmpl *T, const Lanes *ln, LLVMValueRef r, LLVMValueRef n, LLVMValueRef ch);
/* element index of slot s in [B][L][D] (i64) */
LLVMValueRef slot_index(Tmpl *T, Lanes *ln, const Step *st, int s);
/* v of the 8 slots of a step (plus the matching elements of the two mma
 * accumulator tiles acc, when given) into the bf16 tensor out ([B][L][D]),
 * as pairs of adjacent channels; rows past L are skipped */
void store_slots(Tmpl *T, Lanes *ln, Step *st, LLVMValueRef out, LLVMValueRef v[TM_SLOTS], LLVMValueRef acc[2][4]);

void maps_init(Tmpl *T, Maps *m, const char *name);
void quad_publish(Tmpl *T, Lanes *ln, Var qA[4], Var qB[4]);
/* after quad_publish: the tile's forward map of channel ch, the quads composed in time order */
void quads_tile_map(Tmpl *T, LLVMValueRef ch, LLVMValueRef *A, LLVMValueRef *B);
/* forward composition: m := (a, b) after m */
void maps_push_fwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef b);
/* adjoint composition, steps folded in time order: m := m o (u -> a (gy + u)) */
void maps_push_bwd(Tmpl *T, Maps *m, int s, LLVMValueRef a, LLVMValueRef gy);
/* warp level: exclusive prefixes of the 16 chunk maps (in place) and the group total */
void warp_scan_fwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4]);
/* adjoint maps: exclusive suffixes (maps of the chunks after each chunk) and the group total */
void warp_scan_bwd(Tmpl *T, Lanes *ln, Maps *m, LLVMValueRef totA[4], LLVMValueRef totB[4]);
/* the block's time tile: the ticket's, else the block index */
static inline LLVMValueRef lane_tile(Irb *I, const Lanes *ln) { return ln->tile ? ln->tile : ctaid(I, 0); }
/* the kernel's tiles NT: its grid's x, or a persistent kernel's count */
static inline LLVMValueRef kern_nt(Tmpl *T) { return T->k.grid_nt ? T->k.grid_nt : nctaid(&T->I, 0); }
/* channel c of slot s */
static inline int slot_c(int s) { return s & 3; }
static inline int slot_r(int s) { return s >> 2; }

/* the variant's scan kernels compute the gates (not read from a materialised
 * tensor); the kernel being built says it in T->k.gates_inline */
static inline int gates_inline(const Tmpl *T) { return !T->v->materialized; }
/* shared memory for the weights of a scan kernel that runs the projections (wmat_stage) */
static inline int wmat_bytes(const Tmpl *T, int proj) { return proj ? T->nbdproj * WMAT_BYTES : 0; }
void ksig_tok(Tmpl *T, KSig *s);             /* "ws:tok" when the mixer has a token stage */

/* Most blocks of bwd_apply per thread-block cluster: a cluster's blocks add
 * their weight-gradient accumulators through distributed shared memory, in
 * rank order, before one write, so the partials take 1/BWD_CLUSTER of the
 * memory. Two, measured on the H200 (cuOccupancyMaxActiveClusters, two
 * blocks of 106 KB per SM): clusters of 2 fill all 264 block slots, clusters
 * of 4 only 248 (62 clusters), which turned L = 8192's one wave of 256
 * blocks into two and L = 131072's two waves of 512 into three (bwd_apply
 * 0.096 -> 0.161 ms and 1.413 -> 1.885 ms). Pairs of clusters then share
 * one slot in global memory (dw_cluster_write), so a head holds
 * cdiv(G / BWD_CLUSTER, 2) slots. */
#define BWD_CLUSTER 2

/* Blocks per SM the reduce kernels ask ptxas to fit: two of 256 threads
 * (128 registers) double the warps that hide their latency; with four
 * groups per quad that many registers spill. */
static inline int reduce_minblocks(const Tmpl *T) { return T->quads == 2 && T->quad_groups <= 2 ? 2 : 1; }

/* Look-back forward (scan "lookback", lookback.c). A block takes its
 * (tile, head, b) from an atomic ticket in tile-major order, so every tile
 * it waits for belongs to a block that already runs. It publishes its tile
 * map (A, B) per channel, then folds the maps of the LB_WIN - 1 tiles
 * before it onto the end state h of tile - LB_WIN (0 before the sequence),
 * and publishes its own end state. The fold order depends on the tile
 * alone: every run gives the same bits. */
#define LB_WIN 16
#define LB_MAXPARTS 4          /* threads / 64 of a look-back kernel */
#define LB_SMEM (16 + 64 * 4 + LB_MAXPARTS * 64 * 8)   /* ticket, the tile's start h per channel, the parts' maps */
/* before lanes_init: the ticket into T->k.ticket_thb (ticket = the "ws:ticket" argument) */
void lb_ticket(Tmpl *T, LLVMValueRef ticket, int smem_off);
/* after quad_publish: the tile's start h of channel ch at lb_carry_at(smem_off) + 4 ch,
 * visible to the block on return (ws:aggA, aggB, hend zeroed before the launch) */
void lb_carry(Tmpl *T, Lanes *ln, const KSig *sig, int smem_off);
static inline int lb_carry_at(int smem_off) { return smem_off + 16; }

/* One-pass backward (scan "onepass"): bwd_apply's blocks run one group per trip, from
 * the sequence's end, block k of G (a head's blocks, all resident at once)
 * groups NG - 1 - k, NG - 1 - k - G, ...  After pass A a block publishes
 * its group's adjoint map (rA, rB) per channel (lb_bwd_publish; ws:baggA,
 * baggB, zeroed before the launch); as late as it can, it takes the
 * message entering the group from the right as the one its own last group
 * left, through the maps of the G - 1 groups between, which the other
 * blocks published after their pass A (lb_bwd_carry: uR, the message
 * leaving the block's last group, 0 before its first, becomes that
 * message). No reduce pass over x and dy, and the fold's order depends on
 * the group alone. */
#define ONEPASS_MAXG 16         /* two window entries per lane g */
void lb_bwd_publish(Tmpl *T, Lanes *ln, const KSig *sig, LLVMValueRef gi, LLVMValueRef NG,
                    LLVMValueRef rA[4], LLVMValueRef rB[4]);
void lb_bwd_carry(Tmpl *T, Lanes *ln, const KSig *sig, LLVMValueRef gi, LLVMValueRef NG, Var uR[4]);
/* a float as a look-back word (never 0) and back */
LLVMValueRef lb_enc(Irb *I, LLVMValueRef v);
LLVMValueRef lb_dec(Irb *I, LLVMValueRef w);

/* The token stage inside a one-pass backward (tok_tail.c): bwd_apply's
 * blocks publish their per-(token, head) adjoints of the token values as look-back
 * words in ws:dtokp ([B][NG][nz][H][16 C], zeroed before the launch), and
 * a block finishes a group's dx itself one trip later (tok_tail_group:
 * the heads' partials summed in a fixed order, the token stage's
 * derivative, dx += sum_j scale_j w_j[c] dp_j[t], the weight gradient
 * per thread in its shared region), so no tok_bwd or tok_dx pass reads x
 * and dx again. Scalar gradients of the token stage go to sacc in the
 * blocks of head 0; tok_tail_flush writes the weight partials, slot
 * (ctaid.x, b) of ws:part_tchan [G*B][ntp][D]. */
static inline int tok_fused(const Tmpl *T) { return T->ntokval > 0 && T->v->onepass; }

/* The scans' head count in shape expressions: "H" (D/64), or where the
 * projections run apart, "HS" (D/64) beside the projections' H = D/K */
static inline const char *scan_h(const Tmpl *T) { return T->napj ? "HS" : "H"; }
/* the block-diagonal projections, in the scans or apart (one of the two
 * lists is empty): how many, and the projection index of the j-th */
static inline int bd_count(const Tmpl *T) { return T->nbdproj + T->napj; }
/* the gates may take z / 2 from halved held fragments (Kern.gates_half):
 * every block-diagonal projection read only through sigmoid, and no reset
 * marks, carried states or packed documents, whose values live beside the
 * fragments (with them ptxas spilled 4-32 bytes in fwd_scan, 8 in the
 * documents' bwd_apply) */
static inline int gates_half_ok(const Tmpl *T) { return T->bd_sig_all && !T->v->resets && !T->v->states && !T->v->docs; }
static inline int bd_proj(const Tmpl *T, int j) { return T->napj ? T->apj[j] : T->bdproj[j]; }
/* the FLOP per element of the block-diagonal projections once: 2 K each */
static inline int proj_flops(const Tmpl *T) { return 2 * T->mx->k * bd_count(T); }
/* the weight's name of projection apart j: its workspaces are ws:proj_NAME,
 * ws:dproj_NAME and ws:part_NAME */
static inline const char *apj_weight(const Tmpl *T, int j) { return T->mx->param[T->mx->proj[T->apj[j]].weight].name; }
int tok_tail_bytes(const Tmpl *T);
void tok_tail_init(Tmpl *T, Lanes *ln, int off);
/* element index (i64) of head h's partial k of token gb + tl, group gi */
LLVMValueRef tok_part_index(Tmpl *T, Lanes *ln, LLVMValueRef NG, LLVMValueRef gi, LLVMValueRef tl,
                            LLVMValueRef h, LLVMValueRef k);
void tok_tail_group(Tmpl *T, Lanes *ln, const KSig *sig, int off, LLVMValueRef NG, LLVMValueRef gb, Var sacc[]);
void tok_tail_flush(Tmpl *T, Lanes *ln, const KSig *sig, int off, LLVMValueRef slot);

/* Where each parameter's gradient partials go: channel parameters and
 * scalars are numbered apart (param_reduce.c) */
typedef struct {
	int nchan, nscal;            /* channel / scalar parameters */
	int cidx[MX_MAXPARAM];       /* parameter -> channel-partial index, -1 */
	int sidx[MX_MAXPARAM];       /* parameter -> scalar-partial index, -1 */
} PartMap;
void part_map(const Tmpl *T, PartMap *pm);

/* the templates */
void tmpl_setup(Tmpl *T, Mixer *mx, const Variant *v);
/* the target's facts (clusters, wgmma, shared memory) and what they decide
 * of the variant's geometry; before tmpl_check (sm_90 until called) */
void tmpl_target(Tmpl *T, const char *sm);
/* the stage split and every derivative the kernels evaluate (no IR) */
void tmpl_derive(Tmpl *T);
void tmpl_free(Tmpl *T);           /* a calloc'd Tmpl and what derivation allocated */
void tmpl_fwd_gates(Tmpl *T);      /* unfused: log_a, b to memory */
void tmpl_fwd_reduce(Tmpl *T);
void tmpl_fwd_apply(Tmpl *T);
void tmpl_carry(Tmpl *T, int backward);
/* A walk over n positions of each channel, in runs for the warps of a
 * block of 32 channels (the carry kernels, map_finish): lane and warp
 * (seg) of the thread, its channel c of the width D (live: c < D; cs: c,
 * or 0 past D, for addresses), its row b (ctaid.y), and its warp's run
 * [k0, k1) of [0, n), runs of cdiv(n, nsegs) in order */
typedef struct { LLVMValueRef tid, lane, seg, c, live, cs, b, k0, k1; } ChanRuns;
void chan_runs(Irb *I, int nsegs, LLVMValueRef D, LLVMValueRef n, ChanRuns *r);
void tmpl_map_finish(Tmpl *T);    /* map variants: the row's map from the forward's partial sums */
/* projections apart (proj.c): x W + bias of every block-diagonal
 * projection into its workspace (forward), then dx = dx's own term + the
 * adjoints times W^T, and dW per slab of rows (backward) */
#define PROJ_ROWS 64
#define PROJ_WAVES 8          /* proj_fwd's and proj_dx's grids: at most this many waves */
#define PROJ_PER_SM 2         /* their blocks an SM (by registers; 1 where shared memory allows
                               * one): whole waves of 2 SMS blocks are whole waves of SMS */
#define PROJ_DW_MAXSLABS 16   /* proj_dw's slabs of rows, at most */
#define PROJ_PLAN_SMS 132     /* the SMs proj_dw's slabs are planned on (fixed: they order its sums) */
#define PROJ_DW_SLOTS (3 * PROJ_PLAN_SMS)   /* its block slots: 3 blocks an SM */
int proj_nc(const Tmpl *T);         /* a projection block's output columns: gcd(K, 64) */
/* a pair of projection j's (apart index) values, biases added, as stored:
 * bf16, or where the scans read it through sigmoid (pj_sig) fp16 sigmoids */
LLVMValueRef proj_pack(Tmpl *T, int j, LLVMValueRef v0, LLVMValueRef v1);
/* the same pair from accumulators a and biases as proj_bias gave them:
 * with pj_sig the sigmoid's tanh takes fma(a, 0.5, b / 2), halving in the
 * bias's load and not an instruction a value (bit for bit proj_pack's) */
LLVMValueRef proj_bias(Tmpl *T, int j, LLVMValueRef b);
LLVMValueRef proj_pack_biased(Tmpl *T, int j, LLVMValueRef a0, LLVMValueRef b0, LLVMValueRef a1, LLVMValueRef b1);
int proj_dw_tiles(const Tmpl *T);   /* proj_dw's blocks per head and slab */
int proj_dw_kt(const Tmpl *T);      /* its k tiles of 64 a block (a warpgroup each on wgmma; 1 else) */
int proj_dw_slots(const Tmpl *T);   /* its block slots on PROJ_PLAN_SMS, for the slabs' plan */
/* proj_dx and proj_dw as one kernel, proj_dxdw (proj_wg_dxdw.c's DXDW, on
 * by default; sm_90a's wgmma projections of mixers of two), a block an SM
 * over GW row groups, the slabs of dW's partials */
int proj_dxdw_on(const Tmpl *T);
void proj_dxdw_wg(Tmpl *T);
/* proj_fwd of two projections a warpgroup each, one block an SM over GF
 * row groups (proj_wg.c's FWD_SPLIT, off by default) */
int proj_fwd_split(const Tmpl *T);
void tmpl_proj_fwd(Tmpl *T);
void proj_fwd_again(Tmpl *T);   /* recompute: the backward runs proj_fwd's launch again, first */
/* The forward's projections inside fwd_scan (Variant.scan_proj; scan_proj.c):
 * whether the variant's geometry allows it (heads of a multiple of 64,
 * one or two projections apart, a look-back scan of one group a quad of
 * one segment: prefix 32, chunk 8; tmpl_check refuses the rest); whether
 * this target runs it (scan_proj_on: sm_90a's wgmma; another target builds
 * the variant with proj_fwd, as its twin, so that one grid serves a
 * folder of several targets); whether the weights'
 * image and the copies' ring fit the quads' segment buffers of these
 * bytes; proj_wimg, the image's kernel; and a quad's projections of its
 * rows from gb, to ws:proj_W, before its first sweep stages them */
int scan_proj_ok(const Tmpl *T);
int scan_proj_on(const Tmpl *T);
int scan_proj_fits(const Tmpl *T, int seg_buf_bytes);
void tmpl_proj_wimg(Tmpl *T);
void scan_project(Tmpl *T, Lanes *ln, LLVMValueRef gb);
/* Its persistent form (Variant.proj_ahead; scan_proj.c): fwd_scan's blocks
 * resident, taking tiles by ticket, a producer warpgroup beside the quads
 * projecting the tile they sweep next. scan_proj_ahead_ok: the geometry it
 * takes (tmpl_check refuses the rest); scan_proj_ahead: this variant runs
 * it on this target (scan_proj_on). sp_layout: its shared memory after
 * the quads' sweep_bytes; sp_ticket: ticket t's tile, head and b into
 * T->k.ticket_thb (lb_ticket's order); scan_proj_producer: the producer's
 * loop, to a ticket past total (NT x HS x B), each tile's ticket posted in
 * slot k % 2 at a->tick once its projections are stored (mbarriers full
 * and empty at a->full, a->empty, 8 bytes a slot; xfull: the ring's
 * slots', on which their copies complete) */
#define SP_STAGES 4          /* the producer's ring of x blocks */
#define SP_AHEAD_N 3         /* blocks copied ahead of the one multiplied */
#define SP_BAR_QUADS 3       /* the quads' block barrier (1 and 2: each quad's own, segment.c) */
#define SP_BAR_PRODUCER 4    /* the producer warpgroup's */
#define SP_PRODUCER_REGS 208 /* registers a thread (setmaxnreg): the producer's, */
#define SP_QUAD_REGS 144     /* the quads' (2 x 144 + 208 within 3 x 168, the SM's 64 K a block of
                              * 384; ptxas spills none at K = 128 or 256, where 184 and 160 spilled
                              * 80 bytes at 128, no split 40 to 184, and with the copies by TMA
                              * 216 spilled 4 bytes and 224 / 136 8) */
#define SP_GRID 264          /* blocks launched: at one an SM, every SM of the H100's and H200's 132 */
#define SP_XMAP "tmap:x:64x64"   /* the producer's x blocks by TMA: 64 rows of a head's 64 columns */
typedef struct { int img, ring, obuf, tick, full, empty, xfull, bytes; } SpAhead;
/* the tensor map arg of projection j's workspace (the producer's stores) */
void sp_pmap_arg(const Tmpl *T, int j, char *a, size_t n);
int scan_proj_ahead_ok(const Tmpl *T);
int scan_proj_ahead(const Tmpl *T);
void sp_layout(const Tmpl *T, int sweep_bytes, SpAhead *a);
/* shared offset of slot s (0 or 1) of an array of the layout at off, bytes apart */
static inline LLVMValueRef sp_slot(Irb *I, int off, LLVMValueRef s, int bytes)
{
	return iadd(I, ci32(I, off), imul(I, s, ci32(I, bytes)));
}
void sp_ticket(Tmpl *T, LLVMValueRef t, LLVMValueRef HS, LLVMValueRef B);
void scan_proj_producer(Tmpl *T, const KSig *sig, const SpAhead *a, LLVMValueRef HS, LLVMValueRef B,
                        LLVMValueRef total);
void tmpl_proj_dx(Tmpl *T);
void tmpl_proj_dw(Tmpl *T);
void tmpl_bwd_reduce(Tmpl *T);
void tmpl_bwd_apply(Tmpl *T);
void tmpl_param_reduce(Tmpl *T);
/* packed documents with a state each (docs.c) */
void tmpl_docs_prep(Tmpl *T);
void docs_prep_again(Tmpl *T);
void docs_load_codes(Tmpl *T, Lanes *ln, Step *st);
enum { DOC_START = 1, DOC_END = 2, DOC_RESET = 4 };   /* a token's code bits (docs.c) */
LLVMValueRef docs_code_at(Tmpl *T, const Lanes *ln, LLVMValueRef t, LLVMValueRef ok);
LLVMValueRef docs_state_idx(Tmpl *T, const Lanes *ln, const Step *st, int s);
void docs_inject(Tmpl *T, Lanes *ln, Step *st);
void docs_fetch(Tmpl *T, const Lanes *ln, const Step *st, int flag, LLVMValueRef p, LLVMValueRef v[TM_SLOTS]);
void docs_put(Tmpl *T, const Lanes *ln, const Step *st, int flag, LLVMValueRef p, const LLVMValueRef v[TM_SLOTS]);
LLVMValueRef docs_start(Tmpl *T, const Step *st, int s);
void docs_store_hT(Tmpl *T, Lanes *ln, const Step *st, LLVMValueRef h[TM_SLOTS]);
/* whether the code being emitted reads and writes a docs variant's states
 * (not in a copy for tokens with no start or end: emit_split_docs) */
static inline int docs_states(const Tmpl *T) { return T->v->docs && !T->k.docs_quiet; }
LLVMValueRef tile_holds(Tmpl *T, const Lanes *ln, LLVMValueRef t0, int ntok, int bits);
void tmpl_tok_fwd(Tmpl *T);        /* controller pass: token projections and the token values */
void tmpl_tok_step(Tmpl *T);       /* the same for a decode step: a token a warp, 8 loads in flight a lane */
void tmpl_decode_plan(Tmpl *T);    /* a decode variant's plan (decode.c), in place of tmpl_plan */
void tmpl_decode(Tmpl *T);         /* its step kernel */
void tmpl_decode_mma(Tmpl *T);     /* or the same on tensor cores (R.decode's mma, decode_mma.c) */
void tmpl_decode_rows_plan(Tmpl *T);   /* or one kernel, a block a row, the token stage inside (R.decode's */
void tmpl_decode_rows(Tmpl *T);        /* rows, decode_rows.c): its plan, then the kernel */
/* a decode step's launch: its signature (x, y, parameters, token values,
 * h0, hT, index, B, L, D), opened for building, h0 and hT free to alias */
/* row b's state slot in a decode step: index[b] where index is given
 * (has_index: state_given(index)) and read only where `in`, a row below
 * B; else b. Negative: a padding row */
LLVMValueRef decode_slot(Irb *I, LLVMValueRef index, LLVMValueRef has_index, LLVMValueRef b, LLVMValueRef in);
/* one token of one state in a decode step: a and b from the mixer's
 * expressions in env, h = a h + b (b alone at a reset: env->first > 0),
 * env->h set to it; returns y */
LLVMValueRef decode_advance(Tmpl *T, EmitEnv *env, Var h);
/* a decode step kernel's launch and signature (x, y, parameters, the token
 * values unless it makes them, the states, B, L, D), opened; minblocks as
 * Launch's */
Launch *tmpl_decode_open(Tmpl *T, const char *kname, const char *g0, const char *g1, const char *g2, int block,
                         const char *smem, int minblocks);
void tmpl_tok_bwd(Tmpl *T);        /* z adjoints summed over channels -> projection adjoints */
void tmpl_tok_dx(Tmpl *T);         /* dx += w * dproj, weight-gradient partials */
/* 1/sqrt(D) or 1, per token projection j */
LLVMValueRef tok_proj_scale(Tmpl *T, int j, LLVMValueRef D);
/* the 8 bf16 of a 16-byte word as floats, and back */
void tok_unpack8(Irb *I, LLVMValueRef v4, LLVMValueRef out[8]);
LLVMValueRef tok_pack8(Irb *I, LLVMValueRef in[8]);
/* a token projection's fp32 weights w[c .. c+7] (c an i32 channel) by two
 * 16-byte loads; zeros where ok is false (NULL: always as read) */
void tok_w8(Irb *I, LLVMValueRef w, LLVMValueRef c, LLVMValueRef ok, LLVMValueRef out[8]);
/* the launch's compulsory DRAM bytes as a shape expression: every tensor
 * (B*L*D bf16) and workspace argument once, plus bytes_extra */
void tmpl_launch_bytes(const Tmpl *T, const Launch *l, char *buf, size_t n);
/* the plan's shape variables, rules and workspaces (plan.c) */
void tmpl_plan(Tmpl *T);
/* what the templates cannot build, before (derived = 0) and after
 * tmpl_derive: 0, or -1 with a message located at the script's line */
int tmpl_check(const Tmpl *T, int derived, char *err, size_t errlen);
/* all kernels of the variant, each into a module of its own in ctx
 * (T->I.part[0..T->I.npart-1], the caller's to dispose; name: the
 * variant's, for the modules' names), and the plan (after tmpl_derive) */
void tmpl_build(Tmpl *T, LLVMContextRef ctx, const char *name);
/* after tmpl_build: every launch's shared memory within what a block may
 * take on target sm (smem_blk_max); 0, or -1 with a message naming the
 * script's line, the variant, the kernel and the target */
int tmpl_check_smem(const Tmpl *T, const char *sm, char *err, size_t errlen);

#endif
