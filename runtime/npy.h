/* NumPy .npy files (format 1.0/2.0, little endian, C order). */
#ifndef RECUR_NPY_H
#define RECUR_NPY_H
#include <stddef.h>

#define NPY_MAXDIM 8

/* Reads '<f8' or '<f4' data converted to double into a malloc'd *data.
 * ndim 0 (a scalar) is allowed and gives one element. Returns 0, or -1 with
 * a message naming the file in err. */
int npy_read(const char *path, double **data, long *shape, int *ndim, char *err, size_t errlen);

/* Writes float32 ('<f4') or float64 ('<f8') data atomically (temporary file, then rename). */
int npy_write_f32(const char *path, const float *data, const long *shape, int ndim, char *err, size_t errlen);
int npy_write_f64(const char *path, const double *data, const long *shape, int ndim, char *err, size_t errlen);

#endif
