#!/usr/bin/env bash
# Malformed numbers on the command line are refused before anything runs,
# with the option and the value named and a non-zero exit: never read as 0
# (a seed of 0, no timing) and run anyway. Parsing comes before the manifest
# and the driver, so this runs without a GPU.
#   usage: cli_options_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
check() { if [ "$1" = 0 ]; then echo "ok   $2"; pass=$((pass+1)); else echo "FAIL $2"; fail=$((fail+1)); fi; }
refused() {   # refused WHAT-TO-FIND ARGS...: non-zero exit, message names it
	local want=$1; shift
	out=$("$recur" "$@" --dir "$work/none" 2>&1); rc=$?
	[ $rc -ne 0 ] && echo "$out" | grep -qF -- "$want"; check $? "recur $* refused, naming \"$want\" (rc $rc: $(echo "$out" | head -1))"
}
refused "--seed -3" verify --seed -3
refused "--seed 12a" verify --seed 12a
refused "--time x" verify --time x
refused "--time 0" verify --time 0
refused "--x-scale 0" verify --x-scale 0
refused "--x-scale 2x" verify --x-scale 2x
refused "--seed 12a" bench --seed 12a
refused "--seed 99999999999999999999999" bench --seed 99999999999999999999999
refused "--rounds 0" bench --rounds 0
refused "--samples x" bench --samples x
refused "--seed x" calibrate --seed x
refused "--warmup -1" calibrate --warmup -1
refused "--memory-budget 0" calibrate --memory-budget 0
refused "--memory-budget 4.5x" calibrate --memory-budget 4.5x
# --mixer accumulates; a --variant of a mixer none names is refused, not
# silently left out (a manifest is all this needs: the check comes before
# the driver)
mkdir -p "$work/m"
variant() { printf '{"name": "%s", "mixer": "%s", "ptx": "x.ptx", "vars": [], "rules": [], "workspaces": [], "forward": [{"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "args": []}], "backward": []}' "$1" "$2"; }
printf '{"format": 1, "target": "sm_90", "ptx_isa": "8.0", "mixers": {"toy": {"params": []}, "other": {"params": []}},\n "variants": [%s, %s]}\n' \
	"$(variant a toy)" "$(variant b other)" > "$work/m/manifest.json"
: > "$work/m/x.ptx"
out=$("$recur" verify --dir "$work/m" --mixer other --variant a 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -qF "variant a is of mixer toy"
check $? "recur verify --mixer other --variant a refused, naming the variant's mixer (rc $rc: $(echo "$out" | head -1))"
out=$("$recur" verify --dir "$work/m" --mixer other --mixer toy --variant a --variant b 2>&1)
echo "$out" | grep -q "variant\|manifest"; [ $? -ne 0 ]
check $? "recur verify --mixer other --mixer toy takes both mixers' variants ($(echo "$out" | head -1))"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
