/* IR builder helpers for NVPTX kernels through the LLVM C API.
 *
 * Templates read like the CUDA they stand for: mutable values are stack
 * slots (Var) that SROA/mem2reg turn back into registers at O3, loops are
 * begin/end pairs, and the handful of NVPTX operations the kernels need
 * (special registers, shuffles, barriers, bf16 mma, fast special functions)
 * are one call each. Every float instruction carries the `contract` flag so
 * the backend fuses multiply-adds (the C API's target machine does not).
 */
#ifndef RECUR_IRB_H
#define RECUR_IRB_H

#include <llvm-c/Core.h>
#include <stdint.h>

enum { AS_GLOBAL = 1, AS_SHARED = 3 };

/* Each kernel goes into a module of its own, so that gen can key, build
 * and share a kernel at a time (gen/kernels.h); a variant's kernels are
 * its modules in order. */
enum { IRB_MAXPART = 32 };

typedef struct {
	LLVMContextRef ctx;
	char name[160];           /* the variant's */
	LLVMModuleRef mod;        /* the module of the kernel being built (part[npart - 1]) */
	LLVMModuleRef part[IRB_MAXPART];   /* every kernel's module, in the order they were declared */
	int npart;
	unsigned smem_align;      /* the shared array's alignment: the most any kernel of the variant asks */
	LLVMBuilderRef b;
	LLVMValueRef fn;          /* the kernel being built */
	LLVMValueRef smem;        /* dynamic shared memory base (addrspace 3 i8*) of mod */
	LLVMTypeRef i1, i8, i16, i32, i64, f32, bf16, v2i32, gptr, sptr, voidt;
	LLVMTypeRef ptr;          /* generic: a tensor map parameter's (irb_tensor_map_param) */
	LLVMValueRef entry_alloca_pt; /* allocas are placed at the top of the entry block */
	LLVMBasicBlockRef entry;
	/* where only some of a block's threads run a part of a kernel (a
	 * warp-specialised one), their barrier for bar_sync and bar_or: named
	 * barrier bar_id of bar_n threads; bar_n 0 is the whole block's */
	int bar_id, bar_n;
} Irb;

typedef struct { LLVMValueRef slot; LLVMTypeRef ty; } Var;

typedef struct {
	LLVMBasicBlockRef head, body, exit;
	Var i;
	LLVMValueRef end, step;
	int unroll;        /* > 0: ask LLVM to unroll by this count (llvm.loop.unroll.count) */
} Loop;

/* name: the variant's, given to its kernels' modules (name.kernel) */
void irb_init(Irb *I, LLVMContextRef ctx, const char *name);
/* after the last kernel: the builder freed, and every kernel's shared array
 * given the alignment the most demanding asks (as one module's array
 * shared by all would have: their PTX as it was when a variant was one
 * module). The modules stay the caller's, part[0..npart-1]. */
void irb_dispose(Irb *I);
/* the shared array's alignment raised to at least align, for every kernel
 * of the variant (irb_dispose gives the others theirs) */
void irb_align_smem(Irb *I, unsigned align);

/* Declares a kernel (PTX kernel calling convention, .maxntid, .minnctapersm
 * minctasm) with nargs parameters of the given types; pointer params get noalias.
 * It goes into a new module of its own, part[npart++], with the shared array. */
LLVMValueRef irb_kernel(Irb *I, const char *name, LLVMTypeRef *types, int nargs, int maxntid, int minctasm);
LLVMValueRef irb_arg(Irb *I, int i);
/* an inline PTX block of type fty (constraints cons): for the instructions
 * LLVM 19 has no intrinsic for; side_effects keeps it in place */
LLVMValueRef irb_asm(LLVMTypeRef fty, const char *as, const char *cons, int side_effects);
/* pointer parameter i of the kernel being built may share memory with
 * another (it loses irb_kernel's noalias) */
void irb_may_alias(Irb *I, int i);
/* parameters idx[0..n-1] (of type I->ptr) made TMA tensor maps passed by
 * value: 128 bytes, 64-byte aligned, read where they lie in the parameter
 * space (grid_constant: their addresses taken with no local copy). Once a
 * kernel: LLVM reads one grid_constant annotation of a function */
void irb_tensor_map_params(Irb *I, const int *idx, int n);
void irb_ret(Irb *I);
/* A block on the kernel's straight path, entered here and left for a new
 * block the builder continues in: values emitted later before its
 * terminator dominate everything built after this call (hoisting) */
LLVMBasicBlockRef irb_hoist_block(Irb *I);

/* constants */
LLVMValueRef ci32(Irb *I, int64_t v);
LLVMValueRef ci64(Irb *I, int64_t v);
LLVMValueRef cf32(Irb *I, double v);

/* variables */
Var var_new(Irb *I, LLVMTypeRef ty, const char *name);
Var var_init(Irb *I, LLVMValueRef v, const char *name);
LLVMValueRef var_get(Irb *I, Var v);
void var_set(Irb *I, Var v, LLVMValueRef x);

/* loops: for (i = start; i < end; i += step) and reverse (i = end-step down to start) */
void loop_begin(Irb *I, Loop *L, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step, const char *name);
void loop_end(Irb *I, Loop *L);
LLVMValueRef loop_i(Irb *I, Loop *L);
/* if (cond) { ... } */
typedef struct { LLVMBasicBlockRef then, done; } IfBlk;
void if_begin(Irb *I, IfBlk *f, LLVMValueRef cond, const char *name);
void if_end(Irb *I, IfBlk *f);

/* integer and float arithmetic (float ops carry the contract flag) */
LLVMValueRef iadd(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef isub(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef imul(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef idiv(Irb *I, LLVMValueRef a, LLVMValueRef b);    /* signed */
LLVMValueRef ilt(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef ige(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef ieq(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef land(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef sext64(Irb *I, LLVMValueRef a);
LLVMValueRef fadd(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fsub(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fmul(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fdiv(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fneg(Irb *I, LLVMValueRef a);
LLVMValueRef fgt(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fsel(Irb *I, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fmaxf_(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fminf_(Irb *I, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fabs_(Irb *I, LLVMValueRef a);
LLVMValueRef fmaxnum_(Irb *I, LLVMValueRef a, LLVMValueRef b);   /* max.f32; NaN loses */
LLVMValueRef b2f(Irb *I, LLVMValueRef i1v);                     /* bool -> 0.0 / 1.0 */

/* fast special functions (ex2/lg2/rcp/sqrt approximations of the SFU) */
LLVMValueRef f_exp(Irb *I, LLVMValueRef a);
LLVMValueRef f_exp2(Irb *I, LLVMValueRef a);   /* 2^a, one SFU op */
LLVMValueRef f_log(Irb *I, LLVMValueRef a);
LLVMValueRef f_rcp(Irb *I, LLVMValueRef a);
LLVMValueRef f_sqrt(Irb *I, LLVMValueRef a);
LLVMValueRef f_rsqrt(Irb *I, LLVMValueRef a);
LLVMValueRef f_tanh(Irb *I, LLVMValueRef a);

/* memory */
LLVMValueRef gep_f32(Irb *I, LLVMValueRef base, LLVMValueRef idx64);   /* global float* + idx */
LLVMValueRef gep_bf16(Irb *I, LLVMValueRef base, LLVMValueRef idx64);  /* global bf16* + idx */
LLVMValueRef ld(Irb *I, LLVMTypeRef ty, LLVMValueRef p, int align);
void st(Irb *I, LLVMValueRef v, LLVMValueRef p, int align);
LLVMValueRef smem_ptr(Irb *I, LLVMValueRef byte_off32);              /* shared i8* */
/* the byte at global p (zero-extended) where ok != 0, else 0; no branch, p unread where ok = 0 */
LLVMValueRef ld_u8_if(Irb *I, LLVMValueRef p, LLVMValueRef ok);
/* 16 bytes from global src to shared byte offset dst32, without passing
 * through registers (cp.async.cg, sm_80+): src_bytes (i32, 0 or 16) of
 * them read, the rest zeros; cp_async_wait_all then a barrier before any
 * thread reads them */
void cp_async16(Irb *I, LLVMValueRef dst32, LLVMValueRef src, LLVMValueRef src_bytes);
/* a hint: the line holding global address p into L2 (no register waits on it) */
void prefetch_l2(Irb *I, LLVMValueRef p);
void cp_async_wait_all(Irb *I);                 /* commit, then wait for every group */
void cp_async_commit(Irb *I);                   /* close this thread's group of copies */
void cp_async_wait(Irb *I, int pending);        /* wait until at most pending groups fly */
/* Cross-block communication through global memory (look-back): volatile
 * accesses go to L2 every time, never a stale L1 line or a load hoisted
 * out of a spin loop. */
LLVMValueRef ld_volatile(Irb *I, LLVMTypeRef ty, LLVMValueRef p, int align);
void st_volatile(Irb *I, LLVMValueRef v, LLVMValueRef p, int align);
LLVMValueRef atom_add_u32(Irb *I, LLVMValueRef gp, LLVMValueRef v);   /* old value, relaxed */
/* bf16 pairs */
LLVMValueRef bf16_to_f32(Irb *I, LLVMValueRef bf);
LLVMValueRef f32_to_bf16(Irb *I, LLVMValueRef f);
LLVMValueRef pack_bf16x2(Irb *I, LLVMValueRef lo_f32, LLVMValueRef hi_f32);  /* -> i32 */
LLVMValueRef unpack_bf16_lo(Irb *I, LLVMValueRef i32v);   /* -> f32 */
LLVMValueRef unpack_bf16_hi(Irb *I, LLVMValueRef i32v);
/* fp16 pairs */
LLVMValueRef pack_f16x2(Irb *I, LLVMValueRef lo_f32, LLVMValueRef hi_f32);   /* -> i32 */
LLVMValueRef unpack_f16(Irb *I, LLVMValueRef i32v, int hi);                  /* half lo or hi -> f32 */

/* NVPTX */
LLVMValueRef tid_x(Irb *I);
LLVMValueRef ctaid(Irb *I, int dim);
LLVMValueRef nctaid(Irb *I, int dim);
void bar_sync(Irb *I);                                   /* __syncthreads (or I->bar_id's) */
LLVMValueRef bar_or(Irb *I, LLVMValueRef pred_i1);       /* __syncthreads_or (or I->bar_id's): i1 */
LLVMValueRef warp_any(Irb *I, LLVMValueRef pred_i1);     /* vote.any over the full warp: i1 */
void fence_gpu(Irb *I);                                  /* membar.gl (__threadfence) */
void bar_named(Irb *I, LLVMValueRef id, int nthreads);   /* bar.sync id, n */
/* shfl.sync with full mask; clamp as in PTX c operand */
LLVMValueRef shfl_up_f(Irb *I, LLVMValueRef v, int delta);
LLVMValueRef shfl_down_f(Irb *I, LLVMValueRef v, int delta);
LLVMValueRef shfl_idx_f(Irb *I, LLVMValueRef v, LLVMValueRef lane);
LLVMValueRef shfl_xor_f(Irb *I, LLVMValueRef v, int mask);
/* d[4] = a[4] x b[2] + c[4], mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 */
void mma_bf16(Irb *I, LLVMValueRef d[4], LLVMValueRef a[4], LLVMValueRef b[2], LLVMValueRef c[4]);
/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lanes 8m..8m+7 give the
 * shared byte offsets of the 16-byte rows of matrix m; d[m] is this lane's
 * word of matrix m (row lane/4, columns 2(lane%4), +1; transposed: column
 * lane/4, rows 2(lane%4), +1) */
void ldsm_x4(Irb *I, LLVMValueRef d[4], LLVMValueRef row_off32, int trans);
/* Thread-block clusters (sm_90). A launch without cluster dimensions is a
 * cluster of one block, so these are valid in every launch. */
LLVMValueRef cluster_rank(Irb *I);     /* %cluster_ctarank */
LLVMValueRef cluster_nrank(Irb *I);    /* %cluster_nctarank */
LLVMValueRef cluster_id_x(Irb *I);     /* %clusterid.x */
/* barrier.cluster arrive + wait: shared-memory writes of every block of
 * the cluster before it are visible to all after it (release / acquire) */
void cluster_sync(Irb *I);
/* llvm.trap (PTX trap): the launch fails with an illegal-instruction error */
void irb_trap(Irb *I);
/* griddepcontrol.wait: until the grids this one was launched early behind
 * (programmatic dependent launch) have finished and their memory is
 * visible; at once when it was launched normally */
void grid_dep_wait(Irb *I);
/* 16 bytes at shared byte offset off32 of the cluster's block `rank`
 * (mapa + ld.shared::cluster) into v[4] */
void ld_cluster_v4(Irb *I, LLVMValueRef v[4], LLVMValueRef off32, LLVMValueRef rank);

#endif
