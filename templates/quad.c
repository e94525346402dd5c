/* The reduce and apply kernels' shared memory and lanes (quad_smem,
 * quad_lanes): the quads' maps, the segment buffers and, where the kernel
 * runs the projections, the weights. */
#include "tmpl.h"
#include "diag.h"

/* quad maps [quad][64][2] floats, the segment buffers, then the weights */
static int quad_seg_at(const Tmpl *T) { return T->quads * 64 * 8; }
static int quad_wmat_at(const Tmpl *T, int flags) { return quad_seg_at(T) + T->quads * seg_bytes(T, seg_len(T), flags); }

int quad_smem(const Tmpl *T, int flags, int proj) { return quad_wmat_at(T, flags) + wmat_bytes(T, proj); }

int kern_proj(const Tmpl *T, int node)
{
	return gates_inline(T) || (T->nbdproj > 0 && ex_depends(&T->mx->g, node, EX_PROJ, -1));
}

void quad_lanes(Tmpl *T, Lanes *ln, const KSig *sig, int segn, int flags)
{
	lanes_init(T, ln, sig, T->k.proj_inline);
	seg_enable(T, ln, quad_seg_at(T), segn, flags);
	if (wmat_bytes(T, T->k.proj_inline))
		wmat_stage(T, ln, quad_wmat_at(T, flags));
}
