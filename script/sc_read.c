/* The script's result, read into VariantSets (sc_convert, see sc_impl.h).
 *
 * R.variants builds what is read here, but a script can build the same
 * tables by hand, through recur.core, or change what recur.lua computes,
 * so nothing is trusted: every field is read raw (no metamethod runs, so
 * no user code) and checked for its type, its range and its agreement with
 * the rest (counts against MX_MAXPARAM and MX_MAXPROJ, indices against the
 * counts, leaf indices in the graph, variant names against their flags,
 * shape expressions against the shape language), so that what reaches the
 * templates is what R.variants could have made. Messages name the set's
 * line (its R.variants call) when it has one.
 *
 * A manifest holds one mixer per name and each variant once, so across
 * sets: a set listed twice, or two sets declaring the same variants and
 * rules of one mixer, are generated once; two different mixers of one
 * name, or two sets sharing some variants of one mixer, are refused.
 */
#include "sc_impl.h"

#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAXLIST 65536   /* entries of a returned list (repeats included) */

/* The reader: where its errors are located. */
typedef struct {
	lua_State *L;
	const char *site;   /* "FILE:LINE:" */
} Rd;

static int rd_fail(const Rd *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(const Rd *rd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	lua_pushfstring(rd->L, "%s %s", rd->site, msg);
	return lua_error(rd->L);
}

/* ---- values ------------------------------------------------------------ */

/* Pushes t[key], raw; its type. */
static int rd_get(lua_State *L, int t, const char *key)
{
	lua_pushstring(L, key);
	return lua_rawget(L, t);
}

static void rd_type(const Rd *rd, int t, const char *key, int type, const char *of)
{
	int got = rd_get(rd->L, t, key);
	if (got != type)
		rd_fail(rd, "malformed variant set (not as R.variants makes it): field '%s' of %s is %s, expected %s",
		        key, of, lua_typename(rd->L, got), lua_typename(rd->L, type));
}

/* Valid UTF-8 without control characters: text for messages and JSON. */
static int rd_is_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f) return 0;
		if (c < 0x80) { i++; continue; }
		size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
		if (!len || i + len > n) return 0;
		for (size_t k = 1; k < len; k++)
			if (((unsigned char)s[i + k] & 0xc0) != 0x80) return 0;
		i += len;   /* overlong 3- and 4-byte forms pass: they are text to JSON all the same */
	}
	return 1;
}

static int rd_is_ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* A string field of at most cap-1 bytes: text, or an identifier. */
static void rd_str(const Rd *rd, int t, const char *key, const char *of, char *dst, size_t cap, int ident)
{
	rd_type(rd, t, key, LUA_TSTRING, of);
	size_t n;
	const char *s = lua_tolstring(rd->L, -1, &n);
	if (n >= cap) rd_fail(rd, "%s: %s is longer than %d characters", of, key, (int)cap - 1);
	if (strlen(s) != n || !rd_is_text(s, n)) rd_fail(rd, "%s: %s is not text (control characters or bad UTF-8)", of, key);
	if (ident && !rd_is_ident(s)) rd_fail(rd, "%s: %s \"%s\" is not an identifier", of, key, s);
	memcpy(dst, s, n + 1);
	lua_pop(rd->L, 1);
}

/* A file path, informational: its tail when too long, '?' for what is not text. */
static void rd_path(const Rd *rd, int t, const char *key, const char *of, char *dst, size_t cap)
{
	rd_type(rd, t, key, LUA_TSTRING, of);
	size_t n;
	const char *s = lua_tolstring(rd->L, -1, &n);
	if (n < cap) memcpy(dst, s, n + 1);
	else snprintf(dst, cap, "...%s", s + n - (cap - 4));
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '?';
	lua_pop(rd->L, 1);
}

static int rd_int(const Rd *rd, int t, const char *key, const char *of, int lo, int hi)
{
	rd_type(rd, t, key, LUA_TNUMBER, of);
	int isint;
	lua_Integer v = lua_tointegerx(rd->L, -1, &isint);
	if (!isint || v < lo || v > hi) rd_fail(rd, "%s: %s must be an integer from %d to %d", of, key, lo, hi);
	lua_pop(rd->L, 1);
	return (int)v;
}

static double rd_num(const Rd *rd, int t, const char *key, const char *of)
{
	rd_type(rd, t, key, LUA_TNUMBER, of);
	double v = lua_tonumber(rd->L, -1);
	if (!sc_f32_finite(v)) rd_fail(rd, "%s: %s = %g is not finite in float32", of, key, v);
	lua_pop(rd->L, 1);
	return v;
}

static bool rd_bool(const Rd *rd, int t, const char *key, const char *of)
{
	rd_type(rd, t, key, LUA_TBOOLEAN, of);
	bool v = lua_toboolean(rd->L, -1);
	lua_pop(rd->L, 1);
	return v;
}

static int rd_enum(const Rd *rd, int t, const char *key, const char *of, const char *const *names)
{
	rd_type(rd, t, key, LUA_TSTRING, of);
	const char *s = lua_tostring(rd->L, -1);
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0) {
			lua_pop(rd->L, 1);
			return i;
		}
	return rd_fail(rd, "%s: %s has an unknown value", of, key);
}

/* Pushes field key, a list of at most max entries (min at least); its length. */
static int rd_list(const Rd *rd, int t, const char *key, const char *of, int min, int max)
{
	rd_type(rd, t, key, LUA_TTABLE, of);
	size_t n = lua_rawlen(rd->L, -1);
	if (n < (size_t)min || n > (size_t)max)
		rd_fail(rd, "%s: %s has %zu entries, expected %d to %d", of, key, n, min, max);
	return (int)n;
}

/* Pushes entry i (1-based) of the list on top, a table; its index. */
static int rd_entry(const Rd *rd, int i, const char *what)
{
	if (lua_rawgeti(rd->L, -1, i) != LUA_TTABLE)
		rd_fail(rd, "malformed variant set: %s %d is not a table", what, i);
	return lua_gettop(rd->L);
}

/* ---- the mixer --------------------------------------------------------- */

static void rd_param(const Rd *rd, int e, MxParam *p, const char *of)
{
	static const char *const kinds[] = { "channel", "blockdiag", "scalar", NULL };
	static const char *const inits[] = { "zeros", "const", "normal", "decay", NULL };
	rd_str(rd, e, "name", of, p->name, sizeof p->name, 1);
	p->kind = (ParamKind)rd_enum(rd, e, "kind", of, kinds);
	p->init = (InitKind)rd_enum(rd, e, "init", of, inits);
	p->a = rd_num(rd, e, "a", of);
	p->b = rd_num(rd, e, "b", of);
	p->a_is_rsqrt_k = rd_bool(rd, e, "rsqrt_k", of);
	p->line = rd_int(rd, e, "line", of, 0, 1 << 30);
	/* what R.normal and R.decay check: the runtime draws from these */
	if (p->init == INIT_NORMAL && !p->a_is_rsqrt_k && !(p->a > 0))
		rd_fail(rd, "parameter %s: R.normal(std) needs std > 0", p->name);
	if (p->init == INIT_DECAY && !(p->a > 0 && p->a <= p->b && p->b < 1))
		rd_fail(rd, "parameter %s: R.decay(lo, hi) needs 0 < lo <= hi < 1", p->name);
	if (p->a_is_rsqrt_k && p->init != INIT_NORMAL)
		rd_fail(rd, "parameter %s: a std of 1/sqrt(K) belongs to R.normal_rsqrt_k()", p->name);
}

static void rd_proj(const Rd *rd, int e, const Mixer *mx, MxProj *p, const char *of)
{
	static const char *const kinds[] = { "blockdiag", "token", NULL };
	rd_str(rd, e, "name", of, p->name, sizeof p->name, 1);
	p->kind = (ProjKind)rd_enum(rd, e, "kind", of, kinds);
	p->weight = rd_int(rd, e, "weight", of, 0, mx->nparam - 1);
	p->bias = rd_int(rd, e, "bias", of, 0, mx->nparam - 1);
	p->scale_rsqrt_d = rd_bool(rd, e, "rsqrt_d", of);
	p->line = rd_int(rd, e, "line", of, 0, 1 << 30);
	/* what m:project and m:token_project check */
	ParamKind wk = mx->param[p->weight].kind, bk = mx->param[p->bias].kind;
	if (p->kind == PJ_BLOCKDIAG && (wk != PK_BLOCKDIAG || bk != PK_CHANNEL || p->scale_rsqrt_d))
		rd_fail(rd, "projection %s: a block-diagonal projection takes a blockdiag weight and a channel bias", p->name);
	if (p->kind == PJ_TOKEN && (wk != PK_CHANNEL || bk != PK_SCALAR))
		rd_fail(rd, "projection %s: a token projection takes a channel weight and a scalar bias", p->name);
}

static void rd_params(const Rd *rd, int t, Mixer *mx)
{
	char of[96];
	mx->nparam = rd_list(rd, t, "params", "the mixer", 0, MX_MAXPARAM);
	for (int i = 0; i < mx->nparam; i++) {
		snprintf(of, sizeof of, "parameter %d of mixer %s", i + 1, mx->name);
		rd_param(rd, rd_entry(rd, i + 1, "parameter"), &mx->param[i], of);
		lua_pop(rd->L, 1);
	}
	lua_pop(rd->L, 1);
	mx->nproj = rd_list(rd, t, "projs", "the mixer", 0, MX_MAXPROJ);
	for (int i = 0; i < mx->nproj; i++) {
		snprintf(of, sizeof of, "projection %d of mixer %s", i + 1, mx->name);
		rd_proj(rd, rd_entry(rd, i + 1, "projection"), mx, &mx->proj[i], of);
		lua_pop(rd->L, 1);
	}
	lua_pop(rd->L, 1);
	/* parameters and projections share one namespace: each names a buffer */
	const char *names[MX_MAXPARAM + MX_MAXPROJ];
	int n = 0;
	for (int i = 0; i < mx->nparam; i++) names[n++] = mx->param[i].name;
	for (int i = 0; i < mx->nproj; i++) names[n++] = mx->proj[i].name;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(names[i], names[j])) rd_fail(rd, "mixer %s: two buffers are named %s", mx->name, names[i]);
}

/* The leaves and constants the roots reach are ones a mixer may have; the
 * recurrence does not depend on h; the expressions are within MX_MAXNODES. */
static void rd_graph(const Rd *rd, const Mixer *mx, const ExGraph *g)
{
	int roots[3] = { mx->log_a, mx->b, mx->y };
	int count = sc_reach_count(g, roots, 3);
	if (count < 0) rd_fail(rd, "out of memory");
	if (count > MX_MAXNODES)
		rd_fail(rd, "mixer %s: its expressions have %d nodes (log_a, b and the output together); the kernels "
		        "evaluate every node per element: at most %d", mx->name, count, MX_MAXNODES);
	if (ex_depends(g, mx->log_a, EX_H, -1) || ex_depends(g, mx->b, EX_H, -1))
		rd_fail(rd, "mixer %s: log_a and b must not depend on h: the recurrence must stay linear", mx->name);
	for (int id = 0; id < g->len; id++) {
		const ExNode *n = &g->n[id];
		if (n->op == EX_SEED || n->op == EX_TOK || n->op == EX_SQRTB_GRAD)
			rd_fail(rd, "mixer %s: node %d is a %s node, which only derivation makes", mx->name, id, ex_opname(n->op));
		if (n->op == EX_CONST && !sc_f32_finite(n->k))
			rd_fail(rd, "mixer %s: constant %g is not finite in float32", mx->name, n->k);
		if (n->op == EX_PARAM && (n->idx >= mx->nparam || mx->param[n->idx].kind == PK_BLOCKDIAG))
			rd_fail(rd, "mixer %s: node %d reads parameter %d, which is not a channel or scalar parameter",
			        mx->name, id, n->idx + 1);
		if (n->op == EX_PROJ && n->idx >= mx->nproj)
			rd_fail(rd, "mixer %s: node %d reads projection %d of %d", mx->name, id, n->idx + 1, mx->nproj);
	}
}

/* Reads the mixer at t into mx (its graph copied); *src: the graph itself. */
static void rd_mixer(const Rd *rd, int t, Mixer *mx, const ExGraph **src)
{
	char err[512];
	rd_str(rd, t, "name", "the mixer", mx->name, sizeof mx->name, 1);
	mx->k = rd_int(rd, t, "k", "the mixer", 1, 1 << 20);
	rd_str(rd, t, "controller", "the mixer", mx->controller, sizeof mx->controller, 0);
	rd_str(rd, t, "dyn_per_token", "the mixer", mx->dyn_per_token, sizeof mx->dyn_per_token, 0);
	if (sc_shape_check(mx->dyn_per_token, err, sizeof err))
		rd_fail(rd, "mixer %s: dynamic_per_token: %s", mx->name, err);
	rd_path(rd, t, "script", "the mixer", mx->script, sizeof mx->script);
	mx->line = rd_int(rd, t, "line", "the mixer", 0, 1 << 30);
	mx->rec_line = rd_int(rd, t, "rec_line", "the mixer", 0, 1 << 30);
	mx->out_line = rd_int(rd, t, "out_line", "the mixer", 0, 1 << 30);
	rd_get(rd->L, t, "graph");
	const ScGraph *sg = luaL_testudata(rd->L, -1, SC_GRAPH);
	if (!sg) rd_fail(rd, "malformed variant set: mixer %s has no expression graph", mx->name);
	lua_pop(rd->L, 1);
	const ExGraph *g = &sg->g;
	if (g->len < 1) rd_fail(rd, "malformed variant set: mixer %s has an empty expression graph", mx->name);
	mx->log_a = rd_int(rd, t, "log_a", "the mixer", 0, g->len - 1);
	mx->b = rd_int(rd, t, "b", "the mixer", 0, g->len - 1);
	mx->y = rd_int(rd, t, "y", "the mixer", 0, g->len - 1);
	rd_params(rd, t, mx);
	rd_graph(rd, mx, g);
	if (ex_copy(&mx->g, g)) rd_fail(rd, "out of memory");
	*src = g;
}

/* ---- variants and rules ------------------------------------------------ */

/* The name R.variants gives a variant with these flags. */
static void rd_canonical(const Variant *v, const char *mixer, char *buf, size_t n)
{
	if (v->decode) {   /* R.decode's one variant: named by its mixer, as a manifest names each variant once */
		snprintf(buf, n, "%s_decode%s", mixer, v->mma ? "_mma" : v->rows ? "_rows" : "");
		return;
	}
	snprintf(buf, n, "%s%s%s%s%s%s%s%s%s%s%sgrouped_prefix%d_%s_chunk%d", v->apart ? "apart_" : "",
	         v->scan_proj ? "scanproj_" : "", v->proj_ahead ? "ahead_" : "", v->recompute ? "recompute_" : "",
	         v->docs ? "docs_" : v->resets ? "resets_" : "",
	         v->states ? "states_" : "", v->map ? "map_" : "", v->fused_output ? "fused_output_" : "",
	         v->fused_write ? "fused_write_" : "", v->shared_sfu ? "shared_sfu_" : "", v->fused ? "fused_" : "",
	         v->prefix, v->onepass ? "onepass" : v->lookback ? "lookback" : "hierarchical", v->chunk);
}

static int rd_one_of(int x, const int *set, int n)
{
	for (int i = 0; i < n; i++)
		if (x == set[i]) return 1;
	return 0;
}

static void rd_variant(const Rd *rd, int e, const char *mixer, int ntoken, Variant *v, const char *of)
{
	static const char *const scans[] = { "hierarchical", "lookback", "onepass", "decode", NULL };
	static const int chunks[] = { 8, 16, 32, 64 }, prefixes[] = { 32, 64, 128 };
	rd_str(rd, e, "name", of, v->name, sizeof v->name, 1);
	v->chunk = rd_int(rd, e, "chunk", of, 1, 1024);
	v->prefix = rd_int(rd, e, "prefix", of, 1, 1024);
	if (!rd_one_of(v->chunk, chunks, 4)) rd_fail(rd, "%s: chunk %d is not one of 8, 16, 32, 64", of, v->chunk);
	if (!rd_one_of(v->prefix, prefixes, 3)) rd_fail(rd, "%s: prefix %d is not one of 32, 64, 128", of, v->prefix);
	v->fused = rd_bool(rd, e, "fused", of);
	v->shared_sfu = rd_bool(rd, e, "shared_sfu", of);
	v->fused_output = rd_bool(rd, e, "fused_output", of);
	v->fused_write = rd_bool(rd, e, "fused_write", of);
	v->resets = rd_bool(rd, e, "resets", of);
	v->states = rd_bool(rd, e, "states", of);
	v->map = rd_bool(rd, e, "map", of);
	v->mma = rd_bool(rd, e, "mma", of);
	v->rows = rd_bool(rd, e, "rows", of);
	v->materialized = rd_bool(rd, e, "materialized", of);
	v->apart = rd_bool(rd, e, "apart", of);
	v->scan_proj = rd_bool(rd, e, "scan_proj", of);
	v->proj_ahead = rd_bool(rd, e, "proj_ahead", of);
	v->recompute = rd_bool(rd, e, "recompute", of);
	v->docs = rd_bool(rd, e, "docs", of);
	int scan = rd_enum(rd, e, "scan", of, scans);
	v->decode = scan == 3;
	v->onepass = scan == 2;
	v->lookback = scan == 1 || scan == 2;
	rd_str(rd, e, "controller", of, v->controller, sizeof v->controller, 0);
	rd_path(rd, e, "file", of, v->file, sizeof v->file);
	v->line = rd_int(rd, e, "line", of, 0, 1 << 30);
	char want[sizeof v->name];
	rd_canonical(v, mixer, want, sizeof want);
	if (strcmp(v->name, want) != 0) rd_fail(rd, "%s: named %s, but its flags make it %s", of, v->name, want);
	if (v->materialized != (!v->fused && ntoken == 0))
		rd_fail(rd, "%s: materialized must be %s (unfused, and no token projection)", of,
		        !v->fused && ntoken == 0 ? "true" : "false");
	if (v->shared_sfu && ntoken == 0)
		rd_fail(rd, "%s: shared_sfu needs per-token shared expressions; the mixer has none", of);
	if (v->apart && (v->decode || !v->fused || ntoken > 0))
		rd_fail(rd, "%s: apart takes a scan variant, fused, of a mixer without token projections", of);
	if (v->scan_proj && (!v->apart || !v->lookback))
		rd_fail(rd, "%s: scan_proj moves the projections apart into a look-back fwd_scan: apart true, scan lookback "
		        "or onepass", of);
	if (v->proj_ahead && !v->scan_proj)
		rd_fail(rd, "%s: proj_ahead is a form of scan_proj's fwd_scan: scan_proj true", of);
	if (v->recompute && (!v->apart || v->scan_proj))
		rd_fail(rd, "%s: recompute runs proj_fwd again in the backward: apart true, scan_proj false", of);
	if (v->docs && (!v->resets || v->states || v->decode))
		rd_fail(rd, "%s: docs takes its reset marks and states itself (resets true, states false) and is a scan "
		        "variant", of);
	if (v->map && !v->states)
		rd_fail(rd, "%s: map comes with the states (map_h = hT - exp(map_loga) h0): states true", of);
	if ((v->mma || v->rows) && !v->decode)
		rd_fail(rd, "%s: %s is an option of decode steps (R.decode)", of, v->mma ? "mma" : "rows");
	if (v->mma && v->rows)
		rd_fail(rd, "%s: mma and rows are two forms of the decode step: one of them", of);
	if (v->decode && (v->resets || v->states || v->fused != (ntoken == 0)))
		rd_fail(rd, "%s: a decode step takes its states as h0, hT and index (resets and states false) and is "
		        "fused unless the mixer has a token stage", of);
}

static void rd_variants(const Rd *rd, int t, VariantSet *vs)
{
	char of[96];
	int ntoken = 0;
	for (int j = 0; j < vs->mixer.nproj; j++) ntoken += vs->mixer.proj[j].kind == PJ_TOKEN;
	vs->nvar = rd_list(rd, t, "variants", "the set", 1, MX_MAXVAR);
	for (int i = 0; i < vs->nvar; i++) {
		snprintf(of, sizeof of, "variant %d of the set", i + 1);
		rd_variant(rd, rd_entry(rd, i + 1, "variant"), vs->mixer.name, ntoken, &vs->var[i], of);
		lua_pop(rd->L, 1);
		for (int j = 0; j < i; j++)
			if (!strcmp(vs->var[i].name, vs->var[j].name)) rd_fail(rd, "variant %s is in the set twice", vs->var[i].name);
	}
	lua_pop(rd->L, 1);
}

static void rd_rules(const Rd *rd, int t, VariantSet *vs)
{
	char of[64], err[512];
	vs->nrule = rd_list(rd, t, "rules", "the set", 0, MX_MAXRULE);
	for (int i = 0; i < vs->nrule; i++) {
		Rule *r = &vs->rule[i];
		snprintf(of, sizeof of, "rule %d", i + 1);
		int e = rd_entry(rd, i + 1, "rule");
		rd_str(rd, e, "expr", of, r->expr, sizeof r->expr, 0);
		rd_str(rd, e, "message", of, r->message, sizeof r->message, 0);
		if (sc_shape_check(r->expr, err, sizeof err)) rd_fail(rd, "rule %d: %s", i + 1, err);
		lua_pop(rd->L, 1);
	}
	lua_pop(rd->L, 1);
}

/* "FILE:LINE:" of the set at t (its first variant's R.variants call), or dflt. */
static void rd_set_site(lua_State *L, int t, const char *dflt, char *buf, size_t n)
{
	int top = lua_gettop(L);
	snprintf(buf, n, "%s", dflt);
	if (rd_get(L, t, "variants") == LUA_TTABLE && lua_rawgeti(L, -1, 1) == LUA_TTABLE) {
		int e = lua_gettop(L);
		int isint = 0;
		if (rd_get(L, e, "file") == LUA_TSTRING && rd_get(L, e, "line") == LUA_TNUMBER) {
			lua_Integer line = lua_tointegerx(L, -1, &isint);
			size_t len;
			const char *file = lua_tolstring(L, -2, &len);
			if (isint && line > 0 && line < (1 << 30) && len < MX_PATH && rd_is_text(file, len))
				snprintf(buf, n, "%s:%d:", file, (int)line);
		}
	}
	lua_settop(L, top);
}

static void rd_set(lua_State *L, int t, const char *dflt, VariantSet *vs, const ExGraph **src, char *site, size_t n)
{
	rd_set_site(L, t, dflt, site, n);
	Rd rd = { L, site };
	rd_type(&rd, t, "mixer", LUA_TTABLE, "the set");
	rd_mixer(&rd, lua_gettop(L), &vs->mixer, src);
	lua_pop(L, 1);
	rd_variants(&rd, t, vs);
	rd_rules(&rd, t, vs);
}

/* ---- across sets ------------------------------------------------------- */

static int same_param(const MxParam *a, const MxParam *b)
{
	return !strcmp(a->name, b->name) && a->kind == b->kind && a->init == b->init && a->a == b->a &&
	       a->b == b->b && a->a_is_rsqrt_k == b->a_is_rsqrt_k;
}

static int same_proj(const MxProj *a, const MxProj *b)
{
	return !strcmp(a->name, b->name) && a->kind == b->kind && a->weight == b->weight && a->bias == b->bias &&
	       a->scale_rsqrt_d == b->scale_rsqrt_d;
}

/* One mixer: the same graph, roots, buffers and options. */
static int same_mixer(const Mixer *a, const ExGraph *ga, const Mixer *b, const ExGraph *gb)
{
	if (ga != gb || a->k != b->k || a->log_a != b->log_a || a->b != b->b || a->y != b->y ||
	    strcmp(a->controller, b->controller) || strcmp(a->dyn_per_token, b->dyn_per_token) ||
	    a->nparam != b->nparam || a->nproj != b->nproj)
		return 0;
	for (int i = 0; i < a->nparam; i++)
		if (!same_param(&a->param[i], &b->param[i])) return 0;
	for (int i = 0; i < a->nproj; i++)
		if (!same_proj(&a->proj[i], &b->proj[i])) return 0;
	return 1;
}

/* The same variants (names and controllers, in order) and rules. */
static int same_grid(const VariantSet *a, const VariantSet *b)
{
	if (a->nvar != b->nvar || a->nrule != b->nrule) return 0;
	for (int i = 0; i < a->nvar; i++)
		if (strcmp(a->var[i].name, b->var[i].name) || strcmp(a->var[i].controller, b->var[i].controller)) return 0;
	for (int i = 0; i < a->nrule; i++)
		if (strcmp(a->rule[i].expr, b->rule[i].expr) || strcmp(a->rule[i].message, b->rule[i].message)) return 0;
	return 1;
}

/* Set k against the sets before it: 1 when it repeats one (drop it), 0
 * when it is new; an error for a clash. */
static int rd_against(const Rd *rd, VariantSet *sets, const ExGraph **src, int k, char (*sites)[MX_PATH + 32])
{
	const VariantSet *s = &sets[k];
	for (int j = 0; j < k; j++) {
		const VariantSet *o = &sets[j];
		if (strcmp(o->mixer.name, s->mixer.name) != 0) continue;
		int at = (int)strlen(sites[j]) - 1;   /* quoted without its colon */
		if (!same_mixer(&o->mixer, src[j], &s->mixer, src[k]))
			rd_fail(rd, "mixer %s: this set's mixer is not the one of the set at %.*s, also named %s (a different "
			        "mixer, or one declared further after that set); a manifest holds one mixer per name",
			        s->mixer.name, at, sites[j], s->mixer.name);
		if (same_grid(o, s)) return 1;
		for (int a = 0; a < s->nvar; a++)
			for (int b = 0; b < o->nvar; b++)
				if (!strcmp(s->var[a].name, o->var[b].name))
					rd_fail(rd, "variant %s of mixer %s is also in the set at %.*s; a manifest holds each variant "
					        "once", s->var[a].name, s->mixer.name, at, sites[j]);
	}
	return 0;
}

/* ---- the result -------------------------------------------------------- */

static int rd_is_set(lua_State *L, int i)
{
	int top = lua_gettop(L);
	int ok = luaL_getmetafield(L, i, "__name") == LUA_TSTRING && strcmp(lua_tostring(L, -1), "recur.variantset") == 0;
	lua_settop(L, top);
	return ok;
}

/* Pushes the distinct sets of the result at index 1, in order, as a list;
 * its length. A set listed more than once is one set. */
static int rd_distinct(const Rd *rd)
{
	lua_State *L = rd->L;
	lua_Integer n = 1;
	int single = rd_is_set(L, 1);
	if (!single) {
		if (!lua_istable(L, 1) || lua_getmetatable(L, 1))
			rd_fail(rd, "the script must return R.variants{...} or a list of them, not a %s",
			        lua_istable(L, 1) ? "table with a metatable" : luaL_typename(L, 1));
		n = (lua_Integer)lua_rawlen(L, 1);
		if (n < 1) rd_fail(rd, "the script returned an empty list: it must return R.variants{...} or a list of them");
		if (n > SC_MAXLIST) rd_fail(rd, "the script returned a list of %lld entries; at most %d", (long long)n, SC_MAXLIST);
	}
	lua_newtable(L);   /* seen */
	lua_newtable(L);   /* the distinct sets */
	int seen = lua_gettop(L) - 1, out = seen + 1, nd = 0;
	for (lua_Integer i = 1; i <= n; i++) {
		if (single) lua_pushvalue(L, 1);
		else lua_rawgeti(L, 1, i);
		if (!rd_is_set(L, -1))
			rd_fail(rd, "entry %lld of the returned list is not a variant set made by R.variants (it is %s)",
			        (long long)i, luaL_typename(L, -1));
		lua_pushvalue(L, -1);
		if (lua_rawget(L, seen) != LUA_TNIL) {
			lua_pop(L, 2);
			continue;
		}
		lua_pop(L, 1);
		if (++nd > SC_MAXSETS) rd_fail(rd, "the script returned more than %d different variant sets", SC_MAXSETS);
		lua_pushvalue(L, -1);
		lua_pushboolean(L, 1);
		lua_rawset(L, seen);
		lua_rawseti(L, out, nd);
	}
	lua_remove(L, seen);
	return nd;
}

int sc_convert(lua_State *L)
{
	ScConv *cv = lua_touserdata(L, 2);
	lua_settop(L, 1);
	Rd rd = { L, cv->site };
	int nd = rd_distinct(&rd);
	int list = lua_gettop(L);
	cv->sets = calloc((size_t)nd, sizeof *cv->sets);   /* zeroed graphs: script_free is always safe */
	if (!cv->sets) return luaL_error(L, "%s out of memory", cv->site);
	/* per set: where it is and the graph it came from, in userdata so
	 * that an error (a longjmp) leaks nothing */
	char (*sites)[MX_PATH + 32] = lua_newuserdatauv(L, (size_t)nd * sizeof *sites, 0);
	const ExGraph **src = lua_newuserdatauv(L, (size_t)nd * sizeof *src, 0);
	for (int i = 0; i < nd; i++) {
		lua_rawgeti(L, list, i + 1);
		int k = cv->n++;   /* counted at once: its graph copy is freed with the rest on an error */
		VariantSet *vs = &cv->sets[k];
		rd_set(L, lua_gettop(L), cv->site, vs, &src[k], sites[k], sizeof sites[k]);
		Rd here = { L, sites[k] };
		if (rd_against(&here, cv->sets, src, k, sites)) {
			ex_free(&vs->mixer.g);
			memset(vs, 0, sizeof *vs);
			cv->n--;
		}
		lua_pop(L, 1);
		int total = 0;
		for (int j = 0; j < cv->n; j++) total += cv->sets[j].nvar;
		if (total > SC_MAXVARIANTS)
			rd_fail(&here, "the script declares more than %d variants (all its sets together)", SC_MAXVARIANTS);
	}
	return 0;
}
