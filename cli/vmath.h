/* Host-side arithmetic of `recur verify` over whole tensors, spread over
 * every core in fixed chunks: the same bits for any number of threads. */
#ifndef RECUR_VMATH_H
#define RECUR_VMATH_H
#include <stddef.h>
#include <stdint.h>

/* ||out - ref|| / ||ref|| (||out - ref|| when ref is 0); *bad += the
 * non-finite entries of out. Sums run per chunk of VM_CHUNK elements and
 * chunks are added in order. */
#define VM_CHUNK ((size_t)1 << 18)
double vm_relerr(const float *out, const double *ref, size_t n, int *bad);
/* bf16 bit patterns of the values (round to nearest even) */
void vm_to_bf16(const double *v, uint16_t *bits, size_t n);
/* floats holding bf16 bit patterns */
void vm_from_bf16(const uint16_t *bits, float *f, size_t n);

#endif
