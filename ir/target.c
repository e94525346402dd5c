/* NVPTX target machine, O3 and PTX emission (see target.h). */
#include "target.h"
#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm-c/Target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIPLE "nvptx64-nvidia-cuda"

/* The targets the templates build for, each with the oldest PTX ISA that
 * has it (LLVM would raise a lower .version on its own, and the PTX would
 * not say what was asked) and whether it has thread-block clusters,
 * distributed shared memory and programmatic dependent launch (sm_90): the
 * others (Ampere, Ada) get the portable path (Tmpl.portable). bf16 tensor
 * cores (mma m16n8k16) and tanh.approx set the floor at sm_80. Shared
 * memory differs by more than a factor of two among them (the CUDA C++
 * Programming Guide's table of compute capabilities): 164 KB an SM on
 * sm_80 (A100), 100 KB on sm_86 and sm_89 (GeForce 30 and 40, A10, L4,
 * L40), 228 KB on sm_90; a block may take all of it but the 1 KB the
 * system reserves per block. */
typedef struct {
	const char *sm;
	int min_ptx;       /* 10 * major + minor */
	int clusters;
	int smem_sm_kb;    /* shared memory an SM, KB */
} TargetInfo;

static const TargetInfo targets[] = {
	{ "sm_80", 70, 0, 164 }, { "sm_86", 71, 0, 100 }, { "sm_89", 78, 0, 100 }, { "sm_90", 78, 1, 228 },
	{ "sm_90a", 80, 1, 228 },
};
static const char *const ptx_ok[] = { "7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5" };

static void list_targets(char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof targets / sizeof *targets && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", targets[i].sm);
}

static void init_nvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

/* "+ptxXY" for ptx "X.Y" (one of ptx_ok) */
static void ptx_feature(const char *ptx, char *feat, size_t n)
{
	snprintf(feat, n, "+ptx%c%c", ptx[0], ptx[2]);
}

static LLVMTargetMachineRef make_tm(const char *sm, const char *ptx, char *err, size_t errlen)
{
	LLVMTargetRef T;
	char *msg = NULL, feat[16];
	if (LLVMGetTargetFromTriple(TRIPLE, &T, &msg)) {
		snprintf(err, errlen, "LLVM has no NVPTX target: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return NULL;
	}
	ptx_feature(ptx, feat, sizeof feat);
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(T, TRIPLE, sm, feat, LLVMCodeGenLevelAggressive,
	                                                  LLVMRelocDefault, LLVMCodeModelDefault);
	if (!tm)
		snprintf(err, errlen, "LLVMCreateTargetMachine(%s, %s, %s) failed", TRIPLE, sm, feat);
	return tm;
}

/* The PTX of a one-instruction module (fptrunc float -> bfloat) for sm and
 * ptx, malloc'd; NULL with a message. */
static char *probe_ptx(const char *sm, const char *ptx, char *err, size_t errlen)
{
	LLVMTargetMachineRef tm = make_tm(sm, ptx, err, errlen);
	if (!tm)
		return NULL;
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("probe", ctx);
	LLVMSetTarget(m, TRIPLE);
	LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), bf16 = LLVMBFloatTypeInContext(ctx);
	LLVMValueRef fn = LLVMAddFunction(m, "probe", LLVMFunctionType(bf16, &f32, 1, 0));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
	LLVMBuildRet(b, LLVMBuildFPTrunc(b, LLVMGetParam(fn, 0), bf16, "y"));
	LLVMDisposeBuilder(b);
	char *msg = NULL, *out = NULL;
	LLVMMemoryBufferRef buf;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &msg, &buf)) {
		snprintf(err, errlen, "target %s, PTX ISA %s: LLVM cannot emit PTX: %s", sm, ptx, msg ? msg : "?");
		LLVMDisposeMessage(msg);
	} else {
		size_t n = LLVMGetBufferSize(buf);
		out = malloc(n + 1);
		if (out) {
			memcpy(out, LLVMGetBufferStart(buf), n);
			out[n] = 0;
		} else {
			snprintf(err, errlen, "out of memory");
		}
		LLVMDisposeMemoryBuffer(buf);
	}
	LLVMDisposeModule(m);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return out;
}

/* Whether line (without its newline) is a line of text. */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
			return 1;
	return 0;
}

/* What the LLVM in use makes of sm and ptx: a processor it does not know
 * gets generic code (no bf16 conversion: the kernels' instructions would
 * then fail to select, which LLVM answers with an abort), and a PTX ISA it
 * does not know or that the target cannot have comes out as another
 * .version. Checked on a one-instruction module, before any kernel. */
static int probe_llvm(const char *sm, const char *ptx, char *err, size_t errlen)
{
	char *out = probe_ptx(sm, ptx, err, errlen);
	if (!out)
		return -1;
	char want_v[32], want_t[32], llvmv[32];
	snprintf(want_v, sizeof want_v, ".version %s", ptx);
	snprintf(want_t, sizeof want_t, ".target %s", sm);
	target_llvm_version(llvmv, sizeof llvmv);
	int rc = 0;
	if (!has_line(out, want_t) || !strstr(out, "cvt.rn.bf16.f32")) {
		snprintf(err, errlen, "target %s: the LLVM in use (%s) cannot select its instructions (it does not know "
		         "the processor)", sm, llvmv);
		rc = -1;
	} else if (!has_line(out, want_v)) {
		snprintf(err, errlen, "PTX ISA %s: the LLVM in use (%s) does not emit it for %s", ptx, llvmv, sm);
		rc = -1;
	}
	free(out);
	return rc;
}

int target_check(const char *sm, const char *ptx, char *err, size_t errlen)
{
	char list[128];
	list_targets(list, sizeof list);
	const TargetInfo *ti = NULL;
	for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
		if (strcmp(sm, targets[i].sm) == 0) ti = &targets[i];
	if (!ti) {
		snprintf(err, errlen, "target %s: not supported; choose one of %s (newer GPUs run the newest of these "
		         "through the driver's JIT)", sm, list);
		return -1;
	}
	int known = 0;
	for (size_t i = 0; i < sizeof ptx_ok / sizeof *ptx_ok; i++)
		known |= strcmp(ptx, ptx_ok[i]) == 0;
	if (!known) {
		snprintf(err, errlen, "PTX ISA %s: choose one of 7.8 .. 8.5 (LLVM 19's NVPTX emits at most 8.5)", ptx);
		return -1;
	}
	if ((ptx[0] - '0') * 10 + (ptx[2] - '0') < ti->min_ptx) {
		snprintf(err, errlen, "PTX ISA %s: target %s needs PTX ISA %d.%d or newer", ptx, sm, ti->min_ptx / 10,
		         ti->min_ptx % 10);
		return -1;
	}
	init_nvptx();
	return probe_llvm(sm, ptx, err, errlen);
}

int target_init(Target *t, const char *sm, const char *ptx, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	if (target_check(sm, ptx, err, errlen) != 0)
		return -1;
	t->tm = make_tm(sm, ptx, err, errlen);
	if (!t->tm)
		return -1;
	snprintf(t->sm, sizeof t->sm, "%s", sm);
	snprintf(t->ptx, sizeof t->ptx, "%s", ptx);
	return 0;
}

void target_free(Target *t)
{
	if (t->tm)
		LLVMDisposeTargetMachine(t->tm);
	t->tm = NULL;
}

/* Sets the module's triple and data layout and verifies it. */
static int prepare(Target *t, LLVMModuleRef m, char *err, size_t errlen)
{
	char *msg = NULL;
	LLVMSetTarget(m, TRIPLE);
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(t->tm);
	char *dls = LLVMCopyStringRepOfTargetData(dl);
	LLVMSetDataLayout(m, dls);
	LLVMDisposeMessage(dls);
	LLVMDisposeTargetData(dl);
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		snprintf(err, errlen, "generated IR does not verify: %s", msg);
		LLVMDisposeMessage(msg);
		return -1;
	}
	LLVMDisposeMessage(msg);
	return 0;
}

int target_optimize(Target *t, LLVMModuleRef m, char *err, size_t errlen)
{
	if (prepare(t, m, err, errlen) != 0)
		return -1;
	LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(m, "default<O3>", t->tm, o);
	LLVMDisposePassBuilderOptions(o);
	if (e) {
		char *em = LLVMGetErrorMessage(e);
		snprintf(err, errlen, "LLVM default<O3> failed: %s", em);
		LLVMDisposeErrorMessage(em);
		return -1;
	}
	char *msg = NULL;
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		snprintf(err, errlen, "IR does not verify after O3: %s", msg);
		LLVMDisposeMessage(msg);
		return -1;
	}
	LLVMDisposeMessage(msg);
	return 0;
}

int target_ptx(Target *t, LLVMModuleRef m, char **out, char *err, size_t errlen)
{
	char *msg = NULL;
	*out = NULL;
	LLVMMemoryBufferRef buf;
	if (LLVMTargetMachineEmitToMemoryBuffer(t->tm, m, LLVMAssemblyFile, &msg, &buf)) {
		snprintf(err, errlen, "PTX emission failed: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -1;
	}
	size_t n = LLVMGetBufferSize(buf);
	char *s = malloc(n + 1);
	if (!s) {
		LLVMDisposeMemoryBuffer(buf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(s, LLVMGetBufferStart(buf), n);
	s[n] = 0;
	LLVMDisposeMemoryBuffer(buf);
	*out = s;
	return 0;
}

int target_emit(Target *t, LLVMModuleRef m, int optimize, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (optimize ? target_optimize(t, m, err, errlen) : prepare(t, m, err, errlen))
		return -1;
	return target_ptx(t, m, out, err, errlen);
}

int target_clusters(const char *sm)
{
	for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
		if (strcmp(sm, targets[i].sm) == 0)
			return targets[i].clusters;
	return 0;
}

int target_wgmma(const char *sm) { return strcmp(sm, "sm_90a") == 0; }

int target_smem_sm(const char *sm)
{
	for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
		if (strcmp(sm, targets[i].sm) == 0)
			return targets[i].smem_sm_kb * 1024;
	return 0;
}

void target_llvm_version(char *buf, size_t n)
{
	unsigned a, b, c;
	LLVMGetVersion(&a, &b, &c);
	snprintf(buf, n, "%u.%u.%u", a, b, c);
}
