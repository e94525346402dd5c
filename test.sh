#!/usr/bin/env bash
# The test suite: install what is missing, build, run every test with ctest.
# GPU tests skip with their reason where no GPU is present.
set -eu
cd "$(dirname "$0")"
bash scripts/deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
