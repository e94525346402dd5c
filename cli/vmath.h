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
/* vm_relerr of a sum of logarithms (the row's map_loga), where -inf is a
 * value: an entry whose ref is -inf must be -inf, and is left out of the
 * norms; any other non-finite entry of out counts in *bad. One pass in
 * order (n is a state's size, B x D). */
double vm_relerr_loga(const float *out, const double *ref, size_t n, int *bad);
/* The worst rows and columns of a [rows][cols] tensor (rows: tokens b, t;
 * cols: channels): ||out_r - ref_r|| / max(||ref_r||, VM_LOCAL_FLOOR x the
 * rms row norm of ref), and the same per column. A wrong value confined to
 * a few tokens or channels stays far under the whole tensor's relative
 * error and shows here. Chunks of whole rows, added in order. */
#define VM_LOCAL_FLOOR 0.1
typedef struct {
	double row, col;     /* worst relative errors */
	size_t at_row;       /* where */
	size_t at_col;
} VmLocal;
int vm_local(const float *out, const double *ref, size_t rows, size_t cols, VmLocal *lc);
/* bf16 bit patterns of the values (round to nearest even) */
void vm_to_bf16(const double *v, uint16_t *bits, size_t n);
/* floats holding bf16 bit patterns */
void vm_from_bf16(const uint16_t *bits, float *f, size_t n);

#endif
