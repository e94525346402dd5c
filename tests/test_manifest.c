/* manifest.json loading (runtime/manifest.c) without a GPU: a small
 * synthetic manifest and a dummy .ptx in a temporary directory; variant
 * lookup, parameter dims / element counts / init at a shape, shape checks
 * that accept and refuse with the rule's message; then malformed manifests
 * (each made from the good one by one textual edit), which must fail with a
 * message naming the manifest path and what is wrong.
 */
#include "recur.h"
#include "rt_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed;
static char dir[256], path[320];

static void verdict(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
	ok ? passed++ : failed++;
}

static const char *good =
	"{\n"
	"  \"format\": 1, \"generator\": \"recur test\", \"llvm\": \"19.1.7\",\n"
	"  \"target\": \"sm_90\", \"ptx_isa\": \"8.0\",\n"
	"  \"mixers\": {\n"
	"    \"toy\": {\"script\": \"toy.lua\", \"k\": 64, \"controller\": null,\n"
	"      \"dynamic_control_values_per_token\": \"2*D\",\n"
	"      \"params\": [\n"
	"        {\"name\": \"w\", \"dims\": [\"D\"], \"init\": {\"kind\": \"normal\", \"a\": 0.5, \"b\": 0}},\n"
	"        {\"name\": \"W\", \"dims\": [\"H\", \"K\", \"K\"], \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(K)\"}},\n"
	"        {\"name\": \"s\", \"dims\": [], \"init\": {\"kind\": \"const\", \"a\": 2}},\n"
	"        {\"name\": \"lam\", \"dims\": [\"D\"], \"init\": {\"kind\": \"decay\", \"a\": 0.9, \"b\": 0.999}}\n"
	"      ]}\n"
	"  },\n"
	"  \"variants\": [\n"
	"    {\"name\": \"v1\", \"mixer\": \"toy\", \"ptx\": \"toy.v1.ptx\", \"chunk\": 16, \"prefix\": 32,\n"
	"     \"fused\": true, \"shared_sfu\": false, \"fused_output\": false, \"fused_write\": false,\n"
	"     \"materialized\": false, \"controller\": null,\n"
	"     \"vars\": [[\"K\", \"64\"], [\"H\", \"D/K\"], [\"T\", \"512\"], [\"NT\", \"cdiv(L,T)\"]],\n"
	"     \"rules\": [{\"expr\": \"D%64==0\", \"message\": \"width must be a multiple of 64\"},\n"
	"               {\"expr\": \"L<=1048576\", \"message\": \"at most 2^20 steps\"}],\n"
	"     \"workspaces\": [\n"
	"       {\"name\": \"agg\", \"bytes\": \"B*NT*D*8\", \"life\": \"forward\", \"zero\": true},\n"
	"       {\"name\": \"ckpt\", \"bytes\": \"B*NT*D*4\", \"life\": \"saved\", \"zero\": false},\n"
	"       {\"name\": \"part\", \"bytes\": \"NT*D*4\", \"life\": \"backward\", \"zero\": false}],\n"
	"     \"forward\": [\n"
	"       {\"kernel\": \"fwd_tiles\", \"grid\": [\"NT\", \"H\", \"B\"], \"block\": [256, 1, 1], \"smem\": \"0\",\n"
	"        \"bytes\": \"(B*L*D*2)+(B*NT*D*8)\",\n"
	"        \"flops\": \"B*L*D*256\",\n"
	"        \"args\": [\"x\", \"param:w\", \"ws:agg\", \"ws:ckpt\", \"i32:L\", \"i32:D\"]},\n"
	"       {\"kernel\": \"fwd_out\", \"grid\": [\"NT\", \"H\", 2], \"block\": [128, 2, 1], \"smem\": \"T*4\",\n"
	"        \"args\": [\"x\", \"y\", \"param:W\", \"ws:agg\", \"i64:B*L*D\"]}],\n"
	"     \"backward\": [\n"
	"       {\"kernel\": \"bwd\", \"grid\": [\"NT\", \"H\", \"B\"], \"block\": [256, 1, 1], \"smem\": \"0\",\n"
	"        \"args\": [\"x\", \"dy\", \"dx\", \"param:w\", \"grad:w\", \"grad:W\", \"ws:ckpt\", \"ws:part\"]}]},\n"
	"    {\"name\": \"v2\", \"mixer\": \"toy\", \"ptx\": \"toy.v1.ptx\",\n"
	"     \"vars\": [[\"K\", 64], [\"H\", \"cdiv(D,K)\"]], \"rules\": [], \"workspaces\": [],\n"
	"     \"forward\": [{\"kernel\": \"fwd_tiles\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"args\": []}],\n"
	"     \"backward\": []}\n"
	"  ]\n"
	"}\n";

static int write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* good with the first occurrence of `from` replaced by `to`, written as the manifest */
static int write_edit(const char *from, const char *to)
{
	const char *at = strstr(good, from);
	if (!at) {
		printf("FAIL test setup: \"%s\" is not in the manifest\n", from);
		failed++;
		return -1;
	}
	size_t n = strlen(good) + strlen(to) + 1;
	char *s = malloc(n);
	snprintf(s, n, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
	int rc = write_file(path, s);
	free(s);
	return rc;
}

/* good with its first launch's args [x, param:w] made `args`, loaded: that
 * launch's second arg, or NULL (err says why); *m the manifest, to free */
static const rt_arg *edited_arg(const char *args, recur_manifest **m, char *err, size_t n)
{
	*m = NULL;
	err[0] = 0;
	if (write_edit("\"args\": [\"x\", \"param:w\"", args) || recur_manifest_load(dir, m, err, n))
		return NULL;
	return &(*m)->variant[0].launch[0][0].arg[1];
}

/* the edited manifest must fail to load with the path and each word in the message */
static void must_fail(const char *what, const char *from, const char *to, const char *w1, const char *w2)
{
	char err[2048] = "", name[256];
	snprintf(name, sizeof name, "malformed: %s", what);
	if (from && write_edit(from, to))
		return;
	recur_manifest *m = NULL;
	int rc = recur_manifest_load(dir, &m, err, sizeof err);
	int ok = rc != 0 && m == NULL && strstr(err, path) && strstr(err, w1) && (!w2 || strstr(err, w2));
	verdict(ok, name, rc ? err : "loaded without error");
	recur_manifest_free(m);
}

static int close_to(double a, double b)
{
	return fabs(a - b) < 1e-12;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/recur_test_manifest_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("cannot create a temporary directory in %s: skipped\n", tmp && *tmp ? tmp : "/tmp");
		return 77;
	}
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	char ptx[320], err[2048] = "";
	snprintf(ptx, sizeof ptx, "%s/toy.v1.ptx", dir);
	write_file(ptx, "// not real PTX: this test never loads it\n");

	/* a missing manifest */
	must_fail("no manifest.json", NULL, NULL, "cannot read", NULL);

	write_file(path, good);
	recur_manifest *m = NULL;
	int rc = recur_manifest_load(dir, &m, err, sizeof err);
	verdict(rc == 0 && m, "the synthetic manifest loads", err);
	if (rc) {
		printf("%d passed, %d failed\n", passed, failed + 1);
		return 1;
	}
	verdict(recur_manifest_nvariants(m) == 2, "two variants", "");
	verdict(recur_manifest_find(m, "v1") == 0 && recur_manifest_find(m, "v2") == 1 &&
	        recur_manifest_find(m, "v3") == -1, "variant lookup by name", "");
	verdict(!strcmp(recur_manifest_variant_name(m, 1), "v2") &&
	        !strcmp(recur_manifest_variant_mixer(m, 0), "toy"), "variant name and mixer", "");
	verdict(recur_manifest_variant_name(m, 7) == NULL, "out-of-range variant gives NULL", "");
	verdict(!strcmp(recur_manifest_info(m, "target"), "sm_90") &&
	        !strcmp(recur_manifest_info(m, "ptx_isa"), "8.0"), "top-level info", "");

	/* parameters at a shape */
	recur_shape s = {1, 37, 128};
	verdict(recur_param_count(m, 0) == 4, "four parameters", "");
	verdict(!strcmp(recur_param_name(m, 0, 1), "W") && recur_param_name(m, 0, 4) == NULL,
	        "parameter names", "");
	long dims[RECUR_MAXDIM];
	int nd = recur_param_dims(m, 0, 1, s, dims);
	verdict(nd == 3 && dims[0] == 2 && dims[1] == 64 && dims[2] == 64, "W dims [H,K,K] = [2,64,64] at D=128", "");
	verdict(recur_param_dims(m, 0, 2, s, dims) == 0, "a scalar has 0 dims", "");
	err[0] = 0;
	verdict(recur_param_elems(m, 0, 0, s, err, sizeof err) == 128, "w has D elements", err);
	verdict(recur_param_elems(m, 0, 1, s, err, sizeof err) == 8192, "W has H*K*K elements", err);
	verdict(recur_param_elems(m, 0, 2, s, err, sizeof err) == 1, "a scalar has 1 element", err);
	recur_shape bad = {1, 37, 100};
	long n = recur_param_elems(m, 0, 1, bad, err, sizeof err);
	verdict(n == -1 && strstr(err, "width must be a multiple of 64"), "elements at a refused shape fail", err);
	double a = -1, b = -1;
	const char *kind = recur_param_init(m, 0, 0, s, &a, &b);
	verdict(kind && !strcmp(kind, "normal") && a == 0.5 && b == 0, "init normal 0.5", "");
	kind = recur_param_init(m, 0, 1, s, &a, &b);
	verdict(kind && !strcmp(kind, "normal") && close_to(a, 0.125), "init a = rsqrt(K) = 0.125", "");
	kind = recur_param_init(m, 0, 2, s, &a, &b);
	verdict(kind && !strcmp(kind, "const") && a == 2, "init const 2", "");
	kind = recur_param_init(m, 0, 3, s, &a, &b);
	verdict(kind && !strcmp(kind, "decay") && a == 0.9 && b == 0.999, "init decay [0.9, 0.999]", "");

	/* shape checks */
	char why[512] = "";
	verdict(recur_check_shape(m, 0, s, why, sizeof why) == 0, "B=1 L=37 D=128 is accepted", why);
	rc = recur_check_shape(m, 0, bad, why, sizeof why);
	verdict(rc == -1 && !strcmp(why, "shape B=1 L=37 D=100: width must be a multiple of 64"),
	        "B=1 L=37 D=100 is refused with the rule's message", why);
	recur_shape longer = {1, 2000000, 64};
	rc = recur_check_shape(m, 0, longer, why, sizeof why);
	verdict(rc == -1 && strstr(why, "at most 2^20 steps"), "the second rule refuses too", why);
	recur_shape zero_b = {0, 37, 128};
	rc = recur_check_shape(m, 0, zero_b, why, sizeof why);
	verdict(rc == -1 && strstr(why, "B must be >= 1"), "B=0 is refused first", why);
	recur_shape zero_d = {1, 37, 0};
	rc = recur_check_shape(m, 0, zero_d, why, sizeof why);
	verdict(rc == -1 && strstr(why, "D must be >= 1"), "D=0 is refused before any rule", why);
	why[0] = 0;
	verdict(recur_check_shape(m, 1, bad, why, sizeof why) == 0, "v2 (no rules) accepts D=100", why);
	/* a launch's declared bytes at a shape (achieved bandwidth in profiles) */
	double by = -1;
	err[0] = 0;
	rc = recur_launch_bytes(m, 0, 0, 0, s, &by, err, sizeof err);
	verdict(rc == 0 && by == 1.0 * 37 * 128 * 2 + 1.0 * 128 * 8, "bytes of fwd_tiles at 1x37x128 (x, and agg of one tile)", err);
	by = -1;
	rc = recur_launch_bytes(m, 0, 0, 1, s, &by, err, sizeof err);
	verdict(rc == 0 && by == 0, "a launch that declares no bytes: 0", err);
	rc = recur_launch_bytes(m, 0, 1, 5, s, &by, err, sizeof err);
	verdict(rc == -1 && strstr(err, "no backward launch 5"), "a launch that does not exist is named", err);
	/* and its tensor-core FLOP (achieved rates in profiles) */
	double fl = -1;
	rc = recur_launch_flops(m, 0, 0, 0, s, &fl, err, sizeof err);
	verdict(rc == 0 && fl == 1.0 * 37 * 128 * 256, "flops of fwd_tiles at 1x37x128: B*L*D*256", err);
	fl = -1;
	rc = recur_launch_flops(m, 0, 0, 1, s, &fl, err, sizeof err);
	verdict(rc == 0 && fl == 0, "a launch that declares no flops: 0", err);
	rc = recur_launch_flops(m, 0, 1, 5, s, &fl, err, sizeof err);
	verdict(rc == -1 && strstr(err, "no backward launch 5"), "flops of a launch that does not exist: named", err);
	/* a launch's plan from the manifest alone: fwd_out at 1x37x128 (T = 512: one tile, two heads) */
	recur_plan_info pi = {0};
	err[0] = 0;
	rc = recur_launch_plan(m, 0, 0, 1, s, &pi, err, sizeof err);
	verdict(rc == 0 && pi.kernel && !strcmp(pi.kernel, "fwd_out") && pi.grid[0] == 1 && pi.grid[1] == 2 &&
	        pi.grid[2] == 2 && pi.block == 256 && pi.dyn_smem == 2048 && pi.cluster == 1 &&
	        recur_launch_count(m, 0, 0) == 2 && recur_launch_count(m, 0, 1) == 1,
	        "the plan of fwd_out at 1x37x128: grid 1x2x2, 256 threads, T*4 shared bytes, no cluster", err);
	rc = recur_launch_plan(m, 0, 0, 0, bad, &pi, err, sizeof err);
	verdict(rc == -1 && strstr(err, "width must be a multiple of 64"), "no plan at a refused shape", err);
	recur_manifest_free(m);

	/* a cluster that does not divide the grid: loads, and the plan names it */
	if (write_edit("\"smem\": \"T*4\",", "\"smem\": \"T*4\", \"cluster\": \"H+1\",") == 0) {
		rc = recur_manifest_load(dir, &m, err, sizeof err);
		if (rc == 0) {
			recur_shape s2 = {1, 37, 128};
			rc = recur_launch_plan(m, 0, 0, 1, s2, &pi, err, sizeof err);
			rc = rc == -1 && strstr(err, "fwd_out") && strstr(err, "cluster \"H+1\" = 3") &&
			     strstr(err, "divide grid x = 1") ? 0 : -1;
			recur_manifest_free(m);
		}
		verdict(rc == 0, "a cluster that does not divide grid x: the plan names the kernel and expression", err);
		write_file(path, good);
	}

	/* the manifest file itself instead of its directory */
	err[0] = 0;
	rc = recur_manifest_load(path, &m, err, sizeof err);
	verdict(rc == 0, "loading by the manifest's own path", err);
	recur_manifest_free(m);

	/* malformed manifests */
	must_fail("bad JSON", "\"variants\": [", "\"variants\": [,", "bad JSON", NULL);
	must_fail("missing key ptx", "\"ptx\": \"toy.v1.ptx\", \"chunk\"", "\"chunk\"", "missing key \"ptx\"",
	          "variants[0] (v1)");
	/* SMS, the device's multiprocessors, may size a grid, never a workspace: a
	 * caller sizes its workspaces from the manifest alone */
	must_fail("a workspace sized by SMS", "\"bytes\": \"NT*D*4\"", "\"bytes\": \"SMS*D*4\"", "SMS",
	          "every device");
	must_fail("a workspace sized by SMS through two vars (T, then NT)", "[\"T\", \"512\"]",
	          "[\"T\", \"512+0*SMS\"]", "B*NT*D*8", "SMS");
	if (write_edit("\"grid\": [\"NT\", \"H\", 2]", "\"grid\": [\"NT\", \"H\", \"cdiv(SMS,2)\"]") == 0) {
		recur_manifest *ms = NULL;
		char e2[2048] = "";
		int r2 = recur_manifest_load(dir, &ms, e2, sizeof e2);
		recur_plan_info pi;
		r2 = r2 || recur_launch_plan(ms, 0, 0, 1, (recur_shape){2, 1000, 128}, &pi, e2, sizeof e2);
		if (!r2)
			snprintf(e2, sizeof e2, "grid z %u", pi.grid[2]);
		verdict(r2 == 0 && pi.grid[2] == 66, "a grid sized by SMS loads; its plan from the manifest alone takes 132",
		        e2);
		recur_manifest_free(ms);
	}
	must_fail("missing key forward in v2", "\"forward\": [{\"kernel\": \"fwd_tiles\", \"grid\": [1",
	          "\"fwd\": [{\"kernel\": \"fwd_tiles\", \"grid\": [1", "missing key \"forward\"", "variants[1] (v2)");
	must_fail("bad bytes expression", "\"bytes\": \"(B*L*D*2)+(B*NT*D*8)\"", "\"bytes\": \"B*Q\"", "bytes", "forward[0]");
	must_fail("bad flops expression", "\"flops\": \"B*L*D*256\"", "\"flops\": \"B*Z\"", "flops", "forward[0]");
	must_fail("bad arg kind", "\"i64:B*L*D\"", "\"f32:1\"", "unknown arg kind \"f32:1\"", "forward[1]");
	must_fail("unknown parameter", "\"grad:W\"", "\"grad:V\"", "grad:V", "backward[0]");
	/* TMA tensor maps: of x, y, dy or dx, a box of 1..256 rows of 64 columns */
	{
		recur_manifest *mt;
		const rt_arg *a = edited_arg("\"args\": [\"x\", \"tmap:x:64x64\", \"param:w\"", &mt, err, sizeof err);
		verdict(a && a->kind == RT_ARG_TMAP && a->index == 0 && a->box[0] == 64 && a->box[1] == 64,
		        "a tensor map arg (tmap:x:64x64) loads as x's with a box of 64 x 64", err);
		recur_manifest_free(mt);
	}
	must_fail("a tensor map of a parameter", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:w:64x64\", \"param:w\"", "a tensor map is of x, y, dy, dx or ws:NAME", "forward[0]");
	{
		recur_manifest *mt;
		const rt_arg *a = edited_arg("\"args\": [\"x\", \"tmap:ws:ckpt:128x64\", \"param:w\"", &mt, err, sizeof err);
		verdict(a && a->kind == RT_ARG_TMAP && a->tmap_ws && a->index == 1 && a->box[0] == 128,
		        "a tensor map of a workspace (tmap:ws:ckpt:128x64) loads as the workspace's", err);
		recur_manifest_free(mt);
	}
	{
		recur_manifest *mt;
		const rt_arg *a = edited_arg("\"args\": [\"x\", \"tmaprows:dx:64x64\", \"param:w\"", &mt, err, sizeof err);
		verdict(a && a->kind == RT_ARG_TMAP && a->tmap_rows && !a->tmap_ws && a->index == 3,
		        "a tensor map over B L rows (tmaprows:dx:64x64) loads as dx's", err);
		recur_manifest_free(mt);
	}
	must_fail("a tmaprows map without its box", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmaprows:x:64\", \"param:w\"", "expected tmaprows:TENSOR:RxC", "forward[0]");
	must_fail("a tensor map of no workspace", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:ws:nope:64x64\", \"param:w\"", "names no workspace", "forward[0]");
	must_fail("a tensor map of a backward workspace in the forward", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:ws:part:64x64\", \"param:w\"", "of life \"backward\" used in the forward",
	          "forward[0]");
	must_fail("a tensor map without its box", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:x\", \"param:w\"", "expected tmap:TENSOR:RxC", "forward[0]");
	must_fail("a tensor map's box of 300 rows", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:x:300x64\", \"param:w\"", "outside TMA's 1..256", "forward[0]");
	must_fail("a tensor map's box of 10^20 rows (past long)", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:x:99999999999999999999x64\", \"param:w\"", "outside TMA's 1..256",
	          "forward[0]");
	must_fail("a tensor map's box of -64 rows", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:x:-64x64\", \"param:w\"", "expected tmap:TENSOR:RxC", "forward[0]");
	must_fail("a tensor map's box of 32 columns", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:dy:64x32\", \"param:w\"", "the runtime encodes 64", "forward[0]");
	must_fail("a tensor map's box with a tail", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"tmap:y:64x64z\", \"param:w\"", "expected tmap:TENSOR:RxC", "forward[0]");
	must_fail("unknown workspace", "\"ws:part\"", "\"ws:nope\"", "ws:nope", "backward[0]");
	/* the arena's clear left to a kernel: the forward's first, told where the arena is */
	if (write_edit("\"args\": [\"x\", \"param:w\"", "\"clears\": true, \"args\": [\"zero:base\", \"x\", "
	               "\"zero:words\", \"param:w\"") == 0) {
		recur_manifest *mc = NULL;
		err[0] = 0;
		int rcc = recur_manifest_load(dir, &mc, err, sizeof err);
		verdict(rcc == 0 && mc, "the forward's first launch clears the arena (zero:base, zero:words)", err);
		recur_manifest_free(mc);
	}
	must_fail("clears on a later launch", "\"args\": [\"x\", \"y\", \"param:W\", \"ws:agg\", \"i64:B*L*D\"]",
	          "\"clears\": true, \"args\": [\"x\", \"zero:base\", \"zero:words\"]",
	          "only the forward's first launch may clear", "forward[1]");
	must_fail("clears without the arena's args", "\"args\": [\"x\", \"param:w\"",
	          "\"clears\": true, \"args\": [\"x\", \"param:w\"", "takes the args zero:base and zero:words",
	          "forward[0]");
	must_fail("the arena's args without clears", "\"args\": [\"x\", \"param:w\"",
	          "\"args\": [\"x\", \"zero:base\", \"zero:words\", \"param:w\"",
	          "are the args of a launch with \"clears\"", "forward[0]");
	must_fail("clears in the backward", "\"args\": [\"x\", \"dy\"",
	          "\"clears\": true, \"args\": [\"zero:base\", \"zero:words\", \"x\", \"dy\"",
	          "only the forward's first launch may clear", "backward[0]");
	must_fail("missing ptx file", "\"ptx\": \"toy.v1.ptx\", \"chunk\"", "\"ptx\": \"gone.ptx\", \"chunk\"",
	          "gone.ptx", "missing");
	must_fail("unknown workspace life", "\"life\": \"backward\"", "\"life\": \"forever\"",
	          "unknown workspace life \"forever\"", NULL);
	must_fail("a zeroed workspace of life each", "\"life\": \"forward\", \"zero\": true",
	          "\"life\": \"each\", \"zero\": true", "workspace \"agg\" of life \"each\" is zeroed", NULL);
	/* a workspace both passes make (recompute): the backward's launches may take it */
	if (write_edit("\"name\": \"ckpt\", \"bytes\": \"B*NT*D*4\", \"life\": \"saved\"",
	               "\"name\": \"ckpt\", \"bytes\": \"B*NT*D*4\", \"life\": \"each\"") == 0) {
		recur_manifest *me = NULL;
		err[0] = 0;
		int rce = recur_manifest_load(dir, &me, err, sizeof err);
		verdict(rce == 0 && me, "a workspace of life each, in both passes' launches", err);
		recur_manifest_free(me);
	}
	must_fail("forward uses a backward workspace", "\"ws:ckpt\", \"i32:L\"", "\"ws:part\", \"i32:L\"",
	          "life", "forward[0]");
	must_fail("wrong type", "\"block\": [128, 2, 1]", "\"block\": \"128\"", "must be an array", "forward[1]");
	must_fail("block too large", "\"block\": [128, 2, 1]", "\"block\": [1024, 2, 1]", "threads", NULL);
	must_fail("unknown name in a cluster", "\"smem\": \"T*4\",", "\"smem\": \"T*4\", \"cluster\": \"CS\",",
	          "unknown name 'CS'", "forward[1]");
	must_fail("unknown name in a grid", "[\"NT\", \"H\", 2]", "[\"NT\", \"Q\", 2]", "unknown name 'Q'", "grid[1]");
	must_fail("bad syntax in a var", "\"cdiv(L,T)\"", "\"cdiv(L,T\"", "NT", "expected");
	must_fail("var used before defined", "[\"K\", \"64\"], [\"H\", \"D/K\"]", "[\"H\", \"D/K\"], [\"K\", \"64\"]",
	          "unknown name 'K'", NULL);
	must_fail("unknown mixer", "\"mixer\": \"toy\", \"ptx\": \"toy.v1.ptx\",\n",
	          "\"mixer\": \"big\", \"ptx\": \"toy.v1.ptx\",\n", "mixer \"big\"", NULL);
	must_fail("unknown init kind", "\"kind\": \"const\"", "\"kind\": \"ones\"", "unknown init kind", "mixers.toy");
	must_fail("param dims naming no var", "[\"H\", \"K\", \"K\"]", "[\"H\", \"K\", \"J\"]", "unknown name 'J'",
	          "parameter W");
	must_fail("format 2", "\"format\": 1", "\"format\": 2", "format 2", NULL);
	must_fail("duplicate variant", "{\"name\": \"v2\"", "{\"name\": \"v1\"", "twice", NULL);
	must_fail("rule without message", ", \"message\": \"at most 2^20 steps\"", "", "missing key \"message\"",
	          "rules[1]");

	/* tidy up */
	unlink(path);
	unlink(ptx);
	rmdir(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
