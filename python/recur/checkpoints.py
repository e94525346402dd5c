"""Released RG-LRU weights under recur's parameter names.

RecurrentGemma's RG-LRU (the temporal block's `rg_lru`) is recur's RG-LRU
with the same math, layout and initialisation; only the names differ:

  recur  Hugging Face transformers   google-deepmind/recurrentgemma (PyTorch)
  Wa     recurrent_gate_weight       a_gate.w        [H][K][K] = [head][in][out]
  ba     recurrent_gate_bias         a_gate.b        [H][K], recur's [D]
  Wx     input_gate_weight           input_gate.w    [H][K][K]
  bx     input_gate_bias             input_gate.b    [H][K], recur's [D]
  lam    recurrent_param             a_param         [D]

Both compute r = sigmoid(x Wa + ba), i = sigmoid(x Wx + bx),
log_a = -8 r softplus(lam), h = a h + sqrt(1 - a^2) (i x) with the square
root's derivative bounded as recur's, and a reset where the token's
position is 0 (recur: resets=(position_ids == 0), or a row's first token).
"""
import torch

# recur's name -> (transformers' name, recurrentgemma's name)
NAMES = {
    "Wa": ("recurrent_gate_weight", "a_gate.w"),
    "ba": ("recurrent_gate_bias", "a_gate.b"),
    "Wx": ("input_gate_weight", "input_gate.w"),
    "bx": ("input_gate_bias", "input_gate.b"),
    "lam": ("recurrent_param", "a_param"),
}
SCHEMES = ("Hugging Face transformers", "google-deepmind/recurrentgemma")


def _scheme(state_dict, prefix):
    """Which naming the layer's tensors under prefix follow: 0 or 1."""
    found = [[prefix + n[s] in state_dict for n in NAMES.values()] for s in range(2)]
    for s in range(2):
        if all(found[s]):
            return s
    near = sorted(k[:-len(n)] for k in state_dict for n in ("recurrent_param", "a_param") if k.endswith(n))
    hint = "; the prefixes of its RG-LRU layers: %s%s" % (", ".join(near[:4]), ", ..." if len(near) > 4 else "") \
        if near else "; it holds no recurrent_param or a_param"
    if not any(found[0]) and not any(found[1]):
        raise KeyError("no RG-LRU layer under prefix %r (neither Hugging Face transformers' recurrent_param nor "
                       "recurrentgemma's a_param there)%s" % (prefix, hint))
    s = 0 if sum(found[0]) >= sum(found[1]) else 1
    missing = [prefix + n[s] for n in NAMES.values() if prefix + n[s] not in state_dict]
    raise KeyError("RG-LRU layer under prefix %r: %s missing (%s names)" % (prefix, ", ".join(missing), SCHEMES[s]))


def rglru_from_recurrentgemma(state_dict, prefix=""):
    """{Wa, ba, Wx, bx, lam} as float32 tensors for recur.RGLRU, from one
    RecurrentGemma RG-LRU layer of state_dict (transformers' names or
    recurrentgemma's, found under prefix, e.g.
    "model.layers.0.temporal_block.rg_lru."). A missing tensor is a
    KeyError naming it; a shape that is not the layer's a ValueError."""
    s = _scheme(state_dict, prefix)
    src = {ours: state_dict[prefix + names[s]] for ours, names in NAMES.items()}
    lam = src["lam"]
    if lam.dim() != 1:
        raise ValueError("%s%s: shape %s, expected [width]" % (prefix, NAMES["lam"][s], tuple(lam.shape)))
    D = lam.shape[0]
    w = src["Wa"]
    if w.dim() != 3 or w.shape[1] != w.shape[2] or w.shape[0] * w.shape[1] != D:
        raise ValueError("%s%s: shape %s, expected [heads][K][K] with heads x K = width %d"
                         % (prefix, NAMES["Wa"][s], tuple(w.shape), D))
    H, K = w.shape[0], w.shape[1]
    out = {}
    for ours, t in src.items():
        want = (H, K, K) if ours in ("Wa", "Wx") else (D,)
        if ours in ("ba", "bx") and tuple(t.shape) == (H, K):
            t = t.reshape(D)   # [head][K] in both releases; recur's is [D], head-major
        if tuple(t.shape) != want:
            raise ValueError("%s%s: shape %s, expected %s (width %d in %d heads of %d)"
                             % (prefix, NAMES[ours][s], tuple(t.shape), list(want), D, H, K))
        out[ours] = t.detach().to(torch.float32).contiguous()
    return out


def rglru_specs(kernels, heads, k):
    """The folder's RG-LRU parameters (kernels.params) at heads x k channels,
    a ValueError unless its heads are k wide (RecurrentGemma's 256: a grid
    of lua/variants/recurrentgemma.lua)."""
    D = heads * k
    specs = kernels.params("rglru", D)
    wa = next((tuple(s.dims) for s in specs if s.name == "Wa"), ())
    if wa != (heads, k, k):
        raise ValueError("%s: the RG-LRU has %d heads of %d channels (width %d), the folder's rglru takes Wa %s at "
                         "that width: generate a grid at heads of %d (RecurrentGemma's: "
                         "lua/variants/recurrentgemma.lua)" % (kernels.folder, heads, k, D, list(wa), k))
    return specs
