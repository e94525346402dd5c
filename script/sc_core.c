/* recur.core: the C module under lua/recur.lua. Its functions build nodes
 * in an ExGraph owned by a Lua userdata (one per mixer) and answer a few
 * questions about them.
 *
 * recur.lua checks every argument a user passes, but a script can call
 * recur.core itself, so nothing here trusts its arguments either: node
 * ids, leaf indices and names are checked, a graph is bounded in nodes
 * (SC_MAXGRAPH) and its memory counts against the script's cap, and a
 * constant that float32 cannot hold is refused where it is made.
 */
#include "sc_impl.h"
#include "shapex.h"

#include <float.h>
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ScGraph *sc_graph(lua_State *L, int i)
{
	return (ScGraph *)luaL_checkudata(L, i, SC_GRAPH);
}

static int sc_graph_gc(lua_State *L)
{
	ScGraph *sg = sc_graph(L, 1);
	ScRun *r = sc_run(L);
	r->used -= sg->bytes < r->used ? sg->bytes : r->used;
	sg->bytes = 0;
	ex_free(&sg->g);
	return 0;
}

void sc_graph_account(lua_State *L, ScGraph *sg)
{
	ScRun *r = sc_run(L);
	size_t bytes = (size_t)sg->g.cap * sizeof *sg->g.n + (size_t)sg->g.hcap * sizeof *sg->g.hash;
	r->used = r->used - sg->bytes + bytes;
	sg->bytes = bytes;
	if (r->max_bytes && r->used > r->max_bytes)
		luaL_error(L, "script exceeded its memory cap of %d MiB (its expression graphs hold %d MiB)",
		           (int)(r->max_bytes >> 20), (int)(bytes >> 20));
}

int sc_f32_finite(double v)
{
	return isfinite(v) && fabs(v) <= FLT_MAX;
}

int sc_shape_check(const char *expr, char *err, size_t errlen)
{
	static const char *const names[] = { "B", "L", "D", "K", "H" };
	ShapeVars sv = { .n = 0 };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		shapex_set(&sv, names[i], 1);
	return shapex_check(expr, &sv, err, errlen);
}

int sc_reach_count(const ExGraph *g, const int *roots, int n)
{
	int top = -1, count = 0;
	for (int i = 0; i < n; i++)
		if (roots[i] > top) top = roots[i];
	if (top < 0) return 0;
	char *mark = calloc((size_t)top + 1, 1);
	if (!mark) return -1;
	for (int i = 0; i < n; i++)
		if (roots[i] >= 0) mark[roots[i]] = 1;
	for (int id = top; id >= 0; id--) {   /* operands have smaller ids */
		if (!mark[id]) continue;
		count++;
		const ExNode *nd = &g->n[id];
		if (nd->a >= 0) mark[nd->a] = 1;
		if (nd->b >= 0) mark[nd->b] = 1;
		if (nd->c >= 0) mark[nd->c] = 1;
	}
	free(mark);
	return count;
}

static int sc_core_graph(lua_State *L)
{
	ScGraph *sg = lua_newuserdatauv(L, sizeof *sg, 0);
	ex_init(&sg->g);
	sg->bytes = 0;
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

/* The graph at argument 1, with room for one more node. */
static ScGraph *sc_growable(lua_State *L)
{
	ScGraph *sg = sc_graph(L, 1);
	if (sg->g.len >= SC_MAXGRAPH)
		luaL_error(L, "a mixer's expressions hold more than %d nodes (the kernels evaluate every one per "
		           "element: is a loop building them without end?)", SC_MAXGRAPH);
	return sg;
}

/* Pushes node id of sg, once its memory is counted; a constant float32
 * cannot hold (one that folding made) is refused here. */
static int sc_push_id(lua_State *L, ScGraph *sg, int id)
{
	if (id < 0) return luaL_error(L, "internal error: node construction refused");
	sc_graph_account(L, sg);
	const ExNode *n = &sg->g.n[id];
	if (n->op == EX_CONST && !sc_f32_finite(n->k))
		return luaL_error(L, "constant %f is not finite in float32, in which the kernels compute "
		                  "(|v| <= 3.4e38)", n->k);
	lua_pushinteger(L, id);
	return 1;
}

/* core.const(g, k) -> id */
static int sc_core_const(lua_State *L)
{
	ScGraph *sg = sc_growable(L);
	double k = luaL_checknumber(L, 2);
	if (!sc_f32_finite(k))
		return luaL_error(L, "constant %f is not finite in float32, in which the kernels compute (|v| <= 3.4e38)", k);
	return sc_push_id(L, sg, ex_const(&sg->g, k));
}

/* core.leaf(g, "x"|"h"|"first"|"param"|"proj", idx) -> id */
static int sc_core_leaf(lua_State *L)
{
	ScGraph *sg = sc_growable(L);
	ExOp op = sc_check_op(L, 2, EX_X, EX_PROJ);
	lua_Integer idx = luaL_optinteger(L, 3, 0);
	lua_Integer max = op == EX_PARAM ? MX_MAXPARAM : op == EX_PROJ ? MX_MAXPROJ : 1;
	luaL_argcheck(L, idx >= 0 && idx < max, 3, "leaf index out of range");
	return sc_push_id(L, sg, ex_leaf(&sg->g, op, (int)idx));
}

/* core.op(g, name, a [, b [, c]]) -> id, name as ex_opname ("exp", "add", "where") */
static int sc_core_op(lua_State *L)
{
	ScGraph *sg = sc_growable(L);
	ExGraph *g = &sg->g;
	ExOp op = sc_check_op(L, 2, EX_NEG, EX_WHERE);
	if (op == EX_SQRTB_GRAD)   /* a derivative's node, never a script's */
		luaL_argerror(L, 2, "unknown node kind 'sqrtb_grad'");
	int a = sc_check_id(L, g, 3);
	if (op <= EX_RSQRT) return sc_push_id(L, sg, ex_un(g, op, a));
	int b = sc_check_id(L, g, 4);
	if (op != EX_WHERE) return sc_push_id(L, sg, ex_bin(g, op, a, b));
	return sc_push_id(L, sg, ex_where(g, a, b, sc_check_id(L, g, 5)));
}

/* core.depends(g, id, leafkind [, idx]) -> boolean */
static int sc_core_depends(lua_State *L)
{
	ExGraph *g = &sc_graph(L, 1)->g;
	int id = sc_check_id(L, g, 2);
	ExOp op = sc_check_op(L, 3, EX_X, EX_SEED);
	lua_Integer idx = luaL_optinteger(L, 4, -1);
	luaL_argcheck(L, idx >= -1 && idx < 1024, 4, "leaf index out of range");
	lua_pushboolean(L, ex_depends(g, id, op, (int)idx));
	return 1;
}

/* core.print(g, id) -> infix string */
static int sc_core_print(lua_State *L)
{
	ExGraph *g = &sc_graph(L, 1)->g;
	char buf[1024];
	ex_print(g, sc_check_id(L, g, 2), buf, sizeof buf);
	lua_pushstring(L, buf);
	return 1;
}

/* core.size(g, id, ...) -> the number of nodes the ids reach together */
static int sc_core_size(lua_State *L)
{
	ExGraph *g = &sc_graph(L, 1)->g;
	int n = lua_gettop(L) - 1, ids[8];
	luaL_argcheck(L, n >= 1 && n <= 8, 2, "1 to 8 node ids");
	for (int i = 0; i < n; i++)
		ids[i] = sc_check_id(L, g, i + 2);
	int c = sc_reach_count(g, ids, n);
	if (c < 0) return luaL_error(L, "out of memory");
	lua_pushinteger(L, c);
	return 1;
}

/* core.shape_check(expr) -> nil, or why expr is not a shape expression */
static int sc_core_shape_check(lua_State *L)
{
	char err[512];
	if (sc_shape_check(luaL_checkstring(L, 1), err, sizeof err) == 0) return 0;
	lua_pushstring(L, err);
	return 1;
}

/* core.site() -> "FILE:LINE:" of the user's code that called into recur.lua */
static int sc_core_site(lua_State *L)
{
	sc_push_site(L, 1);
	return 1;
}

int sc_core_open(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "graph", sc_core_graph }, { "const", sc_core_const }, { "leaf", sc_core_leaf },
		{ "op", sc_core_op }, { "depends", sc_core_depends }, { "print", sc_core_print },
		{ "size", sc_core_size }, { "shape_check", sc_core_shape_check }, { "site", sc_core_site },
		{ NULL, NULL },
	};
	if (luaL_newmetatable(L, SC_GRAPH)) {
		lua_pushcfunction(L, sc_graph_gc);
		lua_setfield(L, -2, "__gc");
		/* getmetatable(graph) gives false: a script cannot replace the
		 * finalizer with a Lua function (finalizers run without hooks, so
		 * outside the budget) */
		lua_pushboolean(L, 0);
		lua_setfield(L, -2, "__metatable");
	}
	lua_pop(L, 1);
	luaL_newlib(L, fns);
	return 1;
}
