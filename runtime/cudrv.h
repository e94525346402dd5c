/* The CUDA driver, opened at run time: one X-macro table of the entry points
 * the runtime uses, one struct of function pointers, one checking macro.
 *
 * Why not link libcuda: `recur gen` must run on machines without a driver,
 * and one binary should serve both. Why cuGetProcAddress: CUDA 13's cuda.h
 * renames entry points with macros (cuMemAlloc -> cuMemAlloc_v2, ...), and
 * plain dlsym would need every versioned name; cuGetProcAddress resolves the
 * base name to the ABI of the CUDA version we ask for (12.0 here), whose
 * signatures are the ones written below. The table's names carry no "cu"
 * prefix, so no cuda.h macro can rewrite them; "cu" is prepended as a
 * string when resolving.
 */
#ifndef RECUR_CUDRV_H
#define RECUR_CUDRV_H

#include <stddef.h>
#include <cuda.h>

/* The ABI (CUDA version) requested from cuGetProcAddress: the signatures in
 * the table are those of CUDA 12.0. */
#define RT_CU_ABI 12000

/* X(name without "cu", parameter list) */
#define RT_CU_FUNCS(X) \
	X(DriverGetVersion,        (int *version)) \
	X(DeviceGet,               (CUdevice *dev, int ordinal)) \
	X(DeviceGetCount,          (int *count)) \
	X(DeviceGetName,           (char *name, int len, CUdevice dev)) \
	X(DeviceGetAttribute,      (int *value, CUdevice_attribute attr, CUdevice dev)) \
	X(DeviceTotalMem,          (size_t *bytes, CUdevice dev)) \
	X(DevicePrimaryCtxRetain,  (CUcontext *ctx, CUdevice dev)) \
	X(DevicePrimaryCtxRelease, (CUdevice dev)) \
	X(CtxGetCurrent,           (CUcontext *ctx)) \
	X(CtxSetCurrent,           (CUcontext ctx)) \
	X(CtxSynchronize,          (void)) \
	X(ModuleLoadDataEx,        (CUmodule *mod, const void *image, unsigned int nopt, CUjit_option *opt, void **val)) \
	X(ModuleUnload,            (CUmodule mod)) \
	X(ModuleGetFunction,       (CUfunction *fn, CUmodule mod, const char *name)) \
	X(FuncGetAttribute,        (int *value, CUfunction_attribute attr, CUfunction fn)) \
	X(FuncSetAttribute,        (CUfunction fn, CUfunction_attribute attr, int value)) \
	X(OccupancyMaxActiveBlocksPerMultiprocessor, (int *blocks, CUfunction fn, int block, size_t smem)) \
	X(OccupancyMaxActiveClusters, (int *clusters, CUfunction fn, const CUlaunchConfig *cfg)) \
	X(LaunchKernelEx,          (const CUlaunchConfig *cfg, CUfunction fn, void **params, void **extra)) \
	X(MemAlloc,                (CUdeviceptr *p, size_t bytes)) \
	X(MemFree,                 (CUdeviceptr p)) \
	X(MemcpyHtoD,              (CUdeviceptr dst, const void *src, size_t n)) \
	X(MemcpyDtoH,              (void *dst, CUdeviceptr src, size_t n)) \
	X(MemcpyDtoDAsync,         (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st)) \
	X(MemsetD8Async,           (CUdeviceptr dst, unsigned char v, size_t n, CUstream st)) \
	X(MemsetD32Async,          (CUdeviceptr dst, unsigned int v, size_t n, CUstream st)) \
	X(MemGetInfo,              (size_t *free_bytes, size_t *total_bytes)) \
	X(EventCreate,             (CUevent *e, unsigned int flags)) \
	X(EventRecord,             (CUevent e, CUstream st)) \
	X(EventSynchronize,        (CUevent e)) \
	X(EventElapsedTime,        (float *ms, CUevent a, CUevent b)) \
	X(EventDestroy,            (CUevent e)) \
	X(StreamSynchronize,       (CUstream st)) \
	X(StreamCreate,            (CUstream *st, unsigned int flags)) \
	X(StreamDestroy,           (CUstream st)) \
	X(StreamBeginCapture,      (CUstream st, CUstreamCaptureMode mode)) \
	X(StreamEndCapture,        (CUstream st, CUgraph *graph)) \
	X(GraphGetNodes,           (CUgraph graph, CUgraphNode *nodes, size_t *n)) \
	X(GraphInstantiateWithFlags, (CUgraphExec *exec, CUgraph graph, unsigned long long flags)) \
	X(GraphLaunch,             (CUgraphExec exec, CUstream st)) \
	X(GraphExecDestroy,        (CUgraphExec exec)) \
	X(GraphDestroy,            (CUgraph graph)) \
	X(TensorMapEncodeTiled,    (CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *addr, \
	                            const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box, \
	                            const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle swz, \
	                            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob))

/* Resolved with dlsym before cuInit: cuInit itself and the error strings
 * (needed to report a failing cuInit); none of them has a renamed ABI.
 * cuGetProcAddress_v2 is looked up by that exact name, first of all. */
#define RT_CU_EARLY(X) \
	X(Init,                    (unsigned int flags)) \
	X(GetErrorName,            (CUresult r, const char **s)) \
	X(GetErrorString,          (CUresult r, const char **s))

typedef CUresult (*rt_cu_GetProcAddress_fn)(const char *sym, void **fn, int ver,
                                            cuuint64_t flags, CUdriverProcAddressQueryResult *st);

#define RT_CU_TYPEDEF(name, params) typedef CUresult (*rt_cu_##name##_fn) params;
RT_CU_EARLY(RT_CU_TYPEDEF)
RT_CU_FUNCS(RT_CU_TYPEDEF)
#undef RT_CU_TYPEDEF

typedef struct {
	void *lib;                  /* dlopen handle */
	char path[256];             /* what was opened, for messages */
	rt_cu_GetProcAddress_fn GetProcAddress;
#define RT_CU_FIELD(name, params) rt_cu_##name##_fn name;
	RT_CU_EARLY(RT_CU_FIELD)
	RT_CU_FUNCS(RT_CU_FIELD)
#undef RT_CU_FIELD
	/* optional: CUDA 12.4's, NULL with an older driver (a kernel's
	 * parameters then go unchecked against the manifest's args) */
	CUresult (*FuncGetParamInfo)(CUfunction fn, size_t index, size_t *offset, size_t *size);
} rt_cu;

/* dlopen (RECUR_LIBCUDA or libcuda.so.1), cuInit(0), resolve the table.
 * 0, or -1 with a message in err and nothing left open. */
int  rt_cu_open(rt_cu *cu, char *err, size_t errlen);
void rt_cu_close(rt_cu *cu);

/* 0 when r is CUDA_SUCCESS; else -1 and
 * "cuXxx failed: CUDA_ERROR_NAME (description) while <context>" in err. */
int rt_cu_check(const rt_cu *cu, CUresult r, const char *call, char *err, size_t errlen,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The one way the runtime calls the driver:
 *   if (RT_CU(&rt->cu, MemAlloc, (&p, n), err, errlen, "allocating %zu bytes", n)) return -1; */
#define RT_CU(cu, name, args, err, errlen, ...) \
	rt_cu_check((cu), (cu)->name args, "cu" #name, (err), (errlen), __VA_ARGS__)

/* "CUDA_ERROR_..." for r (from the driver, else a small built-in table);
 * NULL when neither knows it. */
const char *rt_cu_error_name(const rt_cu *cu, CUresult r);

#endif
