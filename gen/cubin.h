/* Machine code at generation time: each module's PTX through ptxas, so
 * that the runtime loads a cubin instead of JIT-compiling in every process. */
#ifndef RECUR_GEN_CUBIN_H
#define RECUR_GEN_CUBIN_H
#include <stddef.h>

typedef struct {
	char path[4096];     /* the ptxas that runs */
	char version[160];   /* its --version's last line: part of each module's content key */
	char sm[16];         /* the target, "sm_90" */
} Ptxas;

/* Finds ptxas ($PTXAS, else PATH, else /usr/local/cuda/bin) and reads its
 * version. 0, or -1 with where it looked in err. */
int ptxas_open(Ptxas *p, const char *sm, char *err, size_t errlen);

/* The cubin of ptx (name: the module's, for messages), malloc'd into
 * *cubin and *n; -1 with ptxas's own words in err. Thread-safe: each call
 * works in a temporary folder of its own. */
int ptxas_compile(const Ptxas *p, const char *name, const char *ptx, char **cubin, size_t *n, char *err,
                  size_t errlen);

#endif
