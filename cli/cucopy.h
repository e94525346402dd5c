/* A device-to-device copy for the bandwidth floor, reached without touching
 * the runtime: recur.h has no memcpy DtoD, so the same libcuda the runtime
 * opened (RECUR_LIBCUDA or libcuda.so.1; dlopen hands back the loaded copy)
 * is asked for cuMemcpyDtoDAsync through cuGetProcAddress_v2 at the CUDA
 * 12.0 ABI, as runtime/cudrv.h does for its own table. It runs in the
 * context the runtime made current. When it cannot be reached, bench falls
 * back to a memset and names that a write-bandwidth proxy.
 */
#ifndef RECUR_CUCOPY_H
#define RECUR_CUCOPY_H

#include <stddef.h>
#include <cuda.h>

typedef struct {
	void *lib;
	CUresult (*copy)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st);
	CUresult (*error_name)(CUresult r, const char **s);
} CuCopy;

/* 0, or -1 with the reason in err (and c left closed). Needs an open runtime. */
int  cucopy_open(CuCopy *c, char *err, size_t errlen);
/* Asynchronous on stream st. */
int  cucopy_run(const CuCopy *c, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st,
                char *err, size_t errlen);
void cucopy_close(CuCopy *c);

#endif
