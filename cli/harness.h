/* The GPU side shared by `recur bench` and `recur calibrate`: one mixer's
 * buffers at a shape (random bf16 x and dy, the script's initial
 * parameters), the L2 flush, event-timed regions, the memory window, a
 * check for non-finite outputs and the device bandwidth floor.
 *
 * Everything runs on the default stream (recur_memset_u8 does too), so a
 * flush, the timed launches and the events are ordered without extra
 * synchronisation. Messages name the mixer, variant, shape and the call.
 */
#ifndef RECUR_HARNESS_H
#define RECUR_HARNESS_H

#include "recur.h"
#include "results.h"

#define H_MAXP 16
#define H_MAXSHAPES 32
/* More than twice the L2 of any current GPU (H200: 60 MB). */
#define H_FLUSH_BYTES ((size_t)256 << 20)

typedef struct {
	recur_rt *rt;
	CUdeviceptr flush;
	size_t flush_bytes;
	CUevent ev[2];
	unsigned char flush_value;   /* changes per flush, so no write is ever redundant */
} Harness;

typedef struct {
	recur_shape s;
	int np;
	CUdeviceptr x, dy, y, dx;
	CUdeviceptr p[H_MAXP], g[H_MAXP];
	long long parameters;        /* fp32 values in all parameters */
	CUdeviceptr reset, h0, hT, dhT, dh0;   /* the calls' sequence state (hbufs_state), or 0 */
	CUdeviceptr cu;                        /* packed: the documents' offsets int32 [ndocs + 1], or 0 */
	CUdeviceptr mla, mh;                   /* the row's map (hbufs_map), or 0 */
	recur_seqstate st;
	size_t input_bytes;          /* x, dy, parameters, gradients: the memory baseline */
	char what[200];              /* "rglru VARIANT 1x8192x1024", for messages */
} HBufs;

enum { H_FWD, H_BWD, H_FB };

int  harness_open(Harness *h, recur_rt *rt, size_t flush_bytes, char *err, size_t errlen);
void harness_close(Harness *h);
int  harness_flush(Harness *h, char *err, size_t errlen);

/* x, dy (random normal, bf16), parameters (the script's init for the mixer
 * of variant vi), gradients (zeroed); y and dx are not allocated. */
int  hbufs_inputs(Harness *h, const recur_manifest *m, int vi, recur_shape s, uint64_t seed,
                  HBufs *b, char *err, size_t errlen);
int  hbufs_outputs(Harness *h, HBufs *b, char *err, size_t errlen);   /* y, dx */
/* How hbufs_state gives the marks' documents: as reset marks in rows; as
 * cu_seqlens with hT and dhT per document; or as cu_seqlens without final
 * states (a call training on packed documents) */
enum { HB_ROWS, HB_PACKED, HB_PACKED_NOFINAL };
/* A sequence state for every call: reset marks at rate resets (> 0; none
 * at 0) drawn from seed, and with states nonzero h0 and dhT, and room for
 * hT and dh0 (all fp32 [B][D]). packed (B = 1; HB_*): the marks'
 * documents as cu_seqlens instead (t = 0 starts the first), hT and dhT
 * unless HB_PACKED_NOFINAL, and the states [ndocs][D]. */
int  hbufs_state(Harness *h, HBufs *b, double resets, int states, int packed, uint64_t seed, char *err,
                 size_t errlen);
/* Room for the row's map (map_loga, map_h fp32 [B][D]) in the calls'
 * state, after hbufs_state with states: a map variant's calls then make
 * and write it, as a user asking for it would. */
int  hbufs_map(Harness *h, HBufs *b, char *err, size_t errlen);
void hbufs_free_outputs(Harness *h, HBufs *b);
void hbufs_free(Harness *h, HBufs *b);
/* Names the variant in messages from now on. */
void hbufs_label(HBufs *b, const char *mixer, const char *variant);
/* the buffers as the runtime's calls take them */
recur_io hbufs_io(const HBufs *b);

/* One untimed forward + backward. */
int  harness_run(Harness *h, recur_variant *v, HBufs *b, char *err, size_t errlen);
/* Flush, then events around the region (H_FWD, H_BWD: needs a forward
 * before it, H_FB). */
int  harness_time(Harness *h, recur_variant *v, HBufs *b, int region, double *ms, char *err, size_t errlen);
/* The memory window: y and dx freed and workspaces trimmed, then y and dx
 * allocated and one forward + backward run inside it. *delta = peak - held
 * before. Leaves y and dx allocated and the workspaces cached. */
int  harness_memory(Harness *h, recur_variant *v, HBufs *b, long long *delta, char *err, size_t errlen);
/* 0 when y and dx hold only finite values; 1 with what is wrong in why;
 * -1 on a failing call. */
int  harness_finite(Harness *h, HBufs *b, char *why, size_t n);
/* The device's copy bandwidth (or a write proxy, said so in f->key). */
int  harness_bandwidth(Harness *h, ResFloor *f, char *err, size_t errlen);

/* The environment block: GPU, driver, CUDA API, and the manifest's LLVM,
 * PTX ISA, target, generator. */
void harness_env(recur_rt *rt, const recur_manifest *m, ResEnv *e);
/* The kernel driver's version from /proc/driver/nvidia/version ("unknown"). */
void harness_driver_version(char *out, size_t n);

/* "1x8192x1024,1x32768x1024": count, or -1 with the bad item in err
 * (cli_parse_shapes: checked numbers, the limits named). */
int  harness_parse_shapes(const char *list, recur_shape *out, int max, char *err, size_t errlen);
/* Appends list's shapes to out[*n..] (a repeatable --shape): 0, or -1 with
 * the bad item, or that all of them would pass max, in err. */
int  harness_add_shapes(const char *list, recur_shape *out, int *n, int max, char *err, size_t errlen);
/* The seed's shapes: B=1, D=1024, L = 8192, 32768, 65536, 131072 (the
 * default of --shapes: written once, as the command line gives them). */
#define H_DEFAULT_SHAPES "1x8192x1024,1x32768x1024,1x65536x1024,1x131072x1024"
int  harness_default_shapes(recur_shape *out);

/* A profiled launch of v (recur_variant_last_launch) as a results row's
 * kernel: its time, geometry and occupancy, and the kernel's registers,
 * local and static shared bytes (bytes are the caller's: they need the
 * plan). */
void harness_kernel(const recur_variant *v, const recur_launch_info *li, ResKernel *k);

#endif
