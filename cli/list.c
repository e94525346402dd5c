/* recur list: the variants of a generated folder, which shapes each accepts
 * (and why not), and with --plan the workspaces and every launch of each
 * accepted shape, from the manifest alone: no GPU needed. */
#include "cli.h"
#include "harness.h"
#include "mfinfo.h"
#include <stdio.h>
#include <string.h>

#define L_MAXSHAPES H_MAXSHAPES

enum { L_DIR, L_SHAPE, L_PLAN };

static const CliOpt OPTS[] = {
	[L_DIR] = CLI_OPT_DIR,
	[L_SHAPE] = { "--shape", "BxLxD", NULL, "say whether each variant accepts this shape, and why not; BxLxD,... gives several",
	              1 },
	[L_PLAN] = { "--plan", NULL, NULL,
	             "and each accepted shape's workspaces (saved: kept from the forward for the backward; scratch) and "
	             "launches: grid, threads, shared bytes, cluster (a grid sized by the device's multiprocessors as "
	             "on 132, an H100's or H200's)",
	             0 },
};

const CliCmd cli_list_cmd = {
	"list", NULL, "the variants and their legality per shape; with --plan, each legal shape's launches",
	OPTS, CLI_NOPTS(OPTS), cli_list,
};

typedef struct {
	const char *dir;
	recur_shape sh[L_MAXSHAPES];
	int nsh, plan;
} ListArgs;

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	ListArgs *l = ctx;
	switch (opt) {
	case L_DIR: return cli_parse_path(v, &l->dir, err, n);
	case L_PLAN: l->plan = 1; return 0;
	case L_SHAPE: return harness_add_shapes(v, l->sh, &l->nsh, L_MAXSHAPES, err, n);
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

/* Variant v's workspaces at shape s as a caller provides them
 * (recur_workspace_sizes): the saved region, what a forward keeps for its
 * backward (what a layer holds between the passes in training), and the
 * scratch either pass takes; 1 when they cannot be sized. */
static int print_ws(recur_manifest *m, int v, recur_shape s)
{
	char err[4096];
	recur_ws_sizes z;
	if (recur_workspace_sizes(m, v, s, &z, err, sizeof err)) {
		printf("    %dx%dx%d WORKSPACE ERROR: %s\n", s.B, s.L, s.D, err);
		return 1;
	}
	double el = (double)s.B * s.L * s.D;
	printf("    %dx%dx%d workspaces: saved %zu bytes (%.2f B/element, kept from the forward for the backward), "
	       "scratch %zu (%.2f B/element)\n", s.B, s.L, s.D, z.saved, (double)z.saved / el, z.scratch,
	       (double)z.scratch / el);
	return 0;
}

/* Every launch of variant v at shape s; 1 when one cannot be planned. */
static int print_plan(recur_manifest *m, int v, recur_shape s)
{
	int bad = print_ws(m, v, s);
	char err[4096];
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < recur_launch_count(m, v, p); i++) {
			recur_plan_info pi;
			if (recur_launch_plan(m, v, p, i, s, &pi, err, sizeof err) != 0) {
				printf("    %dx%dx%d PLAN ERROR: %s\n", s.B, s.L, s.D, err);
				bad = 1;
				continue;
			}
			printf("    %dx%dx%d %s[%d] %-24s grid %ux%ux%u block %d smem %lld", s.B, s.L, s.D,
			       p ? "backward" : "forward", i, pi.kernel, pi.grid[0], pi.grid[1], pi.grid[2], pi.block,
			       (long long)pi.dyn_smem);
			if (pi.cluster > 1)
				printf(" cluster %d", pi.cluster);
			putchar('\n');
		}
	return bad;
}

/* One variant's line, then its plans: 1 when a plan failed. */
static int list_variant(const ListArgs *l, recur_manifest *m, const MfInfo *mi, int v)
{
	int ok[L_MAXSHAPES], bad = 0;
	printf("%-8s %s", recur_manifest_variant_mixer(m, v), recur_manifest_variant_name(m, v));
	/* in a folder of several targets, each line names its module's */
	const char *t = recur_manifest_variant_target(m, v), *t0 = recur_manifest_info(m, "target");
	int multi = 0;
	for (int k = 0; k < recur_manifest_nvariants(m) && *t; k++)
		multi |= strcmp(recur_manifest_variant_target(m, k), t0 ? t0 : "") != 0;
	if (multi)
		printf("  target %s", t);
	/* a decode step: forward only, on a pool of states (mfinfo.h) */
	if (mf_decode(m, v))
		printf("  scan decode");
	/* the sequence state its kernels take, where any */
	const char *st = recur_manifest_variant_state(m, v);
	if (*st)
		printf("  state %s", st);
	for (int s = 0; s < l->nsh; s++) {
		char why[512];
		ok[s] = recur_check_shape(m, v, l->sh[s], why, sizeof why) == 0;
		printf("  %dx%dx%d:%s", l->sh[s].B, l->sh[s].L, l->sh[s].D, ok[s] ? "legal" : "illegal");
		if (!ok[s])
			printf(" (%s)", why);
	}
	putchar('\n');
	for (int s = 0; l->plan && s < l->nsh; s++)
		if (ok[s])
			bad |= print_plan(m, v, l->sh[s]);
	return bad;
}

int cli_list(int argc, char **argv)
{
	ListArgs l = { 0 };
	int rc = cli_parse(&cli_list_cmd, argc, argv, set, &l);
	if (rc)
		return rc > 0 ? 0 : 2;
	char err[4096];
	recur_manifest *m;
	if (recur_manifest_load(l.dir, &m, err, sizeof err) != 0) {
		fprintf(stderr, "recur list: %s\n", err);
		return 1;
	}
	MfInfo mi = { 0 };
	if (mf_open(&mi, m, err, sizeof err) != 0) {
		fprintf(stderr, "recur list: %s\n", err);
		recur_manifest_free(m);
		return 1;
	}
	int bad = 0;
	for (int v = 0; v < recur_manifest_nvariants(m); v++)
		bad |= list_variant(&l, m, &mi, v);
	mf_close(&mi);
	recur_manifest_free(m);
	return bad;
}
