#!/usr/bin/env bash
# Heads of K channels, the block-diagonal projections apart from the scans
# (R.variants' apart, templates/proj.c): RG-LRU at RecurrentGemma's 256 and
# Griffin 7B's 176 builds in every scan kind with no line of C; each plan
# runs proj_fwd before the scans and proj_dx, proj_dw after bwd_apply; the
# projections and their adjoints take workspaces of B*L*D; the weight
# gradients have a slot per slab of rows; every kernel compiles without
# spills; and what the design cannot take is refused at the script's line.
#   usage: gen_apart_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
py=$(command -v /usr/bin/python3 || command -v python3)
grid=$src/tests/grids/apart.lua
# heads of 256: the shipped grid (its prefix-32 variants are apart.lua's at 256)
"$recur" gen "$src/lua/variants/recurrentgemma.lua" --lua "$src/lua" -o "$work/k256" -q
check $? "gen of lua/variants/recurrentgemma.lua: RG-LRU with heads of 256 in the three scan kinds, projections apart, and its decode steps"
APART_K=176 "$recur" gen "$grid" --lua "$src/lua" -o "$work/k176" -q
check $? "gen of tests/grids/apart.lua at heads of 176"

"$py" - "$work/k256/manifest.json" "$work/k176/manifest.json" <<'PY'
import json, sys
bad, steps = [], []
for path, k in ((sys.argv[1], 256), (sys.argv[2], 176)):
    m = json.load(open(path))
    if m["mixers"]["rglru"]["k"] != k: bad.append("%s: mixer k %r" % (path, m["mixers"]["rglru"]["k"]))
    for v in m["variants"]:
        n = v["name"]
        if v["scan"] == "decode":   # the shipped grid's decode step: checked by gen_decode_test's kind
            if k != 256 or n not in ("rglru_decode", "rglru_decode_mma") or v["backward"]:
                bad.append("%s: a decode step here" % n)
            steps.append(n)
            continue
        fw = [l["kernel"] for l in v["forward"]]
        bw = [l["kernel"] for l in v["backward"]]
        if not v.get("apart"): bad.append("%s: not marked apart" % n)
        if fw[0] != "rglru_proj_fwd": bad.append("%s: forward %r" % (n, fw))
        if bw[-3:] != ["rglru_proj_dx", "rglru_proj_dw", "rglru_param_reduce"]: bad.append("%s: backward %r" % (n, bw))
        vars = dict(v["vars"])
        if vars.get("K") != str(k) or vars.get("H") != "D/K" or vars.get("HS") != "D/64":
            bad.append("%s: vars %r" % (n, v["vars"]))
        # the scans' grids in heads of 64, proj_dw's in the projections' heads and slabs
        for l in v["forward"] + v["backward"]:
            kn = l["kernel"]
            if kn.endswith(("_reduce", "_apply", "_scan")) and "param" not in kn and l["grid"][1] != "HS":
                bad.append("%s: %s grid %r" % (n, kn, l["grid"]))
            if kn.endswith("proj_dw") and l["grid"][1:] != ["H", "GW"]:
                bad.append("%s: proj_dw grid %r" % (n, l["grid"]))
        ws = {w["name"]: w for w in v["workspaces"]}
        # the projections kept for the backward, or (recompute) made in each pass
        kept = "each" if v.get("recompute") else "saved"
        for w, life, size in (("proj_Wa", kept, "B*L*D*2"), ("proj_Wx", kept, "B*L*D*2"),
                              ("dproj_Wa", "backward", "B*L*D*2"), ("dxd", "backward", "B*L*D*2"),
                              ("part_Wx", "backward", "GW*D*K*4")):
            if w not in ws or ws[w]["life"] != life or ws[w]["bytes"] != size:
                bad.append("%s: workspace %s %r" % (n, w, ws.get(w)))
        # the tensor-core FLOP each kernel declares: two projections of 2K per element,
        # in the projection kernels alone (the scans run none)
        for l in v["forward"] + v["backward"]:
            want = "B*L*D*%d" % (4 * k) if "_proj_" in l["kernel"] else None
            if l.get("flops") != want: bad.append("%s: %s flops %r, expected %r" % (n, l["kernel"], l.get("flops"), want))
        if any(r["expr"] == "D%%%d==0" % k for r in v["rules"]) is False:
            bad.append("%s: no width rule for K = %d: %r" % (n, k, v["rules"]))
if sorted(steps) != ["rglru_decode", "rglru_decode_mma"]: bad.append("decode steps %r, expected fp32 and mma" % steps)
if bad: print("\n".join("     " + b for b in bad[:12]))
sys.exit(1 if bad else 0)
PY
check $? "each plan: proj_fwd first, proj_dx, proj_dw, param_reduce last; scans over D/64, the weights over D/K and slabs; 4K tensor FLOP per element in each projection kernel; both decode steps at 256"
# recompute: the shipped grid's one-pass and look-back variants whose forward keeps no
# projection; the backward's first launch is the forward's proj_fwd, argument for argument;
# the module is its twin's, byte for byte; list --plan has it keep B L D x 4 bytes fewer
"$py" - "$work/k256/manifest.json" "$work/k256" <<'PY'
import json, sys, filecmp
m, d, bad = json.load(open(sys.argv[1])), sys.argv[2], []
names = {v["name"]: v for v in m["variants"]}
rc = sorted(n for n, v in names.items() if v.get("recompute"))
want = ["apart_recompute_%sfused_grouped_prefix32_%s_chunk8" % (st, sc) for st in ("", "resets_states_")
        for sc in ("lookback", "onepass")]
if rc != want:
    bad.append("recompute variants %r" % rc)
for n in rc:
    v, twin = names[n], names.get(n.replace("apart_recompute_", "apart_"))
    if twin is None or twin.get("recompute"):
        bad.append("%s: no twin" % n)
        continue
    if v["backward"][0] != v["forward"][0] or v["forward"][0]["kernel"] != "rglru_proj_fwd":
        bad.append("%s: backward[0] %r is not the forward's proj_fwd" % (n, v["backward"][0].get("kernel")))
    if v["backward"][1:] != twin["backward"] or v["forward"] != twin["forward"]:
        bad.append("%s: its launches are not the twin's with proj_fwd ahead of the backward" % n)
    if not filecmp.cmp("%s/%s" % (d, v["ptx"]), "%s/%s" % (d, twin["ptx"]), shallow=False):
        bad.append("%s: PTX differs from %s's" % (n, twin["name"]))
for n, v in names.items():
    if not v.get("recompute") and any(w["life"] == "each" for w in v.get("workspaces", [])):
        bad.append("%s: a workspace of life each without recompute" % n)
if bad: print("\n".join("     " + b for b in bad[:12]))
sys.exit(1 if bad else 0)
PY
check $? "recompute (lookback, onepass; plain and with resets and states): the backward runs the forward's proj_fwd launch first, the rest is the twin's plan, the PTX the twin's bytes, the projections of life each"
kept() { "$recur" list --dir "$work/k256" --plan --shape 2x1000x2560 | awk -v v="$1" '$1 == "rglru" { on = $2 == v } on && /workspaces:/ { print $4 }'; }
a=$(kept apart_fused_grouped_prefix32_onepass_chunk8) b=$(kept apart_recompute_fused_grouped_prefix32_onepass_chunk8)
[ -n "$a" ] && [ -n "$b" ] && [ $((a - b)) = $((2 * 1000 * 2560 * 4)) ]
check $? "list --plan at 2x1000x2560: the recompute variant keeps B L D x 4 bytes fewer for the backward (saved $a -> ${b:-?})"
for g in "apart = { false }, fused = { true }, recompute = { true }" \
	"apart = { true }, scan = { \"lookback\" }, scan_proj = { true }, recompute = { true }"; do
	printf 'local R = require "recur"\nlocal rglru = require "arch.rglru"\nreturn { R.variants { mixer = rglru, chunk = { 8 }, prefix = { 32 }, %s } }\n' "$g" > "$work/rc_bad.lua"
	out=$("$recur" gen "$work/rc_bad.lua" --lua "$src/lua" -o "$work/rc_bad" -q 2>&1)
	[ $? != 0 ] && echo "$out" | grep -q "rc_bad.lua:3" && echo "$out" | grep -q "recompute = true"
	check $? "recompute refused at the script's line: $(echo "$out" | head -1 | cut -c1-160)"
done
# on sm_90 the scans that sweep over the projections apart stage them with the rows
# (SEG_PJ): fwd_scan (fwd_apply) and bwd_apply copy every row array by cp.async, 16 bytes
# at a time, 8 steps x (x, [dy,] 2 projections) at each staging site, hint nothing into L2
# and take at most 113 KB of shared memory (two blocks an SM)
"$py" - "$work/k256/manifest.json" "$work/k256" <<'PY'
import json, re, sys
m, d, bad = json.load(open(sys.argv[1])), sys.argv[2], []
for v in m["variants"]:
    if v["scan"] == "decode": continue
    ptx = open("%s/rglru.%s.ptx" % (d, v["name"])).read()
    for l in v["forward"] + v["backward"]:
        k = l["kernel"]
        if not re.search("_(fwd_scan|fwd_apply|bwd_apply)$", k): continue
        body = re.search(r"\.entry %s\((.*?)\n}" % k, ptx, re.S).group(1)
        cp, pf = body.count("cp.async.cg.shared.global"), body.count("prefetch.global.L2")
        site = 8 * (4 if k.endswith("bwd_apply") else 3)
        if cp == 0 or cp % site or pf or int(l["smem"]) > 113 * 1024:
            bad.append("%s %s: cp.async %d, L2 hints %d, smem %s" % (v["name"], k, cp, pf, l["smem"]))
if bad: print("\n".join("     " + b for b in bad[:12]))
sys.exit(1 if bad else 0)
PY
check $? "sm_90: fwd_scan and bwd_apply stage their rows and the projections apart by cp.async (24 and 32 a site), no L2 hints, two blocks an SM"
# and the look-back forward at chunk 8 (one segment a chunk) keeps each step's maps, fp16
# pairs (cvt.rn.f16x2), in the bytes of the staged projections it has read, so that its
# second sweep evaluates no gate; at chunk 16 (two segments) it keeps none. With the
# gates' sigmoids stored, the fold is unrolled fully: 7 steps keep theirs (the chunk's
# last needs none), 8 slots a step, in both copies of the tile
kept() { sed -n "/\.entry rglru_fwd_scan(/,/^}/p" "$1" | grep -c 'cvt.rn.f16x2.f32'; }
f=$work/k256/rglru.apart_fused_grouped_prefix32
got="$(kept "${f}_lookback_chunk8.ptx") $(kept "${f}_onepass_chunk8.ptx") $(kept "${f}_lookback_chunk16.ptx")"
[ "$got" = "112 112 0" ]
check $? "fwd_scan at chunk 8 keeps its step maps in the staged projections: 112 fp16 packs (7 steps x 8 slots x 2 copies; got: $got; chunk 16 none)"
# the gates read each projection apart only through sigmoid, so proj_fwd stores sigmoid(P)
# as fp16 (tanh.approx and cvt.rn.f16x2 in its epilogue) and no scan evaluates a gate's
# sigmoid again: not one tanh.approx in fwd_scan, fwd_apply, bwd_apply or the reduces
"$py" - "$work/k256" <<'PY'
import glob, re, sys
bad, n = [], 0
for f in sorted(glob.glob(sys.argv[1] + "/*.ptx")):
    for m in re.finditer(r"\.entry (\w+)\((.*?)\n}", open(f).read(), re.S):
        k, body = m.group(1), m.group(2)
        if k.endswith("_proj_fwd"):
            n += 1
            if "tanh.approx" not in body or "cvt.rn.f16x2.f32" not in body:
                bad.append("%s %s: no sigmoid stored as fp16" % (f.split("/")[-1], k))
        elif re.search("_(fwd_scan|fwd_apply|bwd_apply|fwd_reduce|bwd_reduce)$", k) and "tanh.approx" in body:
            bad.append("%s %s: %d tanh.approx" % (f.split("/")[-1], k, body.count("tanh.approx")))
if bad or n == 0: print("\n".join("     " + b for b in bad[:12]) or "     no proj_fwd found")
sys.exit(1 if bad or n == 0 else 0)
PY
check $? "RecurrentGemma: proj_fwd stores the gates' sigmoids in fp16, and no scan kernel evaluates one (tanh.approx)"
# Ampere's (the portable path) load them a step ahead of bwd_apply's sweeps instead, each
# step's loads hinting the lines 4 steps on into L2 (2 rows x 2 projections a step: pass A,
# the sweeps to h and the reverse sweep; the one-pass backward's reverse sweep loads where
# it uses them; at chunk 16 the layout that lets two blocks share an A100's 164 KB, 69648
# bytes, sweeps to h more often than the 98320 bytes of one block an SM did)
APART_K=256 "$recur" gen "$grid" --lua "$src/lua" --sm sm_80 -o "$work/k256_80" -q
check $? "gen of tests/grids/apart.lua at heads of 256 for sm_80"
pa() { sed -n "/\.entry rglru_bwd_apply(/,/^}/p" "$1" > "$work/pa.ptx"; echo "$(grep -c 'prefetch.global.L2' "$work/pa.ptx")/$(grep -c 'cp.async' "$work/pa.ptx")"; }
f=$work/k256_80/rglru.apart_fused_grouped_prefix32
got="$(pa "${f}_lookback_chunk8.ptx") $(pa "${f}_onepass_chunk8.ptx") $(pa "${f}_lookback_chunk16.ptx")"
[ "$got" = "16/0 8/0 32/0" ]
check $? "sm_80: bwd_apply's projections a step ahead with L2 hints/cp.async: 16 at chunk 8, 8 one-pass, 32 at chunk 16, no copies (got: $got)"

out=$("$recur" list --dir "$work/k256" --plan --shape 2x1000x2560 2>&1)
echo "$out" | grep -q "rglru_proj_dw  *grid 16x10x2 " && echo "$out" | grep -q "rglru_fwd_apply  *grid 4x40x2 "
check $? "list --plan at 2x1000x2560: proj_dw over 16 tiles x 10 heads x 2 slabs (their partials weighed), the scans over 40 heads of 64"
# proj_dw's slabs: the least cdiv(blocks, 396) / slabs (waves of 3 blocks an SM on 132 SMs), the fewer
# slabs on a tie, at most 16 and at most the row tiles of 64: 256 blocks a slab at D = 4096 take 3
# (1.94 waves); 160 at 2560 take 12 (4.85); 32 at 512 take what the 4 row tiles allow; 1 row tile, 1
out=$("$recur" list --dir "$work/k256" --plan --shape 1x32768x4096 --shape 1x32768x2560 --shape 3x77x512 \
	--shape 1x64x256 2>&1 | grep -o "rglru_proj_dw  *grid [0-9x]*" | LC_ALL=C sort -u | awk '{ print $3 }' | tr '\n' ' ')
[ "$out" = "16x10x12 16x16x3 16x1x1 16x2x4 " ]
check $? "proj_dw's slabs by whole waves: 3 at 1x32768x4096, 12 at 1x32768x2560, 4 (the row tiles) at 3x77x512, 1 at 1x64x256 (got: $out)"
# proj_fwd's (and proj_dx's) blocks over rows: the grid of whole waves of 264 (2 blocks an SM) with the
# least waves x row tiles a block, the fewer blocks on a tie: 64 column tiles x 4 at D = 4096 (1 wave of
# 128 row tiles each), 40 x 13 at 2560 (2 waves), 40 x 33 at 131072 tokens (5 waves, 1320 blocks);
# what the rows allow at 3x77x512 (4 row tiles) and 1x64x256
out=$("$recur" list --dir "$work/k256" --plan --shape 1x32768x4096 --shape 1x32768x2560 --shape 1x131072x2560 \
	--shape 3x77x512 --shape 1x64x256 2>&1 | grep -E -o "rglru_proj_(fwd|dx)  *grid [0-9x]*" |
	awk '{ print $1 "=" $3 }' | LC_ALL=C sort -u | tr '\n' ' ')
[ "$out" = "rglru_proj_dx=40x13x1 rglru_proj_dx=40x33x1 rglru_proj_dx=4x1x1 rglru_proj_dx=64x4x1 rglru_proj_dx=8x4x1 rglru_proj_fwd=40x13x1 rglru_proj_fwd=40x33x1 rglru_proj_fwd=4x1x1 rglru_proj_fwd=64x4x1 rglru_proj_fwd=8x4x1 " ]
check $? "proj_fwd and proj_dx over whole waves: 64x4 at 1x32768x4096, 40x13 at 1x32768x2560, 40x33 at 1x131072x2560 (got: $out)"
out=$("$recur" list --dir "$work/k176" --plan --shape 2x300x640 2>&1)
echo "$out" | grep -q "illegal (shape B=2 L=300 D=640: the width must be a multiple of 176"
check $? "a width that heads of 176 do not divide is illegal, with the reason"

# sm_90a: the projection kernels on wgmma where the heads are a multiple of 64: proj_fwd 16
# wgmma a 64-column block of the contraction (4 steps of 16 for each of the 2 projections);
# proj_dx and proj_dw as one kernel, proj_dxdw (DXDW), each of its 2 multiplying warpgroups
# 8 a trip (dx's 4 steps and dW's 4) over the 4 trips of a row tile; the shared array aligned
# for the swizzled operands; heads of 176 keep mma.sync, and sm_90's modules have no wgmma
# (one scan kind: the projection kernels are the same in the three)
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.rglru_heads" (tonumber(os.getenv("APART_K"))), chunk = { 8 },' \
	'  prefix = { 32 }, fused = { true }, apart = { true }, scan = { "lookback" } }' > "$work/wg.lua"
APART_K=256 "$recur" gen "$work/wg.lua" --lua "$src/lua" --sm sm_90a -o "$work/k256_90a" -q &&
	APART_K=176 "$recur" gen "$work/wg.lua" --lua "$src/lua" --sm sm_90a -o "$work/k176_90a" -q &&
	APART_K=192 "$recur" gen "$work/wg.lua" --lua "$src/lua" --sm sm_90a -o "$work/k192_90a" -q
# (heads of 192: three k blocks a head; the least of 4 and 3 of an earlier proj_dw stopped
# the generator with an internal error)
check $? "gen of the look-back variant for sm_90a at heads of 256, 176 and 192"
wg() { sed -n "/\.entry rglru_$2(/,/^}/p" "$1" | grep -c 'wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16'; }
f=$work/k256_90a/rglru.apart_fused_grouped_prefix32_lookback_chunk8.ptx
got="$(wg "$f" proj_fwd) $(wg "$f" proj_dxdw) $(grep -cE '\.entry rglru_proj_d[xw]\(' "$f") $(grep -c '^\.target sm_90a' "$f") $(grep -c 'align 1024 .b8 recur_smem' "$f")"
[ "$got" = "32 64 0 1 1" ]
check $? "sm_90a at K = 256: proj_fwd 32 wgmma (4 blocks of 64 x 4 steps x 2), proj_dxdw 64 (2 warpgroups x 4 trips x 8), no proj_dx or proj_dw; target and 1024-byte alignment (got: $got)"
# its epilogue's sigmoid takes fma(acc, 0.5, bias / 2): the 32 biases of a lane's columns
# halved once as they are loaded, no add or multiply a value (64 a thread) before tanh
pf() { sed -n "/\.entry rglru_proj_fwd(/,/^}/p" "$f" | grep -cE "$1"; }
got="$(pf 'tanh\.approx') $(pf 'mul(\.rn)?(\.ftz)?\.f32 .*0f3F000000') $(pf '^[[:space:]]*add(\.rn)?(\.ftz)?\.f32')"
[ "$got" = "64 32 0" ]
check $? "sm_90a at K = 256: proj_fwd's sigmoids from fma(acc, 0.5, bias / 2), the biases halved once (tanh/mul by 0.5/add.f32: 64 32 0; got: $got)"
# and on mma.sync (sm_90's set) the halving is in the staged weights and the biases that
# start the accumulators: no tanh's argument is made a value at a time by a multiply by 0.5
got="$("$py" "$src/tests/ptx_tanh_args.py" "$work/k256/rglru.apart_fused_grouped_prefix32_onepass_chunk8.ptx" rglru_proj_fwd)"
got="$got / $("$py" "$src/tests/ptx_tanh_args.py" "$f" rglru_proj_fwd)"
[ "$got" = "64 0 / 64 0" ]
check $? "proj_fwd on mma.sync (sm_90) and wgmma (sm_90a): 64 tanh a thread, none on a multiply by 0.5 of its own (got: $got)"
# the copies by a warpgroup of their own: proj_fwd 256 threads, the registers moved to the
# multiplying one (56 and 200 a thread), a full and an empty mbarrier wait a trip (4 trips of
# a row tile), its own barrier twice around the epilogue, never the block's; proj_dxdw 384
# threads, one block an SM (40 and 232), 15 waits (the producer's 4 refills and x's, each
# multiplying warpgroup's 4 trips and x's), barrier 2 of both multiplying warpgroups twice a
# tile in each
pw() { sed -n "/\.entry rglru_$2(/,/^}/p" "$1" > "$work/pw.ptx"
	echo "$(grep -o 'maxntid [0-9]*' "$work/pw.ptx" | head -1 | cut -d' ' -f2)/$(grep -c "setmaxnreg.dec.sync.aligned.u32 $3;" "$work/pw.ptx")/$(grep -c "setmaxnreg.inc.sync.aligned.u32 $4;" "$work/pw.ptx")/$(grep -c 'mbarrier.try_wait.parity' "$work/pw.ptx")/$(grep -cE "barrier.sync[[:space:]]+$5;" "$work/pw.ptx")/$(grep -cE 'bar(rier)?.sync[[:space:]]+0;' "$work/pw.ptx")"; }
got="$(pw "$f" proj_fwd 56 200 '1, 128') $(pw "$f" proj_dxdw 40 232 '2, 256')"
[ "$got" = "256/1/1/8/2/1 384/1/1/15/4/1" ]
check $? "sm_90a at K = 256: proj_fwd and proj_dxdw with a producer warpgroup (threads/dec/inc/mbarrier waits/their barrier/block barriers; got: $got)"
# the producer's copies by TMA (WG_TMA): 3-D tiles from maps of the rows taken by value, each
# counted on its buffer's mbarrier, no cp.async left: x's in proj_fwd; in proj_dxdw both
# adjoints' blocks a trip (3 ahead and 4 a tile) and a tile's x and own terms (ahead, and
# one a tile)
tm() { sed -n "/\.entry rglru_$2(/,/^}/p" "$1" > "$work/tm.ptx"
	echo "$(grep -c '\.param \.align 64 \.b8 rglru_'"$2"'_param_[0-9]*\[128\]' "$work/tm.ptx")/$(grep -c 'cp\.async\.bulk\.tensor\.3d\..*complete_tx::bytes' "$work/tm.ptx")/$(grep -c 'expect_tx' "$work/tm.ptx")/$(grep -c 'cp\.async\.cg' "$work/tm.ptx")"; }
got="$(tm "$f" proj_fwd) $(tm "$f" proj_dxdw)"
[ "$got" = "1/7/7/0 4/18/9/0" ]
check $? "sm_90a at K = 256: proj_fwd's and proj_dxdw's copies by TMA from maps by value (maps/tensor copies/expect_tx/cp.async; got: $got)"
out=$(grep -o '"tmaprows:[^"]*"' "$work/k256_90a/manifest.json" | tr -d '"' | LC_ALL=C sort -u | tr '\n' ' ')
[ "$out" = "tmaprows:ws:dproj_Wa:64x64 tmaprows:ws:dproj_Wx:64x64 tmaprows:ws:dxd:64x64 tmaprows:x:64x64 " ]
check $? "sm_90a at K = 256: the manifest's args name the maps: x's, each adjoint's and dx's own terms' rows, boxes of 64 x 64 (got: $out)"
# proj_dxdw's own terms of dx come by TMA with x's block and are read from shared memory in
# the epilogue (2 chunks of 16 bytes a thread of each warpgroup), no global load of them
got=$(sed -n "/\.entry rglru_proj_dxdw(/,/^}/p" "$f" | grep -cE 'ld\.global\.nc\.v4\.u32')/$(sed -n "/\.entry rglru_proj_dxdw(/,/^}/p" "$f" | grep -cE 'ld\.shared\.v4\.u32')
[ "$got" = "0/4" ]
check $? "sm_90a at K = 256: proj_dxdw reads dx's own terms from shared memory, not global (global/shared 16-byte loads: $got)"
# proj_dxdw's grid: the 64-column slices by GW row groups, the slabs of dW's partials,
# planned on 132 SMs at one block an SM: 2 at D = 4096 (128 blocks), 13 at 1x32768x2560
# (520 blocks, 3.94 waves, against 3 in one wave of 120), what the 4 row tiles allow at
# 3x77x512
got="$("$recur" list --dir "$work/k256_90a" --plan --shape 1x131072x4096 --shape 1x32768x2560 --shape 3x77x512 2>&1 |
	grep -o "rglru_proj_dxdw  *grid [0-9x]* block [0-9]*" | LC_ALL=C sort -u | awk '{ print $3 "/" $5 }' | tr '\n' ' ')"
[ "$got" = "40x13x1/384 64x2x1/384 8x4x1/384 " ]
check $? "sm_90a at K = 256: proj_dxdw's grid, slabs on 132 slots (got: $got)"
# a launch's bytes count every tensor it touches once, those read only through a TMA map
# too: proj_fwd x (a pointer and a map) and its 2 projections; proj_dxdw dx, x, the 2
# adjoints and the own terms (all 4 maps alone) and the 2 slabs' partials
got=$("$py" - "$work/k256_90a/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
v = m["variants"][0]
out = []
for k in ("rglru_proj_fwd", "rglru_proj_dxdw"):
    l = [l for p in ("forward", "backward") for l in v[p] if l["kernel"] == k][0]
    out.append("%d/%d" % (l["bytes"].count("(B*L*D*2)"), l["bytes"].count("(GW*D*K*4)")))
print(" ".join(out))
PY
)
[ "$got" = "3/0 5/2" ]
check $? "sm_90a at K = 256: launch bytes count map-only tensors once (proj_fwd, proj_dxdw: bf16 tensors/partials; got: $got)"
f176=$work/k176_90a/rglru.apart_fused_grouped_prefix32_lookback_chunk8.ptx
got="$(grep -c wgmma "$f176") $(cat "$work"/k256/*.ptx | grep -c wgmma)"
[ "$got" = "0 0" ]
check $? "heads of 176 on sm_90a and every sm_90 module keep mma.sync (wgmma lines: $got)"

# ptxas: every kernel without spills (sm_90)
. "$src/tests/ptxas_cache.sh"
find_ptxas
if [ -n "$ptxas" ]; then
	# heads of 256 at prefix 32 and of 176 at chunk 8, two at a time (the rest
	# differ in prefix or chunk alone, which the scans' own tests cover)
	mods=$(ls "$work"/k256/*prefix32*.ptx "$work"/k176/*chunk8.ptx)
	n=$(echo "$mods" | wc -l)
	export -f ptxas_cached ptxas_cache_key
	bad=$(echo "$mods" | xargs -P 2 -I{} bash -c 'log=$(ptxas_cached "$0" "-arch=sm_90 -v" "$1") || { echo "     $1: ptxas failed"; exit 0; }
		echo "$log" | grep -qE "[1-9][0-9]* bytes spill (stores|loads)" && echo "     $(basename "$1"): spills"; exit 0' "$ptxas" {})
	[ -n "$bad" ] && echo "$bad"
	[ -z "$bad" ]; check $? "ptxas accepts $n modules for sm_90 without spills"
	# with reset marks or documents (a step carries its marks and codes; under a three-block
	# register cap ptxas once spilled 8-96 bytes in bwd_apply at chunk 8)
	APART_K=256 "$recur" gen "$src/tests/grids/apart_marks.lua" --lua "$src/lua" -o "$work/marks" -q
	check $? "gen of tests/grids/apart_marks.lua: heads of 256 apart with documents, and with reset marks and states"
	bad=$(find "$work/marks" -name "*.ptx" | LC_ALL=C sort | xargs -P 2 -I{} bash -c 'log=$(ptxas_cached "$0" "-arch=sm_90 -v" "$1") || { echo "     $1: ptxas failed"; exit 0; }
		echo "$log" | grep -qE "[1-9][0-9]* bytes spill (stores|loads)" && echo "     $(basename "$1"): spills"; exit 0' "$ptxas" {})
	[ -n "$bad" ] && echo "$bad"
	[ -z "$bad" ]; check $? "ptxas accepts their 4 modules for sm_90 without spills"
	# Ampere's (the portable path: no clusters; A100 users own most GPUs): the one-pass winner
	f=$work/k256_80/rglru.apart_fused_grouped_prefix32_onepass_chunk8.ptx &&
		log=$(ptxas_cached "$ptxas" "-arch=sm_80 -v" "$f") && ! echo "$log" | grep -qE "[1-9][0-9]* bytes spill"
	check $? "heads of 256 for sm_80: ptxas accepts the one-pass module without spills"
	# Hopper's own (sm_90a): the projections on wgmma, ptxas keeping them asynchronous
	bad=""
	for k in 256 192; do
		f=$work/k${k}_90a/rglru.apart_fused_grouped_prefix32_lookback_chunk8.ptx
		log=$(ptxas_cached "$ptxas" "-arch=sm_90a -v" "$f") && ! echo "$log" | grep -qE "[1-9][0-9]* bytes spill|serialized|injected" ||
			bad="$bad $k"
	done
	[ -z "$bad" ]
	check $? "heads of 256 and 192 for sm_90a: ptxas accepts the look-back modules without spills, and no wait the compiler injects between wgmma and their registers (failed:${bad:- none})"
else
	echo "skip ptxas: not found"
fi
n=$(cat "$work"/k256/*.ptx | grep -c 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32')
[ "$n" -ge 6 ]; check $? "the projections run on tensor cores ($n mma instructions)"

# refusals at the script's line
refuse() {   # NAME EXPECTED-MESSAGE LUA
	printf '%s\n' "$3" > "$work/$1.lua"
	out=$("$recur" gen "$work/$1.lua" --lua "$src/lua" -o "$work/$1" -q 2>&1)
	[ $? != 0 ] && echo "$out" | grep -q "$1.lua:[0-9]*:.*$2" && [ ! -e "$work/$1" ]
}
refuse bad_k "a multiple of 16 from 16 to 256" 'local R = require "recur"
return R.variants { mixer = require "arch.rglru_heads" (200), chunk = { 8 }, prefix = { 32 } }'
check $? "heads of 200 channels are refused at the line, and nothing is written"
refuse bad_fused "fused = false would store the gates" 'local R = require "recur"
return R.variants { mixer = require "arch.recurrentgemma", chunk = { 8 }, prefix = { 32 }, fused = { false } }'
check $? "apart with fused = false is refused at the line"
refuse bad_tok "per-token projection" 'local R = require "recur"
local m = R.mixer("tokbd", { k = 64 })
local W, b = m:param("W", "blockdiag", R.normal_rsqrt_k()), m:param("b", "channel", R.zeros())
local wu, bu = m:param("wu", "channel", R.normal(1)), m:param("bu", "scalar", R.zeros())
local u = m:token_project("u", wu, bu, { scale = "rsqrt_d" })
m:recurrence { log_a = -R.softplus(m:project("p", W, b)) * R.sigmoid(u), b = m.x }
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true } }'
check $? "apart for a mixer with a token stage is refused at the line"
refuse bad_none "no block-diagonal projection" 'local R = require "recur"
return R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true } }'
check $? "apart for a mixer without block-diagonal projections is refused at the line"
# any mixer with block-diagonal projections takes them apart: HGRN's two
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.hgrn", chunk = { 8 }, prefix = { 32 }, fused = { true }, fused_output = { true }, apart = { true } }' \
	> "$work/hgrn.lua"
"$recur" gen "$work/hgrn.lua" --lua "$src/lua" -o "$work/hgrn" -q
check $? "HGRN's projections apart at heads of 64, no line of C"
# apart = { true } at heads of 64 with no fused given: fused, as at other K (the default
# { false } refused the grid, asking for fused = { true }); with apart = { true, false } the
# default stays { false } and the apart half is refused at the line
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, apart = { true } }' > "$work/k64_apart.lua"
out=$("$recur" gen "$work/k64_apart.lua" --lua "$src/lua" -o "$work/k64_apart" -q 2>&1) &&
	[ "$(find "$work/k64_apart" -name "*.ptx" -printf "%f ")" = "rglru.apart_fused_grouped_prefix32_hierarchical_chunk8.ptx " ]
check $? "apart = { true } at heads of 64 defaults to fused (got: $out $(ls "$work/k64_apart" 2>&1 | tr '\n' ' '))"
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, apart = { true, false } }' > "$work/k64_mixed.lua"
out=$("$recur" gen "$work/k64_mixed.lua" --lua "$src/lua" -o "$work/k64_mixed" -q 2>&1)
[ $? != 0 ] && echo "$out" | grep -q 'k64_mixed.lua:2: .*use fused = { true }'
check $? "apart = { true, false } at heads of 64 without fused is refused at the line (got: $out)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
