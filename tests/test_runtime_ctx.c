/* The calling thread's current context across the runtime's calls, on the
 * host stand-in (hostcu.h), which keeps a current context per thread and
 * fails any call needing the device's context without it current.
 *
 * recur.h's rule: each call leaves the calling thread's current context as
 * it found it. For every entry point family (open and close, memory,
 * copies, synchronisation, events, loading and freeing variants, trim,
 * forward and backward on the variant's workspaces and on a caller's,
 * profiling, graphs), on success and on error paths (a refused shape, a
 * call the stand-in makes fail, a full device, a bad PTX), each call is
 * made three times: with another context current, with none, and with the
 * device's own. Each time:
 *   - it succeeds, or fails with its message, as it should;
 *   - the thread's current context afterwards is the one before;
 *   - no driver call needing a context ran without the device's current;
 *   - cuCtxSetCurrent ran exactly twice from another context (once in,
 *     once back: nested calls find the context current) where the call
 *     reaches the driver, never where it needs no context, and never
 *     from the device's own.
 * Then: a forward from the device's own context costs one cuCtxGetCurrent
 * and nothing else; a restore the driver refuses fails the call with the
 * reason (after the call's own failure, where it had one) and leaves
 * nothing allocated; a context that cannot be made current changes
 * nothing; a backward on another thread (as PyTorch's autograd runs it)
 * makes the context current there only; and the stand-in's own check
 * catches a call made without the context.
 */
#include "hostsession.h"
#include "check.h"
#include "testfs.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char dir[256];

static const char *bad_ptx = ".target sm_90\n.visible .entry fwd()\n{\n\tret;\n}\n"; /* no .version */

#define VARIANT(name, file, ws)                                                                                        \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"" file "\", \"vars\": [[\"N\", \"L*D\"]],\n"          \
	" \"rules\": [{\"expr\": \"D%4==0\", \"message\": \"D must be a multiple of 4\"}],\n"                          \
	" \"workspaces\": [" ws "],\n"                                                                                 \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B*4\", 1, 1], \"block\": [64, 1, 1], \"cluster\": \"2\",\n" \
	"   \"smem\": \"65536\", \"resident\": true,\n"                                                                \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:a\", \"ws:b\", \"i32:N\", \"i64:B*L*D\"]}],\n"                  \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"early\": true,\n"         \
	"   \"args\": [\"dx\", \"dy\", \"grad:w\", \"ws:c\", \"ws:d\"]}]}"

#define WS(a, b)                                                                                                       \
	"{\"name\": \"a\", \"bytes\": \"B*L*D*4\", \"life\": \"forward\", \"zero\": true},"                            \
	"{\"name\": \"b\", \"bytes\": \"" a "\", \"life\": \"saved\", \"zero\": " b "},"                               \
	"{\"name\": \"c\", \"bytes\": \"B*L*D*4\", \"life\": \"saved\", \"zero\": true},"                              \
	"{\"name\": \"d\", \"bytes\": \"B*D*4\", \"life\": \"backward\", \"zero\": false}"

/* good; bad (its PTX has no .version); big (a saved workspace of 2^62 bytes) */
static const char *manifest =
        "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": [\"D\"],\n"
        "  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n"
        " \"variants\": [\n" VARIANT("good", "k.ptx", WS("B*L*D*4", "true")) ",\n" VARIANT(
                "bad", "bad.ptx", WS("B*L*D*4", "true")) ",\n" VARIANT("big", "k.ptx",
                                                                       WS("4611686018427387904", "false")) "\n ]}\n";

/* Another device's (or a framework's) context, as the stand-in sees it */
static char other_ctx;
#define OTHER ((CUcontext)&other_ctx)

static const recur_shape SH = {2, 37, 64};
static Session S;
static recur_variant *V;       /* "good", loaded once */
static recur_variant *V2;      /* loaded by a case */
static recur_graph *G;
static recur_rt *RT2;
static CUevent E[2];
static CUdeviceptr P;
static recur_ws W;             /* a caller's regions for V, at SH */
static int nblk0;

static int fail(char *err, size_t n, const char *what)
{
	snprintf(err, n, "%s", what);
	return -1;
}

/* ---- the cases: setup (any context), the call, teardown ---- */

static int c_open(char *e, size_t n)
{
	return hc_open(&RT2, e, n);
}
static void t_rt2(void)
{
	recur_rt_close(RT2);
	RT2 = NULL;
}
static int s_fail_attr(char *e, size_t n)
{
	hc.fail_fn = "DeviceGetAttribute";
	return 0;
}
static int s_rt2_block(char *e, size_t n)
{
	nblk0 = hc.nblk;
	CUdeviceptr p;
	return hc_open(&RT2, e, n) || recur_alloc(RT2, 4096, &p, e, n);
}
static int c_close(char *e, size_t n)
{
	recur_rt_close(RT2);
	RT2 = NULL;
	return hc.nblk == nblk0 ? 0 : fail(e, n, "the block still held at close was not freed");
}
static int c_info(char *e, size_t n)
{
	int major, minor, version;
	char name[64];
	return recur_rt_compute_capability(S.rt, &major, &minor, e, n) || recur_rt_device_name(S.rt, name, sizeof name) ||
	       recur_rt_driver_version(S.rt, &version);
}
static int c_alloc(char *e, size_t n)
{
	return recur_alloc(S.rt, 4096, &P, e, n);
}
static void t_free_p(void)
{
	recur_free(S.rt, P);
	P = 0;
}
static int c_alloc_oom(char *e, size_t n)
{
	int rc = recur_alloc(S.rt, (size_t)1 << 50, &P, e, n);
	return rc == 0 || P == 0 ? rc : fail(e, n, "a failed allocation left a pointer");
}
static int s_alloc(char *e, size_t n)
{
	nblk0 = hc.nblk;
	return recur_alloc(S.rt, 4096, &P, e, n);
}
static int c_free(char *e, size_t n)
{
	recur_free(S.rt, P);
	P = 0;
	return hc.nblk == nblk0 ? 0 : fail(e, n, "the block was not freed");
}
static unsigned char host[4096];
static int c_htod(char *e, size_t n)
{
	return recur_memcpy_htod(S.rt, S.x, host, 64, e, n);
}
static int c_htod_outside(char *e, size_t n)
{
	return recur_memcpy_htod(S.rt, HC_BASE - 4096, host, 64, e, n);
}
static int c_dtoh(char *e, size_t n)
{
	return recur_memcpy_dtoh(S.rt, host, S.y, 64, e, n);
}
static int c_memset(char *e, size_t n)
{
	return recur_memset_u8(S.rt, S.dy, 0x3c, 64, e, n);
}
static int c_sync(char *e, size_t n)
{
	return recur_sync(S.rt, e, n);
}
static int s_fail_sync(char *e, size_t n)
{
	hc.fail_fn = "CtxSynchronize";
	return 0;
}
static int c_ev_create(char *e, size_t n)
{
	return recur_event_create(S.rt, &E[0], e, n);
}
static void t_events(void)
{
	for (int i = 0; i < 2; i++) {
		recur_event_destroy(S.rt, E[i]);
		E[i] = NULL;
	}
}
static int s_events(char *e, size_t n)
{
	return recur_event_create(S.rt, &E[0], e, n) || recur_event_create(S.rt, &E[1], e, n);
}
static int s_events_recorded(char *e, size_t n)
{
	return s_events(e, n) || recur_event_record(S.rt, E[0], 0, e, n) || recur_event_record(S.rt, E[1], 0, e, n);
}
static int c_ev_record(char *e, size_t n)
{
	return recur_event_record(S.rt, E[0], 0, e, n);
}
static int s_events_fail_record(char *e, size_t n)
{
	int rc = s_events(e, n);
	hc.fail_fn = "EventRecord";
	return rc;
}
static int c_ev_elapsed(char *e, size_t n)
{
	float ms = 0;
	return recur_event_elapsed_ms(S.rt, E[0], E[1], &ms, e, n);
}
static int c_ev_destroy(char *e, size_t n)
{
	int h = hc.handles;
	recur_event_destroy(S.rt, E[0]);
	E[0] = NULL;
	return hc.handles == h - 1 ? 0 : fail(e, n, "the event was not destroyed");
}
static int c_load(char *e, size_t n)
{
	return recur_variant_load(S.rt, S.m, "good", &V2, e, n);
}
static int c_load_bad(char *e, size_t n)
{
	return recur_variant_load(S.rt, S.m, "bad", &V2, e, n);
}
static int s_fail_getfn(char *e, size_t n)
{
	hc.fail_fn = "ModuleGetFunction";
	return 0;
}
static void t_v2(void)
{
	recur_variant_free(V2);
	V2 = NULL;
}
static int s_v2_ran(char *e, size_t n)
{
	nblk0 = hc.nblk;
	return recur_variant_load(S.rt, S.m, "good", &V2, e, n) || recur_forward(V2, SH, &S.io, 0, e, n) ||
	       recur_backward(V2, SH, &S.io, 0, e, n);
}
static int c_vfree(char *e, size_t n)
{
	recur_variant_free(V2);
	V2 = NULL;
	return hc.nblk == nblk0 ? 0 : fail(e, n, "the variant's workspaces were not freed");
}
static int s_v2(char *e, size_t n)
{
	return recur_variant_load(S.rt, S.m, "good", &V2, e, n);
}
static int s_v2_big(char *e, size_t n)
{
	return recur_variant_load(S.rt, S.m, "big", &V2, e, n);
}
static int c_v2_forward(char *e, size_t n)
{
	return recur_forward(V2, SH, &S.io, 0, e, n);
}
static int c_v2_backward(char *e, size_t n)
{
	return recur_backward(V2, SH, &S.io, 0, e, n);
}
static int s_fwd(char *e, size_t n)
{
	return recur_forward(V, SH, &S.io, 0, e, n);
}
static int c_trim(char *e, size_t n)
{
	int rc = recur_variant_trim(V, e, n);
	return rc || recur_variant_workspace_bytes(V) == 0 ? rc : fail(e, n, "the workspaces were not freed");
}
static int c_forward(char *e, size_t n)
{
	return recur_forward(V, SH, &S.io, 0, e, n);
}
static int c_backward(char *e, size_t n)
{
	return recur_backward(V, SH, &S.io, 0, e, n);
}
static int c_forward_ws(char *e, size_t n)
{
	return recur_forward_ws(V, SH, &S.io, &W, 0, e, n);
}
static int s_fwd_ws(char *e, size_t n)
{
	return recur_forward_ws(V, SH, &S.io, &W, 0, e, n);
}
static int c_backward_ws(char *e, size_t n)
{
	return recur_backward_ws(V, SH, &S.io, &W, 0, e, n);
}
static int c_backward_ws_small(char *e, size_t n)
{
	recur_ws w = W;
	w.saved_bytes = 16;
	return recur_backward_ws(V, SH, &S.io, &w, 0, e, n);
}
static int s_profile(char *e, size_t n)
{
	recur_set_profiling(V, 1);
	return 0;
}
static void t_profile(void)
{
	recur_set_profiling(V, 0);
}
static int c_forward_profiled(char *e, size_t n)
{
	recur_launch_info li;
	int rc = recur_forward(V, SH, &S.io, 0, e, n);
	return rc || (recur_variant_last_launch(V, 0, &li) == 0 && li.blocks_per_sm > 0 && li.max_clusters > 0)
	               ? rc
	               : fail(e, n, "no occupancy figures from the profiled forward");
}
static int c_forward_odd(char *e, size_t n)
{
	return recur_forward(V, (recur_shape){2, 37, 63}, &S.io, 0, e, n);
}
static int s_fail_launch(char *e, size_t n)
{
	hc.fail_fn = "LaunchKernelEx";
	return 0;
}
static int c_graph_create(char *e, size_t n)
{
	return recur_graph_create(V, SH, &S.io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &G, e, n);
}
static void t_graph(void)
{
	recur_graph_free(G);
	G = NULL;
}
static int s_graph(char *e, size_t n)
{
	return c_graph_create(e, n);
}
static int c_graph_launch(char *e, size_t n)
{
	return recur_graph_launch(G, 0, e, n);
}
static int c_graph_free(char *e, size_t n)
{
	int h = hc.handles;
	recur_graph_free(G);
	G = NULL;
	return hc.handles == h - 2 ? 0 : fail(e, n, "the graph and its executable were not destroyed");
}
static int s_fail_instantiate(char *e, size_t n)
{
	hc.fail_fn = "GraphInstantiateWithFlags";
	return 0;
}
static int s_graph_fail_launch(char *e, size_t n)
{
	int rc = s_graph(e, n);
	hc.fail_fn = "GraphLaunch";
	return rc;
}
static int c_trim_pinned(char *e, size_t n)
{
	return recur_variant_trim(V, e, n);
}

typedef struct {
	const char *name;
	int (*setup)(char *err, size_t n);
	int (*call)(char *err, size_t n);
	void (*teardown)(void);
	const char *fails;   /* NULL: the call succeeds; else a part of its message */
	int sets;            /* cuCtxSetCurrent calls it makes from another context */
} Case;

static const Case cases[] = {
	{"recur_rt_open", NULL, c_open, t_rt2, NULL, 0},
	{"recur_rt_open failing", s_fail_attr, c_open, t_rt2, "cuDeviceGetAttribute failed", 0},
	{"recur_rt_close with a block still held", s_rt2_block, c_close, t_rt2, NULL, 2},
	{"compute capability, device name, driver version", NULL, c_info, NULL, NULL, 0},
	{"recur_alloc", NULL, c_alloc, t_free_p, NULL, 2},
	{"recur_alloc past the device's memory", NULL, c_alloc_oom, t_free_p, "CUDA_ERROR_OUT_OF_MEMORY", 2},
	{"recur_free", s_alloc, c_free, t_free_p, NULL, 2},
	{"recur_memcpy_htod", NULL, c_htod, NULL, NULL, 2},
	{"recur_memcpy_htod outside any allocation", NULL, c_htod_outside, NULL, "copying 64 bytes to the device", 2},
	{"recur_memcpy_dtoh", NULL, c_dtoh, NULL, NULL, 2},
	{"recur_memset_u8", NULL, c_memset, NULL, NULL, 2},
	{"recur_sync", NULL, c_sync, NULL, NULL, 2},
	{"recur_sync failing", s_fail_sync, c_sync, NULL, "synchronising device 0", 2},
	{"recur_event_create", NULL, c_ev_create, t_events, NULL, 2},
	{"recur_event_record", s_events, c_ev_record, t_events, NULL, 2},
	{"recur_event_record failing", s_events_fail_record, c_ev_record, t_events, "recording an event", 2},
	{"recur_event_elapsed_ms", s_events_recorded, c_ev_elapsed, t_events, NULL, 2},
	{"recur_event_destroy", s_events, c_ev_destroy, t_events, NULL, 2},
	{"recur_variant_load", NULL, c_load, t_v2, NULL, 2},
	{"recur_variant_load of a PTX the JIT refuses", NULL, c_load_bad, t_v2, "no .version directive", 2},
	{"recur_variant_load of a PTX the JIT refuses: the target to make", NULL, c_load_bad, t_v2,
	 "generate for this GPU: recur gen --sm sm_90)", 2},
	{"recur_variant_load failing to resolve a kernel", s_fail_getfn, c_load, t_v2, "resolving kernel fwd", 2},
	{"recur_variant_free with workspaces", s_v2_ran, c_vfree, t_v2, NULL, 2},
	{"recur_variant_trim", s_fwd, c_trim, NULL, NULL, 2},
	{"recur_forward", NULL, c_forward, NULL, NULL, 2},
	{"recur_backward", s_fwd, c_backward, NULL, NULL, 2},
	{"recur_forward_ws", NULL, c_forward_ws, NULL, NULL, 2},
	{"recur_backward_ws", s_fwd_ws, c_backward_ws, NULL, NULL, 2},
	{"recur_forward profiled (events, occupancy)", s_profile, c_forward_profiled, t_profile, NULL, 2},
	{"recur_forward at a shape the rules refuse", NULL, c_forward_odd, NULL, "D must be a multiple of 4", 0},
	{"recur_forward with a launch failing", s_fail_launch, c_forward, NULL, "launching forward[0] kernel fwd", 2},
	{"recur_forward with a workspace past the device", s_v2_big, c_v2_forward, t_v2, "CUDA_ERROR_OUT_OF_MEMORY", 2},
	{"recur_backward without a forward", s_v2, c_v2_backward, t_v2, "without a forward before it", 2},
	{"recur_backward_ws with a saved region too small", s_fwd_ws, c_backward_ws_small, NULL, "ws->saved_bytes is 16",
	 2},
	{"recur_graph_create", NULL, c_graph_create, t_graph, NULL, 2},
	{"recur_graph_create failing to instantiate", s_fail_instantiate, c_graph_create, t_graph, "instantiating", 2},
	{"recur_graph_launch", s_graph, c_graph_launch, t_graph, NULL, 2},
	{"recur_graph_launch failing", s_graph_fail_launch, c_graph_launch, t_graph, "launching variant good's graph", 2},
	{"recur_graph_free", s_graph, c_graph_free, t_graph, NULL, 2},
	{"recur_variant_trim refused while a graph lives", s_graph, c_trim_pinned, t_graph, "recur_graph_free", 0},
};

static const struct {
	CUcontext ctx;
	const char *name;
} priors[] = {{OTHER, "another context current"}, {NULL, "no context current"}, {HC_CTX, "the device's own current"}};

static const char *ctx_name(CUcontext c)
{
	return c == OTHER ? "another context" : c == HC_CTX ? "the device's" : c ? "an unknown one" : "none";
}

static void one(const Case *c, int pi)
{
	char err[4096] = "", what[256];
	snprintf(what, sizeof what, "%s, with %s: %s, the context as it was, none missed", c->name, priors[pi].name,
	         c->fails ? "fails with its message" : "succeeds");
	hc_set_current(NULL);
	hc.fail_fn = NULL;
	if (c->setup && c->setup(err, sizeof err)) {
		check(0, what, "setup: %s", err);
		hc.fail_fn = NULL;
		if (c->teardown)
			c->teardown();
		return;
	}
	int viol = hc.ctx_violations;
	long sets = hc.ctx_sets;
	CUcontext before = priors[pi].ctx;
	hc_set_current(before);
	err[0] = 0;
	int rc = c->call(err, sizeof err);
	CUcontext after = hc_get_current();
	sets = hc.ctx_sets - sets;
	viol = hc.ctx_violations - viol;
	hc_set_current(NULL);
	int unused = hc.fail_fn != NULL;   /* an injected failure that never came */
	hc.fail_fn = NULL;
	if (c->teardown)
		c->teardown();
	long want_sets = before == HC_CTX ? 0 : c->sets;
	int ok_rc = c->fails ? rc != 0 && has(err, c->fails) : rc == 0;
	check(ok_rc && after == before && viol == 0 && sets == want_sets && !unused, what,
	      "rc %d, context %s after %s, %d call(s) without the device's context (%s), %ld cuCtxSetCurrent (want %ld)%s: %s",
	      rc, ctx_name(after), ctx_name(before), viol, viol ? hc.ctx_violation : "-", sets, want_sets,
	      unused ? ", the injected failure never came" : "", err);
}

/* A backward on a thread of its own, as autograd runs it */
static void *worker(void *arg)
{
	char *err = arg;
	CUcontext first = hc_get_current();
	int rc = recur_backward(V, SH, &S.io, 0, err, 1024);
	CUcontext after = hc_get_current();
	if (!rc && (first || after))
		snprintf(err, 1024, "the worker's context: %s before, %s after", ctx_name(first), ctx_name(after));
	return (void *)(intptr_t)(rc || first || after);
}

static void special(void)
{
	char err[4096] = "";
	int rc;

	/* the stand-in's own check: a call made without the context counts */
	hc_set_current(OTHER);
	size_t f, t;
	CUresult r = S.rt->cu.MemGetInfo(&f, &t);
	check(r == CUDA_ERROR_INVALID_CONTEXT && hc.ctx_violations == 1 && has(hc.ctx_violation, "cuMemGetInfo") &&
	              has(hc.ctx_violation, "another context"),
	      "the stand-in catches a call needing the context made without it", "%d violation(s): %s",
	      hc.ctx_violations, hc.ctx_violation);
	hc.ctx_violations = 0;
	hc.ctx_violation[0] = 0;

	/* the common case: nothing but one cuCtxGetCurrent */
	hc_set_current(HC_CTX);
	rc = recur_forward(V, SH, &S.io, 0, err, sizeof err);
	long gets = hc.ctx_gets, sets = hc.ctx_sets;
	rc = rc || recur_forward(V, SH, &S.io, 0, err, sizeof err);
	gets = hc.ctx_gets - gets;
	sets = hc.ctx_sets - sets;
	check(rc == 0 && gets == 1 && sets == 0,
	      "a forward with the device's context current: one cuCtxGetCurrent, no cuCtxSetCurrent",
	      "%ld gets, %ld sets %s", gets, sets, err);

	/* the restore refused: the call fails with the reason, holds nothing */
	for (int k = 0; k < 2; k++) {
		CUcontext before = k ? NULL : OTHER;
		hc_set_current(before);
		hc.fail_fn = "CtxSetCurrent";
		hc.fail_skip = 1;
		err[0] = 0;
		rc = recur_forward(V, SH, &S.io, 0, err, sizeof err);
		check(rc != 0 && has(err, "cuCtxSetCurrent failed") &&
		              has(err, "putting the calling thread's own context") && has(err, "recur_forward of variant good") &&
		              hc_get_current() == HC_CTX && hc.ctx_violations == 0,
		      k ? "a forward whose restore of no context fails: fails, saying so"
		        : "a forward whose restore of another context fails: fails, saying so",
		      "rc %d, context %s: %s", rc, ctx_name(hc_get_current()), err);
	}
	hc_set_current(OTHER);
	int held = hc.nblk;
	size_t cur = recur_mem_current(S.rt);
	CUdeviceptr p = 1;
	hc.fail_fn = "CtxSetCurrent";
	hc.fail_skip = 1;
	rc = recur_alloc(S.rt, 4096, &p, err, sizeof err);
	check(rc != 0 && p == 0 && hc.nblk == held && recur_mem_current(S.rt) == cur && has(err, "after recur_alloc") &&
	              hc.ctx_violations == 0,
	      "an allocation whose restore fails: fails, and holds nothing", "rc %d, %d blocks more: %s", rc,
	      hc.nblk - held, err);
	/* a pass that fails, and then its restore too: both said, the pass's first */
	rc = recur_forward_ws(V, SH, &S.io, &W, 0, err, sizeof err);
	recur_ws small = W;
	small.saved_bytes = 16;
	hc_set_current(OTHER);
	hc.fail_fn = "CtxSetCurrent";
	hc.fail_skip = 1;
	err[0] = 0;
	rc = rc || !recur_backward_ws(V, SH, &S.io, &small, 0, err, sizeof err);
	const char *then = strstr(err, "; then cuCtxSetCurrent failed");
	check(rc == 0 && then && has(err, "ws->saved_bytes is 16") && strstr(err, "ws->saved_bytes is 16") < then &&
	              has(then, "after recur_backward_ws of variant good"),
	      "a backward_ws refused, and then its restore failing: both in the message, in that order", "%s", err);
	hc_set_current(OTHER);
	hc.fail_fn = "CtxSetCurrent";
	hc.fail_skip = 1;
	rc = recur_backward_ws(V, SH, &S.io, &small, 0, NULL, 0);
	check(rc != 0 && hc.fail_fn == NULL, "the same with no room for a message: fails, no crash", "rc %d", rc);
	hc.fail_fn = NULL;

	/* the context cannot be made current: nothing changes, nothing runs */
	hc_set_current(OTHER);
	hc.nlaunch = 0;
	hc.fail_fn = "CtxSetCurrent";
	hc.fail_skip = 0;
	err[0] = 0;
	rc = recur_forward(V, SH, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && hc_get_current() == OTHER &&
	              has(err, "making device 0's primary context current for recur_forward of variant good") &&
	              hc.ctx_violations == 0,
	      "a context the driver will not make current: the call fails before any launch, the context as it was",
	      "rc %d, %d launches, context %s: %s", rc, hc.nlaunch, ctx_name(hc_get_current()), err);
	hc.fail_fn = NULL;

	/* another thread: its own current context, none at first */
	hc_set_current(OTHER);
	err[0] = 0;
	rc = recur_forward(V, SH, &S.io, 0, err, sizeof err);
	pthread_t th;
	char werr[1024] = "";
	void *wrc = (void *)1;
	if (rc == 0 && pthread_create(&th, NULL, worker, werr) == 0)
		pthread_join(th, &wrc);
	check(rc == 0 && wrc == NULL && hc_get_current() == OTHER && hc.ctx_violations == 0,
	      "a backward on another thread: the device's context current there for the call only, this thread's "
	      "untouched", "%s %s; this thread: %s", err, werr, ctx_name(hc_get_current()));
	hc_set_current(NULL);
}

int main(void)
{
	if (make_test_dir(dir, sizeof dir, "test_runtime_ctx"))
		return 1;
	write_in(dir, "k.ptx", toy_ptx);
	write_in(dir, "bad.ptx", bad_ptx);
	write_in(dir, "manifest.json", manifest);
	hc_reset();
	char err[4096] = "", path[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	recur_ws_sizes z = {0};
	CUdeviceptr saved = 0, scratch = 0;
	int rc = session_open_variant(&S, path, SH, "good", &V, err, sizeof err) ||
	         recur_workspace_sizes(S.m, recur_manifest_find(S.m, "good"), SH, &z, err, sizeof err) ||
	         recur_alloc(S.rt, z.saved, &saved, err, sizeof err) ||
	         recur_alloc(S.rt, z.scratch, &scratch, err, sizeof err) || recur_forward(V, SH, &S.io, 0, err, sizeof err);
	W = (recur_ws){.saved = saved, .saved_bytes = z.saved, .scratch = scratch, .scratch_bytes = z.scratch};
	check(rc == 0 && hc_get_current() == NULL && hc.ctx_violations == 0,
	      "the runtime opens on the stand-in, loads a variant, runs a forward; no context left current", "%s", err);
	if (rc == 0) {
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
			for (int pi = 0; pi < 3; pi++)
				one(&cases[i], pi);
		special();
	}
	recur_variant_free(V);
	recur_free(S.rt, saved);
	recur_free(S.rt, scratch);
	if (S.rt)
		io_free(&S);
	recur_manifest_free(S.m);
	hc_set_current(OTHER);
	recur_rt_close(S.rt);
	check(hc.nblk == 0 && hc_get_current() == OTHER && hc.ctx_violations == 0,
	      "all freed and the runtime closed, the context as it was", "%d blocks, context %s, %d violations: %s",
	      hc.nblk, ctx_name(hc_get_current()), hc.ctx_violations, hc.ctx_violation);
	hc_set_current(NULL);
	const char *const names[] = {"k.ptx", "bad.ptx", "manifest.json"};
	remove_test_dir(dir, names, 3);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
