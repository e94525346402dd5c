/* NumPy .npy files (format 1.0/2.0, little endian, C order). */
#ifndef RECUR_NPY_H
#define RECUR_NPY_H
#include <stddef.h>

#define NPY_MAXDIM 8
/* room for "(a, b, ...)" of NPY_MAXDIM dimensions */
#define NPY_SHAPE_TEXT (NPY_MAXDIM * 22 + 8)

/* Reads '<f8' or '<f4' data converted to double into a malloc'd *data.
 * ndim 0 (a scalar) is allowed and gives one element. Returns 0, or -1 with
 * a message naming the file in err. */
int npy_read(const char *path, double **data, long *shape, int *ndim, char *err, size_t errlen);

/* npy_read, then its shape checked against want[0..nwant): for a golden
 * file whose shape is known, e.g. want = {B, L, D}, what = "(B, L, D)"
 * ("PATH: shape (2, 37, 64), but (B, L, D) is (2, 37, 128)"). 0, or -1
 * with *data NULL and the message in err. */
int npy_read_shaped(const char *path, double **data, const long *want, int nwant, const char *what, char *err,
                    size_t errlen);
/* The same check on a shape already read: 0, or -1 with the message. */
int npy_check_shape(const char *path, const long *shape, int ndim, const long *want, int nwant, const char *what,
                    char *err, size_t errlen);
/* Elements of a shape in checked arithmetic: 0 and *n, or -1 when a
 * dimension is negative, ndim is outside 0..NPY_MAXDIM or the product
 * passes 2^40. */
int npy_elems(const long *shape, int ndim, long *n);
/* "(2, 37, 128)", "(5,)", "()" as numpy writes them */
void npy_shape_text(const long *shape, int ndim, char *out, size_t n);

/* Writes float32 ('<f4') or float64 ('<f8') data atomically (temporary file, then rename). */
int npy_write_f32(const char *path, const float *data, const long *shape, int ndim, char *err, size_t errlen);
int npy_write_f64(const char *path, const double *data, const long *shape, int ndim, char *err, size_t errlen);

#endif
