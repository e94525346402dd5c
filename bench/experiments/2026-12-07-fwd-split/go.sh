#!/usr/bin/env bash
# FWD_SPLIT's A/B on the device: run from the repository root with the binary,
# its library and the sets carried (see README.md); results into $OUT/res
set -u
R0=$(realpath "${RECUR_BIN:-.carry/recur}") U=${AB_ROOT:-sets/ab} SETS=${SETS:-ctl split s16}   # SETS: the timed sets, ctl first
# the split form has never run: a kernel that hangs costs HANG_S seconds of
# the call, not all of it (timeout's 124 then stands in its log), warm-up included
R=$(mktemp)
printf '#!/bin/sh\nexec timeout %s "%s" "$@"\n' "${HANG_S:-120}" "$R0" > "$R"
chmod +x "$R"
trap 'rm -f "$R"' EXIT
mkdir -p "$OUT/res"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/res/gpu.txt"
for s in $SETS; do WARM_SHAPE=1x64x512 bash bench/jit_warm.sh "$R" "$U/$s" 16 "$OUT/res/warm.log"; done
for s in $SETS; do
	[ "$s" = ctl ] && continue
	"$R" verify --dir "$U/$s" --shape 2x1000x2560 --shape 1x4096x4096 --shape 3x77x512 > "$OUT/res/verify_$s.log" 2>&1
	tail -1 "$OUT/res/verify_$s.log"
done
# heads of 128 and 64 where their sets are carried (AB_ROOT128, AB_ROOT64: switch_sets.sh with APART_K=128, 64)
for k in 128 64; do
	eval "d=\${AB_ROOT$k:-}"
	[ -n "$d" ] && [ -d "$d/split" ] || continue
	WARM_SHAPE=1x64x256 bash bench/jit_warm.sh "$R" "$d/split" 16 "$OUT/res/warm.log"
	"$R" verify --dir "$d/split" --shape 3x1000x1024 --shape 2x333x256 > "$OUT/res/verify_split$k.log" 2>&1
	tail -1 "$OUT/res/verify_split$k.log"
done
V=apart_fused_grouped_prefix32_onepass_chunk8
SHAPES=${SHAPES:-1x131072x4096 1x32768x4096 1x131072x2560 1x8192x2560}   # the timed shapes
for _ in 1 2; do for sh in $SHAPES; do for s in $SETS; do
	echo "== $s $V $sh"
	"$R" bench --dir "$U/$s" --mixer rglru --variant $V --shapes $sh --rounds 1 --samples 5 --profile --out b.json 2>&1
done; done; done > "$OUT/res/time.log"
awk '/^== /{s=$2; sh=$4} /rglru_proj_fwd|rglru_proj_dxdw/{print s, sh, $2, $3} /^rglru +1x/{print s, sh, "f+b", $6}' "$OUT/res/time.log" |
	awk '!seen[$0]++' | sort -k2,2 -k3,3 -k1,1
