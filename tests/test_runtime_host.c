/* The runtime behind the driver's calls, on the CPU: a host-memory
 * stand-in for the driver (hostcu.h) under the real manifest loader, plans,
 * workspaces, arena, arguments and graphs.
 *
 * - Workspace sizes near 2^62: zeroed workspaces whose arena would pass
 *   2^64 bytes are refused before anything is allocated or launched, with
 *   the variant, the workspace and the shape; one too large for the device
 *   fails as an allocation, named; a size expression that overflows int64
 *   is an error, not a wrapped size.
 * - A correct variant: every buffer a kernel gets lies inside a live
 *   allocation with room for its workspace's bytes; graphs of it.
 * - Shapes past RECUR_MAX_ELEMS are refused by every call taking a shape,
 *   and recur_tensor_bytes refuses what would overflow.
 * - A module made for a target with more shared memory than the device's
 *   (sm_80's on an sm_89 card) is refused before any launch, its target
 *   named.
 * - Faults: every driver call of a whole session (open, load, allocate,
 *   forward, backward, graph, trim, free, close) made to fail in turn, and
 *   the device's memory exhausted in the middle of a plan: each a message
 *   naming what failed, nothing left allocated on the device, no crash;
 *   and after each, the thread's current context as it was (none), but
 *   where the failing call was the one putting it back, and no driver call
 *   made without the device's context current (test_runtime_ctx.c has the
 *   context's cases one by one).
 */
#include "hostsession.h"
#include "check.h"
#include "testfs.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];


#define WS4(bytes)                                                                                                     \
	"{\"name\": \"a\", \"bytes\": \"" bytes "\", \"life\": \"forward\", \"zero\": true},"                          \
	"{\"name\": \"b\", \"bytes\": \"" bytes "\", \"life\": \"saved\", \"zero\": true},"                            \
	"{\"name\": \"c\", \"bytes\": \"" bytes "\", \"life\": \"saved\", \"zero\": true},"                            \
	"{\"name\": \"d\", \"bytes\": \"" bytes "\", \"life\": \"backward\", \"zero\": true}"

#define VARIANT(name, ws, cluster)                                                                                     \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [[\"N\", \"L*D\"]],\n"             \
	" \"rules\": [{\"expr\": \"D%4==0\", \"message\": \"D must be a multiple of 4\"}],\n"                          \
	" \"workspaces\": [" ws "],\n"                                                                                 \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B*4\", 1, 1], \"block\": [64, 1, 1], \"cluster\": "         \
	"\"" cluster "\",\n"                                                                                           \
	"   \"smem\": \"65536\", \"resident\": true,\n"                                                                \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:a\", \"ws:b\", \"i32:N\", \"i64:B*L*D\"]}],\n"                  \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"early\": true,\n"         \
	"   \"args\": [\"dx\", \"dy\", \"grad:w\", \"ws:c\", \"ws:d\"]}]}"

/* a grid sized by the device's multiprocessors (the shape language's SMS) */
#define BYSMS                                                                                                          \
	"{\"name\": \"bysms\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [[\"N\", \"L*D\"], [\"G\", \"2*SMS+B\"]],\n" \
	" \"rules\": [],\n"                                                                                            \
	" \"workspaces\": [" WS4("64") "],\n"                                                                          \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"G\", 1, 1], \"block\": [64, 1, 1],\n"                   \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:a\", \"ws:b\", \"i32:N\", \"i64:B*L*D\"]}],\n"                  \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],\n"                        \
	"   \"args\": [\"dx\", \"dy\", \"grad:w\", \"ws:c\", \"ws:d\"]}]}"

static const char *manifest =
        "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": [\"D\"],\n"
        "  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n"
        " \"variants\": [\n" VARIANT("good", WS4("B*L*D*4"), "2") ",\n" VARIANT(
                "wrap", WS4("4611686018427387904"),
                "1") ",\n" VARIANT("huge",
                                   "{\"name\": \"a\", \"bytes\": \"4611686018427387904\", \"life\": \"forward\", "
                                   "\"zero\": true},"
                                   "{\"name\": \"b\", \"bytes\": \"0\", \"life\": \"saved\", \"zero\": false},"
                                   "{\"name\": \"c\", \"bytes\": \"64\", \"life\": \"saved\", \"zero\": false},"
                                   "{\"name\": \"d\", \"bytes\": \"64\", \"life\": \"backward\", \"zero\": false}",
                                   "1") ",\n" VARIANT("bigplain",
                                                      "{\"name\": \"a\", \"bytes\": \"64\", \"life\": \"forward\", "
                                                      "\"zero\": true},"
                                                      "{\"name\": \"b\", \"bytes\": \"4611686018427387904\", \"life\": "
                                                      "\"saved\", \"zero\": false},"
                                                      "{\"name\": \"c\", \"bytes\": \"64\", \"life\": \"saved\", "
                                                      "\"zero\": false},"
                                                      "{\"name\": \"d\", \"bytes\": \"64\", \"life\": \"backward\", "
                                                      "\"zero\": false}",
                                                      "1") ",\n" VARIANT("overflow", WS4("B*L*D*4611686018427387904"),
                                                                         "1") ",\n" VARIANT("perbatch",
                                                                                            WS4("B*1048576"),
                                                                                            "1") ",\n" BYSMS "\n"
                                                                                                 " ]}\n";

/* forward then backward of variant name at s, each pass's pointers checked */
static int run_pair(Session *S, const char *name, recur_shape s, char *err, size_t n)
{
	recur_variant *v = NULL;
	int vi = recur_manifest_find(S->m, name);
	int rc = recur_variant_load(S->rt, S->m, name, &v, err, n);
	hc.nlaunch = 0;
	rc = rc || recur_forward(v, s, &S->io, 0, err, n) || hc_check_pass(S->m, vi, RT_FWD, s, err, n);
	if (!rc)
		hc.nlaunch = 0;
	rc = rc || recur_backward(v, s, &S->io, 0, err, n) || hc_check_pass(S->m, vi, RT_BWD, s, err, n);
	recur_variant_free(v);
	return rc ? -1 : 0;
}

static void workspaces(Session *S)
{
	char err[4096] = "";
	recur_shape s = {2, 37, 64};
	int rc = run_pair(S, "good", s, err, sizeof err);
	check(rc == 0, "a correct variant: every buffer its kernels get lies in a live allocation", "%s", err);
	int held = hc.nblk;

	rc = run_pair(S, "wrap", s, err, sizeof err);
	check(rc != 0 && has(err, "wrap") && has(err, "workspace") && has(err, "B=2 L=37 D=64") && has(err, "2^64"),
	      "four zeroed workspaces of 2^62 bytes: the arena would wrap, refused with variant, workspace, shape",
	      "%s", err);
	check(hc.nblk == held && hc.nlaunch == 0, "nothing allocated or launched for it", "%d blocks, %d launches",
	      hc.nblk, hc.nlaunch);

	rc = run_pair(S, "huge", s, err, sizeof err);
	check(rc != 0 && has(err, "huge") && has(err, "zeroed workspaces") && has(err, "4611686018427387904") &&
	              has(err, "OUT_OF_MEMORY"),
	      "a zeroed workspace of 2^62 bytes: the device refuses it, named", "%s", err);
	rc = run_pair(S, "bigplain", s, err, sizeof err);
	check(rc != 0 && has(err, "bigplain") && has(err, "workspace b") && has(err, "OUT_OF_MEMORY"),
	      "a workspace of 2^62 bytes: the device refuses it, named", "%s", err);
	rc = run_pair(S, "overflow", s, err, sizeof err);
	check(rc != 0 && has(err, "overflow") && has(err, "workspace a") && has(err, "overflow"),
	      "a size expression past int64: an error naming the workspace, not a wrapped size", "%s", err);

	/* the device's memory runs out in the middle of a plan: the next call,
	 * at a shape that fits, must work on the same variant */
	recur_variant *v = NULL;
	size_t limit = hc.mem_limit;
	hc.mem_limit = hc.held + ((size_t)3 << 20); /* 3 MiB more: 2 of the 4 workspaces at B=2 */
	rc = recur_variant_load(S->rt, S->m, "perbatch", &v, err, sizeof err) ||
	        recur_forward(v, s, &S->io, 0, err, sizeof err);
	check(rc != 0 && has(err, "perbatch") && has(err, "OUT_OF_MEMORY") && has(err, "B=2"),
	      "the device full in the middle of a plan: the workspace's allocation fails, named", "%s", err);
	recur_shape one = {1, 37, 64};
	hc.mem_limit = limit;
	err[0] = 0;
	hc.nlaunch = 0;
	rc = !v || recur_forward(v, one, &S->io, 0, err, sizeof err) ||
	        hc_check_pass(S->m, recur_manifest_find(S->m, "perbatch"), RT_FWD, one, err, sizeof err) ||
	        recur_backward(v, one, &S->io, 0, err, sizeof err);
	check(rc == 0, "after it, the same variant runs a shape that fits", "%s", err);
	recur_variant_free(v);
}

static void graphs(Session *S)
{
	char err[4096] = "";
	recur_shape s = {2, 37, 64};
	recur_variant *v = NULL;
	recur_graph *g = NULL;
	int h0 = hc.handles;
	int rc = recur_variant_load(S->rt, S->m, "good", &v, err, sizeof err) ||
	        recur_graph_create(v, s, &S->io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, sizeof err) ||
	        recur_graph_launch(g, 0, err, sizeof err) || recur_graph_launch(g, 0, err, sizeof err);
	check(rc == 0 && g && recur_graph_nodes(g) == 3, "a graph of forward and backward: a clear and two kernels",
	      "%d nodes %s", g ? recur_graph_nodes(g) : -1, err);
	rc = recur_variant_trim(v, err, sizeof err);
	check(rc != 0 && has(err, "graph"), "trim refused while the graph holds the workspaces", "%s", err);
	recur_graph_free(g);
	recur_variant_free(v);
	check(hc.handles == h0, "the graph's stream, graph and executable are all destroyed", "%d left",
	      hc.handles - h0);
}

static void shapes(Session *S)
{
	char err[1024] = "";
	recur_variant *v = NULL;
	recur_shape big = {1, INT_MAX, INT_MAX}, zero = {2, 0, 64};
	int rc = recur_variant_load(S->rt, S->m, "good", &v, err, sizeof err);
	rc = rc || !recur_forward(v, big, &S->io, 0, err, sizeof err);
	check(rc == 0 && has(err, "B*L*D is more than") && has(err, "L=2147483647"),
	      "recur_forward refuses B*L*D past RECUR_MAX_ELEMS", "%s", err);
	recur_variant_free(v);
	int vi = recur_manifest_find(S->m, "good");
	rc = recur_check_shape(S->m, vi, big, err, sizeof err);
	check(rc != 0 && has(err, "RECUR_MAX_ELEMS"), "recur_check_shape too", "%s", err);
	rc = recur_check_shape(S->m, vi, zero, err, sizeof err);
	check(rc != 0 && has(err, "L must be >= 1"), "and L = 0", "%s", err);
	recur_plan_info pi;
	rc = recur_launch_plan(S->m, vi, 0, 0, big, &pi, err, sizeof err);
	check(rc != 0 && has(err, "RECUR_MAX_ELEMS"), "recur_launch_plan too", "%s", err);
	double b;
	rc = recur_launch_bytes(S->m, 99, 0, 0, big, &b, err, sizeof err);
	check(rc != 0 && has(err, "no variant 99"), "recur_launch_bytes of a variant that is not there: a message",
	      "%s", err);
	check(recur_param_elems(S->m, vi, 0, big, err, sizeof err) < 0 && has(err, "RECUR_MAX_ELEMS"),
	      "recur_param_elems too", "%s", err);

	size_t n = 0;
	rc = recur_tensor_bytes((recur_shape){2, 37, 64}, 2, &n, err, sizeof err);
	check(rc == 0 && n == 2 * 37 * 64 * 2, "recur_tensor_bytes of 2x37x64 bf16", "%zu", n);
	rc = recur_tensor_bytes((recur_shape){1024, 1024, 1024}, 8, &n, err, sizeof err);
	check(rc == 0 && n == ((size_t)8 << 30), "of 1024^3 float64: 8 GiB", "%zu", n);
	rc = recur_tensor_bytes((recur_shape){2, 1 << 20, 1 << 20}, 2, &n, err, sizeof err);
	check(rc != 0 && n == 0 && has(err, "B=2 L=1048576 D=1048576"), "of 2^41 elements: refused", "%s", err);
	rc = recur_tensor_bytes((recur_shape){1 << 20, 1 << 20, 1}, SIZE_MAX / 4, &n, err, sizeof err);
	check(rc != 0 && has(err, "overflow"), "elements times bytes past a size_t: refused", "%s", err);
}

/* One whole session; 0, or -1 with the first failure's message. */
static int session(char *err, size_t n)
{
	Session S = {0};
	char path[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	recur_shape s = {2, 37, 64};
	int rc = session_open(&S, path, s, err, n) || run_pair(&S, "good", s, err, n);
	recur_variant *v = NULL;
	recur_graph *g = NULL;
	rc = rc || recur_variant_load(S.rt, S.m, "good", &v, err, n) ||
	        recur_graph_create(v, s, &S.io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, n) ||
	        recur_graph_launch(g, 0, err, n) || recur_sync(S.rt, err, n);
	recur_graph_free(g);
	if (!rc) {
		recur_set_profiling(v, 1);
		rc = recur_forward(v, s, &S.io, 0, err, n) || recur_backward(v, s, &S.io, 0, err, n) ||
		        recur_variant_trim(v, err, n);
	}
	recur_variant_free(v);
	session_close(&S);
	return rc ? -1 : 0;
}

static void faults(void)
{
	char err[4096];
	hc_reset();
	int rc = session(err, sizeof err);
	long calls = hc.calls;
	check(rc == 0 && hc.nblk == 0, "a whole session on the stand-in", "%ld driver calls, %d blocks left %s", calls,
	      hc.nblk, rc ? err : "");
	int bad = 0, silent = 0, leaked = 0, ctx = 0;
	char first[4200] = "", ctx_first[512] = "";
	for (long k = 1; k <= calls; k++) {
		hc_reset();
		hc.fail_at = k;
		err[0] = 0;
		rc = session(err, sizeof err);
		/* a failing free or destroy is reported on stderr and the session goes on */
		if (rc && (!err[0] || has(err, "(null)"))) {
			silent++;
			if (!first[0])
				snprintf(first, sizeof first, "call %ld: \"%s\"", k, err);
		}
		if (rc && !has(err, "failed: CUDA_ERROR") && !has(err, "CUDA error")) {
			bad++;
			if (!first[0])
				snprintf(first, sizeof first, "call %ld: %s", k, err);
		}
		/* only a restore the driver refused leaves the device's context current */
		if (hc.ctx_violations || (hc_get_current() && (!hc.failed || strcmp(hc.failed, "CtxSetCurrent")))) {
			if (!ctx++)
				snprintf(ctx_first, sizeof ctx_first, "call %ld (%s): %s current after, %d violation(s) %s", k,
				         hc.failed, hc_get_current() ? "a context" : "none", hc.ctx_violations, hc.ctx_violation);
		}
		/* a free the driver refused leaves its block; nothing else may */
		if (hc.nblk > 0 && rc == 0 && (!hc.failed || strcmp(hc.failed, "MemFree"))) {
			leaked++;
			snprintf(first, sizeof first, "call %ld (%s) left %d blocks", k, hc.failed, hc.nblk);
		}
	}
	check(silent == 0 && bad == 0, "every driver call made to fail in turn: a message naming the call, no crash",
	      "%ld calls; %d without a message, %d without the driver's error %s", calls, silent, bad, first);
	check(leaked == 0, "and nothing left on the device but what a refused free held", "%d %s", leaked, first);
	check(ctx == 0, "and the thread's context as it was, but where its restore was the call failing; no call "
	      "without the device's context", "%d: %s", ctx, ctx_first);
	hc_reset();
}

/* A manifest of the variant "good" with a cubin of target `target`, as the
 * file cubin.json beside k.ptx. */
static void cubin_manifest(const char *target)
{
	char text[8192];
	const char *v = VARIANT("good", WS4("B*L*D*4"), "2");
	const char *at = strstr(v, "\"ptx\": \"k.ptx\",");
	snprintf(text, sizeof text,
	         "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": [\"D\"],\n"
	         "  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n \"variants\": [%.*s\"cubin\": "
	         "\"k.sm_90.cubin\", \"cubin_target\": \"%s\", %s]}\n",
	         (int)(at - v), v, target, at);
	write_in(dir, "cubin.json", text);
}

/* Loads "good" from cubin.json; the module string, or the error. */
static int load_with(recur_rt *rt, char *out, size_t n)
{
	char path[300];
	snprintf(path, sizeof path, "%s/cubin.json", dir);
	recur_manifest *m = NULL;
	recur_variant *v = NULL;
	int rc = recur_manifest_load(path, &m, out, n) || recur_variant_load(rt, m, "good", &v, out, n);
	if (rc == 0)
		snprintf(out, n, "%s", recur_variant_module(v));
	recur_variant_free(v);
	recur_manifest_free(m);
	return rc;
}

/* Which code a variant loads: its cubin on the cubin's own target, else the
 * PTX with the reason; never a crash on a bad cubin entry. */
static void cubins(void)
{
	char text[4096];
	snprintf(text, sizeof text, "\x7f" "ELF%s", toy_ptx);
	write_in(dir, "k.sm_90.cubin", text);
	hc_reset();
	recur_rt *rt = NULL;
	char err[4096] = "", what[4096] = "";
	if (hc_open(&rt, err, sizeof err) != 0) {
		check(0, "the runtime opens for the cubin cases", "%s", err);
		return;
	}
	cubin_manifest("sm_90");
	int rc = load_with(rt, what, sizeof what);
	check(rc == 0 && has(what, "cubin sm_90") && hc.cubins == 1, "a cubin of the device's target is loaded",
	      "rc %d, %d cubins: %s", rc, hc.cubins, what);
	setenv("RECUR_FORCE_PTX", "1", 1);
	rc = load_with(rt, what, sizeof what);
	unsetenv("RECUR_FORCE_PTX");
	check(rc == 0 && has(what, "PTX") && has(what, "RECUR_FORCE_PTX") && hc.cubins == 1,
	      "RECUR_FORCE_PTX=1 loads the PTX and says so", "rc %d: %s", rc, what);
	hc.refuse_cubin = 1;
	rc = load_with(rt, what, sizeof what);
	hc.refuse_cubin = 0;
	check(rc == 0 && has(what, "PTX") && has(what, "CUDA_ERROR_NO_BINARY_FOR_GPU"),
	      "a cubin the driver refuses falls back to the PTX, with the driver's reason", "rc %d: %s", rc, what);
	cubin_manifest("sm_80");
	rc = load_with(rt, what, sizeof what);
	check(rc == 0 && has(what, "PTX") && has(what, "the cubin is for sm_80, the device is sm_90"),
	      "a cubin of another target is left for the PTX, with both targets named", "rc %d: %s", rc, what);
	cubin_manifest("sm_9x");
	rc = load_with(rt, what, sizeof what);
	check(rc != 0 && has(what, "cubin_target") && has(what, "sm_9x"), "a malformed cubin_target is refused at load",
	      "%s", what);
	snprintf(text, sizeof text, "%s/k.sm_90.cubin", dir);
	unlink(text);
	cubin_manifest("sm_90");
	rc = load_with(rt, what, sizeof what);
	check(rc != 0 && has(what, "cubin file") && has(what, "missing"), "a missing cubin is refused at load, named",
	      "%s", what);
	recur_rt_close(rt);
	snprintf(text, sizeof text, "%s/cubin.json", dir);
	unlink(text);
	hc_reset();
}

/* cubin.json with variant "good" once per target of tg */
static void targets_manifest(const char *const *tg, int n)
{
	char text[32768];
	const char *v = VARIANT("good", WS4("B*L*D*4"), "2");
	const char *at = strstr(v, "\"ptx\": \"k.ptx\",");
	size_t used = (size_t)snprintf(text, sizeof text,
	                               "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": "
	                               "[\"D\"],\n  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n \"variants\": [");
	for (int i = 0; i < n && used < sizeof text; i++)
		used += (size_t)snprintf(text + used, sizeof text - used, "%s%.*s\"target\": \"%s\", %s", i ? ",\n" : "",
		                         (int)(at - v), v, tg[i], at);
	if (used < sizeof text)
		snprintf(text + used, sizeof text - used, "]}\n");
	write_in(dir, "cubin.json", text);
}

/* the manifest at path, loaded, then kept for a device of compute
 * capability major.minor (*m: NULL where the load failed): 0, -1 from
 * recur_manifest_select, or -2 where the manifest did not load */
static int load_select(const char *path, int major, int minor, recur_manifest **m, char *err, size_t n)
{
	*m = NULL;
	if (recur_manifest_load(path, m, err, n) != 0)
		return -2;
	return recur_manifest_select(*m, major, minor, err, n);
}

/* A folder of several targets: the runtime loads, per variant, the module
 * of the device's own target, else the newest older one; a variant with
 * none for the device is refused naming what there is; select keeps one
 * entry per variant. The stand-in is an sm_90 device. */
static void targets(void)
{
	hc_reset();
	recur_rt *rt = NULL;
	char err[4096] = "", what[4096] = "";
	if (hc_open(&rt, err, sizeof err) != 0) {
		check(0, "the runtime opens for the target cases", "%s", err);
		return;
	}
	static const struct {
		const char *tg[3];
		int n;
		const char *want, *why;
	} cases[] = {
		{ { "sm_80", "sm_90" }, 2, "PTX for sm_90", "the device's own target among sm_80 and sm_90" },
		{ { "sm_90", "sm_80" }, 2, "PTX for sm_90", "the device's own target, whatever the order" },
		{ { "sm_80", "sm_86" }, 2, "PTX for sm_86", "the newest older target when the device's is not there" },
		{ { "sm_89", "sm_100", "sm_90a" }, 3, "PTX for sm_90a", "an sm_90a module on its own target" },
		{ { "sm_80", "sm_90", "sm_90a" }, 3, "PTX for sm_90a", "sm_90a before sm_90 on an sm_90 device" },
		{ { "sm_90a", "sm_90", "sm_80" }, 3, "PTX for sm_90a", "sm_90a before sm_90, whatever the order" },
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		targets_manifest(cases[c].tg, cases[c].n);
		int rc = load_with(rt, what, sizeof what);
		check(rc == 0 && has(what, cases[c].want), cases[c].why, "rc %d: %s", rc, what);
	}
	const char *newer[] = { "sm_100", "sm_120" };
	targets_manifest(newer, 2);
	int rc = load_with(rt, what, sizeof what);
	check(rc != 0 && has(what, "modules for sm_100, sm_120 only") && has(what, "the device is sm_90"),
	      "a variant with only newer targets is refused, naming them and the device", "%s", what);
	const char *twice[] = { "sm_80", "sm_80" };
	targets_manifest(twice, 2);
	rc = load_with(rt, what, sizeof what);
	check(rc != 0 && has(what, "used twice for target sm_80"), "one name twice for one target is refused", "%s",
	      what);
	char path[300];
	snprintf(path, sizeof path, "%s/cubin.json", dir);
	const char *hopper[] = { "sm_90", "sm_90a" };
	targets_manifest(hopper, 2);
	recur_manifest *hm = NULL;
	rc = load_select(path, 10, 0, &hm, err, sizeof err);
	check(rc == 0 && !strcmp(recur_manifest_variant_target(hm, 0), "sm_90"),
	      "a newer device than sm_90 takes sm_90's module, never sm_90a's", "rc %d: %s", rc, err);
	recur_manifest_free(hm);
	/* a folder of sm_90a alone: a newer device is told the target recur gen
	 * makes for it (sm_90), never one it does not (sm_100); an Orin (8.7) sm_86 */
	const char *only90a[] = { "sm_90a" };
	targets_manifest(only90a, 1);
	static const struct { int major, minor; const char *want; } hint[] = {
		{ 10, 0, "recur gen --sm sm_90 (the driver compiles" }, { 12, 0, "recur gen --sm sm_90 (" },
		{ 8, 7, "recur gen --sm sm_86 (" }, { 8, 9, "recur gen --sm sm_89 (" },
	};
	for (size_t i = 0; i < sizeof hint / sizeof *hint; i++) {
		err[0] = 0;
		rc = load_select(path, hint[i].major, hint[i].minor, &hm, err, sizeof err);
		check(rc == -1 && has(err, "modules for sm_90a only") && has(err, hint[i].want),
		      "an sm_90a-only folder on another device names the target to generate", "sm_%d%d: rc %d: %s",
		      hint[i].major, hint[i].minor, rc, err);
		recur_manifest_free(hm);
	}
	/* the folder the docs give for every GPU: the A100 takes sm_80's
	 * layouts (164 KB an SM), consumer Ampere and Ada sm_86's (100 KB),
	 * Hopper sm_90a's, Blackwell sm_90's */
	const char *every[] = { "sm_80", "sm_86", "sm_90", "sm_90a" };
	targets_manifest(every, 4);
	static const struct { int major, minor; const char *want; } dev[] = {
		{ 8, 0, "sm_80" }, { 8, 6, "sm_86" }, { 8, 7, "sm_86" }, { 8, 9, "sm_86" }, { 9, 0, "sm_90a" },
		{ 10, 0, "sm_90" }, { 12, 0, "sm_90" },
	};
	for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) {
		err[0] = 0;
		rc = load_select(path, dev[i].major, dev[i].minor, &hm, err, sizeof err);
		const char *got = rc == 0 && recur_manifest_nvariants(hm) == 1 ? recur_manifest_variant_target(hm, 0) : "?";
		check(!strcmp(got, dev[i].want),
		      "a folder of sm_80, sm_86, sm_90 and sm_90a: each device takes its layouts' target",
		      "sm_%d%d wants %s: rc %d, %s %s", dev[i].major, dev[i].minor, dev[i].want, rc, got, err);
		recur_manifest_free(hm);
	}
	const char *two[] = { "sm_80", "sm_90" };
	targets_manifest(two, 2);
	recur_manifest *m = NULL;
	rc = recur_manifest_load(path, &m, err, sizeof err);
	int before = rc ? 0 : recur_manifest_nvariants(m);
	rc = rc || recur_manifest_select(m, 9, 0, err, sizeof err);
	check(rc == 0 && before == 2 && recur_manifest_nvariants(m) == 1 &&
	              !strcmp(recur_manifest_variant_target(m, 0), "sm_90"),
	      "select keeps the sm_90 module of the two", "rc %d, %d -> %d: %s", rc, before,
	      m ? recur_manifest_nvariants(m) : -1, err);
	rc = m ? recur_manifest_select(m, 7, 5, err, sizeof err) : -1;
	check(rc != 0 && has(err, "sm_75, and the kernels need sm_80") && m && recur_manifest_nvariants(m) == 1,
	      "select for a device no module suits is refused and leaves the manifest as it was", "%s", err);
	recur_manifest_free(m);
	recur_rt_close(rt);
	unlink(path);
	hc_reset();
}

/* SMS is the device's multiprocessor count in a launch, and 132 where the
 * manifest alone is read (recur_launch_plan) */
static void device_sms(void)
{
	char err[4096] = "", path[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	recur_shape s = {2, 37, 64};
	for (int sms = 108; sms <= 132; sms += 24) {
		hc.sms = sms;
		Session S = {0};
		recur_variant *v = NULL;
		int rc = session_open_variant(&S, path, s, "bysms", &v, err, sizeof err);
		hc.nlaunch = 0;
		rc = rc || recur_forward(v, s, &S.io, 0, err, sizeof err);
		unsigned want = (unsigned)(2 * sms + s.B);
		check(rc == 0 && hc.nlaunch == 1 && hc.launch[0].grid[0] == want,
		      "a grid of 2*SMS+B in a launch: the device's multiprocessors",
		      "%d multiprocessors, want %u blocks; rc %d, %d launches, grid %u: %s", sms, want, rc, hc.nlaunch,
		      hc.nlaunch ? hc.launch[0].grid[0] : 0, err);
		recur_plan_info pi;
		rc = recur_launch_plan(S.m, recur_manifest_find(S.m, "bysms"), 0, 0, s, &pi, err, sizeof err);
		check(rc == 0 && pi.grid[0] == 2 * 132 + 2, "its plan from the manifest alone: 132 multiprocessors",
		      "rc %d, grid %u: %s", rc, pi.grid[0], err);
		recur_variant_free(v);
		session_close(&S);
	}
	hc.sms = 0;
}

/* A launch whose blocks wait on each other, on a device that cannot hold
 * its grid at once (1 multiprocessor of 2 blocks, 4 blocks): refused before
 * it is launched to hang, naming both counts and what runs instead */
static void device_resident(void)
{
	char err[4096] = "", path[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	recur_shape s = {1, 37, 64};
	hc.sms = 1;
	Session S = {0};
	recur_variant *v = NULL;
	int rc = session_open_variant(&S, path, s, "perbatch", &v, err, sizeof err);
	hc.nlaunch = 0;
	rc = rc || recur_forward(v, s, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 &&
	              has(err, "all 4 of grid (4,1,1) must be resident at once; this device holds 2") &&
	              has(err, "another scan kind runs here"),
	      "a waiting grid the device cannot hold is refused, with what runs instead", "rc %d, %d launches: %s", rc,
	      hc.nlaunch, err);
	/* and asked before: a variant to skip on this device, not a failure */
	char why[4096] = "";
	hc.nlaunch = 0;
	int fit = v ? recur_variant_fits(v, s, why, sizeof why) : -2;
	check(fit == 1 && hc.nlaunch == 0 && has(why, "all 4 of grid (4,1,1) must be resident at once; this device holds 2"),
	      "recur_variant_fits: 1 where the device cannot hold the grid, saying why", "%d, %d launches: %s", fit,
	      hc.nlaunch, why);
	recur_shape odd = {1, 37, 63};
	fit = v ? recur_variant_fits(v, odd, why, sizeof why) : -2;
	check(fit == -1 && has(why, "D must be a multiple of 4"), "recur_variant_fits: -1 at a shape the rules refuse",
	      "%d: %s", fit, why);
	fit = recur_variant_fits(NULL, s, why, sizeof why);
	check(fit == -1 && has(why, "NULL"), "recur_variant_fits: -1 for no variant", "%d: %s", fit, why);
	recur_variant_free(v);
	v = NULL;
	/* a device of two multiprocessors (the capacity is counted once a kernel),
	 * asked before any launch: the kernel's 64 KB of shared memory opted in
	 * first, as the driver counts no block past what the function allows */
	hc.sms = 2;
	why[0] = 0;
	fit = recur_variant_load(S.rt, S.m, "perbatch", &v, why, sizeof why) ? -2
	                                                                       : recur_variant_fits(v, s, why, sizeof why);
	check(fit == 0, "recur_variant_fits: 0 where the device holds the grid (2 multiprocessors of 2 blocks)", "%d: %s",
	      fit, why);
	recur_variant_free(v);
	session_close(&S);
	hc.sms = 0;
}

/* A module made for a target with more shared memory than the device
 * (sm_80's layouts, up to 112 KB a block, on an sm_86 or sm_89 card's 99
 * KB): refused before any launch, naming the kernel, both sizes and the
 * module's target, and saying what to generate instead */
static void device_smem(void)
{
	char err[4096] = "", path[300];
	const char *at = strstr(manifest, "\"mixers\"");
	char *text = malloc(strlen(manifest) + 64);
	if (!at || !text) {
		check(0, "the manifest for the shared-memory case", "out of memory or no mixers");
		free(text);
		return;
	}
	sprintf(text, "{\"format\": 1, \"target\": \"sm_80\", %s", at);
	write_in(dir, "smem.json", text);
	free(text);
	snprintf(path, sizeof path, "%s/smem.json", dir);
	recur_shape s = {2, 37, 64};
	hc.smem_optin = 60000;   /* under the "good" forward's 65536 */
	Session S = {0};
	recur_variant *v = NULL;
	int rc = session_open_variant(&S, path, s, "good", &v, err, sizeof err);
	check(rc == 0, "a variant made for sm_80 loads on a device of 60000 shared bytes a block", "%s", err);
	hc.nlaunch = 0;
	rc = rc || recur_forward(v, s, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && strstr(err, "kernel fwd") && strstr(err, "= 65536 bytes, outside 0..60000") &&
	              strstr(err, "made for sm_80") && strstr(err, "recur gen --sm"),
	      "a launch over the device's shared memory: refused before any launch, the module's target named",
	      "rc %d, %d launches: %s", rc, hc.nlaunch, err);
	recur_variant_free(v);
	session_close(&S);
	hc.smem_optin = 0;
	unlink(path);
}

/* A launch taking a TMA tensor map of x (tmap:x:64x64): encoded at each
 * call from the call's x and shape, its 128 bytes passed where the
 * kernel's parameter is, 64-byte aligned; a shape TMA cannot take and a
 * failing encode refused before any launch, named. */
static const char tmap_ptx[] =
        ".version 8.0\n.target sm_90a\n.address_size 64\n"
        ".visible .entry tf(.param .u64 a0, .param .align 64 .b8 a1[128], .param .u64 a2,\n"
        "  .param .align 64 .b8 a3[128])\n{\n\tret;\n}\n"
        ".visible .entry tb(.param .u64 a0)\n{\n\tret;\n}\n";
/* x's map and the map of a workspace of bytes */
#define TMAP_VARIANT(name, bytes) TMAP_VARIANT_OF(name, bytes, "tmap")
#define TMAP_VARIANT_OF(name, bytes, kind)                                                                             \
	TMAP_VARIANT_ARGS(name, bytes, "\"y\", \"" kind ":x:64x64\", \"x\", \"tmap:ws:pw:64x64\"")
#define TMAP_VARIANT_ARGS(name, bytes, args)                                                                           \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"t.ptx\", \"vars\": [], \"rules\": [],\n"              \
	"  \"workspaces\": [{\"name\": \"pw\", \"bytes\": \"" bytes "\", \"life\": \"saved\", \"zero\": false}],\n"    \
	"  \"forward\": [{\"kernel\": \"tf\", \"grid\": [\"B\", 1, 1], \"block\": [128, 1, 1],\n"                      \
	"   \"args\": [" args "]}],\n"                                                                                \
	"  \"backward\": [{\"kernel\": \"tb\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"args\": [\"dx\"]}]}"
static const char tmap_manifest[] =
        "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": [\"D\"],\n"
        "  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n"
        " \"variants\": [" TMAP_VARIANT("tm", "B*L*D*2") ",\n" TMAP_VARIANT("tmsmall", "B*L*D") ",\n"
        TMAP_VARIANT_OF("tmrows", "B*L*D*2", "tmaprows") ",\n"
        TMAP_VARIANT_ARGS("tmfew", "B*L*D*2", "\"y\", \"tmap:x:64x64\", \"x\"") ",\n"
        TMAP_VARIANT_ARGS("tmmany", "B*L*D*2", "\"y\", \"tmap:x:64x64\", \"x\", \"tmap:ws:pw:64x64\", \"i32:L\"") ",\n"
        TMAP_VARIANT_ARGS("tmsize", "B*L*D*2", "\"y\", \"x\", \"x\", \"tmap:ws:pw:64x64\"") "]}\n";

static void tensor_maps(void)
{
	char err[4096] = "", path[300];
	write_in(dir, "t.ptx", tmap_ptx);
	write_in(dir, "tmap.json", tmap_manifest);
	snprintf(path, sizeof path, "%s/tmap.json", dir);
	recur_shape s = {2, 37, 64};
	Session S = {0};
	recur_variant *v = NULL;
	hc.refused = 0;
	int rc = session_open_variant(&S, path, s, "tm", &v, err, sizeof err);
	hc.nlaunch = hc.tmaps = 0;
	rc = rc || recur_forward(v, s, &S.io, 0, err, sizeof err) ||
	     hc_check_pass(S.m, recur_manifest_find(S.m, "tm"), RT_FWD, s, err, sizeof err);
	/* compute-sanitizer reports every refused call as the program's error:
	 * checking the parameters must not probe past the last one */
	check(rc == 0 && hc.refused == 0, "loading and running a variant asks the driver nothing it refuses",
	      "rc %d, %d refused, the last by %s: %s", rc, hc.refused, hc.refused_fn ? hc.refused_fn : "none", err);
	const CUtensorMap *map = !rc && hc.nlaunch == 1 ? hc.launch[0].params[1] : NULL;
	const CUtensorMap *wmap = map ? hc.launch[0].params[3] : NULL;
	check(wmap && (uintptr_t)wmap % 64 == 0 && wmap->opaque[0] && wmap->opaque[0] != S.io.x &&
	              wmap->opaque[1] == 64 && wmap->opaque[2] == 37 && wmap->opaque[3] == 2,
	      "a tensor map of a workspace: the workspace's, inside its allocation (hc_check_pass)", "rc %d: %s", rc, err);
	check(map && hc.tmaps == 2 && (uintptr_t)map % 64 == 0 && map->opaque[0] == S.io.x && map->opaque[1] == 64 &&
	              map->opaque[2] == 37 && map->opaque[3] == 2 && map->opaque[6] == 128 && map->opaque[7] == 37 * 128 &&
	              map->opaque[11] == 64 && map->opaque[12] == 64 && map->opaque[13] == 1,
	      "a tensor map of x: [B][L][D] as (D, L, B), rows of 2D bytes, a box of 64 x 64 x 1, 64-byte aligned",
	      "rc %d, %d launches, %d maps: %s", rc, hc.nlaunch, hc.tmaps, err);
	/* another x: encoded again */
	CUdeviceptr x2 = 0;
	rc = recur_alloc(S.rt, (size_t)2 * 37 * 64 * 2, &x2, err, sizeof err);
	recur_io io = S.io;
	io.x = x2;
	hc.nlaunch = 0;
	rc = rc || recur_forward(v, s, &io, 0, err, sizeof err);
	map = !rc && hc.nlaunch == 1 ? hc.launch[0].params[1] : NULL;
	check(map && map->opaque[0] == x2 && hc.tmaps == 4, "the next call's tensor map holds the next call's x",
	      "rc %d, %d maps: %s", rc, hc.tmaps, err);
	recur_free(S.rt, x2);
	/* D = 4: rows of 8 bytes, not TMA's multiple of 16 */
	hc.nlaunch = 0;
	rc = recur_forward(v, (recur_shape){1, 5, 4}, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && strstr(err, "kernel tf") && strstr(err, "tmap:x:64x64") &&
	              strstr(err, "D = 4") && strstr(err, "multiples of 16 bytes"),
	      "a shape whose rows TMA cannot stride is refused before any launch, naming the kernel and the map",
	      "rc %d, %d launches: %s", rc, hc.nlaunch, err);
	/* the driver refusing the encode */
	hc.fail_fn = "TensorMapEncodeTiled";
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && strstr(err, "cuTensorMapEncodeTiled") && strstr(err, "2x37x64"),
	      "a failing encode is an error naming the call and the shape, nothing launched", "rc %d, %d launches: %s",
	      rc, hc.nlaunch, err);
	hc.fail_fn = NULL;
	recur_variant_free(v);
	/* tmaprows: x as B L rows of one sequence, (64, 74, 1) */
	v = NULL;
	hc.nlaunch = 0;
	err[0] = 0;
	rc = recur_variant_load(S.rt, S.m, "tmrows", &v, err, sizeof err) || recur_forward(v, s, &S.io, 0, err, sizeof err);
	map = !rc && hc.nlaunch == 1 ? hc.launch[0].params[1] : NULL;
	check(map && map->opaque[0] == S.io.x && map->opaque[1] == 64 && map->opaque[2] == 74 && map->opaque[3] == 1 &&
	              map->opaque[6] == 128 && map->opaque[7] == 74 * 128 && map->opaque[12] == 64,
	      "a tmaprows: map of x: its B L rows as one sequence (64, 74, 1)", "rc %d: %s", rc, err);
	recur_variant_free(v);
	/* a workspace smaller than the [B][L][D] bf16 its map spans */
	v = NULL;
	hc.nlaunch = 0;
	rc = recur_variant_load(S.rt, S.m, "tmsmall", &v, err, sizeof err) || recur_forward(v, s, &S.io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && strstr(err, "workspace pw holds 4736 bytes") && strstr(err, "tmap:ws:pw:64x64"),
	      "a workspace smaller than its map's span is refused before any launch", "rc %d, %d launches: %s", rc,
	      hc.nlaunch, err);
	recur_variant_free(v);
	/* the manifest against the kernel's parameters (the count its .entry
	 * declares, the sizes cuFuncGetParamInfo reads): fewer args, more, and
	 * a tensor map's 128 bytes passed as a pointer */
	static const struct { const char *name, *says; } bad[] = {
		{"tmfew", "kernel tf takes 4 parameters, the manifest gives 3 args"},
		{"tmmany", "kernel tf takes 4 parameters, the manifest gives 5 args"},
		{"tmsize", "kernel tf's parameter 1 is 128 bytes, its arg \"x\" 8"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = NULL;
		rc = recur_variant_load(S.rt, S.m, bad[i].name, &v, err, sizeof err);
		check(rc != 0 && !v && strstr(err, bad[i].says) && strstr(err, "t.ptx"),
		      "a manifest out of step with its kernel's parameters is refused at load, naming both",
		      "%s: rc %d: %s", bad[i].name, rc, err);
		recur_variant_free(v);
	}
	setenv("RECUR_PARAM_CHECK", "0", 1);
	v = NULL;
	err[0] = 0;
	rc = recur_variant_load(S.rt, S.m, "tmsize", &v, err, sizeof err);
	check(rc == 0 && v, "RECUR_PARAM_CHECK=0 loads it unchecked", "rc %d: %s", rc, err);
	recur_variant_free(v);
	unsetenv("RECUR_PARAM_CHECK");
	session_close(&S);
	/* a driver before CUDA 12.4 has no cuFuncGetParamInfo: the sizes go
	 * unchecked, the count (the PTX's) does not */
	hc.no_param_info = 1;
	Session S2 = {0};
	v = NULL;
	err[0] = 0;
	rc = session_open_variant(&S2, path, s, "tmsize", &v, err, sizeof err);
	check(rc == 0 && v, "without cuFuncGetParamInfo (a driver before CUDA 12.4) the sizes go unchecked",
	      "rc %d: %s", rc, err);
	recur_variant_free(v);
	v = NULL;
	rc = recur_variant_load(S2.rt, S2.m, "tmfew", &v, err, sizeof err);
	check(rc != 0 && !v && strstr(err, "kernel tf takes 4 parameters, the manifest gives 3 args"),
	      "without cuFuncGetParamInfo the count of parameters is still checked, from the PTX", "rc %d: %s", rc, err);
	recur_variant_free(v);
	session_close(&S2);
	hc.no_param_info = 0;
}

int main(void)
{
	if (make_test_dir(dir, sizeof dir, "test_runtime_host"))
		return 1;
	write_in(dir, "k.ptx", toy_ptx);
	write_in(dir, "manifest.json", manifest);
	hc_reset();
	Session S = {0};
	char err[4096] = "", path[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	int rc = session_open(&S, path, (recur_shape){2, 37, 64}, err, sizeof err);
	check(rc == 0, "the runtime opens on the host stand-in and loads the manifest", "%s", err);
	if (rc == 0) {
		workspaces(&S);
		graphs(&S);
		shapes(&S);
	}
	session_close(&S);
	check(hc.nblk == 0, "closing the runtime leaves nothing on the device", "%d blocks", hc.nblk);
	device_sms();
	device_resident();
	device_smem();
	faults();
	cubins();
	targets();
	tensor_maps();
	const char *const names[] = {"k.ptx", "manifest.json", "t.ptx", "tmap.json"};
	remove_test_dir(dir, names, 4);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
