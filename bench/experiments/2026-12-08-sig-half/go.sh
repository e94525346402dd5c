#!/usr/bin/env bash
# The halved sigmoid argument (commits 3d78e5a, 0b0454f) on the device: the
# sets before and after must give the same bits, and proj_fwd is timed on
# both. Run from the repository root with the binary and its library
# carried (.carry/, as bench/h200_suite.sh does) and the sets unpacked:
#   mkdir -p sets; tar xJf .carry/sh.tar.xz -C sets
#   RECUR_BIN=.carry/recur bash bench/experiments/2026-12-08-sig-half/go.sh
# sets/sh holds old90a/new90a (RecurrentGemma for sm_90a: wgmma proj_fwd),
# old90/new90 (for sm_90: mma.sync proj_fwd) and oldsp/newsp (heads of 256,
# scan_proj with proj_ahead's producer). Results into $OUT/res.
set -u
R=$(realpath "${RECUR_BIN:-.carry/recur}") U=${SH_ROOT:-sets/sh} O=${OUT:-out}/res
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$O/gpu.txt"
V=apart_fused_grouped_prefix32_onepass_chunk8
VA=apart_scanproj_ahead_fused_grouped_prefix32_onepass_chunk8
for s in old90a new90a old90 new90 oldsp newsp; do WARM_SHAPE=1x64x512 bash bench/jit_warm.sh "$R" "$U/$s" 16 "$O/warm.log"; done
# 1. the new sets against float64 (shapes of the issue: L no multiple of a tile, B > 1)
for s in new90a new90 newsp; do
	"$R" verify --dir "$U/$s" --shape 2x1000x2560 --shape 1x4096x4096 --shape 3x77x512 > "$O/verify_$s.log" 2>&1
	echo "verify $s: $(tail -1 "$O/verify_$s.log")"
done
# 2. the same bits before and after: every output and gradient dumped at one seed
same() {   # SET_OLD SET_NEW VARIANT SHAPE
	local a=$O/dump/$1_$3_$4 b=$O/dump/$2_$3_$4
	mkdir -p "$a" "$b"
	"$R" verify --dir "$U/$1" --variant "$3" --shape "$4" --seed 7 --dump "$a" > "$a.log" 2>&1
	"$R" verify --dir "$U/$2" --variant "$3" --shape "$4" --seed 7 --dump "$b" > "$b.log" 2>&1
	local n d
	n=$(find "$a" -name '*.npy' | wc -l)
	d=$(diff -rq "$a" "$b" | wc -l)
	echo "bits $1 -> $2 $3 $4: $n arrays, $d differ"
}
for sh in 2x1000x2560 1x4096x4096; do
	same old90a new90a $V $sh
	same old90 new90 $V $sh
	same oldsp newsp $VA $sh
done | tee "$O/bits.txt"
# 3. proj_fwd and f+b, old and new alternated twice
SHAPES=${SHAPES:-1x131072x4096 1x32768x4096 1x8192x2560}
for _ in 1 2; do for sh in $SHAPES; do for s in old90a new90a old90 new90 oldsp newsp; do
	v=$V; case $s in *sp) v=$VA ;; esac
	echo "== $s $v $sh"
	"$R" bench --dir "$U/$s" --mixer rglru --variant $v --shapes $sh --rounds 1 --samples 5 --profile --out "$O/b.json" 2>&1
done; done; done > "$O/time.log"
awk '/^== /{s=$2; sh=$4} /rglru_proj_fwd|rglru_fwd_scan/{print s, sh, $2, $3} /^rglru +1x/{print s, sh, "f+b", $6}' "$O/time.log" |
	awk '!seen[$0]++' | sort -k2,2 -k3,3 -k1,1 | tee "$O/summary.txt"
