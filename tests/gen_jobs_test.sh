#!/usr/bin/env bash
# recur gen builds variants on several threads: the PTX and manifest must not
# depend on how many. Nor may a variant's PTX depend on the other variants of
# the script: derivation grows a mixer's graph (node order decides operand
# order), so each variant derives on its own copy. A SAMU grid with and
# without shared_sfu is the case that showed both.
#   usage: gen_jobs_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
unset RECUR_GEN_CACHE   # every generation here is compared with another: each must be built
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
cat > "$work/grid.lua" <<'LUA'
local R = require "recur"
return R.variants {
  mixer = require "arch.samu", chunk = { 8, 16 }, prefix = { 32 }, fused = { false },
  shared_sfu = { true, false }, fused_output = { true }, fused_write = { true },
  rules = { { "D % 64 == 0", "heads of 64" } },
}
LUA
"$recur" gen "$work/grid.lua" --lua "$src/lua" -o "$work/j1" -q -j 1; check $? "gen -j 1"
"$recur" gen "$work/grid.lua" --lua "$src/lua" -o "$work/j3" -q -j 3; check $? "gen -j 3"
n=$(ls "$work/j1"/*.ptx 2>/dev/null | wc -l)
[ "$n" -ge 4 ]; check $? "the grid has at least 4 variants ($n)"
diff -r "$work/j1" "$work/j3" > "$work/diff.txt"; check $? "-j 1 and -j 3 write the same bytes ($(head -c 300 "$work/diff.txt"))"
# the non-shared_sfu variant alone, after no other
cat > "$work/one.lua" <<'LUA'
local R = require "recur"
return R.variants {
  mixer = require "arch.samu", chunk = { 16 }, prefix = { 32 }, fused = { false },
  shared_sfu = { false }, fused_output = { true }, fused_write = { true },
  rules = { { "D % 64 == 0", "heads of 64" } },
}
LUA
"$recur" gen "$work/one.lua" --lua "$src/lua" -o "$work/one" -q; check $? "gen of one variant"
f=samu.fused_output_fused_write_grouped_prefix32_hierarchical_chunk16.ptx
cmp -s "$work/one/$f" "$work/j1/$f"; check $? "$f: the same bytes alone and after the shared_sfu variants"
out=$("$recur" gen "$work/grid.lua" --lua "$src/lua" -o "$work/j0" -q -j 0 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q -- "-j 0"; check $? "-j 0 refused ($out)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
