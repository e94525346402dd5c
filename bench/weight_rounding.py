#!/usr/bin/env python3
"""How much of RG-LRU's output error the bf16 rounding of its projection
weights causes, by input scale: a float64 model of one head (64 channels,
256 steps, the spec's gates), run once with the fp32 weights and once with
them rounded to bf16 as the kernels' tensor-core projections use them (x is
bf16 in both, so every product is exact and the weights' rounding is the
only difference). Prints ||y_bf16w - y|| / ||y|| per scale of x.

    python3 bench/weight_rounding.py        # about a minute, standard library only
"""
import math
import random
import struct

K, L = 64, 256


def bf16(v):
    b = struct.unpack('<I', struct.pack('<f', v))[0]
    b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000
    return struct.unpack('<f', struct.pack('<I', b))[0]


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def run(xs, wa, wx, spl):
    h, ys = [0.0] * K, []
    for t, x in enumerate(xs):
        for j in range(K):
            r = sigmoid(sum(x[k] * wa[k][j] for k in range(K)))
            i = sigmoid(sum(x[k] * wx[k][j] for k in range(K)))
            a = math.exp(-8.0 * r * spl[j])
            m = 1.0 if t == 0 else math.sqrt(max(0.0, 1.0 - a * a))
            h[j] = (0.0 if t == 0 else a * h[j]) + m * i * x[j]
        ys.append(list(h))
    return ys


def main():
    rng = random.Random(1)
    wa = [[rng.gauss(0, 1 / 8) for _ in range(K)] for _ in range(K)]
    wx = [[rng.gauss(0, 1 / 8) for _ in range(K)] for _ in range(K)]
    spl = [-math.log(rng.uniform(0.81, 0.998)) / 8 for _ in range(K)]   # softplus(lam): a in [0.81, 0.998]
    wab = [[bf16(v) for v in row] for row in wa]
    wxb = [[bf16(v) for v in row] for row in wx]
    for scale in (1.0, 1e4, 1e5):
        xs = [[bf16(scale * rng.gauss(0, 1)) for _ in range(K)] for _ in range(L)]
        y, yb = run(xs, wa, wx, spl), run(xs, wab, wxb, spl)
        num = sum((p - q) ** 2 for rp, rq in zip(y, yb) for p, q in zip(rp, rq))
        den = sum(p * p for rp in y for p in rp)
        print(f"x scale {scale:g}: ||y(bf16 weights) - y|| / ||y|| = {math.sqrt(num / den):.1e}")


if __name__ == "__main__":
    main()
