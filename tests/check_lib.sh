# shellcheck shell=bash
# Sourced by the script tests (not a test of its own): check STATUS WHAT
# prints "ok   WHAT" where STATUS is 0, else "FAIL WHAT", and counts it in
# the caller's pass and fail (which the caller sets to 0 and reports).
check() { if [ "$1" = 0 ]; then echo "ok   $2"; pass=$((pass+1)); else echo "FAIL $2"; fail=$((fail+1)); fi; }
