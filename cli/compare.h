/* recur compare: a results file beside a reference (the seed by default).
 *
 * Rows are matched by (architecture, batch, length, width). Per row: our
 * forward+backward median, the reference's, the speedup (reference / ours,
 * above 1 means faster), our fraction of the floor (floor ms / our ms, when
 * the row has a floor) and the peak extra device memory per element
 * (peak_allocated_delta_bytes / (B*L*D)) of both. The chart: forward+
 * backward ms against L, log-log, ours vs reference vs floor per mixer.
 */
#ifndef RECUR_COMPARE_H
#define RECUR_COMPARE_H

#include "recur.h"
#include <jansson.h>
#include <stdio.h>

typedef struct {
	char arch[32];
	recur_shape s;
	char backend[128], ref_backend[128];
	double ours_ms, ref_ms;       /* forward_backward median_ms; NAN when absent */
	double speedup;               /* ref_ms / ours_ms; NAN when either is absent */
	double floor_ms, floor_frac;  /* floor.forward_backward_ms, floor_ms / ours_ms; NAN without a floor */
	double ours_mem, ref_mem;     /* peak extra bytes per element; NAN when absent */
} CmpRow;

/* One CmpRow per row of ours (malloc'd, *n of them). */
int  compare_rows(const json_t *ours, const json_t *ref, CmpRow **rows, int *n, char *err, size_t errlen);
void compare_print(FILE *f, const CmpRow *rows, int n);
/* The chart of ours and ref into path. */
int  compare_svg(const char *path, const json_t *ours, const json_t *ref, const char *ours_name,
                 const char *ref_name, char *err, size_t errlen);
/* $RECUR_SEED, else RECUR_SOURCE_DIR/../shared/seed/000_c94c45093349daa5.txt */
void compare_seed_path(char *out, size_t n);
/* RESULTS.svg beside RESULTS (".json" replaced) */
void compare_svg_path(const char *results, char *out, size_t n);

#endif
