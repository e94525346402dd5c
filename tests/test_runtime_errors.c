/* Runtime errors that must be messages, never crashes.
 *
 * Everywhere: with RECUR_LIBCUDA naming a missing file, recur_rt_open fails
 * with a message about libcuda; with it naming CUDA's stub library (whose
 * cuInit fails), it fails cleanly too.
 * With a real driver (recur_rt_open succeeds), a synthetic manifest with
 * hand-written PTX: a malformed module must fail to load with the variant,
 * the file and the JIT log in the message; a missing kernel must be named;
 * a zero grid, a refused shape, a null buffer and a backward without its
 * forward must fail before launching; and a correct variant must run its
 * forward and backward with the expected arguments (int32, int64, pointers,
 * a zeroed workspace), profiling and memory accounting. Without a driver that
 * part is skipped with the reason, and the test passes on the CPU checks.
 */
#include "recur.h"
#include "testfs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed;
static char dir[256];

static void verdict(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
	ok ? passed++ : failed++;
}

/* put(y, a, b, ws): y[0..4) = a (int32), y[8..16) = b (int64), y[16..24) = ws[0..8),
 * then ws[0..8) = b: a workspace that is not cleared again before the next
 * call shows b there */
static const char *ptx_good =
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .entry put(\n"
	"\t.param .u64 put_param_0,\n"
	"\t.param .u32 put_param_1,\n"
	"\t.param .u64 put_param_2,\n"
	"\t.param .u64 put_param_3\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<3>;\n"
	"\t.reg .b64 %rd<8>;\n"
	"\n"
	"\tmov.u32 %r2, %tid.x;\n"
	"\tsetp.ne.s32 %p1, %r2, 0;\n"
	"\t@%p1 bra DONE;\n"
	"\tld.param.u64 %rd1, [put_param_0];\n"
	"\tld.param.u32 %r1, [put_param_1];\n"
	"\tld.param.u64 %rd2, [put_param_2];\n"
	"\tld.param.u64 %rd3, [put_param_3];\n"
	"\tcvta.to.global.u64 %rd4, %rd1;\n"
	"\tcvta.to.global.u64 %rd5, %rd3;\n"
	"\tst.global.u32 [%rd4], %r1;\n"
	"\tst.global.u64 [%rd4+8], %rd2;\n"
	"\tld.global.u64 %rd6, [%rd5];\n"
	"\tst.global.u64 [%rd4+16], %rd6;\n"
	"\tst.global.u64 [%rd5], %rd2;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n";

/* the forward's first kernel clearing the arena (the manifest's "clears"):
 * clr(base, words) zeroes words 32-bit words from base (thread 0 alone);
 * clr_noop takes the same arguments and clears nothing, so a runtime that
 * still cleared ahead of it would show there */
#define PTX_CLR(name, body) \
	".visible .entry " name "(\n" \
	"\t.param .u64 " name "_param_0,\n" \
	"\t.param .u64 " name "_param_1\n" \
	")\n" \
	"{\n" \
	"\t.reg .pred %p<3>;\n" \
	"\t.reg .b32 %r<3>;\n" \
	"\t.reg .b64 %rd<8>;\n" \
	"\n" \
	"\tmov.u32 %r1, %tid.x;\n" \
	"\tsetp.ne.s32 %p1, %r1, 0;\n" \
	"\t@%p1 bra DONE;\n" \
	"\tld.param.u64 %rd1, [" name "_param_0];\n" \
	"\tld.param.u64 %rd2, [" name "_param_1];\n" \
	"\tcvta.to.global.u64 %rd3, %rd1;\n" \
	"\tmov.u64 %rd4, 0;\n" \
	"\tmov.u32 %r2, 0;\n" \
	body \
	"DONE:\n" \
	"\tret;\n" \
	"}\n"

static const char *ptx_clear_tail =
	PTX_CLR("clr",
		"LOOP:\n"
		"\tsetp.ge.u64 %p2, %rd4, %rd2;\n"
		"\t@%p2 bra DONE;\n"
		"\tshl.b64 %rd5, %rd4, 2;\n"
		"\tadd.s64 %rd6, %rd3, %rd5;\n"
		"\tst.global.u32 [%rd6], %r2;\n"
		"\tadd.s64 %rd4, %rd4, 1;\n"
		"\tbra.uni LOOP;\n")
	"\n"
	PTX_CLR("clr_noop", "");

static const char *ptx_broken =
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .entry put()\n"
	"{\n"
	"\tthis_is_not_an_instruction %r1, 42;\n"
	"\tret;\n"
	"}\n";

#define VARIANT(name, ptx, grid0, fwd_kernel) VARIANT_C(name, ptx, grid0, fwd_kernel, "1")
#define VARIANT_C(name, ptx, grid0, fwd_kernel, cluster) \
	"    {\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"" ptx "\",\n" \
	"     \"vars\": [[\"N\", \"L*D\"]],\n" \
	"     \"rules\": [{\"expr\": \"D%4==0\", \"message\": \"D must be a multiple of 4\"}],\n" \
	"     \"workspaces\": [{\"name\": \"w\", \"bytes\": \"64\", \"life\": \"saved\", \"zero\": true},\n" \
	"                    {\"name\": \"b\", \"bytes\": \"8*B\", \"life\": \"backward\", \"zero\": true}],\n" \
	"     \"forward\": [{\"kernel\": \"" fwd_kernel "\", \"grid\": [\"" grid0 "\", 1, 1], \"block\": [32, 1, 1],\n" \
	"                  \"cluster\": \"" cluster "\",\n" \
	"                  \"args\": [\"y\", \"i32:N\", \"i64:B*L*D*1000000000\", \"ws:w\"]}],\n" \
	"     \"backward\": [{\"kernel\": \"put\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],\n" \
	"                   \"args\": [\"dx\", \"i32:N+1\", \"i64:7\", \"ws:b\"]}]}"

/* put's variant behind a first kernel that clears the arena */
#define SELFCLEAR(name, clr) \
	"    {\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"clear.ptx\",\n" \
	"     \"vars\": [[\"N\", \"L*D\"]], \"rules\": [],\n" \
	"     \"workspaces\": [{\"name\": \"w\", \"bytes\": \"64\", \"life\": \"saved\", \"zero\": true},\n" \
	"                    {\"name\": \"b\", \"bytes\": \"8*B\", \"life\": \"backward\", \"zero\": true}],\n" \
	"     \"forward\": [{\"kernel\": \"" clr "\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"clears\": true,\n" \
	"                  \"args\": [\"zero:base\", \"zero:words\"]},\n" \
	"                 {\"kernel\": \"put\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],\n" \
	"                  \"args\": [\"y\", \"i32:N\", \"i64:B*L*D*1000000000\", \"ws:w\"]}],\n" \
	"     \"backward\": [{\"kernel\": \"put\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],\n" \
	"                   \"args\": [\"dx\", \"i32:N+1\", \"i64:7\", \"ws:b\"]}]}"

static const char *manifest =
	"{\"format\": 1, \"target\": \"sm_90\", \"ptx_isa\": \"8.0\",\n"
	" \"mixers\": {\"toy\": {\"params\": []}},\n"
	" \"variants\": [\n"
	VARIANT("good", "good.ptx", "1", "put") ",\n"
	VARIANT("broken", "broken.ptx", "1", "put") ",\n"
	VARIANT("nokernel", "good.ptx", "1", "absent") ",\n"
	VARIANT("zerogrid", "good.ptx", "L-L", "put") ",\n"
	VARIANT_C("clustered", "good.ptx", "4", "put", "2") ",\n"
	VARIANT_C("oddcluster", "good.ptx", "4", "put", "L") ",\n"
	SELFCLEAR("selfclear", "clr") ",\n"
	SELFCLEAR("noclear", "clr_noop") "\n"
	" ]}\n";

/* y (forward) and dx (backward) as the toy kernel leaves them: a and b
 * its arguments, w what it read from its workspace */
static int read_put(recur_rt *rt, CUdeviceptr out, int32_t *a, int64_t *b, int64_t *w, char *err, size_t n)
{
	unsigned char host[64];
	memset(host, 0xff, sizeof host);
	int rc = recur_memcpy_dtoh(rt, host, out, 64, err, n);
	memcpy(a, host, 4);
	memcpy(b, host + 8, 8);
	memcpy(w, host + 16, 8);
	return rc;
}

static int poison(recur_rt *rt, CUdeviceptr out, char *err, size_t n)
{
	unsigned char host[64];
	memset(host, 0xff, sizeof host);
	return recur_memcpy_htod(rt, out, host, 64, err, n);
}

/* runs the forward (bwd 0) or backward, then requires what the toy kernel
 * read from its workspace (out[16..24)) to be 0: cleared before the call */
static void verdict_ws_clear(recur_rt *rt, recur_variant *v, int bwd, recur_shape s, const recur_io *io,
                             CUdeviceptr out, const char *what)
{
	char err[2048] = "", info[2300];
	int32_t a;
	int64_t b, w = -1;
	int rc = bwd ? recur_backward(v, s, io, 0, err, sizeof err) : recur_forward(v, s, io, 0, err, sizeof err);
	if (!rc)
		rc = recur_sync(rt, err, sizeof err);
	if (!rc)
		rc = read_put(rt, out, &a, &b, &w, err, sizeof err);
	snprintf(info, sizeof info, "ws %lld%s%s", (long long)w, rc ? ": " : "", rc ? err : "");
	verdict(rc == 0 && w == 0, what, info);
}

/* Graphs: the same launches and clears as the calls, on every replay; the
 * state a replay leaves; the workspaces held while a graph lives. */
static void graph_part(recur_rt *rt, recur_variant *v, recur_shape s, const recur_io *io, CUdeviceptr y,
                       CUdeviceptr dx)
{
	char err[4096] = "", info[4400];
	recur_graph *g = NULL, *gb = NULL;
	int rc = recur_graph_create(v, s, io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, sizeof err);
	verdict(rc != 0 && !g && has(err, "profiling") && has(err, "good"), "GPU: no graph with profiling on", err);
	recur_set_profiling(v, 0);
	rc = recur_graph_create(v, s, io, 4, &g, err, sizeof err);
	verdict(rc != 0 && !g && has(err, "passes 4"), "GPU: a graph of unknown passes is refused", err);

	rc = recur_graph_create(v, s, io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, sizeof err);
	snprintf(info, sizeof info, "%d nodes%s%s", g ? recur_graph_nodes(g) : -1, rc ? ": " : "", rc ? err : "");
	verdict(rc == 0 && g && recur_graph_nodes(g) == 3, "GPU: a graph of forward and backward: one clear, two kernels",
	        info);
	if (!g)
		return;
	/* twice: the second replay's forward must clear what the first's backward wrote */
	int32_t fa = 0, ba = 0;
	int64_t fb = 0, fw = -1, bb = 0, bw = -1;
	rc = poison(rt, y, err, sizeof err) || poison(rt, dx, err, sizeof err) ||
	     recur_graph_launch(g, 0, err, sizeof err) || recur_graph_launch(g, 0, err, sizeof err) ||
	     recur_sync(rt, err, sizeof err) || read_put(rt, y, &fa, &fb, &fw, err, sizeof err) ||
	     read_put(rt, dx, &ba, &bb, &bw, err, sizeof err);
	snprintf(info, sizeof info, "y: %d %lld ws %lld; dx: %d %lld ws %lld%s%s", fa, (long long)fb, (long long)fw, ba,
	         (long long)bb, (long long)bw, rc ? ": " : "", rc ? err : "");
	verdict(rc == 0 && fa == 12 && fb == 24000000000LL && fw == 0 && ba == 13 && bb == 7 && bw == 0,
	        "GPU: two replays of the graph: the calls' arguments, the workspaces clear each time", info);

	rc = recur_variant_trim(v, err, sizeof err);
	verdict(rc != 0 && has(err, "graph"), "GPU: trim is refused while a graph holds the workspaces", err);
	/* the replay left a dirty backward workspace and the forward's saved state */
	verdict_ws_clear(rt, v, 1, s, io, dx, "GPU: a backward after a replay runs and clears what the graph's wrote");
	recur_shape big = { 3, 3, 4 };
	rc = recur_forward(v, big, io, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "graph") && has(err, "B=3"), "GPU: growing the workspaces is refused while a graph "
	        "holds them", err);
	/* (the refused call ended the saved state: a forward again) */
	rc = recur_forward(v, s, io, 0, err, sizeof err) ||
	     recur_graph_create(v, s, io, RECUR_GRAPH_BACKWARD, &gb, err, sizeof err);
	snprintf(info, sizeof info, "%d nodes%s%s", gb ? recur_graph_nodes(gb) : -1, rc ? ": " : "", rc ? err : "");
	verdict(rc == 0 && gb && recur_graph_nodes(gb) == 2, "GPU: a graph of the backward alone clears its own workspace",
	        info);
	rc = rc || poison(rt, dx, err, sizeof err) || recur_graph_launch(gb, 0, err, sizeof err) ||
	     recur_graph_launch(gb, 0, err, sizeof err) || recur_sync(rt, err, sizeof err) ||
	     read_put(rt, dx, &ba, &bb, &bw, err, sizeof err);
	snprintf(info, sizeof info, "dx: %d %lld ws %lld%s%s", ba, (long long)bb, (long long)bw, rc ? ": " : "",
	         rc ? err : "");
	verdict(rc == 0 && ba == 13 && bb == 7 && bw == 0, "GPU: two replays of the backward alone, clear each time", info);
	recur_graph_free(gb);
	recur_graph_free(g);
	rc = recur_forward(v, s, io, 0, err, sizeof err);
	verdict(rc == 0, "GPU: the variant runs on once its graphs are freed", rc ? err : "");
	recur_set_profiling(v, 1);
}

/* A forward whose first kernel clears the arena: no memset ahead of it
 * (clr_noop leaves both workspaces dirty from the calls before), and what
 * clr clears is all a forward+backward needs (w for the forward, b for the
 * backward after it, both written by the first forward+backward). */
static void clears_part(recur_rt *rt, recur_manifest *m, recur_shape s, const recur_io *io, CUdeviceptr y,
                        CUdeviceptr dx)
{
	static const char *const names[2] = {"selfclear", "noclear"};
	for (int k = 0; k < 2; k++) {
		char err[2048] = "", info[2400];
		recur_variant *v = NULL;
		int rc = recur_variant_load(rt, m, names[k], &v, err, sizeof err);
		int64_t wf = -1, wb = -1;
		int32_t a;
		int64_t b;
		for (int r = 0; r < 2 && !rc; r++) {
			rc = recur_forward(v, s, io, 0, err, sizeof err) || recur_sync(rt, err, sizeof err) ||
			     read_put(rt, y, &a, &b, &wf, err, sizeof err) || recur_backward(v, s, io, 0, err, sizeof err) ||
			     recur_sync(rt, err, sizeof err) || read_put(rt, dx, &a, &b, &wb, err, sizeof err);
		}
		/* the second round reads what the first wrote, unless cleared */
		snprintf(info, sizeof info, "second forward+backward read ws w %lld, ws b %lld%s%s", (long long)wf,
		         (long long)wb, rc ? ": " : "", rc ? err : "");
		if (k == 0)
			verdict(rc == 0 && wf == 0 && wb == 0, "GPU: a forward's first kernel that clears the arena clears "
			        "both passes' zeroed workspaces", info);
		else
			verdict(rc == 0 && wf == (int64_t)s.B * s.L * s.D * 1000000000LL && wb == 7,
			        "GPU: behind a first kernel that clears, the runtime clears nothing itself", info);
		recur_variant_free(v);
	}
}

static void gpu_part(recur_rt *rt)
{
	char err[8192] = "", name[256] = "";
	int ver = 0;
	recur_rt_device_name(rt, name, sizeof name);
	recur_rt_driver_version(rt, &ver);
	printf("device: %s, driver %d\n", name, ver);

	write_in(dir, "good.ptx", ptx_good);
	size_t nclr = strlen(ptx_good) + strlen(ptx_clear_tail) + 2;
	char *clr = malloc(nclr);
	if (clr) {
		snprintf(clr, nclr, "%s\n%s", ptx_good, ptx_clear_tail);
		write_in(dir, "clear.ptx", clr);
		free(clr);
	}
	write_in(dir, "broken.ptx", ptx_broken);
	write_in(dir, "manifest.json", manifest);
	recur_manifest *m = NULL;
	if (recur_manifest_load(dir, &m, err, sizeof err)) {
		verdict(0, "GPU: the synthetic manifest loads", err);
		return;
	}
	recur_variant *v = NULL;

	/* a malformed module: variant, file and JIT log in the message */
	int rc = recur_variant_load(rt, m, "broken", &v, err, sizeof err);
	const char *log = strstr(err, "JIT log:");
	verdict(rc != 0 && !v && has(err, "broken") && has(err, "broken.ptx") && log && !has(log, "(empty)") &&
	        has(err, "cuModuleLoadDataEx"), "GPU: malformed PTX fails with the variant, file and JIT log", err);

	/* a kernel the module does not define */
	rc = recur_variant_load(rt, m, "nokernel", &v, err, sizeof err);
	verdict(rc != 0 && has(err, "absent") && has(err, "put") && has(err, "nokernel"),
	        "GPU: a missing kernel is named, with the module's entries", err);
	rc = recur_variant_load(rt, m, "nosuch", &v, err, sizeof err);
	verdict(rc != 0 && has(err, "nosuch") && has(err, "good"), "GPU: an unknown variant lists the known ones", err);

	/* a correct variant */
	rc = recur_variant_load(rt, m, "good", &v, err, sizeof err);
	verdict(rc == 0 && v, "GPU: a hand-written PTX variant loads", rc ? err : "");
	if (rc) {
		recur_manifest_free(m);
		return;
	}
	recur_kernel_info ki;
	recur_variant_kernel(v, 0, &ki);
	char info[256];
	snprintf(info, sizeof info, "%s: %d registers, %d local bytes, %d static smem, %d threads", ki.name,
	         ki.registers, ki.local_bytes, ki.static_smem, ki.max_threads);
	verdict(recur_variant_nkernels(v) == 1 && !strcmp(ki.name, "put") && ki.registers > 0 &&
	        ki.max_threads >= 32, "GPU: kernel info", info);

	CUdeviceptr y = 0, dx = 0;
	if (recur_alloc(rt, 64, &y, err, sizeof err) || recur_alloc(rt, 64, &dx, err, sizeof err)) {
		verdict(0, "GPU: allocating buffers", err);
		goto out;
	}
	size_t base = recur_mem_current(rt);
	verdict(base == 128, "GPU: two 64-byte buffers are counted", "");
	recur_memset_u8(rt, y, 0xff, 64, err, sizeof err);
	recur_memset_u8(rt, dx, 0xff, 64, err, sizeof err);
	recur_io io = {0};
	io.x = y;    /* unused by these kernels; any non-null pointer */
	io.y = y;
	io.dy = dx;
	io.dx = dx;

	recur_shape s = {2, 3, 4}, refused = {2, 3, 6};
	rc = recur_backward(v, s, &io, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "without a forward"), "GPU: backward before any forward is refused", err);
	rc = recur_forward(v, refused, &io, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "D must be a multiple of 4") && has(err, "good"),
	        "GPU: a refused shape fails with the rule's message", err);
	recur_io null_y = io;
	null_y.y = 0;
	rc = recur_forward(v, s, &null_y, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "null") && has(err, "put"), "GPU: a null buffer is refused", err);
	recur_io odd = io;
	odd.y = y + 8;
	rc = recur_forward(v, s, &odd, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "16-byte aligned") && has(err, "put") && has(err, "\"y\""),
	        "GPU: a misaligned buffer is refused, named", err);
	unsigned char host[64];
	recur_sync(rt, err, sizeof err);
	recur_memcpy_dtoh(rt, host, y, 64, err, sizeof err);
	int untouched = 1;
	for (int i = 0; i < 64; i++)
		untouched &= host[i] == 0xff;
	verdict(untouched, "GPU: refused calls launched nothing", "");

	recur_set_profiling(v, 1);
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	if (!rc)
		rc = recur_sync(rt, err, sizeof err);
	verdict(rc == 0, "GPU: forward runs", rc ? err : "");
	int32_t a;
	int64_t b, w;
	read_put(rt, y, &a, &b, &w, err, sizeof err);
	snprintf(info, sizeof info, "i32 %d, i64 %lld, ws %lld", a, (long long)b, (long long)w);
	verdict(a == 12 && b == 24000000000LL && w == 0, "GPU: forward arguments (i32 L*D, i64, zeroed ws)", info);
	const char *names[4];
	float ms[4] = {-1};
	int n = recur_variant_last_times(v, names, ms, 4);
	snprintf(info, sizeof info, "%d launches, first %s %.4f ms", n, n > 0 ? names[0] : "-", n > 0 ? ms[0] : -1.0);
	verdict(n == 1 && !strcmp(names[0], "put") && ms[0] >= 0, "GPU: profiling times each launch", info);
	recur_launch_info li = {0};
	rc = recur_variant_last_launch(v, 0, &li);
	snprintf(info, sizeof info, "%s grid %u,%u,%u block %d smem %u, %d blocks/SM", li.kernel ? li.kernel : "-",
	         li.grid[0], li.grid[1], li.grid[2], li.block, li.dyn_smem, li.blocks_per_sm);
	verdict(rc == 0 && li.kernel && !strcmp(li.kernel, "put") && li.block >= 1 && li.grid[0] >= 1 &&
	        li.blocks_per_sm >= 1 && recur_variant_last_launch(v, 1, &li) == -1,
	        "GPU: the profiled launch's geometry and occupancy; an index past the last is refused", info);
	/* the zeroed workspaces share one arena: w's 64 bytes, then b's 8 B = 16
	 * at the next 256-byte boundary */
	snprintf(info, sizeof info, "current %zu over the buffers, workspaces %zu", recur_mem_current(rt) - base,
	         recur_variant_workspace_bytes(v));
	verdict(recur_mem_current(rt) == base + 272 && recur_variant_workspace_bytes(v) == 272,
	        "GPU: the workspaces are counted", info);

	recur_shape other = {1, 3, 4};
	rc = recur_backward(v, other, &io, 0, err, sizeof err);
	verdict(rc != 0 && has(err, "last forward"), "GPU: backward at another shape than the forward is refused", err);
	rc = recur_backward(v, s, &io, 0, err, sizeof err);
	if (!rc)
		rc = recur_sync(rt, err, sizeof err);
	if (!rc)
		rc = read_put(rt, dx, &a, &b, &w, err, sizeof err);
	snprintf(info, sizeof info, "i32 %d, i64 %lld, ws %lld%s%s", a, (long long)b, (long long)w, rc ? ": " : "",
	         rc ? err : "");
	verdict(rc == 0 && a == 13 && b == 7 && w == 0, "GPU: backward runs with its own arguments, its workspace clear",
	        info);

	/* the forward cleared the backward's workspace too; a second backward
	 * (which the first wrote 7 into) must clear it itself, and a second
	 * forward what the first wrote into its own */
	verdict_ws_clear(rt, v, 1, s, &io, dx, "GPU: a second backward clears its workspace again");
	verdict_ws_clear(rt, v, 0, s, &io, y, "GPU: a second forward clears its workspace again");

	graph_part(rt, v, s, &io, y, dx);

	rc = recur_variant_trim(v, err, sizeof err);
	verdict(rc == 0 && recur_mem_current(rt) == base && recur_mem_peak(rt) == base + 272,
	        "GPU: trim frees the workspace; the peak remembers it", rc ? err : "");
	recur_mem_reset_peak(rt);
	verdict(recur_mem_peak(rt) == base, "GPU: reset peak", "");

	/* a zero grid dimension is an error naming the kernel and the expression */
	recur_variant *z = NULL;
	rc = recur_variant_load(rt, m, "zerogrid", &z, err, sizeof err);
	if (!rc)
		rc = recur_forward(z, s, &io, 0, err, sizeof err) ? 1 : 0;
	verdict(rc == 1 && has(err, "zerogrid") && has(err, "put") && has(err, "grid[0]") && has(err, "L-L"),
	        "GPU: a zero grid dimension names the kernel and expression", err);
	recur_variant_free(z);

	/* clusters: a launch in clusters of 2 runs (cuLaunchKernelEx); a cluster
	 * that does not divide the grid is refused before launching, named */
	recur_variant *c = NULL;
	memset(host, 0, sizeof host);
	recur_memcpy_htod(rt, y, host, 64, err, sizeof err);
	rc = recur_variant_load(rt, m, "clustered", &c, err, sizeof err);
	if (!rc)
		recur_set_profiling(c, 1);
	if (!rc)
		rc = recur_forward(c, s, &io, 0, err, sizeof err);
	if (!rc)
		rc = recur_sync(rt, err, sizeof err);
	recur_memcpy_dtoh(rt, host, y, 64, err, sizeof err);
	memcpy(&a, host, 4);
	verdict(rc == 0 && a == 12, "GPU: a launch in clusters of 2 runs", rc ? err : "");
	memset(&li, 0, sizeof li);
	rc = c ? recur_variant_last_launch(c, 0, &li) : -1;
	snprintf(info, sizeof info, "cluster %d, %d clusters at once", li.cluster, li.max_clusters);
	verdict(rc == 0 && li.cluster == 2 && li.max_clusters >= 1, "GPU: profiling reports the cluster and its occupancy",
	        info);
	recur_variant_free(c);
	c = NULL;
	rc = recur_variant_load(rt, m, "oddcluster", &c, err, sizeof err);
	if (!rc)
		rc = recur_forward(c, s, &io, 0, err, sizeof err) ? 1 : 0;
	verdict(rc == 1 && has(err, "oddcluster") && has(err, "put") && has(err, "cluster \"L\" = 3") &&
	        has(err, "grid x = 4"), "GPU: a cluster that does not divide the grid names the kernel and expression", err);
	recur_variant_free(c);

	clears_part(rt, m, s, &io, y, dx);

	CUevent e0, e1;
	float t = -1;
	rc = recur_event_create(rt, &e0, err, sizeof err) || recur_event_create(rt, &e1, err, sizeof err) ||
	     recur_event_record(rt, e0, 0, err, sizeof err) || recur_event_record(rt, e1, 0, err, sizeof err) ||
	     recur_event_elapsed_ms(rt, e0, e1, &t, err, sizeof err);
	verdict(rc == 0 && t >= 0, "GPU: events", rc ? err : "");
	recur_event_destroy(rt, e0);
	recur_event_destroy(rt, e1);
out:
	recur_free(rt, y);
	recur_free(rt, dx);
	verdict(recur_mem_current(rt) == 0 || recur_mem_current(rt) == recur_variant_workspace_bytes(v),
	        "GPU: freed buffers are uncounted", "");
	recur_variant_free(v);
	verdict(recur_mem_current(rt) == 0, "GPU: freeing the variant frees its workspaces", "");
	recur_manifest_free(m);
}

int main(void)
{
	char err[2048] = "";
	recur_rt *rt = (recur_rt *)1;
	const char *saved = getenv("RECUR_LIBCUDA");
	char *keep = saved ? strdup(saved) : NULL;

	setenv("RECUR_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	int rc = recur_rt_open(&rt, 0, err, sizeof err);
	verdict(rc != 0 && rt == NULL && has(err, "libcuda") && has(err, "/nonexistent/libcuda.so.1") &&
	        has(err, "gen works without one"), "a missing libcuda is a clear error", err);

	const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
	if (access(stub, R_OK) == 0) {
		setenv("RECUR_LIBCUDA", stub, 1);
		rt = (recur_rt *)1;
		rc = recur_rt_open(&rt, 0, err, sizeof err);
		verdict(rc != 0 && rt == NULL && has(err, "cuInit failed") && has(err, "CUDA_ERROR_"),
		        "CUDA's stub library fails cleanly in cuInit", err);
	} else {
		printf("SKIP the stub-library check: %s is absent\n", stub);
	}

	if (keep)
		setenv("RECUR_LIBCUDA", keep, 1);
	else
		unsetenv("RECUR_LIBCUDA");
	free(keep);
	rt = NULL;
	if (recur_rt_open(&rt, 0, err, sizeof err)) {
		printf("SKIP the GPU checks (malformed PTX and its JIT log, launches): no usable driver here: %s\n", err);
	} else {
		verdict(1, "the real driver opens", "");
		char err2[512];
		recur_rt *none = NULL;
		rc = recur_rt_open(&none, 4096, err2, sizeof err2);
		verdict(rc != 0 && has(err2, "device 4096"), "a device that does not exist is refused", err2);
		if (make_test_dir(dir, sizeof dir, "recur_test_rt"))
			verdict(0, "creating a temporary directory", dir);
		else
			gpu_part(rt);
		recur_rt_close(rt);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
