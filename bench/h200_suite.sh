#!/usr/bin/env bash
# The GPU suite, one device call, nothing built there: goldens for every
# variant, verify at the seed's shapes and B=3 L=1000 with warm timings, then
# the protocol benchmark of the fastest fused variant at L = 131072 with the
# measured copy-bandwidth floor. Logs and result files go to $OUT; a short
# table is printed last.
#   usage: bench/h200_suite.sh [PTX_SET ...]   (sets unpacked from .carry/*.tar.xz;
#          the first whose goldens all pass is used)
set -u
OUT=${OUT:-/tmp/recur-out}
BIN=${RECUR_BIN:-.carry/recur}
mkdir -p "$OUT" /tmp/recur-ptx
for f in .carry/ptx*.tar.xz; do [ -f "$f" ] && tar xJf "$f" -C /tmp/recur-ptx; done
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(ptx)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
dir=""
for s in "${sets[@]}"; do
	d=/tmp/recur-ptx/$s
	# the goldens, and a shape with many tiles per sequence and a tail
	if "$BIN" verify --dir "$d" --goldens .carry/goldens > "$OUT/goldens_$s.log" 2>&1 &&
	   "$BIN" verify --dir "$d" --shape 3x5000x256 --shape 2x37x64 > "$OUT/tiles_$s.log" 2>&1; then
		dir=$d; echo "goldens and tiles: $s passes ($(tail -1 "$OUT/goldens_$s.log"); $(tail -1 "$OUT/tiles_$s.log"))"; break
	fi
	echo "goldens or tiles: $s FAILS"; grep -h "FAIL" "$OUT/goldens_$s.log" "$OUT/tiles_$s.log" 2>/dev/null | head -5
done
[ -n "$dir" ] || { echo "no PTX set passed the goldens"; exit 1; }
"$BIN" verify --dir "$dir" --time 5 --shape 1x8192x1024 --shape 1x32768x1024 --shape 1x65536x1024 \
	--shape 1x131072x1024 --shape 3x1000x1024 > "$OUT/verify_seed.log" 2>&1
vrc=$?
best=$(awk '$1 ~ /^fused_/ && $2 ~ /^1x131072/ && $3 == "PASS" { for (i = 1; i < NF; i++) { if ($i == "fwd") f = $(i+1); if ($i == "bwd") b = $(i+1) } print f + b, $1 }' "$OUT/verify_seed.log" | sort -g | head -1 | awk '{ print $2 }')
echo "fastest fused variant at L=131072 (warm): ${best:-none}"
if [ -n "$best" ]; then
	"$BIN" bench --dir "$dir" --shapes 1x131072x1024 --variant "$best" --profile --out "$OUT/results_h200.json" > "$OUT/bench.log" 2>&1
	tail -25 "$OUT/bench.log"
fi
echo "== verify at the seed's shapes ($dir): $(tail -1 "$OUT/verify_seed.log")"
grep -E "FAIL" "$OUT/verify_seed.log" | head -10
awk '$2 ~ /^1x131072/ { for (i = 1; i < NF; i++) { if ($i == "fwd") f = $(i+1); if ($i == "bwd") b = $(i+1) } printf "%-48s %s fwd %s bwd %s\n", $1, $3, f, b }' "$OUT/verify_seed.log"
exit $vrc
