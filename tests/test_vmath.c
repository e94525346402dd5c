/* verify's host arithmetic (cli/vmath.c) against plain sequential loops:
 * the relative error of a tensor and its count of non-finite entries, and
 * the bf16 conversions, on arrays spanning several chunks and a ragged end;
 * the error of a sum of logarithms (map_loga), where -inf is a value.
 *
 *   ctest -R test_vmath
 */
#include "vmath.h"
#include "rng.h"
#include "check.h"

#include <math.h>
#include <string.h>

int main(void)
{
	size_t n = 3 * VM_CHUNK + 123;
	float *out = malloc(n * sizeof(float));
	double *ref = malloc(n * sizeof(double));
	uint16_t *bits = malloc(n * 2);
	float *back = malloc(n * sizeof(float));
	if (!out || !ref || !bits || !back) {
		printf("out of memory\n");
		return 1;
	}
	Rng r;
	rng_seed(&r, 12345);
	for (size_t i = 0; i < n; i++) {
		ref[i] = rng_normal(&r);
		out[i] = (float)(ref[i] * (1 + 1e-3 * rng_normal(&r)));
	}
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)out[i] - ref[i];
		num += d * d;
		den += ref[i] * ref[i];
	}
	double want = sqrt(num / den);
	int bad = 0;
	double got = vm_relerr(out, ref, n, &bad);
	check(fabs(got - want) <= 1e-12 * want && bad == 0, "relative error over 3 chunks and a ragged end",
	      "got %.17g, sequential %.17g, bad %d", got, want, bad);
	int bad2 = 0;
	double again = vm_relerr(out, ref, n, &bad2);
	check(memcmp(&got, &again, sizeof got) == 0, "the same bits on a second call", NULL);
	out[7] = NAN;
	out[n - 1] = INFINITY;
	out[VM_CHUNK] = -INFINITY;
	bad = 0;
	got = vm_relerr(out, ref, n, &bad);
	check(bad == 3 && !isfinite(got), "non-finite entries counted in every chunk", "bad %d, err %g", bad, got);
	double zero[5] = { 0 };
	float small[5] = { 3, 0, 0, 4, 0 };
	bad = 0;
	got = vm_relerr(small, zero, 5, &bad);
	check(fabs(got - 5) < 1e-12, "a zero reference: the norm of the output", "got %g", got);
	vm_to_bf16(ref, bits, n);
	vm_from_bf16(bits, back, n);
	size_t wrong = 0;
	for (size_t i = 0; i < n; i++)
		wrong += bits[i] != bf16_bits((float)ref[i]) || back[i] != bf16_to_float(bits[i]);
	check(wrong == 0, "bf16 conversions equal the element-wise ones", "%zu differ", wrong);

	/* per row and channel: [rows][cols] with a ragged last chunk of rows,
	 * against sequential sums; then one token's row and one channel
	 * corrupted by an O(1) error, which the whole tensor's norm hides */
	size_t cols = 96, rows = 3 * (VM_CHUNK / cols) + 2, m = rows * cols;
	check(m <= n, "the local case fits the buffers", NULL);
	for (size_t i = 0; i < m; i++)
		out[i] = (float)(ref[i] * (1 + 4e-3 * rng_normal(&r)));
	double tot = 0, wr = 0, wc = 0;
	size_t ar = 0, ac = 0;
	for (size_t i = 0; i < m; i++)
		tot += ref[i] * ref[i];
	for (size_t a = 0; a < rows + cols; a++) {
		int isrow = a < rows;
		size_t k = isrow ? a : a - rows, len = isrow ? cols : rows;
		double d2 = 0, r2 = 0;
		for (size_t q = 0; q < len; q++) {
			size_t i = isrow ? k * cols + q : q * cols + k;
			d2 += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
			r2 += ref[i] * ref[i];
		}
		double fl = VM_LOCAL_FLOOR * sqrt(tot / (double)(isrow ? rows : cols));
		double e = sqrt(d2) / (sqrt(r2) > fl ? sqrt(r2) : fl);
		if (isrow && e > wr) { wr = e; ar = k; }
		if (!isrow && e > wc) { wc = e; ac = k; }
	}
	VmLocal lc;
	int rc = vm_local(out, ref, rows, cols, &lc);
	check(rc == 0 && fabs(lc.row - wr) <= 1e-12 * wr && fabs(lc.col - wc) <= 1e-12 * wc && lc.at_row == ar &&
	      lc.at_col == ac, "worst row and channel equal the sequential ones",
	      "row %.6g at %zu (sequential %.6g at %zu), channel %.6g at %zu (%.6g at %zu)", lc.row, lc.at_row, wr, ar,
	      lc.col, lc.at_col, wc, ac);
	check(lc.row < 2e-2 && lc.col < 1e-2, "rounding noise of 4e-3 stays far under the local tolerance",
	      "row %.3g, channel %.3g", lc.row, lc.col);
	size_t badrow = rows - 3;
	for (size_t c = 0; c < cols; c++)
		out[badrow * cols + c] = (float)(0.5 * ref[badrow * cols + c]);
	bad = 0;
	got = vm_relerr(out, ref, m, &bad);
	rc = vm_local(out, ref, rows, cols, &lc);
	check(got < 1e-2 && rc == 0 && lc.row > 0.4 && lc.at_row == badrow, "one wrong token row: under the norm, found",
	      "norm %.3g, worst row %.3g at %zu", got, lc.row, lc.at_row);
	for (size_t c = 0; c < cols; c++)
		out[badrow * cols + c] = (float)ref[badrow * cols + c];
	for (size_t q = 0; q < rows; q++)
		out[q * cols + 5] = (float)(ref[q * cols + 5] * 1.3);
	got = vm_relerr(out, ref, m, &bad);
	rc = vm_local(out, ref, rows, cols, &lc);
	check(got < 5e-2 && rc == 0 && lc.col > 0.25 && lc.at_col == 5, "one wrong channel: found",
	      "norm %.3g, worst channel %.3g at %zu", got, lc.col, lc.at_col);
	out[11 * cols + 2] = NAN;
	rc = vm_local(out, ref, rows, cols, &lc);
	check(rc == 0 && isnan(lc.row) && lc.at_row == 11, "a NaN is the worst row", "%g at %zu", lc.row, lc.at_row);

	/* the row's map_loga: -inf is a value. Finite entries judged as by
	 * vm_relerr; a -inf reference must come back -inf, and any other
	 * non-finite output counts as bad */
	double lref[6] = { -3.0, -INFINITY, -0.5, -INFINITY, -10.0, -2.0 };
	float lout[6] = { -3.003f, -INFINITY, -0.5f, -INFINITY, -10.01f, -2.0f };
	double ln = 0, ld = 0;
	for (int i = 0; i < 6; i++)
		if (isfinite(lref[i])) {
			ln += ((double)lout[i] - lref[i]) * ((double)lout[i] - lref[i]);
			ld += lref[i] * lref[i];
		}
	bad = 0;
	got = vm_relerr_loga(lout, lref, 6, &bad);
	check(bad == 0 && fabs(got - sqrt(ln / ld)) <= 1e-12 * got, "map_loga: -inf matched, the rest as a norm",
	      "got %.6g (want %.6g), bad %d", got, sqrt(ln / ld), bad);
	lout[1] = -1e30f;   /* a row a mark cuts, come back finite */
	lout[2] = -INFINITY;   /* a row without a mark, come back -inf */
	lout[4] = NAN;
	bad = 0;
	vm_relerr_loga(lout, lref, 6, &bad);
	check(bad == 3, "map_loga: a finite value for -inf, -inf for a finite one and a NaN each count",
	      "bad %d", bad);
	free(out); free(ref); free(bits); free(back);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
