#!/usr/bin/env bash
# Spill budgets of every shipped grid (ctest -C Full -L full; the default
# suite holds the representative grid to zero spills in ptxas_test.sh):
# each module of lua/variants/{all,examples,state,docs,decode}.lua for
# sm_90 and RecurrentGemma's for sm_90a and sm_90, compiled by ptxas, its
# spill-store bytes summed over its kernels and held to
# tests/spill_budget.txt ("SM GRID MODULE BYTES"; a module not listed has
# a budget of 0). A change to the derivation or a template moves ptxas's
# register allocation in kernels no representative variant exercises
# (HGRN's bwd_apply spilled 16-40 bytes after a sigmoid derivative's new
# form, the documents' 104 bytes more after sqrtb's): this names each
# module over its budget. A module that spills less is reported, so the
# budget can be lowered.
#   usage: ptxas_spills_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
# shellcheck source=tests/ptxas_cache.sh
. "$src/tests/ptxas_cache.sh"
find_ptxas
[ -n "$ptxas" ] || { echo "SKIP: no ptxas (set PTXAS, or put CUDA's bin/ on PATH): no spills measured"; exit 77; }
budget=$src/tests/spill_budget.txt
[ -r "$budget" ] || { echo "FAIL cannot read $budget"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
got=$work/spills.txt
: > "$got"
while read -r grid sm; do
	out=$work/$(basename "$grid" .lua).$sm
	"$recur" gen "$src/lua/variants/$grid" --lua "$src/lua" --sm "$sm" -o "$out" -q ||
		{ echo "FAIL recur gen $grid --sm $sm"; exit 1; }
	for f in "$out"/*.ptx; do
		log=$(ptxas_cached "$ptxas" "-arch=$sm -v" "$f" 2>&1) ||
			{ echo "FAIL ptxas -arch=$sm $f: $(echo "$log" | tail -3)"; exit 1; }
		b=$(echo "$log" | grep -o '[0-9]* bytes spill stores' | awk '{ s += $1 } END { print s + 0 }')
		echo "$sm $(basename "$grid" .lua) $(basename "$f" .ptx) $b" >> "$got"
	done
	echo "$grid for $sm: $(ls "$out"/*.ptx | wc -l) modules"
done <<'GRIDS'
all.lua sm_90
examples.lua sm_90
state.lua sm_90
docs.lua sm_90
decode.lua sm_90
recurrentgemma.lua sm_90
recurrentgemma.lua sm_90a
GRIDS
awk 'NR == FNR { if ($1 !~ /^#/) b[$1 " " $2 " " $3] = $4; next }
	{ k = $1 " " $2 " " $3; lim = (k in b) ? b[k] : 0
	  if ($4 > lim) { printf "FAIL %s spills %d bytes, over its budget of %d\n", k, $4, lim; bad++ }
	  else if ($4 < lim) printf "note %s spills %d bytes, under its budget of %d (tests/spill_budget.txt may come down)\n", k, $4, lim
	  n++; t += $4 }
	END { printf "%d modules, %d spill-store bytes in all, %d over budget\n", n, t, bad + 0; exit bad > 0 }' "$budget" "$got"
