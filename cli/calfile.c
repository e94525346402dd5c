/* The calibration file (see calfile.h). */
#include "calfile.h"
#include "results.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

json_t *cal_new(void)
{
	json_t *o = json_object();
	json_object_set_new(o, "schema_version", json_integer(1));
	json_object_set_new(o, "kind", json_string("recur calibration"));
	json_object_set_new(o, "entries", json_array());
	return o;
}

int cal_load(const char *path, int missing_ok, json_t **doc, char *err, size_t errlen)
{
	*doc = NULL;
	if (access(path, F_OK) != 0) {
		if (missing_ok) {
			*doc = cal_new();
			return 0;
		}
		snprintf(err, errlen, "cannot read calibration file %s: %s", path, strerror(errno));
		return -1;
	}
	json_error_t je;
	json_t *d = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!d) {
		snprintf(err, errlen, "%s:%d:%d: bad calibration JSON: %s", path, je.line, je.column, je.text);
		return -1;
	}
	if (!json_is_array(json_object_get(d, "entries"))) {
		snprintf(err, errlen, "%s: not a calibration file (no \"entries\" array); move it aside or "
		         "pass another with --calibration / --out", path);
		json_decref(d);
		return -1;
	}
	*doc = d;
	return 0;
}

static int str_eq(const json_t *o, const char *key, const char *want)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s && !strcmp(s, want);
}

static int int_eq(const json_t *o, const char *key, long long want)
{
	const json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) == want;
}

static int same_key(const json_t *e, const CalKey *k)
{
	const json_t *sh = json_object_get(e, "shape");
	return str_eq(e, "mixer", k->mixer) && str_eq(e, "gpu", k->gpu) && str_eq(e, "driver_version", k->driver) &&
	       int_eq(e, "cuda_driver_api_version", k->cuda_api) && str_eq(e, "generator", k->generator) &&
	       int_eq(sh, "batch", k->shape.B) && int_eq(sh, "length", k->shape.L) && int_eq(sh, "width", k->shape.D);
}

json_t *cal_find(const json_t *doc, const CalKey *k)
{
	const json_t *a = json_object_get(doc, "entries");
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
		if (same_key(e, k))
			return e;
	return NULL;
}

const char *cal_winner(const json_t *entry)
{
	return json_string_value(json_object_get(entry, "winner"));
}

json_t *cal_entry_new(const CalKey *k)
{
	json_t *o = json_object();
	json_object_set_new(o, "mixer", json_string(k->mixer));
	json_object_set_new(o, "shape", results_shape(k->shape));
	json_object_set_new(o, "gpu", json_string(k->gpu));
	json_object_set_new(o, "driver_version", json_string(k->driver));
	json_object_set_new(o, "cuda_driver_api_version", json_integer(k->cuda_api));
	json_object_set_new(o, "generator", json_string(k->generator));
	return o;
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* The key of an entry, read back (so that cal_put can compare entries). */
static void entry_key(const json_t *e, CalKey *k)
{
	const json_t *sh = json_object_get(e, "shape");
	memset(k, 0, sizeof *k);
	snprintf(k->mixer, sizeof k->mixer, "%s", jstr(e, "mixer"));
	snprintf(k->gpu, sizeof k->gpu, "%s", jstr(e, "gpu"));
	snprintf(k->driver, sizeof k->driver, "%s", jstr(e, "driver_version"));
	snprintf(k->generator, sizeof k->generator, "%s", jstr(e, "generator"));
	k->cuda_api = (int)json_integer_value(json_object_get(e, "cuda_driver_api_version"));
	k->shape.B = (int)json_integer_value(json_object_get(sh, "batch"));
	k->shape.L = (int)json_integer_value(json_object_get(sh, "length"));
	k->shape.D = (int)json_integer_value(json_object_get(sh, "width"));
}

void cal_put(json_t *doc, json_t *entry)
{
	json_t *a = json_object_get(doc, "entries");
	CalKey k;
	entry_key(entry, &k);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
		if (same_key(e, &k)) {
			json_array_set_new(a, i, entry);
			return;
		}
	json_array_append_new(a, entry);
}

void cal_shape_string(recur_shape s, char *out, size_t n)
{
	snprintf(out, n, "%dx%dx%d", s.B, s.L, s.D);
}

static double num(const json_t *o, const char *key, double none)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : none;
}

double cal_cand_ms(const json_t *cand) { return num(json_object_get(cand, "forward_backward"), "median_ms", -1); }
double cal_cand_bytes(const json_t *cand) { return num(cand, "extra_bytes_per_element", -1); }
double cal_cand_saved(const json_t *cand) { return num(cand, "saved_bytes_per_element", -1); }

/* within a bound (0: none) a number the candidate may lack (-1) */
static int within(double have, double bound) { return bound <= 0 || (have >= 0 && have <= bound); }

int cal_pick(const json_t *cands, const CalBudget *bud, int *least)
{
	CalBudget none = { 0, 0 };
	const CalBudget *b = bud ? bud : &none;
	int best = -1, low = -1;
	double best_ms = 0, low_b = 0;
	size_t i;
	const json_t *c;
	json_array_foreach(cands, i, c) {
		if (strcmp(jstr(c, "status"), "ok"))
			continue;
		double ms = cal_cand_ms(c), extra = cal_cand_bytes(c), saved = cal_cand_saved(c);
		double held = b->saved > 0 ? saved : extra;
		if (ms < 0)
			continue;
		if (held >= 0 && (low < 0 || held < low_b)) {
			low = (int)i;
			low_b = held;
		}
		if (!within(extra, b->extra) || !within(saved, b->saved))
			continue;
		if (best < 0 || ms < best_ms) {
			best = (int)i;
			best_ms = ms;
		}
	}
	if (least)
		*least = low;
	return best;
}

void cal_missing_message(const CalKey *k, const json_t *entry, const char *calpath, const char *dir,
                         char *msg, size_t n)
{
	char sh[64], cuda[32], out[4200] = "";
	cal_shape_string(k->shape, sh, sizeof sh);
	snprintf(cuda, sizeof cuda, "%d.%d", k->cuda_api / 1000, k->cuda_api % 1000 / 10);
	if (strcmp(calpath, CAL_DEFAULT_PATH) != 0)
		snprintf(out, sizeof out, " --out %s", calpath);
	/* the budgets the entry was calibrated under; the least is named by
	 * what the saved budget bounds where there is one */
	CalBudget b = { num(entry, "memory_budget_bytes_per_element", -1),
	                num(entry, "saved_budget_bytes_per_element", -1) };
	int least = -1;
	const json_t *cands = json_object_get(entry, "candidates");
	if (entry && (b.extra > 0 || b.saved > 0))
		cal_pick(cands, &b, &least);   /* no winner (why this message): only the least, by what b bounds */
	if (least >= 0) {
		const json_t *c = json_array_get(cands, (size_t)least);
		char within[160] = "", larger[64] = "";
		if (b.saved > 0)
			snprintf(within, sizeof within, "its saved budget of %.3g bytes per element kept for the backward%s",
			         b.saved, b.extra > 0 ? " and " : "");
		if (b.extra > 0)
			snprintf(within + strlen(within), sizeof within - strlen(within), "its memory budget of %.3g extra bytes "
			         "per element", b.extra);
		snprintf(larger, sizeof larger, "%s%s%s", b.saved > 0 ? "--saved-budget" : "", b.saved > 0 && b.extra > 0 ?
		         " or " : "", b.extra > 0 ? "--memory-budget" : "");
		snprintf(msg, n, "calibration found no variant of %s %s on %s (driver %s, CUDA %s, %s) within %s in %s (the "
		         "least, %s, %s %.3f): run recur calibrate --dir %s --mixer %s --shapes %s%s with a larger %s or none",
		         k->mixer, sh, k->gpu, k->driver, cuda, k->generator, within, calpath, jstr(c, "variant"),
		         b.saved > 0 ? "keeps" : "holds", b.saved > 0 ? cal_cand_saved(c) : cal_cand_bytes(c), dir, k->mixer,
		         sh, out, larger);
	} else if (entry)   /* every candidate failed: the entry's candidates say why */
		snprintf(msg, n, "calibration found no working variant for %s %s on %s (driver %s, CUDA %s, %s) in %s "
		         "(see the entry's candidates): run recur verify --dir %s --mixer %s --shape %s, fix the "
		         "variants, then recur calibrate --dir %s --mixer %s --shapes %s%s",
		         k->mixer, sh, k->gpu, k->driver, cuda, k->generator, calpath, dir, k->mixer, sh, dir, k->mixer, sh, out);
	else
		snprintf(msg, n, "no calibrated variant for %s %s on %s (driver %s, CUDA %s, %s) in %s: run recur "
		         "calibrate --dir %s --mixer %s --shapes %s%s",
		         k->mixer, sh, k->gpu, k->driver, cuda, k->generator, calpath, dir, k->mixer, sh, out);
}
