"""The plain-PyTorch RG-LRU of examples/train_lm.py, one forward and
backward on the CPU: its peak resident memory over the run's start, per
element of B L D, and its time, at a scan chunk.
    python3 memtest.py L CHUNK      (B = 1, D = 2560, heads of 256)
One process a measurement: ru_maxrss is the process's peak."""
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
import train_lm as t  # noqa: E402

B, L, D, chunk = 1, int(sys.argv[1]), 2560, int(sys.argv[2])
layer = t.TorchRGLRU(D, head=256)
x = torch.randn(B, L, D).bfloat16().requires_grad_()
dy = torch.randn(B, L, D).bfloat16()
t.linear_scan.__defaults__ = (chunk,)
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.time()
layer(x).backward(dy)
r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("L=%d chunk %d: peak +%.0f MB = %.0f B/element, %.2f s"
      % (L, chunk, (r1 - r0) / 1024, (r1 - r0) * 1024 / (B * L * D), time.time() - t0))
