/* bwd_reduce (hierarchical backward): per tile, the composed adjoint map
 * of its steps, u -> A u + B, from the end of the tile to its start; the
 * carry kernel then gives the message entering each tile from the right. */
#include "tmpl.h"
#include "diag.h"

void tmpl_bwd_reduce(Tmpl *T)
{
	Irb *I = &T->I;
	char sm[32];
	/* the adjoint maps need a and dy/dh only: x is read when they use it */
	const ExGraph *eg = &T->mx->g;
	int segf = SEG_DY;
	if (T->nbdproj > 0 || ex_depends(eg, T->e_log_a, EX_X, -1) || ex_depends(eg, T->g_h, EX_X, -1))
		segf |= SEG_X;
	int proj = kern_proj(T, T->g_h);   /* dy/dh of an unfused output gated by a projection runs it here */
	snprintf(sm, sizeof sm, "%d", quad_smem(T, segf, proj));
	Launch *l = tmpl_launch(T, 0, "bwd_reduce", "NT", scan_h(T), "B", 128 * T->quads, sm);
	l->minblocks = reduce_minblocks(T);
	if (proj && T->nbdproj)
		launch_flops(l, proj_flops(T));
	if (!(segf & SEG_X))
		snprintf(l->bytes_unread, sizeof l->bytes_unread, "x");
	ksig_add(T, &l->sig, "x", I->gptr);
	ksig_add(T, &l->sig, "dy", I->gptr);
	ksig_params(T, &l->sig);
	ksig_tok(T, &l->sig);
	if (!gates_inline(T)) {
		ksig_add(T, &l->sig, "ws:log_a", I->gptr);
		ksig_add(T, &l->sig, "ws:b", I->gptr);
	}
	ksig_add(T, &l->sig, "ws:baggA", I->gptr);
	ksig_add(T, &l->sig, "ws:baggB", I->gptr);
	ksig_shape(T, &l->sig);
	tmpl_open(T, l);
	T->k.proj_inline = proj;
	Lanes ln;
	quad_lanes(T, &ln, &l->sig, seg_len(T), segf);
	LLVMValueRef tile = ctaid(I, 0);
	LLVMValueRef qbase = iadd(I, imul(I, tile, ci32(I, T->chunk * T->prefix)), imul(I, ln.quad, ci32(I, T->quad_groups * 16 * T->chunk)));
	Var qA[4], qB[4];
	for (int c = 0; c < 4; c++) {
		qA[c] = var_init(I, cf32(I, 1.0), "qA");
		qB[c] = var_init(I, cf32(I, 0.0), "qB");
	}
	for (int j = 0; j < T->quad_groups; j++) {
		LLVMValueRef gb = iadd(I, qbase, ci32(I, j * 16 * T->chunk));
		Maps m;
		maps_init(T, &m, "r");
		Loop Ls, L;
		LLVMValueRef i = seg_loop_begin(T, &ln, &Ls, &L, gb, T->chunk);
		Step stp;
		step_gates(T, &ln, &stp, gb, i, 0);
		LLVMValueRef dy[TM_SLOTS];
		load_dy(T, &ln, &stp, dy);
		for (int s = 0; s < TM_SLOTS; s++) {
			/* gy may depend on h only through an output that is affine in h (checked at setup) */
			LLVMValueRef gy = eval_gy(T, &ln, &stp, s, cf32(I, 0.0), dy[s]);
			maps_push_bwd(T, &m, s, stp.a_eff[s], gy);
		}
		seg_loop_end(T, &Ls, &L);
		LLVMValueRef tA[4], tB[4];
		warp_scan_bwd(T, &ln, &m, tA, tB);
		for (int c = 0; c < 4; c++) {   /* Q := Q o G_j */
			LLVMValueRef QA = var_get(I, qA[c]);
			var_set(I, qB[c], fadd(I, fmul(I, QA, tB[c]), var_get(I, qB[c])));
			var_set(I, qA[c], fmul(I, QA, tA[c]));
		}
	}
	quad_publish(T, &ln, qA, qB);
	IfBlk f2;
	if_begin(I, &f2, ilt(I, ln.tid, ci32(I, 64)), "tile");
	LLVMValueRef A = cf32(I, 1.0), B = cf32(I, 0.0);
	for (int qd = 0; qd < T->quads; qd++) {   /* tile := tile o Q_qd */
		LLVMValueRef off = imul(I, iadd(I, ci32(I, qd * 64), ln.tid), ci32(I, 8));
		LLVMValueRef a = ld(I, I->f32, smem_ptr(I, off), 4);
		LLVMValueRef b = ld(I, I->f32, smem_ptr(I, iadd(I, off, ci32(I, 4))), 4);
		B = fadd(I, fmul(I, A, b), B);
		A = fmul(I, A, a);
	}
	LLVMValueRef idx = tile_chan(T, &ln, tile, nctaid(I, 0), ln.tid);
	st(I, A, gep_f32(I, ksig_arg(T, &l->sig, "ws:baggA"), idx), 4);
	st(I, B, gep_f32(I, ksig_arg(T, &l->sig, "ws:baggB"), idx), 4);
	if_end(I, &f2);
	irb_ret(I);
}
