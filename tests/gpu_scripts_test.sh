#!/usr/bin/env bash
# The GPU scripts that are run by hand on the GPU machine (tests/
# gpu_sanitize.sh: compute-sanitizer over every variant; tests/
# gpu_progress.sh: verify loops beside a busy process), checked here
# without running a kernel: their syntax, their skip (exit 77 with the
# reason) where there is no driver, and the commands they would run on a
# generated folder (DRY_RUN=1): every variant under every tool at shapes
# with B > 1, and the waiting variants split between two loops.
#   usage: gpu_scripts_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
san=$src/tests/gpu_sanitize.sh prog=$src/tests/gpu_progress.sh

bash -n "$san" && bash -n "$prog"
check $? "both scripts parse (bash -n)"
for s in "$san" "$prog"; do
	out=$(RECUR_LIBCUDA=$work/no-libcuda.so bash "$s" "$recur" "$src" "$work/x" 2>&1); rc=$?
	[ $rc = 77 ] && [[ $out == SKIP:*RECUR_LIBCUDA* ]]
	check $? "$(basename "$s") without a driver: exit 77 and the reason (rc $rc: $out)"
	bash "$s" >/dev/null 2>&1
	[ $? = 2 ]
	check $? "$(basename "$s") without arguments: usage, exit 2"
done

"$recur" gen "$src/tests/fuzz/tiny.lua" -o "$work/ptx" -q
check $? "recur gen of the fuzz grid"
out=$(DRY_RUN=1 bash "$san" "$recur" "$src" "$work/s" "$work/ptx" 2>&1); rc=$?
n=$(printf '%s\n' "$out" | grep -c "verify --dir $work/ptx --variant .* --shape 2x37x64 --shape 3x1000x128")
tools=$(printf '%s\n' "$out" | grep -o -- '--tool [a-z]*' | sort -u | tr '\n' ' ')
[ $rc = 0 ] && [ "$n" = 8 ] && [ "$tools" = "--tool initcheck --tool memcheck --tool racecheck --tool synccheck " ]
check $? "gpu_sanitize.sh: 2 variants x 4 tools, each a verify at 2x37x64 and 3x1000x128 ($n runs; $tools)"
out=$(DRY_RUN=1 TOOLS=memcheck VERIFY_ARGS="--resets 0.01 --h0" bash "$san" "$recur" "$src" "$work/s" "$work/ptx" 2>&1); rc=$?
[ $rc = 0 ] && [ "$(printf '%s\n' "$out" | grep -c -- "--shape 3x1000x128 --resets 0.01 --h0$")" = 2 ]
check $? "gpu_sanitize.sh: VERIFY_ARGS reach every verify, after the shapes"
out=$(DRY_RUN=1 TOOLS=bogus bash "$san" "$recur" "$src" "$work/s" "$work/ptx" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"unknown tool bogus"* ]]
check $? "an unknown tool is refused"
out=$(DRY_RUN=1 BUSY_VARIANT=fused_grouped_prefix32_lookback_chunk8 bash "$prog" "$recur" "$src" "$work/p" "$work/ptx" 2>&1); rc=$?
[ $rc = 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^loop [ab]: timeout 600 .* verify ')" = 2 ] &&
	[[ $out == *"loop a: "*"--variant fused_grouped_prefix32_lookback_chunk8"* ]] &&
	[[ $out == *"loop b: "*"--variant fused_output_fused_write_shared_sfu_grouped_prefix32_onepass_chunk8"* ]] &&
	[[ $out == *"busy: "*"bench "*"--shapes 8x131072x1024"* ]]
check $? "gpu_progress.sh: the look-back and one-pass variants in two loops, a bench beside them"
out=$(DRY_RUN=1 bash "$prog" "$recur" "$src" "$work/p" "$work/ptx" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *BUSY_VARIANT* ]]
check $? "gpu_progress.sh on a folder of waiting variants only: asks for BUSY_VARIANT"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
