/* The calibration file: which variant won, per (mixer, shape, GPU, driver,
 * generator version), with every candidate's timing.
 *
 *   {"schema_version": 1, "kind": "recur calibration",
 *    "entries": [{"mixer", "shape": {batch, length, width}, "gpu", "driver_version",
 *                 "cuda_driver_api_version", "generator",          <- the key
 *                 "winner": NAME | null, "winner_forward_backward_median_ms",
 *                 "memory_budget_bytes_per_element": B | null,
 *                 "samples", "warmup_runs", "calibrated_at",
 *                 "candidates": [{"variant", "status": "ok" | "failed",
 *                                 "forward_backward": {stats},
 *                                 "extra_bytes_per_element": peak extra memory
 *                                 / (B L D) | "error": text}],
 *                 "skipped": [{"variant", "reason"}]}]}
 *
 * `recur calibrate` merges into the file (an entry with the same key is
 * replaced, others are kept) and writes it atomically; `recur bench` looks
 * entries up and, when one is missing, says which command writes it.
 */
#ifndef RECUR_CALFILE_H
#define RECUR_CALFILE_H

#include "recur.h"
#include <jansson.h>

#define CAL_DEFAULT_PATH "out/calibration.json"

typedef struct {
	char mixer[32];
	recur_shape shape;
	char gpu[256];
	char driver[64];      /* kernel driver version, or "unknown" */
	int cuda_api;         /* cuDriverGetVersion */
	char generator[64];   /* the manifest's "generator" */
} CalKey;

/* A new, empty calibration document. */
json_t *cal_new(void);
/* Reads path. A missing file gives an empty document when missing_ok, else
 * an error; a file that is not a calibration document is an error. */
int cal_load(const char *path, int missing_ok, json_t **doc, char *err, size_t errlen);
/* The entry with key k, borrowed from doc, or NULL. */
json_t *cal_find(const json_t *doc, const CalKey *k);
/* The winner's variant name (borrowed), or NULL when the entry has none. */
const char *cal_winner(const json_t *entry);
/* A new entry holding just the key fields. */
json_t *cal_entry_new(const CalKey *k);
/* Puts entry (reference stolen) in doc, replacing an entry with the same key. */
void cal_put(json_t *doc, json_t *entry);
/* What a winner may hold, in bytes per element of B L D (0: no bound):
 * extra, its peak over a forward and backward (y, dx and the workspaces:
 * --memory-budget); saved, what its forward keeps for its backward (the
 * saved region, what a layer holds between the passes in training:
 * --saved-budget). */
typedef struct { double extra, saved; } CalBudget;
/* The winner among an entry's candidates: of those that ran ("status":
 * "ok"), the fastest median among those within every bound of b (a
 * candidate without the number a bound reads is over it; b NULL: no
 * bound). Returns its index, or -1; *least (when not NULL) gets the ok
 * candidate holding the least of what the budget bounds (saved bytes
 * where b bounds them, else the extra bytes), or -1. Ties keep the first. */
int cal_pick(const json_t *cands, const CalBudget *b, int *least);
/* A candidate's forward + backward median (ms), its extra bytes per
 * element and the bytes per element its forward keeps for the backward,
 * or -1 where the entry does not hold them. */
double cal_cand_ms(const json_t *cand);
double cal_cand_bytes(const json_t *cand);
double cal_cand_saved(const json_t *cand);
/* The message for a missing (entry NULL) or winnerless entry: what is
 * missing, why, where, and the command that calibrates it. dir is the
 * manifest folder used. */
void cal_missing_message(const CalKey *k, const json_t *entry, const char *calpath, const char *dir,
                         char *msg, size_t n);
/* "1x8192x1024" */
void cal_shape_string(recur_shape s, char *out, size_t n);

#endif
