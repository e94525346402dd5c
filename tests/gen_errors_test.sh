#!/usr/bin/env bash
# recur gen on a broken script: the message names the script's file and line,
# the exit status is non-zero, and the output directory is left exactly as it
# was (no partial PTX, no manifest, no temporary directory). Each message
# comes from the smallest grid that triggers it: two variants (one per
# mixer, a script returning a list of sets) where a grid must generate.
#   usage: gen_errors_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work/out"
cat > "$work/small.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = {8}, prefix = {32}, fused = {true} },
  R.variants { mixer = require "arch.samu", chunk = {8}, prefix = {32}, fused = {false},
               shared_sfu = {true}, fused_output = {true}, fused_write = {true} },
}
LUA
small=$work/small.lua
echo keep > "$work/out/marker"
pass=0 fail=0
. "$src/tests/check_lib.sh"
cat > "$work/bad.lua" <<'LUA'
local R = require "recur"
local m = R.mixer("m", { k = 64 })
local lam = m:param("lam", "channel", R.zeros())
m:recurrence { log_a = -R.softplus(lam), b = m.x * m.h }
return R.variants { mixer = m, chunk = {8}, prefix = {32} }
LUA
out=$("$recur" gen "$work/bad.lua" -o "$work/out" -q 2>&1); rc=$?
[ $rc -ne 0 ]; check $? "exit status non-zero on a script error ($rc)"
echo "$out" | grep -q "bad.lua:4:"; check $? "message names bad.lua:4: ($out)"
[ "$(ls "$work/out")" = marker ]; check $? "output directory untouched"
[ -z "$(ls -d "$work"/out.tmp.* 2>/dev/null)" ]; check $? "no temporary directory left"
# --check: the same refusal at the same line, and it writes nothing even where it succeeds
out=$("$recur" gen "$work/bad.lua" -o "$work/out" --check 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "bad.lua:4:"; check $? "gen --check: exit 1, message names bad.lua:4: ($out)"
out=$("$recur" gen "$small" -o "$work/out" --check 2>&1); rc=$?
[ $rc = 0 ] && [ "$(ls "$work/out")" = marker ] && [ -z "$(ls -d "$work"/out.tmp.* 2>/dev/null)" ] &&
	[ "$(echo "$out" | grep -c '^    ')" -ge 8 ] &&
	echo "$out" | grep -q "^checked 2 variants for sm_90: every launch fits; nothing written$"
check $? "gen --check of a good grid: its launches printed, the output directory untouched (rc $rc)"
out=$("$recur" gen "$small" -o "$work/out" --check --cubin 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "no --cubin"; check $? "gen --check --cubin refused ($out)"
out=$("$recur" gen "$small" -o "$work/out" --ptx 9.9 -q 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "PTX ISA 9.9"; check $? "unknown PTX ISA refused ($out)"
[ "$(ls "$work/out")" = marker ]; check $? "output directory untouched after a refused target"
out=$("$recur" gen "$small" -o "$work/out" --sm sm_70 -q 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "sm_70"; check $? "sm_70 refused ($out)"
# (a folder holding what gen did not write is refused: tests/gen_output_test.sh)
rm "$work/out/marker"
"$recur" gen "$small" -o "$work/out" -q; check $? "gen succeeds into an existing empty directory"
[ -f "$work/out/manifest.json" ] && [ "$(ls "$work/out" | wc -l)" = 3 ] && [ "$(ls "$work/out"/*.ptx | wc -l)" = 2 ]
check $? "the directory holds what gen wrote: 2 PTX files and a manifest"
grep -q '"ptx_isa": "8.0"' "$work/out/manifest.json"; check $? "manifest records the PTX ISA version"
for f in rglru.fused_grouped_prefix32_hierarchical_chunk8 samu.fused_output_fused_write_shared_sfu_grouped_prefix32_hierarchical_chunk8; do
	grep -q '^.version 8.0' "$work/out/$f.ptx"; check $? "$f.ptx carries .version 8.0"
	grep -q "^.visible .entry ${f%%.*}_bwd_apply(" "$work/out/$f.ptx"; check $? "$f.ptx: kernels are .entry (launchable)"
done
"$recur" gen "$small" -o "$work/new/deeper/ptx" -q && [ -f "$work/new/deeper/ptx/manifest.json" ]
check $? "gen creates missing parent directories"
# what the templates cannot generate is refused at the variant grid's line
cat > "$work/samu_fused.lua" <<'LUA'
local R = require "recur"
return R.variants { mixer = require "arch.samu", chunk = {8}, prefix = {32}, fused = {true},
                    fused_output = {true} }
LUA
out=$("$recur" gen "$work/samu_fused.lua" -o "$work/out" -q 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "samu_fused.lua:2: variant .*per-token projection u .*separate fp32 pass"
check $? "a controller fused into the scan kernel is refused at the grid's line ($out)"
cat > "$work/samu_out.lua" <<'LUA'
local R = require "recur"

return R.variants { mixer = require "arch.samu", chunk = {8}, prefix = {32}, fused_output = {false} }
LUA
out=$("$recur" gen "$work/samu_out.lua" -o "$work/out" -q 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "samu_out.lua:3: variant .*fused_output = false"
check $? "an output pass of its own is refused at the grid's line ($out)"
[ -f "$work/out/manifest.json" ] && [ "$(ls "$work/out"/*.ptx | wc -l)" = 2 ]; check $? "refused grids leave the previous output whole"
out=$("$recur" list --dir "$work/out" --shape 1x37x100 2>&1)
echo "$out" | grep -q "illegal (shape B=1 L=37 D=100: the width must be a multiple of 64"; check $? "list explains an illegal shape"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
