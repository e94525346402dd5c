#!/usr/bin/env bash
# recur gen on scripts a hostile user can write, end to end: what the
# script reader alone cannot show (tests/test_fuzz_script.c has the corpus
# and the mutants) -- the templates and LLVM behind it, the default budget,
# the exit status. Each refusal must be one message at the script's
# FILE:LINE, exit status 1 (never a signal), and the output folder left as
# it was; each accepted script must generate.
#   usage: fuzz_script_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work/out"
echo keep > "$work/out/marker"
pass=0 fail=0
. "$src/tests/check_lib.sh"

# a small mixer every case starts from (line 4 is the first after it)
mixer_head() {
	cat <<'LUA'
local R = require "recur"
local m = R.mixer("m")
local lam = m:param("lam", "channel", R.zeros())
LUA
}
grid='return R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} }'

# refused NAME LINE TEXT [gen options]: the script $work/NAME.lua is refused at NAME.lua:LINE with TEXT
refused() {
	local name=$1 line=$2 text=$3; shift 3
	local out rc
	out=$("$recur" gen "$work/$name.lua" -o "$work/out" -q "$@" 2>&1); rc=$?
	[ $rc -eq 1 ] && printf '%s' "$out" | grep -qF "$name.lua:$line:" && printf '%s' "$out" | grep -qF -- "$text" &&
		[ "$(ls "$work/out")" = marker ] && [ -z "$(ls -d "$work"/out.tmp.* 2>/dev/null)" ]
	check $? "$name: refused at line $line with \"$text\", nothing written (rc $rc: $out)"
}

# generates NAME N: the script generates N variants
generates() {
	local name=$1 n=$2 out rc
	out=$("$recur" gen "$work/$name.lua" -o "$work/gen_$name" -q 2>&1); rc=$?
	[ $rc -eq 0 ] && [ "$(ls "$work/gen_$name"/*.ptx 2>/dev/null | wc -l)" = "$n" ]
	check $? "$name: generates $n variants (rc $rc: $out)"
}

# 32 nested tanh and a product of 33 factors: past a fixed internal limit before
{ mixer_head; echo 'local e, p = m.x, m.x'; echo 'for i = 1, 32 do e = R.tanh(e) end'
  echo 'for i = 1, 33 do p = p * R.sigmoid(m.x + i) end'
  echo 'm:recurrence { log_a = -R.softplus(lam), b = p }'; echo 'm:output(m.h * e)'; echo "$grid"; } > "$work/deep.lua"
generates deep 1
# a sum of 40000 terms: a located refusal, not a stack overflow or hours of LLVM
{ mixer_head; echo 'local e = m.x'; echo 'for i = 1, 40000 do e = e + i * m.x end'; } > "$work/sum40k.lua"
refused sum40k 5 "more than 16384 nodes"
{ mixer_head; echo 'local e = m.x'; echo 'for i = 1, 1500 do e = e + i * m.x end'
  echo 'm:recurrence { log_a = -R.softplus(lam), b = e }'; } > "$work/sum1500.lua"
refused sum1500 6 "at most 1024"
# constants past float32
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x * 1e300 }'; } > "$work/big.lua"
refused big 4 "finite in float32"
{ mixer_head; echo 'local k = R.exp(m.x - m.x + 100)'; } > "$work/folded.lua"
refused folded 4 "not finite in float32"
# a corrupted binary chunk: scripts load text only
{ mixer_head; echo 'local f = string.dump(function() return 1 end)'
  echo 'local g = assert(load(f:sub(1, 20) .. string.rep("\255", 40) .. f:sub(61), "x", "b"))'; echo 'g()'; } > "$work/binload.lua"
refused binload 5 "attempt to load a binary chunk"
# the budget, at its default
{ mixer_head; echo 'while true do end'; } > "$work/loop.lua"
refused loop 4 "instructions (an endless loop?)"
{ mixer_head; echo 'local function f(n) return 1 + f(n + 1) end'; echo 'f(1)'; } > "$work/recursion.lua"
refused recursion 4 "stack overflow"
{ mixer_head; echo 'local t = {}'; echo 'for i = 1, 1e12 do t[i] = string.rep("x", 1 << 20) .. i end'; } > "$work/memory.lua"
refused memory 5 "memory cap"
{ mixer_head; echo 'os.exit(3)'; } > "$work/exit.lua"
refused exit 4 "os.exit is not available"
# a set forged after R.variants: 17 parameters, a prefix of 0 (a division by zero in the templates)
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x }'; echo 'm:output(m.h)'
  echo 'local s = R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} }'
  echo 'for i = 2, 17 do s.mixer.params[i] = s.mixer.params[1] end'; echo 'return s'; } > "$work/forge_params.lua"
refused forge_params 6 "17 entries"
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x }'; echo 'm:output(m.h)'
  echo 'local s = R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} }'
  echo 's.variants[1].prefix = 0'; echo 'return s'; } > "$work/forge_prefix.lua"
refused forge_prefix 6 "prefix must be an integer"
{ mixer_head; echo 'string.match = function() return "x" end'; echo 'local m2 = R.mixer("../../evil")'; } > "$work/monkey.lua"
refused monkey 5 "must be an identifier"
{ mixer_head; echo 'local m2 = R.mixer("m2", { k = math.maxinteger })'; } > "$work/kmax.lua"
refused kmax 4 "k (channels per head) must be an integer from 1 to"
# shape expressions, at the line that writes them
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x }'; echo 'm:output(m.h)'
  echo 'return R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true},'
  echo '  rules = { { "D +* 3", "never" } } }'; } > "$work/rule.lua"
refused rule 6 'rule 1: shape expression "D +* 3"'
{ echo 'local R = require "recur"'; echo 'local m = R.mixer("m", { dynamic_per_token = "2*(" })'; } > "$work/dyn.lua"
refused dyn 2 'dynamic_per_token: shape expression "2*("'
# sets across a script: the same one twice is one; two mixers of one name are refused
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x }'; echo 'm:output(m.h)'
  echo 'local s = R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} }'
  echo 'local t = {}'; echo 'for i = 1, 20000 do t[i] = s end'
  echo 't[20001] = R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} }'
  echo 'return t'; } > "$work/twice.lua"
generates twice 1
n=$(grep -c '"name": "fused_output_fused_grouped_prefix32_hierarchical_chunk8"' "$work/gen_twice/manifest.json")
[ "$n" = 1 ]; check $? "twice: the manifest lists the variant once ($n)"
{ mixer_head; echo 'm:recurrence { log_a = -R.softplus(lam), b = m.x }'; echo 'm:output(m.h)'
  echo 'local m2 = R.mixer("m")'; echo 'm2:recurrence { log_a = m2.x, b = m2.x }'; echo 'm2:output(m2.h)'
  echo 'return { R.variants { mixer = m, chunk = {8}, prefix = {32}, fused = {true}, fused_output = {true} },'
  echo '         R.variants { mixer = m2, chunk = {16}, prefix = {32}, fused = {true}, fused_output = {true} } }'; } > "$work/samename.lua"
refused samename 10 "one mixer per name"
# targets: what the templates support and the LLVM in use can select, listed
out=$("$recur" gen "$work/deep.lua" -o "$work/out" -q --sm sm_100 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "target sm_100: not supported.*choose one of sm_80, sm_86, sm_89, sm_90, sm_90a" && [ "$(ls "$work/out")" = marker ]
check $? "sm_100 refused with the supported targets (rc $rc: $out)"
out=$("$recur" gen "$work/deep.lua" -o "$work/out" -q --sm sm_75 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "sm_75: not supported"; check $? "sm_75 refused: no bf16 tensor cores (rc $rc: $out)"
out=$("$recur" gen "$work/deep.lua" -o "$work/out" -q --sm sm_90a --ptx 7.8 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "sm_90a needs PTX ISA 8.0"; check $? "sm_90a with PTX 7.8 refused (rc $rc: $out)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
