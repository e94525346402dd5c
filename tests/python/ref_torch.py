"""Float64 PyTorch references of RG-LRU and SAMU, written from
spec/architectures.md; gradients come from torch autograd.

The forward follows the spec's formulas line by line; the only hand-written
derivative is the spec's bounded square root (sqrtb). The scan runs
sequentially, one step at a time, as the recurrence is written: slow, but
with nothing to get wrong, and fast enough on a GPU at 8192 tokens.

Each sequence starts at its own t = 0 (a reset), and so does each document
where reset marks ([B, L], True where a document starts) say one starts:
there m = 1 and a is the constant 0, so a * h_prev is dropped, nothing
reaches back, and log_a gets no gradient there (the spec's "dlog_a = 0 at
a reset position").
"""
import math

import torch
import torch.nn.functional as F

C = 8.0  # RG-LRU's constant

RGLRU_PARAMS = ("Wa", "ba", "Wx", "bx", "lam")
SAMU_PARAMS = ("wu", "wv", "lam", "bu", "bv", "theta", "omega")


class _SqrtB(torch.autograd.Function):
    """sqrt(z), with the derivative bounded: 1 / sqrt(max(4 z, 1e-6))."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.sqrt(z)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g / torch.sqrt(torch.clamp(4 * z, min=1e-6))


def sqrtb(z):
    return _SqrtB.apply(z)


def first_token(x, resets=None, h0=None):
    """[1 or B, L, 1] boolean, True at each sequence's first token (unless it
    continues from an initial state h0) and at each mark."""
    f = torch.zeros(x.shape[1], dtype=torch.bool, device=x.device)
    f[0] = h0 is None
    f = f.view(1, -1, 1)
    return f if resets is None else f | resets.to(device=x.device, dtype=torch.bool)[..., None]


def scan(a, b, h0=None):
    """h[t] = a[t] h[t-1] + b[t] with h[-1] = h0 (0 without), per sequence and channel."""
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(b.shape[1]):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1)


def _gates_input(log_a, x, resets=None, h0=None):
    """a with the resets applied (0 there: a * h_prev dropped, and log_a gets
    no gradient), and m = sqrtb(1 - a^2) (1 at a reset)."""
    first = first_token(x, resets, h0)
    a = torch.where(first, torch.zeros_like(log_a), torch.exp(log_a))
    m = torch.where(first, torch.ones_like(log_a), sqrtb(1 - torch.exp(2 * log_a)))
    return a, m


def rglru(x, Wa, ba, Wx, bx, lam, resets=None, h0=None):
    """RG-LRU: x [B, L, D]; Wa, Wx [H][K][K] ([head][in][out]); ba, bx, lam [D]."""
    B, L, D = x.shape
    H, K, _ = Wa.shape
    xh = x.reshape(B, L, H, K)
    pa = torch.einsum("blhi,hij->blhj", xh, Wa).reshape(B, L, D) + ba
    px = torch.einsum("blhi,hij->blhj", xh, Wx).reshape(B, L, D) + bx
    r, i = torch.sigmoid(pa), torch.sigmoid(px)
    a, m = _gates_input(-C * r * F.softplus(lam), x, resets, h0)
    return scan(a, m * i * x, h0)


def samu(x, wu, wv, lam, bu, bv, theta, omega, resets=None, h0=None):
    """SAMU: x [B, L, D]; wu, wv, lam [D]; bu, bv, theta, omega scalars."""
    D = x.shape[2]
    u = bu + (x @ wu) / math.sqrt(D)          # [B, L]: the controller, per token
    v = bv + (x @ wv) / math.sqrt(D)
    s, g = F.softplus(u), torch.sigmoid(v)
    a, m = _gates_input(-torch.exp(theta) * s[..., None] * F.softplus(lam), x, resets, h0)
    h = scan(a, m * g[..., None] * x, h0)
    return h + omega * x


MIXERS = {"rglru": (rglru, RGLRU_PARAMS), "samu": (samu, SAMU_PARAMS)}


def final_state(mixer, x, y, params):
    """h at each row's last token, from y (SAMU's y = h + omega x)."""
    h = y[:, -1]
    return h - params[SAMU_PARAMS.index("omega")] * x[:, -1] if mixer == "samu" else h


def forward_backward(mixer, x, params, dy, resets=None, h0=None, dhT=None):
    """y, dx and the parameter gradients (a list) in float64, for loss =
    sum(y * dy) + sum(hT * dhT). x, params (in the mixer's order), dy: tensors
    of any float dtype; resets: [B, L] marks or None; h0: [B, D] initial
    states or None. With h0 or dhT it returns hT and dh0 (None without h0) too."""
    fn, _ = MIXERS[mixer]
    x = x.detach().double().requires_grad_(True)
    ps = [p.detach().double().requires_grad_(True) for p in params]
    h = h0.detach().double().requires_grad_(True) if h0 is not None else None
    with torch.enable_grad():
        y = fn(x, *ps, resets=resets, h0=h)
        hT = final_state(mixer, x, y, ps)
        loss = (y * dy.double()).sum() + ((hT * dhT.double()).sum() if dhT is not None else 0)
        grads = torch.autograd.grad(loss, [x] + ps + ([h] if h is not None else []))
    gx, gp = grads[0], list(grads[1:1 + len(ps)])
    if h0 is None and dhT is None:
        return y.detach(), gx, gp
    return y.detach(), gx, gp, hT.detach(), grads[-1] if h is not None else None


def init_params(mixer, D, generator=None, device="cpu"):
    """Parameters as the spec initialises them for tests (float32), in the mixer's order."""
    def normal(shape, std):
        return torch.randn(shape, generator=generator, dtype=torch.float64).mul(std).float().to(device)

    def lam():
        u = torch.empty(D, dtype=torch.float64).uniform_(0.9 ** 2, 0.999 ** 2, generator=generator)
        return torch.log(torch.exp(-0.5 * torch.log(u)) - 1).float().to(device)

    def scalar(v):
        return torch.tensor(v, dtype=torch.float32, device=device)

    if mixer == "rglru":
        K = 64
        H = D // K
        zeros = torch.zeros(D, device=device)
        return [normal((H, K, K), 1 / math.sqrt(K)), zeros.clone(), normal((H, K, K), 1 / math.sqrt(K)),
                zeros.clone(), lam()]
    return [normal((D,), 1.0), normal((D,), 1.0), lam(), scalar(0.0), scalar(0.0), scalar(math.log(8.0)),
            scalar(0.5)]


def rel_l2(out, ref):
    """||out - ref|| / ||ref|| in float64 (||out - ref|| where ref is 0)."""
    out, ref = out.double(), ref.double()
    den = torch.linalg.vector_norm(ref).item()
    num = torch.linalg.vector_norm(out - ref).item()
    return num / den if den > 0 else num


# ---- RecurrentGemma's released RG-LRU (for recur.checkpoints' tests) ----

# the five tensors' names in each release: transformers', recurrentgemma's (PyTorch)
RELEASE_NAMES = ({"Wa": "recurrent_gate_weight", "ba": "recurrent_gate_bias", "Wx": "input_gate_weight",
                  "bx": "input_gate_bias", "lam": "recurrent_param"},
                 {"Wa": "a_gate.w", "ba": "a_gate.b", "Wx": "input_gate.w", "bx": "input_gate.b", "lam": "a_param"})


def released_rglru(H, K, names=0, prefix="", dtype=torch.bfloat16, seed=1, device="cpu"):
    """A RecurrentGemma RG-LRU layer's tensors as a checkpoint holds them
    (names 0: transformers', 1: recurrentgemma's; biases [H][K]), random,
    lam from radii 0.9 .. 0.999 as the release initialises it."""
    gen = torch.Generator().manual_seed(seed)
    D = H * K
    r = torch.empty(D, dtype=torch.float64).uniform_(0.9 ** 2, 0.999 ** 2, generator=gen)
    t = {"Wa": torch.randn(H, K, K, generator=gen) / math.sqrt(K), "ba": 0.5 * torch.randn(H, K, generator=gen),
         "Wx": torch.randn(H, K, K, generator=gen) / math.sqrt(K), "bx": 0.5 * torch.randn(H, K, generator=gen),
         "lam": torch.log(torch.exp(-0.5 * torch.log(r)) - 1).float()}
    return {prefix + RELEASE_NAMES[names][k]: v.to(dtype=dtype, device=device) for k, v in t.items()}


def hf_rglru(x, state, prefix, position_ids, h0=None, final=False):
    """transformers' RecurrentGemmaRglru forward, written out in float64 from
    a checkpoint's tensors (its names under prefix): the gates by a batched
    matmul per head, a reset where the position is 0, the scan from h0
    (zeros without), differentiable; with final, (y, the last h) too."""
    g = {k[len(prefix):]: v.double() for k, v in state.items() if k.startswith(prefix)}
    B, L, D = x.shape
    H, K, _ = g["input_gate_weight"].shape
    act = x.double().reshape(B * L, H, K).permute(1, 0, 2)
    gate_x = torch.sigmoid(torch.baddbmm(g["input_gate_bias"][:, None, :], act, g["input_gate_weight"])
                           .transpose(0, 1).reshape(B, L, D))
    gate_a = torch.sigmoid(torch.baddbmm(g["recurrent_gate_bias"][:, None, :], act, g["recurrent_gate_weight"])
                           .transpose(0, 1).reshape(B, L, D))
    log_a = -8.0 * gate_a * F.softplus(g["recurrent_param"])
    reset = (position_ids == 0)[:, :, None]
    mult = torch.where(reset, torch.ones_like(log_a), torch.sqrt(1 - torch.exp(2 * log_a)))
    a = torch.exp(log_a) * ~reset
    u = x.double() * gate_x * mult
    h = h0.double() if h0 is not None else torch.zeros(B, D, dtype=torch.float64, device=x.device)
    out = []
    for t in range(L):
        h = a[:, t] * h + u[:, t]
        out.append(h)
    y = torch.stack(out, dim=1)
    return (y, h) if final else y


class RecurrentGemmaRglru(torch.nn.Module):
    """transformers' RecurrentGemmaRglru as the tests need it: its five
    parameters under its names ([heads][K] biases), recurrent_states, and its
    forward (hf_rglru in float64 from recurrent_states when set, keeping the
    final state as transformers does)."""

    def __init__(self, width, num_heads, seed=1, dtype=torch.float32, device="cpu"):
        super().__init__()
        t = released_rglru(num_heads, width // num_heads, 0, "", dtype=dtype, seed=seed, device=device)
        for name in ("recurrent_param", "input_gate_weight", "input_gate_bias", "recurrent_gate_weight",
                     "recurrent_gate_bias"):   # transformers' order
            self.register_parameter(name, torch.nn.Parameter(t[name]))
        self.recurrent_states = None

    def forward(self, activations, position_ids):
        state = dict(self.named_parameters())
        y, h = hf_rglru(activations, state, "", position_ids, self.recurrent_states, final=True)
        if self.recurrent_states is not None:
            self.recurrent_states = h.float().detach()
        return y.to(activations.dtype)
