/* A recompute variant's plan as the runtime runs it, on the host stand-in
 * for the driver (hostcu.h), from a grid generated here (RG-LRU with its
 * projections apart, heads of 64, and the same with recompute = { true }):
 *
 * - the twin's backward scans read the projections where its forward's
 *   proj_fwd wrote them, in the caller's saved region;
 * - the recompute variant's backward first runs proj_fwd again, into the
 *   scratch region at the offset its forward's proj_fwd wrote, and every
 *   backward kernel taking the projections gets that buffer; its saved
 *   region is B L D x 4 bytes smaller;
 * - the same with the variant's own buffers (recur_forward, recur_backward);
 * - every buffer of both passes lies in an allocation with room for its
 *   bytes (hc_check_pass);
 * - a variant run at one shape, another, then the first again launches
 *   what a variant fresh from loading launches at each (the runtime keeps
 *   the last shape's variables and evaluated expressions: this grid's are
 *   a real variant's many, every grid, size and argument depending on the
 *   shape).
 *   ctest -R test_gen_recompute   (RECUR_SOURCE_DIR names the tree)
 */
#include "gensession.h"

#define NPARAM 5   /* RG-LRU's Wa, ba, Wx, bx, lam */

static const char grid[] =
        "local R = require \"recur\"\n"
        "return R.variants { mixer = require \"arch.rglru_heads\" (64), chunk = { 8 }, prefix = { 32 },\n"
        "  fused = { true }, apart = { true }, recompute = { false, true } }\n";
static const char *const twin = "apart_fused_grouped_prefix32_hierarchical_chunk8";
static const char *const lean = "apart_recompute_fused_grouped_prefix32_hierarchical_chunk8";

/* The last pass's launches' arguments named arg (ws:proj_Wa): their
 * pointers into got[] (0 where a launch takes none), and the kernel of
 * each launch into names[] */
static void args_named(const Session *r, int vi, int pass, const char *arg, CUdeviceptr *got, const char **names)
{
	const rt_vdesc *d = &r->m->variant[vi];
	for (int i = 0; i < d->nlaunch[pass] && i < hc.nlaunch; i++) {
		const rt_launch *l = &d->launch[pass][i];
		got[i] = 0;
		names[i] = l->kernel;
		for (int k = 0; k < l->narg && k < hc.launch[i].narg; k++)
			if (!strcmp(l->arg[k].text, arg))
				memcpy(&got[i], hc.launch[i].params[k], 8);
	}
}

/* Forward, then backward of variant name at s into the caller's regions
 * (own = 0) or the variant's own buffers: the projection's pointer in the
 * forward's proj_fwd (*fwd) and in each backward launch (bwd[], 0: none),
 * the saved and scratch regions given. 0, or -1 with err. */
static int run(Session *r, const char *name, recur_shape s, int own, CUdeviceptr *fwd, CUdeviceptr *bwd,
               const char **kern, int *nbwd, CUdeviceptr region[2], recur_ws_sizes *z, char *err, size_t n)
{
	int vi = recur_manifest_find(r->m, name);
	recur_variant *v = NULL;
	char why[1024] = "";
	const char *fk[64];
	CUdeviceptr f[64];
	region[0] = region[1] = 0;
	if (vi < 0 || recur_workspace_sizes(r->m, vi, s, z, err, n) || recur_variant_load(r->rt, r->m, name, &v, err, n))
		return -1;
	recur_ws w = {0, 0, z->saved, z->scratch};
	int rc = own ? 0
	             : recur_alloc(r->rt, z->saved, &w.saved, err, n) || recur_alloc(r->rt, z->scratch, &w.scratch, err, n);
	hc.nlaunch = 0;
	if (rc == 0)
		rc = (own ? recur_forward(v, s, &r->io, 0, err, n) : recur_forward_ws(v, s, &r->io, &w, 0, err, n)) ||
		     hc_check_pass(r->m, vi, RT_FWD, s, why, sizeof why);
	if (rc == 0) {
		args_named(r, vi, RT_FWD, "ws:proj_Wa", f, fk);
		*fwd = has(fk[0], "_proj_fwd") ? f[0] : 0;
		hc.nlaunch = 0;
		rc = (own ? recur_backward(v, s, &r->io, 0, err, n) : recur_backward_ws(v, s, &r->io, &w, 0, err, n)) ||
		     hc_check_pass(r->m, vi, RT_BWD, s, why, sizeof why);
	}
	if (rc == 0) {
		*nbwd = r->m->variant[vi].nlaunch[RT_BWD];
		args_named(r, vi, RT_BWD, "ws:proj_Wa", bwd, kern);
	}
	if (rc && why[0])
		snprintf(err, n, "%s", why);
	region[0] = w.saved, region[1] = w.scratch;
	recur_variant_free(v);
	return rc ? -1 : 0;
}

static int inside(CUdeviceptr p, CUdeviceptr base, size_t bytes) { return base && p >= base && p < base + bytes; }

/* how many of n launches take the projection (their pointers in b, 0:
 * none), all of them at p; -1 where one gets another pointer */
static int takers(const CUdeviceptr *b, int n, CUdeviceptr p)
{
	int t = 0;
	for (int i = 0; i < n; i++)
		if (b[i] && b[i] != p)
			return -1;
		else
			t += b[i] != 0;
	return t;
}

/* what caller_regions' runs gave: the twin's backward reads the forward's
 * projection in the saved region, the recompute variant's makes it again
 * in the scratch, where its forward's was */
static void check_regions(recur_shape s, const CUdeviceptr fwd[2], CUdeviceptr bwd[2][64], const char *kern[2][64],
                          const int nb[2], CUdeviceptr reg[2][2], const recur_ws_sizes z[2])
{
	int takes = takers(bwd[0], nb[0], fwd[0]);
	check(takes > 0 && inside(fwd[0], reg[0][0], z[0].saved),
	      "the twin: its backward's scans read the projection where its forward wrote it, in the saved region",
	      "%d launches take it", takes);
	takes = takers(bwd[1], nb[1], fwd[1]);
	check(nb[1] == nb[0] + 1 && has(kern[1][0], "_proj_fwd") && bwd[1][0] == fwd[1] && takes > 1 &&
	              inside(fwd[1], reg[1][1], z[1].scratch) && !inside(fwd[1], reg[1][0], z[1].saved),
	      "recompute: the backward runs proj_fwd first, into the scratch where the forward's wrote, and its "
	      "scans read it there", "%d launches (the twin %d), %d take it", nb[1], nb[0], takes);
	check(z[0].saved - z[1].saved == (size_t)s.B * s.L * s.D * 4,
	      "recompute keeps B L D x 4 bytes fewer for the backward", "saved %zu against %zu", z[1].saved, z[0].saved);
}

static void caller_regions(Session *r, recur_shape s)
{
	char err[2048] = "";
	CUdeviceptr fwd[2] = {0}, bwd[2][64] = {{0}}, reg[2][2] = {{0}};
	const char *kern[2][64];
	int nb[2] = {0};
	recur_ws_sizes z[2];
	int rc = run(r, twin, s, 0, &fwd[0], bwd[0], kern[0], &nb[0], reg[0], &z[0], err, sizeof err) ||
	         run(r, lean, s, 0, &fwd[1], bwd[1], kern[1], &nb[1], reg[1], &z[1], err, sizeof err);
	check(rc == 0, "both variants run forward and backward into the caller's regions, every buffer in an "
	      "allocation", "%s", err);
	if (rc == 0)
		check_regions(s, fwd, bwd, kern, nb, reg, z);
	for (int k = 0; k < 2; k++) {
		recur_free(r->rt, reg[k][0]);
		recur_free(r->rt, reg[k][1]);
	}
}

static void own_buffers(Session *r, recur_shape s)
{
	char err[2048] = "";
	CUdeviceptr fwd = 0, bwd[64] = {0}, reg[2];
	const char *kern[64];
	int nb = 0;
	recur_ws_sizes z;
	int rc = run(r, lean, s, 1, &fwd, bwd, kern, &nb, reg, &z, err, sizeof err);
	check(rc == 0 && fwd && takers(bwd, nb, fwd) > 1 && has(kern[0], "_proj_fwd"),
	      "recompute with the variant's own buffers: the backward's proj_fwd and scans get the forward's buffer",
	      "%s", err);
}

/* one pass's launches as the stand-in saw them: geometry and argument values */
typedef struct {
	int n, narg[HC_MAXLAUNCH];
	unsigned grid[HC_MAXLAUNCH][3], block[HC_MAXLAUNCH][3], smem[HC_MAXLAUNCH];
	uint64_t arg[HC_MAXLAUNCH][HC_MAXARG];
} Seen;

static void seen_take(Seen *p)
{
	memset(p, 0, sizeof *p);
	p->n = hc.nlaunch;
	for (int i = 0; i < hc.nlaunch; i++) {
		const HcLaunch *l = &hc.launch[i];
		memcpy(p->grid[i], l->grid, sizeof l->grid);
		memcpy(p->block[i], l->block, sizeof l->block);
		p->smem[i] = l->smem;
		p->narg[i] = l->narg < HC_MAXARG ? l->narg : HC_MAXARG;
		for (int k = 0; k < p->narg[i]; k++)
			memcpy(&p->arg[i][k], l->params[k], 8);
	}
}

/* forward then backward of v at s into the regions of w, each pass's launches into seen[] */
static int pass_pair(Session *r, recur_variant *v, recur_shape s, const recur_ws *w, Seen seen[2], char *err,
                     size_t n)
{
	hc.nlaunch = 0;
	if (recur_forward_ws(v, s, &r->io, w, 0, err, n))
		return -1;
	seen_take(&seen[0]);
	hc.nlaunch = 0;
	if (recur_backward_ws(v, s, &r->io, w, 0, err, n))
		return -1;
	seen_take(&seen[1]);
	return 0;
}

static void alternating_shapes(Session *r, const char *name)
{
	char err[2048] = "";
	recur_shape sh[2] = {{2, 333, 256}, {1, 100, 128}};   /* the second inside the session's tensors */
	int vi = recur_manifest_find(r->m, name);
	recur_ws_sizes z[2];
	recur_ws w = {0, 0, 0, 0};
	int rc = vi < 0;
	for (int k = 0; k < 2 && !rc; k++) {
		rc = recur_workspace_sizes(r->m, vi, sh[k], &z[k], err, sizeof err);
		if (!rc && z[k].saved > w.saved_bytes)
			w.saved_bytes = z[k].saved;
		if (!rc && z[k].scratch > w.scratch_bytes)
			w.scratch_bytes = z[k].scratch;
	}
	rc = rc || recur_alloc(r->rt, w.saved_bytes, &w.saved, err, sizeof err) ||
	     recur_alloc(r->rt, w.scratch_bytes, &w.scratch, err, sizeof err);
	static Seen fresh[2][2], again[4][2];
	recur_variant *v = NULL;
	for (int k = 0; k < 2 && !rc; k++) {
		rc = recur_variant_load(r->rt, r->m, name, &v, err, sizeof err) ||
		     pass_pair(r, v, sh[k], &w, fresh[k], err, sizeof err);
		recur_variant_free(v);
		v = NULL;
	}
	rc = rc || recur_variant_load(r->rt, r->m, name, &v, err, sizeof err);
	int same = 1;
	for (int i = 0; i < 4 && !rc; i++) {
		rc = pass_pair(r, v, sh[i % 2], &w, again[i], err, sizeof err);
		same &= !rc && !memcmp(again[i], fresh[i % 2], sizeof again[i]);
	}
	recur_variant_free(v);
	int differ = !rc && memcmp(fresh[0], fresh[1], sizeof fresh[0]);
	check(rc == 0 && same && differ, "run at 2x333x256, 1x100x128 and again, it launches at each what a fresh "
	      "variant does (grids, sizes, arguments; the two shapes' differ)", "%s%s%s", name, rc ? ": " : "",
	      rc ? err : "");
	recur_free(r->rt, w.saved);
	recur_free(r->rt, w.scratch);
}

int main(void)
{
	const char *src;
	char dir[256], err[4096] = "";
	int begun = gen_test_begin("test_gen_recompute", dir, sizeof dir, &src);
	if (begun)
		return begun;
	int rc = gen_grid(dir, src, grid, "sm_90", err, sizeof err);
	check(rc == 0, "the grid generates: RG-LRU apart at heads of 64, with and without recompute", "%s", err);
	Session r = {0};
	recur_shape s = {2, 333, 256};
	/* a head's weights are the largest parameter: D x 64 fp32 */
	rc = rc || gen_session(&r, dir, s, NPARAM, (size_t)s.D * 64 * 4, err, sizeof err);
	check(rc == 0, "the runtime opens on the host stand-in and loads the generated manifest", "%s", err);
	if (rc == 0) {
		caller_regions(&r, s);
		own_buffers(&r, s);
		alternating_shapes(&r, twin);
		alternating_shapes(&r, lean);
	}
	return gen_test_end(&r, dir);
}
