/* Results files in the seed's schema (schema_version 1), written with jansson.
 *
 * A ResRow holds everything bench measures for one (mixer, shape); results_doc
 * turns rows into the seed's layout (the seed's keys, in the seed's order,
 * then this project's additions: floor, profile, notes, variant_source).
 * Every file is written atomically (FILE.tmp.PID, then rename), so a reader
 * never sees half a file and an interrupted run leaves the old one intact.
 * No GPU is needed here: tests/test_results.c writes synthetic rows.
 */
#ifndef RECUR_RESULTS_H
#define RECUR_RESULTS_H

#include "recur.h"
#include <jansson.h>
#include "fsutil.h"

#define RES_MAXROUNDS 8
#define RES_MAXSAMPLES 64    /* per round */
#define RES_MAXNOTES 4
#define RES_MAXPROF 16       /* launches per pass in a profile */

/* The device's own speed, measured in the same run, against which every
 * figure is shown. The key names the measurement honestly: a device copy
 * (recur_memcpy_dtod) gives "copy_bandwidth_gb_per_s" (read + write bytes);
 * results written before the runtime offered the copy may hold a memset's
 * "write_bandwidth_gb_per_s" instead, which compare still reads. */
typedef struct {
	char key[40];            /* JSON key of the bandwidth */
	char method[160];        /* how it was measured, in words */
	double gb_per_s;         /* 1e9 bytes per second; 0 = no floor */
} ResFloor;

/* Bytes a pass must move per element of [B, L, D] (bf16 tensors): forward
 * reads x and writes y; backward reads x and dy and writes dx. */
enum { RES_FWD_BYTES = 4, RES_BWD_BYTES = 6, RES_FB_BYTES = 10 };

typedef struct {
	char kernel[64];
	double ms;
	double bytes;            /* compulsory DRAM bytes declared by the generator, 0 = unknown */
	double flops;            /* tensor-core FLOP of its math declared by the generator, 0 = none */
	int registers, local_bytes, static_smem, max_threads;
	unsigned grid[3], dyn_smem;
	int block, blocks_per_sm;   /* as launched; 0 = unknown */
	int cluster, max_clusters;  /* blocks per cluster (0 or 1: none) and clusters the GPU holds at once */
} ResKernel;

typedef struct {
	recur_shape shape;
	char architecture[32];   /* mixer name */
	char backend[128];       /* variant name */
	char controller[64];     /* "" writes null */
	int nrounds, nsamples;   /* samples per round */
	double fwd[RES_MAXROUNDS][RES_MAXSAMPLES];   /* ms, per round */
	double bwd[RES_MAXROUNDS][RES_MAXSAMPLES];
	double fb[RES_MAXROUNDS][RES_MAXSAMPLES];
	int order_index[RES_MAXROUNDS];              /* 0 = this mixer ran first in the round */
	long long baseline_allocated, peak_allocated;
	long long baseline_reserved, peak_reserved;
	long long parameters;                        /* fp32 values; parameter_bytes = 4x */
	long long dyn_per_token;
	int materialized;
	int has_saved;                               /* saved_bytes known (a scan variant's row) */
	long long saved_bytes;                       /* what its forward keeps for the backward: the saved
	                                              * region of recur_workspace_sizes */
	ResFloor floor;                              /* gb_per_s 0: no floor object */
	int has_profile;
	int nprof[2];                                /* forward, backward launches */
	ResKernel prof[2][RES_MAXPROF];
	int nnotes;
	char notes[RES_MAXNOTES][256];
	char variant_source[300];                    /* "calibration FILE" | "--variant" */
} ResRow;

typedef struct {
	char gpu[256];
	char driver[64];         /* kernel driver version, "unknown" when unreadable */
	int cuda_api;            /* cuDriverGetVersion, e.g. 13000 */
	char llvm[32], ptx_isa[16], target[16], generator[64];
} ResEnv;

typedef struct {
	int rounds, samples, warmup;
	long long flush_bytes;
	char baseline_policy[256], samu_policy[256];
	char resets[256];         /* the calls' sequence state; "" for the seed's (a reset at t = 0 only) */
} ResProtocol;

/* {"batch": B, "length": L, "width": D}: a shape as the seed writes it */
json_t *results_shape(recur_shape s);
/* {"samples_ms": [...], "median_ms", "mean_ms", "std_ms", "minimum_ms", "maximum_ms"} */
json_t *results_stats(const double *x, int n);
/* The floor object of a row at shape s (NULL when f has no bandwidth). */
json_t *results_floor(const ResFloor *f, recur_shape s);
json_t *results_row(const ResRow *r);
json_t *results_env(const ResEnv *e);
json_t *results_doc(const ResEnv *e, const ResProtocol *p, const ResRow *rows, int n);

/* "13.0" from 13000 */
void results_cuda_string(int api, char *out, size_t n);

/* Creates the parent folders of path and writes doc there as a CliOut
 * (below). 0, or -1 with a message naming the file and the failing call. */
int results_write_atomic(const char *path, const json_t *doc, char *err, size_t errlen);
/* Creates the parent folders of path now, so a run that writes it only at
 * the end fails before its work, not after. 0, or -1 with a message naming
 * what (e.g. "results file"), path and the folder that could not be made. */
int results_out_folder(const char *path, const char *what, char *err, size_t errlen);


/* ---- every file the CLI writes (results, calibration, charts) ----
 * An FsOut (util/fsutil.h: written whole or not at all, beside the target,
 * links and permissions kept, devices written in place, folders refused)
 * whose temporary file SIGINT, SIGTERM or SIGHUP also removes (the
 * signal's earlier disposition then runs). One CliOut is open at a time. */
typedef FsOut CliOut;
int  cli_out_open(CliOut *o, const char *path, char *err, size_t errlen);
/* flush, fsync, close, rename over the target: 0, or -1 (tmp removed) */
int  cli_out_commit(CliOut *o, char *err, size_t errlen);
void cli_out_abort(CliOut *o);
/* 0 when path names none of the n inputs, by name or as the same file
 * (a link, another spelling); else -1 with "the WHAT PATH would
 * overwrite its input INPUT" in err. NULL inputs are skipped. */
int  cli_out_not_input(const char *path, const char *what, const char *const *inputs, int n, char *err,
                       size_t errlen);

#endif
