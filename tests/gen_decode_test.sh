#!/usr/bin/env bash
# The decode step (R.decode, lua/recur.lua): one variant per mixer, named
# MIXER_decode, whose manifest entry says scan "decode", takes the states as
# h0, hT and index, has a forward only (the token stage where the mixer has
# one, then the step kernel) and no backward; its kernel reads the states
# through coherent loads (h0 and hT may be one buffer: an update in place)
# and compiles without spills for sm_90 and sm_80. Every shipped mixer's
# script gets one with no line of its own; a wrong option is refused at
# the script's line. Heads of any multiple of 16 up to 256 channels
# (RecurrentGemma's 256, Griffin 7B's 176) make a decode step; the scans
# run such heads' projections apart (gen_apart_test.sh). mma = true puts the projections on tensor cores
# (heads of 64, block-diagonal projections only). A step's token pass runs
# a warp per token with its loads in flight together; rows = true (no
# block-diagonal projections) makes the step one kernel, a block a row,
# the token stage inside.
#   usage: gen_decode_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
mixers="rglru samu hgrn mingru mamba2"
py=$(command -v /usr/bin/python3 || command -v python3)
cat > "$work/decode.lua" <<'LUA'
local R = require "recur"
local out = { R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true } } }
for _, m in ipairs { "rglru", "samu", "hgrn", "mingru", "mamba2" } do
  out[#out + 1] = R.decode { mixer = require("arch." .. m) }
end
return out
LUA
"$recur" gen "$work/decode.lua" --lua "$src/lua" -o "$work/out" -q; check $? "gen of a decode step for each of the five mixers, beside a scan variant"
"$recur" gen "$src/lua/variants/decode.lua" --lua "$src/lua" --sm sm_80 -o "$work/out80" -q; check $? "gen of lua/variants/decode.lua for sm_80"
# RG-LRU's lines with heads of K channels: RecurrentGemma's 256, Griffin 7B's 176
heads=$src/tests/grids/decode_heads.lua
"$recur" gen "$heads" --lua "$src/lua" -o "$work/heads" -q; check $? "gen of decode steps with heads of 16, 128, 176 and 256 channels"
"$py" - "$work/heads/manifest.json" <<'PY'
import json, sys
bad = []
mma = []
for v in json.load(open(sys.argv[1]))["variants"]:
    k = int(v["mixer"][5:])
    rows = 8 * max(1, 256 // k)
    want = [["K", str(k)], ["H", "D/K"], ["NDB", "cdiv(B,%d)" % rows]]
    if v["vars"] != want: bad.append("%s: vars %r, expected %r" % (v["mixer"], v["vars"], want))
    if v["rules"][0]["expr"] != "D%%%d==0" % k: bad.append("%s: rule %r" % (v["mixer"], v["rules"][0]["expr"]))
    last = v["forward"][-1]
    if v["name"].endswith("_mma"):   # a block per 64 channels of a head and 64 rows; weights and x staged
        mma.append(k)
        smem = 2 * (k // 2) * 64 * 4 + 64 * (k // 2) * 4
        if last["grid"] != ["1", "D/64", "cdiv(B,64)"] or last["block"][0] != 128 or last["smem"] != str(smem):
            bad.append("%s: grid %r block %r smem %r, expected smem %d" % (v["name"], last["grid"], last["block"],
                                                                        last["smem"], smem))
    elif last["block"][0] != (k if k > 128 else 256): bad.append("%s: block %r" % (v["mixer"], last["block"]))
if sorted(mma) != [128, 256]: bad.append("tensor-core steps for heads of %r, expected 128 and 256" % sorted(mma))
if bad: print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "each head size's plan: K, blocks of 8 rows per row lane, the width rule, K or 256 threads; on tensor cores at 128 and 256 a block per 64 channels"
out=$(HEADS_K=128 "$recur" gen "$heads" --lua "$src/lua" -o "$work/heads128" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'decode_heads.lua:2[0-9]:.*heads of 128 channels: its block-diagonal projections run apart'
check $? "a scan variant with heads of 128 and apart = false is refused at its line"
sed 's/{ 16, 128, 176, 256 }/{ 24 }/' "$heads" > "$work/heads24.lua"
out=$("$recur" gen "$work/heads24.lua" --lua "$src/lua" -o "$work/heads24" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'heads24.lua:2[0-9]:.*heads of 24 channels; the decode step takes a multiple of 16'
check $? "a decode step with heads of 24 is refused at its line"

# on tensor cores (mma = true): the mixers with block-diagonal projections
cat > "$work/mma.lua" <<'LUA'
local R = require "recur"
local out = {}
for _, m in ipairs { "rglru", "hgrn", "mingru", "mamba2" } do
  out[#out + 1] = R.decode { mixer = require("arch." .. m), mma = true }
end
return out
LUA
"$recur" gen "$work/mma.lua" --lua "$src/lua" -o "$work/mma" -q; check $? "gen of the decode step on tensor cores for the four mixers with block-diagonal projections"
"$py" - "$work/mma/manifest.json" <<'PY'
import json, sys
bad = []
for v in json.load(open(sys.argv[1]))["variants"]:
    mx, last = v["mixer"], v["forward"][-1]
    if v["name"] != mx + "_decode_mma" or v["scan"] != "decode" or v["backward"] != []:
        bad.append("%s: %s, scan %s" % (mx, v["name"], v["scan"]))
    if last["kernel"] != mx + "_decode_mma" or last["grid"] != ["1", "H", "cdiv(B,64)"] or last["block"][0] != 128:
        bad.append("%s: %s grid %r block %r" % (mx, last["kernel"], last["grid"], last["block"]))
if bad: print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "the tensor-core step: MIXER_decode_mma, one quad per head and 64 rows, grid (1, H, cdiv(B, 64))"
n=$(cat "$work"/mma/*.ptx | grep -c 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32')
[ "$n" -ge 4 ]; check $? "its PTX multiplies on tensor cores ($n mma instructions)"
printf 'local R = require "recur"\nreturn R.decode { mixer = require "arch.samu", mma = true }\n' > "$work/mma_samu.lua"
out=$("$recur" gen "$work/mma_samu.lua" --lua "$src/lua" -o "$work/mma_samu" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'mma_samu.lua:2:.*mma = true runs the block-diagonal projections on tensor cores, and mixer samu has none'
check $? "mma = true for a mixer without block-diagonal projections is refused at its line"
# one kernel a row (rows = true): the mixers without block-diagonal
# projections -- SAMU with its token stage, and one without any
cat > "$work/rows.lua" <<'LUA'
local R = require "recur"
local m = R.mixer("lone", { k = 64 })
local lam = m:param("lam", "channel", R.decay(0.9^2, 0.999^2))
m:recurrence { log_a = -R.softplus(lam), b = m.x }
m:output(m.h)
return { R.decode { mixer = require "arch.samu", rows = true }, R.decode { mixer = m, rows = true } }
LUA
"$recur" gen "$work/rows.lua" --lua "$src/lua" -o "$work/rows" -q; check $? "gen of the one-kernel step (rows = true) for SAMU and for a mixer without a token stage"
"$py" - "$work/rows/manifest.json" <<'PY'
import json, sys
bad, seen = [], []
for v in json.load(open(sys.argv[1]))["variants"]:
    mx = v["mixer"]
    seen.append(mx)
    ks = [(l["kernel"], l["grid"], l["block"][0]) for l in v["forward"]]
    if v["name"] != mx + "_decode_rows" or v.get("rows") is not True or v["scan"] != "decode" or v["backward"] != []:
        bad.append("%s: %s rows %r scan %s" % (mx, v["name"], v.get("rows"), v["scan"]))
    if ks != [(mx + "_decode_rows", ["B", "1", "1"], 256)]:   # a block a row; no token pass ahead
        bad.append("%s: forward %r" % (mx, ks))
    if v["workspaces"]: bad.append("%s: workspaces %r" % (mx, v["workspaces"]))
    if [r["expr"] for r in v["rules"]] != ["D%64==0", "D<=8192"]: bad.append("%s: rules %r" % (mx, v["rules"]))
    ntok = 2 if mx == "samu" else 0   # x of two tokens and the states (32 + 32 KB), two buffers of 8 warp sums
    if v["forward"][0]["smem"] != str(65536 + 2 * 8 * max(ntok, 1) * 4):
        bad.append("%s: smem %r" % (mx, v["forward"][0]["smem"]))
if sorted(seen) != ["lone", "samu"]: bad.append("variants of %r" % seen)
if bad: print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "the one-kernel step: MIXER_decode_rows, rows true, a block of 256 threads a row, no workspace, widths to 8192"
f=$work/rows/samu.samu_decode_rows.ptx g=$work/rows/lone.lone_decode_rows.ptx
nb=$(grep -c 'bar.sync' "$f"); ng=$(grep -c 'bar.sync' "$g")
nx=$(grep -c 'cp.async.cg.shared.global' "$f"); nl=$(grep -c 'ld.global.nc.v4.u32' "$f")
[ "$nb" = 1 ] && [ "$nx" = 8 ] && [ "$nl" = 0 ] && [ "$ng" = 0 ]
check $? "SAMU's copies x into shared memory a token ahead (4 chunks before the loop, 4 in it: $nx; $nl loads through registers) and meets one barrier a token ($nb); without a token stage, none ($ng)"
printf 'local R = require "recur"\nreturn R.decode { mixer = require "arch.rglru", rows = true }\n' > "$work/rows_rglru.lua"
out=$("$recur" gen "$work/rows_rglru.lua" --lua "$src/lua" -o "$work/rows_rglru" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'rows_rglru.lua:2:.*rows = true runs a row.s whole width in one block.*mixer rglru' && [ ! -e "$work/rows_rglru" ]
check $? "rows = true for a mixer with block-diagonal projections is refused at its line, writing nothing"

sed 's/R.decode { mixer = m }/R.decode { mixer = m, mma = true }/' "$heads" > "$work/mma_heads.lua"
out=$("$recur" gen "$work/mma_heads.lua" --lua "$src/lua" -o "$work/mma_heads" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'mma_heads.lua:2[0-9]:.*mma = true takes heads of a multiple of 64 channels.*mixer rglru16 has 16'
check $? "mma = true with heads of 16 is refused at its line"

n=$(ls "$work/out" | grep -cE '^([a-z0-9]+)\.\1_decode\.ptx$')
[ "$n" = 5 ]; check $? "five modules named MIXER.MIXER_decode.ptx ($n)"

"$py" - "$work/out/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad, seen = [], 0
for v in m["variants"]:
    if v["name"] != v["mixer"] + "_decode":
        if v["scan"] == "decode" or not v["backward"]:
            bad.append("%s: a scan variant reads as a decode step" % v["name"])
        continue
    seen += 1
    mx = v["mixer"]
    if v["scan"] != "decode": bad.append("%s: scan %r" % (mx, v["scan"]))
    if v["state"] != ["h0", "hT", "index"]: bad.append("%s: state %r" % (mx, v["state"]))
    if v["backward"] != []: bad.append("%s: a backward of %d launches" % (mx, len(v["backward"])))
    ks = [l["kernel"] for l in v["forward"]]
    want = ([mx + "_tok_fwd"] if v["shared_sfu"] else []) + [mx + "_decode"]   # a token stage: shared_sfu
    if ks != want: bad.append("%s: forward %r, expected %r" % (mx, ks, want))
    if v["shared_sfu"] and v["forward"][0]["grid"][0] != "cdiv(B*L,8)":   # a step has few tokens: a warp each
        bad.append("%s: the token pass's grid %r, expected a warp per token" % (mx, v["forward"][0]["grid"]))
    last = v["forward"][-1]
    for a in ("x", "y", "state:h0", "state:hT", "state:index", "i32:B", "i32:L", "i32:D"):
        if a not in last["args"]: bad.append("%s: the step kernel lacks arg %s" % (mx, a))
    if last["grid"] != ["H", "NDB", "1"]: bad.append("%s: grid %r" % (mx, last["grid"]))
    if any(w["life"] != "forward" for w in v["workspaces"]): bad.append("%s: a workspace outlives the call" % mx)
if seen != 5: bad.append("%d decode variants in the manifest, expected 5" % seen)
if bad: print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "the manifest: scan decode, state h0 hT index, no backward, the token stage then the step kernel"

# noalias on h0 and hT would let the compiler read the states through the
# non-coherent path or move a load past the store of the same slot
plain=""
for m in $mixers; do
	k=$(awk "/\.entry ${m}_decode/,/^}/" "$work/out/$m.${m}_decode.ptx" | grep -c 'ld\.global\.f32')
	[ "$k" -ge 8 ] || plain="$plain $m:$k"
done
[ -z "$plain" ]; check $? "each step kernel reads its 8 rows' states with coherent loads (short:${plain:- none})"

# a step's token pass has a few tokens and a dependent trip costs a memory
# latency: a lane's walk over the width issues 8 loads of x a trip, the
# last trip masked (the scans' pass, unrolled by LLVM, has a remainder loop
# and 12)
short=""; nt=0
for m in $mixers; do
	f="$work/out/$m.${m}_decode.ptx"
	grep -q "\.entry ${m}_tok_fwd" "$f" || continue
	nt=$((nt + 1))
	k=$(awk "/\.entry ${m}_tok_fwd/,/^}/" "$f" | grep -c 'ld\.global\.nc\.v4\.u32')
	[ "$k" = 8 ] || short="$short $m:$k"
done
[ "$nt" -ge 1 ] && [ -z "$short" ]; check $? "each of the $nt token passes loads 8 chunks of x a trip, and no more (off:${short:- none})"

. "$src/tests/ptxas_cache.sh"
find_ptxas
if [ -n "$ptxas" ]; then
	bad=""
	n90=0 n80=0
	for f in "$work/out"/*_decode.ptx "$work/out80"/*_decode*.ptx "$work/heads"/*_decode.ptx "$work/mma"/*.ptx \
	         "$work/rows"/*.ptx; do
		sm=$(grep -m1 -o 'sm_[0-9]*' "$f")
		if [ "$sm" = sm_80 ]; then n80=$((n80 + 1)); else n90=$((n90 + 1)); fi
		for _ in 1; do
			log=$(ptxas_cached "$ptxas" "-arch=$sm -v" "$f") || { bad="$bad $(basename "$f"):$sm:refused"; continue; }
			echo "$log" | grep -q '[1-9][0-9]* bytes spill stores' && bad="$bad $(basename "$f"):$sm:spills"
		done
	done
	[ -z "$bad" ] && [ "$n90" = 15 ] && [ "$n80" = 4 ]
	check $? "ptxas accepts every decode module without spills: $n90 for sm_90, $n80 for sm_80 (${bad:-all clean})"
else
	echo "     (no ptxas: the modules were not compiled)"
fi

printf 'local R = require "recur"\nreturn R.decode { mixer = require "arch.rglru", chunk = { 8 } }\n' > "$work/bad.lua"
out=$("$recur" gen "$work/bad.lua" --lua "$src/lua" -o "$work/bad" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'bad.lua:2:.*chunk' && [ ! -e "$work/bad" ]
check $? "R.decode with a scan option is refused at its line, naming it, and writes nothing"
printf 'local R = require "recur"\nreturn R.decode { }\n' > "$work/nomix.lua"
out=$("$recur" gen "$work/nomix.lua" --lua "$src/lua" -o "$work/nomix" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'nomix.lua:2:.*R.decode needs mixer'
check $? "R.decode without a mixer is refused at its line"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
