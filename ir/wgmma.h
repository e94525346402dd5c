/* Hopper's warpgroup tensor-core instructions (wgmma, sm_90a): a warpgroup
 * of 4 warps multiplies operands it reads from shared memory through
 * descriptors, asynchronously, into fp32 accumulators in its registers.
 *
 * Operands are 64 x 64 bf16 blocks of rows of 128 bytes with the 128-byte
 * swizzle (CUTLASS's Swizzle<3,4,3>): 16-byte chunk c of row r stored at
 * chunk c ^ (r & 7), blocks 1024-byte aligned (the swizzle is taken from
 * the address bits). A row holds an operand row's 64 contraction elements
 * (K-major) or one contraction row of 64 operand rows (MN-major). LLVM 19 has no
 * intrinsics for these: inline PTX, each with side effects and a memory
 * clobber so that no shared-memory access moves across it. */
#ifndef RECUR_WGMMA_H
#define RECUR_WGMMA_H
#include "irb.h"

#define WG_BLOCK 8192   /* bytes of one 64 x 64 bf16 operand block */

/* the byte offset of element (r, k) in a swizzled block (k in 0..63, even
 * k for a pair, a multiple of 8 for a chunk) */
LLVMValueRef wg_swz(Irb *I, LLVMValueRef r, LLVMValueRef k);
/* the descriptor of a 64 x 16 operand slice in a block at shared byte
 * offset block_off (1024-aligned), the slice starting at byte off inside
 * it: K-major (the block's rows are the operand's rows), the slice of
 * columns k0.. at off = 2 k0; MN-major (the block's rows are the
 * contraction, its 64 columns the operand's rows), contraction rows k0..
 * at off = 128 k0 (8-row groups 1024 bytes apart in both) */
LLVMValueRef wg_desc(Irb *I, LLVMValueRef block_off, int off);
/* acc (32 fp32 a thread, the m16n8 fragment order of warp w's rows 16w..
 * per 8-column tile) = A B^T (+ acc where accumulate): A and B 64 x 16
 * slices by their descriptors, D[m][n] = sum_k A[m][k] B[n][k]; both
 * K-major, or both MN-major (mn: wgmma's transpose bits) */
void wg_mma64(Irb *I, LLVMValueRef acc[32], LLVMValueRef da, LLVMValueRef db, int accumulate, int mn);
/* the same where whether it accumulates is known at run time (an i1; acc
 * is read either way, any value where it does not) */
void wg_mma64_if(Irb *I, LLVMValueRef acc[32], LLVMValueRef da, LLVMValueRef db, LLVMValueRef accumulate, int mn);
void wg_fence(Irb *I);                 /* wgmma.fence: registers written before are seen */
void wg_commit(Irb *I);                /* close the warpgroup's group of wgmma */
/* wait until at most pending groups fly; the n accumulators acc are read
 * after it (they pass through it) */
void wg_wait(Irb *I, int pending, LLVMValueRef *acc, int n);
/* fence.proxy.async.shared::cta: this thread's shared-memory writes (st,
 * cp.async) made visible to the wgmma that read them after a barrier */
void fence_proxy_async(Irb *I);
/* the dynamic shared array's alignment raised to 1024 bytes (the swizzled
 * blocks' atoms), for the variant's other kernels too (irb_align_smem) */
void wg_align_smem(Irb *I);

/* mbarriers: 8-byte barriers in shared memory at byte offset off (a
 * multiple of 8), arrivals counted per phase, the phases numbered from 0
 * (parity = number & 1); the block's own, so a bar_sync after the init
 * makes it visible. mbar_arrive releases this thread's writes before it,
 * mbar_wait acquires them, spinning until the phase of that parity has
 * completed (try_wait: sm_90). */
void mbar_init(Irb *I, LLVMValueRef off, int count);
void mbar_arrive(Irb *I, LLVMValueRef off);
void mbar_wait(Irb *I, LLVMValueRef off, LLVMValueRef parity);
/* mbar_arrive that also expects bytes more of the async copies completing
 * on the barrier (expect_tx: the phase completes when both are in) */
void mbar_arrive_tx(Irb *I, LLVMValueRef off, LLVMValueRef bytes);
/* TMA (sm_90): the box of the tensor map at map (a grid_constant kernel
 * parameter, irb_tensor_map_param) at coordinates c[0..2], innermost
 * first, into shared memory at byte offset dst; bytes counted on the
 * mbarrier at mbar. Rows outside the tensor land as zeros. */
void tma_load3(Irb *I, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef c[3], LLVMValueRef mbar);
/* a bulk copy of bytes (a multiple of 16) from global src (16-byte
 * aligned) to shared memory at dst, counted on the mbarrier at mbar */
void bulk_load(Irb *I, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef bytes, LLVMValueRef mbar);
/* TMA store: shared memory at byte offset src (laid out as the map's
 * box) to the map's box at c[0..2], in this thread's bulk group; rows
 * outside the tensor are not written */
void tma_store3(Irb *I, LLVMValueRef map, LLVMValueRef c[3], LLVMValueRef src);
void bulk_commit(Irb *I);            /* close this thread's bulk group */
/* wait until at most pending of this thread's bulk groups are unfinished:
 * their shared sources read (read), or their writes done and visible */
void bulk_wait(Irb *I, int pending, int read);
/* fence.proxy.async.global: global writes of the async proxy (TMA stores
 * waited for) ordered before this thread's later generic accesses and
 * releases */
void fence_proxy_async_global(Irb *I);
/* setmaxnreg (sm_90a): the executing warpgroup's registers a thread
 * raised (inc) or lowered to n, a multiple of 8 in 24..256; every warp of
 * the warpgroup runs it */
void wg_setmaxnreg(Irb *I, int inc, int n);

#endif
