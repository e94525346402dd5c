#!/usr/bin/env bash
# Hostile command lines, every subcommand: huge and malformed numbers and
# shapes, empty strings, missing values, unknown options, odd paths
# (folders, devices, missing, manifests as outputs), hostile manifests and
# results files. Wanted of each run: an exit status of 0, 1 or 2 (never a
# signal or a hang), a message on stderr whenever it is not 0, never
# "(null)", never a sanitizer report. And the files: `compare` never
# writes over its inputs, a chart that cannot be drawn leaves an existing
# one as it was, no temporary file is left anywhere.
#
# verify, calibrate and bench run with RECUR_LIBCUDA naming no library, so
# that what passes their parsing ends at the driver with a message, the
# same with or without a GPU. Runs in WORK_DIR (the outputs' defaults are
# relative).
#   usage: fuzz_cli_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
cd "$work" || exit 1
pass=0 fail=0 runs=0 bad=0
firstbad="" W=""
. "$src/tests/check_lib.sh"

# run [-rc N] ARGS...: one run of recur held to the rules above (and to
# exit status N when given); its output in $out, its status in $rc
run() {
	local want=""
	if [ "$1" = -rc ]; then want=$2; shift 2; fi
	runs=$((runs+1))
	RECUR_LIBCUDA=$work/no-libcuda.so timeout 60 "$recur" "$@" >"$work/run$W.out" 2>"$work/run$W.err" </dev/null
	rc=$?
	out=$(<"$work/run$W.out")
	err=$(<"$work/run$W.err")
	local why=""
	# (bash's own matching: a run costs two processes, not ten)
	if [ $rc -ge 124 ]; then why="exit $rc (a signal or a hang)"
	elif [ $rc -gt 2 ]; then why="exit $rc"
	elif [ $rc -ne 0 ] && [ -z "$err" ] && [ -z "$out" ]; then why="exit $rc without a message"
	elif [[ $out$err == *"(null)"* ]]; then why="\"(null)\" in the output"
	elif [[ $err == *"runtime error:"* || $err == *Sanitizer* ]]; then why="a sanitizer report"
	elif [ -n "$want" ] && [ "$rc" != "$want" ]; then why="exit $rc, want $want"
	fi
	if [ -n "$why" ]; then
		bad=$((bad+1))
		echo "  BAD recur $(printf '%q ' "$@" | cut -c1-200): $why: $(printf '%s' "$err" | head -3 | cut -c1-300)"
		[ -n "$firstbad" ] || firstbad="recur $(printf '%q ' "$@" | cut -c1-120): $why"
	fi
	return 0
}
settle() {   # settle NAME: one check for the runs since the last
	[ -n "${FUZZ_TIMES:-}" ] && echo "  ($SECONDS s)"
	check $((bad > 0)) "$1 ($runs runs so far${firstbad:+; first: $firstbad})"
	bad=0 firstbad=""
}

# ---- a generated folder ----
"$recur" gen "$src/tests/fuzz/tiny.lua" -o "$work/ptx" -q
check $? "recur gen of the fuzz grid"
ptx=$work/ptx
V1=fused_grouped_prefix32_lookback_chunk8

# ---- hostile values ----
long=$(printf '1x%.0s' $(seq 1 3000))1
big=$(printf 'x%.0s' $(seq 1 100000))
SHAPES=( "1x99999999999x1024" "2147483647x2147483647x2" "18446744073709551617x1x64" "0x1x64" "1x0x64"
	"1x1" "1x1x1x1" "" "," ",,," "axbxc" "1x-5x64" "+1x2x64" " 1x2x64" "1x2x64 " "1X2X64" "1x2x0x"
	"1x2x64,,1x2x64" "$long" "$big" "1x2x64$(printf ',1x2x64%.0s' $(seq 1 40))" "2147483648x1x1" "1.5x2x64"
	"0x10x2x64" $'1x2\nx64' "%s%sx%n" )
NUMS=( "" "-1" "0" "99999999999999999999" "18446744073709551616" "1e3" "0x10" " 5" "5 " "nan" "inf" "-0"
	"2147483648" "1001" "+3" )
REALS=( "" "0" "-1" "nan" "inf" "-inf" "1e400" "1e-400" "1e6" "1e7" "0x1p3" "1,5" )
PATHS=( "" "/" "/dev/null" "/nonexistent/x" "$work" "$ptx/manifest.json" "$work/none/deeper/x.json" "-"
	$'new\nline' "$big" )

# ---- the shape parsers: list, verify, calibrate, bench ----
sec_shapes() {
local i=0 s
for s in "${SHAPES[@]}"; do
	# every string through list, every other one through one of the others in turn (one parser serves them all)
	run list --dir "$ptx" --shape "$s" --plan
	case $((i++ % 6)) in
	0) run verify --dir "$ptx" --shape "$s" ;;
	2) run calibrate --dir "$ptx" --shapes "$s" --out "$work/cal.json" ;;
	4) run bench --dir "$ptx" --shapes "$s" --out "$work/res.json" ;;
	esac
done
# the wrap of issue 30: refused, never read as 1x1215752191x1024
run -rc 2 list --dir "$ptx" --shape 1x99999999999x1024
[[ $err == *99999999999* && $out$err != *1215752191* ]]
check $? "a shape past 32 bits is refused, naming the value (not wrapped)"
settle "shapes: ${#SHAPES[@]} hostile strings through list, verify, calibrate, bench"
}

# ---- numbers ----
# each value through two of the nine integer options in turn: every
# option meets three or four of the values
INTOPTS=( "verify --seed" "verify --time" "calibrate --samples" "calibrate --warmup" "calibrate --seed"
	"bench --rounds" "bench --samples" "bench --warmup" "gen -j" )
sec_numbers() {
local i=0 v k c o
for v in "${NUMS[@]}"; do
	for k in 0 4; do
		read -r c o <<< "${INTOPTS[$(( (2 * i + k) % 9 ))]}"
		# gen of a script that is not there: parsed, then refused at once (no generation)
		if [ "$c" = gen ]; then run gen "$work/none.lua" -o "$work/g" -q "$o" "$v"
		else run "$c" --dir "$ptx" "$o" "$v"; fi
	done
	i=$((i + 1))
done
i=0
for v in "${REALS[@]}"; do
	if [ $((i++ % 2)) = 0 ]; then run verify --dir "$ptx" --x-scale "$v"
	else run calibrate --dir "$ptx" --memory-budget "$v"; fi
done
settle "numbers: ${#NUMS[@]} integers and ${#REALS[@]} reals through every numeric option"
}

# ---- missing values, unknown options, empty strings ----
# (gen always with the fuzz grid and an output of the test's: never the whole grid, never elsewhere)
tiny=$src/tests/fuzz/tiny.lua
sec_missing() {
local opt cmd c i=0
for opt in -o --sm --ptx --lua --only -j; do
	run -rc 2 gen "$tiny" "$opt"
	[[ $err == *"needs a value"* ]] || { bad=$((bad+1)); echo "  BAD recur gen $opt: no \"needs a value\""; }
	[ "$opt" = -o ] && run gen "$tiny" -q -o "" || run gen "$work/none.lua" -q -o "$work/g" "$opt" ""
done
for cmd in "list --dir" "list --shape" \
	"verify --dir" "verify --variant" "verify --mixer" "verify --shape" "verify --seed" "verify --goldens" \
	"verify --dump" "verify --time" "verify --x-scale" "calibrate --dir" "calibrate --shapes" "calibrate --mixer" \
	"calibrate --out" "calibrate --samples" "calibrate --warmup" "calibrate --skip" "calibrate --seed" \
	"calibrate --memory-budget" "bench --dir" "bench --shapes" "bench --rounds" "bench --samples" "bench --warmup" \
	"bench --calibration" "bench --variant" "bench --mixer" "bench --out" "bench --seed" "compare --svg"; do
	# shellcheck disable=SC2086
	run -rc 2 $cmd
	[[ $err == *"needs a value"* ]] || { bad=$((bad+1)); echo "  BAD recur $cmd: no \"needs a value\""; }
	# shellcheck disable=SC2086
	[ $((i++ % 2)) = 0 ] && run $cmd ""
done
for c in list verify calibrate bench compare; do
	run -rc 2 "$c" --nope
	run "$c" ""
done
run -rc 0 list -h
run -rc 2 gen "$tiny" -o "$work/g" --nope
run gen - -o "$work/g" -q
run gen "" -o "$work/g" -q
run -rc 2 gen "$tiny" "$tiny" -o "$work/g" -q
run -rc 0 gen -h
run -rc 2
run -rc 2 nope
run -rc 2 ""
run -rc 0 help
run -rc 2 help nope
run -rc 0 --help
settle "missing values, unknown options and empty strings, every subcommand"
}

# ---- odd paths ----
# each path through list, compare and two of the other path options in turn
POPTS=( "verify --dir" "verify --goldens" "calibrate --dir" "calibrate --out" "bench --out" "bench --calibration"
	"gen SCRIPT" )
sec_paths() {
local i=0 p k
for p in "${PATHS[@]}"; do
	run list --dir "$p"
	run compare "$p" "$p"
	for k in 0 3; do
		case "${POPTS[$(( (2 * i + k) % 7 ))]}" in
		"verify --dir") run verify --dir "$p" ;;
		"verify --goldens") run verify --dir "$ptx" --goldens "$p" ;;
		"calibrate --dir") run calibrate --dir "$p" ;;
		"calibrate --out") run calibrate --dir "$ptx" --out "$p" ;;
		"bench --out") run bench --dir "$ptx" --out "$p" --variant "$V1" --mixer rglru ;;
		"bench --calibration") run bench --dir "$ptx" --calibration "$p" ;;
		"gen SCRIPT") run gen "$p" -o "$work/g2" -q ;;
		esac
	done
	i=$((i + 1))
done
# gen's output folder only where the test owns everything around it
for p in "" "$big" "$ptx/manifest.json"; do
	run gen "$tiny" -o "$p" -q
done
# outputs that are the manifest
cp "$ptx/manifest.json" "$work/manifest.keep"
run -rc 1 bench --dir "$ptx" --out "$ptx/manifest.json" --variant "$V1" --mixer rglru
run -rc 1 calibrate --dir "$ptx" --out "$ptx/manifest.json"
cmp -s "$ptx/manifest.json" "$work/manifest.keep"
check $? "bench and calibrate refuse the manifest as their output, which stays a manifest"
run list --dir "$ptx" --plan --shape 2x37x64
printf '%s' "$out" | grep -q "2x37x64 forward\[0\]"
check $? "the folder still lists after all that"
settle "odd paths: ${#PATHS[@]} as every path option"
}

# the four sections above in two workers, one per core: the runs are
# processes of their own, each worker with its own output files
worker() {   # worker NAME SECTION...
	W=.$1
	shift
	for f in "$@"; do "$f"; done
	echo "$pass $fail $runs" > "$work/tally$W"
}
(worker a sec_shapes sec_numbers) > "$work/log.a" 2>&1 &
(worker b sec_missing sec_paths) > "$work/log.b" 2>&1 &
wait
cat "$work/log.a" "$work/log.b"
for w in a b; do
	read -r p f r < "$work/tally.$w" || { p=0 f=1 r=0; echo "FAIL worker $w ended early"; }
	pass=$((pass + p)) fail=$((fail + f)) runs=$((runs + r))
done

# ---- hostile manifests through list --plan ----
mkdir -p "$work/m"
cp "$ptx"/*.ptx "$work/m/"
deep=$(printf '(%.0s' $(seq 1 30000))1$(printf ')%.0s' $(seq 1 30000))
minus=$(printf -- '-%.0s' $(seq 1 30000))1
for e in "$deep" "$minus" "cdiv(-9223372036854775807-1,-1)" "(-9223372036854775807-1)%-1" "B*L*D*4611686018427387904" \
	"1/0" "D +* 3" "2*(" "9223372036854775807+1" "min(1)" ""; do
	sed "s|\"cdiv(L,T)\"|\"${e//|/\\|}\"|" "$ptx/manifest.json" > "$work/m/manifest.json"
	run list --dir "$work/m" --plan --shape 2x37x64,1x8192x1024
	sed "s|\"B\\*NT\\*D\\*4\"|\"${e//|/\\|}\"|" "$ptx/manifest.json" > "$work/m/manifest.json"
	run list --dir "$work/m" --plan --shape 2x37x64
done
printf '{"format": 1, "mixers": %s' "$(printf '[%.0s' $(seq 1 50000))" > "$work/m/manifest.json"
run -rc 1 list --dir "$work/m"
head -c 3000 "$ptx/manifest.json" > "$work/m/manifest.json"
run -rc 1 list --dir "$work/m"
settle "hostile manifests: deep expressions, int64 edges, broken JSON, through list --plan"

# ---- compare: inputs are never overwritten ----
row() {   # row ARCH L MS: a results row
	printf '{"architecture": "%s", "backend": "v", "shape": {"batch": 1, "length": %s, "width": 1024}, "forward_backward": {"median_ms": %s}, "peak_allocated_delta_bytes": 0}' "$1" "$2" "$3"
}
printf '{"schema_version": 1, "environment": {"gpu": "G"}, "rows": [%s, %s]}\n' "$(row rglru 8192 1.5)" "$(row rglru 32768 5)" > "$work/res.svg"
cp "$work/res.svg" "$work/ref.json"
cp "$work/res.svg" "$work/res.keep"
run -rc 2 compare "$work/res.svg" "$work/ref.json"
cmp -s "$work/res.svg" "$work/res.keep"
check $? "compare res.svg REF refuses to derive its chart as res.svg, and res.svg is untouched"
run -rc 2 compare "$work/res.svg" "$work/ref.json" --svg "$work/ref.json"
cmp -s "$work/ref.json" "$work/res.keep"
check $? "compare --svg REFERENCE is refused, the reference untouched"
ln -sf "$work/res.svg" "$work/link.svg"
run -rc 2 compare "$work/res.svg" "$work/ref.json" --svg "$work/link.svg"
cmp -s "$work/res.svg" "$work/res.keep"
check $? "and a link to an input as --svg is refused too"
cp "$work/res.svg" "$work/res.json"
echo "an old chart" > "$work/old.svg"
printf '{"schema_version": 1, "rows": [%s]}\n' "$(row rglru 8192 0)" > "$work/zero.json"
run -rc 1 compare "$work/zero.json" "$work/zero.json" --svg "$work/old.svg"
[ "$(cat "$work/old.svg")" = "an old chart" ]
check $? "a chart that cannot be drawn leaves the existing --svg file as it was"
run -rc 0 compare "$work/res.json" "$work/ref.json" --svg "$work/old.svg"
grep -q '<svg' "$work/old.svg"
check $? "a chart that can be drawn replaces it"
chmod 640 "$work/old.svg"
run -rc 0 compare "$work/res.json" "$work/ref.json" --svg "$work/old.svg"
[ "$(stat -c %a "$work/old.svg")" = 640 ]
check $? "and keeps its permissions"
ln -sf "$work/old.svg" "$work/chart-link.svg"
run -rc 0 compare "$work/res.json" "$work/ref.json" --svg "$work/chart-link.svg"
[ -L "$work/chart-link.svg" ] && grep -q '<svg' "$work/old.svg"
check $? "an --svg that is a link stays a link; the file it names gets the chart"
for body in '' 'null' '[]' '{}' '{"rows": 5}' '{"rows": [1, "x", null]}' \
	'{"rows": [{"shape": {"batch": 1e300, "length": 1e300, "width": -1}}]}' \
	'{"rows": [{"shape": {"batch": 1, "length": 8192, "width": 1024}, "architecture": 5, "forward_backward": {"median_ms": "x"}}]}' \
	'{"rows": [{"shape": {"batch": 2147483648, "length": 1, "width": 1}}]}' \
	'{"rows": [{"shape": {"batch": 1.5, "length": 8192, "width": 1024}}]}' \
	"$(printf '[%.0s' $(seq 1 5000))"; do
	printf '%s' "$body" > "$work/h.json"
	run compare "$work/h.json" "$work/ref.json" --svg "$work/h.svg"
	run compare "$work/res.json" "$work/h.json" --svg "$work/h.svg"
done
run compare "$work/res.json" "$work/ref.json" --svg "$work/nofolder/x.svg"
run compare "$work/res.json" "$work/ref.json" --svg "$work"
run -rc 1 compare "$work/res.json" "$work/ref.json" --svg /dev/full
[ -c /dev/full ]
check $? "--svg /dev/full: written in place (no space: a message), the device left a device"
run -rc 0 compare "$work/res.json" "$work/ref.json" --svg /dev/null
[ -c /dev/null ]
check $? "--svg /dev/null: the chart discarded, /dev/null left a device"
settle "compare: hostile results files and chart paths"

# ---- nothing left behind ----
left=$(find "$work" -name '*.tmp.*' | head -3)
[ -z "$left" ]
check $? "no temporary file left anywhere (${left:-none})"
[ ! -e "$src/out/calibration.json.tmp" ] && [ -z "$(find "$work" -maxdepth 1 -name '.tmp.*')" ]
check $? "nor in the working folder"

echo "$runs runs of recur"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
