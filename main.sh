#!/usr/bin/env bash
# The main job: install what is missing, build, generate every variant's PTX,
# check it with ptxas, and where a GPU is present verify every variant at the
# seed's shapes, calibrate, benchmark and compare against the seed.
set -eu
cd "$(dirname "$0")"
bash scripts/deps.sh
bash scripts/build.sh
./build/recur gen lua/variants/all.lua -o out/ptx
set -o pipefail   # a failing check must fail the job, not hide behind tail
bash tests/ptxas_test.sh ./build/recur . build/ptxas_check out/ptx | tail -1
bash tests/ptx_structure_test.sh ./build/recur . build/ptx_structure_check out/ptx | tail -1
if [ -z "${RECUR_LIBCUDA:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
	echo "no GPU driver (libcuda.so.1) here: PTX generated and checked in out/ptx;"
	echo "verify, calibrate, bench and compare need an NVIDIA GPU (sm_80 or newer)."
	exit 0
fi
SEED="1x8192x1024,1x32768x1024,1x65536x1024,1x131072x1024"
./build/recur verify --dir out/ptx $(echo "$SEED" | tr ',' '\n' | sed 's/^/--shape /') --shape 3x1000x1024
# the fastest variant holding at most this many extra bytes per element
# (y, dx and workspaces over B L D); RECUR_MEMORY_BUDGET=none: fastest only
budget=${RECUR_MEMORY_BUDGET:-4.5}
./build/recur calibrate --dir out/ptx --shapes "$SEED" --out out/calibration.json \
	$([ "$budget" = none ] || echo "--memory-budget $budget")
./build/recur bench --dir out/ptx --shapes "$SEED" --calibration out/calibration.json --out out/results.json
SEEDFILE=${RECUR_SEED:-../shared/seed/000_c94c45093349daa5.txt}
if [ -f "$SEEDFILE" ]; then
	./build/recur compare out/results.json "$SEEDFILE" --svg out/results.svg
else
	echo "no seed results file at $SEEDFILE: out/results.json written; compare it with"
	echo "  ./build/recur compare out/results.json SEED_FILE --svg out/results.svg"
fi
