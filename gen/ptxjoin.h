/* A module's PTX from its kernels' PTX, each kernel built alone.
 *
 * gen builds a variant a kernel at a time, so that a kernel that several
 * variants share (the projections apart, a forward that two backwards
 * share) goes through O3 and the NVPTX back end once a run. LLVM prints a
 * module of one kernel as the module of all would print that kernel,
 * except for what it numbers by the function's place in the module: the
 * basic-block labels ($L__BB<n>_) and the local stack (__local_depot<n>),
 * 0 in a module of one, and the module's declarations (the shared
 * array), which a kernel that uses none has none of. ptx_join puts the
 * kernels back in the module's order under one header and the
 * declarations, numbered by their places: the bytes LLVM prints for the
 * module of all. */
#ifndef RECUR_GEN_PTXJOIN_H
#define RECUR_GEN_PTXJOIN_H
#include <stddef.h>

/* The module of part[0..n-1] (each the PTX of a module of one kernel, as
 * target_ptx prints it), malloc'd in *out: 0, or -1 with the reason in err
 * (a part of another form, or parts of different headers, or two parts
 * of different declarations: nothing is guessed). */
int ptx_join(const char *const *part, int n, char **out, char *err, size_t errlen);

/* The other way: kernel i of module (ptx_join's output, or any module as
 * LLVM prints it) as the module of that kernel alone, malloc'd in *out:
 * the header, its ".globl" line, the declarations of the globals its text
 * names (LLVM prints no other in a module of one), its labels and local
 * stack numbered 0. 0, or -1 with the reason in err (no kernel i, a
 * module of another form, a name numbered by another kernel). For
 * every kernel, ptx_join of the parts gives the module back. */
int ptx_part(const char *module, int i, char **out, char *err, size_t errlen);

#endif
