/* What bench and calibrate need from manifest.json that recur.h does not
 * expose: a variant's "materialized" flag and "controller", a mixer's
 * "controller" and "dynamic_control_values_per_token" (a shape expression).
 * Read here with jansson from the manifest the runtime loaded, so that the
 * runtime stays untouched; the format is described in runtime/manifest.h.
 */
#ifndef RECUR_MFINFO_H
#define RECUR_MFINFO_H

#include "recur.h"
#include <jansson.h>

typedef struct {
	json_t *root;
	char path[4096];
} MfInfo;

/* A folder generated for several targets lists each variant once per
 * target: keep the modules for device 0 (recur_manifest_select), so that
 * a command runs each variant once. Opens the driver only then. */
int  mf_for_device(recur_manifest *m, char *err, size_t errlen);
/* Parses the manifest.json that m was loaded from. */
int  mf_open(MfInfo *mi, const recur_manifest *m, char *err, size_t errlen);
/* Parses a manifest file by path (tests use this). */
int  mf_open_path(MfInfo *mi, const char *path, char *err, size_t errlen);
void mf_close(MfInfo *mi);
/* 1 / 0, or -1 with a message when the variant or its flag is absent. */
int  mf_materialized(const MfInfo *mi, const char *variant, char *err, size_t errlen);
/* The variant's controller, else its mixer's; NULL for null or absent. */
const char *mf_controller(const MfInfo *mi, const char *variant);
/* dynamic_control_values_per_token of mixer at shape s. */
int  mf_dyn_per_token(const MfInfo *mi, const char *mixer, recur_shape s, long long *out,
                      char *err, size_t errlen);
/* The distinct mixers of m's variants, in manifest order; returns the count. */
int  mf_mixers(const recur_manifest *m, const char **names, int max);

/* Whether variant v's kernels take the sequence state field f ("reset",
 * "h0", ...: a word of recur_manifest_variant_state). */
int mf_takes(const recur_manifest *m, int v, const char *f);

/* Whether variant v of m is a decode step (its manifest entry's "scan" is
 * "decode", recur_manifest_variant_scan): a forward
 * only, advancing a pool of states h0 / hT [S][D] at the slots of "index"
 * by the call's tokens. The forward+backward commands leave such a
 * variant out (verify checks it by steps, bench --step times it). 1 or 0. */
int mf_decode(const recur_manifest *m, int v);
/* A decode step's L tokens in calls of T (T above L: one call of L): the
 * tokens per call, *ncalls calls, the last of *tlast tokens */
static inline int mf_step_calls(recur_shape s, int T, int *ncalls, int *tlast)
{
	int t = T < s.L ? T : s.L;
	*ncalls = (int)(((long long)s.L + t - 1) / t);
	*tlast = s.L - (*ncalls - 1) * t;
	return t;
}
/* The channels per head of a mixer (its "k"; 64 where the manifest says none). */
int mf_mixer_k(const MfInfo *mi, const char *mixer);

#endif
