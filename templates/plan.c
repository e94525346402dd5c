/* The plan a variant's kernels share, as data for the manifest: the shape
 * variables their grids, clusters and workspace sizes are written in, the
 * rules a shape must meet, and the workspaces. The launches themselves are
 * declared by each kernel (tmpl_launch). gen/ serialises all of it; the
 * runtime evaluates it (util/shapex.c) with no code of its own for any
 * kernel. */
#include "tmpl.h"
#include "diag.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void add_var(Tmpl *T, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_var(Tmpl *T, const char *name, const char *fmt, ...)
{
	CHECK(T->nvar < TM_MAXVAR);
	ShapeVar *v = &T->var[T->nvar++];
	snprintf(v->name, sizeof v->name, "%s", name);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(v->expr, sizeof v->expr, fmt, ap);
	va_end(ap);
	CHECK(n > 0 && (size_t)n < sizeof v->expr);
}

static void add_ws(Tmpl *T, const char *name, const char *bytes, const char *life, int zero)
{
	CHECK(T->nws < (int)(sizeof T->ws / sizeof T->ws[0]));
	Workspace *w = &T->ws[T->nws++];
	snprintf(w->name, sizeof w->name, "%s", name);
	snprintf(w->bytes, sizeof w->bytes, "%s", bytes);
	w->life = life;
	w->zero = zero;
}

/* name = the least of n keys, modulo mod: each key an integer expression
 * whose low digits (below mod) hold the candidate it stands for, so that
 * the least key names the winner (an argmin in the shape language). */
static void add_argmin(Tmpl *T, const char *name, int n, char key[][256], long long mod)
{
	char e[sizeof T->var[0].expr];
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		int k = snprintf(e + at, sizeof e - at, "%s%s%s", i < n - 1 ? "min(" : "", key[i], i < n - 1 ? "," : "");
		CHECK(k > 0 && (size_t)k < sizeof e - at);
		at += (size_t)k;
	}
	for (int i = 0; i < n - 1; i++) {
		CHECK(at + 1 < sizeof e);
		e[at++] = ')';
	}
	e[at] = 0;
	add_var(T, name, "%s%%%lld", e, mod);
}

/* a grid's rows of row tiles at per_sm blocks an SM: of the grids filling
 * k = 1..PROJ_WAVES waves, the least time (waves times tiles a block) */
static void plan_rows_grid(Tmpl *T, const char *name, int per_sm)
{
	char key[PROJ_WAVES][256];
	for (int k = 1; k <= PROJ_WAVES; k++) {
		char g[64];
		int n = snprintf(g, sizeof g, "min(NR,max(1,%d*SMS/NX))", k * per_sm);
		CHECK(n > 0 && (size_t)n < sizeof g);
		n = snprintf(key[k - 1], sizeof key[0], "cdiv(NX*%s,%d*SMS)*cdiv(NR,%s)*1048576+%s", g, per_sm, g, g);
		CHECK(n > 0 && (size_t)n < sizeof key[0]);
	}
	add_argmin(T, name, PROJ_WAVES, key, 1048576);
}

/* The projections' grids, fixed by the shape (so that proj_dw's partial
 * sums have a fixed order on every GPU) and sized by whole waves of a
 * 132-SM GPU, since every block of one of these kernels takes the same
 * time and a last wave a few blocks wide costs a whole block's time.
 *
 * GY, the blocks over rows of proj_fwd and proj_dx (2 blocks an SM: 2 SMS
 * slots, SMS the device's multiprocessors; NX column tiles; each block
 * strides over its share of the NR row tiles): of the grids filling k =
 * 1..8 waves, the least cdiv(NX*g, 2 SMS) * cdiv(NR, g), the fewer blocks
 * on a tie. Each output is one block's whole sum, so GY may follow the
 * device and the bits do not. The former cdiv(528, NX) overshot 2 waves of
 * 132 SMs by a few blocks (560 at D = 2560, 576 at 4096), so a third wave
 * ran a block's whole share. GF, proj_fwd's where it runs one block an SM
 * (FWD_SPLIT), the same over waves of SMS blocks.
 *
 * GW, proj_dw's slabs of rows (proj_dw_slots, fixed by the kernel, not
 * the device: the slabs are the order of dW's sums; NW blocks a slab):
 * the g in 1..16 with the least time, counted in bytes: cdiv(NW*g, slots)
 * waves of cdiv(NR, g) row tiles a block (a block's row tile of x and
 * adjoints, by all the slots) and g slabs of fp32 partials written and
 * read back by param_reduce (H K^2 4 bytes a projection each way); the
 * fewer slabs on a tie, at most NR. Counting waves alone took 13 slabs at
 * 2560 at every L, 68 MB of partials against 126 MB of x and adjoints at
 * L = 8192. At K = 256, 4 k tiles a block: 2 slabs at D = 4096; at 2560,
 * 3 at L <= 32768, 13 at 131072. */
static void plan_proj_grids(Tmpl *T)
{
	char key[PROJ_DW_MAXSLABS][256];
	add_var(T, "NR", "cdiv(B*L,%d)", PROJ_ROWS);
	add_var(T, "NX", "D/%d", proj_nc(T));
	plan_rows_grid(T, "GY", PROJ_PER_SM);
	if (proj_fwd_split(T))   /* proj_fwd one block an SM */
		plan_rows_grid(T, "GF", 1);
	add_var(T, "NW", "H*%d", proj_dw_tiles(T));
	int dxdw = proj_dxdw_on(T);   /* proj_dxdw's slabs: NX blocks each, one an SM, a tile all of x's and dP's */
	int slots = dxdw ? PROJ_PLAN_SMS : proj_dw_slots(T);
	/* a block's row tile, KB: x's and the adjoints' */
	int tile_kb = dxdw ? 8 * (1 + T->mx->k / 64 * T->napj) : 128 * (64 * proj_dw_kt(T) + proj_nc(T) * T->napj) / 1024;
	int part_kb = 2 * T->mx->k * T->mx->k * 4 * T->napj / 1024;               /* a head's partials a slab, out and back */
	for (int g = 1; g <= PROJ_DW_MAXSLABS; g++) {
		int n = snprintf(key[g - 1], sizeof key[0], "(cdiv(%s*%d,%d)*cdiv(NR,%d)*%d+%d*H*%d)*64+%d+(NR<%d)*%lld",
		                 dxdw ? "NX" : "NW", g, slots, g, tile_kb * slots, g, part_kb, g, g, 1LL << 40);
		CHECK(n > 0 && (size_t)n < sizeof key[0]);
	}
	add_argmin(T, "GW", PROJ_DW_MAXSLABS, key, 64);
}

/* Shape variables, in the order the manifest lists them (each may use the
 * ones before it): the head (K = 64 channels, H heads), the tile (T steps,
 * NT tiles) and the group (NG groups of 16 chunks, the checkpoints), the
 * backward apply's blocks per (sequence, head), the parameter counts, and
 * the token stage's grids. */
static void plan_vars(Tmpl *T)
{
	int ncp = 0, nsp = 0;
	for (int p = 0; p < T->mx->nparam; p++) {
		ncp += T->mx->param[p].kind == PK_CHANNEL;
		nsp += T->mx->param[p].kind == PK_SCALAR;
	}
	add_var(T, "K", "%d", T->napj ? T->mx->k : 64);
	add_var(T, "H", "D/K");
	if (T->napj)   /* the scans' heads of 64 channels, beside the projections' of K */
		add_var(T, "HS", "D/64");
	add_var(T, "T", "%d", T->chunk * T->prefix);
	add_var(T, "NT", "cdiv(L,T)");
	add_var(T, "NG", "cdiv(L,%d)", 16 * T->chunk);
	/* bwd_apply's blocks per (sequence, head): bounds the
	 * parameter-gradient partials whatever the length and batch (G x B
	 * slots: 32 where a slot holds a head's 64x64 weight gradients, 128
	 * otherwise, for enough blocks to fill the GPU). Where there are weight
	 * gradients, clusters of CS blocks (up to BWD_CLUSTER) add theirs in
	 * shared memory, and pairs of clusters share a slot in global memory, so
	 * GP = cdiv(G / CS, 2) slots hold them; G is a multiple of CS no larger
	 * than G0, so no block of a cluster idles at the barrier.
	 * A one-pass backward (lb_bwd_carry) runs one group per trip and its
	 * blocks wait on each other: at most ONEPASS_MAXG per head, and where
	 * more than one, at most 256 in all, which two blocks per SM hold on
	 * the H200 (264); the runtime refuses a device that holds fewer. */
	char g0[96];
	if (T->v->onepass)
		snprintf(g0, sizeof g0, "min(NG,min(%d,max(1,256/(%s*B))))", ONEPASS_MAXG, scan_h(T));
	else
		snprintf(g0, sizeof g0, "min(NT,cdiv(%d,B))", T->nbdproj ? 32 : 128);
	if (T->nbdproj && T->portable) {
		/* no clusters: a slot per block */
		add_var(T, "G", "%s", g0);
		add_var(T, "GP", "G");
	} else if (T->nbdproj) {
		add_var(T, "G0", "%s", g0);
		add_var(T, "CS", "min(G0,%d)", BWD_CLUSTER);
		add_var(T, "G", "CS*(G0/CS)");
		add_var(T, "GP", "cdiv(G/CS,2)");
	} else {
		add_var(T, "G", "%s", g0);
	}
	add_var(T, "NCP", "%d", ncp);
	add_var(T, "NSP", "%d", nsp);
	/* token-stage grids: warps of tok_bwd and blocks of tok_dx per head,
	 * fixed by the shape, so their partial sums have a fixed order */
	add_var(T, "NTB", "min(cdiv(B*L,8),1024)");
	add_var(T, "NXB", "min(cdiv(B*L,32),64)");
	if (T->napj)
		plan_proj_grids(T);
	if (scan_proj_ahead(T))   /* fwd_scan's resident blocks (scan_proj.c) */
		add_var(T, "PB", "min(NT*HS*B,%d)", SP_GRID);
}

static void plan_workspaces(Tmpl *T)
{
	int lb = T->v->lookback;
	/* the look-back's words announce themselves by being non-zero */
	add_ws(T, "aggA", "B*NT*D*4", "forward", lb);
	add_ws(T, "aggB", "B*NT*D*4", "forward", lb);
	if (lb) {
		add_ws(T, "hend", "B*NT*D*4", "forward", 1);
		add_ws(T, "ticket", "16", "forward", 1);
	} else {
		add_ws(T, "carry", "B*NT*D*4", "forward", 0);
	}
	add_ws(T, "ckpt", "B*NG*D*4", "saved", 0);
	if (T->v->map) {   /* the row's map: sums of log_a per quad of each tile (fwd_scan.c) */
		char q[32];
		snprintf(q, sizeof q, "B*NT*%d*D*4", T->quads);
		add_ws(T, "mapL", q, "forward", 0);
	}
	if (!gates_inline(T)) {
		add_ws(T, "log_a", "B*L*D*4", "saved", 0);
		add_ws(T, "b", "B*L*D*4", "saved", 0);
	}
	if (T->v->onepass) {
		/* bwd_apply's look-back: one adjoint map per group */
		add_ws(T, "baggA", "B*NG*D*4", "backward", 1);
		add_ws(T, "baggB", "B*NG*D*4", "backward", 1);
	} else {
		add_ws(T, "baggA", "B*NT*D*4", "backward", 0);
		add_ws(T, "baggB", "B*NT*D*4", "backward", 0);
		add_ws(T, "ucarry", "B*NT*D*4", "backward", 0);
	}
	char buf[96];
	for (int j = 0; j < T->nbdproj; j++) {
		snprintf(buf, sizeof buf, "part_%s", T->mx->param[T->mx->proj[T->bdproj[j]].weight].name);
		add_ws(T, buf, "GP*B*H*4096*4", "backward", 0);   /* one slot per pair of clusters */
	}
	if (T->nbdproj > 0 && !T->portable) {
		/* per slot and block rank: the pair's arrival count and flag */
		snprintf(buf, sizeof buf, "GP*B*H*%d", 8 * BWD_CLUSTER);
		add_ws(T, "dwsync", buf, "backward", 1);
	}
	for (int j = 0; j < T->napj; j++) {
		const char *w = apj_weight(T, j);
		snprintf(buf, sizeof buf, "proj_%s", w);
		/* the projection, bias added, in bf16 (or its fp16 sigmoid) for every scan kernel: kept for the
		 * backward, or (recompute) made again by its first kernel, so held by neither pass past its end */
		add_ws(T, buf, "B*L*D*2", T->v->recompute ? "each" : "saved", 0);
		snprintf(buf, sizeof buf, "dproj_%s", w);
		add_ws(T, buf, "B*L*D*2", "backward", 0);    /* its adjoint in bf16, as the mma takes it */
		snprintf(buf, sizeof buf, "part_%s", w);
		add_ws(T, buf, "GW*D*K*4", "backward", 0);   /* dW per slab of rows */
	}
	if (scan_proj_on(T)) {   /* the weights' bf16 image fwd_scan copies (scan_proj.c): napj x K x D x 2 bytes */
		snprintf(buf, sizeof buf, "D*%d", 2 * T->napj * T->mx->k);
		add_ws(T, "wimg", buf, "forward", 0);
	}
	if (T->v->docs)   /* docs_prep's token codes, made again by each pass */
		add_ws(T, "dcode", "B*L*4", "saved", 0);
	if (T->napj)   /* dx's own term (x in the element expressions), in bf16 until proj_dx adds the projections' */
		add_ws(T, "dxd", "B*L*D*2", "backward", 0);
	add_ws(T, "part_chan", "G*B*NCP*D*4", "backward", 0);
	snprintf(buf, sizeof buf, "G*B*%s*NSP*4", scan_h(T));
	add_ws(T, "part_scal", buf, "backward", 0);
	if (T->ntokval > 0) {
		snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokval);
		add_ws(T, "tok", buf, "saved", 0);
		snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokproj);
		add_ws(T, "tproj", buf, "saved", 0);
		if (tok_fused(T)) {
			/* look-back words of every group's tokens, [B][NG][nz][H][16 C] */
			snprintf(buf, sizeof buf, "B*NG*%s*%d", scan_h(T), 16 * T->chunk * 4 * T->ntokval);
			add_ws(T, "dtokp", buf, "backward", 1);
			snprintf(buf, sizeof buf, "G*B*D*%d", 4 * T->ntokproj);
			add_ws(T, "part_tchan", buf, "backward", 0);
		} else {
			snprintf(buf, sizeof buf, "B*L*H*%d", 4 * T->ntokval);
			add_ws(T, "dtokp", buf, "backward", 0);
			snprintf(buf, sizeof buf, "B*L*%d", 4 * T->ntokproj);
			add_ws(T, "dtok", buf, "backward", 0);
			add_ws(T, "part_tscal", "NTB*8*NSP*4", "backward", 0);
			snprintf(buf, sizeof buf, "NXB*D*%d", 4 * T->ntokproj);
			add_ws(T, "part_tchan", buf, "backward", 0);
		}
	}
}

void tmpl_plan(Tmpl *T)
{
	T->nvar = T->nws = 0;
	plan_vars(T);
	T->rule[0] = (ShapeRule){ "D%64==0", "the width must be a multiple of 64: the kernels work on heads of 64 channels" };
	T->nrule = 1;
	if (T->napj) {   /* and the projections on heads of K */
		snprintf(T->rule_text[0], sizeof T->rule_text[0], "D%%%d==0", T->mx->k);
		snprintf(T->rule_text[1], sizeof T->rule_text[1], "the width must be a multiple of %d: the projections "
		         "work on heads of %d channels", T->mx->k, T->mx->k);
		T->rule[T->nrule++] = (ShapeRule){ T->rule_text[0], T->rule_text[1] };
	}
	plan_workspaces(T);
}

/* The tensor a kernel argument touches: the arg itself, or for a TMA map
 * its tensor (ksig_map_tensor); into out */
static void arg_tensor(const char *a, char *out, size_t n)
{
	const char *t = ksig_map_tensor(a);
	const char *box = t ? strrchr(t, ':') : NULL;
	if (box)
		snprintf(out, n, "%.*s", (int)(box - t), t);
	else
		snprintf(out, n, "%s", a);
}

/* A launch's bytes: every tensor and workspace its arguments touch, once
 * (a tensor read through a map and passed as a pointer too counts once;
 * one read through maps alone counts: proj_dxdw's x and adjoints) */
void tmpl_launch_bytes(const Tmpl *T, const Launch *l, char *buf, size_t n)
{
	size_t at = 0;
	char seen[TM_MAXARG][64];
	int nseen = 0;
	buf[0] = 0;
	for (int k = 0; k < l->sig.n; k++) {
		char a[64];
		const char *term = NULL;
		arg_tensor(l->sig.arg[k], a, sizeof a);
		int dup = 0;
		for (int i = 0; i < nseen; i++)
			dup |= !strcmp(seen[i], a);
		if (dup || !strcmp(a, l->bytes_unread))
			continue;
		snprintf(seen[nseen++], sizeof seen[0], "%s", a);
		if (!strcmp(a, "x") || !strcmp(a, "y") || !strcmp(a, "dy") || !strcmp(a, "dx"))
			term = "B*L*D*2";
		else if (!strncmp(a, "ws:", 3))
			for (int w = 0; w < T->nws; w++)
				if (!strcmp(T->ws[w].name, a + 3))
					term = T->ws[w].bytes;
		if (term && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s(%s)", at ? "+" : "", term);
	}
	if (l->bytes_extra[0] && at < n)
		at += (size_t)snprintf(buf + at, n - at, "%s(%s)", at ? "+" : "", l->bytes_extra);
	CHECK(at < n);
	if (!at)
		snprintf(buf, n, "0");
}
