/* A mixer's expression graph as lines of text, for the manifest.
 *
 * `recur gen` writes it into manifest.json (mixers.NAME.graph) and
 * `recur verify` reads it back, so a generated folder carries everything
 * the float64 reference of its mixers needs (script/reference.h): verify
 * runs where the script is not, and never reads a script path.
 *
 * Only the nodes that log_a, b and y reach are written, renumbered from 0
 * in their order (operands before their users). One line per node:
 *
 *     "x"  "h"  "first"        the leaves of the element, state and reset flag
 *     "param I"  "proj I"      parameter I (channel or scalar), projection I
 *     "const K"                K as "%.17g": read back to the same double
 *     "OP A"  "OP A B"         unary and binary ops by ex_opname ("exp 4", "mul 3 5")
 *     "where C A B"
 *
 * operands naming earlier lines. Parameters are "NAME KIND" (KIND channel,
 * blockdiag or scalar), projections "NAME blockdiag W BIAS" or
 * "NAME token W BIAS SCALE" (W, BIAS: parameter indices; SCALE none or
 * rsqrt_d). Reading checks all of it and rebuilds the graph through the
 * node constructors, so a hand-edited or damaged manifest gives a message
 * naming the line, never a graph that breaks its invariants.
 */
#ifndef RECUR_GRAPHTEXT_H
#define RECUR_GRAPHTEXT_H

#include <stddef.h>
#include "mixer.h"

typedef struct {
	const char **node; /* nnode lines */
	int nnode;
	int log_a, b, y;    /* the roots, as line numbers */
	const char **param; /* nparam lines "NAME KIND", in the mixer's parameter order */
	int nparam;
	const char **proj; /* nproj lines, in projection order */
	int nproj;
} GraphText;

/* The text of mx's graph (free with gt_free): 0, or -1 with why in err
 * (a node kind a script graph never holds, out of memory). */
int gt_write(const Mixer *mx, GraphText *t, char *err, size_t errlen);
void gt_free(GraphText *t);

/* Fills mx's graph, roots, parameters (names and kinds; init left zero)
 * and projections from t; name, k and script are left to the caller.
 * 0, or -1 with the line at fault in err (mx is then freed). */
int gt_read(const GraphText *t, Mixer *mx, char *err, size_t errlen);

#endif
