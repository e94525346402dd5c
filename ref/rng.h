/* Reproducible random numbers for tests, verification and benchmarks:
 * xoshiro256** seeded through splitmix64, normals by Box-Muller. */
#ifndef RECUR_RNG_H
#define RECUR_RNG_H
#include <stdint.h>

typedef struct { uint64_t s[4]; } Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
double rng_uniform(Rng *r);          /* [0, 1) */
double rng_normal(Rng *r);           /* standard normal */
float bf16_round(float v);           /* round to nearest even bf16, returned as float */
uint16_t bf16_bits(float v);         /* the bf16 bit pattern of bf16_round(v) */
float bf16_to_float(uint16_t b);

#endif
