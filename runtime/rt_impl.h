/* Internals shared by manifest.c, rt.c and plan.c: the parsed manifest, the
 * runtime object and a loaded variant. Not part of the public API.
 *
 * A parsed manifest is plain data in one arena (freed whole); every string
 * of it is a copy, so nothing refers back to the JSON document. Shape
 * expressions stay text and are evaluated per call by shapex_eval (they are
 * short, and a call launches a handful of kernels).
 */
#ifndef RECUR_RT_IMPL_H
#define RECUR_RT_IMPL_H

#include "recur.h"
#include "cudrv.h"
#include "shapex.h"

/* ---- manifest ---- */

typedef struct {
	const char *name;
	int ndim;
	const char **dims;           /* shape expressions */
	const char *init;            /* zeros | const | normal | decay */
	double a, b;                 /* when a_expr / b_expr are NULL */
	const char *a_expr, *b_expr; /* "EXPR" or "rsqrt(EXPR)", evaluated at a shape */
} rt_param;

typedef struct {
	const char *name, *script, *controller, *dyn_per_token;
	int k;
	int nparam;
	rt_param *param;
} rt_mixer;

typedef enum { RT_ARG_X, RT_ARG_Y, RT_ARG_DY, RT_ARG_DX, RT_ARG_PARAM, RT_ARG_GRAD,
               RT_ARG_WS, RT_ARG_I32, RT_ARG_I64, RT_ARG_ZBASE, RT_ARG_ZWORDS, RT_ARG_STATE,
               RT_ARG_TMAP } rt_argkind;

typedef struct {
	rt_argkind kind;
	int index;                   /* parameter or workspace index; RT_STATE_* of a state arg; a tensor
	                              * map's tensor (RT_ARG_X + index) */
	int box[2];                  /* a tensor map's box: rows, columns */
	int tmap_ws;                 /* a tensor map of workspace index (not of a tensor) */
	int tmap_rows;               /* a tensor map over B*L rows as one sequence (tmaprows:) */
	const char *expr;            /* i32 / i64 */
	const char *text;            /* as written, for messages */
} rt_arg;

typedef struct {
	const char *kernel;
	const char *grid[3];
	int block[3];
	const char *smem;
	const char *cluster;         /* blocks per thread-block cluster along x, "1" = a plain launch */
	const char *bytes;           /* compulsory DRAM bytes, "0" when not declared */
	const char *flops;           /* tensor-core FLOP of its math, "0" when none */
	int resident;                /* blocks wait on each other: all resident at once where grid x > 1 */
	int early;                   /* waits for the grid ahead (griddepcontrol.wait) before touching memory */
	int clears;                  /* clears the arena of zeroed workspaces (zero:base, zero:words): no memset */
	int narg;
	rt_arg *arg;
} rt_launch;

/* a workspace's life: inside one forward; written by the forward for the
 * backward; inside one backward; or made and used inside each pass (a
 * kernel both passes run, so nothing of it is kept between them) */
typedef enum { RT_LIFE_FORWARD, RT_LIFE_SAVED, RT_LIFE_BACKWARD, RT_LIFE_EACH } rt_life;

typedef struct {
	const char *name, *bytes;
	rt_life life;
	int zero;
} rt_ws;

typedef struct { const char *name, *expr; } rt_var;
typedef struct { const char *expr, *message; } rt_rule;

enum { RT_FWD, RT_BWD };
extern const char *const rt_pass_name[2];   /* "forward", "backward" */

typedef struct {
	const char *name, *mixer_name, *ptx, *ptx_path;
	const char *cubin_path, *cubin_target;   /* NULL without a cubin */
	const char *target;          /* the module's target: its own "target", else the manifest's (NULL: none said) */
	int mixer;                   /* index into recur_manifest.mixer */
	int nvar, nrule, nws;
	rt_var *var;
	rt_rule *rule;
	rt_ws *ws;
	int nlaunch[2];              /* RT_FWD, RT_BWD */
	rt_launch *launch[2];
	unsigned state;              /* the sequence state the kernels take: bits 1 << RT_STATE_* */
	char state_text[80];         /* the same, as the manifest lists it ("reset"; "" for none) */
	const char *scan;            /* "hierarchical" (also when the manifest names none), "lookback",
	                                "onepass" or "decode" */
	int decode;                  /* scan is "decode": a step on a pool of states, hT may be h0 */
} rt_vdesc;

/* The fields of recur_seqstate a variant's kernels may take ("state" in
 * its manifest entry; args "state:NAME"); rt_state_name has their names. */
enum { RT_STATE_H0, RT_STATE_RESET, RT_STATE_CU_SEQLENS, RT_STATE_HT, RT_STATE_DHT, RT_STATE_DH0,
       RT_STATE_MAP_LOGA, RT_STATE_MAP_H, RT_STATE_INDEX, RT_NSTATE };
extern const char *const rt_state_name[RT_NSTATE];
/* "h0, reset, ..., index": every name, for messages */
extern const char rt_state_names[];
/* field i of st (0 when st is NULL) */
CUdeviceptr rt_state_ptr(const recur_seqstate *st, int i);

/* "sm_90" -> 9, 0, 0; "sm_90a" -> 9, 0, 1: 0, or -1 for anything else */
int rt_parse_sm(const char *s, int *major, int *minor, int *arch_specific);
/* the entry of variant `name` whose module suits a device of compute
 * capability major.minor best (its own target, the arch-specific one
 * (sm_90a) first, else the newest older one the driver compiles for it),
 * or -1 */
int rt_manifest_pick(const recur_manifest *m, const char *name, int major, int minor);
/* the newest target recur gen makes that a device of compute capability
 * major.minor runs ("sm_80" .. "sm_90"; sm_90a left out) */
const char *rt_gen_target(int major, int minor);
/* -1, with "variant NAME has modules for ... only; the device is ..." in err */
int rt_manifest_no_module(const recur_manifest *m, const char *name, int major, int minor, char *err, size_t errlen);

typedef struct rt_chunk rt_chunk;

struct recur_manifest {
	const char *dir, *path;      /* directory of the PTX files; manifest.json */
	const char *generator, *llvm, *target, *ptx_isa;   /* NULL when absent */
	int nmixer, nvariant;
	rt_mixer *mixer;
	rt_vdesc *variant;
	rt_chunk *arena;
};

/* B, L, D and the variant's vars at shape s, with B, L, D >= 1 checked and,
 * when rules is set, the rules too. 0, or -1 with
 * "shape B=.. L=.. D=..: <why>" in why. SMS, the device's multiprocessors,
 * is RT_SMS_DEFAULT here (what the manifest alone gives: plans, legality,
 * workspace bytes); a launch's plan takes its device's (rt_shape_vars_on).
 * A generator may size only grids whose blocks do not change the bits by
 * it (manifest.h). */
#define RT_SMS_DEFAULT 132
int rt_shape_vars(const recur_manifest *m, int variant, recur_shape s, int rules,
                  ShapeVars *v, char *why, size_t n);
int rt_shape_vars_on(const recur_manifest *m, int variant, recur_shape s, int rules, int sms,
                     ShapeVars *v, char *why, size_t n);

/* A launch's geometry at the shape of sv, as far as it does not depend on
 * the device: grid (each dimension in CUDA's range), dynamic shared bytes
 * (>= 0; the device's limit is the caller's check) and cluster (1..8,
 * dividing grid x). 0, or -1 with what is wrong, naming the field and its
 * expression, in e. */
typedef struct { unsigned grid[3]; int64_t smem; unsigned cluster; } rt_plan_geom;
int rt_launch_geom(const rt_launch *l, const ShapeVars *sv, rt_plan_geom *g, char *e, size_t n);
/* a launch's "tmap:" arg for the tensor at p, at shape s (runtime/tmap.c) */
int rt_tmap_encode(const rt_cu *cu, const rt_arg *a, CUdeviceptr p, recur_shape s, CUtensorMap *map, char *err,
                   size_t errlen);

/* ---- workspaces (workspace.c) ---- */

/* need: bytes of the last call. The workspaces zeroed before their pass
 * live in one arena (off into it, cap 0: the arena owns the memory), the
 * forward's first: the forward clears the whole arena with one memset,
 * or its first kernel does (the manifest's "clears": then no memset), and
 * the backward after it clears nothing. Each clear is a stream operation
 * of its own, about 1.5 us of GPU time between the launches at any size,
 * and with none before it the backward's first kernel follows the
 * forward's last directly. */
typedef struct { CUdeviceptr p; size_t cap, need, off; } rt_wsbuf;
#define RT_ARENA_ALIGN 256

/* Which workspaces a pass owns (allocates and zeroes). */
int  rt_ws_in_pass(rt_life life, int pass);
/* Bytes of workspace i at the shape of sv, checked (>= 0). */
int  rt_ws_bytes(const rt_vdesc *d, int i, const ShapeVars *sv, const char *shape, size_t *out, char *err,
                 size_t errlen);
/* Offsets of the zeroed workspaces of both passes in the arena (ws[i].off,
 * .need), the forward's first; *end its size (whole 32-bit words, for one
 * cuMemsetD32Async) and *bwd where the backward's part starts (SIZE_MAX:
 * none). */
int  rt_arena_layout(const rt_vdesc *d, rt_wsbuf *ws, const ShapeVars *sv, const char *shape, size_t *end,
                     size_t *bwd, char *err, size_t errlen);

/* A caller's regions (recur_forward_ws): the saved region holds the arena
 * of the zeroed workspaces, as the variant's own (zend bytes, the
 * backward's part from zbwd; the forward clears all of it, a backward its
 * part, every time), then the saved workspaces; the scratch region of a
 * pass holds that pass's other workspaces. ws[i].off is into the region
 * rt_ws_region names. */
enum { RT_REGION_SAVED, RT_REGION_SCRATCH };
typedef struct { size_t zend, zbwd, saved, scratch[2]; } rt_regions;
int  rt_ws_region(const rt_ws *w);
int  rt_caller_layout(const rt_vdesc *d, rt_wsbuf *ws, const ShapeVars *sv, const char *shape, rt_regions *r,
                      char *err, size_t errlen);

/* ---- runtime ---- */

typedef struct { CUdeviceptr p; size_t bytes; } rt_block;

struct recur_rt {
	rt_cu cu;                    /* the driver; no global state anywhere */
	int ordinal;
	CUdevice dev;
	CUcontext ctx;               /* the device's primary context, retained; current only within a call */
	int smem_optin;              /* most dynamic+static shared bytes per block */
	int sms;                     /* multiprocessors: the shape language's SMS in its launches */
	size_t cur, peak;            /* bytes held through recur_alloc */
	rt_block *block;             /* live allocations, so recur_free knows sizes */
	int nblock, capblock;
};

/* The calling thread's current context (recur.h: each call leaves it as
 * it found it). A public call that reaches the driver for anything that
 * needs a current context (a module, a kernel's attributes or occupancy,
 * a launch, memory, a stream, an event, a graph) does that between
 *   rt_ctx_saved c;
 *   if (rt_ctx_enter(rt, &c, "recur_forward", variant_name, err, errlen)) return -1;
 *   int rc = ...;
 *   return rt_ctx_leave(rt, &c, rc, err, errlen);
 * and nowhere else. enter makes the runtime's context current and keeps
 * what was current (NULL: none); leave puts that back. Where the
 * runtime's is current already (the common case, and every call nested in
 * another) that is one cuCtxGetCurrent and no cuCtxSetCurrent. A failing
 * enter has changed nothing (no leave then); a failing leave makes the
 * call fail with the reason (after the first failure's message, where the
 * call had failed already). call and variant (NULL: none) are for the
 * messages and must outlive the pair. */
typedef struct {
	CUcontext prev;              /* what leave puts back; the runtime's own = nothing to do */
	const char *call, *variant;
} rt_ctx_saved;
int  rt_ctx_enter(const recur_rt *rt, rt_ctx_saved *c, const char *call, const char *variant, char *err,
                  size_t errlen);
/* rc, the call's result: returned as it is unless the restore fails (then -1) */
int  rt_ctx_leave(const recur_rt *rt, const rt_ctx_saved *c, int rc, char *err, size_t errlen);

/* recur_rt_open on a driver table already resolved: the runtime takes it
 * over (recur_rt_close closes its library, if any). Tests hand it a
 * host-memory stand-in for the driver, to reach the paths behind the
 * driver's calls without a GPU. */
int  rt_open_with(recur_rt **rt, const rt_cu *cu, int device, char *err, size_t errlen);

/* ---- what a graph (graph.c) needs of a variant (plan.c) ---- */

/* err = the formatted message; returns -1 */
int  rt_vfail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "shape B=.. L=.. D=..": how a message names a shape */
void rt_shape_name(recur_shape s, char *out, size_t n);

/* The state a pass leaves in its variant. A capture runs the passes
 * without executing them, so graph.c restores the state after it and sets
 * the passes' state when the graph is launched. */
typedef struct { int saved, bwd_clear; recur_shape saved_shape; } rt_vstate;
void rt_variant_state_get(const recur_variant *v, rt_vstate *st);
void rt_variant_state_set(recur_variant *v, const rt_vstate *st);
/* What a pass checks before anything else (recur_forward's and
 * recur_backward's first checks): that the variant has the pass (a
 * forward-only one has no backward), io, the shape's rules, the
 * sequence state (fields the kernels take, nothing in place but a decode
 * step's hT == h0). 0, or -1 with the reason. */
int  rt_variant_check(const recur_variant *v, int pass, recur_shape s, const recur_io *io, char *err,
                      size_t errlen);
/* A pass's workspaces allocated at shape s, nothing launched (a capture
 * must not allocate). A forward's ends the saved state: it may move them. */
int  rt_variant_prepare(recur_variant *v, int pass, recur_shape s, char *err, size_t errlen);
/* Graphs holding the workspaces' addresses: while any, plan.c refuses to
 * move or free them. */
void rt_variant_pin(recur_variant *v, int delta);
recur_rt *rt_variant_rt(const recur_variant *v);
const char *rt_variant_name(const recur_variant *v);
int  rt_variant_profiling(const recur_variant *v);

#endif
