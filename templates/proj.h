/* The projection kernels' shared pieces: proj.c (mma.sync, every target)
 * and proj_wg.c, proj_wg_dw.c (wgmma, sm_90a; proj_wg.h). */
#ifndef RECUR_PROJ_H
#define RECUR_PROJ_H

#include "tmpl.h"

#define PROJ_THREADS 128

/* A thread's place in a projection kernel: lane (g, q) of warp w, the
 * rows B*L and width D, and (proj_fwd, proj_dx: proj_tile) the block's
 * column tile: head hp, its first column n0 inside the head, c0 in the width */
typedef struct { LLVMValueRef lane, w, g, q, BL, D, c0, hp, n0; } ProjLanes;

void proj_lanes(Tmpl *T, const KSig *s, ProjLanes *p);
void proj_tile(Tmpl *T, ProjLanes *p);
/* proj_fwd's (fwd) or proj_dx's launch and signature (x or dx, the
 * parameters, the projections' or their adjoints' workspaces, [dxd,] B*L,
 * D), the kernel opened: one for both forms, so that the runtime's
 * arguments fit either; minblocks a launch bound (0: none) */
/* maps: the A operands' TMA maps too (tmaprows:x, or tmaprows:ws:dproj_W
 * of each projection; proj_wg.c's WG_TMA) */
Launch *proj_open(Tmpl *T, int fwd, int smem, int threads, int minblocks, int maps);
/* A's map arg of proj_fwd (x) or of proj_dx's projection j (its adjoint) */
void proj_map_arg(const Tmpl *T, int fwd, int j, char *a, size_t n);
/* proj_dw's (x, the adjoints, the slabs' partial sums, B*L, D; a block per
 * (k tiles, m tile) of a head and slab), minblocks a launch bound */
Launch *proj_dw_open(Tmpl *T, int smem, int threads, int minblocks);
/* the map arg i of x's and the adjoints' rows: x's (0), then projection
 * i - 1's adjoint's (proj_map_arg's names; proj_dxdw's maps) */
void proj_dw_map_arg(const Tmpl *T, int i, char *a, size_t n);
/* a float4 of weights as two bf16 pairs (an 8-byte shared store) */
LLVMValueRef pack_bf16x4(Irb *I, LLVMValueRef v4f);
/* one argument per projection apart: "ws:PREFIX" and the weight's name */
void ksig_each(Tmpl *T, KSig *s, const char *prefix);
LLVMValueRef ksig_each_arg(Tmpl *T, const KSig *s, const char *prefix, int j);

/* the three projection kernels on wgmma (proj_wg.c, proj_wg_dw.c) where proj_wgmma
 * says so: an sm_90a target, heads of a multiple of 64 channels, at most two
 * projections (their accumulators are 64 registers a thread) */
int proj_wgmma(const Tmpl *T);
void proj_fwd_wg(Tmpl *T);
void proj_dx_wg(Tmpl *T);
void proj_dw_wg(Tmpl *T);   /* operands MN-major */

#endif
