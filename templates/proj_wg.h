/* What the wgmma projection kernels share (proj_wg.c: proj_fwd and
 * proj_dx; proj_wg_dw.c: proj_dw; proj_wg_ring.c holds it): the ring of
 * shared buffers their rows' blocks are copied into ahead of the wgmma
 * that read them, with its producer protocol (mbarriers a buffer), the
 * copies themselves (cp.async into 128-byte swizzled blocks) and the
 * accumulators' layout. */
#ifndef RECUR_PROJ_WG_H
#define RECUR_PROJ_WG_H

#include "proj.h"
#include "wgmma.h"

#ifndef WG_STAGES
#define WG_STAGES 4     /* the ring's buffers */
#endif
#ifndef WG_AHEAD
#define WG_AHEAD 3      /* blocks copied ahead of the one multiplied */
#endif
#ifndef WG_TMA
#define WG_TMA 1        /* the producer's copies by TMA (tmaprows: maps), one thread issuing; 0: cp.async by its
                         * 128 threads (bench/experiments/2026-12-07-wg-tma: proj_fwd 4%, proj_dx 9% slower) */
#endif
#ifndef DXDW
#define DXDW 1          /* proj_dx and proj_dw in one pass, proj_dxdw (proj_wg_dxdw.c); 0: the two kernels */
#endif
#ifndef WG_PRODUCER_REGS
#define WG_PRODUCER_REGS 56   /* a producer warpgroup's registers a thread; the multiplying one takes the rest of two blocks an SM */
#endif

/* A ring of buffers copied ahead: `stages` buffers, the one multiplied
 * and `ahead` in flight */
typedef struct { int stages, ahead; } Ring;
#define RING_BAR_BYTES(rg) (2 * 8 * (rg)->stages)   /* a producer's mbarriers: full and empty a buffer */

/* Every thread copies: the top of a trip (its copies landed, fenced, a
 * block barrier) */
void ring_ready(Irb *I, const Ring *rg);
/* the ring buffer of the block ahead trips after trip n */
LLVMValueRef ring_slot(Irb *I, const Ring *rg, LLVMValueRef n, int ahead);
/* A producer warpgroup copies (its mbarriers at shared offset bars): the
 * barriers' init (thread 0, a block barrier after), the producer's trip n
 * before its refill, the multiplying warpgroup's wait for trip n's buffer
 * and its release */
void ring_bars_init(Irb *I, int bars, const Ring *rg, int full_count, int empty_count);
void ring_produced(Irb *I, int bars, const Ring *rg, LLVMValueRef n);
/* with copies that complete full themselves (TMA): the buffer of trip
 * n + ahead waited for until its last use released it; the full mbarrier
 * of a slot */
void ring_refill_wait(Irb *I, int bars, const Ring *rg, LLVMValueRef n);
LLVMValueRef ring_full_bar(Irb *I, int bars, const Ring *rg, LLVMValueRef slot);
void ring_take(Irb *I, int bars, const Ring *rg, LLVMValueRef n);
void ring_release(Irb *I, int bars, const Ring *rg, LLVMValueRef n);
/* the block split: threads first.. produce with prod_regs registers a
 * thread (the builder in their branch), then wg_split_multiply moves it to
 * the multiplying warpgroups', mul_regs a thread */
LLVMValueRef wg_split(Irb *I, IfBlk *f, int first, int prod_regs);
void wg_split_multiply(Irb *I, IfBlk *f, LLVMValueRef prod, int mul_regs);

/* the cp.async copies of 64 rows (row tile t) by 64 columns (from col0)
 * of a [B*L][D] bf16 tensor into a swizzled block at base, by thread tid
 * of the 128 that copy (the caller commits) */
void copy_block(Tmpl *T, const ProjLanes *p, LLVMValueRef src, LLVMValueRef t, LLVMValueRef col0, LLVMValueRef base,
                LLVMValueRef tid);
/* this warpgroup's wgmma waited for (none left in flight), the n
 * accumulator sets acc[0..n-1] (at most 2) passed through the wait */
void wg_wait_acc(Irb *I, LLVMValueRef acc[][32], int n);
/* the same of the n sets at acc[0..n-1], wherever they are held */
void wg_wait_sets(Irb *I, LLVMValueRef *acc[], int n);
/* an accumulator's row (pair r of warp w's 16 from row0) and the column
 * of its n-tile i (from base) */
LLVMValueRef acc_row(Irb *I, const ProjLanes *p, LLVMValueRef row0, int r);
LLVMValueRef acc_col(Irb *I, const ProjLanes *p, LLVMValueRef base, int i);

/* A kernel's operand plan: the contraction's blocks of 64 (nkb), A's
 * tensor and column for each, the weight blocks and the ring in shared
 * memory */
typedef struct {
	int fwd, nkb, kbh;                    /* blocks in all; per projection (K/64) */
	int producer;                         /* a copying warpgroup beside the multiplying one (WG_PRODUCER) */
	int nwg;                              /* the multiplying warpgroups (1; proj_dxdw's one a projection) */
	int split, wj;                        /* proj_fwd a warpgroup a projection (proj_fwd_split), and
	                                       * the one whose code is being emitted */
	int bars;                             /* its ring's mbarriers: full[stages], then empty[stages] */
	LLVMValueRef ctid;                    /* this thread's index among the 128 that copy */
	LLVMValueRef src[MX_MAXPROJ];         /* A's tensors: x, or the adjoints */
	int tma;                              /* their copies by TMA (WG_TMA, with a producer) */
	LLVMValueRef map[MX_MAXPROJ];         /* and then their maps */
	int wblk, ring, obuf, smem;           /* shared offsets: weight blocks, the ring, the output
	                                       * tile (epilogue); bytes in all */
	Ring rg;                              /* the ring: a buffer holds a row tile's block */
	ProjLanes p;
	LLVMValueRef ntile;
} Wg;

/* the block's threads: the multiplying warpgroups, and the producer's */
int wg_threads(const Wg *g);
/* The weight slice of every projection as bf16 blocks at wblk (proj_fwd's
 * [n][k], proj_dx's [n][m]) by the block's wg_threads */
void wg_stage_weights(Tmpl *T, const Wg *g, const KSig *s);
/* proj_dx's epilogue: a thread's 16-byte chunks of a 64 x 64 tile of dx */
enum { DX_NIT = 64 * 8 / PROJ_THREADS };
/* the 16-byte chunk c16 of row r of an output tile of fp32 sums at shared
 * offset obuf (rows of 256 bytes, chunk c16 at c16 ^ (r & 7)) */
LLVMValueRef dx_chunk(Irb *I, int obuf, LLVMValueRef r, LLVMValueRef c16);
/* a warpgroup's 32 accumulators of dx's sums into the output tile at obuf */
void dx_store_sums(Irb *I, const ProjLanes *p, int obuf, LLVMValueRef acc[32]);
/* 8 columns of dx: their own terms (4 bf16 pairs) plus their sums (2 x 4 fp32), rounded once */
LLVMValueRef dx_round(Irb *I, LLVMValueRef own, LLVMValueRef sum[2]);

#endif
