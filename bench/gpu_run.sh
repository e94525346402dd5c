#!/usr/bin/env bash
# One call on the GPU machine: nothing is built there. It runs the recur
# binary and PTX built here (carried in .carry/), verifies, then times, and
# prints a short table last; full logs go to $OUT (default out/gpu_run).
#   usage: bench/gpu_run.sh [verify|bench|calibrate] [args...]   (default verify)
set -u
BIN=${RECUR_BIN:-.carry/recur}
PTXROOT=${PTXROOT:-.carry/unpacked}   # where the carried PTX sets are unpacked
PTX=${RECUR_PTX:-$PTXROOT/ptx}
OUT=${OUT:-out/gpu_run}
mkdir -p "$OUT"
# PTX travels compressed (it is text and compresses ~10x)
if [ ! -d "$PTX" ] && [ -f .carry/ptx.tar.xz ]; then
	mkdir -p "$PTXROOT" && tar xJf .carry/ptx.tar.xz -C "$PTXROOT"
	for f in .carry/ptx_*.tar.xz; do [ -f "$f" ] && tar xJf "$f" -C "$PTXROOT"; done
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
cmd=verify
case "${1:-}" in verify|bench|calibrate) cmd=$1; shift ;; esac
"$BIN" "$cmd" --dir "$PTX" "$@" 2>&1 | tee -a "$OUT/$cmd.log"
exit "${PIPESTATUS[0]}"
