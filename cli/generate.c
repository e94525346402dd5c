/* recur gen: a variant script in, PTX and manifest.json out (gen/gen.h does
 * the work; this file is its command line). */
#include "cli.h"
#include "gen.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { G_OUT, G_SM, G_PTX, G_LUA, G_INC, G_ONLY, G_DUMP_IR, G_DUMP_PTX, G_JOBS, G_QUIET, G_TIMINGS, G_CUBIN, G_REBUILD,
       G_CACHE, G_CHECK };

static const CliOpt OPTS[] = {
	[G_OUT] = { "-o", "DIR", CLI_PTX_DIR, "output folder: manifest.json and one PTX file per variant", 0 },
	[G_SM] = { "--sm", "SM", "sm_90", "target GPU: sm_90 or sm_90a (Hopper; sm_90a runs the projections apart on wgmma), sm_80 "
	           "(Ampere, Ada), sm_86, sm_89; a list (sm_80,sm_90) generates every variant for each, the runtime "
	           "loading the one for the device", 0 },
	[G_PTX] = { "--ptx", "VERSION", "8.0", "PTX ISA version", 0 },
	[G_LUA] = { "--lua", "DIR", NULL,
	            "folder of recur.lua (default: $RECUR_LUA, else the source tree's lua/, else ./lua)", 0 },
	[G_INC] = { "-I", "DIR", NULL, "also look for modules in DIR (after the script's folder and its parent)", 1 },
	[G_ONLY] = { "--only", "VARIANT", NULL, "--dump-ir and --dump-ptx print this variant only", 0 },
	[G_DUMP_IR] = { "--dump-ir", NULL, NULL, "print each variant's LLVM IR before O3, a module a kernel, on stdout", 0 },
	[G_DUMP_PTX] = { "--dump-ptx", NULL, NULL, "print each variant's PTX on stdout", 0 },
	[G_JOBS] = { "-j", "N", NULL, "variants built at once, 1..64 (default: one per CPU)", 0 },
	[G_QUIET] = { "-q", NULL, NULL, "no progress lines on stderr", 0 },
	[G_CUBIN] = { "--cubin", NULL, NULL,
	              "also compile each variant to machine code with ptxas ($PTXAS, else PATH, else /usr/local/cuda/bin), "
	              "loaded instead of the PTX on a GPU of that target", 0 },
	[G_REBUILD] = { "--rebuild", NULL, NULL,
	                "build every module; by default one whose content key the output folder (or the cache) holds "
	                "is taken over", 0 },
	[G_CACHE] = { "--cache", "DIR", NULL,
	              "keep each module's PTX in DIR by content key, for any output folder to take over "
	              "(default: $RECUR_GEN_CACHE; unset or empty, no cache)", 0 },
	[G_CHECK] = { "--check", NULL, NULL,
	              "build every variant and check its launches against the target (shared memory a block), printing "
	              "each launch; writes nothing (no O3, no PTX: seconds, not minutes)", 0 },
	[G_TIMINGS] = { "--timings", NULL, NULL, "print the time of each stage (script, derive, IR, O3, PTX, ...) at the end", 0 },
};

const CliCmd cli_gen_cmd = {
	"gen", "[SCRIPT]",
	"generate PTX + manifest.json for every variant of SCRIPT (default: LUA/variants/all.lua)",
	OPTS, CLI_NOPTS(OPTS), cli_gen,
};

typedef struct {
	GenOpts o;
	const char *script;
} GenArgs;

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	GenArgs *g = ctx;
	switch (opt) {
	case CLI_OPERAND:
		if (g->script) {
			snprintf(err, n, "unexpected argument %s: one SCRIPT only (%s given first)", v, g->script);
			return -1;
		}
		return cli_parse_path(v, &g->script, err, n);
	case G_OUT: return cli_parse_path(v, &g->o.outdir, err, n);
	case G_SM: g->o.sm = v; return 0;
	case G_PTX: g->o.ptx = v; return 0;
	case G_LUA: return cli_parse_path(v, &g->o.lua_root, err, n);
	case G_INC: return cli_add_value(g->o.include, &g->o.ninclude, GEN_MAXINC, v, err, n);
	case G_ONLY: g->o.only = v; return 0;
	case G_DUMP_IR: g->o.dump_ir = 1; return 0;
	case G_DUMP_PTX: g->o.dump_ptx = 1; return 0;
	case G_QUIET: g->o.verbose = 0; return 0;
	case G_TIMINGS: g->o.timings = 1; return 0;
	case G_CUBIN: g->o.cubin = 1; return 0;
	case G_REBUILD: g->o.rebuild = 1; return 0;
	case G_CACHE: return cli_parse_path(v, &g->o.cache, err, n);
	case G_CHECK: g->o.check = 1; return 0;
	case G_JOBS:
		if (cli_parse_int(v, 1, 64, &g->o.jobs, err, n) == 0)
			return 0;
		snprintf(err, n, "give a number of threads from 1 to 64");
		return -1;
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

int cli_gen(int argc, char **argv)
{
	GenArgs g = { .o = { .verbose = 1 } };
	int rc = cli_parse(&cli_gen_cmd, argc, argv, set, &g);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (g.o.check && (g.o.cubin || g.o.dump_ptx)) {
		fprintf(stderr, "recur gen: --check makes no PTX, so it takes no %s\n", g.o.cubin ? "--cubin" : "--dump-ptx");
		return 2;
	}
	if (!g.o.lua_root)
		g.o.lua_root = cli_lua_root();
	if (!g.o.cache) {
		const char *env = getenv("RECUR_GEN_CACHE");
		g.o.cache = env && *env ? env : NULL;
	}
	char def[4096];
	if (!g.script) {
		snprintf(def, sizeof def, "%s/variants/all.lua", g.o.lua_root);
		g.script = def;
	}
	char err[4096];
	if (gen_run(g.script, &g.o, err, sizeof err) != 0) {
		fprintf(stderr, "recur gen: %s\n", err);
		return 1;
	}
	return 0;
}
