/* Hostile input to what a user writes for the generator: scripts (read by
 * script_run_opts) and shape expressions (util/shapex.h). Nothing may crash,
 * hang or fail silently; every refusal is a message located where the
 * user can act on it.
 *
 *   ctest -R test_fuzz_script   (RECUR_SOURCE_DIR names the tree; ctest sets it)
 *
 * 1. the .lua files of tests/fuzz/scripts, the hand-written cases (each bug found adds
 *    one): the first line says "-- expect: TEXT" (the message holds TEXT)
 *    or "-- expect: ok N" (N sets come back); a line marked "-- here" is
 *    the line the message must name, as FILE:LINE.
 * 2. Mutants of a valid script, made deterministically (a fixed seed):
 *    lines deleted, repeated, swapped, cut short; numbers and strings
 *    replaced by extreme ones; hostile statements put in. Each either
 *    gives sets within the limits of script/mixer.h, or fails at a line of
 *    a user file (never "?:0:", never recur.lua's, never "(null)").
 * 3. Module search: -I directories and $RECUR_PATH, and the list of files
 *    tried when a module is not found.
 * 4. Shape expressions: hostile cases (cdiv(INT64_MIN, -1), 30000 nested
 *    parentheses, literals past int64) and mutants of the manifests' own
 *    expressions, evaluated at extreme shapes and checked: a value or a
 *    message quoting the expression and the offset.
 * RECUR_FUZZ_VERBOSE=1 prints every mutant's outcome.
 * Scripts run on a small budget (SC_FUZZ_STEPS instructions, SC_FUZZ_BYTES
 * of memory) so the endless ones end quickly; the defaults are checked by
 * tests/fuzz_script_test.sh through the recur binary.
 */
#include "check.h"
#include "script.h"
#include "shapex.h"

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SC_FUZZ_STEPS 4000000ULL
#define SC_FUZZ_BYTES ((size_t)64 << 20)
#define N_SCRIPT_MUTANTS 240
#define N_SHAPE_MUTANTS 320

static char g_src[1024], g_lua[1100], g_tmp[512];
static int g_verbose;   /* RECUR_FUZZ_VERBOSE=1: every mutant's outcome */

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;   /* fixed: the same mutants every run */

static uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t pick(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* ---- reading files ----------------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
		n += got;
		if (n + 1 == cap) {
			char *t = realloc(s, cap *= 2);
			if (!t) free(s);
			s = t;
		}
	}
	fclose(f);
	if (s) s[n] = 0;
	return s;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	if (!f) return -1;
	size_t n = strlen(text);
	int ok = fwrite(text, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* ---- what a result or a message must be -------------------------------- */

/* The sets are within the limits the templates index by (script/mixer.h). */
static int sets_sane(const VariantSet *s, int n, char *why, size_t len)
{
	for (int i = 0; i < n; i++) {
		const Mixer *m = &s[i].mixer;
		if (m->nparam < 0 || m->nparam > MX_MAXPARAM || m->nproj < 0 || m->nproj > MX_MAXPROJ ||
		    s[i].nvar < 1 || s[i].nvar > MX_MAXVAR || s[i].nrule < 0 || s[i].nrule > MX_MAXRULE) {
			snprintf(why, len, "set %d: counts out of range", i);
			return 0;
		}
		for (int id = 0; id < m->g.len; id++) {
			const ExNode *x = &m->g.n[id];
			if ((x->op == EX_PARAM && (x->idx >= m->nparam || m->param[x->idx].kind == PK_BLOCKDIAG)) ||
			    (x->op == EX_PROJ && x->idx >= m->nproj) || x->op == EX_SEED || x->op == EX_TOK) {
				snprintf(why, len, "set %d: node %d is a leaf the mixer does not have", i, id);
				return 0;
			}
		}
		for (int p = 0; p < m->nproj; p++)
			if (m->proj[p].weight >= m->nparam || m->proj[p].bias >= m->nparam) {
				snprintf(why, len, "set %d: projection %d indexes past the parameters", i, p);
				return 0;
			}
	}
	return 1;
}

/* "FILE:LINE: message" with FILE a user's file (not recur.lua), LINE >= 1,
 * a message after it and no "(null)"; *line gets LINE. */
static int located(const char *err, int *line)
{
	const char *colon = NULL;
	for (const char *p = err; (p = strchr(p, ':')) != NULL; p++) {
		int k = 1;
		while (p[k] >= '0' && p[k] <= '9') k++;
		if (k > 1 && p[k] == ':' && p[k + 1] == ' ' && p[k + 2]) {
			colon = p;
			break;
		}
	}
	if (!colon || colon == err || strstr(err, "(null)")) return 0;
	size_t n = (size_t)(colon - err);
	if (n >= 9 && !strncmp(colon - 9, "recur.lua", 9)) return 0;
	*line = atoi(colon + 1);
	return *line >= 1;
}

static void run_opts(ScriptOpts *o)
{
	memset(o, 0, sizeof *o);
	o->lua_root = g_lua;
	o->max_steps = SC_FUZZ_STEPS;
	o->max_bytes = SC_FUZZ_BYTES;
}

/* ---- 1. the corpus ----------------------------------------------------- */

/* The 1-based line of text holding mark, or 0. */
static int line_of(const char *text, const char *mark)
{
	const char *p = strstr(text, mark);
	if (!p) return 0;
	int line = 1;
	for (const char *q = text; q < p; q++) line += *q == '\n';
	return line;
}

static void corpus_case(const char *dir, const char *name)
{
	char path[2048], expect[256] = "", err[8192];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *text = slurp(path);
	if (!text) {
		check(0, name, "cannot read %s", path);
		return;
	}
	const char *e = strstr(text, "-- expect: ");
	if (e == text) sscanf(e + 11, "%255[^\n]", expect);
	int here = line_of(text, "-- here");
	free(text);
	ScriptOpts o;
	run_opts(&o);
	VariantSet *sets = NULL;
	int nsets = 0, want_sets = -1, line = 0;
	int rc = script_run_opts(path, &o, &sets, &nsets, err, sizeof err);
	if (sscanf(expect, "ok %d", &want_sets) == 1) {
		char why[256] = "";
		check(rc == 0 && nsets == want_sets && sets_sane(sets, nsets, why, sizeof why), name,
		      "rc %d, %d sets (want %d) %s%s", rc, nsets, want_sets, why, rc ? err : "");
	} else if (!*expect) {
		check(0, name, "no '-- expect: ' first line");
	} else {
		int ok = rc != 0 && strstr(err, expect) && located(err, &line) && !strncmp(err, path, strlen(path)) &&
		         (!here || line == here);
		check(ok, name, "want \"%s\" at line %d: %s", expect, here, rc ? err : "no error");
	}
	script_free(sets, nsets);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_corpus(void)
{
	char dir[1200];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/scripts", g_src);
	DIR *d = opendir(dir);
	if (!d) {
		check(0, "corpus", "cannot open %s", dir);
		return;
	}
	char *names[512];
	int n = 0;
	for (struct dirent *de; (de = readdir(d)) != NULL && n < 512;) {
		size_t len = strlen(de->d_name);
		if (len > 4 && !strcmp(de->d_name + len - 4, ".lua")) names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, by_name);
	for (int i = 0; i < n; i++) {
		corpus_case(dir, names[i]);
		free(names[i]);
	}
	check(n >= 50, "the corpus holds its hand-written cases", "%d files", n);
}

/* ---- 2. mutants -------------------------------------------------------- */

static const char *const BASE =
	"local R = require \"recur\"\n"
	"local m = R.mixer(\"mut\", { k = 64, dynamic_per_token = \"2*D\" })\n"
	"local Wa = m:param(\"Wa\", \"blockdiag\", R.normal_rsqrt_k())\n"
	"local ba = m:param(\"ba\", \"channel\", R.zeros())\n"
	"local lam = m:param(\"lam\", \"channel\", R.decay(0.81, 0.998))\n"
	"local wu = m:param(\"wu\", \"channel\", R.normal(0.02))\n"
	"local bu = m:param(\"bu\", \"scalar\", R.const(0.5))\n"
	"local pa = m:project(\"pa\", Wa, ba)\n"
	"local u = m:token_project(\"u\", wu, bu, { scale = \"rsqrt_d\" })\n"
	"local r = R.sigmoid(pa)\n"
	"local log_a = -8 * r * R.softplus(lam)\n"
	"local b = R.where(m.first, 1, R.sqrtb(1 - R.exp(2 * log_a))) * m.x * R.tanh(u)\n"
	"m:recurrence { log_a = log_a, b = b }\n"
	"m:output(m.h * R.sigmoid(pa) + R.max(m.x, 0) ^ 2)\n"
	"local s1 = R.variants { mixer = m, chunk = { 8, 16 }, prefix = { 32 }, fused_output = { true },\n"
	"  scan = { \"hierarchical\", \"onepass\" }, rules = { { \"D % 64 == 0\", \"a multiple of 64\" } } }\n"
	"local s2 = R.variants { mixer = m, chunk = { 32 }, prefix = { 64 }, shared_sfu = { true } }\n"
	"return { s1, s2 }\n";

static const char *const NUMBERS[] = {
	"0", "-1", "1e300", "-1e300", "(0/0)", "(1/0)", "math.maxinteger", "math.mininteger", "1.5",
	"17", "65", "2^53", "-0.0", "1e-320", "1024", "3.4028236e38", "(1 << 62)",
};
static const char *const STRINGS[] = {
	"\"\"", "\"../x\"", "\"D +* 3\"", "\"2*(\"", "string.rep('(', 30000)", "\"\\0\"", "\"blockdiag\"",
	"\"scalar\"", "\"onepass\"", "\"lookback\"", "\"recur.core\"", "\"arch.rglru\"", "\"x\"",
	"\"a\\nb\"", "string.rep('x', 5000)", "\"\\255\\254\"",
};
static const char *const STATEMENTS[] = {
	"while true do end", "os.exit(1)", "string.match = nil", "getmetatable('').__index = nil",
	"R = nil", "error()", "error(nil)", "error({})", "collectgarbage()", "collectgarbage('stop')",
	"local t = {} for i = 1, 1e9 do t[i] = i end", "return", "return 1", "return {}",
	"do return R.variants {} end", "m = R.mixer('m')", "setmetatable(_G, { __index = function() error('x') end })",
	"debug.sethook()", "load(string.dump(print))", "coroutine.wrap(function() while true do end end)()",
	"local f = function(f) return f(f) end f(f)", "require 'recur.core'.leaf(m, 'x')",
	"string.rep('x', 1 << 40)", "goto nowhere", "do return { s1, s1, s1 } end", "do return { s2, s1 } end",
	"m:output(m.x)", "m:recurrence { log_a = m.h, b = m.x }", "math.type = function() return 'integer' end",
	"local e = m.x for i = 1, 3000 do e = e + i * m.x end m:output(e)",
	"setmetatable({}, { __gc = print })", "dofile()", "package.searchers = {}",
	"require 'modules.toy'", "R.variants = nil",
};

/* Offsets of the starts of the lines of text (at most max). */
static int split_lines(const char *text, const char **start, int max)
{
	int n = 0;
	for (const char *p = text; *p && n < max; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		start[n++] = p;
	return n;
}

static void append(char *out, size_t cap, const char *s, size_t n)
{
	size_t len = strlen(out);
	if (len + n + 1 > cap) n = cap - len - 1;
	memcpy(out + len, s, n);
	out[len + n] = 0;
}

/* Replaces one token of kind from..to (a number, or a quoted string) on a line. */
static void replace_token(char *line, size_t cap, int strings)
{
	char *hits[32];
	int n = 0;
	for (char *p = line; *p && n < 32; p++) {
		if (strings && *p == '"') {
			char *q = strchr(p + 1, '"');
			if (!q) break;
			hits[n++] = p;
			p = q;
		} else if (!strings && *p >= '0' && *p <= '9' && (p == line || !strchr("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", p[-1]))) {
			hits[n++] = p;
			while (p[1] && strchr("0123456789.e", p[1])) p++;
		}
	}
	if (!n) return;
	char *at = hits[pick((size_t)n)], *end = at + 1;
	if (strings) end = strchr(at + 1, '"') + 1;
	else while (*end && strchr("0123456789.e", *end)) end++;
	const char *with = strings ? STRINGS[pick(sizeof STRINGS / sizeof *STRINGS)]
	                           : NUMBERS[pick(sizeof NUMBERS / sizeof *NUMBERS)];
	char rest[1024];
	snprintf(rest, sizeof rest, "%s", end);
	*at = 0;
	append(line, cap, with, strlen(with));
	append(line, cap, rest, strlen(rest));
}

/* One mutant of BASE into out. */
static void mutate(char *out, size_t cap)
{
	const char *start[64];
	int n = split_lines(BASE, start, 64);
	char lines[64][1024];
	for (int i = 0; i < n; i++) {
		const char *e = strchr(start[i], '\n');
		size_t len = e ? (size_t)(e - start[i]) + 1 : strlen(start[i]);
		snprintf(lines[i], sizeof lines[i], "%.*s", (int)len, start[i]);
	}
	int edits = 1 + (int)pick(3);
	for (int k = 0; k < edits; k++) {
		int i = (int)pick((size_t)n), j = (int)pick((size_t)n);
		switch (pick(7)) {
		case 0: lines[i][0] = 0; break;                                            /* delete */
		case 1: if (i != j) memcpy(lines[i], lines[j], sizeof lines[i]); break;  /* repeat another */
		case 2: { char t[1024]; memcpy(t, lines[i], sizeof t); memcpy(lines[i], lines[j], sizeof t); memcpy(lines[j], t, sizeof t); break; }
		case 3: replace_token(lines[i], sizeof lines[i], 0); break;
		case 4: replace_token(lines[i], sizeof lines[i], 1); break;
		case 5: {                                                                  /* a hostile statement */
			char t[1024];
			snprintf(t, sizeof t, "%s\n%s", STATEMENTS[pick(sizeof STATEMENTS / sizeof *STATEMENTS)], lines[i]);
			snprintf(lines[i], sizeof lines[i], "%s", t);
			break;
		}
		default: lines[i][pick(strlen(lines[i]) + 1)] = 0; break;                 /* cut short */
		}
	}
	out[0] = 0;
	for (int i = 0; i < n; i++) append(out, cap, lines[i], strlen(lines[i]));
}

static void test_mutants(void)
{
	int bad = 0, ok_runs = 0, refused = 0;
	char text[64 * 1024], path[1024], err[8192];
	for (int i = 0; i < N_SCRIPT_MUTANTS; i++) {
		mutate(text, sizeof text);
		snprintf(path, sizeof path, "%s/mutant%03d.lua", g_tmp, i);
		if (write_file(path, text)) {
			check(0, "mutant written", "%s", path);
			return;
		}
		ScriptOpts o;
		run_opts(&o);
		VariantSet *sets = NULL;
		int nsets = 0, line = 0;
		char why[256] = "";
		int rc = script_run_opts(path, &o, &sets, &nsets, err, sizeof err);
		int good = rc == 0 ? sets_sane(sets, nsets, why, sizeof why) : located(err, &line);
		if (rc == 0) ok_runs++;
		else refused++;
		if (g_verbose) printf("mutant %d: %s\n", i, rc ? err : "generated");
		if (!good) {
			bad++;
			printf("FAIL mutant %d (%s): %s\n---\n%s---\n", i, path, rc ? err : why, text);
		}
		script_free(sets, nsets);
		if (good) unlink(path);   /* a failing one stays, to be read */
	}
	check(bad == 0, "every script mutant gives sane sets or a located message", "%d mutants: %d generated, "
	      "%d refused, %d bad", N_SCRIPT_MUTANTS, ok_runs, refused, bad);
	check(ok_runs > 0 && refused > 0, "the mutants reach both outcomes", "%d and %d", ok_runs, refused);
}

/* ---- 3. module search -------------------------------------------------- */

static void test_modules(void)
{
	char path[1024], inc[1200], err[8192];
	snprintf(path, sizeof path, "%s/uses_toy.lua", g_tmp);
	snprintf(inc, sizeof inc, "%s/tests/fuzz/scripts", g_src);
	write_file(path, "local R = require \"recur\"\n"
	                 "return R.variants { mixer = require \"modules.toy\", chunk = { 8 }, prefix = { 32 } }\n");
	ScriptOpts o;
	run_opts(&o);
	VariantSet *sets = NULL;
	int nsets = 0, line = 0;
	int rc = script_run_opts(path, &o, &sets, &nsets, err, sizeof err);
	check(rc != 0 && located(err, &line) && line == 2 && strstr(err, "no file") && strstr(err, g_tmp) &&
	      strstr(err, g_lua), "a missing module: the message lists the files tried", "%s", err);
	const char *dirs[] = { "/nonexistent", inc };
	o.include = dirs;
	o.ninclude = 2;
	rc = script_run_opts(path, &o, &sets, &nsets, err, sizeof err);
	check(rc == 0 && nsets == 1 && !strcmp(sets[0].mixer.name, "toy"), "-I directories are searched, in order",
	      "%s", rc ? err : "");
	script_free(sets, nsets);
	o.ninclude = 0;
	setenv("RECUR_PATH", inc, 1);
	rc = script_run_opts(path, &o, &sets, &nsets, err, sizeof err);
	unsetenv("RECUR_PATH");
	check(rc == 0 && nsets == 1, "$RECUR_PATH is searched", "%s", rc ? err : "");
	script_free(sets, nsets);
	unlink(path);
	/* a project laid out as proj/variants/x.lua and proj/arch/t.lua */
	char dir[1024], arch[1100], grid[1100];
	snprintf(dir, sizeof dir, "%s/proj", g_tmp);
	snprintf(arch, sizeof arch, "%s/arch", dir);
	snprintf(grid, sizeof grid, "%s/variants", dir);
	mkdir(dir, 0777);
	mkdir(arch, 0777);
	mkdir(grid, 0777);
	snprintf(arch, sizeof arch, "%s/arch/t.lua", dir);
	snprintf(grid, sizeof grid, "%s/variants/x.lua", dir);
	write_file(arch, "local R = require \"recur\"\nlocal m = R.mixer(\"t\")\n"
	                 "m:recurrence { log_a = -R.softplus(m.x), b = m.x }\nm:output(m.h)\nreturn m\n");
	write_file(grid, "local R = require \"recur\"\n"
	                 "return R.variants { mixer = require \"arch.t\", chunk = { 8 }, prefix = { 32 } }\n");
	run_opts(&o);
	rc = script_run_opts(grid, &o, &sets, &nsets, err, sizeof err);
	check(rc == 0 && nsets == 1 && !strcmp(sets[0].mixer.name, "t"),
	      "a grid finds arch.t in the folder above its own", "%s", rc ? err : "");
	script_free(sets, nsets);
	unlink(arch);
	unlink(grid);
	snprintf(arch, sizeof arch, "%s/arch", dir);
	snprintf(grid, sizeof grid, "%s/variants", dir);
	rmdir(arch);
	rmdir(grid);
	rmdir(dir);
}

/* ---- 4. shape expressions ---------------------------------------------- */

static void shape_vars(ShapeVars *v, int which)
{
	static const int64_t ext[] = { 1, 0, -1, INT64_MAX, INT64_MIN, 64, 1 << 30, 3 };
	memset(v, 0, sizeof *v);
	const char *names[] = { "B", "L", "D", "K", "H", "T", "NT", "G" };
	for (int i = 0; i < 8; i++)
		shapex_set(v, names[i], ext[(which + i * 3) % 8]);
}

/* Evaluates expr at several shapes: a value or a located message. */
static int shape_sane(const char *expr, char *why, size_t len)
{
	char err[1024], head[64];
	snprintf(head, sizeof head, "shape expression \"%.20s", expr);
	for (int w = 0; w < 4; w++) {
		ShapeVars v;
		shape_vars(&v, w);
		int64_t x;
		err[0] = 0;
		int rc = w ? shapex_eval(expr, &v, &x, err, sizeof err) : shapex_check(expr, &v, err, sizeof err);
		if (rc != 0 && (rc != -1 || strncmp(err, head, strlen(head)) || !strstr(err, "(at offset "))) {
			snprintf(why, len, "rc %d: %s", rc, err);
			return 0;
		}
	}
	return 1;
}

static void shape_error(const char *expr, const char *words)
{
	char err[1024] = "";
	ShapeVars v;
	shape_vars(&v, 0);
	int64_t x;
	int rc = shapex_eval(expr, &v, &x, err, sizeof err);
	char what[96];
	snprintf(what, sizeof what, "shape: \"%.40s%s\" is refused", expr, strlen(expr) > 40 ? "..." : "");
	check(rc == -1 && strstr(err, words), what, "%s", rc ? err : "no error");
}

static char *repeat3(const char *a, int n, const char *mid, const char *b)
{
	size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
	char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *p = s;
	for (int i = 0; i < n; i++, p += la) memcpy(p, a, la);
	memcpy(p, mid, lm);
	p += lm;
	for (int i = 0; i < n; i++, p += lb) memcpy(p, b, lb);
	*p = 0;
	return s;
}

static void test_shapes(void)
{
	shape_error("cdiv(-9223372036854775807-1, -1)", "overflow");
	shape_error("(-9223372036854775807-1) / -1", "overflow");
	shape_error("9223372036854775808", "too large");
	shape_error("9223372036854775807 * 2", "overflow");
	shape_error("-(-9223372036854775807-1)", "overflow");
	shape_error("1 % 0", "division by zero");
	char *deep = repeat3("(", 30000, "D", ")");
	shape_error(deep, "nested more than");
	free(deep);
	deep = repeat3("-", 30000, "D", "");
	shape_error(deep, "nested more than");
	free(deep);
	deep = repeat3("min(", 30000, "D", ",1)");
	shape_error(deep, "nested more than");
	free(deep);
	ShapeVars v;
	shape_vars(&v, 0);
	int64_t x = 1;
	char err[512];
	check(shapex_eval("(-9223372036854775807-1) % -1", &v, &x, err, sizeof err) == 0 && x == 0,
	      "shape: INT64_MIN % -1 is 0", "%lld", (long long)x);
	check(shapex_check("cdiv(-9223372036854775807-1, -1)", &v, err, sizeof err) == 0,
	      "shape: a check does not fault on arithmetic", "%s", err);
	/* mutants of the expressions the templates write into manifests */
	static const char *const seeds[] = {
		"cdiv(L,T)", "min(cdiv(B*L,8),1024)", "CS*(G0/CS)", "cdiv(G/CS,2)", "D % 64 == 0 && L >= 1",
		"B*L*D*2", "max(1, min(L, 4096)) - -3", "(D/K)*(NT+1)*128*4", "L != 0 || D > 0", "2*D",
	};
	static const char alphabet[] = "BLDKHTG0123456789()+-*/%,<>=!&|  cdivminax_$";
	int bad = 0;
	for (int i = 0; i < N_SHAPE_MUTANTS; i++) {
		char s[256];
		snprintf(s, sizeof s, "%s", seeds[pick(sizeof seeds / sizeof *seeds)]);
		for (int k = 0, edits = 1 + (int)pick(4); k < edits; k++) {
			size_t n = strlen(s), at = pick(n + 1);
			switch (pick(4)) {
			case 0: if (n) memmove(s + at, s + at + 1, n - at); break;            /* delete */
			case 1: if (n + 2 < sizeof s) { memmove(s + at + 1, s + at, n - at + 1); s[at] = alphabet[pick(sizeof alphabet - 1)]; } break;
			case 2: if (at < n) s[at] = alphabet[pick(sizeof alphabet - 1)]; break;
			default: if (2 * n + 3 < sizeof s) { char t[256]; snprintf(t, sizeof t, "(%s)*(%s)", s, s); snprintf(s, sizeof s, "%s", t); }
			}
		}
		char why[1200];
		if (!shape_sane(s, why, sizeof why)) {
			bad++;
			printf("FAIL shape mutant \"%s\": %s\n", s, why);
		}
	}
	check(bad == 0, "every shape mutant gives a value or a located message", "%d mutants, %d bad",
	      N_SHAPE_MUTANTS, bad);
}

int main(void)
{
	const char *root = getenv("RECUR_SOURCE_DIR"), *verbose = getenv("RECUR_FUZZ_VERBOSE");
	g_verbose = verbose && *verbose && strcmp(verbose, "0") != 0;
	snprintf(g_src, sizeof g_src, "%s", root && *root ? root : RECUR_SOURCE_DIR);
	snprintf(g_lua, sizeof g_lua, "%s/lua", g_src);
	char probe[1200];
	snprintf(probe, sizeof probe, "%s/recur.lua", g_lua);
	if (access(probe, R_OK) != 0) {
		printf("skipped: %s not found (set RECUR_SOURCE_DIR to the source tree)\n", probe);
		return 77;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(g_tmp, sizeof g_tmp, "%s/recur_fuzz_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(g_tmp)) {
		printf("FAIL cannot make a temporary folder %s\n", g_tmp);
		return 1;
	}
	test_corpus();
	test_modules();
	test_mutants();
	test_shapes();
	if (!failed) rmdir(g_tmp);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
