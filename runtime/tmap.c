/* The TMA tensor maps a launch passes by value ("tmap:TENSOR:RxC" args):
 * encoded at each call, since they hold the tensor's address. */
#include "rt_impl.h"
#include <stdint.h>
#include <stdio.h>

/* x, y, dy, dx or a workspace as [B][L][D] bf16, a box of rows x columns
 * from (column, t, b), the 128-byte swizzle (the box's rows are 128 bytes:
 * ld_tmap). Three dimensions, not [B L][D]: a box's rows past L read as
 * zeros instead of the next sequence's first rows, as the scans' own copies
 * do. A tmaprows: map is (D, B L, 1): the projection kernels' row tiles
 * run over B L rows as one, and only rows past B L read as zeros. */
int rt_tmap_encode(const rt_cu *cu, const rt_arg *a, CUdeviceptr p, recur_shape s, CUtensorMap *map, char *err,
                   size_t errlen)
{
	if (s.B < 1 || s.L < 1 || s.D < 1)
		return rt_vfail(err, errlen, "tensor map \"%s\": shape %dx%dx%d", a->text, s.B, s.L, s.D);
	uint64_t row = (uint64_t)s.D * 2, seq;
	if (__builtin_mul_overflow(row, (uint64_t)s.L, &seq) || seq >= (uint64_t)1 << 40)
		return rt_vfail(err, errlen, "tensor map \"%s\": a sequence of %d rows of %d bf16 is past TMA's "
		                "40-bit strides", a->text, s.L, s.D);
	if (row % 16)
		return rt_vfail(err, errlen, "tensor map \"%s\": D = %d, a row of %llu bytes: TMA's strides are "
		                "multiples of 16 bytes (D a multiple of 8)", a->text, s.D, (unsigned long long)row);
	if (p % 16)
		return rt_vfail(err, errlen, "tensor map \"%s\": the tensor at 0x%llx is not 16-byte aligned", a->text,
		                (unsigned long long)p);
	cuuint64_t dims[3] = {(cuuint64_t)s.D, (cuuint64_t)s.L, (cuuint64_t)s.B};
	cuuint64_t strides[2] = {row, seq};
	if (a->tmap_rows) {
		uint64_t rows = (uint64_t)s.B * (uint64_t)s.L, all;
		if (rows > (uint64_t)1 << 32 || __builtin_mul_overflow(row, rows, &all) || all >= (uint64_t)1 << 40)
			return rt_vfail(err, errlen, "tensor map \"%s\": %llu rows of %d bf16 are past TMA's 2^32 rows or "
			                "40-bit strides", a->text, (unsigned long long)rows, s.D);
		dims[1] = rows;
		dims[2] = 1;
		strides[1] = all;
	}
	cuuint32_t box[3] = {(cuuint32_t)a->box[1], (cuuint32_t)a->box[0], 1}, one[3] = {1, 1, 1};
	return RT_CU(cu, TensorMapEncodeTiled,
	             (map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)(uintptr_t)p, dims, strides, box, one,
	              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
	              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
	             err, errlen, "encoding tensor map \"%s\" (box %dx%d) at %dx%dx%d", a->text, a->box[0], a->box[1],
	             s.B, s.L, s.D);
}
