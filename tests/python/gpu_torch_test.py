"""The Python package on a GPU: the torch operators against a float64
reference written from spec/architectures.md (ref_torch.py), and what a
model author relies on -- torch.compile without graph breaks, CUDA graph
capture, two streams from two threads, several forwards before their
backwards, bf16 autocast, a clear exception for every wrong input, a
backward that fills no tensor of zeros and refuses a second derivative, a
module made bf16, and a
released RecurrentGemma RG-LRU's weights and transformers' RecurrentGemmaRglru
(recur.apply_to_recurrentgemma) run as the release computes them.

    RECUR_LIB=build/librecur.so python3 tests/python/gpu_torch_test.py DIR [RESETS_DIR [DOCS_DIR]] [--quick]

DIR: a folder of `recur gen` holding RG-LRU and SAMU variants (e.g.
tests/grids/representative.lua's). Prints one line per check, `ok` or
`FAIL` with its numbers, and exits 1 when any failed. --quick leaves out
the seed shapes (1x8192x1024, 3x1000x1024). RESETS_DIR: a folder of
variants taking a sequence state (lua/variants/state.lua), checked with
reset marks and with initial and final states against the reference
given the same. DOCS_DIR: a folder of variants taking cu_seqlens
(lua/variants/docs.lua), checked with packed documents of a state each
against the reference run document by document.

Outputs and workspaces are poisoned before every call (RECUR_POISON=1:
NaN outputs, 0xff workspace bytes), inputs are fresh random numbers.
"""
import os
import sys
import threading
import time
import traceback

os.environ["RECUR_POISON"] = "1"   # read when recur.ops is imported
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import recur  # noqa: E402
import ref_torch  # noqa: E402

TOL = 1e-2               # the spec's relative L2 tolerance per tensor
SMALL = [(2, 37, 64), (1, 256, 128)]
SEED = [(1, 8192, 1024), (3, 1000, 1024)]
failures = []


def line(ok, name, detail=""):
    print("%-4s %-58s %s" % ("ok" if ok else "FAIL", name, detail), flush=True)
    if not ok:
        failures.append(name)


def check(name):
    """Runs the decorated function as one check: it returns (ok, detail);
    an exception is a FAIL with its last lines."""
    def run(fn):
        try:
            ok, detail = fn()
        except Exception as e:  # noqa: BLE001 -- any exception is this check's failure
            tb = traceback.format_exc().strip().splitlines()
            ok, detail = False, "%s: %s | %s" % (type(e).__name__, str(e)[:300], " / ".join(tb[-3:-1]))
        line(ok, name, detail)
        return fn
    return run


def finite(t):
    return bool(torch.isfinite(t.float()).all())


def fresh_x(B, L, D, g):
    return torch.randn(B, L, D, generator=g, device="cuda").bfloat16()


def layer_grads(layer, x, dy):
    """y, dx and the parameter gradients of one call through autograd."""
    x = x.detach().requires_grad_(True)
    ps = list(layer.parameters())
    y = layer(x)
    grads = torch.autograd.grad(y, [x] + ps, dy)
    return y.detach(), grads[0], list(grads[1:])


# ---- correctness against the float64 reference ----

def against_reference(k, mixer, shape, g):
    B, L, D = shape
    layer = recur.Mixer(k, mixer, D, generator=torch.Generator().manual_seed(B * L + D)).cuda()
    x = fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    y, dx, grads = layer_grads(layer, x, dy)
    torch.cuda.synchronize()
    ry, rdx, rgrads = ref_torch.forward_backward(mixer, x, list(layer.parameters()), dy)
    errs = [("y", ref_torch.rel_l2(y, ry)), ("dx", ref_torch.rel_l2(dx, rdx))]
    errs += [("d" + s.name, ref_torch.rel_l2(gr, rg)) for s, gr, rg in zip(layer.specs, grads, rgrads)]
    nonfinite = [n for n, t in [("y", y), ("dx", dx)] + [("d" + s.name, t) for s, t in zip(layer.specs, grads)]
                 if not finite(t)]
    # a second run gives the same bits (fixed-order reductions)
    _, dx2, grads2 = layer_grads(layer, x, dy)
    same = torch.equal(dx, dx2) and all(torch.equal(a, b) for a, b in zip(grads, grads2))
    variant = k.choose(mixer, B, L, D, recur.ops.device_info(x.device.index))[0]
    ok = all(e <= TOL for _, e in errs) and not nonfinite and same
    detail = "%s %s | %s%s%s" % (variant, "x".join(map(str, shape)), " ".join("%s %.1e" % e for e in errs),
                                  " | NOT FINITE: " + ",".join(nonfinite) if nonfinite else "",
                                  "" if same else " | second run differs")
    return ok, detail


def released_layer(k, shape, g):
    """A RecurrentGemma RG-LRU checkpoint (transformers' names, bf16, heads
    as wide as the folder's) through RGLRU.from_recurrentgemma, against
    transformers' forward on the same tensors in float64."""
    B, L, D = shape
    H, K, _ = next(s.dims for s in k.params("rglru", D) if s.name == "Wa")
    prefix = "model.layers.0.temporal_block.rg_lru."
    state = ref_torch.released_rglru(H, K, 0, prefix, seed=B * L + D, device="cuda")
    layer = recur.RGLRU.from_recurrentgemma(k, state, prefix).cuda()
    x = fresh_x(B, L, D, g)
    with torch.no_grad():
        y = layer(x)
    want = ref_torch.hf_rglru(x, state, prefix, torch.arange(L, device="cuda").repeat(B, 1))
    err = ref_torch.rel_l2(y, want)
    return err <= TOL and finite(y), "%d heads of %d, %s | y %.1e" % (H, K, "x".join(map(str, shape)), err)


def transformers_layer(k, shape, g):
    """A model's transformers RecurrentGemmaRglru (ref_torch's: its names,
    recurrent_states and forward) after recur.apply_to_recurrentgemma,
    against that forward in float64: y, dx and its five parameters'
    gradients, with a second document in row 0 where the folder takes marks."""
    B, L, D = shape
    H, K, _ = next(s.dims for s in k.params("rglru", D) if s.name == "Wa")
    m = torch.nn.Module()
    m.rg_lru = ref_torch.RecurrentGemmaRglru(D, H, seed=B * L + D, device="cuda")
    ref = {n: p.detach().double().requires_grad_(True) for n, p in m.rg_lru.named_parameters()}
    recur.apply_to_recurrentgemma(m, k)
    pos = torch.arange(L, device="cuda").repeat(B, 1)
    if any("reset" in v.state for v in k.manifest.variants.values()):
        pos[0, L // 2:] -= L // 2
    x = fresh_x(B, L, D, g).requires_grad_(True)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    y = m.rg_lru(x, pos)
    y.backward(dy)
    xr = x.detach().double().requires_grad_(True)
    yr = ref_torch.hf_rglru(xr, ref, "", pos)
    (yr * dy.double()).sum().backward()
    yr = yr.detach()
    errs = [("y", ref_torch.rel_l2(y, yr)), ("dx", ref_torch.rel_l2(x.grad, xr.grad))]
    errs += [("d" + n, ref_torch.rel_l2(p.grad, ref[n].grad)) for n, p in m.rg_lru.named_parameters()]
    ok = all(e <= TOL for _, e in errs) and finite(y)
    return ok, "%d heads of %d, %s%s | %s" % (H, K, "x".join(map(str, shape)), ", two documents in row 0"
                                             if bool((pos[0] == 0).sum() > 1) else "",
                                             " ".join("%s %.1e" % e for e in errs))


def with_resets(k, mixer, shape, g):
    """A variant taking reset marks against the float64 reference with the
    same marks: random at rate 0.01, both sides of every 128-token edge in
    the first half of every 4096 tokens (as recur verify --resets: the
    second halves hold tiles and groups without an edge mark), t = 1, 2 and
    L - 1."""
    B, L, D = shape
    layer = recur.Mixer(k, mixer, D, generator=torch.Generator().manual_seed(B * L + D + 1)).cuda()
    x = fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    marks = torch.rand(B, L, generator=g, device="cuda") < 0.01
    t = torch.arange(L, device="cuda")
    m = t + (t % 128 == 127).long()   # the multiple of 128 that t is beside
    edge = (m % 128 == 0) & (m % 4096 < 2048)
    marks |= (edge | (t == 1) | (t == 2) | (t == L - 1)) & (t > 0)
    xr = x.detach().requires_grad_(True)
    ps = list(layer.parameters())
    y = layer(xr, resets=marks)
    dx, *grads = torch.autograd.grad(y, [xr] + ps, dy)
    ry, rdx, rgrads = ref_torch.forward_backward(mixer, x, ps, dy, marks)
    errs = [("y", ref_torch.rel_l2(y, ry)), ("dx", ref_torch.rel_l2(dx, rdx))]
    errs += [("d" + s.name, ref_torch.rel_l2(a, b)) for s, a, b in zip(layer.specs, grads, rgrads)]
    variant = k.choose(mixer, B, L, D, recur.ops.device_info(0), "", frozenset(("reset",)))[0]
    ok = all(e <= TOL for _, e in errs)
    return ok, "%s %s, %d marks | %s" % (variant, "x".join(map(str, shape)), int(marks.sum()),
                                        " ".join("%s %.1e" % e for e in errs))


def with_states(k, mixer, shape, g):
    """A variant taking states against the float64 reference: random h0,
    hT returned and given a random gradient; y, hT, dx, dh0 and every
    parameter gradient."""
    B, L, D = shape
    layer = recur.Mixer(k, mixer, D, generator=torch.Generator().manual_seed(B * L + D + 2)).cuda()
    x = fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    h0 = torch.randn(B, D, generator=g, device="cuda")
    dhT = torch.randn(B, D, generator=g, device="cuda")
    xr, hr = x.detach().requires_grad_(True), h0.detach().requires_grad_(True)
    ps = list(layer.parameters())
    y, hT = layer(xr, initial_state=hr, output_final_state=True)
    dx, dh0, *grads = torch.autograd.grad([y, hT], [xr, hr] + ps, [dy, dhT])
    ry, rdx, rgrads, rhT, rdh0 = ref_torch.forward_backward(mixer, x, ps, dy, h0=h0, dhT=dhT)
    errs = [("y", ref_torch.rel_l2(y, ry)), ("hT", ref_torch.rel_l2(hT, rhT)), ("dx", ref_torch.rel_l2(dx, rdx)),
            ("dh0", ref_torch.rel_l2(dh0, rdh0))]
    errs += [("d" + s.name, ref_torch.rel_l2(a, b)) for s, a, b in zip(layer.specs, grads, rgrads)]
    variant = k.choose(mixer, B, L, D, recur.ops.device_info(0), "", frozenset(("h0",)))[0]
    return all(e <= TOL for _, e in errs), "%s %s | %s" % (variant, "x".join(map(str, shape)),
                                                            " ".join("%s %.1e" % e for e in errs))


def with_row_map(k, mixer, shape, g):
    """recur.row_map, the way a split across devices uses it: x's two parts
    each from a zero state with their maps; the maps composed give the
    state one forward over the whole leaves (hT = exp(map_loga) h0 +
    map_h), the second part run from the first's end state gives the whole's
    y there, and a random h0 keeps the map's identity."""
    B, L, D = shape
    layer = recur.Mixer(k, mixer, D, generator=torch.Generator().manual_seed(B * L + D + 3)).cuda()
    ps = list(layer.parameters())
    x = fresh_x(B, L, D, g)
    l1 = L * 2 // 5
    zeros = torch.zeros(B, D, device="cuda")
    with torch.no_grad():
        y, hT = layer(x, initial_state=zeros, output_final_state=True)
        _, hT1, _, _ = recur.row_map(x[:, :l1].contiguous(), ps, k, mixer, zeros)
        y2, _, la2, mh2 = recur.row_map(x[:, l1:].contiguous(), ps, k, mixer, hT1)
        _, _, la0, mh0 = recur.row_map(x[:, l1:].contiguous(), ps, k, mixer, zeros)
        h0 = torch.randn(B, D, generator=g, device="cuda")
        _, hTr, lar, mhr = recur.row_map(x[:, l1:].contiguous(), ps, k, mixer, h0)
    errs = [("y of part 2", ref_torch.rel_l2(y2, y[:, l1:])),
            ("composed state", ref_torch.rel_l2(torch.exp(la0) * hT1 + mh0, hT)),
            ("map from h0", ref_torch.rel_l2(torch.exp(lar) * h0 + mhr, hTr)),
            ("map_loga the same from any h0", ref_torch.rel_l2(lar, la2))]
    variant = k.choose(mixer, B, L, D, recur.ops.device_info(0), "", frozenset(("h0", "map_loga", "map_h")))[0]
    return all(e <= TOL for _, e in errs), "%s %s | %s" % (variant, "x".join(map(str, shape)),
                                                            " ".join("%s %.1e" % e for e in errs))


def with_docs(k, mixer, shape, g):
    """Documents packed as cu_seqlens, a state each (a docs variant): random
    lengths (one of a token, the last), random h0 [N, D] and a gradient of
    each final state; against the float64 reference run document by
    document from its own h0 (the parameter gradients summed)."""
    B, L, D = shape
    layer = recur.Mixer(k, mixer, D, generator=torch.Generator().manual_seed(L + D + 3)).cuda()
    x = fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    starts = sorted(set(torch.randint(1, L - 1, (max(1, L // 97),), generator=g, device="cuda").tolist()))
    cu = torch.tensor([0] + starts + [L - 1, L], dtype=torch.int32, device="cuda")
    n = cu.numel() - 1
    h0 = torch.randn(n, D, generator=g, device="cuda")
    dhT = torch.randn(n, D, generator=g, device="cuda")
    xr, hr = x.detach().requires_grad_(True), h0.detach().requires_grad_(True)
    ps = list(layer.parameters())
    y, hT = layer(xr, cu_seqlens=cu, initial_state=hr, output_final_state=True)
    dx, dh0, *grads = torch.autograd.grad([y, hT], [xr, hr] + ps, [dy, dhT])
    ry, rdx, rhT, rdh0 = torch.zeros_like(y, dtype=torch.float64), None, [], []
    rdx = torch.zeros_like(ry)
    rgrads = None
    bounds = cu.tolist()
    for i in range(n):
        a, b = bounds[i], bounds[i + 1]
        yi, dxi, gi, hTi, dh0i = ref_torch.forward_backward(mixer, x[:, a:b], ps, dy[:, a:b], h0=h0[i:i + 1],
                                                             dhT=dhT[i:i + 1])
        ry[:, a:b], rdx[:, a:b] = yi, dxi
        rhT.append(hTi)
        rdh0.append(dh0i)
        rgrads = gi if rgrads is None else [u + v for u, v in zip(rgrads, gi)]
    rhT, rdh0 = torch.cat(rhT), torch.cat(rdh0)
    errs = [("y", ref_torch.rel_l2(y, ry)), ("hT", ref_torch.rel_l2(hT, rhT)), ("dx", ref_torch.rel_l2(dx, rdx)),
            ("dh0", ref_torch.rel_l2(dh0, rdh0))]
    errs += [("d" + s.name, ref_torch.rel_l2(a, b)) for s, a, b in zip(layer.specs, grads, rgrads)]
    variant = k.choose(mixer, B, L, D, recur.ops.device_info(0), "", frozenset(("cu_seqlens", "h0")))[0]
    return all(e <= TOL for _, e in errs), "%s %s, %d documents | %s" % (
        variant, "x".join(map(str, shape)), n, " ".join("%s %.1e" % e for e in errs))


def pinned_variants(k, mixer, shape, g):
    """Every variant of the mixer in the folder, pinned, at one shape."""
    B, L, D = shape
    x = fresh_x(B, L, D, g)
    dy = torch.randn(B, L, D, generator=g, device="cuda").bfloat16()
    worst, rows = 0.0, []
    ref = None
    for name in k.variants(mixer):
        layer = recur.Mixer(k, mixer, D, variant=name, generator=torch.Generator().manual_seed(5)).cuda()
        if ref is None:
            ref = ref_torch.forward_backward(mixer, x, list(layer.parameters()), dy)
        y, dx, grads = layer_grads(layer, x, dy)
        e = max([ref_torch.rel_l2(y, ref[0]), ref_torch.rel_l2(dx, ref[1])] +
                [ref_torch.rel_l2(a, b) for a, b in zip(grads, ref[2])])
        rows.append("%s %.1e" % (name, e))
        worst = max(worst, e if e == e else float("inf"))
    return worst <= TOL, "worst %.1e | %s" % (worst, "; ".join(rows))


# ---- what a model relies on ----

class TwoLayers(torch.nn.Module):
    def __init__(self, k, D):
        super().__init__()
        self.a = recur.RGLRU(k, D)
        self.b = recur.SAMU(k, D)

    def forward(self, x):
        h = x + self.a(x)
        return h + self.b(h)


def compiled_two_layers(k, g):
    if not recur.HAS_CUSTOM_OP:
        return False, "torch %s has no torch.library.custom_op" % torch.__version__
    D = 128
    model = TwoLayers(k, D).cuda()
    x = fresh_x(2, 300, D, g)
    dy = torch.randn_like(x)
    ye, dxe, ge = layer_grads(model, x, dy)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    yc, dxc, gc = layer_grads(compiled, x, dy)
    errs = [ref_torch.rel_l2(yc, ye), ref_torch.rel_l2(dxc, dxe)] + [ref_torch.rel_l2(a, b) for a, b in zip(gc, ge)]
    # another shape: a recompile (or a dynamic graph) must give the eager numbers too
    x2 = fresh_x(1, 77, D, g)
    dy2 = torch.randn_like(x2)
    ye2, _, _ = layer_grads(model, x2, dy2)
    yc2, _, _ = layer_grads(compiled, x2, dy2)
    errs.append(ref_torch.rel_l2(yc2, ye2))
    return max(errs) <= 1e-3, "fullgraph=True, compiled vs eager: worst rel err %.1e over y, dx, %d grads, 2nd shape" % (
        max(errs), len(gc))


def graph_capture(k, g):
    D = 128
    model = TwoLayers(k, D).cuda()
    static_x = fresh_x(2, 300, D, g).requires_grad_(True)
    static_dy = torch.randn_like(static_x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):           # warm up: runtime, modules, allocator
        for _ in range(3):
            model.zero_grad(set_to_none=True)
            static_x.grad = None
            model(static_x).backward(static_dy)
    torch.cuda.current_stream().wait_stream(side)
    model.zero_grad(set_to_none=True)
    static_x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
        static_y.backward(static_dy)
    results = []
    for _ in range(2):
        new_x, new_dy = fresh_x(2, 300, D, g), torch.randn_like(static_dy)
        with torch.no_grad():
            static_x.copy_(new_x)
            static_dy.copy_(new_dy)
        graph.replay()
        torch.cuda.synchronize()
        ye, dxe, ge = layer_grads(model, new_x, new_dy)
        same = torch.equal(static_y, ye) and torch.equal(static_x.grad, dxe) and all(
            torch.equal(p.grad, q) for p, q in zip(model.parameters(), ge))
        results.append(same)
    return all(results), "forward+backward of two layers captured once, replayed twice: %s" % (
        ", ".join("bit-identical to eager" if r else "DIFFERS from eager" for r in results))


def two_streams(k, g):
    D = 256
    layer = recur.RGLRU(k, D).cuda()
    xs = [fresh_x(2, 1000, D, g), fresh_x(1, 3000, D, g)]
    dys = [torch.randn_like(x) for x in xs]
    expected = [layer_grads(layer, x, dy) for x, dy in zip(xs, dys)]
    torch.cuda.synchronize()
    got = [None, None]
    errors = []
    start = threading.Barrier(2)

    def run(i, stream):
        try:
            with torch.cuda.stream(stream):
                start.wait()
                for _ in range(5):
                    got[i] = layer_grads(layer, xs[i], dys[i])
            stream.synchronize()
        except Exception as e:  # noqa: BLE001 -- reported by the check
            errors.append("%s: %s" % (type(e).__name__, e))

    threads = [threading.Thread(target=run, args=(i, torch.cuda.Stream())) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        return False, "; ".join(errors)
    same = all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and all(torch.equal(p, q) for p, q in zip(a[2], b[2]))
               for a, b in zip(got, expected))
    return same, "two threads, one stream each, the same layer at 2x1000 and 1x3000 tokens: %s" % (
        "bit-identical to one stream" if same else "DIFFERENT from one stream")


def three_forwards_one_backward(k, g):
    D = 128
    B, L = 2, 500
    layers = [recur.SAMU(k, D, generator=torch.Generator().manual_seed(i)).cuda() for i in range(3)]
    x = fresh_x(B, L, D, g).requires_grad_(True)
    dy = torch.randn_like(x)
    h = x
    for layer in layers:          # three forwards, three saved regions alive at once
        h = layer(h)
    params = [p for layer in layers for p in layer.parameters()]
    got = torch.autograd.grad(h, [x] + params, dy)
    # the same chain with each backward right after its own forward
    inputs = [x.detach()]
    for layer in layers:
        y, _ = recur.forward(inputs[-1], list(layer.parameters()), k, "samu")
        inputs.append(y)
    d = dy
    want = []
    for i in reversed(range(3)):
        ps = list(layers[i].parameters())
        _, saved = recur.forward(inputs[i], ps, k, "samu")
        d, grads = recur.backward(d, inputs[i], ps, saved, k, "samu")
        want = grads + want
    want = [d] + want
    same = all(torch.equal(a, b) for a, b in zip(got, want))
    own = [k.on(x.device.index).variant(n).own_workspace_bytes() for n in k.on(x.device.index)._variants]
    return same and not any(own), "3 SAMU layers at %dx%dx%d, then one backward: %s; bytes the variants hold " \
        "themselves: %s" % (B, L, D, "bit-identical to forward+backward per layer" if same else "DIFFERENT", own)


def autocast(k, g):
    D = 128
    layer = recur.RGLRU(k, D).cuda()
    x32 = torch.randn(2, 100, D, generator=g, device="cuda")
    xb = x32.bfloat16()
    y_ref = layer(xb)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        x = x32.clone().requires_grad_(True)
        y = layer(x)
    y.float().sum().backward()
    ok = y.dtype == torch.bfloat16 and torch.equal(y, y_ref) and x.grad is not None and x.grad.dtype == torch.float32
    refused = False
    try:
        with torch.autocast("cuda", dtype=torch.float16):
            layer(x32)
    except TypeError:
        refused = True
    return ok and refused, "bf16 autocast: fp32 x cast (y bf16, equal to a bf16 x; dx fp32); fp16 autocast refused: %s" % refused


def wrong_inputs(k, g):
    D = 128
    layer = recur.RGLRU(k, D).cuda()
    x = fresh_x(2, 37, D, g)
    buf = torch.empty(2 * 37 * D + 1, dtype=torch.bfloat16, device="cuda")
    misaligned = buf[1:].view(2, 37, D)
    cases = [
        ("x on the CPU", lambda: layer(x.cpu()), ValueError),
        ("x float32, no autocast", lambda: layer(x.float()), TypeError),
        ("x float16", lambda: layer(x.half()), TypeError),
        ("x of 2 dims", lambda: layer(x[0]), ValueError),
        ("x not contiguous", lambda: layer(x.transpose(0, 1)), ValueError),
        ("x of another width", lambda: layer(fresh_x(2, 37, 2 * D, g)), ValueError),
        ("a width the kernels refuse", lambda: recur.mix(x[..., :96].contiguous(), list(
            recur.RGLRU(k, 64).parameters()), k, "rglru"), ValueError),
        ("x not 16-byte aligned", lambda: layer(misaligned), ValueError),
        ("parameters on the CPU", lambda: recur.RGLRU(k, D)(x), ValueError),
        ("parameters in bf16 to recur.mix", lambda: recur.mix(x, [p.detach().bfloat16() for p in layer.parameters()],
                                                               k, "rglru"), TypeError),
        ("a parameter missing", lambda: recur.mix(x, list(layer.parameters())[:-1], k, "rglru"), ValueError),
        ("an unknown keyword", lambda: recur.mix(x, list(layer.parameters()), k, "rglru", h0=None), TypeError),
    ]
    if torch.cuda.device_count() > 1:
        cases.append(("x on another GPU than the parameters", lambda: layer(x.to("cuda:1")), ValueError))
    bad = []
    for name, fn, want in cases:
        try:
            fn()
            bad.append("%s: no exception" % name)
        except want as e:
            print("     %-40s %s: %s" % (name, type(e).__name__, str(e)[:150]))
        except Exception as e:  # noqa: BLE001 -- the wrong kind is this check's failure
            bad.append("%s: %s (wanted %s): %s" % (name, type(e).__name__, want.__name__, str(e)[:120]))
    torch.cuda.synchronize()
    after = layer(x)                      # and the process still works
    torch.cuda.synchronize()
    ok = not bad and finite(after)
    return ok, "%d wrong inputs, each a %s" % (len(cases), "clear exception" if not bad else "; ".join(bad))


def host_overhead(k, g):
    """Host time of one forward+backward call pair (information: the
    issue's budget is 10 us per call over the C runtime's)."""
    recur.ops._POISON = False      # the fills would be counted too
    layer = recur.RGLRU(k, 1024).cuda()
    x = fresh_x(1, 64, 1024, g).requires_grad_(True)
    dy = torch.randn_like(x)
    for _ in range(10):
        layer(x).backward(dy)
    torch.cuda.synchronize()
    n = 200
    t = time.perf_counter()
    for _ in range(n):
        y = layer(x)
    fwd = (time.perf_counter() - t) / n
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        y = layer(x)
        y.backward(dy)
    both = (time.perf_counter() - t) / n
    torch.cuda.synchronize()
    return True, "host time per call at 1x64x1024: forward %.1f us, forward+backward %.1f us (information)" % (
        fwd * 1e6, both * 1e6)


def bf16_module(k, g):
    """A module made bf16 (.bfloat16()) runs on exact float32 copies of its
    weights: the float32 module's bits, given the same (bf16-representable)
    weights, and its gradients rounded to bf16."""
    D = 128
    a = recur.RGLRU(k, D).cuda()
    b = recur.RGLRU(k, D).cuda().bfloat16()
    with torch.no_grad():
        for pa, pb in zip(a.parameters(), b.parameters()):
            pa.copy_(pb.float())
    x = fresh_x(2, 300, D, g)
    dy = torch.randn(2, 300, D, generator=g, device="cuda").bfloat16()
    ya, dxa, ga = layer_grads(a, x, dy)
    yb, dxb, gb = layer_grads(b, x, dy)
    same = torch.equal(ya, yb) and torch.equal(dxa, dxb) and all(
        v.dtype == torch.bfloat16 and torch.equal(u.bfloat16(), v) for u, v in zip(ga, gb))
    return same, "y, dx the float32 module's bits; %d gradients in bf16, its rounded" % len(gb)


def backward_extras(k, g):
    """What a backward runs besides the kernels: no tensor of zeros for an
    output the loss does not use (the saved workspace was one, 2.2 GB at
    1x131072x4096), and a second derivative raises rather than taking
    recur's gradients as constants."""
    poison, recur.ops._POISON = recur.ops._POISON, False   # its fills would be counted
    try:
        layer = recur.RGLRU(k, 128).cuda()
        x = fresh_x(2, 300, 128, g).requires_grad_(True)
        dy = torch.randn_like(x)
        y = layer(x)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            y.backward(dy)
        filled = sorted({e.name for e in prof.events() if "zero" in e.name or "fill" in e.name})
        (gx,) = torch.autograd.grad(layer(x).float().sum(), x, create_graph=True)
        try:
            torch.autograd.grad((gx.float() ** 2).sum() + (x.float() ** 2).sum(), x)
            second = "returned"
        except RuntimeError as e:
            second = "raised" if "second derivative" in str(e) else "raised %s" % str(e)[:100]
    finally:
        recur.ops._POISON = poison
    return not filled and second == "raised", "ops filling in the backward: %s; a second derivative %s" % (
        ", ".join(filled) or "none", second)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    docs_dir = args.pop(2) if len(args) == 3 else None     # a folder of variants taking cu_seqlens
    resets_dir = args.pop(1) if len(args) == 2 else None   # a folder of variants taking reset marks
    if len(args) != 1:
        print(__doc__)
        return 2
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    k = recur.load(args[0])
    print("torch %s, %s, librecur %s, kernels %s" % (torch.__version__, torch.cuda.get_device_name(0),
                                                      recur.library_path(), k.folder), flush=True)
    g = torch.Generator(device="cuda").manual_seed(1)
    shapes = SMALL + ([] if quick else SEED)
    for mixer in ("rglru", "samu"):
        for shape in shapes:
            check("%s %s vs float64 reference" % (mixer, "x".join(map(str, shape))))(
                lambda: against_reference(k, mixer, shape, g))
        check("%s: every variant pinned at 2x300x128" % mixer)(lambda: pinned_variants(k, mixer, (2, 300, 128), g))
    for shape in (SMALL[1],) + (() if quick else (SEED[1],)):
        check("rglru %s from a RecurrentGemma checkpoint vs its forward" % "x".join(map(str, shape)))(
            lambda: released_layer(k, shape, g))
        check("transformers' RecurrentGemmaRglru %s on recur vs its forward" % "x".join(map(str, shape)))(
            lambda: transformers_layer(k, shape, g))
    check("torch.compile(fullgraph=True), two layers")(lambda: compiled_two_layers(k, g))
    check("CUDA graph capture and replay, forward+backward")(lambda: graph_capture(k, g))
    check("two streams at once")(lambda: two_streams(k, g))
    check("three forwards before one backward")(lambda: three_forwards_one_backward(k, g))
    check("bf16 autocast")(lambda: autocast(k, g))
    check("wrong inputs raise")(lambda: wrong_inputs(k, g))
    check("host overhead")(lambda: host_overhead(k, g))
    check("the backward fills nothing; a second derivative raises")(lambda: backward_extras(k, g))
    check("a bf16 module: the float32 module's numbers")(lambda: bf16_module(k, g))
    if resets_dir:
        kr = recur.load(resets_dir)
        for mixer in ("rglru", "samu"):
            for shape in ((2, 300, 128), (1, 8192, 1024), (3, 1000, 1024)):
                check("%s %s with reset marks vs float64 reference" % (mixer, "x".join(map(str, shape))))(
                    lambda: with_resets(kr, mixer, shape, g))
                check("%s %s with h0 and hT vs float64 reference" % (mixer, "x".join(map(str, shape))))(
                    lambda: with_states(kr, mixer, shape, g))
                if mixer == "rglru":
                    check("transformers' RecurrentGemmaRglru %s, two documents a row" % "x".join(map(str, shape)))(
                        lambda: transformers_layer(kr, shape, g))
                if any("map_loga" in v.state for v in kr.manifest.variants.values()):
                    check("%s %s, recur.row_map over two parts" % (mixer, "x".join(map(str, shape))))(
                        lambda: with_row_map(kr, mixer, shape, g))
    if docs_dir:
        kd = recur.load(docs_dir)
        for mixer in ("rglru", "samu"):
            for shape in ((1, 300, 128), (1, 4000, 1024)):
                check("%s %s, documents as cu_seqlens with a state each, vs float64 reference"
                      % (mixer, "x".join(map(str, shape))))(lambda: with_docs(kd, mixer, shape, g))
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
