/* recur bench: the seed's benchmark protocol (shared/spec/protocol.md).
 *
 * (Its options: the table below, which `recur bench --help` prints.)
 *
 * Per shape: every mixer's variant comes from the calibration file (or
 * --variant); its module is loaded and its inputs uploaded before anything
 * is timed. Then, per mixer, the memory window (y, dx and the workspaces
 * allocated inside one forward + backward) and a check that the outputs
 * are finite. Then the rounds in AB/BA order (stats.h; the first mixer
 * also alternates from shape to shape, as in the seed): before a mixer's
 * first timed sample, warm-up runs; per sample three timed regions, each
 * after an L2 flush: forward, backward (from that forward), and a fresh
 * forward + backward. The device's copy bandwidth, measured once at the
 * start, gives every row its floor. The file is written atomically; a
 * table is printed last.
 */
#include "bench_step.h"
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

#define B_MAXMIX 16

static const char *const RESERVED_NOTE =
	"reserved figures repeat the allocated ones: recur.h exposes no driver free-memory query "
	"(cuMemGetInfo), and the runtime keeps no caching pool, so the two differ only by the "
	"driver's allocation granularity";

typedef struct {
	const char *dir, *calpath, *out;
	recur_shape sh[H_MAXSHAPES];
	int nsh, rounds, samples, warmup, profile;
	uint64_t seed;
	const char *over[B_MAXMIX];     /* --variant */
	int nover;
	const char *only[B_MAXMIX];     /* --mixer */
	int nonly;
	double resets;                  /* --resets: reset marks at this rate in every call */
	int states;                     /* --h0: h0 and dhT given, hT and dh0 taken in every call */
	int packed;                     /* --packed: --resets' documents as cu_seqlens, a state each */
	int nofinal;                    /* --no-final: and no hT, dhT */
	int step;                       /* --step T: the decode steps, T tokens per call (bench_step.h); 0: none */
	int shapes_given;               /* --shapes on the command line, not its default */
} BenchOpts;

typedef struct {
	const char *mixer;
	int vi[H_MAXSHAPES];           /* the variant per shape */
	int overridden;                /* by --variant: no calibration lookup */
	recur_variant *v;
	HBufs b;
	ResRow *row;
	int warmed;
} Mix;

typedef struct {
	BenchOpts o;
	recur_manifest *m;
	MfInfo mi;
	recur_rt *rt;
	Harness h;
	ResEnv env;
	ResFloor floor;
	Mix mix[B_MAXMIX];
	int nmix;
	ResRow *rows;
	int nrows;
} Bench;

#define STR_(x) #x
#define STR(x) STR_(x)
#define BENCH_DEFAULT_OUT "out/results.json"

enum { B_DIR, B_SHAPES, B_ROUNDS, B_SAMPLES, B_WARMUP, B_CAL, B_VARIANT, B_MIXER, B_OUT, B_PROFILE, B_SEED,
       B_RESETS, B_H0, B_PACKED, B_NOFINAL, B_STEP };

static const CliOpt OPTS[] = {
	[B_DIR] = CLI_OPT_DIR,
	[B_SHAPES] = { "--shapes", "BxLxD,...", H_DEFAULT_SHAPES, "the shapes to run (with --step: B rows of width D "
	               "advancing L tokens per timed region; default then " BENCH_STEP_SHAPES ")", 0 },
	[B_ROUNDS] = { "--rounds", "N", "2", "rounds, the mixers' order alternating, 1.." STR(RES_MAXROUNDS), 0 },
	[B_SAMPLES] = { "--samples", "N", "5", "timed samples per mixer and round, 1.." STR(RES_MAXSAMPLES), 0 },
	[B_WARMUP] = { "--warmup", "N", "2", "untimed runs before a mixer's first sample, 0..1000", 0 },
	[B_CAL] = { "--calibration", "FILE", CAL_DEFAULT_PATH, "where each mixer's variant per shape comes from", 0 },
	[B_VARIANT] = { "--variant", "NAME", NULL, "run this variant for its mixer at every shape, not the calibrated one",
	                1 },
	[B_MIXER] = { "--mixer", "NAME", NULL, "run this mixer (default: every mixer)", 1 },
	[B_OUT] = { "--out", "FILE", BENCH_DEFAULT_OUT, "the results JSON", 0 },
	[B_PROFILE] = { "--profile", NULL, NULL, "per-kernel times, bytes and TFLOP/s, the variant's own memory floor, "
	                "and forward+backward as a CUDA graph, after the rounds", 0 },
	[B_SEED] = CLI_OPT_SEED,
	[B_RESETS] = { "--resets", "P", NULL, "every call gives reset marks at rate P (packed documents: 64 in 131072 "
	               "tokens is 0.00049); the variants must take them", 0 },
	[B_H0] = { "--h0", NULL, NULL, "every call gives h0 and dhT and takes hT and dh0, and the row's map on "
	                 "variants taking it (map = { true }); the variants must take the states", 0 },
	[B_PACKED] = { "--packed", NULL, NULL, "with --resets at B = 1: the documents as cu_seqlens, each with its hT and "
	               "dhT (and h0, dh0 with --h0); the variants must take cu_seqlens (docs = { true })", 0 },
	[B_NOFINAL] = { "--no-final", NULL, NULL, "with --packed: no hT and no dhT (a call training on packed documents, "
	                "which asks for no final states)", 0 },
	[B_STEP] = { "--step", "T", NULL, "time the decode steps (scan decode), T tokens per call, 1..4096: GPU time per "
	             "call, host time per replay of its CUDA graph, the memory floor", 0 },
};

const CliCmd cli_bench_cmd = {
	"bench", NULL, "the seed's protocol with the calibrated variants: results JSON and a table",
	OPTS, CLI_NOPTS(OPTS), cli_bench,
};

static int set(void *ctx, int opt, const char *v, char *err, size_t n)
{
	BenchOpts *o = ctx;
	switch (opt) {
	case B_DIR: return cli_parse_path(v, &o->dir, err, n);
	case B_CAL: return cli_parse_path(v, &o->calpath, err, n);
	case B_OUT: return cli_parse_path(v, &o->out, err, n);
	case B_PROFILE: o->profile = 1; return 0;
	case B_VARIANT: return cli_add_value(o->over, &o->nover, B_MAXMIX, v, err, n);
	case B_MIXER: return cli_add_value(o->only, &o->nonly, B_MAXMIX, v, err, n);
	case B_ROUNDS: return cli_parse_int(v, 1, RES_MAXROUNDS, &o->rounds, err, n);
	case B_SAMPLES: return cli_parse_int(v, 1, RES_MAXSAMPLES, &o->samples, err, n);
	case B_WARMUP: return cli_parse_int(v, 0, 1000, &o->warmup, err, n);
	case B_SHAPES:
		/* cli_parse hands an absent option's default over as the table's own string */
		o->shapes_given = v != OPTS[B_SHAPES].def;
		o->nsh = harness_parse_shapes(v, o->sh, H_MAXSHAPES, err, n);
		return o->nsh < 0 ? -1 : 0;
	case B_STEP:
		if (cli_parse_int(v, 1, BENCH_STEP_MAX, &o->step, err, n) == 0)
			return 0;
		snprintf(err, n, "want a number of tokens per call in 1..%d", BENCH_STEP_MAX);
		return -1;
	case B_SEED:
		return cli_parse_seed(v, &o->seed, err, n);
	case B_RESETS:
		if (cli_parse_positive(v, 0.0, 1.0, &o->resets, err, n) == 0)
			return 0;
		snprintf(err, n, "want a rate in (0, 1]");
		return -1;
	case B_H0:
		o->states = 1;
		return 0;
	case B_PACKED:
		o->packed = 1;
		return 0;
	case B_NOFINAL:
		o->nofinal = 1;
		return 0;
	}
	snprintf(err, n, "option %d has no handler", opt);
	return -1;
}

/* 0; 1 when --help was printed; -1 after a message */
static int parse(int argc, char **argv, BenchOpts *o)
{
	*o = (BenchOpts){ 0 };
	return cli_parse(&cli_bench_cmd, argc, argv, set, o);
}

static int wanted(const BenchOpts *o, const char *mixer)
{
	return cli_mixer_wanted(o->only, o->nonly, mixer);
}

/* The mixers to run, in manifest order, and their --variant overrides. */
static int pick_mixers(Bench *bn, char *err, size_t n)
{
	const char *names[B_MAXMIX];
	int nm = mf_mixers(bn->m, names, B_MAXMIX);
	for (int i = 0; i < bn->o.nonly; i++) {
		int found = 0;
		for (int k = 0; k < nm; k++)
			found |= !strcmp(names[k], bn->o.only[i]);
		if (!found) {
			snprintf(err, n, "--mixer %s: %s has no variant of that mixer", bn->o.only[i],
			         recur_manifest_info(bn->m, "path"));
			return -1;
		}
	}
	for (int k = 0; k < nm; k++)
		if (wanted(&bn->o, names[k]))
			bn->mix[bn->nmix++] = (Mix){ .mixer = names[k] };
	for (int i = 0; i < bn->o.nover; i++) {
		int vi = recur_manifest_find(bn->m, bn->o.over[i]);
		if (vi < 0) {
			snprintf(err, n, "--variant %s: no such variant in %s (see recur list --dir %s)", bn->o.over[i],
			         recur_manifest_info(bn->m, "path"), bn->o.dir);
			return -1;
		}
		const char *mx = recur_manifest_variant_mixer(bn->m, vi);
		int hit = 0;
		for (int k = 0; k < bn->nmix; k++)
			if (!strcmp(bn->mix[k].mixer, mx)) {
				if (bn->mix[k].overridden) {
					snprintf(err, n, "--variant given twice for mixer %s", mx);
					return -1;
				}
				bn->mix[k].overridden = 1;
				for (int s = 0; s < bn->o.nsh; s++)
					bn->mix[k].vi[s] = vi;
				hit = 1;
			}
		if (!hit) {
			snprintf(err, n, "--variant %s belongs to mixer %s, which --mixer leaves out", bn->o.over[i], mx);
			return -1;
		}
	}
	if (bn->nmix == 0) {
		snprintf(err, n, "%s holds no variants", recur_manifest_info(bn->m, "path"));
		return -1;
	}
	return 0;
}

/* Every (mixer, shape) without --variant gets the calibration file's winner;
 * all missing entries are reported together, each with its command. */
/* why variant vi cannot run what --resets / --h0 ask ("" when it can) */
static void state_refusal(const Bench *bn, int vi, char *why, size_t n)
{
	const char *name = recur_manifest_variant_name(bn->m, vi);
	int marks = mf_takes(bn->m, vi, "reset"), h0 = mf_takes(bn->m, vi, "h0"), cu = mf_takes(bn->m, vi, "cu_seqlens");
	if (bn->o.packed && !cu)
		snprintf(why, n, "variant %s takes no cu_seqlens (--packed): bench --variant one that does (recur gen "
		         "lua/variants/docs.lua; recur list shows each variant's state)", name);
	else if ((bn->o.resets > 0 && !marks) || (bn->o.states && !h0))
		snprintf(why, n, "variant %s takes no %s: bench --variant one that does (recur gen lua/variants/state.lua; "
		         "recur list shows each variant's state)", name,
		         bn->o.states && !h0 ? "initial state (--h0)" : "reset marks (--resets)");
}

static int resolve(Bench *bn, char *err, size_t n)
{
	json_t *doc = NULL;
	int need = 0;
	for (int k = 0; k < bn->nmix; k++)
		need |= !bn->mix[k].overridden;
	if (need && cal_load(bn->o.calpath, 1, &doc, err, n))
		return -1;
	size_t used = 0;
	int bad = 0;
	err[0] = 0;
	for (int k = 0; k < bn->nmix; k++) {
		Mix *mx = &bn->mix[k];
		for (int s = 0; s < bn->o.nsh; s++) {
			char why[1024] = "", shs[64];
			cal_shape_string(bn->o.sh[s], shs, sizeof shs);
			if (!mx->overridden) {
				CalKey key = { .shape = bn->o.sh[s], .cuda_api = bn->env.cuda_api };
				snprintf(key.mixer, sizeof key.mixer, "%s", mx->mixer);
				snprintf(key.gpu, sizeof key.gpu, "%s", bn->env.gpu);
				snprintf(key.driver, sizeof key.driver, "%s", bn->env.driver);
				snprintf(key.generator, sizeof key.generator, "%s", bn->env.generator);
				const json_t *e = cal_find(doc, &key);
				const char *w = cal_winner(e);
				if (!w)
					cal_missing_message(&key, e, bn->o.calpath, bn->o.dir, why, sizeof why);
				else if ((mx->vi[s] = recur_manifest_find(bn->m, w)) < 0)
					snprintf(why, sizeof why, "the calibrated variant %s of %s %s is not in %s: run recur "
					         "calibrate --dir %s --mixer %s --shapes %s", w, mx->mixer, shs,
					         recur_manifest_info(bn->m, "path"), bn->o.dir, mx->mixer, shs);
			}
			char rule[512];
			if (!why[0] && mf_decode(bn->m, mx->vi[s]))
				snprintf(why, sizeof why, "variant %s of %s is a decode step (scan decode), forward only: recur bench "
				         "--step T --variant %s times it", recur_manifest_variant_name(bn->m, mx->vi[s]), mx->mixer,
				         recur_manifest_variant_name(bn->m, mx->vi[s]));
			if (!why[0])
				state_refusal(bn, mx->vi[s], why, sizeof why);
			if (!why[0] && recur_check_shape(bn->m, mx->vi[s], bn->o.sh[s], rule, sizeof rule))
				snprintf(why, sizeof why, "variant %s cannot run %s %s: %s", recur_manifest_variant_name(bn->m, mx->vi[s]),
				         mx->mixer, shs, rule);
			if (why[0]) {
				bad++;
				if (used < n)
					used += snprintf(err + used, n - used, "%s%s", used ? "\n  " : "", why);
			}
		}
	}
	json_decref(doc);
	if (bad > 1 && used < n) {
		/* one command for everything at once */
		char all[1024] = "";
		size_t u = 0;
		for (int s = 0; s < bn->o.nsh && u < sizeof all; s++)
			u += snprintf(all + u, sizeof all - u, "%s%dx%dx%d", s ? "," : "", bn->o.sh[s].B, bn->o.sh[s].L,
			              bn->o.sh[s].D);
		snprintf(err + used, n - used, "\n(all at once: recur calibrate --dir %s --shapes %s%s%s)", bn->o.dir, all,
		         strcmp(bn->o.calpath, CAL_DEFAULT_PATH) ? " --out " : "",
		         strcmp(bn->o.calpath, CAL_DEFAULT_PATH) ? bn->o.calpath : "");
	}
	return bad ? -1 : 0;
}

/* The parts of a row known before timing. */
static int row_start(Bench *bn, Mix *mx, int s, long long delta, char *err, size_t n)
{
	ResRow *r = mx->row;
	const char *vname = recur_manifest_variant_name(bn->m, mx->vi[s]);
	r->shape = bn->o.sh[s];
	snprintf(r->architecture, sizeof r->architecture, "%s", mx->mixer);
	snprintf(r->backend, sizeof r->backend, "%s", vname);
	const char *c = mf_controller(&bn->mi, vname);
	snprintf(r->controller, sizeof r->controller, "%s", c ? c : "");
	r->nrounds = bn->o.rounds;
	r->nsamples = bn->o.samples;
	/* this mixer's own x, dy, parameters and gradients: the runtime also
	 * counts the L2 flush buffer and the other mixer's buffers, which are
	 * the harness's, not the run's (the delta is unaffected: see
	 * harness_memory) */
	r->baseline_allocated = (long long)mx->b.input_bytes;
	r->peak_allocated = r->baseline_allocated + delta;
	r->baseline_reserved = r->baseline_allocated;
	r->peak_reserved = r->peak_allocated;
	r->parameters = mx->b.parameters;
	recur_ws_sizes z;
	if (recur_workspace_sizes(bn->m, mx->vi[s], r->shape, &z, err, n))
		return -1;
	r->has_saved = 1;
	r->saved_bytes = (long long)z.saved;
	if (mf_dyn_per_token(&bn->mi, mx->mixer, r->shape, &r->dyn_per_token, err, n))
		return -1;
	int mat = mf_materialized(&bn->mi, vname, err, n);
	if (mat < 0)
		return -1;
	r->materialized = mat;
	r->floor = bn->floor;
	snprintf(r->notes[r->nnotes++], sizeof r->notes[0], "%s", RESERVED_NOTE);
	if (mx->overridden)
		snprintf(r->variant_source, sizeof r->variant_source, "--variant");
	else
		snprintf(r->variant_source, sizeof r->variant_source, "calibration %s", bn->o.calpath);
	return 0;
}

/* Load, upload, memory window, finite check: everything before the rounds. */
static int mix_prepare(Bench *bn, Mix *mx, int s, char *err, size_t n)
{
	int vi = mx->vi[s];
	const char *vname = recur_manifest_variant_name(bn->m, vi);
	char shs[64];
	cal_shape_string(bn->o.sh[s], shs, sizeof shs);
	fprintf(stderr, "bench: %s %s: loading %s, uploading inputs\n", mx->mixer, shs, vname);
	if (recur_variant_load(bn->rt, bn->m, vname, &mx->v, err, n)) {
		char t[4096];
		snprintf(t, sizeof t, "%s %s %s: recur_variant_load: %s", mx->mixer, vname, shs, err);
		snprintf(err, n, "%s", t);
		return -1;
	}
	if (hbufs_inputs(&bn->h, bn->m, vi, bn->o.sh[s], bn->o.seed + (uint64_t)s * 7919, &mx->b, err, n) ||
	    ((bn->o.resets > 0 || bn->o.states) &&
	     hbufs_state(&bn->h, &mx->b, bn->o.resets, bn->o.states,
	                 !bn->o.packed ? HB_ROWS : bn->o.nofinal ? HB_PACKED_NOFINAL : HB_PACKED,
	                 bn->o.seed + (uint64_t)s * 7919 + 1, err, n)) ||
	    (bn->o.states && !bn->o.packed && mf_takes(bn->m, vi, "map_loga") && hbufs_map(&bn->h, &mx->b, err, n)))
		return -1;
	long long delta;
	if (harness_memory(&bn->h, mx->v, &mx->b, &delta, err, n))
		return -1;
	char why[512];
	int fin = harness_finite(&bn->h, &mx->b, why, sizeof why);
	if (fin) {
		snprintf(err, n, fin > 0 ? "%s: %s: run recur verify --dir %s --variant %s --shape %s" : "%s: %s",
		         mx->b.what, why, bn->o.dir, vname, shs);
		return -1;
	}
	return row_start(bn, mx, s, delta, err, n);
}

/* Per-kernel times (events around each launch: outside the timed rounds). */
static int mix_profile(Bench *bn, Mix *mx, char *err, size_t n)
{
	ResRow *r = mx->row;
	recur_io io = hbufs_io(&mx->b);
	recur_set_profiling(mx->v, 1);
	for (int p = 0; p < 2; p++) {
		int rc = harness_flush(&bn->h, err, n) ||
		         (p == 0 ? recur_forward(mx->v, r->shape, &io, 0, err, n) : recur_backward(mx->v, r->shape, &io, 0, err, n));
		if (rc) {
			recur_set_profiling(mx->v, 0);
			char t[4096];
			snprintf(t, sizeof t, "%s: profiling the %s: %s", mx->b.what, p ? "backward" : "forward", err);
			snprintf(err, n, "%s", t);
			return -1;
		}
		int vi = recur_manifest_find(bn->m, r->backend);
		recur_launch_info li;
		r->nprof[p] = 0;
		for (int i = 0; i < RES_MAXPROF && recur_variant_last_launch(mx->v, i, &li) == 0; i++) {
			ResKernel *K = &r->prof[p][r->nprof[p]++];
			harness_kernel(mx->v, &li, K);
			K->bytes = K->flops = 0;
			if (vi >= 0 && (recur_launch_bytes(bn->m, vi, p, i, r->shape, &K->bytes, err, n) != 0 ||
			                recur_launch_flops(bn->m, vi, p, i, r->shape, &K->flops, err, n) != 0)) {
				recur_set_profiling(mx->v, 0);
				return -1;
			}
		}
	}
	recur_set_profiling(mx->v, 0);
	r->has_profile = 1;
	printf("profile %s %s %dx%dx%d\n  %-9s %-32s %9s %5s %6s %7s %6s %6s %9s %7s %7s\n", r->architecture, r->backend,
	       r->shape.B, r->shape.L, r->shape.D, "pass", "kernel", "ms", "regs", "local", "smem KB", "thr", "blk/SM",
	       "MB", "GB/s", "TFLOP/s");
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < r->nprof[p]; i++) {
			const ResKernel *K = &r->prof[p][i];
			char tf[16] = "-";
			if (K->flops > 0 && K->ms > 0)
				snprintf(tf, sizeof tf, "%.0f", K->flops / K->ms * 1e-9);
			printf("  %-9s %-32s %9.4f %5d %6d %7.1f %6d %6d %9.1f %7.0f %7s\n", p ? "backward" : "forward", K->kernel,
			       K->ms, K->registers, K->local_bytes, (K->static_smem + K->dyn_smem) / 1024.0, K->block,
			       K->blocks_per_sm, K->bytes * 1e-6, K->ms > 0 ? K->bytes / K->ms * 1e-6 : 0.0, tf);
		}
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < r->nprof[p]; i++) {
			const ResKernel *K = &r->prof[p][i];
			if (K->cluster > 1)
				printf("  %s: clusters of %d blocks, %d clusters (%d blocks) active at once; grid %u blocks\n",
				       K->kernel, K->cluster, K->max_clusters, K->max_clusters * K->cluster,
				       K->grid[0] * K->grid[1] * K->grid[2]);
		}
	/* the variant's own memory floor: every kernel's bytes at the copy rate,
	 * beside the mixer's (10 B an element, the row's floor) */
	double mb = 0, ms = 0;
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < r->nprof[p]; i++) {
			mb += r->prof[p][i].bytes * 1e-6;
			ms += r->prof[p][i].ms;
		}
	if (mb > 0 && r->floor.gb_per_s > 0) {
		double at = mb / r->floor.gb_per_s;   /* MB / (GB/s) = ms */
		printf("  all kernels: %.1f MB, %.3f ms at %.0f GB/s; their times sum to %.3f ms (%.2fx)\n", mb, at,
		       r->floor.gb_per_s, ms, ms / at);
	}
	printf("  (smem: static + dynamic per block; blk/SM: blocks that fit an SM; MB: what each kernel must move,\n"
	       "   every tensor and workspace it touches once; GB/s: that over its time; TFLOP/s: the tensor-core\n"
	       "   FLOP of its projections, each product once, over its time; all kernels: their bytes at the copy\n"
	       "   rate, the variant's own memory floor, and how far their times are from it)\n");
	return 0;
}

static double host_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* Forward+backward as the calls and as one CUDA graph (recur_graph), NREP
 * pairs back to back with no L2 flush between them (outside the protocol's
 * timing): the GPU's time per pair (events around all of them) and the
 * host's time to enqueue one pair. */
#define NREP 20
static int pair_times(Bench *bn, Mix *mx, recur_graph *g, double *gpu_ms, double *host, char *err, size_t n)
{
	recur_io io = hbufs_io(&mx->b);
	recur_shape s = mx->row->shape;
	CUevent e0 = NULL, e1 = NULL;
	float ms = 0;
	int rc = recur_event_create(bn->rt, &e0, err, n) || recur_event_create(bn->rt, &e1, err, n) ||
	         recur_sync(bn->rt, err, n) || recur_event_record(bn->rt, e0, 0, err, n);
	double t0 = host_us();
	for (int i = 0; !rc && i < NREP; i++)
		rc = g ? recur_graph_launch(g, 0, err, n)
		       : recur_forward(mx->v, s, &io, 0, err, n) || recur_backward(mx->v, s, &io, 0, err, n);
	*host = (host_us() - t0) / NREP;
	rc = rc || recur_event_record(bn->rt, e1, 0, err, n) || recur_event_elapsed_ms(bn->rt, e0, e1, &ms, err, n);
	*gpu_ms = ms / NREP;
	recur_event_destroy(bn->rt, e0);
	recur_event_destroy(bn->rt, e1);
	return rc ? -1 : 0;
}

static int mix_graph(Bench *bn, Mix *mx, char *err, size_t n)
{
	recur_io io = hbufs_io(&mx->b);
	recur_graph *g = NULL;
	double dg, dh, gg, gh;
	/* the calls once to warm up, then timed after the graph */
	int rc = pair_times(bn, mx, NULL, &dg, &dh, err, n) ||
	         recur_graph_create(mx->v, mx->row->shape, &io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, err, n) ||
	         pair_times(bn, mx, g, &gg, &gh, err, n) || pair_times(bn, mx, NULL, &dg, &dh, err, n) ||
	         recur_sync(bn->rt, err, n);
	if (!rc)
		printf("  forward+backward, %d back to back, warm: calls %.4f ms per pair on the GPU, host %.1f us to "
		       "enqueue; one graph of %d nodes %.4f ms, host %.1f us\n", NREP, dg, dh, recur_graph_nodes(g), gg, gh);
	recur_graph_free(g);
	if (rc) {
		char t[4096];
		snprintf(t, sizeof t, "%s: forward+backward as a graph: %s", mx->b.what, err);
		snprintf(err, n, "%s", t);
	}
	return rc ? -1 : 0;
}

static void mix_release(Bench *bn, Mix *mx)
{
	hbufs_free(&bn->h, &mx->b);
	recur_variant_free(mx->v);
	mx->v = NULL;
	mx->warmed = 0;
}

static double median_of(const double *x, int n)
{
	Stats s;
	return stats_compute(x, n, &s) ? 0 : s.median;
}

static void row_line(FILE *f, const ResRow *r)
{
	int n = r->nrounds * r->nsamples;
	double a[3][RES_MAXROUNDS * RES_MAXSAMPLES];
	for (int k = 0; k < r->nrounds; k++)
		for (int i = 0; i < r->nsamples; i++) {
			a[0][k * r->nsamples + i] = r->fwd[k][i];
			a[1][k * r->nsamples + i] = r->bwd[k][i];
			a[2][k * r->nsamples + i] = r->fb[k][i];
		}
	double elems = (double)r->shape.B * r->shape.L * r->shape.D, fb = median_of(a[2], n);
	char shs[64], fl[64] = "-";
	cal_shape_string(r->shape, shs, sizeof shs);
	if (r->floor.gb_per_s > 0) {
		double floor_ms = elems * RES_FB_BYTES / (r->floor.gb_per_s * 1e9) * 1e3;
		snprintf(fl, sizeof fl, "%8.3f %5.1f%%", floor_ms, fb > 0 ? 100 * floor_ms / fb : 0);
	}
	fprintf(f, "%-7s %-16s %-58s %8.3f %8.3f %8.3f %15s %7.2f\n", r->architecture, shs, r->backend,
	        median_of(a[0], n), median_of(a[1], n), fb, fl, (r->peak_allocated - r->baseline_allocated) / elems);
}

static int run_shape(Bench *bn, int s, char *err, size_t n)
{
	int nm = bn->nmix;
	for (int k = 0; k < nm; k++) {
		bn->mix[k].row = &bn->rows[bn->nrows++];
		if (mix_prepare(bn, &bn->mix[k], s, err, n))
			return -1;
	}
	for (int r = 0; r < bn->o.rounds; r++)
		for (int pos = 0; pos < nm; pos++) {
			/* the seed's order: alternate per round and per shape (stats.h) */
			Mix *mx = &bn->mix[bench_order(s + r, nm, pos)];
			ResRow *row = mx->row;
			row->order_index[r] = pos;
			for (; mx->warmed < bn->o.warmup; mx->warmed++)
				if (harness_run(&bn->h, mx->v, &mx->b, err, n))
					return -1;
			for (int i = 0; i < bn->o.samples; i++)
				if (harness_time(&bn->h, mx->v, &mx->b, H_FWD, &row->fwd[r][i], err, n) ||
				    harness_time(&bn->h, mx->v, &mx->b, H_BWD, &row->bwd[r][i], err, n) ||
				    harness_time(&bn->h, mx->v, &mx->b, H_FB, &row->fb[r][i], err, n))
					return -1;
			fprintf(stderr, "bench: %s round %d (order %d) done\n", mx->b.what, r, pos);
		}
	for (int k = 0; k < nm; k++) {
		if (bn->o.profile && (mix_profile(bn, &bn->mix[k], err, n) || mix_graph(bn, &bn->mix[k], err, n)))
			return -1;
		row_line(stderr, bn->mix[k].row);
		mix_release(bn, &bn->mix[k]);
	}
	return 0;
}

static void policy(const Bench *bn, const char *mixer, const char *label, char *out, size_t n)
{
	for (int k = 0; k < bn->nmix; k++)
		if (!strcmp(bn->mix[k].mixer, mixer) && bn->mix[k].overridden) {
			snprintf(out, n, "variant %s chosen with --variant",
			         recur_manifest_variant_name(bn->m, bn->mix[k].vi[0]));
			return;
		}
	snprintf(out, n, "strongest previously calibrated legal %s variant per shape (recur calibrate, %s)", label,
	         bn->o.calpath);
}

/* Whether this is a run of decode steps (bench_step.h): --step, or every
 * --variant a decode step (then one token per call). 1, 0, or -1 with a
 * refusal: decode steps and forward+backward variants in one run. */
static int step_mode(Bench *bn, char *err, size_t n)
{
	BenchOpts *o = &bn->o;
	int ndec = 0, plain = -1;
	for (int i = 0; i < o->nover; i++) {
		int vi = recur_manifest_find(bn->m, o->over[i]);
		if (vi < 0)
			continue; /* named as missing later */
		if (mf_decode(bn->m, vi))
			ndec++;
		else if (plain < 0)
			plain = i;
	}
	if (o->step > 0)
		return 1; /* bench_step refuses a --variant that is no decode step */
	if (ndec == 0)
		return 0;
	if (plain >= 0) {
		snprintf(err, n, "--variant %s is a forward+backward variant and the other --variant a decode step (scan "
		         "decode): bench them apart (decode steps with --step T)", o->over[plain]);
		return -1;
	}
	o->step = 1;
	fprintf(stderr, "bench: every --variant is a decode step: timing them as decode steps of 1 token per call "
	        "(--step 1)\n");
	return 1;
}

/* The decode steps of the chosen mixers, left out of the forward+backward run: said, not silent. */
static void skipped_decode(const Bench *bn)
{
	for (int vi = 0; vi < recur_manifest_nvariants(bn->m); vi++)
		if (mf_decode(bn->m, vi) && wanted(&bn->o, recur_manifest_variant_mixer(bn->m, vi)))
			fprintf(stderr, "bench: leaving out %s (%s): a decode step (scan decode), forward only; recur bench "
			        "--step T times it\n", recur_manifest_variant_name(bn->m, vi),
			        recur_manifest_variant_mixer(bn->m, vi));
}

static int bench_main(Bench *bn, char *err, size_t n)
{
	const BenchOpts *o = &bn->o;
	/* a folder that cannot hold the results fails now, not after the rounds */
	if (recur_manifest_load(o->dir, &bn->m, err, n) || mf_for_device(bn->m, err, n) || mf_open(&bn->mi, bn->m, err, n))
		return -1;
	int sm = step_mode(bn, err, n);
	if (sm < 0)
		return -1;
	if (sm > 0) {
		BenchStepOpts so = { .dir = o->dir, .out = o->out, .sh = o->sh, .nsh = o->shapes_given ? o->nsh : 0,
		                     .rounds = o->rounds, .samples = o->samples, .warmup = o->warmup, .profile = o->profile,
		                     .step = o->step, .seed = o->seed, .variants = o->over, .nvariants = o->nover,
		                     .mixers = o->only, .nmixers = o->nonly, .resets = o->resets };
		return bench_step_run(&so, bn->m, &bn->mi, err, n);
	}
	if (o->nofinal && !o->packed) {
		snprintf(err, n, "--no-final leaves out the documents' final states: give --packed too");
		return -1;
	}
	if (o->packed && !(o->resets > 0)) {
		snprintf(err, n, "--packed passes --resets P's documents as cu_seqlens: give --resets P too");
		return -1;
	}
	for (int s = 0; o->packed && s < o->nsh; s++)
		if (o->sh[s].B != 1) {
			snprintf(err, n, "--packed packs the documents into one row: shape %dx%dx%d has B = %d; give --shapes "
			         "with B = 1", o->sh[s].B, o->sh[s].L, o->sh[s].D, o->sh[s].B);
			return -1;
		}
	if (pick_mixers(bn, err, n))
		return -1;
	skipped_decode(bn);
	const char *inputs[2] = { o->calpath, recur_manifest_info(bn->m, "path") };
	if (cli_out_not_input(o->out, "results file (--out)", inputs, 2, err, n) ||
	    results_out_folder(o->out, "results file", err, n))
		return -1;
	if (recur_rt_open(&bn->rt, 0, err, n))
		return -1;
	harness_env(bn->rt, bn->m, &bn->env);
	if (resolve(bn, err, n))
		return -1;
	if (harness_open(&bn->h, bn->rt, H_FLUSH_BYTES, err, n) || harness_bandwidth(&bn->h, &bn->floor, err, n))
		return -1;
	fprintf(stderr, "bench: %s, driver %s; %s %.0f GB/s (%s)\n", bn->env.gpu, bn->env.driver, bn->floor.key,
	        bn->floor.gb_per_s, bn->floor.method);
	bn->rows = calloc((size_t)o->nsh * bn->nmix, sizeof *bn->rows);
	if (!bn->rows) {
		snprintf(err, n, "out of host memory for %d rows", o->nsh * bn->nmix);
		return -1;
	}
	for (int s = 0; s < o->nsh; s++)
		if (run_shape(bn, s, err, n))
			return -1;

	ResProtocol p = { .rounds = o->rounds, .samples = o->samples, .warmup = o->warmup,
	                  .flush_bytes = (long long)bn->h.flush_bytes };
	if (o->resets > 0 || o->states) {   /* the results say which state every call gave */
		char marks[96] = "";
		if (o->resets > 0)
			snprintf(marks, sizeof marks, "%s at random tokens, rate %g", !o->packed ? "reset marks"
			         : o->nofinal ? "documents as cu_seqlens, no final states," : "documents as cu_seqlens, "
			         "hT and dhT per document,", o->resets);
		snprintf(p.resets, sizeof p.resets, "every call: %s%s%s", marks, marks[0] && o->states ? "; " : "",
		         !o->states ? "" : o->nofinal ? "h0 given, dh0 taken" : "h0 and dhT given, hT and dh0 taken");
	}
	policy(bn, "rglru", "RG-LRU", p.baseline_policy, sizeof p.baseline_policy);
	policy(bn, "samu", "SAMU", p.samu_policy, sizeof p.samu_policy);
	json_t *doc = results_doc(&bn->env, &p, bn->rows, bn->nrows);
	int rc = results_write_atomic(o->out, doc, err, n);
	json_decref(doc);
	if (rc)
		return -1;
	printf("%s, driver %s, CUDA %d.%d, %s; %s %.0f GB/s\n", bn->env.gpu, bn->env.driver, bn->env.cuda_api / 1000,
	       bn->env.cuda_api % 1000 / 10, bn->env.generator, bn->floor.key, bn->floor.gb_per_s);
	printf("%-7s %-16s %-58s %8s %8s %8s %8s %6s %7s\n", "mixer", "shape", "variant", "fwd ms", "bwd ms",
	       "f+b ms", "floor ms", "floor%", "B/elem");
	for (int i = 0; i < bn->nrows; i++)
		row_line(stdout, &bn->rows[i]);
	printf("wrote %s\n", o->out);
	return 0;
}

int cli_bench(int argc, char **argv)
{
	Bench bn = { 0 };
	int prc = parse(argc, argv, &bn.o);
	if (prc)
		return prc > 0 ? 0 : 2;
	char err[8192] = "";
	int rc = bench_main(&bn, err, sizeof err);
	if (rc)
		fprintf(stderr, "recur bench: %s\n", err);
	for (int k = 0; k < bn.nmix; k++)
		if (bn.mix[k].v || bn.mix[k].b.x)
			mix_release(&bn, &bn.mix[k]);
	harness_close(&bn.h);
	free(bn.rows);
	if (bn.rt)
		recur_rt_close(bn.rt);
	if (bn.mi.root)
		mf_close(&bn.mi);
	if (bn.m)
		recur_manifest_free(bn.m);
	return rc ? 1 : 0;
}
