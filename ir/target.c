/* NVPTX target machine, O3 and PTX emission (see target.h). */
#include "target.h"
#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm-c/Target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIPLE "nvptx64-nvidia-cuda"

static const char *const ptx_ok[] = { "7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5" };

int target_check(const char *sm, const char *ptx, char *err, size_t errlen)
{
	int cc = 0;
	if (strncmp(sm, "sm_", 3) != 0 || sscanf(sm + 3, "%d", &cc) != 1 || cc < 80) {
		snprintf(err, errlen, "target %s: recur needs sm_80 or newer (mma.sync bf16)", sm);
		return -1;
	}
	int known = 0;
	for (size_t i = 0; i < sizeof ptx_ok / sizeof *ptx_ok; i++)
		known |= strcmp(ptx, ptx_ok[i]) == 0;
	if (!known) {
		snprintf(err, errlen, "PTX ISA %s: choose one of 7.8 .. 8.5 (LLVM 19's NVPTX emits at most 8.5)", ptx);
		return -1;
	}
	return 0;
}

int target_init(Target *t, const char *sm, const char *ptx, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	if (target_check(sm, ptx, err, errlen) != 0)
		return -1;
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	LLVMTargetRef T;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(TRIPLE, &T, &msg)) {
		snprintf(err, errlen, "LLVM has no NVPTX target: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -1;
	}
	char feat[16];
	int maj = 0, min = 0;
	sscanf(ptx, "%d.%d", &maj, &min);
	snprintf(feat, sizeof feat, "+ptx%d%d", maj, min);
	t->tm = LLVMCreateTargetMachine(T, TRIPLE, sm, feat, LLVMCodeGenLevelAggressive,
	                                LLVMRelocDefault, LLVMCodeModelDefault);
	if (!t->tm) {
		snprintf(err, errlen, "LLVMCreateTargetMachine(%s, %s, %s) failed", TRIPLE, sm, feat);
		return -1;
	}
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

int target_emit(Target *t, LLVMModuleRef m, int optimize, char **out, char *err, size_t errlen)
{
	char *msg = NULL;
	*out = NULL;
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
	msg = NULL;
	if (optimize) {
		LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
		LLVMErrorRef e = LLVMRunPasses(m, "default<O3>", t->tm, o);
		LLVMDisposePassBuilderOptions(o);
		if (e) {
			char *em = LLVMGetErrorMessage(e);
			snprintf(err, errlen, "LLVM default<O3> failed: %s", em);
			LLVMDisposeErrorMessage(em);
			return -1;
		}
		if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
			snprintf(err, errlen, "IR does not verify after O3: %s", msg);
			LLVMDisposeMessage(msg);
			return -1;
		}
		LLVMDisposeMessage(msg);
		msg = NULL;
	}
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

void target_llvm_version(char *buf, size_t n)
{
	unsigned a, b, c;
	LLVMGetVersion(&a, &b, &c);
	snprintf(buf, n, "%u.%u.%u", a, b, c);
}
