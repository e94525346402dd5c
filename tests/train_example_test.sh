#!/usr/bin/env bash
# examples/train_lm.py without a GPU: its plain-PyTorch RG-LRU (the
# baseline its tokens per second are compared with) against float64 loops
# (--self-test: the chunked scan, its gradients, the bounded sqrt), and a
# few training steps of the smallest model on the CPU with each file a
# document (--docs; the plain path runs in --bench-layer): finite losses, and
# 24 bytes sampled through the decode step (--sample) after it matched the
# forward over the prompt,
# the log, the loss plot and the table written; one layer timed alone
# (--bench-layer). Skips where no python3
# has torch.
#   usage: train_example_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
src=$2 work=$3
py=""
for c in ${PYTHON:-} $(type -ap python3); do
	if "$c" -c "import torch" >/dev/null 2>&1; then py=$c; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with torch (Debian: apt-get install python3-torch)"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
export PYTHONDONTWRITEBYTECODE=1
pass=0 fail=0
. "$src/tests/check_lib.sh"

out=$("$py" "$src/examples/train_lm.py" --self-test 2>&1); rc=$?
echo "$out" | sed 's/^/     /'
check $rc "the plain-PyTorch layer agrees with float64 loops ($(echo "$out" | grep -c '^ok') checks)"

out=$("$py" "$src/examples/train_lm.py" --mixer torch --device cpu --tiny --steps 4 --eval-every 2 --docs \
	--sample 24 --out "$work/run" 2>&1); rc=$?
echo "$out" | grep -E "^text" | sed 's/^/     /'
echo "$out" | tail -3 | sed 's/^/     /'
check $rc "4 training steps of the tiny model on the CPU, each file a document (--docs)"
for f in log.json loss.svg summary.md; do
	[ -s "$work/run/$f" ]; check $? "it wrote $f"
done
"$py" - "$work/run/log.json" <<'PY'
import json, math, sys
runs = json.load(open(sys.argv[1]))["runs"]
ok = len(runs) == 1 and len(runs[0]["loss"]) == 4 and all(math.isfinite(v) for v in runs[0]["loss"])
sys.exit(0 if ok else 1)
PY
check $? "the log holds 4 finite losses"
"$py" - "$work/run/log.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
ok = r["sample"].startswith("static int ") and len(r["sample"].encode()) >= len("static int ") + 8 and \
     r["decode_vs_forward"] < 1e-2
print("     decode vs forward %.1e; sample %r" % (r["decode_vs_forward"], r["sample"]))
sys.exit(0 if ok else 1)
PY
check $? "--sample 24: the decode path gives the forward's logits over the prompt, and 24 bytes follow it"
out=$("$py" "$src/examples/train_lm.py" --mixer torch --device cpu --bench-layer 1x64x64 --bench-reps 2 \
	--bench-warmup 1 --out "$work/layer" 2>&1); rc=$?
echo "$out" | tail -1 | sed 's/^/     /'
[ $rc = 0 ] && grep -q '"tokens_per_s"' "$work/layer/layers.json"
check $? "--bench-layer times one layer and writes layers.json"
# a mixer out of device memory (PyTorch's scan at long L) is a row saying so, and the next still runs
"$py" - "$src/examples" <<'PY'
import argparse, sys
sys.path.insert(0, sys.argv[1])
import train_lm as t
calls = [0]
forward = t.TorchRGLRU.forward
def first_runs_out(self, x):
    calls[0] += 1
    if calls[0] == 1:
        raise t.OUT_OF_MEMORY("CUDA out of memory. Tried to allocate 40.00 GiB.\nmore")
    return forward(self, x)
t.TorchRGLRU.forward = first_runs_out
a = argparse.Namespace(device="cpu", bench_shape=[1, 64, 64], mixers=["torch", "torch"], seed=0, head=64,
                       bench_warmup=1, bench_reps=2)
rows = t.bench_layers(a)
ok = (len(rows) == 2 and rows[0]["ms"] is None and rows[0]["error"].startswith("out of memory: CUDA out of memory")
      and "more" not in rows[0]["error"] and rows[1]["ms"] > 0)
sys.exit(0 if ok else 1)
PY
check $? "--bench-layer: a mixer out of memory gets its row, the next mixer still runs"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
