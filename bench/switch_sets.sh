#!/usr/bin/env bash
# PTX sets for an A/B of the templates' build switches (experiments that are
# off by default: DW_KT, WG_AHEAD, ...): one recur built per switch
# combination, each generating the same grid, plus the tree's own set.
#
#   bash bench/switch_sets.sh OUT SCRIPT NAME=FLAGS...
#   APART_K=256 bash bench/switch_sets.sh out tests/grids/apart.lua \
#       ctl= kt2=-DDW_KT=2 ahead2=-DWG_AHEAD=2
#
# writes OUT/NAME (manifest.json and the PTX) for each NAME, the flags added
# to CMAKE_C_FLAGS of a build in build-switch-NAME/ (an empty FLAGS: the
# tree's build/, as scripts/build.sh makes it); --sm is $SWITCH_SM (default
# sm_90a). Then carry OUT's folders and, there, bench/h200_suite.sh ab with
# AB_SETS naming them. Each set's ptxas report (spills, registers) is
# OUT/NAME.ptxas.txt when ptxas is found.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 OUT SCRIPT NAME=FLAGS..." >&2; exit 2; }
cd "$(dirname "$0")/.."
out=$1 script=$2
shift 2
[ -f "$script" ] || { echo "$0: no script $script" >&2; exit 2; }
sm=${SWITCH_SM:-sm_90a}
mkdir -p "$out"
for spec in "$@"; do
	name=${spec%%=*} flags=${spec#*=}
	case "$name" in ''|*[!A-Za-z0-9_]*) echo "$0: bad set name in '$spec'" >&2; exit 2 ;; esac
	if [ -z "$flags" ]; then
		dir=build
		bash scripts/build.sh > /dev/null
	else
		dir=build-switch-$name
		cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$flags" > /dev/null
		cmake --build "$dir" -j"$(nproc)" --target recur > /dev/null
	fi
	# a set made again from scratch: no module of another switch taken over
	rm -rf "$out/$name.tmp"
	"$dir/recur" gen "$script" --sm "$sm" -o "$out/$name.tmp" -q
	rm -rf "${out:?}/${name:?}"
	mv "$out/$name.tmp" "$out/$name"
	echo "$name: $(find "$out/$name" -name '*.ptx' | wc -l) modules (${flags:-the tree})"
	if command -v ptxas > /dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
		px=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
		for f in "$out/$name"/*.ptx; do
			echo "== $(basename "$f")"
			"$px" -arch="${sm%%,*}" -v "$f" -o /dev/null 2>&1 | grep -E "Compiling entry|spill stores|Used"
		done > "$out/$name.ptxas.txt"
		spills=$(grep -c '[1-9][0-9]* bytes spill stores' "$out/$name.ptxas.txt" || true)
		echo "$name: ptxas, $spills kernels spill ($out/$name.ptxas.txt)"
	fi
done
