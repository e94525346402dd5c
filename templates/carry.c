/* Carry kernels: the top level of the hierarchical scan.
 *
 * One thread per channel walks the per-tile maps of its sequence in order
 * (forward: h entering each tile) or in reverse (backward: the adjoint
 * message entering each tile from the right). NT is small (L / tile), so a
 * sequential walk per channel is cheap next to the tile kernels, and it
 * keeps the combination order fixed: the same bits on every run.
 */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

void tmpl_carry(Tmpl *T, int backward)
{
	Irb *I = &T->I;
	Launch *l = tmpl_launch(T, !backward, backward ? "bwd_carry" : "fwd_carry", "cdiv(D,128)", "B", "1", 128, "0");
	ksig_add(T, &l->sig, backward ? "ws:baggA" : "ws:aggA", I->gptr);
	ksig_add(T, &l->sig, backward ? "ws:baggB" : "ws:aggB", I->gptr);
	ksig_add(T, &l->sig, backward ? "ws:ucarry" : "ws:carry", I->gptr);
	ksig_add(T, &l->sig, "i32:D", I->i32);
	ksig_add(T, &l->sig, "i32:NT", I->i32);
	tmpl_open(T, l);
	LLVMValueRef A = irb_arg(I, 0), B = irb_arg(I, 1), out = irb_arg(I, 2);
	LLVMValueRef D = irb_arg(I, 3), NT = irb_arg(I, 4);
	LLVMValueRef c = iadd(I, imul(I, ctaid(I, 0), ci32(I, 128)), tid_x(I));
	IfBlk f;
	if_begin(I, &f, ilt(I, c, D), "chan");
	LLVMValueRef b = ctaid(I, 1);
	Var h = var_init(I, cf32(I, 0.0), "h");
	Loop L;
	loop_begin(I, &L, ci32(I, 0), NT, ci32(I, 1), "k");
	LLVMValueRef k = loop_i(I, &L);
	LLVMValueRef tile = backward ? isub(I, isub(I, NT, ci32(I, 1)), k) : k;
	LLVMValueRef idx = iadd(I, imul(I, sext64(I, iadd(I, imul(I, b, NT), tile)), sext64(I, D)), sext64(I, c));
	st(I, var_get(I, h), gep_f32(I, out, idx), 4);
	LLVMValueRef a = ld(I, I->f32, gep_f32(I, A, idx), 4);
	LLVMValueRef bb = ld(I, I->f32, gep_f32(I, B, idx), 4);
	var_set(I, h, fadd(I, fmul(I, a, var_get(I, h)), bb));
	loop_end(I, &L);
	if_end(I, &f);
	irb_ret(I);
}
