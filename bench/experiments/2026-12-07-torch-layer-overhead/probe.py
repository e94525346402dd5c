"""Where one RG-LRU layer's time goes through PyTorch, against its kernels.

python3 probe.py KERNELS_DIR BxLxD ...: per shape, the layer's forward+
backward as examples/train_lm.py --bench-layer times it (perf_counter
between synchronisations, median of 7), the host time to enqueue the
forward and the backward, the GPU time between events around each, and
torch.profiler's device activities of one step (kernels, memsets, copies);
PROBE_CPROFILE=1: the host's Python functions over 50 steps too."""
import cProfile
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import recur  # noqa: E402


C_TIME = [0.0, 0]


def _timed(call):
    """LoadedVariant._call, its host time summed into C_TIME (librecur's enqueue, ctypes included)"""
    def wrapped(*a, **kw):
        t = time.perf_counter()
        try:
            return call(*a, **kw)
        finally:
            C_TIME[0] += time.perf_counter() - t
            C_TIME[1] += 1
    return wrapped


recur.device.LoadedVariant._call = _timed(recur.device.LoadedVariant._call)


def step(layer, x, dy):
    y = layer(x)
    y.backward(dy)
    x.grad = None
    layer.zero_grad(set_to_none=True)


def main():
    kdir = sys.argv[1]
    k = recur.load(kdir)
    for sh in sys.argv[2:]:
        B, L, D = (int(v) for v in sh.split("x"))
        torch.manual_seed(0)
        layer = recur.RGLRU(k, D).cuda()
        x = torch.randn(B, L, D, device="cuda").to(torch.bfloat16).requires_grad_()
        dy = torch.randn(B, L, D, device="cuda").to(torch.bfloat16)
        for _ in range(3):
            step(layer, x, dy)
        torch.cuda.synchronize()
        wall, host_f, host_b, gpu_f, gpu_b = [], [], [], [], []
        C_TIME[:] = [0.0, 0]
        e = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        for _ in range(7):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            e[0].record()
            y = layer(x)
            e[1].record()
            t1 = time.perf_counter()
            e[2].record()
            y.backward(dy)
            e[3].record()
            t2 = time.perf_counter()
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            wall.append((t3 - t0) * 1e3)
            host_f.append((t1 - t0) * 1e3)
            host_b.append((t2 - t1) * 1e3)
            gpu_f.append(e[0].elapsed_time(e[1]))
            gpu_b.append(e[2].elapsed_time(e[3]))
            x.grad = None
            layer.zero_grad(set_to_none=True)
        med = lambda v: sorted(v)[len(v) // 2]
        print("%s wall %.3f ms; host enqueue fwd %.3f bwd %.3f; gpu events fwd %.3f bwd %.3f; librecur %.1f us a "
              "call" % (sh, med(wall), med(host_f), med(host_b), med(gpu_f), med(gpu_b), C_TIME[0] / C_TIME[1] * 1e6),
              flush=True)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(2):
                step(layer, x, dy)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60),
              flush=True)
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25, max_name_column_width=60),
              flush=True)
        if os.environ.get("PROBE_CPROFILE"):   # the host's Python: 50 steps, no synchronisation inside
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(50):
                step(layer, x, dy)
            pr.disable()
            torch.cuda.synchronize()
            pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(30)
            pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(45)
        del layer, x, dy
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
