/* The wgmma projection kernels' ring, copies and accumulator layout
 * (proj_wg.h). */
#include "proj_wg.h"
#include "diag.h"

/* The top of a trip: this thread's copies of the block to multiply landed
 * (the later ones may fly) and made visible to the async proxy, then a
 * barrier: every thread's copies, and every thread past the last trip's
 * wgmma, so that its buffer may be refilled */
void ring_ready(Irb *I, const Ring *rg)
{
	cp_async_wait(I, rg->ahead - 1);
	fence_proxy_async(I);
	bar_sync(I);
}

/* the ring buffer of the block ahead trips after trip n */
LLVMValueRef ring_slot(Irb *I, const Ring *rg, LLVMValueRef n, int ahead)
{
	return LLVMBuildURem(I->b, ahead ? iadd(I, n, ci32(I, ahead)) : n, ci32(I, rg->stages), "");
}

/* A ring with a producer warpgroup: its mbarriers at shared offset bars,
 * full[stages] (a buffer's blocks landed: the producer's 128 threads
 * arrive) then empty[stages] (the wgmma that read it are done: the
 * multiplying warpgroup's 128) */
static LLVMValueRef ring_bar(Irb *I, int bars, const Ring *rg, int empty, LLVMValueRef slot)
{
	return iadd(I, ci32(I, bars + empty * 8 * rg->stages), imul(I, slot, ci32(I, 8)));
}


/* the barriers' init by thread 0 (a block barrier after it shows them):
 * full counts full_count arrivals (the producer's 128, or its one thread
 * with TMA), empty empty_count (every thread of the warpgroups that read
 * a buffer) */
void ring_bars_init(Irb *I, int bars, const Ring *rg, int full_count, int empty_count)
{
	IfBlk f;
	if_begin(I, &f, ieq(I, tid_x(I), ci32(I, 0)), "mbar_init");
	for (int st = 0; st < rg->stages; st++) {
		mbar_init(I, ring_bar(I, bars, rg, 0, ci32(I, st)), full_count);
		mbar_init(I, ring_bar(I, bars, rg, 1, ci32(I, st)), empty_count);
	}
	if_end(I, &f);
}

LLVMValueRef ring_full_bar(Irb *I, int bars, const Ring *rg, LLVMValueRef slot)
{
	return ring_bar(I, bars, rg, 0, slot);
}

/* the phase parity of trip n's use of its slot, the (n / stages)-th */
static LLVMValueRef use_parity(Irb *I, const Ring *rg, LLVMValueRef n)
{
	return LLVMBuildAnd(I->b, LLVMBuildUDiv(I->b, n, ci32(I, rg->stages), ""), ci32(I, 1), "");
}

/* The producer's trip n before its refill: trip n's copies landed (this
 * thread's waited for and made visible to the async proxy), full
 * arrived at; then the buffer of trip n + ahead waited for until the
 * wgmma of its last use (trip n + ahead - stages) released it */
void ring_produced(Irb *I, int bars, const Ring *rg, LLVMValueRef n)
{
	cp_async_wait(I, rg->ahead - 1);
	fence_proxy_async(I);
	mbar_arrive(I, ring_bar(I, bars, rg, 0, ring_slot(I, rg, n, 0)));
	ring_refill_wait(I, bars, rg, n);
}

void ring_refill_wait(Irb *I, int bars, const Ring *rg, LLVMValueRef n)
{
	LLVMValueRef m = iadd(I, n, ci32(I, rg->ahead - rg->stages));
	IfBlk f;
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntSGE, m, ci32(I, 0), ""), "reuse");
	mbar_wait(I, ring_bar(I, bars, rg, 1, ring_slot(I, rg, n, rg->ahead)), use_parity(I, rg, m));
	if_end(I, &f);
}

/* the multiplying warpgroup's side: trip n's buffer full (wait), or read (release) */
void ring_take(Irb *I, int bars, const Ring *rg, LLVMValueRef n)
{
	mbar_wait(I, ring_bar(I, bars, rg, 0, ring_slot(I, rg, n, 0)), use_parity(I, rg, n));
}

void ring_release(Irb *I, int bars, const Ring *rg, LLVMValueRef n)
{
	mbar_arrive(I, ring_bar(I, bars, rg, 1, ring_slot(I, rg, n, 0)));
}

/* The split of a block with a producer: the warpgroup of threads first..
 * copies with prod_regs registers a thread, the ones before it multiply
 * with mul_regs (setmaxnreg: proj_fwd's and proj_dx's 56 and 200, two
 * blocks an SM holding 128 a thread at launch); returns whether this
 * thread produces, the builder inside the producer's branch
 * (wg_split_multiply moves it to the others) */
LLVMValueRef wg_split(Irb *I, IfBlk *f, int first, int prod_regs)
{
	LLVMValueRef prod = LLVMBuildICmp(I->b, LLVMIntUGE, tid_x(I), ci32(I, first), "");
	if_begin(I, f, prod, "produce");
	wg_setmaxnreg(I, 0, prod_regs);
	return prod;
}

void wg_split_multiply(Irb *I, IfBlk *f, LLVMValueRef prod, int mul_regs)
{
	if_end(I, f);
	if_begin(I, f, LLVMBuildNot(I->b, prod, ""), "multiply");
	wg_setmaxnreg(I, 1, mul_regs);
}

/* The copies of 64 rows (row tile t) by 64 columns (from col0) of a
 * [B*L][D] bf16 tensor into a swizzled block at shared offset base, 4
 * chunks of 16 bytes a thread of the 128 that copy (tid among them), by
 * cp.async (the caller commits) */
void copy_block(Tmpl *T, const ProjLanes *p, LLVMValueRef src, LLVMValueRef t, LLVMValueRef col0, LLVMValueRef base,
                LLVMValueRef tid)
{
	Irb *I = &T->I;
	LLVMValueRef c = LLVMBuildAnd(I->b, tid, ci32(I, 7), "");
	for (int it = 0; it < 64 * 8 / PROJ_THREADS; it++) {   /* 64 rows of 8 chunks of 16 bytes */
		LLVMValueRef r = iadd(I, LLVMBuildLShr(I->b, tid, ci32(I, 3), ""), ci32(I, it * PROJ_THREADS / 8));
		LLVMValueRef row = iadd(I, imul(I, t, ci32(I, PROJ_ROWS)), r);
		LLVMValueRef ok = ilt(I, row, p->BL);   /* a row past B*L reads nothing and lands as zeros */
		LLVMValueRef idx = iadd(I, imul(I, sext64(I, row), sext64(I, p->D)), sext64(I, iadd(I, col0, imul(I, c, ci32(I, 8)))));
		cp_async16(I, iadd(I, base, wg_swz(I, r, imul(I, c, ci32(I, 8)))),
		           gep_bf16(I, src, LLVMBuildSelect(I->b, ok, idx, ci64(I, 0), "")),
		           LLVMBuildSelect(I->b, ok, ci32(I, 16), ci32(I, 0), ""));
	}
}

void wg_wait_acc(Irb *I, LLVMValueRef acc[][32], int n)
{
	CHECK(n >= 1 && n <= 2);
	wg_wait_sets(I, (LLVMValueRef *[2]){ acc[0], acc[n - 1] }, n);
}

void wg_wait_sets(Irb *I, LLVMValueRef *acc[], int n)
{
	LLVMValueRef all[64];
	CHECK(n >= 1 && n <= 2);
	for (int j = 0; j < n; j++)
		for (int e = 0; e < 32; e++)
			all[32 * j + e] = acc[j][e];
	wg_wait(I, 0, all, 32 * n);
	for (int j = 0; j < n; j++)
		for (int e = 0; e < 32; e++)
			acc[j][e] = all[32 * j + e];
}

/* the row of accumulator pair r (g, or g + 8) of warp w's 16 in the tile
 * at row0, and the column of its n-tile i from column base */
LLVMValueRef acc_row(Irb *I, const ProjLanes *p, LLVMValueRef row0, int r)
{
	return iadd(I, row0, iadd(I, imul(I, p->w, ci32(I, 16)), iadd(I, p->g, ci32(I, 8 * r))));
}

LLVMValueRef acc_col(Irb *I, const ProjLanes *p, LLVMValueRef base, int i)
{
	return iadd(I, base, iadd(I, ci32(I, 8 * i), imul(I, p->q, ci32(I, 2))));
}
