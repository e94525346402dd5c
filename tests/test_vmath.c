/* verify's host arithmetic (cli/vmath.c) against plain sequential loops:
 * the relative error of a tensor and its count of non-finite entries, and
 * the bf16 conversions, on arrays spanning several chunks and a ragged end.
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
	free(out); free(ref); free(bits); free(back);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
