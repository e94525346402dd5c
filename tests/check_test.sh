#!/usr/bin/env bash
# recur check: the float64 reference each mixer gets from its graph, held to
# finite differences of its own forward (CPU only).
#  - every mixer in lua/arch/ passes, through a one-variant grid written here
#    (check takes the scripts gen takes), on fresh random data (the seed is
#    printed, RECUR_TEST_SEED repeats it), each shape also with a state
#    (h0, dhT, resets: a second table whose h0 row checks dh0);
#  - a mixer using every smooth function of the DSL passes;
#  - check can fail: R.sqrtb's derivative is bounded on purpose
#    (1/sqrt(max(4z, 1e-6))), so where z = 1e-8 x^2 stays under 2.5e-7 the
#    graph's derivative of b is not its forward's, and check must say FAIL
#    for x (and only x) and exit 1; the same mixer with R.sqrt passes;
#  - what matches nothing (a mistyped --mixer), a width that is no multiple
#    of the heads and a shape too large for finite differences are refused
#    with a message naming them.
#   usage: check_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
seed=${RECUR_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (RECUR_TEST_SEED=$seed repeats this run)"
export RECUR_LUA="$src/lua"

# every mixer of lua/arch/, each through a grid of one variant
n=0
for f in "$src"/lua/arch/*.lua; do
	name=$(basename "$f" .lua)
	if grep -q '^return function' "$f"; then   # a builder (rglru_heads.lua): its mixers are its callers'
		echo "skip arch/$name.lua: it builds mixers for other files of lua/arch/, which are checked"
		continue
	fi
	printf 'local R = require "recur"\nreturn R.variants { mixer = require "arch.%s", chunk = { 16 }, prefix = { 32 } }\n' \
		"$name" > "$work/$name.lua"
	# 12 elements of each tensor (check's default is 24): the seed, new on
	# every run, picks others each time, and the suite stays within its time;
	# heads of 256 (rglru.lua's lines at another K) at one shape of one head:
	# check's two default shapes would take 28 s
	shapes="" ns=2
	case $name in recurrentgemma) shapes="--shape 1x9x256" ns=1 ;; esac
	out=$("$recur" check "$work/$name.lua" --seed "$seed" --elements 12 $shapes 2>&1); rc=$?
	[ $rc = 0 ] && echo "$out" | grep -q "PASS (0 failed)" && ! echo "$out" | grep -q FAIL
	check $? "recur check arch/$name.lua: every tensor within its tolerance (rc $rc: $(echo "$out" | tail -1))"
	[ $rc = 0 ] || echo "$out" | grep -E "FAIL|^[a-z].* at " | head -20
	tables=$(echo "$out" | grep -cE "^[A-Za-z0-9_]+ at [0-9]+x[0-9]+x[0-9]+ with h0, dhT and [0-9]+ resets?, seed")
	h0rows=$(echo "$out" | grep -cE "^  h0 .*PASS$")
	[ "$tables" = $ns ] && [ "$h0rows" = $ns ]
	check $? "recur check arch/$name.lua: each of the $ns shapes also with h0, dhT and resets, dh0 passing ($tables tables, $h0rows h0 rows)"
	n=$((n + 1))
done
[ $n -ge 2 ]; check $? "lua/arch/ holds mixers to check ($n)"

# every smooth function of the DSL, token projections with and without scale
cat > "$work/smooth.lua" <<'EOF'
local R = require "recur"
local m = R.mixer("smooth", { k = 64 })
local w = m:param("w", "channel", R.normal(1))
local c = m:param("c", "scalar", R.const(0.3))
local W = m:param("W", "blockdiag", R.normal_rsqrt_k())
local bb = m:param("bb", "channel", R.zeros())
local lam = m:param("lam", "channel", R.decay(0.81, 0.998))
local p = m:project("p", W, bb)
local u = m:token_project("u", w, c, { scale = "rsqrt_d" })
local v = m:token_project("v", bb, c)
local x, h, first = m.x, m.h, m.first
local log_a = -R.softplus(lam) * R.sigmoid(p) * R.exp(-R.sqrt(c * c + 1))
local g = R.tanh(u) * R.rsqrt(1 + v * v) + R.log(1 + x * x) / (2 + R.recip(1 + w * w))
m:recurrence { log_a = log_a, b = R.where(first, 1, R.sqrtb(1 - R.exp(2 * log_a))) * g * x }
m:output(h * R.sigmoid(u) + x * c / (1 + v * v) + (h / 3) ^ 2)
return R.variants { mixer = m, chunk = { 16 }, prefix = { 32 } }
EOF
out=$("$recur" check "$work/smooth.lua" --seed "$seed" --shape 2x23x128 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "PASS (0 failed)"
check $? "recur check of a mixer using every smooth function: passes (rc $rc: $(echo "$out" | tail -1))"
[ $rc = 0 ] || echo "$out" | tail -15

# a derivative that is not the forward's: check must fail, on x alone
cat > "$work/bounded.lua" <<'EOF'
local R = require "recur"
local m = R.mixer("bounded", { k = 64 })
local lam = m:param("lam", "channel", R.decay(0.81, 0.998))
m:recurrence { log_a = -R.softplus(lam), b = R.sqrtb(1e-8 * m.x * m.x) }
m:output(m.h)
return R.variants { mixer = m, chunk = { 16 }, prefix = { 32 } }
EOF
out=$("$recur" check "$work/bounded.lua" --seed "$seed" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qE "^  x .*FAIL$" && echo "$out" | grep -qE "^  lam .*PASS$" &&
	echo "$out" | tail -1 | grep -q "FAIL"
check $? "recur check fails where R.sqrtb's bounded derivative is not the forward's: x FAIL, lam PASS, exit 1 (rc $rc)"
[ $rc = 1 ] || echo "$out" | tail -8
sed 's/R.sqrtb(1e-8/R.sqrt(1 + 1e-8/' "$work/bounded.lua" > "$work/honest.lua"
out=$("$recur" check "$work/honest.lua" --seed "$seed" 2>&1); rc=$?
[ $rc = 0 ]; check $? "the same mixer with R.sqrt (the true derivative) passes (rc $rc: $(echo "$out" | tail -1))"

# refusals, each naming what it refuses
out=$("$recur" check "$work/honest.lua" --mixer honest 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF "no mixer honest in $work/honest.lua (its mixers: bounded)"
check $? "a --mixer that matches nothing is refused, naming the script's mixers (rc $rc: $out)"
out=$("$recur" check "$work/honest.lua" --shape 2x37x96 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF "shape 2x37x96" && echo "$out" | grep -qF "no multiple of 64"
check $? "a width that is no multiple of the heads is refused, naming the shape (rc $rc)"
out=$("$recur" check "$work/honest.lua" --shape 64x8192x1024 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF "64x8192x1024: more than"
check $? "a shape too large for finite differences is refused, naming it (rc $rc)"
out=$("$recur" check "$work/none.lua" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF "$work/none.lua"
check $? "a script that does not exist is named (rc $rc: $out)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
