#!/usr/bin/env bash
# Correctness of the generated PTX and manifest, no GPU needed: ptxas
# accepts every module for sm_90 with no spill stores and no stack frame (a
# stack frame means a per-thread array or spill went to local memory), the
# manifest loads and plans every launch, and the synchronisation and
# precision each kernel's design relies on is in its PTX. The checks that
# guard performance (sweeps, fragments per step, store widths, hoisting)
# are tests/ptx_structure_test.sh.
#   usage: ptxas_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR [PTX_DIR]
# (ctest passes the representative grid's PTX; without PTX_DIR every
# variant is generated: see tests/ptx_lib.sh)
set -u
. "$(dirname "$0")/ptx_lib.sh"
find_ptxas
coverage
# the manifest loads (every launch's arguments name a parameter, tensor or
# workspace of its variant, every expression parses) and every variant is
# legal at the seed's shapes
out=$("$recur" list --dir "$ptxdir" --shape 1x8192x1024 --shape 1x131072x1024 --shape 3x1000x1024 2>&1) &&
	[ "$(echo "$out" | grep -c ':legal.*:legal.*:legal')" = "$nvar" ]
guard $? manifest "a manifest the runtime cannot load, or a variant refusing the seed's shapes, leaves those shapes without kernels" \
	"manifest loads; every variant legal at 1x8192x1024, 1x131072x1024, 3x1000x1024" \
	"manifest or shapes: $(echo "$out" | head -20)"
# every launch plans (grid in range, cluster dividing grid x) at lengths
# around the tile sizes and batches around bwd_apply's cdiv(32, B); RG-LRU's
# bwd_apply runs in clusters of 2 where a head has 2 or more blocks, and
# alone where it has one
shapes="1x1x64 1x37x1024 1x255x128 1x256x128 2x768x256 1x1280x512 3x1000x1024 5x4096x64 8x4096x1024 13x2048x64 33x512x64 1x8192x1024 1x131072x1024 2x65536x2048"
out=$("$recur" list --dir "$ptxdir" --plan $(for s in $shapes; do printf -- "--shape %s " "$s"; done) 2>&1) &&
	! echo "$out" | grep -q "PLAN ERROR" &&
	[ "$(echo "$out" | grep -c "1x131072x1024 backward\[[0-9]\] rglru_bwd_apply .* cluster 2$")" = "$(ls "$ptxdir"/rglru.*.ptx | wc -l)" ] &&
	[ "$(echo "$out" | grep "1x1x64 backward\[[0-9]\] rglru_bwd_apply" | grep -c cluster)" = 0 ] &&
	! echo "$out" | grep "samu_bwd_apply" | grep -q cluster
guard $? plans "a launch out of the device's limits, or a cluster not dividing its grid, fails at run time" \
	"every launch plans at $(echo $shapes | wc -w) shapes; RG-LRU bwd_apply in clusters of 2 at 1x131072x1024, alone at 1x1x64" \
	"launch plans: $({ echo "$out" | grep "PLAN ERROR"; echo "$out" | grep "rglru_bwd_apply"; } | head -20)"
# a one-pass bwd_apply's blocks wait on each other: at most 16 per head
# (its look-back window) and, where more than one, at most 256 in all,
# what the H200 holds at once; the manifest marks the launch resident
bad=$(echo "$out" | awk '/^[a-z]/ { v = $2 } v ~ /_onepass_/ && / backward\[[0-9]\] [a-z]+_bwd_apply / {
	split($5, g, "x"); n++
	if (g[1] > 16 || (g[1] > 1 && g[1] * g[2] * g[3] > 256)) { print v, $1, $5; b++ } }
	END { if (!n) print "no one-pass bwd_apply launch planned" }')
nres=$(grep -o '"resident": *true' "$ptxdir/manifest.json" | wc -l)
[ -z "$bad" ] && [ "$nres" -eq "$(ls "$ptxdir"/*_onepass_*.ptx | wc -l)" ]
guard $? onepass-residency "blocks that wait on each other deadlock when the device cannot hold them all at once" \
	"one-pass bwd_apply grids within 16 blocks per head and 256 in all at $(echo $shapes | wc -w) shapes; $nres launches marked resident" \
	"one-pass bwd_apply grids ($nres launches marked resident): $(echo "$bad" | head -10)"
# param_reduce launches the blocks that have work: per parameter a weight's
# cdiv(64 D, 256), a channel vector's cdiv(D, 256), a scalar's one --
# RG-LRU (2 weights, 3 channel vectors) 2*256+3*4 = 524 at D = 1024 and
# 2*16+3 = 35 at D = 64; SAMU (3 channel vectors, 4 scalars) 3*4+4 = 16 and 7
pr=$(echo "$out" | awk -v want_n=$((2 * nvar)) '/ backward\[[0-9]\] [a-z]+_param_reduce / {
	want = ""
	if ($1 == "1x8192x1024") want = ($3 ~ /^rglru/) ? "524x1x1" : "16x1x1"
	if ($1 == "1x1x64") want = ($3 ~ /^rglru/) ? "35x1x1" : "7x1x1"
	if (want == "") next
	n++; if ($5 != want) { print $1, $3, $5, "want", want; b++ } }
	END { if (n != want_n) print "param_reduce plans at 1x8192x1024 and 1x1x64:", n, "of", want_n }')
[ -z "$pr" ]
guard $? param-reduce-grid "too few blocks leave parameter gradients unsummed; more launch blocks with nothing to do" \
	"param_reduce grids hold only working blocks (RG-LRU 524 and SAMU 16 at D = 1024; 35 and 7 at D = 64)" \
	"param_reduce grids: $(echo "$pr" | head -5)"
# SAMU's forward starts with tok_fwd, which uses none of the zeroed
# workspaces: it clears them itself, in place of the runtime's memset (the
# manifest's "clears", which the runtime accepts on the forward's first
# launch alone: recur list above loaded it); RG-LRU's scans use them at once
ncl=$(grep -o '"clears": *true' "$ptxdir/manifest.json" | wc -l)
nsamu=$(ls "$ptxdir"/samu.*.ptx | wc -l)
nzarg=$(grep -c '"zero:base"' "$ptxdir/manifest.json")
[ "$ncl" -eq "$nsamu" ] && [ "$nzarg" -eq "$nsamu" ] && [ "$nsamu" -gt 0 ]
guard $? workspace-clears "a workspace left uncleared carries the last run's flags and sums into the next" \
	"every SAMU forward's tok_fwd clears the zeroed workspaces ($ncl of $nsamu variants; no RG-LRU one)" \
	"launches that clear: $ncl \"clears\", $nzarg zero:base args, $nsamu SAMU variants"
# every kernel a plan launches is an .entry of its variant's PTX
missing=0
for f in $(ptx_files); do
	vname=$(basename "$f" .ptx); vname=${vname#*.}
	kernels=$(awk -v p="\"$(basename "$f")\"," '/"ptx":/ { cur = ($2 == p) } cur && /"kernel":/ { gsub(/[",]/, "", $2); print $2 }' "$ptxdir/manifest.json" | sort -u)
	[ -n "$kernels" ] || { echo "FAIL $vname: no launches found for $(basename "$f") in the manifest"; missing=$((missing+1)); }
	for k in $kernels; do
		grep -q "^.visible .entry $k(" "$f" || { echo "FAIL $vname: plan launches $k, not an .entry of $(basename "$f")"; missing=$((missing+1)); }
	done
done
[ $missing -eq 0 ]
guard $? entries "the runtime cannot load a kernel its plan launches" \
	"every launched kernel is an .entry of its variant's PTX" "$missing launched kernels missing"
# per-token sigmoid/tanh are computed to ~1e-7, not with tanh.approx
# (sums over tokens cancel); per element the one-op approximation stays
tokbad=0 tokn=0
for f in "$ptxdir"/samu.*.ptx; do
	ks="samu_tok_fwd samu_tok_bwd"
	case "$f" in
	*_onepass_*)
		# the one-pass backward finishes the token stage itself (tok_tail.c):
		# no token pass after it; its bwd_apply publishes its token partials
		# as 4-byte look-back words and reads the heads' in 16-byte words,
		# more than the 8 of the maps' look-back (2 copies of the group code
		# x 2 window entries x A, B)
		ks=samu_tok_fwd
		kb=$(kfile "$f" samu_bwd_apply)
		tpub=$(grep -c "st.volatile.global.u32" "$kb"); tld=$(grep -c "ld.volatile.global.v4.u32" "$kb")
		if grep -q "^.visible .entry samu_tok_\(bwd\|dx\)(" "$f" || [ "$tpub" -lt 1 ] || [ "$tld" -lt 16 ]; then
			echo "FAIL $(basename "$f"): a token pass after the one-pass backward, or no look-back words of the token partials ($tpub stores, $tld 16-byte loads)"; tokbad=$((tokbad+1))
		fi ;;
	esac
	for k in $ks; do
		kb=$(kfile "$f" "$k"); tokn=$((tokn+1))
		{ [ -s "$kb" ] && ! grep -q "tanh.approx" "$kb"; } || { echo "FAIL $(basename "$f") $k: tanh.approx in a per-token kernel (or no such kernel)"; tokbad=$((tokbad+1)); }
	done
done
r=$(grep -c "tanh.approx" "$(kfile "$ptxdir/rglru.fused_grouped_prefix32_hierarchical_chunk8.ptx" rglru_fwd_reduce)")
[ "$tokbad" -eq 0 ] && [ "$tokn" -gt 0 ] && [ "$r" -gt 0 ]
guard $? token-precision "sums over tokens cancel, so tanh.approx's error in a token value can exceed the gradients' 1e-2 tolerance; a token pass after a one-pass backward would add its partials twice" \
	"no tanh.approx in the $tokn per-token kernels; RG-LRU's per-element gates use it ($r in fwd_reduce)" \
	"per-token precision: $tokbad of $tokn token kernels use tanh.approx; rglru fwd_reduce has $r"
# the single-pass forward: one kernel takes a ticket and spins on its
# predecessors' words; its plan has no reduce or carry kernel in the
# forward, and the hierarchical plans take no ticket
lbbad=0 lbn=0
for f in $(ptx_files); do
	v=$(basename "$f" .ptx); m=${v%%.*}
	case "$v" in
	*_lookback_* | *_onepass_*)
		lbn=$((lbn+1))
		kb=$(kfile "$f" "${m}_fwd_scan")
		{ grep -q "atom.global.add.u32" "$kb" && grep -q "ld.volatile.global" "$kb" &&
		  ! grep -q "^.visible .entry ${m}_fwd_reduce(" "$f" && ! grep -q "^.visible .entry ${m}_fwd_carry(" "$f"; } ||
			{ echo "FAIL $v: no ticketed fwd_scan, or a reduce/carry kernel in the forward"; lbbad=$((lbbad+1)); } ;;
	*)
		for k in $(grep -o "^.visible .entry ${m}_fwd_[a-z_]*" "$f" | awk '{ print $3 }'); do
			! grep -q "atom.global" "$(kfile "$f" "$k")" || { echo "FAIL $v: a hierarchical forward takes a ticket ($k)"; lbbad=$((lbbad+1)); }
		done ;;
	esac
done
[ "$lbbad" -eq 0 ] && [ "$lbn" -gt 0 ]
guard $? lookback-forward "the ticket orders tiles by start, so a tile only waits on tiles already running; without it look-back tiles can wait on tiles not yet scheduled (a hang)" \
	"$lbn look-back variants: one ticketed fwd_scan, no reduce or carry; hierarchical forwards take no ticket" \
	"look-back plans: $lbbad wrong of $lbn"
# RG-LRU's bwd_apply pairs clusters on one weight-gradient slot: an arrival
# count, a block-wide vote on who came second, the second's wait on the
# flag and the first's fence before raising it; SAMU (no block-diagonal
# weights) has none of it (a single-pass backward's look-back words are
# 16-byte accesses, checked below)
pbad=0 pn=0
for f in $(ptx_files); do
	v=$(basename "$f" .ptx); m=${v%%.*}; pn=$((pn+1))
	kb=$(kfile "$f" "${m}_bwd_apply")
	n=0
	pats="atom.global.add.u32 bar.red.or.pred ld.volatile.global.u32 membar.gl st.volatile.global.u32"
	# (a one-pass SAMU backward's 4-byte look-back words are its token partials)
	case "$m:$v" in samu:*_onepass_*) pats="atom.global.add.u32 bar.red.or.pred membar.gl" ;; esac
	for pat in $pats; do
		grep -q "$pat" "$kb" && n=$((n+1))
	done
	case "$m" in
	rglru) [ "$n" -eq 5 ] || { echo "FAIL $v: bwd_apply lacks the pair step ($n of 5 parts)"; pbad=$((pbad+1)); } ;;
	*) [ "$n" -eq 0 ] || { echo "FAIL $v: bwd_apply has $n parts of a pair step it has no use for"; pbad=$((pbad+1)); } ;;
	esac
done
[ "$pbad" -eq 0 ] && [ "$pn" -gt 0 ]
guard $? pair-step "without the count, vote, wait and fence, two clusters add into one weight-gradient slot in a race" \
	"$pn bwd_apply kernels: RG-LRU's pair their clusters' weight slots, SAMU's do not" "pair step: $pbad wrong of $pn"
# the single-pass backward: bwd_apply publishes its groups' maps and spins
# on the other blocks' (volatile loads in a loop of their own), a lane's
# four words of a map in one 16-byte access each way (lb_lane_words), and
# the backward has no reduce or carry kernel; every other backward has
# both and no spin
obad=0 on=0
for f in $(ptx_files); do
	v=$(basename "$f" .ptx); m=${v%%.*}
	red=0
	grep -q "^.visible .entry ${m}_bwd_reduce(" "$f" && grep -q "^.visible .entry ${m}_bwd_carry(" "$f" && red=1
	# (per copy of the group's code: 2 window entries x 2 words of a map per
	# lane in flight; the pair step's flag is one 4-byte load)
	kb=$(kfile "$f" "${m}_bwd_apply")
	spin=$(grep -c "ld.volatile.global.v4.u32" "$kb")
	pub=$(grep -c "st.volatile.global.v4.u32" "$kb")
	word=$(grep -c "ld.volatile.global.u32" "$kb")
	case "$v" in
	*_onepass_*) on=$((on+1)); [ "$red" -eq 0 ] && [ "$spin" -ge 4 ] && [ "$pub" -ge 2 ] && [ "$word" -le 1 ] ||
		{ echo "FAIL $v: single-pass backward with reduce/carry ($red), or without its 16-byte spin ($spin loads, $pub stores, $word 4-byte loads)"; obad=$((obad+1)); } ;;
	*) [ "$red" -eq 1 ] && [ "$spin" -eq 0 ] && [ "$pub" -eq 0 ] && [ "$word" -le 1 ] ||
		{ echo "FAIL $v: hierarchical backward without reduce/carry or with a look-back spin"; obad=$((obad+1)); } ;;
	esac
done
[ "$obad" -eq 0 ] && [ "$on" -gt 0 ]
guard $? onepass-backward "a map read in pieces can mix two publications (a torn map); a backward without its carry path is wrong across tiles" \
	"$on single-pass backwards: bwd_apply alone, spinning on published maps in 16-byte words; every other backward reduces and carries" \
	"single-pass backward: $obad wrong ($on found)"
# a mixer with a token stage keeps fp32 h maps in its backward: 16-bit
# ones cost SAMU's chunk 16 the 1e-2 tolerance on dbu (RG-LRU's chunk 8
# and 16 backwards do take them: tests/ptx_structure_test.sh)
mbad=0 msn=0
for f in "$ptxdir"/samu.*.ptx; do
	v=$(basename "$f" .ptx); msn=$((msn+1))
	n=$(grep -c "cvt.rn.f16x2.f32" "$(kfile "$f" samu_bwd_apply)")
	[ "$n" -eq 0 ] || { echo "FAIL $v: bwd_apply packs 16-bit h maps ($n)"; mbad=$((mbad+1)); }
done
[ "$mbad" -eq 0 ] && [ "$msn" -gt 0 ]
guard $? samu-fp32-maps "16-bit h maps cost SAMU's chunk 16 the 1e-2 tolerance on dbu" \
	"SAMU's $msn backwards keep fp32 h maps" "h maps: $mbad SAMU backwards with 16-bit maps"
# fp16 step maps in a forward only where the plan keeps them (RG-LRU's
# look-back forward of prefix 32, chunk 8), and there guarded by a block
# vote on overflow (bar.red.or); no other forward packs fp16
kbad=0
for f in $(ptx_files); do
	for k in $(grep -o "^.visible .entry [a-z_]*_fwd_[a-z]*" "$f" | awk '{ print $3 }'); do
		kb=$(kfile "$f" "$k")
		n=$(grep -c "cvt.rn.f16x2.f32" "$kb")
		case "$(basename "$f")" in
		rglru.*_prefix32_lookback_chunk8.ptx | rglru.*_prefix32_onepass_chunk8.ptx)
			[ "$n" -eq 0 ] || grep -q "bar.red.or" "$kb" ||
				{ echo "FAIL $(basename "$f") $k: fp16 maps without the overflow vote"; kbad=$((kbad+1)); } ;;
		*) [ "$n" -eq 0 ] || { echo "FAIL $(basename "$f") $k: fp16 maps where the plan keeps none"; kbad=$((kbad+1)); } ;;
		esac
	done
done
[ "$kbad" -eq 0 ]
guard $? fp16-forward-maps "an fp16 map overflows past 6.5e4: without the vote's fp32 fallback the forward writes Inf" \
	"fp16 forward maps only in RG-LRU's look-back forward of prefix 32, chunk 8, behind an overflow vote" \
	"fp16 forward maps: $kbad kernels wrong"
# ptxas on every core (or from the cache), then the reports in order
if [ -z "$ptxas" ]; then
	echo "SKIP: ptxas not found (PTXAS=${PTXAS:-}; set PTXAS or install CUDA under /usr/local/cuda): the $nvar modules were not compiled; the $pass other checks passed, $fail failed"
	[ "$fail" -eq 0 ] && exit 77
	exit 1
fi
mkdir -p "$work/ptxas"
ptxas_all "$work/ptxas"
for f in $(ptx_files); do
	v=$(basename "$f" .ptx)
	if [ "$(cat "$work/ptxas/$v.rc" 2>/dev/null)" != 0 ]; then
		echo "FAIL [ptxas] $v: ptxas rejected it"; sed 's/^/    /' "$work/ptxas/$v.log" | head -20
		echo "     why it matters: the driver's JIT refuses the module: none of its kernels can run"
		fail=$((fail+1)); continue
	fi
	# one line per kernel: name, registers, stack, spills
	report=$(ptxas_kernels "$work/ptxas/$v.log")
	bad=$(echo "$report" | awk '$3 != "stack=0" || $4 != "spill_stores=0"')
	if [ -n "$bad" ] || [ -z "$report" ]; then
		echo "FAIL [ptxas-spills] $v"; echo "$report" | sed 's/^/    /'
		echo "     why it matters: a stack frame or spill puts per-thread state in local memory, off the kernel's design (and no report is no evidence)"
		fail=$((fail+1))
	else
		echo "ok   [ptxas] $v: $(echo "$report" | awk '{ split($2, r, "="); printf "%s:%s ", $1, r[2] }')"; pass=$((pass+1))
	fi
done
finish
