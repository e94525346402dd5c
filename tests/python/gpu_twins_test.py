"""Variants that must compute their twin's bits, on a GPU: each against the
variant its name gives without the option, bit for bit, and the pair
against the float64 reference, at shapes whose L is a multiple of no tile,
B > 1.
  - scan_proj (templates/scan_proj.c): the forward's projections inside
    fwd_scan, the same wgmma in the same order, the same rounding as
    proj_fwd's; and its persistent form (proj_ahead), the same multiplies
    by a producer warpgroup;
  - recompute: the backward runs proj_fwd again instead of reading the
    forward's projections (the same kernel on the same inputs); and its
    forward keeps 4 bytes an element fewer for the backward (the saved
    tensor autograd holds).
    RECUR_LIB=build/librecur.so python3 tests/python/gpu_twins_test.py DIR
DIR: a folder holding such variants beside their twins (tests/grids/
scanproj.lua generated --sm sm_90a, an H100 or H200; lua/variants/
recurrentgemma.lua for recompute, any target). Outputs and workspaces are
poisoned before every call; inputs are fresh random numbers. Prints one line
per check; exits 1 when any failed.
"""
import json
import os
import sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_torch_test as t  # noqa: E402  (sets RECUR_POISON before recur is imported)
import torch  # noqa: E402
import recur  # noqa: E402
import ref_torch  # noqa: E402

OPTIONS = ("apart_scanproj_ahead_", "apart_scanproj_", "apart_recompute_")   # the options whose variants have a twin


def pairs(k):
    """(variant, twin) of every plain variant (no sequence state) with an option"""
    names = k.variants("rglru")
    return [(n, "apart_" + n[len(o):]) for n in names for o in OPTIONS
            if n.startswith(o) and "resets" not in n and "docs" not in n and "apart_" + n[len(o):] in names]


def saved_bytes(k, name, shape):
    return k.workspace_sizes(name, *shape)[0]


def twins(k, shape, g):
    """y, dx and dW of every variant with an option and of its twin, equal
    bits; the pair against the float64 reference; a recompute variant keeps
    B L D x 4 bytes fewer for the backward"""
    B, L, D = shape
    x = t.fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    found = pairs(k)
    if not found:
        return False, "no variant with an option (%s) beside its twin in the folder" % ", ".join(OPTIONS)
    rows, ok = [], True
    for n, twin in found:
        out = []
        for v in (n, twin):
            layer = recur.Mixer(k, "rglru", D, variant=v, generator=torch.Generator().manual_seed(7)).cuda()
            out.append(t.layer_grads(layer, x, dy))
        (y, dx, gr), (y2, dx2, gr2) = out
        same = torch.equal(y, y2) and torch.equal(dx, dx2) and all(torch.equal(a, b) for a, b in zip(gr, gr2))
        ry, rdx, rgr = ref_torch.forward_backward("rglru", x, list(layer.parameters()), dy)
        e = max([ref_torch.rel_l2(y, ry), ref_torch.rel_l2(dx, rdx)] + [ref_torch.rel_l2(a, b) for a, b in zip(gr, rgr)])
        fin = t.finite(y) and t.finite(dx) and all(t.finite(a) for a in gr)
        lean = ""
        if n.startswith("apart_recompute_"):
            kept, twin_kept = saved_bytes(k, n, shape), saved_bytes(k, twin, shape)
            fewer = twin_kept - kept == B * L * D * 4
            ok = ok and fewer
            lean = ", keeps %d bytes (the twin %d)%s" % (kept, twin_kept, "" if fewer else ": NOT 4 B/element fewer")
        ok = ok and same and fin and e <= t.TOL
        rows.append("%s: %s, %.1e%s%s" % (n, "same bits" if same else "DIFFERENT bits", e, lean,
                                          "" if fin else ", NON-FINITE"))
    return ok, "; ".join(rows)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    k = recur.load(sys.argv[1])
    with open(os.path.join(sys.argv[1], "manifest.json")) as f:
        K = json.load(f)["mixers"]["rglru"]["k"]
    g = torch.Generator(device="cuda").manual_seed(11)
    for shape in ((2, 1000, 2560), (1, 4096, 4096), (3, 77, 512), (2, 333, 384)):
        if shape[2] % K:
            continue
        name = "each variant with an option against its twin and the reference %s" % "x".join(map(str, shape))
        t.check(name)(lambda: twins(k, shape, g))
    print("%d failed" % len(t.failures) if t.failures else "all passed")
    sys.exit(1 if t.failures else 0)


if __name__ == "__main__":
    main()
