#!/usr/bin/env bash
# Variants taking packed documents with a state each (docs = { true },
# templates/docs.c): named docs_..., their manifests list "state": reset
# cu_seqlens h0 hT dhT dh0; each plan runs docs_prep first in both passes
# (after the token stage, which clears the arena and sees no resets), with
# the offsets, ndocs and its saved workspace of token codes; every kernel
# that evaluates a step reads those codes (the reset marks are bits of them:
# no ws:dmark, no caller's state:reset) and the four states, and no kernel keeps a
# row's state at the carry; docs = { false } leaves a variant's PTX byte for
# byte as without the option; ptxas accepts every module (spills printed);
# and a grid asking docs with resets or states is refused at its line.
#   usage: gen_docs_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
cat > "$work/both.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "onepass" }, docs = { false, true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "lookback" }, docs = { false, true } },
}
LUA
"$recur" gen "$work/both.lua" --lua "$src/lua" -o "$work/both" -q; check $? "gen of a grid with docs = { false, true }"
cat > "$work/plain.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
    scan = { "hierarchical", "onepass" } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "lookback" } },
}
LUA
"$recur" gen "$work/plain.lua" --lua "$src/lua" -o "$work/plain" -q; check $? "gen of the same grid without the option"

n=$(ls "$work/both" | grep -c '^[a-z]*\.docs_.*\.ptx$')
[ "$n" = 3 ]; check $? "three variants named docs_... ($n)"
same=0
for f in "$work/plain"/*.ptx; do
	cmp -s "$f" "$work/both/$(basename "$f")" || { echo "     differs: $(basename "$f")"; false; } && same=$((same + 1))
done
[ "$same" = 3 ]; check $? "docs = { false }: each of the 3 variants' PTX byte for byte as without the option ($same)"

py=$(command -v python3)
"$py" - "$work/both/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = []
want_state = ["reset", "cu_seqlens", "h0", "hT", "dhT", "dh0"]
for v in m["variants"]:
    if not v["name"].startswith("docs_"):
        continue
    if v.get("state") != want_state:
        bad.append("%s: state %r" % (v["name"], v.get("state")))
    ws = {w["name"]: w for w in v["workspaces"]}
    if "dmark" in ws:   # the marks are bits of the codes
        bad.append("%s: workspace dmark" % v["name"])
    for w, size in (("dcode", "B*L*4"),):
        if w not in ws or ws[w]["bytes"] != size or ws[w]["life"] != "saved":
            bad.append("%s: workspace %s %r" % (v["name"], w, ws.get(w)))
    for p in ("forward", "backward"):
        ks = [l["kernel"] for l in v[p]]
        first = 1 if p == "forward" and ks[0].endswith("tok_fwd") else 0
        if not ks[first].endswith("_docs_prep") or sum(k.endswith("_docs_prep") for k in ks) != 1:
            bad.append("%s %s: docs_prep not first once: %r" % (v["name"], p, ks))
        for l in v[p]:
            a = l["args"]
            if l["kernel"].endswith("_docs_prep"):
                need = ["state:reset", "state:cu_seqlens", "state:h0", "state:dh0", "ws:dcode", "i32:ndocs"]
                if any(x not in a for x in need):
                    bad.append("%s %s: docs_prep args %r" % (v["name"], p, a))
                continue
            steps = "i32:L" in a
            got = sorted(x for x in a if x.startswith("state:") or x in ("ws:dmark", "ws:dcode"))
            expect = sorted(["ws:dcode", "state:h0", "state:hT", "state:dhT", "state:dh0"]) if steps else []
            if got != expect:
                bad.append("%s %s %s: %r, expected %r" % (v["name"], p, l["kernel"], got, expect))
if bad:
    print("\n".join("     " + b for b in bad[:12]))
sys.exit(1 if bad else 0)
PY
check $? "the manifest: state lists, docs_prep first in both passes, its workspaces, every step kernel's marks, codes and states"
out=$("$recur" list --dir "$work/both" --plan --shape 1x1000x1024 2>&1)
echo "$out" | grep -q "rglru_docs_prep  *grid 4x1x1 block 256"
check $? "list --plan at 1x1000x1024: docs_prep over the tokens, 4 blocks of 256"
miss=""
for f in "$work/both"/*.docs_*.ptx; do   # the u8 loads of the caller's marks are docs_prep's alone
	n=$(awk '/\.entry / { prep = /_docs_prep\(/ } !prep && /ld\.global[.a-z]*\.u8/' "$f" | wc -l)
	[ "$n" = 0 ] || miss="$miss $(basename "$f"):$n"
done
[ -z "$miss" ]; check $? "each docs variant's step kernels read the reset marks as bits of the token codes, no byte marks (in:${miss:- none})"

. "$src/tests/ptxas_report.sh"
ptxas_report "$work/both"/*.docs_*.ptx
if [ -n "$ptxas" ]; then
	[ -z "$rej" ]; check $? "ptxas -arch=sm_90 accepts every docs module (refused:${rej:- none})"
	echo "     spill stores (bytes):${spills:- none}"
else
	echo "     (no ptxas: the modules were not compiled)"
fi

# refusals at the script's line
refuse() {   # NAME EXPECTED-MESSAGE LUA
	printf '%s\n' "$3" > "$work/$1.lua"
	out=$("$recur" gen "$work/$1.lua" --lua "$src/lua" -o "$work/$1" -q 2>&1)
	[ $? != 0 ] && echo "$out" | grep -q "$1.lua:[0-9]*:.*$2" && [ ! -e "$work/$1" ]
}
refuse with_resets "docs = true takes reset marks itself" 'local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, docs = { true }, resets = { true } }'
check $? "docs with resets in the same grid: refused at the line, nothing written"
refuse with_states "docs = true takes the states itself" 'local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, docs = { true }, states = { false, true } }'
check $? "docs with states in the same grid: refused at the line, nothing written"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
