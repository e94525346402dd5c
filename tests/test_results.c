/* cli/results.c, cli/calfile.c, cli/mfinfo.c and the shape lists of
 * cli/harness.c, without a GPU.
 *
 * A results file is written from two synthetic rows (rglru and samu),
 * atomically (no FILE.tmp.PID left), read back, and checked against the
 * real seed file: every key of the seed's top level, protocol and rows (by
 * architecture, recursively through shape, statistics and rounds) must be
 * present with the same JSON type. The seed's environment key "torch" is
 * the one exception (nothing here uses torch). Values derived by the
 * writer are checked too: samples_ms as the rounds' concatenation, the
 * statistics, the memory delta, parameter bytes, the floor. Then the
 * calibration file: written atomically, re-read, entries replaced by key,
 * and the message for a missing entry, which must name the command.
 */
#include "calfile.h"
#include "harness.h"
#include "mfinfo.h"
#include "results.h"
#include "stats.h"
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char tmpdir[256];

static int leftovers(void)
{
	int n = 0;
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void synth_row(ResRow *r, const char *arch, const char *ctrl, int L)
{
	memset(r, 0, sizeof *r);
	r->shape = (recur_shape){ 1, L, 1024 };
	snprintf(r->architecture, sizeof r->architecture, "%s", arch);
	snprintf(r->backend, sizeof r->backend, "fused_grouped_prefix32_hierarchical_chunk16");
	snprintf(r->controller, sizeof r->controller, "%s", ctrl);
	r->nrounds = 2;
	r->nsamples = 5;
	for (int k = 0; k < 2; k++) {
		r->order_index[k] = k;
		for (int i = 0; i < 5; i++) {
			r->fwd[k][i] = 0.5 + 0.01 * (k * 5 + i);
			r->bwd[k][i] = 1.0 + 0.02 * (k * 5 + i);
			r->fb[k][i] = 1.5 + 0.03 * (k * 5 + i);
		}
	}
	r->baseline_allocated = r->baseline_reserved = 33554432 + 1000;
	r->peak_allocated = r->peak_reserved = r->baseline_allocated + 16777216 * 2 + 4096;
	r->parameters = 134144;
	r->dyn_per_token = 2048;
	r->materialized = 0;
	if (ctrl[0]) {   /* the second row: what its forward keeps */
		r->has_saved = 1;
		r->saved_bytes = 3LL * L * 1024;
	}
	snprintf(r->floor.key, sizeof r->floor.key, "copy_bandwidth_gb_per_s");
	snprintf(r->floor.method, sizeof r->floor.method, "synthetic");
	r->floor.gb_per_s = 4000;
	snprintf(r->notes[r->nnotes++], sizeof r->notes[0], "a note");
	snprintf(r->variant_source, sizeof r->variant_source, "calibration x.json");
}

/* Same JSON type, with true/false one type and integer/real kept apart. */
static int same_type(const json_t *a, const json_t *b)
{
	if (json_is_boolean(a))
		return json_is_boolean(b);
	return json_typeof(a) == json_typeof(b);
}

/* Every key of seed found in ours with the seed's type; objects and the
 * first element of arrays recursively. Missing keys go to miss. */
static void keys_like(const json_t *seed, const json_t *ours, const char *where, char *miss, size_t n, int *bad)
{
	const char *k;
	json_t *sv;
	json_object_foreach((json_t *)seed, k, sv) {
		json_t *ov = json_object_get(ours, k);
		char path[512];
		snprintf(path, sizeof path, "%s.%s", where, k);
		if (!ov || !same_type(sv, ov)) {
			(*bad)++;
			size_t u = strlen(miss);
			snprintf(miss + u, n - u, "%s%s(%s)", u ? ", " : "", path, ov ? "type" : "absent");
			continue;
		}
		if (json_is_object(sv))
			keys_like(sv, ov, path, miss, n, bad);
		else if (json_is_array(sv) && json_array_size(sv) && json_array_size(ov)) {
			json_t *s0 = json_array_get(sv, 0), *o0 = json_array_get(ov, 0);
			if (!same_type(s0, o0)) {
				(*bad)++;
				size_t u = strlen(miss);
				snprintf(miss + u, n - u, "%s%s[0](type)", u ? ", " : "", path);
			} else if (json_is_object(s0))
				keys_like(s0, o0, path, miss, n, bad);
		}
	}
}

static json_t *row_of(const json_t *doc, const char *arch)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(doc, "rows"), i, r)
		if (!strcmp(json_string_value(json_object_get(r, "architecture")), arch))
			return r;
	return NULL;
}

static double num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static int results_file(void)
{
	ResEnv env = { .cuda_api = 13000 };
	snprintf(env.gpu, sizeof env.gpu, "NVIDIA H200");
	snprintf(env.driver, sizeof env.driver, "580.159.04");
	snprintf(env.llvm, sizeof env.llvm, "19.1.7");
	snprintf(env.ptx_isa, sizeof env.ptx_isa, "8.0");
	snprintf(env.target, sizeof env.target, "sm_90");
	snprintf(env.generator, sizeof env.generator, "recur 0.1.0");
	ResProtocol p = { .rounds = 2, .samples = 5, .warmup = 2, .flush_bytes = 256 << 20 };
	snprintf(p.baseline_policy, sizeof p.baseline_policy, "calibrated");
	snprintf(p.samu_policy, sizeof p.samu_policy, "calibrated");
	ResRow *rows = calloc(2, sizeof *rows);
	synth_row(&rows[0], "rglru", "", 8192);
	synth_row(&rows[1], "samu", "fp32_fused_coords", 8192);
	rows[1].has_profile = 1;
	rows[1].nprof[0] = 1;
	snprintf(rows[1].prof[0][0].kernel, sizeof rows[1].prof[0][0].kernel, "scan_fwd");
	rows[1].prof[0][0].ms = 0.25;
	rows[1].prof[0][0].registers = 64;
	rows[1].prof[0][0].bytes = 1e9;
	rows[1].prof[0][0].grid[0] = 512;
	rows[1].prof[0][0].grid[1] = 16;
	rows[1].prof[0][0].grid[2] = 1;
	rows[1].prof[0][0].block = 256;
	rows[1].prof[0][0].dyn_smem = 54272;
	rows[1].prof[0][0].blocks_per_sm = 2;
	rows[1].prof[0][0].cluster = 2;
	rows[1].prof[0][0].max_clusters = 132;

	char path[512], err[1024];
	snprintf(path, sizeof path, "%s/nested/dir/results.json", tmpdir);
	json_t *doc = results_doc(&env, &p, rows, 2);
	int rc = results_write_atomic(path, doc, err, sizeof err);
	json_decref(doc);
	check(rc == 0, "results written atomically into a folder that did not exist", "%s", rc ? err : "");
	char nested[512];
	snprintf(nested, sizeof nested, "%s/nested/dir", tmpdir);
	char save[256];
	snprintf(save, sizeof save, "%s", tmpdir);
	snprintf(tmpdir, sizeof tmpdir, "%s", nested);
	check(leftovers() == 0, "no FILE.tmp.PID left beside the results", NULL);
	snprintf(tmpdir, sizeof tmpdir, "%s", save);

	json_error_t je;
	json_t *ours = json_load_file(path, 0, &je);
	check(ours != NULL, "the results file parses as JSON", "%s", ours ? "" : je.text);
	if (!ours) {
		free(rows);
		return 1;
	}
	/* values the writer derives */
	json_t *r0 = row_of(ours, "rglru"), *r1 = row_of(ours, "samu");
	json_t *fb = json_object_get(r0, "forward_backward"), *s = json_object_get(fb, "samples_ms");
	int concat = json_array_size(s) == 10;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 5; i++) {
			json_t *ro = json_array_get(json_object_get(r0, "rounds"), k);
			concat &= num(ro, "round") == k && num(ro, "order_index") == k &&
			          json_number_value(json_array_get(json_object_get(ro, "forward_backward_ms"), i)) == rows[0].fb[k][i] &&
			          json_number_value(json_array_get(s, k * 5 + i)) == rows[0].fb[k][i];
		}
	check(concat, "samples_ms is the concatenation of the rounds; rounds carry round and order_index", NULL);
	double x[10];
	for (int i = 0; i < 10; i++)
		x[i] = rows[0].fb[i / 5][i % 5];
	Stats st;
	stats_compute(x, 10, &st);
	check(num(fb, "median_ms") == st.median && num(fb, "mean_ms") == st.mean && num(fb, "std_ms") == st.std &&
	      num(fb, "minimum_ms") == 1.5 && fabs(num(fb, "maximum_ms") - 1.77) < 1e-12,
	      "forward_backward statistics match stats_compute", "median %g", num(fb, "median_ms"));
	check(num(r0, "peak_allocated_delta_bytes") == 16777216 * 2 + 4096 &&
	      num(r0, "peak_reserved_delta_bytes") == 16777216 * 2 + 4096 &&
	      num(r0, "parameter_bytes") == 4 * 134144.0 && num(r0, "dynamic_control_values_per_token") == 2048 &&
	      json_is_false(json_object_get(r0, "materialized_state_sized_transition")),
	      "memory delta = peak - baseline; parameter_bytes = 4 x parameters", NULL);
	check(!json_object_get(r0, "saved_bytes") && num(r1, "saved_bytes") == 3.0 * 8192 * 1024 &&
	      num(r1, "saved_bytes_per_element") == 3.0, "saved_bytes (and per element) only where known",
	      "%g", num(r1, "saved_bytes_per_element"));
	check(json_is_null(json_object_get(r0, "controller")) &&
	      !strcmp(json_string_value(json_object_get(r1, "controller")), "fp32_fused_coords"),
	      "controller: null for an empty one, the string otherwise", NULL);
	json_t *fl = json_object_get(r0, "floor");
	double elems = 8192.0 * 1024;
	check(fl && num(fl, "forward_bytes") == 4 * elems && num(fl, "backward_bytes") == 6 * elems &&
	      num(fl, "forward_backward_bytes") == 10 * elems && num(fl, "copy_bandwidth_gb_per_s") == 4000 &&
	      fabs(num(fl, "forward_backward_ms") - 10 * elems / 4e12 * 1e3) < 1e-12 &&
	      fabs(num(fl, "forward_ms") - 4 * elems / 4e12 * 1e3) < 1e-12,
	      "floor: 4/6/10 bytes per element and their time at the measured bandwidth", "fb %g ms",
	      num(fl, "forward_backward_ms"));
	json_t *pr = json_object_get(r1, "profile");
	check(pr && json_array_size(json_object_get(pr, "forward")) == 1 && json_is_array(json_object_get(pr, "backward")) &&
	      !json_object_get(r0, "profile") &&
	      num(json_array_get(json_object_get(pr, "forward"), 0), "registers") == 64,
	      "profile only where profiled, with per-kernel ms and registers", NULL);
	json_t *k0 = pr ? json_array_get(json_object_get(pr, "forward"), 0) : NULL;
	check(k0 && num(k0, "bytes") == 1e9 && fabs(num(k0, "gb_per_s") - 4000) < 1e-9,
	      "profile: a kernel's bytes and achieved GB/s (1 GB in 0.25 ms = 4000 GB/s)", NULL);
	json_t *gr = k0 ? json_object_get(k0, "grid") : NULL;
	check(gr && json_array_size(gr) == 3 && json_integer_value(json_array_get(gr, 0)) == 512 &&
	      json_integer_value(json_array_get(gr, 1)) == 16 && num(k0, "block") == 256 &&
	      num(k0, "dynamic_smem_bytes") == 54272 && num(k0, "blocks_per_sm") == 2 && num(k0, "cluster") == 2 &&
	      num(k0, "max_active_clusters") == 132,
	      "profile: a kernel's launch geometry, dynamic shared memory, blocks per SM and clusters", NULL);
	json_t *env_o = json_object_get(ours, "environment");
	check(!strcmp(json_string_value(json_object_get(env_o, "cuda")), "13.0") &&
	      !strcmp(json_string_value(json_object_get(env_o, "ptx_isa")), "8.0") &&
	      !strcmp(json_string_value(json_object_get(env_o, "generator")), "recur 0.1.0") &&
	      num(env_o, "cuda_driver_api_version") == 13000,
	      "environment: cuda, driver API, PTX ISA, generator", NULL);

	/* the seed's key set */
	char sb[4096];
	const char *sp = seed_path(sb, sizeof sb);
	json_t *seed = json_load_file(sp, 0, &je);
	if (!seed) {
		printf("SKIP seed key checks: cannot read %s (%s); set RECUR_SEED\n", sp, je.text);
		json_decref(ours);
		free(rows);
		return 0;
	}
	char miss[4096] = "";
	int bad = 0;
	const char *k;
	json_t *v;
	json_object_foreach(seed, k, v) {
		json_t *o = json_object_get(ours, k);
		if (!o || !same_type(v, o)) {
			bad++;
			snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s ", k);
		}
	}
	check(bad == 0, "every top-level key of the seed, with its type", "%s", miss);
	miss[0] = 0;
	bad = 0;
	keys_like(json_object_get(seed, "protocol"), json_object_get(ours, "protocol"), "protocol", miss, sizeof miss, &bad);
	check(bad == 0, "every protocol key of the seed, with its type", "%s", miss);
	json_t *senv = json_deep_copy(json_object_get(seed, "environment"));
	json_object_del(senv, "torch");
	miss[0] = 0;
	bad = 0;
	keys_like(senv, env_o, "environment", miss, sizeof miss, &bad);
	json_decref(senv);
	check(bad == 0, "every environment key of the seed but torch, with its type", "%s", miss);
	size_t i;
	json_t *srow;
	int nrows = 0;
	miss[0] = 0;
	bad = 0;
	json_array_foreach(json_object_get(seed, "rows"), i, srow) {
		json_t *orow = row_of(ours, json_string_value(json_object_get(srow, "architecture")));
		char where[64];
		snprintf(where, sizeof where, "rows[%zu]", i);
		if (!orow) {
			bad++;
			continue;
		}
		keys_like(srow, orow, where, miss, sizeof miss, &bad);
		nrows++;
	}
	check(bad == 0 && nrows == 8, "every key of the seed's 8 rows (recursively), with its type, in the row of the same mixer",
	      "%s", miss);
	json_decref(seed);
	json_decref(ours);

	json_t *empty = json_object();   /* results_write_atomic does not take the reference */
	check(results_write_atomic("/proc/recur-no-such/x.json", empty, err, sizeof err) != 0 && strstr(err, "/proc/recur-no-such"),
	      "an unwritable path fails with a message naming it", "%s", err);
	json_decref(empty);
	free(rows);
	return 1;
}

/* rglru 1x8192x1024 on an H200 (driver 580.159.04, CUDA 13.0, recur 0.1.0) */
static CalKey test_key(void)
{
	CalKey k = { .shape = { 1, 8192, 1024 }, .cuda_api = 13000 };
	snprintf(k.mixer, sizeof k.mixer, "rglru");
	snprintf(k.gpu, sizeof k.gpu, "NVIDIA H200");
	snprintf(k.driver, sizeof k.driver, "580.159.04");
	snprintf(k.generator, sizeof k.generator, "recur 0.1.0");
	return k;
}

static json_t *cand(const char *name, const char *status, double ms, double bytes, double saved)
{
	json_t *c = json_object();
	json_object_set_new(c, "variant", json_string(name));
	json_object_set_new(c, "status", json_string(status));
	if (ms > 0) {
		double t[3] = { ms - 0.01, ms, ms + 0.02 };
		json_object_set_new(c, "forward_backward", results_stats(t, 3));
	}
	if (bytes >= 0)
		json_object_set_new(c, "extra_bytes_per_element", json_real(bytes));
	if (saved >= 0)
		json_object_set_new(c, "saved_bytes_per_element", json_real(saved));
	return c;
}

static int pick(const json_t *c, double extra, double saved, int *least)
{
	return cal_pick(c, &(CalBudget){ extra, saved }, least);
}

/* The winner: the fastest that ran, within the memory budget when one is set. */
static void calibration_pick(void)
{
	json_t *c = json_array();
	json_array_append_new(c, cand("p32", "ok", 0.1773, 4.67, 0.40));
	json_array_append_new(c, cand("broken", "failed", 0, -1, -1));
	json_array_append_new(c, cand("p64", "ok", 0.1799, 4.35, 0.30));
	json_array_append_new(c, cand("p128", "ok", 0.1900, 4.20, 0.35));
	json_array_append_new(c, cand("nobytes", "ok", 0.1500, -1, -1));
	json_array_append_new(c, cand("p64_again", "ok", 0.1799, 4.30, 0.20));
	int least = 9;
	check(pick(c, 0, 0, &least) == 4 && least == 3, "no budget: the fastest that ran wins, however much it holds",
	      "%d %d", pick(c, 0, 0, NULL), least);
	check(cal_pick(c, NULL, NULL) == 4, "no budget given at all: the same", NULL);
	check(pick(c, 4.5, 0, NULL) == 2, "budget 4.5: the fastest within it (p64, not the faster p32 at 4.67 "
	      "nor one whose memory is unknown), the first of equal times", "%d", pick(c, 4.5, 0, NULL));
	check(pick(c, 4.67, 0, NULL) == 0, "a candidate exactly at the budget is within it", NULL);
	check(pick(c, 4.1, 0, &least) == -1 && least == 3, "none within the budget: no winner, and the least is named",
	      "%d", least);
	/* what the forward keeps for the backward, bounded alone and with the peak */
	check(pick(c, 0, 0.35, &least) == 2 && least == 5, "saved budget 0.35: p64 (0.30), not p32 (0.40) nor one "
	      "that does not say; the least is by saved bytes", "%d %d", pick(c, 0, 0.35, NULL), least);
	check(pick(c, 0, 0.2, NULL) == 5, "saved budget 0.2: p64_again, exactly at it", NULL);
	check(pick(c, 4.32, 0.35, NULL) == 5, "both budgets: within both (p64 holds 4.35 > 4.32)", NULL);
	check(pick(c, 4.25, 0.25, &least) == -1 && least == 5, "within neither together: no winner, the least kept "
	      "named", "%d", least);
	json_t *none = json_array();
	json_array_append_new(none, cand("broken", "failed", 0, -1, -1));
	check(pick(none, 0, 0, &least) == -1 && least == -1, "nothing ran: no winner and no least", NULL);
	json_decref(none);

	CalKey k = test_key();
	json_t *e = cal_entry_new(&k);
	json_object_set_new(e, "winner", json_null());
	json_object_set_new(e, "memory_budget_bytes_per_element", json_real(4.1));
	json_object_set_new(e, "candidates", json_deep_copy(c));
	char msg[2048];
	cal_missing_message(&k, e, CAL_DEFAULT_PATH, "out/ptx", msg, sizeof msg);
	check(strstr(msg, "within its memory budget of 4.1 extra bytes per element") && strstr(msg, "p128, holds 4.200") &&
	      strstr(msg, "--memory-budget") && !strstr(msg, "--saved-budget") && strstr(msg, "--shapes 1x8192x1024"),
	      "over the budget: the message names the budget, the least variant and what to change", "%s", msg);
	json_object_set_new(e, "saved_budget_bytes_per_element", json_real(0.1));
	cal_missing_message(&k, e, CAL_DEFAULT_PATH, "out/ptx", msg, sizeof msg);
	check(strstr(msg, "its saved budget of 0.1 bytes per element kept for the backward and its memory budget of "
	             "4.1") && strstr(msg, "p64_again, keeps 0.200") && strstr(msg, "--saved-budget or --memory-budget"),
	      "over both budgets: the message names both, the least kept and both options", "%s", msg);
	json_decref(e);
	json_decref(c);
}

static void calibration(void)
{
	char path[512], err[2048];
	snprintf(path, sizeof path, "%s/cal/calibration.json", tmpdir);
	json_t *doc = NULL;
	check(cal_load(path, 1, &doc, err, sizeof err) == 0 && json_array_size(json_object_get(doc, "entries")) == 0,
	      "a missing calibration file reads as empty when allowed", NULL);
	json_t *d2 = NULL;
	check(cal_load(path, 0, &d2, err, sizeof err) != 0 && strstr(err, path), "and is an error naming it otherwise", "%s", err);

	CalKey k = test_key();
	json_t *e = cal_entry_new(&k);
	json_object_set_new(e, "winner", json_string("old_winner"));
	cal_put(doc, e);
	e = cal_entry_new(&k);
	json_object_set_new(e, "winner", json_string("fused_grouped_prefix32_hierarchical_chunk16"));
	json_t *cands = json_array(), *c = json_object();
	json_object_set_new(c, "variant", json_string("fused_grouped_prefix32_hierarchical_chunk16"));
	json_object_set_new(c, "status", json_string("ok"));
	double t[3] = { 1.0, 1.2, 1.1 };
	json_object_set_new(c, "forward_backward", results_stats(t, 3));
	json_array_append_new(cands, c);
	json_object_set_new(e, "candidates", cands);
	cal_put(doc, e);
	check(json_array_size(json_object_get(doc, "entries")) == 1, "an entry with the same key replaces the old one", NULL);
	CalKey k2 = k;
	snprintf(k2.driver, sizeof k2.driver, "575.0");
	e = cal_entry_new(&k2);
	json_object_set_new(e, "winner", json_null());
	cal_put(doc, e);
	check(json_array_size(json_object_get(doc, "entries")) == 2, "another driver version is another entry", NULL);
	int rc = results_write_atomic(path, doc, err, sizeof err);
	json_decref(doc);
	char save[256];
	snprintf(save, sizeof save, "%s", tmpdir);
	snprintf(tmpdir, sizeof tmpdir, "%s/cal", save);
	check(rc == 0 && leftovers() == 0, "calibration file written atomically (no FILE.tmp.PID left)", "%s", rc ? err : "");
	snprintf(tmpdir, sizeof tmpdir, "%s", save);

	doc = NULL;
	rc = cal_load(path, 0, &doc, err, sizeof err);
	const json_t *found = rc == 0 ? cal_find(doc, &k) : NULL;
	check(found && cal_winner(found) && !strcmp(cal_winner(found), "fused_grouped_prefix32_hierarchical_chunk16") &&
	      json_number_value(json_object_get(json_object_get(json_array_get(json_object_get(found, "candidates"), 0),
	                                                        "forward_backward"), "median_ms")) == 1.1,
	      "re-read: the winner and the candidate's median come back", "%s", rc ? err : "");
	const json_t *nowin = rc == 0 ? cal_find(doc, &k2) : NULL;
	check(nowin && !cal_winner(nowin), "an entry whose winner is null has no winner", NULL);
	CalKey k3 = k;
	k3.shape.L = 32768;
	check(rc == 0 && !cal_find(doc, &k3), "another shape is not found", NULL);
	json_decref(doc);

	char msg[2048];
	cal_missing_message(&k3, NULL, CAL_DEFAULT_PATH, "out/ptx", msg, sizeof msg);
	check(strstr(msg, "no calibrated variant for rglru 1x32768x1024 on NVIDIA H200") &&
	      strstr(msg, "driver 580.159.04") && strstr(msg, "recur 0.1.0") &&
	      strstr(msg, "run recur calibrate --dir out/ptx --mixer rglru --shapes 1x32768x1024") && !strstr(msg, "--out"),
	      "missing entry: the message names what is missing and the command that calibrates it", "%s", msg);
	json_t *failed = cal_entry_new(&k2);
	json_object_set_new(failed, "winner", json_null());
	cal_missing_message(&k2, failed, path, "ptx", msg, sizeof msg);
	check(strstr(msg, "found no working variant") && strstr(msg, "--shapes 1x8192x1024") && strstr(msg, "--out ") &&
	      strstr(msg, path), "winnerless entry, other file: says so and passes --out FILE", "%s", msg);
	json_decref(failed);

	FILE *f = fopen(path, "w");
	fputs("{\"rows\": []}\n", f);
	fclose(f);
	doc = NULL;
	check(cal_load(path, 1, &doc, err, sizeof err) != 0 && strstr(err, "not a calibration file"),
	      "a JSON file without entries is refused", "%s", err);
}

static const char *manifest_text =
	"{\"format\": 1, \"generator\": \"recur test\",\n"
	" \"mixers\": {\"toy\": {\"k\": 64, \"controller\": null, \"dynamic_control_values_per_token\": \"2*D\", \"params\": []},\n"
	"             \"ctl\": {\"k\": 64, \"controller\": \"fp32_fused_coords\", \"dynamic_control_values_per_token\": 2,\n"
	"                       \"params\": []}},\n"
	" \"variants\": [{\"name\": \"a\", \"mixer\": \"toy\", \"materialized\": false, \"controller\": null},\n"
	"              {\"name\": \"b\", \"mixer\": \"toy\", \"materialized\": true},\n"
	"              {\"name\": \"c\", \"mixer\": \"ctl\", \"materialized\": false, \"controller\": null}]}\n";

static void manifest_extras(void)
{
	char path[512], err[1024];
	snprintf(path, sizeof path, "%s/manifest.json", tmpdir);
	FILE *f = fopen(path, "w");
	fputs(manifest_text, f);
	fclose(f);
	MfInfo mi;
	int rc = mf_open_path(&mi, path, err, sizeof err);
	check(rc == 0, "manifest extras parse", "%s", rc ? err : "");
	if (rc)
		return;
	check(mf_materialized(&mi, "a", err, sizeof err) == 0 && mf_materialized(&mi, "b", err, sizeof err) == 1,
	      "materialized flags read per variant", NULL);
	check(mf_materialized(&mi, "zz", err, sizeof err) == -1 && strstr(err, "zz"), "an absent variant is an error naming it",
	      "%s", err);
	check(mf_controller(&mi, "a") == NULL && !strcmp(mf_controller(&mi, "c"), "fp32_fused_coords"),
	      "controller: the variant's, else its mixer's", NULL);
	long long v = 0, w = 0;
	rc = mf_dyn_per_token(&mi, "toy", (recur_shape){ 1, 8192, 1024 }, &v, err, sizeof err) ||
	     mf_dyn_per_token(&mi, "ctl", (recur_shape){ 1, 8192, 1024 }, &w, err, sizeof err);
	check(rc == 0 && v == 2048 && w == 2, "dynamic_control_values_per_token: \"2*D\" at D=1024 is 2048; an integer stays",
	      "%lld %lld %s", v, w, rc ? err : "");
	mf_close(&mi);
}

static void shape_lists(void)
{
	recur_shape s[H_MAXSHAPES];
	char err[256];
	int n = harness_parse_shapes("1x8192x1024,2x1000x64", s, H_MAXSHAPES, err, sizeof err);
	check(n == 2 && s[0].L == 8192 && s[1].B == 2 && s[1].L == 1000 && s[1].D == 64, "a shape list parses", NULL);
	n = harness_parse_shapes("1x8192x1024,1x0x64", s, H_MAXSHAPES, err, sizeof err);
	check(n == -1 && strstr(err, "1x0x64"), "a bad shape is named", "%s", err);
	n = harness_parse_shapes("1x8x8,", s, H_MAXSHAPES, err, sizeof err);
	check(n == 1, "a trailing comma is harmless", NULL);
	n = harness_default_shapes(s);
	check(n == 4 && s[0].L == 8192 && s[3].L == 131072 && s[2].B == 1 && s[2].D == 1024,
	      "default shapes are the seed's four", NULL);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/recur_test_results_XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("cannot create a temporary folder %s\n", tmpdir);
		return 1;
	}
	int seed = results_file();
	calibration();
	calibration_pick();
	manifest_extras();
	shape_lists();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (failed == 0 && system(cmd) != 0)
		printf("note: could not remove %s\n", tmpdir);
	if (!seed)
		printf("(seed key checks skipped: the seed file was not found)\n");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
