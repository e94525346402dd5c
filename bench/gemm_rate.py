#!/usr/bin/env python3
"""The GPU's measured bf16 tensor-core rate: torch.matmul (cuBLAS) of bf16
square matrices with fp32 accumulation, the median of timed repeats after a
warm-up, in TFLOP/s (2 N^3 per product). The tensor-core floor of a kernel
set is its tensor FLOP over this rate (issue 34: "the tensor-core floor at
the measured bf16 rate"), where the data sheet's peak is a ceiling no GEMM
reaches.

    python3 bench/gemm_rate.py [N ...]      # default 4096 8192 16384; needs CUDA
"""
import sys

import torch


def rate(n, repeats=20):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b)
    ms = []
    for _ in range(repeats):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.matmul(a, b)
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    ms.sort()
    med = ms[len(ms) // 2]
    return med, 2.0 * n ** 3 / (med * 1e-3) / 1e12


def main():
    if not torch.cuda.is_available():
        print("gemm_rate: no CUDA device: nothing measured", file=sys.stderr)
        return 1
    sizes = [int(a) for a in sys.argv[1:]] or [4096, 8192, 16384]
    print("%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    best = 0.0
    for n in sizes:
        med, tf = rate(n)
        best = max(best, tf)
        print("bf16 GEMM %5d^3: %8.3f ms  %6.1f TFLOP/s" % (n, med, tf))
    print("measured bf16 rate: %.1f TFLOP/s (the best of the sizes above)" % best)
    return 0


if __name__ == "__main__":
    sys.exit(main())
