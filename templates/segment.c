/* Segment staging: the inputs of up to 8 steps (x rows, dy rows, token
 * values) loaded by one burst of 16-byte loads per thread into shared
 * memory, or, with the projections apart (SEG_PJ), every row array copied
 * there by cp.async; and the staged rows' layout read by ldmatrix and by
 * the slots. */
#include "tmpl.h"
#include "diag.h"

void ldsm_lane(Irb *I, const Lanes *ln, int swap, LLVMValueRef *row, LLVMValueRef *blk)
{
	LLVMValueRef m = LLVMBuildLShr(I->b, ln->lane, ci32(I, 3), "");
	LLVMValueRef hi = LLVMBuildAnd(I->b, m, ci32(I, 1), ""), lo = LLVMBuildLShr(I->b, m, ci32(I, 1), "");
	*row = iadd(I, LLVMBuildAnd(I->b, ln->lane, ci32(I, 7), ""), imul(I, swap ? lo : hi, ci32(I, 8)));
	*blk = swap ? hi : lo;
}

/* byte offset of 16-byte block blk of row row in a staged step's rows */
LLVMValueRef xs_at(Irb *I, const Lanes *ln, LLVMValueRef row, LLVMValueRef blk)
{
	if (!(ln->seg_flags & SEG_SWZ))
		return iadd(I, imul(I, row, ci32(I, XS_ROW)), imul(I, blk, ci32(I, 16)));
	LLVMValueRef sw = LLVMBuildXor(I->b, blk, LLVMBuildAnd(I->b, row, ci32(I, 7), ""), "");
	return iadd(I, imul(I, row, ci32(I, 128)), imul(I, sw, ci32(I, 16)));
}

LLVMValueRef xs_ldsm_at(Irb *I, const Lanes *ln, int blk0)
{
	LLVMValueRef row, blk;
	ldsm_lane(I, ln, 0, &row, &blk);
	if (!(ln->seg_flags & SEG_SWZ))
		return blk0 ? iadd(I, xs_at(I, ln, row, blk), ci32(I, 16 * blk0)) : xs_at(I, ln, row, blk);
	return xs_at(I, ln, row, iadd(I, blk, ci32(I, blk0)));
}

/* index of x[b][t][head*64 + k] */
LLVMValueRef xidx(Tmpl *T, Lanes *ln, LLVMValueRef t, LLVMValueRef k)
{
	Irb *I = &T->I;
	LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), t);
	return iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)),
	            sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), k)));
}

/* byte offset of (row, col) in a staged buffer: padded rows or swizzled blocks */
static LLVMValueRef xs_off(Irb *I, const Lanes *ln, LLVMValueRef row, LLVMValueRef col)
{
	if (ln->seg_flags & SEG_SWZ)
		return iadd(I, xs_at(I, ln, row, LLVMBuildLShr(I->b, col, ci32(I, 3), "")),
		            imul(I, LLVMBuildAnd(I->b, col, ci32(I, 7), ""), ci32(I, 2)));
	return iadd(I, imul(I, row, ci32(I, XS_ROW)), imul(I, col, ci32(I, 2)));
}

static LLVMValueRef xs_pair(Tmpl *T, const Lanes *ln, LLVMValueRef base, LLVMValueRef row, LLVMValueRef col)
{
	Irb *I = &T->I;
	return ld(I, I->i32, smem_ptr(I, iadd(I, base, xs_off(I, ln, row, col))), 4);
}

/* the bf16 of the lane's four slots of a staged row, as pairs (ch[0], ch[1])
 * and (ch[2], ch[3]): with slots_adjacent they are four adjacent channels, 8 aligned
 * bytes (rows of 144 bytes, or 16-byte blocks swizzled whole), read by one
 * 8-byte load instead of two */
void xs_slots(Tmpl *T, const Lanes *ln, LLVMValueRef base, LLVMValueRef row, LLVMValueRef pr[2])
{
	Irb *I = &T->I;
	if (!T->k.slots_adjacent) {
		for (int nt = 0; nt < 2; nt++)
			pr[nt] = xs_pair(T, ln, base, row, ln->ch[2 * nt]);
		return;
	}
	LLVMValueRef v = ld(I, LLVMVectorType(I->i32, 2), smem_ptr(I, iadd(I, base, xs_off(I, ln, row, ln->ch[0]))), 8);
	for (int nt = 0; nt < 2; nt++)
		pr[nt] = LLVMBuildExtractElement(I->b, v, ci32(I, nt), "");
}

/* one staged array's 16 rows of a step: padded, or swizzled (SEG_SWZ) */
static int seg_rows_bytes(int flags) { return flags & SEG_SWZ ? 16 * 128 : XS_BUF; }

/* per step: [x rows][dy rows][projections' rows][16 x nz token values], each part present by flags */
int seg_part(const Tmpl *T, int flags, int part)
{
	int off = 0;
	if (part == SEG_X) return off;
	int buf = seg_rows_bytes(flags);
	off += flags & SEG_X ? buf : 0;
	if (part == SEG_DY) return off;
	off += flags & SEG_DY ? buf : 0;
	if (part == SEG_PJ) return off;
	off += flags & SEG_PJ ? T->napj * buf : 0;
	if (part == SEG_TOK) return off;
	off += 16 * T->ntokval * 4;
	if (part == SEG_MARK) return off;
	off += T->v->resets ? 16 * seg_mark_size(T) : 0;
	CHECK(part == 0);
	return (off + 15) & ~15;   /* the whole step */
}

int seg_pj(const Tmpl *T) { return T->napj > 0 && !T->portable; }

/* byte offset of projection j's rows in a step staged with these flags */
static int seg_pj_part(const Tmpl *T, int flags, int j)
{
	return seg_part(T, flags, SEG_PJ) + j * seg_rows_bytes(flags);
}

int seg_bytes(const Tmpl *T, int n, int flags) { return n * seg_part(T, flags, 0); }

/* a staged row's reset mark: a byte, or a docs variant's token code (docs.c) */
int seg_mark_size(const Tmpl *T) { return T->v->docs ? 4 : 1; }

/* the byte offset of row `row`'s mark (or code) in the staged step at seg */
LLVMValueRef seg_mark_at(Tmpl *T, const Lanes *ln, LLVMValueRef seg, LLVMValueRef row)
{
	Irb *I = &T->I;
	int size = seg_mark_size(T);
	LLVMValueRef base = iadd(I, seg, ci32(I, seg_part(T, ln->seg_flags, SEG_MARK)));
	return iadd(I, base, size == 1 ? row : imul(I, row, ci32(I, size)));
}
int seg_len(const Tmpl *T) { return T->chunk < 8 ? T->chunk : 8; }

void seg_enable(Tmpl *T, Lanes *ln, int off, int n, int flags)
{
	ln->seg_off = off;
	ln->seg_n = n;
	ln->seg_flags = flags;
	ln->seg_step = seg_part(T, flags, 0);
}

static void quad_bar(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	if (T->k.threads == 128)
		bar_sync(I);
	else
		bar_named(I, iadd(I, ln->quad, ci32(I, 1)), 128);
}

static LLVMValueRef seg_base(Tmpl *T, Lanes *ln)
{
	Irb *I = &T->I;
	return iadd(I, ci32(I, ln->seg_off), imul(I, ln->quad, ci32(I, ln->seg_n * ln->seg_step)));
}

/* the element of a [B][L][D] array whose 16 bytes thread (row, c16) of
 * the quad stages for step i0 + k of the group at gb, and whether its row
 * lies in the sequence (element 0 stands in where not) */
static LLVMValueRef seg_elem(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i0, int k, LLVMValueRef row,
                             LLVMValueRef c16, LLVMValueRef *valid)
{
	Irb *I = &T->I;
	LLVMValueRef t = iadd(I, gb, iadd(I, imul(I, row, ci32(I, T->chunk)), iadd(I, i0, ci32(I, k))));
	*valid = in_seq(T, ln, t);
	LLVMValueRef rowi = iadd(I, imul(I, ln->b, ln->L), t);
	LLVMValueRef e = iadd(I, imul(I, sext64(I, rowi), sext64(I, ln->D)),
	                      sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), imul(I, c16, ci32(I, 8)))));
	return LLVMBuildSelect(I->b, *valid, e, ci64(I, 0), "");
}

/* The row arrays of the segment's steps (x, dy, the projections apart),
 * copied to shared memory without registers (zeros past L): how a
 * segment that stages the projections (SEG_PJ) stages every array; the
 * caller waits for them */
static void seg_copy(Tmpl *T, Lanes *ln, LLVMValueRef base, LLVMValueRef gb, LLVMValueRef i0, LLVMValueRef row,
                     LLVMValueRef c16)
{
	Irb *I = &T->I;
	int f = ln->seg_flags;
	LLVMValueRef o = xs_at(I, ln, row, c16);
	for (int k = 0; k < ln->seg_n; k++) {
		LLVMValueRef valid, e = seg_elem(T, ln, gb, i0, k, row, c16, &valid);
		LLVMValueRef n = LLVMBuildSelect(I->b, valid, ci32(I, 16), ci32(I, 0), "");
		LLVMValueRef sb = iadd(I, iadd(I, base, ci32(I, k * ln->seg_step)), o);
		if (f & SEG_X)
			cp_async16(I, iadd(I, sb, ci32(I, seg_part(T, f, SEG_X))), gep_bf16(I, ln->x, e), n);
		if (f & SEG_DY)
			cp_async16(I, iadd(I, sb, ci32(I, seg_part(T, f, SEG_DY))), gep_bf16(I, ln->dy, e), n);
		for (int j = 0; j < T->napj; j++)
			cp_async16(I, iadd(I, sb, ci32(I, seg_pj_part(T, f, j))), gep_bf16(I, ln->pws[j], e), n);
	}
}

void seg_stage(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i0)
{
	Irb *I = &T->I;
	int n = ln->seg_n;
	LLVMValueRef tq = LLVMBuildAnd(I->b, ln->tid, ci32(I, 127), "");
	LLVMValueRef row = LLVMBuildLShr(I->b, tq, ci32(I, 3), "");
	LLVMValueRef c16 = LLVMBuildAnd(I->b, tq, ci32(I, 7), "");
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef xv[8], dv[8], tv[8];
	int async = ln->seg_flags & SEG_PJ;   /* the rows by cp.async (seg_copy), else by registers */
	int regs = async ? 0 : ln->seg_flags & (SEG_X | SEG_DY);   /* the row arrays loaded into registers */
	CHECK(n <= 8);
	/* token rows: thread tq < 16 * nz loads (row tq / nz, value tq % nz) */
	LLVMValueRef trow = T->ntokval ? LLVMBuildUDiv(I->b, tq, ci32(I, T->ntokval), "") : NULL;
	LLVMValueRef tz = T->ntokval ? LLVMBuildURem(I->b, tq, ci32(I, T->ntokval), "") : NULL;
	LLVMValueRef tl = T->ntokval ? ilt(I, tq, ci32(I, 16 * T->ntokval)) : NULL;
	/* reset marks, or a docs variant's token codes (docs.c): thread tq < 16
	 * loads row tq's (reset_mark_at, docs_code_at). (Packing a
	 * segment's marks into one register, bit k for step k, made ptxas spill
	 * more, not less, in five of the RG-LRU variants of state.lua.) */
	LLVMValueRef ml = (ln->reset || ln->dcode) && !T->k.marks_quiet ? ilt(I, tq, ci32(I, 16)) : NULL, mv[8];
	for (int k = 0; k < n; k++) {
		LLVMValueRef valid, e = seg_elem(T, ln, gb, i0, k, row, c16, &valid);
		if (regs & SEG_X)
			xv[k] = LLVMBuildSelect(I->b, valid, ld(I, v4, gep_bf16(I, ln->x, e), 16), LLVMConstNull(v4), "");
		if (regs & SEG_DY)
			dv[k] = LLVMBuildSelect(I->b, valid, ld(I, v4, gep_bf16(I, ln->dy, e), 16), LLVMConstNull(v4), "");
		if (T->ntokval) {
			LLVMValueRef tt = iadd(I, gb, iadd(I, imul(I, trow, ci32(I, T->chunk)), iadd(I, i0, ci32(I, k))));
			LLVMValueRef tvalid = land(I, tl, in_seq(T, ln, tt));
			LLVMValueRef ti = iadd(I, imul(I, sext64(I, LLVMBuildSelect(I->b, tvalid, iadd(I, imul(I, ln->b, ln->L), tt), ci32(I, 0), "")),
			                            ci64(I, T->ntokval)), sext64(I, tz));
			tv[k] = fsel(I, tvalid, ld(I, I->f32, gep_f32(I, ln->tok, ti), 4), cf32(I, 0.0));
		}
		if (ml) {
			LLVMValueRef mt = iadd(I, gb, iadd(I, imul(I, tq, ci32(I, T->chunk)), iadd(I, i0, ci32(I, k))));
			LLVMValueRef ok = land(I, ml, in_seq(T, ln, mt));   /* a docs variant's codes instead */
			mv[k] = ln->dcode ? docs_code_at(T, ln, mt, ok) : reset_mark_at(T, ln, mt, ok);
		}
	}
	/* the previous segment's readers are done before it is overwritten */
	quad_bar(T, ln);
	LLVMValueRef base = seg_base(T, ln);
	if (async)
		seg_copy(T, ln, base, gb, i0, row, c16);
	for (int k = 0; k < n; k++) {
		LLVMValueRef sb = iadd(I, base, ci32(I, k * ln->seg_step));
		LLVMValueRef o = xs_at(I, ln, row, c16);
		if (regs & SEG_X)
			st(I, xv[k], smem_ptr(I, iadd(I, sb, o)), 16);
		if (regs & SEG_DY)
			st(I, dv[k], smem_ptr(I, iadd(I, iadd(I, sb, ci32(I, seg_part(T, ln->seg_flags, SEG_DY))), o)), 16);
		if (T->ntokval) {
			IfBlk f;
			if_begin(I, &f, tl, "tokst");
			st(I, tv[k], smem_ptr(I, iadd(I, iadd(I, sb, ci32(I, seg_part(T, ln->seg_flags, SEG_TOK))), imul(I, tq, ci32(I, 4)))), 4);
			if_end(I, &f);
		}
		if (ml) {
			IfBlk f;
			if_begin(I, &f, ml, "markst");
			LLVMValueRef at = smem_ptr(I, seg_mark_at(T, ln, sb, tq));
			if (ln->dcode)
				st(I, mv[k], at, 4);
			else
				st(I, LLVMBuildTrunc(I->b, mv[k], I->i8, ""), at, 1);
			if_end(I, &f);
		}
	}
	if (async)
		cp_async_wait_all(I);
	quad_bar(T, ln);
	ln->seg_i0 = i0;
}

/* for i in [0, C): segments of seg_n steps staged at once (one burst of
 * loads per segment); returns i inside the inner loop */
LLVMValueRef seg_loop_begin(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end)
{
	return seg_loop_begin_n(T, ln, Ls, L, gb, end, 1);
}

/* the same, n steps per trip of the inner loop (the segment a multiple of n) */
LLVMValueRef seg_loop_begin_n(Tmpl *T, Lanes *ln, Loop *Ls, Loop *L, LLVMValueRef gb, int end, int n)
{
	Irb *I = &T->I;
	CHECK(ln->seg_off >= 0 && end % ln->seg_n == 0 && ln->seg_n % n == 0);
	loop_begin(I, Ls, ci32(I, 0), ci32(I, end), ci32(I, ln->seg_n), "seg");
	LLVMValueRef i0 = loop_i(I, Ls);
	if (ln->seg_keep)
		ln->seg_i0 = i0;
	else
		seg_stage(T, ln, gb, i0);
	loop_begin(I, L, ci32(I, 0), ci32(I, ln->seg_n), ci32(I, n), "i");
	L->unroll = n == 1 ? 2 : 1;
	return iadd(I, i0, loop_i(I, L));
}

void seg_loop_end(Tmpl *T, Loop *Ls, Loop *L)
{
	loop_end(&T->I, L);
	loop_end(&T->I, Ls);
}

LLVMValueRef seg_step_at(Tmpl *T, Lanes *ln, LLVMValueRef i)
{
	Irb *I = &T->I;
	return iadd(I, seg_base(T, ln), imul(I, isub(I, i, ln->seg_i0), ci32(I, ln->seg_step)));
}

LLVMValueRef pj_staged_at(Tmpl *T, const Lanes *ln, const Step *st, int j)
{
	Irb *I = &T->I;
	CHECK(st->seg && (ln->seg_flags & SEG_PJ) && j < T->napj);
	return iadd(I, st->seg, ci32(I, seg_pj_part(T, ln->seg_flags, j)));
}

LLVMValueRef pj_keep_at(Tmpl *T, Lanes *ln, LLVMValueRef k, int s)
{
	Irb *I = &T->I;
	CHECK((ln->seg_flags & SEG_PJ) && T->napj >= 2 && T->k.slots_adjacent);
	int r = slot_r(s), c = slot_c(s);
	LLVMValueRef rows = iadd(I, seg_step_at(T, ln, k), ci32(I, seg_pj_part(T, ln->seg_flags, c >> 1)));
	LLVMValueRef own = xs_off(I, ln, iadd(I, ln->g, ci32(I, 8 * r)), ln->ch[0]);   /* the 8 bytes xs_slots reads */
	return iadd(I, iadd(I, rows, own), ci32(I, 4 * (c & 1)));
}

void load_dy(Tmpl *T, Lanes *ln, Step *st_, LLVMValueRef dy[TM_SLOTS])
{
	Irb *I = &T->I;
	/* every kernel that reads dy stages it with the step's other inputs */
	CHECK(st_->seg && (ln->seg_flags & SEG_DY));
	LLVMValueRef base = iadd(I, st_->seg, ci32(I, seg_part(T, ln->seg_flags, SEG_DY)));
	for (int r = 0; r < 2; r++) {
		LLVMValueRef pr[2];
		xs_slots(T, ln, base, iadd(I, ln->g, ci32(I, 8 * r)), pr);
		for (int nt = 0; nt < 2; nt++) {
			int s0 = r * 4 + 2 * nt;
			dy[s0] = unpack_bf16_lo(I, pr[nt]);
			dy[s0 + 1] = unpack_bf16_hi(I, pr[nt]);
		}
	}
}
