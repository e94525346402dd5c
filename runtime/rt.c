/* The runtime object: the driver (cudrv.h), the device's primary context,
 * counted device memory, copies, synchronisation and events.
 *
 * Memory accounting is what the benchmarks report as "extra device memory":
 * every allocation of the runtime and of its callers that want to be counted
 * goes through recur_alloc, which keeps the live blocks (so recur_free knows
 * each size) and the current and peak byte totals.
 *
 * The device's context is current in the calling thread only within a
 * call (rt_ctx_enter / rt_ctx_leave, below): opening the runtime retains
 * the primary context and makes nothing current.
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
	if (RT_CU(cu, DeviceGetAttribute, (&rt->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
	          rt->dev), err, errlen, "reading the shared memory limit of device %d", device) ||
	    RT_CU(cu, DeviceGetAttribute, (&rt->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, rt->dev), err, errlen,
	          "reading the multiprocessor count of device %d", device))
		goto fail;
	*out = rt;
	return 0;
fail:
	recur_rt_close(rt);
	return -1;
}

/* ---- the calling thread's current context ---- */

int rt_ctx_enter(const recur_rt *rt, rt_ctx_saved *c, const char *call, const char *variant, char *err,
                 size_t errlen)
{
	*c = (rt_ctx_saved){ .prev = rt->ctx, .call = call, .variant = variant };
	CUcontext cur = NULL;
	if (RT_CU(&rt->cu, CtxGetCurrent, (&cur), err, errlen, "reading the calling thread's current context for %s%s%s",
	          call, variant ? " of variant " : "", variant ? variant : ""))
		return -1;
	if (cur == rt->ctx)
		return 0;
	if (RT_CU(&rt->cu, CtxSetCurrent, (rt->ctx), err, errlen, "making device %d's primary context current for %s%s%s",
	          rt->ordinal, call, variant ? " of variant " : "", variant ? variant : ""))
		return -1;
	c->prev = cur;
	return 0;
}

int rt_ctx_leave(const recur_rt *rt, const rt_ctx_saved *c, int rc, char *err, size_t errlen)
{
	if (c->prev == rt->ctx)
		return rc;
	char why[768];
	if (!RT_CU(&rt->cu, CtxSetCurrent, (c->prev), why, sizeof why,
	           "putting the calling thread's own context (%s) back after %s%s%s; device %d's stays current",
	           c->prev ? "another context" : "none", c->call, c->variant ? " of variant " : "",
	           c->variant ? c->variant : "", rt->ordinal))
		return rc;
	if (!err || !errlen)
		return -1;
	const char *end = rc ? memchr(err, 0, errlen) : NULL;
	size_t n = end ? (size_t)(end - err) : 0;
	if (n + 1 < errlen)
		snprintf(err + n, errlen - n, "%s%s", n ? "; then " : "", why);
	return -1;
}

void recur_rt_close(recur_rt *rt)
{
	if (!rt)
		return;
	char err[1024];
	/* blocks the caller did not free go with the runtime */
	if (rt->nblock) {
		rt_ctx_saved c;
		if (rt_ctx_enter(rt, &c, "recur_rt_close", NULL, err, sizeof err)) {
			fprintf(stderr, "recur: %s; the %d allocation(s) still held (%zu bytes) are left to the primary "
			        "context's release\n", err, rt->nblock, rt->cur);
		} else {
			for (int i = 0; i < rt->nblock; i++)
				if (RT_CU(&rt->cu, MemFree, (rt->block[i].p), err, sizeof err, "freeing %zu bytes at close",
				          rt->block[i].bytes))
					fprintf(stderr, "recur: %s\n", err);
			if (rt_ctx_leave(rt, &c, 0, err, sizeof err))
				fprintf(stderr, "recur: %s\n", err);
		}
	}
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
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_alloc", NULL, err, errlen))
		return -1;
	CUresult r = rt->cu.MemAlloc(p, bytes);
	if (r != CUDA_SUCCESS) {
		size_t free_b = 0, total_b = 0;
		char why[160] = "";
		if (rt->cu.MemGetInfo(&free_b, &total_b) == CUDA_SUCCESS)
			snprintf(why, sizeof why, "; the device has %zu of %zu bytes free", free_b, total_b);
		rt_cu_check(&rt->cu, r, "cuMemAlloc", err, errlen, "allocating %zu bytes (recur holds %zu%s)",
		            bytes, rt->cur, why);
		*p = 0;
		return rt_ctx_leave(rt, &c, -1, err, errlen);
	}
	rt->block[rt->nblock++] = (rt_block){*p, bytes};
	rt->cur += bytes;
	if (rt->cur > rt->peak)
		rt->peak = rt->cur;
	if (rt_ctx_leave(rt, &c, 0, err, errlen)) {
		/* the call fails, so it holds nothing (the runtime's context is
		 * still current: the restore failed) */
		recur_free(rt, *p);
		*p = 0;
		return -1;
	}
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
	char err[1024];
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_free", NULL, err, sizeof err)) {
		/* kept in the list: recur_rt_close frees it */
		fprintf(stderr, "recur: %s; the %zu bytes at 0x%llx stay allocated until recur_rt_close\n", err, rt->block[i].bytes,
		        (unsigned long long)p);
		return;
	}
	if (RT_CU(&rt->cu, MemFree, (p), err, sizeof err, "freeing %zu bytes", rt->block[i].bytes))
		fprintf(stderr, "recur: %s\n", err);
	rt->cur -= rt->block[i].bytes;
	rt->block[i] = rt->block[--rt->nblock];
	if (rt_ctx_leave(rt, &c, 0, err, sizeof err))
		fprintf(stderr, "recur: %s\n", err);
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
	rt_ctx_saved c;
	if (!n)
		return 0;
	if (rt_ctx_enter(rt, &c, "recur_memcpy_htod", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, MemcpyHtoD, (dst, src, n), err, errlen, "copying %zu bytes to the device", n);
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

int recur_memcpy_dtod(recur_rt *rt, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st, char *err,
                      size_t errlen)
{
	rt_ctx_saved c;
	if (!n)
		return 0;
	if (rt_ctx_enter(rt, &c, "recur_memcpy_dtod", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, MemcpyDtoDAsync, (dst, src, n, st), err, errlen, "copying %zu bytes on the device", n);
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

int recur_memcpy_dtoh(recur_rt *rt, void *dst, CUdeviceptr src, size_t n, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (!n)
		return 0;
	if (rt_ctx_enter(rt, &c, "recur_memcpy_dtoh", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, MemcpyDtoH, (dst, src, n), err, errlen, "copying %zu bytes from the device", n);
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

/* On the default stream, so it is ordered with the caller's default-stream work. */
int recur_memset_u8(recur_rt *rt, CUdeviceptr dst, unsigned char v, size_t n, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (!n)
		return 0;
	if (rt_ctx_enter(rt, &c, "recur_memset_u8", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, MemsetD8Async, (dst, v, n, 0), err, errlen, "setting %zu bytes to %u", n, v);
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

int recur_sync(recur_rt *rt, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_sync", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, CtxSynchronize, (), err, errlen,
	               "synchronising device %d (an error here usually comes from an earlier kernel)", rt->ordinal);
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

/* ---- events ---- */

int recur_event_create(recur_rt *rt, CUevent *e, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_event_create", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, EventCreate, (e, CU_EVENT_DEFAULT), err, errlen, "creating a timing event");
	if (rt_ctx_leave(rt, &c, rc, err, errlen) == 0)
		return 0;
	if (!rc) {   /* created, but the call fails: it holds nothing */
		recur_event_destroy(rt, *e);
		*e = NULL;
	}
	return -1;
}

int recur_event_record(recur_rt *rt, CUevent e, CUstream s, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_event_record", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, EventRecord, (e, s), err, errlen, "recording an event");
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

int recur_event_elapsed_ms(recur_rt *rt, CUevent a, CUevent b, float *ms, char *err, size_t errlen)
{
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_event_elapsed_ms", NULL, err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, EventSynchronize, (b), err, errlen, "waiting for an event") ||
	         RT_CU(&rt->cu, EventElapsedTime, (ms, a, b), err, errlen, "reading the time between two events")
	         ? -1 : 0;
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

void recur_event_destroy(recur_rt *rt, CUevent e)
{
	char err[1024];
	rt_ctx_saved c;
	if (!e)
		return;
	if (rt_ctx_enter(rt, &c, "recur_event_destroy", NULL, err, sizeof err)) {
		fprintf(stderr, "recur: %s; the event is left to the primary context\n", err);
		return;
	}
	if (RT_CU(&rt->cu, EventDestroy, (e), err, sizeof err, "destroying an event"))
		fprintf(stderr, "recur: %s\n", err);
	if (rt_ctx_leave(rt, &c, 0, err, sizeof err))
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
