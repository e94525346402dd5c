/* cuMemcpyDtoDAsync through the loaded driver (see cucopy.h). */
#include "cucopy.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*getproc_fn)(const char *sym, void **fn, int ver, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *st);

int cucopy_open(CuCopy *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	const char *path = getenv("RECUR_LIBCUDA");
	if (!path || !*path)
		path = "libcuda.so.1";
	/* RTLD_NOLOAD: only the copy the runtime already opened (and initialised) */
	c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!c->lib) {
		snprintf(err, errlen, "%s is not loaded (open the runtime first)", path);
		return -1;
	}
	/* a function pointer through void*: the one cast dlsym's API requires */
	void *gp = dlsym(c->lib, "cuGetProcAddress_v2");
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	if (gp) {
		getproc_fn getproc;
		memcpy(&getproc, &gp, sizeof getproc);
		if (getproc("cuMemcpyDtoDAsync", &fn, 12000, 0, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
			fn = NULL;
	}
	if (!fn)
		fn = dlsym(c->lib, "cuMemcpyDtoDAsync_v2");
	if (!fn) {
		snprintf(err, errlen, "%s has neither cuGetProcAddress_v2(\"cuMemcpyDtoDAsync\") nor "
		         "cuMemcpyDtoDAsync_v2", path);
		dlclose(c->lib);
		c->lib = NULL;
		return -1;
	}
	memcpy(&c->copy, &fn, sizeof c->copy);
	void *en = dlsym(c->lib, "cuGetErrorName");
	if (en)
		memcpy(&c->error_name, &en, sizeof c->error_name);
	return 0;
}

int cucopy_run(const CuCopy *c, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st,
               char *err, size_t errlen)
{
	CUresult r = c->copy(dst, src, n, st);
	if (r == CUDA_SUCCESS)
		return 0;
	const char *name = NULL;
	if (c->error_name)
		c->error_name(r, &name);
	snprintf(err, errlen, "cuMemcpyDtoDAsync failed: %s (%d) while copying %zu bytes on the device",
	         name ? name : "CUDA error", (int)r, n);
	return -1;
}

void cucopy_close(CuCopy *c)
{
	if (c->lib)
		dlclose(c->lib);
	memset(c, 0, sizeof *c);
}
