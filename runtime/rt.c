/* The runtime object: the driver (cudrv.h), the device's primary context,
 * counted device memory, copies, synchronisation and events.
 *
 * Memory accounting is what the benchmarks report as "extra device memory":
 * every allocation of the runtime and of its callers that want to be counted
 * goes through recur_alloc, which keeps the live blocks (so recur_free knows
 * each size) and the current and peak byte totals.
 */
#include "rt_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int recur_rt_open(recur_rt **out, int device, char *err, size_t errlen)
{
	rt_cu cu;
	*out = NULL;
	if (rt_cu_open(&cu, err, errlen))
		return -1;
	return rt_open_with(out, &cu, device, err, errlen);
}

int rt_open_with(recur_rt **out, const rt_cu *table, int device, char *err, size_t errlen)
{
	*out = NULL;
	recur_rt *rt = calloc(1, sizeof *rt);
	if (!rt) {
		rt_cu copy = *table;
		rt_cu_close(&copy);
		snprintf(err, errlen, "out of host memory opening the runtime");
		return -1;
	}
	rt->ordinal = device;
	rt->cu = *table;   /* the runtime owns the table (and its library) from here */
	rt_cu *cu = &rt->cu;
	int n = 0;
	if (RT_CU(cu, DeviceGetCount, (&n), err, errlen, "counting devices"))
		goto fail;
	if (device < 0 || device >= n) {
		snprintf(err, errlen, "device %d does not exist: the driver sees %d device%s", device, n,
		         n == 1 ? "" : "s");
		goto fail;
	}
	if (RT_CU(cu, DeviceGet, (&rt->dev, device), err, errlen, "opening device %d", device) ||
	    RT_CU(cu, DevicePrimaryCtxRetain, (&rt->ctx, rt->dev), err, errlen,
	          "retaining the primary context of device %d", device))
		goto fail;
	if (RT_CU(cu, CtxSetCurrent, (rt->ctx), err, errlen, "making device %d's context current", device) ||
	    RT_CU(cu, DeviceGetAttribute, (&rt->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
	          rt->dev), err, errlen, "reading the shared memory limit of device %d", device))
		goto fail;
	*out = rt;
	return 0;
fail:
	recur_rt_close(rt);
	return -1;
}

void recur_rt_close(recur_rt *rt)
{
	if (!rt)
		return;
	char err[512];
	/* blocks the caller did not free go with the runtime */
	for (int i = 0; i < rt->nblock; i++)
		if (RT_CU(&rt->cu, MemFree, (rt->block[i].p), err, sizeof err, "freeing %zu bytes at close",
		          rt->block[i].bytes))
			fprintf(stderr, "recur: %s\n", err);
	if (rt->ctx && RT_CU(&rt->cu, DevicePrimaryCtxRelease, (rt->dev), err, sizeof err,
	                     "releasing the primary context of device %d", rt->ordinal))
		fprintf(stderr, "recur: %s\n", err);
	rt_cu_close(&rt->cu);
	free(rt->block);
	free(rt);
}

int recur_rt_device_name(recur_rt *rt, char *name, size_t n)
{
	char err[512];
	if (n == 0 || n > 1 << 20)
		return -1;
	if (RT_CU(&rt->cu, DeviceGetName, (name, (int)n, rt->dev), err, sizeof err, "naming device %d",
	          rt->ordinal)) {
		snprintf(name, n, "(unknown device)");
		return -1;
	}
	return 0;
}

int recur_rt_driver_version(recur_rt *rt, int *version)
{
	char err[512];
	return RT_CU(&rt->cu, DriverGetVersion, (version), err, sizeof err, "reading the driver version");
}

/* ---- counted memory ---- */

int recur_alloc(recur_rt *rt, size_t bytes, CUdeviceptr *p, char *err, size_t errlen)
{
	*p = 0;
	if (bytes == 0)
		return 0;     /* the driver refuses 0; a null pointer is an empty buffer */
	if (rt->nblock == rt->capblock) {
		int cap = rt->capblock ? 2 * rt->capblock : 64;
		rt_block *b = realloc(rt->block, cap * sizeof *b);
		if (!b) {
			snprintf(err, errlen, "out of host memory tracking device allocations");
			return -1;
		}
		rt->block = b;
		rt->capblock = cap;
	}
	CUresult r = rt->cu.MemAlloc(p, bytes);
	if (r != CUDA_SUCCESS) {
		size_t free_b = 0, total_b = 0;
		char why[160] = "";
		if (rt->cu.MemGetInfo(&free_b, &total_b) == CUDA_SUCCESS)
			snprintf(why, sizeof why, "; the device has %zu of %zu bytes free", free_b, total_b);
		rt_cu_check(&rt->cu, r, "cuMemAlloc", err, errlen, "allocating %zu bytes (recur holds %zu%s)",
		            bytes, rt->cur, why);
		*p = 0;
		return -1;
	}
	rt->block[rt->nblock++] = (rt_block){*p, bytes};
	rt->cur += bytes;
	if (rt->cur > rt->peak)
		rt->peak = rt->cur;
	return 0;
}

void recur_free(recur_rt *rt, CUdeviceptr p)
{
	if (!p)
		return;
	int i = rt->nblock - 1;   /* newest first: workspaces come and go in stack order */
	while (i >= 0 && rt->block[i].p != p)
		i--;
	if (i < 0) {
		fprintf(stderr, "recur: recur_free(0x%llx): not allocated by recur_alloc (%s:%d)\n",
		        (unsigned long long)p, __FILE__, __LINE__);
		return;
	}
	char err[512];
	if (RT_CU(&rt->cu, MemFree, (p), err, sizeof err, "freeing %zu bytes", rt->block[i].bytes))
		fprintf(stderr, "recur: %s\n", err);
	rt->cur -= rt->block[i].bytes;
	rt->block[i] = rt->block[--rt->nblock];
}

size_t recur_mem_current(const recur_rt *rt)
{
	return rt->cur;
}

size_t recur_mem_peak(const recur_rt *rt)
{
	return rt->peak;
}

void recur_mem_reset_peak(recur_rt *rt)
{
	rt->peak = rt->cur;
}

/* ---- copies, sets, synchronisation ---- */

int recur_memcpy_htod(recur_rt *rt, CUdeviceptr dst, const void *src, size_t n, char *err, size_t errlen)
{
	return n ? RT_CU(&rt->cu, MemcpyHtoD, (dst, src, n), err, errlen, "copying %zu bytes to the device", n) : 0;
}

int recur_memcpy_dtoh(recur_rt *rt, void *dst, CUdeviceptr src, size_t n, char *err, size_t errlen)
{
	return n ? RT_CU(&rt->cu, MemcpyDtoH, (dst, src, n), err, errlen, "copying %zu bytes from the device", n) : 0;
}

/* On the default stream, so it is ordered with the caller's default-stream work. */
int recur_memset_u8(recur_rt *rt, CUdeviceptr dst, unsigned char v, size_t n, char *err, size_t errlen)
{
	return n ? RT_CU(&rt->cu, MemsetD8Async, (dst, v, n, 0), err, errlen, "setting %zu bytes to %u", n, v) : 0;
}

int recur_sync(recur_rt *rt, char *err, size_t errlen)
{
	return RT_CU(&rt->cu, CtxSynchronize, (), err, errlen,
	             "synchronising device %d (an error here usually comes from an earlier kernel)", rt->ordinal);
}

/* ---- events ---- */

int recur_event_create(recur_rt *rt, CUevent *e, char *err, size_t errlen)
{
	return RT_CU(&rt->cu, EventCreate, (e, CU_EVENT_DEFAULT), err, errlen, "creating a timing event");
}

int recur_event_record(recur_rt *rt, CUevent e, CUstream s, char *err, size_t errlen)
{
	return RT_CU(&rt->cu, EventRecord, (e, s), err, errlen, "recording an event");
}

int recur_event_elapsed_ms(recur_rt *rt, CUevent a, CUevent b, float *ms, char *err, size_t errlen)
{
	return RT_CU(&rt->cu, EventSynchronize, (b), err, errlen, "waiting for an event") ||
	       RT_CU(&rt->cu, EventElapsedTime, (ms, a, b), err, errlen, "reading the time between two events")
	       ? -1 : 0;
}

void recur_event_destroy(recur_rt *rt, CUevent e)
{
	char err[512];
	if (e && RT_CU(&rt->cu, EventDestroy, (e), err, sizeof err, "destroying an event"))
		fprintf(stderr, "recur: %s\n", err);
}

size_t recur_abi_size(const char *type)
{
	static const struct { const char *name; size_t size; } t[] = {
		{"recur_shape", sizeof(recur_shape)},       {"recur_io", sizeof(recur_io)},
		{"recur_seqstate", sizeof(recur_seqstate)}, {"recur_ws", sizeof(recur_ws)},
		{"recur_ws_sizes", sizeof(recur_ws_sizes)}, {"recur_plan_info", sizeof(recur_plan_info)},
	};
	for (size_t i = 0; type && i < sizeof t / sizeof *t; i++)
		if (!strcmp(type, t[i].name))
			return t[i].size;
	return 0;
}
