#!/usr/bin/env bash
# Performance guards on the generated PTX (ctest label perf), no GPU
# needed: the shapes of the kernels' loops that the timings in
# bench/ROOFLINE.md rest on -- shared memory for two blocks per SM, sweeps
# of the gates, weight fragments held over a sweep, 16-bit maps, full-sector
# row stores, values hoisted out of loops, special functions evaluated once.
# PTX that breaks one of them still computes the right values (that is
# tests/ptxas_test.sh), only slower: each failure names the guard and the
# cost. Loop tables come from bench/ptx_loops.sh.
#   usage: ptx_structure_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
# (ctest passes the representative grid's PTX; without PTX_DIR every
# variant is generated: see tests/ptx_lib.sh)
set -u
. "$(dirname "$0")/ptx_lib.sh"
loops() { "$src/bench/ptx_loops.sh" "$(kfile "$1" "$2")" "$2"; }
coverage
# bwd_apply's shared memory (maps, staged rows, weights, dW) lets two
# blocks share an SM (228 KB less 1 KB per block): its latency needs them
shapes="1x1x64 1x37x1024 1x255x128 1x256x128 2x768x256 1x1280x512 3x1000x1024 5x4096x64 8x4096x1024 13x2048x64 33x512x64 1x8192x1024 1x131072x1024 2x65536x2048"
out=$("$recur" list --dir "$ptxdir" --plan $(for s in $shapes; do printf -- "--shape %s " "$s"; done) 2>&1)
big=$(echo "$out" | awk '/_bwd_apply / { for (i = 1; i < NF; i++) if ($i == "smem" && $(i + 1) > 115712) print }' | head -5)
[ -z "$big" ] && echo "$out" | grep -q "_bwd_apply .* smem "
guard $? smem-two-blocks "with one block per SM no second block hides bwd_apply's memory latency" \
	"every bwd_apply fits two blocks per SM (at most 113 KB of shared memory)" \
	"bwd_apply shared memory over 113 KB (or no plan lines): $big"
# RG-LRU's chunk 8 and 16 backwards take 16-bit h maps (SAMU's keep fp32:
# tests/ptxas_test.sh)
hrn=0
for f in "$ptxdir"/rglru.*_chunk8.ptx "$ptxdir"/rglru.*_chunk16.ptx; do
	[ -f "$f" ] || continue
	n=$(grep -c "cvt.rn.f16x2.f32" "$(kfile "$f" rglru_bwd_apply)")
	[ "$n" -gt 0 ] && hrn=$((hrn+1))
done
[ "$hrn" -gt 0 ]
guard $? rglru-16bit-maps "pass A keeps every step's h map for the reverse steps in shared memory: fp32 maps take twice the bytes and the traffic of 16-bit pairs" \
	"$hrn RG-LRU backwards pack 16-bit h maps" "h maps: no RG-LRU chunk 8 or 16 backward packs 16-bit ones"
# a look-back forward with projections, one group per quad and one segment
# per chunk keeps its per-step maps in fp16 for the second sweep, guarded
# by a block vote on overflow (bar.red.or; no other forward packs fp16:
# tests/ptxas_test.sh)
kbad=0 kn=0
for f in "$ptxdir"/rglru.*_prefix32_lookback_chunk8.ptx "$ptxdir"/rglru.*_prefix32_onepass_chunk8.ptx; do
	[ -f "$f" ] || continue
	for k in $(grep -o "^.visible .entry [a-z_]*_fwd_[a-z]*" "$f" | awk '{ print $3 }'); do
		kb=$(kfile "$f" "$k")
		n=$(grep -c "cvt.rn.f16x2.f32" "$kb")
		kn=$((kn+1))
		# the sweep that keeps them takes two steps per trip, each
		# projection's weight fragments (ldmatrix .trans) read once for
		# both: fewer than two per x fragment over the kernel (the
		# fallback sweep, one step at a time, reads two)
		wt=$(grep -c "ldmatrix.*trans" "$kb")
		xf=$(grep "ldmatrix" "$kb" | grep -vc "trans")
		# and that sweep holds the fragments in registers (gate_frags_hold):
		# a trip of two steps (32 mma) reads only their x fragments (8
		# ldmatrix; 16 with the weights', 24 in the one-step fallback)
		held=$(loops "$f" "$k" | awk 'NR > 1 && $4 == 32 && $10 <= 8 { n++ } END { print n + 0 }')
		{ [ "$n" -gt 0 ] && grep -q "bar.red.or" "$kb" && [ "$wt" -lt $((2 * xf)) ] && [ "$held" -gt 0 ]; } ||
			{ echo "FAIL $(basename "$f") $k: no kept fp16 maps, no overflow vote, no step pairs ($wt weight, $xf x fragment loads) or no held fragments ($held sweeps)"; kbad=$((kbad+1)); }
	done
done
[ "$kbad" -eq 0 ] && [ "$kn" -eq 2 ]
guard $? kept-forward-maps "without the kept maps the second sweep evaluates every gate again; without step pairs or held fragments each step re-reads the weights from shared memory" \
	"RG-LRU's look-back forward of prefix 32, chunk 8 (scan lookback and onepass) keeps fp16 step maps behind an overflow vote, two steps per trip, weight fragments held" \
	"kept forward maps: $kbad wrong, $kn of 2 found"
# RG-LRU's bwd_apply holds the weights' fragments in registers over its
# sweeps instead of re-reading them from shared memory at every step
# (gate_frags_hold): every loop of one step's gates (16 mma) reads only
# the step's x fragments (4 ldmatrix); at chunk 8 the reverse step (32
# mma: the gates and dx) reads only those and dproj's (4 + 8). Re-read,
# they are 12 and 28.
# And it keeps pass A's h maps as fp16 pairs (map16_pack), testing their
# range once per step and warp (a running max, one vote), the per-value
# test only where that fails: pass A's loop (16 mma) of a kernel with
# 16-bit maps (cvt.rn.f16x2) has a vote. Tested per value, it has none.
# Both from one loop table per kernel.
wbad=0 wn=0 mbad=0 mn=0
for f in "$ptxdir"/rglru.*.ptx; do
	v=$(basename "$f" .ptx); wn=$((wn+1))
	lt=$(loops "$f" rglru_bwd_apply)
	lim32=99
	case "$v" in *_chunk8) lim32=12 ;; esac
	r=$(echo "$lt" | awk -v l32="$lim32" '
		NR > 1 && $4 == 16 { g++; if ($10 > 4) bad++ }
		NR > 1 && $4 == 32 { s++; if ($10 > l32) bad++ }
		END { printf "%d %d %d", bad + 0, g + 0, s + 0 }')
	read -r wo wg ws <<< "$r"
	[ "$wo" -eq 0 ] && [ "$wg" -gt 0 ] && [ "$ws" -gt 0 ] ||
		{ echo "FAIL $v: bwd_apply re-reads weight fragments at every step ($wo loops over the limit; $wg gate sweeps, $ws reverse steps found)"; wbad=$((wbad+1)); }
	grep -q "cvt.rn.f16x2.f32" "$(kfile "$f" rglru_bwd_apply)" || continue
	mn=$((mn+1))
	nv=$(echo "$lt" | awk 'NR > 1 && $4 == 16 && $13 > 0 { n++ } END { print n + 0 }')
	[ "$nv" -gt 0 ] || { echo "FAIL $v: pass A tests its 16-bit maps' range per value (no voting gate sweep)"; mbad=$((mbad+1)); }
done
[ "$wbad" -eq 0 ] && [ "$wn" -gt 0 ]
guard $? held-weight-fragments "re-read, a gate step takes 12 ldmatrix instead of 4 (28 instead of 12 in chunk 8's reverse step): shared-memory bandwidth bwd_apply does not have" \
	"$wn RG-LRU bwd_apply kernels hold the weight fragments over their gate sweeps (and, at chunk 8, the reverse step)" \
	"held weight fragments: $wbad wrong of $wn"
# where the gates' fragments are held in registers they are halved, and
# the biases with them: the accumulators end at z / 2, so no gate's sigmoid
# multiplies by 0.5 (RG-LRU's chunk-8 backwards, every sweep held; the
# look-back and one-pass forwards over their kept-map sweep)
hn=0 hbad=0
for f in "$ptxdir"/rglru.fused_*_chunk8.ptx; do
	[ -f "$f" ] || continue
	v=$(basename "$f" .ptx)
	read -r nt nh <<< "$(python3 "$src/tests/ptx_tanh_args.py" "$(kfile "$f" rglru_bwd_apply)" rglru_bwd_apply)"
	hn=$((hn+1))
	[ "${nt:-0}" -gt 0 ] && [ "${nh:-1}" -eq 0 ] || { echo "FAIL $v: bwd_apply's $nt gate sigmoids, $nh on a multiply by 0.5"; hbad=$((hbad+1)); }
	case $v in *lookback*|*onepass*) ;; *) continue ;; esac
	read -r nt nh <<< "$(python3 "$src/tests/ptx_tanh_args.py" "$(kfile "$f" rglru_fwd_scan)" rglru_fwd_scan)"
	[ "${nt:-0}" -gt 0 ] && [ "${nh:-0}" -lt "${nt:-0}" ] || { echo "FAIL $v: fwd_scan's $nt gate sigmoids, all $nh on a multiply by 0.5"; hbad=$((hbad+1)); }
done
[ "$hbad" -eq 0 ] && [ "$hn" -gt 0 ]
guard $? gates-halved "a gate whose fragments are held pays a multiply an element for z / 2 that halved weights give for nothing (2 a slot in each gate sweep)" \
	"$hn RG-LRU chunk-8 backwards (and their look-back and one-pass forwards' kept sweeps) take z / 2 from halved fragments" \
	"halved gates: $hbad wrong of $hn"
[ "$mbad" -eq 0 ] && [ "$mn" -gt 0 ]
guard $? map16-range-vote "a range test per value costs 5 instructions per pair where the vote costs 2, in pass A's every step" \
	"$mn RG-LRU bwd_apply kernels with 16-bit maps test their range once per step (one vote), not per value" \
	"16-bit map range tests: $mbad wrong of $mn"
# the scan kernels that write y or dx store a row's 4 channels per lane as
# one 8-byte piece (4 lanes fill a 32-byte sector), never as 4-byte pairs:
# lane q holds channels 4q .. 4q+3 (ch4), the projections' columns permuted
sbad=0 sn=0
for f in $(ptx_files); do
	for k in $(grep -o "^.visible .entry [a-z_]*_\(fwd_apply\|fwd_scan\|bwd_apply\)" "$f" | awk '{ print $3 }'); do
		kb=$(kfile "$f" "$k")
		sn=$((sn+1))
		w8=$(grep -c "st.global.v2.u32" "$kb") w4=$(grep -c "st.global.u32" "$kb")
		case "$(basename "$f")/$k" in
		rglru.*_prefix64_*/rglru_bwd_apply|rglru.*_prefix128_*/rglru_bwd_apply)   # mma order: no registers for ch4
			[ "$w8" -eq 0 ] && [ "$w4" -gt 0 ] || { echo "FAIL $(basename "$f") $k: 8-byte stores without the registers"; sbad=$((sbad+1)); } ;;
		*) [ "$w8" -gt 0 ] && [ "$w4" -eq 0 ] || { echo "FAIL $(basename "$f") $k: $w8 8-byte, $w4 4-byte global stores"; sbad=$((sbad+1)); } ;;
		esac
	done
done
[ "$sbad" -eq 0 ] && [ "$sn" -eq $((2 * nvar)) ]
guard $? row-stores "4-byte pairs fill half a 32-byte sector per store: twice the write transactions of y and dx (and at prefix 64 and 128 the permuted rows would cost registers RG-LRU's backward does not have)" \
	"$sn scan kernels store y / dx in 8-byte row pieces (full sectors), but RG-LRU's backward at prefix 64 and 128 (4-byte pairs)" \
	"row stores: $sbad wrong of $sn (want $((2 * nvar)): forward and backward apply of $nvar variants)"
# values over parameters alone are computed once per lane, outside the
# loops: no lg2 in any loop of a scan kernel whose only log is of a
# parameter (RG-LRU's softplus(lam); SAMU's with shared_sfu, where the
# per-token softplus(u) is the controller's); and every bf16 pair is
# packed by one cvt.rn.bf16x2.f32
hbad=0 hn=0
for f in "$ptxdir"/rglru.*.ptx "$ptxdir"/samu.*shared_sfu*.ptx; do
	[ -f "$f" ] || continue
	for k in $(grep -o "^.visible .entry [a-z_]*" "$f" | awk '{ print $3 }' | grep -E "_(fwd_scan|fwd_apply|fwd_reduce|bwd_reduce|bwd_apply)$"); do
		hn=$((hn+1))
		# (SAMU's one-pass bwd_apply evaluates the token stage of its previous
		# group in its trip loop: softplus(u) of C / 8 tokens per lane and
		# copy of the tail, in the two copies of an outer loop)
		lim=0
		case "$f:$k" in *samu.*_onepass_chunk*:samu_bwd_apply) c=${f##*_chunk}; lim=$((2 * ${c%.ptx} / 8)) ;; esac
		l=$(loops "$f" "$k" | awk -v lim="$lim" 'NR > 1 && $9 > lim { n++ } END { print n + 0 }')
		[ "$l" -eq 0 ] || { echo "FAIL $(basename "$f") $k: lg2 inside $l loop(s): a parameter-only value is not hoisted"; hbad=$((hbad+1)); }
	done
done
single=$(grep -l "cvt.rn.bf16.f32" $(ptx_files) | wc -l)
[ "$hbad" -eq 0 ] && [ "$hn" -gt 0 ] && [ "$single" -eq 0 ]
guard $? hoisting "a parameter-only log in a loop is a special function per element per step that one per lane does; single bf16 converts double the pack instructions" \
	"no lg2 in the loops of $hn scan kernels (parameter-only values hoisted); bf16 packed in pairs everywhere" \
	"hoisting or packing: $hbad of $hn kernels with lg2 in a loop; $single PTX files with single bf16 converts"
# a special function of one value is evaluated once per kernel site: no
# kernel computes tanh.approx twice of the same register (a step's gates and
# their adjoints share them), and the backward's reverse step (the innermost
# bwd_apply loop with the adjoint's rsqrt) takes one ex2 per element, a's:
# a^2 = exp(2 log_a) is a's square (SAMU without shared_sfu also evaluates
# the controller's softplus per element by design: not counted)
# (one pass over every kernel's text: per kernel, the inputs of tanh.approx
# that occur more than once)
tdup=$(awk 'FNR == 1 { if (f != "") print f, nd + 0; f = FILENAME; split("", seen); nd = 0 }
	{ s = $0; while (match(s, /tanh.approx.f32 %f[0-9]*, %f[0-9]*/)) {
		split(substr(s, RSTART, RLENGTH), a, " "); s = substr(s, RSTART + RLENGTH)
		if (seen[a[3]]++ == 1) nd++ } }
	END { if (f != "") print f, nd + 0 }' "$work"/kernels/*/*.ptx)
dbad=0 dn=0
while read -r kf d; do
	[ -n "$kf" ] || continue
	dn=$((dn+1))
	k=${kf##*/}; k=${k%.ptx}; v=${kf%/*}; v=${v##*/}
	[ "$d" -eq 0 ] || { echo "FAIL $v.ptx $k: $d tanh.approx inputs evaluated twice"; dbad=$((dbad+1)); }
	case "$v.ptx:$k" in rglru.*_bwd_apply | samu.*shared_sfu*_bwd_apply)
		er=$("$src/bench/ptx_loops.sh" "$kf" "$k" | awk 'NR > 1 && $8 > 0 && (best == "" || $3 < best) { best = $3; e = $5; r = $8 } END { print e + 0, r + 0 }')
		set -- $er
		{ [ "$2" -gt 0 ] && [ "$1" -eq "$2" ]; } ||
			{ echo "FAIL $v.ptx $k: reverse step has $1 ex2 for $2 rsqrt (one each per element)"; dbad=$((dbad+1)); } ;;
	esac
done <<< "$tdup"
nk=$(grep -c "^.visible .entry " $(ptx_files) | awk -F: '{ n += $NF } END { print n + 0 }')
[ "$dn" -eq "$nk" ] || { echo "FAIL $dn kernel texts for the $nk .entry lines of the PTX"; dbad=$((dbad+1)); }
[ "$dbad" -eq 0 ] && [ "$dn" -gt 0 ]
guard $? special-functions-once "special functions are a large share of the scans' issued instructions (bench/ROOFLINE.md): a duplicate costs every element of every step" \
	"$dn kernels: no tanh.approx of one value twice; one ex2 per element in every bwd_apply reverse step" \
	"special functions evaluated twice: $dbad of $dn kernels"
# RG-LRU's bwd_apply at chunk 8 sweeps the gates forward once per group
# (pass A) and not again before a segment's reverse steps: pass A's maps of
# every step, as 16-bit pairs, give h before each step. The loops that
# evaluate gates without the adjoint (mma and ex2, no rsqrt): one per copy
# of the group's code (inside the sequence, at its end)
sbad=0 sn=0
for f in "$ptxdir"/rglru.*_chunk8.ptx; do
	[ -f "$f" ] || continue
	sn=$((sn+1))
	n=$(loops "$f" rglru_bwd_apply | awk 'NR > 1 && $4 > 0 && $5 > 0 && $8 == 0 { n++ } END { print n + 0 }')
	[ "$n" -eq 2 ] || { echo "FAIL $(basename "$f") rglru_bwd_apply: $n forward gate sweeps (pass A in each of 2 copies expected)"; sbad=$((sbad+1)); }
done
[ "$sbad" -eq 0 ] && [ "$sn" -gt 0 ]
guard $? chunk8-pass-a-only "each further forward sweep of the gates costs bwd_apply a projection and the gates' special functions per element" \
	"$sn RG-LRU chunk-8 bwd_apply kernels sweep the gates forward in pass A only (h from 16-bit maps)" \
	"gate sweeps besides pass A: $sbad of $sn kernels"
finish
