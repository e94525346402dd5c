#!/usr/bin/env bash
# Variants taking the row's map (map = { true }, util/seqstate.h): named
# ..._states_map_..., their manifest lists map_loga and map_h after the
# states; the kernel that folds each tile once (fwd_reduce, or the
# look-back's fwd_scan) and no other takes the partial sums' workspace
# (ws:mapL, B*NT*quads*D*4 bytes, forward), and map_finish runs last in
# the forward with the partials, h0, hT and the map. Its PTX sums in a
# fixed order (no atomics). A grid asking for the map without the states,
# or with packed documents, is refused at its line with nothing written;
# ptxas accepts the modules (spills printed).
#   usage: gen_map_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
cat > "$work/map.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "lookback" }, states = { true }, map = { true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "onepass" }, resets = { true }, states = { true },
    map = { true } },
}
LUA
"$recur" gen "$work/map.lua" --lua "$src/lua" -o "$work/map" -q; check $? "gen of a grid with map = { true }"
n=$(ls "$work/map" | grep -c '\.\(resets_\)\?states_map_.*\.ptx$')
[ "$n" = 3 ]; check $? "three variants named ..states_map_... ($n)"

python3 - "$work/map/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = []
for v in m["variants"]:
    n = v["name"]
    want = (["reset"] if n.startswith("resets_") else []) + ["h0", "hT", "dhT", "dh0", "map_loga", "map_h"]
    if v.get("state") != want:
        bad.append("%s: state %r" % (n, v.get("state")))
    quads = 2   # prefix 32: 2 quads of 4 warps a block
    ws = {w["name"]: w for w in v["workspaces"]}
    w = ws.get("mapL")
    if not w or w["bytes"] != "B*NT*%d*D*4" % quads or w["life"] != "forward":
        bad.append("%s: workspace mapL %r" % (n, w))
    fwd = v["forward"]
    folder = "fwd_reduce" if v["scan"] == "hierarchical" else "fwd_scan"
    takes = [l["kernel"].split("_", 1)[1] for p in ("forward", "backward") for l in v[p] if "ws:mapL" in l["args"]]
    if takes != [folder, "map_finish"]:
        bad.append("%s: ws:mapL taken by %r, expected %r" % (n, takes, [folder, "map_finish"]))
    last = fwd[-1]
    if not last["kernel"].endswith("_map_finish") or last["args"] != ["ws:mapL", "state:h0", "state:hT",
            "state:map_loga", "state:map_h", "i32:D", "i32:NT"]:
        bad.append("%s: the forward's last launch %s %r" % (n, last["kernel"], last["args"]))
if bad:
    print("\n".join("     " + b for b in bad))
sys.exit(1 if bad else 0)
PY
check $? "the manifest: the map in each state list, ws:mapL per quad of each tile for the folding kernel and map_finish, map_finish last"
at=""
for f in "$work/map"/*.ptx; do
	grep -Eq '(^|[^a-z])(atom|red)\.' <(sed -n '/\.entry [a-z]*_map_finish/,/^}/p' "$f") && at="$at $(basename "$f")"
done
[ -z "$at" ]; check $? "map_finish adds in a fixed order: no atomics (in:${at:- none})"

refuse() {   # NAME EXPECTED-MESSAGE LUA
	printf '%s\n' "$3" > "$work/$1.lua"
	out=$("$recur" gen "$work/$1.lua" --lua "$src/lua" -o "$work/$1" -q 2>&1)
	[ $? != 0 ] && echo "$out" | grep -q "$1.lua:[0-9]*:.*$2" && [ ! -e "$work/$1" ]
}
refuse no_states "map = true: the row's map comes with the states" 'local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, states = { false, true }, map = { true } }'
check $? "map without the states: refused at the line, nothing written"
refuse with_docs "map = true is of the reset/h0 form" 'local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, docs = { true }, map = { true } }'
check $? "map with packed documents: refused at the line, nothing written"

. "$src/tests/ptxas_report.sh"
ptxas_report "$work/map"/*.ptx
if [ -n "$ptxas" ]; then
	[ -z "$rej" ]; check $? "ptxas -arch=sm_90 accepts every module with the map (refused:${rej:- none})"
	echo "     spill stores (bytes):${spills:- none}"
else
	echo "     (no ptxas: the modules were not compiled)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
