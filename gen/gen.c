/* The generator's table of contents: script -> mixer and variants ->
 * derivative graph -> LLVM IR, a module a kernel -> O3 -> PTX of each
 * kernel (built once a run: kernels.h) -> each variant's PTX joined
 * (ptxjoin.h) -> manifest.
 * Everything goes to a temporary directory that replaces the output
 * directory only when every variant was generated. */
#include "gen.h"
#include "script.h"
#include "graphtext.h"
#include "target.h"
#include "tmpl.h"
#include "diag.h"
#include "fsutil.h"
#include "par.h"
#include "hash.h"
#include "cubin.h"
#include "reuse.h"
#include "cache.h"
#include "kernels.h"
#include "ptxjoin.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <jansson.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static json_t *jstr_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

static json_t *launches_json(const Tmpl *T, const Launch *l, int n)
{
	char bytes[1024];
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "kernel", json_string(l[i].kernel));
		json_object_set_new(o, "grid", json_pack("[sss]", l[i].grid[0], l[i].grid[1], l[i].grid[2]));
		json_object_set_new(o, "block", json_pack("[iii]", l[i].block, 1, 1));
		json_object_set_new(o, "smem", json_string(l[i].smem));
		if (l[i].cluster[0])
			json_object_set_new(o, "cluster", json_string(l[i].cluster));
		if (l[i].resident)
			json_object_set_new(o, "resident", json_true());
		if (l[i].early)
			json_object_set_new(o, "early", json_true());
		if (l[i].clears)
			json_object_set_new(o, "clears", json_true());
		tmpl_launch_bytes(T, &l[i], bytes, sizeof bytes);
		json_object_set_new(o, "bytes", json_string(bytes));
		if (l[i].flops[0])
			json_object_set_new(o, "flops", json_string(l[i].flops));
		json_t *args = json_array();
		for (int k = 0; k < l[i].sig.n; k++)
			json_array_append_new(args, json_string(l[i].sig.arg[k]));
		json_object_set_new(o, "args", args);
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *lines_json(const char *const *line, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_string(line[i]));
	return a;
}

/* The mixer's graph as text (script/graphtext.h): what `recur verify`
 * derives the float64 reference from where ref/ has none, so that a
 * generated folder is verified without its script. A graph that cannot be
 * written (a forged node kind) is said so in the manifest, for verify to
 * report; the kernels do not read it. */
static json_t *graph_json(const Mixer *mx)
{
	GraphText t;
	char err[512];
	if (gt_write(mx, &t, err, sizeof err) != 0)
		return json_pack("{s:s}", "error", err);
	json_t *o = json_object();
	json_object_set_new(o, "nodes", lines_json(t.node, t.nnode));
	json_object_set_new(o, "log_a", json_integer(t.log_a));
	json_object_set_new(o, "b", json_integer(t.b));
	json_object_set_new(o, "y", json_integer(t.y));
	json_object_set_new(o, "params", lines_json(t.param, t.nparam));
	json_object_set_new(o, "projections", lines_json(t.proj, t.nproj));
	gt_free(&t);
	return o;
}

static json_t *mixer_json(const Mixer *mx)
{
	json_t *o = json_object();
	json_object_set_new(o, "script", json_string(mx->script));
	json_object_set_new(o, "k", json_integer(mx->k));
	json_object_set_new(o, "controller", jstr_or_null(mx->controller));
	json_object_set_new(o, "dynamic_control_values_per_token", json_string(mx->dyn_per_token[0] ? mx->dyn_per_token : "0"));
	json_t *ps = json_array();
	static const char *const initname[] = { "zeros", "const", "normal", "decay" };
	for (int p = 0; p < mx->nparam; p++) {
		const MxParam *pr = &mx->param[p];
		json_t *dims = pr->kind == PK_BLOCKDIAG ? json_pack("[sss]", "H", "K", "K")
		             : pr->kind == PK_CHANNEL ? json_pack("[s]", "D") : json_array();
		double a = pr->init == INIT_NORMAL && pr->a_is_rsqrt_k ? 1.0 / sqrt((double)mx->k) : pr->a;
		json_array_append_new(ps, json_pack("{s:s,s:o,s:{s:s,s:f,s:f}}", "name", pr->name, "dims", dims,
		                                    "init", "kind", initname[pr->init], "a", a, "b", pr->b));
	}
	json_object_set_new(o, "params", ps);
	json_object_set_new(o, "graph", graph_json(mx));
	return o;
}

static json_t *variant_json(const Tmpl *T, const VariantSet *vs, const char *ptxfile)
{
	const Variant *v = T->v;
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "mixer", json_string(T->mx->name));
	json_object_set_new(o, "ptx", json_string(ptxfile));
	json_object_set_new(o, "chunk", json_integer(v->chunk));
	json_object_set_new(o, "prefix", json_integer(v->prefix));
	json_object_set_new(o, "fused", json_boolean(v->fused));
	json_object_set_new(o, "shared_sfu", json_boolean(v->shared_sfu));
	json_object_set_new(o, "fused_output", json_boolean(v->fused_output));
	json_object_set_new(o, "fused_write", json_boolean(v->fused_write));
	json_object_set_new(o, "materialized", json_boolean(v->materialized));
	if (v->apart)   /* only where set: every other manifest stays as it was */
		json_object_set_new(o, "apart", json_true());
	if (scan_proj_on(T))   /* the forward's projections inside fwd_scan (on this target) */
		json_object_set_new(o, "scan_proj", json_true());
	if (scan_proj_ahead(T))   /* there by a producer warpgroup in resident blocks */
		json_object_set_new(o, "proj_ahead", json_true());
	if (v->recompute)   /* the backward makes the projections again: none kept between the passes */
		json_object_set_new(o, "recompute", json_true());
	if (v->mma)   /* a decode step on tensor cores: what a caller without a pin runs */
		json_object_set_new(o, "mma", json_true());
	if (v->rows)   /* a decode step of one kernel, a block a row (R.decode's rows) */
		json_object_set_new(o, "rows", json_true());
	json_object_set_new(o, "scan", json_string(v->decode    ? "decode"
	                                            : v->onepass ? "onepass"
	                                            : v->lookback ? "lookback"
	                                                          : "hierarchical"));
	json_object_set_new(o, "controller", jstr_or_null(v->controller));
	/* the sequence state the kernels take (util/seqstate.h's fields; the
	 * runtime refuses the others for this variant) */
	json_t *state = json_array();
	if (v->resets)
		json_array_append_new(state, json_string("reset"));
	if (v->docs)   /* packed documents, a state each: docs_prep reads the offsets */
		json_array_append_new(state, json_string("cu_seqlens"));
	static const char *const hstate[] = { "h0", "hT", "dhT", "dh0" };
	for (int i = 0; (v->states || v->docs) && i < 4; i++)
		json_array_append_new(state, json_string(hstate[i]));
	if (v->map) {   /* map_finish writes them from the forward's partial sums, h0 and hT */
		json_array_append_new(state, json_string("map_loga"));
		json_array_append_new(state, json_string("map_h"));
	}
	if (v->decode) {   /* a pool of states, updated in place where hT is h0, and each row's slot */
		json_array_append_new(state, json_string("h0"));
		json_array_append_new(state, json_string("hT"));
		json_array_append_new(state, json_string("index"));
	}
	json_object_set_new(o, "state", state);
	json_t *vars = json_array();
	for (int i = 0; i < T->nvar; i++)
		json_array_append_new(vars, json_pack("[ss]", T->var[i].name, T->var[i].expr));
	json_object_set_new(o, "vars", vars);
	json_t *rules = json_array();
	for (int i = 0; i < T->nrule; i++)
		json_array_append_new(rules, json_pack("{s:s,s:s}", "expr", T->rule[i].expr, "message", T->rule[i].message));
	for (int i = 0; i < vs->nrule; i++)
		json_array_append_new(rules, json_pack("{s:s,s:s}", "expr", vs->rule[i].expr, "message", vs->rule[i].message));
	json_object_set_new(o, "rules", rules);
	json_t *ws = json_array();
	for (int i = 0; i < T->nws; i++)
		json_array_append_new(ws, json_pack("{s:s,s:s,s:s,s:b}", "name", T->ws[i].name, "bytes", T->ws[i].bytes,
		                                    "life", T->ws[i].life, "zero", T->ws[i].zero));
	json_object_set_new(o, "workspaces", ws);
	json_object_set_new(o, "forward", launches_json(T, T->fwd, T->nfwd));
	json_object_set_new(o, "backward", launches_json(T, T->bwd, T->nbwd));
	return o;
}

/* --sm's targets: "sm_80,sm_90" -> each checked, none twice */
#define GEN_MAXTGT 8
typedef struct {
	char sm[GEN_MAXTGT][16];
	int n;
} Targets;

static int parse_targets(const char *list, const char *ptx, Targets *tl, char *err, size_t errlen)
{
	tl->n = 0;
	for (const char *p = list; ; p++) {
		size_t k = strcspn(p, ",");
		if (k == 0 || k >= sizeof tl->sm[0]) {
			snprintf(err, errlen, "--sm %s: give targets separated by commas, e.g. sm_80,sm_90", list);
			return -1;
		}
		if (tl->n == GEN_MAXTGT) {
			snprintf(err, errlen, "--sm %s: at most %d targets", list, GEN_MAXTGT);
			return -1;
		}
		snprintf(tl->sm[tl->n], sizeof tl->sm[0], "%.*s", (int)k, p);
		for (int i = 0; i < tl->n; i++)
			if (!strcmp(tl->sm[i], tl->sm[tl->n])) {
				snprintf(err, errlen, "--sm %s: %s is given twice", list, tl->sm[i]);
				return -1;
			}
		if (target_check(tl->sm[tl->n], ptx, err, errlen) != 0)
			return -1;
		tl->n++;
		p += k;
		if (!*p)
			return 0;
	}
}

/* Seconds on a monotonic clock, for --timings. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The stages a variant goes through, timed for --timings. */
enum { ST_IR, ST_KEY, ST_O3, ST_PTX, ST_CUBIN, NSTAGE };

/* One variant through the pipeline: each writes only its own job, so the
 * output does not depend on the number of threads. */
typedef struct {
	Tmpl *T;
	const VariantSet *vs;
	Mixer mx;                  /* its own copy: derivation grows the graph */
	Target tg;                 /* its own: a target machine is not shared across threads */
	const char *sm;            /* its target, one of --sm's */
	int ti;                    /* and that target's index */
	char *ptx, *cubin;
	size_t ncubin;
	char key[HASH_HEX];        /* content key of the PTX: see module_key */
	char cubin_key[HASH_HEX];  /* and of the cubin: the PTX's, ptxas and its options */
	int reused_ptx, reused_cubin;
	int cached_ptx;            /* the PTX came from the cache (o->cache) */
	int claimed;               /* this job builds the module of its key in this run */
	int twin;                  /* 1 + the index of the job building this same module (its key), or 0 */
	char cache_err[512];       /* why the cache could not keep it, or "" */
	double t[NSTAGE];          /* seconds in each stage */
	int nkern;                 /* kernels of its module, when it builds the module */
	int kbuilt, kcached, kreused;   /* the kernels it built itself, took from the cache, from the old folder */
	char kkey[IRB_MAXPART][HASH_HEX];   /* its kernels' keys, nkk of them (the manifest's "kernel_keys") */
	int nkk;
	int rc;
	char err[2048];
} Job;

typedef struct {
	Job *job;
	int njob;
	pthread_mutex_t *claims;   /* over the jobs' claimed and twin */
	const GenOpts *o;
	const Reuse *old;          /* the output folder's modules, by key */
	const Ptxas *ptxas;        /* one per target, NULL without --cubin */
	KernelTable *kernels;      /* the run's kernels by key: each built once */
} Build;

/* What a kernel's PTX is a function of, hashed: its module of one kernel
 * before O3 (its bitcode: everything the scripts and the templates put
 * into it, the shared array's alignment included), the generator's
 * version, LLVM's, the target, the PTX ISA and the optimisation pipeline.
 * The module's name (its variant's) is left out: it is not in the PTX. */
static void kernel_key(LLVMModuleRef mod, const Target *tg, char out[HASH_HEX])
{
	char llvmv[32];
	target_llvm_version(llvmv, sizeof llvmv);
	Hash h;
	hash_init(&h);
	hash_str(&h, "recur kernel key 1");
	hash_str(&h, RECUR_VERSION);
	hash_str(&h, llvmv);
	hash_str(&h, tg->sm);
	hash_str(&h, tg->ptx);
	hash_str(&h, "default<O3>");
	LLVMSetModuleIdentifier(mod, "", 0);
	LLVMSetSourceFileName(mod, "", 0);
	LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
	hash_bytes(&h, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
	LLVMDisposeMemoryBuffer(bc);
	hash_hex(&h, out);
}

/* A module's: its kernels' keys in order. Equal keys give equal PTX, so a
 * module whose key the output folder already holds is taken from there,
 * not rebuilt, and two variants of one IR (a recompute variant and its
 * twin) are one module. */
static void module_key(char (*kkey)[HASH_HEX], int nk, char out[HASH_HEX])
{
	Hash h;
	hash_init(&h);
	hash_str(&h, "recur module key 3");
	for (int i = 0; i < nk; i++)
		hash_str(&h, kkey[i]);
	hash_hex(&h, out);
}

/* 1 when another job of the run builds the module of j's key (j->twin
 * names it, and take_twins gives j its PTX after the builds), else 0 and
 * j builds it: the first to claim a key, so each module is built once. */
static int claim_key(const Build *b, Job *j)
{
	pthread_mutex_lock(b->claims);
	for (int k = 0; k < b->njob && !j->twin; k++)
		if (&b->job[k] != j && b->job[k].claimed && !strcmp(b->job[k].key, j->key))
			j->twin = k + 1;
	j->claimed = !j->twin;
	pthread_mutex_unlock(b->claims);
	return j->twin != 0;
}

/* After the builds: each job whose module another built takes its PTX and
 * cubin (the same key: the same bytes), or that one's failure. */
static void take_twins(Job *job, int njob)
{
	for (int i = 0; i < njob; i++) {
		Job *j = &job[i];
		if (!j->twin || j->rc)
			continue;
		const Job *o = &job[j->twin - 1];
		if (o->rc) {   /* (through e2: the compiler cannot tell that o is not j) */
			char e2[sizeof j->err];
			snprintf(e2, sizeof e2, "%s (the module of variant %s.%s too, which has the same IR)", o->err,
			         j->T->mx->name, j->T->v->name);
			j->rc = -1;
			memcpy(j->err, e2, sizeof e2);
			continue;
		}
		j->ptx = strdup(o->ptx);
		CHECK(j->ptx);
		if (o->cubin) {
			j->cubin = malloc(o->ncubin);
			CHECK(j->cubin);
			memcpy(j->cubin, o->cubin, o->ncubin);
			j->ncubin = o->ncubin;
			memcpy(j->cubin_key, o->cubin_key, sizeof j->cubin_key);
		}
	}
}

/* The cubin's: its PTX's key, ptxas's version, the target and options. */
static void cubin_key(const char *key, const Ptxas *p, char out[HASH_HEX])
{
	Hash h;
	hash_init(&h);
	hash_str(&h, "recur cubin key 1");
	hash_str(&h, key);
	hash_str(&h, p->version);
	hash_str(&h, p->sm);
	hash_str(&h, "-O3");
	hash_hex(&h, out);
}

/* The cache's folder of kernels (DIR/kernels, beside its modules) into
 * buf: buf, or NULL without a cache or where the path does not fit. */
static const char *kernel_cache(const char *cache, char *buf, size_t n)
{
	if (!cache)
		return NULL;
	int w = snprintf(buf, n, "%s/kernels", cache);
	return w < 0 || (size_t)w >= n ? NULL : buf;
}

/* One kernel's module (j's, which it disposes) to PTX, published under
 * key for every job of the run that has the kernel: cut from a module of
 * the old folder that has it, or from the cache's kernels, else through
 * O3 and the back end (and then kept in the cache). */
static void kernel_build(Job *j, const Build *b, LLVMModuleRef part, const char *name, const char *key)
{
	char *ptx = NULL, err[sizeof j->err], dir[4200];
	const char *take = kernel_cache(b->o->rebuild ? NULL : b->o->cache, dir, sizeof dir);
	int *from = reuse_kernel(b->old, key, &ptx) ? &j->kreused
	            : take && cache_get_ptx(take, key, &ptx) ? &j->kcached : NULL;
	if (from) {
		ktable_publish(b->kernels, key, ptx, NULL);
		(*from)++;
		free(ptx);
		LLVMDisposeModule(part);
		return;
	}
	double t0 = now_s();
	int rc = target_optimize(&j->tg, part, err, sizeof err);
	double t1 = now_s();
	j->t[ST_O3] += t1 - t0;
	if (rc == 0)
		rc = target_ptx(&j->tg, part, &ptx, err, sizeof err);
	j->t[ST_PTX] += now_s() - t1;
	if (rc != 0) {   /* (through e2: err is both source and destination) */
		char e2[sizeof err];
		snprintf(e2, sizeof e2, "kernel %s: %s", name, err);
		memcpy(err, e2, sizeof e2);
	}
	ktable_publish(b->kernels, key, rc == 0 ? ptx : NULL, rc == 0 ? NULL : err);
	j->kbuilt++;
	/* a store that cannot keep it costs a later run a build, not this one */
	const char *keep = kernel_cache(b->o->cache, dir, sizeof dir);
	if (rc == 0 && keep && cache_put_ptx(keep, key, ptx, err, sizeof err) != 0 && !j->cache_err[0])
		snprintf(j->cache_err, sizeof j->cache_err, "%s", err);
	free(ptx);
	LLVMDisposeModule(part);
}

/* The module's PTX from its kernels (part[0..nk-1], which it disposes),
 * each built by the first job of the run to meet it (kernels.h) or taken
 * from the cache's kernels, unless the old folder or the cache has the
 * module's key. */
static int module_ptx(Job *j, const Build *b, LLVMModuleRef *part, int nk)
{
	double t0 = now_s();
	char (*kkey)[HASH_HEX] = j->kkey, name[IRB_MAXPART][128];
	j->nkk = nk;
	for (int i = 0; i < nk; i++) {
		LLVMValueRef fn = LLVMGetFirstFunction(part[i]);   /* the kernel: irb_kernel adds it first */
		size_t len = 0;
		const char *s = fn ? LLVMGetValueName2(fn, &len) : NULL;
		CHECK(s && !LLVMIsDeclaration(fn) && len < sizeof name[i]);
		memcpy(name[i], s, len);
		name[i][len] = 0;
		kernel_key(part[i], &j->tg, kkey[i]);
	}
	module_key(kkey, nk, j->key);
	j->t[ST_KEY] = now_s() - t0;
	const char *cache = b->o->rebuild ? NULL : b->o->cache;
	int done = claim_key(b, j) ||   /* another variant of the run builds this module */
	           (j->reused_ptx = reuse_ptx(b->old, j->key, &j->ptx)) ||
	           (cache && (j->cached_ptx = cache_get_ptx(cache, j->key, &j->ptx)));
	/* every kernel this job claims is built and published before it waits
	 * for any other job's: so every wait ends */
	for (int i = 0; i < nk; i++)
		if (!done && ktable_claim(b->kernels, kkey[i]))
			kernel_build(j, b, part[i], name[i], kkey[i]);
		else
			LLVMDisposeModule(part[i]);
	if (done)
		return 0;
	j->nkern = nk;
	char *ptx[IRB_MAXPART] = { 0 };
	int rc = 0;
	for (int i = 0; i < nk && rc == 0; i++)
		rc = ktable_wait(b->kernels, kkey[i], &ptx[i], j->err, sizeof j->err);
	if (rc == 0)
		rc = ptx_join((const char *const *)ptx, nk, &j->ptx, j->err, sizeof j->err);
	for (int i = 0; i < nk; i++)
		free(ptx[i]);
	/* a store that cannot keep the module costs the next run a build, not this one */
	if (rc == 0 && b->o->cache)
		(void)cache_put_ptx(b->o->cache, j->key, j->ptx, j->cache_err, sizeof j->cache_err);
	return rc;
}

/* The cubin of the module's PTX, unless the old folder has its key. */
static int module_cubin(Job *j, const Build *b, const char *modname)
{
	const Ptxas *px = &b->ptxas[j->ti];
	cubin_key(j->key, px, j->cubin_key);
	if ((j->reused_cubin = reuse_cubin(b->old, j->cubin_key, &j->cubin, &j->ncubin)))
		return 0;
	double t0 = now_s();
	int rc = ptxas_compile(px, modname, j->ptx, &j->cubin, &j->ncubin, j->err, sizeof j->err);
	j->t[ST_CUBIN] = now_s() - t0;
	return rc;
}

/* IR, then PTX (and a cubin) of one derived variant, into j. Reads the
 * mixer's graph, never grows it: variants build concurrently. */
static int gen_variant(Job *j, const Build *b)
{
	const GenOpts *o = b->o;
	Tmpl *T = j->T;
	LLVMContextRef ctx = LLVMContextCreate();
	char modname[200];
	snprintf(modname, sizeof modname, "%s.%s", T->mx->name, T->v->name);
	double t0 = now_s();
	tmpl_build(T, ctx, modname);
	j->t[ST_IR] = now_s() - t0;
	LLVMModuleRef *part = T->I.part;
	int nk = T->I.npart, rc = tmpl_check_smem(T, j->sm, j->err, sizeof j->err);
	if (rc == 0 && o->dump_ir && (!o->only || !strcmp(o->only, T->v->name)))
		for (int i = 0; i < nk; i++) {   /* each kernel's module, as O3 gets it */
			char *s = LLVMPrintModuleToString(part[i]);
			fprintf(stdout, "; ---- IR of %s, kernel %d of %d (before O3)\n%s", modname, i + 1, nk, s);
			LLVMDisposeMessage(s);
		}
	/* --check stops here: the launches are known, the PTX is not wanted */
	if (rc == 0 && !o->check)
		rc = module_ptx(j, b, part, nk);   /* (it disposes the modules) */
	else
		for (int i = 0; i < nk; i++)
			LLVMDisposeModule(part[i]);
	T->I.npart = 0;
	LLVMContextDispose(ctx);
	if (rc == 0 && b->ptxas && !j->twin)
		rc = module_cubin(j, b, modname);
	if (rc != 0) {
		char e2[sizeof j->err];
		snprintf(e2, sizeof e2, "variant %s: %s", modname, j->err);
		snprintf(j->err, sizeof j->err, "%s", e2);
	}
	return rc;
}

static void build_one(void *ctx, int i)
{
	Build *b = ctx;
	Job *j = &b->job[i];
	j->rc = gen_variant(j, b);
}

/* Builds every job on up to o->jobs threads (0: one per CPU). Targets are
 * made here, serially: LLVM's target registration is not thread-safe. */
static int build_all(Job *job, int njob, const GenOpts *o, const Ptxas *ptxas, char *err, size_t errlen)
{
	int made = 0, rc = 0;
	for (; made < njob && rc == 0; made++)
		rc = target_init(&job[made].tg, job[made].sm, o->ptx, err, errlen);
	/* the output folder's last modules: a cache, so any trouble reading it
	 * only means building more */
	Reuse *old = o->rebuild ? NULL : reuse_open(o->outdir);
	/* IR dumps come out of the builds: one thread keeps them in script order */
	pthread_mutex_t claims = PTHREAD_MUTEX_INITIALIZER;
	Build b = { .job = job, .njob = njob, .claims = &claims, .o = o, .old = old, .ptxas = ptxas,
	            .kernels = ktable_new() };
	if (rc == 0) {
		par_run_n(njob, o->dump_ir ? 1 : o->jobs, build_one, &b);
		take_twins(job, njob);
	}
	ktable_free(b.kernels);
	reuse_close(old);
	for (int i = 0; i < made; i++)
		target_free(&job[i].tg);
	return rc;
}

/* The manifest's head: format, generator, LLVM, target. */
static json_t *manifest_head(const GenOpts *o, const Targets *tl)
{
	char llvmv[32];
	target_llvm_version(llvmv, sizeof llvmv);
	json_t *man = json_object();
	json_object_set_new(man, "format", json_integer(1));
	json_object_set_new(man, "generator", json_string("recur " RECUR_VERSION));
	json_object_set_new(man, "llvm", json_string(llvmv));
	json_object_set_new(man, "target", json_string(tl->sm[0]));
	if (tl->n > 1) {
		json_t *a = json_array();
		for (int i = 0; i < tl->n; i++)
			json_array_append_new(a, json_string(tl->sm[i]));
		json_object_set_new(man, "targets", a);
	}
	json_object_set_new(man, "ptx_isa", json_string(o->ptx));
	return man;
}

/* 1. derive: each variant on its own copy of its mixer, since derivation
 * grows the graph (hash-consed, commutative operands ordered by node id)
 * and a shared graph would make a variant's PTX depend on the variants
 * derived before it. The first refusal is reported. */
static int derive_all(VariantSet *sets, int nsets, Job *job, int *nj, json_t *mixers, const Targets *tl, char *err,
                      size_t errlen)
{
	int rc = 0;
	*nj = 0;
	for (int si = 0; si < nsets; si++)
		json_object_set_new(mixers, sets[si].mixer.name, mixer_json(&sets[si].mixer));
	for (int ti = 0; ti < tl->n && rc == 0; ti++)
	for (int si = 0; si < nsets && rc == 0; si++) {
		VariantSet *vs = &sets[si];
		for (int vi = 0; vi < vs->nvar && rc == 0; vi++) {
			Job *j = &job[(*nj)++];
			j->vs = vs;
			j->sm = tl->sm[ti];
			j->ti = ti;
			j->T = calloc(1, sizeof *j->T);
			CHECK(j->T);
			j->mx = vs->mixer;
			CHECK(ex_copy(&j->mx.g, &vs->mixer.g) == 0);
			tmpl_setup(j->T, &j->mx, &vs->var[vi]);
			tmpl_target(j->T, j->sm);
			rc = tmpl_check(j->T, 0, err, errlen);
			if (rc == 0) {
				tmpl_derive(j->T);
				rc = tmpl_check(j->T, 1, err, errlen);
			}
		}
	}
	return rc;
}

/* A module's identity in its variant's entry: the content key, the PTX's
 * checksum (what a later generation checks before taking the file over),
 * and the cubin with its target where there is one. */
static void module_json(json_t *vj, const Job *j, const char *cfile)
{
	char sha[HASH_HEX];
	json_object_set_new(vj, "key", json_string(j->key));
	json_t *kk = json_array();   /* its kernels', for a later generation to take them one by one */
	for (int i = 0; i < j->nkk; i++)
		json_array_append_new(kk, json_string(j->kkey[i]));
	json_object_set_new(vj, "kernel_keys", kk);
	hash_of(j->ptx, strlen(j->ptx), sha);
	json_object_set_new(vj, "ptx_sha256", json_string(sha));
	if (!j->cubin)
		return;
	json_object_set_new(vj, "cubin", json_string(cfile));
	json_object_set_new(vj, "cubin_target", json_string(j->sm));
	json_object_set_new(vj, "cubin_key", json_string(j->cubin_key));
	hash_of(j->cubin, j->ncubin, sha);
	json_object_set_new(vj, "cubin_sha256", json_string(sha));
}

/* 3. the PTX files and the manifest into dir, in script order; the first
 * failed build is reported */
static int write_all(const Job *job, int nj, json_t *man, json_t *variants, const char *dir, const GenOpts *o,
                     char *err, size_t errlen)
{
	for (int i = 0; i < nj; i++) {
		const Job *j = &job[i];
		int ntgt = job[nj - 1].ti + 1;   /* jobs come target by target */
		if (j->rc != 0) {
			snprintf(err, errlen, "%s", j->err);
			return -1;
		}
		char file[256], cfile[256], path[4400];
		/* with several targets each module's file names its own */
		if (ntgt > 1)
			snprintf(file, sizeof file, "%s.%s.%s.ptx", j->vs->mixer.name, j->T->v->name, j->sm);
		else
			snprintf(file, sizeof file, "%s.%s.ptx", j->vs->mixer.name, j->T->v->name);
		snprintf(path, sizeof path, "%s/%s", dir, file);
		if (fs_write_file(path, j->ptx, strlen(j->ptx), err, errlen) != 0)
			return -1;
		if (j->cubin) {
			snprintf(cfile, sizeof cfile, "%s.%s.%s.cubin", j->vs->mixer.name, j->T->v->name, j->sm);
			snprintf(path, sizeof path, "%s/%s", dir, cfile);
			if (fs_write_file(path, j->cubin, j->ncubin, err, errlen) != 0)
				return -1;
		}
		if (o->dump_ptx && (!o->only || !strcmp(o->only, j->T->v->name)))
			fputs(j->ptx, stdout);
		json_t *vj = variant_json(j->T, j->vs, file);
		json_object_set_new(vj, "target", json_string(j->sm));
		module_json(vj, j, cfile);
		json_array_append_new(variants, vj);
		if (o->verbose)
			fprintf(stderr, "[%d/%d] %s %s%s%s\n", i + 1, nj, j->vs->mixer.name, j->T->v->name,
			        ntgt > 1 ? " " : "", ntgt > 1 ? j->sm : "");
	}
	char path[4400];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	if (json_dump_file(man, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) {
		snprintf(err, errlen, "cannot write %s", path);
		return -1;
	}
	return 0;
}

/* Is `name` a file recur gen writes into its output folder? */
static int gen_owns(const char *name)
{
	size_t n = strlen(name);
	return !strcmp(name, "manifest.json") || (n > 4 && !strcmp(name + n - 4, ".ptx")) ||
	       (n > 6 && !strcmp(name + n - 6, ".cubin"));
}

/* a staging folder of a run that no longer runs, untouched this long, is
 * removed by the next run into the same output (an hour: gen writes its
 * folder within seconds, so only a killed run leaves one that old) */
#define STALE_STAGING_S 3600

/* 3 and 4: the files into a temporary folder beside o->outdir that then
 * replaces it whole. SIGINT and SIGTERM wait until the folder is in place
 * or removed, so an interrupted run leaves the old output or the new one,
 * never a half-written folder or a stray temporary one. A run killed
 * outright (SIGKILL, the OOM killer) can leave its temporary folder: the
 * next run into the same output removes it once it is STALE_STAGING_S old. */
static int publish(const Job *job, int nj, json_t *man, json_t *variants, const GenOpts *o, char *err, size_t errlen)
{
	sigset_t block, was;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &was);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->outdir, (long)getpid());
	int rc = fs_mkdtemp_fresh(tmp, gen_owns, err, errlen);
	if (rc == 0) {
		rc = write_all(job, nj, man, variants, tmp, o, err, errlen);
		if (rc == 0)
			rc = fs_replace_dir(tmp, o->outdir, gen_owns, err, errlen);
		if (rc != 0)
			fs_rm_owned(tmp, gen_owns);
	}
	sigprocmask(SIG_SETMASK, &was, NULL);
	char first[4400];
	int n = rc == 0 ? fs_sweep_staged(o->outdir, gen_owns, STALE_STAGING_S, first, sizeof first) : 0;
	if (n == 1)
		fprintf(stderr, "recur gen: removed %s, left by a run killed before it finished\n", first);
	else if (n > 1)
		fprintf(stderr, "recur gen: removed %s and %d more like it, left by runs killed before they finished\n",
		        first, n - 1);
	return rc;
}

/* --check's report on stdout, in script order: each variant's launches
 * with their threads and shared bytes (what gen would put in the manifest
 * and the runtime will ask the driver for), then one closing line; the
 * first variant that cannot be built or does not fit is the error. */
static int report_check(const Job *job, int nj, const Targets *tl, char *err, size_t errlen)
{
	for (int i = 0; i < nj; i++) {
		const Job *j = &job[i];
		if (j->rc != 0) {
			snprintf(err, errlen, "%s", j->err);
			return -1;
		}
		printf("%s %s %s\n", j->vs->mixer.name, j->T->v->name, j->sm);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < (pass ? j->T->nbwd : j->T->nfwd); k++) {
				const Launch *l = pass ? &j->T->bwd[k] : &j->T->fwd[k];
				printf("    %s[%d] %-24s block %d smem %s%s%s\n", pass ? "backward" : "forward", k, l->kernel,
				       l->block, l->smem, l->cluster[0] ? " cluster " : "", l->cluster);
			}
	}
	printf("checked %d variants for", nj / tl->n);
	for (int t = 0; t < tl->n; t++)
		printf("%s %s", t ? "," : "", tl->sm[t]);
	printf(": every launch fits; nothing written\n");
	return 0;
}

/* The closing line: how many modules were built and how many taken over. */
static void say_built(const Job *job, int nj, const GenOpts *o)
{
	int rp = 0, rc = 0, nc = 0, cp = 0, tw = 0;
	for (int i = 0; i < nj; i++) {
		tw += job[i].twin != 0;
		rp += job[i].reused_ptx;
		rc += job[i].reused_cubin;
		nc += job[i].cubin != NULL && !job[i].twin;
		cp += job[i].cached_ptx;
	}
	rp += cp;
	int ntgt = nj ? job[nj - 1].ti + 1 : 1;
	if (ntgt > 1)
		fprintf(stderr, "wrote %d variants for %d targets to %s: PTX of %d built, %d unchanged", nj / ntgt, ntgt,
		        o->outdir, nj - rp - tw, rp);
	else
		fprintf(stderr, "wrote %d variants to %s: PTX of %d built, %d unchanged", nj, o->outdir, nj - rp - tw, rp);
	if (cp)
		fprintf(stderr, " (%d from the cache)", cp);
	if (tw)   /* variants of one IR: one module, built once */
		fprintf(stderr, ", %d the module of another variant", tw);
	if (nc)
		fprintf(stderr, "; cubins of %d built, %d unchanged", nc - rc, rc);
	fprintf(stderr, "\n");
}

/* The cache's trouble, once for the run: generation went on without it. */
static void warn_cache(const Job *job, int nj, const GenOpts *o)
{
	int nbad = 0;
	const char *first = NULL;
	for (int i = 0; i < nj; i++)
		if (job[i].cache_err[0]) {
			nbad++;
			first = first ? first : job[i].cache_err;
		}
	if (nbad)
		fprintf(stderr, "recur gen: warning: the cache %s could not keep %d module%s (%s); they were built, and a "
		        "later run builds them again\n", o->cache, nbad, nbad > 1 ? "s" : "", first);
}

static const char *const stage_name[NSTAGE] = { "IR", "key", "O3", "PTX", "cubin" };

/* --timings: the pipeline's wall time per phase, then each per-variant
 * stage summed over the variants (CPU seconds on the build threads) with
 * its slowest variant. */
static void print_timings(const Job *job, int nj, const double *phase, const GenOpts *o)
{
	fprintf(stderr, "recur gen --timings: %d variants, %d build threads\n", nj, par_threads(o->jobs));
	fprintf(stderr, "  %-8s %9s\n", "phase", "wall s");
	static const char *const pn[] = { "script", "derive", "build", "write" };
	for (int i = 0; i < 4; i++)
		fprintf(stderr, "  %-8s %9.2f\n", pn[i], phase[i]);
	fprintf(stderr, "  %-8s %9s %9s  %s\n", "stage", "sum s", "max s", "slowest variant");
	for (int st = 0; st < NSTAGE; st++) {
		double sum = 0, mx = 0;
		int at = -1;
		for (int i = 0; i < nj; i++) {
			sum += job[i].t[st];
			if (job[i].t[st] > mx) {
				mx = job[i].t[st];
				at = i;
			}
		}
		if (at < 0)
			continue;
		fprintf(stderr, "  %-8s %9.2f %9.2f  %s %s\n", stage_name[st], sum, mx, job[at].vs->mixer.name,
		        job[at].T->v->name);
	}
	int nk = 0, nb = 0, nc = 0, nr = 0;
	for (int i = 0; i < nj; i++) {
		nk += job[i].nkern;
		nb += job[i].kbuilt;
		nc += job[i].kcached;
		nr += job[i].kreused;
	}
	fprintf(stderr, "  kernels: %d built, %d from the old folder and %d from the cache for the %d of the modules "
	        "built (the rest shared)\n", nb, nr, nc, nk);
}

int gen_run(const char *script, const GenOpts *o, char *err, size_t errlen)
{
	VariantSet *sets = NULL;
	int nsets = 0;
	ScriptOpts so = { .lua_root = o->lua_root, .include = o->include, .ninclude = o->ninclude };
	double phase[4] = { 0 }, t0 = now_s();
	if (script_run_opts(script, &so, &sets, &nsets, err, errlen) != 0)
		return -1;
	phase[0] = now_s() - t0;
	/* the target's options and the output folder are checked before
	 * anything is built */
	Targets tl;
	if (parse_targets(o->sm, o->ptx, &tl, err, errlen) != 0 ||
	    (!o->check && (fs_mkdirs_for(o->outdir, err, errlen) != 0 ||
	                   fs_replaceable(o->outdir, gen_owns, "recur gen", err, errlen) != 0))) {
		script_free(sets, nsets);
		return -1;
	}
	json_t *man = manifest_head(o, &tl);
	json_t *mixers = json_object(), *variants = json_array();
	json_object_set_new(man, "mixers", mixers);
	json_object_set_new(man, "variants", variants);
	int total = 0;
	for (int si = 0; si < nsets; si++)
		total += sets[si].nvar;
	Job *job = calloc((size_t)total * (size_t)tl.n + 1, sizeof *job);
	CHECK(job);
	int nj = 0;
	t0 = now_s();
	int rc = derive_all(sets, nsets, job, &nj, mixers, &tl, err, errlen);
	double t1 = now_s();
	/* 2. IR, O3 and PTX, variants in parallel */
	Ptxas ptxas[GEN_MAXTGT];
	for (int i = 0; rc == 0 && o->cubin && i < tl.n; i++)
		rc = ptxas_open(&ptxas[i], tl.sm[i], err, errlen);
	if (rc == 0 && o->cubin)
		json_object_set_new(man, "ptxas", json_string(ptxas[0].version));
	if (rc == 0)
		rc = build_all(job, nj, o, o->cubin ? ptxas : NULL, err, errlen);
	double t2 = now_s();
	if (rc == 0)
		rc = o->check ? report_check(job, nj, &tl, err, errlen) : publish(job, nj, man, variants, o, err, errlen);
	phase[1] = t1 - t0;
	phase[2] = t2 - t1;
	phase[3] = now_s() - t2;
	if (rc == 0 && o->cache && !o->check)
		warn_cache(job, nj, o);
	if (rc == 0 && o->timings)
		print_timings(job, nj, phase, o);
	if (rc == 0 && o->verbose && !o->check)
		say_built(job, nj, o);
	for (int i = 0; i < nj; i++) {
		free(job[i].ptx);
		free(job[i].cubin);
		tmpl_free(job[i].T);
		ex_free(&job[i].mx.g);
	}
	free(job);
	json_decref(man);
	script_free(sets, nsets);
	return rc;
}
