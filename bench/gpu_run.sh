#!/usr/bin/env bash
# One call on the GPU machine: nothing is built there. It runs the recur
# binary and PTX built here (carried in .carry/), verifies, then times, and
# prints a short table last; full logs go to $OUT.
#   usage: bench/gpu_run.sh [verify-args...]
set -u
BIN=${RECUR_BIN:-.carry/recur}
PTX=${RECUR_PTX:-.carry/ptx}
OUT=${OUT:-/tmp/recur-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
"$BIN" verify --dir "$PTX" "$@" 2>&1 | tee "$OUT/verify.log"
exit "${PIPESTATUS[0]}"
