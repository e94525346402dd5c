#!/usr/bin/env bash
# The PTX checks can fail: a copy of the representative grid's PTX and
# manifest, broken in one place per guard (an instruction added, removed or
# renamed in one kernel, one launch of the manifest changed, one variant
# removed), goes through tests/ptxas_test.sh and tests/ptx_structure_test.sh.
# Both must exit non-zero and every guard broken here must report FAIL for
# the variant that was broken. (Each edit is checked to have changed the
# file: an edit that stops matching the generated text fails this test.)
#   usage: ptx_checks_fail_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR PTX_DIR
set -u
recur=$1 src=$2 work=$3 ptxdir=$4
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
command -v python3 > /dev/null || { echo "FAIL python3 not found (llvm-19-dev's tools bring it): the manifest edits need it"; exit 1; }
[ -f "$ptxdir/manifest.json" ] || { echo "FAIL no manifest.json in $ptxdir (the fixture gen_ptx writes it)"; exit 1; }
m=$work/ptx
cp -r "$ptxdir" "$m"
R1=rglru.fused_grouped_prefix32_hierarchical_chunk8
R2=rglru.fused_grouped_prefix32_lookback_chunk8
R3=rglru.fused_grouped_prefix32_onepass_chunk8
R4=rglru.fused_grouped_prefix64_onepass_chunk16
R5=rglru.grouped_prefix128_hierarchical_chunk16
R6=rglru.fused_grouped_prefix64_hierarchical_chunk64
S1=samu.fused_output_fused_write_shared_sfu_grouped_prefix32_hierarchical_chunk8
S2=samu.fused_output_fused_write_grouped_prefix128_hierarchical_chunk32
S3=samu.fused_output_fused_write_shared_sfu_grouped_prefix32_onepass_chunk8
S4=samu.fused_output_fused_write_shared_sfu_grouped_prefix64_lookback_chunk16
# edit VARIANT KERNEL SED-COMMANDS WHAT: sed on the lines of one kernel only
edit() {
	local f=$m/$1.ptx
	cp "$f" "$work/before.ptx" 2>/dev/null
	sed -i "/^.visible .entry $2(/,/^}/ { $3 }" "$f"
	! cmp -s "$f" "$work/before.ptx"; check $? "edit applied: $1 $2: $4"
}
# the first loop label of a kernel (bench/ptx_loops.sh's first row)
loop_label() { "$src/bench/ptx_loops.sh" "$m/$1.ptx" "$2" | awk 'NR == 2 { print $1 }'; }

# ptxas_test.sh's guards
rm "$m/$S4.ptx"   # coverage (and its variant out of the manifest, below)
edit "$S1" samu_tok_fwd 's/^\tmov.u32 \t\(%r[0-9]*\), %tid.x;/&\n\tnot_an_instruction;/' "ptxas: a line ptxas cannot parse"
edit "$S1" samu_tok_dx 's/^.visible .entry samu_tok_dx(/.visible .entry samu_tok_dx_renamed(/' "entries: the launched kernel renamed"
edit "$S2" samu_fwd_carry 's/^\t.reg .b64 \t%rd<[0-9]*>;/&\n\t.local .align 4 .b8 \t__depot_test[64];\n\t.reg .b32 \t%q<3>;/
	s/^\tmov.u32 \t%r1, %tid.x;/&\n\tmov.u32 \t%q1, __depot_test;\n\tand.b32 \t%q2, %r1, 60;\n\tadd.s32 \t%q1, %q1, %q2;\n\tst.local.u32 \t[%q1], %r1;\n\tld.local.u32 \t%r1, [%q1];/' \
	"ptxas-spills: a per-thread array in local memory, indexed by the thread"
edit "$S3" samu_tok_fwd 's/^\tmov.u32 \t\(%r[0-9]*\), %tid.x;/&\n\ttanh.approx.f32 \t%f1, %f1;/' "token-precision: tanh.approx in a token kernel"
edit "$S3" samu_bwd_apply 's/^\tmov.u32 \t\(%r[0-9]*\), %tid.x;/&\n\tcvt.rn.f16x2.f32 \t%r1, %f1, %f2;/' "samu-fp32-maps: a 16-bit map pack in SAMU's backward"
edit "$R4" rglru_fwd_scan 's/atom.global.add.u32/atom.global.inc.u32/' "lookback-forward: the ticket's atomic add gone"
edit "$R6" rglru_bwd_apply 's/membar.gl;/membar.sys;/' "pair-step: the first's fence gone"
edit "$R3" rglru_bwd_apply 's/ld.volatile.global.v4.u32/ld.volatile.global.v2.u32/' "onepass-backward: maps read in 8-byte pieces"
edit "$R5" rglru_fwd_apply 's/^\tmov.u32 \t\(%r[0-9]*\), %tid.x;/&\n\tcvt.rn.f16x2.f32 \t%r1, %f1, %f2;/' "fp16-forward-maps: fp16 maps in a hierarchical forward"
edit "$R2" rglru_fwd_scan '/bar.red.or/d' "fp16-forward-maps, kept-forward-maps: the overflow vote gone"
python3 - "$m/manifest.json" <<'PY'
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
def launch(variant, kernel):
    for v in doc["variants"]:
        if v["name"] == variant:
            for l in v["forward"] + v["backward"]:
                if l["kernel"] == kernel:
                    return l
    sys.exit("no launch %s of %s" % (kernel, variant))
doc["variants"] = [v for v in doc["variants"]                            # coverage
                   if v["name"] != "fused_output_fused_write_shared_sfu_grouped_prefix64_lookback_chunk16"]
for v in doc["variants"]:                                                  # manifest: a variant
    if v["name"] == "fused_grouped_prefix64_hierarchical_chunk64":         # illegal at 3x1000x1024
        v["rules"].append({"expr": "B<3", "message": "a rule added by ptx_checks_fail_test"})
s1 = "fused_output_fused_write_shared_sfu_grouped_prefix32_hierarchical_chunk8"
r1 = launch("fused_grouped_prefix32_hierarchical_chunk8", "rglru_fwd_reduce")   # workspace-clears: an
r1["clears"] = True                                                        # RG-LRU launch that clears
r1["args"] += ["zero:base", "zero:words"]
launch(s1, "samu_bwd_apply")["smem"] = "120000"                            # smem-two-blocks
launch("fused_output_fused_write_grouped_prefix128_hierarchical_chunk32", "samu_fwd_carry")["grid"][1] = "70000"   # plans
launch("fused_grouped_prefix32_hierarchical_chunk8", "rglru_param_reduce")["grid"][0] += "+1"                       # param-reduce-grid
launch("fused_grouped_prefix32_onepass_chunk8", "rglru_bwd_apply")["grid"][0] = "2*cdiv(L,32)"                    # onepass-residency
json.dump(doc, open(path, "w"), indent=1)
PY
check $? "manifest edits applied: a variant out, a rule in, clears, smem, a grid out of range, param_reduce's grid, a one-pass grid"
"$recur" list --dir "$m" > /dev/null 2>&1; check $? "the edited manifest still loads (each guard meets its own edit)"

# ptx_structure_test.sh's guards (the overflow vote above too)
edit "$R1" rglru_bwd_apply '/ldmatrix/ { /trans/! p }' "held-weight-fragments: every x fragment load twice"
edit "$R1" rglru_fwd_apply 's/^\tmov.u32 \t\(%r[0-9]*\), %tid.x;/&\n\tst.global.u32 \t[%rd1], %r1;/' "row-stores: a 4-byte row store"
edit "$R1" rglru_fwd_reduce '0,/tanh.approx.f32/ { /tanh.approx.f32/p }' "special-functions-once: one tanh.approx twice"
edit "$R2" rglru_bwd_apply 's/^}$/$L__BB999_1:\n\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \t{%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};\n\tex2.approx.f32 \t%f1, %f1;\n\t@%p1 bra.uni \t$L__BB999_1;\n}/' \
	"chunk8-pass-a-only: one more forward gate sweep"
edit "$R4" rglru_bwd_apply '/vote\./d' "map16-range-vote: pass A's vote gone"
lab=$(loop_label "$R6" rglru_fwd_apply)
edit "$R6" rglru_fwd_apply "s/^$(printf '%s' "$lab" | sed 's/\$/\\$/g'):\$/&\n\tlg2.approx.f32 \t%f1, %f1;/" "hoisting: an lg2 in a loop ($lab)"

# (ptxas itself runs on the two modules broken for it alone: PTXAS=none
# leaves it out of the run over the whole copy)
PTXAS=none bash "$src/tests/ptxas_test.sh" "$recur" "$src" "$work/ptxas" "$m" > "$work/ptxas.log" 2>&1; rc=$?
[ "$rc" -eq 1 ]; check $? "ptxas_test.sh exits 1 on the broken copy (exit $rc; $(tail -1 "$work/ptxas.log"))"
mkdir -p "$work/two"; cp "$m/$S1.ptx" "$m/$S2.ptx" "$m/manifest.json" "$work/two/"
bash "$src/tests/ptxas_test.sh" "$recur" "$src" "$work/ptxas2" "$work/two" > "$work/ptxas2.log" 2>&1; rc=$?
[ "$rc" -eq 1 ]; check $? "ptxas_test.sh exits 1 on the two modules broken for ptxas (exit $rc; $(tail -1 "$work/ptxas2.log"))"
bash "$src/tests/ptx_structure_test.sh" "$recur" "$src" "$work/structure" "$m" > "$work/structure.log" 2>&1; rc=$?
[ "$rc" -ne 0 ]; check $? "ptx_structure_test.sh exits non-zero on the broken copy (exit $rc; $(tail -1 "$work/structure.log"))"
# expect LOG LINE-PREFIX: that FAIL line is in the log
expect() { grep -qF -- "$2" "$work/$1.log"; check $? "$1: $2"; }
for g in coverage manifest plans onepass-residency param-reduce-grid workspace-clears entries token-precision \
	lookback-forward pair-step onepass-backward samu-fp32-maps fp16-forward-maps; do
	expect ptxas "FAIL [$g]"
done
expect ptxas "FAIL ${S1#*.}: plan launches samu_tok_dx, not an .entry"
expect ptxas "3x1000x1024:illegal (shape B=3 L=1000 D=1024: a rule added by ptx_checks_fail_test)"
expect ptxas "FAIL [workspace-clears] launches that clear: 4 \"clears\", 4 zero:base args, 3 SAMU variants"
expect ptxas "FAIL [plans] launch plans:     1x1x64 PLAN ERROR: variant ${S2#*.}: forward[2] kernel samu_fwd_carry"
expect ptxas "FAIL [onepass-residency] one-pass bwd_apply grids (3 launches marked resident): ${R3#*.} "
expect ptxas "1x8192x1024 rglru_param_reduce 525x1x1 want 524x1x1"
expect ptxas "FAIL $S3.ptx samu_tok_fwd: tanh.approx in a per-token kernel"
expect ptxas "FAIL $R4: no ticketed fwd_scan"
expect ptxas "FAIL $R6: bwd_apply lacks the pair step (4 of 5 parts)"
expect ptxas "FAIL $R3: single-pass backward with reduce/carry (0), or without its 16-byte spin"
expect ptxas "FAIL $S3: bwd_apply packs 16-bit h maps"
expect ptxas "FAIL $R5.ptx rglru_fwd_apply: fp16 maps where the plan keeps none"
expect ptxas "FAIL $R2.ptx rglru_fwd_scan: fp16 maps without the overflow vote"
if grep -q "^SKIP: ptxas not found" "$work/ptxas2.log"; then
	skipped="ptxas not found: that ptxas rejects a broken module and reports a stack frame was not checked"
else
	expect ptxas2 "FAIL [ptxas] $S1: ptxas rejected it"
	expect ptxas2 "FAIL [ptxas-spills] $S2"
fi
for g in coverage smem-two-blocks kept-forward-maps held-weight-fragments map16-range-vote row-stores hoisting \
	special-functions-once chunk8-pass-a-only; do
	expect structure "FAIL [$g]"
done
expect structure "FAIL $R2.ptx rglru_fwd_scan: no kept fp16 maps, no overflow vote"
expect structure "samu_bwd_apply           grid 1x1x1 block 128 smem 120000"
expect structure "FAIL $R1: bwd_apply re-reads weight fragments"
expect structure "FAIL $R4: pass A tests its 16-bit maps' range per value"
expect structure "FAIL $R1.ptx rglru_fwd_apply: "
expect structure "FAIL $R6.ptx rglru_fwd_apply: lg2 inside "
expect structure "FAIL $R1.ptx rglru_fwd_reduce: 1 tanh.approx inputs evaluated twice"
expect structure "FAIL $R2.ptx rglru_bwd_apply: 3 forward gate sweeps"
if [ "$fail" -ne 0 ]; then
	echo "--- ptxas_test.sh on the broken copy:"; grep -v "^ok" "$work/ptxas.log" | head -60
	echo "--- ptxas_test.sh on the two modules broken for ptxas:"; grep -A8 "^FAIL \[ptxas" "$work/ptxas2.log" | head -30
	echo "--- ptx_structure_test.sh on the broken copy:"; grep -v "^ok" "$work/structure.log" | head -60
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
[ -z "${skipped:-}" ] || { echo "SKIP: $skipped"; exit 77; }
