#!/usr/bin/env bash
# sqrtb's derivative without constants (8f1b71f) and the held gate
# fragments halved (38adbef, as c0b37ee leaves them) on the device: the
# backward's new rounding against float64, the halving's same bits, and
# bwd_apply and fwd_scan timed before and after. Run from the repository
# root with the binary and its library carried (.carry/, as
# bench/h200_suite.sh does) and .carry/sh.tar.xz unpacked into sets/
# (mkdir -p sets; tar xJf .carry/sh.tar.xz -C sets):
#   RECUR_BIN=.carry/recur bash bench/experiments/2026-12-08-sqrtb-grad/go.sh
# sets/sh: new90a/head90a and new90/head90 (RecurrentGemma for sm_90a and
# sm_90 before and after), k64old/k64mid/k64head (winners.lua: the seed
# shapes' RG-LRU and SAMU winners before 8f1b71f, at 8f1b71f, and at
# c0b37ee with the halved gate fragments), docsold/docshead
# (lua/variants/docs.lua before this session and at c0b37ee). Results
# into $OUT/res_sqrtb.
set -u
R=$(realpath "${RECUR_BIN:-.carry/recur}") U=${SH_ROOT:-sets/sh} O=${OUT:-out}/res_sqrtb
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$O/gpu.txt"
for s in head90a head90 k64old k64mid k64head docsold docshead; do WARM_SHAPE=1x64x512 bash bench/jit_warm.sh "$R" "$U/$s" 16 "$O/warm.log"; done
# 1. the changed backward against float64: heads of 256 (B > 1, L no multiple
# of a tile), and the seed's width with resets and carried states where a
# variant takes them
for s in head90a head90; do
	"$R" verify --dir "$U/$s" --shape 2x1000x2560 --shape 1x4096x4096 --shape 3x77x512 > "$O/verify_$s.log" 2>&1
	echo "verify $s: $(tail -1 "$O/verify_$s.log")"
done
"$R" verify --dir "$U/k64head" --shape 2x1000x1024 --shape 1x4096x1024 --shape 3x77x512 > "$O/verify_k64head.log" 2>&1
echo "verify k64head: $(tail -1 "$O/verify_k64head.log")"
"$R" verify --dir "$U/k64head" --shape 2x1000x1024 --x-scale 30 > "$O/verify_k64head_x30.log" 2>&1
echo "verify k64head --x-scale 30: $(tail -1 "$O/verify_k64head_x30.log")"
"$R" verify --dir "$U/docshead" --mixer rglru --shape 1x4096x1024 --docs 6 --packed --h0 > "$O/verify_docshead.log" 2>&1
echo "verify docshead --docs 6 --packed --h0: $(tail -1 "$O/verify_docshead.log")"
# 2. the halved gate fragments keep the bits: k64mid is 8f1b71f's set,
# k64head the tree's (c0b37ee); every output and gradient at one seed
for sh in 2x1000x1024 1x4096x1024; do for m in rglru samu; do
	a=$O/dump/k64mid_${m}_$sh b=$O/dump/k64head_${m}_$sh
	mkdir -p "$a" "$b"
	"$R" verify --dir "$U/k64mid" --mixer $m --shape $sh --seed 7 --dump "$a" > "$a.log" 2>&1
	"$R" verify --dir "$U/k64head" --mixer $m --shape $sh --seed 7 --dump "$b" > "$b.log" 2>&1
	echo "bits k64mid -> k64head $m $sh: $(find "$a" -name '*.npy' | wc -l) arrays, $(diff -rq "$a" "$b" | wc -l) differ"
done; done | tee "$O/bits.txt"
# 3. bwd_apply and f+b, before and after alternated twice
V=apart_fused_grouped_prefix32_onepass_chunk8
for _ in 1 2; do
	for sh in 1x131072x4096 1x32768x4096; do for s in new90a head90a; do
		echo "== $s rglru $sh"
		"$R" bench --dir "$U/$s" --mixer rglru --variant $V --shapes $sh --rounds 1 --samples 5 --profile --out "$O/b.json" 2>&1
	done; done
	for sh in 1x131072x1024 1x32768x1024; do for s in k64old k64head; do for m in rglru samu; do
		echo "== $s $m $sh"
		"$R" bench --dir "$U/$s" --mixer $m --shapes $sh --rounds 1 --samples 5 --profile --out "$O/b.json" 2>&1
	done; done; done
	for s in docsold docshead; do for v in docs_fused_grouped_prefix32_onepass_chunk8 docs_fused_grouped_prefix32_lookback_chunk8; do
		echo "== $s rglru 1x131072x1024 $v"
		"$R" bench --dir "$U/$s" --mixer rglru --variant $v --shapes 1x131072x1024 --resets 0.00049 --packed \
			--rounds 1 --samples 5 --profile --out "$O/b.json" 2>&1
	done; done
done > "$O/time.log"
awk '/^== /{s=$2; m=$3; sh=$4} $2 ~ /_(bwd_apply|fwd_scan)$/{print s, m, sh, $2, $3} $1 ~ /^(rglru|samu)$/ && $2 ~ /^1x/{print s, m, sh, "f+b", $6}' "$O/time.log" |
	sort -k3,3 -k2,2 -k4,4 -k1,1 | tee "$O/summary.txt"
