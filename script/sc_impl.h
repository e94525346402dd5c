/* What the three parts of the script runner share (script.c: the Lua
 * state, its libraries, hooks and messages; sc_core.c: the recur.core
 * module; sc_read.c: the script's result read into VariantSets). Not a
 * public interface. */
#ifndef RECUR_SC_IMPL_H
#define RECUR_SC_IMPL_H
#include <lua.h>
#include <stddef.h>
#include "script.h"

#define SC_GRAPH "recur.graph"   /* metatable of the graph userdata */
#define SC_MAXSRC 32             /* distinct script files the line hook tracks */
#define SC_NFRAME 1024           /* frames tracked at once (sc_frame) */
/* Bounds on what a script may hand the generator, which copies a mixer's
 * whole graph (garbage included: node ids must not change) for each of its
 * variants: at most about 1 GiB of copies. */
#define SC_MAXGRAPH 16384        /* nodes one mixer's graph may hold, garbage included */
#define SC_MAXSETS 64            /* distinct variant sets of one script */
#define SC_MAXVARIANTS 1024      /* variants of one script, all sets together */

/* A frame, keyed by its CallInfo (see script.c): the last user line it
 * ran, and what its function is (a cache, so that a line event needs no
 * lua_getinfo). */
typedef struct {
	const void *ci;   /* NULL: a free slot */
	int src, line;    /* line 0: nothing recorded since the frame began */
	int kind;         /* the running function: SC_UNKNOWN, SC_NOTUSER, or its source's index */
	int is_main;      /* it is the script's own chunk */
} ScFrame;

enum { SC_UNKNOWN = -2, SC_NOTUSER = -1 };

/* The state of one run, reached from the Lua state (sc_run): nothing global. */
typedef struct {
	char *srcs[SC_MAXSRC];          /* the user's source files ("@" stripped) */
	int nsrc;
	int last_s;                     /* the index last found in srcs (-1: none) */
	int exceeded;                   /* the instruction budget is spent */
	ScFrame frame[2 * SC_NFRAME];   /* open addressing, at most half full */
	int nframe;
	int cur_src, cur_line;          /* the last user line run, any frame (cur_line 0: none) */
	int main_src, main_line;        /* the last line the script's own chunk ran */
	const char *chunk;              /* the script's chunk name, "@path" */
	unsigned long long steps, max_steps;
	size_t used, max_bytes;         /* bytes of Lua's allocations and of the graphs */
	int mem_refused;                /* the allocator refused a request past max_bytes */
} ScRun;

/* One mixer's graph, a userdata: the graph and the bytes counted for it. */
typedef struct {
	ExGraph g;
	size_t bytes;
} ScGraph;

ScRun *sc_run(lua_State *L);
/* Pushes "FILE:LINE:" of the user's code that is running, looking from
 * stack level `from` outwards. */
void sc_push_site(lua_State *L, int from);
/* Formats "FILE:LINE:" of source index src into buf (or "?:0:"). */
void sc_site_of(const ScRun *r, int src, int line, char *buf, size_t n);

/* recur.core (sc_core.c) */
int sc_core_open(lua_State *L);
/* Bytes counted against the budget for graph g changed: re-counts them,
 * raising an error past the cap. */
void sc_graph_account(lua_State *L, ScGraph *sg);
/* 1 when v is finite and within float32's range (the kernels compute in
 * float32: 1e300 would be +inf there). */
int sc_f32_finite(double v);
/* Checks expr as a shape expression of a script (over B, L, D, K, H):
 * 0, or -1 with a message in err. */
int sc_shape_check(const char *expr, char *err, size_t errlen);
/* The number of nodes reachable from roots[0..n) (ids valid). */
int sc_reach_count(const ExGraph *g, const int *roots, int n);

/* The result, in a protected call: arguments (result, ScConv*). Errors
 * come out located ("FILE:LINE: message"). */
typedef struct {
	VariantSet *sets;
	int n;
	char site[MX_PATH + 32];   /* where errors about the result as a whole are located */
} ScConv;
int sc_convert(lua_State *L);

#endif
