/* Workspaces: how many bytes each of a variant's workspaces takes at a
 * shape, and where each lies -- in the variant's own buffers (plan.c's
 * arena of the zeroed ones) or in the two regions a caller provides
 * (recur_forward_ws / recur_backward_ws). Sizes come from the manifest's
 * expressions in checked arithmetic: nothing here touches the GPU.
 */
#include "rt_impl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RT_ARENA_ALIGN == RECUR_WS_ALIGN, "a caller's region is aligned as the variant's own arena");

/* Which workspaces a pass owns (allocates and zeroes). */
int rt_ws_in_pass(rt_life life, int pass)
{
	if (life == RT_LIFE_EACH)
		return 1;
	return pass == RT_FWD ? life != RT_LIFE_BACKWARD : life == RT_LIFE_BACKWARD;
}

/* A workspace of the backward of a variant that has none (a decode step)
 * takes no room anywhere: nothing would use it. */
static int ws_unused(const rt_vdesc *d, const rt_ws *w)
{
	return w->life == RT_LIFE_BACKWARD && d->nlaunch[RT_BWD] == 0;
}

int rt_ws_bytes(const rt_vdesc *d, int i, const ShapeVars *sv, const char *shape, size_t *out, char *err,
                size_t errlen)
{
	const rt_ws *w = &d->ws[i];
	int64_t bytes;
	char e[512];
	if (shapex_eval(w->bytes, sv, &bytes, e, sizeof e))
		return rt_vfail(err, errlen, "variant %s: workspace %s at %s: %s", d->name, w->name, shape, e);
	if (bytes < 0)
		return rt_vfail(err, errlen, "variant %s: workspace %s at %s: bytes \"%s\" = %lld is negative",
		                d->name, w->name, shape, w->bytes, (long long)bytes);
	*out = (size_t)bytes;
	return 0;
}

/* *end rounded up to RT_ARENA_ALIGN (the offset of the next workspace,
 * in *off), then bytes added. Checked: a sum past SIZE_MAX would wrap the
 * arena to a small one, and the kernels would get pointers far outside it. */
static int arena_add(size_t *end, size_t bytes, size_t *off)
{
	size_t a;
	if (__builtin_add_overflow(*end, (size_t)RT_ARENA_ALIGN - 1, &a))
		return -1;
	a = a / RT_ARENA_ALIGN * RT_ARENA_ALIGN;
	if (__builtin_add_overflow(a, bytes, end))
		return -1;
	*off = a;
	return 0;
}

/* Offsets of the zeroed workspaces of both passes in the arena, the
 * forward's first; *end its size (whole 32-bit words, for one
 * cuMemsetD32Async) and *bwd where the backward's part starts (SIZE_MAX:
 * none). Offsets are aligned only where a workspace starts: the arena of
 * one workspace is exactly its size. */
int rt_arena_layout(const rt_vdesc *d, rt_wsbuf *ws, const ShapeVars *sv, const char *shape, size_t *end,
                    size_t *bwd, char *err, size_t errlen)
{
	*end = 0;
	*bwd = SIZE_MAX;
	for (int p = RT_FWD; p <= RT_BWD; p++)
		for (int i = 0; i < d->nws; i++) {
			if (!d->ws[i].zero || !rt_ws_in_pass(d->ws[i].life, p))
				continue;
			if (ws_unused(d, &d->ws[i])) {
				ws[i].need = ws[i].off = 0;
				continue;
			}
			if (rt_ws_bytes(d, i, sv, shape, &ws[i].need, err, errlen))
				return -1;
			if (!ws[i].need)
				continue;
			size_t before = *end;
			if (arena_add(end, ws[i].need, &ws[i].off))
				return rt_vfail(err, errlen, "variant %s: zeroed workspace %s (%zu bytes) at %s, placed after %zu "
				                "bytes of the others, makes an arena larger than any size (2^64 bytes)", d->name,
				                d->ws[i].name, ws[i].need, shape, before);
			if (p == RT_BWD && *bwd == SIZE_MAX)
				*bwd = ws[i].off;
		}
	if (*end % 4 && __builtin_add_overflow(*end, 4 - *end % 4, end))
		return rt_vfail(err, errlen, "variant %s: the zeroed workspaces at %s make an arena larger than any size "
		                "(2^64 bytes)", d->name, shape);
	return 0;
}


int rt_ws_region(const rt_ws *w)
{
	return w->zero || w->life == RT_LIFE_SAVED ? RT_REGION_SAVED : RT_REGION_SCRATCH;
}

int rt_caller_layout(const rt_vdesc *d, rt_wsbuf *ws, const ShapeVars *sv, const char *shape, rt_regions *r,
                     char *err, size_t errlen)
{
	if (rt_arena_layout(d, ws, sv, shape, &r->zend, &r->zbwd, err, errlen))
		return -1;
	if (r->zbwd == SIZE_MAX)
		r->zbwd = r->zend;   /* the backward has nothing to clear */
	r->saved = r->zend;
	r->scratch[RT_FWD] = r->scratch[RT_BWD] = 0;
	/* the workspaces of life "each" first, at the same offsets in both
	 * passes' scratch (one offset a workspace), then the others */
	for (int each = 1; each >= 0; each--)
		for (int i = 0; i < d->nws; i++) {
			const rt_ws *w = &d->ws[i];
			if (w->zero || (w->life == RT_LIFE_EACH) != each)
				continue;   /* in the arena, or not in this round */
			if (ws_unused(d, w)) {
				ws[i].need = ws[i].off = 0;
				continue;
			}
			size_t *end = rt_ws_region(w) == RT_REGION_SAVED ? &r->saved
			            : &r->scratch[w->life == RT_LIFE_BACKWARD ? RT_BWD : RT_FWD];
			if (rt_ws_bytes(d, i, sv, shape, &ws[i].need, err, errlen))
				return -1;
			size_t before = *end;
			if (arena_add(end, ws[i].need, &ws[i].off))
				return rt_vfail(err, errlen, "variant %s: workspace %s (%zu bytes) at %s, placed after %zu bytes "
				                "of its region, makes a region larger than any size (2^64 bytes)", d->name, w->name,
				                ws[i].need, shape, before);
			if (each)   /* the backward's scratch starts after it too */
				r->scratch[RT_BWD] = r->scratch[RT_FWD];
		}
	return 0;
}

int recur_workspace_sizes(const recur_manifest *m, int variant, recur_shape s, recur_ws_sizes *z, char *err,
                          size_t errlen)
{
	if (!m || !z)
		return rt_vfail(err, errlen, "recur_workspace_sizes: the %s is NULL", m ? "result" : "manifest");
	if (variant < 0 || variant >= m->nvariant)
		return rt_vfail(err, errlen, "recur_workspace_sizes: variant index %d, but the manifest has %d variants",
		                variant, m->nvariant);
	const rt_vdesc *d = &m->variant[variant];
	char why[768], shape[64];
	ShapeVars sv;
	rt_shape_name(s, shape, sizeof shape);
	if (rt_shape_vars(m, variant, s, 1, &sv, why, sizeof why))
		return rt_vfail(err, errlen, "variant %s refuses %s", d->name, why);
	rt_wsbuf *ws = calloc((size_t)d->nws + 1, sizeof *ws);
	if (!ws)
		return rt_vfail(err, errlen, "variant %s: out of host memory", d->name);
	rt_regions r;
	int rc = rt_caller_layout(d, ws, &sv, shape, &r, err, errlen);
	free(ws);
	if (rc)
		return -1;
	z->saved = r.saved;
	z->scratch = r.scratch[RT_FWD] > r.scratch[RT_BWD] ? r.scratch[RT_FWD] : r.scratch[RT_BWD];
	return 0;
}
