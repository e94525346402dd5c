#!/usr/bin/env bash
# Any script, any grid: recur gen either writes PTX that ptxas accepts or
# refuses with a message at the script's FILE:LINE -- never a signal, an
# abort, an internal error or a silent exit. The cases are mixers made of
# every leaf and function of the scripting library in log_a, b and the
# output, crossed with every grid axis (fused, fused_output, fused_write,
# shared_sfu, scan, chunk, prefix) as a pairwise covering array
# (tests/combo/cover.awk says which pairs and why), plus hand-written edge
# cases (tests/combo/edge/*.lua). Each case is one script; its index line
# predicts "build" or "refuse" (or "any" where folding decides), and a case
# that does otherwise fails too: a refusal of something the templates can
# build is a bug as well.
#
#   usage: gen_combo_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
#
# By default a sample of 20 cases (about 30 s on 2 cores): the covering
# array's first RECUR_COMBO_SAMPLE cases at chunks 8 and 16 (default 8: the
# greedy's first picks, which cover the most pairs; longer chunks take
# ptxas many times longer), the refusals (they cost no PTX), and the edge
# cases marked "sampled". RECUR_COMBO_FULL=1 runs all 240 (about 20 minutes
# with RECUR_COMBO_JOBS=2 on 2 busy cores); RECUR_COMBO_JOBS=N runs N cases
# at a time (default 1); RECUR_COMBO_KEEP=1 keeps the generated PTX under
# WORK_DIR/out.
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work/cases" "$work/out" "$work/res"
cases=$work/cases
awk -v dir="$cases" -f "$src/tests/combo/cover.awk" > "$work/index.all" 2> "$work/cover.txt" ||
	{ echo "FAIL the covering array (tests/combo/cover.awk)"; echo "0 passed, 1 failed"; exit 1; }
# an edge case's first line: "-- expect: build|refuse|any [sampled] [nospill] description";
# nospill: ptxas must report no spill stores either (prediction build-nospill)
for f in "$src"/tests/combo/edge/*.lua; do
	n=e_$(basename "$f" .lua)
	cp "$f" "$cases/$n.lua"
	head -n 1 "$f" | awk -v n="$n" '{ p = $3 ~ /^(build|refuse|any)$/ ? $3 : "any"; s = 0; d = $0
		sub(/^-- expect: [a-z]+ */, "", d)
		while (match(d, /^(sampled|nospill) +/)) {
			w = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			if (w ~ /^sampled/) s = 1; else p = p "-nospill"
		}
		print n, p, d > (s ? "/dev/stdout" : "/dev/stderr") }' >> "$work/index.all" 2>> "$work/index.unsampled"
done
if [ "${RECUR_COMBO_FULL:-0}" = 1 ]; then
	cat "$work/index.all" "$work/index.unsampled" > "$work/index"
else
	{ grep '^c' "$work/index.all" | grep -E ' chunk (8|16) ' | head -n "${RECUR_COMBO_SAMPLE:-8}"
	  grep '^r' "$work/index.all"
	  grep '^e_' "$work/index.all"; } > "$work/index"
fi
cat "$work/cover.txt"

# ptxas: $PTXAS, the PATH or /usr/local/cuda; without it the PTX is not assembled
. "$src/tests/ptxas_cache.sh"
find_ptxas
[ -n "$ptxas" ] || echo "ptxas not found: the generated PTX is not assembled"

# one case: NAME PREDICTION; writes res/NAME (ok or FAIL line)
run_case() {
	local name=$1 pred=$2 out=$work/out/$1 log=$work/res/$1.log rc msg nptx spill="" f t0=$SECONDS
	timeout 900 "$recur" gen "$cases/$name.lua" -o "$out" -q -j 1 > "$log" 2>&1
	rc=$?
	msg=$(head -c 300 "$log" | head -n 1)
	verdict() { echo "$1 $name $2 ($((SECONDS - t0)) s)" > "$work/res/$name.v"; }
	if [ $rc -eq 124 ]; then verdict FAIL "timed out: $msg"; return; fi
	if [ $rc -ge 128 ]; then verdict FAIL "killed by signal $((rc - 128)): $msg"; return; fi
	if grep -q "internal error" "$log"; then verdict FAIL "internal error (status $rc): $msg"; return; fi
	if [ $rc -ne 0 ]; then
		if ! grep -q "$name\.lua:[0-9][0-9]*:" "$log"; then verdict FAIL "refused without FILE:LINE (status $rc): $msg"; return; fi
		if [ "${pred%-nospill}" = build ]; then verdict FAIL "refused, predicted to build: $msg"; return; fi
		verdict ok "refused at its line: ${msg#*$name.lua}"
		return
	fi
	nptx=$(ls "$out"/*.ptx 2>/dev/null | wc -l)
	if [ ! -f "$out/manifest.json" ] || [ "$nptx" -eq 0 ]; then verdict FAIL "status 0 without a manifest and PTX: $msg"; return; fi
	if [ "$pred" = refuse ]; then verdict FAIL "built, predicted to be refused"; return; fi
	if ! "$recur" list --dir "$out" --plan --shape 2x300x128 --shape 1x4096x64 > "$work/res/$name.plan" 2>&1 ||
		grep -q "PLAN ERROR" "$work/res/$name.plan"; then
		verdict FAIL "the manifest does not plan: $(grep -m1 -E 'PLAN ERROR|error' "$work/res/$name.plan")"; return
	fi
	if [ -n "$ptxas" ]; then
		for f in "$out"/*.ptx; do
			local pl=$work/res/$name.ptxas.$(basename "$f" .ptx)
			if ! ptxas_cached "$ptxas" "-arch=sm_90 -v" "$f" > "$pl"; then
				verdict FAIL "ptxas rejects $(basename "$f"): $(grep -m1 -i error "$pl")"; return
			fi
			grep -q "[1-9][0-9]* bytes spill stores" "$pl" && spill=" (spills)"
		done
	fi
	if [ -n "$spill" ] && [ "$pred" = build-nospill ]; then
		verdict FAIL "ptxas spills in $(grep -l "[1-9][0-9]* bytes spill stores" "$work/res/$name".ptxas.* | sed 's/.*\.ptxas\.//' | tr '\n' ' ')"
		return
	fi
	[ "${RECUR_COMBO_KEEP:-0}" = 1 ] || rm -rf "$out"
	verdict ok "built $nptx variant(s)${ptxas:+, ptxas accepts}$spill"
}
export -f run_case ptxas_cached ptxas_cache_key
export recur work cases ptxas
start=$(date +%s)
awk '{ print $1, $2 }' "$work/index" |
	xargs -P "${RECUR_COMBO_JOBS:-1}" -n 2 bash -c 'run_case "$@"' _
pass=0 fail=0
while read -r name pred desc; do
	if [ -f "$work/res/$name.v" ]; then line=$(cat "$work/res/$name.v"); else line="FAIL $name no result"; fi
	echo "$line"
	case $line in
	ok*) pass=$((pass + 1)) ;;
	*) fail=$((fail + 1)); echo "     case: $desc"; echo "     script: $cases/$name.lua" ;;
	esac
done < "$work/index"
count() { cat "$work"/res/*.v 2>/dev/null | grep -c "$1"; }
echo "$(wc -l < "$work/index") cases in $(($(date +%s) - start)) s: $(count '^ok .* built') built," \
	"$(count '^ok .* refused at') refused at their line, $(count 'spills') of them with spills"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
