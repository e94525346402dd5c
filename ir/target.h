/* NVPTX target machine, O3 and PTX emission. */
#ifndef RECUR_TARGET_H
#define RECUR_TARGET_H
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stddef.h>

typedef struct {
	LLVMTargetMachineRef tm;
	char sm[16];       /* "sm_90" */
	char ptx[16];      /* "8.0" */
} Target;

/* sm: "sm_80", "sm_86", "sm_89" (the portable path), "sm_90" or "sm_90a"
 * (thread-block clusters); ptx: PTX ISA version "7.8" .. "8.5" (chosen
 * explicitly: a .version newer than the driver knows is refused at load),
 * "8.0" or newer for sm_90a. */
int target_init(Target *t, const char *sm, const char *ptx, char *err, size_t errlen);
/* the checks of target_init on sm and ptx alone: what the templates support
 * and what the LLVM in use can select (a one-instruction module is emitted
 * to see); a message that lists the supported targets otherwise */
int target_check(const char *sm, const char *ptx, char *err, size_t errlen);
void target_free(Target *t);
/* Verifies, optimises with default<O3>, verifies again, emits PTX text
 * (malloc'd, NUL-terminated) into *out. */
int target_emit(Target *t, LLVMModuleRef m, int optimize, char **out, char *err, size_t errlen);
/* target_emit in its two steps, for callers that time them: the triple,
 * data layout, verification and default<O3>; then PTX of an optimised
 * module (the same text target_emit gives). */
int target_optimize(Target *t, LLVMModuleRef m, char *err, size_t errlen);
int target_ptx(Target *t, LLVMModuleRef m, char **out, char *err, size_t errlen);
void target_llvm_version(char *buf, size_t n);
/* whether sm (a target target_check accepts) has thread-block clusters,
 * distributed shared memory and programmatic dependent launch */
int target_clusters(const char *sm);
/* whether sm (a target target_check accepts) has the warpgroup tensor-core
 * instructions (wgmma): sm_90a, whose modules load on sm_90 devices alone */
int target_wgmma(const char *sm);
/* the shared memory an SM of sm (a target target_check accepts) holds, in
 * bytes; a block may take all of it but TARGET_SMEM_RESERVED */
int target_smem_sm(const char *sm);
#define TARGET_SMEM_RESERVED 1024   /* bytes the system keeps per resident block */

#endif
