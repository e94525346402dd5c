/* recur bench --step T: the decode steps ("scan": "decode", mfinfo.h's
 * mf_decode) of a generated folder, timed per call.
 *
 * A shape B x L x D here is B rows of width D advancing L tokens per timed
 * region, in calls of T tokens (ceil(L / T) calls, the last one shorter
 * when T does not divide L), every call on the same buffers: x and y
 * [B][T][D] bf16, the script's parameters, a pool of B states fp32 [B][D]
 * updated in place (h0 = hT) at the slots of index (a random permutation).
 * Per (variant, shape):
 *   call     GPU time per call: CUDA events around the ceil(L/T) calls
 *            back to back, the L2 flushed before each region (as the
 *            harness times the forward+backward), per call = region /
 *            calls; the median over rounds x samples regions. From the
 *            second call on, what the calls share (parameters, the pool)
 *            may be in L2;
 *   cold     one call after an L2 flush, events around it, the median of
 *            as many: every byte from DRAM (plus the events' own time);
 *   graph    the forward as one CUDA graph (recur_graph, RECUR_GRAPH_FORWARD)
 *            replayed ceil(L/T) times: the host's time to enqueue a replay,
 *            and the wall time per replay of all of them with the
 *            synchronisation at the end;
 *   floor    the bytes a call must move, state read and write fp32
 *            (2 B D 4), x and y bf16 (2 B T D 2) and the parameters (their
 *            fp32 sizes in the manifest at the shape), over the device's
 *            copy bandwidth measured at the start (harness_bandwidth).
 * One line per (variant, shape); the results JSON holds one row per
 * (variant, shape) in the seed's schema, "forward" being the per-call
 * times, "backward" and "forward_backward" null, a "step" object with the
 * rest, and "step": T in its protocol block.
 */
#ifndef RECUR_BENCH_STEP_H
#define RECUR_BENCH_STEP_H

#include "mfinfo.h"
#include "recur.h"
#include <stdint.h>

/* --shapes' default with --step: the B = 1, D = 1024 and B = 256, D = 4096 */
#define BENCH_STEP_SHAPES "1x1024x1024,256x1024x4096"
#define BENCH_STEP_MAX 4096

typedef struct {
	const char *dir, *out;
	const recur_shape *sh;
	int nsh; /* 0: BENCH_STEP_SHAPES */
	int rounds, samples, warmup, profile, step;
	uint64_t seed;
	const char *const *variants; /* --variant: each must be a decode step; none: every one of the mixers */
	int nvariants;
	const char *const *mixers; /* --mixer: none means every mixer */
	int nmixers;
	double resets; /* --resets: refused (decode steps take no marks) */
} BenchStepOpts;

/* Times the decode steps o chooses in m (mi: its JSON) and writes o->out:
 * 0, or -1 with a message in err. Opens and closes the driver itself. */
int bench_step_run(const BenchStepOpts *o, recur_manifest *m, const MfInfo *mi, char *err, size_t n);

#endif
