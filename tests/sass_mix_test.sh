#!/usr/bin/env bash
# bench/sass_mix.py against a hand-made source-counter CSV (no GPU needed):
# instructions per element by class, a second launch of a kernel ignored, an
# innermost loop found from its backward branch with its per-trip count, an
# .xz input read, and a CSV without the counters refused with the kernel named.
# Its static mode (--ptx: ptxas and nvdisasm here) against a stand-in
# nvdisasm printing a known listing: labels resolved into the loops, one
# kernel picked, the cubin's header rewritten for a disassembler that reads
# only the layout before CUDA 12.8, missing tools named; with a real
# nvdisasm on the PATH, also a real kernel's loop.
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

# ---- static mode ----
. "$src/tests/ptxas_cache.sh"
find_ptxas
cat > "$work/t.ptx" <<'PTX'
.version 8.0
.target sm_90
.address_size 64
.visible .entry k_loop(.param .u64 p, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [n];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	mov.u32 %r2, 0;
$L__BB0_1:
	ex2.approx.ftz.f32 %f2, %f1;
	fma.rn.f32 %f1, %f2, %f1, %f2;
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, %r1;
	@%p1 bra $L__BB0_1;
	st.global.f32 [%rd2], %f1;
	ret;
}
PTX
# a listing in nvdisasm -c's layout: two kernels, a loop by label in the first
cat > "$work/listing.txt" <<'SASS'
	.headerflags	@"EF_CUDA_SM90"
//--------------------- .text.k_loop --------------------------
k_loop:
.text.k_loop:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   MOV R2, RZ ;
.L_x_0:
        /*0020*/                   MUFU.EX2 R3, R0 ;
        /*0030*/                   FFMA R0, R3, R0, R3 ;
        /*0040*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0050*/                   ISETP.GE.U32.AND P0, PT, R2, UR4, PT ;
        /*0060*/              @!P0 BRA `(.L_x_0) ;
        /*0070*/                   STG.E [R4.64], R0 ;
        /*0080*/                   EXIT ;
.L_x_1:
        /*0090*/                   BRA `(.L_x_1);
//--------------------- .text.k_other --------------------------
k_other:
.text.k_other:
        /*0000*/                   FADD R1, R2, R3 ;
        /*0010*/                   EXIT ;
SASS
# stand-in nvdisasm: the listing; with LEGACY_ONLY set, only for a cubin
# whose header is in the layout before CUDA 12.8 (OS/ABI 0x33, the SM in
# e_flags' low byte), refused as older nvdisasm refuses the new one
cat > "$work/fake_nvdisasm" <<'FAKE'
#!/usr/bin/env bash
f=${!#}
[ -r "$f" ] || { echo "nvdisasm fatal   : Cannot open object file $f" >&2; exit 1; }
if [ -n "${LEGACY_ONLY:-}" ]; then
	abi=$(od -An -tx1 -j7 -N1 "$f" | tr -d ' ')
	sm=$(od -An -tx1 -j48 -N1 "$f" | tr -d ' ')
	[ "$abi" = 33 ] && [ "$sm" = 5a ] ||
		{ echo "nvdisasm fatal   : Elf file '$f' does not contain Cuda architecture information" >&2; exit 1; }
	echo "header $abi $sm" >> "$LEGACY_ONLY"
fi
cat "$(dirname "$0")/listing.txt"
FAKE
chmod +x "$work/fake_nvdisasm"
if [ -z "$ptxas" ]; then
	echo "skip static mode: no ptxas found (it compiles the module before disassembly)"
else
	sm() { PTXAS=$ptxas python3 "$src/bench/sass_mix.py" --ptx "$work/t.ptx" --sm sm_90 "$@"; }
	out=$(NVDISASM=$work/fake_nvdisasm sm --loops 2>&1); rc=$?
	echo "$out"
	check "static: exit status 0" "[ $rc -eq 0 ]"
	check "static: both kernels, counted once each" \
		"grep -q '== k_loop (sm_90): 10 instructions (static)' <<< \"\$out\" && grep -q '== k_other (sm_90): 2 instructions (static)' <<< \"\$out\""
	check "static: the loop by its label, 5 a trip" \
		"grep -q 'loop 00020..00060: 5 instr a trip' <<< \"\$out\" && grep -q 'MUFU 1, FFMA 1, IADD3 1, ISETP 1, BRA 1' <<< \"\$out\""
	check "static: the trap past EXIT (a branch to itself) is no loop" "[ \$(grep -c '^   loop' <<< \"\$out\") -eq 1 ]"
	out=$(NVDISASM=$work/fake_nvdisasm sm --kernel k_other 2>&1)
	check "static: --kernel picks one" "grep -q '== k_other' <<< \"\$out\" && ! grep -q '== k_loop' <<< \"\$out\""
	err=$(NVDISASM=$work/fake_nvdisasm sm --kernel k_none 2>&1); rc=$?
	check "static: an absent kernel refused by name" "[ $rc -ne 0 ] && grep -q 'no kernel k_none in' <<< \"\$err\""
	rm -f "$work/legacy.log"
	out=$(LEGACY_ONLY=$work/legacy.log NVDISASM=$work/fake_nvdisasm sm 2>&1); rc=$?
	check "static: a disassembler of the old header layout gets it rewritten" \
		"[ $rc -eq 0 ] && grep -q '== k_loop' <<< \"\$out\" && grep -qx 'header 33 5a' '$work/legacy.log'"
	err=$(NVDISASM=$work/none sm 2>&1); rc=$?
	check "static: a missing nvdisasm named" "[ $rc -ne 0 ] && grep -q 'nvdisasm not found' <<< \"\$err\""
	err=$(NVDISASM=$work/fake_nvdisasm PTXAS=$work/none python3 "$src/bench/sass_mix.py" --ptx "$work/t.ptx" 2>&1); rc=$?
	check "static: a missing ptxas named" "[ $rc -ne 0 ] && grep -q 'ptxas not found' <<< \"\$err\""
	printf 'not ptx\n' > "$work/bad.ptx"
	err=$(NVDISASM=$work/fake_nvdisasm PTXAS=$ptxas python3 "$src/bench/sass_mix.py" --ptx "$work/bad.ptx" 2>&1); rc=$?
	check "static: ptxas's refusal shown with the file" "[ $rc -ne 0 ] && grep -q 'bad.ptx failed' <<< \"\$err\""
	real=${NVDISASM_REAL:-$(command -v nvdisasm || true)}
	if [ -n "$real" ]; then
		out=$(NVDISASM=$real sm --loops 2>&1); rc=$?
		echo "$out"
		# ptxas may unroll it: as many ex2 as fma a trip, whatever the factor
		check "static, $real: a loop holds the ex2 and the fma" \
			"[ $rc -eq 0 ] && grep -A1 '^   loop' <<< \"\$out\" | grep -qE 'MUFU ([0-9]+), FFMA \\1,'"
	else
		echo "skip static mode on a real kernel: no nvdisasm on the PATH (NVDISASM_REAL names one)"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
