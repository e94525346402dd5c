# Shared by tests/ptxas_test.sh and tests/ptx_structure_test.sh (sourced,
# not a test of its own): the arguments, the PTX folder under test, the
# ok/FAIL lines and their counts, kernel bodies, and ptxas with a cache.
#
#   usage of both: SCRIPT RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
#
# PTX_DIR is a folder `recur gen` wrote (ctest passes the suite's fixture,
# the representative grid tests/grids/representative.lua; main.sh may pass
# out/ptx). Without it the script generates the grid $RECUR_GRID (default:
# every variant, lua/variants/all.lua) into WORK_DIR/ptx itself.
recur=$1 src=$2 work=$3 ptxdir=${4:-}
rm -rf "$work"; mkdir -p "$work"
if [ -z "$ptxdir" ]; then
	grid=${RECUR_GRID:-$src/lua/variants/all.lua}
	echo "generating $grid into $work/ptx"
	"$recur" gen "$grid" -o "$work/ptx" -q || { echo "FAIL recur gen $grid"; exit 1; }
	ptxdir=$work/ptx
fi
if [ ! -f "$ptxdir/manifest.json" ] || ! ls "$ptxdir"/*.ptx > /dev/null 2>&1; then
	echo "FAIL no manifest.json or no PTX in $ptxdir (the fixture gen_ptx writes it: run the whole suite)"
	exit 1
fi
nvar=$(ls "$ptxdir"/*.ptx | wc -l)
echo "checking the $nvar variants in $ptxdir"
pass=0 fail=0
# guard STATUS NAME WHY OK-TEXT FAIL-TEXT: one summary line, counted; a
# failure names the guard and says why it matters
guard() {
	if [ "$1" = 0 ]; then
		echo "ok   [$2] $4"; pass=$((pass + 1))
	else
		echo "FAIL [$2] $5"; echo "     why it matters: $3"; fail=$((fail + 1))
	fi
}
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
ptx_files() { ls "$ptxdir"/*.ptx; }
# every kernel's text, from its .entry to its closing brace, in a file of its
# own (WORK_DIR/kernels/VARIANT/KERNEL.ptx): the checks grep kernels, not
# whole modules, and read each module once
for f in $(ptx_files); do
	v=${f##*/}; v=${v%.ptx}
	mkdir -p "$work/kernels/$v"
	awk -v d="$work/kernels/$v" '/^\.visible \.entry [A-Za-z0-9_]+\(/ { k = $3; sub(/\(.*/, "", k); out = d "/" k ".ptx"; on = 1 }
		on { print > out } on && /^}/ { on = 0; close(out) }' "$f"
done
# kfile FILE KERNEL: the file of that kernel's text (/dev/null: no such kernel)
kfile() { local v=${1##*/}; v=${v%.ptx}; if [ -f "$work/kernels/$v/$2.ptx" ]; then echo "$work/kernels/$v/$2.ptx"; else echo /dev/null; fi; }
# every case the checks tell apart is in the folder, or the checks that
# look for it would have nothing to fail on
coverage() {
	local miss="" pat
	for pat in 'rglru.fused_grouped_prefix32_hierarchical_chunk8' 'rglru.fused_grouped_prefix32_lookback_chunk8' \
		'rglru.fused_grouped_prefix32_onepass_chunk8' 'rglru.*_prefix64_*' 'rglru.*_prefix128_*' \
		'rglru.grouped_*' 'rglru.*_onepass_chunk16' 'rglru.*_chunk64' \
		'samu.*_shared_sfu_*_hierarchical_*' 'samu.fused_output_fused_write_grouped_*' \
		'samu.*_lookback_*' 'samu.*_onepass_*'; do
		ls "$ptxdir"/$pat.ptx > /dev/null 2>&1 || miss="$miss $pat"
	done
	[ -z "$miss" ]
	guard $? coverage "a check with no variant of its kind passes without looking at anything" \
		"the $nvar variants hold every case the checks distinguish (scans, fusion, mixers, chunk and prefix edges)" \
		"no variant matches:$miss"
}

# ptxas_all OUTDIR: ptxas -v of every PTX file, on every core, into
# OUTDIR/<variant>.log and .rc, through ptxas_cache.sh's ptxas_cached: each
# kernel's result cached under its text's sha256 with the flags and
# ptxas's version ($RECUR_PTXAS_CACHE, default beside WORK_DIR; "none": no
# cache), so an unchanged kernel skips ptxas.
PTXAS_FLAGS="-arch=sm_90 -v"
# shellcheck source=tests/ptxas_cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/ptxas_cache.sh"
ptxas_all() {
	local out=$1
	local cache=${RECUR_PTXAS_CACHE:-$(dirname "$work")/ptxas_cache}
	[ "$cache" = none ] || mkdir -p "$cache" || cache=none
	local salt
	salt="$PTXAS_FLAGS $(ptxas_version "$ptxas")"
	ptxas_one() {   # PTXAS FLAGS CACHE FILE OUTDIR
		local v
		v=$(basename "$4" .ptx)
		: > "$5/$v.ran"
		RECUR_PTXAS_CACHE=$3 PTXAS_RAN=$5/$v.ran ptxas_cached "$1" "$2" "$4" > "$5/$v.log" 2>&1
		echo $? > "$5/$v.rc"
		[ -s "$5/$v.ran" ] || echo hit > "$5/$v.cached"
	}
	export -f ptxas_one
	ptx_files | xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} bash -c 'ptxas_one "$@"' _ "$ptxas" "$PTXAS_FLAGS" "$cache" {} "$out"
	local hits
	hits=$(ls "$out"/*.cached 2>/dev/null | wc -l)
	echo "ptxas ($salt): $nvar modules, $hits of them all from the cache ($cache), $((nvar - hits)) with kernels compiled"
}
