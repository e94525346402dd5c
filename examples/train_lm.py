#!/usr/bin/env python3
"""A small byte-level language model of Griffin-style recurrent blocks,
trained with recur's RG-LRU operator or with the same layer in plain
PyTorch, for the loss curve and the tokens per second of each.

    python3 examples/train_lm.py --kernels out/ptx --compare --steps 300
    python3 examples/train_lm.py --kernels out/ptx --compare --bench-layer 1x8192x1024
    python3 examples/train_lm.py --mixer torch --device cpu --tiny --steps 5
    python3 examples/train_lm.py --kernels out/ptx --decode-kernels out/decode --sample 400

Each block is Griffin's recurrent block and an MLP, pre-norm, residual:
    x += W_out( gelu(W_gate n) * RG-LRU( conv4( W_in n ) ) ),   n = RMSNorm(x)
    x += W_down( gelu(W_up RMSNorm(x)) )
The RG-LRU is recur.RGLRU (--mixer recur) or TorchRGLRU below (--mixer
torch, and torch-compile: the same module through torch.compile), both
with the parameters, initialisation and math of spec/architectures.md.

The text: the files given with --text, else every source and document
file of this repository (a few MB of C, Lua and Markdown that any clone
has); the last 5% of it is held out for the validation loss.

--sample N then draws N bytes after --prompt through the decode step
(each block's conv inputs and RG-LRU state carried token to token; recur:
the folder of `recur gen lua/variants/decode.lua`), after checking that
the decode path gives the forward's logits over the prompt.

--compare trains the model with each mixer from the same seed on the same
batches and writes, into --out: log.json (every run's losses and tokens
per second), loss.svg (the curves) and summary.md (the table).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
C = 8.0   # RG-LRU's constant


# ---- data ----

def repo_text():
    """The repository's own sources and documents, in a fixed order."""
    keep = (".c", ".h", ".lua", ".md", ".py", ".sh", ".txt")
    files = []
    for top in ("README.md", "ARCHITECTURE.md", "cli", "gen", "ir", "lua", "ref", "runtime", "script",
                "templates", "util", "tests", "bench", "python", "examples"):
        p = os.path.join(REPO, top)
        if os.path.isfile(p):
            files.append(p)
        for root, dirs, names in os.walk(p):
            dirs.sort()
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(keep)]
    return files


def load_bytes(paths):
    """The files' bytes end to end, and where each file starts (bool, one per byte)."""
    data, starts = bytearray(), []
    for p in paths:
        with open(p, "rb") as f:
            starts.append(len(data))
            data += f.read()
    if len(data) < 100000:
        raise SystemExit("train_lm: %d bytes of text is too little to train on (give --text FILES)" % len(data))
    first = torch.zeros(len(data), dtype=torch.bool)
    first[starts] = True
    return torch.frombuffer(data, dtype=torch.uint8).long(), first


def batches(data, first, batch, seq, generator):
    """Random windows of seq + 1 bytes: inputs, next-byte targets, and the
    inputs' document starts (the files packed into each window)."""
    while True:
        i = torch.randint(0, data.numel() - seq - 1, (batch,), generator=generator)
        w = torch.stack([data[j:j + seq + 1] for j in i.tolist()])
        f = torch.stack([first[j:j + seq] for j in i.tolist()])
        yield w[:, :-1], w[:, 1:], f


# ---- the RG-LRU in plain PyTorch ----

def linear_scan(a, b, chunk=8):
    """h[t] = a[t] h[t-1] + b[t] along dim 1 from h[-1] = 0, in fp32, with
    no loop over time: within chunks of `chunk` steps by the matrix of
    products prod_{s<r<=t} a[r] (exponents of differences of cumulative
    logs, masked to s <= t, so every exponent is <= 0 and nothing
    overflows), then the same over the chunks' ends, chunks of chunks in
    turn: nothing larger than [B, L, chunk, D] is made at any length (one
    matrix over all the chunks' ends took (L/chunk)^2 D, 43 GB at
    1x32768x2560). Chunks of 8: the layer's forward and backward peak at
    163 bytes an element on the CPU (257 at 16, 127 at 4; 2.4x faster than
    16), so RecurrentGemma 9B's 1x131072x4096 fits an H200's 141 GB."""
    return _scan_log(torch.log(a), b, chunk)


def _scan_log(la, b, chunk):
    """linear_scan of a = exp(la): the chunks' ends scanned by this again,
    in logs (a chunk's decay, a sum of logs, may be past fp32's exp)."""
    B, L, D = la.shape
    pad = (-L) % chunk
    if pad:
        la = torch.cat([la, la.new_zeros(B, pad, D)], 1)
        b = torch.cat([b, b.new_zeros(B, pad, D)], 1)
    n = la.shape[1] // chunk
    h, cum = _scan_matrix(la.view(B, n, chunk, D), b.view(B, n, chunk, D))   # within each chunk, from 0
    if n > 1:
        states = _scan_log(cum[:, :, -1], h[:, :, -1], chunk)   # [B, n, D]: the state after each chunk
        carry = torch.cat([states.new_zeros(B, 1, D), states[:, :-1]], 1)   # entering each chunk
        h = h + torch.exp(cum) * carry.unsqueeze(2)
    return h.reshape(B, n * chunk, D)[:, :L]


def _scan_matrix(la, b):
    """la, b: [B, n, c, D]; per chunk h[t] = sum_{s<=t} exp(cum[t] - cum[s]) b[s]."""
    cum = torch.cumsum(la, 2)
    c = la.shape[2]
    mask = torch.ones(c, c, dtype=torch.bool, device=la.device).tril()
    diff = cum.unsqueeze(3) - cum.unsqueeze(2)               # [B, n, t, s, D]
    w = torch.exp(torch.where(mask[None, None, :, :, None], diff, diff.new_tensor(-math.inf)))
    return torch.einsum("bntsd,bnsd->bntd", w, b), cum


def sqrt_bounded(z):
    """sqrt forward; the spec's bounded derivative 1/sqrt(max(4z, 1e-6)) backward."""
    return _SqrtB.apply(z)


class _SqrtB(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.sqrt(z)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g / torch.sqrt(torch.clamp(4 * z, min=1e-6))


class TorchRGLRU(nn.Module):
    """RG-LRU with recur.RGLRU's parameters (Wa, ba, Wx, bx, lam) and math:
    bf16 projections with fp32 accumulation, fp32 gates and carry."""

    def __init__(self, width, head=64):
        super().__init__()
        if width % head:
            raise ValueError("width %d is not a multiple of the head size %d" % (width, head))
        H, K = width // head, head
        self.H, self.K = H, K
        self.Wa = nn.Parameter(torch.randn(H, K, K) / math.sqrt(K))
        self.ba = nn.Parameter(torch.zeros(width))
        self.Wx = nn.Parameter(torch.randn(H, K, K) / math.sqrt(K))
        self.bx = nn.Parameter(torch.zeros(width))
        u = torch.empty(width, dtype=torch.float64).uniform_(0.9 ** 2, 0.999 ** 2)
        self.lam = nn.Parameter(torch.log(torch.exp(-0.5 * torch.log(u)) - 1).float())

    def _gates(self, x):
        """(log_a, m, i * x) of x [B, L, D], m without the reset rule."""
        B, L, D = x.shape
        xb = x.to(torch.bfloat16).view(B, L, self.H, self.K)
        def proj(W, bias):
            p = torch.einsum("blhi,hij->blhj", xb, W.to(torch.bfloat16)).float()
            return p.reshape(B, L, D) + bias
        r = torch.sigmoid(proj(self.Wa, self.ba))
        i = torch.sigmoid(proj(self.Wx, self.bx))
        log_a = -C * r * F.softplus(self.lam)
        return log_a, sqrt_bounded(1 - torch.exp(2 * log_a)), i * xb.reshape(B, L, D).float()

    def forward(self, x, resets=None):
        B, L, D = x.shape
        log_a, m, ix = self._gates(x)
        # the spec's reset at t = 0 and at each document start: m = 1, and
        # a * h_prev dropped (a as good as 0: the scan works in log a)
        first = torch.zeros(1, L, 1, dtype=torch.bool, device=x.device)
        first[:, 0] = True
        if resets is not None:
            first = first | resets[..., None]
        a = torch.where(first, torch.full_like(log_a, 1e-30), torch.exp(log_a))
        m = torch.where(first, torch.ones_like(m), m)
        h = linear_scan(a, m * ix)
        return h.to(torch.bfloat16)

    def step(self, x, state, start=False, kernels=None):
        """The decode step, recur.Mixer.step's contract: y of the next tokens
        x [B, T, D], the fp32 state [B, D] advanced in place; start: the
        first token is a reset (the state is not read)."""
        log_a, m, ix = self._gates(x)
        h, ys = state.clone(), []
        for t in range(x.shape[1]):
            if start and t == 0:
                h = ix[:, 0]                       # m = 1, a * h_prev dropped
            else:
                h = torch.exp(log_a[:, t]) * h + m[:, t] * ix[:, t]
            ys.append(h)
        state.copy_(h)
        return torch.stack(ys, 1).to(torch.bfloat16)


# ---- the model ----

class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.w


class DocConv(nn.Module):
    """Griffin's causal depthwise convolution of 4 taps, which, like the
    recurrence, does not look back past a document's start."""

    def __init__(self, width, taps=4):
        super().__init__()
        self.w = nn.Parameter(torch.randn(taps, width) / math.sqrt(taps))
        self.b = nn.Parameter(torch.zeros(width))

    def forward(self, u, resets=None):
        B, L, W = u.shape
        doc = torch.zeros(B, L, dtype=torch.long, device=u.device) if resets is None else resets.long().cumsum(1)
        out = u * self.w[0] + self.b
        for k in range(1, self.w.shape[0]):
            shifted = F.pad(u, (0, 0, k, 0))[:, :L]
            same = F.pad(doc, (k, 0), value=-1)[:, :L] == doc   # lag k stays inside the document
            out = out + shifted * same[..., None] * self.w[k]
        return out

    def step(self, u, buf, start=False):
        """One token u [B, 1, W]; buf [B, taps - 1, W] holds the inputs before
        it, the latest last, and takes u; start: nothing comes before u."""
        if start:
            buf.zero_()
        taps = self.w.shape[0]
        out = u[:, 0] * self.w[0] + self.b
        for k in range(1, taps):
            out = out + buf[:, taps - 1 - k] * self.w[k]
        buf.copy_(torch.cat([buf[:, 1:], u.to(buf.dtype)], 1))
        return out[:, None]


class RecurrentBlock(nn.Module):
    def __init__(self, d, width, mixer):
        super().__init__()
        self.norm = RMSNorm(d)
        self.gate = nn.Linear(d, width, bias=False)
        self.inp = nn.Linear(d, width, bias=False)
        self.conv = DocConv(width)
        self.mixer = mixer
        self.out = nn.Linear(width, d, bias=False)
        self.mlp_norm = RMSNorm(d)
        self.up = nn.Linear(d, 3 * d, bias=False)
        self.down = nn.Linear(3 * d, d, bias=False)

    def forward(self, x, resets=None):
        n = self.norm(x)
        u = self.conv(self.inp(n), resets)
        y = self.mixer(u.contiguous()) if resets is None else self.mixer(u.contiguous(), resets=resets)
        x = x + self.out(F.gelu(self.gate(n)) * y)
        return x + self.down(F.gelu(self.up(self.mlp_norm(x))))

    def step(self, x, cache, start=False, kernels=None):
        """One token x [B, 1, d] through the block, its conv and mixer states in cache."""
        n = self.norm(x)
        u = self.conv.step(self.inp(n), cache["conv"], start)
        y = self.mixer.step(u.contiguous(), cache["h"], start=start, kernels=kernels)
        x = x + self.out(F.gelu(self.gate(n)) * y)
        return x + self.down(F.gelu(self.up(self.mlp_norm(x))))


class LM(nn.Module):
    def __init__(self, d, width, layers, make_mixer):
        super().__init__()
        self.emb = nn.Embedding(256, d)
        self.blocks = nn.ModuleList(RecurrentBlock(d, width, make_mixer()) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, 256, bias=False)

    def forward(self, tokens, resets=None):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, resets)
        return self.head(self.norm(x))

    def new_cache(self, batch, device):
        """Each block's decode state: the conv's last inputs and the mixer's fp32 state."""
        return [{"conv": torch.zeros(batch, blk.conv.w.shape[0] - 1, blk.conv.w.shape[1], device=device),
                 "h": torch.zeros(batch, blk.conv.w.shape[1], dtype=torch.float32, device=device)}
                for blk in self.blocks]

    def step(self, tokens, cache, start=False, kernels=None):
        """Logits [B, 1, 256] of the next token after tokens [B, 1], advancing cache."""
        x = self.emb(tokens)
        for blk, c in zip(self.blocks, cache):
            x = blk.step(x, c, start, kernels)
        return self.head(self.norm(x))


# ---- sampling ----

@torch.no_grad()
def decode_check(model, tokens, amp, kernels=None):
    """The largest difference of the decode path's logits (the prompt fed
    one token at a time) from the forward's over the same tokens, relative
    to the largest logit, and the cache after them."""
    with torch.autocast(**amp):
        whole = model(tokens).float()
        cache = model.new_cache(tokens.shape[0], tokens.device)
        steps = [model.step(tokens[:, t:t + 1], cache, start=t == 0, kernels=kernels).float()
                 for t in range(tokens.shape[1])]
    diff = float((torch.cat(steps, 1) - whole).abs().max() / whole.abs().max().clamp_min(1e-30))
    return diff, cache, steps[-1]


@torch.no_grad()
def sample(model, prompt, n, amp, temperature=0.8, seed=0, kernels=None):
    """(text, decode_vs_forward): n bytes after prompt, drawn one at a time
    through the decode step."""
    dev = next(model.parameters()).device
    tokens = torch.tensor([list(prompt.encode())], dtype=torch.long, device=dev)
    diff, cache, logits = decode_check(model, tokens, amp, kernels)
    gen = torch.Generator(device=dev).manual_seed(seed)
    out = []
    for _ in range(n):
        p = torch.softmax(logits[:, -1] / temperature, -1)
        tok = torch.multinomial(p, 1, generator=gen)
        out.append(int(tok))
        with torch.autocast(**amp):
            logits = model.step(tok, cache, kernels=kernels).float()
    return prompt + bytes(out).decode("utf-8", "replace"), diff


def make_model(args, mixer):
    if mixer == "recur":
        sys.path.insert(0, os.path.join(REPO, "python"))
        import recur
        kernels = recur.load(args.kernels, args.calibration)
        make = lambda: recur.RGLRU(kernels, args.width)
    else:
        make = lambda: TorchRGLRU(args.width)
    model = LM(args.d, args.width, args.layers, make).to(args.device)
    if mixer == "torch-compile":
        for blk in model.blocks:
            blk.mixer = torch.compile(blk.mixer)
    return model


# ---- training ----

def train(args, mixer, data, val):
    """data, val: (bytes, document starts)."""
    torch.manual_seed(args.seed)
    model = make_model(args, mixer)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(args.seed)
    it = batches(*data, args.batch, args.seq, gen)
    dev = torch.device(args.device)
    amp = dict(device_type=dev.type, dtype=torch.bfloat16)
    log = {"mixer": mixer, "step": [], "loss": [], "val_step": [], "val_loss": []}
    timed_tokens, timed_s = 0, 0.0
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        xb, yb, fb = next(it)
        xb, yb = xb.to(dev), yb.to(dev)
        marks = fb.to(dev) if args.docs else None
        sync(dev)
        t0 = time.perf_counter()
        with torch.autocast(**amp):
            logits = model(xb, marks)
        loss = F.cross_entropy(logits.float().view(-1, 256), yb.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync(dev)
        dt = time.perf_counter() - t0
        if step >= args.timing_from:   # after compilation, autotuning and the allocator's first growth
            timed_tokens += xb.numel()
            timed_s += dt
        lv = loss.item()
        if not math.isfinite(lv):
            raise SystemExit("train_lm: %s: the loss is %r at step %d" % (mixer, lv, step))
        log["step"].append(step)
        log["loss"].append(lv)
        if step % args.eval_every == 0 or step == args.steps - 1:
            log["val_step"].append(step)
            log["val_loss"].append(evaluate(model, val, args, amp, dev))
            print("%-13s step %4d  loss %.3f  val %.3f  %s" % (mixer, step, lv, log["val_loss"][-1],
                  "%.0f tok/s" % (timed_tokens / timed_s) if timed_s else ""), flush=True)
    log["tokens_per_s"] = timed_tokens / timed_s if timed_s else None
    log["params"] = sum(p.numel() for p in model.parameters())
    if args.sample:
        kernels = None
        if mixer == "recur":
            import recur
            kernels = recur.load(args.decode_kernels)
            kernels.decode_variant("rglru")   # a folder without one says how to make it, before sampling
        text, diff = sample(model, args.prompt, args.sample, amp, seed=args.seed, kernels=kernels)
        log["sample"], log["decode_vs_forward"] = text, diff
        print("%-13s decode step vs forward over the prompt: largest logit difference %.1e of the largest logit\n"
              "%s\n" % (mixer, diff, text), flush=True)
        if not diff < 5e-2:
            raise SystemExit("train_lm: %s: the decode path differs from the forward by %.1e" % (mixer, diff))
    return log


@torch.no_grad()
def evaluate(model, val, args, amp, dev):
    gen = torch.Generator().manual_seed(0)   # the same held-out windows every time
    it = batches(*val, args.batch, args.seq, gen)
    total = 0.0
    for _ in range(args.eval_batches):
        xb, yb, fb = next(it)
        with torch.autocast(**amp):
            logits = model(xb.to(dev), fb.to(dev) if args.docs else None)
        total += F.cross_entropy(logits.float().view(-1, 256), yb.to(dev).reshape(-1)).item()
    return total / args.eval_batches


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


# ---- checks ----

def self_test():
    """The plain-PyTorch layer against loops in float64: the scan at lengths
    around its chunks (and near-zero a, a reset in all but name), its
    gradients by finite differences, and the layer's sqrt's bounded
    derivative. Prints one line per check; exits 1 on a failure."""
    torch.manual_seed(1)
    bad = 0
    seen = []   # the chunk of every matrix the scan makes: never more than asked for
    matrix = _scan_matrix
    globals()["_scan_matrix"] = lambda la, b: seen.append(la.shape[2]) or matrix(la, b)
    for L, chunk in [(1, 16), (16, 16), (37, 16), (300, 8), (1000, 4)]:
        a = torch.rand(3, L, 5, dtype=torch.float64) * 0.99 + 0.005
        a[:, 5:7] = 1e-30
        b = torch.randn(3, L, 5, dtype=torch.float64)
        h, ref = torch.zeros(3, 5, dtype=torch.float64), []
        for t in range(L):
            h = a[:, t] * h + b[:, t]
            ref.append(h)
        err = float((linear_scan(a, b, chunk) - torch.stack(ref, 1)).abs().max())
        bad += not err < 1e-12
        print("%s scan L=%d chunk %d: max error %.1e" % ("ok  " if err < 1e-12 else "FAIL", L, chunk, err))
        ok = max(seen) <= chunk
        bad += not ok
        print("%s scan L=%d chunk %d: %d matrices, none over %d steps (largest %d)"
              % ("ok  " if ok else "FAIL", L, chunk, len(seen), chunk, max(seen)))
        seen.clear()
    globals()["_scan_matrix"] = matrix
    a = (torch.rand(2, 21, 3, dtype=torch.float64) * 0.9 + 0.05).requires_grad_()
    b = torch.randn(2, 21, 3, dtype=torch.float64, requires_grad=True)
    ok = torch.autograd.gradcheck(lambda a, b: linear_scan(a, b, 4), (a, b), raise_exception=False)
    bad += not ok
    print("%s scan gradients (torch.autograd.gradcheck, float64)" % ("ok  " if ok else "FAIL"))
    z = torch.tensor([0.0, 1e-9, 0.25], dtype=torch.float64, requires_grad=True)
    sqrt_bounded(z).sum().backward()
    want = torch.tensor([1000.0, 1000.0, 1.0], dtype=torch.float64)
    ok = torch.allclose(z.grad, want)
    bad += not ok
    print("%s sqrtb'(z) = 1/sqrt(max(4z, 1e-6)): %s" % ("ok  " if ok else "FAIL", z.grad.tolist()))
    # packed documents: a row with marks gives what its documents give apart
    torch.manual_seed(3)
    layer, conv = TorchRGLRU(128).double(), DocConv(128).double()
    x = torch.randn(1, 40, 128, dtype=torch.float64)
    starts = [0, 1, 2, 23, 39]
    marks = torch.zeros(1, 40, dtype=torch.bool)
    marks[0, starts[1:]] = True
    ends = starts[1:] + [40]
    for name, fn in (("RG-LRU", lambda v, r: layer(v, r).double()), ("conv", conv)):
        whole = fn(x, marks)
        apart = torch.cat([fn(x[:, a:b], None) for a, b in zip(starts, ends)], 1)
        err = float((whole - apart).abs().max() / apart.abs().max())
        ok = err < 1e-2 if name == "RG-LRU" else err < 1e-12   # RG-LRU's projections are bf16
        bad += not ok
        print("%s %s with document marks = its documents apart: max error %.1e" % ("ok  " if ok else "FAIL", name, err))
    # the decode path (conv and RG-LRU states, one token at a time) gives the forward's logits
    torch.manual_seed(4)
    lm = LM(32, 64, 2, lambda: TorchRGLRU(64))
    tokens = torch.randint(0, 256, (3, 21))
    err, _, _ = decode_check(lm, tokens, dict(device_type="cpu", enabled=False))
    ok = err < 1e-5
    bad += not ok
    print("%s decode steps = the forward over 21 tokens: largest logit difference %.1e" % ("ok  " if ok else "FAIL", err))
    sys.exit(1 if bad else 0)


def check_against_recur(args):
    """One layer of each, recur.RGLRU and TorchRGLRU, with the same
    parameters on the same input: the relative L2 difference of y and of
    every gradient (both answer to the spec's 1e-2)."""
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    sys.path.insert(0, os.path.join(REPO, "python"))
    import recur
    mine = recur.RGLRU(recur.load(args.kernels, args.calibration), args.width).to(dev)
    plain = TorchRGLRU(args.width).to(dev)
    plain.load_state_dict(mine.state_dict())
    x = torch.randn(2, args.seq, args.width, device=dev).to(torch.bfloat16)
    dy = torch.randn(2, args.seq, args.width, device=dev).to(torch.bfloat16)
    marks = (torch.rand(2, args.seq, device=dev) < 0.01) if args.docs else None   # as --docs trains
    out = []
    for m in (mine, plain):
        xi = x.clone().requires_grad_()
        y = m(xi, resets=marks)
        y.backward(dy)
        out.append([y.float(), xi.grad.float()] + [p.grad.float() for p in m.parameters()])
    names = ["y", "dx"] + [n for n, _ in mine.named_parameters()]
    worst = 0.0
    for n, u, v in zip(names, *out):
        e = float((u - v).norm() / v.norm().clamp_min(1e-30))
        worst = max(worst, e)
        print("recur vs plain PyTorch, %s: relative L2 difference %.1e" % (n, e))
    if not worst < 2e-2:
        raise SystemExit("train_lm: the two layers differ by %.1e: the comparison would not be of one model"
                         % worst)


def _time_layer(run, layer, x, dy, dev, args):
    """The median of --bench-reps forward+backward runs after the warm-up, in ms."""
    times = []
    for rep in range(args.bench_warmup + args.bench_reps):
        sync(dev)
        t0 = time.perf_counter()
        run(x).backward(dy)
        sync(dev)
        if rep >= args.bench_warmup:
            times.append(time.perf_counter() - t0)
        x.grad = None
        layer.zero_grad(set_to_none=True)
    return sorted(times)[len(times) // 2] * 1e3


# what a device out of memory raises (torch.OutOfMemoryError from torch 2.5 on)
OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


def bench_layers(args):
    """Forward+backward of one mixer layer alone at B x L x width, each
    mixer: the median of --bench-reps timed runs after warm-up runs
    (torch.compile compiles in them), as tokens per second. A mixer that
    runs out of device memory (PyTorch's chunked scan at long L) gets a row
    saying so and the others still run: that is a result, not a failure."""
    dev = torch.device(args.device)
    B, L, D = args.bench_shape
    rows = []
    for mixer in args.mixers:
        torch.manual_seed(args.seed)
        if mixer == "recur":
            sys.path.insert(0, os.path.join(REPO, "python"))
            import recur
            layer = recur.RGLRU(recur.load(args.kernels, args.calibration), D).to(dev)
        else:
            layer = TorchRGLRU(D, head=args.head).to(dev)
        run = torch.compile(layer) if mixer == "torch-compile" else layer
        x = torch.randn(B, L, D, device=dev).to(torch.bfloat16).requires_grad_()
        dy = torch.randn(B, L, D, device=dev).to(torch.bfloat16)
        try:
            ms, why = _time_layer(run, layer, x, dy, dev, args), None
        except OUT_OF_MEMORY as e:
            ms, why = None, (str(e).splitlines() or ["out of memory"])[0]
        del layer, run, x, dy   # (after the except: its traceback held them)
        if why is not None:
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            rows.append({"mixer": mixer, "ms": None, "tokens_per_s": None, "error": "out of memory: " + why})
            print("layer %-13s %dx%dx%d forward+backward out of memory (%s)" % (mixer, B, L, D, why), flush=True)
            continue
        rows.append({"mixer": mixer, "ms": ms, "tokens_per_s": B * L / ms * 1e3})
        print("layer %-13s %dx%dx%d forward+backward %.3f ms  %.0f tok/s" % (mixer, B, L, D, ms, rows[-1]["tokens_per_s"]),
              flush=True)
    return rows


# ---- output ----

def svg(logs, path):
    """The training losses of every run on one plot (plain SVG)."""
    W, H, M = 720, 420, 50
    steps = max(max(l["step"]) for l in logs)
    lo = min(min(l["loss"]) for l in logs)
    hi = max(max(l["loss"][min(5, len(l["loss"]) - 1):]) for l in logs)
    hi = max(hi, lo + 1e-3)
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12">' % (W, H), '<rect width="100%" height="100%" fill="white"/>']
    X = lambda s: M + (W - 2 * M) * s / max(steps, 1)
    Y = lambda v: H - M - (H - 2 * M) * (min(v, hi) - lo) / (hi - lo)
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (M, H - M, W - M, H - M))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (M, M, M, H - M))
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (M - 4, Y(v) + 4, v))
    out.append('<text x="%d" y="%d" text-anchor="middle">step (of %d)</text>' % (W / 2, H - 15, steps + 1))
    out.append('<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">training loss '
               '(nats/byte)</text>' % (H / 2, H / 2))
    for n, l in enumerate(logs):
        pts = " ".join("%.1f,%.1f" % (X(s), Y(v)) for s, v in zip(l["step"], l["loss"]))
        c = colors[n % len(colors)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.2" points="%s"/>' % (c, pts))
        tps = l.get("tokens_per_s")
        label = "%s%s" % (l["mixer"], ", %.0f tok/s" % tps if tps else "")
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - M - 230, M + 16 * (n + 1), c, label))
    out.append("</svg>")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(path + ".tmp", path)


def summary(logs, args, path):
    rows = ["| mixer | tokens/s | vs recur | final loss | final val loss |", "|---|---|---|---|---|"]
    ref = next((l["tokens_per_s"] for l in logs if l["mixer"] == "recur"), None)
    for l in logs:
        tps = l["tokens_per_s"]
        rows.append("| %s | %s | %s | %.3f | %.3f |" % (
            l["mixer"], "%.0f" % tps if tps else "-", "%.2fx" % (tps / ref) if tps and ref else "-",
            sum(l["loss"][-10:]) / len(l["loss"][-10:]), l["val_loss"][-1]))
    head = ("Byte-level LM, %d layers, d %d, RG-LRU width %d, batch %d x %d bytes, %d steps (%s params); "
            "tokens/s from step %d on.\n\n" % (args.layers, args.d, args.width, args.batch, args.seq, args.steps,
                                                "%.1fM" % (logs[0]["params"] / 1e6), args.timing_from))
    with open(path + ".tmp", "w") as f:
        f.write(head + "\n".join(rows) + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", default=os.path.join(REPO, "out", "ptx"), help="a folder of recur gen")
    p.add_argument("--calibration", help="a recur calibrate file, for the variant choice")
    p.add_argument("--mixer", default="recur", choices=["recur", "torch", "torch-compile"])
    p.add_argument("--compare", action="store_true", help="train with each mixer in turn")
    p.add_argument("--text", nargs="*", help="text files (default: this repository's sources)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--timing-from", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--docs", action="store_true", help="each file a document: the recurrence and the conv restart "
                   "where one starts inside a window (recur: needs variants taking reset marks, "
                   "recur gen lua/variants/state.lua)")
    p.add_argument("--tiny", action="store_true", help="a model and batch small enough for a CPU smoke run")
    p.add_argument("--out", default=os.path.join(REPO, "out", "train_lm"))
    p.add_argument("--bench-layer", metavar="BxLxD", help="time one mixer layer alone at this shape "
                   "(the issue's: 1x8192x1024) instead of training")
    p.add_argument("--head", type=int, default=64, help="--bench-layer: the plain-PyTorch layer's head width "
                   "(256: RecurrentGemma's; the recur layer's comes from --kernels, e.g. recur gen "
                   "lua/variants/recurrentgemma.lua)")
    p.add_argument("--bench-reps", type=int, default=20)
    p.add_argument("--bench-warmup", type=int, default=5)
    p.add_argument("--self-test", action="store_true", help="check the plain-PyTorch layer on the CPU, and exit")
    p.add_argument("--sample", type=int, default=0, metavar="N", help="after training, N bytes drawn one at a time "
                   "through the decode step, after checking it against the forward over the prompt")
    p.add_argument("--prompt", default="static int ", help="what --sample continues")
    p.add_argument("--decode-kernels", default=os.path.join(REPO, "out", "decode"),
                   help="a folder with the RG-LRU's decode step, for --sample with recur "
                   "(recur gen lua/variants/decode.lua -o out/decode)")
    args = p.parse_args()
    if args.self_test:
        self_test()
    if args.tiny:
        args.batch, args.seq, args.d, args.width, args.layers = 2, 64, 64, 64, 1
        args.eval_batches, args.timing_from, args.warmup = 1, 1, 2
    mixers = ["recur", "torch", "torch-compile"] if args.compare else [args.mixer]
    if not hasattr(torch, "compile") and "torch-compile" in mixers:
        print("torch %s has no torch.compile: leaving out torch-compile" % torch.__version__)
        mixers.remove("torch-compile")
    args.mixers = mixers
    os.makedirs(args.out, exist_ok=True)
    if args.bench_layer:
        args.bench_shape = [int(v) for v in args.bench_layer.split("x")]
        rows = bench_layers(args)
        path = os.path.join(args.out, "layers.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"shape": args.bench_shape, "torch": torch.__version__, "rows": rows}, f, indent=1)
        os.replace(path + ".tmp", path)
        return
    data, first = load_bytes(args.text or repo_text())
    cut = int(data.numel() * 0.95)
    train_data, val = (data[:cut], first[:cut]), (data[cut:], first[cut:])
    print("text: %d bytes in %d files (%d bytes held out)%s" % (data.numel(), int(first.sum()), data.numel() - cut,
          "; each file a document (--docs)" if args.docs else ""), flush=True)
    if "recur" in mixers:
        check_against_recur(args)
    logs = [train(args, m, train_data, val) for m in mixers]
    path = os.path.join(args.out, "log.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"args": vars(args), "torch": torch.__version__, "runs": logs}, f, indent=1)
    os.replace(path + ".tmp", path)
    svg(logs, os.path.join(args.out, "loss.svg"))
    summary(logs, args, os.path.join(args.out, "summary.md"))
    print(open(os.path.join(args.out, "summary.md")).read())


if __name__ == "__main__":
    main()
