"""The forward's projections inside fwd_scan (scan_proj, templates/scan_proj.c)
on a GPU: each such variant against its twin with proj_fwd, bit for bit (the
same wgmma in the same order, the same rounding), and against the float64
reference, at shapes whose L is a multiple of no tile, B > 1.
    RECUR_LIB=build/librecur.so python3 tests/python/gpu_scanproj_test.py DIR
DIR: a folder of tests/grids/scanproj.lua, generated --sm sm_90a (an H100 or
H200). Outputs and workspaces are poisoned before every call; inputs are
fresh random numbers. Prints one line per check; exits 1 when any failed.
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


def twins(k, shape, g):
    """y, dx and dW of every scan_proj variant and of its twin, equal bits;
    the pair against the float64 reference"""
    B, L, D = shape
    x = t.fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    names = [n for n in k.variants("rglru") if n.startswith("apart_scanproj_") and "resets" not in n]
    if not names:
        return False, "no scan_proj variant in the folder"
    rows, ok = [], True
    for n in names:
        twin = n.replace("apart_scanproj_", "apart_")
        out = []
        for v in (n, twin):
            layer = recur.Mixer(k, "rglru", D, variant=v, generator=torch.Generator().manual_seed(7)).cuda()
            out.append(t.layer_grads(layer, x, dy))
        (y, dx, gr), (y2, dx2, gr2) = out
        same = torch.equal(y, y2) and torch.equal(dx, dx2) and all(torch.equal(a, b) for a, b in zip(gr, gr2))
        ry, rdx, rgr = ref_torch.forward_backward("rglru", x, list(layer.parameters()), dy)
        e = max([ref_torch.rel_l2(y, ry), ref_torch.rel_l2(dx, rdx)] + [ref_torch.rel_l2(a, b) for a, b in zip(gr, rgr)])
        fin = t.finite(y) and t.finite(dx) and all(t.finite(a) for a in gr)
        ok = ok and same and fin and e <= t.TOL
        rows.append("%s: %s, %.1e%s" % (n, "same bits" if same else "DIFFERENT bits", e, "" if fin else ", NON-FINITE"))
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
        name = "scan_proj against its twin and the reference %s" % "x".join(map(str, shape))
        t.check(name)(lambda: twins(k, shape, g))
    print("%d failed" % len(t.failures) if t.failures else "all passed")
    sys.exit(1 if t.failures else 0)


if __name__ == "__main__":
    main()
