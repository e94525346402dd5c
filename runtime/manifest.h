/* manifest.json: what `recur gen` writes beside the PTX and the runtime reads.
 *
 * The manifest is the only channel between generator and runtime: every
 * kernel sequence, launch geometry, workspace and shape rule of a variant is
 * data here, written with shape expressions (util/shapex.h), so the
 * runtime holds no code for any particular mixer or variant.
 *
 * {
 *   "format": 1,
 *   "generator": "recur 0.1.0", "llvm": "19.1.7", "target": "sm_90", "ptx_isa": "8.0",
 *   "mixers": {
 *     "rglru": {
 *       "script": "lua/arch/rglru.lua", "k": 64,
 *       "controller": null,                         (or a string)
 *       "dynamic_control_values_per_token": "2*D",   (shape expression)
 *       "params": [
 *         {"name": "Wa", "dims": ["H", "K", "K"],   (shape expressions; [] for a scalar)
 *          "init": {"kind": "normal", "a": 0.125, "b": 0}},   kinds: zeros | const | normal | decay
 *         ...
 *       ],
 *       "graph": {...}       the mixer's expression graph as text lines (script/graphtext.h);
 *                            the runtime ignores it: recur verify derives a float64
 *                            reference from it for mixers without a hand-written one
 *     }
 *   },
 *   "variants": [
 *     {
 *       "name": "fused_grouped_prefix32_hierarchical_chunk16",
 *       "mixer": "rglru",
 *       "ptx": "rglru.fused_grouped_prefix32_hierarchical_chunk16.ptx",   (file beside the manifest)
 *       "chunk": 16, "prefix": 32, "fused": true, "shared_sfu": false,
 *       "fused_output": false, "fused_write": false,
 *       "materialized": false, "controller": null,
 *       "vars": [["K", "64"], ["H", "D/K"], ["T", "512"], ["NT", "cdiv(L,T)"]],
 *           evaluated in order after B, L and D are set; later entries may use earlier ones.
 *           Also given: ndocs (a call's documents, 0 without cu_seqlens) and SMS, the
 *           device's multiprocessors (132 where the manifest alone is read: recur_launch_plan,
 *           legality, workspace bytes). SMS may size only a grid whose blocks do not change
 *           the bits (each output computed whole by one block), never a sum's order or a
 *           workspace: the same call gives the same bits on every GPU.
 *       "rules": [{"expr": "D%64==0", "message": "width must be a multiple of 64"}],
 *           a shape is refused (before any launch) when an expr evaluates to 0
 *       "workspaces": [
 *         {"name": "agg", "bytes": "B*NT*D*8", "life": "forward", "zero": false},
 *           life: "forward" (used inside one forward), "saved" (written by the
 *           forward, read by the backward), "backward" (inside one backward),
 *           "each" (made and used inside each pass: the backward runs the
 *           kernel that writes it again; not zeroed; nothing kept between).
 *           zero: memset to 0 on the stream at the start of the forward
 *           (forward, saved) or backward (backward) that uses it.
 *       ],
 *       "scan": "hierarchical",          optional (absent: hierarchical): hierarchical,
 *                                        lookback, onepass or decode (a decode step)
 *       "state": ["h0", "hT"],           optional (absent: none): the fields of
 *                                        recur_seqstate the kernels take (args
 *                                        "state:NAME"): h0 reset cu_seqlens hT dhT
 *                                        dh0 map_loga map_h index
 *       "forward":  [ LAUNCH, ... ],     run in order on the caller's stream; at least one
 *       "backward": [ LAUNCH, ... ]      may be [] (a forward-only variant, such as a
 *                                        decode step: the runtime refuses its backward)
 *     }
 *   ]
 * }
 *
 * LAUNCH = {"kernel": "PTX entry name",
 *           "grid": ["NT", "H", "B"],       shape expressions, x y z
 *           "block": [256, 1, 1],
 *           "smem": "0",                    dynamic shared bytes, shape expression
 *           "cluster": "CS",                optional: blocks per thread-block cluster
 *                                           along x (1..8, dividing grid x); the
 *                                           kernel may use distributed shared memory
 *           "resident": true,               optional: the blocks wait on each other
 *                                           (a look-back across them), so where grid
 *                                           x > 1 the runtime refuses a grid the
 *                                           device cannot hold at once
 *           "early": true,                  optional: the kernel executes
 *                                           griddepcontrol.wait before it touches
 *                                           memory, so the runtime launches it with
 *                                           programmatic stream serialisation: its
 *                                           blocks may start while the kernel ahead
 *                                           of it on the stream finishes
 *           "clears": true,                 optional, the forward's first launch
 *                                           only: the kernel zeroes the arena of
 *                                           the zeroed workspaces of both passes
 *                                           (args "zero:base", "zero:words"), and
 *                                           the runtime clears nothing ahead of it
 *           "bytes": "B*L*D*2+...",         optional: the DRAM bytes it must move
 *           "flops": "B*L*D*256",           optional: the tensor-core FLOP its math
 *                                           needs (each product of the model's
 *                                           projections once), for achieved rates
 *           "args": ["x", "param:Wa", "grad:dWa", "ws:agg", "i32:L", ...]}
 *   args, in the kernel's parameter order:
 *     "x" "y" "dy" "dx"   the call's tensors (device pointers)
 *     "param:NAME"        parameter NAME's device pointer; "grad:NAME" its gradient
 *     "ws:NAME"           a workspace's device pointer
 *     "state:NAME"        field NAME of the call's recur_seqstate (a null pointer when
 *                         not given), NAME listed in the variant's "state"
 *     "i32:EXPR"          a 32-bit integer, EXPR a shape expression
 *     "i64:EXPR"          a 64-bit integer
 *     "zero:base"         the arena of the zeroed workspaces (device pointer, null
 *                         when it is empty) and "zero:words" its length in 32-bit
 *                         words (64-bit): the args of a launch with "clears"
 *     "tmap:T:RxC"        a TMA tensor map (CUtensorMap, 128 bytes by value: the
 *                         kernel's parameter .align 64 .b8 [128], grid_constant) of
 *                         tensor T (x, y, dy, dx or ws:NAME) as [B][L][D] bf16, a
 *                         box of R rows (1..256) of C = 64 columns, 128-byte swizzle,
 *                         rows past L read as zeros; encoded at each call
 *     "tmaprows:T:RxC"    the same over the B*L rows as one sequence ((D, B L, 1):
 *                         a box may span two sequences, rows past B*L read as
 *                         zeros)
 *
 * What the runtime (runtime/manifest.c) accepts beyond the above: wherever a
 * shape expression goes, a JSON integer is also taken; "smem" defaults to
 * "0", "cluster" to "1", "resident", "early", "clears" and "zero" to false; init "a" / "b" may be a string, a shape
 * expression or "rsqrt(EXPR)" (e.g. "rsqrt(K)" for std 1/sqrt(K)), evaluated
 * at the call's shape. Unknown keys are ignored. Variable names are at most
 * 15 characters, at most 27 vars per variant; parameters have at most 8 dims.
 * Limits against hostile files, each refused with its place: a manifest of
 * at most 64 MiB; a shape expression of at most 4096 characters, nested at
 * most 64 deep (parentheses and unary minus signs together); init numbers
 * within float32's range (parameters are fp32).
 */
#ifndef RECUR_MANIFEST_H
#define RECUR_MANIFEST_H
#define RECUR_MANIFEST_FORMAT 1
#endif
