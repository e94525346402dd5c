"""Where a layer's host time goes, call by call, in a loop without
synchronisations (as tests/python/gpu_torch_test.py's host overhead check
runs it): each of recur's functions on the path timed around itself, in
whichever thread runs it (autograd's backward runs in its own).

    python3 probe_host.py KERNELS_DIR BxLxD ..."""
import os
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import recur  # noqa: E402
import recur.ops  # noqa: E402

T = {}
_lock = threading.Lock()


def timed(owner, name, label):
    f = getattr(owner, name)

    def wrapped(*a, **kw):
        t = time.perf_counter()
        try:
            return f(*a, **kw)
        finally:
            dt = time.perf_counter() - t
            with _lock:
                s = T.setdefault(label, [0.0, 0])
                s[0] += dt
                s[1] += 1
    setattr(owner, name, wrapped)


timed(recur.device.LoadedVariant, "_call", "librecur call (ctypes + driver)")
timed(recur.ops, "_resolve", "_resolve (checks, choice)")
timed(recur.ops, "forward_impl", "forward_impl (all of it)")
timed(recur.ops, "backward_impl", "backward_impl (all of it)")
timed(recur.ops._MixerFunction, "backward", "_MixerFunction.backward (all of it)")


def main():
    k = recur.load(sys.argv[1])
    for sh in sys.argv[2:]:
        B, L, D = (int(v) for v in sh.split("x"))
        layer = recur.RGLRU(k, D).cuda()
        x = torch.randn(B, L, D, device="cuda").to(torch.bfloat16).requires_grad_()
        dy = torch.randn_like(x)
        for _ in range(10):
            layer(x).backward(dy)
        torch.cuda.synchronize()
        n = 200
        T.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            y = layer(x)
        fwd = (time.perf_counter() - t0) / n
        torch.cuda.synchronize()
        fw = dict((k_, list(v)) for k_, v in T.items())
        T.clear()
        tb = 0.0
        t0 = time.perf_counter()
        for _ in range(n):
            y = layer(x)
            t1 = time.perf_counter()
            y.backward(dy)
            tb += time.perf_counter() - t1
        both = (time.perf_counter() - t0) / n
        torch.cuda.synchronize()
        print("%s: loop of %d: forward %.1f us a call; forward+backward %.1f us, y.backward() %.1f us" % (
            sh, n, fwd * 1e6, both * 1e6, tb / n * 1e6))
        for label, (s, c) in sorted(fw.items()):
            print("  forward loop   %-40s %8.1f us a call (%d calls)" % (label, s / c * 1e6, c))
        for label, (s, c) in sorted(T.items()):
            print("  f+b loop       %-40s %8.1f us a call (%d calls)" % (label, s / c * 1e6, c))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
