/* The projections apart as a scan's step reads them (step_inputs) where
 * its segment does not stage them (SEG_PJ: sm_90's fwd_scan and bwd_apply
 * do; Ampere's and Ada's SMs hold fewer blocks of those buffers): each
 * row's four slots of a projection in bf16 (proj_fwd's rounding), loaded
 * where the step uses them, or in a sweep a step ahead with the lines
 * further on hinted into L2 (pj_ahead_begin). */
#include "tmpl.h"
#include "diag.h"

/* steps beyond the registers' loads whose lines are hinted into L2: one
 * of bwd_apply's steps at three warps a scheduler is shorter than a DRAM
 * load (a step ahead alone took it -4.5% on an H100, with the hints 4
 * steps on -7.5%) */
#define PJ_L2_AHEAD 4

/* a row's four adjacent channels in one 8-byte load (row 0 stands in past
 * L: its values are never used, as x's zeros are not) */
void pj_load(Tmpl *T, Lanes *ln, const Step *st, int j, int r, LLVMValueRef pr[2])
{
	Irb *I = &T->I;
	CHECK(ln->pws[j]);
	if (T->k.slots_adjacent) {
		LLVMValueRef at = LLVMBuildSelect(I->b, st->valid[r], slot_index(T, ln, st, r * 4), ci64(I, 0), "");
		LLVMValueRef v = ld(I, I->v2i32, gep_bf16(I, ln->pws[j], at), 8);
		for (int e = 0; e < 2; e++)
			pr[e] = LLVMBuildExtractElement(I->b, v, ci32(I, e), "");
	} else {   /* pairs (c, c+1) for even c are adjacent either way */
		for (int e = 0; e < 2; e++)
			pr[e] = load_pair(T, ln->pws[j], slot_index(T, ln, st, r * 4 + 2 * e), st->valid[r]);
	}
}

/* row r of a step ahead at t: one past the sweep's end, or further, may
 * lie past L or before 0 whatever in_seq assumes, so it is checked here */
static void ahead_row(Tmpl *T, Lanes *ln, Step *at, int r, LLVMValueRef t)
{
	at->t[r] = t;
	at->valid[r] = LLVMBuildICmp(T->I.b, LLVMIntULT, t, ln->L, "");
}

/* the registers' rows at steps t */
static void pj_ahead_load(Tmpl *T, Lanes *ln, const LLVMValueRef t[2])
{
	Irb *I = &T->I;
	Step at;
	for (int r = 0; r < 2; r++)
		ahead_row(T, ln, &at, r, t[r]);
	for (int j = 0; j < T->napj; j++)
		for (int r = 0; r < 2; r++) {
			LLVMValueRef pr[2];
			pj_load(T, ln, &at, j, r, pr);
			for (int e = 0; e < 2; e++)
				var_set(I, ln->pja.v[j][r][e], pr[e]);
		}
}

void pj_ahead_begin(Tmpl *T, Lanes *ln, LLVMValueRef gb, LLVMValueRef i, int dir)
{
	Irb *I = &T->I;
	CHECK(!ln->pja.on && (dir == 1 || dir == -1));
	if (T->napj == 0 || (ln->seg_flags & SEG_PJ))
		return;
	for (int j = 0; j < T->napj; j++)
		for (int r = 0; r < 2; r++)
			for (int e = 0; e < 2; e++)
				ln->pja.v[j][r][e] = var_new(I, I->i32, "pja");
	Step st;
	step_rows(T, ln, &st, gb, i);
	pj_ahead_load(T, ln, st.t);
	ln->pja.on = 1;
	ln->pja.dir = dir;
}

void pj_ahead_end(Lanes *ln) { ln->pja.on = 0; }

/* the step's values from the registers, and the next step's loaded */
static void pj_ahead_take(Tmpl *T, Lanes *ln, const Step *st, LLVMValueRef pj[][2][2])
{
	Irb *I = &T->I;
	for (int j = 0; j < T->napj; j++)
		for (int r = 0; r < 2; r++)
			for (int e = 0; e < 2; e++)
				pj[j][r][e] = var_get(I, ln->pja.v[j][r][e]);
	LLVMValueRef t[2];
	for (int r = 0; r < 2; r++)
		t[r] = iadd(I, st->t[r], ci32(I, ln->pja.dir));
	pj_ahead_load(T, ln, t);
}

/* the lines PJ_L2_AHEAD steps beyond the registers' into L2 */
static void pj_ahead_hint(Tmpl *T, Lanes *ln, const Step *st)
{
	Irb *I = &T->I;
	for (int r = 0; r < 2; r++) {
		Step at;
		ahead_row(T, ln, &at, r, iadd(I, st->t[r], ci32(I, ln->pja.dir * (1 + PJ_L2_AHEAD))));
		LLVMValueRef idx = LLVMBuildSelect(I->b, at.valid[r], slot_index(T, ln, &at, r * 4), ci64(I, 0), "");
		for (int j = 0; j < T->napj; j++)
			prefetch_l2(I, gep_bf16(I, ln->pws[j], idx));
	}
}

void pj_ahead_step(Tmpl *T, Lanes *ln, const Step *st, LLVMValueRef pj[][2][2])
{
	CHECK(ln->pja.on);
	pj_ahead_take(T, ln, st, pj);
	pj_ahead_hint(T, ln, st);
}
