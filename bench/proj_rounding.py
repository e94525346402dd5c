#!/usr/bin/env python3
"""Whether the projections apart (templates/proj.c) could be stored in
bf16 instead of fp32: RG-LRU's output error that rounding the stored
pre-activations to bf16 adds, in float64, at heads of 256 (RecurrentGemma's)
over L steps. x and the weights are bf16 in every run (as the kernels'
tensor-core operands), so the projections are exact but for the rounding
under test. Prints ||y - y_ref|| / ||y_ref|| for the projections kept in
fp32 (the kernels today) and rounded to bf16, and the worst token row.

    python3 bench/proj_rounding.py [L]      # torch (CPU); a few seconds
"""
import math
import sys

import torch

torch.manual_seed(1)
B, L, D, K = 1, int(sys.argv[1]) if len(sys.argv) > 1 else 4096, 512, 256
H = D // K
x = torch.randn(B, L, D).to(torch.bfloat16).double()


def weights():
    return (torch.randn(H, K, K) / math.sqrt(K)).to(torch.bfloat16).double()


Wa, Wx = weights(), weights()
u = torch.empty(D, dtype=torch.float64).uniform_(0.9 ** 2, 0.999 ** 2)
lam = torch.log(torch.exp(-0.5 * torch.log(u)) - 1)   # RecurrentGemma's a_param


def proj(W):
    return torch.einsum("blhi,hij->blhj", x.view(B, L, H, K), W).reshape(B, L, D)


def run(pa, px):
    """y = h of the spec's RG-LRU from h = 0 (a reset at t = 0)."""
    log_a = -8 * torch.sigmoid(pa) * torch.nn.functional.softplus(lam)
    a = torch.exp(log_a)
    m = torch.sqrt(1 - torch.exp(2 * log_a))
    m[:, 0] = 1
    b = m * torch.sigmoid(px) * x
    h, ys = torch.zeros(B, D, dtype=torch.float64), []
    for t in range(L):
        h = (a[:, t] * h if t else 0) + b[:, t]
        ys.append(h)
    return torch.stack(ys, 1)


def rel(u, v):
    return float((u - v).norm() / v.norm())


pa, px = proj(Wa), proj(Wx)
y = run(pa, px)
y32 = run(pa.float().double(), px.float().double())
y16 = run(pa.to(torch.bfloat16).double(), px.to(torch.bfloat16).double())
rows = (y16 - y).norm(dim=2) / y.norm(dim=2).clamp_min(1e-300)
print("1x%dx%d, heads of %d: y relative error, projections stored fp32 %.2e, bf16 %.2e (worst token row %.2e)"
      % (L, D, K, rel(y32, y), rel(y16, y), float(rows.max())))
