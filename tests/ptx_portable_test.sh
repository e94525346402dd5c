#!/usr/bin/env bash
# The portable path, for Ampere and Ada (recur gen --sm sm_80): the
# representative grid generated for sm_80 uses no instruction of sm_90's
# (clusters, distributed shared memory, programmatic dependent launch), its
# manifest asks for no cluster and no early launch, and ptxas accepts every
# module for sm_80 (the A100's; ARCHS="sm_80 sm_86 sm_89" adds the RTX
# 3090's and the RTX 4090's / L40S's: the suite keeps to one, for time).
# Ampere's and Ada's ptxas allocate registers otherwise than Hopper's: the
# variants at 255 registers spill a few bytes there (none on sm_90, which
# ptxas_test holds to zero), so spills are bounded here, not forbidden.
#   usage: ptx_portable_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
gen=$work.gen
rm -rf "$gen"
"$recur" gen "$src/tests/grids/representative.lua" --lua "$src/lua" --sm sm_80 -o "$gen" -q ||
	{ echo "FAIL recur gen --sm sm_80"; exit 1; }
set -- "$recur" "$src" "$work" "$gen"
# shellcheck source=tests/ptx_lib.sh
. "$src/tests/ptx_lib.sh"
coverage

bad=$(grep -L '^\.target sm_80$' "$ptxdir"/*.ptx | wc -l)
guard "$bad" target "a module for another target does not load on the GPU it was made for" \
	"every module declares .target sm_80" "$bad modules declare another target"
hits=$(grep -lE 'griddepcontrol|%cluster|mapa\.|barrier\.cluster|shared::cluster|setmaxnreg|wgmma|cp\.async\.bulk' \
	"$ptxdir"/*.ptx | xargs -r -n1 basename)
[ -z "$hits" ]
guard $? sm90_only "an sm_90 instruction makes the module fail to load on Ampere and Ada" \
	"no cluster, distributed shared memory, griddepcontrol or other sm_90 instruction" "in: $hits"
grep -qE '"cluster"|"early"|"dwsync"' "$ptxdir/manifest.json"
[ $? = 1 ]
guard $? manifest "a launch in clusters, or an early one, is refused by a GPU without them" \
	"the manifest asks for no cluster, no early launch and no cluster handshake workspace" \
	"$(grep -oE '"cluster"|"early"|"dwsync"' "$ptxdir/manifest.json" | sort | uniq -c | tr '\n' ' ')"

find_ptxas
if [ -z "$ptxas" ]; then
	echo "SKIP: no ptxas (set PTXAS, or put CUDA's bin/ on PATH): the portable modules were not compiled"
	finish
	exit $?
fi
MAXSPILL=64
for arch in ${ARCHS:-sm_80}; do
	PTXAS_FLAGS="-arch=$arch -v"
	mkdir -p "$work/ptxas_$arch"
	ptxas_all "$work/ptxas_$arch"
	rej=$(grep -L '^0$' "$work/ptxas_$arch"/*.rc | xargs -r -n1 basename | sed 's/\.rc$//')
	[ -z "$rej" ]
	guard $? "ptxas_$arch" "ptxas refusing a module means the driver refuses it on that GPU" \
		"ptxas -arch=$arch accepts all $nvar modules" "refused: $rej"
	# per module: the most any kernel spills; the table goes to the log
	worst=0 table=""
	for log in "$work/ptxas_$arch"/*.log; do
		s=$(grep -o '[0-9]* bytes spill stores' "$log" | awk '$1 > m { m = $1 } END { print m + 0 }')
		[ "$s" -gt 0 ] && table="$table $(basename "$log" .log):$s"
		[ "$s" -gt "$worst" ] && worst=$s
	done
	echo "     $arch spill stores per module (bytes, only those that spill):${table:- none}"
	[ "$worst" -le "$MAXSPILL" ]
	guard $? "spill_$arch" "a larger spill means a kernel that no longer fits its registers on that GPU" \
		"no kernel spills more than $MAXSPILL bytes on $arch (most: $worst)" "a kernel spills $worst bytes"
done
finish
