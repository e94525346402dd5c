/* bwd_apply's shared memory: the layout of each region, and the choice
 * among the layouts that let two blocks share an SM (or, on a target
 * where none does, that fit one). */
#include "bwd.h"

/* The last nh segments of a chunk take h before their steps from the maps
 * of the chunk's steps (from its start) that pass A keeps, instead of
 * sweeping the gates forward again: their gates are evaluated twice (pass
 * A, reverse step) instead of three times. The other segments store h in
 * the same region (they run after), starting from pass A's map at their
 * boundary where those fit in budget bytes. */
static BwdSmem bwd_layout(const Tmpl *T, const PartMap *pm, int nh, int swz, int h16, int budget)
{
	int nbd = T->nbdproj, nseg = T->chunk / T->seg;
	BwdSmem s;
	s.nh = nh;
	s.h16 = h16;
	s.segf = SEG_X | SEG_DY | (swz ? SEG_SWZ : 0) | (seg_pj(T) ? SEG_PJ : 0);
	s.hm0 = T->chunk - nh * T->seg - 1;
	if (s.hm0 < 0)
		s.hm0 = 0;          /* step 0 starts from the chunk's start itself */
	int hbytes = nh > 0 ? (T->chunk - 1 - s.hm0) * (h16 ? MAP16_BYTES : MAP_BYTES) : 0, hseg = T->seg * TM_SLOTS * 128 * 4;
	if (nh < nseg && hbytes < hseg)
		hbytes = hseg;
	s.hprev = 0;
	s.dpa = s.hprev + hbytes;                           /* dproj, bf16 [step][proj][warp][16 t][16 j] */
	s.scal = s.dpa + T->seg * nbd * 4 * 512;
	s.wmat = s.scal + 4 * (pm->nscal ? pm->nscal : 1) * 4;
	s.wmat = (s.wmat + 15) & ~15;
	s.dW = s.wmat + nbd * WMAT_BYTES;                  /* dW^T accumulators, v4 [proj][kt][thread] */
	s.xs = s.dW + nbd * 8 * 128 * 16;                  /* staged x rows */
	s.dz = s.xs + seg_bytes(T, T->seg, s.segf);          /* token adjoints [S][16 rows][4 warps][nz] */
	s.tail = (s.dz + T->seg * 16 * 4 * T->ntokval * 4 + 15) & ~15;   /* the token stage (tok_tail.c) */
	s.total = s.tail + (tok_fused(T) ? tok_tail_bytes(T) : 0);
	/* pass A's maps at the inner boundaries of the segments that sweep,
	 * [boundary][slot][A, B][thread]: h at such a segment's start without
	 * sweeping the gates from the chunk start again, where they fit */
	s.bmap = s.total;
	s.nbm = nseg - nh - 1 > 0 ? nseg - nh - 1 : 0;
	if (s.bmap + s.nbm * MAP_BYTES > budget)
		s.nbm = 0;
	s.total = s.bmap + s.nbm * MAP_BYTES;
	return s;
}

/* gate evaluations per slot per chunk: pass A, then per segment the
 * reverse step, and where h is not read from maps the forward sweep and,
 * without a boundary map, the sweep from the chunk start to the segment */
static int bwd_gate_steps(const Tmpl *T, const BwdSmem *s)
{
	int nseg = T->chunk / T->seg, n = T->chunk;
	for (int sg = 0; sg < nseg; sg++) {
		n += T->seg;
		if (sg >= nseg - s->nh)
			continue;
		n += T->seg;
		if (sg > 0 && s->nbm == 0)
			n += sg * T->seg;
	}
	return n;
}

/* of the layouts that let two blocks share an SM, the one with the fewest
 * gate evaluations, then fp32 maps over 16-bit ones, then the least shared
 * memory. 16-bit maps fit twice as many steps: RG-LRU at chunk 8 keeps
 * all seven instead of the last segment's four, and its first segment no
 * longer sweeps the gates forward (20 -> 16 evaluations per chunk). A
 * chunk of more than 8 segments keeps the sweeps: its unrolled segments
 * already hold 250-255 registers, and with the maps' loads and the
 * swizzled addresses ptxas spills (RG-LRU chunk 64 at prefix 64 and 128),
 * for a tenth fewer evaluations. A mixer with a token stage keeps fp32
 * maps: its token adjoints sum over whole tokens, where h rounded to
 * 2^-11 before each step does not average out (SAMU at chunk 16, the one
 * that took 16-bit maps, missed 1e-2 on dbu: 1.2e-2 at 1x37x128, 100 times
 * chunk 8's error on the same inputs). With the projections apart on
 * sm_90 their rows are staged too (SEG_PJ), which no layout for three
 * blocks an SM holds: two blocks that wait once a segment beat three
 * that wait at every step, their loads a step ahead (bwd_apply 3.67 ->
 * 3.24 ms at 1x131072x4096, heads of 256, on an H100). */
/* the best layout within budget bytes (bwd_layout(.., 0, 0, 0, ..), the
 * least, where none is) */
static BwdSmem bwd_best(const Tmpl *T, const PartMap *pm, int budget)
{
	BwdSmem best = bwd_layout(T, pm, 0, 0, 0, budget);
	for (int h16 = 0; h16 < (T->ntokval > 0 ? 1 : 2); h16++)
		for (int nh = 1; nh <= T->chunk / T->seg && T->chunk / T->seg <= 8; nh++) {
			/* staged rows swizzled only where the padding is what does not fit */
			BwdSmem s = bwd_layout(T, pm, nh, 0, h16, budget);
			if (s.total > budget)
				s = bwd_layout(T, pm, nh, 1, h16, budget);
			if (s.total > budget)
				continue;
			int d = bwd_gate_steps(T, &s) - bwd_gate_steps(T, &best);
			if (d < 0 || (d == 0 && s.h16 == best.h16 && s.total < best.total))
				best = s;
		}
	return best;
}

/* Where no layout lets two blocks share an SM (sm_80's 164 KB, sm_86's
 * and sm_89's 100 KB against 112-115 KB at K = 64), the best that one
 * block may take (smem_1blk) */
BwdSmem bwd_smem(const Tmpl *T, const PartMap *pm)
{
	BwdSmem best = bwd_best(T, pm, smem_2blk(T));
	return best.total <= smem_2blk(T) ? best : bwd_best(T, pm, smem_1blk(T));
}
