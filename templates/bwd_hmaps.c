/* bwd_apply's h before each step: the words of its per-thread regions,
 * pass A's maps from the chunk start (fp32, or 16-bit pairs with a range
 * test per step and warp) and the h they give. */
#include "bwd.h"

/* this thread's word w of a [word][thread] region at base */
static LLVMValueRef thr_word(Bwd *bw, int base, LLVMValueRef w)
{
	Irb *I = &bw->T->I;
	return iadd(I, ci32(I, base), imul(I, iadd(I, imul(I, w, ci32(I, 128)), bw->ln->tid), ci32(I, 4)));
}

/* word ab (0 = A, 1 = B) of slot s's map k in a region of maps at base */
static LLVMValueRef map_word(Bwd *bw, int base, LLVMValueRef k, int s, int ab)
{
	Irb *I = &bw->T->I;
	return thr_word(bw, base, iadd(I, imul(I, k, ci32(I, TM_SLOTS * 2)), ci32(I, s * 2 + ab)));
}

/* the map at inner boundary k (the start of segment k + 1) */
LLVMValueRef bmap_at(Bwd *bw, LLVMValueRef k, int s, int ab) { return map_word(bw, bw->sm.bmap, k, s, ab); }
/* the map of the chunk's steps 0 .. hm0 + k */
LLVMValueRef hmap_at(Bwd *bw, LLVMValueRef k, int s, int ab) { return map_word(bw, bw->sm.hprev, k, s, ab); }

/* slot s's word of record k in the hprev region, [k][slot][thread]: h
 * before a segment's step k, or (h16) the map of the chunk's steps
 * 0 .. hm0 + k as one 16-bit pair */
LLVMValueRef hprev_at(Bwd *bw, LLVMValueRef k, int s)
{
	Irb *I = &bw->T->I;
	return thr_word(bw, bw->sm.hprev, iadd(I, imul(I, k, ci32(I, TM_SLOTS)), ci32(I, s)));
}

/* A map (A, B) in 32 bits: an fp16 pair (A high, B low), each value
 * rounded once (2^-11) and never accumulated. Where either would pass
 * fp16's range (above 6e4: B is h from a zero start, so large
 * activations), a bf16 pair instead, marked by the sign bit: A, a product
 * of exponentials and resets' zeros, is never negative, so the bit is
 * free. Such a value loses precision (2^-8), never range. */
static LLVMValueRef map16_pack(Irb *I, LLVMValueRef A, LLVMValueRef B)
{
	LLVMValueRef big = f16_overflow(I, A, B);
	LLVMValueRef wide = LLVMBuildOr(I->b, pack_bf16x2(I, B, A), ci32(I, (int64_t)0x80000000u), "");
	return LLVMBuildSelect(I->b, big, wide, pack_f16x2(I, B, A), "");
}

/* pass A keeps the map of the chunk's steps 0 .. hm0 + k, every slot. The
 * 16-bit words are stored as fp16 pairs with one running max of the
 * values for the range test, and rewritten through map16_pack only in a
 * warp where one passed it: the same words as map16_pack's everywhere,
 * for 2 instructions per pair where the test per value took 5. */
void hmap_store(Bwd *bw, LLVMValueRef k, const Maps *fm)
{
	Irb *I = &bw->T->I;
	LLVMValueRef A[TM_SLOTS], B[TM_SLOTS];
	for (int s = 0; s < TM_SLOTS; s++) {
		A[s] = var_get(I, fm->A[s]);
		B[s] = var_get(I, fm->B[s]);
	}
	if (!bw->sm.h16) {
		for (int s = 0; s < TM_SLOTS; s++) {
			st(I, A[s], smem_ptr(I, hmap_at(bw, k, s, 0)), 4);
			st(I, B[s], smem_ptr(I, hmap_at(bw, k, s, 1)), 4);
		}
		return;
	}
	LLVMValueRef big = NULL;
	for (int s = 0; s < TM_SLOTS; s++) {
		st(I, pack_f16x2(I, B[s], A[s]), smem_ptr(I, hprev_at(bw, k, s)), 4);
		LLVMValueRef m = fmaxnum_(I, fabs_(I, A[s]), fabs_(I, B[s]));
		big = big ? fmaxnum_(I, big, m) : m;
	}
	IfBlk wide;
	if_begin(I, &wide, warp_any(I, fgt(I, big, cf32(I, F16_MAP_MAX))), "map_wide_st");
	for (int s = 0; s < TM_SLOTS; s++)
		st(I, map16_pack(I, A[s], B[s]), smem_ptr(I, hprev_at(bw, k, s)), 4);
	if_end(I, &wide);
}

/* h before step i of the chunk, every slot: the map of steps 0 .. i-1 on
 * the chunk's start h0; step 0 takes the start itself (its load stays in
 * range). A warp whose 16-bit maps of the step are all fp16 pairs (every
 * warp, short of activations near fp16's range) widens them with two
 * conversions and no test per value. */
void hmap_hprev(Bwd *bw, LLVMValueRef i, LLVMValueRef hp[TM_SLOTS])
{
	Irb *I = &bw->T->I;
	LLVMValueRef k = isub(I, i, ci32(I, 1 + bw->sm.hm0));
	k = LLVMBuildSelect(I->b, ilt(I, k, ci32(I, 0)), ci32(I, 0), k, "");
	LLVMValueRef A[TM_SLOTS], B[TM_SLOTS];
	if (bw->sm.h16) {
		LLVMValueRef m[TM_SLOTS], sign = ci32(I, 0);
		Var vA[TM_SLOTS], vB[TM_SLOTS];
		for (int s = 0; s < TM_SLOTS; s++) {
			m[s] = ld(I, I->i32, smem_ptr(I, hprev_at(bw, k, s)), 4);
			sign = LLVMBuildOr(I->b, sign, m[s], "");
			vA[s] = var_init(I, unpack_f16(I, m[s], 1), "hA");
			vB[s] = var_init(I, unpack_f16(I, m[s], 0), "hB");
		}
		IfBlk wide;
		if_begin(I, &wide, warp_any(I, ilt(I, sign, ci32(I, 0))), "map_wide");
		for (int s = 0; s < TM_SLOTS; s++) {
			LLVMValueRef bf = ilt(I, m[s], ci32(I, 0));
			LLVMValueRef Aw = LLVMBuildBitCast(I->b, LLVMBuildAnd(I->b, m[s], ci32(I, 0x7fff0000), ""), I->f32, "");
			var_set(I, vA[s], fsel(I, bf, Aw, var_get(I, vA[s])));
			var_set(I, vB[s], fsel(I, bf, unpack_bf16_lo(I, m[s]), var_get(I, vB[s])));
		}
		if_end(I, &wide);
		for (int s = 0; s < TM_SLOTS; s++) {
			A[s] = var_get(I, vA[s]);
			B[s] = var_get(I, vB[s]);
		}
	} else {
		for (int s = 0; s < TM_SLOTS; s++) {
			A[s] = ld(I, I->f32, smem_ptr(I, hmap_at(bw, k, s, 0)), 4);
			B[s] = ld(I, I->f32, smem_ptr(I, hmap_at(bw, k, s, 1)), 4);
		}
	}
	for (int s = 0; s < TM_SLOTS; s++) {
		LLVMValueRef h0 = var_get(I, bw->h0[s]);
		hp[s] = fadd(I, fmul(I, A[s], h0), B[s]);
		if (bw->sm.hm0 == 0)
			hp[s] = fsel(I, ieq(I, i, ci32(I, 0)), h0, hp[s]);
	}
}
