#!/usr/bin/env bash
# Configures and builds into build/ (Release), or into $RECUR_BUILD_DIR.
set -eu
cd "$(dirname "$0")/.."
dir=${RECUR_BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" -j"$(nproc)"
