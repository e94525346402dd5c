/* Parameter initialisation as a script declares it (manifest "init"). */
#ifndef RECUR_PINIT_H
#define RECUR_PINIT_H
#include "rng.h"

/* One value of kind "zeros" | "const" (a) | "normal" (std a) | "decay"
 * (lam = log(exp(-0.5 log u) - 1), u ~ U[a, b], RecurrentGemma's a_param). */
/* A NULL kind (a failed recur_param_init) gives NaN: a poisoned value the
 * checks then report, never a crash. */
double pinit_value(const char *kind, double a, double b, Rng *r);

#endif
