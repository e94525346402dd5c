/* recur calibrate: the strongest legal, non-materialising variant per
 * (mixer, shape) on this GPU, for `recur bench` to use.
 *
 * (Its options: the table below, which `recur calibrate --help` prints.)
 *
 * Per mixer and shape: one set of inputs; then for each candidate (legal at
 * the shape by recur_check_shape, "materialized": false in the manifest, and
 * taking no sequence state where the mixer has variants that take none)
 * load it, run one forward + backward and look for non-finite outputs (an
 * obvious failure; `recur verify` is the full check), measure its peak extra
 * memory in the same window as `recur bench` (y, dx and the workspaces over
 * B L D), warm up, and time forward + backward N times, each after an L2
 * flush. The fastest median wins; with --memory-budget, the fastest of those
 * within it (the budget trades time for memory, so it is the user's to set);
 * with --saved-budget, of those whose forward keeps at most so many bytes
 * per element for the backward (recur_workspace_sizes' saved region: what a
 * layer holds between the passes when a model trains, where the peak of one
 * layer's forward and backward is not what adds up).
 * After every (mixer, shape) the calibration file (calfile.h) is
 * rewritten atomically, so an interrupted run keeps what it measured.
 * A variant that breaks the CUDA context (a kernel fault is sticky) ends
 * the run with a message naming it; --skip leaves it out next time.
 */
#include "calfile.h"
#include "cli.h"
#include "harness.h"
#include "mfinfo.h"
#include "results.h"
#include "stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define C_MAXMIX 16
#define C_MAXSKIP 64

typedef struct {
	const char *dir, *out;
	recur_shape sh[H_MAXSHAPES];
	int nsh, samples, warmup;
	CalBudget budget;   /* extra and saved bytes per element; 0: none */
	uint64_t seed;
	const char *only[C_MAXMIX];
	int nonly;
	const char *skip[C_MAXSKIP];
	int nskip;
} CalOpts;

typedef struct {
	CalOpts o;
	recur_manifest *m;
	MfInfo mi;
	recur_rt *rt;
	Harness h;
	ResEnv env;
	json_t *doc;
	struct timespec t0;
} Cal;

enum { C_DIR, C_SHAPES, C_MIXER, C_OUT, C_SAMPLES, C_WARMUP, C_SKIP, C_SEED, C_BUDGET, C_SAVED };

static const CliOpt OPTS[] = {
	[C_DIR] = CLI_OPT_DIR,
	[C_SHAPES] = { "--shapes", "BxLxD,...", H_DEFAULT_SHAPES, "the shapes to calibrate", 0 },
	[C_MIXER] = { "--mixer", "NAME", NULL, "calibrate this mixer (default: every mixer)", 1 },
	[C_OUT] = { "--out", "FILE", CAL_DEFAULT_PATH, "the calibration file, merged into after every (mixer, shape)", 0 },
	[C_SAMPLES] = { "--samples", "N", "5", "timed forward+backward runs per candidate, 1..1000", 0 },
	[C_WARMUP] = { "--warmup", "N", "2", "untimed runs before them, 0..1000", 0 },
	[C_SKIP] = { "--skip", "VARIANT", NULL, "leave this variant out (one that breaks the CUDA context)", 1 },
	[C_SEED] = CLI_OPT_SEED,
	[C_BUDGET] = { "--memory-budget", "BYTES_PER_ELEMENT", NULL,
	               "the fastest within this many extra bytes per element wins (default: no budget)", 0 },
	[C_SAVED] = { "--saved-budget", "BYTES_PER_ELEMENT", NULL,
	              "the fastest whose forward keeps at most this many bytes per element for its backward wins "
	              "(what a layer holds between the passes in training; default: no budget)", 0 },
};

const CliCmd cli_calibrate_cmd = {
	"calibrate", NULL, "time every legal, non-materialising variant per mixer and shape; the winners for bench",
	OPTS, CLI_NOPTS(OPTS), cli_calibrate,
};

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	CalOpts *o = ctx;
	switch (opt) {
	case C_DIR: return cli_parse_path(v, &o->dir, err, n);
	case C_OUT: return cli_parse_path(v, &o->out, err, n);
	case C_MIXER: return cli_add_value(o->only, &o->nonly, C_MAXMIX, v, err, n);
	case C_SKIP: return cli_add_value(o->skip, &o->nskip, C_MAXSKIP, v, err, n);
	case C_SAMPLES: return cli_parse_int(v, 1, 1000, &o->samples, err, n);
	case C_WARMUP: return cli_parse_int(v, 0, 1000, &o->warmup, err, n);
	case C_SHAPES:
		o->nsh = harness_parse_shapes(v, o->sh, H_MAXSHAPES, err, n);
		return o->nsh < 0 ? -1 : 0;
	case C_SEED:
		return cli_parse_seed(v, &o->seed, err, n);
	case C_BUDGET:
	case C_SAVED:
		if (cli_parse_positive(v, 0.0, 1e6, opt == C_BUDGET ? &o->budget.extra : &o->budget.saved, err, n) == 0)
			return 0;
		snprintf(err, n, "want %s bytes per element, a number above 0", opt == C_BUDGET ? "extra" : "saved");
		return -1;
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

/* 0; 1 when --help was printed; -1 after a message */
static int parse(int argc, char **argv, CalOpts *o)
{
	*o = (CalOpts){ 0 };
	return cli_parse(&cli_calibrate_cmd, argc, argv, set, o);
}

static double elapsed_s(const Cal *c)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - c->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - c->t0.tv_nsec);
}

static int budgeted(const CalOpts *o) { return o->budget.extra > 0 || o->budget.saved > 0; }

static int skipped_by_user(const CalOpts *o, const char *v)
{
	for (int i = 0; i < o->nskip; i++)
		if (!strcmp(o->skip[i], v))
			return 1;
	return 0;
}

/* Variant vi takes a sequence state (reset marks, states, documents) and its
 * mixer has a variant taking none: a call without a state runs that one
 * (the leanest that takes what the call gives: python/recur/choice.py), so
 * vi is timed only in a folder where nothing leaner runs its calls. */
static int state_beside_plain(const recur_manifest *m, int vi)
{
	const char *mixer = recur_manifest_variant_mixer(m, vi);
	if (!*recur_manifest_variant_state(m, vi))
		return 0;
	for (int i = 0; i < recur_manifest_nvariants(m); i++)
		if (!strcmp(recur_manifest_variant_mixer(m, i), mixer) && !mf_decode(m, i) &&
		    !*recur_manifest_variant_state(m, i))
			return 1;
	return 0;
}

static json_t *failed(const char *variant, const char *error)
{
	json_t *o = json_object();
	json_object_set_new(o, "variant", json_string(variant));
	json_object_set_new(o, "status", json_string("failed"));
	json_object_set_new(o, "error", json_string(error));
	return o;
}

/* Times one candidate: 0, with its median and extra bytes per element
 * recorded in cands; 1 when it failed (recorded too); 2 when this GPU
 * cannot hold its waiting grid (skip: why; not a candidate here); -1 when
 * the context is unusable afterwards (err says so). */
static int candidate(Cal *c, int vi, HBufs *b, json_t *cands, char *skip, size_t nskip, char *err, size_t n)
{
	const char *vname = recur_manifest_variant_name(c->m, vi);
	recur_variant *v = NULL;
	double t[1000];
	char why[4096];
	hbufs_label(b, recur_manifest_variant_mixer(c->m, vi), vname);
	if (recur_variant_load(c->rt, c->m, vname, &v, why, sizeof why)) {
		json_array_append_new(cands, failed(vname, why));
		return 1;
	}
	/* a grid whose blocks wait on each other, larger than this GPU holds: no
	 * candidate here, not a failure (skipped, with the reason) */
	int fits = recur_variant_fits(v, b->s, why, sizeof why);
	if (fits == 1) {
		recur_variant_free(v);
		snprintf(skip, nskip, "not on this GPU: %s", why);
		return 2;
	}
	/* what its forward keeps for the backward: the saved region's size */
	recur_ws_sizes z;
	int rc = fits || recur_workspace_sizes(c->m, vi, b->s, &z, why, sizeof why) ? 1 : 0;
	if (rc == 0)
		rc = harness_run(&c->h, v, b, why, sizeof why);
	if (rc == 0) {
		int fin = harness_finite(&c->h, b, why, sizeof why);
		rc = fin > 0 ? 1 : fin;
	}
	long long delta = 0;
	if (rc == 0)
		rc = harness_memory(&c->h, v, b, &delta, why, sizeof why);
	for (int i = 0; rc == 0 && i < c->o.warmup; i++)
		rc = harness_run(&c->h, v, b, why, sizeof why);
	for (int i = 0; rc == 0 && i < c->o.samples; i++)
		rc = harness_time(&c->h, v, b, H_FB, &t[i], why, sizeof why);
	recur_variant_free(v);
	if (rc) {
		json_array_append_new(cands, failed(vname, why));
		/* a kernel fault leaves the context unusable: every later call fails */
		char e2[1024];
		if (recur_sync(c->rt, e2, sizeof e2)) {
			snprintf(err, n, "%s: the CUDA context is unusable after it failed (%s): run recur verify --dir %s "
			         "--variant %s, then recur calibrate again with --skip %s", b->what, e2, c->o.dir, vname, vname);
			return -1;
		}
		return 1;
	}
	json_t *o = json_object();
	json_object_set_new(o, "variant", json_string(vname));
	json_object_set_new(o, "status", json_string("ok"));
	json_object_set_new(o, "forward_backward", results_stats(t, c->o.samples));
	double el = (double)b->s.B * b->s.L * b->s.D;
	json_object_set_new(o, "extra_bytes_per_element", json_real((double)delta / el));
	json_object_set_new(o, "saved_bytes_per_element", json_real((double)z.saved / el));
	json_array_append_new(cands, o);
	return 0;
}

static void now_utc(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One (mixer, shape): candidates, timing, the entry, the file. */
static int calibrate_one(Cal *c, const char *mixer, recur_shape s, int si, char *err, size_t n)
{
	int nv = recur_manifest_nvariants(c->m), cand[512], nc = 0;
	HBufs b = { 0 };
	char shs[64];
	cal_shape_string(s, shs, sizeof shs);
	CalKey key = { .shape = s, .cuda_api = c->env.cuda_api };
	snprintf(key.mixer, sizeof key.mixer, "%s", mixer);
	snprintf(key.gpu, sizeof key.gpu, "%s", c->env.gpu);
	snprintf(key.driver, sizeof key.driver, "%s", c->env.driver);
	snprintf(key.generator, sizeof key.generator, "%s", c->env.generator);
	json_t *entry = cal_entry_new(&key), *cands = json_array(), *skipped = json_array();
	for (int vi = 0; vi < nv; vi++) {
		if (strcmp(recur_manifest_variant_mixer(c->m, vi), mixer))
			continue;
		const char *vname = recur_manifest_variant_name(c->m, vi);
		char why[512] = "";
		int mat = mf_materialized(&c->mi, vname, err, n);
		if (mat < 0)
			goto fail;
		if (mf_decode(c->m, vi))
			snprintf(why, sizeof why, "decode step (scan decode): forward only, no forward+backward to time; "
			         "recur bench --step T times it");
		else if (mat)
			snprintf(why, sizeof why, "materialized: writes a state-sized transition tensor");
		else if (state_beside_plain(c->m, vi))
			snprintf(why, sizeof why, "takes a sequence state (%s): a call without one runs a %s variant "
			         "taking none", recur_manifest_variant_state(c->m, vi), mixer);
		else if (skipped_by_user(&c->o, vname))
			snprintf(why, sizeof why, "--skip");
		else if (recur_check_shape(c->m, vi, s, why, sizeof why) == 0 && nc < 512) {
			cand[nc++] = vi;
			continue;
		}
		json_t *o = json_object();
		json_object_set_new(o, "variant", json_string(vname));
		json_object_set_new(o, "reason", json_string(why));
		json_array_append_new(skipped, o);
	}
	int nfail = 0, nfit = 0;
	if (nc > 0 && (hbufs_inputs(&c->h, c->m, cand[0], s, c->o.seed + (uint64_t)si * 7919, &b, err, n) ||
	               hbufs_outputs(&c->h, &b, err, n)))
		goto fail;
	char won[160] = "-";
	for (int i = 0; i < nc; i++) {
		char skip[4096] = "";
		int rc = candidate(c, cand[i], &b, cands, skip, sizeof skip, err, n);
		if (rc < 0)
			goto fail;
		if (rc == 2) {
			json_t *o = json_object();
			json_object_set_new(o, "variant", json_string(recur_manifest_variant_name(c->m, cand[i])));
			json_object_set_new(o, "reason", json_string(skip));
			json_array_append_new(skipped, o);
		}
		nfail += rc == 1;
		nfit += rc == 2;
		char now[64] = "FAILED";
		if (rc == 2)
			snprintf(now, sizeof now, "skipped (its waiting grid is larger than this GPU holds)");
		if (rc == 0) {
			const json_t *o = json_array_get(cands, json_array_size(cands) - 1);
			snprintf(now, sizeof now, "%.4f ms, %.2f B/element, keeps %.2f", cal_cand_ms(o), cal_cand_bytes(o),
			         cal_cand_saved(o));
		}
		int w = cal_pick(cands, &c->o.budget, NULL);
		if (w >= 0) {
			const json_t *o = json_array_get(cands, (size_t)w);
			snprintf(won, sizeof won, "%s %.4f ms", json_string_value(json_object_get(o, "variant")), cal_cand_ms(o));
		}
		fprintf(stderr, "calibrate: [%s %s] %d/%d %s: %s; best%s %s; %.1f s\n", mixer, shs, i + 1, nc,
		        recur_manifest_variant_name(c->m, cand[i]), now, budgeted(&c->o) ? " within the budget" : "", won,
		        elapsed_s(c));
	}
	hbufs_free(&c->h, &b);
	int least = -1, wi = cal_pick(cands, &c->o.budget, &least);
	const json_t *win = wi >= 0 ? json_array_get(cands, (size_t)wi) : NULL;
	const char *best = win ? json_string_value(json_object_get(win, "variant")) : NULL;
	char stamp[32];
	now_utc(stamp, sizeof stamp);
	json_object_set_new(entry, "winner", best ? json_string(best) : json_null());
	json_object_set_new(entry, "winner_forward_backward_median_ms", best ? json_real(cal_cand_ms(win)) : json_null());
	json_object_set_new(entry, "memory_budget_bytes_per_element",
	                    c->o.budget.extra > 0 ? json_real(c->o.budget.extra) : json_null());
	if (c->o.budget.saved > 0)   /* only where set: entries without stay as they were */
		json_object_set_new(entry, "saved_budget_bytes_per_element", json_real(c->o.budget.saved));
	json_object_set_new(entry, "samples", json_integer(c->o.samples));
	json_object_set_new(entry, "warmup_runs", json_integer(c->o.warmup));
	json_object_set_new(entry, "l2_flush_bytes", json_integer((json_int_t)c->h.flush_bytes));
	json_object_set_new(entry, "calibrated_at", json_string(stamp));
	json_object_set_new(entry, "candidates", cands);
	json_object_set_new(entry, "skipped", skipped);
	cal_put(c->doc, entry);
	if (results_write_atomic(c->o.out, c->doc, err, n))
		return -1;
	char ms[64] = "-", none[256] = "(no variant works)";
	if (best)
		snprintf(ms, sizeof ms, "%.4f ms %5.2f B/el", cal_cand_ms(win), cal_cand_bytes(win));
	else if (least >= 0 && c->o.budget.saved > 0)
		snprintf(none, sizeof none, "(none within the budget; least kept %.2f B/element)",
		         cal_cand_saved(json_array_get(cands, (size_t)least)));
	else if (least >= 0)
		snprintf(none, sizeof none, "(none within %.3g B/element; least %.2f)", c->o.budget.extra,
		         cal_cand_bytes(json_array_get(cands, (size_t)least)));
	printf("%-7s %-16s %-58s %22s  (%d timed, %d failed, %d skipped)\n", mixer, shs, best ? best : none, ms,
	       nc - nfail - nfit, nfail, (int)json_array_size(skipped));
	fflush(stdout);
	return 0;
fail:
	hbufs_free(&c->h, &b);
	json_decref(entry);
	json_decref(cands);
	json_decref(skipped);
	return -1;
}

static int cal_main(Cal *c, char *err, size_t n)
{
	const CalOpts *o = &c->o;
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	if (recur_manifest_load(o->dir, &c->m, err, n) || mf_for_device(c->m, err, n) || mf_open(&c->mi, c->m, err, n))
		return -1;
	const char *mixers[C_MAXMIX];
	int nm = mf_mixers(c->m, mixers, C_MAXMIX);
	/* the decode steps are no candidates: said once, here, and in each entry's "skipped" */
	for (int vi = 0; vi < recur_manifest_nvariants(c->m); vi++)
		if (mf_decode(c->m, vi) && cli_mixer_wanted(o->only, o->nonly, recur_manifest_variant_mixer(c->m, vi)))
			fprintf(stderr, "calibrate: skipping %s (%s): a decode step (scan decode), forward only; recur bench "
			        "--step T times it\n", recur_manifest_variant_name(c->m, vi), recur_manifest_variant_mixer(c->m, vi));
	for (int i = 0; i < o->nonly; i++) {
		int found = 0;
		for (int k = 0; k < nm; k++)
			found |= !strcmp(mixers[k], o->only[i]);
		if (!found) {
			snprintf(err, n, "--mixer %s: %s has no variant of that mixer", o->only[i], recur_manifest_info(c->m, "path"));
			return -1;
		}
	}
	/* a broken calibration file, or a folder that cannot hold it, fails
	 * now, not after an hour of timing; the file is merged into, so it is
	 * its own input, but never the manifest */
	const char *manifest = recur_manifest_info(c->m, "path");
	if (cli_out_not_input(o->out, "calibration file (--out)", &manifest, 1, err, n) ||
	    cal_load(o->out, 1, &c->doc, err, n) || results_out_folder(o->out, "calibration file", err, n))
		return -1;
	if (recur_rt_open(&c->rt, 0, err, n))
		return -1;
	harness_env(c->rt, c->m, &c->env);
	if (harness_open(&c->h, c->rt, H_FLUSH_BYTES, err, n))
		return -1;
	char budget[200] = "fastest wins", extra[64] = "", saved[96] = "";
	if (o->budget.extra > 0)
		snprintf(extra, sizeof extra, " %.3g extra bytes per element", o->budget.extra);
	if (o->budget.saved > 0)
		snprintf(saved, sizeof saved, "%s %.3g bytes per element kept for the backward", *extra ? " and" : "",
		         o->budget.saved);
	if (budgeted(o))
		snprintf(budget, sizeof budget, "fastest within%s%s wins", extra, saved);
	fprintf(stderr, "calibrate: %s, driver %s, %s -> %s (%s)\n", c->env.gpu, c->env.driver, c->env.generator,
	        o->out, budget);
	for (int k = 0; k < nm; k++) {
		int want = cli_mixer_wanted(o->only, o->nonly, mixers[k]);
		for (int s = 0; want && s < o->nsh; s++)
			if (calibrate_one(c, mixers[k], o->sh[s], s, err, n))
				return -1;
	}
	printf("wrote %s (%.1f s)\n", o->out, elapsed_s(c));
	return 0;
}

int cli_calibrate(int argc, char **argv)
{
	Cal c = { 0 };
	int prc = parse(argc, argv, &c.o);
	if (prc)
		return prc > 0 ? 0 : 2;
	char err[8192] = "";
	int rc = cal_main(&c, err, sizeof err);
	if (rc)
		fprintf(stderr, "recur calibrate: %s\n", err);
	harness_close(&c.h);
	json_decref(c.doc);
	if (c.rt)
		recur_rt_close(c.rt);
	if (c.mi.root)
		mf_close(&c.mi);
	if (c.m)
		recur_manifest_free(c.m);
	return rc ? 1 : 0;
}
