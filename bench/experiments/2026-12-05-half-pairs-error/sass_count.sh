#!/usr/bin/env bash
# SASS instructions per element of each candidate term, fp32 (today's form)
# against paired halves, counted from ptxas output for sm_90 without a GPU:
# each snippet is repeated N times on fresh loads, the cubin's .text size
# (16 bytes per instruction) against the same harness around one FADD per
# element, over 2N elements, plus that one.
# Inputs arrive as fp32 and results leave as fp32 (what the neighbouring
# code holds), so a paired form pays its packs and unpacks.
#   usage: sass_count.sh   (needs ptxas and readelf on PATH)
#   SASS_KEEP=DIR sass_count.sh   also keeps each snippet's cubin in DIR
#   (for cuobjdump -sass where one is installed: which opcodes they are)
set -eu
command -v ptxas >/dev/null || { echo "sass_count.sh: no ptxas on PATH" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=16
# snippet bodies: inputs %a0..%a7 (f32 of element 0) %b0..%b7 (element 1),
# results stored from %o0/%p0 (fp32); %k* are per-channel constants
body() {
	case $1 in
	ref) echo "add.rn.f32 %o0, %a0, %kc; add.rn.f32 %p0, %b0, %kc;" ;;   # 1 FADD per element
	tanh_f32) echo "tanh.approx.f32 %o0, %a0; tanh.approx.f32 %p0, %b0;" ;;
	tanh_f16x2) echo "cvt.rn.f16x2.f32 %x0, %b0, %a0; tanh.approx.f16x2 %x1, %x0; mov.b32 {%h0,%h1}, %x1; cvt.f32.f16 %o0, %h0; cvt.f32.f16 %p0, %h1;" ;;
	ex2_f32) echo "ex2.approx.ftz.f32 %o0, %a0; ex2.approx.ftz.f32 %p0, %b0;" ;;
	ex2_f16x2) echo "cvt.rn.f16x2.f32 %x0, %b0, %a0; ex2.approx.f16x2 %x1, %x0; mov.b32 {%h0,%h1}, %x1; cvt.f32.f16 %o0, %h0; cvt.f32.f16 %p0, %h1;" ;;
	# the gate r = 0.5 + 0.5 tanh(0.5 p) and its use log2(a) = r k
	gate_f32) echo "mul.rn.f32 %t0, %a0, 0f3F000000; tanh.approx.f32 %t1, %t0; fma.rn.f32 %t2, %t1, 0f3F000000, 0f3F000000; mul.rn.f32 %o0, %t2, %a1;
	                mul.rn.f32 %t3, %b0, 0f3F000000; tanh.approx.f32 %t4, %t3; fma.rn.f32 %t5, %t4, 0f3F000000, 0f3F000000; mul.rn.f32 %p0, %t5, %b1;" ;;
	gate_f16x2) echo "cvt.rn.f16x2.f32 %x0, %b0, %a0; mul.rn.f16x2 %x1, %x0, %kh; tanh.approx.f16x2 %x2, %x1; fma.rn.f16x2 %x3, %x2, %kh, %kh;
	                  mov.b32 {%h0,%h1}, %x3; cvt.f32.f16 %t0, %h0; cvt.f32.f16 %t1, %h1; mul.rn.f32 %o0, %t0, %a1; mul.rn.f32 %p0, %t1, %b1;" ;;
	# dm = -2 a^2 q  (a, q fp32 in, dm fp32 out)
	dm_f32) echo "mul.rn.f32 %t0, %a0, %a0; mul.rn.f32 %t1, %t0, %a1; add.rn.f32 %o0, %t1, %t1;
	              mul.rn.f32 %t2, %b0, %b0; mul.rn.f32 %t3, %t2, %b1; add.rn.f32 %p0, %t3, %t3;" ;;
	dm_f16x2) echo "cvt.rn.f16x2.f32 %x0, %b0, %a0; cvt.rn.f16x2.f32 %x1, %b1, %a1; mul.rn.f16x2 %x2, %x0, %x0; mul.rn.f16x2 %x3, %x2, %x1; add.rn.f16x2 %x4, %x3, %x3;
	                mov.b32 {%h0,%h1}, %x4; cvt.f32.f16 %o0, %h0; cvt.f32.f16 %p0, %h1;" ;;
	# dx's own term dh m i added to an fp32 accumulator
	dxo_f32) echo "mul.rn.f32 %t0, %a0, %a1; fma.rn.f32 %o0, %t0, %a2, %a3; mul.rn.f32 %t1, %b0, %b1; fma.rn.f32 %p0, %t1, %b2, %b3;" ;;
	dxo_f16x2) echo "cvt.rn.f16x2.f32 %x0, %b0, %a0; cvt.rn.f16x2.f32 %x1, %b1, %a1; cvt.rn.f16x2.f32 %x2, %b2, %a2; mul.rn.f16x2 %x3, %x0, %x1; mul.rn.f16x2 %x4, %x3, %x2;
	                 mov.b32 {%h0,%h1}, %x4; cvt.f32.f16 %t0, %h0; cvt.f32.f16 %t1, %h1; add.rn.f32 %o0, %t0, %a3; add.rn.f32 %p0, %t1, %b3;" ;;
	# RG-LRU's adjoint chain: dlog_a = dh (a hp + i x dm), dpa = dlog_a kC r (1 - r),
	# dpx = dh m x i (1 - i), dlam's product dlog_a r kL; dpa, dpx packed to bf16 for mma,
	# dpa, dpx, dlam's product summed in fp32
	adj_f32) for e in a b; do o=$([ $e = a ] && echo o || echo p); echo "
	    mul.rn.f32 %t0, %${e}0, %${e}1; mul.rn.f32 %t1, %t0, %${e}2; mul.rn.f32 %t2, %t1, %${e}3; fma.rn.f32 %t3, %${e}4, %${e}5, %t2; mul.rn.f32 %t3, %t3, %${e}0;
	    sub.rn.f32 %t4, 0f3F800000, %${e}6; mul.rn.f32 %t5, %t3, %${e}6; mul.rn.f32 %t6, %t5, %t4; mul.rn.f32 %t6, %t6, %kc;
	    mul.rn.f32 %t7, %${e}0, %${e}7; mul.rn.f32 %t7, %t7, %${e}1; sub.rn.f32 %t8, 0f3F800000, %${e}2; mul.rn.f32 %t8, %t8, %${e}2; mul.rn.f32 %t9, %t7, %t8;
	    add.rn.f32 %s0, %s0, %t6; add.rn.f32 %s1, %s1, %t9; fma.rn.f32 %s2, %t5, %kl, %s2; mov.f32 %${o}0, %t6; mov.f32 %${o}1, %t9;"; done
	    echo "cvt.rn.bf16x2.f32 %x9, %p0, %o0; cvt.rn.bf16x2.f32 %x8, %p1, %o1; mov.b32 %o0, %x9; mov.b32 %p0, %x8;" ;;
	adj_bf16x2) echo "
	    cvt.rn.bf16x2.f32 %x0, %b0, %a0; cvt.rn.bf16x2.f32 %x1, %b1, %a1; cvt.rn.bf16x2.f32 %x2, %b2, %a2; cvt.rn.bf16x2.f32 %x3, %b3, %a3;
	    cvt.rn.bf16x2.f32 %x4, %b4, %a4; cvt.rn.bf16x2.f32 %x5, %b5, %a5; cvt.rn.bf16x2.f32 %x6, %b6, %a6; cvt.rn.bf16x2.f32 %x7, %b7, %a7;
	    mul.rn.bf16x2 %y0, %x0, %x1; mul.rn.bf16x2 %y1, %y0, %x2; mul.rn.bf16x2 %y2, %y1, %x3; fma.rn.bf16x2 %y3, %x4, %x5, %y2; mul.rn.bf16x2 %y3, %y3, %x0;
	    sub.rn.bf16x2 %y4, %kone, %x6; mul.rn.bf16x2 %y5, %y3, %x6; mul.rn.bf16x2 %y6, %y5, %y4; mul.rn.bf16x2 %y6, %y6, %kcb;
	    mul.rn.bf16x2 %y7, %x0, %x7; mul.rn.bf16x2 %y7, %y7, %x1; sub.rn.bf16x2 %y8, %kone, %x2; mul.rn.bf16x2 %y8, %y8, %x2; mul.rn.bf16x2 %y9, %y7, %y8;
	    mul.rn.bf16x2 %y5, %y5, %klb;
	    mov.b32 {%h0,%h1}, %y6; cvt.f32.bf16 %t0, %h0; cvt.f32.bf16 %t1, %h1; add.rn.f32 %s0, %s0, %t0; add.rn.f32 %s3, %s3, %t1;
	    mov.b32 {%h2,%h3}, %y9; cvt.f32.bf16 %t2, %h2; cvt.f32.bf16 %t3, %h3; add.rn.f32 %s1, %s1, %t2; add.rn.f32 %s4, %s4, %t3;
	    mov.b32 {%h4,%h5}, %y5; cvt.f32.bf16 %t4, %h4; cvt.f32.bf16 %t5, %h5; add.rn.f32 %s2, %s2, %t4; add.rn.f32 %s5, %s5, %t5;
	    mov.b32 %o0, %y6; mov.b32 %p0, %y9;" ;;
	esac
}
gen() {   # $1 body, $2 copies
	cat <<HEAD
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) {
 .reg .f32 %a<8>, %b<8>, %o<2>, %p<2>, %t<12>, %s<6>, %c<2>, %kc, %kl;
 .reg .b32 %x<10>, %y<10>, %kh, %kone, %kcb, %klb;
 .reg .b16 %h<6>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd2, %rd1;
 ld.global.v2.f32 {%kc, %kl}, [%rd2+128];
 ld.global.v4.b32 {%kh, %kone, %kcb, %klb}, [%rd2+144];
 mov.f32 %s0, 0f00000000; mov.f32 %s1, 0f00000000; mov.f32 %s2, 0f00000000;
 mov.f32 %s3, 0f00000000; mov.f32 %s4, 0f00000000; mov.f32 %s5, 0f00000000;
 mov.f32 %c0, 0f00000000; mov.f32 %c1, 0f00000000;
HEAD
	for ((i = 0; i < $2; i++)); do
		echo " ld.global.v4.f32 {%a0,%a1,%a2,%a3}, [%rd2+$((i * 64))]; ld.global.v4.f32 {%a4,%a5,%a6,%a7}, [%rd2+$((i * 64 + 16))];"
		echo " ld.global.v4.f32 {%b0,%b1,%b2,%b3}, [%rd2+$((i * 64 + 32))]; ld.global.v4.f32 {%b4,%b5,%b6,%b7}, [%rd2+$((i * 64 + 48))];"
		echo " mov.f32 %o1, %a7; mov.f32 %p1, %b7;"
		body "$1"
		echo " st.global.v2.f32 [%rd2+$((i * 64))], {%o0, %p0}; st.global.v2.f32 [%rd2+$((i * 64 + 8))], {%o1, %p1};"
		# every input stays live in every variant, so the loads cancel out
		for r in a b; do for k in 0 1 2 3 4 5 6 7; do echo " add.rn.f32 %c$([ $r = a ] && echo 0 || echo 1), %c$([ $r = a ] && echo 0 || echo 1), %$r$k;"; done; done
	done
	echo " st.global.v2.f32 [%rd2], {%s0, %s1}; st.global.v4.f32 [%rd2+16], {%s2, %s3, %s4, %s5}; st.global.v2.f32 [%rd2+32], {%c0, %c1};"
	echo " ret; }"
}
size() {
	gen "$1" "$2" >"$T/k.ptx"
	ptxas -arch=sm_90 -O3 "$T/k.ptx" -o "$T/k.cubin"
	if [ -n "${SASS_KEEP:-}" ]; then mkdir -p "$SASS_KEEP" && cp "$T/k.cubin" "$SASS_KEEP/$1.cubin"; fi
	readelf -S -W "$T/k.cubin" 2>/dev/null | awk '$2 == ".text.k" { print $6 }' | { read -r h; echo $((16#$h)); }
}
printf '%-12s %s\n' snippet "SASS instructions per element (loads/stores of the harness excluded)"
h0=$(size ref "$N")   # the harness with a body of one FADD per element
for b in tanh_f32 tanh_f16x2 ex2_f32 ex2_f16x2 gate_f32 gate_f16x2 dm_f32 dm_f16x2 dxo_f32 dxo_f16x2 adj_f32 adj_bf16x2; do
	s1=$(size "$b" "$N")
	awk -v b="$b" -v s="$s1" -v h="$h0" -v n="$N" 'BEGIN { printf "%-12s %.2f\n", b, (s - h) / 16 / (2 * n) + 1 }'
done
