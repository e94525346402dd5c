#!/usr/bin/env bash
# The test suite: install what is missing, build, run every test with ctest
# (one line per test with its time). GPU tests skip with their reason where
# no GPU is present; the reasons follow the run, then ctest's summary line.
#   RECUR_FULL_GRID=1 ./test.sh   also checks every variant's PTX (ctest -C Full:
#                                 the tests labelled full), not only the
#                                 representative grid's
#   RECUR_BUILD_DIR=DIR ./test.sh builds and tests in DIR instead of build/
set -eu
cd "$(dirname "$0")"
bash scripts/deps.sh
bash scripts/build.sh
cd "${RECUR_BUILD_DIR:-build}"
args=()
[ "${RECUR_FULL_GRID:-0}" = 0 ] || args+=(-C Full)
set +e
ctest --output-on-failure -j"$(nproc)" "${args[@]}" 2>&1 | tee ctest_output.log
rc=${PIPESTATUS[0]}
set -e
# ctest hides a skipped test's output: show why each was skipped
grep -h "^SKIP" Testing/Temporary/LastTest.log 2>/dev/null | sed 's/^/skipped: /' || true
grep -E "^[0-9]+% tests passed|^Total Test time" ctest_output.log || true
exit "$rc"
