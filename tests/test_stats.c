/* cli/stats.c: median / mean / population std / min / max on known arrays
 * (odd and even counts, one sample, none), the seed's own rows recomputed
 * from their samples_ms, and the AB/BA order: even rounds in manifest
 * order, odd rounds reversed, one mixer always first, each mixer first as
 * often as last, and the seed's order_index values reproduced (the seed
 * alternates per shape too: shape k, round r uses the order of round k + r).
 */
#include "stats.h"
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int near(double a, double b, double tol)
{
	return fabs(a - b) <= tol * (1 + fabs(b));
}

static void known_arrays(void)
{
	Stats s = { 0 };
	int rc;
	double odd[] = { 3, 1, 2 };
	rc = stats_compute(odd, 3, &s);
	check(rc == 0 && s.median == 2 && s.mean == 2 && s.min == 1 && s.max == 3,
	      "odd count: median 2, mean 2, min 1, max 3", "median %g mean %g min %g max %g", s.median, s.mean, s.min, s.max);
	check(near(s.std, sqrt(2.0 / 3.0), 1e-15), "odd count: population std sqrt(2/3)", "std %.17g", s.std);
	check(odd[0] == 3 && odd[1] == 1 && odd[2] == 2, "the input array is left unsorted", NULL);

	double even[] = { 4, 1, 3, 2 };
	rc = stats_compute(even, 4, &s);
	check(rc == 0 && s.median == 2.5 && s.mean == 2.5, "even count: median is the mean of the middle two",
	      "median %g mean %g", s.median, s.mean);

	double classic[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	rc = stats_compute(classic, 8, &s);
	check(rc == 0 && near(s.std, 2.0, 1e-15) && s.mean == 5 && s.median == 4.5,
	      "population std of {2,4,4,4,5,5,7,9} is 2 (sample std would be 2.138)", "std %.17g mean %g median %g",
	      s.std, s.mean, s.median);

	double one[] = { 0.75 };
	rc = stats_compute(one, 1, &s);
	check(rc == 0 && s.median == 0.75 && s.std == 0 && s.min == 0.75 && s.max == 0.75,
	      "one sample: median = min = max = it, std 0", NULL);
	check(stats_compute(one, 0, &s) == -1, "no samples is refused", NULL);

	/* more than the on-stack buffer (256): the heap path */
	double *big = malloc(1001 * sizeof *big);
	for (int i = 0; i < 1001; i++)
		big[i] = (double)((i * 7919) % 1001);   /* a permutation of 0..1000 */
	rc = stats_compute(big, 1001, &s);
	check(rc == 0 && s.median == 500 && s.min == 0 && s.max == 1000 && s.mean == 500,
	      "1001 permuted values: median 500 through the heap path", "median %g", s.median);
	free(big);

	double outlier[] = { 1.1330805718898773, 1.1113286018371582, 1.123320311307907, 1.1089593172073364,
	                     1.1703334748744965, 6.927937269210815, 1.1605210602283478, 1.1214092373847961,
	                     1.1219456791877747, 1.0889805853366852 };
	/* the seed's samu 1x8192x1024 backward: median robust to the 6.9 ms outlier */
	rc = stats_compute(outlier, 10, &s);
	check(rc == 0 && near(s.median, 1.1226329952478409, 1e-15) &&
	      near(s.mean, 1.7067816108465195, 1e-14) && near(s.std, 1.7405324283442962, 1e-13),
	      "seed samu backward samples give the seed's median, mean, std", "median %.17g mean %.17g std %.17g",
	      s.median, s.mean, s.std);
}

static void order_logic(void)
{
	int ok = 1;
	for (int r = 0; r < 6; r++) {
		ok &= bench_order(r, 2, 0) == (r % 2 ? 1 : 0) && bench_order(r, 2, 1) == (r % 2 ? 0 : 1);
		ok &= bench_order(r, 1, 0) == 0;
	}
	check(ok, "two mixers: A,B then B,A, alternating; one mixer: always itself", NULL);
	check(bench_order(1, 3, 0) == 2 && bench_order(1, 3, 1) == 1 && bench_order(1, 3, 2) == 0 &&
	      bench_order(0, 3, 0) == 0 && bench_order(0, 3, 2) == 2, "three mixers: round 1 runs them reversed", NULL);
	ok = 1;
	for (int n = 1; n <= 5; n++)
		for (int r = 0; r < 4; r++)
			for (int p = 0; p < n; p++)
				ok &= bench_order_index(r, n, bench_order(r, n, p)) == p;
	check(ok, "bench_order_index inverts bench_order (n = 1..5, rounds 0..3)", NULL);
	ok = 1;
	for (int n = 1; n <= 5; n++)
		for (int m = 0; m < n; m++)
			ok &= bench_order_index(0, n, m) + bench_order_index(1, n, m) == n - 1;
	check(ok, "counterbalanced: over two rounds every mixer's positions sum to n-1", NULL);
	check(bench_order(0, 2, 2) == -1 && bench_order(-1, 2, 0) == -1 && bench_order(0, 0, 0) == -1 &&
	      bench_order_index(0, 2, 5) == -1, "out-of-range arguments give -1", NULL);
}

/* Every statistic of every row of the seed, recomputed from its samples,
 * and the rounds' order_index as bench_order_index gives it. */
static int seed_rows(void)
{
	char buf[4096];
	const char *path = seed_path(buf, sizeof buf);
	json_error_t je;
	json_t *d = json_load_file(path, 0, &je);
	if (!d) {
		printf("SKIP seed checks: cannot read %s (%s); set RECUR_SEED\n", path, je.text);
		return 0;
	}
	size_t i;
	json_t *row;
	int stats_ok = 1, order_ok = 1, nrows = 0;
	const char *mixers[2] = { "rglru", "samu" };   /* the seed's order within a round-0 shape */
	int lengths[16], nlen = 0;
	json_array_foreach(json_object_get(d, "rows"), i, row) {
		nrows++;
		/* shape index: the seed's shapes in order of first appearance */
		int L = (int)json_integer_value(json_object_get(json_object_get(row, "shape"), "length")), si = 0;
		while (si < nlen && lengths[si] != L)
			si++;
		if (si == nlen && nlen < 16)
			lengths[nlen++] = L;
		const char *sec[] = { "forward", "backward", "forward_backward" };
		for (int k = 0; k < 3; k++) {
			json_t *o = json_object_get(row, sec[k]), *a = json_object_get(o, "samples_ms");
			double x[64];
			int n = (int)json_array_size(a);
			for (int j = 0; j < n && j < 64; j++)
				x[j] = json_number_value(json_array_get(a, j));
			Stats s = { 0 };
			int rc = stats_compute(x, n, &s);
			stats_ok &= rc == 0 && near(s.median, json_number_value(json_object_get(o, "median_ms")), 1e-13) &&
			            near(s.mean, json_number_value(json_object_get(o, "mean_ms")), 1e-13) &&
			            near(s.std, json_number_value(json_object_get(o, "std_ms")), 1e-9) &&
			            s.min == json_number_value(json_object_get(o, "minimum_ms")) &&
			            s.max == json_number_value(json_object_get(o, "maximum_ms"));
		}
		int mi = strcmp(json_string_value(json_object_get(row, "architecture")), mixers[0]) ? 1 : 0;
		size_t r;
		json_t *ro;
		json_array_foreach(json_object_get(row, "rounds"), r, ro)
			order_ok &= json_integer_value(json_object_get(ro, "order_index")) ==
			            bench_order_index(si + (int)json_integer_value(json_object_get(ro, "round")), 2, mi);
	}
	check(nrows == 8 && stats_ok, "the seed's 8 rows: median/mean/std/min/max recomputed from samples_ms", "%d rows", nrows);
	check(nrows == 8 && order_ok, "the seed's order_index = bench_order_index(shape index + round, 2, mixer)", NULL);
	json_decref(d);
	return 1;
}

int main(void)
{
	known_arrays();
	order_logic();
	if (!seed_rows())
		printf("(seed checks skipped: the seed file was not found)\n");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
