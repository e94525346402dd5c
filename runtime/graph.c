/* CUDA graphs of a variant's passes (recur_graph_*): stream capture of the
 * same calls a user makes, so a graph runs exactly what recur_forward and
 * recur_backward launch -- the clears, the arguments, the early launches
 * (captured as programmatic edges). What a capture cannot do, plan.c does
 * before it: allocate the workspaces. What a capture must not do, this
 * file undoes after it: the variant's pass state, which only a launch of
 * the graph makes true. Each call makes the device's context current for
 * its driver calls and puts the calling thread's own back after them
 * (rt_ctx_enter; the passes captured find it current already).
 */
#include "rt_impl.h"
#include <stdio.h>
#include <stdlib.h>

struct recur_graph {
	recur_variant *v;
	recur_shape s;
	int passes;
	CUgraph graph;
	CUgraphExec exec;
	size_t nodes;
	rt_vstate after;             /* the variant's state once the passes have run */
};

/* Runs the passes into st, which is capturing. */
static int record(recur_variant *v, recur_shape s, const recur_io *io, int passes, CUstream st, char *err,
                  size_t errlen)
{
	if ((passes & RECUR_GRAPH_FORWARD) && recur_forward(v, s, io, st, err, errlen))
		return -1;
	if (passes & RECUR_GRAPH_BACKWARD) {
		if (!(passes & RECUR_GRAPH_FORWARD)) {
			/* each replay of a backward alone clears its own workspaces */
			rt_vstate now;
			rt_variant_state_get(v, &now);
			now.bwd_clear = 0;
			rt_variant_state_set(v, &now);
		}
		if (recur_backward(v, s, io, st, err, errlen))
			return -1;
	}
	return 0;
}

/* A graph of passes the variant can run, with the device's context current */
static int create(recur_variant *v, recur_shape s, const recur_io *io, int passes, const char *shape,
                  recur_graph **out, char *err, size_t errlen)
{
	const char *name = rt_variant_name(v);
	const rt_cu *cu = &rt_variant_rt(v)->cu;
	char e[4096];
	if (((passes & RECUR_GRAPH_FORWARD) && rt_variant_prepare(v, RT_FWD, s, e, sizeof e)) ||
	    ((passes & RECUR_GRAPH_BACKWARD) && rt_variant_prepare(v, RT_BWD, s, e, sizeof e)))
		return rt_vfail(err, errlen, "a graph of variant %s: %s", name, e);
	recur_graph *g = calloc(1, sizeof *g);
	if (!g)
		return rt_vfail(err, errlen, "variant %s: a graph at %s: out of host memory", name, shape);
	*g = (recur_graph){ .v = v, .s = s, .passes = passes };

	rt_vstate before;
	rt_variant_state_get(v, &before);
	CUstream st = NULL;
	if (RT_CU(cu, StreamCreate, (&st, CU_STREAM_NON_BLOCKING), err, errlen,
	          "creating the stream to capture variant %s at %s", name, shape)) {
		free(g);
		return -1;
	}
	int rc = RT_CU(cu, StreamBeginCapture, (st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), err, errlen,
	               "capturing variant %s at %s", name, shape);
	if (!rc) {
		rc = record(v, s, io, passes, st, e, sizeof e);
		if (rc)
			rt_vfail(err, errlen, "capturing a graph of variant %s: %s", name, e);
		/* the capture ends whatever happened, or the stream stays capturing */
		CUgraph graph = NULL;
		char e2[1024];
		int rc2 = RT_CU(cu, StreamEndCapture, (st, &graph), e2, sizeof e2, "capturing variant %s at %s", name,
		                shape);
		if (!rc && rc2) {
			rt_vfail(err, errlen, "%s", e2);
			rc = -1;
		}
		if (rc && graph && RT_CU(cu, GraphDestroy, (graph), e2, sizeof e2, "freeing a failed capture of variant %s",
		                         name))
			fprintf(stderr, "recur: %s\n", e2);
		if (!rc)
			g->graph = graph;
	}
	rt_variant_state_get(v, &g->after);
	rt_variant_state_set(v, &before);
	/* a cleanup failure does not undo the graph: said, not returned */
	if (RT_CU(cu, StreamDestroy, (st), e, sizeof e, "destroying the stream that captured variant %s", name))
		fprintf(stderr, "recur: %s\n", e);
	if (!rc)
		rc = RT_CU(cu, GraphGetNodes, (g->graph, NULL, &g->nodes), err, errlen,
		           "counting the nodes of variant %s's graph at %s", name, shape) ||
		     RT_CU(cu, GraphInstantiateWithFlags, (&g->exec, g->graph, 0), err, errlen,
		           "instantiating variant %s's graph at %s (%zu nodes)", name, shape, g->nodes);
	if (rc) {
		if (g->graph && RT_CU(cu, GraphDestroy, (g->graph), e, sizeof e, "freeing a failed graph of variant %s",
		                      name))
			fprintf(stderr, "recur: %s\n", e);
		free(g);
		return -1;
	}
	rt_variant_pin(v, 1);
	*out = g;
	return 0;
}

int recur_graph_create(recur_variant *v, recur_shape s, const recur_io *io, int passes, recur_graph **out,
                       char *err, size_t errlen)
{
	*out = NULL;
	const char *name = rt_variant_name(v);
	char shape[64];
	rt_shape_name(s, shape, sizeof shape);
	if (passes < 1 || passes > (RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD))
		return rt_vfail(err, errlen, "variant %s: a graph of passes %d at %s: want RECUR_GRAPH_FORWARD, "
		                "RECUR_GRAPH_BACKWARD or both", name, passes, shape);
	if (rt_variant_profiling(v))
		return rt_vfail(err, errlen, "variant %s: a graph at %s with profiling on: its events would be captured, "
		                "not timed; turn profiling off", name, shape);
	/* a pass the variant cannot run is refused before anything is allocated */
	if (((passes & RECUR_GRAPH_FORWARD) && rt_variant_check(v, RT_FWD, s, io, err, errlen)) ||
	    ((passes & RECUR_GRAPH_BACKWARD) && rt_variant_check(v, RT_BWD, s, io, err, errlen)))
		return -1;
	recur_rt *rt = rt_variant_rt(v);
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_graph_create", name, err, errlen))
		return -1;
	int rc = create(v, s, io, passes, shape, out, err, errlen);
	if (rt_ctx_leave(rt, &c, rc, err, errlen)) {
		if (!rc) {   /* made, but the call fails: it holds nothing */
			recur_graph_free(*out);
			*out = NULL;
		}
		return -1;
	}
	return 0;
}

int recur_graph_launch(recur_graph *g, CUstream st, char *err, size_t errlen)
{
	recur_variant *v = g->v;
	recur_rt *rt = rt_variant_rt(v);
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_graph_launch", rt_variant_name(v), err, errlen))
		return -1;
	int rc = RT_CU(&rt->cu, GraphLaunch, (g->exec, st), err, errlen,
	               "launching variant %s's graph at shape B=%d L=%d D=%d", rt_variant_name(v), g->s.B, g->s.L, g->s.D);
	if (!rc) {   /* launched: the passes' state is set, whatever the restore below does */
		rt_vstate now;
		rt_variant_state_get(v, &now);
		if (g->passes & RECUR_GRAPH_FORWARD) {
			now = g->after;
		} else {
			now.bwd_clear = 0;
		}
		rt_variant_state_set(v, &now);
	}
	return rt_ctx_leave(rt, &c, rc, err, errlen);
}

int recur_graph_nodes(const recur_graph *g)
{
	return (int)g->nodes;
}

void recur_graph_free(recur_graph *g)
{
	if (!g)
		return;
	recur_rt *rt = rt_variant_rt(g->v);
	const rt_cu *cu = &rt->cu;
	char e[1024];
	rt_ctx_saved c;
	if (rt_ctx_enter(rt, &c, "recur_graph_free", rt_variant_name(g->v), e, sizeof e)) {
		fprintf(stderr, "recur: %s; the graph is left to the primary context\n", e);
	} else {
		if (g->exec && RT_CU(cu, GraphExecDestroy, (g->exec), e, sizeof e, "freeing variant %s's graph",
		                     rt_variant_name(g->v)))
			fprintf(stderr, "recur: %s\n", e);
		if (g->graph && RT_CU(cu, GraphDestroy, (g->graph), e, sizeof e, "freeing variant %s's graph",
		                      rt_variant_name(g->v)))
			fprintf(stderr, "recur: %s\n", e);
		if (rt_ctx_leave(rt, &c, 0, e, sizeof e))
			fprintf(stderr, "recur: %s\n", e);
	}
	rt_variant_pin(g->v, -1);
	free(g);
}
