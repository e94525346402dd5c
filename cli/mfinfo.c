/* Manifest fields beyond recur.h (see mfinfo.h). */
#include "mfinfo.h"
#include "shapex.h"
#include <stdio.h>
#include <string.h>

int mf_open_path(MfInfo *mi, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	snprintf(mi->path, sizeof mi->path, "%s", path);
	mi->root = json_load_file(path, 0, &je);
	if (!mi->root) {
		snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
		return -1;
	}
	return 0;
}

int mf_open(MfInfo *mi, const recur_manifest *m, char *err, size_t errlen)
{
	const char *p = recur_manifest_info(m, "path");
	if (!p) {
		snprintf(err, errlen, "the loaded manifest does not say which file it came from");
		return -1;
	}
	return mf_open_path(mi, p, err, errlen);
}

void mf_close(MfInfo *mi)
{
	json_decref(mi->root);
	mi->root = NULL;
}

static json_t *variant_obj(const MfInfo *mi, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(mi->root, "variants"), i, v)
		if (json_string_value(json_object_get(v, "name")) &&
		    !strcmp(json_string_value(json_object_get(v, "name")), name))
			return v;
	return NULL;
}

int mf_materialized(const MfInfo *mi, const char *variant, char *err, size_t errlen)
{
	const json_t *v = variant_obj(mi, variant);
	const json_t *f = json_object_get(v, "materialized");
	if (!v || !json_is_boolean(f)) {
		snprintf(err, errlen, "%s: variant %s %s", mi->path, variant,
		         v ? "has no boolean \"materialized\"" : "is absent");
		return -1;
	}
	return json_is_true(f);
}

const char *mf_controller(const MfInfo *mi, const char *variant)
{
	const json_t *v = variant_obj(mi, variant);
	const char *c = json_string_value(json_object_get(v, "controller"));
	if (c)
		return c;
	const char *mixer = json_string_value(json_object_get(v, "mixer"));
	if (!mixer)
		return NULL;
	const json_t *mx = json_object_get(json_object_get(mi->root, "mixers"), mixer);
	return json_string_value(json_object_get(mx, "controller"));
}

int mf_mixer_k(const MfInfo *mi, const char *mixer)
{
	const json_t *mx = json_object_get(json_object_get(mi->root, "mixers"), mixer);
	json_int_t k = json_integer_value(json_object_get(mx, "k"));
	return k > 0 && k <= 1 << 20 ? (int)k : 64;
}

int mf_dyn_per_token(const MfInfo *mi, const char *mixer, recur_shape s, long long *out,
                     char *err, size_t errlen)
{
	const json_t *mx = json_object_get(json_object_get(mi->root, "mixers"), mixer);
	const json_t *e = json_object_get(mx, "dynamic_control_values_per_token");
	if (json_is_integer(e)) {
		*out = json_integer_value(e);
		return 0;
	}
	if (!json_is_string(e)) {
		snprintf(err, errlen, "%s: mixer %s has no \"dynamic_control_values_per_token\"", mi->path, mixer);
		return -1;
	}
	/* the mixer's expressions see B, L, D and its head width K (H = D/K) */
	ShapeVars sv = { .n = 0 };
	shapex_set(&sv, "B", s.B);
	shapex_set(&sv, "L", s.L);
	shapex_set(&sv, "D", s.D);
	long long k = json_integer_value(json_object_get(mx, "k"));
	if (k > 0) {
		shapex_set(&sv, "K", k);
		shapex_set(&sv, "H", s.D / k);
	}
	int64_t v;
	char e2[512];
	if (shapex_eval(json_string_value(e), &sv, &v, e2, sizeof e2) != 0) {
		snprintf(err, errlen, "%s: mixer %s: dynamic_control_values_per_token at %dx%dx%d: %s", mi->path,
		         mixer, s.B, s.L, s.D, e2);
		return -1;
	}
	*out = v;
	return 0;
}

int mf_mixers(const recur_manifest *m, const char **names, int max)
{
	int n = 0;
	for (int v = 0; v < recur_manifest_nvariants(m); v++) {
		const char *mx = recur_manifest_variant_mixer(m, v);
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= !strcmp(names[i], mx);
		if (!seen && n < max)
			names[n++] = mx;
	}
	return n;
}

int mf_for_device(recur_manifest *m, char *err, size_t errlen)
{
	int n = recur_manifest_nvariants(m), twins = 0;
	for (int i = 0; i < n && !twins; i++)
		for (int k = i + 1; k < n && !twins; k++)
			twins = !strcmp(recur_manifest_variant_name(m, i), recur_manifest_variant_name(m, k)) &&
			        !strcmp(recur_manifest_variant_mixer(m, i), recur_manifest_variant_mixer(m, k));
	if (!twins)
		return 0;
	recur_rt *rt;
	int major = 0, minor = 0;
	if (recur_rt_open(&rt, 0, err, errlen) != 0)
		return -1;
	int rc = recur_rt_compute_capability(rt, &major, &minor, err, errlen);
	recur_rt_close(rt);
	return rc ? -1 : recur_manifest_select(m, major, minor, err, errlen);
}

int mf_takes(const recur_manifest *m, int v, const char *f)
{
	const char *st = recur_manifest_variant_state(m, v);
	size_t k = strlen(f);
	for (const char *p = strstr(st, f); p; p = strstr(p + 1, f))
		if ((p == st || p[-1] == ' ') && (p[k] == 0 || p[k] == ' '))
			return 1;
	return 0;
}

int mf_decode(const recur_manifest *m, int v)
{
	const char *scan = recur_manifest_variant_scan(m, v);
	return scan && !strcmp(scan, "decode");
}
