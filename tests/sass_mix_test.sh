#!/usr/bin/env bash
# bench/sass_mix.py against a hand-made source-counter CSV (no GPU needed):
# instructions per element by class, a second launch of a kernel ignored, an
# innermost loop found from its backward branch with its per-trip count, an
# .xz input read, and a CSV without the counters refused with the kernel named.
#   usage: sass_mix_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
command -v python3 >/dev/null || { echo "FAIL python3 not found (llvm-19-dev's tools bring it)"; exit 1; }
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }
hdr='"Address","Source","Instructions Executed","stall_wait","stall_long_sb","stall_wait (Not Issued)"'
cat > "$work/k.csv" <<CSV
"Kernel Name","k_scan",
$hdr
"0x7f0000000100","      FFMA R1, R2, R3, R4","10","1","0","1"
"0x7f0000000110","      MUFU.EX2 R1, R2","40","2","0","2"
"0x7f0000000120","      FMUL R1, R2, R3","40","3","0","3"
"0x7f0000000130","      HMMA.16816.F32.BF16 R4, R8, R12, R4","20","0","0","0"
"0x7f0000000140","@P0   BRA 0x7f0000000110","40","0","4","0"
"0x7f0000000150","      EXIT","10","0","0","0"
"Kernel Name","k_scan",
$hdr
"0x7f0000000100","      FFMA R1, R2, R3, R4","999","0","0","0"
"Kernel Name","k_reduce",
$hdr
"0x7f0000000200","      IMAD R1, R2, R3, R4","8","0","0","0"
"0x7f0000000210","      LDG.E R5, desc[UR4][R2.64]","8","0","0","0"
CSV
out=$(python3 "$src/bench/sass_mix.py" "$work/k.csv" --elements 80 --loops); rc=$?
echo "$out"
check "exit status 0" "[ $rc -eq 0 ]"
check "k_scan: 160 instructions over 80 elements" "grep -q '== k_scan: 0.00 M warp instructions, 2.000 per element (64.0 thread' <<< \"\$out\""
check "k_scan: MUFU as sfu, 0.5 per element" "grep -qE 'sfu \(MUFU\) +0.500 /el' <<< \"\$out\""
check "k_scan: fp32 (FFMA + FMUL) 0.625 per element" "grep -qE 'fp32 +0.625 /el' <<< \"\$out\""
check "k_scan: a second launch is not added" "[ \$(grep -c '== k_scan' <<< \"\$out\") -eq 1 ]"
check "k_scan: the loop, 40 trips of 3.5" "grep -q 'loop 00110..00140: 4 instr, 40 trips, 3.5 per trip, 1.750 /el' <<< \"\$out\" && grep -q 'HMMA 0.5' <<< \"\$out\""
check "k_scan: stall samples 6 wait of 10" "grep -q 'stall samples: wait 60%, long_sb 40%' <<< \"\$out\""
check "k_reduce: integer and global classes" "grep -qE 'integer/logic +0.100 /el' <<< \"\$out\" && grep -qE 'global ld/st +0.100 /el' <<< \"\$out\""
python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.compress(open(sys.argv[1], 'rb').read()))" \
	"$work/k.csv" "$work/k.csv.xz"
outx=$(python3 "$src/bench/sass_mix.py" "$work/k.csv.xz" --elements 80 --loops)
check "an .xz input gives the same report" "[ \"\$outx\" = \"\$out\" ]"
printf '"Kernel Name","k_bad",\n"Address","Source"\n"0x1","NOP"\n' > "$work/bad.csv"
err=$(python3 "$src/bench/sass_mix.py" "$work/bad.csv" 2>&1); rc=$?
echo "$err"
check "no counters: refused, naming the kernel" "[ $rc -ne 0 ] && grep -q 'k_bad' <<< \"\$err\""
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
