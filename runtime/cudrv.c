/* Opening the CUDA driver with dlopen and resolving the table of cudrv.h.
 *
 * Order matters: only cuGetProcAddress_v2, cuInit and the error strings are
 * looked up with dlsym; everything else comes from cuGetProcAddress after a
 * successful cuInit, by base name at the ABI of RT_CU_ABI. A missing library,
 * a stub library (CUDA's lib64/stubs, whose cuInit fails with
 * CUDA_ERROR_STUB_LIBRARY) or an old driver each end in a message, never a
 * crash, and leave nothing open.
 */
#include "cudrv.h"
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_NEEDS_DRIVER "recur needs an NVIDIA driver for verify/bench; gen works without one"

/* Names for the codes most likely to be met when the driver cannot name
 * them itself (a stub library, a failed cuInit). */
static const struct { CUresult r; const char *name; } rt_cu_known[] = {
#define E(x) {x, #x}
	E(CUDA_SUCCESS), E(CUDA_ERROR_INVALID_VALUE), E(CUDA_ERROR_OUT_OF_MEMORY),
	E(CUDA_ERROR_NOT_INITIALIZED), E(CUDA_ERROR_DEINITIALIZED),
	E(CUDA_ERROR_STUB_LIBRARY), E(CUDA_ERROR_NO_DEVICE), E(CUDA_ERROR_INVALID_DEVICE),
	E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER),
	E(CUDA_ERROR_INVALID_PTX), E(CUDA_ERROR_NO_BINARY_FOR_GPU), E(CUDA_ERROR_INVALID_IMAGE),
	E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION), E(CUDA_ERROR_NOT_FOUND),
	E(CUDA_ERROR_LAUNCH_FAILED), E(CUDA_ERROR_ILLEGAL_ADDRESS), E(CUDA_ERROR_UNKNOWN),
#undef E
};

const char *rt_cu_error_name(const rt_cu *cu, CUresult r)
{
	const char *s = NULL;
	if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	for (size_t i = 0; i < sizeof rt_cu_known / sizeof rt_cu_known[0]; i++)
		if (rt_cu_known[i].r == r)
			return rt_cu_known[i].name;
	return NULL;
}

int rt_cu_check(const rt_cu *cu, CUresult r, const char *call, char *err, size_t errlen,
                const char *fmt, ...)
{
	if (r == CUDA_SUCCESS)
		return 0;
	if (!err || !errlen)
		return -1;
	const char *desc = NULL;
	if (!(cu && cu->GetErrorString && cu->GetErrorString(r, &desc) == CUDA_SUCCESS && desc))
		desc = "no description from the driver";
	char ctx[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	const char *name = rt_cu_error_name(cu, r);
	char code[32];
	if (!name)
		snprintf(code, sizeof code, "CUDA error %d", (int)r);
	snprintf(err, errlen, "%s failed: %s (%s) while %s", call, name ? name : code, desc, ctx);
	return -1;
}

/* dlsym into a function pointer without an object-to-function cast */
static int rt_cu_sym(rt_cu *cu, const char *name, void *field)
{
	void *p = dlsym(cu->lib, name);
	memcpy(field, &p, sizeof p);
	return p ? 0 : -1;
}

void rt_cu_close(rt_cu *cu)
{
	if (cu->lib)
		dlclose(cu->lib);
	memset(cu, 0, sizeof *cu);
}

int rt_cu_open(rt_cu *cu, char *err, size_t errlen)
{
	memset(cu, 0, sizeof *cu);
	const char *env = getenv("RECUR_LIBCUDA");
	const char *path = env && *env ? env : "libcuda.so.1";
	snprintf(cu->path, sizeof cu->path, "%s", path);
	dlerror();
	cu->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->lib) {
		const char *why = dlerror();
		if (env && *env)
			snprintf(err, errlen, "cannot load the CUDA driver libcuda.so.1 from %s (RECUR_LIBCUDA): %s; "
			         RT_NEEDS_DRIVER, path, why ? why : "dlopen failed");
		else
			snprintf(err, errlen, "cannot load the CUDA driver libcuda.so.1: %s; " RT_NEEDS_DRIVER,
			         why ? why : "dlopen failed");
		return -1;
	}
	if (rt_cu_sym(cu, "cuGetProcAddress_v2", &cu->GetProcAddress)) {
		snprintf(err, errlen, "the CUDA driver %s has no cuGetProcAddress_v2 (a driver for CUDA >= 12.0 is "
		         "needed): %s; " RT_NEEDS_DRIVER, path, dlerror());
		rt_cu_close(cu);
		return -1;
	}
#define RT_CU_DLSYM(name, params) \
	if (rt_cu_sym(cu, "cu" #name, &cu->name)) { \
		snprintf(err, errlen, "the CUDA driver %s has no cu" #name ": %s; " RT_NEEDS_DRIVER, \
		         path, dlerror()); \
		rt_cu_close(cu); \
		return -1; \
	}
	RT_CU_EARLY(RT_CU_DLSYM)
#undef RT_CU_DLSYM

	char why[1024];
	if (RT_CU(cu, Init, (0), why, sizeof why, "initialising the CUDA driver from %s", path)) {
		snprintf(err, errlen, "%s; " RT_NEEDS_DRIVER, why);
		rt_cu_close(cu);
		return -1;
	}
	void *fn;
	CUdriverProcAddressQueryResult st;
#define RT_CU_RESOLVE(name, params) \
	fn = NULL; \
	st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; \
	if (RT_CU(cu, GetProcAddress, ("cu" #name, &fn, RT_CU_ABI, CU_GET_PROC_ADDRESS_DEFAULT, &st), \
	          err, errlen, "resolving cu" #name " in %s", path)) { \
		rt_cu_close(cu); \
		return -1; \
	} \
	if (st != CU_GET_PROC_ADDRESS_SUCCESS || !fn) { \
		snprintf(err, errlen, "cannot resolve cu" #name " in the CUDA driver %s: %s", path, \
		         st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? \
		         "the driver is older than CUDA 12.0" : "symbol not found"); \
		rt_cu_close(cu); \
		return -1; \
	} \
	memcpy(&cu->name, &fn, sizeof fn);
	RT_CU_FUNCS(RT_CU_RESOLVE)
#undef RT_CU_RESOLVE
	/* at the ABI that introduced it; absent, it stays NULL */
	fn = NULL;
	if (cu->GetProcAddress("cuFuncGetParamInfo", &fn, 12040, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
	    st == CU_GET_PROC_ADDRESS_SUCCESS && fn)
		memcpy(&cu->FuncGetParamInfo, &fn, sizeof fn);
	return 0;
}
