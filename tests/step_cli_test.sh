#!/usr/bin/env bash
# The decode steps ("scan": "decode", R.decode) on the command line, with
# no GPU:
#  - recur list shows "scan decode" beside the state (h0 hT index) of the
#    decode step, and not of a scan variant;
#  - --step is checked (verify and bench: 0, 4097, x refused, naming it),
#    and what --step cannot do is refused before the driver (a scan
#    variant named with --step, --step with --goldens or --resets, a
#    folder without decode steps);
#  - without a driver, verify --step ends with the driver's message, and
#    calibrate and bench (without --step) say which decode steps they
#    leave out; a shape no call can run is said per step;
#  - on a host stand-in of the driver (tests/hostcu.h, built here, whose
#    rglru_decode "kernel" is ref/'s float64 forward), the step check runs
#    end to end and passes, and fails as it must when the kernel writes the
#    padding row's y, writes outside its slots, ignores h0 or writes the
#    wrong slot; bench --step writes its results with "step" in the
#    protocol block; calibrate records the decode step as skipped.
#   usage: step_cli_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
cd "$work" || exit 1
pass=0 fail=0
. "$src/tests/check_lib.sh"
nodrv="RECUR_LIBCUDA=$work/no-libcuda.so"
PLAIN=fused_grouped_prefix32_hierarchical_chunk8

cat > "$work/grid.lua" <<'LUA'
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "hierarchical" } },
  R.decode { mixer = require "arch.rglru" },
}
LUA
"$recur" gen "$work/grid.lua" --lua "$src/lua" -o "$work/ptx" -q
check $? "gen of a scan variant and RG-LRU's decode step"
printf 'local R = require "recur"\nreturn R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "hierarchical" } }\n' \
	> "$work/plain.lua"
"$recur" gen "$work/plain.lua" --lua "$src/lua" -o "$work/plain" -q
check $? "gen of the scan variant alone"
[ -f "$work/ptx/manifest.json" ] || { echo "$pass passed, $fail failed"; exit 1; }

# ---- recur list ----
out=$("$recur" list --dir "$work/ptx" 2>&1); rc=$?
echo "$out" | sed 's/^/     /'
[ $rc = 0 ] && echo "$out" | grep -qE '^rglru +rglru_decode +scan decode +state h0 hT index$'
check $? "recur list shows the decode step's scan and state (rc $rc)"
echo "$out" | grep "$PLAIN" | grep -q "scan"; [ $? = 1 ]
check $? "and no scan on the scan variant's line"

# ---- --step's values ----
for c in verify bench; do
	for v in 0 4097 x -1 1.5 ""; do
		out=$("$recur" $c --dir "$work/ptx" --step "$v" 2>&1); rc=$?
		[ $rc = 2 ] && echo "$out" | grep -qF -- "--step" && echo "$out" | grep -q "1..4096"
		check $? "recur $c --step '$v' refused, naming --step and 1..4096 (rc $rc: $(echo "$out" | head -1))"
	done
done
"$recur" verify --help | grep -qE '^  --step T +check only the decode steps'; check $? "recur verify --help lists --step T"
"$recur" bench --help | grep -qE '^  --step T +time the decode steps'; check $? "recur bench --help lists --step T"

# ---- refusals before the driver ----
refused() {   # refused WHAT-TO-FIND ARGS...: exit 1 before the driver, the message naming WHAT
	local want=$1; shift
	out=$(env "$nodrv" "$recur" "$@" 2>&1); rc=$?
	[ $rc = 1 ] && echo "$out" | grep -qF -- "$want" && ! echo "$out" | grep -q "CUDA driver"
	check $? "recur $* refused before the driver: \"$want\" (rc $rc: $(echo "$out" | head -1))"
}
refused "variant $PLAIN is not one" verify --dir "$work/ptx" --step 1 --variant "$PLAIN"
refused "no decode step variant" verify --dir "$work/plain" --step 1
refused "no reset marks" verify --dir "$work/ptx" --step 1 --resets 0.1
refused "no reset marks" verify --dir "$work/ptx" --step 1 --docs 5
# packed documents (--docs N) mark starts as --resets P does: one or the other, and only where taken
refused "give one or the other" verify --dir "$work/ptx" --docs 5 --resets 0.1
refused "takes what --resets / --docs / --h0 / --packed give" verify --dir "$work/plain" --docs 5
# --packed: the documents as cu_seqlens, one row, only where the kernels take them
refused "give --docs N too" verify --dir "$work/ptx" --packed --shape 1x300x64
refused "has B = 2" verify --dir "$work/ptx" --docs 5 --packed --shape 2x300x64
refused "takes no cu_seqlens (--packed)" verify --dir "$work/plain" --docs 5 --packed --shape 1x300x64 --variant "$PLAIN"
refused "give --resets P too" bench --dir "$work/ptx" --packed --shapes 1x300x64 --out "$work/r.json"
refused "has B = 2" bench --dir "$work/ptx" --packed --resets 0.01 --shapes 2x300x64 --out "$work/r.json"
out=$("$recur" verify --dir "$work/ptx" --docs 0 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q -- "--docs 0: want a number of documents per row in 1..1000000"
check $? "recur verify --docs 0 refused, naming --docs (rc $rc)"
refused "give one or the other" verify --dir "$work/ptx" --step 1 --goldens "$work"
refused "variant rglru_decode is a decode step" verify --dir "$work/ptx" --variant rglru_decode --goldens "$work"
refused "variant $PLAIN is not one" bench --dir "$work/ptx" --step 1 --variant "$PLAIN" --out "$work/r.json"
refused "no decode step variant" bench --dir "$work/plain" --step 1 --out "$work/r.json"
refused "no reset marks" bench --dir "$work/ptx" --step 1 --resets 0.1 --out "$work/r.json"
refused "bench them apart" bench --dir "$work/ptx" --variant rglru_decode --variant "$PLAIN" --out "$work/r.json"
refused "cannot run its calls of 1x2x1000" bench --dir "$work/ptx" --step 2 --shapes 1x10x1000 --out "$work/r.json"

# ---- without a driver: the driver's message; what is left out is said ----
out=$(env "$nodrv" "$recur" verify --dir "$work/ptx" --step 1 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "cannot load the CUDA driver"
check $? "recur verify --step 1 with no driver: the driver's message, exit 1 (rc $rc: $(echo "$out" | tail -1))"
out=$(env "$nodrv" "$recur" verify --dir "$work/ptx" --shape 2x10x1000 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qE "^rglru.rglru_decode +2x10x1000 step 1 skip: .*multiple of 64" &&
	echo "$out" | grep -qE "^rglru.rglru_decode +2x10x1000 step 16 skip: " &&
	echo "$out" | grep -q "no chosen decode step variant is legal"
check $? "recur verify at a width no call takes: a skip line per default step (1, 16), nothing to check (rc $rc)"
out=$(env "$nodrv" "$recur" calibrate --dir "$work/ptx" --out "$work/cal.json" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qE "^calibrate: skipping rglru_decode \(rglru\): a decode step"
check $? "recur calibrate says it leaves the decode step out (rc $rc: $(echo "$out" | head -1))"
out=$(env "$nodrv" "$recur" bench --dir "$work/ptx" --variant "$PLAIN" --out "$work/r.json" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qE "^bench: leaving out rglru_decode \(rglru\): a decode step"
check $? "recur bench without --step says it leaves the decode step out (rc $rc: $(echo "$out" | head -1))"
out=$(env "$nodrv" "$recur" bench --dir "$work/ptx" --variant rglru_decode --out "$work/r.json" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF -- "decode steps of 1 token per call (--step 1)" && echo "$out" | grep -q "CUDA driver"
check $? "recur bench --variant rglru_decode: timed as decode steps, --step 1, up to the driver (rc $rc)"

# ---- on a host stand-in of the driver ----
cuinc=$(sed -n 's/^CUDA_INCLUDE_DIR:[A-Z]*=//p' "$(dirname "$recur")/CMakeCache.txt" 2>/dev/null)
for d in "$cuinc" /usr/local/cuda/include /usr/include; do [ -n "$d" ] && [ -f "$d/cuda.h" ] && { cuinc=$d; break; }; done
cc=$(command -v cc || command -v gcc || true)
if [ -z "$cc" ] || [ ! -f "$cuinc/cuda.h" ]; then
	echo "     (no C compiler or cuda.h: the step check was not run on the host stand-in)"
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]; exit
fi
# the stand-in's kernel reads the arguments in the manifest's order: hold the manifest to it
py=$(command -v python3 || true)
if [ -n "$py" ]; then
	args=$("$py" -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(" ".join(a for v in m["variants"] for l in v["forward"] if l["kernel"] == "rglru_decode" for a in l["args"]))' \
		"$work/ptx/manifest.json")
	want="x y param:Wa param:ba param:Wx param:bx param:lam state:h0 state:hT state:index i32:B i32:L i32:D"
	[ "$args" = "$want" ]; check $? "rglru_decode's arguments are those the stand-in reads ($args)"
	if [ "$args" != "$want" ]; then   # the stand-in would compute nonsense: nothing more to learn from it
		echo "$pass passed, $fail failed"
		exit 1
	fi
fi
cat > "$work/fakecu.c" <<'C'
/* libcuda for the CLI: tests/hostcu.h through cuGetProcAddress_v2, and
 * rglru_decode computed by ref/'s float64 forward, row by row. FAKECU_BUG:
 * pad (writes the padding row's y), guard (writes slot -1), noh0 (ignores
 * h0), slot (writes hT one slot off). */
#include "hostcu.h"
#include "ref.h"
#include "rng.h"
static void *hp(uint64_t p, size_t n)
{
	HcBlock *b = p ? hc_block((CUdeviceptr)p, n) : NULL;
	return b && b->host ? b->host + ((CUdeviceptr)p - b->p) : NULL;
}
static CUresult fk_LaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
	CUresult r = hc_LaunchKernelEx(cfg, f, params, extra);
	const HcFn *F = (const HcFn *)f;
	if (r || hc.capturing || strcmp(F->name, "rglru_decode"))
		return r;
	const RefMixer *M = &ref_rglru;
	const char *bug = getenv("FAKECU_BUG") ? getenv("FAKECU_BUG") : "";
	int np = M->nparam;
	uint64_t a[32] = {0};
	for (int i = 0; i < F->nparam && i < 32; i++)
		memcpy(&a[i], params[i], 8);
	int B = (int)(uint32_t)a[5 + np], L = (int)(uint32_t)a[6 + np], D = (int)(uint32_t)a[7 + np];
	RefShape s1 = {1, L, D, D / 64};
	size_t TD = (size_t)L * D;
	uint16_t *x = hp(a[0], (size_t)B * TD * 2), *y = hp(a[1], (size_t)B * TD * 2);
	float *h0 = hp(a[2 + np], 4), *hT = hp(a[3 + np], 4);
	int *idx = hp(a[4 + np], (size_t)B * 4);
	if (!x || !y || !hT || (a[2 + np] && !h0) || (a[4 + np] && !idx))
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	double *pd[16], *xr = malloc(TD * 8), *yr = malloc(TD * 8), *h0d = malloc((size_t)D * 8), *hTd = malloc((size_t)D * 8);
	for (int k = 0; k < np; k++) {
		long c = M->param_count(k, &s1);
		float *pf = hp(a[2 + k], (size_t)c * 4);
		pd[k] = malloc((size_t)c * 8 + 8);
		for (long i = 0; pf && i < c; i++)
			pd[k][i] = pf[i];
	}
	for (int b = 0; b < B; b++) {
		int slot = idx ? idx[b] : b;
		if (slot < 0) {
			if (!strcmp(bug, "pad"))
				memset(y + (size_t)b * TD, 0, TD * 2);
			if (!strcmp(bug, "guard"))
				hT[-1] = 123.0f;
			continue;
		}
		for (size_t i = 0; i < TD; i++)
			xr[i] = bf16_to_float(x[(size_t)b * TD + i]);
		for (int d = 0; h0 && d < D; d++)
			h0d[d] = h0[(size_t)slot * D + d];
		SeqState st = {.h0 = h0 && strcmp(bug, "noh0") ? h0d : NULL, .hT = hTd};
		char err[256];
		if (M->forward_state(&s1, (const double *const *)pd, xr, yr, &st, err, sizeof err))
			return CUDA_ERROR_LAUNCH_FAILED;
		for (size_t i = 0; i < TD; i++)
			y[(size_t)b * TD + i] = bf16_bits((float)yr[i]);
		int out = !strcmp(bug, "slot") ? slot + 1 : slot;
		for (int d = 0; d < D; d++)
			hT[(size_t)out * D + d] = (float)hTd[d];
	}
	for (int k = 0; k < np; k++)
		free(pd[k]);
	free(xr), free(yr), free(h0d), free(hTd);
	return r;
}
CUresult cuInit(unsigned f) { hc_reset(); return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char **s) { return hc_GetErrorName(r, s); }
CUresult cuGetErrorString(CUresult r, const char **s) { return hc_GetErrorString(r, s); }
CUresult cuGetProcAddress_v2(const char *sym, void **fn, int ver, cuuint64_t flags, CUdriverProcAddressQueryResult *st)
{
	*fn = NULL;
#define FK(name, params) if (!strcmp(sym, "cu" #name)) *fn = (void *)hc_##name;
	RT_CU_FUNCS(FK)
#undef FK
	if (!strcmp(sym, "cuLaunchKernelEx"))
		*fn = (void *)fk_LaunchKernelEx;
	if (st)
		*st = *fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
C
"$cc" -O1 -fPIC -shared -o "$work/libcuda.so" "$work/fakecu.c" "$src/ref/ref_rglru.c" "$src/ref/ref_samu.c" \
	"$src/ref/ref_state.c" "$src/ref/ref_find.c" "$src/ref/rng.c" "$src/util/par.c" "$src/util/seqstate.c" \
	-I"$src/tests" -I"$src/runtime" -I"$src/util" -I"$src/ref" -I"$cuinc" -lm -lpthread > "$work/cc.log" 2>&1
check $? "the host stand-in builds ($(grep -m1 error "$work/cc.log"))"
fake="RECUR_LIBCUDA=$work/libcuda.so"

# verify --step: rows start with the variant, its shape, PASS/FAIL and the reference, as the ordinary rows
out=$(env "$fake" "$recur" verify --dir "$work/ptx" --step 4 --shape 2x37x128 2>&1); rc=$?
echo "$out" | grep -E "PASS|FAIL" | sed 's/^/     /'
n=$(echo "$out" | grep -cE "^rglru.rglru_decode +2x37x128 +PASS ref spec +step 4 (h0 |reset) +calls 10 hT [0-9.e+-]+ y [0-9.e+-]+ local ")
[ $rc = 0 ] && [ "$n" = 2 ] && echo "$out" | grep -q "^2 passed, 0 failed"
check $? "verify --step 4 at 2x37x128 on the stand-in: from h0 and from a reset, 10 calls (the last of 1 token), PASS (rc $rc, $n rows)"
out=$(env "$fake" "$recur" verify --dir "$work/ptx" --variant rglru_decode --shape 1x20x64 2>&1); rc=$?
n1=$(echo "$out" | grep -cE "^rglru.rglru_decode +1x20x64 +PASS .* step 1 +(h0|reset) +calls 20 ")
n16=$(echo "$out" | grep -cE "^rglru.rglru_decode +1x20x64 +PASS .* step 16 +(h0|reset) +calls 2 ")
[ $rc = 0 ] && [ "$n1" = 2 ] && [ "$n16" = 2 ]
check $? "verify without --step checks the decode step at T = 1 and T = 16 (rc $rc, $n1 + $n16 rows)"
out=$(env "$fake" "$recur" verify --dir "$work/ptx" --step 1 --shape 2x1000x64 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -qE "^rglru.rglru_decode +2x1000x64 +PASS .* step 1 +h0 +calls 1000 "
check $? "verify --step 1 over 1000 tokens: 1000 calls, PASS (rc $rc)"
for bug in "pad:padding row's y written" "guard:unused slots or guards changed" "noh0:hT" "slot:unused slots or guards changed"; do
	b=${bug%%:*} want=${bug#*:}
	out=$(FAKECU_BUG=$b env "$fake" "$recur" verify --dir "$work/ptx" --step 4 --shape 2x37x128 2>&1); rc=$?
	nf=$(echo "$out" | grep -cE "^rglru.rglru_decode +2x37x128 +FAIL .*$want")
	[ $rc = 1 ] && [ "$nf" -ge 1 ] && echo "$out" | grep -q "0 passed"
	check $? "a kernel that $b: FAIL, \"$want\" (rc $rc, $nf rows)"
done

out=$(env "$fake" "$recur" bench --dir "$work/ptx" --step 2 --shapes 2x9x128 --rounds 1 --samples 2 --out "$work/res.json" 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -qE "^rglru +2x9x128 +2 rglru_decode "
check $? "bench --step 2 on the stand-in: one line per shape (rc $rc: $(echo "$out" | tail -1))"
if [ -n "$py" ]; then
	"$py" - "$work/res.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p, r = d["protocol"], d["rows"]
ok = p.get("step") == 2 and p.get("input_gradient") is False and len(r) == 1
r = r[0]
st = r.get("step", {})
ok = ok and r["backend"] == "rglru_decode" and r["backward"] is None and r["forward_backward"] is None
ok = ok and st.get("tokens_per_call") == 2 and st.get("calls_per_region") == 5 and st.get("last_call_tokens") == 1
ok = ok and st["floor"]["bytes_per_call"] == 2 * 2 * 128 * 4 + 2 * 2 * 2 * 128 * 2 + st["floor"]["parameter_bytes"]
ok = ok and len(r["forward"]["samples_ms"]) == 2 and "graph" in st and "cold_call" in st
sys.exit(0 if ok else 1)
PY
	check $? "its results: \"step\": 2 in the protocol, per-call times in forward, no backward, the floor's bytes"
fi
out=$(env "$fake" "$recur" calibrate --dir "$work/ptx" --shapes 1x64x64 --samples 1 --warmup 0 --out "$work/cal.json" 2>&1); rc=$?
[ $rc = 0 ] && grep -q '"reason": "decode step (scan decode)' "$work/cal.json"
check $? "calibrate on the stand-in records the decode step as skipped, with its reason (rc $rc)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
