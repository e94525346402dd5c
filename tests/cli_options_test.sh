#!/usr/bin/env bash
# Malformed numbers on the command line are refused before anything runs,
# with the option and the value named and a non-zero exit: never read as 0
# (a seed of 0, no timing) and run anyway. Each subcommand's option table
# is its whole grammar: its --help lists every option, the parser takes
# every one of them, missing values and unknown options are named, and
# README.md's synopsis is `recur --help` word for word. Parsing comes before
# the manifest and the driver, so this runs without a GPU.
#   usage: cli_options_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
refused() {   # refused WHAT-TO-FIND ARGS...: non-zero exit, message names it
	local want=$1; shift
	out=$("$recur" "$@" --dir "$work/none" 2>&1); rc=$?
	[ $rc -ne 0 ] && echo "$out" | grep -qF -- "$want"; check $? "recur $* refused, naming \"$want\" (rc $rc: $(echo "$out" | head -1))"
}
refused "--seed -3" verify --seed -3
refused "--seed 12a" verify --seed 12a
refused "--time x" verify --time x
refused "--time 0" verify --time 0
refused "--x-scale 0" verify --x-scale 0
refused "--x-scale 2x" verify --x-scale 2x
refused "--seed 12a" bench --seed 12a
refused "--seed 99999999999999999999999" bench --seed 99999999999999999999999
refused "--rounds 0" bench --rounds 0
refused "--samples x" bench --samples x
refused "--seed x" calibrate --seed x
refused "--warmup -1" calibrate --warmup -1
refused "--memory-budget 0" calibrate --memory-budget 0
refused "--memory-budget 4.5x" calibrate --memory-budget 4.5x
# --mixer accumulates; a --variant of a mixer none names is refused, not
# silently left out (a manifest is all this needs: the check comes before
# the driver)
mkdir -p "$work/m"
variant() { printf '{"name": "%s", "mixer": "%s", "ptx": "x.ptx", "vars": [], "rules": [], "workspaces": [], "forward": [{"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "args": []}], "backward": []}' "$1" "$2"; }
printf '{"format": 1, "target": "sm_90", "ptx_isa": "8.0", "mixers": {"toy": {"params": []}, "other": {"params": []}},\n "variants": [%s, %s]}\n' \
	"$(variant a toy)" "$(variant b other)" > "$work/m/manifest.json"
: > "$work/m/x.ptx"
out=$("$recur" verify --dir "$work/m" --mixer other --variant a 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -qF "variant a is of mixer toy"
check $? "recur verify --mixer other --variant a refused, naming the variant's mixer (rc $rc: $(echo "$out" | head -1))"
out=$("$recur" verify --dir "$work/m" --mixer other --mixer toy --variant a --variant b 2>&1)
echo "$out" | grep -q "variant\|manifest"; [ $? -ne 0 ]
check $? "recur verify --mixer other --mixer toy takes both mixers' variants ($(echo "$out" | head -1))"

# the grammar: every subcommand in `recur --help`, each with its --help
commands=$("$recur" --help | awk '/^recur / { print $2 }')
missing=
for c in gen list verify calibrate bench compare; do
	echo "$commands" | grep -qx "$c" || missing="$missing $c"
done
[ -z "$missing" ]; check $? "recur --help names every subcommand ($(echo $commands))${missing:+; missing:$missing}"
[ "$("$recur" help)" = "$("$recur" --help)" ] && [ "$("$recur" -h)" = "$("$recur" --help)" ]
check $? "recur help and recur -h print recur --help"
out=$("$recur" 2>&1); rc=$?
[ $rc = 2 ] && [ "$out" = "$("$recur" --help)" ]; check $? "recur alone: the synopsis on stderr, exit 2 (rc $rc)"
out=$("$recur" frobnicate 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -qF "unknown command frobnicate"; check $? "an unknown command is named (rc $rc: $out)"
# the options of a subcommand's line in `recur --help`, one a line: "--dir DIR", "--graph"
options_of() {
	"$recur" --help | awk -v c="$1" '$1 == "recur" { on = ($2 == c) } on' |
		grep -o '\[-[^]]*\]' | tr -d '[]'
}
for c in $commands; do
	help=$("$recur" "$c" --help 2>&1); rc=$?
	[ $rc = 0 ] && echo "$help" | head -1 | grep -q "^usage: recur $c"
	check $? "recur $c --help exits 0 with its synopsis (rc $rc)"
	[ "$("$recur" help "$c")" = "$help" ]; check $? "recur help $c prints recur $c --help"
	n=0
	while read -r opt value; do
		n=$((n + 1))
		line="  $opt${value:+ $value}"
		echo "$help" | grep -qF -- "$line"; check $? "recur $c --help lists $opt${value:+ $value}"
		if [ -n "$value" ]; then   # its value missing: named as such, not as unknown
			out=$("$recur" "$c" "$opt" 2>&1); rc=$?
			[ $rc = 2 ] && echo "$out" | grep -qF "recur $c: option $opt needs a value"
			check $? "recur $c $opt (no value): \"$(echo "$out" | head -1)\" (rc $rc)"
		else   # a flag the parser takes: the unknown option after it is the one refused
			out=$("$recur" "$c" "$opt" --no-such-option 2>&1); rc=$?
			[ $rc = 2 ] && echo "$out" | grep -qF "unknown option --no-such-option"
			check $? "recur $c takes the flag $opt ($(echo "$out" | head -1))"
		fi
	done < <(options_of "$c")
	[ $n -gt 0 ]; check $? "recur $c has options in recur --help ($n)"
	out=$("$recur" "$c" --no-such-option 2>&1); rc=$?
	[ $rc = 2 ] && echo "$out" | grep -qF "recur $c: unknown option --no-such-option (see recur $c --help)"
	check $? "recur $c --no-such-option: \"$(echo "$out" | head -1)\" (rc $rc)"
done
# options are matched only through the tables (args.c), never by hand
hand=$(grep -n 'strcmp([^)]*"-' "$src"/cli/*.c | grep -v '^[^:]*/cli/\(args\|main\)\.c:')
[ -z "$hand" ]; check $? "no subcommand compares argv with an option name itself ${hand:+: $hand}"

# the defaults: outputs under out/, said in --help, the folder made first
"$recur" calibrate --help | grep -q -- "--out FILE .*(default: out/calibration.json)" &&
	"$recur" bench --help | grep -q -- "--out FILE .*(default: out/results.json)" &&
	"$recur" bench --help | grep -q -- "--calibration FILE .*(default: out/calibration.json)"
check $? "calibrate and bench write under out/ by default, and --help says so"
: > "$work/a_file"
for c in calibrate bench; do
	out=$("$recur" "$c" --dir "$work/m" --out "$work/a_file/sub/x.json" 2>&1); rc=$?
	[ $rc = 1 ] && echo "$out" | grep -qF "cannot write the" && echo "$out" | grep -qF "$work/a_file/sub"
	check $? "recur $c: a folder --out cannot be made in is refused before any timing ($(echo "$out" | head -1))"
done

# README.md's synopsis (the first indented block of "## Command line") is `recur --help`
readme=$(awk '/^## Command line/ { on = 1; next } on && /^## / { exit } on' "$src/README.md" |
	awk '/^    / { blk = 1 } blk && !/^    / && !/^$/ { exit } blk' | sed 's/^    //')
[ -n "$readme" ] && [ "$readme" = "$("$recur" --help)" ]
check $? "README.md's synopsis is the output of recur --help"
[ "$readme" = "$("$recur" --help)" ] || diff <(echo "$readme") <("$recur" --help)

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
