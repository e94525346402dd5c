#!/usr/bin/env bash
# The CPU unit tests (tests/test_*.c, ctest label unit) built with
# AddressSanitizer and UndefinedBehaviorSanitizer in a Debug build of their
# own (build-asan/, or $RECUR_ASAN_BUILD_DIR), and run with leak checks on:
# any report stops the program, and the run fails. Only the test programs
# and the libraries they link are built (not the recur binary). Prints the
# build and run times apart.
set -eu
cd "$(dirname "$0")/.."
dir=${RECUR_ASAN_BUILD_DIR:-build-asan}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
t0=$(date +%s)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug \
	-DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
	-DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
targets=$(ls tests/test_*.c | sed 's|.*/||; s|\.c$||')
# shellcheck disable=SC2086
cmake --build "$dir" -j"$(nproc)" --target $targets
t1=$(date +%s)
echo "sanitizer build: $((t1 - t0)) s"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
(cd "$dir" && ctest -L unit --output-on-failure -j"$(nproc)") || rc=$?
t2=$(date +%s)
grep -h "^SKIP" "$dir/Testing/Temporary/LastTest.log" 2>/dev/null | sed 's/^/skipped: /' || true
echo "sanitizer run: $((t2 - t1)) s ($(echo "$targets" | wc -w) test programs; ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS)"
exit $rc
