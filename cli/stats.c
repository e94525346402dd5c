/* Sample statistics and the AB/BA order (see stats.h). */
#include "stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int stats_compute(const double *x, int n, Stats *s)
{
	if (n < 1 || !x)
		return -1;
	/* the median needs a sorted copy; sample counts are small (rounds x samples) */
	double small[256], *t = n <= 256 ? small : malloc((size_t)n * sizeof *t);
	if (!t)
		return -1;
	memcpy(t, x, (size_t)n * sizeof *t);
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	s->median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
	s->min = t[0];
	s->max = t[n - 1];
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += x[i];
	s->mean = sum / n;
	/* two passes: the deviations are small next to the mean, so no cancellation */
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (x[i] - s->mean) * (x[i] - s->mean);
	s->std = sqrt(ss / n);
	if (t != small)
		free(t);
	return 0;
}

int bench_order(int round, int nmixers, int pos)
{
	if (round < 0 || nmixers < 1 || pos < 0 || pos >= nmixers)
		return -1;
	return round % 2 ? nmixers - 1 - pos : pos;
}

int bench_order_index(int round, int nmixers, int mixer)
{
	/* the order is its own inverse: reversing twice is the identity */
	return bench_order(round, nmixers, mixer);
}
