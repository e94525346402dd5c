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

/* sm: "sm_90" or "sm_90a" (the kernels run in thread-block clusters); ptx:
 * PTX ISA version "7.8" .. "8.5" (chosen explicitly: a .version newer than
 * the driver knows is refused at load), "8.0" or newer for sm_90a. */
int target_init(Target *t, const char *sm, const char *ptx, char *err, size_t errlen);
/* the checks of target_init on sm and ptx alone: what the templates support
 * and what the LLVM in use can select (a one-instruction module is emitted
 * to see); a message that lists the supported targets otherwise */
int target_check(const char *sm, const char *ptx, char *err, size_t errlen);
void target_free(Target *t);
/* Verifies, optimises with default<O3>, verifies again, emits PTX text
 * (malloc'd, NUL-terminated) into *out. */
int target_emit(Target *t, LLVMModuleRef m, int optimize, char **out, char *err, size_t errlen);
void target_llvm_version(char *buf, size_t n);

#endif
