/* Running a generator script (see script.h).
 *
 * The work is split between C and Lua. lua/recur.lua is the user-facing
 * library: it checks every argument and raises errors located at the user's
 * line. recur.core (sc_core.c) builds the expression graphs under it, and
 * sc_read.c turns the tables R.variants returned into VariantSet structs,
 * trusting none of them. This file makes the Lua state the script runs in.
 *
 * Locations. Every error must name the user's file and line, never
 * recur.lua's. Three things get in the way, and are handled here:
 *  - Lua shortens chunk names to 60 characters ("...ipts/bad/x.lua:3:");
 *    the message handler puts the full path back.
 *  - `return R.variants{...}` is a tail call: the user's frame is gone from
 *    the stack when R.variants finds a mistake. A line hook records, per
 *    frame, the last line each user frame ran (a call hook forgets it when
 *    a new frame takes its place); a tail-called library frame takes the
 *    location recorded for its frame (core.site()).
 *  - Errors raised in C or inside recur.lua carry no user location; the
 *    message handler locates them at the nearest user frame.
 * Frames are told apart by their CallInfo (lua_Debug.i_ci): Lua keeps one
 * per stack level and reuses it, so it names the frame at that level in
 * O(1), where counting the levels walked the whole stack on every event
 * and made deep recursion cost cubic time.
 *
 * Budget. A count hook stops the script after max_steps VM instructions
 * and the allocator refuses memory past max_bytes (the graphs' memory is
 * counted too, sc_core.c), each with a message at the line that was
 * running. Finalizers run without hooks, so scripts may not set them.
 *
 * Everything per run lives in a struct script_run allocates, reached
 * through lua_getextraspace: nothing global.
 */
#include "sc_impl.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_STEP 1000   /* instructions between two checks of the budget */

ScRun *sc_run(lua_State *L)
{
	return *(ScRun **)lua_getextraspace(L);
}

/* ---- memory ------------------------------------------------------------ */

/* Lua's allocator, counting bytes against the cap. A request that would
 * pass it fails (Lua raises "not enough memory"); shrinking never does. */
static void *sc_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	ScRun *r = ud;
	size_t old = ptr ? osize : 0;
	if (nsize == 0) {
		free(ptr);
		r->used -= old < r->used ? old : r->used;
		return NULL;
	}
	if (nsize > old && r->max_bytes && r->used - old + nsize > r->max_bytes) {
		r->mem_refused = 1;
		return NULL;
	}
	void *p = realloc(ptr, nsize);
	if (p) r->used = r->used - old + nsize;
	return p;
}

/* ---- where the user's code is ------------------------------------------ */

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

void sc_site_of(const ScRun *r, int src, int line, char *buf, size_t n)
{
	if (line > 0 && src >= 0 && src < r->nsrc) snprintf(buf, n, "%s:%d:", r->srcs[src], line);
	else snprintf(buf, n, "?:0:");
}

/* The record of frame ci; with insert, made when absent. A full table is
 * emptied first: CallInfos freed by Lua leave stale entries behind, and
 * deep recursion brings more frames than the table holds. A live frame
 * loses only its record until its next line (and the script's own chunk
 * keeps its last line in main_line besides). */
static ScFrame *sc_frame(ScRun *r, const void *ci, int insert)
{
	const size_t mask = 2 * SC_NFRAME - 1;
	size_t h = (size_t)(((uintptr_t)ci >> 4) * 0x9e3779b97f4a7c15ULL >> 20) & mask;
	for (size_t i = h;; i = (i + 1) & mask) {
		ScFrame *f = &r->frame[i];
		if (f->ci == ci) return f;
		if (f->ci) continue;
		/* a free slot: the table is at most half full, so a probe ends here */
		if (!insert) return NULL;
		if (r->nframe >= SC_NFRAME) {
			memset(r->frame, 0, sizeof r->frame);
			r->nframe = 0;
			i = h;
			f = &r->frame[i];
		}
		r->nframe++;
		*f = (ScFrame){ .ci = ci, .src = 0, .line = 0, .kind = SC_UNKNOWN, .is_main = 0 };
		return f;
	}
}

/* The index of user source "@path" in srcs (added when new), or SC_NOTUSER. */
static int sc_src_index(ScRun *r, const lua_Debug *ar)
{
	if (!sc_is_user(ar)) return SC_NOTUSER;
	const char *path = ar->source + 1;
	if (r->last_s >= 0 && strcmp(r->srcs[r->last_s], path) == 0) return r->last_s;
	for (int s = 0; s < r->nsrc; s++)
		if (strcmp(r->srcs[s], path) == 0) return r->last_s = s;
	if (r->nsrc == SC_MAXSRC) return SC_NOTUSER;
	char *copy = strdup(path);
	if (!copy) return SC_NOTUSER;
	r->srcs[r->nsrc] = copy;
	return r->last_s = r->nsrc++;
}

/* A line event: its frame's function is looked up once per activation
 * (lua_getinfo formats names: too dear for every line), then each line
 * costs a probe of the frame table. */
static void sc_on_line(lua_State *L, ScRun *r, lua_Debug *ar)
{
	ScFrame *f = sc_frame(r, ar->i_ci, 1);
	if (f->kind == SC_UNKNOWN) {
		if (!lua_getinfo(L, "S", ar)) return;
		f->kind = sc_src_index(r, ar);
		f->is_main = f->kind == 0 && ar->what[0] == 'm';   /* srcs[0] is the script */
	}
	if (f->kind < 0) return;
	f->src = f->kind;
	f->line = ar->currentline;
	r->cur_src = f->kind;
	r->cur_line = ar->currentline;
	if (f->is_main) {
		r->main_src = f->kind;
		r->main_line = ar->currentline;
	}
}

/* The budget: past it, every instruction raises (the count drops to 1), so
 * a loop around pcall cannot swallow the error and go on: the first
 * instruction outside the pcall raises again. */
static void sc_on_count(lua_State *L, ScRun *r)
{
	r->steps += SC_STEP;
	if (r->steps <= r->max_steps && !r->exceeded) return;
	if (!r->exceeded) {
		r->exceeded = 1;
		lua_sethook(L, lua_gethook(L), lua_gethookmask(L), 1);
	}
	lua_pushfstring(L, "script exceeded %I instructions (an endless loop?)", (lua_Integer)r->max_steps);
	lua_error(L);
}

/* Line, call and count hook. A line event records the user frame's line;
 * a call event starts a fresh frame, so whatever was recorded for its
 * CallInfo belonged to a frame that is gone. A tail call keeps the record
 * (the frame it replaces is the one whose line we want, sc_push_site) but
 * runs another function. */
static void sc_hook(lua_State *L, lua_Debug *ar)
{
	ScRun *r = sc_run(L);
	if (ar->event == LUA_HOOKLINE) {
		sc_on_line(L, r, ar);
	} else if (ar->event == LUA_HOOKCOUNT) {
		sc_on_count(L, r);
	} else if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
		ScFrame *f = sc_frame(r, ar->i_ci, 0);
		if (f) {
			f->kind = SC_UNKNOWN;
			if (ar->event == LUA_HOOKCALL) f->line = 0;
		}
	}
}

void sc_push_site(lua_State *L, int from)
{
	ScRun *r = sc_run(L);
	char buf[MX_PATH + 32];
	lua_Debug ar;
	for (int lv = from; lua_getstack(L, lv, &ar); lv++) {
		if (!lua_getinfo(L, "Slt", &ar)) continue;
		if (sc_is_user(&ar)) {
			lua_pushfstring(L, "%s:%d:", ar.source + 1, ar.currentline);
			return;
		}
		if (ar.istailcall) {
			/* This frame replaced its caller's. If the caller was user
			 * code, the hook kept its last line for this frame; if it was
			 * library code, nothing is recorded and the walk goes on to
			 * the library function's own caller. */
			const ScFrame *f = sc_frame(r, ar.i_ci, 0);
			if (f && f->line > 0) {
				sc_site_of(r, f->src, f->line, buf, sizeof buf);
				lua_pushstring(L, buf);
				return;
			}
		}
	}
	/* nothing better: the last line the script's own chunk ran */
	sc_site_of(r, r->main_src, r->main_line, buf, sizeof buf);
	lua_pushstring(L, buf);
}

/* ---- error messages ---------------------------------------------------- */

/* Pushes the text of error object i: a string, a recur.error's "where
 * msg", its __tostring (called protected: a failing one must not turn the
 * message into "error in error handling"), or its type. */
static const char *sc_error_text(lua_State *L, int i)
{
	if (lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER) {
		lua_pushvalue(L, i);
		return lua_tostring(L, -1);
	}
	if (luaL_getmetafield(L, i, "__tostring") != LUA_TNIL) {
		lua_pushvalue(L, i);
		if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
		lua_pop(L, 1);
	}
	return lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, i));
}

/* recur.lua raises located errors as {where=, msg=} tables (metatable
 * "recur.error"); pushes "where msg" and returns 1 for one, 0 otherwise
 * (a forged one without two strings is an ordinary object). */
static int sc_recur_error(lua_State *L)
{
	int top = lua_gettop(L);
	if (!lua_istable(L, 1) || luaL_getmetafield(L, 1, "__name") != LUA_TSTRING ||
	    strcmp(lua_tostring(L, -1), "recur.error") != 0) {
		lua_settop(L, top);
		return 0;
	}
	lua_pushliteral(L, "where");
	int tw = lua_rawget(L, 1);
	lua_pushliteral(L, "msg");
	int tm = lua_rawget(L, 1);
	if (tw != LUA_TSTRING || tm != LUA_TSTRING) {
		lua_settop(L, top);
		return 0;
	}
	lua_pushfstring(L, "%s %s", lua_tostring(L, -2), lua_tostring(L, -1));
	return 1;
}

/* Message handler of the script's pcall: returns "FILE:LINE: message" with
 * the user's full path (see the note at the top). */
static int sc_msgh(lua_State *L)
{
	if (sc_recur_error(L)) return 1;
	const char *msg = sc_error_text(L, 1);
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

static void sc_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sc_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!errlen) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- what a script may call -------------------------------------------- */

/* load(chunk [, name [, mode [, env]]]): text only, whatever mode asks (a
 * corrupted binary chunk crashes the VM; Lua does not verify bytecode). */
static int sc_load(lua_State *L)
{
	int n = lua_gettop(L);
	lua_settop(L, 4);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushvalue(L, 1);
	lua_pushvalue(L, 2);
	lua_pushliteral(L, "t");
	if (n >= 4) lua_pushvalue(L, 4);   /* an env given as nil is still given */
	lua_call(L, n >= 4 ? 4 : 3, LUA_MULTRET);
	return lua_gettop(L) - 4;
}

/* loadfile(name [, mode [, env]]): text only, and a name is required (none
 * would read standard input, where a generator waits forever). */
static int sc_loadfile(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	int env = lua_isnone(L, 3) ? 0 : 3;
	if (luaL_loadfilex(L, name, "t") != LUA_OK) {
		luaL_pushfail(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env) {
		lua_pushvalue(L, env);
		if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
	}
	return 1;
}

/* dofile(name): text only, a name required (as loadfile). */
static int sc_dofile(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	lua_settop(L, 1);
	if (luaL_loadfilex(L, name, "t") != LUA_OK) return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	return lua_gettop(L) - 1;
}

/* setmetatable(t, mt), refusing a metatable with __gc: finalizers run with
 * hooks off, so one could loop outside the budget, even after the script. */
static int sc_setmetatable(lua_State *L)
{
	if (lua_istable(L, 2)) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL)
			return luaL_error(L, "setmetatable: scripts may not set finalizers (__gc): they would run "
			                  "outside the script's instruction budget");
		lua_pop(L, 1);
	}
	lua_settop(L, 2);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, 2, 1);
	return 1;
}

static int sc_no_exit(lua_State *L)
{
	return luaL_error(L, "os.exit is not available to scripts: recur would end without a message or its "
	                  "clean-up; raise an error with error(\"message\") instead");
}

/* Replaces field name of the table on top by a C closure over its old value. */
static void sc_wrap(lua_State *L, const char *name, lua_CFunction f)
{
	lua_getfield(L, -1, name);
	lua_pushcclosure(L, f, 1);
	lua_setfield(L, -2, name);
}

static int sc_no_debug(lua_State *L)
{
	return luaL_error(L, "debug.%s is not available to scripts: it could remove the instruction budget and "
	                  "the error locations, or reach the generator's own tables", lua_tostring(L, lua_upvalueindex(1)));
}

/* debug keeps what reads: sethook would remove the budget and the line
 * records, setmetatable and getregistry reach the protected metatables.
 * The rest say so when called. */
static void sc_restrict_debug(lua_State *L)
{
	static const char *const keep[] = { "traceback", "getinfo", "getlocal", "getupvalue" };
	lua_newtable(L);
	int nd = lua_gettop(L);
	lua_getglobal(L, "debug");
	int od = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, od)) {   /* [key, value] */
		int kept = 0;
		for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
			kept |= lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), keep[i]) == 0;
		if (!kept) {
			lua_pop(L, 1);
			lua_pushvalue(L, -1);
			lua_pushcclosure(L, sc_no_debug, 1);
		}
		lua_pushvalue(L, -2);
		lua_insert(L, -2);   /* [key, key, value] */
		lua_rawset(L, nd);
	}
	lua_pop(L, 1);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "debug");
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	lua_insert(L, -2);
	lua_setfield(L, -2, "debug");
	lua_pop(L, 1);
}

/* The standard libraries, less what would break the generator (script.h). */
static void sc_restrict(lua_State *L)
{
	lua_pushglobaltable(L);
	sc_wrap(L, "load", sc_load);
	sc_wrap(L, "setmetatable", sc_setmetatable);
	lua_pushcfunction(L, sc_loadfile);
	lua_setfield(L, -2, "loadfile");
	lua_pushcfunction(L, sc_dofile);
	lua_setfield(L, -2, "dofile");
	lua_getfield(L, -1, "os");
	lua_pushcfunction(L, sc_no_exit);
	lua_setfield(L, -2, "exit");
	lua_pop(L, 2);
	sc_restrict_debug(L);
	/* a file's finalizer is C; getmetatable(io.stdout) must not hand it out */
	luaL_getmetatable(L, LUA_FILEHANDLE);
	if (lua_istable(L, -1)) {
		lua_pushboolean(L, 0);
		lua_setfield(L, -2, "__metatable");
	}
	lua_pop(L, 1);
}

/* ---- modules ----------------------------------------------------------- */

/* The searcher after package.preload's: NAME (dots as '/') + ".lua" in
 * each directory of upvalue 1, in order, loaded as text; otherwise the
 * list of files tried ("no file 'F'" lines, as Lua's own searcher says
 * it), which require puts in its message. */
static int sc_searcher(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const char *rel = luaL_gsub(L, name, ".", "/");
	luaL_Buffer tried;
	luaL_buffinit(L, &tried);
	lua_Integer n = (lua_Integer)lua_rawlen(L, lua_upvalueindex(1));
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, lua_upvalueindex(1), i);
		const char *path = lua_pushfstring(L, "%s/%s.lua", lua_tostring(L, -1), rel);
		FILE *f = fopen(path, "r");
		if (f) {
			fclose(f);
			if (luaL_loadfilex(L, path, "t") != LUA_OK)
				return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, path,
				                  lua_tostring(L, -1));
			lua_pushstring(L, path);   /* the loader's second argument */
			return 2;
		}
		lua_pushfstring(L, "%sno file '%s'", i > 1 ? "\n\t" : "", path);
		lua_remove(L, -2);   /* the path: the message is in the buffer */
		lua_remove(L, -2);   /* the directory */
		luaL_addvalue(&tried);
	}
	luaL_pushresult(&tried);
	return 1;
}

/* Adds dir to the list at index t (n entries) unless it is there. */
static void sc_add_dir(lua_State *L, int t, const char *dir, lua_Integer *n)
{
	if (!dir || !*dir) return;
	for (lua_Integer i = 1; i <= *n; i++) {
		lua_rawgeti(L, t, i);
		int same = strcmp(lua_tostring(L, -1), dir) == 0;
		lua_pop(L, 1);
		if (same) return;
	}
	lua_pushstring(L, dir);
	lua_rawseti(L, t, ++*n);
}

/* Pushes the directory of path. */
static void sc_push_dir(lua_State *L, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash) lua_pushliteral(L, ".");
	else if (slash == path) lua_pushliteral(L, "/");
	else lua_pushlstring(L, path, (size_t)(slash - path));
}

/* Pushes the directory above dir: its last component removed, or dir/..
 * where that component is "." or ".." (or there is none to remove). */
static void sc_push_parent(lua_State *L, const char *dir)
{
	const char *slash = strrchr(dir, '/');
	const char *last = slash ? slash + 1 : dir;
	if (!strcmp(last, ".") || !strcmp(last, "..") || !*last) lua_pushfstring(L, "%s/..", dir);
	else sc_push_dir(L, dir);
}

/* Pushes the list of directories modules come from, in order (script.h). */
static void sc_push_dirs(lua_State *L, const char *path, const ScriptOpts *o)
{
	lua_Integer n = 0;
	lua_newtable(L);
	int t = lua_gettop(L);
	sc_push_dir(L, path);
	sc_add_dir(L, t, lua_tostring(L, -1), &n);
	sc_push_parent(L, lua_tostring(L, -1));
	sc_add_dir(L, t, lua_tostring(L, -1), &n);
	lua_pop(L, 2);
	for (int i = 0; i < o->ninclude; i++)
		sc_add_dir(L, t, o->include[i], &n);
	for (const char *rp = getenv("RECUR_PATH"); rp && *rp;) {
		const char *end = strchr(rp, ':');
		lua_pushlstring(L, rp, end ? (size_t)(end - rp) : strlen(rp));
		sc_add_dir(L, t, lua_tostring(L, -1), &n);
		lua_pop(L, 1);
		rp = end ? end + 1 : NULL;
	}
	sc_add_dir(L, t, o->lua_root, &n);
}

/* package.searchers: package.preload's, then sc_searcher over the
 * directories; no C modules. package.path says the same for reading. */
static void sc_modules(lua_State *L, const char *path, const ScriptOpts *o)
{
	lua_getglobal(L, "package");
	int pkg = lua_gettop(L);
	sc_push_dirs(L, path, o);
	int dirs = lua_gettop(L);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, dirs); i++) {
		lua_rawgeti(L, dirs, i);
		lua_pushfstring(L, "%s%s/?.lua", i > 1 ? ";" : "", lua_tostring(L, -1));
		lua_remove(L, -2);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	lua_setfield(L, pkg, "path");
	lua_createtable(L, 2, 0);
	lua_getfield(L, pkg, "searchers");
	lua_rawgeti(L, -1, 1);   /* package.preload's searcher */
	lua_rawseti(L, -3, 1);
	lua_pop(L, 1);
	lua_pushvalue(L, dirs);
	lua_pushcclosure(L, sc_searcher, 1);
	lua_rawseti(L, -2, 2);
	lua_setfield(L, pkg, "searchers");
	lua_pushliteral(L, "");   /* no C modules from disk */
	lua_setfield(L, pkg, "cpath");
	lua_pushnil(L);
	lua_setfield(L, pkg, "loadlib");
	lua_getfield(L, pkg, "preload");
	lua_pushcfunction(L, sc_core_open);
	lua_setfield(L, -2, "recur.core");
	lua_settop(L, pkg - 1);
}

/* The library, loaded before the script runs: its locals then hold the
 * standard functions as they were, whatever the script replaces later
 * (a patched string.match must not change what recur.lua checks). */
static void sc_preload_recur(lua_State *L, const char *lua_root)
{
	if (!lua_root) return;
	const char *file = lua_pushfstring(L, "%s/recur.lua", lua_root);
	FILE *f = fopen(file, "r");
	if (!f) {   /* then require "recur" fails at the user's line, saying where it looked */
		lua_pop(L, 1);
		return;
	}
	fclose(f);
	if (luaL_loadfilex(L, file, "t") != LUA_OK) lua_error(L);
	lua_pushliteral(L, "recur");
	lua_pushvalue(L, -3);
	lua_call(L, 2, 1);
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		lua_pushboolean(L, 1);
	}
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	lua_insert(L, -2);
	lua_setfield(L, -2, "recur");
	lua_pop(L, 2);
}

typedef struct {
	const char *path;
	const ScriptOpts *o;
} ScSetup;

/* Protected: the libraries, their restrictions, the module searchers and
 * the library itself. */
static int sc_setup(lua_State *L)
{
	const ScSetup *s = lua_touserdata(L, 1);
	luaL_openlibs(L);
	sc_restrict(L);
	sc_modules(L, s->path, s->o);
	sc_preload_recur(L, s->o->lua_root);
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
	free(r);
}

/* err for a failed load of the script: a syntax error ("short:LINE: msg")
 * or an unreadable or binary file, located at its path. */
static void sc_load_error(const char *path, const char *msg, char *err, size_t errlen)
{
	char id[LUA_IDSIZE];
	sc_chunkid(id, path);
	size_t n = strlen(id);
	if (!msg) msg = "cannot load the script";
	if (strncmp(msg, id, n) == 0 && msg[n] == ':' && msg[n + 1] >= '0' && msg[n + 1] <= '9')
		sc_seterr(err, errlen, "%s%s", path, msg + n);
	else if (strncmp(msg, id, n) == 0 && msg[n] == ':')
		sc_seterr(err, errlen, "%s:0:%s", path, msg + n + 1);
	else
		sc_seterr(err, errlen, "%s:0: %s", path, msg);
}

/* err for a script that failed while running (status of its pcall). */
static void sc_run_error(lua_State *L, ScRun *r, int status, char *err, size_t errlen)
{
	char site[MX_PATH + 32];
	sc_site_of(r, r->cur_src, r->cur_line, site, sizeof site);
	if (status == LUA_ERRMEM && r->mem_refused)
		sc_seterr(err, errlen, "%s script exceeded its memory cap of %d MiB", site, (int)(r->max_bytes >> 20));
	else if (status == LUA_ERRMEM)
		sc_seterr(err, errlen, "%s out of memory", site);
	else if (status == LUA_ERRERR)
		sc_seterr(err, errlen, "%s error while reporting an error (in the script's __tostring?)", site);
	else
		sc_seterr(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
}

/* Runs the script loaded on top of the stack; 0, or -1 with err. */
static int sc_exec(lua_State *L, ScRun *r, char *err, size_t errlen)
{
	lua_pushcfunction(L, sc_msgh);
	lua_insert(L, -2);
	lua_sethook(L, sc_hook, LUA_MASKLINE | LUA_MASKCALL | LUA_MASKCOUNT, SC_STEP);
	int status = lua_pcall(L, 0, 1, -2);
	/* no user code runs after this: the result is read raw, finalizers are C */
	lua_sethook(L, NULL, 0, 0);
	if (status != LUA_OK) {
		sc_run_error(L, r, status, err, errlen);
		return -1;
	}
	lua_remove(L, -2);
	return 0;
}

/* Reads the result on top into *cv; 0, or -1 with err. */
static int sc_read(lua_State *L, ScRun *r, ScConv *cv, char *err, size_t errlen)
{
	/* the result as a whole is located at the last line the script ran */
	sc_site_of(r, r->main_src, r->main_line, cv->site, sizeof cv->site);
	lua_pushcfunction(L, sc_convert);
	lua_insert(L, -2);
	lua_pushlightuserdata(L, cv);
	int status = lua_pcall(L, 2, 0, 0);
	if (status == LUA_OK) return 0;
	if (status == LUA_ERRMEM) sc_seterr(err, errlen, "%s out of memory reading the script's result", cv->site);
	else sc_seterr(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
	script_free(cv->sets, cv->n);
	cv->sets = NULL;
	cv->n = 0;
	return -1;
}

int script_run_opts(const char *path, const ScriptOpts *o, VariantSet **sets, int *nsets,
                    char *err, size_t errlen)
{
	*sets = NULL;
	*nsets = 0;
	sc_seterr(err, errlen, "%s", "");
	ScRun *run = calloc(1, sizeof *run);
	if (run) {
		run->max_steps = o->max_steps ? o->max_steps : SCRIPT_MAX_STEPS;
		run->max_bytes = o->max_bytes ? o->max_bytes : SCRIPT_MAX_BYTES;
		run->last_s = -1;
		run->srcs[0] = strdup(path);   /* srcs[0]: the script itself */
		run->nsrc = run->srcs[0] != NULL;
	}
	lua_State *L = run && run->nsrc ? lua_newstate(sc_alloc, run) : NULL;
	if (!L) {
		if (run) sc_run_free(run);
		sc_seterr(err, errlen, "%s:0: out of memory", path);
		return -1;
	}
	*(ScRun **)lua_getextraspace(L) = run;
	int rc = -1;
	ScSetup setup = { path, o };
	lua_pushcfunction(L, sc_setup);
	lua_pushlightuserdata(L, &setup);
	if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
		sc_seterr(err, errlen, "%s:0: cannot prepare the script's libraries: %s", path,
		          lua_tostring(L, -1) ? lua_tostring(L, -1) : "out of memory");
	} else if (luaL_loadfilex(L, path, "t") != LUA_OK) {
		sc_load_error(path, lua_tostring(L, -1), err, errlen);
	} else if (sc_exec(L, run, err, errlen) == 0) {
		ScConv cv = { NULL, 0, "" };
		if (sc_read(L, run, &cv, err, errlen) == 0) {
			*sets = cv.sets;
			*nsets = cv.n;
			rc = 0;
		}
	}
	lua_close(L);
	sc_run_free(run);
	return rc;
}

int script_run(const char *path, const char *lua_root, VariantSet **sets, int *nsets,
               char *err, size_t errlen)
{
	ScriptOpts o = { .lua_root = lua_root };
	return script_run_opts(path, &o, sets, nsets, err, errlen);
}
