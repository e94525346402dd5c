/* Look-back carries: decoupled look-back over a fixed window, forward
 * (lb_ticket, lb_carry) and backward (lb_bwd_publish, lb_bwd_carry; the
 * plan in tmpl.h).
 *
 * The hierarchical forward reads x three times (reduce, then apply's two
 * sweeps) and launches three kernels. Here apply publishes the tile map its
 * first sweep already computes, takes the state entering the tile from the
 * tiles before it, and goes on. The classic look-back stops at the first
 * predecessor that has its inclusive state, which makes the rounding depend
 * on timing; this one always folds the same window: the state at the end
 * of tile t - LB_WIN, then the maps of the LB_WIN - 1 tiles after it.
 *
 * No flags and no fences: every published word announces itself. The
 * workspaces are zeroed before the launch and a word is stored as the
 * complement of its float's bits, which is never 0 (the one float whose
 * complement is 0, the NaN 0xffffffff, is stored as the canonical NaN). A
 * 32-bit access is single-copy atomic, so a reader sees 0 or the whole
 * value, and spins on its own words until none is 0: one memory round
 * trip when the tiles before it are done.
 *
 * Forward progress: no block waits on a block that may never run.
 *  - Look-back forward: a block does not take its tile from its block
 *    index but from an atomic ticket drawn when it starts (lb_ticket), in
 *    tile-major order. It waits only on tiles before its own, whose
 *    tickets were drawn earlier, so by blocks already running; each of
 *    those waits only on tiles before it in turn. By induction on the
 *    ticket, the unfinished block with the earliest ticket waits only on
 *    words already published, so every block finishes, whatever order the
 *    hardware schedules them in and however few fit on the GPU at once
 *    (another process may hold most of it).
 *  - One-pass backward: the blocks of a head take groups in turn
 *    (bwd_groups_onepass), so block k waits on the maps of blocks that
 *    may start after it: all of a head's blocks must be resident at once.
 *    The manifest marks the launch "resident"; the runtime counts what
 *    the device holds at that shared-memory size and cluster shape
 *    (runtime/plan.c, resident_check) and refuses a larger grid before
 *    launching, with a message; and the kernel traps where more than
 *    ONEPASS_MAXG blocks share a head (a window too short to fold them),
 *    so a plan that breaks either rule fails loudly instead of hanging.
 *    Residency counted on an idle device can still be denied by another
 *    process sharing the GPU: tests/gpu_progress.sh runs the waiting
 *    kernels beside such a process.
 */
#include "tmpl.h"
#include "diag.h"

void lb_ticket(Tmpl *T, LLVMValueRef ticket, int smem_off)
{
	Irb *I = &T->I;
	LLVMValueRef tid = tid_x(I), slot = smem_ptr(I, ci32(I, smem_off));
	IfBlk f;
	if_begin(I, &f, ieq(I, tid, ci32(I, 0)), "ticket");
	st(I, atom_add_u32(I, ticket, ci32(I, 1)), slot, 4);
	if_end(I, &f);
	bar_sync(I);
	LLVMValueRef t = ld(I, I->i32, slot, 4);
	LLVMValueRef H = nctaid(I, 1), HB = imul(I, H, nctaid(I, 2));
	LLVMValueRef r = LLVMBuildURem(I->b, t, HB, "");
	T->k.ticket_thb[0] = LLVMBuildUDiv(I->b, t, HB, "lb_tile");
	T->k.ticket_thb[1] = LLVMBuildURem(I->b, r, H, "lb_head");
	T->k.ticket_thb[2] = LLVMBuildUDiv(I->b, r, H, "lb_b");
}

/* word (b, entry p, channel ch) of a [B][n][D] workspace of 32-bit words:
 * n tiles forward, n groups backward */
static LLVMValueRef lb_word(Tmpl *T, Lanes *ln, LLVMValueRef base, LLVMValueRef p, LLVMValueRef n, LLVMValueRef ch)
{
	return gep_f32(&T->I, base, tile_chan(T, ln, p, n, ch));
}

/* word (b, tile p, channel ch) of a [B][NT][D] workspace (NT = kern_nt) */
static LLVMValueRef tile_elem(Tmpl *T, Lanes *ln, LLVMValueRef base, LLVMValueRef p, LLVMValueRef ch)
{
	return lb_word(T, ln, base, p, kern_nt(T), ch);
}

LLVMValueRef lb_enc(Irb *I, LLVMValueRef v)
{
	LLVMValueRef w = LLVMBuildBitCast(I->b, v, I->i32, "");
	w = LLVMBuildSelect(I->b, ieq(I, w, ci32(I, -1)), ci32(I, 0x7fffffff), w, "");
	return LLVMBuildXor(I->b, w, ci32(I, -1), "");
}

LLVMValueRef lb_dec(Irb *I, LLVMValueRef w)
{
	return LLVMBuildBitCast(I->b, LLVMBuildXor(I->b, w, ci32(I, -1), ""), I->f32, "");
}

void lb_carry(Tmpl *T, Lanes *ln, const KSig *sig, int smem_off)
{
	Irb *I = &T->I;
	/* the window is split among the block's threads: part j (threads
	 * 64j .. 64j + 63, one per channel) folds entries m j .. m j + m - 1 */
	int nparts = T->k.threads / 64, m = LB_WIN / nparts;
	CHECK(nparts >= 1 && LB_WIN % nparts == 0 && nparts <= LB_MAXPARTS);
	LLVMValueRef aggA = ksig_arg(T, sig, "ws:aggA"), aggB = ksig_arg(T, sig, "ws:aggB");
	LLVMValueRef hend = ksig_arg(T, sig, "ws:hend");
	LLVMValueRef tid = ln->tid, tile = lane_tile(I, ln);
	LLVMValueRef c = LLVMBuildAnd(I->b, tid, ci32(I, 63), ""), j = LLVMBuildLShr(I->b, tid, ci32(I, 6), "");
	LLVMValueRef first = ieq(I, j, ci32(I, 0));
	/* a caller's states (states variants): h0 is the state before the
	 * sequence, and the last tile's end state is hT. A docs variant's are
	 * per document, where its tokens start and end (docs.c): hT[0] here
	 * would be the last document's state in the first one's place */
	LLVMValueRef h0p = T->v->states ? ln->h0 : NULL;
	LLVMValueRef sidx = h0p ? iadd(I, imul(I, sext64(I, ln->b), sext64(I, ln->D)),
	                                  sext64(I, iadd(I, imul(I, ln->head, ci32(I, 64)), c))) : NULL;
	LLVMValueRef h0v = h0p ? state_load(I, h0p, sidx, first) : NULL;
	Var A = var_init(I, cf32(I, 1.0), "tA"), B = var_init(I, cf32(I, 0.0), "tB");
	IfBlk f;
	if_begin(I, &f, first, "agg");
	/* the tile's map, published at once */
	LLVMValueRef ta, tb;
	quads_tile_map(T, c, &ta, &tb);
	var_set(I, A, ta);
	var_set(I, B, tb);
	st_volatile(I, lb_enc(I, ta), tile_elem(T, ln, aggA, tile, c), 4);
	st_volatile(I, lb_enc(I, tb), tile_elem(T, ln, aggB, tile, c), 4);
	if_end(I, &f);

	/* entry k of the window is tile t - LB_WIN + k: for k = 0 its end state,
	 * as the map (0, h), otherwise its map; tiles before 0 are (0, 0) at k
	 * = 0 (h = 0 before the sequence) and the identity after. Every load at
	 * once, again until all have arrived. */
	LLVMValueRef k0 = imul(I, j, ci32(I, m));
	LLVMValueRef in[LB_WIN], pc[LB_WIN], st0[LB_WIN];
	for (int e = 0; e < m; e++) {
		LLVMValueRef p = iadd(I, isub(I, tile, ci32(I, LB_WIN)), iadd(I, k0, ci32(I, e)));
		in[e] = ige(I, p, ci32(I, 0));
		pc[e] = LLVMBuildSelect(I->b, in[e], p, tile, "");
		st0[e] = e == 0 ? first : LLVMConstInt(I->i1, 0, 0);   /* the end-state entry */
	}
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "lb_spin");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "lb_done");
	LLVMBuildBr(I->b, spin);
	LLVMPositionBuilderAtEnd(I->b, spin);
	LLVMValueRef wa[LB_WIN], wb[LB_WIN], zero = ci32(I, 0), ready = LLVMConstInt(I->i1, 1, 0);
	for (int e = 0; e < m; e++) {
		LLVMValueRef pa = e == 0 ? LLVMBuildSelect(I->b, first, tile_elem(T, ln, hend, pc[e], c),
		                                           tile_elem(T, ln, aggA, pc[e], c), "")
		                         : tile_elem(T, ln, aggA, pc[e], c);
		wa[e] = ld_volatile(I, I->i32, pa, 4);
		wb[e] = ld_volatile(I, I->i32, tile_elem(T, ln, aggB, pc[e], c), 4);
		LLVMValueRef got = land(I, LLVMBuildICmp(I->b, LLVMIntNE, wa[e], zero, ""),
		                        LLVMBuildOr(I->b, st0[e], LLVMBuildICmp(I->b, LLVMIntNE, wb[e], zero, ""), ""));
		ready = land(I, ready, LLVMBuildOr(I->b, LLVMBuildNot(I->b, in[e], ""), got, ""));
	}
	LLVMBuildCondBr(I->b, ready, done, spin);
	LLVMPositionBuilderAtEnd(I->b, done);
	LLVMValueRef MA = cf32(I, 1.0), MB = cf32(I, 0.0);
	for (int e = 0; e < m; e++) {
		LLVMValueRef a = fsel(I, st0[e], cf32(I, 0.0), fsel(I, in[e], lb_dec(I, wa[e]), cf32(I, 1.0)));
		/* before the sequence: h0 at the end-state entry (a states variant), else 0 */
		LLVMValueRef before = h0p && e == 0 ? fsel(I, st0[e], h0v, cf32(I, 0.0)) : cf32(I, 0.0);
		LLVMValueRef b = fsel(I, in[e], fsel(I, st0[e], lb_dec(I, wa[e]), lb_dec(I, wb[e])), before);
		MB = fadd(I, fmul(I, MB, a), b);
		MA = fmul(I, MA, a);
	}
	LLVMValueRef po = iadd(I, ci32(I, lb_carry_at(smem_off) + 64 * 4), imul(I, tid, ci32(I, 8)));
	st(I, MA, smem_ptr(I, po), 4);
	st(I, MB, smem_ptr(I, iadd(I, po, ci32(I, 4))), 4);
	bar_sync(I);
	/* the parts in order: part 0's map is constant (its first A is 0) */
	if_begin(I, &f, first, "fold");
	LLVMValueRef h = cf32(I, 0.0);
	for (int q = 0; q < nparts; q++) {
		LLVMValueRef o = iadd(I, ci32(I, lb_carry_at(smem_off) + 64 * 4 + q * 64 * 8), imul(I, c, ci32(I, 8)));
		LLVMValueRef a = ld(I, I->f32, smem_ptr(I, o), 4);
		LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, o, ci32(I, 4))), 4);
		h = fadd(I, fmul(I, a, h), b);
	}
	st(I, h, smem_ptr(I, iadd(I, ci32(I, lb_carry_at(smem_off)), imul(I, c, ci32(I, 4)))), 4);
	LLVMValueRef hw = tile_elem(T, ln, hend, tile, c);   /* (built before the end state: the PTX as before) */
	LLVMValueRef end = fadd(I, fmul(I, var_get(I, A), h), var_get(I, B));
	st_volatile(I, lb_enc(I, end), hw, 4);
	if (h0p)
		state_store(I, ksig_arg(T, sig, "state:hT"), sidx, ieq(I, tile, isub(I, kern_nt(T), ci32(I, 1))), end);
	if_end(I, &f);
	bar_sync(I);
}

/* a lane's four words of a [B][NG][D] backward workspace: the lane's slot
 * channels in the order of its block of four (16w + 4q + c, the publisher's
 * and every reader's alike), so that each is one 16-byte access; read as
 * four words apiece, the window's loads were four times as many, each
 * scattered over eight groups, and cost the one-pass backward most of what
 * it saved */
static LLVMValueRef lb_lane_words(Tmpl *T, Lanes *ln, LLVMValueRef base, LLVMValueRef p, LLVMValueRef n)
{
	Irb *I = &T->I;
	LLVMValueRef blk = iadd(I, imul(I, ln->w, ci32(I, 16)), imul(I, ln->q, ci32(I, 4)));
	return lb_word(T, ln, base, p, n, blk);
}

void lb_bwd_publish(Tmpl *T, Lanes *ln, const KSig *sig, LLVMValueRef gi, LLVMValueRef NG,
                    LLVMValueRef rA[4], LLVMValueRef rB[4])
{
	Irb *I = &T->I;
	LLVMValueRef aggA = ksig_arg(T, sig, "ws:baggA"), aggB = ksig_arg(T, sig, "ws:baggB");
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	LLVMValueRef wa = LLVMGetUndef(v4), wb = LLVMGetUndef(v4);
	for (int c = 0; c < 4; c++) {
		wa = LLVMBuildInsertElement(I->b, wa, lb_enc(I, rA[c]), ci32(I, c), "");
		wb = LLVMBuildInsertElement(I->b, wb, lb_enc(I, rB[c]), ci32(I, c), "");
	}
	IfBlk f;
	if_begin(I, &f, ieq(I, ln->g, ci32(I, 0)), "bagg");
	st_volatile(I, wa, lb_lane_words(T, ln, aggA, gi, NG), 16);
	st_volatile(I, wb, lb_lane_words(T, ln, aggB, gi, NG), 16);
	if_end(I, &f);
}

void lb_bwd_carry(Tmpl *T, Lanes *ln, const KSig *sig, LLVMValueRef gi, LLVMValueRef NG, Var uR[4])
{
	Irb *I = &T->I;
	LLVMValueRef aggA = ksig_arg(T, sig, "ws:baggA"), aggB = ksig_arg(T, sig, "ws:baggB");
	LLVMValueRef G = nctaid(I, 0);
	LLVMTypeRef v4 = LLVMVectorType(I->i32, 4);
	/* lane g folds entries j = 2g + 1 and 2g + 2: the maps of groups gi + j,
	 * those the other blocks run between this block's last group and this
	 * one (j < G) inside the sequence; the identity elsewhere */
	LLVMValueRef in[2], pg[2];
	for (int e = 0; e < 2; e++) {
		LLVMValueRef j = iadd(I, imul(I, ln->g, ci32(I, 2)), ci32(I, 1 + e));
		LLVMValueRef p = iadd(I, gi, j);
		in[e] = land(I, ilt(I, j, G), ilt(I, p, NG));
		pg[e] = LLVMBuildSelect(I->b, in[e], p, gi, "");
	}
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "lbb_spin");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(I->ctx, I->fn, "lbb_done");
	LLVMBuildBr(I->b, spin);
	LLVMPositionBuilderAtEnd(I->b, spin);
	LLVMValueRef wa[2][4], wb[2][4], zero = ci32(I, 0), ready = LLVMConstInt(I->i1, 1, 0);
	for (int e = 0; e < 2; e++) {
		LLVMValueRef va = ld_volatile(I, v4, lb_lane_words(T, ln, aggA, pg[e], NG), 16);
		LLVMValueRef vb = ld_volatile(I, v4, lb_lane_words(T, ln, aggB, pg[e], NG), 16);
		for (int c = 0; c < 4; c++) {
			wa[e][c] = LLVMBuildExtractElement(I->b, va, ci32(I, c), "");
			wb[e][c] = LLVMBuildExtractElement(I->b, vb, ci32(I, c), "");
			LLVMValueRef got = land(I, LLVMBuildICmp(I->b, LLVMIntNE, wa[e][c], zero, ""),
			                        LLVMBuildICmp(I->b, LLVMIntNE, wb[e][c], zero, ""));
			ready = land(I, ready, LLVMBuildOr(I->b, LLVMBuildNot(I->b, in[e], ""), got, ""));
		}
	}
	LLVMBuildCondBr(I->b, ready, done, spin);
	LLVMPositionBuilderAtEnd(I->b, done);
	for (int c = 0; c < 4; c++) {
		LLVMValueRef a[2], b[2];
		for (int e = 0; e < 2; e++) {
			a[e] = fsel(I, in[e], lb_dec(I, wa[e][c]), cf32(I, 1.0));
			b[e] = fsel(I, in[e], lb_dec(I, wb[e][c]), cf32(I, 0.0));
		}
		/* R_j1 o R_j2, then across the lanes g in a fixed tree: the lower g
		 * is the outer map, and both lanes of a pair compute the same bits */
		LLVMValueRef MA = fmul(I, a[0], a[1]), MB = fadd(I, fmul(I, a[0], b[1]), b[0]);
		for (int d = 1; d < 8; d <<= 1) {
			LLVMValueRef pA = shfl_xor_f(I, MA, 4 * d), pB = shfl_xor_f(I, MB, 4 * d);
			LLVMValueRef low = ieq(I, LLVMBuildAnd(I->b, ln->g, ci32(I, d), ""), zero);
			LLVMValueRef oA = fsel(I, low, MA, pA), oB = fsel(I, low, MB, pB);
			LLVMValueRef iA = fsel(I, low, pA, MA), iB = fsel(I, low, pB, MB);
			MA = fmul(I, oA, iA);
			MB = fadd(I, fmul(I, oA, iB), oB);
		}
		var_set(I, uR[c], fadd(I, fmul(I, MA, var_get(I, uR[c])), MB));
	}
}
