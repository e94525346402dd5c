/* Running a generator script (see script.h).
 *
 * The work is split between C and Lua. lua/recur.lua is the user-facing
 * library: it checks every argument and raises errors located at the user's
 * line. This file gives it a small C module, recur.core, whose functions
 * build nodes in an ExGraph owned by a Lua userdata (one per mixer), and
 * afterwards turns the tables R.variants returned into VariantSet structs.
 *
 * Locations. Every error must name the user's file and line, never
 * recur.lua's. Three things get in the way, and are handled here:
 *  - Lua shortens chunk names to 60 characters ("...ipts/bad/x.lua:3:");
 *    the message handler puts the full path back.
 *  - `return R.variants{...}` is a tail call: the user's frame is gone from
 *    the stack when R.variants finds a mistake. A line hook records, per
 *    stack depth, the last line each user frame ran (a call hook forgets it
 *    when a new frame takes that depth); a tail-called library frame takes
 *    the location recorded at its depth (core.site()).
 *  - Errors raised in C or inside recur.lua carry no user location; the
 *    message handler locates them at the nearest user frame.
 * The per-run state is a struct that script_run allocates, reached through
 * lua_getextraspace: nothing global.
 */
#include "script.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAXDEPTH 256   /* user frames deeper than this are not tracked */
#define SC_MAXSRC 32      /* distinct script files tracked by the line hook */

/* Last line run by the user frame at each stack depth (src indexes srcs). */
typedef struct {
	char *srcs[SC_MAXSRC];
	int nsrc;
	int src[SC_MAXDEPTH], line[SC_MAXDEPTH];
} ScRun;

static ScRun *sc_run(lua_State *L)
{
	return *(ScRun **)lua_getextraspace(L);
}

/* recur.lua, the library: its frames are never the location of an error. */
static int sc_is_lib(const char *source)
{
	static const char lib[] = "recur.lua";
	size_t n = strlen(source), m = sizeof lib - 1;
	if (source[0] != '@' || n < m + 1 || strcmp(source + n - m, lib) != 0) return 0;
	return source[n - m - 1] == '@' || source[n - m - 1] == '/';
}

static int sc_is_user(const lua_Debug *ar)
{
	return ar->source[0] == '@' && ar->currentline > 0 && !sc_is_lib(ar->source);
}

/* Number of frames on the stack below level 0 (so a frame at level lv has
 * depth sc_levels(L) - 1 - lv, counted from the outermost). */
static int sc_levels(lua_State *L)
{
	lua_Debug ar;
	int n = 0;
	while (lua_getstack(L, n, &ar)) n++;
	return n;
}

/* Line and call hook. A line event records the user frame's line at its
 * depth; a call event starts a fresh frame, so whatever was recorded at its
 * depth belonged to a frame that is gone. A tail call keeps the record: the
 * frame it replaces is the one whose line we want (see sc_push_site). */
static void sc_hook(lua_State *L, lua_Debug *ar)
{
	ScRun *r = sc_run(L);
	int depth = sc_levels(L) - 1;
	if (depth < 0 || depth >= SC_MAXDEPTH) return;
	if (ar->event == LUA_HOOKCALL) {
		r->line[depth] = 0;
		return;
	}
	if (ar->event != LUA_HOOKLINE || !lua_getinfo(L, "S", ar) || !sc_is_user(ar)) return;
	int s = 0;
	while (s < r->nsrc && strcmp(r->srcs[s], ar->source + 1) != 0) s++;
	if (s == r->nsrc) {
		if (r->nsrc == SC_MAXSRC) return;
		r->srcs[s] = strdup(ar->source + 1);
		if (!r->srcs[s]) return;
		r->nsrc++;
	}
	r->src[depth] = s;
	r->line[depth] = ar->currentline;
}

/* Pushes "FILE:LINE:" of the user's code that is running, looking from
 * stack level `from` outwards (see the note at the top). */
static void sc_push_site(lua_State *L, int from)
{
	ScRun *r = sc_run(L);
	lua_Debug ar;
	int total = sc_levels(L);
	for (int lv = from; lua_getstack(L, lv, &ar); lv++) {
		if (!lua_getinfo(L, "Slt", &ar)) continue;
		if (sc_is_user(&ar)) {
			lua_pushfstring(L, "%s:%d:", ar.source + 1, ar.currentline);
			return;
		}
		if (ar.istailcall) {
			/* This frame replaced its caller's. If the caller was user
			 * code, the hook kept its last line at this depth; if it was
			 * library code, nothing is recorded there and the walk goes on
			 * to the library function's own caller. */
			int d = total - 1 - lv;
			if (d >= 0 && d < SC_MAXDEPTH && r->line[d] > 0) {
				lua_pushfstring(L, "%s:%d:", r->srcs[r->src[d]], r->line[d]);
				return;
			}
		}
	}
	/* nothing better: the last line the main script ran */
	if (r->line[0] > 0) lua_pushfstring(L, "%s:%d:", r->srcs[r->src[0]], r->line[0]);
	else lua_pushstring(L, "?:0:");
}

/* ---- recur.core: graph userdata and node constructors ------------------ */

#define SC_GRAPH "recur.graph"

static ExGraph *sc_graph(lua_State *L, int i)
{
	return (ExGraph *)luaL_checkudata(L, i, SC_GRAPH);
}

static int sc_graph_gc(lua_State *L)
{
	ex_free(sc_graph(L, 1));
	return 0;
}

static int sc_core_graph(lua_State *L)
{
	ExGraph *g = lua_newuserdatauv(L, sizeof *g, 0);
	ex_init(g);
	luaL_setmetatable(L, SC_GRAPH);
	return 1;
}

static int sc_check_id(lua_State *L, const ExGraph *g, int arg)
{
	lua_Integer id = luaL_checkinteger(L, arg);
	luaL_argcheck(L, id >= 0 && id < g->len, arg, "no such node");
	return (int)id;
}

/* The ExOp named name among ops [lo, hi]. */
static ExOp sc_check_op(lua_State *L, int arg, ExOp lo, ExOp hi)
{
	const char *name = luaL_checkstring(L, arg);
	for (int op = lo; op <= (int)hi; op++)
		if (strcmp(ex_opname((ExOp)op), name) == 0) return (ExOp)op;
	luaL_argerror(L, arg, lua_pushfstring(L, "unknown node kind '%s'", name));
	return EX_NOPS;
}

static int sc_push_id(lua_State *L, int id)
{
	if (id < 0) return luaL_error(L, "internal error: node construction refused");
	lua_pushinteger(L, id);
	return 1;
}

/* core.const(g, k) -> id */
static int sc_core_const(lua_State *L)
{
	return sc_push_id(L, ex_const(sc_graph(L, 1), luaL_checknumber(L, 2)));
}

/* core.leaf(g, "x"|"h"|"first"|"param"|"proj"|"seed", idx) -> id */
static int sc_core_leaf(lua_State *L)
{
	ExGraph *g = sc_graph(L, 1);
	ExOp op = sc_check_op(L, 2, EX_X, EX_SEED);
	return sc_push_id(L, ex_leaf(g, op, (int)luaL_optinteger(L, 3, 0)));
}

/* core.op(g, name, a [, b [, c]]) -> id, name as ex_opname ("exp", "add", "where") */
static int sc_core_op(lua_State *L)
{
	ExGraph *g = sc_graph(L, 1);
	ExOp op = sc_check_op(L, 2, EX_NEG, EX_WHERE);
	int a = sc_check_id(L, g, 3);
	if (op <= EX_RSQRT) return sc_push_id(L, ex_un(g, op, a));
	int b = sc_check_id(L, g, 4);
	if (op != EX_WHERE) return sc_push_id(L, ex_bin(g, op, a, b));
	return sc_push_id(L, ex_where(g, a, b, sc_check_id(L, g, 5)));
}

/* core.depends(g, id, leafkind [, idx]) -> boolean */
static int sc_core_depends(lua_State *L)
{
	ExGraph *g = sc_graph(L, 1);
	int id = sc_check_id(L, g, 2);
	ExOp op = sc_check_op(L, 3, EX_X, EX_SEED);
	lua_pushboolean(L, ex_depends(g, id, op, (int)luaL_optinteger(L, 4, -1)));
	return 1;
}

/* core.print(g, id) -> infix string */
static int sc_core_print(lua_State *L)
{
	ExGraph *g = sc_graph(L, 1);
	char buf[1024];
	ex_print(g, sc_check_id(L, g, 2), buf, sizeof buf);
	lua_pushstring(L, buf);
	return 1;
}

/* core.site() -> "FILE:LINE:" of the user's code that called into recur.lua */
static int sc_core_site(lua_State *L)
{
	sc_push_site(L, 1);
	return 1;
}

static int sc_core_open(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "graph", sc_core_graph }, { "const", sc_core_const }, { "leaf", sc_core_leaf },
		{ "op", sc_core_op }, { "depends", sc_core_depends }, { "print", sc_core_print },
		{ "site", sc_core_site }, { NULL, NULL },
	};
	if (luaL_newmetatable(L, SC_GRAPH)) {
		lua_pushcfunction(L, sc_graph_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_pop(L, 1);
	luaL_newlib(L, fns);
	return 1;
}

/* ---- error messages ---------------------------------------------------- */

/* Message handler of the script's pcall: returns "FILE:LINE: message" with
 * the user's full path (see the note at the top). */
static int sc_msgh(lua_State *L)
{
	/* recur.lua raises located errors as {where=, msg=} tables */
	if (lua_istable(L, 1) && luaL_getmetafield(L, 1, "__name") == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "recur.error") == 0) {
		lua_getfield(L, 1, "where");
		lua_getfield(L, 1, "msg");
		lua_pushfstring(L, "%s %s", lua_tostring(L, -2), lua_tostring(L, -1));
		return 1;
	}
	const char *msg = lua_tostring(L, 1);
	if (!msg) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
		else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	/* located by Lua (runtime error, error(msg, level)): restore the full path */
	lua_Debug ar;
	for (int lv = 1; lua_getstack(L, lv, &ar); lv++) {
		if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
		char pre[LUA_IDSIZE + 32];
		int np = snprintf(pre, sizeof pre, "%s:%d:", ar.short_src, ar.currentline);
		if (np <= 0 || (size_t)np >= sizeof pre || strncmp(msg, pre, (size_t)np) != 0) continue;
		if (sc_is_user(&ar)) {
			lua_pushfstring(L, "%s:%d:%s", ar.source + 1, ar.currentline, msg + np);
			return 1;
		}
		msg += np;   /* raised inside recur.lua or C: relocate to the user below */
		while (*msg == ' ') msg++;
		break;
	}
	sc_push_site(L, 1);
	lua_pushfstring(L, "%s %s", lua_tostring(L, -1), msg);
	return 1;
}

/* Lua's short form of chunk name "@path" (luaO_chunkid), as load errors use it. */
static void sc_chunkid(char *out, const char *path)
{
	size_t n = strlen(path);
	if (n + 1 < LUA_IDSIZE) snprintf(out, LUA_IDSIZE, "%s", path);
	else snprintf(out, LUA_IDSIZE, "...%s", path + n - (LUA_IDSIZE - 4));
}

static void sc_seterr(char *err, size_t errlen, const char *msg)
{
	if (errlen) snprintf(err, errlen, "%s", msg);
}

/* ---- results: Lua tables -> VariantSet --------------------------------- */

typedef struct {
	VariantSet *sets;
	int n;
} ScConv;

/* Field readers: errors become "the script's result is malformed". */
static void sc_field(lua_State *L, int t, const char *key, int type)
{
	if (lua_getfield(L, t, key) != type)
		luaL_error(L, "malformed variant set: field '%s' is %s, expected %s", key,
		           luaL_typename(L, -1), lua_typename(L, type));
}

static void sc_str(lua_State *L, int t, const char *key, char *dst, size_t cap)
{
	sc_field(L, t, key, LUA_TSTRING);
	size_t n;
	const char *s = lua_tolstring(L, -1, &n);
	if (n >= cap) luaL_error(L, "'%s' is longer than %d characters: %s", key, (int)cap - 1, s);
	memcpy(dst, s, n + 1);
	lua_pop(L, 1);
}

static int sc_int(lua_State *L, int t, const char *key, int lo, int hi)
{
	sc_field(L, t, key, LUA_TNUMBER);
	int isint;
	lua_Integer v = lua_tointegerx(L, -1, &isint);
	if (!isint || v < lo || v > hi) luaL_error(L, "field '%s' must be an integer in [%d, %d]", key, lo, hi);
	lua_pop(L, 1);
	return (int)v;
}

static double sc_num(lua_State *L, int t, const char *key)
{
	sc_field(L, t, key, LUA_TNUMBER);
	double v = lua_tonumber(L, -1);
	lua_pop(L, 1);
	return v;
}

static bool sc_bool(lua_State *L, int t, const char *key)
{
	sc_field(L, t, key, LUA_TBOOLEAN);
	bool v = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return v;
}

/* Pushes field key (a list) and returns its length, at most max. */
static int sc_list(lua_State *L, int t, const char *key, int max)
{
	sc_field(L, t, key, LUA_TTABLE);
	int n = (int)luaL_len(L, -1);
	if (n > max) luaL_error(L, "'%s' has %d entries, at most %d", key, n, max);
	return n;
}

static int sc_enum(lua_State *L, int t, const char *key, const char *const *names)
{
	sc_field(L, t, key, LUA_TSTRING);
	const char *s = lua_tostring(L, -1);
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0) { lua_pop(L, 1); return i; }
	return luaL_error(L, "field '%s' has unknown value '%s'", key, s);
}

static void sc_read_mixer(lua_State *L, int t, Mixer *mx)
{
	static const char *const pkinds[] = { "channel", "blockdiag", "scalar", NULL };
	static const char *const inits[] = { "zeros", "const", "normal", "decay", NULL };
	static const char *const jkinds[] = { "blockdiag", "token", NULL };
	int top = lua_gettop(L);

	sc_str(L, t, "name", mx->name, sizeof mx->name);
	mx->k = sc_int(L, t, "k", 1, 1 << 20);
	sc_str(L, t, "controller", mx->controller, sizeof mx->controller);
	sc_str(L, t, "dyn_per_token", mx->dyn_per_token, sizeof mx->dyn_per_token);
	/* the declaring file is informational: a path too long keeps its tail */
	sc_field(L, t, "script", LUA_TSTRING);
	size_t sn;
	const char *scr = lua_tolstring(L, -1, &sn);
	if (sn < sizeof mx->script) memcpy(mx->script, scr, sn + 1);
	else snprintf(mx->script, sizeof mx->script, "...%s", scr + sn - (sizeof mx->script - 4));
	lua_pop(L, 1);

	lua_getfield(L, t, "graph");
	const ExGraph *g = luaL_testudata(L, -1, SC_GRAPH);
	if (!g) luaL_error(L, "malformed variant set: mixer has no graph");
	if (ex_copy(&mx->g, g))
		luaL_error(L, "out of memory");
	lua_pop(L, 1);
	mx->log_a = sc_int(L, t, "log_a", 0, mx->g.len - 1);
	mx->b = sc_int(L, t, "b", 0, mx->g.len - 1);
	mx->y = sc_int(L, t, "y", 0, mx->g.len - 1);

	mx->nparam = sc_list(L, t, "params", MX_MAXPARAM);
	for (int i = 0; i < mx->nparam; i++) {
		MxParam *p = &mx->param[i];
		lua_rawgeti(L, -1, i + 1);
		int e = lua_gettop(L);
		luaL_checktype(L, e, LUA_TTABLE);
		sc_str(L, e, "name", p->name, sizeof p->name);
		p->kind = (ParamKind)sc_enum(L, e, "kind", pkinds);
		p->init = (InitKind)sc_enum(L, e, "init", inits);
		p->a = sc_num(L, e, "a");
		p->b = sc_num(L, e, "b");
		p->a_is_rsqrt_k = sc_bool(L, e, "rsqrt_k");
		p->line = sc_int(L, e, "line", 0, 1 << 30);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);

	mx->nproj = sc_list(L, t, "projs", MX_MAXPROJ);
	for (int i = 0; i < mx->nproj; i++) {
		MxProj *p = &mx->proj[i];
		lua_rawgeti(L, -1, i + 1);
		int e = lua_gettop(L);
		luaL_checktype(L, e, LUA_TTABLE);
		sc_str(L, e, "name", p->name, sizeof p->name);
		p->kind = (ProjKind)sc_enum(L, e, "kind", jkinds);
		p->weight = sc_int(L, e, "weight", 0, mx->nparam - 1);
		p->bias = sc_int(L, e, "bias", 0, mx->nparam - 1);
		p->scale_rsqrt_d = sc_bool(L, e, "rsqrt_d");
		p->line = sc_int(L, e, "line", 0, 1 << 30);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	lua_settop(L, top);
}

static void sc_read_set(lua_State *L, int t, VariantSet *vs)
{
	int top = lua_gettop(L);
	sc_field(L, t, "mixer", LUA_TTABLE);
	sc_read_mixer(L, lua_gettop(L), &vs->mixer);
	lua_pop(L, 1);

	vs->nvar = sc_list(L, t, "variants", MX_MAXVAR);
	for (int i = 0; i < vs->nvar; i++) {
		Variant *v = &vs->var[i];
		lua_rawgeti(L, -1, i + 1);
		int e = lua_gettop(L);
		luaL_checktype(L, e, LUA_TTABLE);
		sc_str(L, e, "name", v->name, sizeof v->name);
		v->chunk = sc_int(L, e, "chunk", 1, 1024);
		v->prefix = sc_int(L, e, "prefix", 1, 1024);
		v->fused = sc_bool(L, e, "fused");
		v->shared_sfu = sc_bool(L, e, "shared_sfu");
		v->fused_output = sc_bool(L, e, "fused_output");
		v->fused_write = sc_bool(L, e, "fused_write");
		v->materialized = sc_bool(L, e, "materialized");
		char scan[16];
		sc_str(L, e, "scan", scan, sizeof scan);
		v->onepass = !strcmp(scan, "onepass");
		v->lookback = v->onepass || !strcmp(scan, "lookback");
		sc_str(L, e, "controller", v->controller, sizeof v->controller);
		sc_str(L, e, "file", v->file, sizeof v->file);
		v->line = sc_int(L, e, "line", 0, 1 << 30);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);

	vs->nrule = sc_list(L, t, "rules", MX_MAXRULE);
	for (int i = 0; i < vs->nrule; i++) {
		lua_rawgeti(L, -1, i + 1);
		int e = lua_gettop(L);
		luaL_checktype(L, e, LUA_TTABLE);
		sc_str(L, e, "expr", vs->rule[i].expr, sizeof vs->rule[i].expr);
		sc_str(L, e, "message", vs->rule[i].message, sizeof vs->rule[i].message);
		lua_pop(L, 1);
	}
	lua_settop(L, top);
}

/* Protected: (result, ScConv*) -> fills conv->sets. */
static int sc_convert(lua_State *L)
{
	ScConv *cv = lua_touserdata(L, 2);
	lua_settop(L, 1);
	int single = luaL_getmetafield(L, 1, "__name") == LUA_TSTRING &&
	             strcmp(lua_tostring(L, -1), "recur.variantset") == 0;
	lua_settop(L, 1);
	int n = 1;
	if (!single) {
		if (!lua_istable(L, 1))
			return luaL_error(L, "the script must return R.variants{...} or a list of them, not a %s",
			                  luaL_typename(L, 1));
		n = (int)luaL_len(L, 1);
		if (n < 1)
			return luaL_error(L, "the script returned an empty list: it must return R.variants{...} or a list of them");
	}
	cv->sets = calloc((size_t)n, sizeof *cv->sets);   /* zeroed graphs: script_free is always safe */
	if (!cv->sets) return luaL_error(L, "out of memory");
	cv->n = n;
	for (int i = 0; i < n; i++) {
		if (single) lua_pushvalue(L, 1);
		else lua_rawgeti(L, 1, i + 1);
		int ok = luaL_getmetafield(L, -1, "__name") == LUA_TSTRING &&
		         strcmp(lua_tostring(L, -1), "recur.variantset") == 0;
		if (ok) lua_pop(L, 1);
		else {
			lua_settop(L, 1);
			return luaL_error(L, "entry %d of the returned list is not a variant set made by R.variants", i + 1);
		}
		sc_read_set(L, lua_gettop(L), &cv->sets[i]);
		lua_pop(L, 1);
	}
	return 0;
}

/* ---- entry points ------------------------------------------------------ */

void script_free(VariantSet *sets, int nsets)
{
	if (!sets) return;
	for (int i = 0; i < nsets; i++) ex_free(&sets[i].mixer.g);
	free(sets);
}

static void sc_run_free(ScRun *r)
{
	for (int i = 0; i < r->nsrc; i++) free(r->srcs[i]);
}

int script_run(const char *path, const char *lua_root, VariantSet **sets, int *nsets,
               char *err, size_t errlen)
{
	*sets = NULL;
	*nsets = 0;
	sc_seterr(err, errlen, "");
	ScRun *run = calloc(1, sizeof *run);
	lua_State *L = run ? luaL_newstate() : NULL;
	if (!L) {
		free(run);
		if (errlen) snprintf(err, errlen, "%s:0: out of memory", path);
		return -1;
	}
	*(ScRun **)lua_getextraspace(L) = run;
	luaL_openlibs(L);

	/* modules: the library and arch/ under lua_root, then the script's own directory */
	const char *slash = strrchr(path, '/');
	lua_getglobal(L, "package");
	if (slash) lua_pushlstring(L, path, (size_t)(slash - path));
	else lua_pushliteral(L, ".");
	const char *dir = lua_tostring(L, -1);
	if (lua_root) lua_pushfstring(L, "%s/?.lua;%s/?.lua", lua_root, dir);
	else lua_pushfstring(L, "%s/?.lua", dir);
	lua_setfield(L, -3, "path");
	lua_pop(L, 1);
	lua_pushliteral(L, "");   /* no C modules from disk */
	lua_setfield(L, -2, "cpath");
	lua_getfield(L, -1, "preload");
	lua_pushcfunction(L, sc_core_open);
	lua_setfield(L, -2, "recur.core");
	lua_pop(L, 2);

	int rc = -1;
	lua_pushcfunction(L, sc_msgh);
	int msgh = lua_gettop(L);
	if (luaL_loadfilex(L, path, "t") != LUA_OK) {
		/* syntax error ("short:LINE: msg") or unreadable file ("cannot open ...") */
		const char *msg = lua_tostring(L, -1);
		char id[LUA_IDSIZE];
		sc_chunkid(id, path);
		size_t n = strlen(id);
		if (errlen) {
			if (strncmp(msg, id, n) == 0 && msg[n] == ':') snprintf(err, errlen, "%s%s", path, msg + n);
			else snprintf(err, errlen, "%s:0: %s", path, msg);
		}
		goto done;
	}
	lua_sethook(L, sc_hook, LUA_MASKLINE | LUA_MASKCALL, 0);
	if (lua_pcall(L, 0, 1, msgh) != LUA_OK) {
		sc_seterr(err, errlen, lua_tostring(L, -1));
		goto done;
	}
	lua_sethook(L, NULL, 0, 0);

	ScConv cv = { NULL, 0 };
	lua_pushcfunction(L, sc_convert);
	lua_insert(L, -2);
	lua_pushlightuserdata(L, &cv);
	if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
		/* a malformed result: located at the last line the main script ran */
		const char *msg = lua_tostring(L, -1);
		if (errlen) {
			if (run->line[0] > 0) snprintf(err, errlen, "%s:%d: %s", run->srcs[run->src[0]], run->line[0], msg);
			else snprintf(err, errlen, "%s:0: %s", path, msg);
		}
		script_free(cv.sets, cv.n);
		goto done;
	}
	*sets = cv.sets;
	*nsets = cv.n;
	rc = 0;
done:
	lua_close(L);
	sc_run_free(run);
	free(run);
	return rc;
}
