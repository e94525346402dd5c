/* Using the runtime from your own program: load generated modules, run a
 * mixer's forward and backward on device buffers, read the result back.
 *
 *   ./build/recur gen -o out/ptx
 *   ./build/run_variant out/ptx fused_grouped_prefix32_hierarchical_chunk16 1 4096 1024
 *
 * Buffers here come from recur_alloc for brevity; any device pointers of the
 * primary context work (the runtime uses the device's primary context), and
 * the calls are asynchronous on the stream you pass. */
#include "recur.h"
#include "example_args.h"
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x) do { if ((x) != 0) { fprintf(stderr, "run_variant: %s\n", err); goto out; } } while (0)
#define MAXP 16   /* parameters this example has buffers for */

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: run_variant DIR VARIANT B L D\n");
		return 2;
	}
	char err[4096] = "";
	recur_shape s;
	recur_rt *rt = NULL;
	recur_manifest *m = NULL;
	recur_variant *v = NULL;
	CUdeviceptr x = 0, y = 0, dy = 0, dx = 0, p[MAXP] = { 0 }, g[MAXP] = { 0 };
	uint16_t *h = NULL;
	int rc = 1, np = 0;
	size_t bytes = 0;
	TRY(whole(argv[3], "B", INT_MAX, &s.B, err, sizeof err) || whole(argv[4], "L", INT_MAX, &s.L, err, sizeof err) ||
	    whole(argv[5], "D", INT_MAX, &s.D, err, sizeof err));
	TRY(recur_manifest_load(argv[1], &m, err, sizeof err));
	int vi = recur_manifest_find(m, argv[2]);
	if (vi < 0) {
		snprintf(err, sizeof err, "no variant %s in %s", argv[2], argv[1]);
		TRY(-1);
	}
	TRY(recur_check_shape(m, vi, s, err, sizeof err));   /* refused shapes never launch */
	TRY(recur_rt_open(&rt, 0, err, sizeof err));
	/* the runtime reads one buffer per parameter: all of them must exist */
	np = recur_param_count(m, vi);
	if (np > MAXP) {
		snprintf(err, sizeof err, "variant %s has %d parameters, more than this example's %d", argv[2], np, MAXP);
		TRY(-1);
	}
	TRY(recur_tensor_bytes(s, 2, &bytes, err, sizeof err));   /* checked: B*L*D*2 cannot wrap */
	TRY(recur_variant_load(rt, m, argv[2], &v, err, sizeof err));
	size_t n = bytes / 2;
	if (!(h = malloc(bytes))) {
		snprintf(err, sizeof err, "out of host memory for %zu bytes", bytes);
		TRY(-1);
	}
	for (size_t i = 0; i < n; i++)
		h[i] = 0x3f80 ^ (uint16_t)(i & 0x7f);   /* bf16 values near 1, not all equal */
	TRY(recur_alloc(rt, n * 2, &x, err, sizeof err));
	TRY(recur_alloc(rt, n * 2, &y, err, sizeof err));
	TRY(recur_alloc(rt, n * 2, &dy, err, sizeof err));
	TRY(recur_alloc(rt, n * 2, &dx, err, sizeof err));
	TRY(recur_memcpy_htod(rt, x, h, n * 2, err, sizeof err));
	TRY(recur_memcpy_htod(rt, dy, h, n * 2, err, sizeof err));
	/* parameters in the mixer's order; zeros here, a real program loads its own */
	for (int k = 0; k < np; k++) {
		long e = recur_param_elems(m, vi, k, s, err, sizeof err);
		TRY(e < 0);
		TRY(recur_alloc(rt, (size_t)e * 4, &p[k], err, sizeof err));
		TRY(recur_alloc(rt, (size_t)e * 4, &g[k], err, sizeof err));
		TRY(recur_memset_u8(rt, p[k], 0, (size_t)e * 4, err, sizeof err));
	}
	recur_io io = { .x = x, .y = y, .dy = dy, .dx = dx, .params = p, .grads = g };
	TRY(recur_forward(v, s, &io, 0, err, sizeof err));
	TRY(recur_backward(v, s, &io, 0, err, sizeof err));
	TRY(recur_sync(rt, err, sizeof err));
	TRY(recur_memcpy_dtoh(rt, h, y, n * 2, err, sizeof err));
	printf("%s %dx%dx%d: y[0] bits 0x%04x, peak device memory %zu bytes\n", argv[2], s.B, s.L, s.D,
	       h[0], recur_mem_peak(rt));
	rc = 0;
out:
	if (rt) {
		for (int k = 0; k < MAXP; k++) {
			if (p[k]) recur_free(rt, p[k]);
			if (g[k]) recur_free(rt, g[k]);
		}
		if (x) recur_free(rt, x);
		if (y) recur_free(rt, y);
		if (dy) recur_free(rt, dy);
		if (dx) recur_free(rt, dx);
	}
	if (v) recur_variant_free(v);
	if (m) recur_manifest_free(m);
	if (rt) recur_rt_close(rt);
	free(h);
	return rc;
}
