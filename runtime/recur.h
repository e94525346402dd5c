/* recur runtime: load generated kernel modules through the CUDA Driver API
 * and run a mixer's forward and backward on your own device buffers.
 *
 * The runtime knows nothing of any particular mixer: a generated directory
 * holds manifest.json (see runtime/manifest.h for its format) and one PTX file
 * per variant, and every launch, workspace and shape rule comes from there.
 * libcuda.so.1 is opened with dlopen at run time (override the path with the
 * RECUR_LIBCUDA environment variable); nothing links against it.
 *
 * Every function returns 0 on success or -1 with a message in the err buffer
 * that names the call, the variant and the kernel or shape at fault.
 *
 * Each call leaves the calling thread's current context as it found it.
 * The runtime works in its device's primary context (cuDevicePrimaryCtxRetain,
 * the context PyTorch and the CUDA runtime use): a call that needs it (a
 * load, a launch, memory, copies, events, graphs, freeing any of them)
 * makes it current on entry and puts the thread's previous context back,
 * whatever it was (another device's, another context, or none), before it
 * returns, on success and on failure alike; recur_rt_open makes nothing
 * current. Where the primary context is current already that costs one
 * cuCtxGetCurrent. So any thread may call (autograd's backward runs on one
 * of its own), and a caller working with another device or context after
 * a call finds its own still current. Streams and events given to a call
 * must belong to the device's primary context; a caller calling the driver
 * itself on recur's buffers makes that context current itself. Should
 * the driver refuse to put the previous context back, the call fails
 * saying so, and the device's context stays current.
 *
 *   recur_rt *rt; recur_manifest *m; recur_variant *v;
 *   recur_rt_open(&rt, 0, err, sizeof err);
 *   recur_manifest_load("out/ptx", &m, err, sizeof err);
 *   recur_variant_load(rt, m, "fused_grouped_prefix32_hierarchical_chunk16", &v, err, sizeof err);
 *   recur_forward(v, shape, &io, stream, err, sizeof err);   // y, and saved state for the backward
 *   recur_backward(v, shape, &io, stream, err, sizeof err);  // dx, parameter gradients, from the saved state
 */
#ifndef RECUR_H
#define RECUR_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

typedef struct recur_rt recur_rt;
typedef struct recur_manifest recur_manifest;
typedef struct recur_variant recur_variant;

typedef struct { int B, L, D; } recur_shape;

/* The most elements B*L*D a shape may have (2^40: 2 TiB per bf16 tensor,
 * beyond any device), so that every byte count formed from a shape, up to
 * 16 bytes per element, stays far inside 64 bits. Every call taking a
 * shape refuses a larger one (and B, L or D below 1) with a message. */
#define RECUR_MAX_ELEMS ((int64_t)1 << 40)

/* Bytes of a [B][L][D] tensor of elem_bytes-byte elements (2 for bf16,
 * 4 for float, 8 for double), in checked arithmetic: 0, or -1 with the
 * shape and what overflows in err. */
int  recur_tensor_bytes(recur_shape s, size_t elem_bytes, size_t *bytes, char *err, size_t errlen);

/* The sequence state of a call, on the device: util/seqstate.h's contract
 * (initial and final state, reset marks, packed documents, the row's map)
 * and the slots of a decode step's pool of states. Every field is optional
 * (0: absent); all 0, or no recur_seqstate at all, is the plain call: each
 * row starts from zero with the spec's reset at t = 0. A variant takes only
 * the fields its kernels were generated for (recur_manifest_variant_state:
 * reset, h0, hT, dhT, dh0 from grids with resets / states = { true };
 * all of those and cu_seqlens, ndocs from grids with docs = { true };
 * index from decode variants, recur_manifest_variant_scan "decode";
 * map_loga, map_h from grids with map = { true }); a call giving another is
 * refused before any launch.
 *   reset   u8 [B][L]: 1 where a document starts inside a row, else 0;
 *           read by the forward and the backward of the call alike.
 *   h0      fp32 [B][D]: the state before each row's first token (that
 *           token is then no reset); a decode step: the pool [S][D].
 *   hT      fp32 [B][D]: written by the forward, the state after each
 *           row's last token; a decode step: the pool [S][D], and it may
 *           be h0 itself (an update in place, the usual call). For every
 *           other variant hT == h0 is refused (its kernels read h0 after
 *           another kernel wrote hT).
 *   dhT     fp32 [B][D]: read by the backward, the adjoint of hT.
 *   dh0     fp32 [B][D]: written by the backward, the adjoint of h0; never
 *           the same buffer as dhT.
 *   cu_seqlens int32 [ndocs + 1], docs variants: documents packed into
 *           one row (B = 1, no reset marks; 1 <= ndocs <= L), document i
 *           the tokens cu_seqlens[i] .. cu_seqlens[i+1] - 1; h0, hT, dhT
 *           and dh0 are then [ndocs][D], a state per document.
 *   map_loga, map_h fp32 [B][D], map variants: the row's map (util/
 *           seqstate.h), written by the forward: map_loga the sum of
 *           log a over the row (-inf where a mark cuts it), map_h = hT -
 *           exp(map_loga) h0, so hT = exp(map_loga) h0 + map_h. Either
 *           needs h0 (zeros for a row that continues from nothing), and
 *           map_h needs hT.
 *   index   int32 [B], decode variants only: the slot of h0 / hT row b
 *           reads and writes (h0[index[b]], hT[index[b]]); negative: row b
 *           is padding: no state read or written, y not written; absent: slot b.
 * index is appended last so that the layout of the fields before it is
 * kept (recur_abi_size("recur_seqstate") gives the size). */
typedef struct {
	CUdeviceptr h0, reset, cu_seqlens;
	int ndocs;
	CUdeviceptr hT, dhT, dh0, map_loga, map_h;
	CUdeviceptr index;
} recur_seqstate;

/* Device buffers of one call. params[i] / grads[i] follow the manifest's
 * parameter order of the variant's mixer (recur_param_* below). x, dy are
 * bf16 [B][L][D]; y, dx bf16 [B][L][D]; params and grads fp32; state, when
 * not NULL, the sequence state above. Every tensor starts on a 16-byte
 * boundary (cuMemAlloc's do): the kernels use 16-byte vector accesses, and
 * a misaligned one is refused before any launch. */
typedef struct {
	CUdeviceptr x, y, dy, dx;
	const CUdeviceptr *params;
	const CUdeviceptr *grads;
	const recur_seqstate *state;
} recur_io;

typedef struct {
	char name[64];       /* PTX entry */
	int registers;       /* CU_FUNC_ATTRIBUTE_NUM_REGS */
	int local_bytes;     /* CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (spills + stack) */
	int static_smem;
	int max_threads;
} recur_kernel_info;

/* ---- driver, context, memory accounting ---- */
int  recur_rt_open(recur_rt **rt, int device, char *err, size_t errlen);
void recur_rt_close(recur_rt *rt);
int  recur_rt_device_name(recur_rt *rt, char *name, size_t n);
int  recur_rt_driver_version(recur_rt *rt, int *version);
/* Allocations made through the runtime are counted: current and peak bytes. */
int  recur_alloc(recur_rt *rt, size_t bytes, CUdeviceptr *p, char *err, size_t errlen);
void recur_free(recur_rt *rt, CUdeviceptr p);
size_t recur_mem_current(const recur_rt *rt);
size_t recur_mem_peak(const recur_rt *rt);
void recur_mem_reset_peak(recur_rt *rt);          /* peak := current */
int  recur_memcpy_htod(recur_rt *rt, CUdeviceptr dst, const void *src, size_t n, char *err, size_t errlen);
/* n bytes from src to dst on the device, asynchronously on stream st */
int  recur_memcpy_dtod(recur_rt *rt, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st, char *err,
                       size_t errlen);
int  recur_memcpy_dtoh(recur_rt *rt, void *dst, CUdeviceptr src, size_t n, char *err, size_t errlen);
int  recur_memset_u8(recur_rt *rt, CUdeviceptr dst, unsigned char v, size_t n, char *err, size_t errlen);
int  recur_sync(recur_rt *rt, char *err, size_t errlen);
/* Event timing on a stream (0 = default stream). */
int  recur_event_create(recur_rt *rt, CUevent *e, char *err, size_t errlen);
int  recur_event_record(recur_rt *rt, CUevent e, CUstream s, char *err, size_t errlen);
int  recur_event_elapsed_ms(recur_rt *rt, CUevent a, CUevent b, float *ms, char *err, size_t errlen);
void recur_event_destroy(recur_rt *rt, CUevent e);

/* ---- manifests and variants (no GPU needed for the manifest) ---- */
int  recur_manifest_load(const char *dir, recur_manifest **m, char *err, size_t errlen);
void recur_manifest_free(recur_manifest *m);
int  recur_manifest_nvariants(const recur_manifest *m);
const char *recur_manifest_variant_name(const recur_manifest *m, int i);
const char *recur_manifest_variant_mixer(const recur_manifest *m, int i);
/* -1 when absent */
int  recur_manifest_find(const recur_manifest *m, const char *variant);
/* Variant i's target ("sm_90"; "" where the manifest names none). A folder
 * generated for several targets (recur gen --sm sm_80,sm_90) lists each
 * variant once per target; recur_variant_load takes the module that suits
 * the device, and recur_manifest_select keeps only those (its own target,
 * else the newest older one whose PTX the driver compiles for it): 0, or
 * -1 naming a variant with no module for a device of that capability. */
const char *recur_manifest_variant_target(const recur_manifest *m, int i);
/* The sequence state variant i's kernels take, as names of recur_seqstate's
 * fields separated by spaces ("reset"); "" for none. */
const char *recur_manifest_variant_state(const recur_manifest *m, int i);
/* Variant i's scan: "hierarchical" (also for a manifest that names none),
 * "lookback", "onepass" or "decode" (a decode step: forward only, it
 * advances a pool of states by the call's L tokens, in place where hT is
 * h0); NULL for no variant i. A variant without backward launches (every
 * decode step) refuses recur_backward, recur_backward_ws and a graph with
 * a backward before any launch. */
const char *recur_manifest_variant_scan(const recur_manifest *m, int i);
int  recur_manifest_select(recur_manifest *m, int major, int minor, char *err, size_t errlen);
/* The compute capability of the runtime's device. */
int  recur_rt_compute_capability(recur_rt *rt, int *major, int *minor, char *err, size_t errlen);

/* The mixer of variant i: parameter names, element counts at a shape, init. */
int  recur_param_count(const recur_manifest *m, int variant);
const char *recur_param_name(const recur_manifest *m, int variant, int p);
/* element count of parameter p at shape s; -1 with err on a bad shape */
long recur_param_elems(const recur_manifest *m, int variant, int p, recur_shape s, char *err, size_t errlen);
/* the parameter's dims at shape s (for .npy dumps); returns ndim */
int  recur_param_dims(const recur_manifest *m, int variant, int p, recur_shape s, long *dims);
/* init as declared by the script: kind "zeros" | "const" | "normal" | "decay", a, b (std of normal = a) */
const char *recur_param_init(const recur_manifest *m, int variant, int p, recur_shape s, double *a, double *b);

/* 0 when variant i can run shape s; else -1 and the reason (the failing rule's message) in why. */
int  recur_check_shape(const recur_manifest *m, int variant, recur_shape s, char *why, size_t n);

int  recur_variant_load(recur_rt *rt, const recur_manifest *m, const char *name, recur_variant **v, char *err, size_t errlen);
void recur_variant_free(recur_variant *v);
int  recur_variant_nkernels(const recur_variant *v);
void recur_variant_kernel(const recur_variant *v, int i, recur_kernel_info *info);

/* Forward: writes io->y and the saved workspaces the backward reads.
 * Backward: writes io->dx and io->grads (overwritten, not accumulated) from
 * the saved workspaces of the last forward, which must have run at the same
 * shape. Workspaces are allocated on first use and cached in the variant for
 * the next call (so that a timed loop never allocates); recur_variant_trim
 * frees them. The forward also clears the workspaces the backward needs
 * zeroed, so a backward right after its forward launches its kernels alone
 * (a second backward clears them itself). The shape is checked before
 * anything is launched. Calls are asynchronous on stream s, and a backward
 * must follow its forward in stream order. A variant without backward
 * launches (a decode step, recur_manifest_variant_scan "decode") refuses
 * its backward before anything reaches the driver. */
int  recur_forward(recur_variant *v, recur_shape s, const recur_io *io, CUstream st, char *err, size_t errlen);
int  recur_backward(recur_variant *v, recur_shape s, const recur_io *io, CUstream st, char *err, size_t errlen);
/* Optional per-kernel timing of the last forward/backward (events around each launch) */
int  recur_set_profiling(recur_variant *v, int on);

/* ---- additions (runtime/) ---- */

/* Most dims a parameter can have (recur_param_dims writes at most this many). */
#define RECUR_MAXDIM 8

/* Top-level strings of the manifest: "generator", "llvm", "target",
 * "ptx_isa" (NULL when absent), "path" (of manifest.json), "dir" (of the PTX). */
const char *recur_manifest_info(const recur_manifest *m, const char *key);

/* With profiling on: the launches of the last forward or backward, in order,
 * with their kernel names and milliseconds (events around each launch; the
 * call then synchronises on its stream). Returns the number of launches
 * (fills at most max), 0 when nothing was profiled. */
int  recur_variant_last_times(const recur_variant *v, const char **names, float *ms, int max);

/* With profiling on: launch i of the last forward or backward, as it ran:
 * kernel, milliseconds, grid, block, dynamic shared memory and the blocks
 * per SM that fit (cuOccupancyMaxActiveBlocksPerMultiprocessor: registers,
 * shared memory and threads together); for a launch in clusters, the
 * cluster size and how many such clusters the GPU holds at once
 * (cuOccupancyMaxActiveClusters). Returns 0, or -1 when i is out of range. */
typedef struct {
	const char *kernel;
	float ms;
	unsigned grid[3];
	int block;
	unsigned dyn_smem;
	int blocks_per_sm;
	int cluster;          /* blocks per cluster, 1 = none */
	int max_clusters;     /* clusters active at once on the GPU (cluster > 1) */
} recur_launch_info;
int  recur_variant_last_launch(const recur_variant *v, int i, recur_launch_info *info);

/* Whether this device holds at once every block of each launch of the
 * variant at shape s whose blocks wait on each other (a look-back across
 * them: the one-pass backward, the look-back forward), as a forward or
 * backward would check before launching: 0 when all fit; 1 when one does
 * not (why: the kernel, its grid and what the device holds), a variant
 * to skip on this GPU rather than a failure; -1 on an error (why). */
int  recur_variant_fits(recur_variant *v, recur_shape s, char *why, size_t n);

/* Frees the variant's cached workspaces (after synchronising the context);
 * the next forward allocates them again. A backward needs a new forward. */
int  recur_variant_trim(recur_variant *v, char *err, size_t errlen);

/* The JIT's info log of the variant's module (registers, spills, ...). */
const char *recur_variant_jit_log(const recur_variant *v);
/* Which code was loaded and why: "cubin sm_90 (FILE): built for this
 * device's target", or "PTX for sm_90, compiled by the driver: " and the
 * reason (no cubin, another target, RECUR_FORCE_PTX set, the driver
 * refused it). */
const char *recur_variant_module(const recur_variant *v);

/* The DRAM bytes launch i of the forward (backward = 0) or backward must
 * move at shape s, as the generator declared them ("bytes" of the launch:
 * each tensor and workspace it touches, once); 0 when not declared. With
 * the times of recur_variant_last_times this gives achieved bandwidth. */
int  recur_launch_bytes(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                        double *bytes, char *err, size_t errlen);
/* The tensor-core FLOP of launch i's math at shape s, as the generator
 * declared them ("flops": each product of the model's projections once,
 * 2 per multiply-add); 0 for a launch without. Over its time: the
 * achieved tensor-core rate. */
int  recur_launch_flops(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                        double *flops, char *err, size_t errlen);

/* Launch i of the forward (backward = 0) or backward at shape s, from the
 * manifest alone (no GPU): kernel, grid, threads, dynamic shared bytes and
 * blocks per cluster, with the checks a launch makes before the device's
 * own (grid ranges; cluster 1..8 dividing grid x; the shape's rules). A
 * grid sized by the device's multiprocessors (the manifest's SMS) is given
 * for 132 of them, an H100's or H200's; a launch uses its device's count.
 * recur_launch_count gives the number of launches of a pass. */
typedef struct {
	const char *kernel;
	unsigned grid[3];
	int block;
	int64_t dyn_smem;
	int cluster;
} recur_plan_info;
int  recur_launch_count(const recur_manifest *m, int variant, int backward);
int  recur_launch_plan(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                       recur_plan_info *info, char *err, size_t errlen);

/* Bytes held by the variant's cached workspaces. */
size_t recur_variant_workspace_bytes(const recur_variant *v);

/* A CUDA graph of a variant's passes at one shape with one set of buffers:
 * passes RECUR_GRAPH_FORWARD, RECUR_GRAPH_BACKWARD or both (forward, then
 * backward). recur_graph_launch replays them as one cuGraphLaunch, the
 * launches early where the kernels allow it, as in recur_forward: the host
 * pays the plan's launches once, at creation. Creation allocates the
 * workspaces (nothing runs; a graph with a forward ends the last forward's
 * saved state), and the graph holds their addresses: while it lives, the
 * variant refuses to trim them or to grow them for a larger shape, and it
 * must be freed before its variant. A backward-only graph needs the
 * variant's last forward at s, and clears its own workspaces each replay.
 * A launch sets what the passes set (the saved state of the forward), so a
 * recur_backward may follow a graph of the forward. Profiling must be off. */
typedef struct recur_graph recur_graph;
enum { RECUR_GRAPH_FORWARD = 1, RECUR_GRAPH_BACKWARD = 2 };
int  recur_graph_create(recur_variant *v, recur_shape s, const recur_io *io, int passes, recur_graph **g,
                        char *err, size_t errlen);
int  recur_graph_launch(recur_graph *g, CUstream st, char *err, size_t errlen);
/* Nodes of the graph (memsets and kernels) */
int  recur_graph_nodes(const recur_graph *g);
void recur_graph_free(recur_graph *g);

/* sizeof the named struct of this header as the library was built
 * ("recur_shape", "recur_io", "recur_seqstate", "recur_ws", "recur_ws_sizes",
 * "recur_plan_info"); 0 for another name. A binding from another language
 * compares its layouts with these before any call. */
size_t recur_abi_size(const char *type);

/* ---- Caller-provided workspaces ----
 * For a framework that owns the device memory (PyTorch's caching
 * allocator): with these calls the variant keeps nothing between calls, so
 * any number of forwards may run before their backwards, each with its own
 * saved region, and every byte is in the caller's accounting.
 *   saved:   written by a forward, read by the backward of that forward at
 *            the same shape; keep it untouched from one to the other (a
 *            second backward from the same saved region is allowed);
 *   scratch: used during one pass only, forward or backward; free or reuse
 *            it once the pass is done in stream order (a recompute
 *            variant's backward makes its projections again there, so its
 *            saved region is B L D x 4 bytes smaller than its twin's).
 * recur_workspace_sizes gives both sizes at shape s from the manifest alone
 * (no GPU) for variant index i (in a folder of several targets, after
 * recur_manifest_select: the sizes differ between targets); either may be
 * 0, and a region of 0 bytes may be a null pointer. A variant without a
 * backward (a decode step) counts no backward workspace: its scratch is
 * the forward's.
 * Each region starts on a RECUR_WS_ALIGN-byte boundary and holds at least
 * the bytes asked; a smaller or misaligned one is refused before any
 * launch. The variant's own cached workspaces are neither used nor grown.
 * A variant handle is not thread-safe: calls on one handle from several
 * host threads must be serialised by the caller (streams may differ). */
#define RECUR_WS_ALIGN 256
typedef struct { size_t saved, scratch; } recur_ws_sizes;
typedef struct {
	CUdeviceptr saved, scratch;
	size_t saved_bytes, scratch_bytes;
} recur_ws;
int  recur_workspace_sizes(const recur_manifest *m, int variant, recur_shape s, recur_ws_sizes *z, char *err,
                           size_t errlen);
int  recur_forward_ws(recur_variant *v, recur_shape s, const recur_io *io, const recur_ws *ws, CUstream st,
                      char *err, size_t errlen);
int  recur_backward_ws(recur_variant *v, recur_shape s, const recur_io *io, const recur_ws *ws, CUstream st,
                       char *err, size_t errlen);

#endif
