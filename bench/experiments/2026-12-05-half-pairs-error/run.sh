#!/usr/bin/env bash
# The error study (about 70 s on one core: results.md, full_table.md) and, where ptxas is on PATH, the SASS counts (sass_count.txt).
set -eu; cd "$(dirname "$0")"; b=$(mktemp -d); trap 'rm -rf "$b"' EXIT; cc -O2 -std=c11 -Wall -Wextra -Werror halfpairs.c -lm -o "$b/halfpairs"; "$b/halfpairs" full_table.md > results.md; if command -v ptxas > /dev/null; then bash sass_count.sh > sass_count.txt; fi
