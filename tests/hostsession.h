/* A runtime session on the host stand-in (hostcu.h) with the tensors of
 * one call: x, y, dy, dx bf16 [B][L][D], and the parameters and their
 * gradients: the one-parameter test mixer's fp32 [D], or (session_open_n)
 * as many as a generated mixer takes. Shared by the runtime tests that run
 * plans; included once by each. */
#ifndef RECUR_TEST_HOSTSESSION_H
#define RECUR_TEST_HOSTSESSION_H
#include "hostcu.h"

/* The test mixer's module: fwd(y, x, p, ws, ws, i32, i64),
 * bwd(dx, dy, grad p, ws, ws) and each(y, x, p, ws, ws, ws, i32), bodies
 * empty (the stand-in runs nothing) */
static const char toy_ptx[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry fwd(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u64 a3, .param .u64 a4,\n"
        "  .param .u32 a5, .param .u64 a6)\n{\n\tret;\n}\n"
        ".visible .entry bwd(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u64 a3, .param .u64 a4)\n"
        "{\n\tret;\n}\n"
        ".visible .entry each(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u64 a3, .param .u64 a4,\n"
        "  .param .u64 a5, .param .u32 a6)\n{\n\tret;\n}\n";

#define HS_MAXPARAM 8

typedef struct {
	recur_rt *rt;
	recur_manifest *m;
	CUdeviceptr x, y, dy, dx, p[HS_MAXPARAM], g[HS_MAXPARAM];
	int nparam;
	recur_io io;
} Session;

/* the tensors at shape s, nparam parameters and gradients of pbytes each,
 * and S->io over them */
static int io_alloc(Session *S, recur_shape s, int nparam, size_t pbytes, char *err, size_t n)
{
	size_t bytes;
	if (nparam < 1 || nparam > HS_MAXPARAM) {
		snprintf(err, n, "io_alloc: %d parameters, at most %d", nparam, HS_MAXPARAM);
		return -1;
	}
	S->nparam = nparam;
	if (recur_tensor_bytes(s, 2, &bytes, err, n))
		return -1;
	if (recur_alloc(S->rt, bytes, &S->x, err, n) || recur_alloc(S->rt, bytes, &S->y, err, n) ||
	    recur_alloc(S->rt, bytes, &S->dy, err, n) || recur_alloc(S->rt, bytes, &S->dx, err, n))
		return -1;
	for (int i = 0; i < nparam; i++)
		if (recur_alloc(S->rt, pbytes, &S->p[i], err, n) || recur_alloc(S->rt, pbytes, &S->g[i], err, n))
			return -1;
	S->io = (recur_io){.x = S->x, .y = S->y, .dy = S->dy, .dx = S->dx, .params = S->p, .grads = S->g};
	return 0;
}

static void io_free(Session *S)
{
	CUdeviceptr *b[4] = {&S->x, &S->y, &S->dy, &S->dx};
	for (int i = 0; i < 4; i++) {
		recur_free(S->rt, *b[i]);
		*b[i] = 0;
	}
	for (int i = 0; i < S->nparam; i++) {
		recur_free(S->rt, S->p[i]);
		recur_free(S->rt, S->g[i]);
		S->p[i] = S->g[i] = 0;
	}
}

/* the runtime on the stand-in, the manifest at path, the tensors at s with
 * nparam parameters of pbytes each */
static inline int session_open_n(Session *S, const char *path, recur_shape s, int nparam, size_t pbytes, char *err,
                                 size_t n)
{
	if (hc_open(&S->rt, err, n) || recur_manifest_load(path, &S->m, err, n) || io_alloc(S, s, nparam, pbytes, err, n))
		return -1;
	return 0;
}

/* the same for the one-parameter test mixer (toy_ptx): fp32 [D] */
static inline int session_open(Session *S, const char *path, recur_shape s, char *err, size_t n)
{
	return session_open_n(S, path, s, 1, (size_t)s.D * 4, err, n);
}

/* session_open, then variant name of its manifest loaded into *v */
static inline int session_open_variant(Session *S, const char *path, recur_shape s, const char *name,
                                       recur_variant **v, char *err, size_t n)
{
	return session_open(S, path, s, err, n) || recur_variant_load(S->rt, S->m, name, v, err, n) ? -1 : 0;
}

/* what session_open made, whatever part of it succeeded */
static inline void session_close(Session *S)
{
	if (S->rt)
		io_free(S);
	recur_manifest_free(S->m);
	recur_rt_close(S->rt);
}

#endif
