#!/usr/bin/env bash
# Registers and spills of every kernel of the projections-apart grid
# (tests/grids/apart.lua: RG-LRU, the three scan kinds at chunks 8 and 16)
# at heads of each K, one line per kernel:
#   k<K> <module> <kernel> regs=<n> spill_stores=<bytes> spill_loads=<bytes>
# What bench/results/ptxas_apart_sm90.txt and ptxas_apart_sm90a.txt hold.
#   usage: bench/ptxas_apart.sh RECUR_BINARY SM "K ..." OUT
#          (SM: sm_90, sm_90a, sm_80, ...; two modules at a time; OUT is
#          written whole or left as it was)
set -eu
[ $# -eq 4 ] || { echo "usage: bench/ptxas_apart.sh RECUR_BINARY SM \"K ...\" OUT" >&2; exit 2; }
recur=$1 sm=$2 ks=$3 out=$4
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/ptxas_cache.sh
. "$src/tests/ptxas_cache.sh"   # ptxas_kernels
ptxas=${PTXAS:-$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)}
[ -n "$ptxas" ] || { echo "ptxas_apart: no ptxas on PATH (set PTXAS)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for k in $ks; do
	APART_K=$k "$recur" gen "$src/tests/grids/apart.lua" --lua "$src/lua" --sm "$sm" -o "$work/k$k" -q ||
		{ echo "ptxas_apart: recur gen failed at K = $k" >&2; exit 1; }
	echo "ptxas_apart: K = $k, $(ls "$work/k$k"/*.ptx | wc -l) modules" >&2
	find "$work/k$k" -name '*.ptx' -print0 | xargs -0 -P 2 -I{} sh -c '"$0" -arch="$1" -v "$2" -o /dev/null > "$2.log" 2>&1 ||
		{ echo "ptxas_apart: ptxas failed on $2" >&2; cat "$2.log" >&2; exit 255; }' "$ptxas" "$sm" {}
	for f in "$work/k$k"/*.ptx; do
		ptxas_kernels "$f.log" | awk -v k="k$k" -v m="$(basename "$f" .ptx)" '{ print k, m, $1, $2, $4, $5 }' |
			LC_ALL=C sort
	done
done > "$work/table.txt"
[ -s "$work/table.txt" ] || { echo "ptxas_apart: no kernel reported" >&2; exit 1; }
cp "$work/table.txt" "$out.tmp" && mv "$out.tmp" "$out"
echo "ptxas_apart: $(wc -l < "$out") kernels into $out, $(grep -vc 'spill_stores=0 spill_loads=0' "$out" || true) spilling" >&2
