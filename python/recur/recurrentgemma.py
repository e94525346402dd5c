"""transformers' RecurrentGemma on recur's kernels.

    model = transformers.AutoModelForCausalLM.from_pretrained("google/recurrentgemma-2b")
    recur.apply_to_recurrentgemma(model, "out/rg")    # a folder of lua/variants/recurrentgemma.lua

replaces every RecurrentGemmaRglru of the model (the recurrent blocks'
rg_lru) by RecurrentGemmaRglru below: the same parameter objects under the
same names (the model's state_dict, optimizer and checkpoints do not
change), the same forward(activations, position_ids) and recurrent_states,
with the scan, its gates and projections and their backward on recur's
kernels. The convolution, the linear layers and the attention blocks stay
transformers'.

What each call runs (position 0 is a document start, as in transformers):
- training, or a prompt without a cache (recurrent_states None): the
  layer over the sequence; a start after t = 0 needs a variant taking reset
  marks (resets = { true }), a row whose t = 0 is no start one taking states;
- a prompt with a cache (recurrent_states set, as transformers' generate
  sets it): the same, also keeping each row's final state (a variant taking
  states, lua/variants/state.lua's kind at the folder's heads);
- one token with a cache: the folder's decode step on recurrent_states, in
  place (R.decode in the grid; lua/variants/recurrentgemma.lua has it).
x goes to the kernels in bf16 (a float32 model's activations are rounded
to it, and its output comes back in the activations' dtype); parameters in
float32 (a bf16 model's weights are widened for the call, gradients flow
back to them).
"""
import torch
from torch import nn

from . import ops
from .checkpoints import NAMES, rglru_specs
from .kernels import load


class RecurrentGemmaRglru(nn.Module):
    """transformers' RecurrentGemmaRglru with recur's kernels (see the module's
    text): parameters recurrent_param, input_gate_weight, input_gate_bias,
    recurrent_gate_weight, recurrent_gate_bias, and recurrent_states."""

    def __init__(self, kernels, width, num_heads, variant=None, device=None, dtype=torch.float32):
        super().__init__()
        if width % num_heads:
            raise ValueError("width %d is no multiple of num_heads %d" % (width, num_heads))
        self.kernels = kernels if hasattr(kernels, "key") else load(kernels)
        self.width, self.num_heads, self.block_width = width, num_heads, width // num_heads
        self.variant = variant
        H, K = num_heads, self.block_width
        self.specs = rglru_specs(self.kernels, H, K)
        kw = {"device": device, "dtype": dtype}
        self.recurrent_param = nn.Parameter(torch.zeros(width, **kw))
        self.input_gate_weight = nn.Parameter(torch.zeros(H, K, K, **kw))
        self.input_gate_bias = nn.Parameter(torch.zeros(H, K, **kw))
        self.recurrent_gate_weight = nn.Parameter(torch.zeros(H, K, K, **kw))
        self.recurrent_gate_bias = nn.Parameter(torch.zeros(H, K, **kw))
        self.recurrent_states = None

    @classmethod
    def from_transformers(cls, module, kernels, variant=None):
        """The layer over module's own parameters (the same objects, not
        copies) and its recurrent_states."""
        w = module.input_gate_weight
        layer = cls(kernels, w.shape[0] * w.shape[1], w.shape[0], variant, device="meta")
        own = dict(module.named_parameters(recurse=False))
        placeholders = [name for name, _ in layer.named_parameters(recurse=False)]
        missing = [n for n in placeholders if n not in own]
        if missing:
            raise ValueError("%s has no %s" % (type(module).__name__, ", ".join(missing)))
        for name in placeholders:
            delattr(layer, name)
        for name, p in own.items():   # in the module's order: the model's parameter list is unchanged
            layer.register_parameter(name, p)
        layer.recurrent_states = getattr(module, "recurrent_states", None)
        return layer

    def _params(self):
        """The parameters in recur's order (the manifest's), float32, biases
        as [width] (views of [heads][K])."""
        out = []
        for s in self.specs:
            t = getattr(self, NAMES[s.name][0]).float()
            out.append(t.reshape(self.width) if s.name in ("ba", "bx") else t)
        return out

    def forward(self, activations, position_ids):
        B, L, D = activations.shape
        # transformers' recurrent block hands the convolution's output transposed: copied contiguous here
        x = activations.to(torch.bfloat16).contiguous()
        start = position_ids == 0
        if L == 1 and self.recurrent_states is not None:
            y = self._step(x, start[:, 0])
        else:
            y = self._sequence(x, start)
        return y.to(activations.dtype)

    def _sequence(self, x, start):
        """The layer over the rows: t = 0 of a row is its start unless its
        position says otherwise (then the row continues from
        recurrent_states, zeros without them, as transformers' scan does)."""
        B = x.shape[0]
        cached = self.recurrent_states is not None
        h0 = None
        if not bool(start[:, 0].all()):
            h0 = self.recurrent_states if cached else torch.zeros(B, self.width, device=x.device)
            h0 = h0.to(device=x.device, dtype=torch.float32)
            resets = start if bool(start.any()) else None
        else:
            resets = start if bool(start[:, 1:].any()) else None
        out = ops.mix(x, self._params(), self.kernels, "rglru", self.variant, resets=resets, initial_state=h0,
                      output_final_state=cached)
        if not cached:
            return out
        y, hT = out
        self.recurrent_states = hT.detach()
        return y

    def _step(self, x, start):
        """One token a row on the decode step, recurrent_states advanced in
        place; rows at position 0 start anew (two calls when some do)."""
        state = self.recurrent_states
        if state.dtype != torch.float32 or not state.is_contiguous() or state.device != x.device:
            state = self.recurrent_states = state.to(device=x.device, dtype=torch.float32).contiguous()
        params = [p.detach() for p in self._params()]
        if bool(start.all()) or not bool(start.any()):
            return ops.decode_step(x, params, state, self.kernels, "rglru", start=bool(start[0]))
        rows = torch.arange(x.shape[0], dtype=torch.int32, device=x.device)
        minus = torch.full_like(rows, -1)
        y = ops.decode_step(x, params, state, self.kernels, "rglru", index=torch.where(start, rows, minus),
                            start=True)
        return y + ops.decode_step(x, params, state, self.kernels, "rglru", index=torch.where(start, minus, rows))

    def extra_repr(self):
        return "width=%d, num_heads=%d, variant=%s, kernels=%s" % (self.width, self.num_heads,
                                                                   self.variant or "auto", self.kernels.folder)


def apply_to_recurrentgemma(model, kernels, variant=None):
    """Replaces every transformers RecurrentGemmaRglru in model by recur's
    (RecurrentGemmaRglru.from_transformers): kernels a folder (or its path)
    whose RG-LRU has the model's heads; variant: a pin for every layer, or
    "recompute" (the layers keep no projection for the backward: 4 bytes an
    element fewer saved each, for longer training rows). Returns how many
    were replaced; a model without one is a ValueError."""
    k = kernels if hasattr(kernels, "key") else load(kernels)
    found = [(name, m) for name, m in model.named_modules()
             if type(m).__name__ == "RecurrentGemmaRglru" and not isinstance(m, RecurrentGemmaRglru)]
    if not found:
        raise ValueError("no transformers RecurrentGemmaRglru in %s" % type(model).__name__)
    for name, m in found:
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child,
                RecurrentGemmaRglru.from_transformers(m, k, variant))
    return len(found)
