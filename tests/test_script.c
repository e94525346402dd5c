/* Generator scripts: lua/recur.lua, the two mixers and the variant grids,
 * read through script_run.
 *
 *   ctest -R test_script      (RECUR_SOURCE_DIR names the tree; ctest sets it)
 *
 * 1. lua/variants/rglru.lua: 24 variants with their exact names and flags,
 *    the parameters and projections in order, and log_a, b, y evaluated at
 *    random leaves against the formulas of spec/architectures.md;
 * 2. lua/arch/samu.lua through a small grid written here: the same checks;
 * 3. lua/variants/all.lua: a list of sets;
 * 4. every .lua file in tests/scripts/bad must fail with "<file>:<line>: ..." where
 *    the line is the one the file marks with a trailing `-- here`, and the
 *    message must contain the `-- expect: <text>` of its first line.
 * One line per check; exit 0 when all pass, 77 when the tree is not found.
 */
#include "script.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "checkf.h"

static char g_root[1024], g_lua[1100];   /* source tree and its lua/ (set once in main) */

static double urand(unsigned long long *s, double lo, double hi)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

static double sigmoid(double z) { return 1 / (1 + exp(-z)); }
static double softplus(double z) { return log1p(exp(-fabs(z))) + fmax(z, 0); }

static int close_rel(double got, double want)
{
	return fabs(got - want) <= 1e-12 * fmax(1, fabs(want));
}

static const Variant *find_variant(const VariantSet *s, const char *name)
{
	for (int i = 0; i < s->nvar; i++)
		if (strcmp(s->var[i].name, name) == 0) return &s->var[i];
	return NULL;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && strcmp(s + n - m, tail) == 0;
}

static void check_param(const Mixer *mx, int i, const char *name, ParamKind kind, InitKind init)
{
	const MxParam *p = &mx->param[i];
	check(i < mx->nparam && strcmp(p->name, name) == 0 && p->kind == kind && p->init == init && p->line > 0,
	      "%s param %d is %s (kind %d, init %d, line %d)", mx->name, i, name, (int)p->kind, (int)p->init, p->line);
}

/* ---- 1. RG-LRU --------------------------------------------------------- */

static void test_rglru(void)
{
	char path[1200], err[1024];
	snprintf(path, sizeof path, "%s/variants/rglru.lua", g_lua);
	VariantSet *sets = NULL;
	int n = 0;
	int rc = script_run(path, g_lua, &sets, &n, err, sizeof err);
	check(rc == 0 && n == 2, "variants/rglru.lua runs: two sets (%s)", rc ? err : "ok");
	if (rc) return;
	if (n != 2) { script_free(sets, n); return; }
	const VariantSet *s = &sets[0];
	const Mixer *mx = &s->mixer;
	check(s->nvar == 24, "rglru: 24 variants (got %d)", s->nvar);

	static const int chunks[] = { 8, 16, 32, 64 }, prefixes[] = { 32, 64, 128 };
	int all = 1;
	for (int f = 0; f < 2; f++)
		for (int p = 0; p < 3; p++)
			for (int c = 0; c < 4; c++) {
				char name[128];
				snprintf(name, sizeof name, "%sgrouped_prefix%d_hierarchical_chunk%d", f ? "fused_" : "",
				         prefixes[p], chunks[c]);
				const Variant *v = find_variant(s, name);
				int ok = v && v->chunk == chunks[c] && v->prefix == prefixes[p] && v->fused == f &&
				         v->materialized == !f && !v->shared_sfu && !v->fused_output && !v->fused_write &&
				         !v->lookback && !v->onepass && v->controller[0] == 0 && v->line == 10;
				if (!ok) check(0, "rglru variant %s present with its flags", name);
				all &= ok;
			}
	check(all, "rglru: every chunk x prefix x fused name present, flags and line 10 right");
	/* the second set: the look-back forward, alone and with the
	 * one-pass backward, fused, chunks 8 and 16, prefixes 32 and 64 */
	const VariantSet *lb = &sets[1];
	int lbok = lb->nvar == 8 && strcmp(lb->mixer.name, "rglru") == 0, nbwd = 0;
	for (int i = 0; lbok && i < lb->nvar; i++) {
		const Variant *w = &lb->var[i];
		char name[128];
		snprintf(name, sizeof name, "fused_grouped_prefix%d_%s_chunk%d", w->prefix,
		         w->onepass ? "onepass" : "lookback", w->chunk);
		nbwd += w->onepass;
		lbok = w->lookback && w->fused && !w->materialized && (w->chunk == 8 || w->chunk == 16) &&
		       (w->prefix == 32 || w->prefix == 64) && strcmp(w->name, name) == 0 && w->line == 16;
	}
	check(lbok && nbwd == 4, "rglru look-back set: 8 fused variants named ..._lookback_chunkC and "
	      "..._onepass_chunkC (4 with the one-pass backward), scan flags set, line 16");
	const Variant *v = find_variant(s, "fused_grouped_prefix32_hierarchical_chunk16");
	check(v && v->fused && !v->materialized && v->chunk == 16 && v->prefix == 32,
	      "fused_grouped_prefix32_hierarchical_chunk16: fused, not materialized");
	v = find_variant(s, "grouped_prefix128_hierarchical_chunk64");
	check(v && !v->fused && v->materialized && v->chunk == 64 && v->prefix == 128,
	      "grouped_prefix128_hierarchical_chunk64: materialized");

	check(strcmp(mx->name, "rglru") == 0 && mx->k == 64 && mx->controller[0] == 0 &&
	      strcmp(mx->dyn_per_token, "2*D") == 0, "rglru mixer: name, k 64, no controller, 2*D per token");
	check(ends_with(mx->script, "arch/rglru_heads.lua"), "rglru declared in %s", mx->script);
	check(mx->nparam == 5, "rglru: 5 parameters");
	check_param(mx, 0, "Wa", PK_BLOCKDIAG, INIT_NORMAL);
	check_param(mx, 1, "ba", PK_CHANNEL, INIT_ZEROS);
	check_param(mx, 2, "Wx", PK_BLOCKDIAG, INIT_NORMAL);
	check_param(mx, 3, "bx", PK_CHANNEL, INIT_ZEROS);
	check_param(mx, 4, "lam", PK_CHANNEL, INIT_DECAY);
	check(mx->param[0].a_is_rsqrt_k && mx->param[2].a_is_rsqrt_k, "Wa, Wx: std 1/sqrt(K)");
	check(fabs(mx->param[4].a - 0.81) < 1e-15 && fabs(mx->param[4].b - 0.998001) < 1e-15,
	      "lam: decay u in [0.9^2, 0.999^2] = [%g, %g]", mx->param[4].a, mx->param[4].b);
	check(mx->nproj == 2 && strcmp(mx->proj[0].name, "pa") == 0 && mx->proj[0].kind == PJ_BLOCKDIAG &&
	      mx->proj[0].weight == 0 && mx->proj[0].bias == 1 && strcmp(mx->proj[1].name, "px") == 0 &&
	      mx->proj[1].kind == PJ_BLOCKDIAG && mx->proj[1].weight == 2 && mx->proj[1].bias == 3,
	      "rglru projections: pa = (Wa, ba), px = (Wx, bx), block-diagonal");
	check(s->nrule == 0, "rglru grid: no rules of its own (gen adds D %% 64 == 0 to every variant)");
	check(!ex_depends(&mx->g, mx->log_a, EX_H, -1) && !ex_depends(&mx->g, mx->b, EX_H, -1) &&
	      ex_depends(&mx->g, mx->y, EX_H, -1), "log_a and b do not read h; y does");

	unsigned long long rng = 7;
	int ok = 1;
	for (int t = 0; t < 20; t++) {
		double param[5], proj[2];
		for (int i = 0; i < 5; i++) param[i] = urand(&rng, -2, 2);
		for (int i = 0; i < 2; i++) proj[i] = urand(&rng, -3, 3);
		ExEnv env = { urand(&rng, -2, 2), urand(&rng, -2, 2), t % 3 == 0, param, proj, NULL, NULL };
		double r = sigmoid(proj[0]), i = sigmoid(proj[1]);
		double log_a = -8 * r * softplus(param[4]), a = exp(log_a);
		double m = env.first ? 1 : sqrt(1 - a * a);
		double b = m * i * env.x;
		double gl = ex_eval(&mx->g, mx->log_a, &env), gb = ex_eval(&mx->g, mx->b, &env);
		double gy = ex_eval(&mx->g, mx->y, &env);
		if (!close_rel(gl, log_a) || !close_rel(gb, b) || gy != env.h) {
			ok = 0;
			printf("     at first=%g: log_a %.17g vs %.17g, b %.17g vs %.17g, y %.17g vs %.17g\n", env.first, gl,
			       log_a, gb, b, gy, env.h);
		}
	}
	check(ok, "rglru log_a, b, y match the spec's formulas at 20 random points");
	script_free(sets, n);
}

/* ---- 2. SAMU ----------------------------------------------------------- */

static void test_samu(const char *dir)
{
	char path[1200], err[1024];
	snprintf(path, sizeof path, "%s/samu_grid.lua", dir);
	FILE *f = fopen(path, "w");
	if (!f) { check(0, "write %s", path); return; }
	fputs("local R = require \"recur\"\n"
	      "return R.variants {\n"
	      "  mixer = require \"arch.samu\", chunk = { 16, 32 }, prefix = { 64 },\n"
	      "  fused = { true }, shared_sfu = { true, false }, fused_output = { true },\n"
	      "  rules = { { \"L % 2 == 0\", \"even lengths only\" } },\n"
	      "}\n", f);
	fclose(f);
	VariantSet *sets = NULL;
	int n = 0;
	int rc = script_run(path, g_lua, &sets, &n, err, sizeof err);
	check(rc == 0 && n == 1, "samu grid runs (%s)", rc ? err : "ok");
	if (rc) return;
	const VariantSet *s = &sets[0];
	const Mixer *mx = &s->mixer;
	check(s->nvar == 4, "samu: 4 variants (got %d)", s->nvar);
	check(s->nrule == 1 && strcmp(s->rule[0].expr, "L % 2 == 0") == 0 && strcmp(s->rule[0].message, "even lengths only") == 0,
	      "a script's rule reaches the variant set: L %% 2 == 0");
	const Variant *v = find_variant(s, "fused_output_shared_sfu_fused_grouped_prefix64_hierarchical_chunk16");
	check(v && v->shared_sfu && v->fused_output && v->fused && !v->fused_write && !v->materialized &&
	      strcmp(v->controller, "fp32_fused_coords") == 0 && v->line == 2,
	      "fused_output_shared_sfu_fused_grouped_prefix64_hierarchical_chunk16: flags, controller, line 2");
	check(find_variant(s, "fused_output_fused_grouped_prefix64_hierarchical_chunk32") != NULL,
	      "fused_output_fused_grouped_prefix64_hierarchical_chunk32 present");
	check(strcmp(mx->name, "samu") == 0 && strcmp(mx->controller, "fp32_fused_coords") == 0 &&
	      strcmp(mx->dyn_per_token, "2") == 0, "samu mixer: controller fp32_fused_coords, 2 per token");
	check(mx->nparam == 7, "samu: 7 parameters");
	check_param(mx, 0, "wu", PK_CHANNEL, INIT_NORMAL);
	check_param(mx, 1, "wv", PK_CHANNEL, INIT_NORMAL);
	check_param(mx, 2, "lam", PK_CHANNEL, INIT_DECAY);
	check_param(mx, 3, "bu", PK_SCALAR, INIT_ZEROS);
	check_param(mx, 4, "bv", PK_SCALAR, INIT_ZEROS);
	check_param(mx, 5, "theta", PK_SCALAR, INIT_CONST);
	check_param(mx, 6, "omega", PK_SCALAR, INIT_CONST);
	check(mx->param[0].a == 1 && !mx->param[0].a_is_rsqrt_k && fabs(mx->param[5].a - log(8)) < 1e-15 &&
	      mx->param[6].a == 0.5, "samu inits: wu std 1, theta log 8, omega 0.5");
	check(mx->nproj == 2 && strcmp(mx->proj[0].name, "u") == 0 && mx->proj[0].kind == PJ_TOKEN &&
	      mx->proj[0].weight == 0 && mx->proj[0].bias == 3 && mx->proj[0].scale_rsqrt_d &&
	      strcmp(mx->proj[1].name, "v") == 0 && mx->proj[1].kind == PJ_TOKEN && mx->proj[1].weight == 1 &&
	      mx->proj[1].bias == 4 && mx->proj[1].scale_rsqrt_d,
	      "samu projections: u = (wu, bu), v = (wv, bv), per token, 1/sqrt(D)");

	unsigned long long rng = 11;
	int ok = 1;
	for (int t = 0; t < 20; t++) {
		double param[7], proj[2];
		for (int i = 0; i < 7; i++) param[i] = urand(&rng, -2, 2);
		for (int i = 0; i < 2; i++) proj[i] = urand(&rng, -3, 3);
		ExEnv env = { urand(&rng, -2, 2), urand(&rng, -2, 2), t % 3 == 0, param, proj, NULL, NULL };
		double sft = softplus(proj[0]), g = sigmoid(proj[1]);
		double log_a = -exp(param[5]) * sft * softplus(param[2]), a = exp(log_a);
		double m = env.first ? 1 : sqrt(1 - a * a);
		double b = m * g * env.x, y = env.h + param[6] * env.x;
		double gl = ex_eval(&mx->g, mx->log_a, &env), gb = ex_eval(&mx->g, mx->b, &env);
		double gy = ex_eval(&mx->g, mx->y, &env);
		if (!close_rel(gl, log_a) || !close_rel(gb, b) || !close_rel(gy, y)) {
			ok = 0;
			printf("     log_a %.17g vs %.17g, b %.17g vs %.17g, y %.17g vs %.17g\n", gl, log_a, gb, b, gy, y);
		}
	}
	check(ok, "samu log_a, b, y match the spec's formulas at 20 random points");
	script_free(sets, n);
	unlink(path);
}

/* ---- 3. the default list ----------------------------------------------- */

static void test_all(void)
{
	char path[1200], err[1024];
	snprintf(path, sizeof path, "%s/variants/all.lua", g_lua);
	VariantSet *sets = NULL;
	int n = 0;
	int rc = script_run(path, g_lua, &sets, &n, err, sizeof err);
	check(rc == 0 && n == 4 && strcmp(sets[0].mixer.name, "rglru") == 0 && sets[0].nvar == 24 &&
	      strcmp(sets[2].mixer.name, "samu") == 0 && sets[2].nvar == 24 && sets[1].nvar + sets[3].nvar == 16,
	      "variants/all.lua: rglru's and samu's sets flattened into one list of 4 (24, 8, 24, 8) (%s)", rc ? err : "ok");
	script_free(sets, rc ? 0 : n);

	rc = script_run("/nonexistent/script.lua", g_lua, &sets, &n, err, sizeof err);
	check(rc == -1 && sets == NULL && n == 0 && strstr(err, "/nonexistent/script.lua:") == err,
	      "a missing script fails with its path: %s", err);
}

/* ---- 3b. locations through modules and tail calls ---------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A mistake inside a module that the script requires, found by a function
 * that the module reaches by a tail call (`return R.variants{...}` removes
 * the module's frame): the location is still the module's own line. And a
 * user helper that tail-calls R.variants: the helper's line. */
static void test_locations(const char *dir)
{
	char sub[1200], main_path[1200], grid[1300], err[1024], want[1400];
	snprintf(sub, sizeof sub, "%s/sub", dir);
	mkdir(sub, 0700);
	snprintf(grid, sizeof grid, "%s/grid.lua", sub);
	snprintf(main_path, sizeof main_path, "%s/main.lua", dir);
	write_file(grid, "local R = require \"recur\"\n"
	                 "local rglru = require \"arch.rglru\"\n"
	                 "return R.variants { mixer = rglru, chunk = { 7 }, prefix = { 32 } }\n");
	write_file(main_path, "local sets = {}\n"
	                      "sets[1] = require \"sub.grid\"\n"
	                      "return sets\n");
	VariantSet *sets = NULL;
	int n = 0;
	int rc = script_run(main_path, g_lua, &sets, &n, err, sizeof err);
	snprintf(want, sizeof want, "%s:3: chunk 7", grid);
	check(rc == -1 && strncmp(err, want, strlen(want)) == 0, "error in a required module is located there: %s", err);

	write_file(main_path, "local R = require \"recur\"\n"
	                      "local rglru = require \"arch.rglru\"\n"
	                      "local function make(c)\n"
	                      "  local p = { 32 }\n"
	                      "  return R.variants { mixer = rglru, chunk = { c }, prefix = p }\n"
	                      "end\n"
	                      "local ok = make(8)\n"
	                      "local helper = function() return 1 end\n"
	                      "helper()\n"
	                      "return { ok, make(9) }\n");
	rc = script_run(main_path, g_lua, &sets, &n, err, sizeof err);
	snprintf(want, sizeof want, "%s:5: chunk 9", main_path);
	check(rc == -1 && strncmp(err, want, strlen(want)) == 0, "error in a helper's tail call is located in the helper: %s", err);

	write_file(main_path, "local R = require \"recur\"\n"
	                      "local m = R.mixer(\"t\")\n"
	                      "local lam = m:param(\"lam\", \"channel\", R.zeros())\n"
	                      "local e = R.sigmoid(m.x) * 2 + lam\n"
	                      "assert(tostring(e) == \"expr((param0 + (sigmoid(x) * 2)))\", tostring(e))\n"
	                      "assert(R.sigmoid(0) == 0.5 and R.where(0, 1, 2) == 2 and R.max(1, 3) == 3)\n"
	                      "m:recurrence { log_a = -R.softplus(lam), b = m.x }\n"
	                      "m:output(m.h ^ 2)\n"
	                      "local a = R.variants { mixer = m, chunk = { 8 }, prefix = { 32 } }\n"
	                      "local b = R.variants { mixer = m, chunk = { 64 }, prefix = { 128 }, controller = \"c1\",\n"
	                      "                       fused_write = { true } }\n"
	                      "return { a, b }\n");
	rc = script_run(main_path, g_lua, &sets, &n, err, sizeof err);
	check(rc == 0 && n == 2 && sets[0].nvar == 1 && sets[1].nvar == 1 &&
	      strcmp(sets[0].var[0].name, "grouped_prefix32_hierarchical_chunk8") == 0 &&
	      strcmp(sets[1].var[0].name, "fused_write_grouped_prefix128_hierarchical_chunk64") == 0 &&
	      strcmp(sets[1].var[0].controller, "c1") == 0 && sets[1].var[0].line == 10 &&
	      strcmp(sets[0].mixer.dyn_per_token, "0") == 0 && sets[0].mixer.g.n != sets[1].mixer.g.n,
	      "a list of two sets of one mixer, tostring, numbers, x^2, controller option (%s)", rc ? err : "ok");
	if (rc == 0) {
		double pr[1] = { 0 };
		ExEnv env = { 0.5, 3, 0, pr, NULL, NULL, NULL };
		check(ex_eval(&sets[1].mixer.g, sets[1].mixer.y, &env) == 9, "y = h^2 evaluates to 9 at h = 3");
		script_free(sets, n);
	}
	unlink(grid);
	rmdir(sub);
	unlink(main_path);
}

/* ---- 4. scripts that must fail ----------------------------------------- */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_bad_one(const char *dir, const char *file)
{
	char path[1400], err[1024], line[512], expect[512] = "", where[400];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	if (!f) { check(0, "%s: readable", file); return; }
	int ln = 0, here = 0;
	while (fgets(line, sizeof line, f)) {
		ln++;
		line[strcspn(line, "\n")] = 0;
		if (ln == 1 && strncmp(line, "-- expect: ", 11) == 0) snprintf(expect, sizeof expect, "%s", line + 11);
		if (ends_with(line, "-- here") && !here) here = ln;
	}
	fclose(f);
	if (!expect[0] || !here) { check(0, "%s: has '-- expect:' on line 1 and a '-- here' line", file); return; }
	snprintf(where, sizeof where, "%s:%d:", file, here);

	VariantSet *sets = (VariantSet *)1;
	int n = -1;
	int rc = script_run(path, g_lua, &sets, &n, err, sizeof err);
	const char *loc = strstr(err, where);
	/* the location is the first thing in the message, and the full path */
	int ok = rc == -1 && sets == NULL && n == 0 && loc && strncmp(err, path, strlen(path)) == 0 &&
	         loc == err + strlen(path) - strlen(file) && strstr(err, expect);
	check(ok, "%s fails at %s with \"%s\": %s", file, where, expect, rc ? err : "(no error)");
	if (!rc) script_free(sets, n);
}

static void test_bad(void)
{
	char dir[1200];
	snprintf(dir, sizeof dir, "%s/tests/scripts/bad", g_root);
	DIR *d = opendir(dir);
	if (!d) { check(0, "open %s", dir); return; }
	char *names[256];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 256)
		if (ends_with(e->d_name, ".lua")) names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof names[0], by_name);
	check(n >= 10, "%d bad scripts in tests/scripts/bad", n);
	for (int i = 0; i < n; i++) {
		test_bad_one(dir, names[i]);
		free(names[i]);
	}
}

int main(void)
{
	const char *root = getenv("RECUR_SOURCE_DIR");
	if (!root || !*root) root = RECUR_SOURCE_DIR;
	snprintf(g_root, sizeof g_root, "%s", root);
	snprintf(g_lua, sizeof g_lua, "%s/lua", root);
	char probe[1200];
	snprintf(probe, sizeof probe, "%s/recur.lua", g_lua);
	if (access(probe, R_OK) != 0) {
		printf("skipped: %s not found (set RECUR_SOURCE_DIR to the source tree)\n", probe);
		return 77;
	}
	char tmp[] = "/tmp/recur_test_script.XXXXXX";
	if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }

	test_rglru();
	test_samu(tmp);
	test_all();
	test_locations(tmp);
	test_bad();
	rmdir(tmp);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
