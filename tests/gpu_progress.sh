#!/usr/bin/env bash
# Forward progress on a shared GPU: the kernels whose blocks wait on other
# blocks (the look-back forward, the one-pass backward) run in two `recur
# verify` loops at once while a third process keeps most of the GPU busy
# with long launches of a variant that never waits. Every verify must pass
# and none may take longer than HANG_TIMEOUT (a hang is reported as one,
# with the loop, the iteration and the command). With MPS=1 the three share
# the SMs through an MPS daemon of the script's own, each verify client
# limited to MPS_PERCENT of the SMs: the case where a waiting kernel gets
# only part of the GPU while another process holds the rest.
#
#   usage: gpu_progress.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
#   PTX_DIR: a generated folder (default: RECUR_PTX, else every variant of
#            SOURCE_DIR/lua/variants/all.lua generated into WORK_DIR/ptx)
#   environment:
#     DURATION      seconds each verify loop keeps starting runs (default 300)
#     HANG_TIMEOUT  seconds one verify may take before it is a hang (default 600)
#     SHAPES        verify shapes (default "2x37x64,3x1000x128,16x2048x1024,1x65536x1024")
#     VARIANTS      the waiting variants (default: every lookback and onepass one)
#     BUSY_VARIANT  the busy process's variant (default: the first hierarchical
#                   one, else the first that does not wait)
#     BUSY_SHAPE    its shape (default 8x131072x1024)
#     MPS=1, MPS_PERCENT (default 30)   share the SMs through MPS
#     DRY_RUN=1     print the three commands, run nothing (no GPU needed)
# Exits 0 when every run passed in time, 1 on a failure or a hang, 77 (with
# the reason) where there is no NVIDIA driver.
set -u
if [ $# -lt 3 ]; then
	echo "usage: gpu_progress.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]" >&2
	exit 2
fi
recur=$1 src=$2 work=$3 ptx=${4:-${RECUR_PTX:-}}
DURATION=${DURATION:-300}
HANG_TIMEOUT=${HANG_TIMEOUT:-600}
SHAPES=${SHAPES:-2x37x64,3x1000x128,16x2048x1024,1x65536x1024}
BUSY_SHAPE=${BUSY_SHAPE:-8x131072x1024}
MPS=${MPS:-0}
MPS_PERCENT=${MPS_PERCENT:-30}
dry=${DRY_RUN:-0}

skip() { echo "SKIP: $1"; exit 77; }
if [ "$dry" != 1 ]; then
	if [ -n "${RECUR_LIBCUDA:-}" ]; then
		[ -e "$RECUR_LIBCUDA" ] || skip "RECUR_LIBCUDA=$RECUR_LIBCUDA does not exist: no NVIDIA driver to run the kernels"
	elif ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
		skip "no NVIDIA driver (libcuda.so.1) on this machine; run this where a GPU is present"
	fi
	if [ "$MPS" = 1 ] && ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
		skip "MPS=1 but no nvidia-cuda-mps-control on PATH"
	fi
fi

mkdir -p "$work/logs" || exit 1
if [ -z "$ptx" ]; then
	ptx=$work/ptx
	echo "generating every variant of $src/lua/variants/all.lua into $ptx"
	"$recur" gen "$src/lua/variants/all.lua" -o "$ptx" -q || { echo "FAIL: recur gen"; exit 1; }
fi
# "MIXER NAME ..." per variant
mapfile -t listing < <("$recur" list --dir "$ptx" | awk '{ print $1, $2 }')
if [ -n "${VARIANTS:-}" ]; then
	read -r -a waiting <<< "$VARIANTS"
else
	mapfile -t waiting < <(printf '%s\n' "${listing[@]}" | awk '$2 ~ /lookback|onepass/ { print $2 }')
fi
# the busy variant: the one named, else a hierarchical one, else any that does not wait
busy_line=$(printf '%s\n' "${listing[@]}" | awk -v v="${BUSY_VARIANT:-}" '
	v != "" { if ($2 == v) { print; exit } next }
	$2 ~ /hierarchical/ { print; exit }
	$2 !~ /lookback|onepass/ && other == "" { other = $0 }
	END { if (v == "" && other != "") print other }' | head -1)
busy_mixer=${busy_line%% *} busy_variant=${busy_line#* }
[ ${#waiting[@]} -gt 0 ] || { echo "FAIL: no waiting (lookback or onepass) variant in $ptx"; exit 1; }
[ -n "$busy_line" ] || { echo "FAIL: no variant in $ptx that does not wait, for the busy process: name one with BUSY_VARIANT"; exit 1; }
# the two loops take the waiting variants in halves, each all the shapes
half=$(( (${#waiting[@]} + 1) / 2 ))
loop_a=("${waiting[@]:0:$half}")
loop_b=("${waiting[@]:$half}")
[ ${#loop_b[@]} -gt 0 ] || loop_b=("${loop_a[@]}")

verify_cmd() {   # verify_cmd VARIANT...: the verify of one iteration, in the array cmd
	cmd=("$recur" verify --dir "$ptx")
	for v in "$@"; do cmd+=(--variant "$v"); done
	cmd+=(--shape "$SHAPES")
}
busy_cmd=("$recur" bench --dir "$ptx" --mixer "$busy_mixer" --variant "$busy_variant" --shapes "$BUSY_SHAPE"
	--rounds 8 --samples 64 --warmup 0 --out "$work/busy.json")
if [ "$dry" = 1 ]; then
	echo "busy:   ${busy_cmd[*]}   (repeated until the loops end)"
	verify_cmd "${loop_a[@]}"
	echo "loop a: timeout $HANG_TIMEOUT ${cmd[*]}   (repeated for ${DURATION}s)"
	verify_cmd "${loop_b[@]}"
	echo "loop b: timeout $HANG_TIMEOUT ${cmd[*]}   (repeated for ${DURATION}s)"
	exit 0
fi

# ---- MPS: a daemon of our own, gone on any exit ----
pids=()
cleanup() {
	touch "$work/stop"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ "$MPS" = 1 ]; then
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$work/mps CUDA_MPS_LOG_DIRECTORY=$work/mps nvidia-cuda-mps-control >/dev/null 2>&1
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -f "$work/stop"
if [ "$MPS" = 1 ]; then
	mkdir -p "$work/mps"
	export CUDA_MPS_PIPE_DIRECTORY=$work/mps CUDA_MPS_LOG_DIRECTORY=$work/mps
	nvidia-cuda-mps-control -d || { echo "FAIL: cannot start the MPS daemon"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$work/environment.txt"

# ---- the busy process: long launches on most of the SMs, until told to stop ----
(
	n=0
	while [ ! -e "$work/stop" ]; do
		"${busy_cmd[@]}" > "$work/logs/busy.$n.log" 2>&1
		n=$((n + 1))
	done
	echo "$n" > "$work/busy.runs"
) &
pids+=($!)
sleep 5   # its first launches are on the GPU before the loops start

# ---- the two verify loops ----
loop() {   # loop NAME PERCENT VARIANT...: iterations until DURATION; one line per iteration
	local name=$1 pct=$2 i=0 t0=$SECONDS
	shift 2
	while [ $((SECONDS - t0)) -lt "$DURATION" ]; do
		local log=$work/logs/$name.$i.log s=$SECONDS cmd
		verify_cmd "$@"
		if [ "$pct" -gt 0 ]; then
			CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct timeout "$HANG_TIMEOUT" "${cmd[@]}" > "$log" 2>&1
		else
			timeout "$HANG_TIMEOUT" "${cmd[@]}" > "$log" 2>&1
		fi
		local rc=$?
		local res=pass nfail nres
		# a one-pass backward the device cannot hold whole (under MPS, a
		# share of the SMs) is refused before launch, by the runtime's
		# residency check: the designed answer, not a failure; its other
		# rows must still pass
		nfail=$(grep -c ' FAIL ' "$log")
		nres=$(grep ' FAIL ' "$log" | grep -c 'must be resident at once; this device holds')
		if [ $rc = 124 ]; then res="HANG (no end after ${HANG_TIMEOUT}s)"
		elif [ "$nfail" -gt 0 ] && [ "$nfail" = "$nres" ] && grep -qE "^[1-9][0-9]* passed, $nres failed" "$log"; then
			res="pass, $nres refused (not resident)"
		elif [ $rc != 0 ] || ! grep -qE '^[1-9][0-9]* passed, 0 failed' "$log"; then res="FAIL (exit $rc)"
		fi
		echo "$name $i $((SECONDS - s))s $res" >> "$work/loops.txt"
		i=$((i + 1))
	done
}
: > "$work/loops.txt"
pct=0
[ "$MPS" = 1 ] && pct=$MPS_PERCENT
loop a "$pct" "${loop_a[@]}" &
la=$!
loop b "$pct" "${loop_b[@]}" &
lb=$!
pids+=("$la" "$lb")
wait "$la" "$lb"
touch "$work/stop"
wait "${pids[0]}"

# ---- the summary ----
iters=$(wc -l < "$work/loops.txt")
hangs=$(grep -c HANG "$work/loops.txt")
fails=$(grep -c FAIL "$work/loops.txt")
refused=$(grep -c refused "$work/loops.txt")
slowest=$(awk '{ sub("s", "", $3); if ($3 > m) m = $3 } END { print m + 0 }' "$work/loops.txt")
{
	echo "# shared-GPU progress: two verify loops of the waiting variants beside a busy process"
	echo
	echo "$(cat "$work/environment.txt"); MPS ${MPS} (verify clients at ${pct:-0}% of the SMs where MPS=1)."
	echo "Busy: $busy_variant at $BUSY_SHAPE, $(cat "$work/busy.runs" 2>/dev/null || echo '?') bench runs."
	echo "Loop a: ${loop_a[*]}; loop b: ${loop_b[*]}; shapes $SHAPES."
	echo
	echo "$iters verify runs in ${DURATION}s per loop: $fails failed, $hangs hung (limit ${HANG_TIMEOUT}s); slowest ${slowest}s."
	[ "$refused" = 0 ] || echo "$refused runs had rows refused before launch: a one-pass backward the SMs at hand cannot hold whole."
	grep -E 'HANG|FAIL' "$work/loops.txt" | sed 's/^/    /'
} | tee "$work/summary.md"
[ "$iters" -gt 0 ] && [ "$hangs" = 0 ] && [ "$fails" = 0 ]
