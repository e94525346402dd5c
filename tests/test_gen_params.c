/* Generated modules against their manifest, as the runtime loads them, on
 * the host stand-in for the driver (hostcu.h): tests/grids/scanproj.lua at
 * heads of 128 for sm_90a (scan_proj and its persistent form, whose
 * fwd_scan takes three TMA tensor maps by value, beside their twins),
 * generated here.
 *
 * - every variant loads: each launch's args match its kernel's parameters
 *   in number and size (the stand-in's cuFuncGetParamInfo reads the
 *   generated PTX: a map's 128 bytes, an i32's 4, a pointer's 8), and no
 *   driver call is refused on the way (compute-sanitizer reports each);
 * - a forward and a backward of each at 2x333x256, and at 1x37x256 (fewer
 *   rows than a map's box of 64), put every buffer inside an allocation
 *   with room for it (hc_check_pass), a tensor map's too;
 * - each pass encodes its maps a call: the persistent form's forward three
 *   (x's and the two projections' workspaces), scan_proj's none, the
 *   twins' one (proj_fwd's copies of x, WG_TMA); every backward four
 *   (proj_dxdw's copies of x, the two projections' adjoints and dx's own
 *   terms).
 *   ctest -R test_gen_params   (RECUR_SOURCE_DIR names the tree)
 */
#include "gensession.h"

#define NPARAM 5   /* RG-LRU's Wa, ba, Wx, bx, lam */

/* forward then backward of variant vi at s, each pass's buffers checked;
 * the tensor maps each encoded into maps[0] and maps[1] */
static int run_pair(Session *r, int vi, recur_shape s, int maps[2], char *err, size_t n)
{
	recur_variant *v = NULL;
	const char *name = recur_manifest_variant_name(r->m, vi);
	int rc = recur_variant_load(r->rt, r->m, name, &v, err, n);
	hc.nlaunch = hc.tmaps = 0;
	rc = rc || recur_forward(v, s, &r->io, 0, err, n) || hc_check_pass(r->m, vi, RT_FWD, s, err, n);
	maps[0] = hc.tmaps;
	hc.nlaunch = hc.tmaps = 0;
	rc = rc || recur_backward(v, s, &r->io, 0, err, n) || hc_check_pass(r->m, vi, RT_BWD, s, err, n);
	maps[1] = hc.tmaps;
	recur_variant_free(v);
	return rc ? -1 : 0;
}

int main(void)
{
	const char *src;
	char dir[256], err[4096] = "";
	int begun = gen_test_begin("test_gen_params", dir, sizeof dir, &src);
	if (begun)
		return begun;
	/* the tree's grid at heads of 128 (its SCANPROJ_K) */
	char grid[700];
	snprintf(grid, sizeof grid, "return dofile(\"%s/tests/grids/scanproj.lua\")\n", src);
	setenv("SCANPROJ_K", "128", 1);
	int rc = gen_grid(dir, src, grid, "sm_90a", err, sizeof err);
	check(rc == 0, "tests/grids/scanproj.lua generates at heads of 128 for sm_90a", "%s", err);
	Session r = {0};
	recur_shape s = {2, 333, 256};
	/* a head's weights are the largest parameter: D x 128 fp32 */
	rc = rc || gen_session(&r, dir, s, NPARAM, (size_t)s.D * 128 * 4, err, sizeof err);
	check(rc == 0, "the runtime opens on the host stand-in and loads the generated manifest", "%s", err);
	int nv = rc == 0 ? recur_manifest_nvariants(r.m) : 0, ran = 0, ahead = 0;
	for (int vi = 0; vi < nv; vi++) {
		const char *name = recur_manifest_variant_name(r.m, vi);
		int maps[2] = {-1, -1}, is_ahead = has(name, "scanproj_ahead_");
		int want = is_ahead ? 3 : has(name, "scanproj_") ? 0 : 1;
		recur_shape small = {1, 37, 256};   /* B L under a box's 64 rows */
		err[0] = 0;
		hc.refused = 0;
		int vrc = run_pair(&r, vi, s, maps, err, sizeof err);
		check(vrc == 0 && maps[0] == want && maps[1] == 4,
		      "a generated variant loads with its args matching its kernels' parameters, and runs its passes",
		      "%s: rc %d, tensor maps encoded: forward %d (want %d), backward %d (want 4): %s", name, vrc,
		      maps[0], want, maps[1], err);
		check(hc.refused == 0, "and asks the driver nothing it refuses (compute-sanitizer would report it)",
		      "%s: %d calls refused, the last by %s", name, hc.refused, hc.refused_fn ? hc.refused_fn : "none");
		int rc_small = vrc == 0 ? run_pair(&r, vi, small, maps, err, sizeof err) : -1;
		check(rc_small == 0 && maps[0] == want && maps[1] == 4, "and at 1x37x256, fewer rows than a map's box",
		      "%s: rc %d, maps %d and %d: %s", name, rc_small, maps[0], maps[1], err);
		vrc = vrc || rc_small;
		ran += vrc == 0;
		ahead += is_ahead;
	}
	check(nv >= 8 && ran == nv && ahead >= 2, "every variant of the grid, the persistent forms among them",
	      "%d of %d ran, %d persistent", ran, nv, ahead);
	return gen_test_end(&r, dir);
}
