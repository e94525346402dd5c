#!/usr/bin/env bash
# The portable path, for Ampere and Ada (recur gen --sm sm_80): the
# representative grid generated for sm_80 uses no instruction of sm_90's
# (clusters, distributed shared memory, programmatic dependent launch), its
# manifest asks for no cluster and no early launch, and ptxas accepts every
# module for sm_80 (the A100's; ARCHS="sm_80 sm_86 sm_89" adds the RTX
# 3090's and the RTX 4090's / L40S's: the suite keeps to one, for time);
# every launch fits the shared memory of the A100 and, checked for
# sm_89 by `recur gen --check`, of Ada and consumer Ampere.
# Ampere's and Ada's ptxas allocate registers otherwise than Hopper's: the
# variants at 255 registers spill a few bytes there (none on sm_90, which
# ptxas_test holds to zero), so spills are bounded here, not forbidden.
#   usage: ptx_portable_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
gen=$work.gen
rm -rf "$gen"
"$recur" gen "$src/tests/grids/representative.lua" --lua "$src/lua" --sm sm_80 -o "$gen" -q ||
	{ echo "FAIL recur gen --sm sm_80"; exit 1; }
set -- "$recur" "$src" "$work" "$gen"
# shellcheck source=tests/ptx_lib.sh
. "$src/tests/ptx_lib.sh"
coverage

bad=$(grep -L '^\.target sm_80$' "$ptxdir"/*.ptx | wc -l)
guard "$bad" target "a module for another target does not load on the GPU it was made for" \
	"every module declares .target sm_80" "$bad modules declare another target"
hits=$(grep -lE 'griddepcontrol|%cluster|mapa\.|barrier\.cluster|shared::cluster|setmaxnreg|wgmma|cp\.async\.bulk' \
	"$ptxdir"/*.ptx | xargs -r -n1 basename)
[ -z "$hits" ]
guard $? sm90_only "an sm_90 instruction makes the module fail to load on Ampere and Ada" \
	"no cluster, distributed shared memory, griddepcontrol or other sm_90 instruction" "in: $hits"
grep -qE '"cluster"|"early"|"dwsync"' "$ptxdir/manifest.json"
[ $? = 1 ]
guard $? manifest "a launch in clusters, or an early one, is refused by a GPU without them" \
	"the manifest asks for no cluster, no early launch and no cluster handshake workspace" \
	"$(grep -oE '"cluster"|"early"|"dwsync"' "$ptxdir/manifest.json" | sort | uniq -c | tr '\n' ' ')"

# every launch within the shared memory a block may take where the
# portable modules run: the A100's 163 KB (the sm_80 set above) and the 99
# KB of sm_86 and sm_89 (GeForce 30 and 40, A10, L4, L40S), for the fused
# grid and for RecurrentGemma's heads of 256 (projections apart); what
# cannot fit is refused by gen at the script's line, naming the kernel
py=$(command -v /usr/bin/python3 || command -v python3)
smem_over() {   # MANIFEST LIMIT: "variant:kernel=bytes" of each launch over LIMIT
	"$py" - "$1" "$2" <<'PY'
import json, sys
m, lim = json.load(open(sys.argv[1])), int(sys.argv[2])
for v in m["variants"]:
    for l in v.get("forward", []) + v.get("backward", []):
        n = int(l["smem"]) if str(l["smem"]).isdigit() else -1
        if n < 0 or n > lim: print("%s:%s=%s" % (v["name"], l["kernel"], l["smem"]))
PY
}
over=$(smem_over "$gen/manifest.json" 166912)
[ -z "$over" ]
guard $? smem_sm80 "a launch asking for more shared memory than the GPU has is refused at run time" \
	"every launch of the sm_80 set within the 166912 bytes a block may take on an A100" "over: $over"
# for sm_89 by `recur gen --check` (the launches printed, nothing written:
# a tenth of a second where generating the two grids takes 20 s of CPU),
# each launch's bytes held to the limit here, not by gen's own refusal
check_over() {   # REPORT LIMIT: "variant:kernel=bytes" of each launch over LIMIT
	awk -v lim="$2" '/^[^ ]/ { v = $2 } /^    / { if ($6 !~ /^[0-9]+$/ || $6 + 0 > lim) print v ":" $2 "=" $6 }' "$1"
}
for g in tests/grids/representative.lua lua/variants/recurrentgemma.lua; do
	n=$(basename "$g" .lua)
	rm -rf "$work.$n.89"
	"$recur" gen "$src/$g" --lua "$src/lua" --sm sm_89 --check -o "$work.$n.89" > "$work.$n.89.txt" 2>&1
	rc=$?
	over=$(check_over "$work.$n.89.txt" 101376)
	launches=$(grep -c '^    ' "$work.$n.89.txt")
	[ $rc = 0 ] && [ -z "$over" ] && [ "$launches" -ge 10 ] && [ ! -e "$work.$n.89" ] &&
		grep -q "^checked [0-9]* variants for sm_89: every launch fits; nothing written$" "$work.$n.89.txt"
	guard $? "smem_sm89_$n" "RG-LRU's backward took 112-115 KB and heads of 256 105 KB: no Ada or consumer Ampere card could train" \
		"$g for sm_89 (gen --check, nothing written): all $launches launches within the 101376 bytes a block may take there" \
		"rc $rc: ${over:-$(tail -3 "$work.$n.89.txt")}"
done
# what cannot fit is refused before anything is written: three projections
# of heads of 256 apart take 125 KB in proj_fwd however its rows are staged
cat > "$work.three.lua" <<'EOF'
local R = require "recur"
local m = R.mixer("rg3", { k = 256 })
local p = {}
for _, n in ipairs { "a", "x", "c" } do
  p[n] = m:project("p" .. n, m:param("W" .. n, "blockdiag", R.normal_rsqrt_k()), m:param("b" .. n, "channel", R.zeros()))
end
local lam = m:param("lam", "channel", R.decay(0.9^2, 0.999^2))
local log_a = -8 * R.sigmoid(p.a) * R.softplus(lam)
m:recurrence { log_a = log_a, b = R.sqrtb(1 - R.exp(2 * log_a)) * R.sigmoid(p.x) * R.sigmoid(p.c) * m.x }
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true }, scan = { "onepass" } }
EOF
refusal="three.lua:11: variant apart_fused_grouped_prefix32_onepass_chunk8: kernel rg3_proj_fwd takes [0-9]* bytes"
refusal="$refusal of shared memory a block, more than the 101376 a block may take on sm_86"
for flag in "" --check; do
	rm -rf "$work.three"
	# shellcheck disable=SC2086 # no flag, or one
	out=$("$recur" gen "$work.three.lua" --lua "$src/lua" --sm sm_86 $flag -o "$work.three" -q 2>&1)
	rc=$?
	[ $rc = 1 ] && echo "$out" | grep -q "$refusal" && [ ! -e "$work.three" ]
	guard $? "smem_refused${flag:+_check}" "a module that cannot launch must not be written as if it could" \
		"three projections of 256 for sm_86, recur gen${flag:+ $flag}: refused at the script's line naming the kernel and the target, \
nothing written" \
		"rc $rc: $out"
done
# the one module of RecurrentGemma's grid assembled for Ada below, generated alone
cat > "$work.rg89.lua" <<'EOF'
local R = require "recur"
return R.variants { mixer = require "arch.recurrentgemma", chunk = { 8 }, prefix = { 32 }, fused = { true },
  scan = { "onepass" } }
EOF
"$recur" gen "$work.rg89.lua" --lua "$src/lua" --sm sm_89 -o "$work.rg89" -q
guard $? gen_sm89_heads "a grid for Ada that does not generate cannot run there" \
	"RecurrentGemma's one-pass chunk-8 variant generated for sm_89" "recur gen failed"

find_ptxas
if [ -z "$ptxas" ]; then
	echo "SKIP: no ptxas (set PTXAS, or put CUDA's bin/ on PATH): the portable modules were not compiled"
	finish
	exit $?
fi
MAXSPILL=64
# heads of 256 on Ada: proj_fwd and proj_dx in two halves of the head (99 KB a
# block), at 254-255 registers and no spill (proj_fwd spilled 24 bytes there
# while it held its biases in registers; one module, for time)
m="$work.rg89/rglru.apart_fused_grouped_prefix32_onepass_chunk8.ptx"
log=$("$ptxas" -arch=sm_89 -v "$m" -o /dev/null 2>&1)
rc=$?
s=$(echo "$log" | grep -o '[0-9]* bytes spill stores' | awk '$1 > m { m = $1 } END { print m + 0 }')
[ $rc = 0 ] && [ "$s" = 0 ]
guard $? ptxas_sm89_heads "a kernel ptxas refuses, or that spills, fails or crawls on that GPU" \
	"ptxas -arch=sm_89 accepts RecurrentGemma's one-pass chunk-8 module, no kernel spilling" "rc $rc, $s bytes: $(echo "$log" | tail -2)"
for arch in ${ARCHS:-sm_80}; do
	PTXAS_FLAGS="-arch=$arch -v"
	mkdir -p "$work/ptxas_$arch"
	ptxas_all "$work/ptxas_$arch"
	rej=$(grep -L '^0$' "$work/ptxas_$arch"/*.rc | xargs -r -n1 basename | sed 's/\.rc$//')
	[ -z "$rej" ]
	guard $? "ptxas_$arch" "ptxas refusing a module means the driver refuses it on that GPU" \
		"ptxas -arch=$arch accepts all $nvar modules" "refused: $rej"
	# per module: the most any kernel spills; the table goes to the log
	worst=0 table=""
	for log in "$work/ptxas_$arch"/*.log; do
		s=$(grep -o '[0-9]* bytes spill stores' "$log" | awk '$1 > m { m = $1 } END { print m + 0 }')
		[ "$s" -gt 0 ] && table="$table $(basename "$log" .log):$s"
		[ "$s" -gt "$worst" ] && worst=$s
	done
	echo "     $arch spill stores per module (bytes, only those that spill):${table:- none}"
	[ "$worst" -le "$MAXSPILL" ]
	guard $? "spill_$arch" "a larger spill means a kernel that no longer fits its registers on that GPU" \
		"no kernel spills more than $MAXSPILL bytes on $arch (most: $worst)" "a kernel spills $worst bytes"
done
finish
