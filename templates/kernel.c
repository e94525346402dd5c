/* A kernel's launch as the manifest describes it, its signature, and the
 * opening of its body (tmpl_open). */
#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <string.h>

Launch *tmpl_launch(Tmpl *T, int fwd, const char *kname, const char *g0, const char *g1,
                    const char *g2, int block, const char *smem)
{
	CHECK(fwd ? T->nfwd < 8 : T->nbwd < 8);
	Launch *l = fwd ? &T->fwd[T->nfwd++] : &T->bwd[T->nbwd++];
	memset(l, 0, sizeof *l);
	snprintf(l->kernel, sizeof l->kernel, "%s_%s", T->kname, kname);
	snprintf(l->grid[0], sizeof l->grid[0], "%s", g0);
	snprintf(l->grid[1], sizeof l->grid[1], "%s", g1);
	snprintf(l->grid[2], sizeof l->grid[2], "%s", g2);
	l->block = block;
	snprintf(l->smem, sizeof l->smem, "%s", smem);
	return l;
}

void launch_flops(Launch *l, int per_elem)
{
	if (per_elem > 0)
		snprintf(l->flops, sizeof l->flops, "B*L*D*%d", per_elem);
}

void tmpl_open(Tmpl *T, Launch *l)
{
	irb_kernel(&T->I, l->kernel, l->sig.ty, l->sig.n, l->block, l->minblocks);
	/* the tensor maps (tmap: and tmaprows: args) by value, and every
	 * generic pointer one of them: a map declared as a plain pointer would
	 * read 8 of the 128 bytes the runtime passes */
	int maps[TM_MAXARG], nmap = 0;
	for (int i = 0; i < l->sig.n; i++) {
		int is_map = ksig_map_tensor(l->sig.arg[i]) != NULL;
		CHECK(is_map == (l->sig.ty[i] == T->I.ptr));
		if (is_map)
			maps[nmap++] = i;
	}
	if (nmap)
		irb_tensor_map_params(&T->I, maps, nmap);
	/* before any memory access: the runtime may launch this kernel while the
	 * one ahead of it on the stream still runs (the manifest's "early") */
	if (!T->portable) {
		grid_dep_wait(&T->I);
		l->early = 1;
	}
	T->k.threads = l->block;
	T->k.grid_nt = NULL;
	T->k.docs_quiet = 0;
	T->k.marks_quiet = 0;
	T->k.gates_inline = gates_inline(T);
	T->k.proj_inline = T->k.gates_inline;   /* an unfused reduce or apply may add them (kern_proj) */
	/* A lane takes 4 adjacent channels where it can: a row's 16 channels
	 * are then 4 lanes x 8 bytes, one full 32-byte sector per store (in the
	 * mma's column order, 2q and 2q+1 of each 8, a store half-fills 8).
	 * Without projections nothing ties a slot to an mma column. With them
	 * the kernels that store rows set slots_adjacent after this (tmpl_fwd_apply,
	 * tmpl_bwd_apply) and permute the projections to match (wcol); the
	 * others keep the mma's order. */
	T->k.slots_adjacent = T->nbdproj == 0;
}

/* The zeroed workspaces of both passes -- the runtime's arena -- cleared
 * by the threads of the forward's first kernel where it uses none of them
 * (the manifest's "clears"), in place of the memset ahead of the forward:
 * a stream operation that the kernel behind it cannot start early against
 * (SAMU at L = 8192: 0.088 -> 0.086-0.087 ms). Every user of the arena
 * runs after this kernel ends (its griddepcontrol.wait). A kernel of its
 * own for it, where the first kernel uses the arena (RG-LRU's scans),
 * measured no faster than the memset. */
void tmpl_clear_args(Tmpl *T, Launch *l)
{
	l->clears = 1;
	ksig_add(T, &l->sig, "zero:base", T->I.gptr);
	ksig_add(T, &l->sig, "zero:words", T->I.i64);
}

/* after tmpl_open: 16-byte stores striding over the grid, then the last
 * 0-3 words (the arena is whole 32-bit words, its base 256-byte aligned) */
void tmpl_clear_emit(Tmpl *T, const Launch *l)
{
	Irb *I = &T->I;
	CHECK(l->clears);
	LLVMValueRef base = ksig_arg(T, &l->sig, "zero:base"), words = ksig_arg(T, &l->sig, "zero:words");
	LLVMValueRef nt = ci64(I, l->block);
	LLVMValueRef gtid = iadd(I, imul(I, sext64(I, ctaid(I, 0)), nt), sext64(I, tid_x(I)));
	LLVMValueRef gsize = imul(I, sext64(I, nctaid(I, 0)), nt);
	LLVMValueRef n16 = LLVMBuildLShr(I->b, words, ci64(I, 2), "");
	Loop L;
	loop_begin(I, &L, gtid, n16, gsize, "clr");
	st(I, LLVMConstNull(LLVMVectorType(I->i32, 4)), gep_f32(I, base, imul(I, loop_i(I, &L), ci64(I, 4))), 16);
	loop_end(I, &L);
	LLVMValueRef w = iadd(I, imul(I, n16, ci64(I, 4)), gtid);
	IfBlk f;
	if_begin(I, &f, LLVMBuildICmp(I->b, LLVMIntSLT, w, words, ""), "clr_tail");
	st(I, ci32(I, 0), gep_f32(I, base, w), 4);
	if_end(I, &f);
}

void ksig_add(Tmpl *T, KSig *s, const char *arg, LLVMTypeRef ty)
{
	(void)T;
	CHECK(s->n < TM_MAXARG);
	snprintf(s->arg[s->n], sizeof s->arg[0], "%s", arg);
	s->ty[s->n++] = ty;
}

const char *ksig_map_tensor(const char *arg)
{
	return !strncmp(arg, "tmap:", 5) ? arg + 5 : !strncmp(arg, "tmaprows:", 9) ? arg + 9 : NULL;
}

int ksig_find(const KSig *s, const char *arg)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->arg[i], arg) == 0)
			return i;
	return -1;
}

LLVMValueRef ksig_arg(Tmpl *T, const KSig *s, const char *arg)
{
	int i = ksig_find(s, arg);
	CHECK(i >= 0);
	return irb_arg(&T->I, i);
}

void ksig_params(Tmpl *T, KSig *s)
{
	char a[64];
	for (int p = 0; p < T->mx->nparam; p++) {
		snprintf(a, sizeof a, "param:%s", T->mx->param[p].name);
		ksig_add(T, s, a, T->I.gptr);
	}
}

LLVMValueRef ksig_param(Tmpl *T, const KSig *s, int p)
{
	char a[64];
	snprintf(a, sizeof a, "param:%s", T->mx->param[p].name);
	return ksig_arg(T, s, a);
}

void ksig_tok(Tmpl *T, KSig *s)
{
	if (T->ntokval > 0)
		ksig_add(T, s, "ws:tok", T->I.gptr);
}

void ksig_shape(Tmpl *T, KSig *s)
{
	/* every kernel that evaluates a step (step_inputs) takes the reset
	 * marks where the variant has them: each sees the same first */
	if (T->v->resets && !T->v->docs)   /* a docs variant's are in docs_prep's codes */
		ksig_add(T, s, "state:reset", T->I.gptr);
	/* and h0, whose presence makes t = 0 no reset (util/seqstate.h) */
	if (T->v->states || T->v->docs)
		ksig_add(T, s, "state:h0", T->I.gptr);
	/* a docs variant's every start and end per token (docs.c) */
	if (T->v->docs) {
		ksig_add(T, s, "ws:dcode", T->I.gptr);
		ksig_add(T, s, "state:hT", T->I.gptr);
		ksig_add(T, s, "state:dhT", T->I.gptr);
		ksig_add(T, s, "state:dh0", T->I.gptr);
	}
	/* and the projections, where they run apart (the gates are computed
	 * from them in every scan kernel: apart variants are fused) */
	char a[64];
	for (int j = 0; j < T->napj; j++) {
		snprintf(a, sizeof a, "ws:proj_%s", apj_weight(T, j));
		ksig_add(T, s, a, T->I.gptr);
	}
	ksig_add(T, s, "i32:L", T->I.i32);
	ksig_add(T, s, "i32:D", T->I.i32);
}

LLVMValueRef state_given(Irb *I, LLVMValueRef p)
{
	return LLVMBuildICmp(I->b, LLVMIntNE, LLVMBuildPtrToInt(I->b, p, I->i64, ""), ci64(I, 0), "");
}

/* p[idx] where p is not null and ok; else 0 (a caller's optional state) */
LLVMValueRef state_load(Irb *I, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef ok)
{
	LLVMValueRef given = state_given(I, p);
	Var v = var_init(I, cf32(I, 0.0), "state");
	IfBlk f;
	if_begin(I, &f, land(I, given, ok), "state_in");
	var_set(I, v, ld(I, I->f32, gep_f32(I, p, idx), 4));
	if_end(I, &f);
	return var_get(I, v);
}

/* p[idx] = v where p is not null and ok */
void state_store(Irb *I, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef ok, LLVMValueRef v)
{
	LLVMValueRef given = state_given(I, p);
	IfBlk f;
	if_begin(I, &f, land(I, given, ok), "state_out");
	st(I, v, gep_f32(I, p, idx), 4);
	if_end(I, &f);
}
