/* Parameter initialisation as a script declares it (manifest "init"). */
#ifndef RECUR_PINIT_H
#define RECUR_PINIT_H
#include "rng.h"

/* One value of kind "zeros" | "const" (a) | "normal" (std a) | "decay"
 * (lam = log(exp(-0.5 log u) - 1), u ~ U[a, b], RecurrentGemma's a_param). */
double pinit_value(const char *kind, double a, double b, Rng *r);

#endif
