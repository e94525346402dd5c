/* Results files in the seed's schema, and the CLI's output files (see results.h). */
#include "results.h"
#include "fsutil.h"
#include "stats.h"
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

json_t *results_stats(const double *x, int n)
{
	Stats s = { 0 };
	json_t *o = json_object(), *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_real(x[i]));
	json_object_set_new(o, "samples_ms", a);
	if (stats_compute(x, n, &s) != 0) {
		/* no samples: the keys stay, with null, so readers see the schema */
		const char *k[] = { "median_ms", "mean_ms", "std_ms", "minimum_ms", "maximum_ms" };
		for (int i = 0; i < 5; i++)
			json_object_set_new(o, k[i], json_null());
		return o;
	}
	json_object_set_new(o, "median_ms", json_real(s.median));
	json_object_set_new(o, "mean_ms", json_real(s.mean));
	json_object_set_new(o, "std_ms", json_real(s.std));
	json_object_set_new(o, "minimum_ms", json_real(s.min));
	json_object_set_new(o, "maximum_ms", json_real(s.max));
	return o;
}

json_t *results_floor(const ResFloor *f, recur_shape s)
{
	if (!f || f->gb_per_s <= 0)
		return NULL;
	double elems = (double)s.B * s.L * s.D;
	double bps = f->gb_per_s * 1e9;
	json_t *o = json_object();
	json_object_set_new(o, "method", json_string(f->method));
	json_object_set_new(o, f->key, json_real(f->gb_per_s));
	static const struct { const char *bytes, *ms; int per; } pass[] = {
		{ "forward_bytes", "forward_ms", RES_FWD_BYTES },
		{ "backward_bytes", "backward_ms", RES_BWD_BYTES },
		{ "forward_backward_bytes", "forward_backward_ms", RES_FB_BYTES },
	};
	for (int i = 0; i < 3; i++)
		json_object_set_new(o, pass[i].bytes, json_integer((json_int_t)(elems * pass[i].per)));
	for (int i = 0; i < 3; i++)
		json_object_set_new(o, pass[i].ms, json_real(elems * pass[i].per / bps * 1e3));
	return o;
}

static json_t *round_list(const double *x, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_real(x[i]));
	return a;
}

static json_t *profile_json(const ResRow *r)
{
	static const char *const pass[2] = { "forward", "backward" };
	json_t *o = json_object();
	for (int p = 0; p < 2; p++) {
		json_t *a = json_array();
		for (int i = 0; i < r->nprof[p]; i++) {
			const ResKernel *k = &r->prof[p][i];
			json_t *e = json_object();
			json_object_set_new(e, "kernel", json_string(k->kernel));
			json_object_set_new(e, "ms", json_real(k->ms));
			if (k->bytes > 0) {
				json_object_set_new(e, "bytes", json_real(k->bytes));
				json_object_set_new(e, "gb_per_s", json_real(k->ms > 0 ? k->bytes / k->ms * 1e-6 : 0.0));
			}
			if (k->flops > 0) {
				json_object_set_new(e, "flops", json_real(k->flops));
				json_object_set_new(e, "tflop_per_s", json_real(k->ms > 0 ? k->flops / k->ms * 1e-9 : 0.0));
			}
			json_object_set_new(e, "registers", json_integer(k->registers));
			json_object_set_new(e, "local_bytes", json_integer(k->local_bytes));
			json_object_set_new(e, "static_smem_bytes", json_integer(k->static_smem));
			json_object_set_new(e, "max_threads_per_block", json_integer(k->max_threads));
			if (k->block > 0) {
				json_t *g = json_array();
				for (int d = 0; d < 3; d++)
					json_array_append_new(g, json_integer(k->grid[d]));
				json_object_set_new(e, "grid", g);
				json_object_set_new(e, "block", json_integer(k->block));
				json_object_set_new(e, "dynamic_smem_bytes", json_integer(k->dyn_smem));
				json_object_set_new(e, "blocks_per_sm", json_integer(k->blocks_per_sm));
				if (k->cluster > 1) {
					json_object_set_new(e, "cluster", json_integer(k->cluster));
					json_object_set_new(e, "max_active_clusters", json_integer(k->max_clusters));
				}
			}
			json_array_append_new(a, e);
		}
		json_object_set_new(o, pass[p], a);
	}
	return o;
}

json_t *results_shape(recur_shape s)
{
	json_t *sh = json_object();
	json_object_set_new(sh, "batch", json_integer(s.B));
	json_object_set_new(sh, "length", json_integer(s.L));
	json_object_set_new(sh, "width", json_integer(s.D));
	return sh;
}

json_t *results_row(const ResRow *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "shape", results_shape(r->shape));
	json_object_set_new(o, "architecture", json_string(r->architecture));
	json_object_set_new(o, "backend", json_string(r->backend));
	json_object_set_new(o, "controller", r->controller[0] ? json_string(r->controller) : json_null());

	/* samples_ms is the concatenation of the rounds */
	int nr = r->nrounds, ns = r->nsamples, n = nr * ns;
	double all[3][RES_MAXROUNDS * RES_MAXSAMPLES];
	for (int k = 0; k < nr; k++)
		for (int i = 0; i < ns; i++) {
			all[0][k * ns + i] = r->fwd[k][i];
			all[1][k * ns + i] = r->bwd[k][i];
			all[2][k * ns + i] = r->fb[k][i];
		}
	json_object_set_new(o, "forward", results_stats(all[0], n));
	json_object_set_new(o, "backward", results_stats(all[1], n));
	json_object_set_new(o, "forward_backward", results_stats(all[2], n));
	json_t *rounds = json_array();
	for (int k = 0; k < nr; k++) {
		json_t *ro = json_object();
		json_object_set_new(ro, "round", json_integer(k));
		json_object_set_new(ro, "order_index", json_integer(r->order_index[k]));
		json_object_set_new(ro, "forward_ms", round_list(r->fwd[k], ns));
		json_object_set_new(ro, "backward_ms", round_list(r->bwd[k], ns));
		json_object_set_new(ro, "forward_backward_ms", round_list(r->fb[k], ns));
		json_array_append_new(rounds, ro);
	}
	json_object_set_new(o, "rounds", rounds);

	json_object_set_new(o, "peak_allocated_delta_bytes", json_integer(r->peak_allocated - r->baseline_allocated));
	json_object_set_new(o, "peak_reserved_delta_bytes", json_integer(r->peak_reserved - r->baseline_reserved));
	json_object_set_new(o, "peak_allocated_bytes", json_integer(r->peak_allocated));
	json_object_set_new(o, "peak_reserved_bytes", json_integer(r->peak_reserved));
	json_object_set_new(o, "baseline_allocated_bytes", json_integer(r->baseline_allocated));
	json_object_set_new(o, "baseline_reserved_bytes", json_integer(r->baseline_reserved));
	json_object_set_new(o, "parameters", json_integer(r->parameters));
	json_object_set_new(o, "parameter_bytes", json_integer(4 * r->parameters));
	json_object_set_new(o, "dynamic_control_values_per_token", json_integer(r->dyn_per_token));
	json_object_set_new(o, "materialized_state_sized_transition", json_boolean(r->materialized));

	/* this project's additions, after the seed's keys */
	if (r->has_saved) {   /* what a layer holds between the passes when a model trains */
		json_object_set_new(o, "saved_bytes", json_integer(r->saved_bytes));
		json_object_set_new(o, "saved_bytes_per_element",
		                    json_real((double)r->saved_bytes / ((double)r->shape.B * r->shape.L * r->shape.D)));
	}
	json_t *fl = results_floor(&r->floor, r->shape);
	if (fl)
		json_object_set_new(o, "floor", fl);
	if (r->has_profile)
		json_object_set_new(o, "profile", profile_json(r));
	if (r->nnotes) {
		json_t *a = json_array();
		for (int i = 0; i < r->nnotes; i++)
			json_array_append_new(a, json_string(r->notes[i]));
		json_object_set_new(o, "notes", a);
	}
	if (r->variant_source[0])
		json_object_set_new(o, "variant_source", json_string(r->variant_source));
	return o;
}

void results_cuda_string(int api, char *out, size_t n)
{
	if (api > 0)
		snprintf(out, n, "%d.%d", api / 1000, api % 1000 / 10);
	else
		snprintf(out, n, "unknown");
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

json_t *results_env(const ResEnv *e)
{
	char cuda[32];
	results_cuda_string(e->cuda_api, cuda, sizeof cuda);
	json_t *o = json_object();
	/* "cuda" and "gpu" are the seed's keys; the seed's "torch" has no
	 * counterpart (nothing here uses it). "cuda" is the driver API version. */
	json_object_set_new(o, "cuda", json_string(cuda));
	json_object_set_new(o, "gpu", json_string(e->gpu));
	json_object_set_new(o, "driver_version", str_or_null(e->driver));
	json_object_set_new(o, "cuda_driver_api_version", json_integer(e->cuda_api));
	json_object_set_new(o, "llvm", str_or_null(e->llvm));
	json_object_set_new(o, "ptx_isa", str_or_null(e->ptx_isa));
	json_object_set_new(o, "ptx_target", str_or_null(e->target));
	json_object_set_new(o, "generator", str_or_null(e->generator));
	return o;
}

static json_t *protocol_json(const ResProtocol *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "scope", json_string("complete mixer preparation, recurrence, input and parameter gradients"));
	json_object_set_new(o, "dtype", json_string("BF16 inputs and outputs, FP32 parameters, gradients and recurrent carry"));
	json_object_set_new(o, "input_gradient", json_true());
	json_object_set_new(o, "order", json_string("AB/BA counterbalanced"));
	/* PTX is loaded (and JIT-compiled by the driver) before any timed region */
	json_object_set_new(o, "compile_excluded", json_true());
	json_object_set_new(o, "baseline_policy", json_string(p->baseline_policy));
	json_object_set_new(o, "samu_policy", json_string(p->samu_policy));
	json_object_set_new(o, "resets", json_string(p->resets[0] ? p->resets : "independent sequences reset at first token; "
	                                             "no internal packed reset"));
	json_object_set_new(o, "rounds", json_integer(p->rounds));
	json_object_set_new(o, "samples_per_round", json_integer(p->samples));
	json_object_set_new(o, "warmup_runs", json_integer(p->warmup));
	json_object_set_new(o, "l2_flush_bytes", json_integer(p->flush_bytes));
	json_object_set_new(o, "timer", json_string("CUDA events on one stream; L2 flushed before every timed region"));
	return o;
}

json_t *results_doc(const ResEnv *e, const ResProtocol *p, const ResRow *rows, int n)
{
	json_t *o = json_object(), *a = json_array();
	json_object_set_new(o, "schema_version", json_integer(1));
	json_object_set_new(o, "protocol", protocol_json(p));
	json_object_set_new(o, "environment", results_env(e));
	for (int i = 0; i < n; i++)
		json_array_append_new(a, results_row(&rows[i]));
	json_object_set_new(o, "rows", a);
	return o;
}

int results_out_folder(const char *path, const char *what, char *err, size_t errlen)
{
	char why[1024];
	if (fs_mkdirs_for(path, why, sizeof why) == 0)
		return 0;
	snprintf(err, errlen, "cannot write the %s %s: %s", what, path, why);
	return -1;
}

int results_write_atomic(const char *path, const json_t *doc, char *err, size_t errlen)
{
	CliOut o;
	if (fs_mkdirs_for(path, err, errlen) != 0 || cli_out_open(&o, path, err, errlen) != 0)
		return -1;
	if (json_dumpf(doc, o.f, JSON_INDENT(2)) != 0 || fputc('\n', o.f) == EOF) {
		snprintf(err, errlen, "cannot write %s: %s", o.tmp, strerror(errno));
		cli_out_abort(&o);
		return -1;
	}
	return cli_out_commit(&o, err, errlen);
}

/* ---- output files ---- */

/* The temporary file being written, for the signal handler: a signal
 * during the write removes it, then takes its earlier course. */
static char out_pending[4160];
static volatile sig_atomic_t out_active;
static const int out_sigs[3] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction out_old[3];

static void out_on_signal(int sig)
{
	if (out_active)
		unlink(out_pending);   /* async-signal-safe, as are sigaction and raise */
	for (int k = 0; k < 3; k++)
		if (out_sigs[k] == sig)
			sigaction(sig, &out_old[k], NULL);
	raise(sig);                /* delivered with the old disposition once this returns */
}

static void out_guard(const char *tmp)
{
	snprintf(out_pending, sizeof out_pending, "%s", tmp);
	out_active = 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = out_on_signal;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k < 3; k++) {
		sigaction(out_sigs[k], NULL, &out_old[k]);
		if (out_old[k].sa_handler != SIG_IGN)   /* an ignored signal (nohup) stays ignored */
			sigaction(out_sigs[k], &sa, NULL);
	}
}

static void out_unguard(void)
{
	for (int k = 0; k < 3; k++)
		sigaction(out_sigs[k], &out_old[k], NULL);
	out_active = 0;
}

int cli_out_open(CliOut *o, const char *path, char *err, size_t errlen)
{
	if (out_active) {
		memset(o, 0, sizeof *o);
		snprintf(err, errlen, "cannot write %s while %s is being written (one output at a time)", path, out_pending);
		return -1;
	}
	out_guard("");   /* before the temporary file exists: a signal then removes nothing of anyone's */
	if (fs_out_open(o, path, err, errlen) != 0) {
		out_unguard();
		return -1;
	}
	if (o->direct)
		out_unguard();   /* written in place: nothing to remove */
	else
		snprintf(out_pending, sizeof out_pending, "%s", o->tmp);
	return 0;
}

void cli_out_abort(CliOut *o)
{
	int guarded = !o->direct && o->tmp[0];
	fs_out_abort(o);
	if (guarded)
		out_unguard();
}

int cli_out_commit(CliOut *o, char *err, size_t errlen)
{
	int guarded = !o->direct;
	int rc = fs_out_commit(o, err, errlen);
	if (guarded)
		out_unguard();
	return rc;
}

/* Whether a and b name one file: the same text, or the same device and inode. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!strcmp(a, b))
		return 1;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int cli_out_not_input(const char *path, const char *what, const char *const *inputs, int n, char *err,
                      size_t errlen)
{
	for (int i = 0; i < n; i++)
		if (inputs[i] && same_file(path, inputs[i])) {
			snprintf(err, errlen, "the %s %s would overwrite its input %s: name another file", what, path,
			         inputs[i]);
			return -1;
		}
	return 0;
}
