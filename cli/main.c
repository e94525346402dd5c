/* recur: the command-line front door.
 *
 *   recur gen [SCRIPT] [-o DIR] [--sm sm_90] [--ptx 8.0] [--dump-ir] [--dump-ptx] [--only VARIANT] [-j N]
 *   recur list [--dir DIR] [--shape BxLxD]
 *   recur verify [--dir DIR] [--variant NAME]... [--mixer NAME]... [--shape BxLxD]... [--seed N]
 *                [--dump DIR] [--goldens DIR] [--time N] [--graph]
 *   recur calibrate [--dir DIR] [--shapes BxLxD,...] [--mixer NAME]... [--out FILE]
 *                   [--samples 5] [--warmup 2] [--skip VARIANT]... [--seed N]
 *   recur bench [--dir DIR] [--shapes BxLxD,...] [--rounds 2] [--samples 5] [--warmup 2]
 *               [--calibration FILE] [--variant NAME]... [--mixer NAME]... [--out FILE]
 *               [--profile] [--seed N]
 *   recur compare RESULTS [REFERENCE] [--svg FILE]
 */
#include "cli.h"
#include "gen.h"
#include "recur.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fputs("usage: recur COMMAND [options]\n"
	      "  gen [SCRIPT] [-o DIR]     generate PTX + manifest.json for every variant of SCRIPT\n"
	      "                            (default lua/variants/all.lua, out/ptx); --sm sm_90 --ptx 8.0\n"
	      "                            --dump-ir --dump-ptx [--only VARIANT] -q\n"
	      "                            -j N: variants built at once (default: one per CPU)\n"
	      "  list [--dir DIR]          variants and their legality per shape (--shape BxLxD)\n"
	      "       [--plan]             and each legal shape's launches: grid, threads, shared bytes, cluster\n"
	      "  verify [--dir DIR]        run variants on the GPU against the float64 reference\n"
	      "         [--variant NAME]... [--mixer NAME]... [--shape BxLxD]... [--seed N]\n"
	      "         [--dump DIR] [--goldens DIR] [--time N] [--graph]\n"
	      "  calibrate [--dir DIR]     time every legal, non-materialising variant per mixer and shape;\n"
	      "         [--shapes BxLxD,...] [--mixer NAME]... [--out FILE] (bench/results/calibration.json)\n"
	      "         [--samples 5] [--warmup 2] [--skip VARIANT]... [--seed N]\n"
	      "  bench [--dir DIR]         the seed's protocol with the calibrated variants, results JSON\n"
	      "         [--shapes BxLxD,...] [--rounds 2] [--samples 5] [--warmup 2] [--calibration FILE]\n"
	      "         [--variant NAME]... [--mixer NAME]... [--out FILE] [--profile] [--seed N]\n"
	      "  compare RESULTS [REFERENCE] [--svg FILE]\n"
	      "                            table and chart against the seed (or REFERENCE)\n", f);
}

/* The folder of recur.lua: $RECUR_LUA, else lua/ beside the source tree the
 * binary was built from, else ./lua. */
const char *cli_lua_root(void)
{
	const char *e = getenv("RECUR_LUA");
	if (e && *e)
		return e;
	if (access(RECUR_SOURCE_DIR "/lua/recur.lua", R_OK) == 0)
		return RECUR_SOURCE_DIR "/lua";
	return "lua";
}

int cli_parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int cli_parse_positive(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end != 0 || !(v > lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

int cli_parse_seed(const char *cmd, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != 0 || errno == ERANGE) {
		fprintf(stderr, "recur %s: --seed %s: want a whole number from 0 to 2^64-1\n", cmd, s);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int cli_mixer_wanted(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return n == 0;
}

int cli_parse_shape(const char *s, recur_shape *sh)
{
	int B, L, D;
	char extra;
	if (sscanf(s, "%dx%dx%d%c", &B, &L, &D, &extra) != 3 || B < 1 || L < 1 || D < 1)
		return -1;
	sh->B = B;
	sh->L = L;
	sh->D = D;
	return 0;
}

static int cmd_gen(int argc, char **argv)
{
	GenOpts o = { .lua_root = cli_lua_root(), .outdir = "out/ptx", .sm = "sm_90", .ptx = "8.0", .verbose = 1 };
	const char *script = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-o") && i + 1 < argc) o.outdir = argv[++i];
		else if (!strcmp(a, "--sm") && i + 1 < argc) o.sm = argv[++i];
		else if (!strcmp(a, "--ptx") && i + 1 < argc) o.ptx = argv[++i];
		else if (!strcmp(a, "--only") && i + 1 < argc) o.only = argv[++i];
		else if (!strcmp(a, "--lua") && i + 1 < argc) o.lua_root = argv[++i];
		else if (!strcmp(a, "--dump-ir")) o.dump_ir = 1;
		else if (!strcmp(a, "--dump-ptx")) o.dump_ptx = 1;
		else if (!strcmp(a, "-q")) o.verbose = 0;
		else if (!strcmp(a, "-j") && i + 1 < argc) {
			if (cli_parse_int(argv[++i], 1, 64, &o.jobs)) {
				fprintf(stderr, "recur gen: -j %s: give a number of threads from 1 to 64\n", argv[i]);
				return 2;
			}
		}
		else if (a[0] != '-' && !script) script = a;
		else {
			fprintf(stderr, "recur gen: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	char def[4096];
	if (!script) {
		snprintf(def, sizeof def, "%s/variants/all.lua", o.lua_root);
		script = def;
	}
	char err[4096];
	if (gen_run(script, &o, err, sizeof err) != 0) {
		fprintf(stderr, "recur gen: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	const char *dir = "out/ptx";
	recur_shape sh[16];
	int nsh = 0, plan = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
		else if (!strcmp(argv[i], "--plan")) plan = 1;
		else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nsh < 16) {
			if (cli_parse_shape(argv[++i], &sh[nsh]) != 0) {
				fprintf(stderr, "recur list: bad shape %s (want BxLxD, e.g. 1x8192x1024)\n", argv[i]);
				return 2;
			}
			nsh++;
		} else {
			fprintf(stderr, "recur list: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	char err[4096];
	recur_manifest *m;
	if (recur_manifest_load(dir, &m, err, sizeof err) != 0) {
		fprintf(stderr, "recur list: %s\n", err);
		return 1;
	}
	for (int v = 0; v < recur_manifest_nvariants(m); v++) {
		printf("%-8s %s", recur_manifest_variant_mixer(m, v), recur_manifest_variant_name(m, v));
		int ok[16];
		for (int s = 0; s < nsh; s++) {
			char why[512];
			ok[s] = recur_check_shape(m, v, sh[s], why, sizeof why) == 0;
			printf("  %dx%dx%d:%s", sh[s].B, sh[s].L, sh[s].D, ok[s] ? "legal" : "illegal");
			if (!ok[s])
				printf(" (%s)", why);
		}
		putchar('\n');
		for (int s = 0; plan && s < nsh; s++) {
			if (!ok[s])
				continue;
			for (int p = 0; p < 2; p++)
				for (int i = 0; i < recur_launch_count(m, v, p); i++) {
					recur_plan_info pi;
					if (recur_launch_plan(m, v, p, i, sh[s], &pi, err, sizeof err) != 0) {
						printf("    %dx%dx%d PLAN ERROR: %s\n", sh[s].B, sh[s].L, sh[s].D, err);
						bad = 1;
						continue;
					}
					printf("    %dx%dx%d %s[%d] %-24s grid %ux%ux%u block %d smem %lld", sh[s].B, sh[s].L,
					       sh[s].D, p ? "backward" : "forward", i, pi.kernel, pi.grid[0], pi.grid[1], pi.grid[2],
					       pi.block, (long long)pi.dyn_smem);
					if (pi.cluster > 1)
						printf(" cluster %d", pi.cluster);
					putchar('\n');
				}
		}
	}
	recur_manifest_free(m);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *c = argv[1];
	if (!strcmp(c, "gen")) return cmd_gen(argc - 1, argv + 1);
	if (!strcmp(c, "list")) return cmd_list(argc - 1, argv + 1);
	if (!strcmp(c, "verify")) return cli_verify(argc - 1, argv + 1);
	if (!strcmp(c, "calibrate")) return cli_calibrate(argc - 1, argv + 1);
	if (!strcmp(c, "bench")) return cli_bench(argc - 1, argv + 1);
	if (!strcmp(c, "compare")) return cli_compare(argc - 1, argv + 1);
	if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "recur: unknown command %s\n", c);
	usage(stderr);
	return 2;
}
