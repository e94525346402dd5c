#!/usr/bin/env bash
# The forward's projections inside fwd_scan (R.variants' scan_proj, templates/
# scan_proj.c, sm_90a): the plan runs proj_wimg and fwd_scan where proj_fwd ran,
# fwd_scan writes the projections the backward reads, the backward is its twin's
# (the same variant with proj_fwd) byte for byte, the twin itself is unchanged by
# the option's existence, a target without wgmma builds the twin's form, ptxas
# keeps two blocks an SM without spills, and what the design cannot take is
# refused at the script's line, with nothing written. Its persistent form
# (proj_ahead): fwd_scan's resident blocks of two scan warpgroups and a
# producer, their registers split by setmaxnreg, without spills.
#   usage: gen_scanproj_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
py=$(command -v /usr/bin/python3 || command -v python3)
grid=$src/tests/grids/scanproj.lua
for k in 256 128; do
	SCANPROJ_K=$k "$recur" gen "$grid" --lua "$src/lua" --sm sm_90a -o "$work/k$k" -q
	check $? "gen of tests/grids/scanproj.lua at heads of $k for sm_90a"
done

"$py" - "$work/k256/manifest.json" "$work/k128/manifest.json" <<'PY'
import json, sys
bad = []
for path, k in ((sys.argv[1], 256), (sys.argv[2], 128)):
    m = json.load(open(path))
    vs = {v["name"]: v for v in m["variants"]}
    for n, v in vs.items():
        fw = [l["kernel"] for l in v["forward"]]
        sp = n.startswith("apart_scanproj_")
        ah = n.startswith("apart_scanproj_ahead_")
        if bool(v.get("scan_proj")) != sp: bad.append("%s: scan_proj %r" % (n, v.get("scan_proj")))
        if bool(v.get("proj_ahead")) != ah: bad.append("%s: proj_ahead %r" % (n, v.get("proj_ahead")))
        if fw[:2] != (["rglru_proj_wimg", "rglru_fwd_scan"] if sp else ["rglru_proj_fwd", "rglru_fwd_scan"]):
            bad.append("%s: forward %r" % (n, fw))
        ws = {w["name"]: w for w in v["workspaces"]}
        want = {"life": "forward", "bytes": "D*%d" % (4 * k)} if sp else None
        got = {"life": ws["wimg"]["life"], "bytes": ws["wimg"]["bytes"]} if "wimg" in ws else None
        if got != want: bad.append("%s: workspace wimg %r, expected %r" % (n, got, want))
        if not sp: continue
        scan = v["forward"][1]
        for a in ("x", "ws:wimg", "ws:proj_Wa", "ws:proj_Wx", "y"):
            if a not in scan["args"]: bad.append("%s: fwd_scan takes no %s" % (n, a))
        # proj_fwd's tensor-core FLOP (2 projections of 2K an element) move to fwd_scan
        if scan.get("flops") != "B*L*D*%d" % (4 * k): bad.append("%s: fwd_scan flops %r" % (n, scan.get("flops")))
        if ah:
            # resident blocks of 384 threads (two scan warpgroups, the producer), one an SM,
            # as many as 264 whatever the shape, the logical grid's B an argument
            if (scan["grid"] != ["PB", "1", "1"] or scan["block"] != [384, 1, 1] or not 113 * 1024 < int(scan["smem"]) <= 227 * 1024
                    or "i32:B" not in scan["args"] or dict(v["vars"]).get("PB") != "min(NT*HS*B,264)"
                    or "tmap:x:64x64" not in scan["args"]):
                bad.append("%s: fwd_scan grid %r block %r smem %s, args %r" % (n, scan["grid"], scan["block"], scan["smem"],
                                                                              scan["args"][-3:]))
            twin = vs.get(n.replace("apart_scanproj_ahead_", "apart_"))
            if twin and v["backward"] != twin["backward"]:
                bad.append("%s: backward differs from its twin's" % n)
            continue
        if "PB" in dict(v["vars"]): bad.append("%s: a var PB" % n)
        if int(scan["smem"]) > 113 * 1024 or scan["grid"] != ["NT", "HS", "B"]:
            bad.append("%s: fwd_scan smem %s grid %r" % (n, scan["smem"], scan["grid"]))
        twin = vs.get(n.replace("apart_scanproj_", "apart_"))
        if twin and (v["backward"] != twin["backward"] or scan["smem"] != twin["forward"][1]["smem"]):
            bad.append("%s: backward or fwd_scan's shared memory differs from its twin's" % n)
if bad: print("\n".join("     " + b for b in bad[:12]))
sys.exit(1 if bad else 0)
PY
check $? "each plan: proj_wimg then fwd_scan (4K FLOP an element, the weights' image, the projections written), the twin's backward and shared memory; proj_ahead's fwd_scan of 264 resident blocks of 384 threads"

# the twins (proj_fwd) are the shipped grid's variants, byte for byte; in the
# scan_proj modules every kernel but the forward's is the twin's
# (the shipped grid's variants of the same flags: lua/variants/recurrentgemma.lua's first grid)
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.recurrentgemma", chunk = { 8 }, prefix = { 32 }, fused = { true },' \
	'  scan = { "lookback", "onepass" } }' > "$work/rg.lua"
"$recur" gen "$work/rg.lua" --lua "$src/lua" --sm sm_90a -o "$work/rg" -q
check $? "gen of RecurrentGemma's look-back and one-pass chunk-8 variants without scan_proj for sm_90a"
bad=""
for s in lookback onepass; do
	v=apart_fused_grouped_prefix32_${s}_chunk8
	cmp -s "$work/k256/rglru.$v.ptx" "$work/rg/rglru.$v.ptx" || bad="$bad $v"
	for kn in bwd_apply proj_dx proj_dw param_reduce; do
		body() { sed -n "/\.entry rglru_$kn(/,/^}/p" "$1"; }
		[ "$(body "$work/k256/rglru.$v.ptx" | md5sum)" = "$(body "$work/k256/rglru.apart_scanproj_${v#apart_}.ptx" | md5sum)" ] ||
			bad="$bad scanproj:$s:$kn"
	done
done
[ -z "$bad" ]; check $? "the twins are the shipped grid's PTX, and the scan_proj modules' backward kernels are theirs (differ:${bad:- none})"

# fwd_scan multiplies in a loop of trips (2 row tiles x K/64 blocks: 4 steps x 2
# projections of m64n64k16 a trip), the scaling of its first step at run time,
# after asking L2 for a row's K/64 lines of x a thread; proj_wimg none; the
# backward's proj_dxdw its 64 (2 warpgroups x 4 trips x 8); the shared array
# aligned for the swizzled operands
wg() { sed -n "/\.entry rglru_$2(/,/^}/p" "$1" | grep -c "${3:-wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16}"; }
f=$work/k256/rglru.apart_scanproj_fused_grouped_prefix32_onepass_chunk8.ptx
got="$(wg "$f" fwd_scan) $(wg "$f" fwd_scan prefetch.global.L2) $(wg "$f" proj_wimg) $(wg "$f" proj_dxdw) $(grep -c 'align 1024 .b8 recur_smem' "$f")"
[ "$got" = "8 4 0 64 1" ]
check $? "fwd_scan's trip: 8 wgmma, 4 L2 prefetches; proj_wimg none; proj_dxdw its 64; 1024-byte alignment (got: $got)"
# proj_ahead: the producer's one loop of trips (8 wgmma), the registers moved
# to it from the scan warpgroups, their block barrier (3) and vote of 256
# threads, the producer's barrier (4) of 128, two slots' mbarriers and the
# ring's four, a ticket drawn for the first tile and for each next one,
# whose rows are prefetched; x's blocks by TMA from the tensor map passed by
# value (a copy a trip: the first tile's 3 ahead, a tile's own, the next
# tile's first) and the image's by bulk copies, a trip's wgmma waited for
# within it; the projections stored by TMA through both workspaces' maps,
# the maps read where they lie in the parameter space (no local copy)
f=$work/k256/rglru.apart_scanproj_ahead_fused_grouped_prefix32_onepass_chunk8.ptx
got="$(wg "$f" fwd_scan) $(wg "$f" fwd_scan 'setmaxnreg.inc.sync.aligned.u32 208') $(wg "$f" fwd_scan 'setmaxnreg.dec.sync.aligned.u32 144')"
got="$got $(wg "$f" fwd_scan 'barrier.sync[[:space:]]*3, 256') $(wg "$f" fwd_scan 'bar.red.or.pred p, 3, 256') $(wg "$f" fwd_scan 'barrier.sync[[:space:]]*4, 128')"
got="$got $(wg "$f" fwd_scan mbarrier.init) $(wg "$f" fwd_scan atom.global.add) $(wg "$f" fwd_scan prefetch.global.L2)"
got="$got $(wg "$f" fwd_scan 'param .align 64 .b8 rglru_fwd_scan_param_[0-9]*\[128\]') $(wg "$f" fwd_scan cp.async.bulk.tensor.3d.shared)"
got="$got $(wg "$f" fwd_scan 'cp.async.bulk.shared::cluster.global.mbarrier') $(wg "$f" fwd_scan 'wgmma.wait_group.sync.aligned 0')"
got="$got $(wg "$f" fwd_scan cp.async.bulk.tensor.3d.global) $(wg "$f" fwd_scan __local_depot)"
[ "${got%% *}" = 8 ] && [ "$(echo "$got" | cut -d' ' -f2,3)" = "1 1" ] && [ "$(echo "$got" | cut -d' ' -f4)" -gt 0 ] &&
	[ "$(echo "$got" | cut -d' ' -f5)" -gt 0 ] && [ "$(echo "$got" | cut -d' ' -f6)" -gt 0 ] &&
	[ "$(echo "$got" | cut -d' ' -f7-16)" = "8 2 16 3 5 10 1 2 0" ]
check $? "proj_ahead's fwd_scan: 8 wgmma, setmaxnreg 208 and 144, barriers 3 (256) and 4 (128), 8 mbarriers, 2 ticket draws, 16 L2 prefetches, 3 tensor maps, 5 TMA copies, 10 bulk copies, one wgmma wait, 2 TMA stores, no local copy (got: $got)"

. "$src/tests/ptxas_cache.sh"
find_ptxas
if [ -n "$ptxas" ]; then
	bad=""
	# (the look-back's forward kernels are the one-pass variant's: one of the two)
	for f in "$work"/k256/rglru.apart_scanproj_*onepass*.ptx "$work"/k128/rglru.apart_scanproj_fused_*onepass*.ptx \
		"$work"/k128/rglru.apart_scanproj_ahead_fused_*onepass*.ptx; do
		log=$(ptxas_cached "$ptxas" "-arch=sm_90a -v" "$f") || { bad="$bad $(basename "$f"):failed"; continue; }
		echo "$log" | grep -qE "[1-9][0-9]* bytes spill|serialized|injected" && bad="$bad $(basename "$f")"
		# two blocks an SM: fwd_scan at 128 registers or fewer; proj_ahead's one
		# block of 384 threads at 168
		r=$(ptxas_kernels <(echo "$log") | grep '^rglru_fwd_scan ' | grep -o 'regs=[0-9]*' | cut -d= -f2)
		case $f in *_ahead_*) lim=168 ;; *) lim=128 ;; esac
		[ -n "$r" ] && [ "$r" -le $lim ] || bad="$bad $(basename "$f"):regs=$r"
	done
	[ -z "$bad" ]
	check $? "ptxas for sm_90a: the scan_proj modules without spills or injected waits, fwd_scan at 128 registers, 168 with proj_ahead (failed:${bad:- none})"
else
	echo "skip ptxas: not found"
fi

# refusals at the script's line, nothing written
refuse() {   # NAME EXPECTED-MESSAGE SM LUA
	printf '%s\n' "$4" > "$work/$1.lua"
	out=$("$recur" gen "$work/$1.lua" --lua "$src/lua" --sm "$3" -o "$work/$1" -q 2>&1)
	[ $? != 0 ] && echo "$out" | grep -q "$1.lua:[0-9]*:.*$2" && [ ! -e "$work/$1" ] || { echo "     $out" | head -3; return 1; }
}
head='local R = require "recur"
return R.variants { mixer = require "arch.recurrentgemma", fused = { true }, scan_proj = { true },'
# a target without wgmma builds the variant with proj_fwd, its twin's PTX byte for byte,
# so that one grid serves a folder of several targets (each entry its own plan)
"$recur" gen "$grid" --lua "$src/lua" --sm sm_90,sm_90a -o "$work/multi" -q
check $? "gen of tests/grids/scanproj.lua for sm_90 and sm_90a in one folder"
"$py" - "$work/multi" <<'PY'
import json, os, sys
d = sys.argv[1]
m, bad, compared = json.load(open(d + "/manifest.json")), [], 0
for v in m["variants"]:
    n, sm = v["name"], v["target"]
    if not n.startswith("apart_scanproj_"): continue
    fw = [l["kernel"] for l in v["forward"]][0]
    on = sm == "sm_90a"
    if bool(v.get("scan_proj")) != on or fw != ("rglru_proj_wimg" if on else "rglru_proj_fwd"):
        bad.append("%s %s: scan_proj %r, first kernel %s" % (n, sm, v.get("scan_proj"), fw))
    tf = "%s/rglru.%s.%s.ptx" % (d, n.replace("apart_scanproj_ahead_", "apart_").replace("apart_scanproj_", "apart_"), sm)
    if not on and os.path.exists(tf):   # (the states variant has no twin in the grid)
        compared += 1
        if open("%s/%s" % (d, v["ptx"])).read() != open(tf).read(): bad.append("%s %s: PTX differs from its twin's" % (n, sm))
if compared != 4: bad.append("%d scan_proj variants compared with their twins on sm_90, expected 4 (2 with proj_ahead)" % compared)
if bad: print("\n".join("     " + b for b in bad[:8]))
sys.exit(1 if bad else 0)
PY
check $? "sm_90 (no wgmma) builds the scan_proj variants (proj_ahead too) with proj_fwd, their twins' PTX; sm_90a's entries project in fwd_scan"
refuse chunk16 "prefix 32 and chunk 8" sm_90a "$head chunk = { 16 }, prefix = { 32 }, scan = { \"onepass\" } }"
check $? "scan_proj at chunk 16 (two segments a group) is refused at the line"
refuse prefix64 "prefix 32 and chunk 8" sm_90a "$head chunk = { 8 }, prefix = { 64 }, scan = { \"lookback\" } }"
check $? "scan_proj at prefix 64 (two groups a quad) is refused at the line"
refuse hier "give scan" sm_90a "$head chunk = { 8 }, prefix = { 32 } }"
check $? "scan_proj with the hierarchical scan is refused at the line"
refuse k176 "heads of a multiple of 64" sm_90a 'local R = require "recur"
return R.variants { mixer = require "arch.rglru_heads" (176), fused = { true }, apart = { true }, scan_proj = { true },
  chunk = { 8 }, prefix = { 32 }, scan = { "onepass" } }'
check $? "scan_proj at heads of 176 is refused at the line"
refuse notapart "give apart" sm_90a 'local R = require "recur"
return R.variants { mixer = require "arch.rglru", apart = { false }, scan_proj = { true }, chunk = { 8 }, prefix = { 32 },
  scan = { "onepass" } }'
check $? "scan_proj without apart is refused at the line"
refuse ahead_k64 "proj_ahead .*from 128" sm_90a 'local R = require "recur"
return R.variants { mixer = require "arch.rglru_heads" (64), fused = { true }, apart = { true }, scan_proj = { true },
  proj_ahead = { true }, chunk = { 8 }, prefix = { 32 }, scan = { "onepass" } }'
check $? "proj_ahead at heads of 64 (one contraction block: nothing to copy ahead) is refused at the line"
refuse ahead_docs "proj_ahead .*no docs or map" sm_90a "$head proj_ahead = { true }, docs = { true }, chunk = { 8 }, prefix = { 32 },
  scan = { \"onepass\" } }"
check $? "proj_ahead with documents is refused at the line"
refuse ahead_alone "give scan_proj" sm_90a 'local R = require "recur"
return R.variants { mixer = require "arch.recurrentgemma", fused = { true }, proj_ahead = { true }, chunk = { 8 },
  prefix = { 32 }, scan = { "onepass" } }'
check $? "proj_ahead without scan_proj is refused at the line"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
