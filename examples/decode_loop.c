/* Sampling from your own program: a mixer's decode step (R.decode) called
 * once per generated token, the states updated in place in a pool that
 * several requests share, one step captured as a CUDA graph and replayed.
 *
 *   ./build/recur gen lua/variants/decode.lua -o out/decode
 *   ./build/decode_loop out/decode rglru_decode 8 1024 100
 *
 * Rows are requests: row b continues from slot index[b] of a pool of
 * S = 2B states (the other slots could hold waiting requests); row 0 is
 * padding (index -1; with B > 1), as when a batch has a free seat. The token each row
 * reads is written into x before every step; here it stays the same. The
 * step's launches are captured once and replayed per token, which is what
 * keeps the host's share of a step small. */
#include "recur.h"
#include "example_args.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRY(x) do { if ((x) != 0) { fprintf(stderr, "decode_loop: %s\n", err); goto out; } } while (0)
#define MAXP 16   /* parameters this example has buffers for */

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: decode_loop DIR VARIANT B D STEPS   (VARIANT: a decode step, e.g. rglru_decode)\n");
		return 2;
	}
	char err[4096] = "";
	recur_rt *rt = NULL;
	recur_manifest *m = NULL;
	recur_variant *v = NULL;
	recur_graph *g = NULL;
	CUdeviceptr x = 0, y = 0, pool = 0, index = 0, p[MAXP] = { 0 };
	CUevent e0 = NULL, e1 = NULL;
	uint16_t *h = NULL;
	int32_t *slots = NULL;
	float *state = NULL;
	int rc = 1, B, D, steps;
	TRY(whole(argv[3], "B", 1 << 20, &B, err, sizeof err) || whole(argv[4], "D", 1 << 20, &D, err, sizeof err) ||
	    whole(argv[5], "STEPS", 1 << 24, &steps, err, sizeof err));
	recur_shape s = { B, 1, D };   /* one token per row and step */
	TRY(recur_manifest_load(argv[1], &m, err, sizeof err));
	int vi = recur_manifest_find(m, argv[2]);
	if (vi < 0 || strcmp(recur_manifest_variant_scan(m, vi), "decode") != 0) {
		snprintf(err, sizeof err, "%s in %s is %s: give a decode step (recur list --dir %s shows \"scan decode\")",
		         argv[2], argv[1], vi < 0 ? "no variant" : "not a decode step", argv[1]);
		TRY(-1);
	}
	TRY(recur_check_shape(m, vi, s, err, sizeof err));
	int np = recur_param_count(m, vi);
	if (np > MAXP) {
		snprintf(err, sizeof err, "variant %s has %d parameters, more than this example's %d", argv[2], np, MAXP);
		TRY(-1);
	}
	TRY(recur_rt_open(&rt, 0, err, sizeof err));
	TRY(recur_variant_load(rt, m, argv[2], &v, err, sizeof err));
	size_t n = (size_t)B * (size_t)D, S = 2 * (size_t)B;   /* B * D fits: recur_check_shape passed */
	h = malloc(n * 2);
	slots = malloc((size_t)B * sizeof *slots);
	state = malloc(S * (size_t)D * sizeof *state);
	if (!h || !slots || !state) {
		snprintf(err, sizeof err, "out of host memory");
		TRY(-1);
	}
	for (size_t i = 0; i < n; i++)
		h[i] = 0x3f80 ^ (uint16_t)(i & 0x7f);   /* bf16 values near 1, not all equal */
	for (int b = 0; b < B; b++)   /* row 0 a free seat where there are others; the rows every other slot */
		slots[b] = b == 0 && B > 1 ? -1 : 2 * b;
	memset(state, 0, S * (size_t)D * sizeof *state);
	TRY(recur_alloc(rt, n * 2, &x, err, sizeof err));
	TRY(recur_alloc(rt, n * 2, &y, err, sizeof err));
	TRY(recur_alloc(rt, S * (size_t)D * 4, &pool, err, sizeof err));
	TRY(recur_alloc(rt, (size_t)B * 4, &index, err, sizeof err));
	TRY(recur_memcpy_htod(rt, x, h, n * 2, err, sizeof err));
	TRY(recur_memcpy_htod(rt, pool, state, S * (size_t)D * 4, err, sizeof err));
	TRY(recur_memcpy_htod(rt, index, slots, (size_t)B * 4, err, sizeof err));
	/* parameters in the mixer's order; small values here, a real program loads its own */
	for (int k = 0; k < np; k++) {
		long e = recur_param_elems(m, vi, k, s, err, sizeof err);
		TRY(e < 0);
		TRY(recur_alloc(rt, (size_t)e * 4, &p[k], err, sizeof err));
		TRY(recur_memset_u8(rt, p[k], 0x3c, (size_t)e * 4, err, sizeof err));   /* 0x3c3c3c3c: about 0.0115 */
	}
	/* in place: h0 and hT are the pool; each row's slot from index */
	recur_seqstate st = { .h0 = pool, .hT = pool, .index = index };
	recur_io io = { .x = x, .y = y, .params = p, .state = &st };
	TRY(recur_forward(v, s, &io, 0, err, sizeof err));   /* the first step, and the modules warm */
	TRY(recur_graph_create(v, s, &io, RECUR_GRAPH_FORWARD, &g, err, sizeof err));
	TRY(recur_event_create(rt, &e0, err, sizeof err));
	TRY(recur_event_create(rt, &e1, err, sizeof err));
	TRY(recur_sync(rt, err, sizeof err));
	double t0 = now_us();
	TRY(recur_event_record(rt, e0, 0, err, sizeof err));
	for (int k = 1; k < steps; k++)   /* a real loop writes the next tokens into x here */
		TRY(recur_graph_launch(g, 0, err, sizeof err));
	TRY(recur_event_record(rt, e1, 0, err, sizeof err));
	double host = now_us() - t0;
	float ms = 0;
	TRY(recur_event_elapsed_ms(rt, e0, e1, &ms, err, sizeof err));
	TRY(recur_memcpy_dtoh(rt, state, pool, S * (size_t)D * 4, err, sizeof err));
	int moved = 0, untouched = 1;
	for (size_t i = 0; i < S; i++)
		for (size_t c = 0; c < (size_t)D; c++) {
			int used = i % 2 == 0 && i / 2 < (size_t)B && (i > 0 || B == 1);   /* a row's slot */
			float f = state[i * (size_t)D + c];
			moved |= used && f != 0.0f;
			untouched &= used || f == 0.0f;
		}
	int more = steps > 1 ? steps - 1 : 1;
	printf("%s %d rows x %d channels, %d steps: GPU %.2f us per step, host %.2f us per step (graph replays); "
	       "the rows' states %s, the other slots %s\n", argv[2], B, D, steps, 1e3 * ms / more, host / more,
	       moved ? "moved" : "did NOT move", untouched ? "untouched" : "WRITTEN");
	rc = moved && untouched ? 0 : 1;
out:
	if (g) recur_graph_free(g);
	if (rt) {
		recur_event_destroy(rt, e0);
		recur_event_destroy(rt, e1);
		for (int k = 0; k < MAXP; k++)
			if (p[k]) recur_free(rt, p[k]);
		if (x) recur_free(rt, x);
		if (y) recur_free(rt, y);
		if (pool) recur_free(rt, pool);
		if (index) recur_free(rt, index);
	}
	if (v) recur_variant_free(v);
	if (m) recur_manifest_free(m);
	if (rt) recur_rt_close(rt);
	free(h);
	free(slots);
	free(state);
	return rc;
}
