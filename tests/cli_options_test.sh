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
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
