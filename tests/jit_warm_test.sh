#!/usr/bin/env bash
# bench/jit_warm.sh against a stand-in recur (no GPU needed): every variant
# the list names is verified once, several at the same time, a failed one
# is named with its last lines, the exit status says whether any failed,
# a PTX folder without a manifest is an error, and decode steps are warmed
# at WARM_SHAPE.
#   usage: jit_warm_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
src=$2 work=$3
rm -rf "$work"; mkdir -p "$work/ptx"
stub=$work/recur
cat > "$stub" <<EOF
#!/usr/bin/env bash
if [ "\$1" = list ]; then
	[ -d "\$3" ] || { echo "recur list: \$3/manifest.json: cannot read the manifest"; exit 1; }
	printf 'rglru    good_a\nrglru    bad_b\nsamu     good_c\nsamu     good_d\n'
	[ -z "\${STUB_DECODE:-}" ] || printf 'rglru    rglru_decode  scan decode  state h0 hT index\n'
	exit 0
fi
echo "\$7 shape \$9" >> "$work/shapes"
# verify --dir D --mixer M --variant V --shape S: record when it ran
echo "\$7 start \$(date +%s.%N)" >> "$work/runs"
sleep 1
echo "\$7 end \$(date +%s.%N)" >> "$work/runs"
case "\$7" in bad_*) echo "\$7 1x64x64 FAIL y 3.1e-01"; echo "0 passed, 1 failed"; exit 1 ;; esac
echo "1 passed, 0 failed"
EOF
chmod +x "$stub"
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }

out=$(bash "$src/bench/jit_warm.sh" "$stub" "$work/ptx" 4 "$work/warm.log"); rc=$?
echo "$out"
check "a failed variant makes the exit status non-zero" '[ $rc -ne 0 ]'
check "the summary counts 4 variants, 1 failed" 'echo "$out" | grep -q "jit warm: 4 variants, 4 at once, .* 1 failed"'
check "the failed variant is named with its output" 'echo "$out" | grep -q "^failed: rglru bad_b" && echo "$out" | grep -q "^    bad_b 1x64x64 FAIL"'
check "every variant verified once" '[ "$(grep -c " start " "$work/runs")" = 4 ] && [ "$(cut -d" " -f1 "$work/runs" | sort -u | wc -l)" = 4 ]'
# with 4 at once, some verify starts before another one ends
first_end=$(awk '$2 == "end" { print $3 }' "$work/runs" | sort -n | head -1)
last_start=$(awk '$2 == "start" { print $3 }' "$work/runs" | sort -n | tail -1)
check "the verifies overlap in time (4 at once)" 'awk -v s="$last_start" -v e="$first_end" "BEGIN { exit !(s < e) }"'
check "the summary goes to the log" 'grep -q "jit warm: 4 variants" "$work/warm.log"'

rm -f "$work/runs"
sed -i 's/bad_b/good_b/' "$stub"
bash "$src/bench/jit_warm.sh" "$stub" "$work/ptx" 2 > "$work/out2" 2>&1; rc=$?
check "all passing: exit status 0, 0 failed" '[ $rc -eq 0 ] && grep -q "4 variants, 2 at once, .* 0 failed" "$work/out2"'

bash "$src/bench/jit_warm.sh" "$stub" "$work/nothere" 2 > "$work/out3" 2>&1; rc=$?
check "a folder without a manifest: an error naming it" '[ $rc -ne 0 ] && grep -q "recur list failed: .*nothere/manifest.json" "$work/out3"'

# decode steps ("scan decode" in the list) are warmed too, at WARM_SHAPE where given
rm -f "$work/runs" "$work/shapes"
STUB_DECODE=1 WARM_SHAPE=1x16x2816 bash "$src/bench/jit_warm.sh" "$stub" "$work/ptx" 2 > "$work/out4" 2>&1; rc=$?
check "a decode step is warmed too, every variant at WARM_SHAPE" '[ $rc -eq 0 ] && grep -q "5 variants" "$work/out4" &&
	grep -q "^rglru_decode shape 1x16x2816$" "$work/shapes" && [ "$(grep -vc " shape 1x16x2816$" "$work/shapes")" = 0 ]'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
