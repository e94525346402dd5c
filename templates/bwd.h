/* bwd_apply's pieces, shared by its files: bwd_apply.c (the kernel, a
 * group's phases), bwd_layout.c, bwd_hmaps.c, bwd_dw.c, bwd_tok.c. */
#ifndef RECUR_BWD_H
#define RECUR_BWD_H

#include "tmpl.h"
#include "diag.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared memory of bwd_apply, byte offsets. Per-thread regions are laid
 * out [word][thread] so a warp's accesses never conflict, and no thread
 * reads another's words in them. */
typedef struct {
	int hprev;      /* h before each step of a segment, [step][slot][thread] */
	int nh, hm0;    /* the chunk's last nh segments read h from pass A's maps of steps hm0 .. C-2 */
	int h16;        /* those maps as 16-bit pairs (map16_pack), half the bytes */
	int segf;       /* what a segment stages (SEG_*) */
	int dpa, scal, wmat, dW, xs, dz, tail, bmap, nbm, total;
} BwdSmem;

/* Two blocks per SM (4 warps each, smem_2blk) are what hides this kernel's latency */
#define MAP_BYTES (TM_SLOTS * 2 * 128 * 4)   /* one map [slot][A, B][thread] */
#define MAP16_BYTES (TM_SLOTS * 128 * 4)    /* one map [slot][thread] of 16-bit pairs */

typedef struct {
	Tmpl *T;
	Lanes *ln;
	const PartMap *pm;
	BwdSmem sm;
	Var cacc[MX_MAXPARAM][4];               /* channel partials per lane channel */
	Var sacc[MX_MAXPARAM];                  /* scalar partials per lane */
	LLVMValueRef gb;
	Var *h0;                                /* h at the chunk's start per slot */
	int hm;                                 /* this segment reads h from pass A's maps */
	LLVMValueRef dtokp;                     /* per-(token, head) adjoints of the per-token values */
	LLVMValueRef NG;                        /* groups per sequence */
	const KSig *sig;
	LLVMValueRef (*wdx)[4][2][2];           /* dx's B fragments held over the reverse sweep, or NULL */
} Bwd;

/* shared memory (bwd_layout.c) */
BwdSmem bwd_smem(const Tmpl *T, const PartMap *pm);

/* h before each step (bwd_hmaps.c) */
LLVMValueRef bmap_at(Bwd *bw, LLVMValueRef k, int s, int ab);
LLVMValueRef hmap_at(Bwd *bw, LLVMValueRef k, int s, int ab);
LLVMValueRef hprev_at(Bwd *bw, LLVMValueRef k, int s);
void hmap_store(Bwd *bw, LLVMValueRef k, const Maps *fm);
void hmap_hprev(Bwd *bw, LLVMValueRef i, LLVMValueRef hp[TM_SLOTS]);

/* weight gradients (bwd_dw.c) */
LLVMValueRef dw_acc(Bwd *bw, int j, int kt, int e);
LLVMValueRef dpa_at(Bwd *bw, LLVMValueRef si, int j, LLVMValueRef w, LLVMValueRef t, LLVMValueRef half);
void dw_segment(Bwd *bw, int s0);
void dw_cluster_write(Bwd *bw, const KSig *sig, LLVMValueRef Bn, LLVMValueRef H);

/* token adjoints (bwd_tok.c) */
void tok_partials(Bwd *bw, Step *stp, LLVMValueRef si, LLVMValueRef gz[TM_SLOTS][TM_MAXZ]);
void tok_flush(Bwd *bw, int s0);
int tok_tail_mid(const Tmpl *T);
LLVMValueRef prev_group(Bwd *bw, LLVMValueRef gb);
void tok_tail_at(Bwd *bw, LLVMValueRef NG, LLVMValueRef gb);

#endif
