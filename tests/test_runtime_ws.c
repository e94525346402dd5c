/* Caller-provided workspaces (recur_workspace_sizes, recur_forward_ws,
 * recur_backward_ws) on the host stand-in for the driver (hostcu.h):
 *
 * - The sizes from the manifest alone match the layout the contract
 *   promises, computed here on its own: the saved region holds the arena
 *   of the zeroed workspaces then the saved ones, each on a 256-byte
 *   boundary; the scratch region the larger pass's others.
 * - Each kernel gets pointers into the right region at the right offset,
 *   every one inside the caller's allocation with room for its bytes; the
 *   variant allocates nothing and its own saved state is untouched.
 * - Two forwards into two saved regions, then both backwards: each
 *   backward reads its own forward's region.
 * - The forward clears the arena and nothing else of the saved region;
 *   the backward clears its part of the arena on every call.
 * - A missing, misaligned or too small region, a null ws, a shape the
 *   variant refuses: each refused before any launch, with a message naming
 *   the region, the bytes and the shape.
 */
#include "hostsession.h"
#include "check.h"
#include "testfs.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];


#define WS(n, bytes, life, zero) "{\"name\": \"" n "\", \"bytes\": \"" bytes "\", \"life\": \"" life "\", \"zero\": " zero "}"
#define VARIANT(name, ws)                                                                                              \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [[\"N\", \"L*D\"]],\n"             \
	" \"rules\": [{\"expr\": \"D%4==0\", \"message\": \"D must be a multiple of 4\"}],\n"                          \
	" \"workspaces\": [" ws "],\n"                                                                                 \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B*4\", 1, 1], \"block\": [64, 1, 1],\n"                     \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:a\", \"ws:b\", \"i32:N\", \"i64:B*L*D\"]}],\n"                  \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],\n"                          \
	"   \"args\": [\"dx\", \"dy\", \"grad:w\", \"ws:c\", \"ws:d\"]}]}"

/* each: e made by a kernel both passes run (life "each", recompute), a
 * forward scratch, c saved, d backward scratch */
#define VARIANT_EACH                                                                                                   \
	"{\"name\": \"each\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [[\"N\", \"L*D\"]],\n"     \
	" \"rules\": [],\n"                                                                                             \
	" \"workspaces\": [" WS("a", "B*100", "forward", "false") "," WS("e", "L*D*2", "each", "false") ","               \
	WS("c", "L*4", "saved", "false") "," WS("d", "D*8", "backward", "false") "],\n"                                    \
	" \"forward\": [{\"kernel\": \"each\", \"grid\": [\"B*4\", 1, 1], \"block\": [64, 1, 1],\n"                    \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:a\", \"ws:e\", \"ws:c\", \"i32:N\"]}],\n"                      \
	" \"backward\": [{\"kernel\": \"each\", \"grid\": [\"B*4\", 1, 1], \"block\": [64, 1, 1],\n"                   \
	"   \"args\": [\"y\", \"x\", \"param:w\", \"ws:d\", \"ws:e\", \"ws:c\", \"i32:N\"]}]}"

/* mixed: a forward scratch, b zeroed and saved (the arena), c saved, d
 * backward scratch; zeroed: every one zeroed, d the backward's part of
 * the arena */
static const char *manifest =
        "{\"format\": 1, \"mixers\": {\"toy\": {\"params\": [{\"name\": \"w\", \"dims\": [\"D\"],\n"
        "  \"init\": {\"kind\": \"normal\", \"a\": \"rsqrt(D)\"}}]}},\n"
        " \"variants\": [\n" VARIANT("mixed", WS("a", "B*100", "forward", "false") ","
                                     WS("b", "B*L*4", "saved", "true") "," WS("c", "L*D*2", "saved", "false") ","
                                     WS("d", "D*8", "backward", "false")) ",\n"
        VARIANT("zeroed", WS("a", "B*12", "forward", "true") "," WS("b", "B*L*4", "saved", "true") ","
                          WS("c", "L*4", "saved", "true") "," WS("d", "D*8", "backward", "true")) ",\n"
        VARIANT_EACH "\n ]}\n";

static size_t up(size_t n)
{
	return (n + 255) / 256 * 256;
}

/* argument k of the last recorded launch, as the kernel got it */
static CUdeviceptr arg(int k)
{
	CUdeviceptr a;
	memcpy(&a, hc.launch[(hc.nlaunch - 1) % HC_MAXLAUNCH].params[k], 8);
	return a;
}

static unsigned char byte_at(Session *S, CUdeviceptr p)
{
	unsigned char b = 0xee;
	char err[256];
	recur_memcpy_dtoh(S->rt, &b, p, 1, err, sizeof err);
	return b;
}

static void sizes(Session *S, recur_shape s)
{
	char err[1024] = "";
	recur_ws_sizes z = {0};
	int vi = recur_manifest_find(S->m, "mixed");
	size_t B = (size_t)s.B, L = (size_t)s.L, D = (size_t)s.D;
	size_t arena = (B * L * 4 + 3) / 4 * 4, saved = up(arena) + L * D * 2;
	size_t scratch = B * 100 > D * 8 ? B * 100 : D * 8;
	int rc = recur_workspace_sizes(S->m, vi, s, &z, err, sizeof err);
	check(rc == 0 && z.saved == saved && z.scratch == scratch,
	      "sizes from the manifest: saved = arena + saved workspaces, scratch = the larger pass's",
	      "saved %zu (expected %zu), scratch %zu (expected %zu) %s", z.saved, saved, z.scratch, scratch, err);
	vi = recur_manifest_find(S->m, "zeroed");
	rc = recur_workspace_sizes(S->m, vi, s, &z, err, sizeof err);
	size_t all = up(up(up(B * 12) + B * L * 4) + L * 4) + D * 8;
	check(rc == 0 && z.saved == all && z.scratch == 0, "every workspace zeroed: all in the saved region's arena",
	      "saved %zu (expected %zu), scratch %zu %s", z.saved, all, z.scratch, err);
	rc = recur_workspace_sizes(S->m, vi, (recur_shape){2, 37, 62}, &z, err, sizeof err);
	check(rc != 0 && has(err, "zeroed") && has(err, "D must be a multiple of 4") && has(err, "D=62"),
	      "a shape the variant refuses: its rule's message", "%s", err);
	rc = recur_workspace_sizes(S->m, 7, s, &z, err, sizeof err);
	check(rc != 0 && has(err, "variant index 7"), "a variant index out of range: named", "%s", err);
}

static void layout(Session *S, recur_shape s)
{
	char err[1024] = "", why[1024] = "";
	int vi = recur_manifest_find(S->m, "mixed");
	recur_ws_sizes z;
	recur_variant *v = NULL;
	CUdeviceptr sv[2] = {0, 0}, sc = 0;
	int rc = recur_workspace_sizes(S->m, vi, s, &z, err, sizeof err) ||
	         recur_variant_load(S->rt, S->m, "mixed", &v, err, sizeof err) ||
	         recur_alloc(S->rt, z.saved, &sv[0], err, sizeof err) ||
	         recur_alloc(S->rt, z.saved, &sv[1], err, sizeof err) || recur_alloc(S->rt, z.scratch, &sc, err, sizeof err);
	check(rc == 0, "the variant loads and the caller's regions are allocated", "%s", err);
	if (rc) {
		recur_variant_free(v);
		return;
	}
	size_t L = (size_t)s.L, D = (size_t)s.D, coff = up((size_t)s.B * L * 4);
	for (int k = 0; k < 2; k++)
		recur_memset_u8(S->rt, sv[k], 0xff, z.saved, err, sizeof err);
	int held = hc.nblk;
	CUdeviceptr got[2][2];
	for (int k = 0; k < 2; k++) {
		recur_ws w = {sv[k], sc, z.saved, z.scratch};
		hc.nlaunch = 0;
		rc = recur_forward_ws(v, s, &S->io, &w, 0, err, sizeof err) || hc_check_pass(S->m, vi, RT_FWD, s, why, sizeof why);
		got[k][0] = rc ? 0 : arg(3), got[k][1] = rc ? 0 : arg(4);
		check(rc == 0 && got[k][0] == sc && got[k][1] == sv[k],
		      "forward: a at the scratch region's start, b (the arena) at the saved region's", "%s%s", err, why);
	}
	check(byte_at(S, sv[0]) == 0 && byte_at(S, sv[0] + (size_t)s.B * L * 4 - 1) == 0 &&
	              byte_at(S, sv[0] + coff) == 0xff && byte_at(S, sv[0] + coff + L * D * 2 - 1) == 0xff,
	      "the forward clears the arena and leaves the saved workspace c to its kernels", "%02x %02x %02x", byte_at(S, sv[0]),
	      byte_at(S, sv[0] + coff), byte_at(S, sv[0] + coff + L * D * 2 - 1));
	for (int k = 1; k >= 0; k--) {
		recur_ws w = {sv[k], sc, z.saved, z.scratch};
		hc.nlaunch = 0;
		rc = recur_backward_ws(v, s, &S->io, &w, 0, err, sizeof err) ||
		     hc_check_pass(S->m, vi, RT_BWD, s, why, sizeof why);
		check(rc == 0 && arg(3) == sv[k] + coff && arg(4) == sc,
		      "two forwards, then each backward reads c in its own forward's saved region", "region %d: %s%s", k,
		      err, why);
	}
	check(hc.nblk == held && recur_variant_workspace_bytes(v) == 0,
	      "the variant allocated nothing of its own", "%d blocks more, %zu bytes cached", hc.nblk - held,
	      recur_variant_workspace_bytes(v));
	rc = recur_backward(v, s, &S->io, 0, err, sizeof err);
	check(rc != 0 && has(err, "without a forward"),
	      "the variant's own saved state is untouched: recur_backward still wants its own forward", "%s", err);

	/* refusals, each before any launch */
	struct { recur_ws w; int pass; const char *what, *w1, *w2; } bad[] = {
		{{sv[0] + 16, sc, z.saved, z.scratch}, RT_FWD, "a misaligned saved region", "not 256-byte aligned", "saved"},
		{{sv[0], sc, z.saved - 1, z.scratch}, RT_FWD, "a saved region one byte short", "saved region", "saved_bytes"},
		{{sv[0], 0, z.saved, z.scratch}, RT_BWD, "a null scratch region the backward needs", "null pointer",
		 "scratch region"},
		{{sv[0], sc, z.saved, (size_t)D * 8 - 1}, RT_BWD, "a scratch region the backward finds short", "scratch_bytes",
		 "backward"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		hc.nlaunch = 0;
		int nset = 0;
		rc = bad[i].pass == RT_FWD ? recur_forward_ws(v, s, &S->io, &bad[i].w, 0, err, sizeof err)
		                           : recur_backward_ws(v, s, &S->io, &bad[i].w, 0, err, sizeof err);
		nset = hc.nlaunch;
		check(rc != 0 && nset == 0 && has(err, bad[i].w1) && has(err, bad[i].w2) && has(err, "mixed") &&
		              has(err, "B=2 L=37 D=64"),
		      bad[i].what, "refused with %d launches: %s", nset, err);
	}
	/* a forward's scratch may be smaller than the backward's */
	recur_ws small = {sv[0], sc, z.saved, (size_t)s.B * 100};
	err[0] = 0;
	rc = recur_forward_ws(v, s, &S->io, &small, 0, err, sizeof err);
	check(rc == 0, "a forward with a scratch region of just its own workspaces' size", "%s", err);
	rc = recur_forward_ws(v, s, &S->io, NULL, 0, err, sizeof err);
	check(rc != 0 && has(err, "NULL"), "ws NULL: refused", "%s", err);
	recur_variant_free(v);
	recur_free(S->rt, sv[0]);
	recur_free(S->rt, sv[1]);
	recur_free(S->rt, sc);
}

/* A workspace both passes make (life "each"): none of it in the saved
 * region; in the scratch region at the same offset in both passes (ahead of
 * each pass's own), so the backward's kernel makes it where the forward's
 * did; in the variant's own buffers, one buffer for both passes. */
static void each_pass(Session *S, recur_shape s)
{
	char err[1024] = "";
	int vi = recur_manifest_find(S->m, "each");
	recur_ws_sizes z = {0};
	size_t L = (size_t)s.L, D = (size_t)s.D, eoff = up(L * D * 2);
	size_t scratch = eoff + ((size_t)s.B * 100 > D * 8 ? (size_t)s.B * 100 : D * 8);
	int rc = recur_workspace_sizes(S->m, vi, s, &z, err, sizeof err);
	check(rc == 0 && z.saved == L * 4 && z.scratch == scratch,
	      "life each: not in the saved region; scratch = it, then the larger pass's own",
	      "saved %zu (expected %zu), scratch %zu (expected %zu) %s", z.saved, L * 4, z.scratch, scratch, err);
	recur_variant *v = NULL;
	CUdeviceptr sv = 0, sc = 0;
	rc = rc || recur_variant_load(S->rt, S->m, "each", &v, err, sizeof err) ||
	     recur_alloc(S->rt, z.saved, &sv, err, sizeof err) || recur_alloc(S->rt, z.scratch, &sc, err, sizeof err);
	recur_ws w = {sv, sc, z.saved, z.scratch};
	CUdeviceptr f[3] = {0}, b[3] = {0};
	if (rc == 0 && (rc = recur_forward_ws(v, s, &S->io, &w, 0, err, sizeof err)) == 0)
		f[0] = arg(3), f[1] = arg(4), f[2] = arg(5);
	if (rc == 0 && (rc = recur_backward_ws(v, s, &S->io, &w, 0, err, sizeof err)) == 0)
		b[0] = arg(3), b[1] = arg(4), b[2] = arg(5);
	check(rc == 0 && f[1] == sc && b[1] == sc && f[0] == sc + eoff && b[0] == sc + eoff && f[2] == sv && b[2] == sv,
	      "caller's regions: e at the scratch region's start in both passes, each pass's own after it, c saved",
	      "e %llx %llx, own %llx %llx, scratch %llx: %s", (unsigned long long)f[1], (unsigned long long)b[1],
	      (unsigned long long)f[0], (unsigned long long)b[0], (unsigned long long)sc, err);
	rc = rc || recur_forward(v, s, &S->io, 0, err, sizeof err);
	CUdeviceptr fe = rc ? 0 : arg(4);
	rc = rc || recur_backward(v, s, &S->io, 0, err, sizeof err);
	check(rc == 0 && fe && arg(4) == fe, "the variant's own buffers: the backward's e is the forward's buffer", "%s",
	      err);
	recur_variant_free(v);
	recur_free(S->rt, sv);
	recur_free(S->rt, sc);
}

/* the backward's part of the arena, poisoned after each backward, is clear
 * again at the next */
static void backward_clears(Session *S, recur_shape s)
{
	char err[1024] = "";
	int vi = recur_manifest_find(S->m, "zeroed");
	recur_ws_sizes z;
	recur_variant *v = NULL;
	CUdeviceptr sv = 0;
	int rc = recur_workspace_sizes(S->m, vi, s, &z, err, sizeof err) ||
	         recur_variant_load(S->rt, S->m, "zeroed", &v, err, sizeof err) ||
	         recur_alloc(S->rt, z.saved, &sv, err, sizeof err);
	recur_ws w = {sv, 0, z.saved, 0};
	rc = rc || recur_forward_ws(v, s, &S->io, &w, 0, err, sizeof err);
	int clear = 1;
	for (int k = 0; k < 2 && !rc; k++) {
		rc = recur_memset_u8(S->rt, sv + z.saved - (size_t)s.D * 8, 0xff, (size_t)s.D * 8, err, sizeof err) ||
		     recur_backward_ws(v, s, &S->io, &w, 0, err, sizeof err);
		CUdeviceptr d = rc ? 0 : arg(4);
		clear &= !rc && d == sv + z.saved - (size_t)s.D * 8 && byte_at(S, d) == 0 && byte_at(S, d + (size_t)s.D * 8 - 1) == 0;
	}
	check(rc == 0 && clear, "every backward clears its part of the arena (a second backward included)", "%s", err);
	recur_variant_free(v);
	recur_free(S->rt, sv);
}

int main(void)
{
	if (make_test_dir(dir, sizeof dir, "test_runtime_ws"))
		return 1;
	write_in(dir, "k.ptx", toy_ptx);
	write_in(dir, "manifest.json", manifest);
	hc_reset();
	Session S = {0};
	char err[1024] = "", path[300];
	recur_shape s = {2, 37, 64};
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	int rc = session_open(&S, path, s, err, sizeof err);
	check(rc == 0, "the runtime opens on the host stand-in and loads the manifest", "%s", err);
	if (rc == 0) {
		sizes(&S, s);
		layout(&S, s);
		backward_clears(&S, s);
		each_pass(&S, s);
	}
	session_close(&S);
	check(hc.nblk == 0, "closing the runtime leaves nothing on the device", "%d blocks", hc.nblk);
	const char *const names[] = {"k.ptx", "manifest.json"};
	remove_test_dir(dir, names, 2);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
