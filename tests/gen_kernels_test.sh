#!/usr/bin/env bash
# recur gen builds a variant a kernel at a time: each kernel in a module of
# its own through O3 and the NVPTX back end, a kernel that several variants
# of the run share built once, the variant's PTX joined from its kernels'
# (gen/ptxjoin.h). The PTX must be what LLVM prints for the module of all
# the kernels: here each variant's kernel modules (--dump-ir) are linked
# into one with LLVM 19's own tools (llvm-link, opt -O3, llc) and the
# result compared with the generated file byte for byte, for heads of 256
# on wgmma (sm_90a: the shared array aligned for them in every kernel),
# SAMU's 11 kernels with states and maps (sm_90) and the portable path (sm_80); each
# distinct kernel of a grid whose variants share some is built once; and a
# cache (--cache) keeps kernels for other grids, checked like its modules,
# as the output folder's last modules give theirs without one.
#   usage: gen_kernels_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
unset RECUR_GEN_CACHE   # the counts below are this run's builds
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
py=$(command -v /usr/bin/python3 || command -v python3)
bin=$(llvm-config-19 --bindir 2>/dev/null || echo /usr/lib/llvm-19/bin)
for t in llvm-link opt llc; do
	[ -x "$bin/$t" ] || { echo "SKIP: no $bin/$t (LLVM 19's tools, Debian's llvm-19): the join is not compared"; exit 77; }
done

# same TAG SM MIXER VARIANT: $work/TAG.lua generated for SM (--timings to
# $work/TAG.log), and VARIANT's PTX against its kernels' modules (--dump-ir)
# linked into one, O3 and PTX as recur gen's target machine makes them
same() {
	local d=$work/$1.ir f=$work/$1/$3.$4.ptx n
	rm -rf "$d"; mkdir -p "$d"
	"$recur" gen "$work/$1.lua" --lua "$src/lua" --sm "$2" -o "$work/$1" -q --timings --dump-ir --only "$4" \
		2> "$work/$1.log" | awk -v d="$d" '/^; ---- IR of / { n++; f = sprintf("%s/k%02d.ll", d, n); next } n { print > f }'
	"$bin/llvm-link" "$d"/k*.ll -o "$d/all.bc" &&
		"$bin/opt" -mtriple=nvptx64-nvidia-cuda -mcpu="$2" -mattr=+ptx80 -passes='default<O3>' "$d/all.bc" -o "$d/o3.bc" &&
		"$bin/llc" -mtriple=nvptx64-nvidia-cuda -mcpu="$2" -mattr=+ptx80 -O3 -asm-verbose=false "$d/o3.bc" -o "$d/all.ptx"
	n=$(grep -c '^\.visible \.entry' "$f")
	cmp -s "$f" "$d/all.ptx" && [ "$n" -ge 3 ] && [ "$(ls "$d"/k*.ll | wc -l)" = "$n" ]
	check $? "$1 ($2): $4's $n kernels, each built alone and joined, are the bytes of their module built whole"
}

cat > "$work/heads.lua" <<'EOF'
local R = require "recur"
return R.variants { mixer = require "arch.recurrentgemma", chunk = { 8 }, prefix = { 32 }, fused = { true },
  apart = { true }, scan = { "lookback", "onepass" } }
EOF
same heads sm_90a rglru apart_fused_grouped_prefix32_onepass_chunk8
# (11 kernels: the last's labels numbered 10, two digits)
cat > "$work/samu.lua" <<'EOF'
local R = require "recur"
return R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false },
  shared_sfu = { true }, fused_output = { true }, fused_write = { true }, scan = { "hierarchical" },
  states = { true }, map = { true } }
EOF
same samu sm_90 samu states_map_fused_output_fused_write_shared_sfu_grouped_prefix32_hierarchical_chunk8
cat > "$work/ampere.lua" <<'EOF'
local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 16 }, prefix = { 64 }, fused = { true }, scan = { "onepass" } }
EOF
same ampere sm_80 rglru fused_grouped_prefix64_onepass_chunk16

# the heads grid's two variants share their projection kernels: each distinct
# kernel (its text, the labels' function numbers aside) built once
kernels() {   # LOG: "BUILT FROM-THE-OLD-FOLDER FROM-THE-CACHE IN-THE-MODULES" from --timings' line
	local n='\([0-9]*\)'
	sed -n "s/^  kernels: $n built, $n from the old folder and $n from the cache for the $n of the modules.*/\\1 \\2 \\3 \\4/p" "$1"
}
got=$(kernels "$work/heads.log" | awk '$2 == 0 && $3 == 0 { print $1, $4 }')
want=$("$py" - "$work/heads" <<'PY'
import glob, re, sys
ks = [re.sub(r"\$L__BB\d+_", "$L__BB_", m.group(0)) for f in sorted(glob.glob(sys.argv[1] + "/*.ptx"))
      for m in re.finditer(r"\.entry \w+\(.*?\n}", open(f).read(), re.S)]
print(len(set(ks)), len(ks))
PY
)
[ -n "$got" ] && [ "$got" = "$want" ] && [ "${got% *}" -lt "${got#* }" ]
check $? "heads grid: each distinct kernel built once (built/in the modules: ${got:-none}, distinct/all in the PTX: $want)"

# the cache's kernels (--cache DIR: DIR/kernels): a grid that shares some
# kernels with one generated before, but no module, takes those from there
# and builds the rest, its PTX the bytes of a generation without a cache;
# a damaged kernel entry is built again, not taken, then taken
cache=$work/cache
printf '%s\n' 'local R = require "recur"' \
	'return R.variants { mixer = require "arch.recurrentgemma", chunk = { 8 }, prefix = { 32 }, fused = { true },' \
	'  apart = { true }, scan = { "hierarchical" } }' > "$work/other.lua"
"$recur" gen "$work/heads.lua" --lua "$src/lua" --sm sm_90a -o "$work/c1" -q --cache "$cache"
"$recur" gen "$work/other.lua" --lua "$src/lua" --sm sm_90a -o "$work/c2" -q --cache "$cache" --timings 2> "$work/c2.log"
for e in "$cache"/kernels/*.ptx; do printf '.' >> "$e"; done
rm -f "$cache"/*.ptx   # the modules gone: only kernels could come from the cache
"$recur" gen "$work/other.lua" --lua "$src/lua" --sm sm_90a -o "$work/c3" -q --cache "$cache" --timings 2> "$work/c3.log"
rm -f "$cache"/*.ptx
"$recur" gen "$work/other.lua" --lua "$src/lua" --sm sm_90a -o "$work/c4" -q --cache "$cache" --timings 2> "$work/c4.log"
# c3 took nothing from the cache: the bytes of a generation without one
got=$(kernels "$work/c2.log") got3=$(kernels "$work/c3.log") got4=$(kernels "$work/c4.log")
f=rglru.apart_fused_grouped_prefix32_hierarchical_chunk8.ptx
cmp -s "$work/c3/$f" "$work/c2/$f" &&
	[ -n "$got" ] && [ "$(echo "$got" | awk '{ print ($1 > 0 && $2 == 0 && $3 >= 2 && $1 + $3 == $4) }')" = 1 ]
check $? "--cache: another grid takes the kernels it shares from DIR/kernels (built, old folder, cache, in the modules: ${got:-none}), the same bytes"
cmp -s "$work/c3/$f" "$work/c4/$f" &&
	[ "$(echo "$got3" | awk '{ print ($2 + $3 == 0 && $1 == $4 && $4 > 0) }')" = 1 ] &&
	[ "$(echo "$got4" | awk '{ print ($1 + $2 == 0 && $3 == $4 && $4 > 0) }')" = 1 ]
check $? "damaged kernel entries are built again, not taken (built, old folder, cache, in the modules: $got3), and mended (then: $got4)"

# the output folder's last modules: a grid generated into it takes the
# kernels it shares with them (cut from their PTX, checked against the
# manifest's checksum) with no cache, the bytes of a build without them;
# a module changed since is not cut from
"$recur" gen "$work/heads.lua" --lua "$src/lua" --sm sm_90a -o "$work/f" -q
"$recur" gen "$work/other.lua" --lua "$src/lua" --sm sm_90a -o "$work/f" -q --timings 2> "$work/f1.log"
cp "$work/f/$f" "$work/f1.ptx"
for e in "$work"/f/*.ptx; do printf '.' >> "$e"; done
"$recur" gen "$work/heads.lua" --lua "$src/lua" --sm sm_90a -o "$work/f" -q --timings 2> "$work/f2.log"
got=$(kernels "$work/f1.log") got2=$(kernels "$work/f2.log")
cmp -s "$work/c3/$f" "$work/f1.ptx" && [ "$(echo "$got" | awk '{ print ($2 >= 2 && $3 == 0 && $1 + $2 == $4) }')" = 1 ] &&
	[ "$(echo "$got2" | awk '{ print ($2 + $3 == 0 && $1 > 0) }')" = 1 ]
check $? "the old folder's kernels taken with no cache (built, old folder, cache, in the module: ${got:-none}), the same bytes; none from a changed module (${got2:-none})"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
