/* The GPU side of bench and calibrate (see harness.h). */
#include "harness.h"
#include "docmarks.h"
#include "args.h"
#include "pinit.h"
#include "rng.h"
#include "stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prefixes err (already holding the runtime's message) with the context. */
static int fail(char *err, size_t errlen, const char *ctx, const char *call)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s: %s: %s", ctx, call, err);
	snprintf(err, errlen, "%s", tmp);
	return -1;
}

int harness_open(Harness *h, recur_rt *rt, size_t flush_bytes, char *err, size_t errlen)
{
	memset(h, 0, sizeof *h);
	h->rt = rt;
	h->flush_bytes = flush_bytes;
	if (recur_alloc(rt, flush_bytes, &h->flush, err, errlen))
		return fail(err, errlen, "harness", "allocating the L2 flush buffer");
	for (int i = 0; i < 2; i++)
		if (recur_event_create(rt, &h->ev[i], err, errlen)) {
			harness_close(h);
			return fail(err, errlen, "harness", "creating a timing event");
		}
	return 0;
}

void harness_close(Harness *h)
{
	if (!h->rt)
		return;
	for (int i = 0; i < 2; i++)
		recur_event_destroy(h->rt, h->ev[i]);
	recur_free(h->rt, h->flush);
	memset(h, 0, sizeof *h);
}

int harness_flush(Harness *h, char *err, size_t errlen)
{
	h->flush_value++;
	return recur_memset_u8(h->rt, h->flush, h->flush_value, h->flush_bytes, err, errlen);
}

/* ---- buffers ---- */

void hbufs_label(HBufs *b, const char *mixer, const char *variant)
{
	snprintf(b->what, sizeof b->what, "%s %s %dx%dx%d", mixer ? mixer : "(no mixer)",
	         variant ? variant : "(no variant)", b->s.B, b->s.L, b->s.D);
}

/* Standard normals as bf16, both values of each Box-Muller pair used: the
 * largest shapes need 2^28 of them, and host time is device time held. */
static void fill_normal_bf16(uint16_t *h, size_t n, Rng *r)
{
	for (size_t i = 0; i < n; i += 2) {
		double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r);
		double rad = sqrt(-2.0 * log(u1)), th = 2.0 * 3.14159265358979323846 * u2;
		h[i] = bf16_bits((float)(rad * cos(th)));
		if (i + 1 < n)
			h[i + 1] = bf16_bits((float)(rad * sin(th)));
	}
}

static int alloc_fill_bf16(Harness *h, HBufs *b, CUdeviceptr *p, uint16_t *host, size_t ne, Rng *r,
                           const char *name, char *err, size_t errlen)
{
	char call[96];
	snprintf(call, sizeof call, "allocating %s (%zu bytes)", name, ne * 2);
	if (recur_alloc(h->rt, ne * 2, p, err, errlen))
		return fail(err, errlen, b->what, call);
	fill_normal_bf16(host, ne, r);
	snprintf(call, sizeof call, "copying %s to the device", name);
	if (recur_memcpy_htod(h->rt, *p, host, ne * 2, err, errlen))
		return fail(err, errlen, b->what, call);
	return 0;
}

int hbufs_inputs(Harness *h, const recur_manifest *m, int vi, recur_shape s, uint64_t seed,
                 HBufs *b, char *err, size_t errlen)
{
	memset(b, 0, sizeof *b);
	b->s = s;
	hbufs_label(b, recur_manifest_variant_mixer(m, vi), recur_manifest_variant_name(m, vi));
	size_t bytes;
	if (recur_tensor_bytes(s, 2, &bytes, err, errlen))
		return fail(err, errlen, b->what, "sizing x and dy");
	size_t ne = bytes / 2;
	b->np = recur_param_count(m, vi);
	if (b->np < 0 || b->np > H_MAXP) {
		snprintf(err, errlen, "%s: %d parameters (at most %d)", b->what, b->np, H_MAXP);
		return -1;
	}
	uint16_t *host = malloc(ne * 2);
	if (!host) {
		snprintf(err, errlen, "%s: out of host memory for %zu elements", b->what, ne);
		return -1;
	}
	Rng r;
	rng_seed(&r, seed);
	int rc = alloc_fill_bf16(h, b, &b->x, host, ne, &r, "x", err, errlen);
	if (!rc)
		rc = alloc_fill_bf16(h, b, &b->dy, host, ne, &r, "dy", err, errlen);
	free(host);
	if (rc)
		return -1;
	b->input_bytes = 2 * ne * 2;
	for (int p = 0; p < b->np; p++) {
		const char *pn = recur_param_name(m, vi, p);
		long n = recur_param_elems(m, vi, p, s, err, errlen);
		if (n < 0)
			return fail(err, errlen, b->what, "counting parameter elements");
		double a, bb;
		const char *kind = recur_param_init(m, vi, p, s, &a, &bb);
		float *t = malloc((size_t)(n ? n : 1) * sizeof *t);
		if (!t || !kind) {
			free(t);
			snprintf(err, errlen, "%s: parameter %s: %s", b->what, pn ? pn : "(unnamed)",
			         t ? "its init cannot be evaluated at this shape (recur_param_init)" : "out of host memory");
			return -1;
		}
		for (long i = 0; i < n; i++)
			t[i] = (float)pinit_value(kind, a, bb, &r);
		size_t bytes = (size_t)n * 4;
		char call[160];
		snprintf(call, sizeof call, "parameter %s (%zu bytes)", pn, bytes);
		rc = recur_alloc(h->rt, bytes, &b->p[p], err, errlen) ||
		     recur_memcpy_htod(h->rt, b->p[p], t, bytes, err, errlen) ||
		     recur_alloc(h->rt, bytes, &b->g[p], err, errlen) ||
		     recur_memset_u8(h->rt, b->g[p], 0, bytes, err, errlen);
		free(t);
		if (rc)
			return fail(err, errlen, b->what, call);
		b->parameters += n;
		b->input_bytes += 2 * bytes;
	}
	if (recur_sync(h->rt, err, errlen))
		return fail(err, errlen, b->what, "synchronising after uploading the inputs");
	return 0;
}

int hbufs_outputs(Harness *h, HBufs *b, char *err, size_t errlen)
{
	size_t bytes;
	if (recur_tensor_bytes(b->s, 2, &bytes, err, errlen))
		return fail(err, errlen, b->what, "sizing y and dx");
	if (!b->y && recur_alloc(h->rt, bytes, &b->y, err, errlen))
		return fail(err, errlen, b->what, "allocating y");
	if (!b->dx && recur_alloc(h->rt, bytes, &b->dx, err, errlen))
		return fail(err, errlen, b->what, "allocating dx");
	return 0;
}

void hbufs_free_outputs(Harness *h, HBufs *b)
{
	recur_free(h->rt, b->y);
	recur_free(h->rt, b->dx);
	b->y = b->dx = 0;
}

/* the marks host[0..L) of one row as document offsets, uploaded as int32 into b->cu */
static int upload_docs(Harness *h, HBufs *b, const unsigned char *marks, char *err, size_t errlen)
{
	int32_t *cu = malloc(((size_t)b->s.L + 1) * sizeof *cu);
	if (!cu)
		return fail(err, errlen, b->what, "out of host memory for the document offsets");
	int n = docmarks_offsets(marks, b->s.L, cu);
	int rc = recur_alloc(h->rt, ((size_t)n + 1) * 4, &b->cu, err, errlen) ||
	         recur_memcpy_htod(h->rt, b->cu, cu, ((size_t)n + 1) * 4, err, errlen);
	free(cu);
	b->st.cu_seqlens = b->cu;
	b->st.ndocs = n;
	return rc;
}

int hbufs_state(Harness *h, HBufs *b, double resets, int states, int packed, uint64_t seed, char *err,
                size_t errlen)
{
	Rng r;
	rng_seed(&r, seed);
	if (packed && b->s.B != 1)
		return fail(err, errlen, b->what, "packed documents (cu_seqlens) take one row: B must be 1");
	size_t nt = (size_t)b->s.B * (size_t)b->s.L, ns = (size_t)b->s.B * (size_t)b->s.D;
	size_t nh = nt;
	unsigned char *host = malloc(nh);
	if (!host)
		return fail(err, errlen, b->what, "out of host memory for the sequence state");
	int rc = 0;
	if (resets > 0) {
		for (size_t i = 0; i < nt; i++)
			host[i] = rng_uniform(&r) < resets;
		if (packed) {
			rc = upload_docs(h, b, host, err, errlen);
			ns = (size_t)b->st.ndocs * (size_t)b->s.D;
		} else {
			rc = recur_alloc(h->rt, nt, &b->reset, err, errlen) || recur_memcpy_htod(h->rt, b->reset, host, nt, err, errlen);
			b->st.reset = b->reset;
		}
	}
	free(host);
	float *f = rc ? NULL : malloc(ns * sizeof *f);
	if (!rc && !f)
		return fail(err, errlen, b->what, "out of host memory for the sequence state");
	/* h0, dhT given (random), hT, dh0 taken: h0 and dh0 with states; dhT
	 * and hT with states or packed documents, unless without final states */
	CUdeviceptr *d[4] = {&b->h0, &b->dhT, &b->hT, &b->dh0};
	int final = (states || packed) && packed != HB_PACKED_NOFINAL;
	for (int k = 0; f && !rc && k < 4; k++) {
		if (!(k == 1 || k == 2 ? final : states))
			continue;
		for (size_t i = 0; i < ns; i++)
			f[i] = k < 2 ? (float)rng_normal(&r) : 0.0f;
		rc = recur_alloc(h->rt, ns * 4, d[k], err, errlen) || recur_memcpy_htod(h->rt, *d[k], f, ns * 4, err, errlen);
	}
	free(f);
	b->st.h0 = b->h0;
	b->st.dhT = b->dhT;
	b->st.hT = b->hT;
	b->st.dh0 = b->dh0;
	return rc ? fail(err, errlen, b->what, "uploading the sequence state") : 0;
}

int hbufs_map(Harness *h, HBufs *b, char *err, size_t errlen)
{
	size_t ns = (size_t)b->s.B * (size_t)b->s.D;   /* hbufs_inputs checked B*L*D */
	if (recur_alloc(h->rt, ns * 4, &b->mla, err, errlen) || recur_alloc(h->rt, ns * 4, &b->mh, err, errlen))
		return fail(err, errlen, b->what, "allocating the row's map");
	b->st.map_loga = b->mla;
	b->st.map_h = b->mh;
	return 0;
}

void hbufs_free(Harness *h, HBufs *b)
{
	hbufs_free_outputs(h, b);
	CUdeviceptr st[8] = {b->reset, b->h0, b->hT, b->dhT, b->dh0, b->cu, b->mla, b->mh};
	for (int k = 0; k < 8; k++)
		recur_free(h->rt, st[k]);
	recur_free(h->rt, b->x);
	recur_free(h->rt, b->dy);
	for (int p = 0; p < b->np; p++) {
		recur_free(h->rt, b->p[p]);
		recur_free(h->rt, b->g[p]);
	}
	memset(b, 0, sizeof *b);
}

recur_io hbufs_io(const HBufs *b)
{
	int given = b->reset || b->h0 || b->hT || b->cu;
	return (recur_io){ .x = b->x, .y = b->y, .dy = b->dy, .dx = b->dx, .params = b->p, .grads = b->g,
	                   .state = given ? &b->st : NULL };
}

/* ---- running and timing ---- */

static int pass(recur_variant *v, HBufs *b, int region, char *err, size_t errlen)
{
	recur_io io = hbufs_io(b);
	if (region != H_BWD && recur_forward(v, b->s, &io, 0, err, errlen))
		return fail(err, errlen, b->what, "recur_forward");
	if (region != H_FWD && recur_backward(v, b->s, &io, 0, err, errlen))
		return fail(err, errlen, b->what, "recur_backward");
	return 0;
}

int harness_run(Harness *h, recur_variant *v, HBufs *b, char *err, size_t errlen)
{
	if (pass(v, b, H_FB, err, errlen))
		return -1;
	if (recur_sync(h->rt, err, errlen))
		return fail(err, errlen, b->what, "synchronising after forward + backward");
	return 0;
}

int harness_time(Harness *h, recur_variant *v, HBufs *b, int region, double *ms, char *err, size_t errlen)
{
	static const char *const rname[3] = { "forward", "backward", "forward + backward" };
	char ctx[300];
	snprintf(ctx, sizeof ctx, "%s (timing %s)", b->what, rname[region]);
	float t = 0;
	if (harness_flush(h, err, errlen))
		return fail(err, errlen, ctx, "flushing the L2");
	if (recur_event_record(h->rt, h->ev[0], 0, err, errlen))
		return fail(err, errlen, ctx, "recording the start event");
	if (pass(v, b, region, err, errlen))
		return -1;
	if (recur_event_record(h->rt, h->ev[1], 0, err, errlen))
		return fail(err, errlen, ctx, "recording the end event");
	if (recur_event_elapsed_ms(h->rt, h->ev[0], h->ev[1], &t, err, errlen))
		return fail(err, errlen, ctx, "reading the elapsed time");
	*ms = t;
	return 0;
}

int harness_memory(Harness *h, recur_variant *v, HBufs *b, long long *delta, char *err, size_t errlen)
{
	hbufs_free_outputs(h, b);
	/* workspaces are cached by the variant: drop them so that the forward
	 * below allocates them inside the window */
	if (recur_variant_trim(v, err, errlen))
		return fail(err, errlen, b->what, "recur_variant_trim");
	size_t before = recur_mem_current(h->rt);
	recur_mem_reset_peak(h->rt);
	if (hbufs_outputs(h, b, err, errlen) || harness_run(h, v, b, err, errlen))
		return -1;
	*delta = (long long)(recur_mem_peak(h->rt) - before);
	return 0;
}

static size_t count_bad(const uint16_t *x, size_t n, size_t *first)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if ((x[i] & 0x7f80) == 0x7f80 && bad++ == 0)   /* bf16 exponent all ones: Inf or NaN */
			*first = i;
	return bad;
}

int harness_finite(Harness *h, HBufs *b, char *why, size_t n)
{
	size_t bytes;
	if (recur_tensor_bytes(b->s, 2, &bytes, why, n))
		return fail(why, n, b->what, "sizing the outputs");
	size_t ne = bytes / 2;
	uint16_t *host = malloc(bytes);
	if (!host) {
		snprintf(why, n, "%s: out of host memory checking the outputs", b->what);
		return -1;
	}
	const struct { const char *name; CUdeviceptr p; } t[2] = { { "y", b->y }, { "dx", b->dx } };
	int rc = 0;
	for (int k = 0; k < 2 && rc == 0; k++) {
		if (recur_memcpy_dtoh(h->rt, host, t[k].p, ne * 2, why, n)) {
			rc = fail(why, n, b->what, "copying the outputs back");
			break;
		}
		size_t first = 0, bad = count_bad(host, ne, &first);
		if (bad) {
			snprintf(why, n, "%s holds %zu non-finite values of %zu (first at element %zu)", t[k].name, bad, ne, first);
			rc = 1;
		}
	}
	free(host);
	return rc;
}

/* ---- the bandwidth floor ---- */

#define BW_SAMPLES 5

/* the median time of a copy of n bytes from src to dst */
static int time_bw(Harness *h, CUdeviceptr dst, CUdeviceptr src, size_t n, double *ms, char *err, size_t errlen)
{
	double t[BW_SAMPLES];
	for (int i = -1; i < BW_SAMPLES; i++) {   /* i = -1: warm-up */
		float f;
		if (recur_event_record(h->rt, h->ev[0], 0, err, errlen))
			return -1;
		if (recur_memcpy_dtod(h->rt, dst, src, n, 0, err, errlen))
			return -1;
		if (recur_event_record(h->rt, h->ev[1], 0, err, errlen) ||
		    recur_event_elapsed_ms(h->rt, h->ev[0], h->ev[1], &f, err, errlen))
			return -1;
		if (i >= 0)
			t[i] = f;
	}
	Stats s;
	stats_compute(t, BW_SAMPLES, &s);
	*ms = s.median;
	return 0;
}

int harness_bandwidth(Harness *h, ResFloor *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	/* 1 GiB copied, halved while the device refuses */
	size_t n = (size_t)1 << 30;
	CUdeviceptr a = 0, b = 0;
	for (; n >= ((size_t)64 << 20); n /= 2) {
		if (recur_alloc(h->rt, n, &a, err, errlen) == 0) {
			if (recur_alloc(h->rt, n, &b, err, errlen) == 0)
				break;
			recur_free(h->rt, a);
			a = 0;
		}
	}
	if (!a)
		return fail(err, errlen, "bandwidth floor", "allocating the copy buffers");
	double ms = 0;
	int rc = recur_memset_u8(h->rt, a, 0x3c, n, err, errlen) || time_bw(h, b, a, n, &ms, err, errlen);
	recur_free(h->rt, a);
	recur_free(h->rt, b);
	if (rc)
		return fail(err, errlen, "bandwidth floor", "timing a device-to-device copy");
	if (ms <= 0) {
		snprintf(err, errlen, "bandwidth floor: the timed region took %g ms", ms);
		return -1;
	}
	snprintf(f->key, sizeof f->key, "copy_bandwidth_gb_per_s");
	snprintf(f->method, sizeof f->method, "cuMemcpyDtoDAsync of %zu MiB, median of %d (events); "
	         "bytes counted = read + write", n >> 20, BW_SAMPLES);
	f->gb_per_s = 2.0 * n / (ms * 1e6);
	return 0;
}

/* ---- environment and shapes ---- */

void harness_driver_version(char *out, size_t n)
{
	snprintf(out, n, "unknown");
	FILE *f = fopen("/proc/driver/nvidia/version", "r");
	if (!f)
		return;
	char line[512];
	if (fgets(line, sizeof line, f)) {
		/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."
		 * (open modules word it differently): the first token like N.N[.N] */
		for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
			int a, b;
			char rest;
			if (sscanf(tok, "%d.%d%c", &a, &b, &rest) >= 2 && strspn(tok, "0123456789.") == strlen(tok)) {
				snprintf(out, n, "%s", tok);
				break;
			}
		}
	}
	fclose(f);
}

static void copy_info(char *dst, size_t n, const recur_manifest *m, const char *key)
{
	const char *s = recur_manifest_info(m, key);
	snprintf(dst, n, "%s", s ? s : "");
}

void harness_env(recur_rt *rt, const recur_manifest *m, ResEnv *e)
{
	memset(e, 0, sizeof *e);
	if (recur_rt_device_name(rt, e->gpu, sizeof e->gpu))
		snprintf(e->gpu, sizeof e->gpu, "unknown");
	harness_driver_version(e->driver, sizeof e->driver);
	if (recur_rt_driver_version(rt, &e->cuda_api))
		e->cuda_api = 0;
	copy_info(e->llvm, sizeof e->llvm, m, "llvm");
	copy_info(e->ptx_isa, sizeof e->ptx_isa, m, "ptx_isa");
	copy_info(e->target, sizeof e->target, m, "target");
	copy_info(e->generator, sizeof e->generator, m, "generator");
}

/* the parser is the command line's own (args.c); these name the harness's limits */
int harness_parse_shapes(const char *list, recur_shape *out, int max, char *err, size_t errlen)
{
	return cli_parse_shapes(list, out, max, err, errlen);
}

int harness_add_shapes(const char *list, recur_shape *out, int *n, int max, char *err, size_t errlen)
{
	recur_shape t[H_MAXSHAPES];
	int k = harness_parse_shapes(list, t, H_MAXSHAPES, err, errlen);
	if (k < 0)
		return -1;
	if (*n + k > max) {
		snprintf(err, errlen, "more than %d shapes in all", max);
		return -1;
	}
	memcpy(out + *n, t, (size_t)k * sizeof *t);
	*n += k;
	return 0;
}

int harness_default_shapes(recur_shape *out)
{
	char err[256];
	return harness_parse_shapes(H_DEFAULT_SHAPES, out, H_MAXSHAPES, err, sizeof err);
}

void harness_kernel(const recur_variant *v, const recur_launch_info *li, ResKernel *k)
{
	snprintf(k->kernel, sizeof k->kernel, "%s", li->kernel);
	k->ms = li->ms;
	memcpy(k->grid, li->grid, sizeof k->grid);
	k->block = li->block;
	k->dyn_smem = li->dyn_smem;
	k->blocks_per_sm = li->blocks_per_sm;
	k->cluster = li->cluster;
	k->max_clusters = li->max_clusters;
	for (int i = 0; i < recur_variant_nkernels(v); i++) {
		recur_kernel_info I;
		recur_variant_kernel(v, i, &I);
		if (!strcmp(I.name, li->kernel)) {
			k->registers = I.registers;
			k->local_bytes = I.local_bytes;
			k->static_smem = I.static_smem;
			k->max_threads = I.max_threads;
			return;
		}
	}
}
