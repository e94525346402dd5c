#!/usr/bin/env bash
# Compiles every variant's PTX into the CUDA driver's JIT cache
# (~/.nv/ComputeCache), JOBS processes at once, before a run that loads
# them one after another. The driver compiles a module's PTX when it is
# loaded: on the H200 machine `recur verify` of all 64 variants at one
# small shape took about 150 s, the same variants through a graph right
# after it (a second process, the cache filled) 2 s. Each job is a real
# `recur verify` of one variant at 1x64x64 (WARM_SHAPE: another, for heads
# other than 64 channels); a failure is reported here,
# and the caller's own verify reports it again.
#   usage: jit_warm.sh RECUR_BINARY PTX_DIR [JOBS (default: CPUs)] [LOG]
set -u
recur=$1 dir=$2 jobs=${3:-$(nproc 2>/dev/null || echo 4)} log=${4:-/dev/null}
t0=$(date +%s)
list=$("$recur" list --dir "$dir" 2>&1) || { echo "jit warm: recur list failed: $list"; exit 1; }
# "mixer variant" per line, then "target sm_XY" in a folder of several
# targets (recur verify loads the one for the device, so each name is
# warmed once), "state NAME..." for a variant taking a sequence state and
# "scan decode ..." for a decode step
list=$(echo "$list" | awk 'NF >= 2 && $1 !~ /^ / && (NF == 2 || $3 == "target" || $3 == "state" || $3 == "scan") { print $1, $2 }' | sort -u)
n=$(echo "$list" | wc -l)
[ "$n" -gt 0 ] || { echo "jit warm: no variants in $dir"; exit 1; }
# each line "mixer variant" becomes one verify; a failed one prints its name and last lines
fails=$(echo "$list" |
	xargs -P "$jobs" -L 1 sh -c 'out=$("$0" verify --dir "$1" --mixer "$3" --variant "$4" --shape "$2" 2>&1) ||
		{ echo "failed: $3 $4"; echo "$out" | tail -3 | sed "s/^/    /"; }' "$recur" "$dir" "${WARM_SHAPE:-1x64x64}")
nf=$(echo "$fails" | grep -c '^failed: ' || true)
{ echo "jit warm: $n variants, $jobs at once, $(( $(date +%s) - t0 )) s, $nf failed"; [ -z "$fails" ] || echo "$fails"; } | tee -a "$log" | head -8
[ "$nf" -eq 0 ]
