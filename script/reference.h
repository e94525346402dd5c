/* The float64 reference of any mixer, derived from its expression graph.
 *
 * ref/ holds references written by hand from the spec, for the mixers the
 * spec defines; every other mixer a script can write is judged by this one:
 * the graph evaluated on doubles, with the same meaning the kernels give it.
 *
 * Forward, per sequence (h = 0 before its first token, where "first" is 1;
 * with a state, h0, resets and packed documents as util/seqstate.h says):
 *   projections   blockdiag p[t, h*K+j] = bias[h*K+j] + sum_i x[t, h*K+i] W[h][i][j]
 *                 token     p[t]        = bias + scale * sum_c w[c] x[t, c]
 *   the scan      h[t] = exp(log_a[t]) * h[t-1] + b[t]
 *   the output    y[t] = y(h[t], x, parameters, projections)
 * Backward, by reverse mode through the scan: the graph's own derivatives
 * (ex_grad of log_a, b and y with respect to x, h, every projection and
 * parameter, seeded with the adjoints of log_a, b and y), the state's
 * adjoint carried back as dh[t] = dy[t] dy/dh + a[t+1] dh[t+1], then the
 * chain rule through the projections into dx and the weights and biases.
 *
 * The derivatives are the generator's own, so this reference is no
 * independent witness of them: `recur check` holds its backward to finite
 * differences of its forward, and tests/test_reference.c holds the whole
 * of it to ref/'s hand-written RG-LRU and SAMU.
 *
 * Shapes, parameters and the calls have the form of ref/ref.h's RefMixer
 * (x, y, dx: [B][L][D]; parameters in the mixer's order, blockdiag ones
 * [H][K][K] with H = D / K), with an error message instead of an abort.
 * Heads run on all cores (util/par.h), every sum in a fixed order: the same
 * bits on any number of threads.
 */
#ifndef RECUR_REFERENCE_H
#define RECUR_REFERENCE_H

#include <stddef.h>
#include "mixer.h"
#include "seqstate.h"

typedef struct {
	int B, L, D;
} RfShape;
typedef struct RfMixer RfMixer;

/* The reference of mx (copied: mx may go afterwards): 0, or -1 with why in err. */
int rf_open(const Mixer *mx, RfMixer **r, char *err, size_t errlen);
void rf_close(RfMixer *r);

int rf_nparam(const RfMixer *r);
const char *rf_param_name(const RfMixer *r, int i);
/* 0 when s is a shape of this mixer (B, L, D >= 1, D a multiple of k, and
 * every buffer's size fits); -1 with the shape and the reason in err. */
int rf_check_shape(const RfMixer *r, RfShape s, char *err, size_t errlen);
/* Element count of parameter i at s (a shape rf_check_shape accepts). */
long rf_param_count(const RfMixer *r, int i, RfShape s);

/* y from x and the parameters. 0, or -1 with why in err (the shape, out of memory). */
int rf_forward(const RfMixer *r, RfShape s, const double *const *p, const double *x, double *y, char *err,
               size_t errlen);
/* dx and every parameter's gradient (overwritten) from x and dy. */
int rf_backward(const RfMixer *r, RfShape s, const double *const *p, const double *x, const double *dy, double *dx,
                double *const *dp, char *err, size_t errlen);

/* The same with a sequence's state (util/seqstate.h; st NULL: none, the
 * calls above bit for bit). The forward writes st's hT, map_loga, map_h
 * where non-NULL; the backward, of sum(dy y) + sum(dhT hT), writes dx,
 * every parameter's gradient and st's dh0 where non-NULL. -1 with why in
 * err also where st does not suit s (seqstate_check). */
int rf_forward_state(const RfMixer *r, RfShape s, const double *const *p, const double *x, double *y,
                     const SeqState *st, char *err, size_t errlen);
int rf_backward_state(const RfMixer *r, RfShape s, const double *const *p, const double *x, const double *dy,
                      double *dx, double *const *dp, const SeqState *st, char *err, size_t errlen);

/* The value of every root the reference evaluates (log_a, b, y and each
 * derivative) at one element, by the reference's own evaluator, against
 * ex_eval of the same node: the largest relative difference. Tests use it
 * to hold the two evaluators to one meaning. */
double rf_selfcheck(const RfMixer *r, double x, double h, double first, const double *param, const double *proj,
                    const double *seed);

#endif
