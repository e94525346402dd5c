/* Variants: load a variant's PTX module, then run its forward or backward
 * plan, as the manifest lists it, on the caller's buffers and stream.
 *
 * Loading JIT-compiles the PTX with the error and info logs attached (a
 * refused module is reported with the driver's log, the variant and the
 * file), resolves every kernel that a launch names, and reads the kernels'
 * register, spill and shared-memory figures.
 *
 * Running a pass has two phases so that nothing is launched for a call that
 * cannot complete: (1) check the shape against the variant's rules, evaluate
 * every workspace size, grid, shared-memory size and argument, check them
 * (grid limits, 32-bit range, null buffers), allocate workspaces; (2) clear
 * the "zero" workspaces and launch the kernels in order. Workspaces are
 * cached in the variant (one buffer per workspace, grown when a call needs
 * more), so a timed loop allocates nothing after its first call.
 */
#include "rt_impl.h"
#include "fsutil.h"
#include "seqstate.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RT_JIT_LOG 65536
#define RT_SMEM_DEFAULT (48 * 1024)   /* dynamic smem allowed without opting in */

typedef struct {
	const char *name;            /* the manifest's string (the manifest outlives the variant) */
	CUfunction fn;
	recur_kernel_info info;
	int smem_attr;               /* MAX_DYNAMIC_SHARED_SIZE_BYTES set so far; 0 = default */
	int64_t cap_smem;            /* resident_cap was counted at this dynamic shared size, -1 = never */
	unsigned cap_cluster;        /* and cluster size */
	long resident_cap;           /* blocks the device holds at once */
} rt_kernel;

_Static_assert(sizeof(size_t) == 8, "the runtime addresses 64-bit device memory with size_t");

typedef union { CUdeviceptr p; int32_t i32; int64_t i64; } rt_argval;

/* one launch's evaluated geometry (rt_launch_geom's, checked against the
 * device) and, once profiled, its occupancy */
typedef struct { rt_plan_geom p; int block, occupancy, clusters; } rt_geom;

struct recur_variant {
	recur_rt *rt;
	const recur_manifest *m;
	const rt_vdesc *d;
	CUmodule mod;
	char *jit_log;               /* info log of the load */
	char module[512];            /* which code was loaded and why (recur_variant_module) */
	int nkernel;
	rt_kernel *kernel;
	int *kidx[2];                /* kernel of each launch, per pass */
	rt_wsbuf *ws;                /* one per manifest workspace */
	rt_wsbuf *cws;               /* where each lies in a caller's regions, this call (recur_forward_ws) */
	rt_wsbuf zero;               /* the arena of the zeroed workspaces */
	size_t zero_bwd;             /* where the backward's part of it starts */
	int bwd_clear;               /* that part is clear: no backward since the forward */
	int saved;                   /* a forward ran and its saved workspaces are valid */
	int pinned;                  /* live graphs holding the workspaces' addresses */
	recur_shape saved_shape;
	rt_argval *val;              /* argument values, one slice per launch */
	void **argp;                 /* pointers into val (or tmap), as cuLaunchKernelEx takes them */
	CUtensorMap *tmap;           /* a tensor map's 128 bytes, at its arg's place in val */
	int *argoff[2];              /* start of each launch's slice, per pass */
	rt_geom *geom;
	int maxlaunch;
	int profiling;
	CUevent *ev;                 /* maxlaunch + 1, created on first profiled call */
	int nlast;                   /* launches timed in the last call */
	const char **last_name;
	float *last_ms;
	rt_geom *last_geom;          /* geometry and occupancy of each timed launch */
	/* the last shape run: its variables (its rules passed) and the values of
	 * the expressions evaluated at them, so that a loop at one shape
	 * evaluates none again (they were most of a call's host time) */
	int sv_valid;
	recur_shape sv_shape;
	ShapeVars sv_last;
	ShapexMemo *memo;
};

int rt_vfail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- loading ---- */

static char *read_text(const char *path, char *err, size_t errlen, const char *variant)
{
	char why[1024];
	size_t n;
	char *buf = fs_read_file(path, &n, why, sizeof why);
	if (!buf)
		rt_vfail(err, errlen, "variant %s: its PTX: %s", variant, why);
	return buf;   /* NUL-terminated: the driver reads PTX as a C string */
}

/* The value after a PTX directive such as ".version" or ".target", for messages. */
static void ptx_directive(const char *ptx, const char *dir, char *out, size_t n)
{
	snprintf(out, n, "?");
	const char *p = strstr(ptx, dir);
	if (!p)
		return;
	p += strlen(dir);
	while (*p == ' ' || *p == '\t')
		p++;
	size_t k = strcspn(p, " \t\r\n,;/");
	snprintf(out, n, "%.*s", (int)k, p);
}

/* ".entry" names of a PTX text, for a "kernel not found" message. */
static void ptx_entries(const char *ptx, char *out, size_t n)
{
	size_t used = 0;
	out[0] = 0;
	for (const char *p = ptx; (p = strstr(p, ".entry")) && used + 4 < n; p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t')
			q++;
		size_t k = strcspn(q, " \t\r\n(");
		used += snprintf(out + used, n - used, "%s%.*s", used ? ", " : "", (int)k, q);
		if (used >= n)
			used = n - 1;
	}
	if (!out[0])
		snprintf(out, n, "none (a kernel emitted as .func cannot be launched)");
}

static int load_module(recur_variant *v, const char *ptx, char *err, size_t errlen)
{
	rt_cu *cu = &v->rt->cu;
	char *elog = calloc(1, RT_JIT_LOG), *ilog = calloc(1, RT_JIT_LOG);
	if (!elog || !ilog) {
		free(elog);
		free(ilog);
		return rt_vfail(err, errlen, "variant %s: out of host memory", v->d->name);
	}
	CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
	                      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
	void *val[] = {elog, (void *)(uintptr_t)(RT_JIT_LOG - 1), ilog, (void *)(uintptr_t)(RT_JIT_LOG - 1),
	               (void *)(uintptr_t)1};
	char why[1024];
	CUresult r = cu->ModuleLoadDataEx(&v->mod, ptx, 5, opt, val);
	if (rt_cu_check(cu, r, "cuModuleLoadDataEx", why, sizeof why, "JIT-compiling the PTX of variant %s (%s)",
	                v->d->name, v->d->ptx_path)) {
		char ver[32], target[32], hint[512] = "";
		ptx_directive(ptx, ".version", ver, sizeof ver);
		ptx_directive(ptx, ".target", target, sizeof target);
		/* best effort, for the hint only: a failure leaves zeros in the message */
		int dv = 0, major = 0, minor = 0;
		cu->DriverGetVersion(&dv);
		cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, v->rt->dev);
		cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, v->rt->dev);
		if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
			snprintf(hint, sizeof hint, "\nthe PTX declares .version %s, newer than driver %d.%d accepts; "
			         "regenerate with an older PTX ISA", ver, dv / 1000, dv % 1000 / 10);
		else if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX)
			snprintf(hint, sizeof hint, "\nthe PTX declares .version %s .target %s; the device is sm_%d%d, "
			         "the driver %d.%d (%s%s)", ver, target, major, minor, dv / 1000, dv % 1000 / 10,
			         major < 8 ? "the kernels need sm_80 or newer" : "generate for this GPU: recur gen --sm ",
			         major < 8 ? "" : rt_gen_target(major, minor));
		rt_vfail(err, errlen, "variant %s: %s%s\nJIT log:\n%s", v->d->name, why, hint,
		         elog[0] ? elog : "(empty)");
		v->mod = NULL;
		free(elog);
		free(ilog);
		return -1;
	}
	free(elog);
	v->jit_log = ilog;
	return 0;
}

/* Whether the variant's cubin is the code to load: there is one, it was
 * built for this device's target, and RECUR_FORCE_PTX is not set. Says in
 * v->module why the PTX is loaded otherwise. -1 when the device cannot be
 * asked. */
static int pick_cubin(recur_variant *v, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	const char *force = getenv("RECUR_FORCE_PTX");
	if (!d->cubin_path) {
		snprintf(v->module, sizeof v->module, "PTX, compiled by the driver: no cubin (recur gen --cubin makes one)");
		return 0;
	}
	if (force && *force && strcmp(force, "0") != 0) {
		snprintf(v->module, sizeof v->module, "PTX, compiled by the driver: RECUR_FORCE_PTX is set");
		return 0;
	}
	int major, minor, cmaj, cmin, carch;
	if (recur_rt_compute_capability(v->rt, &major, &minor, err, errlen))
		return -1;
	rt_parse_sm(d->cubin_target, &cmaj, &cmin, &carch);   /* checked when the manifest was loaded */
	/* a cubin runs on its own target only: the same major and minor (an
	 * sm_XYa one there alone, a plain one also on later minors, which we
	 * leave to the PTX: the JIT then tunes for the device) */
	if (cmaj != major || cmin != minor) {
		snprintf(v->module, sizeof v->module, "PTX, compiled by the driver: the cubin is for %s, the device is sm_%d%d",
		         d->cubin_target, major, minor);
		return 0;
	}
	return 1;
}

/* The cubin into v->mod: 0, or 1 when the driver refused it (the reason in
 * v->module, for the PTX to be loaded instead), or -1 on a host failure. */
static int load_cubin(recur_variant *v, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	char why[1024];
	size_t n;
	char *image = fs_read_file(d->cubin_path, &n, why, sizeof why);
	if (!image)
		return rt_vfail(err, errlen, "variant %s: its cubin: %s", d->name, why);
	CUresult r = v->rt->cu.ModuleLoadDataEx(&v->mod, image, 0, NULL, NULL);
	free(image);
	if (r == CUDA_SUCCESS) {
		snprintf(v->module, sizeof v->module, "cubin %s (%s): built for this device's target", d->cubin_target,
		         d->cubin_path);
		return 0;
	}
	rt_cu_check(&v->rt->cu, r, "cuModuleLoadDataEx", why, sizeof why, "loading the cubin %s", d->cubin_path);
	v->mod = NULL;
	snprintf(v->module, sizeof v->module, "PTX, compiled by the driver: %s", why);
	return 1;
}

/* The variant's code: its cubin where pick_cubin chooses it and the driver
 * takes it, else its PTX. */
static int load_code(recur_variant *v, const char *ptx, char *err, size_t errlen)
{
	int c = pick_cubin(v, err, errlen);
	if (c == 1)
		c = load_cubin(v, err, errlen);
	if (c < 0)
		return -1;
	if (c == 0 && v->mod)
		return 0;
	if (load_module(v, ptx, err, errlen))
		return -1;
	if (v->d->target && !strncmp(v->module, "PTX,", 4)) {   /* name the module's target */
		char said[sizeof v->module];
		snprintf(said, sizeof said, "PTX for %s%s", v->d->target, v->module + 3);
		snprintf(v->module, sizeof v->module, "%s", said);
	}
	return 0;
}

static int load_kernel(recur_variant *v, const char *name, int pass, int li, const char *ptx,
                       char *err, size_t errlen)
{
	rt_cu *cu = &v->rt->cu;
	for (int k = 0; k < v->nkernel; k++)
		if (!strcmp(v->kernel[k].name, name))
			return k;
	rt_kernel *K = &v->kernel[v->nkernel];
	K->name = name;
	K->cap_smem = -1;
	CUresult r = cu->ModuleGetFunction(&K->fn, v->mod, name);
	if (r == CUDA_ERROR_NOT_FOUND) {
		char entries[1024];
		ptx_entries(ptx, entries, sizeof entries);
		return rt_vfail(err, errlen, "variant %s: %s[%d] launches kernel %s, which %s does not define "
		                "(its entries: %s)", v->d->name, rt_pass_name[pass], li, name, v->d->ptx_path, entries);
	}
	if (rt_cu_check(cu, r, "cuModuleGetFunction", err, errlen, "resolving kernel %s of variant %s (%s)",
	                name, v->d->name, v->d->ptx_path))
		return -1;
	recur_kernel_info *I = &K->info;
	snprintf(I->name, sizeof I->name, "%s", name);
	struct { CUfunction_attribute a; int *out; const char *what; } attr[] = {
		{CU_FUNC_ATTRIBUTE_NUM_REGS, &I->registers, "registers"},
		{CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &I->local_bytes, "local bytes"},
		{CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &I->static_smem, "static shared bytes"},
		{CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &I->max_threads, "most threads per block"},
	};
	for (size_t i = 0; i < sizeof attr / sizeof attr[0]; i++)
		if (RT_CU(cu, FuncGetAttribute, (attr[i].out, attr[i].a, K->fn), err, errlen,
		          "reading the %s of kernel %s of variant %s", attr[i].what, name, v->d->name))
			return -1;
	return v->nkernel++;
}

/* How many parameters kernel's .entry declares in the module's PTX, or -1
 * where no entry of that name is found. The PTX is the count's source:
 * the driver has no call for it, and probing cuFuncGetParamInfo one past
 * the end answers an error that compute-sanitizer reports as the
 * runtime's. (Parameter lists hold no parentheses.) */
static int ptx_entry_nparam(const char *ptx, const char *kernel)
{
	size_t n = strlen(kernel);
	for (const char *p = ptx; (p = strstr(p, ".entry")); p += 6) {
		const char *q = p + 6;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, kernel, n))
			continue;
		q += n;
		while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
			q++;
		if (*q != '(')
			continue;
		const char *end = strchr(q, ')');
		if (!end)
			return -1;
		int count = 0;
		for (const char *r = q; (r = strstr(r, ".param")) && r < end; r += 6)
			count++;
		return count;
	}
	return -1;
}

/* A launch's args against its kernel's parameters: as many as the PTX's
 * .entry declares, each of the size the runtime passes as the driver lays
 * it out (a tensor map's 128 bytes, an i32's 4, every other 8). A manifest
 * out of step with its PTX would otherwise launch with parameters read
 * from the wrong bytes. The sizes go unchecked with a driver before CUDA
 * 12.4 (no cuFuncGetParamInfo); nothing is checked with
 * RECUR_PARAM_CHECK=0 in the environment. */
static int check_params(recur_variant *v, const rt_launch *l, CUfunction fn, const char *ptx, int pass, int li,
                        char *err, size_t errlen)
{
	rt_cu *cu = &v->rt->cu;
	const char *env = getenv("RECUR_PARAM_CHECK");
	if (env && !strcmp(env, "0"))
		return 0;
	int declared = ptx_entry_nparam(ptx, l->kernel);
	if (declared >= 0 && declared != l->narg)
		return rt_vfail(err, errlen, "variant %s: %s[%d] kernel %s takes %d parameters, the manifest gives %d "
		                "args (%s)", v->d->name, rt_pass_name[pass], li, l->kernel, declared, l->narg,
		                v->d->ptx_path);
	if (!cu->FuncGetParamInfo)
		return 0;
	for (int i = 0; i < l->narg; i++) {
		size_t off, size;
		CUresult r = cu->FuncGetParamInfo(fn, (size_t)i, &off, &size);
		if (rt_cu_check(cu, r, "cuFuncGetParamInfo", err, errlen, "reading parameter %d of kernel %s of "
		                "variant %s (the manifest gives %d args, %s)", i, l->kernel, v->d->name, l->narg,
		                v->d->ptx_path))
			return -1;
		const rt_arg *a = &l->arg[i];
		size_t want = a->kind == RT_ARG_TMAP ? sizeof(CUtensorMap) : a->kind == RT_ARG_I32 ? 4 : 8;
		if (size != want)
			return rt_vfail(err, errlen, "variant %s: %s[%d] kernel %s's parameter %d is %zu bytes, its arg \"%s\" "
			                "%zu (the manifest and %s disagree)", v->d->name, rt_pass_name[pass], li, l->kernel, i,
			                size, a->text, want, v->d->ptx_path);
	}
	return 0;
}

/* whether a later entry shares entry vi's name (another target's module) */
static int has_twin(const recur_manifest *m, int vi)
{
	for (int k = vi + 1; k < m->nvariant; k++)
		if (!strcmp(m->variant[k].name, m->variant[vi].name))
			return 1;
	return 0;
}

int recur_rt_compute_capability(recur_rt *rt, int *major, int *minor, char *err, size_t errlen)
{
	return RT_CU(&rt->cu, DeviceGetAttribute, (major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, rt->dev), err,
	             errlen, "reading the device's compute capability") ||
	               RT_CU(&rt->cu, DeviceGetAttribute, (minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, rt->dev),
	                     err, errlen, "reading the device's compute capability")
	       ? -1
	       : 0;
}

/* The module and its kernels, with the device's context current */
static int load_in_ctx(recur_variant *v, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	const char *name = d->name;
	char *ptx = read_text(d->ptx_path, err, errlen, name);
	if (!ptx || load_code(v, ptx, err, errlen)) {
		free(ptx);
		return -1;
	}
	int off = 0;
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < d->nlaunch[p]; i++) {
			const rt_launch *l = &d->launch[p][i];
			int k = load_kernel(v, l->kernel, p, i, ptx, err, errlen);
			if (k < 0) {
				free(ptx);
				return -1;
			}
			v->kidx[p][i] = k;
			if (check_params(v, l, v->kernel[k].fn, ptx, p, i, err, errlen)) {
				free(ptx);
				return -1;
			}
			v->argoff[p][i] = off;
			for (int a = 0; a < l->narg; a++)
				v->argp[off + a] = l->arg[a].kind == RT_ARG_TMAP ? (void *)&v->tmap[off + a] : &v->val[off + a];
			off += l->narg;
			/* register pressure (or .maxntid) can make a block too big: say so now */
			const recur_kernel_info *I = &v->kernel[k].info;
			int threads = l->block[0] * l->block[1] * l->block[2];
			if (threads > I->max_threads) {
				rt_vfail(err, errlen, "variant %s: %s[%d] launches kernel %s with block %dx%dx%d (%d threads), "
				         "but it can run at most %d threads per block (%d registers per thread)", name,
				         rt_pass_name[p], i, l->kernel, l->block[0], l->block[1], l->block[2], threads,
				         I->max_threads, I->registers);
				free(ptx);
				return -1;
			}
		}
	free(ptx);
	return 0;
}

int recur_variant_load(recur_rt *rt, const recur_manifest *m, const char *name, recur_variant **out,
                       char *err, size_t errlen)
{
	*out = NULL;
	if (!rt || !m || !name)
		return rt_vfail(err, errlen, "recur_variant_load: %s is NULL", !rt ? "the runtime" : !m ? "the manifest" :
		                "the variant's name");
	int vi = recur_manifest_find(m, name);
	if (vi >= 0 && vi + 1 < m->nvariant && has_twin(m, vi)) {
		/* modules of several targets: the one for this device */
		int major, minor;
		if (recur_rt_compute_capability(rt, &major, &minor, err, errlen))
			return -1;
		if ((vi = rt_manifest_pick(m, name, major, minor)) < 0)
			return rt_manifest_no_module(m, name, major, minor, err, errlen);
	}
	if (vi < 0) {
		char list[512] = "";
		size_t used = 0;
		for (int i = 0; i < m->nvariant && used < sizeof list; i++)
			used += snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", m->variant[i].name);
		return rt_vfail(err, errlen, "no variant %s in %s (it has: %s)", name, m->path,
		                m->nvariant ? list : "none");
	}
	const rt_vdesc *d = &m->variant[vi];
	recur_variant *v = calloc(1, sizeof *v);
	int nl = d->nlaunch[RT_FWD] + d->nlaunch[RT_BWD], nargs = 0;
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < d->nlaunch[p]; i++)
			nargs += d->launch[p][i].narg;
	if (!v)
		return rt_vfail(err, errlen, "variant %s: out of host memory", name);
	v->rt = rt;
	v->m = m;
	v->d = d;
	v->maxlaunch = d->nlaunch[RT_FWD] > d->nlaunch[RT_BWD] ? d->nlaunch[RT_FWD] : d->nlaunch[RT_BWD];
	v->kernel = calloc(nl + 1, sizeof *v->kernel);
	v->kidx[RT_FWD] = calloc(nl + 1, sizeof(int));
	v->kidx[RT_BWD] = v->kidx[RT_FWD] + d->nlaunch[RT_FWD];
	v->argoff[RT_FWD] = calloc(nl + 1, sizeof(int));
	v->argoff[RT_BWD] = v->argoff[RT_FWD] + d->nlaunch[RT_FWD];
	v->ws = calloc(d->nws + 1, sizeof *v->ws);
	v->cws = calloc(d->nws + 1, sizeof *v->cws);
	v->val = calloc(nargs + 1, sizeof *v->val);
	v->argp = calloc(nargs + 1, sizeof *v->argp);
	v->tmap = aligned_alloc(_Alignof(CUtensorMap), (nargs + 1) * sizeof *v->tmap);
	v->geom = calloc(v->maxlaunch + 1, sizeof *v->geom);
	v->last_name = calloc(v->maxlaunch + 1, sizeof *v->last_name);
	v->last_ms = calloc(v->maxlaunch + 1, sizeof *v->last_ms);
	v->last_geom = calloc(v->maxlaunch + 1, sizeof *v->last_geom);
	v->memo = calloc(1, sizeof *v->memo);
	if (!v->kernel || !v->kidx[RT_FWD] || !v->argoff[RT_FWD] || !v->ws || !v->val || !v->argp || !v->tmap ||
	    !v->geom || !v->last_name || !v->last_ms || !v->last_geom || !v->memo) {
		recur_variant_free(v);
		return rt_vfail(err, errlen, "variant %s: out of host memory", name);
	}
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_variant_load", d->name, err, errlen)) {
		recur_variant_free(v);
		return -1;
	}
	int rc = load_in_ctx(v, err, errlen);
	if (rc)
		recur_variant_free(v);   /* while the context is current */
	if (rt_ctx_leave(rt, &c, rc, err, errlen)) {
		if (!rc)
			recur_variant_free(v);
		return -1;
	}
	*out = v;
	return 0;
}

static void release_ws(recur_variant *v)
{
	for (int i = 0; i < v->d->nws; i++) {
		if (!v->d->ws[i].zero)
			recur_free(v->rt, v->ws[i].p);
		v->ws[i] = (rt_wsbuf){0, 0, 0, 0};
	}
	recur_free(v->rt, v->zero.p);
	v->zero = (rt_wsbuf){0, 0, 0, 0};
	v->zero_bwd = 0;
	v->bwd_clear = 0;
	v->saved = 0;
}

void recur_variant_free(recur_variant *v)
{
	if (!v)
		return;
	char err[1024];
	if (v->pinned)   /* a caller's bug the signature cannot refuse: say it */
		fprintf(stderr, "recur: freeing variant %s while %d graph(s) of it live: free them first; "
		        "launching them now is undefined\n", v->d->name, v->pinned);
	rt_ctx_saved c;
	int in_ctx = rt_ctx_enter(v->rt, &c, "recur_variant_free", v->d->name, err, sizeof err) == 0;
	if (!in_ctx)
		fprintf(stderr, "recur: %s; the variant's module and events are left to the primary context\n", err);
	if (v->ws)
		release_ws(v);   /* recur_free makes the context current itself where this could not */
	for (int i = 0; in_ctx && v->ev && i <= v->maxlaunch; i++)
		recur_event_destroy(v->rt, v->ev[i]);
	if (in_ctx && v->mod && RT_CU(&v->rt->cu, ModuleUnload, (v->mod), err, sizeof err, "unloading variant %s",
	                              v->d->name))
		fprintf(stderr, "recur: %s\n", err);
	if (in_ctx && rt_ctx_leave(v->rt, &c, 0, err, sizeof err))
		fprintf(stderr, "recur: %s\n", err);
	free(v->jit_log);
	free(v->memo);
	free(v->kernel);
	free(v->kidx[RT_FWD]);
	free(v->argoff[RT_FWD]);
	free(v->ws);
	free(v->cws);
	free(v->val);
	free(v->argp);
	free(v->tmap);
	free(v->geom);
	free(v->ev);
	free(v->last_name);
	free(v->last_ms);
	free(v->last_geom);
	free(v);
}

int recur_variant_nkernels(const recur_variant *v)
{
	return v->nkernel;
}

void recur_variant_kernel(const recur_variant *v, int i, recur_kernel_info *info)
{
	if (i >= 0 && i < v->nkernel)
		*info = v->kernel[i].info;
	else
		memset(info, 0, sizeof *info);
}

const char *recur_variant_module(const recur_variant *v)
{
	return v ? v->module : "";
}

const char *recur_variant_jit_log(const recur_variant *v)
{
	return v->jit_log ? v->jit_log : "";
}

size_t recur_variant_workspace_bytes(const recur_variant *v)
{
	size_t n = 0;
	for (int i = 0; i < v->d->nws; i++)
		n += v->ws[i].cap;
	return n + v->zero.cap;
}

int recur_variant_trim(recur_variant *v, char *err, size_t errlen)
{
	if (v->pinned)
		return rt_vfail(err, errlen, "variant %s: cannot free its workspaces while %d graph(s) hold their "
		                "addresses: free them first (recur_graph_free)", v->d->name, v->pinned);
	rt_ctx_saved c;
	if (rt_ctx_enter(v->rt, &c, "recur_variant_trim", v->d->name, err, errlen))
		return -1;
	/* kernels in flight may still use the buffers */
	int rc = recur_sync(v->rt, err, errlen);
	if (!rc)
		release_ws(v);
	return rt_ctx_leave(v->rt, &c, rc, err, errlen);
}

int recur_set_profiling(recur_variant *v, int on)
{
	v->profiling = on != 0;
	return 0;
}

int recur_variant_last_launch(const recur_variant *v, int i, recur_launch_info *info)
{
	if (i < 0 || i >= v->nlast)
		return -1;
	const rt_geom *g = &v->last_geom[i];
	*info = (recur_launch_info){ .kernel = v->last_name[i], .ms = v->last_ms[i], .block = g->block,
	                             .dyn_smem = (unsigned)g->p.smem, .blocks_per_sm = g->occupancy, .cluster = (int)g->p.cluster,
	                             .max_clusters = g->clusters };
	memcpy(info->grid, g->p.grid, sizeof info->grid);
	return 0;
}

int recur_variant_last_times(const recur_variant *v, const char **names, float *ms, int max)
{
	for (int i = 0; i < v->nlast && i < max; i++) {
		if (names)
			names[i] = v->last_name[i];
		if (ms)
			ms[i] = v->last_ms[i];
	}
	return v->nlast;
}

/* ---- running a pass ---- */

static int pinned_fail(const recur_variant *v, const char *ws, size_t bytes, const char *shape, char *err,
                       size_t errlen)
{
	return rt_vfail(err, errlen, "variant %s: %s must grow to %zu bytes at %s, but %d graph(s) hold its address: "
	                "free them first (recur_graph_free)", v->d->name, ws, bytes, shape, v->pinned);
}

/* The forward lays out the arena of both passes' zeroed workspaces (the
 * backward runs at the forward's shape); each pass allocates its others. */
static int prepare_ws(recur_variant *v, int pass, const ShapeVars *sv, const char *shape,
                      char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	char why[768];
	for (int i = 0; i < d->nws; i++) {
		const rt_ws *w = &d->ws[i];
		if (!rt_ws_in_pass(w->life, pass) || w->zero)
			continue;
		size_t bytes;
		if (rt_ws_bytes(d, i, sv, shape, &bytes, err, errlen))
			return -1;
		v->ws[i].need = bytes;
		if (bytes <= v->ws[i].cap)
			continue;
		if (v->pinned) {
			char what[96];
			snprintf(what, sizeof what, "workspace %s", w->name);
			return pinned_fail(v, what, bytes, shape, err, errlen);
		}
		/* grow: the old buffer may be in use by queued kernels, and cuMemFree waits for them */
		recur_free(v->rt, v->ws[i].p);
		v->ws[i].p = 0;
		v->ws[i].cap = 0;
		if (recur_alloc(v->rt, bytes, &v->ws[i].p, why, sizeof why))
			return rt_vfail(err, errlen, "variant %s: workspace %s (%zu bytes at %s): %s", d->name, w->name,
			                bytes, shape, why);
		v->ws[i].cap = bytes;
	}
	if (pass != RT_FWD)
		return 0;
	size_t end, bwd;
	if (rt_arena_layout(d, v->ws, sv, shape, &end, &bwd, err, errlen))
		return -1;
	rt_wsbuf *z = &v->zero;
	z->need = end;
	v->zero_bwd = bwd == SIZE_MAX ? z->need : bwd;   /* nothing of the backward's to clear */
	if (z->need > z->cap && v->pinned)
		return pinned_fail(v, "the arena of the zeroed workspaces", z->need, shape, err, errlen);
	if (z->need > z->cap) {
		recur_free(v->rt, z->p);
		z->p = 0;
		z->cap = 0;
		if (recur_alloc(v->rt, z->need, &z->p, why, sizeof why))
			return rt_vfail(err, errlen, "variant %s: the zeroed workspaces (%zu bytes at %s): %s", d->name,
			                z->need, shape, why);
		z->cap = z->need;
	}
	for (int i = 0; i < d->nws; i++)
		if (d->ws[i].zero)
			v->ws[i].p = v->ws[i].need ? z->p + v->ws[i].off : 0;
	return 0;
}

/* The workspaces of one call: the variant's own buffers and arena, or
 * those of a caller's regions */
typedef struct { const rt_wsbuf *ws, *zero; } rt_bind;

static int marshal(recur_variant *v, int pass, int li, recur_shape s, const ShapeVars *sv, const recur_io *io,
                   const rt_bind *bind, const char *shape, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	const rt_launch *l = &d->launch[pass][li];
	rt_argval *val = &v->val[v->argoff[pass][li]];
	CUtensorMap *tmap = &v->tmap[v->argoff[pass][li]];
	rt_geom *g = &v->geom[li];
	const rt_kernel *K = &v->kernel[v->kidx[pass][li]];
	char e[512];
#define WHERE "variant %s: %s[%d] kernel %s at %s: "
#define WARGS d->name, rt_pass_name[pass], li, l->kernel, shape
	rt_plan_geom pg;
	if (rt_launch_geom(l, sv, &pg, e, sizeof e))
		return rt_vfail(err, errlen, WHERE "%s", WARGS, e);
	int64_t limit = (int64_t)v->rt->smem_optin - K->info.static_smem;
	if (pg.smem > limit)   /* a module made for a target with more shared memory (sm_80's on sm_86) */
		return rt_vfail(err, errlen, WHERE "dynamic shared memory \"%s\" = %lld bytes, outside 0..%lld "
		                "(the device's %d per block less %d static)%s%s%s", WARGS, l->smem, (long long)pg.smem,
		                (long long)limit, v->rt->smem_optin, K->info.static_smem,
		                d->target ? "; the module was made for " : "", d->target ? d->target : "",
		                d->target ? ", whose layouts assume its shared memory: generate for this device's "
		                            "target (recur gen --sm)" : "");
	g->p = pg;

	const CUdeviceptr tensor[4] = {io->x, io->y, io->dy, io->dx};   /* RT_ARG_X.. */
	for (int i = 0; i < l->narg; i++) {
		const rt_arg *a = &l->arg[i];
		CUdeviceptr p = 0;
		const CUdeviceptr *list = NULL;
		switch (a->kind) {
		case RT_ARG_X:
		case RT_ARG_Y:
		case RT_ARG_DY:
		case RT_ARG_DX: p = tensor[a->kind - RT_ARG_X]; break;
		case RT_ARG_TMAP: {
			CUdeviceptr tp = a->tmap_ws ? bind->ws[a->index].p : tensor[a->index];
			if (!tp)
				return rt_vfail(err, errlen, WHERE "args[%d] \"%s\": a tensor map of a null device pointer",
				                WARGS, i, a->text);
			/* a workspace's map may reach every byte of [B][L][D] bf16 */
			size_t span;
			if (a->tmap_ws && (__builtin_mul_overflow((size_t)s.B * (size_t)s.L, (size_t)s.D * 2, &span) ||
			                   bind->ws[a->index].need < span))
				return rt_vfail(err, errlen, WHERE "args[%d] \"%s\": workspace %s holds %zu bytes, less than "
				                "the %dx%dx%d bf16 its map spans", WARGS, i, a->text, d->ws[a->index].name,
				                bind->ws[a->index].need, s.B, s.L, s.D);
			if (rt_tmap_encode(&v->rt->cu, a, tp, s, &tmap[i], e, sizeof e))
				return rt_vfail(err, errlen, WHERE "args[%d]: %s", WARGS, i, e);
			continue;
		}
		case RT_ARG_PARAM:
		case RT_ARG_GRAD:
			list = a->kind == RT_ARG_PARAM ? io->params : io->grads;
			if (!list)
				return rt_vfail(err, errlen, WHERE "args[%d] \"%s\": io->%s is NULL", WARGS, i, a->text,
				                a->kind == RT_ARG_PARAM ? "params" : "grads");
			p = list[a->index];
			break;
		case RT_ARG_WS:
			val[i].p = bind->ws[a->index].p;   /* null when it has 0 bytes */
			continue;
		case RT_ARG_ZBASE:
			val[i].p = bind->zero->p;   /* null when no workspace is zeroed: then 0 words */
			continue;
		case RT_ARG_ZWORDS:
			val[i].i64 = (int64_t)(bind->zero->need / 4);
			continue;
		case RT_ARG_STATE:   /* optional: a null pointer is a field not given (the kernels test it) */
			val[i].p = rt_state_ptr(io->state, a->index);
			continue;
		case RT_ARG_I32:
		case RT_ARG_I64: {
			int64_t x;
			if (shapex_eval(a->expr, sv, &x, e, sizeof e))
				return rt_vfail(err, errlen, WHERE "args[%d]: %s", WARGS, i, e);
			if (a->kind == RT_ARG_I32 && (x < INT32_MIN || x > INT32_MAX))
				return rt_vfail(err, errlen, WHERE "args[%d] \"%s\" = %lld does not fit 32 bits", WARGS, i,
				                a->text, (long long)x);
			if (a->kind == RT_ARG_I32)
				val[i].i32 = (int32_t)x;
			else
				val[i].i64 = x;
			continue;
		}
		}
		if (!p)
			return rt_vfail(err, errlen, WHERE "args[%d] \"%s\" is a null device pointer", WARGS, i, a->text);
		/* the kernels move tensors and weights with 16-byte vector accesses */
		if (p % 16)
			return rt_vfail(err, errlen, WHERE "args[%d] \"%s\" = 0x%llx is not 16-byte aligned", WARGS, i,
			                a->text, (unsigned long long)p);
		val[i].p = p;
	}
	return 0;
#undef WHERE
#undef WARGS
}

/* One launch configuration (cuLaunchKernelEx, and the cluster occupancy
 * query) for every kernel: a cluster dimension along x only where the
 * manifest asks for clusters; cfg points at *at. */
/* at: room for 2 attributes. An "early" kernel is launched with
 * programmatic stream serialisation: the launch of the kernel ahead of it
 * (about 1-2 us of GPU time between kernels) overlaps that kernel's end,
 * and the kernel's own griddepcontrol.wait orders its memory accesses. */
static void launch_config(const rt_launch *l, const rt_geom *g, CUstream st, int early, CUlaunchConfig *cfg,
                          CUlaunchAttribute at[2])
{
	unsigned n = 0;
	if (g->p.cluster > 1) {
		at[n] = (CUlaunchAttribute){ .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
		at[n].value.clusterDim.x = g->p.cluster;
		at[n].value.clusterDim.y = 1;
		at[n++].value.clusterDim.z = 1;
	}
	if (early) {
		at[n] = (CUlaunchAttribute){ .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION };
		at[n++].value.programmaticStreamSerializationAllowed = 1;
	}
	*cfg = (CUlaunchConfig){
		.gridDimX = g->p.grid[0], .gridDimY = g->p.grid[1], .gridDimZ = g->p.grid[2],
		.blockDimX = (unsigned)l->block[0], .blockDimY = (unsigned)l->block[1], .blockDimZ = (unsigned)l->block[2],
		.sharedMemBytes = (unsigned)g->p.smem, .hStream = st, .attrs = at, .numAttrs = n,
	};
}

/* Past 48 KB of dynamic shared memory a kernel must opt in, per function:
 * before its launch, and before the driver is asked how many of its blocks
 * fit an SM (it counts none of a block asking more than the function
 * allows) */
static int smem_optin(recur_variant *v, int pass, int li, const rt_geom *g, char *err, size_t errlen)
{
	const rt_launch *l = &v->d->launch[pass][li];
	rt_kernel *K = &v->kernel[v->kidx[pass][li]];
	if (g->p.smem <= RT_SMEM_DEFAULT || (int)g->p.smem <= K->smem_attr)
		return 0;
	if (RT_CU(&v->rt->cu, FuncSetAttribute,
	          (K->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)g->p.smem), err, errlen,
	          "allowing %lld bytes of dynamic shared memory for kernel %s (%s[%d]) of variant %s",
	          (long long)g->p.smem, l->kernel, rt_pass_name[pass], li, v->d->name))
		return -1;
	K->smem_attr = (int)g->p.smem;
	return 0;
}

/* Blocks of launch li that fit one SM, and, where it runs in clusters,
 * the clusters the device holds at once (0 otherwise): the profile's
 * figures and resident_check's. */
static int occupancy(recur_variant *v, int pass, int li, const rt_geom *g, CUstream st, int *per_sm,
                     int *clusters, char *err, size_t errlen)
{
	rt_cu *cu = &v->rt->cu;
	const rt_launch *l = &v->d->launch[pass][li];
	CUfunction fn = v->kernel[v->kidx[pass][li]].fn;
	if (smem_optin(v, pass, li, g, err, errlen))
		return -1;
	if (RT_CU(cu, OccupancyMaxActiveBlocksPerMultiprocessor,
	          (per_sm, fn, l->block[0] * l->block[1] * l->block[2], (size_t)g->p.smem), err, errlen,
	          "occupancy of kernel %s (%s[%d]) of variant %s", l->kernel, rt_pass_name[pass], li, v->d->name))
		return -1;
	*clusters = 0;
	if (g->p.cluster > 1) {
		CUlaunchAttribute at[2];
		CUlaunchConfig cfg;
		launch_config(l, g, st, 0, &cfg, at);
		if (RT_CU(cu, OccupancyMaxActiveClusters, (clusters, fn, &cfg), err, errlen,
		          "cluster occupancy of kernel %s (%s[%d]) of variant %s (clusters of %u)",
		          l->kernel, rt_pass_name[pass], li, v->d->name, g->p.cluster))
			return -1;
	}
	return 0;
}

/* 0 and *refused = 0 where launch li's grid at geometry g fits the device
 * at once, 0 and *refused = 1 (err: why) where it does not; -1 on a
 * driver error (err) */
static int resident_fit(recur_variant *v, int pass, int li, const rt_geom *g, CUstream st, const char *shape,
                        int *refused, char *err, size_t errlen)
{
	const rt_launch *l = &v->d->launch[pass][li];
	rt_kernel *K = &v->kernel[v->kidx[pass][li]];
	*refused = 0;
	/* at most (2^31-1) * 65535 * 65535 < 2^63: rt_launch_geom's ranges */
	long total = (long)g->p.grid[0] * g->p.grid[1] * g->p.grid[2];
	if (K->cap_smem != g->p.smem || K->cap_cluster != g->p.cluster) {
		int per_sm = 0, clusters = 0, sms = 0;
		if (occupancy(v, pass, li, g, st, &per_sm, &clusters, err, errlen))
			return -1;
		if (g->p.cluster > 1) {
			K->resident_cap = (long)clusters * g->p.cluster;
		} else {
			if (RT_CU(&v->rt->cu, DeviceGetAttribute, (&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, v->rt->dev),
			          err, errlen, "multiprocessor count of device %d", v->rt->ordinal))
				return -1;
			K->resident_cap = (long)per_sm * sms;
		}
		K->cap_smem = g->p.smem;
		K->cap_cluster = g->p.cluster;
	}
	if (total > K->resident_cap) {
		*refused = 1;
		rt_vfail(err, errlen, "variant %s at %s: %s[%d] kernel %s waits across its blocks (look-back), so all %ld "
		         "of grid (%u,%u,%u) must be resident at once; this device holds %ld (a variant of another scan "
		         "kind runs here: recur calibrate on this GPU picks among those it holds)", v->d->name, shape,
		         rt_pass_name[pass], li, l->kernel, total, g->p.grid[0], g->p.grid[1], g->p.grid[2],
		         K->resident_cap);
	}
	return 0;
}

/* A kernel whose blocks wait on each other (a look-back across them)
 * hangs unless all are resident at once: refuse a grid the device cannot
 * hold rather than launch it. */
static int resident_check(recur_variant *v, int pass, int li, CUstream st, const char *shape, char *err, size_t errlen)
{
	int refused = 0;
	return resident_fit(v, pass, li, &v->geom[li], st, shape, &refused, err, errlen) || refused ? -1 : 0;
}

static int launch(recur_variant *v, int pass, int li, CUstream st, const char *shape, char *err, size_t errlen)
{
	rt_cu *cu = &v->rt->cu;
	const rt_launch *l = &v->d->launch[pass][li];
	const rt_kernel *K = &v->kernel[v->kidx[pass][li]];
	const rt_geom *g = &v->geom[li];
	if (smem_optin(v, pass, li, g, err, errlen))
		return -1;
	if (l->resident && g->p.grid[0] > 1 && resident_check(v, pass, li, st, shape, err, errlen))
		return -1;
	CUlaunchAttribute at[2];
	CUlaunchConfig cfg;
	char cl[40] = "";
	if (g->p.cluster > 1)
		snprintf(cl, sizeof cl, " in clusters of %u blocks", g->p.cluster);
	launch_config(l, g, st, l->early, &cfg, at);
	return RT_CU(cu, LaunchKernelEx, (&cfg, K->fn, &v->argp[v->argoff[pass][li]], NULL), err, errlen,
	             "launching %s[%d] kernel %s of variant %s at %s: grid (%u,%u,%u) block (%d,%d,%d) smem %lld%s%s",
	             rt_pass_name[pass], li, l->kernel, v->d->name, shape, g->p.grid[0], g->p.grid[1], g->p.grid[2],
	             l->block[0], l->block[1], l->block[2], (long long)g->p.smem, cl,
	             l->early ? ", early (programmatic stream serialisation)" : "");
}

/* The shape's variables, its rules checked, and its name for messages */
static int shape_vars(const recur_variant *v, recur_shape s, ShapeVars *sv, char shape[64], char *err,
                      size_t errlen)
{
	char why[768];
	rt_shape_name(s, shape, 64);
	if (rt_shape_vars_on(v->m, (int)(v->d - v->m->variant), s, 1, v->rt->sms, sv, why, sizeof why))
		return rt_vfail(err, errlen, "variant %s refuses %s", v->d->name, why);
	return 0;
}

/* shape_vars for a pass about to run, from the last shape's where s is it,
 * with the variant's memo attached */
static int shape_setup(recur_variant *v, recur_shape s, ShapeVars *sv, char shape[64], char *err, size_t errlen)
{
	if (v->sv_valid && v->sv_shape.B == s.B && v->sv_shape.L == s.L && v->sv_shape.D == s.D) {
		rt_shape_name(s, shape, 64);
		*sv = v->sv_last;
		return 0;
	}
	v->sv_valid = 0;
	if (shape_vars(v, s, sv, shape, err, errlen))
		return -1;
	sv->memo = v->memo;
	v->sv_last = *sv;
	v->sv_shape = s;
	v->sv_valid = 1;
	return 0;
}

/* A call's workspaces in the variant's own buffers (allocated or grown
 * here), and the part of the arena to clear before the pass (*zfrom on):
 * a forward whose first kernel clears the arena itself (the manifest's
 * "clears") needs no memset, and a backward right after its forward finds
 * its part clear. */
static int bind_own(recur_variant *v, int pass, recur_shape s, const ShapeVars *sv, const char *shape, rt_bind *bind,
                    size_t *zfrom, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	if (pass == RT_BWD && !v->saved)
		return rt_vfail(err, errlen, "variant %s: backward at %s without a forward before it (the saved "
		                "workspaces hold nothing)", d->name, shape);
	if (pass == RT_BWD && memcmp(&s, &v->saved_shape, sizeof s))
		return rt_vfail(err, errlen, "variant %s: backward at %s, but the last forward ran at B=%d L=%d D=%d",
		                d->name, shape, v->saved_shape.B, v->saved_shape.L, v->saved_shape.D);
	if (pass == RT_FWD)
		v->saved = 0;     /* the saved workspaces are about to be rewritten */
	if (prepare_ws(v, pass, sv, shape, err, errlen))
		return -1;
	*bind = (rt_bind){ v->ws, &v->zero };
	*zfrom = pass == RT_FWD ? (d->launch[RT_FWD][0].clears ? v->zero.need : 0)
	                        : (v->bwd_clear ? v->zero.need : v->zero_bwd);
	return 0;
}

/* A call's workspaces in a caller's regions, checked (present, aligned,
 * large enough) and nothing allocated; the variant's own buffers and its
 * saved state are left as they are. A backward cannot know whether its
 * part of the arena is still clear, so it clears it every time. The other
 * pass's scratch workspaces get null pointers. */
static int bind_caller(recur_variant *v, int pass, const ShapeVars *sv, const recur_ws *cw, const char *shape,
                       rt_wsbuf *zero, rt_bind *bind, size_t *zfrom, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	rt_regions r;
	if (rt_caller_layout(d, v->cws, sv, shape, &r, err, errlen))
		return -1;
	struct { const char *name; CUdeviceptr p; size_t have, need; } reg[2] = {
		[RT_REGION_SAVED] = {"saved", cw->saved, cw->saved_bytes, r.saved},
		[RT_REGION_SCRATCH] = {"scratch", cw->scratch, cw->scratch_bytes, r.scratch[pass]},
	};
	for (int k = 0; k < 2; k++) {
		if (!reg[k].need)
			continue;
		if (!reg[k].p)
			return rt_vfail(err, errlen, "variant %s: %s at %s needs a %s region of %zu bytes, but ws->%s is a "
			                "null pointer", d->name, rt_pass_name[pass], shape, reg[k].name, reg[k].need,
			                reg[k].name);
		if (reg[k].p % RECUR_WS_ALIGN)
			return rt_vfail(err, errlen, "variant %s: %s at %s: ws->%s = 0x%llx is not %d-byte aligned", d->name,
			                rt_pass_name[pass], shape, reg[k].name, (unsigned long long)reg[k].p, RECUR_WS_ALIGN);
		if (reg[k].have < reg[k].need)
			return rt_vfail(err, errlen, "variant %s: %s at %s needs a %s region of %zu bytes, but ws->%s_bytes "
			                "is %zu (recur_workspace_sizes gives the sizes)", d->name, rt_pass_name[pass], shape,
			                reg[k].name, reg[k].need, reg[k].name, reg[k].have);
	}
	for (int i = 0; i < d->nws; i++) {
		const rt_ws *w = &d->ws[i];
		int k = rt_ws_region(w), used = k == RT_REGION_SAVED || rt_ws_in_pass(w->life, pass);
		v->cws[i].p = used && v->cws[i].need ? reg[k].p + v->cws[i].off : 0;
	}
	*zero = (rt_wsbuf){ .p = r.zend ? cw->saved : 0, .need = r.zend };
	*bind = (rt_bind){ v->cws, zero };
	*zfrom = pass == RT_FWD ? (d->launch[RT_FWD][0].clears ? r.zend : 0) : r.zbwd;
	return 0;
}

/* The fields of a call's sequence state the variant's kernels take; any
 * other given is refused (its kernels would silently ignore it) */
static int state_check(const recur_variant *v, const recur_seqstate *st, const recur_shape *s, const char *shape,
                       char *err, size_t errlen)
{
	/* the grid option that makes kernels taking each field */
	static const char *const how[RT_NSTATE] = {
		[RT_STATE_H0] = "states = { true }", [RT_STATE_RESET] = "resets = { true }",
		[RT_STATE_CU_SEQLENS] = "docs = { true }", [RT_STATE_HT] = "states = { true }",
		[RT_STATE_DHT] = "states = { true }", [RT_STATE_DH0] = "states = { true }",
		[RT_STATE_MAP_LOGA] = "map = { true }", [RT_STATE_MAP_H] = "map = { true }", [RT_STATE_INDEX] = "R.decode",
	};
	for (int i = 0; i < RT_NSTATE; i++)
		if (rt_state_ptr(st, i) && !(v->d->state >> i & 1))
			return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives %s, which its kernels do "
			                "not take (they take: %s); generate a variant with it (%s)", v->d->name, shape,
			                rt_state_name[i], v->d->state_text[0] ? v->d->state_text : "none", how[i]);
	/* the [B][D] states move through 16-byte accesses where a kernel can
	 * (templates/decode_rows.c): a misaligned one would fault mid-call, so
	 * it is refused here, as recur.h promises for every tensor */
	static const int wide[] = { RT_STATE_H0, RT_STATE_HT, RT_STATE_DHT, RT_STATE_DH0, RT_STATE_MAP_H };
	for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
		CUdeviceptr p = rt_state_ptr(st, wide[i]);
		if (p % 16)
			return rt_vfail(err, errlen, "variant %s at %s: the sequence state's %s = 0x%llx is not 16-byte "
			                "aligned; the kernels move states with 16-byte accesses (recur.h: every tensor starts "
			                "on a 16-byte boundary)", v->d->name, shape, rt_state_name[wide[i]],
			                (unsigned long long)p);
	}
	/* the map is of a row under continuation: t = 0 no reset unless
	 * marked, which h0 makes so (zeros for a part that starts from
	 * nothing); map_h is hT less h0's share (templates/rowmap.c) */
	if (st && (st->map_loga || st->map_h) && !st->h0)
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives %s without h0; the row's map is "
		                "of a row continuing a state (util/seqstate.h): give h0 (zeros where the row has none)",
		                v->d->name, shape, st->map_loga ? "map_loga" : "map_h");
	if (st && st->map_h && !st->hT)
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives map_h without hT; map_h is hT "
		                "less exp(map_loga) h0, so the forward needs hT: give it a buffer", v->d->name, shape);
	if (st && st->ndocs && !st->cu_seqlens)
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives ndocs = %d without cu_seqlens",
		                v->d->name, shape, st->ndocs);
	/* the cu_seqlens form: documents packed into one row, a state each
	 * (util/seqstate.h); its offsets are on the device, read by docs_prep */
	if (st && st->cu_seqlens && (st->ndocs < 1 || st->ndocs > s->L))
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives cu_seqlens with ndocs = %d; "
		                "it must be 1 to L = %d (documents of at least one token)", v->d->name, shape, st->ndocs,
		                s->L);
	/* a docs variant codes each token's row or document in 28 bits (docs.c) */
	int nstates = st && st->cu_seqlens ? st->ndocs : s->B;
	if ((v->d->state >> RT_STATE_CU_SEQLENS & 1) && nstates > SEQSTATE_MAX_DOCS)
		return rt_vfail(err, errlen, "variant %s at %s: %d %s, where its kernels hold at most %d (a state "
		                "index of %d bits a token); split the call", v->d->name, shape, nstates,
		                st && st->cu_seqlens ? "documents" : "rows", SEQSTATE_MAX_DOCS, 31 - SEQSTATE_DOC_SHIFT);
	if (st && st->cu_seqlens && s->B != 1)
		return rt_vfail(err, errlen, "variant %s at %s: cu_seqlens packs documents into one row, so B must be "
		                "1, not %d (flash-attn's and fla's convention)", v->d->name, shape, s->B);
	if (st && st->cu_seqlens && st->reset)
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives both cu_seqlens and reset; "
		                "the documents' starts are their marks: give one or the other", v->d->name, shape);
	/* in place: a decode step reads each row's state before it writes it,
	 * in one kernel; the other plans read h0 in a kernel after another
	 * wrote hT */
	if (st && st->h0 && st->hT == st->h0 && !v->d->decode)
		return rt_vfail(err, errlen, "variant %s (scan %s) at %s: the sequence state gives hT == h0 (0x%llx), an "
		                "update in place, but its kernels read h0 after another kernel has written hT, so in "
		                "place they would race; give hT a buffer of its own (decode variants, scan \"decode\", "
		                "update in place)", v->d->name, v->d->scan, shape, (unsigned long long)st->h0);
	if (st && st->dhT && st->dh0 == st->dhT)
		return rt_vfail(err, errlen, "variant %s at %s: the sequence state gives dh0 == dhT (0x%llx), but the "
		                "backward reads dhT while it writes dh0, so in place they would race; give dh0 a buffer of "
		                "its own", v->d->name, shape, (unsigned long long)st->dhT);
	return 0;
}

/* A backward only where the manifest lists its launches: a variant
 * without them (a decode step) runs forward only */
static int pass_check(const rt_vdesc *d, int pass, char *err, size_t errlen)
{
	if (pass != RT_BWD || d->nlaunch[RT_BWD] > 0)
		return 0;
	if (d->decode)
		return rt_vfail(err, errlen, "variant %s: no backward: a decode step advances a state and writes y, "
		                "forward only (scan \"decode\")", d->name);
	return rt_vfail(err, errlen, "variant %s: no backward: its manifest lists no backward launches (a forward-only "
	                "variant, scan %s)", d->name, d->scan);
}

int rt_variant_check(const recur_variant *v, int pass, recur_shape s, const recur_io *io, char *err,
                     size_t errlen)
{
	ShapeVars sv;
	char shape[64];
	if (pass_check(v->d, pass, err, errlen))
		return -1;
	if (!io)
		return rt_vfail(err, errlen, "variant %s: %s without buffers (io is NULL)", v->d->name,
		                rt_pass_name[pass]);
	return shape_vars(v, s, &sv, shape, err, errlen) || state_check(v, io->state, &s, shape, err, errlen) ? -1 : 0;
}

/* A pass after run()'s checks, with the device's context current */
static int run_in_ctx(recur_variant *v, int pass, recur_shape s, const ShapeVars *sv, const char *shape,
                      const recur_io *io, const recur_ws *cw, CUstream st, char *err, size_t errlen)
{
	const rt_vdesc *d = v->d;
	rt_cu *cu = &v->rt->cu;

	/* phase 1: everything that can fail before a launch */
	rt_bind bind = {0};
	rt_wsbuf czero;
	size_t zfrom = 0;
	if (cw ? bind_caller(v, pass, sv, cw, shape, &czero, &bind, &zfrom, err, errlen)
	       : bind_own(v, pass, s, sv, shape, &bind, &zfrom, err, errlen))
		return -1;
	for (int i = 0; i < d->nlaunch[pass]; i++)
		if (marshal(v, pass, i, s, sv, io, &bind, shape, err, errlen))
			return -1;
	if (v->profiling && !v->ev) {
		v->ev = calloc(v->maxlaunch + 1, sizeof *v->ev);
		for (int i = 0; v->ev && i <= v->maxlaunch; i++)
			if (recur_event_create(v->rt, &v->ev[i], err, errlen))
				return -1;
		if (!v->ev)
			return rt_vfail(err, errlen, "variant %s: out of host memory", d->name);
	}

	/* phase 2: clear, launch */
	const rt_wsbuf *z = bind.zero;
	if (zfrom < z->need &&
	    RT_CU(cu, MemsetD32Async, (z->p + zfrom, 0, (z->need - zfrom) / 4, st), err, errlen,
	          "clearing the zeroed workspaces of variant %s (%zu bytes at %s)", d->name, z->need - zfrom, shape))
		return -1;
	if (!cw)
		v->bwd_clear = pass == RT_FWD;
	v->nlast = 0;
	for (int i = 0; i < d->nlaunch[pass]; i++) {
		if (v->profiling && recur_event_record(v->rt, v->ev[i], st, err, errlen))
			return -1;
		if (launch(v, pass, i, st, shape, err, errlen))
			return -1;
	}
	if (v->profiling) {
		int n = d->nlaunch[pass];
		if (recur_event_record(v->rt, v->ev[n], st, err, errlen))
			return -1;
		for (int i = 0; i < n; i++) {
			const rt_launch *l = &d->launch[pass][i];
			rt_geom *g = &v->last_geom[i];
			v->last_name[i] = l->kernel;
			if (recur_event_elapsed_ms(v->rt, v->ev[i], v->ev[i + 1], &v->last_ms[i], err, errlen))
				return -1;
			*g = v->geom[i];
			g->block = l->block[0] * l->block[1] * l->block[2];
			if (occupancy(v, pass, i, g, st, &g->occupancy, &g->clusters, err, errlen))
				return -1;
		}
		v->nlast = n;
	}
	if (pass == RT_FWD && !cw) {
		v->saved = 1;
		v->saved_shape = s;
	}
	return 0;
}

static int run(recur_variant *v, int pass, recur_shape s, const recur_io *io, const recur_ws *cw, CUstream st,
               char *err, size_t errlen)
{
	static const char *const call[2][2] = { { "recur_forward", "recur_backward" },
	                                        { "recur_forward_ws", "recur_backward_ws" } };
	if (!v)
		return rt_vfail(err, errlen, "recur_%s: the variant is NULL (did recur_variant_load fail?)",
		                rt_pass_name[pass]);
	const rt_vdesc *d = v->d;
	ShapeVars sv;
	char shape[64];
	if (pass_check(d, pass, err, errlen))
		return -1;
	if (!io)
		return rt_vfail(err, errlen, "variant %s: %s without buffers (io is NULL)", d->name, rt_pass_name[pass]);
	if (shape_setup(v, s, &sv, shape, err, errlen) || state_check(v, io->state, &s, shape, err, errlen))
		return -1;
	if (io->state && io->state->cu_seqlens)
		shapex_set(&sv, "ndocs", io->state->ndocs);
	/* a framework may call from any of its threads (PyTorch's backward runs
	 * on one of its own): the device's context is made current there for
	 * the call, and the thread's own put back after it */
	rt_ctx_saved c;
	if (rt_ctx_enter(v->rt, &c, call[cw != NULL][pass], d->name, err, errlen))
		return -1;
	int rc = run_in_ctx(v, pass, s, &sv, shape, io, cw, st, err, errlen);
	return rt_ctx_leave(v->rt, &c, rc, err, errlen);
}

int recur_forward(recur_variant *v, recur_shape s, const recur_io *io, CUstream st, char *err, size_t errlen)
{
	return run(v, RT_FWD, s, io, NULL, st, err, errlen);
}

int recur_backward(recur_variant *v, recur_shape s, const recur_io *io, CUstream st, char *err, size_t errlen)
{
	return run(v, RT_BWD, s, io, NULL, st, err, errlen);
}

/* the resident launches' grids at s against the device, in its context */
static int fits_in_ctx(recur_variant *v, const ShapeVars *sv, const char *shape, char *why, size_t n)
{
	const rt_vdesc *d = v->d;
	for (int pass = 0; pass < 2; pass++)
		for (int li = 0; li < d->nlaunch[pass]; li++) {
			const rt_launch *l = &d->launch[pass][li];
			if (!l->resident)
				continue;
			char e[512];
			rt_geom g = { 0 };
			if (rt_launch_geom(l, sv, &g.p, e, sizeof e))
				return rt_vfail(why, n, "variant %s: %s[%d] kernel %s at %s: %s", d->name, rt_pass_name[pass],
				                li, l->kernel, shape, e);
			if (g.p.grid[0] <= 1)
				continue;
			int refused = 0;
			if (resident_fit(v, pass, li, &g, 0, shape, &refused, why, n))
				return -1;
			if (refused)
				return 1;
		}
	return 0;
}

int recur_variant_fits(recur_variant *v, recur_shape s, char *why, size_t n)
{
	if (!v)
		return rt_vfail(why, n, "recur_variant_fits: the variant is NULL (did recur_variant_load fail?)");
	ShapeVars sv;
	char shape[64];
	if (shape_vars(v, s, &sv, shape, why, n))
		return -1;
	rt_ctx_saved c;
	if (rt_ctx_enter(v->rt, &c, "recur_variant_fits", v->d->name, why, n))
		return -1;
	int rc = fits_in_ctx(v, &sv, shape, why, n);
	return rt_ctx_leave(v->rt, &c, rc, why, n);
}

static int run_ws(recur_variant *v, int pass, recur_shape s, const recur_io *io, const recur_ws *ws, CUstream st,
                  char *err, size_t errlen)
{
	if (!ws)
		return rt_vfail(err, errlen, "recur_%s_ws: the workspaces are NULL (recur_%s runs on the variant's own)",
		                rt_pass_name[pass], rt_pass_name[pass]);
	return run(v, pass, s, io, ws, st, err, errlen);
}

int recur_forward_ws(recur_variant *v, recur_shape s, const recur_io *io, const recur_ws *ws, CUstream st,
                     char *err, size_t errlen)
{
	return run_ws(v, RT_FWD, s, io, ws, st, err, errlen);
}

int recur_backward_ws(recur_variant *v, recur_shape s, const recur_io *io, const recur_ws *ws, CUstream st,
                      char *err, size_t errlen)
{
	return run_ws(v, RT_BWD, s, io, ws, st, err, errlen);
}

/* ---- what graph.c needs ---- */

void rt_variant_state_get(const recur_variant *v, rt_vstate *st)
{
	*st = (rt_vstate){ .saved = v->saved, .bwd_clear = v->bwd_clear, .saved_shape = v->saved_shape };
}

void rt_variant_state_set(recur_variant *v, const rt_vstate *st)
{
	v->saved = st->saved;
	v->bwd_clear = st->bwd_clear;
	v->saved_shape = st->saved_shape;
}

int rt_variant_prepare(recur_variant *v, int pass, recur_shape s, char *err, size_t errlen)
{
	ShapeVars sv;
	char shape[64];
	if (shape_setup(v, s, &sv, shape, err, errlen))
		return -1;
	if (pass == RT_FWD)
		v->saved = 0;   /* growing may move the saved workspaces */
	return prepare_ws(v, pass, &sv, shape, err, errlen);
}

void rt_variant_pin(recur_variant *v, int delta)
{
	v->pinned += delta;
}

recur_rt *rt_variant_rt(const recur_variant *v)
{
	return v->rt;
}

const char *rt_variant_name(const recur_variant *v)
{
	return v->d->name;
}

int rt_variant_profiling(const recur_variant *v)
{
	return v->profiling;
}
