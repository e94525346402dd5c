/* Hopper's warpgroup tensor-core instructions (see wgmma.h). */
#include "wgmma.h"
#include "diag.h"
#include <stdio.h>

LLVMValueRef wg_swz(Irb *I, LLVMValueRef r, LLVMValueRef k)
{
	LLVMValueRef chunk = LLVMBuildXor(I->b, LLVMBuildLShr(I->b, k, ci32(I, 3), ""), LLVMBuildAnd(I->b, r, ci32(I, 7), ""), "");
	return iadd(I, imul(I, r, ci32(I, 128)), iadd(I, imul(I, chunk, ci32(I, 16)), imul(I, LLVMBuildAnd(I->b, k, ci32(I, 7), ""),
	                                                                               ci32(I, 2))));
}

/* a shared byte offset as the 32-bit shared address inline PTX takes */
static LLVMValueRef smem_addr32(Irb *I, LLVMValueRef off)
{
	return LLVMBuildPtrToInt(I->b, smem_ptr(I, off), I->i32, "");
}

/* bits 0-13: the start address / 16; 16-29: the leading byte offset / 16
 * (unused by swizzled K-major operands whose 16 columns lie in one 128-byte
 * row: 1); 32-45: the stride byte offset / 16, 1024 between groups of 8
 * rows; 62-63: 1, the 128-byte swizzle */
LLVMValueRef wg_desc(Irb *I, LLVMValueRef block_off, int off)
{
	LLVMValueRef addr = smem_addr32(I, iadd(I, block_off, ci32(I, off)));
	LLVMValueRef lo = LLVMBuildAnd(I->b, LLVMBuildLShr(I->b, addr, ci32(I, 4), ""), ci32(I, 0x3fff), "");
	unsigned long long hi = (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
	return LLVMBuildOr(I->b, LLVMBuildZExt(I->b, lo, I->i64, ""), ci64(I, (long long)hi), "");
}

/* Constraints of n fp32 outputs $0.. and, where tied, the n inputs read
 * in their registers ("=f,...,0,1,..."), then rest */
static void f32_cons(char *cons, size_t size, int n, int tied, const char *rest)
{
	int ct = 0;
	for (int i = 0; i < n; i++)
		ct += snprintf(cons + ct, size - (size_t)ct, "=f,");
	for (int i = 0; tied && i < n; i++)
		ct += snprintf(cons + ct, size - (size_t)ct, "%d,", i);
	ct += snprintf(cons + ct, size - (size_t)ct, "%s", rest);
	CHECK(ct > 0 && (size_t)ct < size);
}

/* tied: the accumulators are inputs too; scale: scale-d's value (0:
 * D = A B^T, else D += A B^T) */
static void mma64(Irb *I, LLVMValueRef acc[32], LLVMValueRef da, LLVMValueRef db, int tied, LLVMValueRef scale, int mn)
{
	/* operands: $0..$31 the accumulators out, $32..$63 in (tied) where
	 * accumulating, then the two descriptors and scale-d */
	char as[1024], cons[512];
	int at = 0, nin = tied ? 32 : 0;
	at += snprintf(as + at, sizeof as - (size_t)at, "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $%d, 0;\n\t"
	               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {", 32 + nin + 2);
	for (int i = 0; i < 32; i++)
		at += snprintf(as + at, sizeof as - (size_t)at, "%s$%d", i ? ", " : "", i);
	at += snprintf(as + at, sizeof as - (size_t)at, "}, $%d, $%d, p, 1, 1, %d, %d;\n\t}", 32 + nin, 33 + nin, !!mn, !!mn);
	CHECK(at > 0 && (size_t)at < sizeof as);
	f32_cons(cons, sizeof cons, 32, tied, "l,l,r,~{memory}");
	LLVMTypeRef f32s[32], in[35];
	LLVMValueRef args[35];
	for (int i = 0; i < 32; i++)
		f32s[i] = I->f32;
	for (int i = 0; i < nin; i++) {
		in[i] = I->f32;
		args[i] = acc[i];
	}
	in[nin] = in[nin + 1] = I->i64;
	in[nin + 2] = I->i32;
	args[nin] = da;
	args[nin + 1] = db;
	args[nin + 2] = scale;
	LLVMTypeRef rt = LLVMStructTypeInContext(I->ctx, f32s, 32, 0);
	LLVMTypeRef fty = LLVMFunctionType(rt, in, (unsigned)(nin + 3), 0);
	LLVMValueRef r = LLVMBuildCall2(I->b, fty, irb_asm(fty, as, cons, 1), args, (unsigned)(nin + 3), "");
	for (unsigned i = 0; i < 32; i++)
		acc[i] = LLVMBuildExtractValue(I->b, r, i, "");
}

void wg_mma64(Irb *I, LLVMValueRef acc[32], LLVMValueRef da, LLVMValueRef db, int accumulate, int mn)
{
	mma64(I, acc, da, db, accumulate, ci32(I, accumulate), mn);
}

void wg_mma64_if(Irb *I, LLVMValueRef acc[32], LLVMValueRef da, LLVMValueRef db, LLVMValueRef accumulate, int mn)
{
	mma64(I, acc, da, db, 1, LLVMBuildZExt(I->b, accumulate, I->i32, ""), mn);
}

static void asm0(Irb *I, const char *as)
{
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, NULL, 0, 0);
	LLVMBuildCall2(I->b, fty, irb_asm(fty, as, "~{memory}", 1), NULL, 0, "");
}

void wg_fence(Irb *I) { asm0(I, "wgmma.fence.sync.aligned;"); }
void wg_commit(Irb *I) { asm0(I, "wgmma.commit_group.sync.aligned;"); }
void fence_proxy_async(Irb *I) { asm0(I, "fence.proxy.async.shared::cta;"); }

/* The wait, its accumulators passed through it: values the compiler could
 * otherwise read (or copy) before the wgmma that write them are done. */
void wg_wait(Irb *I, int pending, LLVMValueRef *acc, int n)
{
	char as[64], cons[512];
	CHECK(n >= 0 && n <= 64);
	snprintf(as, sizeof as, "wgmma.wait_group.sync.aligned %d;", pending);
	f32_cons(cons, sizeof cons, n, 1, "~{memory}");
	LLVMTypeRef f32s[64];
	for (int i = 0; i < n; i++)
		f32s[i] = I->f32;
	LLVMTypeRef rt = n ? LLVMStructTypeInContext(I->ctx, f32s, (unsigned)n, 0) : I->voidt;
	LLVMTypeRef fty = LLVMFunctionType(rt, f32s, (unsigned)n, 0);
	LLVMValueRef r = LLVMBuildCall2(I->b, fty, irb_asm(fty, as, cons, 1), acc, (unsigned)n, "");
	for (unsigned i = 0; i < (unsigned)n; i++)
		acc[i] = LLVMBuildExtractValue(I->b, r, i, "");
}

void wg_align_smem(Irb *I) { irb_align_smem(I, 1024); }

void mbar_init(Irb *I, LLVMValueRef off, int count)
{
	LLVMTypeRef in[2] = { I->i32, I->i32 };
	LLVMValueRef args[2] = { smem_addr32(I, off), ci32(I, count) };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 2, 0);
	LLVMBuildCall2(I->b, fty, irb_asm(fty, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", 1), args, 2, "");
}

void mbar_arrive(Irb *I, LLVMValueRef off)
{
	LLVMTypeRef in[1] = { I->i32 };
	LLVMValueRef args[1] = { smem_addr32(I, off) };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 1, 0);
	LLVMBuildCall2(I->b, fty, irb_asm(fty, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", 1), args, 1, "");
}

/* a loop of try_wait (each may suspend the thread a while in hardware) */
void mbar_wait(Irb *I, LLVMValueRef off, LLVMValueRef parity)
{
	LLVMTypeRef in[2] = { I->i32, I->i32 };
	LLVMValueRef args[2] = { smem_addr32(I, off), parity };
	LLVMTypeRef fty = LLVMFunctionType(I->i32, in, 2, 0);
	LLVMValueRef tw = irb_asm(fty, "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n\t"
	                               "selp.u32 $0, 1, 0, p;\n\t}", "=r,r,r,~{memory}", 1);
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "mbar_wait");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "mbar_done");
	LLVMBuildBr(I->b, spin);
	LLVMPositionBuilderAtEnd(I->b, spin);
	LLVMValueRef ok = LLVMBuildCall2(I->b, fty, tw, args, 2, "");
	LLVMBuildCondBr(I->b, LLVMBuildICmp(I->b, LLVMIntNE, ok, ci32(I, 0), ""), done, spin);
	LLVMPositionBuilderAtEnd(I->b, done);
}

void mbar_arrive_tx(Irb *I, LLVMValueRef off, LLVMValueRef bytes)
{
	LLVMTypeRef in[2] = { I->i32, I->i32 };
	LLVMValueRef args[2] = { smem_addr32(I, off), bytes };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 2, 0);
	LLVMBuildCall2(I->b, fty, irb_asm(fty, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}", 1),
	               args, 2, "");
}

void tma_load3(Irb *I, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef c[3], LLVMValueRef mbar)
{
	LLVMTypeRef in[6] = { I->i32, I->ptr, I->i32, I->i32, I->i32, I->i32 };
	LLVMValueRef args[6] = { smem_addr32(I, dst), map, c[0], c[1], c[2], smem_addr32(I, mbar) };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 6, 0);
	LLVMBuildCall2(I->b, fty,
	               irb_asm(fty, "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
	                            "[$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r,~{memory}", 1),
	               args, 6, "");
}

void bulk_load(Irb *I, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef bytes, LLVMValueRef mbar)
{
	LLVMTypeRef in[4] = { I->i32, I->gptr, I->i32, I->i32 };
	LLVMValueRef args[4] = { smem_addr32(I, dst), src, bytes, smem_addr32(I, mbar) };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 4, 0);
	LLVMBuildCall2(I->b, fty,
	               irb_asm(fty, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
	                       "r,l,r,r,~{memory}", 1),
	               args, 4, "");
}

void tma_store3(Irb *I, LLVMValueRef map, LLVMValueRef c[3], LLVMValueRef src)
{
	LLVMTypeRef in[5] = { I->ptr, I->i32, I->i32, I->i32, I->i32 };
	LLVMValueRef args[5] = { map, c[0], c[1], c[2], smem_addr32(I, src) };
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, in, 5, 0);
	LLVMBuildCall2(I->b, fty,
	               irb_asm(fty, "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [$0, {$1, $2, $3}], [$4];",
	                       "l,r,r,r,r,~{memory}", 1),
	               args, 5, "");
}

void bulk_commit(Irb *I) { asm0(I, "cp.async.bulk.commit_group;"); }

void bulk_wait(Irb *I, int pending, int read)
{
	char as[64];
	CHECK(pending >= 0 && pending <= 63);
	snprintf(as, sizeof as, "cp.async.bulk.wait_group%s %d;", read ? ".read" : "", pending);
	asm0(I, as);
}

void fence_proxy_async_global(Irb *I) { asm0(I, "fence.proxy.async.global;"); }

void wg_setmaxnreg(Irb *I, int inc, int n)
{
	CHECK(n >= 24 && n <= 256 && n % 8 == 0);
	char as[64];
	snprintf(as, sizeof as, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec", n);
	asm0(I, as);
}
