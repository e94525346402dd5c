/* Sample statistics and the AB/BA run order of the benchmark protocol.
 *
 * Pure functions (no GPU, no allocation) so that tests/test_stats.c can
 * check them on known arrays; bench.c and calibrate.c use them for every
 * figure they write.
 */
#ifndef RECUR_STATS_H
#define RECUR_STATS_H

/* What the seed reports per timed region, all in milliseconds. */
typedef struct {
	double median;   /* middle value; mean of the two middle ones for an even count */
	double mean;
	double std;      /* population standard deviation (divide by n, as the seed does) */
	double min, max;
} Stats;

/* 0 and *s from x[0..n-1] (x is not modified), or -1 when n < 1. */
int stats_compute(const double *x, int n, Stats *s);

/* The AB/BA counterbalanced order: even rounds run the mixers in manifest
 * order, odd rounds in reverse, so that each mixer runs first as often as
 * last. With one mixer every round is the same. The seed also alternates
 * from one shape to the next (its shape k, round r runs in the order of
 * round k + r: rglru first at 8192 and 65536, samu first at 32768 and
 * 131072), so bench passes round = shape index + round.
 * bench_order: the mixer that runs at position pos of round r.
 * bench_order_index: the position (0 = ran first) of mixer mi in round r.
 * Both return -1 on an argument out of range. */
int bench_order(int round, int nmixers, int pos);
int bench_order_index(int round, int nmixers, int mixer);

#endif
