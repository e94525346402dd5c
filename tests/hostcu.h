/* A host-memory stand-in for the CUDA driver, for tests without a GPU:
 * the table of runtime/cudrv.h filled with functions that keep device
 * memory in host memory, so that everything before and behind the
 * driver's calls (plans, workspaces, the arena, arguments, graphs, the
 * messages of failing calls) runs on the CPU. Handed to the runtime with
 * rt_open_with (rt_impl.h).
 *
 * What it checks as a device would: an allocation past the device's
 * memory (hc.mem_limit) fails with CUDA_ERROR_OUT_OF_MEMORY; a copy or a
 * memset must lie inside one live allocation. Kernels run nothing: each
 * launch is recorded (kernel, grid, block, shared bytes, cluster, argument
 * values, counted from the kernel's .param list in the PTX), and
 * hc_check_pass holds a pass's recorded pointers against the manifest:
 * every buffer a kernel gets inside one live allocation, with room for
 * the workspace's bytes. Allocations up to HC_BACKED bytes have host
 * memory behind them; larger ones are addresses only.
 *
 * Contexts: each thread has a current context (hc_current, none at
 * first), which cuCtxGetCurrent reads and cuCtxSetCurrent sets; the
 * device's primary context is HC_CTX, and a test may make any other
 * pointer current (hc_set_current) to stand for another device's or a
 * framework's. Every entry point that needs a current context (a module,
 * a kernel's attributes or occupancy, a launch, memory, a stream, an
 * event, a graph, a synchronisation) checks that HC_CTX is current in the
 * calling thread; where it is not, the call counts a violation
 * (hc.ctx_violations; the first in hc.ctx_violation) and fails with
 * CUDA_ERROR_INVALID_CONTEXT. hc.ctx_gets and hc.ctx_sets count the
 * cuCtxGetCurrent and cuCtxSetCurrent calls.
 *
 * Faults: with hc.fail_at = N, the Nth driver call from then on fails
 * (with hc.fail_code, or CUDA_ERROR_OUT_OF_MEMORY for an allocation):
 * a sweep over N reaches every call's failure path. With hc.fail_fn =
 * "LaunchKernelEx" (a name of the table, without "cu"), the call of that
 * function after hc.fail_skip of them have succeeded fails instead.
 *
 * Included by one test program each (the state is that program's).
 */
#ifndef RECUR_TEST_HOSTCU_H
#define RECUR_TEST_HOSTCU_H
#include "rt_impl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HC_MAXBLK 4096
#define HC_MAXLAUNCH 64
#define HC_MAXARG 64
#define HC_MAXFN 256
#define HC_BACKED ((size_t)64 << 20)
#define HC_BASE ((CUdeviceptr)1 << 40) /* device addresses start here, far from host ones */

typedef struct {
	CUdeviceptr p;
	size_t bytes;
	unsigned char *host;
} HcBlock;
typedef struct {
	char name[128];
	int nparam;
	int psize[HC_MAXARG]; /* each parameter's bytes, as the PTX declares it */
	int smem_attr; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set (0: the default 48 KB) */
} HcFn;
typedef struct {
	char kernel[128];
	unsigned grid[3], block[3], smem, cluster;
	int narg;      /* the kernel's .param count */
	void **params; /* the runtime's argument slots (8 bytes each; an i32 in the low half) */
} HcLaunch;

static struct {
	HcBlock blk[HC_MAXBLK];
	int nblk;
	CUdeviceptr next; /* bump allocator of addresses */
	size_t mem_limit, held;
	HcFn fn[HC_MAXFN];
	int nfn;
	const char *ptx; /* of the module loaded last */
	HcLaunch launch[HC_MAXLAUNCH];
	int nlaunch, capturing, captured;
	int tmaps;        /* tensor maps encoded */
	int no_param_info; /* open as a driver before CUDA 12.4 (no cuFuncGetParamInfo) */
	int sms;          /* multiprocessors the device reports; 0: 132 */
	int smem_optin;   /* shared bytes a block may opt in to; 0: 232448 (sm_90's) */
	long calls, fail_at; /* fail_at > 0: that call (counted from 1) fails */
	const char *failed;  /* the entry point that failed, "MemFree" */
	CUresult fail_code;
	int handles; /* events, streams, graphs alive */
	/* cubins: an image "\x7f" "ELF" followed by PTX text stands for one;
	 * refuse_cubin answers it as a driver with no code for the GPU would */
	int cubins, refuse_cubin;
	char *cubin_ptx; /* the PTX of the cubin loaded last (the runtime frees its image) */
	const char *fail_fn; /* fails the call of this function after fail_skip of them */
	int fail_skip;
	long ctx_gets, ctx_sets;   /* cuCtxGetCurrent, cuCtxSetCurrent calls */
	int ctx_violations;        /* calls that needed the device's context without it current */
	char ctx_violation[160];   /* the first of them */
	/* calls refused with an error other than an injected fault, as
	 * compute-sanitizer reports each: a clean run makes none */
	int refused;
	const char *refused_fn; /* the last of them */
} hc;

/* A refusal, counted (hc.refused) */
#define HC_REFUSE(code) (hc.refused++, hc.refused_fn = __func__, (code))

/* The device's primary context (DevicePrimaryCtxRetain's) */
#define HC_CTX ((CUcontext)&hc)
/* The calling thread's current context: none in a new thread */
static _Thread_local CUcontext hc_current;

/* The calling thread's current context as a test sets it, no driver call
 * counted (another device's, a framework's, or none) */
__attribute__((unused)) static void hc_set_current(CUcontext c)
{
	hc_current = c;
}
__attribute__((unused)) static CUcontext hc_get_current(void)
{
	return hc_current;
}

static void hc_reset(void)
{
	for (int i = 0; i < hc.nblk; i++)
		free(hc.blk[i].host);
	free(hc.cubin_ptx);
	memset(&hc, 0, sizeof hc);
	hc_current = NULL;
	hc.next = HC_BASE;
	hc.mem_limit = (size_t)141 << 30; /* an H200's */
	hc.fail_code = CUDA_ERROR_LAUNCH_FAILED;
}

/* Whether this call (of function fn) is the one to fail. */
static int hc_fault_in(const char *fn)
{
	hc.calls++;
	if (hc.fail_fn && !strcmp(hc.fail_fn, fn + 3) && hc.fail_skip-- == 0) {
		hc.fail_fn = NULL; /* once */
		hc.fail_skip = 0;
		hc.failed = fn + 3;
		return 1;
	}
	if (hc.fail_at <= 0 || hc.calls != hc.fail_at)
		return 0;
	hc.failed = fn + 3; /* without "hc_" */
	return 1;
}
#define hc_fault() hc_fault_in(__func__)
#define HC_ENTER()                                                                                                     \
	do {                                                                                                           \
		if (hc_fault())                                                                                        \
			return hc.fail_code;                                                                           \
	} while (0)

/* Whether the device's context is current for function fn; a violation
 * counted where it is not */
static int hc_in_ctx(const char *fn)
{
	if (hc_current == HC_CTX)
		return 1;
	if (!hc.ctx_violations++)
		snprintf(hc.ctx_violation, sizeof hc.ctx_violation, "cu%s with %s current", fn + 3,
		         hc_current ? "another context" : "no context");
	return 0;
}
/* HC_ENTER of an entry point that needs the device's context current */
#define HC_ENTER_CTX()                                                                                                 \
	do {                                                                                                           \
		HC_ENTER();                                                                                            \
		if (!hc_in_ctx(__func__))                                                                              \
			return HC_REFUSE(CUDA_ERROR_INVALID_CONTEXT);                                                  \
	} while (0)

/* The live block holding [p, p+n), or NULL. */
static HcBlock *hc_block(CUdeviceptr p, size_t n)
{
	for (int i = 0; i < hc.nblk; i++) {
		HcBlock *b = &hc.blk[i];
		if (p >= b->p && p - b->p <= b->bytes && n <= b->bytes - (p - b->p))
			return b;
	}
	return NULL;
}

static CUresult hc_DriverGetVersion(int *v)
{
	HC_ENTER();
	*v = 12080;
	return CUDA_SUCCESS;
}
static CUresult hc_DeviceGet(CUdevice *d, int o)
{
	HC_ENTER();
	*d = o;
	return CUDA_SUCCESS;
}
static CUresult hc_DeviceGetCount(int *n)
{
	HC_ENTER();
	*n = 1;
	return CUDA_SUCCESS;
}
static CUresult hc_DeviceGetName(char *s, int n, CUdevice d)
{
	HC_ENTER();
	snprintf(s, (size_t)n, "host stand-in %d", (int)d);
	return CUDA_SUCCESS;
}
/* the shared bytes a block may opt in to: hc.smem_optin, else sm_90's */
static int hc_smem_optin(void) { return hc.smem_optin ? hc.smem_optin : 232448; }

static CUresult hc_DeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	HC_ENTER();
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*v = hc_smem_optin();
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*v = hc.sms ? hc.sms : 132;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*v = 9;
		break;
	default:
		*v = 0;
	}
	return CUDA_SUCCESS;
}
static CUresult hc_DeviceTotalMem(size_t *b, CUdevice d)
{
	HC_ENTER();
	*b = hc.mem_limit;
	return CUDA_SUCCESS;
}
static CUresult hc_DevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	HC_ENTER();
	*c = HC_CTX;
	return CUDA_SUCCESS;
}
static CUresult hc_DevicePrimaryCtxRelease(CUdevice d)
{
	HC_ENTER();
	return CUDA_SUCCESS;
}
static CUresult hc_CtxGetCurrent(CUcontext *c)
{
	HC_ENTER();
	hc.ctx_gets++;
	*c = hc_current;
	return CUDA_SUCCESS;
}
static CUresult hc_CtxSetCurrent(CUcontext c)
{
	HC_ENTER();
	hc.ctx_sets++;
	hc_current = c;
	return CUDA_SUCCESS;
}
static CUresult hc_CtxSynchronize(void)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}

/* The number of .param entries of kernel name in the PTX, -1 when absent. */
/* a .param's bytes: ".param .u64 a" 8, ".param .u32 a" 4, ".param .align 64
 * .b8 a[128]" 128 */
static int hc_param_size(const char *r, const char *end)
{
	const char *t = strstr(r + 6, " .");
	if (t && end && t > end)
		return 0;
	if (t && !strncmp(t, " .align", 7))
		t = strstr(t + 7, " .");
	if (!t)
		return 0;
	int bits = atoi(t + 3);   /* ".u64", ".b32", ".b8" */
	const char *br = strchr(t, '['), *stop = strpbrk(t, ",)");
	int count = br && (!stop || br < stop) ? atoi(br + 1) : 1;
	return bits / 8 * count;
}

static int hc_ptx_params(const char *ptx, const char *name, int *psize)
{
	size_t n = strlen(name);
	for (const char *p = ptx; (p = strstr(p, ".entry")); p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, name, n) || (q[n] != '(' && q[n] != ' ' && q[n] != '\n'))
			continue;
		const char *end = strchr(q, ')');
		int k = 0;
		for (const char *r = q; (r = strstr(r, ".param")) && (!end || r < end); r += 6, k++)
			if (psize && k < HC_MAXARG)
				psize[k] = hc_param_size(r, end);
		return k;
	}
	return -1;
}

static CUresult hc_ModuleLoadDataEx(CUmodule *m, const void *image, unsigned nopt, CUjit_option *o, void **v)
{
	HC_ENTER_CTX();
	const char *ptx = image;
	if (memcmp(image, "\x7f" "ELF", 4) == 0) {
		if (hc.refuse_cubin)
			return HC_REFUSE(CUDA_ERROR_NO_BINARY_FOR_GPU);
		free(hc.cubin_ptx);
		hc.cubin_ptx = strdup(ptx + 4);
		if (!hc.cubin_ptx)
			return HC_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
		hc.cubins++;
		hc.ptx = hc.cubin_ptx;
		*m = (CUmodule)&hc.ptx;
		return CUDA_SUCCESS;
	}
	if (!strstr(ptx, ".version")) {
		/* the error log, as the JIT writes one */
		for (unsigned i = 0; i < nopt; i++)
			if (o[i] == CU_JIT_ERROR_LOG_BUFFER)
				snprintf(v[i], 64, "ptxas fatal: no .version directive");
		return HC_REFUSE(CUDA_ERROR_INVALID_PTX);
	}
	hc.ptx = ptx; /* the runtime frees it after resolving the kernels */
	*m = (CUmodule)&hc.ptx;
	return CUDA_SUCCESS;
}
static CUresult hc_ModuleUnload(CUmodule m)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}
static CUresult hc_ModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	HC_ENTER_CTX();
	int psize[HC_MAXARG] = {0};
	int np = hc.ptx ? hc_ptx_params(hc.ptx, name, psize) : -1;
	if (np < 0)
		return HC_REFUSE(CUDA_ERROR_NOT_FOUND);
	for (int i = 0; i < hc.nfn; i++)
		if (!strcmp(hc.fn[i].name, name) && hc.fn[i].nparam == np && !memcmp(hc.fn[i].psize, psize, sizeof psize)) {
			hc.fn[i].smem_attr = 0;   /* a module loaded again: a new function, its attributes the defaults */
			*f = (CUfunction)&hc.fn[i];
			return CUDA_SUCCESS;
		}
	if (hc.nfn == HC_MAXFN)
		return HC_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	HcFn *F = &hc.fn[hc.nfn++];
	snprintf(F->name, sizeof F->name, "%s", name);
	F->nparam = np;
	memcpy(F->psize, psize, sizeof psize);
	*f = (CUfunction)F;
	return CUDA_SUCCESS;
}
static CUresult hc_FuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	HC_ENTER_CTX();
	*v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 64 : a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
	return CUDA_SUCCESS;
}
static CUresult hc_FuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	HC_ENTER_CTX();
	if (v > hc_smem_optin())
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
		((HcFn *)f)->smem_attr = v;
	return CUDA_SUCCESS;
}
/* 2 blocks an SM; as the driver, none where a block asks for more dynamic
 * shared memory than the function allows (past 48 KB: what it opted in to) */
static CUresult hc_OccupancyMaxActiveBlocksPerMultiprocessor(int *b, CUfunction f, int block, size_t smem)
{
	HC_ENTER_CTX();
	const HcFn *F = (const HcFn *)f;
	*b = smem > 49152 && smem > (size_t)F->smem_attr ? 0 : 2;
	return CUDA_SUCCESS;
}
static CUresult hc_OccupancyMaxActiveClusters(int *c, CUfunction f, const CUlaunchConfig *cfg)
{
	HC_ENTER_CTX();
	*c = 66;
	return CUDA_SUCCESS;
}

static CUresult hc_LaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
	HC_ENTER_CTX();
	const HcFn *F = (const HcFn *)f;
	if (!cfg->gridDimX || !cfg->gridDimY || !cfg->gridDimZ || !cfg->blockDimX)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (hc.capturing) {
		hc.captured++;
		return CUDA_SUCCESS;
	}
	HcLaunch *L = &hc.launch[hc.nlaunch % HC_MAXLAUNCH];
	hc.nlaunch++;
	memset(L, 0, sizeof *L);
	snprintf(L->kernel, sizeof L->kernel, "%s", F->name);
	L->grid[0] = cfg->gridDimX, L->grid[1] = cfg->gridDimY, L->grid[2] = cfg->gridDimZ;
	L->block[0] = cfg->blockDimX, L->block[1] = cfg->blockDimY, L->block[2] = cfg->blockDimZ;
	L->smem = cfg->sharedMemBytes;
	L->cluster = 1;
	for (unsigned i = 0; i < cfg->numAttrs; i++)
		if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			L->cluster = cfg->attrs[i].value.clusterDim.x;
	/* read later, by hc_check_pass, as many as the manifest gives: a PTX
	 * that declares more than that is the manifest's fault, not the fake's */
	L->narg = F->nparam < HC_MAXARG ? F->nparam : HC_MAXARG;
	L->params = params;
	return CUDA_SUCCESS;
}

/* the PTX's parameter sizes (offsets packed, aligned to their sizes up to 64) */
static CUresult hc_FuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
	HC_ENTER_CTX();
	const HcFn *F = (const HcFn *)f;
	if (!F || index >= (size_t)F->nparam || index >= HC_MAXARG)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	size_t at = 0;
	for (size_t i = 0; i <= index; i++) {
		size_t al = F->psize[i] < 64 ? (size_t)F->psize[i] : 64;
		at = al ? (at + al - 1) / al * al : at;
		if (i < index)
			at += (size_t)F->psize[i];
	}
	*offset = at;
	if (size)
		*size = (size_t)F->psize[index];
	return CUDA_SUCCESS;
}

/* A tensor map held as the driver's rules would take it, its address in
 * its first 8 bytes (where hc_check_pass reads an argument's value) and
 * its dims and strides after it, for a test to read */
static CUresult hc_TensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *addr,
                                        const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                        const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle swz,
                                        CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	HC_ENTER();
	(void)l2;
	(void)oob;
	hc.tmaps++;
	if (!map || rank < 1 || rank > 5 || !addr || (uintptr_t)addr % 16 || dtype != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ||
	    il != CU_TENSOR_MAP_INTERLEAVE_NONE)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	for (cuuint32_t d = 0; d < rank; d++) {
		if (dims[d] < 1 || dims[d] > (cuuint64_t)1 << 32 || box[d] < 1 || box[d] > 256 || estrides[d] < 1 ||
		    estrides[d] > 8)
			return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
		if (d + 1 < rank && (strides[d] % 16 || strides[d] >= (cuuint64_t)1 << 40))
			return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	if (swz == CU_TENSOR_MAP_SWIZZLE_128B && box[0] * 2 > 128)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	memset(map, 0, sizeof *map);
	map->opaque[0] = (cuuint64_t)(uintptr_t)addr;
	for (cuuint32_t d = 0; d < rank; d++) {
		map->opaque[1 + d] = dims[d];
		map->opaque[6 + d] = d + 1 < rank ? strides[d] : 0;
		map->opaque[11 + d] = box[d];
	}
	return CUDA_SUCCESS;
}

static CUresult hc_MemAlloc(CUdeviceptr *p, size_t n)
{
	if (hc_fault())
		return HC_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	if (!hc_in_ctx(__func__))
		return HC_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (n == 0)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (n > hc.mem_limit - hc.held || hc.nblk == HC_MAXBLK)
		return HC_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	HcBlock *b = &hc.blk[hc.nblk];
	b->host = n <= HC_BACKED ? calloc(1, n) : NULL;
	if (n <= HC_BACKED && !b->host)
		return HC_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	b->p = hc.next;
	b->bytes = n;
	hc.next += (n + 0xffff) & ~(CUdeviceptr)0xffff; /* 64 KiB apart, as the driver's granularity */
	hc.nblk++;
	hc.held += n;
	*p = b->p;
	return CUDA_SUCCESS;
}
static CUresult hc_MemFree(CUdeviceptr p)
{
	HC_ENTER_CTX();
	for (int i = 0; i < hc.nblk; i++)
		if (hc.blk[i].p == p) {
			free(hc.blk[i].host);
			hc.held -= hc.blk[i].bytes;
			hc.blk[i] = hc.blk[--hc.nblk];
			return CUDA_SUCCESS;
		}
	return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
}
static CUresult hc_MemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
	HC_ENTER_CTX();
	HcBlock *b = hc_block(d, n);
	if (!b)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (b->host)
		memcpy(b->host + (d - b->p), s, n);
	return CUDA_SUCCESS;
}
static CUresult hc_MemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	HC_ENTER_CTX();
	(void)st;
	HcBlock *bd = hc_block(d, n), *bs = hc_block(s, n);
	if (!bd || !bs)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (bd->host && bs->host)
		memmove(bd->host + (d - bd->p), bs->host + (s - bs->p), n);
	return CUDA_SUCCESS;
}
static CUresult hc_MemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
	HC_ENTER_CTX();
	HcBlock *b = hc_block(s, n);
	if (!b)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (b->host)
		memcpy(d, b->host + (s - b->p), n);
	else
		memset(d, 0, n);
	return CUDA_SUCCESS;
}
static CUresult hc_MemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
	HC_ENTER_CTX();
	HcBlock *b = hc_block(d, n);
	if (!b)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (b->host && !hc.capturing)
		memset(b->host + (d - b->p), v, n);
	hc.captured += hc.capturing;
	return CUDA_SUCCESS;
}
static CUresult hc_MemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
	HC_ENTER_CTX();
	if (d % 4 || n > SIZE_MAX / 4)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	HcBlock *b = hc_block(d, n * 4);
	if (!b)
		return HC_REFUSE(CUDA_ERROR_INVALID_VALUE);
	for (size_t i = 0; b->host && !hc.capturing && i < n; i++)
		memcpy(b->host + (d - b->p) + 4 * i, &v, 4);
	hc.captured += hc.capturing;
	return CUDA_SUCCESS;
}
static CUresult hc_MemGetInfo(size_t *f, size_t *t)
{
	HC_ENTER_CTX();
	*f = hc.mem_limit - hc.held;
	*t = hc.mem_limit;
	return CUDA_SUCCESS;
}

/* Events, streams and graphs: counted handles, addresses never dereferenced
 * (nothing to free when a destroy is the call made to fail). */
static void *hc_handle(void)
{
	static uintptr_t next = 0x1000;
	hc.handles++;
	next += 16;
	return (void *)next;
}
static void hc_unhandle(void *h)
{
	(void)h;
	hc.handles--;
}
static CUresult hc_EventCreate(CUevent *e, unsigned f)
{
	HC_ENTER_CTX();
	*e = hc_handle();
	return CUDA_SUCCESS;
}
static CUresult hc_EventRecord(CUevent e, CUstream s)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}
static CUresult hc_EventSynchronize(CUevent e)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}
static CUresult hc_EventElapsedTime(float *ms, CUevent a, CUevent b)
{
	HC_ENTER_CTX();
	*ms = 0.001f;
	return CUDA_SUCCESS;
}
static CUresult hc_EventDestroy(CUevent e)
{
	HC_ENTER_CTX();
	hc_unhandle(e);
	return CUDA_SUCCESS;
}
static CUresult hc_StreamSynchronize(CUstream s)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}
static CUresult hc_StreamCreate(CUstream *s, unsigned f)
{
	HC_ENTER_CTX();
	*s = hc_handle();
	return CUDA_SUCCESS;
}
static CUresult hc_StreamDestroy(CUstream s)
{
	HC_ENTER_CTX();
	hc_unhandle(s);
	return CUDA_SUCCESS;
}
static CUresult hc_StreamBeginCapture(CUstream s, CUstreamCaptureMode m)
{
	HC_ENTER_CTX();
	hc.capturing = 1;
	hc.captured = 0;
	return CUDA_SUCCESS;
}
static CUresult hc_StreamEndCapture(CUstream s, CUgraph *g)
{
	hc.capturing = 0;
	HC_ENTER_CTX();
	*g = hc_handle();
	return CUDA_SUCCESS;
}
static CUresult hc_GraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	HC_ENTER_CTX();
	*n = (size_t)hc.captured;
	return CUDA_SUCCESS;
}
static CUresult hc_GraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long f)
{
	HC_ENTER_CTX();
	*e = hc_handle();
	return CUDA_SUCCESS;
}
static CUresult hc_GraphLaunch(CUgraphExec e, CUstream s)
{
	HC_ENTER_CTX();
	return CUDA_SUCCESS;
}
static CUresult hc_GraphExecDestroy(CUgraphExec e)
{
	HC_ENTER_CTX();
	hc_unhandle(e);
	return CUDA_SUCCESS;
}
static CUresult hc_GraphDestroy(CUgraph g)
{
	HC_ENTER_CTX();
	hc_unhandle(g);
	return CUDA_SUCCESS;
}

static CUresult hc_Init(unsigned f)
{
	return CUDA_SUCCESS;
}
static CUresult hc_GetErrorName(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_OUT_OF_MEMORY      ? "CUDA_ERROR_OUT_OF_MEMORY"
	        : r == CUDA_ERROR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED"
	        : r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
	        : r == CUDA_ERROR_NOT_FOUND     ? "CUDA_ERROR_NOT_FOUND"
	        : r == CUDA_ERROR_INVALID_PTX   ? "CUDA_ERROR_INVALID_PTX"
	        : r == CUDA_ERROR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
	                                        : NULL;
	return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult hc_GetErrorString(CUresult r, const char **s)
{
	*s = "reported by the host stand-in";
	return CUDA_SUCCESS;
}

/* The launches recorded since hc.nlaunch was set to 0, held against pass
 * of variant d at shape s: each pointer argument inside a live block (a
 * workspace's with room for its bytes; null only for an empty one). 0, or
 * -1 with the first fault in why. */
__attribute__((unused)) static int hc_check_pass(const recur_manifest *m, int vi, int pass, recur_shape s, char *why, size_t n)
{
	const rt_vdesc *d = &m->variant[vi];
	ShapeVars sv;
	if (hc.nlaunch != d->nlaunch[pass] || hc.nlaunch > HC_MAXLAUNCH) {
		snprintf(why, n, "%d launches recorded, the %s has %d", hc.nlaunch, rt_pass_name[pass],
		         d->nlaunch[pass]);
		return -1;
	}
	if (rt_shape_vars(m, vi, s, 1, &sv, why, n))
		return -1;
	for (int i = 0; i < hc.nlaunch; i++) {
		const rt_launch *l = &d->launch[pass][i];
		const HcLaunch *L = &hc.launch[i];
		for (int k = 0; k < l->narg && k < L->narg; k++) {
			rt_argkind kind = l->arg[k].kind;
			uint64_t a;
			memcpy(&a, L->params[k], 8);
			if (kind == RT_ARG_I32 || kind == RT_ARG_I64 || kind == RT_ARG_ZWORDS)
				continue;
			int64_t bytes = 1;
			char e[256];
			if (kind == RT_ARG_WS && shapex_eval(d->ws[l->arg[k].index].bytes, &sv, &bytes, e, sizeof e))
				bytes = 1;
			/* null: an empty arena or workspace, a state field not given */
			if (a == 0 && (kind == RT_ARG_ZBASE || kind == RT_ARG_STATE || (kind == RT_ARG_WS && bytes == 0)))
				continue;
			if (!hc_block((CUdeviceptr)a, bytes > 0 ? (size_t)bytes : 1)) {
				snprintf(why, n,
				         "%s[%d] kernel %s args[%d] \"%s\" = 0x%llx (%lld bytes) lies outside every "
				         "allocation",
				         rt_pass_name[pass], i, l->kernel, k, l->arg[k].text, (unsigned long long)a,
				         (long long)bytes);
				return -1;
			}
		}
	}
	return 0;
}

/* The runtime on the stand-in: 0, or -1 with err. */
static int hc_open(recur_rt **rt, char *err, size_t errlen)
{
	rt_cu cu;
	memset(&cu, 0, sizeof cu);
	snprintf(cu.path, sizeof cu.path, "host stand-in");
#define HC_SET(name, params) cu.name = hc_##name;
	RT_CU_EARLY(HC_SET)
	RT_CU_FUNCS(HC_SET)
#undef HC_SET
	cu.FuncGetParamInfo = hc.no_param_info ? NULL : hc_FuncGetParamInfo;
	return rt_open_with(rt, &cu, 0, err, errlen);
}

#endif
