#!/usr/bin/env bash
# The Python package (python/recur) without a GPU: tests/python/test_cpu.py
# with this build's librecur.so and a generated folder of the representative
# grid (PTX_DIR, the suite's fixture; generated into WORK_DIR when absent).
# Skips where librecur.so was not built or no python3 has torch.
#   usage: python_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
#   PYTHON=python3.X  the interpreter to try first
set -u
recur=$1 src=$2 work=$3 ptx=${4:-}
lib=$(dirname "$recur")/librecur.so
[ -f "$lib" ] || { echo "SKIP: no $lib (the build found no shared libjansson or libnettle)"; exit 77; }

py=""
for c in ${PYTHON:-} $(type -ap python3); do
	if "$c" -c "import torch" >/dev/null 2>&1; then py=$c; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with torch (Debian: apt-get install python3-torch)"; exit 77; }

if [ -z "$ptx" ] || [ ! -f "$ptx/manifest.json" ]; then
	rm -rf "$work"; mkdir -p "$work"
	ptx=$work/ptx
	"$recur" gen "$src/tests/grids/representative.lua" --lua "$src/lua" -o "$ptx" -q || exit 1
fi
# a folder of variants taking reset marks, one per mixer, one taking states, one the row's map, one cu_seqlens,
# a plain one beside them (as RecurrentGemma's grid holds both), and the decode steps
mkdir -p "$work"
cat > "$work/resets.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "onepass" },
    resets = { true } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "onepass" }, resets = { true } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, states = { true } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, states = { true },
    map = { true } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, docs = { true } },
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "onepass" } },
  R.decode { mixer = require "arch.rglru" },
  R.decode { mixer = require "arch.rglru", mma = true },
  R.decode { mixer = require "arch.samu" },
  R.decode { mixer = require "arch.samu", rows = true },
}
LUA
"$recur" gen "$work/resets.lua" --lua "$src/lua" -o "$work/resets" -q || exit 1
# and heads of 256 channels, their projections apart
APART_K=256 "$recur" gen "$src/tests/grids/apart.lua" --lua "$src/lua" -o "$work/heads" -q || exit 1
# and a recompute variant beside its twin (the backward makes the projections again)
cat > "$work/recompute.lua" <<'LUA'
local R = require "recur"
return R.variants { mixer = require "arch.rglru_heads" (256), chunk = { 8 }, prefix = { 32 }, fused = { true },
  apart = { true }, scan = { "onepass" }, recompute = { false, true } }
LUA
"$recur" gen "$work/recompute.lua" --lua "$src/lua" -o "$work/recompute" -q || exit 1
echo "python: $py"
# no __pycache__ in the source tree
PYTHONDONTWRITEBYTECODE=1 RECUR_LIB=$lib RECUR_TEST_KERNELS=$ptx RECUR_TEST_RESETS_KERNELS=$work/resets RECUR_TEST_HEADS_KERNELS=$work/heads RECUR_TEST_RECOMPUTE_KERNELS=$work/recompute RECUR_GOLDENS=${RECUR_GOLDENS:-$src/tests/goldens} \
	exec "$py" "$src/tests/python/test_cpu.py"
