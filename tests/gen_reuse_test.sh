#!/usr/bin/env bash
# Nothing built twice: recur gen takes over from its output folder every
# module whose content key (the IR, the generator's and LLVM's versions,
# target, PTX ISA, pipeline) it already holds, checked by checksum, and
# builds the rest; with --cubin the same for each cubin (plus ptxas's
# version); and two variants of one IR in a run are one module, built
# once. The output stays what a fresh generation writes.
#   usage: gen_reuse_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
unset RECUR_GEN_CACHE   # the counts below are the output folder's alone; the cache is checked on its own
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
# a small mixer of its own, so that its math can be changed here
mixer() {
	cat > "$work/$1.lua" <<LUA
local R = require "recur"
local m = R.mixer("tiny", { k = 64 })
local w = m:param("w", "channel", R.normal(1))
m:recurrence { log_a = -R.softplus(m.x * $2), b = m.x * w }
m:output(m.h)
return R.variants { mixer = m, chunk = { $3 }, prefix = { 32 }, fused = { true } }
LUA
}
gen() {
	"$recur" gen "$1" --lua "$src/lua" -o "$2" -j 2 "${@:3}" > "$work/gen.log" 2>&1
	local rc=$?
	grep -v '^\[' "$work/gen.log"   # the progress lines left out
	return $rc
}
sums() { (cd "$1" && sha256sum -- * | sort); }

mixer a 1 "8, 16"
out=$(gen "$work/a.lua" "$work/o"); check $? "first generation ($out)"
echo "$out" | grep -q "PTX of 2 built, 0 unchanged"; check $? "it builds both modules"
before=$(sums "$work/o")
out=$(gen "$work/a.lua" "$work/o")
echo "$out" | grep -q "PTX of 0 built, 2 unchanged"; check $? "the same grid again builds nothing ($out)"
[ "$(sums "$work/o")" = "$before" ]; check $? "and writes the same files, manifest included"
out=$(gen "$work/a.lua" "$work/fresh" --rebuild)
echo "$out" | grep -q "PTX of 2 built"; check $? "--rebuild builds every module ($out)"
[ "$(sums "$work/fresh")" = "$before" ]; check $? "a fresh generation writes exactly what the reused one did"

f=$(ls "$work/o"/tiny.*chunk8.ptx)
echo "// edited" >> "$f"
out=$(gen "$work/a.lua" "$work/o")
echo "$out" | grep -q "PTX of 1 built, 1 unchanged"; check $? "an edited module file is rebuilt, not taken over ($out)"
[ "$(sums "$work/o")" = "$before" ]; check $? "and comes back as it was"

mixer b 1 "8, 32"
out=$(gen "$work/b.lua" "$work/o")
echo "$out" | grep -q "PTX of 1 built, 1 unchanged"; check $? "a grid with one new variant builds that one only ($out)"
mixer c 2 "8, 32"
out=$(gen "$work/c.lua" "$work/o")
echo "$out" | grep -q "PTX of 2 built, 0 unchanged"; check $? "a change to the mixer's math rebuilds its variants ($out)"

cp "$work/o/manifest.json" "$work/saved.json"
echo '{ broken' > "$work/o/manifest.json"
out=$(gen "$work/c.lua" "$work/o"); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "PTX of 2 built"; check $? "an unreadable old manifest only means building again ($out)"

# several targets in one folder: every variant for each, files named after
# their target, the manifest listing them; again: nothing rebuilt
out=$(gen "$work/a.lua" "$work/multi" --sm sm_80,sm_90)
echo "$out" | grep -q "PTX of 4 built, 0 unchanged" && [ "$(ls "$work/multi"/*.sm_80.ptx | wc -l)" = 2 ] &&
	[ "$(ls "$work/multi"/*.sm_90.ptx | wc -l)" = 2 ]
check $? "--sm sm_80,sm_90: each variant for each target, the files named after it ($out)"
grep -q '"targets": \[' "$work/multi/manifest.json" && [ "$(grep -c '"target": "sm_90"' "$work/multi/manifest.json")" = 2 ]
check $? "the manifest lists the targets and each module's"
[ "$("$recur" list --dir "$work/multi" | grep -c ' target sm_')" = 4 ]; check $? "recur list names each module's target"
out=$(gen "$work/a.lua" "$work/multi" --sm sm_80,sm_90)
echo "$out" | grep -q "PTX of 0 built, 4 unchanged"; check $? "again: nothing rebuilt ($out)"
out=$(gen "$work/a.lua" "$work/bad" --sm sm_80,sm_80); rc=$?
[ $rc != 0 ] && echo "$out" | grep -q "sm_80 is given twice"; check $? "a target given twice is refused ($out)"
out=$(gen "$work/a.lua" "$work/bad" --sm sm_80,,sm_90); rc=$?
[ $rc != 0 ] && echo "$out" | grep -q "separated by commas"; check $? "an empty target is refused ($out)"

# a cache shared by output folders (--cache DIR, $RECUR_GEN_CACHE): a module
# built once is taken from it into any folder, checked by its checksum (a
# kernel too, from DIR/kernels: gen_kernels_test)
cache=$work/cache
out=$(gen "$work/a.lua" "$work/k1" --cache "$cache")
echo "$out" | grep -q "PTX of 2 built, 0 unchanged" && [ "$(ls "$cache"/*.ptx | wc -l)" = 2 ] &&
	[ "$(ls "$cache"/kernels/*.ptx | wc -l)" -ge 2 ]
check $? "--cache: a first generation builds both modules and keeps them, and their kernels in kernels/ ($out)"
out=$(RECUR_GEN_CACHE=$cache gen "$work/a.lua" "$work/k2")
echo "$out" | grep -q "PTX of 0 built, 2 unchanged (2 from the cache)"
check $? "\$RECUR_GEN_CACHE: another folder takes both from the cache ($out)"
k1=$(sums "$work/k1")
[ "$(sums "$work/k2")" = "$k1" ] && [ "$(sums "$work/fresh")" = "$k1" ]
check $? "and writes exactly what a fresh generation does, manifest included"
e=$(ls "$cache"/*.ptx | head -1)
printf '.' >> "$e"
out=$(gen "$work/a.lua" "$work/k3" --cache "$cache")
echo "$out" | grep -q "PTX of 1 built, 1 unchanged (1 from the cache)" && [ "$(sums "$work/k3")" = "$k1" ]
check $? "a damaged cache entry is built again, not taken ($out)"
out=$(gen "$work/a.lua" "$work/k4" --cache "$cache")
echo "$out" | grep -q "(2 from the cache)"; check $? "and the build mends the entry ($out)"
sed -i '2s/^/ /' "$e"
out=$(gen "$work/a.lua" "$work/k5" --cache "$cache")
echo "$out" | grep -q "PTX of 1 built" && [ "$(sums "$work/k5")" = "$k1" ]
check $? "an entry edited inside its PTX fails its checksum and is built again ($out)"
out=$(gen "$work/a.lua" "$work/k6" --cache "$cache" --rebuild)
echo "$out" | grep -q "PTX of 2 built, 0 unchanged$"; check $? "--rebuild takes nothing from the cache ($out)"
echo "not a folder" > "$work/cachefile"
out=$(gen "$work/a.lua" "$work/k7" --cache "$work/cachefile"); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "warning: the cache .*cachefile could not keep 2 modules" && [ "$(sums "$work/k7")" = "$k1" ]
check $? "a cache that cannot be written is a warning naming it; the folder is written all the same ($out)"
out=$(RECUR_GEN_CACHE= gen "$work/a.lua" "$work/k8")
echo "$out" | grep -q "PTX of 2 built, 0 unchanged$"; check $? "an empty \$RECUR_GEN_CACHE is no cache ($out)"

# the suite's own cache across runs (tests/gen_cache_fixture.sh): kept while the
# sources from IR to PTX are unchanged, emptied when one changes or it grows too large
fx=$src/tests/gen_cache_fixture.sh tree=$work/tree
mkdir -p "$tree/gen" "$tree/ir" "$tree/util"
for f in gen/gen.c gen/gen.h ir/target.c ir/target.h util/hash.c util/hash.h util/fsutil.c util/fsutil.h; do
	cp "$src/$f" "$tree/$f"
done
o1=$(bash "$fx" "$work/suite" "$tree") && touch "$work/suite/entry.ptx" && o2=$(bash "$fx" "$work/suite" "$tree") &&
	[ -e "$work/suite/entry.ptx" ]
r1=$?
echo "// edited" >> "$tree/ir/target.c"
o3=$(bash "$fx" "$work/suite" "$tree") && [ ! -e "$work/suite/entry.ptx" ] && touch "$work/suite/entry.ptx" &&
	o4=$(GEN_CACHE_MAX_KIB=0 bash "$fx" "$work/suite" "$tree") && [ ! -e "$work/suite/entry.ptx" ]
r2=$?
[ $r1 = 0 ] && [ $r2 = 0 ] && echo "$o1" | grep -q "emptied: new" && echo "$o2" | grep -q "kept" &&
	echo "$o3" | grep -q "emptied: the sources from IR to PTX changed" && echo "$o4" | grep -q "emptied: over 0 KiB"
check $? "the suite's gen cache: emptied when new, kept, emptied when ir/target.c changes and when too large ($o1 / $o2 / $o3 / $o4)"

# two variants of one IR (a recompute variant and its twin: the module's name is not in its
# key) are one module, built once, written under both names, the same bytes and key
cat > "$work/twins.lua" <<'LUA'
local R = require "recur"
return R.variants { mixer = require "arch.rglru_heads" (64), chunk = { 8 }, prefix = { 32 }, fused = { true },
  apart = { true }, recompute = { false, true } }
LUA
tw=rglru.apart_fused_grouped_prefix32_hierarchical_chunk8 twr=rglru.apart_recompute_fused_grouped_prefix32_hierarchical_chunk8
out=$(gen "$work/twins.lua" "$work/tw")
echo "$out" | grep -q "PTX of 1 built, 0 unchanged, 1 the module of another variant$" &&
	cmp -s "$work/tw/$tw.ptx" "$work/tw/$twr.ptx" && [ "$(grep -c '"key"' "$work/tw/manifest.json")" = 2 ] &&
	[ "$(grep -o '"key": "[0-9a-f]*"' "$work/tw/manifest.json" | sort -u | wc -l)" = 1 ]
check $? "variants of one IR: one module built, both files the same bytes, one key ($out)"

if ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null); then
	out=$(PTXAS=$ptxas gen "$work/a.lua" "$work/cu" --cubin); check $? "--cubin ($out)"
	echo "$out" | grep -q "cubins of 2 built, 0 unchanged"; check $? "a cubin per variant"
	n=$(ls "$work/cu"/*.sm_90.cubin 2>/dev/null | wc -l)
	[ "$n" = 2 ] && [ "$(head -c 4 "$(ls "$work/cu"/*.cubin | head -1)" | od -An -c | tr -d ' ')" = "177ELF" ]
	check $? "two ELF files named after their target ($n)"
	grep -q '"cubin_target": "sm_90"' "$work/cu/manifest.json" && grep -q '"ptxas":' "$work/cu/manifest.json"
	check $? "the manifest names each cubin, its target and ptxas's version"
	out=$(PTXAS=$ptxas gen "$work/a.lua" "$work/cu" --cubin)
	echo "$out" | grep -q "PTX of 0 built, 2 unchanged; cubins of 0 built, 2 unchanged"
	check $? "again: nothing rebuilt, cubins included ($out)"
	out=$(gen "$work/a.lua" "$work/cu")
	[ "$(ls "$work/cu"/*.cubin 2>/dev/null | wc -l)" = 0 ] && ! grep -q cubin "$work/cu/manifest.json"
	check $? "without --cubin the folder holds no cubin and the manifest names none"
	out=$(PTXAS=$work/nonexistent gen "$work/a.lua" "$work/cu" --cubin); rc=$?
	[ $rc != 0 ] && echo "$out" | grep -q "PTXAS=.*nonexistent is not an executable"; check $? "a PTXAS that is not there is named ($out)"
	out=$(PTXAS=$ptxas gen "$work/twins.lua" "$work/twc" --cubin)
	echo "$out" | grep -q "cubins of 1 built, 0 unchanged" && cmp -s "$work/twc/$tw.sm_90.cubin" "$work/twc/$twr.sm_90.cubin"
	check $? "and one cubin, written under both names ($out)"
else
	echo "note: no ptxas on this machine: the --cubin checks did not run"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
