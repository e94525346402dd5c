#!/usr/bin/env bash
# The GPU suite in one device call, nothing built there: it runs the recur
# binary and PTX built here and carried in .carry/ (recur, ptx.tar.xz holding
# ptx/; the golden cases are the tree's tests/goldens). Every mode first compiles all variants' PTX into the
# driver's JIT cache, many at once (bench/jit_warm.sh; NOWARM=1 skips it).
#
# Where the files go: under $DEST (default $OUT if set, else the repository
# root), in the repository's layout:
#   $DEST/bench/results/                  the canonical results (modes results,
#                                         verify, all, others), on an H200 only:
#                                         on another GPU they go to the
#                                         experiment folder; modes decode and
#                                         heads copy their tables there
#                                         (decode_h200.json, decode_t16_h200.json,
#                                         decode_k256_h200.json, heads_h200.json,
#                                         calibration_heads_h200.json), on an
#                                         H200 only
#   $DEST/bench/experiments/DATE-SLUG/    one experiment's files (modes quick,
#                                         ab, ncu, sass and the rest); DATE is
#                                         today (UTC), SLUG is $EXP_SLUG
#                                         (default: the mode)
# Run from the repository root with OUT unset and the files land where they
# are committed; with OUT set, copy $OUT/bench over the tree afterwards.
#   usage: bench/h200_suite.sh results   calibrate every variant at the seed's
#                                        shapes, bench (the protocol), compare
#          bench/h200_suite.sh verify    goldens, then every variant at the
#                                        seed's shapes, B=3 L=1000, D=512 and 2048, B=8,
#                                        and the cluster edge shapes
#          bench/h200_suite.sh all       both
#          bench/h200_suite.sh others    $RGLRU_V and $SAMU_V (the L=131072 winners)
#                                        at 8x16384x1024 and 1x65536x4096, and
#                                        the look-back and one-pass variants verified at
#                                        16x2048x1024, 1x262144x1024, 2x65536x2048
#          bench/h200_suite.sh ncu       Nsight Compute (--set full) of the kernels
#                                        matching $NCU_KERNELS (a regex) for each
#                                        MIXER/VARIANT in $VARIANTS at $NCU_SHAPE
#                                        (default 1x32768x1024); a decode step
#                                        with NCU_STEP=T (bench --step T)
#          bench/h200_suite.sh sass      Nsight Compute's source counters of the
#                                        same kernels: every SASS instruction with
#                                        its executed count and stall samples, as
#                                        CSV (sass_MIXER.csv.xz), for
#                                        bench/sass_mix.py
#          bench/h200_suite.sh ab        bench --profile of each MIXER/VARIANT in
#                                        $VARIANTS at $AB_SHAPES (default
#                                        1x131072x1024) with each carried PTX set
#                                        in $AB_SETS (default "ptx_old ptx"), the
#                                        sets alternated $AB_REPEAT times (default 2)
#          bench/h200_suite.sh targets   every variant of each carried set in
#                                        $TARGET_SETS (default "ptx80 ptx86 ptx89":
#                                        recur gen --sm sm_80 / sm_86 / sm_89) at
#                                        1x8192x1024 and 3x1000x1024, through the
#                                        driver's JIT, gradients bitwise repeated;
#                                        then the set "multi" (--sm sm_80,sm_90)
#                                        at 3x1000x1024, each row naming its module
#          bench/h200_suite.sh docs      the carried set "docs" (recur gen
#                                        lua/variants/docs.lua): packed documents
#                                        as cu_seqlens (--packed --docs 1000, 64
#                                        with --h0, 3, 8 in 16384 tokens), then
#                                        the reset/h0 form
#                                        and plainly; then 64 documents in
#                                        131072 tokens timed as cu_seqlens (with
#                                        final states, then --no-final), as
#                                        marks, beside the resets variant (set
#                                        state) and the plain winner (set ptx)
#          bench/h200_suite.sh state     the carried set "state" (recur gen
#                                        lua/variants/state.lua) at 3x1000x1024,
#                                        1x8192x1024, 2x777x2048 and 4x300x512:
#                                        with reset marks (--resets 0.01), with
#                                        h0/hT/dhT/dh0 (--h0), with both, and
#                                        every variant plainly at 1x8192x1024,
#                                        packed documents (--docs 1000, 64);
#                                        then the speed runs (STATE_PARTS=verify
#                                        or bench, STATE_SHAPES: one call each)
#          bench/h200_suite.sh decode    the carried sets "decode" (recur gen
#                                        lua/variants/decode.lua) and "heads"
#                                        (tests/grids/decode_heads.lua: K = 16,
#                                        128, 176, 256): verify by steps (T = 1
#                                        and 16; the 1000-step check at
#                                        2x1000x1024), then bench --step 1 at
#                                        1x1024x1024, 256x1024x4096 and
#                                        RecurrentGemma's widths (DECODE_PARTS=
#                                        verify or bench: one call each)
#          bench/h200_suite.sh heads     the carried sets apartK (APART_K=K recur gen
#                                        tests/grids/apart.lua, K in $APART_KS,
#                                        default 64 256 128 176 16; K_90a: the
#                                        set made with --sm sm_90a): verify at
#                                        widths K divides; then the set rg (recur
#                                        gen lua/variants/recurrentgemma.lua)
#                                        verified at 2x1000x2560 and 1x1500x4096,
#                                        its recompute variants against their
#                                        twins (tests/python/gpu_twins_test.py,
#                                        where librecur.so is carried),
#                                        calibrated and timed at RecurrentGemma
#                                        2B's and 9B's layers, beside the same
#                                        math in PyTorch (HEADS_PARTS=verify,
#                                        bench, or torch: the PyTorch rows alone
#                                        at every layer shape, with the committed
#                                        calibration; HEADS_RG=rg90a: the set made
#                                        with --sm sm_90a, wgmma projections;
#                                        the set apartmarks, where carried:
#                                        tests/grids/apart_marks.lua verified
#                                        with documents and with reset marks)
#          bench/h200_suite.sh scanproj  the forward's projections inside fwd_scan
#                                        (scan_proj): the carried sets spK
#                                        (SCANPROJ_K=K recur gen tests/grids/scanproj.lua
#                                        --sm sm_90a, K in $SCANPROJ_KS, default
#                                        256 128) verified at widths K divides,
#                                        the states variant with marks and h0,
#                                        tests/python/gpu_twins_test.py (each
#                                        against its twin bit for bit, where
#                                        .carry/lib/librecur.so is carried); then
#                                        sp256's one-pass chunk-8 twin,
#                                        scan_proj variant and its persistent
#                                        form (proj_ahead) timed alternately
#                                        ($SCANPROJ_REPEAT, default 2) at
#                                        $SCANPROJ_SHAPES (RecurrentGemma's layers)
#          bench/h200_suite.sh sanitize  compute-sanitizer (memcheck, racecheck,
#                                        synccheck, initcheck; $TOOLS_LIST) over
#                                        every variant (tests/gpu_sanitize.sh)
#          bench/h200_suite.sh torch     the PyTorch package's GPU suite
#                                        (tests/python/gpu_torch_test.py), one
#                                        layer timed alone at 1x8192x1024, and
#                                        examples/train_lm.py --compare
#                                        ($TRAIN_STEPS, default 300 steps); needs
#                                        .carry/lib/librecur.so (and the shared
#                                        libraries it needs: bench/README.md)
#          bench/h200_suite.sh quick     goldens, 1x8192x1024 and 3x1000x1024 for
#                                        every variant, then bench --profile at
#                                        1x131072x1024 for each MIXER/VARIANT named
#                                        in $VARIANTS (space-separated)
set -u
BIN=${RECUR_BIN:-.carry/recur}
mode=${1:-all}
DEST=${DEST:-${OUT:-.}}
if [ "$DEST" = . ]; then pre=""; else pre="${DEST%/}/"; fi
RES="${pre}bench/results"
EXP="${pre}bench/experiments/$(date -u +%Y-%m-%d)-${EXP_SLUG:-$mode}"
# bench/results/ holds the H200's numbers alone: on another card the modes
# that write there write into the experiment folder instead, and decode and
# heads promote their tables to bench/results/ only on an H200
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$GPU_NAME" in
	*H200*) H200=1 ;;
	*) H200=""
	   case "$mode" in results|verify|all|others)
		echo "$mode: the GPU is ${GPU_NAME:-unknown}, not an H200: the results go to $EXP, not $RES"
		RES=$EXP ;;
	   esac ;;
esac
# a table of this run over its canonical name in bench/results/, on an H200 alone
promote() {   # FILE NAME
	if [ -n "$H200" ] && [ -f "$1" ]; then
		mkdir -p "$RES" && cp "$1" "$RES/$2" && echo "promoted $(basename "$1") to $RES/$2"
	else
		echo "not promoted to $RES/$2: ${GPU_NAME:-an unknown GPU} is not an H200, or $(basename "$1") is missing"
	fi
}
# DIR's variants that have a twin (scan_proj, recompute) against it bit for bit, into LOG
# (tests/python/gpu_twins_test.py), where the shared runtime is carried
twins_test() {   # DIR LOG
	local lib=${RECUR_LIB:-$PWD/.carry/lib/librecur.so}
	[ -f "$lib" ] || { echo "twins: no $lib: $(basename "$1")'s twins not checked"; return 0; }
	RECUR_LIB=$lib LD_LIBRARY_PATH=$(dirname "$lib") PYTHONDONTWRITEBYTECODE=1 \
		python3 tests/python/gpu_twins_test.py "$1" > "$2" 2>&1 || rc=1
	tail -1 "$2"
	wrote="$wrote $2"
}
# one RecurrentGemma layer through recur's PyTorch module against the same math in
# PyTorch (cuBLAS batched projections, the chunked matrix scan of examples/train_lm.py,
# eager and through torch.compile), forward+backward at each shape of SHAPES, recur's
# variant chosen by the calibration CAL, into $EXP/layer_heads*
heads_torch() {   # CAL SHAPES
	local lib=${RECUR_LIB:-$PWD/.carry/lib/librecur.so} sh
	if [ ! -f "$lib" ] || [ ! -d "$PTXROOT/$RGSET" ] || [ ! -f "$1" ]; then
		echo "heads: no PyTorch rows: $lib, the set $RGSET or the calibration $1 is missing"; rc=1; return 0
	fi
	for sh in $2; do
		RECUR_LIB=$lib LD_LIBRARY_PATH=$(dirname "$lib") PYTHONDONTWRITEBYTECODE=1 \
			python3 examples/train_lm.py --kernels "$PTXROOT/$RGSET" --calibration "$1" \
			--compare --bench-layer "$sh" --head 256 --out "$EXP/layer_heads" >> "$EXP/layer_heads.log" 2>&1 || rc=1
	done
	grep "^layer" "$EXP/layer_heads.log"
}
case "$mode" in
	results|verify|all|others) mkdir -p "$RES"; W=$RES ;;
	*) mkdir -p "$EXP"; W=$EXP ;;
esac
# scratch files (the JSON of profiled runs, Nsight Compute's reports), removed at exit
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
# the carried PTX sets, unpacked once into .carry/unpacked (PTXSET: which set, default ptx)
PTXROOT=${PTXROOT:-.carry/unpacked}
mkdir -p "$PTXROOT"
if [ ! -d "$PTXROOT/${PTXSET:-ptx}" ] || [ .carry/ptx.tar.xz -nt "$PTXROOT/.unpacked" ]; then
	tar xJf .carry/ptx.tar.xz -C "$PTXROOT" && touch "$PTXROOT/.unpacked"
fi
D=$PTXROOT/${PTXSET:-ptx}
SEED="1x8192x1024,1x32768x1024,1x65536x1024,1x131072x1024"
# RG-LRU's bwd_apply with fewer blocks than tiles, so that its clusters of 2
# divide them: 3 tiles at prefix 32 chunk 8 (G = 2) and 5 (G = 4, block 0
# takes tiles 0 and 4)
CLUSTER_SHAPES="--shape 2x768x256 --shape 1x1280x512"
# (at most 8 files under $OUT come back from the machine: with more, the
# end of this script packs them into $OUT/suite.tar.xz)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$W/gpu.txt"
rc=0
wrote=""   # the verify logs this run wrote, summarised at the end
# every variant's PTX compiled into the driver's cache, many at once (NOWARM=1:
# skip; modes targets, state and decode warm their own sets)
[ -n "${NOWARM:-}" ] || [ "$mode" = targets ] || [ "$mode" = state ] || [ "$mode" = docs ] || [ "$mode" = decode ] || [ "$mode" = heads ] || [ "$mode" = scanproj ] || bash bench/jit_warm.sh "$BIN" "$D" "" "$TMPD/jit_warm.log" || rc=1
if [ "$mode" = verify ] || [ "$mode" = all ]; then
	"$BIN" verify --dir "$D" --goldens tests/goldens > "$RES/verify_h200_goldens.log" 2>&1 || rc=1
	"$BIN" verify --dir "$D" $(echo "$SEED" | tr ',' '\n' | sed 's/^/--shape /') --shape 3x1000x1024 \
		$CLUSTER_SHAPES > "$RES/verify_h200_seed.log" 2>&1 || rc=1
	"$BIN" verify --dir "$D" --shape 1x4096x512 --shape 1x4096x2048 --shape 8x4096x1024 > "$RES/verify_h200_widths.log" 2>&1 || rc=1
	wrote="$wrote $RES/verify_h200_goldens.log $RES/verify_h200_seed.log $RES/verify_h200_widths.log"
fi
if [ "$mode" = quick ]; then
	if [ -z "${NOVERIFY:-}" ]; then   # NOVERIFY=1: time only
		"$BIN" verify --dir "$D" --goldens tests/goldens > "$EXP/verify_goldens.log" 2>&1 || rc=1
		"$BIN" verify --dir "$D" --shape 1x8192x1024 --shape 3x1000x1024 --shape 2x37x64 $CLUSTER_SHAPES \
			> "$EXP/verify_quick.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_goldens.log $EXP/verify_quick.log"
	fi
	for mv in ${VARIANTS:-}; do
		"$BIN" bench --dir "$D" --shapes 1x131072x1024 --mixer "${mv%%/*}" --variant "${mv#*/}" --profile --rounds 1 --samples 5 \
			--out "$EXP/bench_quick_${mv%%/*}_${mv#*/}.json" >> "$EXP/bench_quick.log" 2>&1 || rc=1
	done
	[ -f "$EXP/bench_quick.log" ] && grep -vE "^\[|^calib|^ *$" "$EXP/bench_quick.log" | head -200
fi
if [ "$mode" = targets ]; then
	for set in ${TARGET_SETS:-ptx80 ptx86 ptx89}; do
		[ -d "$PTXROOT/$set" ] || { echo "targets: no carried PTX set $set"; rc=1; continue; }
		[ -n "${NOWARM:-}" ] || bash bench/jit_warm.sh "$BIN" "$PTXROOT/$set" "" "$TMPD/jit_warm.log" || rc=1
		"$BIN" verify --dir "$PTXROOT/$set" --shape 1x8192x1024 --shape 3x1000x1024 > "$EXP/verify_$set.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_$set.log"
	done
	if [ -d "$PTXROOT/multi" ]; then
		"$BIN" list --dir "$PTXROOT/multi" > "$EXP/list_multi.log" 2>&1 || rc=1
		"$BIN" verify --dir "$PTXROOT/multi" --shape 3x1000x1024 > "$EXP/verify_multi.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_multi.log"
		echo "multi: modules loaded: $(grep -o 'code [a-z]* sm_[0-9]*' "$EXP/verify_multi.log" | sort | uniq -c | tr -s ' \n' ' ')"
	fi
fi
if [ "$mode" = docs ]; then
	# packed documents with a state each (lua/variants/docs.lua, carried as set "docs"): the
	# cu_seqlens form (--packed) with final states and their adjoints, with initial states, up
	# to 1000 documents in a row; then the same variants in the reset/h0 form and plainly
	R=$PTXROOT/docs
	if [ -d "$R" ]; then
		[ -n "${NOWARM:-}" ] || bash bench/jit_warm.sh "$BIN" "$R" "" "$TMPD/jit_warm.log" || rc=1
		"$BIN" verify --dir "$R" --docs 1000 --packed --shape 1x8192x1024 > "$EXP/verify_packed.log" 2>&1 || rc=1
		"$BIN" verify --dir "$R" --docs 64 --packed --h0 --shape 1x4000x2048 --shape 1x777x512 \
			>> "$EXP/verify_packed.log" 2>&1 || rc=1
		"$BIN" verify --dir "$R" --docs 3 --packed --h0 --shape 1x300x1024 >> "$EXP/verify_packed.log" 2>&1 || rc=1
		# documents longer than a tile: most tiles and groups hold no start or end
		"$BIN" verify --dir "$R" --docs 8 --packed --h0 --shape 1x16384x1024 >> "$EXP/verify_packed.log" 2>&1 || rc=1
		"$BIN" verify --dir "$R" --h0 --resets "${RESET_RATE:-0.01}" --shape 3x1000x1024 --shape 2x777x2048 \
			> "$EXP/verify_docs_rows.log" 2>&1 || rc=1
		"$BIN" verify --dir "$R" --h0 --shape 3x1000x1024 >> "$EXP/verify_docs_rows.log" 2>&1 || rc=1
		"$BIN" verify --dir "$R" --shape 1x8192x1024 --shape 3x1000x1024 >> "$EXP/verify_docs_rows.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_packed.log $EXP/verify_docs_rows.log"
		# speed: 64 documents in 131072 tokens as cu_seqlens (a state each, then no final states: a
		# training call) and as marks, against the
		# resets variant's marks (set state) and the plain winner (set ptx), one-pass chunk 8
		B="--rounds 1 --samples 5 --profile"
		for m in rglru samu; do
			case $m in
				rglru) v=fused_grouped_prefix32_onepass_chunk8 ;;
				samu) v=fused_output_fused_write_shared_sfu_grouped_prefix32_onepass_chunk8 ;;
			esac
			"$BIN" bench --dir "$R" --mixer $m --variant "docs_$v" --shapes 1x131072x1024 --resets 0.00049 --packed \
				$B --out "$EXP/bench_${m}_packed.json" >> "$EXP/bench_docs.log" 2>&1 || rc=1
			"$BIN" bench --dir "$R" --mixer $m --variant "docs_$v" --shapes 1x131072x1024 --resets 0.00049 --packed \
				--no-final $B --out "$EXP/bench_${m}_packed_nofinal.json" >> "$EXP/bench_docs.log" 2>&1 || rc=1
			"$BIN" bench --dir "$R" --mixer $m --variant "docs_$v" --shapes 1x131072x1024 --resets 0.00049 \
				$B --out "$EXP/bench_${m}_docs_marks.json" >> "$EXP/bench_docs.log" 2>&1 || rc=1
			[ -d "$PTXROOT/state" ] && { "$BIN" bench --dir "$PTXROOT/state" --mixer $m --variant "resets_$v" \
				--shapes 1x131072x1024 --resets 0.00049 $B --out "$EXP/bench_${m}_resets.json" >> "$EXP/bench_docs.log" 2>&1 || rc=1; }
			[ -d "$D" ] && { "$BIN" bench --dir "$D" --mixer $m --variant "$v" --shapes 1x131072x1024 $B \
				--out "$EXP/bench_${m}_plain.json" >> "$EXP/bench_docs.log" 2>&1 || rc=1; }
		done
		grep -E "^(rglru|samu) +1x" "$EXP/bench_docs.log" | awk '!seen[$0]++'
	else
		echo "docs: no carried PTX set docs (recur gen lua/variants/docs.lua -o out/docs)"; rc=1
	fi
fi
if [ "$mode" = state ]; then
	R=$PTXROOT/state
	if [ -d "$R" ]; then
		[ -n "${NOWARM:-}" ] || bash bench/jit_warm.sh "$BIN" "$R" "" "$TMPD/jit_warm.log" || rc=1
		# STATE_SHAPES, STATE_PARTS ("verify", "bench" or both): to split the mode over calls of 10 minutes
		SH=$(echo "${STATE_SHAPES:-3x1000x1024,1x8192x1024,2x777x2048,4x300x512}" | tr ',' '\n' | sed 's/^/--shape /')
		case " ${STATE_PARTS:-verify bench} " in *" verify "*)
			"$BIN" verify --dir "$R" --resets "${RESET_RATE:-0.01}" $SH > "$EXP/verify_resets.log" 2>&1 || rc=1
			"$BIN" verify --dir "$R" --h0 $SH > "$EXP/verify_h0.log" 2>&1 || rc=1
			"$BIN" verify --dir "$R" --h0 --resets "${RESET_RATE:-0.01}" $SH > "$EXP/verify_h0_resets.log" 2>&1 || rc=1
			"$BIN" verify --dir "$R" --shape 1x8192x1024 > "$EXP/verify_state_plain.log" 2>&1 || rc=1
			# packed documents of random lengths, up to 1000 in a row (one token long, across tiles)
			"$BIN" verify --dir "$R" --docs 1000 --shape 1x8192x1024 > "$EXP/verify_docs.log" 2>&1 || rc=1
			"$BIN" verify --dir "$R" --docs 64 --h0 --shape 2x777x2048 >> "$EXP/verify_docs.log" 2>&1 || rc=1
			wrote="$wrote $EXP/verify_resets.log $EXP/verify_h0.log $EXP/verify_h0_resets.log $EXP/verify_state_plain.log $EXP/verify_docs.log"
		esac
		# speed: 64 documents in 131072 tokens against one sequence (the same variant without marks, and
		# the plain winner of the carried set ptx), and h0/hT against none at the seed's shapes
		B="--rounds 1 --samples 5 --profile"
		case " ${STATE_PARTS:-verify bench} " in *" bench "*) ;; *) RESET_BENCH=" " STATE_BENCH=" " ;; esac
		for mv in ${RESET_BENCH:-rglru/resets_fused_grouped_prefix32_onepass_chunk8 samu/resets_fused_output_fused_write_shared_sfu_grouped_prefix32_onepass_chunk8}; do
			m=${mv%%/*} v=${mv#*/}
			"$BIN" bench --dir "$D" --mixer "$m" --variant "${v#resets_}" --shapes 1x131072x1024 $B \
				--out "$EXP/bench_${m}_plain.json" >> "$EXP/bench_state.log" 2>&1 || rc=1
			"$BIN" bench --dir "$R" --mixer "$m" --variant "$v" --shapes 1x131072x1024 $B \
				--out "$EXP/bench_${m}_unmarked.json" >> "$EXP/bench_state.log" 2>&1 || rc=1
			"$BIN" bench --dir "$R" --mixer "$m" --variant "$v" --shapes 1x131072x1024 --resets 0.00049 $B \
				--out "$EXP/bench_${m}_packed64.json" >> "$EXP/bench_state.log" 2>&1 || rc=1
		done
		for mv in ${STATE_BENCH:-rglru/states_fused_grouped_prefix32_hierarchical_chunk8 samu/states_fused_output_fused_write_shared_sfu_grouped_prefix32_hierarchical_chunk8}; do
			m=${mv%%/*} v=${mv#*/}
			for h in "" --h0; do
				"$BIN" bench --dir "$R" --mixer "$m" --variant "$v" --shapes "$SEED" $h $B \
					--out "$EXP/bench_${m}_states${h}.json" >> "$EXP/bench_state.log" 2>&1 || rc=1
			done
		done
		grep -E "^(rglru|samu) +[0-9]+x" "$EXP/bench_state.log" 2>/dev/null | head -40
	else
		echo "state: no carried PTX set state"; rc=1
	fi
fi
if [ "$mode" = decode ]; then
	for set in decode heads; do
		[ -d "$PTXROOT/$set" ] || { echo "decode: no carried PTX set $set"; rc=1; continue; }
		# a width every head size of the set divides (2816 = 11 x 256 = 16 x 176)
		[ -n "${NOWARM:-}" ] || WARM_SHAPE=1x16x2816 bash bench/jit_warm.sh "$BIN" "$PTXROOT/$set" "" "$TMPD/jit_warm.log" || rc=1
	done
	Dd=$PTXROOT/decode Dh=$PTXROOT/heads
	case " ${DECODE_PARTS:-verify bench} " in *" verify "*)
		# with verify's padding row: 4 and 2 rows (one row per thread), 6 (eight per thread), 34 (a block of
		# each: 32 rows, then 2) and 66 (the mma step's two blocks of 64 and 2)
		"$BIN" verify --dir "$Dd" --shape 3x1000x1024 --shape 1x300x2048 --shape 5x77x512 --shape 33x40x1024 \
			--shape 65x20x512 > "$EXP/verify_decode.log" 2>&1 || rc=1
		"$BIN" verify --dir "$Dd" --step 1 --shape 2x1000x1024 > "$EXP/verify_decode_1000.log" 2>&1 || rc=1
		# each K at a width it divides: RecurrentGemma 2B (2560 = 10 x 256) and 9B (4096 = 16 x 256), Griffin 7B (5632 = 32 x 176)
		# (B = 65 and 130: the tensor-core steps' row blocks of 64, the last with 1 or 2 rows)
		"$BIN" verify --dir "$Dh" --mixer rglru256 --shape 2x100x2560 --shape 3x40x4096 --shape 65x20x2560 \
			--shape 130x6x4096 > "$EXP/verify_heads.log" 2>&1 || rc=1
		"$BIN" verify --dir "$Dh" --mixer rglru176 --shape 2x100x5632 >> "$EXP/verify_heads.log" 2>&1 || rc=1
		"$BIN" verify --dir "$Dh" --mixer rglru128 --mixer rglru16 --shape 3x100x1024 --shape 65x20x1024 \
			>> "$EXP/verify_heads.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_decode.log $EXP/verify_decode_1000.log $EXP/verify_heads.log"
	esac
	case " ${DECODE_PARTS:-verify bench} " in *" bench "*)
		"$BIN" bench --dir "$Dd" --step 1 --shapes 1x1024x1024,256x1024x4096 --out "$EXP/bench_decode.json" \
			> "$EXP/bench_decode.log" 2>&1 || rc=1
		"$BIN" bench --dir "$Dd" --step 16 --shapes 1x1024x1024,256x1024x4096 --out "$EXP/bench_decode_t16.json" \
			>> "$EXP/bench_decode.log" 2>&1 || rc=1
		"$BIN" bench --dir "$Dh" --mixer rglru256 --step 1 --shapes 1x1024x2560,256x1024x2560,256x1024x4096 \
			--out "$EXP/bench_heads.json" >> "$EXP/bench_decode.log" 2>&1 || rc=1
		# the C example: a graph replayed per token, in place with an index and a padding row
		if [ -x .carry/decode_loop ]; then
			for v in rglru_decode rglru_decode_mma samu_decode samu_decode_rows; do
				for bd in "1 1024" "256 4096"; do
					.carry/decode_loop "$Dd" $v $bd 1000 >> "$EXP/bench_decode.log" 2>&1 || rc=1
				done
			done
		fi
		grep -vE "^\[|^ *$" "$EXP/bench_decode.log" | head -60
		promote "$EXP/bench_decode.json" decode_h200.json
		promote "$EXP/bench_decode_t16.json" decode_t16_h200.json
		promote "$EXP/bench_heads.json" decode_k256_h200.json
	esac
fi
if [ "$mode" = heads ]; then
	# heads of K channels, the projections apart (tests/grids/apart.lua, APART_K=K into set apartK):
	# every variant verified at widths K divides, L no multiple of a tile, B > 1; then
	# RecurrentGemma's layers (2B: 2560 = 10 x 256, 9B: 4096 = 16 x 256) calibrated and timed
	RGSET=${HEADS_RG:-rg}   # the RecurrentGemma set timed (rg90a: made with --sm sm_90a)
	warmed=" "   # each set's modules through the JIT cache once (the bench's set is verified too)
	heads_warm() {
		case "$warmed" in *" $1 "*) return 0 ;; esac
		warmed="$warmed$1 "
		[ -n "${NOWARM:-}" ] || WARM_SHAPE=1x64x2816 bash bench/jit_warm.sh "$BIN" "$1" "" "$TMPD/jit_warm.log" || rc=1
	}
	for k in ${APART_KS:-64 256 128 176 16} rg; do
		case " ${HEADS_PARTS:-verify bench} " in *" verify "* | *" bench "*) ;; *) continue ;; esac
		set=apart$k
		if [ $k = rg ]; then   # lua/variants/recurrentgemma.lua: warmed for the bench only
			case " ${HEADS_PARTS:-verify bench} " in *" bench "*) set=$RGSET ;; *) continue ;; esac
		fi
		[ -d "$PTXROOT/$set" ] || { echo "heads: no carried PTX set $set"; rc=1; continue; }
		heads_warm "$PTXROOT/$set"
		case " ${HEADS_PARTS:-verify bench} " in *" verify "*)
			case ${k%_90a} in   # apartK_90a: the same grid for sm_90a (the projections on wgmma)
				rg) continue ;;
				64) shapes="3x1000x1024 1x8192x1024 2x333x128" ;;   # beside the fused kernels' shapes
				256) shapes="2x1000x2560 1x4096x4096 3x77x512" ;;
				128) shapes="3x1000x1024 2x333x256" ;;
				176) shapes="2x300x704 1x1000x5632" ;;        # 704: the least width both 64 and 176 divide
				*) shapes="3x300x1024 2x100x64" ;;
			esac
			"$BIN" verify --dir "$PTXROOT/$set" $(printf -- "--shape %s " $shapes) > "$EXP/verify_$set.log" 2>&1 || rc=1
			wrote="$wrote $EXP/verify_$set.log"
			# activations large enough that the look-back forward's kept fp16 step maps
			# overflow: its blocks that meet one sweep the gates again from restaged steps
			# (the maps took the staged projections' bytes), so no output may be Inf or NaN
			# (only finiteness, as tests/gpu_verify_test.sh asserts at heads of 64)
			if [ "${k%_90a}" = 256 ]; then
				v=apart_fused_grouped_prefix32_lookback_chunk8
				"$BIN" verify --dir "$PTXROOT/$set" --variant $v --x-scale 1e5 --shape 1x8192x2560 > "$EXP/verify_xscale_$set.log" 2>&1
				if grep -q "$v .* \(PASS\|FAIL\)" "$EXP/verify_xscale_$set.log" && ! grep -q nonfinite "$EXP/verify_xscale_$set.log"; then
					echo "heads: $set x-scale 1e5: every output finite"
				else
					echo "heads: $set x-scale 1e5: non-finite outputs or no result"; rc=1
				fi
				wrote="$wrote $EXP/verify_xscale_$set.log"
			fi
		esac
	done
	# the variants apart whose steps carry marks, where carried (set apartmarks: APART_K=256
	# recur gen tests/grids/apart_marks.lua): packed documents with states, then reset marks
	# with h0 at 2B's width, B > 1, L off every tile
	case " ${HEADS_PARTS:-verify bench} " in *" verify "*)
		if [ -d "$PTXROOT/apartmarks" ]; then
			M=$PTXROOT/apartmarks
			heads_warm "$M"
			: > "$EXP/verify_apartmarks.log"
			for args in "--docs 64 --packed --h0 --shape 1x4000x2560" "--docs 3 --packed --h0 --shape 1x300x512" \
				"--resets 0.01 --h0 --shape 2x1000x2560 --shape 3x77x512"; do
				# shellcheck disable=SC2086 # the arguments split on purpose
				"$BIN" verify --dir "$M" $args >> "$EXP/verify_apartmarks.log" 2>&1 || rc=1
			done
			wrote="$wrote $EXP/verify_apartmarks.log"
		fi
		# RecurrentGemma's own grid (prefix 32 and 64, the three scan kinds), which the
		# apart grids (prefix 32) do not cover whole, at both layers' widths
		if [ -d "$PTXROOT/$RGSET" ]; then
			heads_warm "$PTXROOT/$RGSET"
			"$BIN" verify --dir "$PTXROOT/$RGSET" --shape 2x1000x2560 --shape 1x1500x4096 > "$EXP/verify_$RGSET.log" 2>&1 || rc=1
			# its variants taking reset marks and states (those keeping no projection among them)
			"$BIN" verify --dir "$PTXROOT/$RGSET" --resets 0.01 --h0 --shape 2x1000x2560 --shape 3x77x512 \
				> "$EXP/verify_${RGSET}_states.log" 2>&1 || rc=1
			wrote="$wrote $EXP/verify_$RGSET.log $EXP/verify_${RGSET}_states.log"
			# its recompute variants against their twins, bit for bit, and what they keep
			twins_test "$PTXROOT/$RGSET" "$EXP/twins_$RGSET.log"
		fi
	esac
	case " ${HEADS_PARTS:-verify bench} " in *" torch "*)
		# the PyTorch rows alone, recur's variants as the committed calibration chose them, at
		# every layer shape unless HEADS_TORCH names some (torch.compile compiles each shape;
		# eager PyTorch may run out of memory at the longest, a row that says so)
		heads_torch "${HEADS_CAL:-bench/results/calibration_heads_h200.json}" \
			"${HEADS_TORCH:-1x8192x2560 1x32768x2560 1x131072x2560 1x8192x4096 1x32768x4096 1x131072x4096}"
	esac
	case " ${HEADS_PARTS:-verify bench} " in *" bench "*)
		RG="${HEADS_SHAPES:-1x8192x2560,1x32768x2560,1x131072x2560,1x8192x4096,1x32768x4096,1x131072x4096}"
		"$BIN" calibrate --dir "$PTXROOT/$RGSET" --shapes "$RG" --out "$EXP/calibration_heads.json" \
			> "$EXP/bench_heads.log" 2>&1 || rc=1
		"$BIN" bench --dir "$PTXROOT/$RGSET" --shapes "$RG" --calibration "$EXP/calibration_heads.json" \
			--rounds 1 --samples 5 --profile --out "$EXP/bench_heads.json" >> "$EXP/bench_heads.log" 2>&1 || rc=1
		# what running the projections apart costs: heads of 64 apart against the fused kernels
		# (all.lua's), the same scan, chunk and prefix, per kernel
		if [ -d "$PTXROOT/apart64" ] && [ -d "$D" ]; then
			for sv in "$PTXROOT/apart64 apart_fused_grouped_prefix32_onepass_chunk8" "$D fused_grouped_prefix32_onepass_chunk8"; do
				dir=${sv% *} v=${sv#* }
				"$BIN" bench --dir "$dir" --mixer rglru --variant "$v" --shapes 1x32768x1024 --rounds 1 --samples 5 \
					--profile --out "$EXP/bench_k64_$v.json" >> "$EXP/bench_k64.log" 2>&1 || rc=1
			done
			grep -E "^rglru +1x" "$EXP/bench_k64.log"
		fi
		# the tensor-core floor's rate: cuBLAS bf16 GEMMs measured on this card (bench/gemm_rate.py)
		python3 bench/gemm_rate.py > "$EXP/gemm_rate.log" 2>&1 || rc=1
		tail -1 "$EXP/gemm_rate.log"
		# the same math in PyTorch, one layer forward+backward (HEADS_PARTS=torch: every shape)
		heads_torch "$EXP/calibration_heads.json" "${HEADS_TORCH:-1x8192x2560 1x32768x2560}"
		grep -vE "^\[|^ *$" "$EXP/bench_heads.log" | tail -60
		promote "$EXP/bench_heads.json" heads_h200.json
		promote "$EXP/calibration_heads.json" calibration_heads_h200.json
	esac
fi
if [ "$mode" = scanproj ]; then
	for k in ${SCANPROJ_KS:-256 128}; do
		set=$PTXROOT/sp$k
		[ -d "$set" ] || { echo "scanproj: no carried PTX set sp$k"; rc=1; continue; }
		[ -n "${NOWARM:-}" ] || WARM_SHAPE=1x64x2560 bash bench/jit_warm.sh "$BIN" "$set" "" "$TMPD/jit_warm.log" || rc=1
		case $k in 256) shapes="2x1000x2560 1x4096x4096 3x77x512" ;; 128) shapes="3x1000x1024 2x333x256" ;;
			*) shapes="3x1000x1024 2x333x$((2 * k))" ;; esac
		# shellcheck disable=SC2046 # the shapes split on purpose
		"$BIN" verify --dir "$set" $(printf -- "--shape %s " $shapes) > "$EXP/verify_sp$k.log" 2>&1 || rc=1
		# the states variants (scan_proj's, and its persistent form's where the set has it)
		states=$(grep -o '"apart_scanproj_\(ahead_\)\{0,1\}resets_states_fused_grouped_prefix32_onepass_chunk8"' \
			"$set/manifest.json" | tr -d '"' | sort -u | sed 's/^/--variant /')
		# shellcheck disable=SC2046,SC2086 # the shapes and variants split on purpose
		"$BIN" verify --dir "$set" $states --resets 0.01 --h0 $(printf -- "--shape %s " $shapes) \
			> "$EXP/verify_sp${k}_states.log" 2>&1 || rc=1
		wrote="$wrote $EXP/verify_sp$k.log $EXP/verify_sp${k}_states.log"
		twins_test "$set" "$EXP/twins_sp$k.log"
	done
	if [ -d "$PTXROOT/sp256" ]; then
		for r in $(seq "${SCANPROJ_REPEAT:-2}"); do
			for v in apart_fused_grouped_prefix32_onepass_chunk8 apart_scanproj_fused_grouped_prefix32_onepass_chunk8 \
				apart_scanproj_ahead_fused_grouped_prefix32_onepass_chunk8; do
				"$BIN" bench --dir "$PTXROOT/sp256" --mixer rglru --variant $v --rounds 1 --samples 5 --profile \
					--shapes "${SCANPROJ_SHAPES:-1x8192x2560,1x32768x2560,1x131072x2560,1x32768x4096,1x131072x4096}" \
					--out "$EXP/ab_${v}_$r.json" >> "$EXP/ab.log" 2>&1 || rc=1
				echo "-- $v $r" >> "$EXP/ab.log"
			done
		done
		grep -E "^rglru|proj_wimg|proj_fwd|fwd_scan|^-- " "$EXP/ab.log"
	fi
fi
if [ "$mode" = sanitize ]; then
	for t in ${TOOLS_LIST:-memcheck racecheck synccheck initcheck}; do
		JOBS=${JOBS:-10} RUN_TIMEOUT=${RUN_TIMEOUT:-120} TOOLS=$t bash tests/gpu_sanitize.sh "$BIN" . "$TMPD/san_$t" "$D" \
			> "$EXP/sanitize_$t.log" 2>&1 || rc=1
		cp "$TMPD/san_$t/summary.md" "$EXP/sanitize_$t.md" 2>/dev/null
		echo "$t: $(tail -1 "$EXP/sanitize_$t.log")"
	done
fi
if [ "$mode" = torch ]; then
	lib=${RECUR_LIB:-$PWD/.carry/lib/librecur.so}
	if [ ! -f "$lib" ]; then
		echo "torch: no $lib (carry build/librecur.so and its libraries: bench/README.md)"; rc=1
	else
		export RECUR_LIB=$lib LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export PYTHONDONTWRITEBYTECODE=1
		# with the sets state (and docs) carried, their variants are checked with reset marks and
		# states (and packed documents of a state each) too
		python3 tests/python/gpu_torch_test.py "$D" $([ -d "$PTXROOT/state" ] && echo "$PTXROOT/state" &&
			[ -d "$PTXROOT/docs" ] && echo "$PTXROOT/docs") \
			> "$EXP/torch_gpu_test.log" 2>&1 || rc=1
		wrote="$wrote $EXP/torch_gpu_test.log"
		python3 examples/train_lm.py --kernels "$D" --compare --bench-layer 1x8192x1024 --out "$EXP/layer" \
			> "$EXP/layer.log" 2>&1 || rc=1
		python3 examples/train_lm.py --kernels "$D" --compare --steps "${TRAIN_STEPS:-300}" --out "$EXP/train" \
			> "$EXP/train.log" 2>&1 || rc=1
		if [ -d "$PTXROOT/decode" ]; then   # a short run, then 400 bytes drawn through the decode step
			python3 examples/train_lm.py --kernels "$D" --decode-kernels "$PTXROOT/decode" --steps 100 --sample 400 \
				--out "$EXP/sample" > "$EXP/sample.log" 2>&1 || rc=1
			tail -12 "$EXP/sample.log"
		fi
		if [ -d "$PTXROOT/state" ]; then   # each file a document: the variants taking reset marks
			python3 examples/train_lm.py --kernels "$PTXROOT/state" --compare --docs --steps "${TRAIN_STEPS:-300}" \
				--out "$EXP/train_docs" > "$EXP/train_docs.log" 2>&1 || rc=1
			tail -8 "$EXP/train_docs.log"
		fi
		tail -3 "$EXP/torch_gpu_test.log"; tail -4 "$EXP/layer.log"; tail -8 "$EXP/train.log"
	fi
fi
if [ "$mode" = ab ]; then
	for r in $(seq "${AB_REPEAT:-2}"); do
		for set in ${AB_SETS:-ptx_old ptx}; do
			[ -d "$PTXROOT/$set" ] || { echo "ab: no carried PTX set $set"; rc=1; continue; }
			for mv in ${VARIANTS:-}; do
				echo "== $set $r ${mv}" >> "$EXP/ab.log"
				"$BIN" bench --dir "$PTXROOT/$set" --shapes "${AB_SHAPES:-1x131072x1024}" --mixer "${mv%%/*}" \
					--variant "${mv#*/}" --profile --rounds 1 --samples 5 --out "$TMPD/ab_bench.json" >> "$EXP/ab.log" 2>&1 || rc=1
			done
		done
	done
	# set, round, then per shape: f+b ms and each kernel's ms
	awk '/^== /{ tag = $2 " " $3 } /^(rglru|samu) +[0-9]+x/ && NF >= 9 && !seen[$0]++ { print tag, $2, "f+b", $6 }
	     /^  (forward|backward) /{ print tag, "  ", $2, $3 }' "$EXP/ab.log"
fi
if [ "$mode" = ncu ] || [ "$mode" = sass ]; then
	NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
	[ -n "$NCU" ] || { echo "ncu: not found"; rc=1; }
fi
if [ "$mode" = ncu ]; then
	for mv in ${VARIANTS:-}; do
		[ -n "$NCU" ] || break
		m=${mv%%/*}
		"$NCU" --set full -k "regex:${NCU_KERNELS:-scan|apply|reduce}" -c "${NCU_COUNT:-3}" \
			"$BIN" bench --dir "$D" --shapes "${NCU_SHAPE:-1x32768x1024}" --mixer "$m" --variant "${mv#*/}" \
			${NCU_STEP:+--step "$NCU_STEP"} --rounds 1 --samples 1 \
			--out "$TMPD/ncu_bench.json" > "$EXP/ncu_$m.txt" 2>&1 || rc=1
		grep -E "^  [a-z_]+ \(|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Theoretical Occ|Block Limit|Memory Throughput|Compute \(SM\) Th" \
			"$EXP/ncu_$m.txt" | head -80
	done
fi
if [ "$mode" = sass ]; then
	for mv in ${VARIANTS:-}; do
		[ -n "$NCU" ] || break
		m=${mv%%/*}
		rm -f "$TMPD/sass_$m.ncu-rep"
		"$NCU" --section SourceCounters --section InstructionStats -k "regex:${NCU_KERNELS:-.}" -c "${NCU_COUNT:-4}" \
			-o "$TMPD/sass_$m" "$BIN" bench --dir "$D" --shapes "${NCU_SHAPE:-1x32768x1024}" --mixer "$m" --variant "${mv#*/}" \
			${NCU_STEP:+--step "$NCU_STEP"} \
			--rounds 1 --samples 1 --out "$TMPD/ncu_bench.json" > "$EXP/sass_$m.log" 2>&1 || rc=1
		"$NCU" -i "$TMPD/sass_$m.ncu-rep" --page source --csv --print-source sass > "$TMPD/sass_$m.csv" 2>> "$EXP/sass_$m.log" || rc=1
		xz -9 -c "$TMPD/sass_$m.csv" > "$EXP/sass_$m.csv.xz" || rc=1
		echo "sass $m: $(wc -l < "$TMPD/sass_$m.csv") lines"
	done
fi
if [ "$mode" = others ]; then
	# RGLRU_V, SAMU_V: the variants to time (the calibrated L=131072 winners)
	: > "$RES/other_shapes.log"
	for mv in "rglru ${RGLRU_V:-}" "samu ${SAMU_V:-}"; do
		set -- $mv
		[ $# -eq 2 ] || { echo "others: no variant given for $1 (RGLRU_V / SAMU_V)"; rc=1; continue; }
		"$BIN" bench --dir "$D" --shapes 8x16384x1024,1x65536x4096 --mixer "$1" --variant "$2" --rounds 1 --samples 5 \
			--out "$RES/other_shapes_$1_h200.json" > "$TMPD/other_shapes_$1.log" 2>&1 || rc=1
		cat "$TMPD/other_shapes_$1.log" >> "$RES/other_shapes.log"
		tail -6 "$TMPD/other_shapes_$1.log"
	done
	lbv=""
	for f in "$D"/*_lookback_*.ptx "$D"/*_onepass_*.ptx; do b=$(basename "$f" .ptx); lbv="$lbv --variant ${b#*.}"; done
	"$BIN" verify --dir "$D" $lbv --shape 16x2048x1024 --shape 1x262144x1024 --shape 2x65536x2048 \
		> "$RES/verify_h200_lookback_stress.log" 2>&1 || rc=1
	wrote="$wrote $RES/verify_h200_lookback_stress.log"
fi
if [ "$mode" = results ] || [ "$mode" = all ]; then
	# the fastest variant within 4.5 extra bytes per element (the project's memory target)
	"$BIN" calibrate --dir "$D" --shapes "$SEED" --memory-budget "${BUDGET:-4.5}" --out "$RES/calibration_h200.json" \
		> "$RES/calibrate.log" 2>&1 || rc=1
	"$BIN" bench --dir "$D" --shapes "$SEED" --calibration "$RES/calibration_h200.json" --profile \
		--out "$RES/results_h200.json" > "$RES/bench.log" 2>&1 || rc=1
	# the seed lives beside the repository, not on the GPU machine: compare where it is
	seedf=${RECUR_SEED:-../shared/seed/000_c94c45093349daa5.txt}
	if [ -f "$seedf" ]; then
		"$BIN" compare "$RES/results_h200.json" "$seedf" --svg "$RES/results_h200.svg" > "$RES/compare_h200.txt" 2>&1 || rc=1
	else
		echo "no seed file here: run recur compare bench/results/results_h200.json where the seed is"
	fi
	tail -4 "$RES/calibrate.log"
	grep -A12 "^profile" "$RES/bench.log" | head -120
	[ -f "$seedf" ] && cat "$RES/compare_h200.txt"
fi
for f in $wrote; do
	[ -f "$f" ] || continue
	case "$f" in *verify_xscale_*)
		# activations at 1e5 leave the tolerances on purpose: the check is finiteness alone
		echo "== $(basename "$f" .log): finiteness only, $(grep -c nonfinite "$f") rows with Inf or NaN"
		continue ;;
	esac
	echo "== $(basename "$f" .log): $(tail -1 "$f")"
	grep -E "FAIL" "$f" | head -5
done
# at most 8 files come back from the machine: more go back as one archive
# (only where the files went to $OUT)
n=0
[ -n "${OUT:-}" ] && [ "$DEST" = "$OUT" ] && n=$(find "$OUT" -type f | wc -l)
if [ "$n" -gt 8 ]; then
	pack="$TMPD/suite.tar.xz"
	if tar cJf "$pack" -C "$OUT" . ; then
		find "$OUT" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
		mv "$pack" "$OUT/suite.tar.xz"
		echo "$n files packed into suite.tar.xz (tar xJf suite.tar.xz in the repository root)"
	else
		echo "packing the $n files failed: only 8 of them come back"; rc=1
	fi
fi
exit $rc
