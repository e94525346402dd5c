#!/usr/bin/env bash
# compute-sanitizer over every variant of a generated folder, forward and
# backward: `recur verify` of each variant under memcheck, racecheck,
# synccheck and initcheck, at small shapes that cross tile and chunk
# boundaries with B > 1 (default 2x37x64 and 3x1000x128: L = 37 leaves a
# partial chunk and a partial tile, L = 1000 several tiles and a partial
# one, B = 2 and 3 more than one sequence per grid). Each run must end with
# the tool's "ERROR SUMMARY: 0 errors" and verify's checks passing; a
# summary table (variant x tool) is written to WORK_DIR/summary.md and
# printed. Exits 0 when every cell is clean, 1 otherwise, 77 (with the
# reason) where there is no NVIDIA driver or no compute-sanitizer.
#
#   usage: gpu_sanitize.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
#   PTX_DIR: a generated folder (default: RECUR_PTX, else every variant of
#            SOURCE_DIR/lua/variants/all.lua generated into WORK_DIR/ptx)
#   environment:
#     TOOLS     the tools, default "memcheck racecheck synccheck initcheck"
#     SHAPES    the verify shapes, default "2x37x64 3x1000x128"
#     VERIFY_ARGS  more options of verify for every run, e.g. "--resets 0.01"
#               (the variants that cannot take them are left out by verify)
#     VARIANTS  names to check (default: every variant of the folder)
#     JOBS      runs at once on the GPU (default 2)
#     RUN_TIMEOUT  seconds one run may take before it counts as a hang (default 1800)
#     COMPUTE_SANITIZER  the tool's path (default: PATH, then /usr/local/cuda/bin)
#     DRY_RUN=1 print the commands, run nothing (no GPU needed)
set -u
if [ $# -lt 3 ]; then
	echo "usage: gpu_sanitize.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]" >&2
	exit 2
fi
recur=$1 src=$2 work=$3 ptx=${4:-${RECUR_PTX:-}}
TOOLS=${TOOLS:-memcheck racecheck synccheck initcheck}
SHAPES=${SHAPES:-2x37x64 3x1000x128}
JOBS=${JOBS:-2}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
dry=${DRY_RUN:-0}

# ---- what is needed, or the reason it is skipped ----
skip() { echo "SKIP: $1"; exit 77; }
if [ "$dry" != 1 ]; then
	if [ -n "${RECUR_LIBCUDA:-}" ]; then
		[ -e "$RECUR_LIBCUDA" ] || skip "RECUR_LIBCUDA=$RECUR_LIBCUDA does not exist: no NVIDIA driver to run the kernels"
	elif ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
		skip "no NVIDIA driver (libcuda.so.1) on this machine; run this where a GPU is present"
	fi
fi
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer 2>/dev/null || true)}
[ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && cs=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$cs" ]; then
	[ "$dry" = 1 ] && cs=compute-sanitizer || skip "no compute-sanitizer (set COMPUTE_SANITIZER, or put CUDA's bin/ on PATH)"
fi
for t in $TOOLS; do
	case $t in memcheck|racecheck|synccheck|initcheck) ;; *) echo "gpu_sanitize: unknown tool $t" >&2; exit 2 ;; esac
done

mkdir -p "$work/logs" || exit 1
if [ -z "$ptx" ]; then
	ptx=$work/ptx
	echo "generating every variant of $src/lua/variants/all.lua into $ptx"
	"$recur" gen "$src/lua/variants/all.lua" -o "$ptx" -q || { echo "FAIL: recur gen"; exit 1; }
fi
mapfile -t all < <("$recur" list --dir "$ptx" | awk '{ print $2 }')
[ ${#all[@]} -gt 0 ] || { echo "FAIL: recur list --dir $ptx names no variant"; exit 1; }
if [ -n "${VARIANTS:-}" ]; then
	read -r -a variants <<< "$VARIANTS"
else
	variants=("${all[@]}")
fi
shape_args=()
for s in $SHAPES; do shape_args+=(--shape "$s"); done
read -r -a more_args <<< "${VERIFY_ARGS:-}"
shape_args+=("${more_args[@]}")

# The options of each tool. racecheck: shared-memory hazards, reported in
# full; initcheck: reads of device memory never written (workspaces are
# not cleared unless the manifest says so: this is what checks that);
# memcheck: out of bounds, misaligned, leaks of device allocations.
tool_opts() {
	case $1 in
	memcheck) echo "--tool memcheck --leak-check full" ;;
	racecheck) echo "--tool racecheck --racecheck-report all" ;;
	synccheck) echo "--tool synccheck" ;;
	initcheck) echo "--tool initcheck" ;;
	esac
}

# One cell: TOOL VARIANT -> WORK/logs/VARIANT.TOOL.log and .rc
cell() {
	local tool=$1 v=$2 log=$work/logs/$2.$1.log
	# shellcheck disable=SC2046
	timeout "$RUN_TIMEOUT" "$cs" $(tool_opts "$tool") --error-exitcode 99 --print-limit 50 \
		"$recur" verify --dir "$ptx" --variant "$v" "${shape_args[@]}" > "$log" 2>&1
	echo $? > "$log.rc"
}

if [ "$dry" = 1 ]; then
	for t in $TOOLS; do for v in "${variants[@]}"; do
		# shellcheck disable=SC2046
		echo timeout "$RUN_TIMEOUT" "$cs" $(tool_opts "$t") --error-exitcode 99 --print-limit 50 \
			"$recur" verify --dir "$ptx" --variant "$v" "${shape_args[@]}"
	done; done
	exit 0
fi

{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; "$cs" --version 2>&1 | tail -1; } \
	| tee "$work/environment.txt"
echo "${#variants[@]} variants x $(echo $TOOLS | wc -w) tools at ${SHAPES}, $JOBS at a time"
start=$SECONDS
running=0
for t in $TOOLS; do
	for v in "${variants[@]}"; do
		cell "$t" "$v" &
		running=$((running + 1))
		if [ "$running" -ge "$JOBS" ]; then
			wait -n
			running=$((running - 1))
		fi
	done
done
wait

# ---- the summary ----
# a cell: "ok", "N errors", "verify FAIL", "hang" (timeout) or "exit N"
verdict() {
	local log=$1 rc
	rc=$(cat "$log.rc" 2>/dev/null || echo 255)
	local errs
	errs=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | awk '{ s += $3 } END { print s + 0 }')
	if [ "$rc" = 124 ]; then echo "hang (> ${RUN_TIMEOUT}s)"
	elif [ "$errs" -gt 0 ]; then echo "$errs errors"
	elif [ "$rc" = 99 ]; then echo "tool error"
	elif grep -q ' FAIL' "$log" || ! grep -qE '^[1-9][0-9]* passed, 0 failed' "$log"; then echo "verify FAIL"
	elif [ "$rc" != 0 ]; then echo "exit $rc"
	else echo ok
	fi
}
out=$work/summary.md
bad=0
{
	echo "# compute-sanitizer: recur verify of every variant, forward and backward"
	echo
	echo "Shapes: ${SHAPES}. $(head -1 "$work/environment.txt"); $(tail -1 "$work/environment.txt")."
	echo "Each cell: the tool's error summary and verify's checks (\`ok\`: 0 errors and every check passed)."
	echo
	printf '| variant |'; for t in $TOOLS; do printf ' %s |' "$t"; done; echo
	printf '|---|'; for t in $TOOLS; do printf -- '---|'; done; echo
	for v in "${variants[@]}"; do
		printf '| %s |' "$v"
		for t in $TOOLS; do
			r=$(verdict "$work/logs/$v.$t.log")
			[ "$r" = ok ] || bad=$((bad + 1))
			printf ' %s |' "$r"
		done
		echo
	done
	echo
	echo "$(( ${#variants[@]} * $(echo $TOOLS | wc -w) )) runs, $bad not clean, $((SECONDS - start)) s."
} > "$out"
cat "$out"
[ "$bad" = 0 ] && echo "all clean" || echo "$bad cells not clean: see $work/logs/VARIANT.TOOL.log"
[ "$bad" = 0 ]
