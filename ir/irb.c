/* IR builder helpers for NVPTX kernels (see irb.h). */
#include "irb.h"
#include "diag.h"
#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <string.h>

void irb_init(Irb *I, LLVMContextRef ctx, const char *name)
{
	memset(I, 0, sizeof *I);
	I->ctx = ctx;
	snprintf(I->name, sizeof I->name, "%s", name);
	I->smem_align = 16;
	I->b = LLVMCreateBuilderInContext(ctx);
	I->i1 = LLVMInt1TypeInContext(ctx);
	I->i8 = LLVMInt8TypeInContext(ctx);
	I->i16 = LLVMInt16TypeInContext(ctx);
	I->i32 = LLVMInt32TypeInContext(ctx);
	I->i64 = LLVMInt64TypeInContext(ctx);
	I->f32 = LLVMFloatTypeInContext(ctx);
	I->bf16 = LLVMBFloatTypeInContext(ctx);
	I->v2i32 = LLVMVectorType(I->i32, 2);
	I->gptr = LLVMPointerTypeInContext(ctx, AS_GLOBAL);
	I->sptr = LLVMPointerTypeInContext(ctx, AS_SHARED);
	I->ptr = LLVMPointerTypeInContext(ctx, 0);
	I->voidt = LLVMVoidTypeInContext(ctx);
}

void irb_dispose(Irb *I)
{
	LLVMDisposeBuilder(I->b);
	I->b = NULL;
	for (int i = 0; i < I->npart; i++) {
		LLVMValueRef g = LLVMGetNamedGlobal(I->part[i], "recur_smem");
		CHECK(g != NULL);
		LLVMSetAlignment(g, I->smem_align);
	}
}

void irb_align_smem(Irb *I, unsigned align)
{
	if (align > I->smem_align)
		I->smem_align = align;
	LLVMSetAlignment(I->smem, I->smem_align);
}

/* A new module for the next kernel, with its dynamic shared array:
 * extern __shared__ char smem[]. */
static void new_part(Irb *I, const char *kernel)
{
	CHECK(I->npart < IRB_MAXPART);
	char name[sizeof I->name + 100];
	snprintf(name, sizeof name, "%s.%s", I->name, kernel);
	I->mod = I->part[I->npart++] = LLVMModuleCreateWithNameInContext(name, I->ctx);
	CHECK(I->mod);
	I->smem = LLVMAddGlobalInAddressSpace(I->mod, LLVMArrayType(I->i8, 0), "recur_smem", AS_SHARED);
	LLVMSetLinkage(I->smem, LLVMExternalLinkage);
	LLVMSetAlignment(I->smem, I->smem_align);
}

LLVMValueRef irb_asm(LLVMTypeRef fty, const char *as, const char *cons, int side_effects)
{
	return LLVMGetInlineAsm(fty, (char *)as, strlen(as), (char *)cons, strlen(cons), side_effects, 0,
	                        LLVMInlineAsmDialectATT, 0);
}

static void add_attr(Irb *I, LLVMValueRef fn, unsigned idx, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	CHECK(kind != 0);
	LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(I->ctx, kind, 0));
}

LLVMValueRef irb_kernel(Irb *I, const char *name, LLVMTypeRef *types, int nargs, int maxntid, int minctasm)
{
	new_part(I, name);
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, types, (unsigned)nargs, 0);
	LLVMValueRef fn = LLVMAddFunction(I->mod, name, fty);
	/* Without the PTX kernel calling convention the function is emitted as a
	 * .func that ptxas accepts and nobody can launch. */
	LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
	for (int i = 0; i < nargs; i++)
		if (LLVMGetTypeKind(types[i]) == LLVMPointerTypeKind)
			add_attr(I, fn, (unsigned)i + 1, "noalias");
	/* .maxntid lets ptxas budget registers for the real block size. */
	/* (the nvvm.annotations form is understood by every LLVM >= 17) */
	LLVMMetadataRef ops[3] = {
		LLVMValueAsMetadata(fn),
		LLVMMDStringInContext2(I->ctx, "maxntidx", 8),
		LLVMValueAsMetadata(LLVMConstInt(I->i32, (unsigned long long)maxntid, 0)),
	};
	LLVMAddNamedMetadataOperand(I->mod, "nvvm.annotations",
		LLVMMetadataAsValue(I->ctx, LLVMMDNodeInContext2(I->ctx, ops, 3)));
	/* .minnctapersm: at 1, ptxas does not cap a 256-thread kernel at 128
	 * registers (two blocks per SM) and spill rather than use more; a
	 * latency-bound kernel asks for more blocks per SM instead */
	LLVMMetadataRef mn[3] = {
		LLVMValueAsMetadata(fn),
		LLVMMDStringInContext2(I->ctx, "minctasm", 8),
		LLVMValueAsMetadata(LLVMConstInt(I->i32, (unsigned long long)(minctasm > 0 ? minctasm : 1), 0)),
	};
	LLVMAddNamedMetadataOperand(I->mod, "nvvm.annotations",
		LLVMMetadataAsValue(I->ctx, LLVMMDNodeInContext2(I->ctx, mn, 3)));
	I->fn = fn;
	I->entry = LLVMAppendBasicBlockInContext(I->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(I->b, I->entry);
	return fn;
}

void irb_may_alias(Irb *I, int i)
{
	unsigned kind = LLVMGetEnumAttributeKindForName("noalias", 7);
	CHECK(kind != 0);
	LLVMRemoveEnumAttributeAtIndex(I->fn, (unsigned)i + 1, kind);
}

void irb_tensor_map_params(Irb *I, const int *idx, int n)
{
	unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5), align = LLVMGetEnumAttributeKindForName("align", 5);
	LLVMMetadataRef which[16];
	CHECK(byval && align && n > 0 && n <= 16);
	for (int k = 0; k < n; k++) {
		unsigned at = (unsigned)idx[k] + 1;   /* attributes and NVVM's annotation count parameters from 1 */
		CHECK(LLVMTypeOf(LLVMGetParam(I->fn, (unsigned)idx[k])) == I->ptr);
		LLVMAddAttributeAtIndex(I->fn, at, LLVMCreateTypeAttribute(I->ctx, byval, LLVMArrayType2(I->i8, 128)));
		LLVMAddAttributeAtIndex(I->fn, at, LLVMCreateEnumAttribute(I->ctx, align, 64));
		which[k] = LLVMValueAsMetadata(LLVMConstInt(I->i32, at, 0));
	}
	LLVMMetadataRef ops[3] = {
		LLVMValueAsMetadata(I->fn),
		LLVMMDStringInContext2(I->ctx, "grid_constant", 13),
		LLVMMDNodeInContext2(I->ctx, which, (size_t)n),
	};
	LLVMAddNamedMetadataOperand(I->mod, "nvvm.annotations",
		LLVMMetadataAsValue(I->ctx, LLVMMDNodeInContext2(I->ctx, ops, 3)));
}

LLVMValueRef irb_arg(Irb *I, int i) { return LLVMGetParam(I->fn, (unsigned)i); }
void irb_ret(Irb *I) { LLVMBuildRetVoid(I->b); }

LLVMBasicBlockRef irb_hoist_block(Irb *I)
{
	LLVMBasicBlockRef h = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "hoist");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "body");
	LLVMBuildBr(I->b, h);
	LLVMPositionBuilderAtEnd(I->b, h);
	LLVMBuildBr(I->b, body);
	LLVMPositionBuilderAtEnd(I->b, body);
	return h;
}

LLVMValueRef ci32(Irb *I, int64_t v) { return LLVMConstInt(I->i32, (unsigned long long)v, 1); }
LLVMValueRef ci64(Irb *I, int64_t v) { return LLVMConstInt(I->i64, (unsigned long long)v, 1); }
LLVMValueRef cf32(Irb *I, double v) { return LLVMConstReal(I->f32, v); }

Var var_new(Irb *I, LLVMTypeRef ty, const char *name)
{
	/* allocas at the top of the entry block so mem2reg promotes them */
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(I->b);
	LLVMValueRef first = LLVMGetFirstInstruction(I->entry);
	if (first)
		LLVMPositionBuilderBefore(I->b, first);
	else
		LLVMPositionBuilderAtEnd(I->b, I->entry);
	Var v = { LLVMBuildAlloca(I->b, ty, name), ty };
	LLVMPositionBuilderAtEnd(I->b, cur);
	return v;
}

Var var_init(Irb *I, LLVMValueRef x, const char *name)
{
	Var v = var_new(I, LLVMTypeOf(x), name);
	var_set(I, v, x);
	return v;
}

LLVMValueRef var_get(Irb *I, Var v) { return LLVMBuildLoad2(I->b, v.ty, v.slot, ""); }
void var_set(Irb *I, Var v, LLVMValueRef x) { LLVMBuildStore(I->b, x, v.slot); }

void loop_begin(Irb *I, Loop *L, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step, const char *name)
{
	L->i = var_init(I, start, name);
	L->unroll = 0;
	L->end = end;
	L->step = step;
	L->head = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "loop.head");
	L->body = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "loop.body");
	L->exit = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "loop.exit");
	LLVMBuildBr(I->b, L->head);
	LLVMPositionBuilderAtEnd(I->b, L->head);
	LLVMValueRef c = LLVMBuildICmp(I->b, LLVMIntSLT, var_get(I, L->i), end, "");
	LLVMBuildCondBr(I->b, c, L->body, L->exit);
	LLVMPositionBuilderAtEnd(I->b, L->body);
}

LLVMValueRef loop_i(Irb *I, Loop *L) { return var_get(I, L->i); }

void loop_end(Irb *I, Loop *L)
{
	var_set(I, L->i, iadd(I, var_get(I, L->i), L->step));
	LLVMValueRef br = LLVMBuildBr(I->b, L->head);
	if (L->unroll > 1) {
		/* distinct self-referential loop id: !{!self, !{"llvm.loop.unroll.count", i32 n}} */
		LLVMMetadataRef cnt[2] = {
			LLVMMDStringInContext2(I->ctx, "llvm.loop.unroll.count", 22),
			LLVMValueAsMetadata(LLVMConstInt(I->i32, (unsigned long long)L->unroll, 0)),
		};
		LLVMMetadataRef tmp = LLVMTemporaryMDNode(I->ctx, NULL, 0);
		LLVMMetadataRef ops[2] = { tmp, LLVMMDNodeInContext2(I->ctx, cnt, 2) };
		LLVMMetadataRef id = LLVMMDNodeInContext2(I->ctx, ops, 2);
		LLVMMetadataReplaceAllUsesWith(tmp, id);
		LLVMSetMetadata(br, LLVMGetMDKindIDInContext(I->ctx, "llvm.loop", 9), LLVMMetadataAsValue(I->ctx, id));
	}
	LLVMPositionBuilderAtEnd(I->b, L->exit);
}

void if_begin(Irb *I, IfBlk *f, LLVMValueRef cond, const char *name)
{
	f->then = LLVMAppendBasicBlockInContext(I->ctx, I->fn, name);
	f->done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "endif");
	LLVMBuildCondBr(I->b, cond, f->then, f->done);
	LLVMPositionBuilderAtEnd(I->b, f->then);
}

void if_end(Irb *I, IfBlk *f)
{
	LLVMBuildBr(I->b, f->done);
	LLVMPositionBuilderAtEnd(I->b, f->done);
}

LLVMValueRef iadd(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(I->b, a, b, ""); }
LLVMValueRef isub(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(I->b, a, b, ""); }
LLVMValueRef imul(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(I->b, a, b, ""); }
LLVMValueRef idiv(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSDiv(I->b, a, b, ""); }
LLVMValueRef ilt(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(I->b, LLVMIntSLT, a, b, ""); }
LLVMValueRef ige(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(I->b, LLVMIntSGE, a, b, ""); }
LLVMValueRef ieq(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(I->b, LLVMIntEQ, a, b, ""); }
LLVMValueRef land(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(I->b, a, b, ""); }
LLVMValueRef sext64(Irb *I, LLVMValueRef a) { return LLVMBuildSExt(I->b, a, I->i64, ""); }

static LLVMValueRef contract(LLVMValueRef v)
{
	if (LLVMIsAInstruction(v))
		LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
	return v;
}

LLVMValueRef fadd(Irb *I, LLVMValueRef a, LLVMValueRef b) { return contract(LLVMBuildFAdd(I->b, a, b, "")); }
LLVMValueRef fsub(Irb *I, LLVMValueRef a, LLVMValueRef b) { return contract(LLVMBuildFSub(I->b, a, b, "")); }
LLVMValueRef fmul(Irb *I, LLVMValueRef a, LLVMValueRef b) { return contract(LLVMBuildFMul(I->b, a, b, "")); }
LLVMValueRef fdiv(Irb *I, LLVMValueRef a, LLVMValueRef b) { return fmul(I, a, f_rcp(I, b)); }
LLVMValueRef fneg(Irb *I, LLVMValueRef a) { return LLVMBuildFNeg(I->b, a, ""); }
LLVMValueRef fgt(Irb *I, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFCmp(I->b, LLVMRealOGT, a, b, ""); }
LLVMValueRef fsel(Irb *I, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(I->b, c, a, b, ""); }
LLVMValueRef fmaxf_(Irb *I, LLVMValueRef a, LLVMValueRef b) { return fsel(I, fgt(I, a, b), a, b); }
LLVMValueRef fminf_(Irb *I, LLVMValueRef a, LLVMValueRef b) { return fsel(I, fgt(I, a, b), b, a); }
LLVMValueRef b2f(Irb *I, LLVMValueRef c) { return LLVMBuildUIToFP(I->b, c, I->f32, ""); }

static LLVMValueRef call_intr(Irb *I, const char *name, LLVMTypeRef *ovl, int novl, LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (id == 0)
		DIE("unknown intrinsic %s", name);
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(I->mod, id, ovl, (size_t)novl);
	LLVMTypeRef fty = LLVMIntrinsicGetType(I->ctx, id, ovl, (size_t)novl);
	return LLVMBuildCall2(I->b, fty, f, args, (unsigned)nargs, "");
}

LLVMValueRef fabs_(Irb *I, LLVMValueRef a)
{
	return call_intr(I, "llvm.fabs", &I->f32, 1, &a, 1);
}

/* max.f32: one instruction where fmaxf_'s compare-and-select keeps two
 * (a NaN operand gives the other one) */
LLVMValueRef fmaxnum_(Irb *I, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef args[2] = { a, b };
	return call_intr(I, "llvm.maxnum", &I->f32, 1, args, 2);
}

/* exp(x) = 2^(x log2 e) on the SFU; relative error ~2^-22, far inside the
 * spec's 1e-2 and below bf16 rounding of the outputs. */
LLVMValueRef f_exp(Irb *I, LLVMValueRef a)
{
	return f_exp2(I, fmul(I, a, cf32(I, 1.4426950408889634)));
}

LLVMValueRef f_exp2(Irb *I, LLVMValueRef a)
{
	return call_intr(I, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &a, 1);
}

LLVMValueRef f_log(Irb *I, LLVMValueRef a)
{
	LLVMValueRef l = call_intr(I, "llvm.nvvm.lg2.approx.ftz.f", NULL, 0, &a, 1);
	return fmul(I, l, cf32(I, 0.6931471805599453));
}

LLVMValueRef f_rcp(Irb *I, LLVMValueRef a)
{
	return call_intr(I, "llvm.nvvm.rcp.approx.ftz.f", NULL, 0, &a, 1);
}

LLVMValueRef f_sqrt(Irb *I, LLVMValueRef a)
{
	return call_intr(I, "llvm.nvvm.sqrt.approx.ftz.f", NULL, 0, &a, 1);
}

LLVMValueRef f_rsqrt(Irb *I, LLVMValueRef a)
{
	return call_intr(I, "llvm.nvvm.rsqrt.approx.ftz.f", NULL, 0, &a, 1);
}

/* tanh.approx.f32 (one SFU op, max relative error ~2^-11): sigmoid through
 * it costs one special-function op instead of ex2 + rcp. LLVM 19 has no
 * intrinsic for it; the asm call is marked as touching no memory so that
 * two evaluations of one gate (a step's gates and its adjoints) fold into
 * one op like every other special function. */
LLVMValueRef f_tanh(Irb *I, LLVMValueRef a)
{
	LLVMTypeRef fty = LLVMFunctionType(I->f32, &I->f32, 1, 0);
	const char *as = "tanh.approx.f32 $0, $1;", *cons = "=f,f";
	LLVMValueRef fn = irb_asm(fty, as, cons, 0);
	LLVMValueRef c = LLVMBuildCall2(I->b, fty, fn, &a, 1, "");
	unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6), nounw = LLVMGetEnumAttributeKindForName("nounwind", 8);
	CHECK(mem != 0 && nounw != 0);
	LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(I->ctx, mem, 0));
	LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(I->ctx, nounw, 0));
	return c;
}

/* The value of type ty that the predicated load in as (operands: $0 the
 * value, $1 the address, $2 ok) leaves where ok != 0, else 0, with no
 * branch: p is never read where ok = 0 (it may be null there). cons: the
 * constraint of $0 ("=r", "=f") and the others. */
static LLVMValueRef ld_if(Irb *I, LLVMTypeRef ty, const char *as, const char *cons, LLVMValueRef p, LLVMValueRef ok)
{
	LLVMTypeRef in[2] = { I->gptr, I->i32 };
	LLVMTypeRef fty = LLVMFunctionType(ty, in, 2, 0);
	LLVMValueRef args[2] = { p, ok };
	return LLVMBuildCall2(I->b, fty, irb_asm(fty, as, cons, 0), args, 2, "");
}

/* The byte at global p zero-extended where ok != 0, else 0: one predicated
 * ld.global.nc.u8. The bytes read must not change during the kernel. */
LLVMValueRef ld_u8_if(Irb *I, LLVMValueRef p, LLVMValueRef ok)
{
	return ld_if(I, I->i32, "{ .reg .pred p; setp.ne.u32 p, $2, 0; mov.u32 $0, 0; @p ld.global.nc.u8 $0, [$1]; }",
	             "=r,l,r", p, ok);
}

void cp_async16(Irb *I, LLVMValueRef dst32, LLVMValueRef src, LLVMValueRef src_bytes)
{
	LLVMValueRef args[3] = { smem_ptr(I, dst32), src, src_bytes };
	call_intr(I, "llvm.nvvm.cp.async.cg.shared.global.16.s", NULL, 0, args, 3);
}

void prefetch_l2(Irb *I, LLVMValueRef p)
{
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, &I->i64, 1, 0);
	LLVMValueRef a = LLVMBuildPtrToInt(I->b, p, I->i64, "");
	LLVMBuildCall2(I->b, fty, irb_asm(fty, "prefetch.global.L2 [$0];", "l", 1), &a, 1, "");
}

void cp_async_commit(Irb *I) { call_intr(I, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0); }

void cp_async_wait(Irb *I, int pending)
{
	LLVMValueRef n = ci32(I, pending);
	call_intr(I, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
}

void cp_async_wait_all(Irb *I)
{
	cp_async_commit(I);
	call_intr(I, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
}

LLVMValueRef gep_f32(Irb *I, LLVMValueRef base, LLVMValueRef idx64)
{
	return LLVMBuildInBoundsGEP2(I->b, I->f32, base, &idx64, 1, "");
}

LLVMValueRef gep_bf16(Irb *I, LLVMValueRef base, LLVMValueRef idx64)
{
	return LLVMBuildInBoundsGEP2(I->b, I->bf16, base, &idx64, 1, "");
}

LLVMValueRef ld(Irb *I, LLVMTypeRef ty, LLVMValueRef p, int align)
{
	LLVMValueRef v = LLVMBuildLoad2(I->b, ty, p, "");
	LLVMSetAlignment(v, (unsigned)align);
	return v;
}

LLVMValueRef ld_volatile(Irb *I, LLVMTypeRef ty, LLVMValueRef p, int align)
{
	LLVMValueRef v = ld(I, ty, p, align);
	LLVMSetVolatile(v, 1);
	return v;
}

void st_volatile(Irb *I, LLVMValueRef v, LLVMValueRef p, int align)
{
	LLVMValueRef s = LLVMBuildStore(I->b, v, p);
	LLVMSetAlignment(s, (unsigned)align);
	LLVMSetVolatile(s, 1);
}

void st(Irb *I, LLVMValueRef v, LLVMValueRef p, int align)
{
	LLVMValueRef s = LLVMBuildStore(I->b, v, p);
	LLVMSetAlignment(s, (unsigned)align);
}

LLVMValueRef smem_ptr(Irb *I, LLVMValueRef off32)
{
	LLVMValueRef idx[2] = { ci32(I, 0), off32 };
	return LLVMBuildInBoundsGEP2(I->b, LLVMArrayType(I->i8, 0), I->smem, idx, 2, "");
}

LLVMValueRef bf16_to_f32(Irb *I, LLVMValueRef bf) { return LLVMBuildFPExt(I->b, bf, I->f32, ""); }
LLVMValueRef f32_to_bf16(Irb *I, LLVMValueRef f) { return LLVMBuildFPTrunc(I->b, f, I->bf16, ""); }

/* a pair of f32 converted by one cvt.rn.{bf16x2,f16x2}.f32 into an i32, lo in the low half */
static LLVMValueRef cvt_x2(Irb *I, const char *as, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMTypeRef in[2] = { I->f32, I->f32 };
	LLVMTypeRef fty = LLVMFunctionType(I->i32, in, 2, 0);
	const char *cons = "=r,f,f";
	LLVMValueRef fn = irb_asm(fty, as, cons, 0);
	LLVMValueRef args[2] = { hi, lo };   /* d.hi = first source */
	return LLVMBuildCall2(I->b, fty, fn, args, 2, "");
}

/* One cvt.rn.bf16x2.f32 instead of two converts, two widenings, a shift
 * and an or (a <2 x bfloat> truncation is split by the backend). The same
 * round-to-nearest-even as fptrunc: the bits do not change. */
LLVMValueRef pack_bf16x2(Irb *I, LLVMValueRef lo, LLVMValueRef hi) { return cvt_x2(I, "cvt.rn.bf16x2.f32 $0, $1, $2;", lo, hi); }

/* fp16 pairs: cvt.rn.f16x2.f32 packs (round to nearest even, overflow to
 * infinity); a half widens exactly */
LLVMValueRef pack_f16x2(Irb *I, LLVMValueRef lo, LLVMValueRef hi) { return cvt_x2(I, "cvt.rn.f16x2.f32 $0, $1, $2;", lo, hi); }

LLVMValueRef unpack_f16(Irb *I, LLVMValueRef v, int hi)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(I->ctx);
	LLVMValueRef w = hi ? LLVMBuildLShr(I->b, v, ci32(I, 16), "") : v;
	LLVMValueRef h = LLVMBuildBitCast(I->b, LLVMBuildTrunc(I->b, w, i16, ""), LLVMHalfTypeInContext(I->ctx), "");
	return LLVMBuildFPExt(I->b, h, I->f32, "");
}

/* A bf16 is the top half of an fp32: unpacking is a shift or a mask. */
LLVMValueRef unpack_bf16_lo(Irb *I, LLVMValueRef v)
{
	return LLVMBuildBitCast(I->b, LLVMBuildShl(I->b, v, ci32(I, 16), ""), I->f32, "");
}

LLVMValueRef unpack_bf16_hi(Irb *I, LLVMValueRef v)
{
	return LLVMBuildBitCast(I->b, LLVMBuildAnd(I->b, v, ci32(I, (int64_t)0xffff0000u), ""), I->f32, "");
}

LLVMValueRef tid_x(Irb *I) { return call_intr(I, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0); }

LLVMValueRef ctaid(Irb *I, int dim)
{
	static const char *n[3] = { "llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z" };
	return call_intr(I, n[dim], NULL, 0, NULL, 0);
}

LLVMValueRef nctaid(Irb *I, int dim)
{
	static const char *n[3] = { "llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z" };
	return call_intr(I, n[dim], NULL, 0, NULL, 0);
}

void bar_sync(Irb *I)
{
	if (I->bar_n)
		bar_named(I, ci32(I, I->bar_id), I->bar_n);
	else
		call_intr(I, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

LLVMValueRef bar_or(Irb *I, LLVMValueRef pred)
{
	LLVMValueRef a = LLVMBuildZExt(I->b, pred, I->i32, "");
	LLVMValueRef r;
	if (I->bar_n) {   /* LLVM 19 has no intrinsic for a named barrier's reduction */
		char as[160];
		snprintf(as, sizeof as, "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 q, $1, 0;\n\tbar.red.or.pred p, %d, %d, q;"
		         "\n\tselp.u32 $0, 1, 0, p;\n\t}", I->bar_id, I->bar_n);
		LLVMTypeRef fty = LLVMFunctionType(I->i32, &I->i32, 1, 0);
		r = LLVMBuildCall2(I->b, fty, irb_asm(fty, as, "=r,r,~{memory}", 1), &a, 1, "");
	} else {
		r = call_intr(I, "llvm.nvvm.barrier0.or", NULL, 0, &a, 1);
	}
	return LLVMBuildICmp(I->b, LLVMIntNE, r, ci32(I, 0), "");
}

LLVMValueRef warp_any(Irb *I, LLVMValueRef pred)
{
	LLVMValueRef a[2] = { ci32(I, -1), pred };
	return call_intr(I, "llvm.nvvm.vote.any.sync", NULL, 0, a, 2);
}

void fence_gpu(Irb *I) { call_intr(I, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0); }

LLVMValueRef cluster_rank(Irb *I) { return call_intr(I, "llvm.nvvm.read.ptx.sreg.cluster.ctarank", NULL, 0, NULL, 0); }
LLVMValueRef cluster_nrank(Irb *I) { return call_intr(I, "llvm.nvvm.read.ptx.sreg.cluster.nctarank", NULL, 0, NULL, 0); }
LLVMValueRef cluster_id_x(Irb *I) { return call_intr(I, "llvm.nvvm.read.ptx.sreg.clusterid.x", NULL, 0, NULL, 0); }

void irb_trap(Irb *I) { call_intr(I, "llvm.trap", NULL, 0, NULL, 0); }

void cluster_sync(Irb *I)
{
	call_intr(I, "llvm.nvvm.barrier.cluster.arrive.aligned", NULL, 0, NULL, 0);
	call_intr(I, "llvm.nvvm.barrier.cluster.wait.aligned", NULL, 0, NULL, 0);
}

/* LLVM 19 has mapa but no shared::cluster address space to load through (a
 * load of mapa's result is emitted as ld.shared::cta), so the pair is one
 * asm block. Side effects keep it after the cluster barrier. */
void ld_cluster_v4(Irb *I, LLVMValueRef v[4], LLVMValueRef off32, LLVMValueRef rank)
{
	LLVMTypeRef f4[4] = { I->f32, I->f32, I->f32, I->f32 };
	LLVMTypeRef rt = LLVMStructTypeInContext(I->ctx, f4, 4, 0);
	LLVMTypeRef in[2] = { I->i32, I->i32 };
	LLVMTypeRef fty = LLVMFunctionType(rt, in, 2, 0);
	const char *as = "{\n\t.reg .u32 ra;\n\tmapa.shared::cluster.u32 ra, $4, $5;\n\t"
	                 "ld.shared::cluster.v4.f32 {$0, $1, $2, $3}, [ra];\n\t}";
	const char *cons = "=f,=f,=f,=f,r,r,~{memory}";
	LLVMValueRef fn = irb_asm(fty, as, cons, 1);
	LLVMValueRef addr = LLVMBuildPtrToInt(I->b, smem_ptr(I, off32), I->i32, "");
	LLVMValueRef args[2] = { addr, rank };
	LLVMValueRef r = LLVMBuildCall2(I->b, fty, fn, args, 2, "");
	for (int k = 0; k < 4; k++)
		v[k] = LLVMBuildExtractValue(I->b, r, (unsigned)k, "");
}

LLVMValueRef atom_add_u32(Irb *I, LLVMValueRef gp, LLVMValueRef v)
{
	return LLVMBuildAtomicRMW(I->b, LLVMAtomicRMWBinOpAdd, gp, v, LLVMAtomicOrderingMonotonic, 0);
}

/* LLVM 19 has no intrinsic for it. Side effects and the memory clobber
 * keep every load and store after it. */
void grid_dep_wait(Irb *I)
{
	LLVMTypeRef fty = LLVMFunctionType(I->voidt, NULL, 0, 0);
	const char *as = "griddepcontrol.wait;", *cons = "~{memory}";
	LLVMValueRef fn = irb_asm(fty, as, cons, 1);
	LLVMBuildCall2(I->b, fty, fn, NULL, 0, "");
}

void bar_named(Irb *I, LLVMValueRef id, int n)
{
	LLVMValueRef a[2] = { id, ci32(I, n) };
	call_intr(I, "llvm.nvvm.barrier.sync.cnt", NULL, 0, a, 2);
}


static LLVMValueRef shfl(Irb *I, const char *name, LLVMValueRef v, LLVMValueRef b, int c)
{
	LLVMValueRef a[4] = { ci32(I, -1), v, b, ci32(I, c) };
	return call_intr(I, name, NULL, 0, a, 4);
}

LLVMValueRef shfl_up_f(Irb *I, LLVMValueRef v, int d) { return shfl(I, "llvm.nvvm.shfl.sync.up.f32", v, ci32(I, d), 0); }
LLVMValueRef shfl_down_f(Irb *I, LLVMValueRef v, int d) { return shfl(I, "llvm.nvvm.shfl.sync.down.f32", v, ci32(I, d), 0x1f); }
LLVMValueRef shfl_idx_f(Irb *I, LLVMValueRef v, LLVMValueRef lane) { return shfl(I, "llvm.nvvm.shfl.sync.idx.f32", v, lane, 0x1f); }
LLVMValueRef shfl_xor_f(Irb *I, LLVMValueRef v, int m) { return shfl(I, "llvm.nvvm.shfl.sync.bfly.f32", v, ci32(I, m), 0x1f); }

void mma_bf16(Irb *I, LLVMValueRef d[4], LLVMValueRef a[4], LLVMValueRef b[2], LLVMValueRef c[4])
{
	LLVMValueRef args[10] = { a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3] };
	LLVMValueRef r = call_intr(I, "llvm.nvvm.mma.m16n8k16.row.col.bf16", NULL, 0, args, 10);
	for (unsigned k = 0; k < 4; k++)
		d[k] = LLVMBuildExtractValue(I->b, r, k, "");
}

void ldsm_x4(Irb *I, LLVMValueRef d[4], LLVMValueRef row_off32, int trans)
{
	LLVMValueRef p = smem_ptr(I, row_off32);
	LLVMTypeRef pty = LLVMTypeOf(p);
	LLVMValueRef r = call_intr(I, trans ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
	                                    : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", &pty, 1, &p, 1);
	for (unsigned k = 0; k < 4; k++)
		d[k] = LLVMBuildExtractValue(I->b, r, k, "");
}
