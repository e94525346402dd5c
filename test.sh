#!/usr/bin/env bash
# The test suite: install what is missing, build, run every test with ctest.
# GPU tests skip with their reason where no GPU is present.
set -eu
cd "$(dirname "$0")"
bash scripts/deps.sh
bash scripts/build.sh
cd build
rc=0
ctest --output-on-failure -j"$(nproc)" || rc=$?
# ctest hides a skipped test's output: show why each was skipped
grep -h "^SKIP" Testing/Temporary/LastTest.log 2>/dev/null | sed 's/^/skipped: /' || true
exit $rc
