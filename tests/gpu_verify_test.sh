#!/usr/bin/env bash
# GPU test: every variant verified against the float64 reference at
# 1x64x64 (the JIT cache's warm-up) and L in {1, 37, 8192} x B in {1, 3} (D = 128 and 1024), at the cluster edge
# shapes, through a CUDA graph at two of them, on the golden cases' inputs against their expected outputs, and
# with large activations (the fp16 overflow guard); reset marks few and
# many; packed documents with a
# state each (lua/variants/docs.lua); the row's map and a sequence split
# through it (examples/split_map.c); heads of 256 (the projections apart,
# on wgmma too on a Hopper GPU, and fwd_scan projecting its own rows there); a single-pass backward
# over the device's capacity refused; calibration under a
# memory budget (its winner within it; none below y and dx alone), and
# beside a plain variant without the state ones. Skips, saying why, where no
# NVIDIA driver is present.
#   usage: gpu_verify_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
if [ -z "${RECUR_LIBCUDA:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
	echo "SKIP: no NVIDIA driver (libcuda.so.1) on this machine; run this test where a GPU is present"
	exit 77
fi
rm -rf "$work"; mkdir -p "$work"
"$recur" gen "$src/lua/variants/all.lua" -o "$work/ptx" -q || { echo "FAIL: recur gen"; exit 1; }
rc=0
# the driver compiles each variant's PTX once into its cache, many at once
# (each a verify at 1x64x64), instead of one after another in the first
# verify below
bash "$src/bench/jit_warm.sh" "$recur" "$work/ptx" "" "$work/jit_warm.log" || rc=1
args=()
for B in 1 3; do for L in 1 37 8192; do args+=(--shape "${B}x${L}x128"); done; done
# RG-LRU's bwd_apply with fewer blocks than tiles, so that its clusters of 2
# divide them (L = 768 and 1280 at tiles of 256: 3 and 5 tiles)
args+=(--shape 1x8192x1024 --shape 3x37x1024 --shape 2x768x128 --shape 1x1280x128)
"$recur" verify --dir "$work/ptx" "${args[@]}" || rc=1
# every variant through a CUDA graph of its forward+backward, replayed twice
# (the replays must clear their workspaces; the calls after them must give
# the same gradient bits)
"$recur" verify --dir "$work/ptx" --graph --shape 2x37x128 --shape 1x8192x1024 || rc=1
# activations large enough that RG-LRU's kept fp16 step maps (look-back,
# prefix 32, chunk 8) would overflow: the blocks that meet one must sweep
# the gates in fp32 instead, so no output may be Inf or NaN. (At this scale
# the gradients miss the 1e-2 tolerance with or without the kept maps, a
# known limit: only finiteness is asserted here.)
big=$("$recur" verify --dir "$work/ptx" --variant fused_grouped_prefix32_lookback_chunk8 --x-scale 1e5 --shape 1x8192x1024 2>&1)
if echo "$big" | grep -q "fused_grouped_prefix32_lookback_chunk8 .* \(PASS\|FAIL\)" && ! echo "$big" | grep -q nonfinite; then
	echo "ok   x-scale 1e5: every output finite (fp16 overflow guard)"
else
	echo "FAIL x-scale 1e5: non-finite outputs or no result:"; echo "$big" | tail -3; rc=1
fi
# a single-pass backward's blocks wait on each other: a grid the device
# cannot hold at once (here a head's 64 blocks for its 64 groups, 1024 in
# all) is refused, naming the kernel, rather than launched to hang; verify
# reports it as a variant this GPU skips, not as a failure
cp -r "$work/ptx" "$work/ptx_big"
sed -i 's|min(NG,min(16,max(1,256/(H\*B))))|min(NG,4096)|g' "$work/ptx_big/manifest.json"
res=$(timeout 120 "$recur" verify --dir "$work/ptx_big" --mixer rglru --variant fused_grouped_prefix32_onepass_chunk8 \
	--shape 1x8192x1024 2>&1)
want="skip: not on this GPU: .*bwd_apply waits across its blocks .* all 1024 of grid (64,16,1) must be resident at once"
if echo "$res" | grep -q "$want" &&
	! echo "$res" | grep -q " FAIL "; then
	echo "ok   a single-pass backward's grid over the device's capacity is refused: $(echo "$res" | grep -o "all 1024.*" | head -1)"
else
	echo "FAIL single-pass backward over capacity not refused as such:"; echo "$res" | tail -3; rc=1
fi
# calibration under a memory budget: the winner holds at most the budget,
# and a budget below y and dx alone (4 B/element) leaves no winner, which
# bench then refuses, naming the budget
cal="$work/cal.json"
line=$("$recur" calibrate --dir "$work/ptx" --mixer rglru --shapes 1x8192x1024 --samples 1 --warmup 0 \
	--memory-budget 4.5 --out "$cal" 2>/dev/null | grep "^rglru ")
bpe=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "B/el") print $i }')
if [ -n "$bpe" ] && awk -v b="$bpe" 'BEGIN { exit !(b > 0 && b <= 4.5) }'; then
	echo "ok   calibrate --memory-budget 4.5: $line"
else
	echo "FAIL calibrate --memory-budget 4.5: winner over the budget or none: $line"; rc=1
fi
none=$("$recur" calibrate --dir "$work/ptx" --mixer rglru --shapes 1x8192x1024 --samples 1 --warmup 0 \
	--memory-budget 1 --out "$cal" 2>/dev/null | grep "^rglru ")
msg=$("$recur" bench --dir "$work/ptx" --mixer rglru --shapes 1x8192x1024 --calibration "$cal" --rounds 1 --samples 1 2>&1)
if [ $? -ne 0 ] && echo "$none" | grep -q "none within 1 B/element" &&
	echo "$msg" | grep -q "memory budget of 1 extra bytes per element"; then
	echo "ok   calibrate --memory-budget 1: no winner ($none); bench refuses, naming the budget"
else
	echo "FAIL calibrate --memory-budget 1: $none / $(echo "$msg" | tail -2)"; rc=1
fi
# a folder of plain and state variants (as RecurrentGemma's grid): calibrate
# times the plain one, and lists the variant taking a state as skipped,
# saying why (a call without a state runs the plain one)
cat > "$work/lean.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "onepass" } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "onepass" },
    resets = { true }, states = { true } },
}
LUA
lean=$("$recur" gen "$work/lean.lua" --lua "$src/lua" -o "$work/lean" -q &&
	"$recur" calibrate --dir "$work/lean" --shapes 1x8192x1024 --samples 1 --warmup 0 --out "$work/lean.json" \
		> /dev/null 2>&1 && python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["entries"][0]
skip = {s["variant"]: s["reason"] for s in e.get("skipped", [])}
print(e.get("winner"), "|", skip.get("resets_states_fused_grouped_prefix32_onepass_chunk8", "not skipped"))' "$work/lean.json" 2>&1)
if echo "$lean" | grep -q "^fused_grouped_prefix32_onepass_chunk8 | takes a sequence state (.*): a call without one"; then
	echo "ok   calibrate beside a plain variant skips the one taking a state: $lean"
else
	echo "FAIL calibrate of plain and state variants: $lean"; rc=1
fi
# reset marks few (at 0.0005: past the first 2048 tokens of every 4096
# most tiles and groups hold none) and many, in the chunk-8 scans
cat > "$work/marks.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "lookback", "onepass" }, resets = { true }, states = { false, true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "lookback", "onepass" }, resets = { true } },
}
LUA
if "$recur" gen "$work/marks.lua" --lua "$src/lua" -o "$work/marks" -q; then
	"$recur" verify --dir "$work/marks" --resets 0.0005 --shape 1x16384x1024 --shape 3x1000x1024 || rc=1
	"$recur" verify --dir "$work/marks" --resets 0.01 --shape 2x777x2048 || rc=1
	"$recur" verify --dir "$work/marks" --resets 0.0005 --h0 --variant resets_states_fused_grouped_prefix32_onepass_chunk8 \
		--variant resets_states_fused_grouped_prefix32_lookback_chunk8 --shape 2x8192x1024 || rc=1
else
	echo "FAIL: recur gen of the marks grid"; rc=1
fi
# packed documents with a state each (lua/variants/docs.lua, every scan
# kind): up to 1000 documents in a row, documents longer than a tile, and
# the reset/h0 form, hT, dh0 and the weights against float64 (the look-back
# scans once stored the row's end state in the first document's hT)
if "$recur" gen "$src/lua/variants/docs.lua" -o "$work/docs" -q; then
	bash "$src/bench/jit_warm.sh" "$recur" "$work/docs" "" "$work/jit_warm_docs.log" || rc=1
	"$recur" verify --dir "$work/docs" --docs 1000 --packed --shape 1x8192x1024 || rc=1
	"$recur" verify --dir "$work/docs" --docs 8 --packed --h0 --shape 1x16384x1024 || rc=1
	"$recur" verify --dir "$work/docs" --h0 --resets 0.01 --shape 3x1000x1024 || rc=1
else
	echo "FAIL: recur gen lua/variants/docs.lua"; rc=1
fi
# the row's map (map = { true }, every scan kind): map_loga and map_h
# against float64 with random h0, -inf exactly where a mark cuts a row;
# then a sequence split into parts through the maps (examples/split_map.c,
# built beside recur) against one forward over the whole
cat > "$work/map.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "lookback", "onepass" }, resets = { false, true }, states = { true }, map = { true } },
}
LUA
if "$recur" gen "$work/map.lua" --lua "$src/lua" -o "$work/map" -q; then
	"$recur" verify --dir "$work/map" --h0 --shape 3x1000x1024 --shape 2x777x2048 || rc=1
	"$recur" verify --dir "$work/map" --h0 --resets 0.01 --variant resets_states_map_fused_grouped_prefix32_lookback_chunk8 \
		--shape 3x1000x1024 || rc=1
	split=$(dirname "$recur")/split_map
	if [ -x "$split" ]; then
		"$split" "$work/map" states_map_fused_grouped_prefix32_lookback_chunk8 2 8192 1024 4 || rc=1
		"$split" "$work/map" states_map_fused_grouped_prefix32_hierarchical_chunk8 1 3001 512 3 || rc=1
	else
		echo "FAIL: no $split (cmake builds it beside recur)"; rc=1
	fi
else
	echo "FAIL: recur gen of the map grid"; rc=1
fi
# bench's tables (stdout) and progress (stderr) into one file: every line
# whole (a fully buffered stdout once cut a kernel's profile row in two
# where a progress row landed)
"$recur" bench --dir "$work/ptx" --mixer rglru --variant fused_grouped_prefix32_lookback_chunk8 --rounds 1 --samples 2 \
	--shapes 1x8192x1024,1x4096x1024,2x4096x1024,1x2048x1024 --profile --out "$work/both.json" > "$work/both.log" 2>&1 || rc=1
cut=$(grep -E '^  (forward|backward) ' "$work/both.log" | awk 'NF != 11' | head -3)
rows=$(grep -cE '^  (forward|backward) ' "$work/both.log")
# and each profile's line of the variant's own memory floor (every kernel's bytes at the copy rate)
own=$(grep -cE '^  all kernels: [0-9.]+ MB, [0-9.]+ ms at [0-9]+ GB/s; their times sum to [0-9.]+ ms \([0-9.]+x\)$' "$work/both.log")
if [ -z "$cut" ] && [ "$rows" -ge 16 ] && [ "$own" = 4 ]; then
	echo "ok   bench's profile rows whole with stderr in the same file ($rows rows), each profile's own floor ($own)"
else
	echo "FAIL bench's profile rows cut or missing ($rows rows, $own floor lines of 4): $cut"; rc=1
fi
# heads of 256 channels (tests/grids/apart.lua, every scan kind): the
# projections apart on mma.sync (sm_90), and on a compute-capability 9.0 GPU
# on wgmma (sm_90a modules load there alone)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
for sm in sm_90 sm_90a; do
	if [ "$sm" = sm_90a ] && [ "$cc" != 9.0 ]; then
		echo "skip heads of 256 for sm_90a: the GPU's compute capability is ${cc:-unknown}, not 9.0"
		continue
	fi
	if APART_K=256 "$recur" gen "$src/tests/grids/apart.lua" --lua "$src/lua" --sm $sm -o "$work/apart_$sm" -q; then
		"$recur" verify --dir "$work/apart_$sm" --shape 2x1000x2560 --shape 3x77x512 || rc=1
	else
		echo "FAIL: recur gen of tests/grids/apart.lua for $sm"; rc=1
	fi
done
# the forward's projections inside fwd_scan (scan_proj: wgmma, a compute-capability
# 9.0 GPU), heads of 128 (two contraction blocks a trip loop) beside their twins
if [ "$cc" = 9.0 ]; then
	if SCANPROJ_K=128 "$recur" gen "$src/tests/grids/scanproj.lua" --lua "$src/lua" --sm sm_90a -o "$work/scanproj" -q; then
		"$recur" verify --dir "$work/scanproj" --shape 3x1000x1024 --shape 2x333x256 || rc=1
		"$recur" verify --dir "$work/scanproj" --variant apart_scanproj_resets_states_fused_grouped_prefix32_onepass_chunk8 \
			--resets 0.01 --h0 --shape 2x333x256 || rc=1
	else
		echo "FAIL: recur gen of tests/grids/scanproj.lua"; rc=1
	fi
else
	echo "skip scan_proj: the GPU's compute capability is ${cc:-unknown}, not 9.0"
fi
goldens=${RECUR_GOLDENS:-$src/tests/goldens}
if [ -d "$goldens" ]; then
	"$recur" verify --dir "$work/ptx" --goldens "$goldens" || rc=1
else
	echo "FAIL: golden cases not found at $goldens (set RECUR_GOLDENS)"; rc=1
fi
exit $rc
