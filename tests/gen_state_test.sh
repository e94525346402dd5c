#!/usr/bin/env bash
# Variants taking a sequence state: resets = { true } names them resets_...,
# lists "state": ["reset"] in the manifest and gives every kernel that
# evaluates a step the marks ("state:reset", a predicated byte load in its
# PTX); states = { true } names them states_..., lists h0, hT, dhT, dh0,
# gives every step kernel h0 (its presence makes t = 0 no reset) and the
# ends of the carry across tiles: the carry kernels' walk (h0 -> hT,
# dhT -> dh0), the look-back forward's hT and the one-pass backward's dhT
# and dh0.
# { false } leaves a variant's PTX byte for byte as without the options;
# ptxas accepts the modules (spills are printed: the register budget is
# the variants' known cost).
#   usage: gen_state_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
#   PTX_DIR: the suite's representative grid (its plain variants are the
#   reference of the byte-for-byte check); generated here when absent
set -u
recur=$1 src=$2 work=$3 plain=${4:-}
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
# three variants of the representative grid (fused and unfused RG-LRU,
# SAMU's one-pass), each with resets = { false, true }
cat > "$work/both.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical" }, resets = { false, true } },
  R.variants { mixer = require "arch.rglru", chunk = { 16 }, prefix = { 128 }, fused = { false },
    scan = { "hierarchical" }, resets = { false, true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "onepass" }, resets = { false, true } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "onepass" }, states = { true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "hierarchical" }, resets = { true }, states = { true } },
}
LUA

"$recur" gen "$work/both.lua" --lua "$src/lua" -o "$work/both" -q; check $? "gen of a grid with resets = { false, true }"
if [ -z "$plain" ] || [ ! -f "$plain/manifest.json" ]; then
	plain=$work/plain
	"$recur" gen "$src/tests/grids/representative.lua" --lua "$src/lua" -o "$plain" -q
	check $? "gen of the representative grid, the reference without the option"
fi

n=$(ls "$work/both" | grep -c '^[a-z]*\.resets_.*\.ptx$')
[ "$n" = 4 ]; check $? "four variants named resets_... ($n)"
n=$(ls "$work/both" | grep -c 'states_.*\.ptx$')
[ "$n" = 3 ]; check $? "three named ..states_... ($n)"
same=0
for f in "$work/both"/*.ptx; do
	case $(basename "$f") in *.resets_* | *.states_*) continue ;; esac
	cmp -s "$f" "$plain/$(basename "$f")" || { echo "     differs: $(basename "$f")"; false; } && same=$((same + 1))
done
[ "$same" = 3 ]; check $? "resets = { false }: each of the 3 variants' PTX byte for byte as in the representative grid ($same)"

py=$(command -v python3)
"$py" - "$work/both/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = []
for v in m["variants"]:
    resets = v["name"].startswith("resets_")
    states = "states_" in v["name"]
    want = (["reset"] if resets else []) + (["h0", "hT", "dhT", "dh0"] if states else [])
    if v.get("state") != want:
        bad.append("%s: state %r" % (v["name"], v.get("state")))
    for p in ("forward", "backward"):
        for l in v[p]:
            steps = "i32:L" in l["args"]   # the kernels that evaluate steps take the length
            got = sorted(a for a in l["args"] if a.startswith("state:"))
            expect = (["state:reset"] if resets and steps else []) + (["state:h0"] if states and steps else [])
            k = l["kernel"]
            if states and k.endswith("fwd_carry"):
                expect = ["state:h0", "state:hT"]
            if states and (k.endswith("bwd_carry") or (k.endswith("bwd_apply") and v["scan"] == "onepass")):
                expect += ["state:dhT", "state:dh0"]   # the walk's ends, or the one-pass backward's
            if states and k.endswith("fwd_scan"):
                expect += ["state:hT"]                 # the look-back forward's last tile
            expect = sorted(expect)
            if got != expect:
                bad.append("%s %s %s: %r, expected %r" % (v["name"], p, l["kernel"], got, expect))
if bad:
    print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "the manifest: each variant's state list, the step kernels' state:reset / state:h0, the carries' ends"
miss=""
for f in "$work/both"/*.resets_*.ptx; do
	grep -q '@p ld.global.nc.u8' "$f" || miss="$miss $(basename "$f")"
done
[ -z "$miss" ]; check $? "each resets variant's PTX reads the marks with a predicated byte load (missing in:${miss:- none})"
[ "$(cat "$plain"/*.ptx | grep -c "ld.global.nc.u8")" = 0 ]; check $? "and no plain variant does"

. "$src/tests/ptxas_report.sh"
ptxas_report "$work/both"/*.resets_*.ptx "$work/both"/*.states_*.ptx
if [ -n "$ptxas" ]; then
	[ -z "$rej" ]; check $? "ptxas -arch=sm_90 accepts every module with a state (refused:${rej:- none})"
	echo "     spill stores (bytes):${spills:- none}"
else
	echo "     (no ptxas: the modules were not compiled)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
